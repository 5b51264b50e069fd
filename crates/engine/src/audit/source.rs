//! Images to audit, from wherever they are: an OCI layout, an `oci-archive` or `docker-archive`
//! tar, a registry, or a content store (the rebuild of `verify`). All give the same view: the
//! manifest (digest and bytes; none for a docker-archive, which has no manifest), the config
//! (bytes and parsed JSON), and the layers, each of which opens as a decompressed tar stream.
//!
//! Nothing is extracted: archive members are read in place (their offsets are indexed once), and
//! registry blobs are fetched, verified, into a temporary store only when a layer is opened.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use fs_err as fs;
use serde::Deserialize;

use super::AuditError;
use crate::digest::Digest;
use crate::image::read::{ReadDescriptor, ReadIndex};
use crate::image::{annotations, AnyManifest, Platform};
use crate::imageref::{ImageRef, ImageRefError};
use crate::output::Layout;
use crate::progress::Reporter;
use crate::registry::{Client, Reference};
use crate::store::Store;

/// JSON documents (index, manifest, config, manifest.json) larger than this are refused.
pub(super) const MAX_DOCUMENT: u64 = 64 << 20;
/// Read buffer for layer blobs.
const BUF: usize = 256 * 1024;

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

/// One layer of an image.
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
    blob: BlobRef,
}

#[derive(Clone, Debug)]
enum BlobRef {
    Digest(Digest),
    Member(String),
}

/// Where blobs are read from.
pub(super) enum Blobs {
    Dir(Store),
    Archive {
        path: PathBuf,
        members: BTreeMap<String, (u64, u64)>,
    },
    Registry {
        store: Store,
        reference: Reference,
        _tmp: tempfile::TempDir,
    },
}

/// An opened image.
pub struct Image<'c> {
    /// The source as written (`oci:DIR:TAG`, …), for messages.
    pub name: String,
    pub manifest: Option<ManifestDoc>,
    pub config: ConfigDoc,
    pub layers: Vec<LayerInfo>,
    blobs: Blobs,
    /// A registry source's client, and where its downloads are reported.
    client: Option<(&'c Client, &'c dyn Reporter)>,
}

#[derive(Deserialize)]
pub(super) struct DockerEntry {
    #[serde(rename = "Config")]
    pub(super) config: String,
    #[serde(rename = "Layers")]
    pub(super) layers: Vec<String>,
}

/// Open the image `spec` names.
pub fn open<'c>(spec: &ImageRef, opts: OpenOptions<'c>) -> Result<Image<'c>, AuditError> {
    let name = spec.to_string();
    let host = Platform::host();
    let platform = opts.platform.unwrap_or(&host);
    match spec {
        ImageRef::Digest(_) | ImageRef::Vendor(_) => {
            Err(ImageRefError::DigestOnly { input: name }.into())
        }
        ImageRef::Layout { dir, tag } => {
            let path = dir.join("index.json");
            if !path.is_file() {
                return Err(AuditError::Bad {
                    source_name: name,
                    problem: format!("no OCI image layout there ({} is missing)", path.display()),
                });
            }
            let layout = Layout::open(dir)?;
            let entry = select_entry(&name, layout.index(), tag.as_deref())?;
            let blobs = Blobs::Dir(Store::view(dir.clone()));
            let digest = entry_digest(&name, &entry)?;
            from_manifest(name, blobs, None, digest, platform)
        }
        ImageRef::OciArchive(path) => {
            let members = index_archive(path)?;
            let blobs = Blobs::Archive {
                path: path.clone(),
                members,
            };
            let bytes = read_member(&blobs, "index.json")?;
            let index: ReadIndex = parse_json(&name, "index.json", &bytes)?;
            let entry = select_entry(&name, &index, None)?;
            let digest = entry_digest(&name, &entry)?;
            from_manifest(name, blobs, None, digest, platform)
        }
        ImageRef::DockerArchive(path) => open_docker_archive(name, path),
        ImageRef::Registry(r) => {
            let client = opts.client.ok_or_else(|| AuditError::Bad {
                source_name: name.clone(),
                problem: "no registry client configured".into(),
            })?;
            let reference = r.clone();
            let (manifest, _index) =
                client.get_image_manifest(&reference, platform, opts.reporter)?;
            let tmp = tempfile::Builder::new()
                .prefix("ocibuild-audit-")
                .tempdir()?;
            let store = Store::open(tmp.path())?;
            store.put_bytes(&manifest.bytes)?;
            let blobs = Blobs::Registry {
                store,
                reference,
                _tmp: tmp,
            };
            from_manifest(
                name,
                blobs,
                Some((client, opts.reporter)),
                manifest.digest,
                platform,
            )
        }
    }
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
            let layout = Layout::open(dir)?;
            let entry = select_entry(&name, layout.index(), tag.as_deref())?;
            let blobs = Blobs::Dir(Store::view(dir.clone()));
            read_blob(&name, &blobs, &entry_digest(&name, &entry)?)?
        }
        ImageRef::OciArchive(path) => {
            let members = index_archive(path)?;
            let blobs = Blobs::Archive {
                path: path.clone(),
                members,
            };
            let index: ReadIndex =
                parse_json(&name, "index.json", &read_member(&blobs, "index.json")?)?;
            let entry = select_entry(&name, &index, None)?;
            read_blob(&name, &blobs, &entry_digest(&name, &entry)?)?
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
    let blobs = Blobs::Dir(Store::view(store.root().to_path_buf()));
    from_manifest(name.to_string(), blobs, None, digest, &platform)
}

pub(super) fn parse_json<T: serde::de::DeserializeOwned>(
    source_name: &str,
    what: &str,
    bytes: &[u8],
) -> Result<T, AuditError> {
    serde_json::from_slice(bytes).map_err(|e| AuditError::Bad {
        source_name: source_name.to_string(),
        problem: format!("invalid {what}: {e}"),
    })
}

/// The digest an index entry names, parsed before it is followed (it becomes a path).
pub(super) fn entry_digest(name: &str, entry: &ReadDescriptor) -> Result<Digest, AuditError> {
    entry.digest.parse().map_err(|_| AuditError::Bad {
        source_name: name.to_string(),
        problem: format!("index.json names a bad digest `{}`", entry.digest),
    })
}

/// The index entry for `tag`, or the only image.
pub(super) fn select_entry(
    name: &str,
    index: &ReadIndex,
    tag: Option<&str>,
) -> Result<ReadDescriptor, AuditError> {
    let tags = || match index.tags() {
        t if t.is_empty() => "none".to_string(),
        t => t.join(", "),
    };
    match tag {
        Some(t) => index
            .tagged(t)
            .cloned()
            .ok_or_else(|| AuditError::NoSuchTag {
                source_name: name.to_string(),
                tag: t.to_string(),
                tags: tags(),
            }),
        None => match index.images().as_slice() {
            [one] => Ok((*one).clone()),
            images => Err(AuditError::Ambiguous {
                source_name: name.to_string(),
                count: images.len(),
                tags: tags(),
            }),
        },
    }
}

/// Read the manifest `digest` (descending through image indexes for `platform`), its config,
/// and describe its layers.
fn from_manifest<'c>(
    name: String,
    blobs: Blobs,
    client: Option<(&'c Client, &'c dyn Reporter)>,
    digest: Digest,
    platform: &Platform,
) -> Result<Image<'c>, AuditError> {
    let mut digest = digest;
    let mut bytes = read_blob(&name, &blobs, &digest)?;
    let mut manifest: AnyManifest = parse_json(&name, "manifest", &bytes)?;
    // An index (at most a few levels deep): the entry for the platform.
    for _ in 0..4 {
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
            .ok_or_else(|| AuditError::Bad {
                source_name: name.clone(),
                problem: format!(
                    "image index {digest} has no image for {}/{}",
                    platform.os, platform.architecture
                ),
            })?;
        digest = pick.digest;
        if let (
            Blobs::Registry {
                store, reference, ..
            },
            Some((c, reporter)),
        ) = (&blobs, client)
        {
            if !store.has_blob(&digest) {
                let m = c.get_manifest_with(&reference.with_digest(digest), reporter)?;
                store.put_bytes(&m.bytes)?;
            }
        }
        bytes = read_blob(&name, &blobs, &digest)?;
        manifest = parse_json(&name, "manifest", &bytes)?;
    }
    let config_desc = manifest.config.clone().ok_or_else(|| AuditError::Bad {
        source_name: name.clone(),
        problem: format!("manifest {digest} has no config"),
    })?;
    if let (
        Blobs::Registry {
            store, reference, ..
        },
        Some((c, reporter)),
    ) = (&blobs, client)
    {
        c.pull_blob(
            reference,
            &config_desc.digest,
            Some(config_desc.size),
            store,
            reporter,
        )?;
    }
    let config_bytes = read_blob(&name, &blobs, &config_desc.digest)?;
    let config = config_doc(&name, config_desc.digest, config_bytes)?;
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
            blob: BlobRef::Digest(d.digest),
        })
        .collect();
    Ok(Image {
        name,
        manifest: Some(ManifestDoc {
            digest,
            bytes,
            media_type: manifest.media_type,
            annotations: manifest.annotations,
        }),
        config,
        layers,
        blobs,
        client,
    })
}

fn config_doc(name: &str, digest: Digest, bytes: Vec<u8>) -> Result<ConfigDoc, AuditError> {
    let json: serde_json::Value = parse_json(name, "image config", &bytes)?;
    Ok(ConfigDoc {
        digest,
        bytes,
        json,
    })
}

fn diff_ids(config: &serde_json::Value) -> Vec<Option<Digest>> {
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

fn open_docker_archive<'c>(name: String, path: &Path) -> Result<Image<'c>, AuditError> {
    let members = index_archive(path)?;
    let blobs = Blobs::Archive {
        path: path.to_path_buf(),
        members,
    };
    let bytes = read_member(&blobs, "manifest.json")?;
    let entries: Vec<DockerEntry> = parse_json(&name, "manifest.json", &bytes)?;
    let entry = match entries.as_slice() {
        [one] => one,
        other => {
            return Err(AuditError::Bad {
                source_name: name,
                problem: format!(
                    "manifest.json lists {} images; only one-image archives are supported",
                    other.len()
                ),
            })
        }
    };
    let config_bytes = read_member(&blobs, &entry.config)?;
    let config = config_doc(&name, Digest::of(&config_bytes), config_bytes)?;
    let diff_ids = diff_ids(&config.json);
    let layers = entry
        .layers
        .iter()
        .enumerate()
        .map(|(i, m)| LayerInfo {
            digest: None,
            media_type: "application/vnd.docker.image.rootfs.diff.tar".into(),
            size: member_size(&blobs, m),
            diff_id: diff_ids.get(i).copied().flatten(),
            name: None,
            blob: BlobRef::Member(normalize_member(m)),
        })
        .collect();
    Ok(Image {
        name,
        manifest: None,
        config,
        layers,
        blobs,
        client: None,
    })
}

fn normalize_member(name: &str) -> String {
    name.trim_start_matches("./")
        .trim_end_matches('/')
        .to_string()
}

/// Every regular member of a tar: name → (data offset, size).
pub(super) fn index_archive(path: &Path) -> Result<BTreeMap<String, (u64, u64)>, AuditError> {
    let file = fs::File::open(path)?;
    let io_err = |source| AuditError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut archive = crate::tarbound::archive(file);
    let mut members = BTreeMap::new();
    for entry in archive.entries_with_seek().map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = normalize_member(&String::from_utf8_lossy(&entry.path_bytes()));
        members.insert(name, (entry.raw_file_position(), entry.size()));
    }
    Ok(members)
}

fn member_size(blobs: &Blobs, member: &str) -> Option<u64> {
    match blobs {
        Blobs::Archive { members, .. } => members.get(&normalize_member(member)).map(|m| m.1),
        _ => None,
    }
}

/// A member of the archive, as a bounded reader.
pub(super) fn open_member(blobs: &Blobs, member: &str) -> Result<Box<dyn Read + Send>, AuditError> {
    let Blobs::Archive { path, members } = blobs else {
        return Err(AuditError::MissingMember {
            archive: PathBuf::new(),
            member: member.to_string(),
        });
    };
    let (offset, size) =
        *members
            .get(&normalize_member(member))
            .ok_or_else(|| AuditError::MissingMember {
                archive: path.clone(),
                member: member.to_string(),
            })?;
    let mut f = fs::File::open(path)?;
    f.seek(SeekFrom::Start(offset))?;
    Ok(Box::new(f.take(size)))
}

pub(super) fn read_member(blobs: &Blobs, member: &str) -> Result<Vec<u8>, AuditError> {
    let mut r = open_member(blobs, member)?.take(MAX_DOCUMENT);
    let mut data = Vec::new();
    r.read_to_end(&mut data)?;
    Ok(data)
}

/// A small blob (manifest, config), verified against its digest.
fn read_blob(name: &str, blobs: &Blobs, digest: &Digest) -> Result<Vec<u8>, AuditError> {
    let data = match blobs {
        Blobs::Dir(store) | Blobs::Registry { store, .. } => {
            if !store.has_blob(digest) {
                return Err(AuditError::MissingBlob {
                    source_name: name.to_string(),
                    digest: *digest,
                });
            }
            store.read_blob(digest)?
        }
        Blobs::Archive { .. } => {
            let data = read_member(blobs, &format!("blobs/sha256/{}", digest.hex()))?;
            let found = Digest::of(&data);
            if found != *digest {
                return Err(AuditError::Bad {
                    source_name: name.to_string(),
                    problem: format!("blob {digest} has digest {found}"),
                });
            }
            data
        }
    };
    Ok(data)
}

impl Image<'_> {
    /// Layer `i`'s blob as stored (compressed or not).
    fn open_raw(&self, i: usize) -> Result<Box<dyn Read + Send>, AuditError> {
        let layer = &self.layers[i];
        match (&layer.blob, &self.blobs) {
            (BlobRef::Member(m), _) => open_member(&self.blobs, m),
            (BlobRef::Digest(d), Blobs::Archive { .. }) => {
                open_member(&self.blobs, &format!("blobs/sha256/{}", d.hex()))
            }
            (BlobRef::Digest(d), Blobs::Dir(store)) => {
                if !store.has_blob(d) {
                    return Err(AuditError::MissingBlob {
                        source_name: self.name.clone(),
                        digest: *d,
                    });
                }
                Ok(Box::new(store.open_blob(d)?))
            }
            (
                BlobRef::Digest(d),
                Blobs::Registry {
                    store, reference, ..
                },
            ) => {
                if let Some((c, reporter)) = self.client {
                    c.pull_blob(reference, d, layer.size, store, reporter)?;
                }
                Ok(Box::new(store.open_blob(d)?))
            }
        }
    }

    /// Layer `i` as an uncompressed tar stream. The compression (gzip, zstd or none) is told
    /// from the blob's first bytes, so a docker-archive's layers need no media type.
    pub fn open_layer(&self, i: usize) -> Result<Box<dyn Read + Send>, AuditError> {
        let mut r = BufReader::with_capacity(BUF, self.open_raw(i)?);
        let head = r.fill_buf()?;
        Ok(if head.starts_with(&[0x1f, 0x8b]) {
            Box::new(flate2::bufread::MultiGzDecoder::new(r))
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Box::new(zstd::stream::read::Decoder::with_buffer(r)?)
        } else {
            Box::new(r)
        })
    }

    /// The layer's position, digest or member name, for messages.
    pub fn layer_label(&self, i: usize) -> String {
        match (&self.layers[i].digest, &self.layers[i].blob) {
            (Some(d), _) => d.to_string(),
            (None, BlobRef::Member(m)) => m.clone(),
            (None, BlobRef::Digest(d)) => d.to_string(),
        }
    }
}

/// An io error while reading layer `i` of `image`.
pub(super) fn layer_error(image: &Image<'_>, i: usize, e: io::Error) -> AuditError {
    AuditError::Layer {
        source_name: image.name.clone(),
        layer: i + 1,
        digest: image.layer_label(i),
        problem: e.to_string(),
    }
}
