//! The OCI image layout directory writer.
//!
//! A new layout (the directory missing or empty) is written whole into a directory beside it
//! and renamed into place, so after a failure (ENOSPC) or a crash it is either complete or
//! absent. Into an existing layout: the blobs (each copied to a temporary file in the layout,
//! then renamed to `blobs/sha256/<hex>`), then `index.json` last, through a temporary file and
//! a rename. A blob already there is kept only when it is the store's own inode (a hard link)
//! or hashes to its name (a copy, on another filesystem): a same-size file with other bytes is
//! replaced, so the layout never names a blob it does not hold. A failed write removes the blobs it added that the index does not name; a crash
//! leaves at worst unreferenced blobs or a stray `.ocibuild-tmp-*` file, never an index that
//! names a blob the layout lacks. The destination's kind is checked first ([`super::dest`]):
//! nothing is written through a symlinked layout, `blobs` or `blobs/sha256`. Files are created
//! 0644 (less the umask), directories by `mkdir` (0777 less the umask).
//!
//! Concurrent writers: several `ocibuild` processes may write into one layout at once (different
//! tags, or the same one: then the last to finish wins). Claiming the directory and the
//! read-modify-write of `index.json` happen under an exclusive advisory lock (`flock`) on the
//! layout directory itself, so no writer's tag is lost to another's rename; blobs are written
//! without it (content-addressed, each rename is atomic and puts the same bytes in place). The
//! lock goes with the process, also when it is killed. Only ocibuild takes it: another tool
//! editing the same layout at the same time is not coordinated with.

use std::io::Write;
use std::path::Path;

use fs_err as fs;

use super::dest::{inode, Inode, TEMP_PREFIX};
use super::{io_err, OutputError};
use crate::digest::Digest;
use crate::image::{annotations, Descriptor, ImageRecord, Index};
use crate::json::to_canonical_vec;
use crate::store::Store;

const OCI_LAYOUT: &[u8] = br#"{"imageLayoutVersion":"1.0.0"}"#;

/// Read a layout's `index.json`.
pub fn read_index(dir: &Path) -> Result<Index, OutputError> {
    let path = dir.join("index.json");
    let data = fs::read(&path)?;
    serde_json::from_slice(&data).map_err(|source| OutputError::BadIndex { path, source })
}

/// What a layout lists under a tag: an image, or a multi-platform image's index.
pub trait Tagged {
    /// Its `index.json` entry (tagged).
    fn entry(&self) -> Descriptor;
    /// Every blob it needs, with its size.
    fn blobs(&self) -> Vec<(Digest, u64)>;
    fn tag(&self) -> &str;
    fn full_name(&self) -> String;
}

impl Tagged for ImageRecord {
    fn entry(&self) -> Descriptor {
        self.index_entry()
    }
    fn blobs(&self) -> Vec<(Digest, u64)> {
        ImageRecord::blobs(self)
    }
    fn tag(&self) -> &str {
        &self.tag
    }
    fn full_name(&self) -> String {
        ImageRecord::full_name(self)
    }
}

impl Tagged for crate::image::IndexRecord {
    fn entry(&self) -> Descriptor {
        self.index_entry()
    }
    fn blobs(&self) -> Vec<(Digest, u64)> {
        crate::image::IndexRecord::blobs(self)
    }
    fn tag(&self) -> &str {
        &self.tag
    }
    fn full_name(&self) -> String {
        crate::image::IndexRecord::full_name(self)
    }
}

/// Write `image` into the layout at `dir` (created if missing), tagging it `image.tag`. An existing
/// layout keeps its other images; an entry with the same tag is replaced.
pub fn write_layout(dir: &Path, store: &Store, image: &ImageRecord) -> Result<(), OutputError> {
    write_layout_with(dir, store, image, &[])
}

/// [`write_layout`], also listing `referrers` in `index.json`: OCI 1.1 artifact manifests whose
/// subject is the image (their blobs, `referrer_blobs`, are copied too). Referrer entries carry
/// `artifactType` and no ref name, so tags still name only images. Referrers whose subject no
/// longer has an entry in the index (an image replaced under its tag) are dropped.
pub fn write_layout_with(
    dir: &Path,
    store: &Store,
    image: &dyn Tagged,
    referrers: &[(Descriptor, Vec<(Digest, u64)>)],
) -> Result<(), OutputError> {
    if super::dest::check_layout(dir)? {
        // Staged beside `dir`; where that is not possible (a parent this user cannot write,
        // with `dir` an empty directory it can), `dir` is written in place.
        match super::dest::Staged::new(dir) {
            Ok(staged) => {
                write_into(staged.path(), store, image, referrers, &mut Vec::new())?;
                if staged.commit(dir)? {
                    return Ok(());
                }
                // Another writer made the layout meanwhile: write into it like into any other.
                super::dest::check_layout(dir)?;
            }
            Err(_) if dir.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    let mut added = Vec::new();
    let written = write_into(dir, store, image, referrers, &mut added);
    if written.is_err() {
        remove_unreferenced(dir, &added);
    }
    written
}

/// The blobs a layout's index names, directly and through its manifests (their configs,
/// layers and subjects), as far as they can be read.
fn referenced(dir: &Path) -> std::collections::BTreeSet<Digest> {
    use crate::image::read::ReadManifest;
    let mut out = std::collections::BTreeSet::new();
    let Ok(layout) = super::Layout::open(dir) else {
        return out;
    };
    let mut todo: Vec<String> = layout
        .index()
        .manifests
        .iter()
        .map(|d| d.digest.clone())
        .collect();
    while let Some(d) = todo.pop() {
        let Ok(digest) = d.parse::<Digest>() else {
            continue;
        };
        if !out.insert(digest) {
            continue;
        }
        if let Ok(m) = layout.read_json::<ReadManifest>(&d) {
            let blobs = std::iter::once(&m.config).chain(&m.layers);
            out.extend(blobs.filter_map(|b| b.digest.parse::<Digest>().ok()));
        } else if let Ok(i) = layout.read_json::<crate::image::read::ReadIndex>(&d) {
            todo.extend(i.manifests.into_iter().map(|m| m.digest));
        }
    }
    out
}

/// After a failed write into an existing layout: remove the blobs it added that the index (as
/// it is now, under the lock, with any other writer's images) does not name.
fn remove_unreferenced(dir: &Path, added: &[Digest]) {
    if added.is_empty() {
        return;
    }
    let Ok(_lock) = lock_dir(dir) else {
        return;
    };
    let keep = referenced(dir);
    for d in added.iter().filter(|d| !keep.contains(d)) {
        let _ = fs::remove_file(dir.join("blobs").join("sha256").join(d.hex()));
    }
}

/// The write itself, into `dir` (a new staged directory, or an existing layout). The digests
/// of blobs it copied in go to `added`.
fn write_into(
    dir: &Path,
    store: &Store,
    image: &dyn Tagged,
    referrers: &[(Descriptor, Vec<(Digest, u64)>)],
    added: &mut Vec<Digest>,
) -> Result<(), OutputError> {
    claim_dir(dir)?;
    let blobs = dir.join("blobs").join("sha256");
    fs::create_dir_all(&blobs)?;

    let mut digests = image.blobs();
    for (_, extra) in referrers {
        digests.extend(extra.iter().copied());
    }
    // The inode each blob was found or put at: checked again under the lock.
    let mut at = std::collections::BTreeMap::new();
    for &(digest, size) in &digests {
        let (copied, id) = copy_blob(dir, store, &digest, size)?;
        if copied {
            added.push(digest);
        }
        at.insert(digest, id);
    }
    // The blobs' names are durable before index.json names them.
    fs::File::open(dir.join("blobs").join("sha256"))?.sync_all()?;

    let entry = image.entry();

    // Held from reading index.json to the rename of the new one.
    let _lock = lock_dir(dir)?;
    // Under the lock, every blob the new index names is there, the file checked or put there
    // above: another writer's failed write (whose cleanup also holds the lock) may have
    // removed one this write found present, and a file renamed in since is checked again.
    for &(digest, size) in &digests {
        let present = fs::symlink_metadata(blobs.join(digest.hex()))
            .is_ok_and(|m| m.is_file() && m.len() == size && at.get(&digest) == Some(&inode(&m)));
        if !present {
            let (copied, id) = copy_blob(dir, store, &digest, size)?;
            if copied {
                added.push(digest);
            }
            at.insert(digest, id);
        }
    }
    let existing = if dir.join("index.json").is_file() {
        Some(read_index(dir)?)
    } else {
        None
    };
    let mut index = existing.unwrap_or_else(|| Index::new(Vec::new()));
    index.manifests.retain(|d| {
        d.annotations.get(annotations::REF_NAME).map(String::as_str) != Some(image.tag())
            && d.annotations.get(annotations::CONTAINERD_NAME) != Some(&image.full_name())
    });
    index.manifests.push(entry);
    for (r, _) in referrers {
        // A tagged extra (an image's signature, `sha256-<hex>.sig`) replaces its tag's entry.
        if let Some(name) = r.annotations.get(annotations::REF_NAME) {
            index.manifests.retain(|d| {
                d.digest == r.digest || d.annotations.get(annotations::REF_NAME) != Some(name)
            });
        }
        if !index.manifests.iter().any(|d| d.digest == r.digest) {
            index.manifests.push(r.clone());
        }
    }
    // Referrers of images no longer in the index go with them. An image index's own
    // manifests (each platform's) count as images: their referrers and signatures stay.
    let mut images: Vec<Digest> = Vec::new();
    for d in index.manifests.iter().filter(|d| d.artifact_type.is_none()) {
        images.push(d.digest);
        if d.media_type == crate::image::MEDIA_TYPE_INDEX {
            images.extend(index_manifests(dir, &d.digest));
        }
    }
    // So do their signatures and cosign's attestations (tagged `sha256-<hex>.sig`,
    // `sha256-<hex>.att`, with no subject).
    let signs_an_image = |d: &Descriptor| {
        let hex = d.annotations.get(annotations::REF_NAME).and_then(|t| {
            let t = t.strip_prefix("sha256-")?;
            t.strip_suffix(".sig").or_else(|| t.strip_suffix(".att"))
        });
        hex.is_none_or(|h| images.iter().any(|i| i.hex() == h))
    };
    index.manifests.retain(|d| {
        d.artifact_type.is_none()
            || (signs_an_image(d) && subject_of(dir, &d.digest).is_none_or(|s| images.contains(&s)))
    });
    index.manifests.sort_by(|a, b| {
        let key = |d: &Descriptor| {
            (
                d.artifact_type.is_some(),
                d.annotations.get(annotations::REF_NAME).cloned(),
                d.digest,
            )
        };
        key(a).cmp(&key(b))
    });
    let bytes = to_canonical_vec("index.json", &index)?;
    write_atomic(dir, &dir.join("index.json"), &bytes)
}

/// The manifests an image index blob `digest` in the layout lists (none if unreadable).
fn index_manifests(dir: &Path, digest: &Digest) -> Vec<Digest> {
    fs::read(dir.join("blobs").join("sha256").join(digest.hex()))
        .ok()
        .and_then(|b| serde_json::from_slice::<Index>(&b).ok())
        .map(|i| i.manifests.into_iter().map(|m| m.digest).collect())
        .unwrap_or_default()
}

/// The `subject` digest of the manifest blob `digest` in the layout, if it has one.
fn subject_of(dir: &Path, digest: &Digest) -> Option<Digest> {
    #[derive(serde::Deserialize)]
    struct WithSubject {
        subject: Option<Descriptor>,
    }
    let bytes = fs::read(dir.join("blobs").join("sha256").join(digest.hex())).ok()?;
    serde_json::from_slice::<WithSubject>(&bytes)
        .ok()?
        .subject
        .map(|s| s.digest)
}

/// Holds the exclusive advisory lock on a layout directory until dropped.
struct DirLock {
    _dir: fs::File,
}

/// Take the exclusive advisory lock on the layout directory `dir` (blocks until free).
fn lock_dir(dir: &Path) -> Result<DirLock, OutputError> {
    let file = fs::File::open(dir)?;
    file.file().lock().map_err(|source| OutputError::Lock {
        path: dir.to_path_buf(),
        source,
    })?;
    Ok(DirLock { _dir: file })
}

/// Create `dir` or check it is empty or a layout, and make it a layout (`oci-layout`) at once, so
/// that a concurrent writer into the same new directory finds a layout, not a foreign non-empty
/// directory. Stray `.ocibuild-tmp-*` files (from an interrupted write) do not count as content.
fn claim_dir(dir: &Path) -> Result<(), OutputError> {
    fs::create_dir_all(dir)?;
    let _lock = lock_dir(dir)?;
    let layout_file = dir.join("oci-layout");
    if layout_file.is_file() {
        return Ok(());
    }
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        if !name.to_string_lossy().starts_with(TEMP_PREFIX) {
            return Err(OutputError::NotALayout {
                path: dir.to_path_buf(),
            });
        }
    }
    write_atomic(dir, &layout_file, OCI_LAYOUT)
}

/// Copy one blob from the store (intact: its seal checked) unless the layout already holds
/// it: the store's very inode (a hard link), or another regular file of that name and size
/// whose bytes hash to its name (a layout on another filesystem, a copy), hashed through a
/// handle opened without following a link. Anything else there (a same-size file with other
/// bytes, a symlink) is replaced by a rename, never followed or written through. Whether it
/// copied, and the inode now at the blob's name.
fn copy_blob(
    dir: &Path,
    store: &Store,
    digest: &Digest,
    size: u64,
) -> Result<(bool, Inode), OutputError> {
    let dest = dir.join("blobs").join("sha256").join(digest.hex());
    let src = store.blob_path(digest);
    if let Ok(m) = fs::symlink_metadata(&dest) {
        if m.is_file() && m.len() == size {
            let the_stores = fs::metadata(&src).is_ok_and(|s| inode(&s) == inode(&m));
            if (the_stores && store.has_blob(digest)) || super::dest::holds(&dest, &m, digest) {
                return Ok((false, inode(&m)));
            }
        }
    }
    if !store.has_blob(digest) {
        return Err(crate::store::StoreError::MissingBlob {
            root: store.root().to_path_buf(),
            digest: *digest,
        }
        .into());
    }
    // Same filesystem: hard-link the store's (read-only, already durable) blob, so a layer is
    // written to disk once. Linked under a temporary name, then renamed, so the blob's final
    // name never exists half-made.
    let tmp = temp_in(dir)?;
    let tmp_path = tmp.path().to_path_buf();
    tmp.close().map_err(io_err(&tmp_path))?;
    if fs::hard_link(&src, &tmp_path).is_ok() {
        let linked = fs::symlink_metadata(&tmp_path).map(|m| inode(&m));
        return match linked.and_then(|id| fs::rename(&tmp_path, &dest).map(|()| id)) {
            Ok(id) => Ok((true, id)),
            Err(e) => {
                let _ = fs::remove_file(&tmp_path);
                Err(e.into())
            }
        };
    }
    // Another filesystem: copy (copy_file_range, which may share extents), sync, rename.
    let tmp = temp_in(dir)?;
    let mut from = fs::File::open(&src)?;
    std::io::copy(&mut from, &mut tmp.as_file()).map_err(io_err(tmp.path()))?;
    tmp.as_file().sync_all().map_err(io_err(tmp.path()))?;
    let id = inode(&tmp.as_file().metadata().map_err(io_err(tmp.path()))?);
    tmp.persist(&dest).map_err(|e| io_err(&dest)(e.error))?;
    Ok((true, id))
}

/// A temporary file in `dir`, created 0644 less the umask (tempfile's own default is 0600).
pub(super) fn temp_in(dir: &Path) -> Result<tempfile::NamedTempFile, OutputError> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(io_err(dir))
}

/// Write `data` to `path` through a temporary file in `dir` and a rename.
pub(super) fn write_atomic(dir: &Path, path: &Path, data: &[u8]) -> Result<(), OutputError> {
    let mut tmp = temp_in(dir)?;
    tmp.write_all(data).map_err(io_err(tmp.path()))?;
    tmp.as_file().sync_data().map_err(io_err(tmp.path()))?;
    tmp.persist(path).map_err(|e| io_err(path)(e.error))?;
    // The rename itself is durable once the directory is synced.
    fs::File::open(dir)?.sync_all()?;
    Ok(())
}
