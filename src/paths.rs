//! The `paths` layer: a recipe's `[[path]]` entries (directories and symlinks with their mode
//! and owner) written by the layer writer, so the contract's rules apply: sorted, parents
//! first, the ancestors nobody declared synthesized as 0755 0:0, times at the epoch. Cached by
//! its entries, the compressor and the epoch.

use serde_json::json;

use crate::digest::Digest;
use crate::json::JsonError;
use crate::layer::{self, Compression, Entry, EntryKind, LayerError, LayerOptions, StatKey};
use crate::recipe::{PathEntry, PathKind};
use crate::store::{CachedLayer, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    #[error("the `paths` layer")]
    Layer(#[source] LayerError),
    #[error("the `paths` layer")]
    Store(#[source] StoreError),
    #[error("the `paths` layer's cache key")]
    Key(#[source] JsonError),
}

/// The `paths` layer of `paths` in `store` (from the layer cache unless `no_cache`), and
/// whether it came from the cache.
pub fn layer(
    paths: &[PathEntry],
    opts: &LayerOptions,
    no_cache: bool,
    store: &Store,
) -> Result<(CachedLayer, bool), PathsError> {
    let key = key(paths, opts.compression, opts.epoch)?;
    let _guard = store.lock(&key.hex()).map_err(PathsError::Store)?;
    if !no_cache {
        if let Some(hit) = store.cached_layer(&key).map_err(PathsError::Store)? {
            return Ok((hit, true));
        }
    }
    let entries = entries(paths);
    let mut w = store.prehashed_blob_writer().map_err(PathsError::Store)?;
    // Directories and symlinks only: no entry has content to ask for.
    let stats = layer::write_layer_with(&entries, opts, &mut w, &|_| {}, &mut |_, _, _| Ok(()))
        .map_err(PathsError::Layer)?;
    w.commit(Some(stats.digest)).map_err(PathsError::Store)?;
    let cached = CachedLayer::written(opts.compression, &stats);
    store
        .put_cached_layer(&key, &cached)
        .map_err(PathsError::Store)?;
    Ok((cached, false))
}

fn key(paths: &[PathEntry], compression: Compression, epoch: u64) -> Result<Digest, PathsError> {
    let declared: Vec<_> = paths.iter().map(crate::recipe::path_identity).collect();
    layer::cache_key(
        "paths layer",
        "paths",
        compression,
        epoch,
        [("paths", json!(declared))],
    )
    .map_err(PathsError::Key)
}

/// The layer's entries: each declared path, and each ancestor no entry declares as a directory
/// 0755 0:0; sorted by path bytes (a parent's `dir/` sorts before its children).
fn entries(paths: &[PathEntry]) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let declared = |p: &str| paths.iter().any(|e| e.path == p);
    let mut have = std::collections::BTreeSet::new();
    for e in paths {
        let rel = e.path.trim_start_matches('/');
        let mut at = 0;
        while let Some(i) = rel[at..].find('/') {
            let parent = &rel[..at + i];
            at += i + 1;
            if !declared(&format!("/{parent}")) && have.insert(parent.to_string()) {
                out.push(dir(format!("{parent}/"), 0o755, 0, 0));
            }
        }
        have.insert(rel.to_string());
        out.push(match &e.kind {
            PathKind::Dir => dir(format!("{rel}/"), e.mode, e.uid, e.gid),
            PathKind::Symlink { target } => Entry {
                path: rel.to_string(),
                kind: EntryKind::Symlink {
                    target: target.clone(),
                },
                mode: 0o777,
                uid: e.uid,
                gid: e.gid,
                stat: StatKey::default(),
            },
        });
    }
    out.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    out
}

fn dir(path: String, mode: u32, uid: u32, gid: u32) -> Entry {
    Entry {
        path,
        kind: EntryKind::Dir,
        mode,
        uid,
        gid,
        stat: StatKey::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_are_synthesized_once_and_declared_ones_keep_their_mode() {
        let p = |path: &str, kind, mode, uid| PathEntry {
            path: path.into(),
            kind,
            mode,
            uid,
            gid: uid,
        };
        let paths = [
            p("/srv/data/cache", PathKind::Dir, 0o700, 1000),
            p("/srv", PathKind::Dir, 0o750, 0),
            p(
                "/usr/local/bin/py",
                PathKind::Symlink {
                    target: "/usr/bin/python3".into(),
                },
                0o777,
                0,
            ),
        ];
        let got: Vec<String> = entries(&paths)
            .iter()
            .map(|e| format!("{} {:o} {}", e.path, e.mode, e.uid))
            .collect();
        assert_eq!(
            got,
            [
                "srv/ 750 0",
                "srv/data/ 755 0",
                "srv/data/cache/ 700 1000",
                "usr/ 755 0",
                "usr/local/ 755 0",
                "usr/local/bin/ 755 0",
                "usr/local/bin/py 777 0",
            ]
        );
    }
}
