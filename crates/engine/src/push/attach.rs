//! Sigstore attachments (cosign's `.sig` and `.att` layouts): the signature manifest around
//! a set of layers, and its push under a tag, joining the layers already there.

use super::error::PushError;
use crate::digest::Digest;
use crate::image::{Descriptor, MEDIA_TYPE_MANIFEST};
use crate::progress::Silent;
use crate::registry::{Client, Reference, RegistryError};
use crate::store::Store;

/// The tag of an image's sigstore signatures (cosign's and containers/image's layout):
/// `sha256-<hex>.sig`.
pub fn signature_tag(subject: &Digest) -> String {
    format!("sha256-{}.sig", subject.hex())
}

/// The media type of a sigstore signature's layer (a simple-signing payload).
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// The config of a signature manifest, as cosign and containers/image write it (no dates).
fn signature_config(layers: &[Descriptor]) -> Result<Vec<u8>, crate::json::JsonError> {
    let diff_ids: Vec<String> = layers.iter().map(|l| l.digest.to_string()).collect();
    let doc = serde_json::json!({
        "architecture": "",
        "config": {},
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    });
    crate::json::to_canonical_vec("signature config", &doc)
}

/// The signature manifest holding the signature `layers` (its config put into `store`): its
/// canonical bytes and the manifest.
pub fn signature_manifest(
    store: &Store,
    layers: Vec<Descriptor>,
) -> Result<(Vec<u8>, crate::image::Manifest), PushError> {
    let config_bytes = signature_config(&layers)?;
    let config = Descriptor::new(
        crate::image::MEDIA_TYPE_CONFIG,
        store.put_bytes(&config_bytes)?,
        config_bytes.len() as u64,
    );
    let manifest = crate::image::Manifest {
        schema_version: 2,
        media_type: MEDIA_TYPE_MANIFEST.into(),
        artifact_type: None,
        config,
        layers,
        subject: None,
        annotations: std::collections::BTreeMap::new(),
    };
    let bytes = crate::json::to_canonical_vec("signature manifest", &manifest)?;
    Ok((bytes, manifest))
}

/// Pushes the signature layers `ours` (their blobs in `ours_from`) under `sha256-<hex>.sig` of
/// `subject` in `target`'s repository, joining the signatures already there: their layers kept,
/// in order, ours added unless present (so signing twice changes nothing). The merged
/// manifest's config goes through `scratch`. Returns the manifest pushed and whether anything
/// was added.
pub fn push_signature(
    client: &Client,
    target: &Reference,
    subject: &Digest,
    ours: &[Descriptor],
    ours_from: &Store,
    scratch: &Store,
) -> Result<(Digest, bool), PushError> {
    let tag = signature_tag(subject);
    push_attachment(client, target, &tag, ours, ours_from, scratch)
}

/// Pushes the layers `ours` under `tag` as a sigstore attachment manifest (cosign's `.sig` and
/// `.att` layouts: no subject, the signature config), joining the layers already there.
pub fn push_attachment(
    client: &Client,
    target: &Reference,
    tag: &str,
    ours: &[Descriptor],
    ours_from: &Store,
    scratch: &Store,
) -> Result<(Digest, bool), PushError> {
    let tag_ref = target.with_tag(tag).map_err(RegistryError::from)?;
    let mut layers = match client.get_manifest(&tag_ref) {
        Ok(m) => {
            let existing: crate::image::Manifest =
                serde_json::from_slice(&m.bytes).map_err(|source| PushError::BadManifest {
                    digest: m.digest,
                    source,
                })?;
            existing.layers
        }
        Err(e) if is_manifest_unknown(&e) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut added = false;
    for l in ours {
        if !layers.contains(l) {
            layers.push(l.clone());
            added = true;
        }
    }
    let (bytes, manifest) = signature_manifest(scratch, layers)?;
    let c = &manifest.config;
    client.push_blob(target, &c.digest, c.size, scratch, None, &Silent)?;
    // The layers already there are skipped (HEAD); ours are read from `ours_from`.
    for l in &manifest.layers {
        client.push_blob(target, &l.digest, l.size, ours_from, None, &Silent)?;
    }
    let pushed = client.push_manifest(target, tag, &bytes, MEDIA_TYPE_MANIFEST)?;
    Ok((pushed, added))
}

pub fn is_manifest_unknown(e: &RegistryError) -> bool {
    match e {
        RegistryError::ManifestUnknown { .. } => true,
        RegistryError::AfterMirrors { last, .. } => is_manifest_unknown(last),
        _ => false,
    }
}
