//! Signatures and signed attestations that standard tools verify:
//!
//! - An image's signature in the sigstore layout (cosign's, and containers/image's
//!   "sigstore attachments"): under the tag `sha256-<hex>.sig`, an OCI manifest whose layers
//!   are simple-signing payloads ([`payload::simple_signing`]), each with its ECDSA P-256
//!   signature in the `dev.cosignproject.cosign/signature` annotation. podman, skopeo and CRI-O
//!   (a `sigstoreSigned` policy) and cosign (`cosign verify --key`) check it.
//! - Attestations: the SBOMs and the provenance as in-toto statements in DSSE envelopes signed
//!   with the same key, attached as OCI 1.1 referrers (with the referrers tag fallback), like the
//!   unsigned documents; and a SLSA verification summary ([`vsa_statement`]). The same
//!   envelopes also in cosign's layout, under `sha256-<hex>.att` ([`cosign`]), where
//!   `cosign verify-attestation` and `cosign tree` look for them.
//! - [`verify::verify_image`]: the signature and every attached attestation checked against
//!   public keys.
//!
//! Signing the same image with the same key gives the same bytes (RFC 6979 nonces, canonical
//! JSON, no timestamps). No key material reaches a message, a log or an output.

pub mod cosign;
pub mod key;
pub mod payload;
pub mod verify;

use std::path::PathBuf;

use base64::Engine;
use serde::Serialize;

use crate::audit::attest_types::Document;
use crate::digest::Digest;
use crate::image::{self, Descriptor, MEDIA_TYPE_MANIFEST};
use crate::push::error::PushError;
use crate::registry::{Client, Reference, RegistryError};
use crate::store::{Store, StoreError};

pub use crate::push::attach::{signature_tag, SIMPLE_SIGNING};
pub use key::{PrivateKey, PublicKey};
use payload::{Envelope, DSSE_MEDIA_TYPE, SIGNATURE_ANNOTATION};
pub use verify::{verify_image, Finding, VerifyReport};

#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// A key or passphrase file that cannot be read (fs-err's message names it).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A key or passphrase file that is not a small regular file.
    #[error(transparent)]
    Input(#[from] crate::bounded::Error),
    #[error("key file {}: {problem}", path.display())]
    Key { path: PathBuf, problem: String },
    #[error(transparent)]
    Registry(#[from] Box<RegistryError>),
    #[error(transparent)]
    Push(#[from] Box<PushError>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Json(#[from] crate::json::JsonError),
    #[error("{reference}: {problem}")]
    Bad { reference: String, problem: String },
}

impl From<RegistryError> for SignError {
    fn from(e: RegistryError) -> Self {
        SignError::Registry(Box::new(e))
    }
}

impl From<PushError> for SignError {
    fn from(e: PushError) -> Self {
        SignError::Push(Box::new(e))
    }
}

/// How each document ocibuild attaches becomes a statement about the image: the predicate
/// type to wrap it in, or `None` for one that is a statement already (the provenance).
fn predicate_type(artifact_type: &str) -> Result<Option<&'static str>, SignError> {
    use crate::audit::{provenance, sbom};
    match artifact_type {
        t if t == sbom::SPDX_MEDIA_TYPE => Ok(Some("https://spdx.dev/Document")),
        t if t == sbom::CYCLONEDX_MEDIA_TYPE => Ok(Some("https://cyclonedx.org/bom")),
        t if t == provenance::MEDIA_TYPE => Ok(None),
        other => Err(SignError::Bad {
            reference: "attestation".into(),
            problem: format!("no predicate type for a {other} document"),
        }),
    }
}

/// The documents as signed attestations: each an in-toto statement about `name@digest` (the
/// provenance is one already) in a DSSE envelope signed with `key`.
pub fn attestations(
    documents: &[Document],
    name: &str,
    digest: &Digest,
    key: &PrivateKey,
) -> Result<Vec<Document>, SignError> {
    documents
        .iter()
        .map(|d| {
            let statement = match predicate_type(d.artifact_type)? {
                Some(t) => {
                    let predicate: serde_json::Value =
                        serde_json::from_slice(&d.bytes).map_err(|e| SignError::Bad {
                            reference: name.to_string(),
                            problem: format!("{} document is not JSON: {e}", d.artifact_type),
                        })?;
                    payload::statement(name, digest, t, predicate)?
                }
                None => d.bytes.clone(),
            };
            Ok(Document {
                artifact_type: DSSE_MEDIA_TYPE,
                bytes: Envelope::sign(&statement, key).to_bytes()?,
            })
        })
        .collect()
}

pub use payload::VSA_V1;

/// A SLSA VSA v1 statement: the image `name@digest` was rebuilt from its recipe (identity
/// `recipe`) and lock (`lock`) and came out bit-identical. No time (`timeVerified` is optional
/// and a time would make the attestation differ per run).
pub fn vsa_statement(
    name: &str,
    digest: &Digest,
    recipe: &Digest,
    lock: Option<&Digest>,
) -> Result<Vec<u8>, SignError> {
    let mut policy = serde_json::json!({
        "uri": "https://ocibuild.dev/verify/bit-identical-rebuild/v1",
        "digest": {"sha256": recipe.hex()},
    });
    if let Some(l) = lock {
        policy["annotations"] = serde_json::json!({"lockDigest": l.to_string()});
    }
    let predicate = serde_json::json!({
        "verifier": {
            "id": "https://ocibuild.dev/verifier/ocibuild",
            "version": {"ocibuild": crate::audit::attest_types::TOOL_VERSION},
        },
        "resourceUri": format!("docker://{name}@{digest}"),
        "policy": policy,
        "inputAttestations": [],
        "verificationResult": "PASSED",
        "verifiedLevels": [],
        "slsaVersion": "1.0",
    });
    Ok(payload::statement(name, digest, VSA_V1, predicate)?)
}

/// What [`sign_image`] did.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignReport {
    /// `registry/repository@digest` of the image signed.
    pub image: String,
    /// The identity signed (`docker-reference`).
    pub identity: String,
    /// `registry/repository:sha256-<hex>.sig` and the signature manifest's digest.
    pub signature_tag: String,
    pub signature_manifest: Digest,
    /// False when the same signature was there already (nothing pushed).
    pub added: bool,
}

/// The signature layer of `digest` as `identity` (its payload put into `store`).
pub fn signature_layer(
    store: &Store,
    identity: &str,
    digest: &Digest,
    key: &PrivateKey,
) -> Result<Descriptor, SignError> {
    let payload = payload::simple_signing(identity, digest)?;
    let signature = base64::engine::general_purpose::STANDARD.encode(key.sign(&payload));
    let mut layer = Descriptor::new(
        SIMPLE_SIGNING,
        store.put_bytes(&payload)?,
        payload.len() as u64,
    );
    layer
        .annotations
        .insert(SIGNATURE_ANNOTATION.into(), signature);
    Ok(layer)
}

/// The signature of `digest` as `identity`, for an OCI layout: the manifest's index entry
/// (tagged `sha256-<hex>.sig`, with the simple-signing artifact type so that it is not taken
/// for an image) and the blobs it needs, all in `store`.
pub fn layout_signature(
    store: &Store,
    identity: &str,
    digest: &Digest,
    key: &PrivateKey,
) -> Result<(Descriptor, Vec<(Digest, u64)>), SignError> {
    let layer = signature_layer(store, identity, digest, key)?;
    let (bytes, manifest) = crate::push::attach::signature_manifest(store, vec![layer])?;
    store.put_bytes(&bytes)?;
    let mut entry = Descriptor::new(MEDIA_TYPE_MANIFEST, Digest::of(&bytes), bytes.len() as u64);
    entry.artifact_type = Some(SIMPLE_SIGNING.into());
    entry
        .annotations
        .insert(image::annotations::REF_NAME.into(), signature_tag(digest));
    let mut blobs: Vec<(Digest, u64)> = std::iter::once(&manifest.config)
        .chain(&manifest.layers)
        .map(|d| (d.digest, d.size))
        .collect();
    blobs.push((entry.digest, entry.size));
    Ok((entry, blobs))
}

/// The identity an image pushed to `target` is signed as: `registry/repository[:tag]` (its
/// tag kept, a digest left out: the identity is the name the image is pulled by).
pub fn identity_of(target: &Reference) -> String {
    match target.tag() {
        Some(t) => format!("{}/{}:{t}", target.registry(), target.repository()),
        None => format!("{}/{}", target.registry(), target.repository()),
    }
}

/// Signs the image `digest` in `target`'s repository as `identity` (`registry/repo[:tag]`)
/// and pushes the signature ([`push_signature`]). Blobs go through `store`.
pub fn sign_image(
    client: &Client,
    store: &Store,
    target: &Reference,
    digest: &Digest,
    identity: &str,
    key: &PrivateKey,
) -> Result<SignReport, SignError> {
    let repo = format!("{}/{}", target.registry(), target.repository());
    let layer = signature_layer(store, identity, digest, key)?;
    let (signature_manifest, added) =
        crate::push::attach::push_signature(client, target, digest, &[layer], store, store)?;
    Ok(SignReport {
        image: format!("{repo}@{digest}"),
        identity: identity.to_string(),
        signature_tag: format!("{repo}:{}", signature_tag(digest)),
        signature_manifest,
        added,
    })
}
