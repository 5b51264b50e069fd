//! The wheel step: the recipe's pylock.toml or hashed requirements.txt resolved through the
//! lock into one wheel per package for the target interpreter, downloaded (verified) into the
//! store, and installed into layers (a big wheel alone, small ones grouped), each cached by its
//! wheels' digests and the interpreter's scheme.

use std::collections::BTreeSet;
use std::path::Path;

use super::sdist::{self, Sdist};
use super::uv;
use super::wheelset::WheelSet;
use super::{fetch_verified, parallel_map, Extra, SystemError, SystemOptions};
use crate::digest::Digest;
use crate::http::Fetcher;
use crate::layer::LayerOptions;
use crate::lock::{Lock, LockPolicy, LockedPythonPackages, LockedWheel};
use crate::progress::Reporter;
use crate::python::index::{IndexClient, IndexFile};
use crate::python::markers::{MarkerEnv, Version};
use crate::python::plan::{group_name, plan_layers, LayerLimits, PlanError};
use crate::python::tags::{self, normalize_name, WheelFile};
use crate::python::wheel::{build_wheel_layer_with, layer_key, WheelInput};
use crate::python::{pylock, requirements, Interpreter};
use crate::recipe::{Overlap, PythonPackages};
use crate::store::Store;

/// Parallel wheel downloads.
const DOWNLOADS: usize = 4;

/// `cp311-x86_64-glibc2.36`: what wheel selection depends on.
pub fn target(interp: &Interpreter) -> String {
    let libc = match interp.glibc {
        Some((a, b)) => format!("glibc{a}.{b}"),
        None => "noglibc".into(),
    };
    format!("{}-{}-{libc}", interp.abi(), interp.machine)
}

/// `message`, and when `relock`, the `uv pip compile` line that locks for this image.
fn with_relock(message: String, interp: &Interpreter, relock: bool) -> String {
    if relock {
        format!(
            "{message}\n  lock for this image ({}): {}",
            interp.full_version(),
            interp.relock_command()
        )
    } else {
        message
    }
}

fn wheel_err(package: &str, reason: impl std::fmt::Display) -> SystemError {
    SystemError::Wheel {
        package: package.to_string(),
        reason: reason.to_string(),
    }
}

/// The wheels to install: the lock's while it answers the recipe's file for this interpreter
/// (and `pin` allows), else resolved now into `lock`. Returns (wheels, resolved now).
pub fn resolve_locked(
    pkgs: &PythonPackages,
    interp: &Interpreter,
    lock: &mut Lock,
    io: &super::Io<'_>,
    pin: LockPolicy,
    recipe_path: &Path,
) -> Result<(Vec<LockedWheel>, bool), SystemError> {
    let (mut wheels, resolved) = choose_locked(pkgs, interp, lock, io, pin, recipe_path)?;
    if resolved {
        sdist::prune_steps(&mut lock.steps, &wheels);
        return Ok((wheels, true));
    }
    // The lock's: those built from sdists built again into the store (a cached step).
    if sdist::ensure_built(io.sdists, &mut wheels, interp, &mut lock.steps, pin)? {
        lock.wheels = wheels.clone();
        return Ok((wheels, true));
    }
    Ok((wheels, false))
}

/// The wheels as the lock has them or as chosen now (packages with only an sdist built now):
/// [`resolve_locked`] before the lock's wheels built from sdists are built again.
fn choose_locked(
    pkgs: &PythonPackages,
    interp: &Interpreter,
    lock: &mut Lock,
    io: &super::Io<'_>,
    pin: LockPolicy,
    recipe_path: &Path,
) -> Result<(Vec<LockedWheel>, bool), SystemError> {
    let super::Io {
        fetcher,
        store,
        reporter,
        sdists,
        ..
    } = *io;
    if pin == LockPolicy::Frozen {
        return match &lock.python_packages {
            Some(_) => Ok((lock.wheels.clone(), false)),
            None => Err(SystemError::NotLocked {
                lock: Lock::path_for(recipe_path).display().to_string(),
            }),
        };
    }
    let bytes = fs_err::read(pkgs.path()).map_err(|e| SystemError::Python {
        problem: format!("reading {}: {e}", pkgs.written()),
    })?;
    let want = LockedPythonPackages {
        file: pkgs.written().to_string(),
        sha256: Digest::of(&bytes),
        target: format!("{}{}", target(interp), uv::selection_suffix(pkgs)),
    };
    // A uv.lock that no longer answers its pyproject.toml (uv's `--locked` check).
    if let Some(why) = uv::stale(pkgs, &bytes) {
        if pin == LockPolicy::Locked {
            return Err(SystemError::Python { problem: why });
        }
        reporter.message(&format!("warning: [python]: {why}"));
    }
    let stale = match &lock.python_packages {
        None => Some("the lock has no [python-packages] section".to_string()),
        Some(l) if l.file != want.file => Some(format!("file {} → {}", l.file, want.file)),
        Some(l) if l.sha256 != want.sha256 => Some(format!("{} changed", want.file)),
        Some(l) if l.target != want.target => {
            Some(format!("target interpreter {} → {}", l.target, want.target))
        }
        Some(_) => None,
    };
    if pin != LockPolicy::Update && stale.is_none() {
        reporter.detail(&format!(
            "python packages: the lock's {} wheels are those of {} for {}; not chosen again",
            lock.wheels.len(),
            want.file,
            want.target
        ));
        return Ok((lock.wheels.clone(), false));
    }
    if pin == LockPolicy::Locked {
        return Err(SystemError::StaleLock {
            section: "python packages".into(),
            what: stale.unwrap_or_default(),
            lock: Lock::path_for(recipe_path).display().to_string(),
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| SystemError::Python {
        problem: format!("{} is not UTF-8", pkgs.written()),
    })?;
    reporter.detail(&format!(
        "python packages: choosing wheels for {} ({})",
        want.target,
        match (pin, &stale) {
            (LockPolicy::Update, _) => "lock --update",
            (_, Some(why)) => why,
            (_, None) => "not locked",
        }
    ));
    let task = format!("choosing wheels for {}", want.target);
    reporter.task_started(&task);
    let can_build = sdists.is_some();
    let chosen = match pkgs {
        PythonPackages::Pylock { path, .. } => from_pylock(&text, path, interp, can_build),
        PythonPackages::UvLock {
            path, selection, ..
        } => uv::packages(&text, path, interp, selection)
            .and_then(|pkgs| choose(pkgs, path, interp, can_build)),
        PythonPackages::Requirements { index, .. } => {
            from_requirements(&text, index, interp, fetcher, can_build)
        }
    };
    reporter.task_finished(&task);
    let mut wheels = Vec::new();
    for c in chosen? {
        wheels.push(match c {
            Chosen::Wheel(w) => w,
            Chosen::Sdist(s) => sdist::build(sdists, &s, interp, &mut lock.steps)?,
        });
    }
    // Sizes a lock did not state come from the (verified) download.
    for w in wheels.iter_mut().filter(|w| w.size == 0) {
        let p = fetch_verified(fetcher, store, &w.url, w.sha256, None, &w.filename)?;
        w.size = fs_err::metadata(&p)
            .map_err(|e| wheel_err(&w.name, e))?
            .len();
    }
    wheels.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(pair) = wheels.windows(2).find(|p| p[0].name == p[1].name) {
        return Err(wheel_err(&pair[0].name, "listed twice"));
    }
    lock.python_packages = Some(want);
    lock.wheels = wheels.clone();
    Ok((wheels, true))
}

/// A package to install: a wheel of the lock or the index, or an sdist to build into one.
pub(super) enum Chosen {
    Wheel(LockedWheel),
    Sdist(Sdist),
}

/// The sdist of a package none of whose wheels fits, when it has one and `can_build`.
fn pylock_sdist(
    p: &pylock::LockedPackage,
    dir: &Path,
    can_build: bool,
) -> Result<Option<Sdist>, SystemError> {
    if !can_build || !p.has_sdist {
        return Ok(None);
    }
    let Some(s) = &p.sdist else {
        return Err(wheel_err(
            &p.name,
            "its sdist has no sha256 and no url or path, which building it needs",
        ));
    };
    let url = match (&s.url, &s.path) {
        (Some(u), _) => u.clone(),
        (None, Some(rel)) => format!("file://{}", dir.join(rel).display()),
        (None, None) => return Ok(None),
    };
    let version = match &p.version {
        Some(v) => v.clone(),
        None => {
            return Err(wheel_err(
                &p.name,
                "an sdist to build needs the package's `version`",
            ))
        }
    };
    Ok(Some(Sdist {
        package: normalize_name(&p.name),
        version,
        filename: s.filename.clone(),
        url,
        sha256: s.sha256,
    }))
}

fn from_pylock(
    text: &str,
    path: &Path,
    interp: &Interpreter,
    can_build: bool,
) -> Result<Vec<Chosen>, SystemError> {
    let packages = pylock::parse(text, interp).map_err(|e| {
        let relock = matches!(
            e,
            pylock::PylockError::RequiresPython { .. }
                | pylock::PylockError::PackageRequiresPython { .. }
                | pylock::PylockError::Environments { .. }
        );
        // A TOML error, and one about a package, starts with its `LINE:COL`, which follows
        // the path with no space.
        let placed = match &e {
            pylock::PylockError::Toml { .. } => true,
            pylock::PylockError::Invalid { at, .. }
            | pylock::PylockError::PackageRequiresPython { at, .. }
            | pylock::PylockError::Unsupported { at, .. }
            | pylock::PylockError::Wheel { at, .. } => at.0.is_some(),
            _ => false,
        };
        let sep = if placed { ":" } else { ": " };
        SystemError::Python {
            problem: with_relock(
                format!("{}{sep}{}", path.display(), crate::diag::chain(&e)),
                interp,
                relock,
            ),
        }
    })?;
    choose(packages, path, interp, can_build)
}

/// One wheel for each of the lock's `packages` (read from `path`), or its sdist to build.
pub(super) fn choose(
    packages: Vec<pylock::LockedPackage>,
    path: &Path,
    interp: &Interpreter,
    can_build: bool,
) -> Result<Vec<Chosen>, SystemError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for p in packages {
        let w = match p.select_wheel(interp) {
            Err(tags::TagError::OnlySdist { .. } | tags::TagError::NoneCompatible { .. })
                if can_build && p.has_sdist =>
            {
                if let Some(s) = pylock_sdist(&p, dir, can_build)? {
                    out.push(Chosen::Sdist(s));
                    continue;
                }
                p.select_wheel(interp)
            }
            other => other,
        };
        let w = w.map_err(|e| {
            let relock = matches!(
                e,
                tags::TagError::NoneCompatible { .. } | tags::TagError::OnlySdist { .. }
            );
            SystemError::Python {
                problem: with_relock(
                    // The tag error names the package.
                    format!("{}:{}{}", path.display(), p.at, crate::diag::chain(&e)),
                    interp,
                    relock,
                ),
            }
        })?;
        let url = match (&w.url, &w.path) {
            (Some(u), _) => u.clone(),
            (None, Some(rel)) => format!("file://{}", dir.join(rel).display()),
            (None, None) => return Err(wheel_err(&p.name, "a wheel with neither url nor path")),
        };
        out.push(Chosen::Wheel(LockedWheel {
            name: normalize_name(&p.name),
            version: p.version.clone().unwrap_or_else(|| w.file.version.clone()),
            filename: w.file.filename.clone(),
            url,
            size: w.size.unwrap_or(0),
            sha256: w.sha256,
            built_from: None,
        }));
    }
    Ok(out)
}

fn from_requirements(
    text: &str,
    index: &str,
    interp: &Interpreter,
    fetcher: &dyn Fetcher,
    can_build: bool,
) -> Result<Vec<Chosen>, SystemError> {
    let reqs = requirements::parse(text).map_err(|e| SystemError::Python {
        problem: format!("requirements: {}", crate::diag::chain(&e)),
    })?;
    let env = MarkerEnv::for_interpreter(interp);
    let client = IndexClient::new(fetcher);
    let applicable: Vec<_> = reqs.into_iter().filter(|r| r.applies(&env)).collect();
    let pages = parallel_map(&applicable, DOWNLOADS, |r| {
        client.files(index, &r.normalized_name())
    });
    let mut out = Vec::new();
    for (r, page) in applicable.iter().zip(pages) {
        let name = r.normalized_name();
        let files = page.map_err(|e| wheel_err(&name, e))?;
        let want = Version::parse(&r.version).map_err(|e| wheel_err(&name, e))?;
        let mut cands: Vec<(WheelFile, &IndexFile)> = Vec::new();
        let mut sdist = false;
        // The sdist whose sha256 the requirement allows, to build when no wheel fits.
        let mut hashed_sdist: Option<&IndexFile> = None;
        for f in &files {
            let Ok(wf) = WheelFile::parse(&f.filename) else {
                let is_sdist = f.filename.ends_with(".tar.gz") || f.filename.ends_with(".zip");
                sdist |= is_sdist;
                if is_sdist && f.sha256.is_some_and(|h| r.hashes.contains(&h)) {
                    hashed_sdist = Some(f);
                }
                continue;
            };
            let same = Version::parse(&wf.version).is_ok_and(|v| v == want);
            let hashed = f.sha256.is_some_and(|h| r.hashes.contains(&h));
            if same && hashed && normalize_name(&wf.name) == name {
                cands.push((wf, f));
            }
        }
        let files_only: Vec<WheelFile> = cands.iter().map(|(w, _)| w.clone()).collect();
        let fitting = (!files_only.is_empty())
            .then(|| tags::select(&files_only, interp).ok())
            .flatten();
        if let (None, Some(f), true) = (&fitting, hashed_sdist, can_build) {
            if let Some(sha256) = f.sha256 {
                out.push(Chosen::Sdist(Sdist {
                    package: name.clone(),
                    version: r.version.clone(),
                    filename: f.filename.clone(),
                    url: f.url.clone(),
                    sha256,
                }));
                continue;
            }
        }
        if files_only.is_empty() {
            return Err(wheel_err(
                &name,
                if sdist {
                    format!("{name}=={}: the index has no wheel with an allowed --hash, only an sdist, and [python] names no `sdist-builder` to build it in (or no sdist with an allowed --hash)", r.version)
                } else {
                    format!("{name}=={}: the index lists no wheel whose sha256 is one of the requirement's --hash values", r.version)
                },
            ));
        }
        let best = tags::select(&files_only, interp).map_err(|e| wheel_err(&name, e))?;
        let Some((_, f)) = cands.iter().find(|(w, _)| w.filename == best.filename) else {
            return Err(wheel_err(&name, "internal: the selected wheel vanished"));
        };
        out.push(Chosen::Wheel(LockedWheel {
            name: name.clone(),
            version: r.version.clone(),
            filename: f.filename.clone(),
            url: f.url.clone(),
            size: f.size.unwrap_or(0),
            sha256: f.sha256.unwrap_or(Digest::of(b"")),
            built_from: None,
        }));
    }
    Ok(out)
}

/// How the wheels are laid out in layers: the recipe's `[python] overlap` and
/// `max-layer-size`, and how many other layers the image has (base, system, recipe).
#[derive(Clone, Debug)]
pub struct WheelLayout<'a> {
    pub overlap: Overlap,
    pub max_layer_size: u64,
    pub other_layers: usize,
    /// The last wheel is `[python] project`'s: a layer of its own, after the others (it
    /// changes most often).
    pub project_last: bool,
    /// `[image] cuda-archs`: the CUDA libraries' fatbins pruned to these GPUs.
    pub cuda: Option<&'a crate::cuda::Targets>,
    /// The set as [`super::wheelset::analyze`] decided it, with the paths each wheel leaves
    /// out (its overlaps, and the copies `[image] drop-unused-copies` drops).
    pub set: WheelSet,
}

/// The wheel layers, and what the analysis of the set found.
#[derive(Clone, Debug, Default)]
pub struct WheelLayers {
    pub layers: Vec<Extra>,
    pub set: WheelSet,
    /// With `cuda-archs`: each CUDA library of the wheels and what pruning did to it.
    pub cuda: Vec<crate::cuda::LibraryReport>,
}

/// Builds the layers of `layout.set`: downloads the wheels the store lacks (verified, in parallel) and builds their layers, several at once: a
/// layer's producer (inflating from the zips, RECORD and diff_id hashing, tar) is one thread,
/// so building layers side by side keeps every core busy. The bytes do not depend on it.
pub fn layers(
    wheels: &[LockedWheel],
    interp: &Interpreter,
    layout: WheelLayout<'_>,
    fetcher: &dyn Fetcher,
    store: &Store,
    opts: &SystemOptions,
    reporter: &dyn Reporter,
) -> Result<WheelLayers, SystemError> {
    if wheels.is_empty() {
        return Ok(WheelLayers::default());
    }
    let set = layout.set;
    let own = usize::from(layout.project_last);
    let planned = &wheels[..wheels.len() - own];
    let sizes: Vec<(&str, u64)> = planned.iter().map(|w| (w.name.as_str(), w.size)).collect();
    let other = layout.other_layers + own;
    let limits = LayerLimits::for_image(other, layout.max_layer_size)
        .ok_or(SystemError::WheelPlan(PlanError::NoRoom { other }))?;
    let mut groups = if planned.is_empty() {
        Vec::new()
    } else {
        plan_layers(&sizes, &limits).map_err(SystemError::WheelPlan)?
    };
    if layout.project_last {
        groups.push(vec![wheels.len() - 1]);
    }
    let side_by_side = opts.threads.min(groups.len()).max(1);
    let lopts = LayerOptions {
        epoch: opts.epoch,
        compression: opts.compression,
        threads: (opts.threads / side_by_side).max(1),
    };
    // Biggest first, so one large wheel does not start last.
    let mut order: Vec<usize> = (0..groups.len()).collect();
    let total = |g: &Vec<usize>| -> u64 { g.iter().map(|&i| wheels[i].size).sum() };
    order.sort_by(|&a, &b| total(&groups[b]).cmp(&total(&groups[a])).then(a.cmp(&b)));
    let built = parallel_map(&order, side_by_side, |&gi| {
        let members: Vec<(&LockedWheel, &BTreeSet<String>)> = groups[gi]
            .iter()
            .map(|&i| (&wheels[i], &set.overlaps.excluded[i]))
            .collect();
        let group = Group {
            members: &members,
            installed: groups[gi].iter().map(|&i| set.installed_bytes[i]).sum(),
        };
        group_layer(
            &group,
            &GroupBuild {
                interp,
                fetcher,
                store,
                lopts: &lopts,
                cuda: layout.cuda,
                no_cache: opts.no_cache,
                reporter,
            },
        )
    });
    let mut out: Vec<Option<Extra>> = vec![None; groups.len()];
    let mut cuda = Vec::new();
    for (gi, r) in order.into_iter().zip(built) {
        let (layer, reports) = r?;
        out[gi] = Some(layer);
        cuda.extend(reports);
    }
    cuda.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(WheelLayers {
        layers: out.into_iter().flatten().collect(),
        set,
        cuda,
    })
}

/// The wheels of one layer, each with the paths it leaves out, and the bytes they install.
struct Group<'a> {
    members: &'a [(&'a LockedWheel, &'a BTreeSet<String>)],
    installed: u64,
}

/// The store's key of the pruning report of the wheel layer keyed `key`.
fn report_key(key: &Digest) -> Digest {
    Digest::of(format!("ocibuild cuda pruning report of wheel layer {key}").as_bytes())
}

/// What building every wheel layer of a set shares ([`group_layer`]).
struct GroupBuild<'a> {
    interp: &'a Interpreter,
    fetcher: &'a dyn Fetcher,
    store: &'a Store,
    lopts: &'a LayerOptions,
    /// `[image] cuda-archs`.
    cuda: Option<&'a crate::cuda::Targets>,
    no_cache: bool,
    reporter: &'a dyn Reporter,
}

/// One wheel layer: from the cache, or downloaded and built; with `cuda-archs`, the report of
/// its CUDA libraries (kept in the store's facts beside the layer, so a cached layer has it:
/// a layer whose report is gone is built again).
fn group_layer(
    group: &Group<'_>,
    how: &GroupBuild<'_>,
) -> Result<(Extra, Vec<crate::cuda::LibraryReport>), SystemError> {
    let GroupBuild {
        interp,
        fetcher,
        store,
        lopts,
        cuda,
        no_cache,
        reporter,
    } = *how;
    let members = group.members;
    let name = group_name(
        &members
            .iter()
            .map(|(w, _)| w.name.as_str())
            .collect::<Vec<_>>(),
    );
    let created_by = format!(
        "ocibuild wheels: {}",
        members
            .iter()
            .map(|(w, _)| w.filename.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let inputs_of = |paths: Vec<std::path::PathBuf>| -> Result<Vec<WheelInput>, SystemError> {
        members
            .iter()
            .zip(paths)
            .map(|((w, exclude), path)| {
                Ok(WheelInput {
                    path,
                    file: WheelFile::parse(&w.filename).map_err(|e| wheel_err(&w.name, e))?,
                    sha256: w.sha256,
                    exclude: (*exclude).clone(),
                })
            })
            .collect()
    };
    // The key needs only names and digests: the paths are placeholders until a miss.
    let placeholders = inputs_of(
        members
            .iter()
            .map(|(w, _)| store.blob_path(&w.sha256))
            .collect(),
    )?;
    let layer_err = |error| SystemError::WheelLayer {
        layer: name.clone(),
        error,
    };
    let key = layer_key(&placeholders, interp, lopts, cuda).map_err(layer_err)?;
    let cached_report = match cuda {
        None => Some(Vec::new()),
        Some(_) if no_cache => None,
        Some(_) => store
            .meta(&report_key(&key))?
            .and_then(|b| serde_json::from_slice(&b).ok()),
    };
    if let Some(report) = cached_report {
        if let Some(hit) = Extra::from_cache(store, &key, no_cache, &name, &created_by, reporter)? {
            return Ok((hit, report));
        }
    }
    let _guard = store.lock(&key.hex())?;
    reporter.layer_started(&name, group.installed);
    let paths = parallel_map(members, DOWNLOADS, |(w, _)| {
        fetch_verified(fetcher, store, &w.url, w.sha256, Some(w.size), &w.filename)
    })
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    let inputs = inputs_of(paths)?;
    let progress = |n: u64| reporter.layer_progress(&name, n);
    let (built, report) = build_wheel_layer_with(store, &inputs, interp, lopts, cuda, &progress)
        .map_err(layer_err)?;
    if cuda.is_some() {
        let bytes = crate::json::to_canonical_vec("cuda pruning report", &report)?;
        store.put_meta(&report_key(&key), &bytes)?;
    }
    let extra = Extra::built(store, &key, built, name, created_by, reporter)?;
    Ok((extra, report))
}
