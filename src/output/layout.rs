//! The OCI image layout directory writer.
//!
//! Order of work: claim the directory (create it, or check it is empty or a layout, and write
//! `oci-layout`), then the blobs (each copied to a temporary file in the layout, then renamed to
//! `blobs/sha256/<hex>`), and `index.json` last, through a temporary file and a rename. An
//! interrupted write therefore leaves at worst unreferenced blobs or a stray `.ocibuild-tmp-*`
//! file, never an index that names a blob the layout lacks.
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

use super::{io_err, OutputError};
use crate::digest::Digest;
use crate::image::{annotations, Descriptor, ImageRecord, Index};
use crate::json::to_canonical_vec;
use crate::store::Store;

/// Name prefix of the temporary files written inside a layout.
const TEMP_PREFIX: &str = ".ocibuild-tmp-";

const OCI_LAYOUT: &[u8] = br#"{"imageLayoutVersion":"1.0.0"}"#;

/// Read a layout's `index.json`.
pub fn read_index(dir: &Path) -> Result<Index, OutputError> {
    let path = dir.join("index.json");
    let data = fs::read(&path)?;
    serde_json::from_slice(&data).map_err(|source| OutputError::BadIndex { path, source })
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
    image: &ImageRecord,
    referrers: &[(Descriptor, Vec<(Digest, u64)>)],
) -> Result<(), OutputError> {
    claim_dir(dir)?;
    let blobs = dir.join("blobs").join("sha256");
    fs::create_dir_all(&blobs)?;

    let mut digests = image.blobs();
    for (_, extra) in referrers {
        digests.extend(extra.iter().copied());
    }
    for (digest, size) in digests {
        copy_blob(dir, store, &digest, size)?;
    }
    // The blobs' names are durable before index.json names them.
    fs::File::open(dir.join("blobs").join("sha256"))?.sync_all()?;

    let entry = image.index_entry();

    // Held from reading index.json to the rename of the new one.
    let _lock = lock_dir(dir)?;
    let existing = if dir.join("index.json").is_file() {
        Some(read_index(dir)?)
    } else {
        None
    };
    let mut index = existing.unwrap_or_else(|| Index::new(Vec::new()));
    index.manifests.retain(|d| {
        d.annotations.get(annotations::REF_NAME) != Some(&image.tag)
            && d.annotations.get(annotations::CONTAINERD_NAME) != Some(&image.full_name())
    });
    index.manifests.push(entry);
    for (r, _) in referrers {
        if !index.manifests.iter().any(|d| d.digest == r.digest) {
            index.manifests.push(r.clone());
        }
    }
    // Referrers of images no longer in the index go with them.
    let images: Vec<Digest> = index
        .manifests
        .iter()
        .filter(|d| d.artifact_type.is_none())
        .map(|d| d.digest)
        .collect();
    index.manifests.retain(|d| {
        d.artifact_type.is_none() || subject_of(dir, &d.digest).is_none_or(|s| images.contains(&s))
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

/// Copy one blob from the store unless the layout already holds a file of that name and size.
fn copy_blob(dir: &Path, store: &Store, digest: &Digest, size: u64) -> Result<(), OutputError> {
    let dest = dir.join("blobs").join("sha256").join(digest.hex());
    if fs::metadata(&dest)
        .map(|m| m.is_file() && m.len() == size)
        .unwrap_or(false)
    {
        return Ok(());
    }
    let src = store.blob_path(digest);
    if !src.is_file() {
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
        return fs::rename(&tmp_path, &dest).map_err(Into::into);
    }
    // Another filesystem: copy (copy_file_range, which may share extents), sync, rename.
    let tmp = temp_in(dir)?;
    fs::copy(&src, tmp.path())?;
    fs::File::open(tmp.path())?.sync_all()?;
    tmp.persist(&dest).map_err(|e| io_err(&dest)(e.error))?;
    Ok(())
}

fn temp_in(dir: &Path) -> Result<tempfile::NamedTempFile, OutputError> {
    tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
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
