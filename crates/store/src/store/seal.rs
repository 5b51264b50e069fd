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

/// Records the seal of a blob just put in place. Best effort: a seal that is missing or lost
/// only means the blob is hashed once more before it is next reused.
pub(super) fn write(root: &Path, digest: &Digest, m: &std::fs::Metadata) {
    let Ok(mut tmp) = tempfile::Builder::new()
        .prefix("seal-")
        .tempfile_in(root.join("tmp"))
    else {
        return;
    };
    if io::Write::write_all(&mut tmp, seal_of(m).as_bytes()).is_ok() {
        let _ = tmp.persist(seal_path(root, digest));
    }
}

/// Whether `m`, a blob's metadata, is what `digest`'s seal recorded: the blob is as it was
/// when last hashed (or written).
pub(super) fn matches(root: &Path, digest: &Digest, m: &std::fs::Metadata) -> bool {
    m.is_file() && fs::read_to_string(seal_path(root, digest)).is_ok_and(|s| s == seal_of(m))
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
