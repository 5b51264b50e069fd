//! Keeping a store sound: `cache verify` (every blob rehashed) and `cache prune` (what no build
//! can use removed: temporary files left by killed builds, cache entries that name a blob no
//! longer there, seals without a blob; and what cache repositories were seen to have
//! forgotten).

use std::io;
use std::path::Path;

use fs_err as fs;
use serde::Serialize;

use super::root::{hex_name, is_own_temp};
use super::{seal, Store, StoreError};
use crate::digest::Digest;
use crate::progress::Reporter;

/// Every open [`Store`] holds this lock (`locks/store.lock`) shared; `cache prune` takes it
/// exclusively, so it never removes a temporary file a running build is writing.
pub(super) const STORE_LOCK: &str = "store.lock";

/// What `cache verify` found.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// Blobs rehashed, and their bytes.
    pub blobs: u64,
    pub bytes: u64,
    /// Blobs whose bytes no longer hashed to their name: removed (built or fetched again when
    /// next needed).
    pub changed: Vec<Digest>,
    /// Files in `blobs/sha256` whose name is not a digest: left alone, listed.
    pub foreign: Vec<String>,
    /// Layer-cache entries naming a blob the store no longer has: removed.
    pub dangling_entries: u64,
}

/// What `cache prune` removed.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PruneReport {
    /// Entries of `tmp/` (files and directories left by killed builds) and their bytes.
    pub temporary: u64,
    pub temporary_bytes: u64,
    /// Entries of `tmp/` not named as the store names its temporary files: left alone, listed.
    pub foreign_temporary: Vec<String>,
    /// Layer-cache entries naming a missing blob, and seals of missing blobs.
    pub dangling_entries: u64,
    pub seals: u64,
    /// Marks of what cache repositories were seen to have (`remote/shared`), forgotten: the
    /// next build with a cache repository asks it again (and records what it lacks).
    pub shared_marks: u64,
}

/// The store's own folders that `cache ACTION` removes from: real directories, or an error
/// (nothing is removed through a symlink to somewhere else).
fn check_folders(root: &Path, subs: &[&str], action: &'static str) -> Result<(), StoreError> {
    for sub in subs {
        let path = root.join(sub);
        let m = fs::symlink_metadata(&path)?;
        if !m.is_dir() {
            return Err(StoreError::NotAFolder {
                path,
                kind: crate::bounded::kind_of(m.file_type()),
                action,
            });
        }
    }
    Ok(())
}

/// The blobs (regular files named by their digest) and, listed apart, anything else in
/// `blobs/sha256`.
fn blob_digests(store: &Store) -> Result<(Vec<Digest>, Vec<String>), StoreError> {
    let mut digests = Vec::new();
    let mut foreign = Vec::new();
    for e in fs::read_dir(store.root().join("blobs").join("sha256"))? {
        let e = e?;
        let name = e.file_name();
        match hex_name(&name, "").filter(|_| e.file_type().is_ok_and(|t| t.is_file())) {
            Some(d) => digests.push(d),
            None => foreign.push(name.to_string_lossy().into_owned()),
        }
    }
    digests.sort();
    foreign.sort();
    Ok((digests, foreign))
}

/// Layer-cache entries (`layers/<hex>.json`, regular files) whose blob is missing: removed;
/// how many. Any other name there is not the store's, and left alone.
fn drop_dangling(store: &Store) -> Result<u64, StoreError> {
    let mut n = 0;
    for e in fs::read_dir(store.root().join("layers"))? {
        let e = e?;
        let Some(key) = hex_name(&e.file_name(), ".json") else {
            continue;
        };
        if !e.file_type()?.is_file() {
            continue;
        }
        let gone = match store.cached_layer(&key) {
            Ok(hit) => hit.is_none(),
            Err(_) => true,
        };
        if gone {
            fs::remove_file(e.path())?;
            n += 1;
        }
    }
    Ok(n)
}

/// Rehashes every blob of `store`; removes the changed ones and the cache entries naming a
/// missing blob. Progress goes to `reporter` as one step, `cache verify`, of all the blobs' bytes.
pub fn verify(store: &Store, reporter: &dyn Reporter) -> Result<VerifyReport, StoreError> {
    const STEP: &str = "cache verify";
    check_folders(store.root(), &["blobs", "blobs/sha256", "layers"], "verify")?;
    let (digests, foreign) = blob_digests(store)?;
    let mut report = VerifyReport {
        foreign,
        ..VerifyReport::default()
    };
    let sizes: Vec<u64> = digests
        .iter()
        .map(|d| {
            fs::metadata(store.blob_path(d))
                .map(|m| m.len())
                .unwrap_or(0)
        })
        .collect();
    reporter.layer_started(STEP, sizes.iter().sum());
    for (d, size) in digests.into_iter().zip(sizes) {
        match seal::rehash(store, &d) {
            Ok(true) => {}
            Ok(false) => report.changed.push(d),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e.into()),
        }
        report.blobs += 1;
        report.bytes += size;
        reporter.layer_progress(STEP, size);
    }
    reporter.layer_finished(STEP, false);
    report.dangling_entries = drop_dangling(store)?;
    Ok(report)
}

fn tree_size(path: &Path) -> u64 {
    let Ok(m) = fs::symlink_metadata(path) else {
        return 0;
    };
    if !m.is_dir() {
        return m.len();
    }
    fs::read_dir(path)
        .map(|rd| rd.flatten().map(|e| tree_size(&e.path())).sum())
        .unwrap_or(0)
}

/// Prunes the store at `root` (see the module doc). Refused while a build has the store open,
/// and for a directory that is not a store ([`super::root::prepare`]). Only what the store names
/// its own way is removed: its temporary names in `tmp/`, `<hex>.json` entries, `<hex>` seals,
/// and the marks under `remote/shared/<id>/`.
pub fn prune(root: &Path) -> Result<PruneReport, StoreError> {
    super::root::prepare(root)?;
    for sub in ["blobs/sha256", "layers", "locks", "tmp", "seals"] {
        fs::create_dir_all(root.join(sub))?;
    }
    check_folders(
        root,
        &["blobs", "blobs/sha256", "layers", "locks", "tmp", "seals"],
        "prune",
    )?;
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join("locks").join(STORE_LOCK))?;
    match lock.file().try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(StoreError::InUse {
                root: root.to_path_buf(),
            })
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
    }
    let mut report = PruneReport::default();
    for e in fs::read_dir(root.join("tmp"))? {
        let e = e?;
        let name = e.file_name();
        let Some(own) = name.to_str().filter(|n| is_own_temp(n)) else {
            report
                .foreign_temporary
                .push(name.to_string_lossy().into_owned());
            continue;
        };
        let path = root.join("tmp").join(own);
        report.temporary_bytes += tree_size(&path);
        if e.file_type()?.is_dir() {
            fs::remove_dir_all(&path)?;
        } else {
            fs::remove_file(&path)?;
        }
        report.temporary += 1;
    }
    report.foreign_temporary.sort();
    // A view: no seal checks, no lock of its own (this function holds the exclusive one).
    let store = Store::view(root.to_path_buf());
    report.dangling_entries = drop_dangling(&store)?;
    for e in fs::read_dir(root.join("seals"))? {
        let e = e?;
        let Some(d) = hex_name(&e.file_name(), "") else {
            continue;
        };
        if e.file_type()?.is_file() && !store.blob_path(&d).is_file() {
            fs::remove_file(e.path())?;
            report.seals += 1;
        }
    }
    report.shared_marks = forget_shared(root);
    Ok(report)
}

/// Removes the marks of what cache repositories have (`remote/shared/<16 hex>/<kind>-<hex>`,
/// see [`super::remote`]), as far as it can (they are hints); how many. Nothing is followed
/// through a symlink, and no other name is removed.
fn forget_shared(root: &Path) -> u64 {
    let real_dir = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    let shared = root.join("remote").join("shared");
    if !real_dir(&root.join("remote")) || !real_dir(&shared) {
        return 0;
    }
    let Ok(repos) = fs::read_dir(&shared) else {
        return 0;
    };
    let mut n = 0;
    for repo in repos.flatten() {
        let id = repo.file_name();
        let is_id = id
            .to_str()
            .is_some_and(|s| s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit()));
        if !is_id || !repo.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(marks) = fs::read_dir(repo.path()) else {
            continue;
        };
        for mark in marks.flatten() {
            let name = mark.file_name();
            let is_mark = name.to_str().is_some_and(|s| {
                ["layer-", "fact-"].iter().any(|k| {
                    s.strip_prefix(k)
                        .is_some_and(|h| hex_name(h.as_ref(), "").is_some())
                })
            });
            if is_mark
                && mark.file_type().is_ok_and(|t| t.is_file())
                && fs::remove_file(mark.path()).is_ok()
            {
                n += 1;
            }
        }
        let _ = fs::remove_dir(repo.path());
    }
    n
}
