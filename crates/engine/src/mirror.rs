//! Copying images into a registry with their digests unchanged: base images a lock pins, images
//! in an OCI layout, or the `oci` entries of a vendor directory.
//!
//! Blobs go by digest (skipped when the target has them: HEAD), manifests byte for byte, so
//! every digest a lock pins resolves in the target. An image `R/REPO` goes to
//! `TARGET/REPO` (`TARGET` is `REGISTRY[/PREFIX]`), which is what a `[[mirror]]` rule with
//! `prefix = "R"`, `locations = ["TARGET"]` looks up: a recipe naming `R/REPO:TAG` then
//! builds unchanged against the target.
//!
//! Nothing here prints; [`MirrorReport`] says what was copied and skipped.
//!
//! Each manifest is read through [`crate::image::source::ImageSource`] as a [`StoreImage`] (a
//! layout's blobs through [`Store::view`]); its blobs go byte for byte by digest from that
//! store, as [`crate::push`] sends them. Indexes, signatures and referrers go by digest.

use std::path::PathBuf;

use serde::Serialize;

use crate::digest::Digest;

use crate::image::source::{ImageSource, SourceError};
use crate::image::{annotations, Descriptor, MEDIA_TYPE_INDEX};
use crate::output::{Layout, ReadError};
use crate::progress::Reporter;
use crate::registry::client::BlobPush;
use crate::registry::{Client, Reference, ReferenceError, RegistryError};
use crate::store::image::StoreImage;
use crate::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error(transparent)]
    Registry(Box<RegistryError>),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `target` as [`crate::registry::reference::shown`] gives it; the source quotes it.
    #[error("mirror target")]
    Target {
        target: String,
        source: ReferenceError,
    },
    #[error(transparent)]
    Layout(#[from] ReadError),
    #[error("OCI layout {}: {problem}", dir.display())]
    BadLayout { dir: PathBuf, problem: String },
    #[error("{image}: manifest {digest} is not an image manifest: {problem}")]
    BadManifest {
        image: String,
        digest: Digest,
        problem: String,
    },
    #[error(transparent)]
    Referrers(Box<crate::push::PushError>),
    /// An image to copy, as read from its store.
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("{image}: the target stored the manifest as {found}, not {expected}")]
    DigestChanged {
        image: String,
        expected: Digest,
        found: Digest,
    },
}

impl From<RegistryError> for MirrorError {
    fn from(e: RegistryError) -> Self {
        MirrorError::Registry(Box::new(e))
    }
}

/// One image to copy.
#[derive(Clone, Debug)]
pub struct Image {
    /// Where it comes from, for the report (`docker.io/library/debian:bookworm`).
    pub name: String,
    /// The repository path under the target (`library/debian`).
    pub repository: String,
    /// The tag to set in the target (the index's when there is one, else the manifest's).
    pub tag: Option<String>,
    pub manifest: Digest,
    /// The image index the lock pins, copied too (by digest, and under the tag).
    pub index: Option<Digest>,
    /// The index's other manifests, copied too (a multi-platform image from a layout: every
    /// platform; a lock pins only the one it builds).
    pub others: Vec<Digest>,
    /// What its signature and referrers are about: the index of a layout's multi-platform
    /// image (which must then be copied whole), else the manifest.
    pub subject: Option<Digest>,
    /// Its sigstore signature manifest (a layout's `sha256-<hex>.sig` entry), copied under
    /// that tag, so that signature policies hold in the target too.
    pub signature: Option<Digest>,
    /// Its referrers (SBOMs, provenance, signed attestations), copied with the referrers tag.
    pub referrers: Vec<crate::image::Descriptor>,
    /// A multi-platform image's platform manifests' own signatures and referrers.
    pub attached: Vec<Attached>,
}

/// The signature and referrers of one manifest of an image index, copied with it.
#[derive(Clone, Debug)]
pub struct Attached {
    pub manifest: Digest,
    pub signature: Option<Digest>,
    pub referrers: Vec<crate::image::Descriptor>,
}

/// What was copied for one [`Attached`].
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachedReport {
    pub manifest: Digest,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub referrers: Option<crate::push::ReferrersReport>,
}

impl Image {
    /// The image a reference names (`R/REPO[:TAG]`), pinned to `manifest`.
    pub fn from_reference(
        reference: &str,
        manifest: Digest,
        index: Option<Digest>,
    ) -> Result<Image, ReferenceError> {
        let r: Reference = reference.parse()?;
        Ok(Image {
            name: r.to_string(),
            repository: r.repository().to_string(),
            tag: r.tag().map(str::to_string),
            manifest,
            index,
            others: Vec::new(),
            subject: None,
            signature: None,
            referrers: Vec::new(),
            attached: Vec::new(),
        })
    }
}

/// What happened to one blob.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MirroredBlob {
    pub digest: Digest,
    pub size: u64,
    /// copied | skipped (the target had it)
    pub result: &'static str,
}

/// What [`mirror`] did for one image.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MirrorReport {
    pub source: String,
    /// `TARGET/REPO[:TAG]@DIGEST` of the manifest.
    pub target: String,
    pub manifest: Digest,
    pub blobs: Vec<MirroredBlob>,
    pub copied_bytes: u64,
    pub skipped_bytes: u64,
    /// The index: `copied`, absent when none is pinned, or why it was not copied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// `REPO:sha256-<hex>.sig@DIGEST` of the signature copied, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The referrers copied (artifact manifests), and the referrers tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub referrers: Option<crate::push::ReferrersReport>,
    /// A multi-platform image: what each platform manifest's signature and referrers became.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attached: Vec<AttachedReport>,
}

fn media_type_of(bytes: &[u8], fallback: &str) -> String {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v["mediaType"].as_str().map(str::to_string))
        .unwrap_or_else(|| fallback.to_string())
}

/// Copy `image` (every blob readable from `blobs`) to `target` (`REGISTRY[/PREFIX]`); uploads
/// and retries go to `reporter`.
pub fn mirror(
    client: &Client,
    blobs: &Store,
    image: &Image,
    target: &str,
    reporter: &dyn Reporter,
) -> Result<MirrorReport, MirrorError> {
    let dest_name = format!("{}/{}", target.trim_end_matches('/'), image.repository);
    let dest: Reference = dest_name.parse().map_err(|source| MirrorError::Target {
        target: crate::registry::reference::shown(&dest_name),
        source,
    })?;
    let mut report = MirrorReport {
        source: image.name.clone(),
        target: String::new(),
        manifest: image.manifest,
        blobs: Vec::new(),
        copied_bytes: 0,
        skipped_bytes: 0,
        index: None,
        signature: None,
        referrers: None,
        attached: Vec::new(),
    };
    let check = |found: Digest, expected: Digest| {
        if found == expected {
            Ok(())
        } else {
            Err(MirrorError::DigestChanged {
                image: image.name.clone(),
                expected,
                found,
            })
        }
    };
    for m in image.others.iter().chain(std::iter::once(&image.manifest)) {
        let (bytes, media_type) =
            copy_blobs(client, blobs, &dest, image, m, &mut report, reporter)?;
        check(
            client.push_manifest(&dest, &m.to_string(), &bytes, &media_type)?,
            *m,
        )?;
    }
    let bytes = blobs.read_blob(&image.manifest)?;
    let media_type = media_type_of(&bytes, crate::image::MEDIA_TYPE_MANIFEST);
    // The tag goes to the index when one is pinned (as upstream), else to the manifest.
    let mut tag_done = false;
    if let Some(ix) = image.index {
        let ix_bytes = blobs.read_blob(&ix)?;
        let ix_type = media_type_of(&ix_bytes, crate::image::MEDIA_TYPE_INDEX);
        let by_digest = client.push_manifest(&dest, &ix.to_string(), &ix_bytes, &ix_type);
        match by_digest {
            Ok(found) => {
                check(found, ix)?;
                if let Some(tag) = &image.tag {
                    check(client.push_manifest(&dest, tag, &ix_bytes, &ix_type)?, ix)?;
                    tag_done = true;
                }
                report.index = Some("copied".into());
            }
            // A layout's multi-platform image is its index: every manifest was copied.
            Err(e) if image.subject.is_some() => return Err(e.into()),
            // A registry that checks an index's manifests refuses one whose other platforms
            // were not copied; builds need only the platform manifest, which is there.
            Err(e) => report.index = Some(format!("not copied: {}", crate::diag::chain(&e))),
        }
    }
    if let (Some(tag), false) = (&image.tag, tag_done) {
        check(
            client.push_manifest(&dest, tag, &bytes, &media_type)?,
            image.manifest,
        )?;
    }
    let subject = image.subject.unwrap_or(image.manifest);
    let top = Attached {
        manifest: subject,
        signature: image.signature,
        referrers: image.referrers.clone(),
    };
    let copied = copy_attached(client, blobs, &dest, &dest_name, &image.name, &top)?;
    (report.signature, report.referrers) = (copied.signature, copied.referrers);
    for a in &image.attached {
        report.attached.push(copy_attached(
            client,
            blobs,
            &dest,
            &dest_name,
            &image.name,
            a,
        )?);
    }
    report.target = match &image.tag {
        Some(t) => format!("{dest_name}:{t}@{subject}"),
        None => format!("{dest_name}@{subject}"),
    };
    Ok(report)
}

/// Copy `a`'s signature (its layers joining the signatures the target already has for this
/// digest: the digest did not change, so each still verifies) and its referrers.
fn copy_attached(
    client: &Client,
    blobs: &Store,
    dest: &Reference,
    dest_name: &str,
    image_name: &str,
    a: &Attached,
) -> Result<AttachedReport, MirrorError> {
    let mut report = AttachedReport {
        manifest: a.manifest,
        signature: None,
        referrers: None,
    };
    let referrers_err = |e| MirrorError::Referrers(Box::new(e));
    if let Some(sig) = a.signature {
        let sig_bytes = blobs.read_blob(&sig)?;
        let sig_manifest: crate::image::Manifest =
            serde_json::from_slice(&sig_bytes).map_err(|e| MirrorError::BadManifest {
                image: image_name.to_string(),
                digest: sig,
                problem: e.to_string(),
            })?;
        let scratch_dir = tempfile::Builder::new()
            .prefix("ocibuild-mirror-")
            .tempdir()
            .map_err(StoreError::from)?;
        let scratch = Store::open(scratch_dir.path())?;
        let (pushed, _) = crate::push::push_signature(
            client,
            dest,
            &a.manifest,
            &sig_manifest.layers,
            blobs,
            &scratch,
        )
        .map_err(referrers_err)?;
        let tag = crate::push::signature_tag(&a.manifest);
        report.signature = Some(format!("{dest_name}:{tag}@{pushed}"));
    }
    if !a.referrers.is_empty() {
        report.referrers = Some(
            crate::push::push_referrers(client, blobs, &a.manifest, &a.referrers, dest)
                .map_err(referrers_err)?,
        );
    }
    Ok(report)
}

/// The images of an OCI layout (`index.json` at `dir`, read by [`Layout`]: bounded, each
/// digest checked before it becomes a path), optionally only the one tagged `tag`: named by
/// their `io.containerd.image.name` annotation, else `ref.name` under `fallback`.
pub fn layout_images(
    dir: &std::path::Path,
    tag: Option<&str>,
    fallback: &str,
) -> Result<Vec<Image>, MirrorError> {
    let layout = Layout::open(dir)?;
    let bad = |problem: String| MirrorError::BadLayout {
        dir: dir.to_path_buf(),
        problem,
    };
    let entries = layout
        .index()
        .manifests
        .iter()
        .map(|e| layout.descriptor(e))
        .collect::<Result<Vec<Descriptor>, _>>()?;
    // Signatures and referrers go with their image, not as images of their own (cosign's
    // `.att` manifest too: pushing the referrers makes it again, the same bytes); an artifact
    // of no image in the index (one `oras` put there) is copied like an image.
    // An image index's platform manifests count: their signatures and referrers go too.
    let mut image_digests: Vec<Digest> = Vec::new();
    for d in entries.iter().filter(|d| d.artifact_type.is_none()) {
        image_digests.push(d.digest);
        if d.media_type == MEDIA_TYPE_INDEX {
            if let Ok(nested) = nested_index(&layout, &d.digest) {
                image_digests.extend(nested.manifests.iter().map(|m| m.digest));
            }
        }
    }
    let belongs = |e: &Descriptor| {
        e.artifact_type.is_some()
            && image_digests.iter().any(|i| {
                let tag = e.annotations.get(annotations::REF_NAME);
                tag == Some(&crate::push::signature_tag(i))
                    || tag == Some(&crate::sign::cosign::attestation_tag(i))
                    || subject_of(&layout, &e.digest) == Some(*i)
            })
    };
    let (extras, images): (Vec<_>, Vec<_>) = entries.iter().partition(|d| belongs(d));
    let mut out = Vec::new();
    for d in images {
        let ref_name = d.annotations.get(annotations::REF_NAME).cloned();
        if tag.is_some() && ref_name.as_deref() != tag {
            continue;
        }
        let name = d
            .annotations
            .get(annotations::CONTAINERD_NAME)
            .cloned()
            .unwrap_or_else(|| match &ref_name {
                Some(t) => format!("{fallback}:{t}"),
                None => fallback.to_string(),
            });
        // A multi-platform image: its index, with every platform's manifest.
        let (manifest, index, others) = if d.media_type == MEDIA_TYPE_INDEX {
            let nested = nested_index(&layout, &d.digest)?;
            let mut digests = nested.manifests.iter().map(|m| m.digest);
            let first = digests
                .next()
                .ok_or_else(|| bad(format!("{name}: its index lists no manifest")))?;
            (first, Some(d.digest), digests.collect())
        } else {
            (d.digest, None, Vec::new())
        };
        let mut img = Image::from_reference(&name, manifest, index).map_err(|source| {
            MirrorError::Target {
                target: crate::registry::reference::shown(&name),
                source,
            }
        })?;
        img.name = format!("{}@{}", name, d.digest);
        img.others = others;
        img.subject = index;
        let attached_to = |m: Digest| {
            let sig_tag = crate::push::signature_tag(&m);
            let signature = extras
                .iter()
                .find(|e| e.annotations.get(annotations::REF_NAME) == Some(&sig_tag))
                .map(|e| e.digest);
            let referrers = extras
                .iter()
                .filter(|e| {
                    Some(e.digest) != signature && subject_of(&layout, &e.digest) == Some(m)
                })
                .map(|e| (*e).clone())
                .collect();
            Attached {
                manifest: m,
                signature,
                referrers,
            }
        };
        let top = attached_to(d.digest);
        (img.signature, img.referrers) = (top.signature, top.referrers);
        if index.is_some() {
            img.attached = std::iter::once(img.manifest)
                .chain(img.others.iter().copied())
                .map(attached_to)
                .filter(|a| a.signature.is_some() || !a.referrers.is_empty())
                .collect();
        }
        out.push(img);
    }
    if out.is_empty() {
        return Err(bad(match tag {
            Some(t) => format!("no image tagged `{t}`"),
            None => "no image".into(),
        }));
    }
    Ok(out)
}

/// The image index `digest` of `layout`.
fn nested_index(layout: &Layout, digest: &Digest) -> Result<crate::image::Index, ReadError> {
    layout.read_json(&digest.to_string())
}

/// The `subject` of the manifest `digest` in `layout`, if it has one.
fn subject_of(layout: &Layout, digest: &Digest) -> Option<Digest> {
    let m: crate::image::Manifest = layout.read_json(&digest.to_string()).ok()?;
    m.subject.map(|s| s.digest)
}

/// Copies the blobs of the manifest `digest` (from `blobs`, read as an image) to `dest`,
/// recording each in `report`; returns the manifest's bytes and media type.
fn copy_blobs(
    client: &Client,
    blobs: &Store,
    dest: &Reference,
    image: &Image,
    digest: &Digest,
    report: &mut MirrorReport,
    reporter: &dyn Reporter,
) -> Result<(Vec<u8>, String), MirrorError> {
    let source = StoreImage::manifest(&image.name, blobs.clone(), *digest)?;
    // The config first, then the layers (the order the report has always listed them in).
    let mut list = source.blobs();
    list.rotate_right(1);
    for d in list {
        let r = client.push_blob(dest, &d.digest, d.size, blobs, None, reporter)?;
        let result = if matches!(r, BlobPush::Existed) {
            report.skipped_bytes += d.size;
            "skipped"
        } else {
            report.copied_bytes += d.size;
            "copied"
        };
        report.blobs.push(MirroredBlob {
            digest: d.digest,
            size: d.size,
            result,
        });
    }
    let manifest = source.stored_manifest();
    let media_type = manifest
        .media_type
        .clone()
        .unwrap_or_else(|| crate::image::MEDIA_TYPE_MANIFEST.to_string());
    Ok((manifest.bytes.clone(), media_type))
}
