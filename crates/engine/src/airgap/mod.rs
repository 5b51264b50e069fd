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

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::apt::AptError;
use crate::digest::{Digest, HashingReader};
use crate::http::Fetcher;
use crate::image::{Descriptor, ManifestHead};
use crate::json::JsonError;
use crate::lock::{Lock, LockedBase, LockedDeb, LockedWheel};
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
    Output(#[from] crate::output::OutputError),
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
        "vendor {dir}: entry `{entry}`: blob {digest} is {found} bytes, the index says {expected}; vendor the input again"
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
    #[error("vendor {dir}: entry `{entry}` is {} there but {} in {from}: the same origin with different content; remove one of them", digests.existing, digests.incoming)]
    Conflict {
        dir: PathBuf,
        from: String,
        entry: String,
        /// Boxed: two digests inline would make every `VendorError` larger.
        digests: Box<Conflicting>,
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

/// The two digests of a [`VendorError::Conflict`]: the one there, the one coming in.
#[derive(Debug)]
pub struct Conflicting {
    pub existing: Digest,
    pub incoming: Digest,
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
        match v.get("schemaVersion").and_then(serde_json::Value::as_u64) {
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
    /// Blobs already there (the source's very inode, or a file whose bytes hash to its name),
    /// untouched.
    pub present: usize,
    /// Entries at a blob's name that were not that blob (a symlink, a file of another size or
    /// other bytes): replaced by the blob (counted in `copied` or `linked` too).
    pub replaced: usize,
    /// Bytes written: copied bytes plus the index when it changed.
    pub bytes_written: u64,
}

/// A blob by digest and size.
#[derive(Clone, Copy)]
pub(crate) struct Blob<'a> {
    pub digest: &'a Digest,
    pub size: u64,
}

impl VendorDir {
    /// Open `root`; with `create` (to write into it), an empty one when it has no index yet,
    /// and `root`, `blobs` and `blobs/sha256` must each be missing or a real directory, as a
    /// layout output's are (nothing is written through a symlink).
    pub fn open(root: &Path, create: bool) -> Result<VendorDir, VendorError> {
        if create {
            check_dirs(root)?;
        }
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

    /// Put the blob at `src` (whose digest is `digest`, `size` bytes) into the directory unless
    /// it is there (the source's very inode, or a regular file of that size whose bytes hash to
    /// `digest`): a hard link when possible (`verified`: the source is known good, e.g. a store
    /// blob; otherwise it is hashed first), else a verified copy. Anything else at the blob's
    /// name (a symlink, a file with other bytes) is replaced by a rename, never followed.
    fn put_blob(
        &self,
        src: &Path,
        blob: Blob<'_>,
        entry: &str,
        verified: bool,
        stats: &mut Stats,
    ) -> Result<(), VendorError> {
        let Blob { digest, size } = blob;
        let dest = self.blob_path(digest);
        check_dirs(&self.root)?;
        let existing = match fs_err::symlink_metadata(&dest) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        if let Some(m) = &existing {
            if m.is_dir() {
                return Err(crate::output::OutputError::Destination {
                    path: dest,
                    kind: "a directory",
                }
                .into());
            }
            let the_sources = fs_err::symlink_metadata(src)
                .is_ok_and(|s| crate::output::inode(&s) == crate::output::inode(m));
            if m.is_file()
                && m.len() == size
                && (the_sources || crate::output::holds(&dest, m, digest))
            {
                stats.present += 1;
                return Ok(());
            }
            stats.replaced += 1;
        }
        fs_err::create_dir_all(self.blob_dir())?;
        check_dirs(&self.root)?;
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
        // Only a regular file is linked (a link to a symlink would be one).
        let regular = fs_err::symlink_metadata(src).is_ok_and(|m| m.is_file());
        if regular && fs_err::hard_link(src, &tmp).is_ok() {
            fs_err::rename(&tmp, &dest)?;
            stats.linked += 1;
            stats.linked_bytes += fs_err::symlink_metadata(&dest)?.len();
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
                    digests: Box::new(Conflicting {
                        existing: old.digest(),
                        incoming: entry.digest(),
                    }),
                });
            }
        }
        for (d, size) in entry.blobs() {
            self.put_blob(
                &store.blob_path(&d),
                Blob { digest: &d, size },
                &key,
                true,
                stats,
            )?;
        }
        if self.index.entries.insert(key, entry).is_none() {
            stats.new_entries += 1;
        }
        Ok(())
    }
}

/// A vendor directory written into: `root`, `blobs` and `blobs/sha256` each missing or a real
/// directory ([`crate::output::check_dirs`]).
fn check_dirs(root: &Path) -> Result<(), VendorError> {
    let blobs = root.join("blobs");
    let sha = blobs.join("sha256");
    Ok(crate::output::check_dirs(&[
        root.to_path_buf(),
        blobs,
        sha,
    ])?)
}

fn hash_file(path: &Path) -> Result<(Digest, u64), VendorError> {
    Ok(crate::digest::hash_file(path)?)
}

mod inputs;
mod stage;

pub use self::inputs::{
    check, fetch_input, fetch_packages, inputs, merge, vendor, CheckReport, Input, Online,
};
pub use self::stage::{stage, Staged};

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
