//! Keeping a store sound: `cache verify` (every blob rehashed) and `cache prune` (what no build
//! can use removed: temporary files left by killed builds, cache entries that name a blob no
//! longer there, seals without a blob; and what cache repositories were seen to have
//! forgotten).

use std::io;
use std::path::Path;

use fs_err as fs;
use serde::Serialize;

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
    /// Layer-cache entries naming a missing blob, and seals of missing blobs.
    pub dangling_entries: u64,
    pub seals: u64,
    /// Marks of what cache repositories were seen to have (`remote/shared`), forgotten: the
    /// next build with a cache repository asks it again (and records what it lacks).
    pub shared_marks: u64,
}

fn blob_digests(store: &Store) -> Result<(Vec<Digest>, Vec<String>), StoreError> {
    let mut digests = Vec::new();
    let mut foreign = Vec::new();
    for e in fs::read_dir(store.root().join("blobs").join("sha256"))? {
        let name = e?.file_name().to_string_lossy().into_owned();
        match format!("sha256:{name}").parse::<Digest>() {
            Ok(d) => digests.push(d),
            Err(_) => foreign.push(name),
        }
    }
    digests.sort();
    foreign.sort();
    Ok((digests, foreign))
}

/// Layer-cache entries (`layers/*.json`) whose blob is missing: removed; how many.
fn drop_dangling(store: &Store) -> Result<u64, StoreError> {
    let mut n = 0;
    for e in fs::read_dir(store.root().join("layers"))? {
        let path = e?.path();
        let Some(key) = path.file_stem().and_then(|s| {
            format!("sha256:{}", s.to_string_lossy())
                .parse::<Digest>()
                .ok()
        }) else {
            continue;
        };
        let gone = match store.cached_layer(&key) {
            Ok(hit) => hit.is_none(),
            Err(_) => true,
        };
        if gone {
            fs::remove_file(&path)?;
            n += 1;
        }
    }
    Ok(n)
}

/// Rehashes every blob of `store`; removes the changed ones and the cache entries naming a
/// missing blob. Progress goes to `reporter` as one step, `cache verify`, of all the blobs' bytes.
pub fn verify(store: &Store, reporter: &dyn Reporter) -> Result<VerifyReport, StoreError> {
    const STEP: &str = "cache verify";
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

/// Prunes the store at `root` (see the module doc). Refused while a build has the store open.
pub fn prune(root: &Path) -> Result<PruneReport, StoreError> {
    for sub in ["blobs/sha256", "layers", "locks", "tmp", "seals"] {
        fs::create_dir_all(root.join(sub))?;
    }
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
        let path = e?.path();
        report.temporary_bytes += tree_size(&path);
        if fs::symlink_metadata(&path)?.is_dir() {
            fs::remove_dir_all(&path)?;
        } else {
            fs::remove_file(&path)?;
        }
        report.temporary += 1;
    }
    // A view: no seal checks, no lock of its own (this function holds the exclusive one).
    let store = Store::view(root.to_path_buf());
    report.dangling_entries = drop_dangling(&store)?;
    for e in fs::read_dir(root.join("seals"))? {
        let path = e?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if let Some(d) = name.and_then(|n| format!("sha256:{n}").parse::<Digest>().ok()) {
            if !store.blob_path(&d).is_file() {
                fs::remove_file(&path)?;
                report.seals += 1;
            }
        }
    }
    // Hints: counted and removed as far as they can be.
    let shared = root.join("remote").join("shared");
    if let Ok(repos) = fs::read_dir(&shared) {
        for repo in repos.flatten() {
            report.shared_marks += fs::read_dir(repo.path()).map_or(0, |d| d.count() as u64);
        }
        let _ = fs::remove_dir_all(&shared);
    }
    Ok(report)
}
