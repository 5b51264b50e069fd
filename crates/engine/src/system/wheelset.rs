//! The wheels of one image as a set, decided before any wheel layer is built: what each wheel
//! installs (its listing, cached per wheel and interpreter), how they share paths
//! ([`crate::python::overlap`]), and which shared libraries they ship (to find the ones the base
//! image already has). The whole analysis is cached under the set's inputs, so a rebuild with
//! nothing changed reads one small file and no wheel.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{fetch_verified, parallel_map, SystemError};
use crate::digest::Digest;
use crate::http::Fetcher;
use crate::lock::LockedWheel;
use crate::python::overlap::listing_key;
use crate::python::overlap::{self, Listing, Overlaps};
use crate::python::tags::{normalize_name, WheelFile};
use crate::python::wheel::{list_wheel, WheelInput};
use crate::python::Interpreter;
use crate::recipe::Overlap;
use crate::store::Store;

/// Bump when what is cached here changes shape or meaning.
const ANALYSIS_VERSION: u32 = 1;

/// A shared library a wheel installs (a file whose name is a soname, see
/// [`crate::apt::base::soname`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WheelLibrary {
    /// Index of the wheel in lock order.
    pub wheel: usize,
    pub soname: String,
    /// The installed path (layer path, no leading `/`).
    pub path: String,
    pub size: u64,
}

/// What [`analyze`] found for the image's wheels (indices in lock order).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WheelSet {
    pub overlaps: Overlaps,
    pub libraries: Vec<WheelLibrary>,
    /// Per wheel: the bytes of the files it installs (what a layer's progress counts).
    pub installed_bytes: Vec<u64>,
}

fn wheel_err(package: &str, reason: impl std::fmt::Display) -> SystemError {
    SystemError::Wheel {
        package: package.to_string(),
        reason: reason.to_string(),
    }
}

fn input(w: &LockedWheel, store: &Store) -> Result<WheelInput, SystemError> {
    Ok(WheelInput {
        path: store.blob_path(&w.sha256),
        file: WheelFile::parse(&w.filename).map_err(|e| wheel_err(&w.name, e))?,
        sha256: w.sha256,
        exclude: BTreeSet::new(),
    })
}

/// The cache key of the analysis: each wheel's listing key (which covers the install rules'
/// version, the wheel's sha256, the executable and the scheme), in the given order, and the
/// overlap policy.
fn set_key(
    wheels: &[LockedWheel],
    interp: &Interpreter,
    policy: Overlap,
) -> Result<Digest, SystemError> {
    let keys = wheels
        .iter()
        .map(|w| {
            listing_key(&w.sha256, interp)
                .map(|k| k.to_string())
                .map_err(|e| wheel_err(&w.name, e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let v = serde_json::json!({
        "kind": "python-wheel-set",
        "version": ANALYSIS_VERSION,
        "overlap": format!("{policy:?}"),
        "listings": keys,
    });
    Ok(Digest::of(&crate::json::to_canonical_vec(
        "wheel set key",
        &v,
    )?))
}

/// What `w` installs: from the store's cache, else read from the wheel (downloaded, verified,
/// when the store lacks it) and cached.
fn listing(
    w: &LockedWheel,
    interp: &Interpreter,
    fetcher: &dyn Fetcher,
    store: &Store,
    no_cache: bool,
) -> Result<Listing, SystemError> {
    let layer_err = |error| SystemError::WheelListing {
        package: w.name.clone(),
        error,
    };
    let key = listing_key(&w.sha256, interp).map_err(layer_err)?;
    if let Some(bytes) = store.meta(&key)?.filter(|_| !no_cache) {
        if let Ok(l) = serde_json::from_slice::<Listing>(&bytes) {
            return Ok(l);
        }
    }
    fetch_verified(fetcher, store, &w.url, w.sha256, Some(w.size), &w.filename)?;
    let l = list_wheel(&input(w, store)?, interp, store).map_err(layer_err)?;
    let bytes = serde_json::to_vec(&l).map_err(|e| wheel_err(&w.name, e))?;
    store.put_meta(&key, &bytes)?;
    Ok(l)
}

/// Analyzes `wheels` (in lock order) for `interp`: see the module docs. A conflict that
/// `policy` does not settle is an error, and nothing is built or cached. `no_cache` (a
/// `--no-cache` build) reads every wheel again instead of the cached analysis.
pub fn analyze(
    wheels: &[LockedWheel],
    interp: &Interpreter,
    policy: Overlap,
    fetcher: &dyn Fetcher,
    store: &Store,
    threads: usize,
    no_cache: bool,
) -> Result<WheelSet, SystemError> {
    let key = set_key(wheels, interp, policy)?;
    if let Some(bytes) = store.meta(&key)?.filter(|_| !no_cache) {
        if let Ok(set) = serde_json::from_slice::<WheelSet>(&bytes) {
            if set.overlaps.excluded.len() == wheels.len()
                && set.installed_bytes.len() == wheels.len()
            {
                return Ok(set);
            }
        }
    }
    let listings: Vec<Listing> = parallel_map(wheels, threads.max(4), |w| {
        listing(w, interp, fetcher, store, no_cache)
    })
    .into_iter()
    .collect::<Result<_, _>>()?;
    // Lock order is by normalized name, whatever order the lock file lists them in (a
    // hand-edited lock must not change which wheel `overlap = "last"` picks).
    let mut order: Vec<usize> = (0..wheels.len()).collect();
    order.sort_by_key(|&i| (normalize_name(&wheels[i].name), wheels[i].filename.clone()));
    let named: Vec<(&str, &Listing)> = order
        .iter()
        .map(|&i| (wheels[i].filename.as_str(), &listings[i]))
        .collect();
    let sorted = overlap::resolve(&named, policy).map_err(SystemError::WheelSet)?;
    let overlaps = sorted.reindexed(&order);
    let mut libraries = Vec::new();
    for (wi, l) in listings.iter().enumerate() {
        for f in &l.files {
            let name = f.path.rsplit('/').next().unwrap_or(&f.path);
            if let Some(soname) = crate::apt::base::soname(name) {
                libraries.push(WheelLibrary {
                    wheel: wi,
                    soname,
                    path: f.path.clone(),
                    size: f.size,
                });
            }
        }
    }
    let set = WheelSet {
        overlaps,
        libraries,
        installed_bytes: listings
            .iter()
            .map(|l| l.files.iter().map(|f| f.size).sum())
            .collect(),
    };
    let bytes = serde_json::to_vec(&set).map_err(|e| SystemError::Python {
        problem: format!("caching the wheel set: {e}"),
    })?;
    store.put_meta(&key, &bytes)?;
    Ok(set)
}

/// One ELF file that needs the library, and the copy it loads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LibraryUser {
    /// Its path in the image (absolute).
    pub path: String,
    /// `wheel`, `base`, `apt`, or `none` (the loader's search reaches no copy).
    pub loads: String,
    /// Through what: `RUNPATH $ORIGIN/../lib`, `LD_LIBRARY_PATH /x`, `the loader's cache …`.
    pub via: String,
}

/// A shared library that both the base image and a wheel ship; as `build --json` writes it
/// (`wheels.duplicateLibraries[]`, docs/json.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateLibrary {
    pub soname: String,
    /// Which earlier part of the image has it: `base` (the base image's layers) or `apt` (the
    /// recipe's Debian packages, e.g. Debian's libcublas12 beside nvidia-cublas-cu12).
    pub origin: String,
    /// Where the base (or the apt layer) has it (absolute path).
    pub base_path: String,
    /// Its bytes there (0 when only a symlink of that name is there).
    pub base_size: u64,
    /// The wheel's project name.
    pub wheel: String,
    /// Where the wheel installs it (absolute path).
    pub wheel_path: String,
    /// The wheel's copy: the bytes the image carries twice.
    #[serde(rename = "wastedBytes")]
    pub wheel_size: u64,
    /// Which copy the wheels' programs load ([`super::copies::explain`]): `wheel`, `base` or
    /// `apt` (every user alike), `mixed`, or `unknown` (loaded with dlopen, unseen here).
    pub loads: String,
    /// Why, when no ELF file of the wheels links it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The wheels' ELF files that need it, each with the copy it loads and through what.
    pub users: Vec<LibraryUser>,
    /// The bytes of the copy nothing loads (0 for `mixed` and `unknown`).
    pub unused_bytes: u64,
    /// Which copy `[image] drop-unused-copies` left out: `wheel` (of its layer) or `apt` (of the
    /// apt layer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<String>,
    /// Why the unused apt copy stays under `drop-unused-copies` (another package needs it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
}

/// Shared libraries by soname → (path, bytes), as [`crate::apt::Base::libraries`] holds them.
pub type Libraries = BTreeMap<String, (String, u64)>;

/// The shared libraries of `set` that an earlier part of the image already has (`earlier`, in
/// order: the base's layers, then the apt layer; the first that has a soname is named):
/// reported, never changed.
pub fn duplicates(
    set: &WheelSet,
    wheels: &[LockedWheel],
    earlier: &[(&str, &Libraries)],
) -> Vec<DuplicateLibrary> {
    let mut out: Vec<DuplicateLibrary> = set
        .libraries
        .iter()
        .filter(|l| {
            // A file the wheel leaves out (another wheel's copy wins) is not carried by it.
            set.overlaps
                .excluded
                .get(l.wheel)
                .is_some_and(|x| !x.contains(&l.path))
        })
        .filter_map(|l| {
            // The lowest part that has it (the base before the apt layer).
            let (origin, (base_path, base_size)) = earlier
                .iter()
                .find_map(|(origin, libs)| Some((*origin, libs.get(&l.soname)?)))?;
            Some(DuplicateLibrary {
                soname: l.soname.clone(),
                origin: origin.to_string(),
                base_path: format!("/{base_path}"),
                base_size: *base_size,
                wheel: wheels.get(l.wheel)?.name.clone(),
                wheel_path: format!("/{}", l.path),
                wheel_size: l.size,
                loads: "unknown".into(),
                via: None,
                users: Vec::new(),
                unused_bytes: 0,
                dropped: None,
                kept: None,
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.soname, &a.wheel_path).cmp(&(&b.soname, &b.wheel_path)));
    out
}

/// What the wheel step found that the user should know of (reported; nothing is changed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WheelReport {
    /// Paths several wheels install with the same bytes and mode → the wheels' names.
    pub shared: BTreeMap<String, Vec<String>>,
    /// Paths whose content differed, settled by `overlap = "last"` → (winner, the others).
    pub replaced: BTreeMap<String, (String, Vec<String>)>,
    /// Shared libraries both the base image and a wheel ship; `None` when the base's layers
    /// were not read (a shallow base, never downloaded), so nothing can be said.
    pub duplicate_libraries: Option<Vec<DuplicateLibrary>>,
    /// With `[image] cuda-archs`: what pruning did to the wheels' CUDA libraries.
    pub cuda: Option<crate::cuda::CudaReport>,
}

impl WheelReport {
    /// The report of `set` for `wheels` (lock order), paths made absolute.
    pub fn new(
        set: &WheelSet,
        wheels: &[LockedWheel],
        duplicates: Option<Vec<DuplicateLibrary>>,
    ) -> Self {
        let name = |i: &usize| wheels.get(*i).map_or_else(String::new, |w| w.name.clone());
        WheelReport {
            shared: set
                .overlaps
                .shared
                .iter()
                .map(|(p, ws)| (format!("/{p}"), ws.iter().map(name).collect()))
                .collect(),
            replaced: set
                .overlaps
                .replaced
                .iter()
                .map(|(p, (w, others))| {
                    (
                        format!("/{p}"),
                        (name(w), others.iter().map(name).collect()),
                    )
                })
                .collect(),
            duplicate_libraries: duplicates,
            cuda: None,
        }
    }
}
