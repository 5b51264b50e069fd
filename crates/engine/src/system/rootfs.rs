//! The `rootfs` layer ([`crate::rootfs::plan`]): the base's accounts, the installed packages'
//! maintainer scripts (read from each .deb once, cached by its sha256) and what the packages'
//! layer holds (read from it once, cached by its digest), built into a small layer cached by
//! its content. Nothing is run.

use std::io::Read;

use serde_json::json;

use super::{Extra, SystemError, SystemOptions};
use crate::apt::scripts::{self, DebScripts};
use crate::digest::Digest;
use crate::http::Fetcher;
use crate::layer::{self, Content, Entry, EntryKind, LayerOptions, StatKey};
use crate::lock::LockedDeb;
use crate::recipe::{Base, Recipe};
use crate::rootfs::{self, Installed, Planned, PlannedKind, Report};
use crate::store::{CachedLayer, Store};

/// Parallel .deb reads (and downloads, for a .deb the store no longer has).
const READERS: usize = 4;

/// The base as the rootfs step reads it: its account files, and its files when its layers are
/// in the store (`None` on scratch and for a shallow base).
pub struct BaseView<'a> {
    pub accounts: &'a std::collections::BTreeMap<String, String>,
    pub files: Option<&'a crate::rootfs::listing::Listing>,
}

/// The `rootfs` layer (`None` when there is nothing to add) and the report of what it holds.
/// `scanned` is the base as the packages saw it (merged /usr); `base_accounts` its account
/// files.
pub fn layer(
    recipe: &Recipe,
    scanned: &crate::apt::Base,
    base_view: &BaseView<'_>,
    packages: &[LockedDeb],
    apt_layer: Option<&Extra>,
    io: &super::Io<'_>,
    opts: &SystemOptions,
) -> Result<(Option<Extra>, Report), SystemError> {
    let super::Io {
        fetcher,
        store,
        reporter,
        ..
    } = *io;
    let mirrors = super::apt::DebMirrors::of(recipe.apt.as_ref());
    let scripts = package_scripts(packages, &mirrors, fetcher, store)?;
    let installed = match apt_layer {
        Some(l) => installed(store, &l.layer)?,
        None => Installed::default(),
    };
    let architecture = recipe
        .apt
        .as_ref()
        .map(|a| a.architecture.clone())
        .unwrap_or_else(|| {
            crate::recipe::debian_arch(&recipe.image.platform)
                .unwrap_or_default()
                .to_string()
        });
    // On scratch the packages' own links (base-files 13's, or the apt layer's for trixie).
    let packages_merge = crate::apt::UsrMerge::from_symlinks(
        installed
            .links
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str())),
    );
    let usr_merge = if scanned.usr_merge.is_empty() {
        &packages_merge
    } else {
        &scanned.usr_merge
    };
    // The files below the rootfs layer: the base's (when its layers are here) and the
    // packages': what a declared shell is checked against, and the default one chosen by.
    let scratch = matches!(recipe.base, Base::Scratch);
    let known = scratch || base_view.files.is_some();
    let mut below = base_view.files.cloned().unwrap_or_default();
    below.extend(installed.paths.iter().map(|p| {
        (
            crate::rootfs::listing::normalize(p),
            installed.links.get(p).cloned(),
        )
    }));
    let has = |p: &str| below.resolves(p);
    let base_accounts = base_view.accounts;
    let plan = rootfs::plan(&rootfs::Inputs {
        scratch: matches!(recipe.base, Base::Scratch),
        system: recipe.apt.is_some() || recipe.python.is_some(),
        base_accounts,
        scripts: &scripts,
        installed: &installed,
        declared: &recipe.accounts,
        config_user: recipe
            .config
            .user
            .as_deref()
            .map(|u| (u, recipe.config.user_at.as_deref().unwrap_or(""))),
        base_alternatives: &scanned.alternatives,
        usr_merge,
        architecture: &architecture,
        has: known.then_some(&has as &dyn Fn(&str) -> bool),
    })?;
    if plan.paths.is_empty() {
        return Ok((None, plan.report));
    }
    let name = rootfs::LAYER_NAME.to_string();
    let created_by = "ocibuild rootfs: baseline, accounts, alternatives".to_string();
    let key = layer::cache_key(
        "rootfs layer key",
        "rootfs-layer/1",
        opts.compression,
        opts.epoch,
        [("paths", json!(plan.paths))],
    )?;
    if let Some(hit) = Extra::from_cache(store, &key, opts.no_cache, &name, &created_by, reporter)?
    {
        return Ok((Some(hit), plan.report));
    }
    reporter.layer_started(&name, 0);
    let built = write(
        store,
        &plan.paths,
        &LayerOptions {
            epoch: opts.epoch,
            compression: opts.compression,
            threads: opts.threads,
        },
    )?;
    let extra = Extra::built(store, &key, built, name, created_by, reporter)?;
    Ok((Some(extra), plan.report))
}

/// Each package's scripts, from the cache or its .deb (downloaded again if the store lost it).
fn package_scripts(
    packages: &[LockedDeb],
    mirrors: &super::apt::DebMirrors,
    fetcher: &dyn Fetcher,
    store: &Store,
) -> Result<Vec<DebScripts>, SystemError> {
    super::parallel_map(packages, READERS, |p| {
        let key = Digest::of(format!("deb-scripts/3 {}", p.sha256).as_bytes());
        if let Some(bytes) = store.meta(&key)? {
            if let Ok(s) = serde_json::from_slice::<DebScripts>(&bytes) {
                return Ok(s);
            }
        }
        let path = mirrors.download(fetcher, store, &super::apt::from_locked_deb(p))?;
        let s = scripts::read(&path, &p.name)?;
        let bytes = serde_json::to_vec(&s).map_err(|e| SystemError::Python {
            problem: format!("caching the scripts of {}: {e}", p.name),
        })?;
        store.put_meta(&key, &bytes)?;
        Ok(s)
    })
    .into_iter()
    .collect()
}

/// What the packages' layer holds (its paths, library directories, ld.so.conf.d), from the
/// cache or the layer itself.
fn installed(store: &Store, l: &CachedLayer) -> Result<Installed, SystemError> {
    let key = Digest::of(format!("apt-installed/2 {}", l.digest).as_bytes());
    if let Some(bytes) = store.meta(&key)? {
        if let Ok(i) = serde_json::from_slice::<Installed>(&bytes) {
            return Ok(i);
        }
    }
    let bad = |source: std::io::Error| SystemError::BaseLayer {
        digest: l.digest,
        source,
    };
    let f = store.open_blob(&l.digest)?;
    let r = layer::decompressor(&l.media_type, std::io::BufReader::new(f)).map_err(bad)?;
    let mut out = Installed::default();
    let mut archive = crate::tarbound::archive(r);
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let path = String::from_utf8_lossy(&entry.path_bytes())
            .trim_end_matches('/')
            .to_string();
        let (dir, file) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
        if dir.is_empty() && entry.header().entry_type() == tar::EntryType::Symlink {
            let target = entry
                .link_name_bytes()
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap_or_default();
            if crate::apt::usrmerge::merge_link(&path, &target).is_some() {
                out.links.insert(path.clone(), target);
            }
        }
        if file.starts_with("lib") && file.contains(".so") {
            out.library_dirs.insert(dir.to_string());
        }
        if dir == "etc/ld.so.conf.d"
            && file.ends_with(".conf")
            && entry.header().entry_type() == tar::EntryType::Regular
        {
            let mut text = String::new();
            (&mut entry)
                .take(1 << 20)
                .read_to_string(&mut text)
                .map_err(bad)?;
            for line in text.lines() {
                let line = line.split('#').next().unwrap_or("").trim();
                if line.starts_with('/') {
                    out.ld_conf_dirs.insert(line.to_string());
                }
            }
        }
        out.paths.insert(path);
    }
    let bytes = serde_json::to_vec(&out).map_err(|e| SystemError::Python {
        problem: format!("caching the packages' listing: {e}"),
    })?;
    store.put_meta(&key, &bytes)?;
    Ok(out)
}

/// The planned paths as a layer (parents come first: the plan holds every parent).
fn write(
    store: &Store,
    paths: &[Planned],
    opts: &LayerOptions,
) -> Result<CachedLayer, SystemError> {
    let mut entries: Vec<Entry> = paths
        .iter()
        .map(|p| {
            let (path, kind) = match &p.kind {
                PlannedKind::Dir => (format!("{}/", p.path), EntryKind::Dir),
                PlannedKind::File(text) => (
                    p.path.clone(),
                    EntryKind::File {
                        src: Default::default(),
                        size: text.len() as u64,
                    },
                ),
                PlannedKind::Symlink(t) => {
                    (p.path.clone(), EntryKind::Symlink { target: t.clone() })
                }
            };
            Entry {
                path,
                kind,
                mode: p.mode,
                uid: p.uid,
                gid: p.gid,
                stat: StatKey::default(),
            }
        })
        .collect();
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let text_of = |e: &Entry| {
        paths
            .iter()
            .find(|p| p.path == e.path)
            .and_then(|p| match &p.kind {
                PlannedKind::File(t) => Some(t.as_bytes()),
                _ => None,
            })
            .unwrap_or_default()
    };
    let mut w = store.prehashed_blob_writer()?;
    let stats = layer::write_layer_with(&entries, opts, &mut w, &|_| {}, &mut |_, e, sink| {
        let mut r: &[u8] = text_of(e);
        sink(Content::Bytes(&mut r))
    })?;
    w.commit(Some(stats.digest))?;
    Ok(stats.cached(opts.compression))
}
