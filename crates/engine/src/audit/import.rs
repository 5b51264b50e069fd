//! An `oci-archive` or `docker-archive` tar copied into a store as an OCI image, so that `push`
//! sends it as it sends a layout.
//!
//! - An oci-archive's blobs are copied as they are, each checked against its digest; the image
//!   is index.json's one image (an image index stays an index): digests unchanged.
//! - A docker-archive (`docker save`, `podman save`) holds no manifest: one is written, OCI
//!   (`application/vnd.oci.image.manifest.v1+json`), naming the config as it is and each layer
//!   blob as it is stored (no recompression): an uncompressed layer is
//!   `application/vnd.oci.image.layer.v1.tar` (its digest is its diff_id), a gzip or zstd one
//!   `…tar+gzip` / `…tar+zstd`. The config and layer digests are the archive's; the manifest
//!   digest is new (as `skopeo copy docker-archive:… docker://…` makes one). Only one-image
//!   archives are taken.

use std::io::{BufRead, BufReader};
use std::path::Path;

use super::AuditError;
use crate::digest::Digest;
use crate::image::source::parse_json;
use crate::image::{Descriptor, Manifest, MEDIA_TYPE_CONFIG, MEDIA_TYPE_MANIFEST};
use crate::imageref::ImageRef;
use crate::output::source::{Archive, DockerEntry};
use crate::store::Store;

/// An archive's image in a temporary store: the store, the image's descriptor (a manifest
/// or an index), and the directory that holds the store (removed when dropped).
pub struct Imported {
    pub store: Store,
    pub image: Descriptor,
    _dir: tempfile::TempDir,
}

/// Copy the archive `spec` names (an `oci-archive:` or `docker-archive:`) into a new
/// temporary store under `tmp_parent` (the system's temporary directory when `None`).
pub fn import_archive(spec: &ImageRef, tmp_parent: Option<&Path>) -> Result<Imported, AuditError> {
    let name = spec.to_string();
    let dir = match tmp_parent {
        Some(p) => tempfile::Builder::new()
            .prefix(".ocibuild-import-")
            .tempdir_in(p)?,
        None => tempfile::Builder::new()
            .prefix("ocibuild-import-")
            .tempdir()?,
    };
    let store = Store::open(dir.path())?;
    let image = match spec {
        ImageRef::OciArchive(path) => oci(&name, path, &store)?,
        ImageRef::DockerArchive(path) => docker(&name, path, &store)?,
        _ => {
            return Err(AuditError::Bad {
                source_name: name,
                problem: "not an archive".into(),
            })
        }
    };
    Ok(Imported {
        store,
        image,
        _dir: dir,
    })
}

/// A member copied into `store`, checked against `expected` when given.
fn copy_member(
    blobs: &Archive,
    member: &str,
    store: &Store,
    expected: Option<Digest>,
) -> Result<(Digest, u64), AuditError> {
    let mut r = blobs.open_member(member)?;
    let mut w = store.blob_writer()?;
    std::io::copy(&mut r, &mut w)?;
    let size = w.bytes_written();
    Ok((w.commit(expected)?, size))
}

fn oci(name: &str, path: &Path, store: &Store) -> Result<Descriptor, AuditError> {
    let blobs = Archive::open(path)?;
    for member in &blobs.names() {
        let Some(hex) = member.strip_prefix("blobs/sha256/") else {
            continue;
        };
        let Ok(digest) = format!("sha256:{hex}").parse::<Digest>() else {
            continue;
        };
        copy_member(&blobs, member, store, Some(digest))?;
    }
    let index: crate::image::read::ReadIndex =
        parse_json(name, "index.json", &blobs.read_member("index.json")?)?;
    let entry = crate::output::source::select_entry(name, &index, None)?;
    let digest = crate::output::source::entry_digest(name, &entry)?;
    if !store.has_blob(&digest) {
        return Err(AuditError::MissingBlob {
            source_name: name.to_string(),
            digest,
        });
    }
    let size = fs_err::metadata(store.blob_path(&digest))?.len();
    Ok(Descriptor::new(&entry.media_type, digest, size))
}

fn docker(name: &str, path: &Path, store: &Store) -> Result<Descriptor, AuditError> {
    let blobs = Archive::open(path)?;
    let entries: Vec<DockerEntry> =
        parse_json(name, "manifest.json", &blobs.read_member("manifest.json")?)?;
    let [entry] = entries.as_slice() else {
        return Err(AuditError::Bad {
            source_name: name.to_string(),
            problem: format!(
                "manifest.json lists {} images; only one-image archives can be pushed",
                entries.len()
            ),
        });
    };
    let (config, size) = copy_member(&blobs, &entry.config, store, None)?;
    let config = Descriptor::new(MEDIA_TYPE_CONFIG, config, size);
    let mut layers = Vec::new();
    for member in &entry.layers {
        let (digest, size) = copy_member(&blobs, member, store, None)?;
        layers.push(Descriptor::new(layer_type(store, &digest)?, digest, size));
    }
    let manifest = Manifest {
        schema_version: 2,
        media_type: MEDIA_TYPE_MANIFEST.into(),
        artifact_type: None,
        config,
        layers,
        subject: None,
        annotations: Default::default(),
    };
    let bytes =
        crate::json::to_canonical_vec("manifest", &manifest).map_err(|_| AuditError::Bad {
            source_name: name.to_string(),
            problem: "its manifest cannot be written as JSON".into(),
        })?;
    let digest = store.put_bytes(&bytes)?;
    Ok(Descriptor::new(
        MEDIA_TYPE_MANIFEST,
        digest,
        bytes.len() as u64,
    ))
}

/// A stored layer's media type, from its first bytes.
fn layer_type(store: &Store, digest: &Digest) -> Result<&'static str, AuditError> {
    let mut r = BufReader::new(store.open_blob(digest)?);
    let head = r.fill_buf()?;
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        "application/vnd.oci.image.layer.v1.tar+gzip"
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        "application/vnd.oci.image.layer.v1.tar+zstd"
    } else {
        "application/vnd.oci.image.layer.v1.tar"
    })
}
