//! Images to audit, from wherever they are: an OCI layout, an `oci-archive` or `docker-archive`
//! tar, a registry, or a content store (the rebuild of `verify`). Each is opened by its
//! transport, where the transport lives, and read through [`ImageSource`]: the manifest
//! (digest and bytes; none for a docker-archive, which has no manifest), the config (bytes and
//! parsed JSON), and the layers, each of which opens as a decompressed tar stream.

use std::io;

use super::AuditError;
use crate::digest::Digest;
use crate::image::source::{parse_json, DocKind, Documents, ImageSource};
use crate::image::{AnyManifest, Platform};
use crate::imageref::{ImageRef, ImageRefError};
use crate::output::source::{layout_entry, open_layout, Archive, ArchiveImage};
use crate::progress::Reporter;
use crate::registry::image::RegistryImage;
use crate::registry::Client;
use crate::store::image::{StoreDocuments, StoreImage};
use crate::store::Store;

pub use crate::image::source::{ConfigDoc, LayerInfo, ManifestDoc};

/// What opening a source may need.
#[derive(Clone, Copy)]
pub struct OpenOptions<'c> {
    /// For `docker://` sources.
    pub client: Option<&'c Client>,
    /// The platform to pick from an image index (default: the host's).
    pub platform: Option<&'c Platform>,
    /// Where a registry source's downloads and retries are reported.
    pub reporter: &'c dyn Reporter,
}

/// An opened image, whatever its transport.
pub type Image<'c> = Box<dyn ImageSource + 'c>;

/// Open the image `spec` names.
pub fn open<'c>(spec: &ImageRef, opts: OpenOptions<'c>) -> Result<Image<'c>, AuditError> {
    let name = spec.to_string();
    let host = Platform::host();
    let platform = opts.platform.unwrap_or(&host);
    Ok(match spec {
        ImageRef::Digest(_) | ImageRef::Vendor(_) => {
            return Err(ImageRefError::DigestOnly { input: name }.into())
        }
        ImageRef::Layout { dir, tag } => {
            Box::new(open_layout(&name, dir, tag.as_deref(), platform)?)
        }
        ImageRef::OciArchive(path) => Box::new(ArchiveImage::oci(&name, path, platform)?),
        ImageRef::DockerArchive(path) => Box::new(ArchiveImage::docker(&name, path)?),
        ImageRef::Registry(r) => {
            let client = opts.client.ok_or_else(|| AuditError::Bad {
                source_name: name.clone(),
                problem: "no registry client configured".into(),
            })?;
            Box::new(RegistryImage::open(
                &name,
                client,
                r,
                platform,
                opts.reporter,
            )?)
        }
    })
}

/// The platforms of the image index `spec` names, in its order (normalized, as
/// [`Platform::parse`] returns them); `None` when it names one
/// image (a manifest, or a docker archive). A registry source costs one manifest request.
pub fn index_platforms(
    spec: &ImageRef,
    opts: OpenOptions<'_>,
) -> Result<Option<Vec<Platform>>, AuditError> {
    let name = spec.to_string();
    let bytes = match spec {
        ImageRef::Digest(_) | ImageRef::Vendor(_) | ImageRef::DockerArchive(_) => return Ok(None),
        ImageRef::Layout { dir, tag } => {
            if !dir.join("index.json").is_file() {
                return Ok(None); // `open` says what is wrong
            }
            let digest = layout_entry(&name, dir, tag.as_deref())?;
            let store = Store::view(dir.clone());
            let docs = StoreDocuments {
                name: &name,
                store: &store,
            };
            docs.document(&digest, DocKind::Manifest)?
        }
        ImageRef::OciArchive(path) => {
            let archive = Archive::open(path)?;
            let digest = archive.index_entry(&name)?;
            archive
                .documents(&name)
                .document(&digest, DocKind::Manifest)?
        }
        ImageRef::Registry(r) => {
            let Some(client) = opts.client else {
                return Ok(None);
            };
            client.get_manifest_with(r, opts.reporter)?.bytes
        }
    };
    let manifest: AnyManifest = parse_json(&name, "manifest", &bytes)?;
    Ok(manifest.manifests.map(|list| {
        let mut out: Vec<Platform> = Vec::new();
        // Normalized where possible (`linux/arm64` and `linux/arm64/v8` are one), without
        // buildkit's attestation entries, each platform once.
        for p in list.into_iter().filter_map(|d| d.platform) {
            let p = Platform::parse(&p.to_string()).unwrap_or(p);
            if !p.is_unknown() && !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }))
}

/// Open the image whose manifest `digest` names, from a store (or any directory with
/// `blobs/sha256/`): the rebuild that `verify` made.
pub fn open_store(name: &str, store: &Store, digest: Digest) -> Result<Image<'static>, AuditError> {
    let platform = Platform::host();
    let view = Store::view(store.root().to_path_buf());
    Ok(Box::new(StoreImage::open(name, view, digest, &platform)?))
}

/// An io error while reading layer `i` of `image`.
pub(super) fn layer_error(image: &dyn ImageSource, i: usize, e: io::Error) -> AuditError {
    AuditError::Layer {
        source_name: image.name().to_string(),
        layer: i + 1,
        digest: image.layer_label(i),
        problem: e.to_string(),
    }
}
