//! Pushing an image to a registry: every blob (skipped when the registry has it, mounted from
//! the base's repository when that is on the same registry), then the manifest under a tag.
//!
//! The image is read through [`crate::image::source::ImageSource`] as a [`StoreImage`] (its
//! manifest as stored, its config and layers), an image index as a [`StoreIndex`]; the blobs
//! go byte for byte from the store they are in, which an upload can read again from any
//! offset (chunked uploads, retries), and into which a lazy cache hit's layer is fetched when
//! it cannot be mounted. A layout is a store through [`Store::view`]; an archive is imported
//! into one by [`crate::audit::import`], which reads it through
//! [`crate::output::source::Archive`]. Signatures and referrers are artifacts, not images:
//! they go by digest ([`attach`], [`push_referrers`]).

pub mod attach;
pub mod error;
pub mod source;

use serde::Serialize;

use crate::digest::Digest;
use crate::image::source::ImageSource;
use crate::image::{
    annotations, Descriptor, Index, ManifestHead, MEDIA_TYPE_INDEX, MEDIA_TYPE_MANIFEST,
};
use crate::progress::{Reporter, Silent};
use crate::registry::client::BlobPush;
use crate::registry::{Client, Reference, RegistryError};
use crate::store::image::{StoreImage, StoreIndex};
use crate::store::Store;

pub use self::attach::{
    is_manifest_unknown, push_attachment, push_signature, signature_manifest, signature_tag,
    SIMPLE_SIGNING,
};
pub use self::error::PushError;

/// What happened to each blob, and the pushed manifest.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
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

/// What pushing a multi-platform image did: each platform's manifest, then the index.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexPushReport {
    /// `registry/repository:tag@digest` (`registry/repository@digest` pushed by digest).
    pub pushed: String,
    pub digest: Digest,
    /// Each platform's manifest, pushed by digest.
    pub manifests: Vec<PushReport>,
    /// The bytes uploaded for every platform's blobs.
    pub uploaded_bytes: u64,
}

/// Push a multi-platform image: each platform's manifest (with its blobs) by digest, then the
/// index under `target`'s tag (`latest` when it names none), or by digest when it names one
/// (which must be the index's).
pub fn push_index(
    client: &Client,
    index: &StoreIndex,
    target: &Reference,
    reporter: &dyn Reporter,
) -> Result<IndexPushReport, PushError> {
    if let Some(named) = target.digest().filter(|d| *d != index.digest()) {
        return Err(PushError::DigestMismatch {
            target: target.to_string(),
            named,
            manifest: index.digest(),
        });
    }
    let mut manifests = Vec::with_capacity(index.manifests().len());
    for m in index.manifests() {
        // By digest alone: the tag names only the index, never one platform's manifest.
        let image = index.image(m)?;
        manifests.push(push(client, &image, &target.by_digest(m.digest), reporter)?);
    }
    let (reference, shown) = match (target.tag(), target.digest()) {
        (_, Some(d)) => (d.to_string(), format!("@{d}")),
        (Some(t), None) => (t.to_string(), format!(":{t}")),
        (None, None) => ("latest".to_string(), ":latest".to_string()),
    };
    let digest = client.push_manifest(target, &reference, index.bytes(), index.media_type())?;
    let repo = format!("{}/{}", target.registry(), target.repository());
    let pushed = if target.digest().is_some() {
        format!("{repo}{shown}")
    } else {
        format!("{repo}{shown}@{digest}")
    };
    Ok(IndexPushReport {
        pushed,
        digest,
        uploaded_bytes: manifests.iter().map(|r| r.uploaded_bytes).sum(),
        manifests,
    })
}

/// Push `image` (its blobs in its store) to `target` (its tag, or its digest when it has no
/// tag). Uploads and retries go to `reporter`.
pub fn push(
    client: &Client,
    image: &StoreImage,
    target: &Reference,
    reporter: &dyn Reporter,
) -> Result<PushReport, PushError> {
    let manifest = image.stored_manifest();
    if let Some(named) = target.digest().filter(|d| *d != manifest.digest) {
        return Err(PushError::DigestMismatch {
            target: target.to_string(),
            named,
            manifest: manifest.digest,
        });
    }
    let blobs = image.store();
    // A base on the same registry can be mounted instead of uploaded; a layer the store does
    // not have came from a shared cache (a lazy hit): mounted from there (or, on another
    // registry, downloaded from it and uploaded).
    let (mount_from, cache_from) = mount_sources(image, target);
    let mut report = Vec::new();
    let mut uploaded_bytes = 0;
    for d in image.blobs() {
        let from = blob_source(blobs, &d.digest, mount_from.as_ref(), cache_from.as_ref());
        let r = client.push_blob(target, &d.digest, d.size, blobs, from, reporter)?;
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
    let tag = target
        .tag()
        .map(str::to_string)
        .unwrap_or_else(|| manifest.digest.to_string());
    let media_type = manifest
        .media_type
        .as_deref()
        .unwrap_or(MEDIA_TYPE_MANIFEST);
    let digest = client.push_manifest(target, &tag, &manifest.bytes, media_type)?;
    let name = format!("{}/{}", target.registry(), target.repository());
    Ok(PushReport {
        pushed: format!("{name}:{tag}@{digest}"),
        digest,
        blobs: report,
        uploaded_bytes,
    })
}

/// What [`push`] would do with one blob of an image.
#[derive(Clone, Debug, Serialize)]
pub struct PlannedBlob {
    pub digest: Digest,
    pub size: u64,
    /// existing (the target has it) | mount (another repository of that registry has it:
    /// the base's, the cache repository's) | upload
    pub action: &'static str,
    /// For `mount`: the repository it is mounted from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// What [`push`] of an image to a target would upload.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushPlan {
    pub target: String,
    /// The layers, then the config.
    pub blobs: Vec<PlannedBlob>,
    /// The blob bytes the push will upload (what its report's `uploadedBytes` will say).
    pub upload_bytes: u64,
    /// Whether the target already has this manifest.
    pub manifest_exists: bool,
    /// Why the push would be refused: the registry's answer when an upload session is opened
    /// with these credentials (a token that grants pull but not push, a read-only account).
    /// Absent when the push may go ahead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// What [`push`] of `image` to `target` would do, asked of the registry (HEAD requests
/// only): each blob existing there, mounted from the repository [`push`] mounts it from, or
/// uploaded, with the bytes it will upload.
pub fn plan(
    client: &Client,
    image: &StoreImage,
    target: &Reference,
) -> Result<PushPlan, PushError> {
    let blobs = image.store();
    let manifest = image.stored_manifest();
    let (mount_from, cache_from) = mount_sources(image, target);
    let mut planned = Vec::new();
    let mut upload_bytes = 0;
    for d in image.blobs() {
        let from = blob_source(blobs, &d.digest, mount_from.as_ref(), cache_from.as_ref());
        // A blob the build will put into the cache repository (a plan's dry run) is there by
        // the time the push asks.
        let pending = |r: &Reference| {
            blobs.remote_will_have(&d.digest)
                && cache_from.as_ref().is_some_and(|c| {
                    c.registry() == r.registry() && c.repository() == r.repository()
                })
        };
        let (action, from) = if pending(target) || client.blob_exists(target, &d.digest)? {
            ("existing", None)
        } else {
            match from.filter(|f| {
                f.registry() == target.registry() && f.repository() != target.repository()
            }) {
                Some(f) if pending(f) || client.blob_exists(f, &d.digest)? => (
                    "mount",
                    Some(format!("{}/{}", f.registry(), f.repository())),
                ),
                _ => ("upload", None),
            }
        };
        if action == "upload" {
            upload_bytes += d.size;
        }
        planned.push(PlannedBlob {
            digest: d.digest,
            size: d.size,
            action,
            from,
        });
    }
    let manifest_exists = match client.get_manifest(&target.by_digest(manifest.digest)) {
        Ok(_) => true,
        Err(e) if is_manifest_unknown(&e) || is_refused(&e) => false,
        Err(e) => return Err(e.into()),
    };
    // A refusal is the plan's finding; anything else (the registry down, TLS) its error.
    let refused = match client.check_push(target) {
        Ok(()) => None,
        Err(e) if is_push_refusal(&e) => Some(crate::diag::chain(&e)),
        Err(e) => return Err(e.into()),
    };
    Ok(PushPlan {
        target: target.to_string(),
        blobs: planned,
        upload_bytes,
        manifest_exists,
        refused,
    })
}

/// An artifact manifest (a referrer, a signature) in `blobs`: its bytes, and what a copy reads
/// of it. Artifacts go by digest, not through the image model: their configs need not be
/// image configs.
pub(crate) fn artifact_head(
    blobs: &Store,
    digest: &Digest,
) -> Result<(Vec<u8>, ManifestHead), PushError> {
    let bytes = blobs.read_blob(digest)?;
    let head = serde_json::from_slice(&bytes).map_err(|source| PushError::BadManifest {
        digest: *digest,
        source,
    })?;
    Ok((bytes, head))
}

/// Where [`push`] may mount blobs from: a base on the same registry (its `base.name`
/// annotation), and the shared cache a lazy hit's blob is in.
fn mount_sources(image: &StoreImage, target: &Reference) -> (Option<Reference>, Option<Reference>) {
    let base = image
        .stored_manifest()
        .annotations
        .get(annotations::BASE_NAME)
        .and_then(|n| n.parse::<Reference>().ok())
        .filter(|b| b.registry() == target.registry() && b.repository() != target.repository());
    let cache = image
        .store()
        .remote_mount_source()
        .and_then(|s| s.parse::<Reference>().ok());
    (base, cache)
}

/// The repository blob `digest` is mounted from, if any: the cache repository's for a layer
/// the build took from it (whether or not it was downloaded: a mount saves the upload; a
/// refused mount uploads the local blob, or downloads it from there first), else the base's.
fn blob_source<'a>(
    blobs: &Store,
    digest: &Digest,
    base: Option<&'a Reference>,
    cache: Option<&'a Reference>,
) -> Option<&'a Reference> {
    match cache {
        Some(c) if blobs.is_remote_blob(digest) => Some(c),
        _ => base,
    }
}

/// What pushing an image's referrers (SBOMs, provenance) did.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReferrersReport {
    /// `registry/repository@digest` of each artifact manifest pushed.
    pub pushed: Vec<String>,
    /// What each of `pushed` is, in the same order.
    pub documents: Vec<PushedDocument>,
    /// The referrers tag fallback (`sha256-<hex of the subject digest>`) and the digest of the
    /// index now under it.
    pub fallback_tag: String,
    pub fallback_digest: Digest,
    /// The signed attestations among them in cosign's layout too:
    /// `registry/repository:sha256-<hex>.att@digest` (none when none is signed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attestation_tag: Option<String>,
    pub uploaded_bytes: u64,
}

/// One artifact manifest pushed as a referrer, and what it holds.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushedDocument {
    /// `registry/repository@digest`, as in [`ReferrersReport::pushed`].
    pub reference: String,
    /// Its `artifactType` (`application/spdx+json`, `application/vnd.dsse.envelope.v1+json`).
    pub artifact_type: Option<String>,
    /// For a signed attestation (a DSSE envelope): its in-toto statement's predicate type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicate_type: Option<String>,
}

impl PushedDocument {
    /// What it is, for a person: `SPDX SBOM`, `SLSA provenance, signed attestation`.
    pub fn describe(&self) -> String {
        crate::audit::naming::document_name(
            self.artifact_type.as_deref(),
            self.predicate_type.as_deref(),
        )
    }
}

/// Largest DSSE envelope read to name what it attests.
const MAX_ENVELOPE: u64 = 16 << 20;

/// The referrers tag fallback of the OCI distribution spec 1.1 ("Referrers tag schema") for a
/// subject: `sha256-<hex>`.
pub fn referrers_tag(subject: &Digest) -> String {
    format!("sha256-{}", subject.hex())
}

/// The registry's no to a push: 401 or 403 (these credentials), 405 (a read-only registry or
/// mirror), or 404 / `NAME_UNKNOWN` (a registry whose repositories must be created first).
fn is_push_refusal(e: &RegistryError) -> bool {
    match e {
        RegistryError::Unauthorized { .. } => true,
        RegistryError::Status { status, .. } => matches!(status, 404 | 405),
        RegistryError::AfterMirrors { last, .. } => is_push_refusal(last),
        _ => false,
    }
}

/// A 401 or 403 answer. Asked after other requests of the same repository went through, it is
/// how some registries (not Distribution) answer for a manifest that is not there: they do
/// not say whether a tag exists to whom may not see it, and some not even to whom may.
pub fn is_refused(e: &RegistryError) -> bool {
    match e {
        RegistryError::Unauthorized { .. } => true,
        RegistryError::AfterMirrors { last, .. } => is_refused(last),
        _ => false,
    }
}

/// Push the artifact manifests `referrers` (whose `subject` is the manifest `subject`, all blobs
/// in `blobs`) to `target`'s repository by digest, then merge their descriptors into the image
/// index under the referrers tag fallback (fetched first, so other tools' referrers stay):
/// registries without the referrers API (Distribution 2.8) are found through it, and clients
/// that use the fallback find them everywhere.
pub fn push_referrers(
    client: &Client,
    blobs: &Store,
    subject: &Digest,
    referrers: &[Descriptor],
    target: &Reference,
) -> Result<ReferrersReport, PushError> {
    let name = format!("{}/{}", target.registry(), target.repository());
    let mut pushed = Vec::new();
    let mut documents = Vec::new();
    let mut uploaded_bytes = 0;
    for r in referrers {
        let (bytes, head) = artifact_head(blobs, &r.digest)?;
        for d in head.layers.iter().chain(std::iter::once(&head.config)) {
            let res = client.push_blob(target, &d.digest, d.size, blobs, None, &Silent)?;
            if matches!(res, BlobPush::Uploaded | BlobPush::UploadedChunked) {
                uploaded_bytes += d.size;
            }
        }
        let media_type = head
            .media_type
            .unwrap_or_else(|| MEDIA_TYPE_MANIFEST.to_string());
        let digest = client.push_manifest(target, &r.digest.to_string(), &bytes, &media_type)?;
        // A signed attestation is named by what it states (read only to name it).
        let predicate_type = head
            .layers
            .iter()
            .filter(|l| {
                l.media_type == crate::sign::payload::DSSE_MEDIA_TYPE && l.size <= MAX_ENVELOPE
            })
            .find_map(|l| {
                let envelope = blobs.read_blob(&l.digest).ok()?;
                crate::sign::payload::envelope_predicate_type(&envelope)
            });
        documents.push(PushedDocument {
            reference: format!("{name}@{digest}"),
            artifact_type: r.artifact_type.clone(),
            predicate_type,
        });
        pushed.push(format!("{name}@{digest}"));
    }
    let tag = referrers_tag(subject);
    let tag_ref = target.with_tag(&tag).map_err(RegistryError::from)?;
    let bad = |problem: String| PushError::BadReferrersIndex {
        repository: name.clone(),
        tag: tag.clone(),
        problem,
    };
    let mut index = match client.get_manifest(&tag_ref) {
        Ok(m) if m.media_type == MEDIA_TYPE_INDEX => {
            serde_json::from_slice::<Index>(&m.bytes).map_err(|e| bad(e.to_string()))?
        }
        Ok(m) => return Err(bad(format!("media type {}", m.media_type))),
        Err(e) if is_manifest_unknown(&e) => Index::new(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    index.media_type = Some(MEDIA_TYPE_INDEX.to_string());
    index
        .manifests
        .retain(|d| !referrers.iter().any(|r| r.digest == d.digest));
    index.manifests.extend(referrers.iter().cloned());
    index.manifests.sort_by_key(|d| d.digest);
    let bytes = crate::json::to_canonical_vec("referrers index", &index)?;
    let fallback_digest = client.push_manifest(target, &tag, &bytes, MEDIA_TYPE_INDEX)?;
    let attestation_tag =
        crate::sign::cosign::push_attestations(client, blobs, subject, referrers, target)?;
    Ok(ReferrersReport {
        pushed,
        documents,
        fallback_tag: tag,
        fallback_digest,
        attestation_tag,
        uploaded_bytes,
    })
}
