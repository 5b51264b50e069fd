//! The content-addressed store and the layer cache.
//!
//! Layout under the store root (default `$OCIBUILD_CACHE`, else `$XDG_CACHE_HOME/ocibuild`, else
//! `~/.cache/ocibuild`), shared by every recipe and every build:
//!
//! ```text
//! blobs/sha256/<hex>     content-addressed blobs (layers, configs, manifests), verified on write
//! layers/<key>.json      layer cache: hash of a layer's inputs → the layer it produced
//! fingerprints/<fp>      stat fast path: hash of the inputs' host metadata → layer cache key
//! locks/<key>.lock       advisory locks, so two builds of the same layer do the work once
//! meta/<key>.json        facts derived from inputs, cached by a hash of those inputs (what a
//!                        wheel installs, how a set of wheels shares paths)
//! seals/<hex>            what each blob's inode looked like when it was written (see [`seal`])
//! remote/                with a cache repository: which entries came from one (`taken/`) and
//!                        which a repository has (`shared/<repo>/`; see [`remote`])
//! tmp/                   temporary files, renamed into place when complete
//! ocibuild-store         the marker: this directory is a store, and its format (see [`root`])
//! ```
//!
//! A directory is used as a store only when it is one (its marker, or the layout of a store from
//! before markers) or is missing or empty: see [`root`]. Nothing is created in or removed from
//! any other directory.
//!
//! Every write goes to a temporary file that is renamed into place only once its digest has been
//! checked, so a crash or a concurrent build never leaves a blob whose name lies about its content.
//! A blob changed after that (an output layout's hard link edited in place, a stray write) is
//! caught by its seal before it is reused: see [`seal`]. `ocibuild cache verify` rehashes every
//! blob; `ocibuild cache prune` removes what no build can use ([`maintain`]).

pub mod image;
mod maintain;
pub mod remote;
pub mod root;
pub mod seal;

pub use maintain::{prune, verify, PruneReport, VerifyReport};

use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use fs_err as fs;

use crate::digest::{Digest, Hasher};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("cannot find a cache directory: set OCIBUILD_CACHE, XDG_CACHE_HOME or HOME")]
    NoCacheDir,
    #[error("blob {path}: expected digest {expected}, found {found}")]
    DigestMismatch {
        path: PathBuf,
        expected: Digest,
        found: Digest,
    },
    #[error("blob {digest} is not in the store {root}")]
    MissingBlob { root: PathBuf, digest: Digest },
    #[error("the store {root} is in use by a running build: prune it when no build is running")]
    InUse { root: PathBuf },
    #[error(
        "{root} is not an ocibuild store ({found}, and no `{marker}` marker): point \
         OCIBUILD_CACHE or --cache-dir at an ocibuild store, or at a new or empty directory",
        marker = root::MARKER
    )]
    NotAStore { root: PathBuf, found: String },
    #[error(
        "{path}: unknown store format `{found}` (this ocibuild reads `{format}`): use the \
         ocibuild that made this store, or another cache directory",
        format = root::FORMAT
    )]
    Format { path: PathBuf, found: String },
    #[error(transparent)]
    Marker(#[from] crate::bounded::Error),
    #[error(
        "{path} is {kind}: a store's own folders are real directories; make it one (or remove \
         it) before `cache {action}`"
    )]
    NotAFolder {
        path: PathBuf,
        kind: &'static str,
        action: &'static str,
    },
    #[error("cache entry {path} is corrupt")]
    CorruptEntry {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// A layer the cache knows ([`crate::image::CachedLayer`]: one built-layer record for the
/// cache, the builders and the image).
pub use crate::image::CachedLayer;

/// The store: a root directory with the layout described in the module docs.
#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
    /// Whether blobs are sealed and checked on reuse: a store's, not a [`Store::view`]'s.
    sealed: bool,
    /// Blobs found changed since they were written, and removed (see [`Store::repaired`]).
    repaired: std::sync::Arc<std::sync::Mutex<Vec<Digest>>>,
    /// A shared lock on `locks/store.lock` while this store is open, so `cache prune` knows
    /// no build is using `tmp/`.
    _in_use: Option<std::sync::Arc<fs::File>>,
    /// The shared cache behind this one ([`Store::with_remote`]).
    remote: Option<std::sync::Arc<dyn remote::Remote>>,
    /// Layers this store took from the remote (their blobs fetched, or left there by a lazy
    /// remote), by blob digest.
    remote_blobs: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<Digest, CachedLayer>>>,
}

impl std::fmt::Debug for dyn remote::Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Remote")
    }
}

impl Store {
    /// The default store root: `$OCIBUILD_CACHE`, `$XDG_CACHE_HOME/ocibuild` or `~/.cache/ocibuild`.
    pub fn default_root() -> Result<PathBuf, StoreError> {
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(p) = env("OCIBUILD_CACHE") {
            return Ok(p);
        }
        if let Some(p) = env("XDG_CACHE_HOME") {
            return Ok(p.join("ocibuild"));
        }
        env("HOME")
            .map(|h| h.join(".cache").join("ocibuild"))
            .ok_or(StoreError::NoCacheDir)
    }

    /// Open (creating if needed) the store at `root`: refused when `root` is a directory that
    /// is not a store ([`root::prepare`]).
    pub fn open(root: impl Into<PathBuf>) -> Result<Store, StoreError> {
        let root = root.into();
        root::prepare(&root)?;
        for sub in [
            "blobs/sha256",
            "layers",
            "fingerprints",
            "locks",
            "tmp",
            "meta",
        ] {
            fs::create_dir_all(root.join(sub))?;
        }
        // A store this user can only read (a read-only mount, another user's cache) is used
        // without seals and without the in-use lock: neither can be written there.
        let sealed = fs::create_dir_all(root.join("seals")).is_ok()
            && fs::metadata(root.join("seals")).is_ok_and(|m| !m.permissions().readonly());
        let lock_path = root.join("locks").join(maintain::STORE_LOCK);
        let in_use = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .or_else(|_| fs::File::open(&lock_path))
            .ok()
            .filter(|f| f.file().lock_shared().is_ok())
            .map(std::sync::Arc::new);
        Ok(Store {
            root,
            sealed,
            repaired: Default::default(),
            _in_use: in_use,
            remote: None,
            remote_blobs: Default::default(),
        })
    }

    /// A read-only view of an existing blob directory laid out like the store's, such as an OCI
    /// image layout (`DIR/blobs/sha256/<hex>`). Creates nothing; use it only to read blobs.
    pub fn view(root: impl Into<PathBuf>) -> Store {
        Store {
            root: root.into(),
            sealed: false,
            repaired: Default::default(),
            _in_use: None,
            remote: None,
            remote_blobs: Default::default(),
        }
    }

    /// This store with `remote` behind it: a layer or fact the store lacks is asked of it, and
    /// what the store records is recorded there too.
    pub fn with_remote(mut self, remote: std::sync::Arc<dyn remote::Remote>) -> Store {
        self.remote = Some(remote);
        self
    }

    /// Where a push may mount blobs from that the store lacks ([`remote::Remote::mount_source`]).
    pub fn remote_mount_source(&self) -> Option<String> {
        self.remote.as_ref().and_then(|r| r.mount_source())
    }

    /// Whether `digest` is the blob of a layer this store took from the remote (fetched, or
    /// left there by a lazy remote: only a push to the same registry, which mounts it, needs
    /// it then) or recorded there.
    pub fn is_remote_blob(&self, digest: &Digest) -> bool {
        self.remote_blobs
            .lock()
            .map(|s| s.contains_key(digest))
            .unwrap_or(false)
    }

    /// A lazy hit's blob, fetched (verified) from the remote the first time a reader needs it
    /// here: a build that reads one (the rootfs step reading the apt layer whose facts are not
    /// cached) gets it then, and a build that does not never downloads it.
    fn materialize(&self, digest: &Digest) {
        // Only a remote's layer (any other read is untouched: no lock, no extra seal check).
        let Some(remote) = &self.remote else {
            return;
        };
        let Some(layer) = self
            .remote_blobs
            .lock()
            .ok()
            .and_then(|s| s.get(digest).cloned())
        else {
            return;
        };
        if !self.blob_path(digest).is_file() {
            remote.fetch(&layer, self);
        }
    }

    /// Blobs found changed since they were written (their seal broken and their bytes no longer
    /// hashing to their name) and removed, so they were fetched or built again; for a report.
    pub fn repaired(&self) -> Vec<Digest> {
        self.repaired.lock().map(|v| v.clone()).unwrap_or_default()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where temporary files go (on the store's file system, so a rename into place works).
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join("blobs/sha256").join(digest.hex())
    }

    /// Whether the blob is present and, in a store (not a view), intact: its seal matches, or
    /// it still hashes to its name (then it is sealed again). A changed blob is removed, and
    /// recorded in [`Store::repaired`].
    pub fn has_blob(&self, digest: &Digest) -> bool {
        if !self.sealed {
            return self.blob_path(digest).is_file();
        }
        seal::check(self, digest)
    }

    /// Whether `file`, opened at [`blob_path`](Self::blob_path)`(digest)`, is that blob as it
    /// was when last hashed or written: its seal matches the open file (one `fstat`, nothing
    /// read). Always false in a view, or without a seal: the caller hashes the file then.
    pub fn sealed_file(&self, digest: &Digest, file: &std::fs::File) -> bool {
        self.sealed
            && file
                .metadata()
                .is_ok_and(|m| seal::matches(&self.root, digest, &m))
    }

    /// Whether `file`, opened as `digest`'s blob, is sealed ([`Store::sealed_file`]) and its
    /// seal records `check`: a check of the blob's content done since it last changed.
    pub fn sealed_check(&self, digest: &Digest, file: &std::fs::File, check: &str) -> bool {
        self.sealed
            && file
                .metadata()
                .is_ok_and(|m| seal::has_check(&self.root, digest, &m, check))
    }

    /// Records in `digest`'s seal that `check` passed on the content of the blob whose
    /// metadata, when it was opened for the check, was `m`; nothing if the blob or its seal no
    /// longer match `m` (the blob changed, or its seal was replaced or removed meanwhile). Best
    /// effort: a check not recorded is done again next time.
    pub fn note_check(&self, digest: &Digest, m: &std::fs::Metadata, check: &str) {
        if self.sealed {
            seal::add_check(&self.root, digest, m, check);
        }
    }

    /// Open a stored blob for reading. In a view (a layout or a directory others wrote), the
    /// blob and `blobs/sha256` are opened without following a symlink ([`crate::fsat`]): a
    /// planted link is an error naming it, never a read of what it points at.
    pub fn open_blob(&self, digest: &Digest) -> Result<fs::File, StoreError> {
        self.materialize(digest);
        let path = self.blob_path(digest);
        if !path.is_file() {
            return Err(StoreError::MissingBlob {
                root: self.root.clone(),
                digest: *digest,
            });
        }
        if !self.sealed {
            let hex = digest.hex();
            let file =
                crate::fsat::open_regular_beneath(&self.root, &["blobs", "sha256", hex.as_str()])?;
            return Ok(fs::File::from_parts(file, path));
        }
        Ok(fs::File::open(path)?)
    }

    /// Read a whole (small) blob, verifying its digest.
    pub fn read_blob(&self, digest: &Digest) -> Result<Vec<u8>, StoreError> {
        let path = self.blob_path(digest);
        let mut data = Vec::new();
        self.open_blob(digest)?.read_to_end(&mut data)?;
        let found = Digest::of(&data);
        if found != *digest {
            return Err(StoreError::DigestMismatch {
                path,
                expected: *digest,
                found,
            });
        }
        Ok(data)
    }

    /// The OCI index of `images` ([`IndexRecord::new`](crate::image::IndexRecord::new)), its
    /// bytes put into the store.
    pub fn put_index(
        &self,
        images: Vec<crate::image::ImageRecord>,
    ) -> Result<crate::image::IndexRecord, IndexError> {
        let (record, bytes) = crate::image::IndexRecord::new(images)?;
        self.put_bytes(&bytes)?;
        Ok(record)
    }

    /// Store a byte slice; returns its digest.
    pub fn put_bytes(&self, data: &[u8]) -> Result<Digest, StoreError> {
        let digest = Digest::of(data);
        if self.has_blob(&digest) {
            return Ok(digest);
        }
        let mut w = self.blob_writer()?;
        w.write_all(data)?;
        w.commit(Some(digest))
    }

    /// A writer for a new blob; call [`BlobWriter::commit`] to put it in place.
    pub fn blob_writer(&self) -> Result<BlobWriter, StoreError> {
        self.new_blob_writer(Some(Hasher::new()))
    }

    /// A writer for a blob whose sha256 the caller computes over exactly the bytes it writes
    /// (a layer writer hashes its output anyway), so the store does not hash them again.
    /// [`BlobWriter::commit`] then needs that digest.
    pub fn prehashed_blob_writer(&self) -> Result<BlobWriter, StoreError> {
        self.new_blob_writer(None)
    }

    fn new_blob_writer(&self, hasher: Option<Hasher>) -> Result<BlobWriter, StoreError> {
        let file = tempfile::Builder::new()
            .prefix("blob-")
            .tempfile_in(self.root.join("tmp"))?;
        Ok(BlobWriter {
            file: io::BufWriter::with_capacity(256 * 1024, file),
            hasher,
            written: 0,
            kicked: 0,
            blobs: self.root.join("blobs/sha256"),
            seal_root: self.sealed.then(|| self.root.clone()),
        })
    }

    /// Take an exclusive advisory lock named `name` (blocks until free). Released on drop.
    pub fn lock(&self, name: &str) -> Result<LockGuard, StoreError> {
        let path = self.root.join("locks").join(format!("{name}.lock"));
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        file.file()
            .lock()
            .map_err(|e| io::Error::new(e.kind(), format!("locking {}: {e}", path.display())))?;
        Ok(LockGuard { _file: file })
    }

    /// The layer this store has for an input key, if it and its blob are present.
    pub fn local_layer(&self, key: &Digest) -> Result<Option<CachedLayer>, StoreError> {
        let path = self.root.join("layers").join(format!("{}.json", key.hex()));
        let data = match fs::read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let layer: CachedLayer = serde_json::from_slice(&data)
            .map_err(|source| StoreError::CorruptEntry { path, source })?;
        Ok(self.has_blob(&layer.digest).then_some(layer))
    }

    /// The cached layer for an input key: the store's ([`Store::local_layer`]), else the
    /// remote's (its blob fetched and verified, or with a lazy remote left there).
    pub fn cached_layer(&self, key: &Digest) -> Result<Option<CachedLayer>, StoreError> {
        if let Some(l) = self.local_layer(key)? {
            self.offer(remote::Kind::Layer, key, Some(&l), &[]);
            return Ok(Some(l));
        }
        let Some(remote) = &self.remote else {
            return Ok(None);
        };
        let Some(layer) = remote.layer(key) else {
            return Ok(None);
        };
        let local = self.has_blob(&layer.digest) || (!remote.lazy() && remote.fetch(&layer, self));
        // (no local entry without its taken mark: it is used in this build only)
        if local && self.mark_taken(remote::Kind::Layer, key) {
            self.write_layer_entry(key, &layer)?;
        }
        if local || remote.lazy() {
            self.note_remote_blob(&layer);
            return Ok(Some(layer));
        }
        Ok(None)
    }

    /// Record the layer built for an input key (here, and in the remote).
    pub fn put_cached_layer(&self, key: &Digest, layer: &CachedLayer) -> Result<(), StoreError> {
        self.write_layer_entry(key, layer)?;
        self.unmark(remote::Kind::Layer, key);
        if let Some(r) = &self.remote {
            // Now in the remote too: a push to its registry mounts it from there instead of
            // uploading it again (a refused mount uploads it from here).
            let offered = r.put_layer(key, layer, self);
            self.record_offer(remote::Kind::Layer, key, Some(layer), offered);
        }
        Ok(())
    }

    /// Whether the remote will have blob `digest` before a push ([`Remote::will_have`]).
    pub fn remote_will_have(&self, digest: &Digest) -> bool {
        self.remote.as_ref().is_some_and(|r| r.will_have(digest))
    }

    /// `layer`'s blob is in the remote too (see [`Store::is_remote_blob`]).
    fn note_remote_blob(&self, layer: &CachedLayer) {
        if let Ok(mut s) = self.remote_blobs.lock() {
            s.insert(layer.digest, layer.clone());
        }
    }

    fn write_layer_entry(&self, key: &Digest, layer: &CachedLayer) -> Result<(), StoreError> {
        let path = self.root.join("layers").join(format!("{}.json", key.hex()));
        let data = serde_json::to_vec(layer).map_err(|source| StoreError::CorruptEntry {
            path: path.clone(),
            source,
        })?;
        self.write_small(&path, &data)
    }

    /// The layer cache key recorded for a stat fingerprint, if any.
    pub fn fingerprint(&self, fp: &Digest) -> Result<Option<Digest>, StoreError> {
        let path = self.root.join("fingerprints").join(fp.hex());
        match fs::read_to_string(&path) {
            Ok(s) => Ok(s.trim().parse().ok()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub fn put_fingerprint(&self, fp: &Digest, key: &Digest) -> Result<(), StoreError> {
        let path = self.root.join("fingerprints").join(fp.hex());
        self.write_small(&path, key.to_string().as_bytes())
    }

    /// A fact cached under `key` ([`Store::put_meta`]), if present here or in the remote.
    pub fn meta(&self, key: &Digest) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.root.join("meta").join(format!("{}.json", key.hex()));
        match fs::read(&path) {
            Ok(d) => {
                self.offer(remote::Kind::Fact, key, None, &d);
                return Ok(Some(d));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        let Some(data) = self.remote.as_ref().and_then(|r| r.meta(key)) else {
            return Ok(None);
        };
        if self.mark_taken(remote::Kind::Fact, key) {
            self.write_meta(key, &data)?;
        }
        Ok(Some(data))
    }

    /// Caches a fact derived from inputs under the hash of those inputs (here, and in the
    /// remote).
    pub fn put_meta(&self, key: &Digest, data: &[u8]) -> Result<(), StoreError> {
        self.write_meta(key, data)?;
        self.unmark(remote::Kind::Fact, key);
        if let Some(r) = &self.remote {
            let offered = r.put_meta(key, data);
            self.record_offer(remote::Kind::Fact, key, None, offered);
        }
        Ok(())
    }

    fn write_meta(&self, key: &Digest, data: &[u8]) -> Result<(), StoreError> {
        let path = self.root.join("meta").join(format!("{}.json", key.hex()));
        fs::create_dir_all(self.root.join("meta"))?;
        self.write_small(&path, data)
    }

    fn write_small(&self, path: &Path, data: &[u8]) -> Result<(), StoreError> {
        let mut tmp = tempfile::Builder::new()
            .prefix("meta-")
            .tempfile_in(self.root.join("tmp"))?;
        tmp.write_all(data)?;
        tmp.persist(path).map_err(|e| {
            io::Error::new(
                e.error.kind(),
                format!("renaming into {}: {}", path.display(), e.error),
            )
        })?;
        Ok(())
    }
}

/// Holds a store lock until dropped.
pub struct LockGuard {
    _file: fs::File,
}

/// A blob being written: hashed while streaming, renamed into place on [`commit`](Self::commit).
pub struct BlobWriter {
    file: io::BufWriter<tempfile::NamedTempFile>,
    /// None for a prehashed writer.
    hasher: Option<Hasher>,
    written: u64,
    /// Bytes handed to the kernel's writeback so far (see [`WRITEBACK_STEP`]).
    kicked: u64,
    blobs: PathBuf,
    /// The store's root, where the blob's seal goes (none for a view).
    seal_root: Option<PathBuf>,
}

/// Every this many bytes, a blob writer asks the kernel to start writing back what it has, so
/// the `fdatasync` before the rename waits for the tail only, not for the whole blob.
const WRITEBACK_STEP: u64 = 8 << 20;

impl BlobWriter {
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// Finish the blob. With `expected`, a different digest is an error and nothing is kept;
    /// a prehashed writer takes `expected` as the digest and cannot do without it.
    pub fn commit(self, expected: Option<Digest>) -> Result<Digest, StoreError> {
        let tmp = self
            .file
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        let digest = match (self.hasher, expected) {
            (Some(h), expected) => {
                let (digest, _) = h.finish();
                if let Some(expected) = expected {
                    if expected != digest {
                        return Err(StoreError::DigestMismatch {
                            path: tmp.path().to_path_buf(),
                            expected,
                            found: digest,
                        });
                    }
                }
                digest
            }
            (None, Some(digest)) => digest,
            (None, None) => {
                return Err(StoreError::Io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a prehashed blob needs its digest to be committed",
                )))
            }
        };
        let dest = self.blobs.join(digest.hex());
        // Read-only: output layouts may hard-link store blobs, so no one should edit one in place.
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o444))?;
        tmp.as_file().sync_data()?;
        let file = tmp.persist(&dest).map_err(|e| {
            io::Error::new(
                e.error.kind(),
                format!("renaming into {}: {}", dest.display(), e.error),
            )
        })?;
        if let Some(root) = &self.seal_root {
            seal::write(root, &digest, &file.metadata()?);
        }
        Ok(digest)
    }

    /// Starts writeback of everything written since the last call (Linux; elsewhere a no-op).
    #[allow(unsafe_code)] // sync_file_range(2)
    fn kick_writeback(&mut self) -> io::Result<()> {
        self.file.flush()?;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let fd = self.file.get_ref().as_file().as_raw_fd();
            let (from, len) = (self.kicked, self.written - self.kicked);
            // SAFETY: a valid open descriptor and a byte range; SYNC_FILE_RANGE_WRITE only
            // starts writeback and reads no memory of ours. A failure is harmless (the
            // fdatasync at commit is what makes the blob durable), so it is ignored.
            unsafe {
                libc::sync_file_range(
                    fd,
                    from as libc::off64_t,
                    len as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
        }
        self.kicked = self.written;
        Ok(())
    }
}

impl Write for BlobWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        if let Some(h) = &mut self.hasher {
            h.update(&buf[..n]);
        }
        self.written += n as u64;
        if self.written - self.kicked >= WRITEBACK_STEP {
            self.kick_writeback()?;
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Why an image index could not be made ([`Store::put_index`]).
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Json(#[from] crate::json::JsonError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prehashed_blobs_take_the_callers_digest_and_need_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // Larger than the writeback step, so writeback is started along the way.
        let data: Vec<u8> = (0..(WRITEBACK_STEP as usize * 2 + 12345))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let d = Digest::of(&data);
        let mut w = store.prehashed_blob_writer().unwrap();
        for part in data.chunks(1 << 20) {
            w.write_all(part).unwrap();
        }
        assert_eq!(w.bytes_written(), data.len() as u64);
        assert_eq!(w.commit(Some(d)).unwrap(), d);
        assert!(store.read_blob(&d).unwrap() == data);
        let mut w = store.prehashed_blob_writer().unwrap();
        w.write_all(b"x").unwrap();
        assert!(w.commit(None).is_err());
        // A hashing writer still checks.
        let mut w = store.blob_writer().unwrap();
        w.write_all(&data).unwrap();
        assert!(matches!(
            w.commit(Some(Digest::of(b"other"))),
            Err(StoreError::DigestMismatch { .. })
        ));
        assert_eq!(fs_err::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn put_read_and_verify() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let d = store.put_bytes(b"hello").unwrap();
        assert_eq!(d, Digest::of(b"hello"));
        assert_eq!(store.read_blob(&d).unwrap(), b"hello");
        // Blobs are read-only; one whose bytes changed on disk anyway is caught on read.
        let path = store.blob_path(&d);
        assert_eq!(
            fs_err::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o444
        );
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        fs_err::write(&path, b"evil").unwrap();
        assert!(matches!(
            store.read_blob(&d),
            Err(StoreError::DigestMismatch { .. })
        ));
        // Its seal is broken: it is no longer in the store, and is listed as repaired.
        assert!(!store.has_blob(&d));
        assert!(!path.exists());
        assert_eq!(store.repaired(), [d]);
        // A blob with no seal (an older store, a copied cache) is hashed once and sealed.
        let e = store.put_bytes(b"other").unwrap();
        fs_err::remove_file(dir.path().join("seals").join(e.hex())).unwrap();
        assert!(store.has_blob(&e));
        assert!(dir.path().join("seals").join(e.hex()).is_file());
        // A view of a layout neither checks nor writes seals.
        let view = Store::view(dir.path());
        fs_err::remove_file(dir.path().join("seals").join(e.hex())).unwrap();
        assert!(view.has_blob(&e));
        assert!(!dir.path().join("seals").join(e.hex()).exists());
    }

    #[test]
    fn wrong_expected_digest_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut w = store.blob_writer().unwrap();
        w.write_all(b"abc").unwrap();
        let err = w.commit(Some(Digest::of(b"xyz"))).unwrap_err();
        assert!(matches!(err, StoreError::DigestMismatch { .. }));
        assert!(!store.has_blob(&Digest::of(b"abc")));
        assert_eq!(fs_err::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn layer_cache_needs_its_blob() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = Digest::of(b"key");
        let layer = CachedLayer {
            media_type: "m".into(),
            digest: Digest::of(b"layer"),
            size: 5,
            diff_id: Digest::of(b"tar"),
            uncompressed_size: 3,
            annotations: Default::default(),
        };
        store.put_cached_layer(&key, &layer).unwrap();
        assert_eq!(store.cached_layer(&key).unwrap(), None);
        store.put_bytes(b"layer").unwrap();
        assert_eq!(store.cached_layer(&key).unwrap(), Some(layer));
        let fp = Digest::of(b"fp");
        assert_eq!(store.fingerprint(&fp).unwrap(), None);
        store.put_fingerprint(&fp, &key).unwrap();
        assert_eq!(store.fingerprint(&fp).unwrap(), Some(key));
    }

    #[test]
    fn locks_are_exclusive_across_handles() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let g = store.lock("k").unwrap();
        let path = dir.path().join("locks/k.lock");
        let other = fs_err::File::open(&path).unwrap();
        assert!(other.try_lock().is_err());
        drop(g);
        assert!(other.try_lock().is_ok());
    }
}
