//! `oci-archive` and `docker-archive` tar writers, built on the deterministic [`TarWriter`]:
//! entries sorted by name, mtime = the image's SOURCE_DATE_EPOCH, owner 0:0. The archive is
//! written to a temporary file beside the destination and renamed into place when complete.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Read};
use std::path::Path;

use serde::Serialize;

use super::{io_err, OutputError};
use crate::digest::{Digest, HashingReader};
use crate::image::{ImageRecord, Index};
use crate::json::to_canonical_vec;
use crate::layer::TarWriter;
use crate::store::Store;

/// One member of an archive, in name order.
enum Member {
    Bytes(Vec<u8>),
    /// A store blob copied as is.
    Blob(Digest, u64),
    /// A store layer blob, decompressed; verified against its diff_id while streaming.
    Layer {
        digest: Digest,
        media_type: String,
        diff_id: Digest,
        size: Option<u64>,
    },
}

/// Write an OCI layout holding only `image`, as a tar.
pub(super) fn write_oci_archive(
    file: &Path,
    store: &Store,
    image: &ImageRecord,
) -> Result<(), OutputError> {
    let mut members: BTreeMap<String, Member> = BTreeMap::new();
    let blobs = image.blobs();
    for (d, size) in blobs {
        members.insert(format!("blobs/sha256/{}", d.hex()), Member::Blob(d, size));
    }
    let entry = image.index_entry();
    members.insert(
        "index.json".into(),
        Member::Bytes(to_canonical_vec("index.json", &Index::new(vec![entry]))?),
    );
    members.insert(
        "oci-layout".into(),
        Member::Bytes(br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec()),
    );
    write_archive(
        file,
        store,
        image.epoch,
        &["blobs/", "blobs/sha256/"],
        members,
    )
}

#[derive(Serialize)]
struct DockerManifest {
    #[serde(rename = "Config")]
    config: String,
    #[serde(rename = "RepoTags")]
    repo_tags: Vec<String>,
    #[serde(rename = "Layers")]
    layers: Vec<String>,
}

/// Write a `docker save` style archive: `manifest.json`, the config as `<hex>.json`, and each
/// layer uncompressed as `<diff_id hex>.tar` (the classic format every docker and podman loads).
pub(super) fn write_docker_archive(
    file: &Path,
    store: &Store,
    image: &ImageRecord,
) -> Result<(), OutputError> {
    let mut members: BTreeMap<String, Member> = BTreeMap::new();
    let config_name = format!("{}.json", image.config.digest.hex());
    members.insert(
        config_name.clone(),
        Member::Blob(image.config.digest, image.config.size),
    );
    let mut layer_names = Vec::new();
    for l in &image.layers {
        let name = format!("{}.tar", l.diff_id.hex());
        layer_names.push(name.clone());
        members.insert(
            name,
            Member::Layer {
                digest: l.descriptor.digest,
                media_type: l.descriptor.media_type.clone(),
                diff_id: l.diff_id,
                size: l.uncompressed_size,
            },
        );
    }
    let manifest = [DockerManifest {
        config: config_name,
        repo_tags: vec![image.full_name()],
        layers: layer_names,
    }];
    members.insert(
        "manifest.json".into(),
        Member::Bytes(to_canonical_vec("docker manifest.json", &manifest)?),
    );
    write_archive(file, store, image.epoch, &[], members)
}

/// A layer blob's uncompressed stream.
fn decoded(store: &Store, digest: &Digest, media_type: &str) -> Result<Box<dyn Read>, OutputError> {
    let blob = io::BufReader::with_capacity(256 * 1024, store.open_blob(digest)?);
    Ok(if media_type.ends_with("+gzip") {
        Box::new(flate2::read::MultiGzDecoder::new(blob))
    } else if media_type.ends_with("+zstd") {
        Box::new(
            zstd::stream::read::Decoder::with_buffer(blob)
                .map_err(io_err(store.blob_path(digest)))?,
        )
    } else {
        Box::new(blob)
    })
}

fn write_archive(
    file: &Path,
    store: &Store,
    epoch: u64,
    dirs: &[&str],
    members: BTreeMap<String, Member>,
) -> Result<(), OutputError> {
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    super::dest::check_file(file)?;
    fs_err::create_dir_all(&parent)?;
    let tmp = super::layout::temp_in(&parent)?;
    let out = BufWriter::with_capacity(256 * 1024, tmp.reopen().map_err(io_err(tmp.path()))?);
    let mut tar = TarWriter::new(out, epoch);
    for d in dirs {
        tar.append_dir(d, 0o755, 0, 0)?;
    }
    for (name, member) in members {
        match member {
            Member::Bytes(b) => {
                tar.append_file(&name, 0o644, 0, 0, b.len() as u64, &mut b.as_slice())?;
            }
            Member::Blob(d, size) => {
                let mut f = store.open_blob(&d)?;
                tar.append_file(&name, 0o644, 0, 0, size, &mut f)?;
            }
            Member::Layer {
                digest,
                media_type,
                diff_id,
                size,
            } => {
                // A base layer's uncompressed size is not known until it is decompressed once.
                let size = match size {
                    Some(n) => n,
                    None => io::copy(&mut decoded(store, &digest, &media_type)?, &mut io::sink())
                        .map_err(io_err(store.blob_path(&digest)))?,
                };
                let mut r = HashingReader::new(decoded(store, &digest, &media_type)?);
                tar.append_file(&name, 0o644, 0, 0, size, &mut r)?;
                let (_, found, _) = r.finish();
                if found != diff_id {
                    return Err(OutputError::DiffIdMismatch {
                        digest,
                        expected: diff_id,
                        found,
                    });
                }
            }
        }
    }
    let out = tar.finish()?;
    let f = out
        .into_inner()
        .map_err(|e| io_err(tmp.path())(e.into_error()))?;
    f.sync_all().map_err(io_err(tmp.path()))?;
    tmp.persist(file).map_err(|e| io_err(file)(e.error))?;
    Ok(())
}
