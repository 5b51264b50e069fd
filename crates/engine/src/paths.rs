//! The `paths` layer: a recipe's `[[path]]` entries (directories and symlinks with their mode
//! and owner) written by the layer writer, against the layers below it: an ancestor no entry
//! declares is written as the lower layers have it (a directory keeps its mode and owner), or
//! made 0755 0:0 when they have none; an entry or ancestor that a lower layer has as a symlink
//! or a file is an error (the layer would replace `bin -> usr/bin` with a directory, or a file
//! with a directory), as is a symlink declared over anything. Cached by its entries, the
//! compressor and the epoch.

use std::collections::BTreeSet;

use serde_json::json;

use crate::digest::Digest;
use crate::json::JsonError;
use crate::layer::{self, Entry, EntryKind, LayerError, LayerOptions, StatKey};
use crate::recipe::{PathEntry, PathKind};
use crate::rootfs::listing::{DirMeta, Kind, Listing};
use crate::store::{CachedLayer, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    #[error("{at}: [[path]] `{path}`: {problem}")]
    Conflict {
        at: String,
        path: String,
        problem: String,
    },
    #[error(
        "[[path]]: the layers below the `paths` layer are not all in the store (a layer taken \
         lazily from a cache repository): build with a local output, or without --cache-repo"
    )]
    LowerUnknown,
    #[error("the `paths` layer")]
    Layer(#[source] LayerError),
    #[error("the `paths` layer")]
    Store(#[source] StoreError),
    #[error("the `paths` layer's cache key")]
    Key(#[source] JsonError),
}

/// The `paths` layer of `paths` over the image `lower` (the listing of every layer below it)
/// in `store` (from the layer cache unless `no_cache`), and whether it came from the cache.
pub fn layer(
    paths: &[PathEntry],
    lower: &Listing,
    opts: &LayerOptions,
    no_cache: bool,
    store: &Store,
) -> Result<(CachedLayer, bool), PathsError> {
    let entries = entries(paths, lower)?;
    let key = key(&entries, opts)?;
    let _guard = store.lock(&key.hex()).map_err(PathsError::Store)?;
    if !no_cache {
        if let Some(hit) = store.cached_layer(&key).map_err(PathsError::Store)? {
            return Ok((hit, true));
        }
    }
    let mut w = store.prehashed_blob_writer().map_err(PathsError::Store)?;
    // Directories and symlinks only: no entry has content to ask for.
    let stats = layer::write_layer_with(&entries, opts, &mut w, &|_| {}, &mut |_, _, _| Ok(()))
        .map_err(PathsError::Layer)?;
    w.commit(Some(stats.digest)).map_err(PathsError::Store)?;
    let cached = stats.cached(opts.compression);
    store
        .put_cached_layer(&key, &cached)
        .map_err(PathsError::Store)?;
    Ok((cached, false))
}

/// The key: the layer's entries (sorted, so the recipe's order does not matter), the
/// compressor and the epoch.
fn key(entries: &[Entry], opts: &LayerOptions) -> Result<Digest, PathsError> {
    let listed: Vec<_> = entries
        .iter()
        .map(|e| {
            let target = match &e.kind {
                EntryKind::Symlink { target } => Some(target.as_str()),
                _ => None,
            };
            json!({"path": e.path, "symlink": target, "mode": e.mode, "uid": e.uid, "gid": e.gid})
        })
        .collect();
    layer::cache_key(
        "paths layer",
        "paths",
        opts.compression,
        opts.epoch,
        [("entries", json!(listed))],
    )
    .map_err(PathsError::Key)
}

/// The layer's entries, sorted by path bytes (a parent's `dir/` before its children).
fn entries(paths: &[PathEntry], lower: &Listing) -> Result<Vec<Entry>, PathsError> {
    let declared = |p: &str| paths.iter().any(|e| e.path.trim_start_matches('/') == p);
    let conflict = |e: &PathEntry, problem: String| PathsError::Conflict {
        at: e.at.clone(),
        path: e.path.clone(),
        problem,
    };
    let mut out: Vec<Entry> = Vec::new();
    let mut have = BTreeSet::new();
    for e in paths {
        let rel = e.path.trim_start_matches('/');
        let mut at = 0;
        while let Some(i) = rel[at..].find('/') {
            let parent = &rel[..at + i];
            at += i + 1;
            if declared(parent) || !have.insert(parent.to_string()) {
                continue;
            }
            match lower.kind(parent) {
                Kind::Missing => out.push(dir(format!("{parent}/"), DirMeta::NEW)),
                Kind::Dir(meta) => out.push(dir(format!("{parent}/"), meta)),
                Kind::Symlink(t) => {
                    return Err(conflict(
                        e,
                        format!(
                            "it is beneath /{parent}, a symlink to `{t}` in a layer below: \
                             declare the path the link leads to"
                        ),
                    ))
                }
                Kind::Other => {
                    return Err(conflict(
                        e,
                        format!("it is beneath /{parent}, a file in a layer below"),
                    ))
                }
            }
        }
        match (&e.kind, lower.kind(rel)) {
            (PathKind::Dir, Kind::Missing | Kind::Dir(_)) => {}
            (PathKind::Dir, Kind::Symlink(t)) => {
                return Err(conflict(
                    e,
                    format!("a layer below has it as a symlink to `{t}`: a directory here would replace the link"),
                ))
            }
            (PathKind::Dir, Kind::Other) => {
                return Err(conflict(
                    e,
                    "a layer below has it as a file: a directory here would replace it".into(),
                ))
            }
            (PathKind::Symlink { .. }, Kind::Missing) => {}
            (PathKind::Symlink { .. }, _) => {
                return Err(conflict(
                    e,
                    "a layer below already has it: a symlink here would replace it".into(),
                ))
            }
        }
        have.insert(rel.to_string());
        out.push(match &e.kind {
            PathKind::Dir => dir(
                format!("{rel}/"),
                DirMeta {
                    mode: e.mode,
                    uid: e.uid,
                    gid: e.gid,
                },
            ),
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
    Ok(out)
}

fn dir(path: String, meta: DirMeta) -> Entry {
    Entry {
        path,
        kind: EntryKind::Dir,
        mode: meta.mode,
        uid: meta.uid,
        gid: meta.gid,
        stat: StatKey::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(path: &str, kind: PathKind, mode: u32, uid: u32) -> PathEntry {
        PathEntry {
            path: path.into(),
            kind,
            mode,
            uid,
            gid: uid,
            at: "recipe.toml:1:1".into(),
        }
    }

    fn link(t: &str) -> PathKind {
        PathKind::Symlink { target: t.into() }
    }

    #[test]
    fn ancestors_keep_what_lower_layers_have_and_new_ones_are_0755() {
        let mut lower = Listing::of([
            ("srv".to_string(), None),
            ("tmp".to_string(), None),
            ("bin".to_string(), Some("usr/bin".to_string())),
        ]);
        lower.extend_dirs([
            (
                "srv".to_string(),
                DirMeta {
                    mode: 0o750,
                    uid: 0,
                    gid: 50,
                },
            ),
            (
                "tmp".to_string(),
                DirMeta {
                    mode: 0o1777,
                    uid: 0,
                    gid: 0,
                },
            ),
        ]);
        let paths = [
            p("/srv/data/cache", PathKind::Dir, 0o700, 1000),
            p("/tmp/x", PathKind::Dir, 0o755, 0),
            p("/usr/local/bin/py", link("/usr/bin/python3"), 0o777, 0),
        ];
        let got: Vec<String> = entries(&paths, &lower)
            .unwrap()
            .iter()
            .map(|e| format!("{} {:o} {}:{}", e.path, e.mode, e.uid, e.gid))
            .collect();
        assert_eq!(
            got,
            [
                "srv/ 750 0:50",
                "srv/data/ 755 0:0",
                "srv/data/cache/ 700 1000:1000",
                "tmp/ 1777 0:0",
                "tmp/x/ 755 0:0",
                "usr/ 755 0:0",
                "usr/local/ 755 0:0",
                "usr/local/bin/ 755 0:0",
                "usr/local/bin/py 777 0:0",
            ]
        );
    }

    #[test]
    fn lower_links_and_files_are_never_replaced() {
        let mut lower = Listing::of([
            ("bin".to_string(), Some("usr/bin".to_string())),
            ("app".to_string(), None),
            ("app/file".to_string(), None),
        ]);
        lower.extend_dirs([("app".to_string(), DirMeta::NEW)]);
        let err = |paths: &[PathEntry]| entries(paths, &lower).unwrap_err().to_string();
        assert!(err(&[p("/bin/tool", link("/usr/bin/sh"), 0o777, 0)])
            .contains("beneath /bin, a symlink to `usr/bin`"));
        assert!(err(&[p("/bin", PathKind::Dir, 0o755, 0)]).contains("as a symlink"));
        assert!(err(&[p("/app/file", PathKind::Dir, 0o755, 0)]).contains("as a file"));
        assert!(
            err(&[p("/app/file/x", PathKind::Dir, 0o755, 0)]).contains("a file in a layer below")
        );
        assert!(err(&[p("/app", link("/srv"), 0o777, 0)]).contains("already has it"));
        // Over a lower directory: its mode and owner change, nothing else.
        let ok = entries(&[p("/app", PathKind::Dir, 0o750, 1000)], &lower).unwrap();
        assert_eq!(
            (ok[0].path.as_str(), ok[0].mode, ok[0].uid),
            ("app/", 0o750, 1000)
        );
    }
}
