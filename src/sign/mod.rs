//! Signatures and signed attestations that standard tools verify:
//!
//! - An image's signature in the sigstore layout (cosign's, and containers/image's
//!   "sigstore attachments"): under the tag `sha256-<hex>.sig`, an OCI manifest whose layers
//!   are simple-signing payloads ([`payload::simple_signing`]), each with its ECDSA P-256
//!   signature in the `dev.cosignproject.cosign/signature` annotation. podman, skopeo and CRI-O
//!   (a `sigstoreSigned` policy) and cosign (`cosign verify --key`) check it.
//! - Attestations: the SBOMs and the provenance as in-toto statements in DSSE envelopes signed
//!   with the same key, attached as OCI 1.1 referrers (with the referrers tag fallback), like the
//!   unsigned documents.
//! - [`verify_image`]: the signature and every attached attestation checked with a public key.
//!
//! Signing the same image with the same key gives the same bytes (RFC 6979 nonces, canonical
//! JSON, no timestamps). No key material reaches a message, a log or an output.

pub mod key;
pub mod payload;

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine;
use serde::Serialize;

use crate::audit::attest::Document;
use crate::digest::Digest;
use crate::image::{self, Descriptor, Index, Manifest, MEDIA_TYPE_INDEX, MEDIA_TYPE_MANIFEST};
use crate::progress::Silent;
use crate::registry::{Client, Reference, RegistryError};
use crate::store::{Store, StoreError};

pub use key::{PrivateKey, PublicKey};

impl From<RegistryError> for SignError {
    fn from(e: RegistryError) -> Self {
        SignError::Registry(Box::new(e))
    }
}
use payload::{Envelope, DSSE_MEDIA_TYPE, SIGNATURE_ANNOTATION, SIMPLE_SIGNING};

#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("key file {}: {problem}", path.display())]
    Key { path: PathBuf, problem: String },
    #[error(transparent)]
    Registry(#[from] Box<RegistryError>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{reference}: {problem}")]
    Bad { reference: String, problem: String },
}

pub use crate::push::signature_tag;

/// The predicate type of each document ocibuild attaches, in a statement about the image.
fn predicate_type(artifact_type: &str) -> Option<&'static str> {
    use crate::audit::{provenance, sbom};
    match artifact_type {
        t if t == sbom::SPDX_MEDIA_TYPE => Some("https://spdx.dev/Document"),
        t if t == sbom::CYCLONEDX_MEDIA_TYPE => Some("https://cyclonedx.org/bom"),
        t if t == provenance::MEDIA_TYPE => None, // a statement already
        _ => None,
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
            let statement = match predicate_type(d.artifact_type) {
                Some(t) => {
                    let predicate: serde_json::Value =
                        serde_json::from_slice(&d.bytes).map_err(|e| SignError::Bad {
                            reference: name.to_string(),
                            problem: format!("{} document is not JSON: {e}", d.artifact_type),
                        })?;
                    payload::statement(name, digest, t, predicate)
                }
                None => d.bytes.clone(),
            };
            Ok(Document {
                artifact_type: DSSE_MEDIA_TYPE,
                bytes: Envelope::sign(&statement, key).to_bytes(),
            })
        })
        .collect()
}

/// The predicate type of a SLSA Verification Summary Attestation.
pub const VSA_V1: &str = "https://slsa.dev/verification_summary/v1";

/// A SLSA VSA v1 statement: the image `name@digest` was rebuilt from its recipe (identity
/// `recipe`) and lock (`lock`) and came out bit-identical. No time (`timeVerified` is optional
/// and a time would make the attestation differ per run).
pub fn vsa_statement(
    name: &str,
    digest: &Digest,
    recipe: &Digest,
    lock: Option<&Digest>,
) -> Vec<u8> {
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
            "version": {"ocibuild": crate::audit::attest::TOOL_VERSION},
        },
        "resourceUri": format!("docker://{name}@{digest}"),
        "policy": policy,
        "inputAttestations": [],
        "verificationResult": "PASSED",
        "verifiedLevels": [],
        "slsaVersion": "1.0",
    });
    payload::statement(name, digest, VSA_V1, predicate)
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

/// The config of a signature manifest, as cosign and containers/image write it (no dates).
fn signature_config(layers: &[Descriptor]) -> Vec<u8> {
    let diff_ids: Vec<String> = layers.iter().map(|l| l.digest.to_string()).collect();
    let doc = serde_json::json!({
        "architecture": "",
        "config": {},
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    });
    crate::json::to_canonical_vec("signature config", &doc).unwrap_or_default()
}

/// The signature layer of `digest` as `identity` (its payload put into `store`).
pub fn signature_layer(
    store: &Store,
    identity: &str,
    digest: &Digest,
    key: &PrivateKey,
) -> Result<Descriptor, SignError> {
    let payload = payload::simple_signing(identity, digest);
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

/// The signature manifest holding `layers` (its config and itself put into `store`): its
/// bytes and descriptor.
pub fn signature_manifest(
    store: &Store,
    layers: Vec<Descriptor>,
) -> Result<(Vec<u8>, Manifest), SignError> {
    let config_bytes = signature_config(&layers);
    let config = Descriptor::new(
        image::MEDIA_TYPE_CONFIG,
        store.put_bytes(&config_bytes)?,
        config_bytes.len() as u64,
    );
    let manifest = Manifest {
        schema_version: 2,
        media_type: MEDIA_TYPE_MANIFEST.into(),
        artifact_type: None,
        config,
        layers,
        subject: None,
        annotations: BTreeMap::new(),
    };
    let bytes = crate::json::to_canonical_vec("signature manifest", &manifest).map_err(|e| {
        SignError::Bad {
            reference: "signature manifest".into(),
            problem: e.to_string(),
        }
    })?;
    store.put_bytes(&bytes)?;
    Ok((bytes, manifest))
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
    let (bytes, manifest) = signature_manifest(store, vec![layer])?;
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

/// Pushes the signature manifest `bytes` (blobs in `store`) under `sha256-<hex>.sig` of
/// `digest` in `target`'s repository, joining the signatures already there: their layers kept,
/// in order, ours added unless present (so signing twice changes nothing). Returns the
/// manifest pushed and whether anything was added.
pub fn push_signature(
    client: &Client,
    store: &Store,
    target: &Reference,
    digest: &Digest,
    ours: &[Descriptor],
) -> Result<(Digest, bool), SignError> {
    let repo = format!("{}/{}", target.registry(), target.repository());
    let tag = signature_tag(digest);
    let tag_ref = target.with_tag(&tag).map_err(RegistryError::from)?;
    let mut layers = match client.get_manifest(&tag_ref) {
        Ok(m) => {
            let existing: Manifest =
                serde_json::from_slice(&m.bytes).map_err(|e| SignError::Bad {
                    reference: format!("{repo}:{tag}"),
                    problem: format!("not a manifest: {e}"),
                })?;
            for l in &existing.layers {
                client.pull_blob(&tag_ref, &l.digest, Some(l.size), store, &Silent)?;
            }
            existing.layers
        }
        Err(e) if crate::push::is_manifest_unknown(&e) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut added = false;
    for l in ours {
        if !layers.contains(l) {
            layers.push(l.clone());
            added = true;
        }
    }
    let (bytes, manifest) = signature_manifest(store, layers)?;
    for d in std::iter::once(&manifest.config).chain(&manifest.layers) {
        client.push_blob(target, &d.digest, d.size, store, None, &Silent)?;
    }
    let pushed = client.push_manifest(target, &tag, &bytes, MEDIA_TYPE_MANIFEST)?;
    Ok((pushed, added))
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
    let (signature_manifest, added) = push_signature(client, store, target, digest, &[layer])?;
    Ok(SignReport {
        image: format!("{repo}@{digest}"),
        identity: identity.to_string(),
        signature_tag: format!("{repo}:{}", signature_tag(digest)),
        signature_manifest,
        added,
    })
}

/// One finding of [`verify_image`].
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// `signature` or the attestation's predicate type (or artifact type when unsigned).
    pub what: String,
    pub ok: bool,
    pub detail: String,
}

/// What [`verify_image`] found.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    pub image: String,
    pub digest: Digest,
    pub findings: Vec<Finding>,
}

impl VerifyReport {
    pub fn ok(&self) -> bool {
        self.findings.iter().any(|f| f.what == "signature" && f.ok)
            && self.findings.iter().all(|f| f.ok)
    }
}

/// Checks the image `reference` names: its sigstore signature (at least one layer of
/// `sha256-<hex>.sig` must verify with `key` and name this digest), and every attestation
/// attached as a referrer (the DSSE envelope verifies with `key`, its statement is about this
/// digest); unsigned documents attached are named as such.
pub fn verify_image(
    client: &Client,
    store: &Store,
    reference: &Reference,
    key: &PublicKey,
) -> Result<VerifyReport, SignError> {
    let fetched = client.get_manifest(reference)?;
    let digest = fetched.digest;
    let repo = format!("{}/{}", reference.registry(), reference.repository());
    let mut findings = Vec::new();
    let sig_ref = reference
        .with_tag(&signature_tag(&digest))
        .map_err(RegistryError::from)?;
    match client.get_manifest(&sig_ref) {
        Err(e) if crate::push::is_manifest_unknown(&e) => findings.push(Finding {
            what: "signature".into(),
            ok: false,
            detail: format!("missing: no {repo}:{}", signature_tag(&digest)),
        }),
        Err(e) => return Err(e.into()),
        Ok(m) => findings.push(check_signatures(
            client, store, &sig_ref, &m.bytes, &digest, key,
        )?),
    }
    let ix_ref = reference
        .with_tag(&crate::push::referrers_tag(&digest))
        .map_err(RegistryError::from)?;
    let referrers = match client.get_manifest(&ix_ref) {
        Ok(m) if m.media_type == MEDIA_TYPE_INDEX => serde_json::from_slice::<Index>(&m.bytes)
            .map(|i| i.manifests)
            .unwrap_or_default(),
        Ok(_) => Vec::new(),
        Err(e) if crate::push::is_manifest_unknown(&e) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    for r in &referrers {
        let artifact = r.artifact_type.clone().unwrap_or_default();
        if artifact != DSSE_MEDIA_TYPE {
            findings.push(Finding {
                what: artifact.clone(),
                ok: true,
                detail: format!("{} attached unsigned (not checked)", r.digest),
            });
            continue;
        }
        findings.push(check_attestation(client, store, &ix_ref, r, &digest, key)?);
    }
    if !referrers
        .iter()
        .any(|r| r.artifact_type.as_deref() == Some(DSSE_MEDIA_TYPE))
    {
        findings.push(Finding {
            what: "attestations".into(),
            ok: true,
            detail: "none attached".into(),
        });
    }
    Ok(VerifyReport {
        image: format!("{repo}@{digest}"),
        digest,
        findings,
    })
}

fn fetch_blob(
    client: &Client,
    store: &Store,
    at: &Reference,
    d: &Descriptor,
) -> Result<Vec<u8>, SignError> {
    client.pull_blob(at, &d.digest, Some(d.size), store, &Silent)?;
    Ok(store.read_blob(&d.digest)?)
}

fn check_signatures(
    client: &Client,
    store: &Store,
    sig_ref: &Reference,
    bytes: &[u8],
    digest: &Digest,
    key: &PublicKey,
) -> Result<Finding, SignError> {
    let finding = |ok: bool, detail: String| Finding {
        what: "signature".into(),
        ok,
        detail,
    };
    let Ok(m) = serde_json::from_slice::<Manifest>(bytes) else {
        return Ok(finding(false, format!("{sig_ref} is not a manifest")));
    };
    let mut problems = Vec::new();
    for (i, l) in m.layers.iter().enumerate() {
        if l.media_type != SIMPLE_SIGNING {
            continue;
        }
        let Some(sig) = l
            .annotations
            .get(SIGNATURE_ANNOTATION)
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        else {
            problems.push(format!("layer {i}: no signature annotation"));
            continue;
        };
        let payload = fetch_blob(client, store, sig_ref, l)?;
        if !key.verifies(&payload, &sig) {
            problems.push(format!("layer {i}: does not verify with this key"));
            continue;
        }
        let claims: Option<payload::SimpleSigning> = serde_json::from_slice(&payload).ok();
        match claims {
            Some(c) if c.critical.image.docker_manifest_digest == digest.to_string() => {
                return Ok(finding(
                    true,
                    format!("signed as {}", c.critical.identity.docker_reference),
                ))
            }
            Some(c) => problems.push(format!(
                "layer {i}: signs {}, not this image",
                c.critical.image.docker_manifest_digest
            )),
            None => problems.push(format!("layer {i}: not a simple-signing payload")),
        }
    }
    if problems.is_empty() {
        problems.push("no signature layers".into());
    }
    Ok(finding(false, problems.join("; ")))
}

fn check_attestation(
    client: &Client,
    store: &Store,
    at: &Reference,
    r: &Descriptor,
    digest: &Digest,
    key: &PublicKey,
) -> Result<Finding, SignError> {
    // A manifest, by digest: through the manifests endpoint (verified against the digest).
    let bytes = client.get_manifest(&at.with_digest(r.digest))?.bytes;
    let bad = |what: &str, detail: String| Finding {
        what: what.to_string(),
        ok: false,
        detail,
    };
    let Ok(m) = serde_json::from_slice::<Manifest>(&bytes) else {
        return Ok(bad(
            "attestation",
            format!("{} is not a manifest", r.digest),
        ));
    };
    let Some(layer) = m.layers.first() else {
        return Ok(bad("attestation", format!("{} has no layer", r.digest)));
    };
    let env_bytes = fetch_blob(client, store, at, layer)?;
    let Ok(envelope) = serde_json::from_slice::<Envelope>(&env_bytes) else {
        return Ok(bad(
            "attestation",
            format!("{} is not a DSSE envelope", r.digest),
        ));
    };
    let Some(statement) = envelope.verified(key) else {
        return Ok(bad(
            "attestation",
            format!(
                "{}: the envelope's signature does not verify with this key",
                r.digest
            ),
        ));
    };
    let Some((subjects, predicate)) = payload::statement_claims(&statement) else {
        return Ok(bad(
            "attestation",
            format!("{}: not an in-toto statement", r.digest),
        ));
    };
    if !subjects.iter().any(|s| *s == digest.hex()) {
        return Ok(bad(
            &predicate,
            format!("{}: a statement about another image", r.digest),
        ));
    }
    Ok(Finding {
        what: predicate,
        ok: true,
        detail: format!("{} verified", r.digest),
    })
}
