//! The image's file system ([`Listing`]) as ocibuild knows it: each layer's paths (and link targets), read
//! once per layer digest from the store's blob and cached (`meta/`), stacked in layer order
//! with whiteouts applied, and whether a path resolves in it (links followed). Only blobs the
//! store has are read: nothing is downloaded for it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::SystemError;
use crate::digest::Digest;
use crate::layer;
use crate::rootfs::listing::{normalize, DirMeta, Listing};
use crate::store::Store;

/// One layer's entries: normalized path (`usr/bin/sh`) → link target for a symlink, `None`
/// for anything else; whiteouts as tar names them (`usr/.wh.x`, `dir/.wh..wh..opq`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct LayerListing {
    entries: BTreeMap<String, Option<String>>,
    /// The directories among `entries`, with their mode and owner.
    dirs: BTreeMap<String, DirMeta>,
    whiteouts: Vec<String>,
}

/// The listing of the image made of `layers` (digest, media type; lowest first), or `None`
/// when a blob is not in the store (a shallow base, a lazy hit from a cache repository).
pub fn image_listing(
    store: &Store,
    layers: &[(Digest, String)],
) -> Result<Option<Listing>, SystemError> {
    let mut out = Listing::default();
    for (digest, media_type) in layers {
        if !store.has_blob(digest) || store.is_remote_blob(digest) {
            return Ok(None);
        }
        let l = layer_listing(store, digest, media_type)?;
        for w in &l.whiteouts {
            let (dir, name) = w.rsplit_once('/').unwrap_or(("", w.as_str()));
            if name == ".wh..wh..opq" {
                out.clear_under(dir);
            } else if let Some(gone) = name.strip_prefix(".wh.") {
                out.remove(&if dir.is_empty() {
                    gone.to_string()
                } else {
                    format!("{dir}/{gone}")
                });
            }
        }
        out.extend(l.entries);
        out.extend_dirs(l.dirs);
    }
    Ok(Some(out))
}

fn layer_listing(
    store: &Store,
    digest: &Digest,
    media_type: &str,
) -> Result<LayerListing, SystemError> {
    // Version 2: with the directories' modes and owners.
    let key = Digest::of(format!("layer-listing/2 {digest}").as_bytes());
    if let Some(bytes) = store.meta(&key)? {
        if let Ok(l) = serde_json::from_slice::<LayerListing>(&bytes) {
            return Ok(l);
        }
    }
    let bad = |source: std::io::Error| SystemError::BuiltLayer {
        digest: *digest,
        source,
    };
    let f = store.open_blob(digest)?;
    let r = layer::decompressor(media_type, std::io::BufReader::new(f)).map_err(bad)?;
    let mut out = LayerListing::default();
    let mut archive = crate::tarbound::archive(r);
    for entry in archive.entries().map_err(bad)? {
        let entry = entry.map_err(bad)?;
        let path = normalize(&String::from_utf8_lossy(&entry.path_bytes()));
        if path.is_empty() {
            continue;
        }
        let file = path.rsplit('/').next().unwrap_or(&path);
        if file.starts_with(".wh.") {
            out.whiteouts.push(path);
            continue;
        }
        let target = (entry.header().entry_type() == tar::EntryType::Symlink)
            .then(|| {
                entry
                    .link_name_bytes()
                    .map(|t| String::from_utf8_lossy(&t).into_owned())
            })
            .flatten();
        let h = entry.header();
        if h.entry_type() == tar::EntryType::Directory {
            let meta = DirMeta {
                mode: h.mode().map_err(bad)? & 0o7777,
                uid: h.uid().map_err(bad)?.try_into().unwrap_or(u32::MAX),
                gid: h.gid().map_err(bad)?.try_into().unwrap_or(u32::MAX),
            };
            out.dirs.insert(path.clone(), meta);
        } else {
            out.dirs.remove(&path);
        }
        out.entries.insert(path, target);
    }
    let bytes = serde_json::to_vec(&out).map_err(|e| SystemError::Python {
        problem: format!("caching a layer's listing: {e}"),
    })?;
    store.put_meta(&key, &bytes)?;
    Ok(out)
}
