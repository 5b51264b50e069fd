//! The OCI image layout directory writer.
//!
//! Order of work: blobs first (each copied to a temporary file in the layout, then renamed to
//! `blobs/sha256/<hex>`), `oci-layout`, and `index.json` last, through a temporary file and a
//! rename. An interrupted write therefore leaves at worst unreferenced blobs or a stray
//! `.ocibuild-tmp-*` file, never an index that names a blob the layout lacks.

use std::io::Write;
use std::path::Path;

use fs_err as fs;

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

/// Write `image` into the layout at `dir` (created if missing), tagging it `image.tag`. An existing
/// layout keeps its other images; an entry with the same tag is replaced.
pub fn write_layout(dir: &Path, store: &Store, image: &ImageRecord) -> Result<(), OutputError> {
    let existing = prepare_dir(dir)?;
    let blobs = dir.join("blobs").join("sha256");
    fs::create_dir_all(&blobs)?;

    let mut digests: Vec<(Digest, u64)> = image
        .layers
        .iter()
        .map(|l| (l.descriptor.digest, l.descriptor.size))
        .collect();
    digests.push((image.config.digest, image.config.size));
    digests.push((image.manifest.digest, image.manifest.size));
    for (digest, size) in digests {
        copy_blob(dir, store, &digest, size)?;
    }

    let layout_file = dir.join("oci-layout");
    if !layout_file.is_file() {
        write_atomic(dir, &layout_file, OCI_LAYOUT)?;
    }

    let mut entry: Descriptor = image.manifest.clone();
    entry
        .annotations
        .insert(annotations::REF_NAME.into(), image.tag.clone());
    entry
        .annotations
        .insert(annotations::CONTAINERD_NAME.into(), image.full_name());
    let mut index = existing.unwrap_or_else(|| Index::new(Vec::new()));
    index.manifests.retain(|d| {
        d.annotations.get(annotations::REF_NAME) != Some(&image.tag)
            && d.annotations.get(annotations::CONTAINERD_NAME) != Some(&image.full_name())
    });
    index.manifests.push(entry);
    index.manifests.sort_by(|a, b| {
        let key = |d: &Descriptor| (d.annotations.get(annotations::REF_NAME).cloned(), d.digest);
        key(a).cmp(&key(b))
    });
    let bytes = to_canonical_vec("index.json", &index)?;
    write_atomic(dir, &dir.join("index.json"), &bytes)
}

/// Create `dir` or check it is empty or a layout; returns the existing index, if any.
fn prepare_dir(dir: &Path) -> Result<Option<Index>, OutputError> {
    if !dir.exists() {
        fs::create_dir_all(dir)?;
        return Ok(None);
    }
    if dir.join("oci-layout").is_file() {
        return if dir.join("index.json").is_file() {
            read_index(dir).map(Some)
        } else {
            Ok(None)
        };
    }
    let mut it = fs::read_dir(dir)?;
    if it.next().is_some() {
        return Err(OutputError::NotALayout {
            path: dir.to_path_buf(),
        });
    }
    Ok(None)
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
    let tmp = temp_in(dir)?;
    // std::fs::copy uses copy_file_range, so same-filesystem copies may share extents (reflink).
    fs::copy(&src, tmp.path())?;
    tmp.persist(&dest).map_err(|e| io_err(&dest)(e.error))?;
    Ok(())
}

fn temp_in(dir: &Path) -> Result<tempfile::NamedTempFile, OutputError> {
    tempfile::Builder::new()
        .prefix(".ocibuild-tmp-")
        .tempfile_in(dir)
        .map_err(io_err(dir))
}

/// Write `data` to `path` through a temporary file in `dir` and a rename.
pub(super) fn write_atomic(dir: &Path, path: &Path, data: &[u8]) -> Result<(), OutputError> {
    let mut tmp = temp_in(dir)?;
    tmp.write_all(data).map_err(io_err(tmp.path()))?;
    tmp.as_file().sync_data().map_err(io_err(tmp.path()))?;
    tmp.persist(path).map_err(|e| io_err(path)(e.error))?;
    Ok(())
}
