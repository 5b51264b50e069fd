//! `[apt]` through the lock: resolve (only when needed), download the locked .debs, build the
//! packages layer (cached by the .debs' digests).

use std::path::Path;

use serde_json::json;

use super::{Extra, SystemError, SystemOptions};
use crate::apt::{self, DebInput, LayerRequest, Locked, Request, Source};
use crate::digest::Digest;
use crate::http::Fetcher;
use crate::layer::{self, LayerOptions};
use crate::lock::{Lock, LockPolicy, LockedApt, LockedAptSource, LockedDeb, LockedHostProvides};
use crate::recipe::Apt;
use crate::store::Store;

/// Parallel .deb downloads.
const DOWNLOADS: usize = 4;

/// The lock's view of the recipe's request: what makes a resolution stale when it changes.
fn request_of(apt: &Apt) -> (String, Vec<String>, Vec<LockedAptSource>) {
    let sources = apt
        .sources
        .iter()
        .map(|s| LockedAptSource {
            url: s.url.clone(),
            suite: s.suite.clone(),
            components: s.components.clone(),
            snapshot: s.snapshot.clone(),
            key: s
                .signed_by
                .as_deref()
                .and_then(|k| crate::bounded::read_regular(k, crate::bounded::MAX_TEXT_FILE).ok())
                .map(|b| Digest::of(&b)),
            unsigned: s.signed_by.is_none() && s.allow_unsigned,
            release_date: None,
        })
        .collect();
    (apt.architecture.clone(), apt.packages.clone(), sources)
}

/// What differs between the recipe's request and the lock's, for messages; `None` when equal.
/// With `installed` (the base's packages, once read), a lock resolved against another base's
/// is stale too.
pub fn stale(
    apt: &Apt,
    locked: Option<&LockedApt>,
    installed: Option<&apt::Installed>,
) -> Option<String> {
    let Some(l) = locked else {
        return Some("the lock has no [apt] section".into());
    };
    let (arch, requests, sources) = request_of(apt);
    let mut what = Vec::new();
    if let (Some(was), Some(now)) = (
        l.base_installed,
        installed.map(ocibuild_apt::apt::Installed::digest),
    ) {
        if was != now {
            what.push("the base's installed packages changed (another base)".to_string());
        }
    }
    if l.architecture != arch {
        what.push(format!("architecture {} → {arch}", l.architecture));
    }
    for r in &requests {
        if !l.requests.contains(r) {
            what.push(format!("package `{r}` added"));
        }
    }
    for r in &l.requests {
        if !requests.contains(r) {
            what.push(format!("package `{r}` removed"));
        }
    }
    if l.essential != apt.essential {
        what.push(format!(
            "essential {}",
            if apt.essential { "added" } else { "removed" }
        ));
    }
    let locked_host: Vec<&str> = l.host_provides.iter().map(|h| h.name.as_str()).collect();
    for h in &apt.host_provides {
        if !locked_host.contains(&h.as_str()) {
            what.push(format!("host-provides `{h}` added"));
        }
    }
    for h in &locked_host {
        if !apt.host_provides.iter().any(|x| x == h) {
            what.push(format!("host-provides `{h}` removed"));
        }
    }
    // A lock from before keys were pinned (no `key`, not `unsigned`) takes the recipe's key as
    // it is; otherwise the key (or its absence under `allow-unsigned`) must be the lock's.
    let strip = |s: &LockedAptSource| LockedAptSource {
        key: None,
        unsigned: false,
        release_date: None,
        ..s.clone()
    };
    let keys_agree = |a: &LockedAptSource, b: &LockedAptSource| {
        (a.key.is_none() || a.key == b.key) && (!a.unsigned || b.unsigned)
    };
    let same_places = l.sources.len() == sources.len()
        && l.sources
            .iter()
            .zip(&sources)
            .all(|(a, b)| strip(a) == strip(b));
    if let Some((url, was, now)) = release_change(l, &sources) {
        what.push(format!(
            "source {url} suite {was} → {now} (another release: `ocibuild lock --update`)"
        ));
    } else if !same_places {
        what.push("sources changed".into());
    } else if !l
        .sources
        .iter()
        .zip(&sources)
        .all(|(a, b)| keys_agree(a, b))
    {
        what.push("a source's signed-by key changed".into());
    }
    (!what.is_empty()).then(|| what.join(", "))
}

/// The first source the recipe names at the lock's URL (in the same place) with another
/// suite: (URL, the lock's suite, the recipe's).
fn release_change(l: &LockedApt, sources: &[LockedAptSource]) -> Option<(String, String, String)> {
    l.sources
        .iter()
        .zip(sources)
        .find(|(a, b)| a.url == b.url && a.suite != b.suite)
        .map(|(a, b)| (b.url.clone(), a.suite.clone(), b.suite.clone()))
}

fn to_source(s: &crate::recipe::AptSource, arch: &str) -> Source {
    Source {
        url: s.url.clone(),
        suite: s.suite.clone(),
        components: s.components.clone(),
        architecture: arch.to_string(),
        snapshot: s.snapshot.clone(),
        signed_by: s.signed_by.clone(),
        allow_unsigned: s.allow_unsigned,
        check_valid_until: s.check_valid_until,
        mirrors: s.mirrors.clone(),
    }
}

/// Each source's archive root (as the lock records a .deb's `source-url`, without a login) →
/// its mirrors' archive roots, in order: where a .deb its `url` lacks is looked for next.
#[derive(Clone, Debug, Default)]
pub struct DebMirrors(Vec<(String, Vec<String>)>);

impl DebMirrors {
    pub fn of(apt: Option<&Apt>) -> DebMirrors {
        let Some(apt) = apt else {
            return DebMirrors::default();
        };
        DebMirrors(
            apt.sources
                .iter()
                .filter(|s| !s.mirrors.is_empty())
                .map(|s| {
                    let mut roots = to_source(s, &apt.architecture).archive_urls();
                    let own = crate::http::redact(&roots.remove(0));
                    (own, roots)
                })
                .collect(),
        )
    }

    /// The mirrors of the source a locked .deb comes from (none when no source of the recipe
    /// has its archive root).
    fn of_deb(&self, d: &Locked) -> &[String] {
        let own = crate::http::redact(d.source_url.trim_end_matches('/'));
        self.0
            .iter()
            .find(|(root, _)| *root == own)
            .map_or(&[], |(_, m)| m.as_slice())
    }

    /// [`apt::download_from`] the .deb's own URL, then its source's mirrors.
    pub fn download(
        &self,
        fetcher: &dyn Fetcher,
        store: &Store,
        d: &Locked,
    ) -> Result<std::path::PathBuf, apt::AptError> {
        apt::download_from(fetcher, store, d, self.of_deb(d))
    }
}

fn to_locked_deb(l: Locked) -> LockedDeb {
    LockedDeb {
        name: l.name,
        version: l.version,
        architecture: l.architecture,
        filename: l.filename,
        size: l.size,
        sha256: l.sha256,
        source_url: l.source_url,
    }
}

pub(super) fn from_locked_deb(l: &LockedDeb) -> Locked {
    Locked {
        name: l.name.clone(),
        version: l.version.clone(),
        architecture: l.architecture.clone(),
        filename: l.filename.clone(),
        size: l.size,
        sha256: l.sha256,
        source_url: l.source_url.clone(),
    }
}

/// A relock against the lock it replaces: each source's Release no older than the one the lock
/// recorded for it (same URL, suite and snapshot), and, unless `allow_downgrade`, no package's
/// version lower than the lock's.
fn check_relock(
    old: Option<&LockedApt>,
    new_sources: &[LockedAptSource],
    new_packages: &[LockedDeb],
    allow_downgrade: bool,
) -> Result<(), apt::AptError> {
    let Some(old) = old else {
        return Ok(());
    };
    for s in new_sources {
        let was = old
            .sources
            .iter()
            .find(|o| o.url == s.url && o.suite == s.suite && o.snapshot == s.snapshot);
        let date = s
            .release_date
            .as_deref()
            .and_then(apt::fresh::parse_lock_date);
        apt::fresh::check_not_older(
            &s.url,
            &s.suite,
            date,
            was.and_then(|w| w.release_date.as_deref()),
        )?;
    }
    if allow_downgrade {
        return Ok(());
    }
    fn key(d: &LockedDeb) -> (&str, &str, &str) {
        (&d.name, &d.architecture, &d.version)
    }
    let down = apt::fresh::downgrades(old.packages.iter().map(key), new_packages.iter().map(key));
    if down.is_empty() {
        Ok(())
    } else {
        Err(apt::AptError::Downgrade(down))
    }
}

/// The packages to install: the lock's when it answers the recipe's request (and `pin` allows),
/// else a fresh resolution written into `lock` (refused when it goes back from the lock's:
/// [`check_relock`]). Returns (packages, resolved now).
pub fn resolve_locked(
    apt: &Apt,
    base: &apt::Base,
    lock: &mut Lock,
    io: &super::Io<'_>,
    opts: &SystemOptions,
    recipe_path: &Path,
) -> Result<(Vec<LockedDeb>, bool), SystemError> {
    let super::Io {
        fetcher,
        store,
        reporter,
        ..
    } = *io;
    let (pin, allow_downgrade) = (opts.pin, opts.allow_downgrade);
    if pin == LockPolicy::Frozen {
        return match &lock.apt {
            Some(l) => Ok((l.packages.clone(), false)),
            None => Err(SystemError::NotLocked {
                lock: Lock::path_for(recipe_path).display().to_string(),
            }),
        };
    }
    let staleness = stale(apt, lock.apt.as_ref(), Some(&base.installed));
    if pin != LockPolicy::Update && staleness.is_none() {
        if let Some(l) = &lock.apt {
            reporter.detail(&format!(
                "[apt]: the lock answers the recipe's request ({} package{}); not resolved again",
                l.packages.len(),
                if l.packages.len() == 1 { "" } else { "s" }
            ));
            return Ok((l.packages.clone(), false));
        }
    }
    // Another release (a trixie recipe, a bookworm lock): every pin is of the old one, so
    // only `lock --update` resolves it again.
    if let (true, Some(l)) = (pin != LockPolicy::Update, &lock.apt) {
        if let Some((url, locked, recipe)) = release_change(l, &request_of(apt).2) {
            return Err(SystemError::OtherRelease {
                url,
                locked,
                recipe,
                lock: Lock::path_for(recipe_path).display().to_string(),
            });
        }
    }
    if pin == LockPolicy::Locked {
        return Err(SystemError::StaleLock {
            section: "[apt]".into(),
            what: staleness.unwrap_or_default(),
            lock: Lock::path_for(recipe_path).display().to_string(),
        });
    }
    reporter.detail(&format!(
        "[apt]: resolving ({})",
        match (pin, &staleness) {
            (LockPolicy::Update, _) => "lock --update".to_string(),
            (_, Some(why)) => why.clone(),
            (_, None) => "the lock has no [apt] section".to_string(),
        }
    ));
    let sources: Vec<Source> = apt
        .sources
        .iter()
        .map(|s| to_source(s, &apt.architecture))
        .collect();
    let task = format!("resolving [apt] for {}", apt.architecture);
    reporter.task_started(&task);
    let resolved = (|| {
        let indices = sources
            .iter()
            .map(|s| apt::load_source(fetcher, s, &store.tmp_dir()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut requests = apt
            .packages
            .iter()
            .map(|p| Request::parse(p))
            .collect::<Result<Vec<_>, _>>()?;
        if apt.essential {
            // After the recipe's own: a name both have is the recipe's request.
            let names: std::collections::BTreeSet<&str> = indices
                .iter()
                .flat_map(ocibuild_apt::apt::SourceIndex::essential)
                .collect();
            for n in names {
                requests.push(Request::parse(n)?);
            }
        }
        let dates: Vec<Option<i64>> = indices.iter().map(|i| i.release_date).collect();
        apt::resolve_with_host(
            &indices,
            &apt.architecture,
            &requests,
            &base.installed,
            &apt.host_provides,
        )
        .map(|r| (r, dates))
        // A name no listed component has: which other component has it (read only now).
        .map_err(|e| apt::components::explain(fetcher, &indices, e))
    })();
    reporter.task_finished(&task);
    let (resolved, dates) = resolved.map_err(|e| placed(apt, e))?;
    let host_provides: Vec<LockedHostProvides> = resolved
        .host
        .into_iter()
        .map(|(name, satisfies)| LockedHostProvides { name, satisfies })
        .collect();
    let packages: Vec<LockedDeb> = resolved.packages.into_iter().map(to_locked_deb).collect();
    let (architecture, requests, mut sources) = request_of(apt);
    for (s, d) in sources.iter_mut().zip(dates) {
        s.release_date = d.map(apt::fresh::format_date);
    }
    check_relock(lock.apt.as_ref(), &sources, &packages, allow_downgrade)?;
    lock.apt = Some(LockedApt {
        architecture,
        requests,
        sources,
        base_installed: Some(base.installed.digest()),
        host_provides,
        essential: apt.essential,
        packages: packages.clone(),
    });
    Ok((packages, true))
}

/// A warning for each `host-provides` name that nothing resolved depends on.
pub fn host_provides_warnings(host: &[LockedHostProvides]) -> Vec<String> {
    host.iter()
        .filter(|h| h.satisfies.is_empty())
        .map(|h| {
            format!(
                "[apt] host-provides `{}`: no package the recipe installs depends on it (remove \
                 it, or check its spelling)",
                h.name
            )
        })
        .collect()
}

/// What is below the packages layer, as far as its bytes depend on it.
#[derive(Clone, Copy)]
struct Below {
    /// The image starts from scratch.
    scratch: bool,
    /// The base has dpkg's database.
    has_dpkg_status: bool,
}

/// What is left out of the packages layer, as far as its key depends on it.
#[derive(Clone, Copy)]
struct Pruning<'a> {
    /// The CUDA architectures its fatbins keep (`cuda-archs`), if any.
    cuda: Option<&'a crate::cuda::Targets>,
    /// The files dropped from it.
    drop: &'a std::collections::BTreeSet<String>,
}

/// The packages layer's cache key: the .debs (by digest), the merged-/usr rewrite, the contract,
/// the compressor and the epoch.
fn cache_key(
    packages: &[LockedDeb],
    usr: &apt::UsrMerge,
    below: Below,
    opts: &SystemOptions,
    pruning: Pruning<'_>,
) -> Result<Digest, SystemError> {
    let Below {
        scratch,
        has_dpkg_status,
    } = below;
    let Pruning { cuda, drop } = pruning;
    let debs: Vec<_> = packages
        .iter()
        .map(|p| json!([p.name, p.version, p.sha256]))
        .collect();
    let usr_merge: Vec<_> = apt::deb::USR_MERGE_DIRS
        .iter()
        .map(|d| usr.rewrite(d))
        .collect();
    let mut fields = vec![
        ("usr-merge", json!(usr_merge)),
        ("scratch", json!(scratch)),
        ("base-dpkg-status", json!(has_dpkg_status)),
        ("debs", json!(debs)),
    ];
    // Only with `cuda-archs`: every other apt layer keeps its key.
    if let Some(t) = cuda {
        fields.push(("cuda", t.to_json()));
    }
    // Likewise only with files dropped.
    if !drop.is_empty() {
        fields.push(("drop", json!(drop)));
    }
    Ok(layer::cache_key(
        "apt layer key",
        // Bump when what the layer holds for the same .debs changes (e.g. the CA bundle).
        // 3: dpkg's database on a base without one, merged /usr on scratch for trixie.
        "apt-layer/3",
        opts.compression,
        opts.epoch,
        fields,
    )?)
}

/// What the apt layer is made of: the .debs, where else they may be fetched, and the base as
/// the packages see it (`scratch`: no base).
pub struct LayerInput<'a> {
    pub packages: &'a [LockedDeb],
    pub mirrors: &'a DebMirrors,
    pub base: &'a apt::Base,
    pub scratch: bool,
    /// `[image] cuda-archs`: the CUDA libraries of the packages pruned to these GPUs.
    pub cuda: Option<&'a crate::cuda::Targets>,
    /// `[image] drop-unused-copies`: library files the layer leaves out
    /// ([`super::copies::apt_drops`]).
    pub drop: &'a std::collections::BTreeSet<String>,
}

/// The store's key of the pruning report of the apt layer keyed `key`.
fn report_key(key: &Digest) -> Digest {
    Digest::of(format!("ocibuild cuda pruning report of apt layer {key}").as_bytes())
}

/// Downloads the .debs the store lacks (verified, in parallel), then builds the layer unless
/// the cache has it; with `cuda-archs`, the report of its CUDA libraries (kept in the store's
/// facts beside the layer: a layer whose report is gone is built again).
pub fn layer(
    input: &LayerInput<'_>,
    io: &super::Io<'_>,
    opts: &SystemOptions,
) -> Result<(Extra, Vec<crate::cuda::LibraryReport>), SystemError> {
    let LayerInput {
        packages,
        mirrors,
        base,
        scratch,
        cuda,
        drop,
    } = *input;
    let super::Io {
        fetcher,
        store,
        reporter,
        ..
    } = *io;
    let name = "apt".to_string();
    let created_by = format!(
        "ocibuild apt: {}",
        packages
            .iter()
            .map(|p| format!("{}={}", p.name, p.version))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let key = cache_key(
        packages,
        &base.usr_merge,
        Below {
            scratch,
            has_dpkg_status: base.has_dpkg_status,
        },
        opts,
        Pruning { cuda, drop },
    )?;
    let cached_report = match cuda {
        None => Some(Vec::new()),
        Some(_) if opts.no_cache => None,
        Some(_) => store
            .meta(&report_key(&key))?
            .and_then(|b| serde_json::from_slice(&b).ok()),
    };
    if let Some(report) = cached_report {
        if let Some(hit) =
            Extra::from_cache(store, &key, opts.no_cache, &name, &created_by, reporter)?
        {
            return Ok((hit, report));
        }
    }
    let _guard = store.lock(&key.hex())?;
    let locked: Vec<Locked> = packages.iter().map(from_locked_deb).collect();
    let total: u64 = locked.iter().map(|l| l.size).sum();
    let missing = locked.iter().filter(|l| !store.has_blob(&l.sha256)).count();
    reporter.detail(&format!(
        "[apt]: {} of the {} .debs already in the store",
        locked.len() - missing,
        locked.len()
    ));
    let task = format!("downloading {missing} .debs");
    if missing > 0 {
        reporter.task_started(&task);
    }
    let paths = download_all(fetcher, store, &locked, mirrors);
    reporter.task_finished(&task);
    let paths = paths?;
    reporter.layer_started(&name, total);
    let inputs: Vec<DebInput> = locked
        .into_iter()
        .zip(paths)
        .map(|(locked, path)| DebInput { locked, path })
        .collect();
    let (built, report) = apt::build_layer_reported(
        store,
        &inputs,
        &LayerRequest {
            layer: LayerOptions {
                epoch: opts.epoch,
                compression: opts.compression,
                threads: opts.threads,
            },
            usr_merge: base.usr_merge.clone(),
            scratch,
            dpkg_db: !base.has_dpkg_status,
            cuda: cuda.cloned(),
            drop: drop.clone(),
        },
        &|n| reporter.layer_progress(&name, n),
    )?;
    if cuda.is_some() {
        let bytes = crate::json::to_canonical_vec("cuda pruning report", &report)?;
        store.put_meta(&report_key(&key), &bytes)?;
    }
    let extra = Extra::built(store, &key, built, name, created_by, reporter)?;
    Ok((extra, report))
}

fn download_all(
    fetcher: &dyn Fetcher,
    store: &Store,
    locked: &[Locked],
    mirrors: &DebMirrors,
) -> Result<Vec<std::path::PathBuf>, SystemError> {
    // In order: the first failing package's error, whatever the threads' timing.
    super::parallel_map(locked, DOWNLOADS, |l| mirrors.download(fetcher, store, l))
        .into_iter()
        .map(|r| r.map_err(SystemError::from))
        .collect()
}

/// An unknown package the recipe asked for by name, placed at its request in the recipe.
fn placed(apt: &crate::recipe::Apt, e: apt::AptError) -> SystemError {
    let apt::AptError::UnknownPackage { name, .. } = &e else {
        return e.into();
    };
    let request_name = |r: &str| r.split([' ', '=', '(']).next().unwrap_or(r).to_string();
    match apt
        .package_at
        .iter()
        .find(|(r, _)| request_name(r) == *name)
    {
        Some((_, at)) => SystemError::AptRequest {
            at: at.clone(),
            source: Box::new(e),
        },
        None => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_resolved_against_another_base_is_stale() {
        let recipe = Apt {
            sources: Vec::new(),
            packages: vec!["python3".into()],
            package_at: Default::default(),
            architecture: "amd64".into(),
            host_provides: Vec::new(),
            essential: false,
        };
        let mut old_base = apt::Installed::new();
        old_base
            .add_status(
                "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\nArchitecture: amd64\n",
                "old base",
            )
            .unwrap();
        let (architecture, requests, sources) = request_of(&recipe);
        let locked = LockedApt {
            architecture,
            requests,
            sources,
            base_installed: Some(old_base.digest()),
            host_provides: Vec::new(),
            essential: false,
            packages: Vec::new(),
        };
        assert_eq!(stale(&recipe, Some(&locked), Some(&old_base)), None);
        let new_base = apt::Installed::new();
        assert_eq!(
            stale(&recipe, Some(&locked), Some(&new_base)).as_deref(),
            Some("the base's installed packages changed (another base)")
        );
        // Unknown base (the lock check before the base is read), or an older lock: not stale.
        assert_eq!(stale(&recipe, Some(&locked), None), None);
        let older = LockedApt {
            base_installed: None,
            ..locked
        };
        assert_eq!(stale(&recipe, Some(&older), Some(&new_base)), None);
        // `essential` added, or removed: stale.
        let with = Apt {
            essential: true,
            ..recipe.clone()
        };
        assert_eq!(
            stale(&with, Some(&older), None).as_deref(),
            Some("essential added")
        );
        let locked_with = LockedApt {
            essential: true,
            ..older
        };
        assert_eq!(stale(&with, Some(&locked_with), None), None);
        assert_eq!(
            stale(&recipe, Some(&locked_with), None).as_deref(),
            Some("essential removed")
        );
    }
}
