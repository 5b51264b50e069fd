//! The vendor directory: every locked input of one or more recipes, content-addressed, with an
//! index mapping each input's origin to its digest. The format is documented (and versioned) in
//! `vendor-index/README.md`:
//!
//! ```text
//! DIR/index.json            {"entries":[…],"schemaVersion":1}, canonical JSON, entries sorted
//! DIR/blobs/sha256/<hex>    the inputs' bytes (read-only files)
//! ```
//!
//! - [`vendor`]: copy a lock's inputs (fetched into the store first when it lacks them) into a
//!   vendor directory; incremental (present blobs are not touched), hard links from the store
//!   when on the same filesystem.
//! - [`merge`]: copy another vendor directory's entries in (verified).
//! - [`check`]: re-hash every blob and check every entry resolves.
//! - [`stage`]: before a build (`--vendor`, `--offline`), copy the lock's inputs the store
//!   lacks from the vendor directory into the store, verified against the lock's digests;
//!   all or nothing. Offline, an input found in neither is an error naming it.
//!
//! Nothing here prints; results are returned as [`Stats`].

// `VendorError` carries its context (directory, entry, digests) as fields, so it is larger than
// clippy's 128-byte threshold; it is built only on the failure path (as `RegistryError`).
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::apt::{AptError, Fetcher};
use crate::digest::{Digest, HashingReader};
use crate::image::Descriptor;
use crate::json::JsonError;
use crate::lock::{Lock, LockError, LockedBase, LockedDeb, LockedWheel};
use crate::registry::client::NoProgress;
use crate::registry::{Client, Reference, RegistryError};
use crate::store::{BlobWriter, Store, StoreError};

/// The index format version this ocibuild reads and writes.
pub const SCHEMA_VERSION: u32 = 1;
/// The index's file name inside a vendor directory.
pub const INDEX_FILE: &str = "index.json";

#[derive(Debug, thiserror::Error)]
pub enum VendorError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Json(#[from] JsonError),
    #[error(transparent)]
    Apt(#[from] AptError),
    #[error(transparent)]
    Registry(Box<RegistryError>),
    #[error("{path}: not a vendor index: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: vendor index schemaVersion {found} is not supported (this ocibuild reads {SCHEMA_VERSION})")]
    Version { path: PathBuf, found: u64 },
    #[error("{dir}: not a vendor directory (no {INDEX_FILE})")]
    NoIndex { dir: PathBuf },
    #[error("vendor {dir}: entry `{entry}`: blob {digest} is missing")]
    MissingBlob {
        dir: PathBuf,
        entry: String,
        digest: Digest,
    },
    #[error("vendor {dir}: entry `{entry}`: blob {digest} was modified: its content is {found} ({size} bytes); vendor the input again")]
    Corrupt {
        dir: PathBuf,
        entry: String,
        digest: Digest,
        found: Digest,
        size: u64,
    },
    #[error(
        "vendor {dir}: entry `{entry}`: blob {digest} is {found} bytes, the index says {expected}"
    )]
    Size {
        dir: PathBuf,
        entry: String,
        digest: Digest,
        expected: u64,
        found: u64,
    },
    #[error("vendor {dir}: entry `{entry}`: {problem}")]
    BadEntry {
        dir: PathBuf,
        entry: String,
        problem: String,
    },
    #[error("vendor {dir}: entry `{entry}` says {found}, but the lock pins {expected}: the index was modified or vendored from another lock; vendor again")]
    Disagrees {
        dir: PathBuf,
        entry: String,
        expected: Digest,
        found: Digest,
    },
    #[error("vendor {dir}: entry `{entry}` is {existing} there but {incoming} in {from}: the same origin with different content; remove one of them")]
    Conflict {
        dir: PathBuf,
        from: String,
        entry: String,
        existing: Digest,
        incoming: Digest,
    },
    #[error("offline: {input} is not in the store or the vendor directory")]
    Offline { input: String },
    #[error("{input}: the download is {found}, the lock pins {expected}")]
    Mismatch {
        input: String,
        expected: Digest,
        found: Digest,
    },
    #[error("{input}: not found at {url}")]
    NotFound { input: String, url: String },
    #[error("base {reference}@{digest}: {problem}")]
    BadManifest {
        reference: String,
        digest: Digest,
        problem: String,
    },
}

impl From<RegistryError> for VendorError {
    fn from(e: RegistryError) -> Self {
        VendorError::Registry(Box::new(e))
    }
}

/// A blob an `oci` entry names besides its manifest (the index, the config, the layers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BlobRef {
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
}

/// One vendored input: its origin (kind and coordinates), its digest and size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Entry {
    /// A base image: the manifest (`digest`, `size`) of `reference` for `platform`, with the
    /// index it was chosen from (when the lock pins one) and its config and layers.
    #[serde(rename_all = "camelCase")]
    Oci {
        reference: String,
        platform: String,
        media_type: String,
        digest: Digest,
        size: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        index: Option<BlobRef>,
        config: BlobRef,
        layers: Vec<BlobRef>,
    },
    /// A Debian package, by its coordinates and the URL it was downloaded from.
    Deb {
        name: String,
        version: String,
        architecture: String,
        url: String,
        digest: Digest,
        size: u64,
    },
    /// A file by URL (the `[python]` interpreter archive), as the lock records it.
    Url {
        url: String,
        digest: Digest,
        size: u64,
    },
    /// A wheel, by its coordinates and URL.
    Wheel {
        name: String,
        version: String,
        filename: String,
        url: String,
        digest: Digest,
        size: u64,
    },
}

impl Entry {
    /// The origin, as one line: the index's sort key and how messages name the entry.
    pub fn key(&self) -> String {
        match self {
            Entry::Oci {
                reference, digest, ..
            } => format!("oci {reference}@{digest}"),
            Entry::Deb {
                name,
                version,
                architecture,
                url,
                ..
            } => format!("deb {name} {version} {architecture} {url}"),
            Entry::Url { url, .. } => format!("url {url}"),
            Entry::Wheel {
                name,
                version,
                filename,
                url,
                ..
            } => format!("wheel {name} {version} {filename} {url}"),
        }
    }

    /// The entry's own digest (an `oci` entry's is its manifest's).
    pub fn digest(&self) -> Digest {
        match self {
            Entry::Oci { digest, .. }
            | Entry::Deb { digest, .. }
            | Entry::Url { digest, .. }
            | Entry::Wheel { digest, .. } => *digest,
        }
    }

    /// Every blob the entry needs, with its size: the digest first, then (`oci`) the index,
    /// the config and the layers.
    pub fn blobs(&self) -> Vec<(Digest, u64)> {
        match self {
            Entry::Oci {
                digest,
                size,
                index,
                config,
                layers,
                ..
            } => {
                let mut v = vec![(*digest, *size)];
                v.extend(index.iter().map(|b| (b.digest, b.size)));
                v.push((config.digest, config.size));
                v.extend(layers.iter().map(|b| (b.digest, b.size)));
                v
            }
            Entry::Deb { digest, size, .. }
            | Entry::Url { digest, size, .. }
            | Entry::Wheel { digest, size, .. } => vec![(*digest, *size)],
        }
    }
}

/// The index: entries by key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Index {
    pub entries: BTreeMap<String, Entry>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IndexFile {
    schema_version: u64,
    entries: Vec<Entry>,
}

impl Index {
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Index, VendorError> {
        let parse = |message: String| VendorError::Parse {
            path: path.to_path_buf(),
            message,
        };
        let v: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| parse(e.to_string()))?;
        match v.get("schemaVersion").and_then(|s| s.as_u64()) {
            Some(n) if n == u64::from(SCHEMA_VERSION) => {}
            Some(found) => {
                return Err(VendorError::Version {
                    path: path.to_path_buf(),
                    found,
                })
            }
            None => return Err(parse("missing `schemaVersion`".into())),
        }
        let f: IndexFile = serde_json::from_value(v).map_err(|e| parse(e.to_string()))?;
        let mut entries = BTreeMap::new();
        for e in f.entries {
            let key = e.key();
            if entries.insert(key.clone(), e).is_some() {
                return Err(parse(format!("entry `{key}` appears twice")));
            }
        }
        Ok(Index { entries })
    }

    /// Canonical JSON (sorted keys, no whitespace), entries sorted by key, then one newline.
    pub fn to_bytes(&self) -> Result<Vec<u8>, VendorError> {
        let f = IndexFile {
            schema_version: u64::from(SCHEMA_VERSION),
            entries: self.entries.values().cloned().collect(),
        };
        let mut out = crate::json::to_canonical_vec("vendor index", &f)?;
        out.push(b'\n');
        Ok(out)
    }
}

/// An opened vendor directory.
#[derive(Debug)]
pub struct VendorDir {
    root: PathBuf,
    pub index: Index,
}

/// What a `vendor` or `merge` run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// Entries in the index afterwards.
    pub entries: usize,
    /// Entries this run added.
    pub new_entries: usize,
    /// Blobs copied (their bytes written).
    pub copied: usize,
    pub copied_bytes: u64,
    /// Blobs hard-linked from the store or the source directory (no bytes written).
    pub linked: usize,
    pub linked_bytes: u64,
    /// Blobs already there, untouched.
    pub present: usize,
    /// Bytes written: copied bytes plus the index when it changed.
    pub bytes_written: u64,
}

impl VendorDir {
    /// Open `root`; with `create`, an empty one when it has no index yet.
    pub fn open(root: &Path, create: bool) -> Result<VendorDir, VendorError> {
        let path = root.join(INDEX_FILE);
        let index = match fs_err::read(&path) {
            Ok(b) => Index::parse(&b, &path)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => Index::default(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(VendorError::NoIndex {
                    dir: root.to_path_buf(),
                })
            }
            Err(e) => return Err(e.into()),
        };
        Ok(VendorDir {
            root: root.to_path_buf(),
            index,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn blob_path(&self, d: &Digest) -> PathBuf {
        self.root.join("blobs/sha256").join(d.hex())
    }

    fn blob_dir(&self) -> PathBuf {
        self.root.join("blobs/sha256")
    }

    /// Write the index (temporary file, then rename). Returns the bytes written (0 when the
    /// file already held exactly these bytes).
    pub fn save(&self) -> Result<u64, VendorError> {
        let bytes = self.index.to_bytes()?;
        let path = self.root.join(INDEX_FILE);
        if fs_err::read(&path).ok().as_deref() == Some(bytes.as_slice()) {
            return Ok(0);
        }
        fs_err::create_dir_all(&self.root)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".ocibuild-vendor-")
            .tempfile_in(&self.root)?;
        io::Write::write_all(&mut tmp, &bytes)?;
        tmp.as_file().sync_data()?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(bytes.len() as u64)
    }

    /// Put the blob at `src` (whose digest is `digest`) into the directory unless it is there:
    /// a hard link when possible (`verified`: the source is known good, e.g. a store blob;
    /// otherwise it is hashed first), else a verified copy.
    fn put_blob(
        &self,
        src: &Path,
        digest: &Digest,
        entry: &str,
        verified: bool,
        stats: &mut Stats,
    ) -> Result<(), VendorError> {
        let dest = self.blob_path(digest);
        if dest.is_file() {
            stats.present += 1;
            return Ok(());
        }
        fs_err::create_dir_all(self.blob_dir())?;
        let corrupt = |found: Digest, size: u64| VendorError::Corrupt {
            dir: src.parent().unwrap_or(src).to_path_buf(),
            entry: entry.to_string(),
            digest: *digest,
            found,
            size,
        };
        if !verified {
            let (found, size) = hash_file(src)?;
            if found != *digest {
                return Err(corrupt(found, size));
            }
        }
        let tmp = self
            .blob_dir()
            .join(format!(".tmp-{}-{}", std::process::id(), digest.hex()));
        let _ = fs_err::remove_file(&tmp);
        if std::fs::hard_link(src, &tmp).is_ok() {
            fs_err::rename(&tmp, &dest)?;
            stats.linked += 1;
            stats.linked_bytes += fs_err::metadata(&dest)?.len();
            return Ok(());
        }
        let mut out = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(self.blob_dir())?;
        let mut r = HashingReader::new(fs_err::File::open(src)?);
        io::copy(&mut r, &mut io::BufWriter::new(out.as_file_mut()))?;
        let (_, found, size) = r.finish();
        if found != *digest {
            return Err(corrupt(found, size));
        }
        use std::os::unix::fs::PermissionsExt as _;
        out.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o444))?;
        out.as_file().sync_data()?;
        out.persist(&dest).map_err(|e| e.error)?;
        stats.copied += 1;
        stats.copied_bytes += size;
        stats.bytes_written += size;
        Ok(())
    }

    /// Add `entry` (its blobs in `store`) to the directory and the index.
    fn add(&mut self, entry: Entry, store: &Store, stats: &mut Stats) -> Result<(), VendorError> {
        let key = entry.key();
        if let Some(old) = self.index.entries.get(&key) {
            if old.digest() != entry.digest() {
                return Err(VendorError::Conflict {
                    dir: self.root.clone(),
                    from: "the lock".into(),
                    entry: key,
                    existing: old.digest(),
                    incoming: entry.digest(),
                });
            }
        }
        for (d, _) in entry.blobs() {
            self.put_blob(&store.blob_path(&d), &d, &key, true, stats)?;
        }
        if self.index.entries.insert(key, entry).is_none() {
            stats.new_entries += 1;
        }
        Ok(())
    }
}

fn hash_file(path: &Path) -> Result<(Digest, u64), VendorError> {
    let mut r = HashingReader::new(io::BufReader::new(fs_err::File::open(path)?));
    io::copy(&mut r, &mut io::sink())?;
    let (_, d, n) = r.finish();
    Ok((d, n))
}

// ---------------------------------------------------------------------------------------------
// A lock's inputs

/// One locked input.
#[derive(Clone, Debug)]
pub enum Input {
    Base(LockedBase),
    Deb(LockedDeb),
    /// The `[python]` archive: the URL as the lock records it, and where to fetch it from
    /// (the recipe's resolved URL: a relative path becomes `file://`).
    Archive {
        url: String,
        fetch_url: String,
        sha256: Digest,
    },
    Wheel(LockedWheel),
}

impl Input {
    /// How messages name it (`base REF@DIGEST`, `deb NAME VERSION ARCH (URL)`, …).
    pub fn describe(&self) -> String {
        match self {
            Input::Base(b) => format!("base {}@{}", b.reference, b.manifest_digest),
            Input::Deb(d) => format!(
                "deb {} {} {} ({})",
                d.name,
                d.version,
                d.architecture,
                deb_url(d)
            ),
            Input::Archive { url, .. } => format!("python archive {url}"),
            Input::Wheel(w) => format!("wheel {} ({})", w.filename, w.url),
        }
    }
}

fn deb_url(d: &LockedDeb) -> String {
    crate::apt::fetch::join_url(&d.source_url, &d.filename)
}

/// Every input `lock` pins, in lock order. `archive_fetch_url`: where the recipe says the
/// interpreter archive is (the lock records the URL as written, which may be relative).
pub fn inputs(lock: &Lock, archive_fetch_url: Option<&str>) -> Vec<Input> {
    let mut v = Vec::new();
    if let Some(b) = &lock.base {
        v.push(Input::Base(b.clone()));
    }
    if let Some(a) = &lock.apt {
        v.extend(a.packages.iter().cloned().map(Input::Deb));
    }
    if let Some(p) = &lock.python {
        v.push(Input::Archive {
            url: p.url.clone(),
            fetch_url: archive_fetch_url.unwrap_or(&p.url).to_string(),
            sha256: p.sha256,
        });
    }
    v.extend(lock.wheels.iter().cloned().map(Input::Wheel));
    v
}

/// Where `vendor` fetches what the store lacks.
pub struct Online<'a> {
    pub client: &'a Client,
    pub fetcher: &'a dyn Fetcher,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ManifestHead {
    #[serde(default)]
    media_type: Option<String>,
    config: Descriptor,
    layers: Vec<Descriptor>,
}

fn parse_manifest(
    bytes: &[u8],
    reference: &str,
    digest: &Digest,
) -> Result<ManifestHead, VendorError> {
    serde_json::from_slice(bytes).map_err(|e| VendorError::BadManifest {
        reference: reference.to_string(),
        digest: *digest,
        problem: format!("not an image manifest: {e}"),
    })
}

fn blob_ref(d: &Descriptor) -> BlobRef {
    BlobRef {
        media_type: d.media_type.clone(),
        digest: d.digest,
        size: d.size,
    }
}

/// Fetch `url` into the store, verified against `expected`, unless the store has it.
fn fetch_url(
    fetcher: &dyn Fetcher,
    store: &Store,
    url: &str,
    expected: &Digest,
    input: &str,
) -> Result<(), VendorError> {
    if store.has_blob(expected) {
        return Ok(());
    }
    let r = fetcher.open(url)?.ok_or_else(|| VendorError::NotFound {
        input: input.to_string(),
        url: url.to_string(),
    })?;
    let mut w = store.blob_writer()?;
    let mut hr = HashingReader::new(r);
    io::copy(&mut hr, &mut w).map_err(|source| AptError::Read {
        url: url.to_string(),
        source,
    })?;
    let (_, found, _) = hr.finish();
    if found != *expected {
        return Err(VendorError::Mismatch {
            input: input.to_string(),
            expected: *expected,
            found,
        });
    }
    w.commit(Some(*expected))?;
    Ok(())
}

/// Make sure `input` is in the store (fetching it online when it is not) and describe it as an
/// index entry.
pub fn fetch_input(
    input: &Input,
    store: &Store,
    online: &Online<'_>,
) -> Result<Entry, VendorError> {
    let size_of = |d: &Digest| -> Result<u64, VendorError> {
        Ok(fs_err::metadata(store.blob_path(d))?.len())
    };
    match input {
        Input::Base(b) => {
            let r: Reference = b.reference.parse().map_err(RegistryError::from)?;
            let get = |d: &Digest| -> Result<Vec<u8>, VendorError> {
                if !store.has_blob(d) {
                    let m = online.client.get_manifest(&r.with_digest(*d))?;
                    store.put_bytes(&m.bytes)?;
                }
                Ok(store.read_blob(d)?)
            };
            let index = match &b.index_digest {
                Some(d) => {
                    let bytes = get(d)?;
                    let media_type = serde_json::from_slice::<serde_json::Value>(&bytes)
                        .ok()
                        .and_then(|v| v["mediaType"].as_str().map(str::to_string))
                        .unwrap_or_else(|| crate::image::MEDIA_TYPE_INDEX.to_string());
                    Some(BlobRef {
                        media_type,
                        digest: *d,
                        size: bytes.len() as u64,
                    })
                }
                None => None,
            };
            let bytes = get(&b.manifest_digest)?;
            let head = parse_manifest(&bytes, &b.reference, &b.manifest_digest)?;
            let mut blobs = vec![head.config.clone()];
            blobs.extend(head.layers.iter().cloned());
            online.client.pull_blobs(&r, &blobs, store, &NoProgress)?;
            Ok(Entry::Oci {
                reference: b.reference.clone(),
                platform: b.platform.clone(),
                media_type: head
                    .media_type
                    .unwrap_or_else(|| crate::image::MEDIA_TYPE_MANIFEST.to_string()),
                digest: b.manifest_digest,
                size: bytes.len() as u64,
                index,
                config: blob_ref(&head.config),
                layers: head.layers.iter().map(blob_ref).collect(),
            })
        }
        Input::Deb(d) => {
            let url = deb_url(d);
            fetch_url(online.fetcher, store, &url, &d.sha256, &input.describe())?;
            Ok(Entry::Deb {
                name: d.name.clone(),
                version: d.version.clone(),
                architecture: d.architecture.clone(),
                url,
                digest: d.sha256,
                size: size_of(&d.sha256)?,
            })
        }
        Input::Archive {
            url,
            fetch_url: from,
            sha256,
        } => {
            fetch_url(online.fetcher, store, from, sha256, &input.describe())?;
            Ok(Entry::Url {
                url: url.clone(),
                digest: *sha256,
                size: size_of(sha256)?,
            })
        }
        Input::Wheel(w) => {
            fetch_url(online.fetcher, store, &w.url, &w.sha256, &input.describe())?;
            Ok(Entry::Wheel {
                name: w.name.clone(),
                version: w.version.clone(),
                filename: w.filename.clone(),
                url: w.url.clone(),
                digest: w.sha256,
                size: size_of(&w.sha256)?,
            })
        }
    }
}

/// Copy every input of `inputs` into `dir` (fetching into `store` first what it lacks) and
/// add them to its index; the caller saves the index ([`VendorDir::save`]).
pub fn vendor(
    dir: &mut VendorDir,
    inputs: &[Input],
    store: &Store,
    online: &Online<'_>,
    stats: &mut Stats,
) -> Result<(), VendorError> {
    for input in inputs {
        let entry = fetch_input(input, store, online)?;
        dir.add(entry, store, stats)?;
    }
    Ok(())
}

/// Merge the vendor directory `src` into `dir`: every blob verified (hashed) before it is
/// linked or copied; a conflicting entry (same origin, other digest) fails before anything is
/// written. The caller saves the index.
pub fn merge(dir: &mut VendorDir, src: &VendorDir, stats: &mut Stats) -> Result<(), VendorError> {
    for (key, e) in &src.index.entries {
        if let Some(old) = dir.index.entries.get(key) {
            if old.digest() != e.digest() {
                return Err(VendorError::Conflict {
                    dir: dir.root.clone(),
                    from: src.root.display().to_string(),
                    entry: key.clone(),
                    existing: old.digest(),
                    incoming: e.digest(),
                });
            }
        }
    }
    for (key, e) in &src.index.entries {
        for (d, size) in e.blobs() {
            let path = src.blob_path(&d);
            check_blob(src, key, &d, size, false)?;
            dir.put_blob(&path, &d, key, true, stats)?;
        }
        if dir.index.entries.insert(key.clone(), e.clone()).is_none() {
            stats.new_entries += 1;
        }
    }
    Ok(())
}

/// The blob `d` of entry `key`: present, `size` bytes, and (unless `quick`) hashing to `d`.
fn check_blob(
    dir: &VendorDir,
    key: &str,
    d: &Digest,
    size: u64,
    quick: bool,
) -> Result<(), VendorError> {
    let path = dir.blob_path(d);
    let meta = match fs_err::metadata(&path) {
        Ok(m) if m.is_file() => m,
        _ => {
            return Err(VendorError::MissingBlob {
                dir: dir.root.clone(),
                entry: key.to_string(),
                digest: *d,
            })
        }
    };
    if !quick {
        let (found, n) = hash_file(&path)?;
        if found != *d {
            return Err(VendorError::Corrupt {
                dir: dir.root.clone(),
                entry: key.to_string(),
                digest: *d,
                found,
                size: n,
            });
        }
    }
    if meta.len() != size {
        return Err(VendorError::Size {
            dir: dir.root.clone(),
            entry: key.to_string(),
            digest: *d,
            expected: size,
            found: meta.len(),
        });
    }
    Ok(())
}

/// What [`check`] looked at.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub entries: usize,
    pub blobs: usize,
    pub bytes: u64,
    /// Files under `blobs/sha256/` no entry names (harmless; reported).
    pub unreferenced: Vec<String>,
}

/// Re-hash every blob every entry names; check sizes, and that an `oci` entry's manifest
/// names exactly its config and layers. The first problem is the error.
pub fn check(dir: &VendorDir) -> Result<CheckReport, VendorError> {
    let mut report = CheckReport {
        entries: dir.index.entries.len(),
        ..CheckReport::default()
    };
    let mut seen = std::collections::BTreeSet::new();
    for (key, e) in &dir.index.entries {
        for (d, size) in e.blobs() {
            if seen.insert(d) {
                check_blob(dir, key, &d, size, false)?;
                report.blobs += 1;
                report.bytes += size;
            } else {
                check_blob(dir, key, &d, size, true)?;
            }
        }
        if let Entry::Oci {
            reference,
            digest,
            config,
            layers,
            ..
        } = e
        {
            let bytes = fs_err::read(dir.blob_path(digest))?;
            let head = parse_manifest(&bytes, reference, digest)?;
            let named: Vec<BlobRef> = head.layers.iter().map(blob_ref).collect();
            if head.config.digest != config.digest
                || named
                    .iter()
                    .map(|b| b.digest)
                    .ne(layers.iter().map(|b| b.digest))
            {
                return Err(VendorError::BadEntry {
                    dir: dir.root.clone(),
                    entry: key.clone(),
                    problem: "its config or layers are not the ones its manifest names".into(),
                });
            }
        }
    }
    if let Ok(rd) = fs_err::read_dir(dir.blob_dir()) {
        let mut extra: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !seen.iter().any(|d| d.hex() == *n))
            .collect();
        extra.sort();
        report.unreferenced = extra;
    }
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// The lock against the recipe (`build --locked`, `--offline`)

/// What differs between the recipe's inputs and what this lock pinned for them, one phrase
/// per change (`base reference a → b`, `[apt] package `x` added`, `python archive changed`);
/// empty when the lock answers the recipe. Wheels are not compared (builds do not produce
/// them yet).
pub fn lock_changes(lock: &Lock, recipe: &crate::recipe::Recipe) -> Vec<String> {
    use crate::recipe::{Base, PythonSource};
    let mut out = Vec::new();
    match (&recipe.base, &lock.base) {
        (Base::Scratch, None) => {}
        (Base::Scratch, Some(b)) => out.push(format!(
            "base {} removed (the recipe builds on scratch)",
            b.reference
        )),
        (Base::Image { reference }, locked) => {
            let name = reference
                .parse::<crate::registry::Reference>()
                .map(|r| r.to_string())
                .unwrap_or_else(|_| reference.clone());
            let platform = recipe.image.platform.to_string();
            match locked {
                None => out.push(format!("base {name} is not pinned")),
                Some(b) => {
                    if b.reference != name {
                        out.push(format!("base reference {} → {name}", b.reference));
                    }
                    if b.platform != platform {
                        out.push(format!("base platform {} → {platform}", b.platform));
                    }
                }
            }
        }
    }
    match (&recipe.apt, &lock.apt) {
        (None, None) => {}
        (None, Some(_)) => out.push("[apt] removed".into()),
        (Some(apt), locked) => {
            if let Some(what) = crate::system::apt::stale(apt, locked.as_ref()) {
                out.push(format!("[apt] {what}"));
            }
        }
    }
    let archive = match recipe.python.as_ref().map(|p| &p.source) {
        Some(PythonSource::Archive(a)) => Some((a.written.as_str(), a.sha256)),
        _ => None,
    };
    match (archive, &lock.python) {
        (None, None) => {}
        (None, Some(p)) => out.push(format!("python archive {} removed", p.url)),
        (Some((url, _)), None) => out.push(format!("python archive {url} added")),
        (Some((url, sha)), Some(p)) => {
            if p.url != url {
                out.push(format!("python archive URL {} → {url}", p.url));
            }
            if p.sha256 != sha {
                out.push(format!("python archive sha256 {} → {sha}", p.sha256));
            }
        }
    }
    let packages = recipe.python.as_ref().and_then(|p| p.packages.as_ref());
    match (packages, &lock.python_packages) {
        (None, None) => {}
        (None, Some(p)) => out.push(format!("python packages ({}) removed", p.file)),
        (Some(pk), None) => out.push(format!("python packages {} added", pk.written())),
        (Some(pk), Some(l)) => {
            if l.file != pk.written() {
                out.push(format!(
                    "python packages file {} → {}",
                    l.file,
                    pk.written()
                ));
            } else {
                match fs_err::read(pk.path()) {
                    Ok(b) if Digest::of(&b) == l.sha256 => {}
                    Ok(_) => out.push(format!("{} changed", l.file)),
                    Err(e) => out.push(format!("{}: {e}", l.file)),
                }
            }
        }
    }
    out
}

/// `--locked` (and `--offline`): the recipe's lock, which must match the recipe (and exist,
/// unless the recipe pins nothing).
pub fn load_checked_lock(
    recipe: &crate::recipe::Recipe,
    recipe_path: &Path,
    mode: &'static str,
) -> Result<Lock, LockError> {
    let path = Lock::path_for(recipe_path);
    let Some(lock) = Lock::load(&path)? else {
        // No lock is fine for a recipe with nothing to pin (scratch base, no [apt]/[python]).
        if lock_changes(&Lock::new(), recipe).is_empty() {
            return Ok(Lock::new());
        }
        return Err(LockError::Missing {
            mode,
            path,
            recipe: recipe_path.to_path_buf(),
        });
    };
    let changes = lock_changes(&lock, recipe);
    if !changes.is_empty() {
        return Err(LockError::Stale {
            mode,
            path,
            recipe: recipe_path.to_path_buf(),
            changes,
        });
    }
    Ok(lock)
}

// ---------------------------------------------------------------------------------------------
// Staging for a build

/// What [`stage`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Staged {
    /// Blobs copied from the vendor directory into the store.
    pub blobs: usize,
    pub bytes: u64,
}

struct Pending {
    writer: BlobWriter,
    digest: Digest,
}

/// Copy into `store` every blob of `inputs` it lacks, from `vendor` (each verified against the
/// lock's digest, through the index entry for the input's origin, which must agree with the
/// lock). All or nothing: blobs are committed to the store only when every one was found and
/// verified. `offline`: an input in neither place is an error naming it; online, it is left
/// for the build to fetch.
pub fn stage(
    inputs: &[Input],
    vendor: Option<&VendorDir>,
    store: &Store,
    offline: bool,
) -> Result<Staged, VendorError> {
    let mut pending: Vec<Pending> = Vec::new();
    let mut staged = Staged::default();
    let missing = |what: String| -> Result<(), VendorError> {
        if offline {
            Err(VendorError::Offline { input: what })
        } else {
            Ok(())
        }
    };
    for input in inputs {
        let key = match input {
            Input::Base(b) => format!("oci {}@{}", b.reference, b.manifest_digest),
            Input::Deb(d) => format!(
                "deb {} {} {} {}",
                d.name,
                d.version,
                d.architecture,
                deb_url(d)
            ),
            Input::Archive { url, .. } => format!("url {url}"),
            Input::Wheel(w) => format!("wheel {} {} {} {}", w.name, w.version, w.filename, w.url),
        };
        let entry = vendor.and_then(|v| v.index.entries.get(&key).map(|e| (v, e)));
        let expected = match input {
            Input::Base(b) => b.manifest_digest,
            Input::Deb(d) => d.sha256,
            Input::Archive { sha256, .. } => *sha256,
            Input::Wheel(w) => w.sha256,
        };
        if let Some((v, e)) = entry {
            if e.digest() != expected {
                return Err(VendorError::Disagrees {
                    dir: v.root.clone(),
                    entry: key,
                    expected,
                    found: e.digest(),
                });
            }
        }
        // Copy one blob from the vendor directory into a pending store writer, verified.
        let mut take = |d: &Digest, what: String| -> Result<Option<Vec<u8>>, VendorError> {
            if store.has_blob(d) || pending.iter().any(|p| p.digest == *d) {
                return Ok(None);
            }
            let Some((v, _)) = entry else {
                missing(what)?;
                return Ok(None);
            };
            let path = v.blob_path(d);
            let f = match fs_err::File::open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(VendorError::MissingBlob {
                        dir: v.root.clone(),
                        entry: key.clone(),
                        digest: *d,
                    })
                }
                Err(e) => return Err(e.into()),
            };
            let mut w = store.blob_writer()?;
            let mut r = HashingReader::new(io::BufReader::new(f));
            let mut small = Vec::new();
            io::copy(&mut (&mut r).take(1 << 22), &mut small)?;
            io::Write::write_all(&mut w, &small)?;
            io::copy(&mut r, &mut w)?;
            let (_, found, size) = r.finish();
            if found != *d {
                return Err(VendorError::Corrupt {
                    dir: v.root.clone(),
                    entry: key.clone(),
                    digest: *d,
                    found,
                    size,
                });
            }
            staged.blobs += 1;
            staged.bytes += size;
            pending.push(Pending {
                writer: w,
                digest: *d,
            });
            Ok(Some(small))
        };
        match input {
            Input::Base(b) => {
                let d = b.manifest_digest;
                let bytes = if store.has_blob(&d) {
                    Some(store.read_blob(&d)?)
                } else {
                    take(&d, format!("base {key} manifest {d}", key = &key[4..]))?
                };
                let Some(bytes) = bytes else { continue };
                let head = parse_manifest(&bytes, &b.reference, &d)?;
                for blob in std::iter::once(&head.config).chain(&head.layers) {
                    take(
                        &blob.digest,
                        format!("base {} blob {}", &key[4..], blob.digest),
                    )?;
                }
            }
            _ => {
                take(&expected, input.describe())?;
            }
        }
    }
    for p in pending {
        p.writer.commit(Some(p.digest))?;
    }
    Ok(staged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deb_entry() -> Entry {
        Entry::Deb {
            name: "tool".into(),
            version: "1.0".into(),
            architecture: "amd64".into(),
            url: "http://h/pool/tool.deb".into(),
            digest: Digest::of(b"deb"),
            size: 3,
        }
    }

    #[test]
    fn index_round_trips_canonically() {
        let mut ix = Index::default();
        for e in [
            deb_entry(),
            Entry::Url {
                url: "cpython.tar.gz".into(),
                digest: Digest::of(b"py"),
                size: 2,
            },
        ] {
            ix.entries.insert(e.key(), e);
        }
        let bytes = ix.to_bytes().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.starts_with(r#"{"entries":[{"architecture":"amd64","digest":"sha256:"#),
            "{text}"
        );
        assert!(text.ends_with("],\"schemaVersion\":1}\n"), "{text}");
        assert_eq!(Index::parse(&bytes, Path::new("i")).unwrap(), ix);
        let e = Index::parse(br#"{"schemaVersion":2,"entries":[]}"#, Path::new("i"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("schemaVersion 2 is not supported"), "{e}");
        let e = Index::parse(
            br#"{"schemaVersion":1,"entries":[{"kind":"url","url":"x","digest":"sha256:00","size":1}]}"#,
            Path::new("i"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not a vendor index"), "{e}");
    }

    #[test]
    fn vendor_check_and_stage() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path().join("store")).unwrap();
        let d = store.put_bytes(b"deb").unwrap();
        let mut v = VendorDir::open(&t.path().join("v"), true).unwrap();
        let mut stats = Stats::default();
        v.add(deb_entry(), &store, &mut stats).unwrap();
        v.save().unwrap();
        assert_eq!(stats.linked + stats.copied, 1);
        let v = VendorDir::open(&t.path().join("v"), false).unwrap();
        assert_eq!(check(&v).unwrap().blobs, 1);

        let lock_deb = LockedDeb {
            name: "tool".into(),
            version: "1.0".into(),
            architecture: "amd64".into(),
            filename: "pool/tool.deb".into(),
            size: 3,
            sha256: d,
            source_url: "http://h".into(),
        };
        let empty = Store::open(t.path().join("empty")).unwrap();
        let inputs = [Input::Deb(lock_deb.clone())];
        let s = stage(&inputs, Some(&v), &empty, true).unwrap();
        assert_eq!(s.blobs, 1);
        assert!(empty.has_blob(&d));
        // Offline with neither: the error names the input.
        let none = Store::open(t.path().join("none")).unwrap();
        let e = stage(&inputs, None, &none, true).unwrap_err().to_string();
        assert_eq!(
            e,
            "offline: deb tool 1.0 amd64 (http://h/pool/tool.deb) is not in the store or the vendor directory"
        );
        // A lock pinning other content than the index: named, nothing staged.
        let mut other = lock_deb;
        other.sha256 = Digest::of(b"other");
        let e = stage(&[Input::Deb(other)], Some(&v), &none, true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("entry `deb tool 1.0 amd64 http://h/pool/tool.deb` says"),
            "{e}"
        );
    }
}
