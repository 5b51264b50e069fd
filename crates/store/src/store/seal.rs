//! Seals: a blob is never reused once its bytes changed.
//!
//! Output layouts hard-link store blobs (a layer is written to disk once), so an edit of a
//! layout's blob in place is an edit of the store's. Blobs are made read-only (0444), but that
//! stops neither root nor a tool that chmods first. So when a blob is committed, its inode's
//! identity and modification time are recorded in `seals/<hex>`: device, inode, size and mtime
//! to the nanosecond. Any write to the blob, through any name, moves its mtime. (Not ctime: every
//! hard link made or removed moves that, and layouts are made and deleted all the time.)
//! Before a blob is reused, one `stat` is compared with its seal:
//!
//! - it matches: the blob is as it was written;
//! - it differs (or there is no seal: a store from before seals, a copied cache, a blob put there
//!   by hand), the blob is hashed again: still its digest → sealed anew; not → removed, so the
//!   layer is built or the blob fetched again, and recorded for the build's report.
//!
//! A wheel file opened for its listing or its layer is a blob reused the same way: its seal is
//! compared with the file opened ([`Store::sealed_file`]) instead of hashing it once more.
//!
//! A seal also records the checks done on the blob's content while it held, one
//! `checked NAME` line each after the first ([`Store::note_check`]): a wheel's members against
//! its RECORD, for one. What such a check found depends only on the bytes, and the seal says the
//! bytes have not changed since, so it is not done again ([`Store::sealed_check`]). A blob
//! hashed anew gets a fresh seal without them: each check is then done once more.
//!
//! What this guards against is a mistake: an editor, `dd`, a script or a tool rewriting a
//! layout's blob in place. It does not stop someone who sets the mtime back on purpose (whoever
//! can write the store can rewrite its seals too: the store's permissions are that guard), nor
//! bit rot under an unchanged inode (the disk's or filesystem's checksums are for that).
//! `ocibuild cache verify` rehashes every blob regardless. The cost is one `stat` and one small read per blob
//! reused (BENCHMARKS.md).

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use fs_err as fs;

use super::Store;
use crate::digest::Digest;

/// The seal of a blob's inode: `v1 DEV INO SIZE MTIME.NS`.
fn seal_of(m: &std::fs::Metadata) -> String {
    format!(
        "v1 {} {} {} {}.{}\n",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec()
    )
}

fn seal_path(root: &Path, digest: &Digest) -> std::path::PathBuf {
    root.join("seals").join(digest.hex())
}

/// Puts `text` in place as `digest`'s seal file.
fn put(root: &Path, digest: &Digest, text: &str) {
    let Ok(mut tmp) = tempfile::Builder::new()
        .prefix("seal-")
        .tempfile_in(root.join("tmp"))
    else {
        return;
    };
    if io::Write::write_all(&mut tmp, text.as_bytes()).is_ok() {
        let _ = tmp.persist(seal_path(root, digest));
    }
}

/// Records the seal of a blob just put in place (or hashed again), with no check recorded.
/// Best effort: a seal that is missing or lost only means the blob is hashed once more before
/// it is next reused.
pub(super) fn write(root: &Path, digest: &Digest, m: &std::fs::Metadata) {
    put(root, digest, &seal_of(m));
}

/// `digest`'s seal file, when its first line is the seal of `m`, a blob's metadata.
fn read_matching(root: &Path, digest: &Digest, m: &std::fs::Metadata) -> Option<String> {
    let text = fs::read_to_string(seal_path(root, digest)).ok()?;
    (m.is_file() && text.split_inclusive('\n').next() == Some(seal_of(m).as_str())).then_some(text)
}

/// Whether `m`, a blob's metadata, is what `digest`'s seal recorded: the blob is as it was
/// when last hashed (or written).
pub(super) fn matches(root: &Path, digest: &Digest, m: &std::fs::Metadata) -> bool {
    read_matching(root, digest, m).is_some()
}

/// A check's line in a seal file.
fn check_line(check: &str) -> String {
    format!("checked {check}")
}

/// Whether `digest`'s seal matches `m` and records `check` (see the module doc).
pub(super) fn has_check(root: &Path, digest: &Digest, m: &std::fs::Metadata, check: &str) -> bool {
    let line = check_line(check);
    read_matching(root, digest, m).is_some_and(|t| t.lines().skip(1).any(|l| l == line))
}

/// Adds `check` to `digest`'s seal, if the seal still matches `m` (the metadata of the file the
/// check read). Best effort, as [`write`]: a check not recorded is only done again.
pub(super) fn add_check(root: &Path, digest: &Digest, m: &std::fs::Metadata, check: &str) {
    let line = check_line(check);
    let Some(mut text) = read_matching(root, digest, m) else {
        return;
    };
    if check.contains('\n') || text.lines().skip(1).any(|l| l == line) {
        return;
    }
    // The blob itself still the inode `m` describes, just before the seal is replaced: a blob
    // and seal removed meanwhile (found changed) do not get the seal back.
    let blob = root.join("blobs/sha256").join(digest.hex());
    if !fs::symlink_metadata(blob).is_ok_and(|now| seal_of(&now) == seal_of(m)) {
        return;
    }
    text.push_str(&line);
    text.push('\n');
    put(root, digest, &text);
}

/// The sha256 of the file at `path`.
fn hash_file(path: &Path) -> io::Result<Digest> {
    crate::digest::hash_file(path).map(|(d, _)| d)
}

/// Whether `digest`'s blob is present and intact (see the module doc). A blob that no longer
/// hashes to its name is removed, with its seal, and recorded in the store's repaired list.
pub(super) fn check(store: &Store, digest: &Digest) -> bool {
    let path = store.blob_path(digest);
    let Ok(m) = fs::symlink_metadata(&path) else {
        return false;
    };
    if !m.is_file() {
        return false;
    }
    if matches(store.root(), digest, &m) {
        return true;
    }
    let seal = seal_path(store.root(), digest);
    match hash_file(&path) {
        Ok(found) if found == *digest => {
            write(store.root(), digest, &m);
            true
        }
        Ok(_) => {
            // Only the inode that was hashed: a good copy renamed in meanwhile stays.
            if fs::symlink_metadata(&path).is_ok_and(|n| (n.dev(), n.ino()) == (m.dev(), m.ino())) {
                let _ = fs::remove_file(&path);
                let _ = fs::remove_file(&seal);
            }
            if let Ok(mut r) = store.repaired.lock() {
                r.push(*digest);
            }
            false
        }
        Err(_) => false,
    }
}

/// Rehashes `digest`'s blob whatever its seal says: `Ok(true)` intact (and sealed anew),
/// `Ok(false)` changed (and removed: only the inode that was hashed). Anything but a regular
/// file there is not a blob: `NotFound`, and left alone.
pub(super) fn rehash(store: &Store, digest: &Digest) -> io::Result<bool> {
    let path = store.blob_path(digest);
    let m = fs::symlink_metadata(&path)?;
    if !m.is_file() {
        return Err(io::Error::from(io::ErrorKind::NotFound));
    }
    if hash_file(&path)? == *digest {
        write(store.root(), digest, &m);
        return Ok(true);
    }
    if fs::symlink_metadata(&path).is_ok_and(|n| (n.dev(), n.ino()) == (m.dev(), m.ino())) {
        let _ = fs::remove_file(&path);
        let _ = fs::remove_file(seal_path(store.root(), digest));
    }
    Ok(false)
}
