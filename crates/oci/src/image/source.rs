//! [`ImageSource`]: one image, read from wherever it is, as go-containerregistry's `v1.Image`.
//! Every transport gives the same view: the manifest (digest and bytes; none for a
//! docker-archive, which has no manifest), the config (bytes and parsed JSON), and the layers,
//! each of which opens as a decompressed tar stream.
//!
//! The trait is here, at the bottom; each transport implements it where it lives: an OCI
//! layout or a content store in `crate::store` (`store::image`), an `oci-archive` or
//! `docker-archive` tar in `crate::output`, a registry image in `crate::registry`. What they
//! share (following a manifest through image indexes, reading its config, describing its
//! layers) is [`resolve`], over a transport's [`Documents`].

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;

use super::{annotations, AnyManifest, Platform};
use crate::digest::Digest;

/// JSON documents (index, manifest, config, manifest.json) larger than this are refused.
pub const MAX_DOCUMENT: u64 = 64 << 20;
/// Read buffer for layer blobs.
const BUF: usize = 256 * 1024;
/// Image indexes within image indexes followed before the manifest is taken as it is.
const MAX_DEPTH: usize = 4;

/// Why an image could not be opened or read. A transport's own error (a registry's, a store's,
/// a layout's) is carried as it is: its message and its sources unchanged.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{path}")]
    Io { path: PathBuf, source: io::Error },
    /// An fs-err error: its message already names the path.
    #[error(transparent)]
    Fs(#[from] io::Error),
    #[error("{source_name}: {problem}")]
    Bad {
        source_name: String,
        problem: String,
    },
    #[error("{source_name}: no image tagged `{tag}` (tags: {tags})")]
    NoSuchTag {
        source_name: String,
        tag: String,
        tags: String,
    },
    #[error("{source_name} holds {count} images: say which, as {source_name}:TAG (tags: {tags})")]
    Ambiguous {
        source_name: String,
        count: usize,
        tags: String,
    },
    #[error("{archive}: no member `{member}`")]
    MissingMember { archive: PathBuf, member: String },
    #[error("{source_name}: blob {digest} is missing")]
    MissingBlob { source_name: String, digest: Digest },
    /// The transport's own error (registry, store, layout), as it is.
    #[error(transparent)]
    Transport(Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl SourceError {
    /// A transport's error, kept as it is.
    pub fn transport(e: impl std::error::Error + Send + Sync + 'static) -> SourceError {
        SourceError::Transport(Box::new(e))
    }
}

/// The image manifest as stored.
#[derive(Clone, Debug)]
pub struct ManifestDoc {
    pub digest: Digest,
    pub bytes: Vec<u8>,
    pub media_type: Option<String>,
    pub annotations: BTreeMap<String, String>,
}

/// The image config as stored.
#[derive(Clone, Debug)]
pub struct ConfigDoc {
    pub digest: Digest,
    pub bytes: Vec<u8>,
    pub json: serde_json::Value,
}

/// One layer of an image, as read.
#[derive(Clone, Debug)]
pub struct LayerInfo {
    /// The blob digest; `None` in a docker-archive (its layers are stored decompressed).
    pub digest: Option<Digest>,
    pub media_type: String,
    pub size: Option<u64>,
    /// From the config's `rootfs.diff_ids`, when it lists this layer.
    pub diff_id: Option<Digest>,
    /// The recipe layer's name (`dev.ocibuild.layer` annotation), when there is one.
    pub name: Option<String>,
    /// Where the transport finds the blob.
    pub blob: LayerBlob,
}

/// A blob an image names: its digest and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlobRef {
    pub digest: Digest,
    pub size: u64,
}

/// Where a layer's blob is, in its transport.
#[derive(Clone, Debug)]
pub enum LayerBlob {
    /// By digest (a layout, a store, a registry, an oci-archive's `blobs/sha256/`).
    Digest(Digest),
    /// A tar member, by name (a docker-archive's layers).
    Member(String),
}

/// An opened image: what `diff`, `verify`, `report` and the test stage read.
pub trait ImageSource: Sync {
    /// The source as written (`oci:DIR:TAG`, …), for messages.
    fn name(&self) -> &str;
    /// The manifest; `None` for a docker-archive.
    fn manifest(&self) -> Option<&ManifestDoc>;
    fn config(&self) -> &ConfigDoc;
    fn layers(&self) -> &[LayerInfo];
    /// Layer `i`'s blob as stored (compressed or not).
    fn open_raw(&self, i: usize) -> Result<Box<dyn Read + Send>, SourceError>;

    /// Layer `i` as an uncompressed tar stream. The compression (gzip, zstd or none) is told
    /// from the blob's first bytes, so a docker-archive's layers need no media type.
    fn open_layer(&self, i: usize) -> Result<Box<dyn Read + Send>, SourceError> {
        Ok(decompress(self.open_raw(i)?)?)
    }

    /// The blobs a copy by digest sends (a push, a mirror): the layers, then the config. A
    /// layer with no digest (a docker-archive's, stored decompressed) is not one of them.
    fn blobs(&self) -> Vec<BlobRef> {
        let layers = self.layers().iter().filter_map(|l| {
            Some(BlobRef {
                digest: l.digest?,
                size: l.size?,
            })
        });
        let config = self.config();
        layers
            .chain(std::iter::once(BlobRef {
                digest: config.digest,
                size: config.bytes.len() as u64,
            }))
            .collect()
    }

    /// The layer's digest or member name, for messages.
    fn layer_label(&self, i: usize) -> String {
        let layer = &self.layers()[i];
        match (&layer.digest, &layer.blob) {
            (Some(d), _) => d.to_string(),
            (None, LayerBlob::Member(m)) => m.clone(),
            (None, LayerBlob::Digest(d)) => d.to_string(),
        }
    }
}

/// `raw` decompressed as its first bytes say: gzip, zstd, or none.
pub fn decompress(raw: Box<dyn Read + Send>) -> io::Result<Box<dyn Read + Send>> {
    let mut r = BufReader::with_capacity(BUF, raw);
    let head = r.fill_buf()?;
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::bufread::MultiGzDecoder::new(r))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(zstd::stream::read::Decoder::with_buffer(r)?)
    } else {
        Box::new(r)
    })
}

/// Which document a transport is asked for (a registry fetches each its own way).
#[derive(Clone, Copy, Debug)]
pub enum DocKind {
    /// A manifest or an image index.
    Manifest,
    /// The image config, of the size its descriptor says.
    Config { size: u64 },
}

/// A transport's small documents by digest, each verified against it.
pub trait Documents {
    fn document(&self, digest: &Digest, kind: DocKind) -> Result<Vec<u8>, SourceError>;
}

/// What [`resolve`] reads of an image.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub manifest: ManifestDoc,
    pub config: ConfigDoc,
    pub layers: Vec<LayerInfo>,
}

/// `bytes` as JSON, or `name`'s error saying which document is not.
pub fn parse_json<T: serde::de::DeserializeOwned>(
    source_name: &str,
    what: &str,
    bytes: &[u8],
) -> Result<T, SourceError> {
    serde_json::from_slice(bytes).map_err(|e| SourceError::Bad {
        source_name: source_name.to_string(),
        problem: format!("invalid {what}: {e}"),
    })
}

/// Read the manifest `digest` (descending through image indexes for `platform`), its config,
/// and describe its layers.
pub fn resolve(
    name: &str,
    docs: &dyn Documents,
    digest: Digest,
    platform: &Platform,
) -> Result<Resolved, SourceError> {
    let mut digest = digest;
    let mut bytes = docs.document(&digest, DocKind::Manifest)?;
    let mut manifest: AnyManifest = parse_json(name, "manifest", &bytes)?;
    // An index (at most a few levels deep): the entry for the platform.
    for _ in 0..MAX_DEPTH {
        let Some(list) = &manifest.manifests else {
            break;
        };
        // The platform with its variant; else the only entry of its os and architecture;
        // else an index's only entry.
        let same_arch: Vec<_> = list
            .iter()
            .filter(|d| {
                d.platform
                    .as_ref()
                    .is_some_and(|p| p.os == platform.os && p.architecture == platform.architecture)
            })
            .collect();
        let pick = same_arch
            .iter()
            .find(|d| d.platform.as_ref().is_some_and(|p| p.matches(platform)))
            .copied()
            .or(if same_arch.len() == 1 {
                same_arch.first().copied()
            } else {
                None
            })
            .or(if list.len() == 1 { list.first() } else { None })
            .ok_or_else(|| SourceError::Bad {
                source_name: name.to_string(),
                problem: format!(
                    "image index {digest} has no image for {}/{}",
                    platform.os, platform.architecture
                ),
            })?;
        digest = pick.digest;
        bytes = docs.document(&digest, DocKind::Manifest)?;
        manifest = parse_json(name, "manifest", &bytes)?;
    }
    let config_desc = manifest.config.clone().ok_or_else(|| SourceError::Bad {
        source_name: name.to_string(),
        problem: format!("manifest {digest} has no config"),
    })?;
    let config_bytes = docs.document(
        &config_desc.digest,
        DocKind::Config {
            size: config_desc.size,
        },
    )?;
    // An artifact's config (an `oras` push's, say) need not be JSON: kept as bytes only.
    let config = if config_desc.media_type.contains("json") {
        config_doc(name, config_desc.digest, config_bytes)?
    } else {
        ConfigDoc {
            digest: config_desc.digest,
            bytes: config_bytes,
            json: serde_json::Value::Null,
        }
    };
    let diff_ids = diff_ids(&config.json);
    let layers = manifest
        .layers
        .iter()
        .enumerate()
        .map(|(i, d)| LayerInfo {
            digest: Some(d.digest),
            media_type: d.media_type.clone(),
            size: Some(d.size),
            diff_id: diff_ids.get(i).copied().flatten(),
            name: d.annotations.get(annotations::LAYER_NAME).cloned(),
            blob: LayerBlob::Digest(d.digest),
        })
        .collect();
    Ok(Resolved {
        manifest: ManifestDoc {
            digest,
            bytes,
            // Absent in the document: what its config says it is (as registries infer it).
            media_type: Some(
                manifest
                    .media_type
                    .unwrap_or_else(|| manifest_type_for(&config_desc.media_type).to_string()),
            ),
            annotations: manifest.annotations,
        },
        config,
        layers,
    })
}

/// The manifest media type that goes with a config of `config_media_type`: Docker's schema 2
/// for Docker's image config, else OCI's.
pub fn manifest_type_for(config_media_type: &str) -> &'static str {
    if config_media_type == DOCKER_CONFIG {
        DOCKER_MANIFEST
    } else {
        super::MEDIA_TYPE_MANIFEST
    }
}

/// Docker's image config and manifest media types (schema 2).
const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// The config document: its bytes parsed.
pub fn config_doc(name: &str, digest: Digest, bytes: Vec<u8>) -> Result<ConfigDoc, SourceError> {
    let json: serde_json::Value = parse_json(name, "image config", &bytes)?;
    Ok(ConfigDoc {
        digest,
        bytes,
        json,
    })
}

/// The config's `rootfs.diff_ids`, each `None` where it is not a digest.
pub fn diff_ids(config: &serde_json::Value) -> Vec<Option<Digest>> {
    config
        .pointer("/rootfs/diff_ids")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .map(|d| d.as_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}
