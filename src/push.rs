//! Pushing an image to a registry: every blob (skipped when the registry has it, mounted from
//! the base's repository when that is on the same registry), then the manifest under a tag.

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::image::{annotations, Descriptor};
use crate::registry::client::{BlobPush, NoProgress};
use crate::registry::{Client, Reference, RegistryError};
use crate::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error(transparent)]
    Registry(Box<RegistryError>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("manifest {digest} is not an image manifest: {source}")]
    BadManifest {
        digest: Digest,
        source: serde_json::Error,
    },
}

impl From<RegistryError> for PushError {
    fn from(e: RegistryError) -> Self {
        PushError::Registry(Box::new(e))
    }
}

/// What happened to each blob, and the pushed manifest.
#[derive(Clone, Debug, Serialize)]
pub struct PushReport {
    /// `registry/repository:tag@digest`.
    pub pushed: String,
    pub digest: Digest,
    pub blobs: Vec<PushedBlob>,
    /// Bytes sent in blob uploads (mounted and existing blobs send none).
    pub uploaded_bytes: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PushedBlob {
    pub digest: Digest,
    pub size: u64,
    /// existed | mounted | uploaded | uploaded-chunked
    pub result: &'static str,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ManifestHead {
    media_type: Option<String>,
    config: Descriptor,
    layers: Vec<Descriptor>,
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
}

/// Push the image whose manifest is `manifest` (all blobs readable from `blobs`) to `target`
/// (its tag, or its digest when it has no tag).
pub fn push(
    client: &Client,
    blobs: &Store,
    manifest: &Descriptor,
    target: &Reference,
) -> Result<PushReport, PushError> {
    let bytes = blobs.read_blob(&manifest.digest)?;
    let head: ManifestHead =
        serde_json::from_slice(&bytes).map_err(|source| PushError::BadManifest {
            digest: manifest.digest,
            source,
        })?;
    // A base on the same registry can be mounted instead of uploaded.
    let mount_from: Option<Reference> = head
        .annotations
        .get(annotations::BASE_NAME)
        .and_then(|n| n.parse::<Reference>().ok())
        .filter(|b| b.registry() == target.registry() && b.repository() != target.repository());
    let mut report = Vec::new();
    let mut uploaded_bytes = 0;
    for d in head.layers.iter().chain(std::iter::once(&head.config)) {
        let r = client.push_blob(
            target,
            &d.digest,
            d.size,
            blobs,
            mount_from.as_ref(),
            &NoProgress,
        )?;
        let result = match r {
            BlobPush::Existed => "existed",
            BlobPush::Mounted => "mounted",
            BlobPush::Uploaded => "uploaded",
            BlobPush::UploadedChunked => "uploaded-chunked",
        };
        if matches!(r, BlobPush::Uploaded | BlobPush::UploadedChunked) {
            uploaded_bytes += d.size;
        }
        report.push(PushedBlob {
            digest: d.digest,
            size: d.size,
            result,
        });
    }
    let media_type = head
        .media_type
        .unwrap_or_else(|| manifest.media_type.clone());
    let tag = target
        .tag()
        .map(str::to_string)
        .unwrap_or_else(|| manifest.digest.to_string());
    let digest = client.push_manifest(target, &tag, &bytes, &media_type)?;
    let name = format!("{}/{}", target.registry(), target.repository());
    Ok(PushReport {
        pushed: format!("{name}:{tag}@{digest}"),
        digest,
        blobs: report,
        uploaded_bytes,
    })
}
