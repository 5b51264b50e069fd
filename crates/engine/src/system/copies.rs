//! The base-versus-wheels lint (issue 39): for each shared library that the base or the apt
//! layer ships and a wheel ships again ([`super::wheelset::duplicates`]), which copy the
//! wheels' programs load ([`crate::cuda::loads`]), what the other costs, and, with
//! `[image] drop-unused-copies`, the wheel's copy left out of its layer where nothing loads it.
//!
//! The users are the wheels' ELF files that name the soname in `DT_NEEDED` (their dependencies
//! read once per wheel and interpreter, and cached in the store). Where none does, the library
//! is loaded with `dlopen`: by cuda-pathfinder (CuPy 14, cuda-python), which looks in the
//! nvidia wheels' site-packages first, when the image has it; else nobody can say here.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

pub use super::wheelset::LibraryUser;
use super::wheelset::{DuplicateLibrary, WheelSet};
use super::{parallel_map, SystemError};
use crate::cuda::dynamic::Dynamic;
use crate::cuda::loads::{resolve, Copy};
use crate::digest::Digest;
use crate::lock::LockedWheel;
use crate::python::elfdeps::wheel_dynamic;
use crate::python::overlap::listing_key;
use crate::python::tags::WheelFile;
use crate::python::wheel::WheelInput;
use crate::python::Interpreter;
use crate::recipe::Recipe;
use crate::store::Store;

/// Bump when what is cached per wheel changes shape or meaning.
const DEPS_VERSION: u32 = 1;

/// `LD_LIBRARY_PATH` of the image: the recipe's `[config] env`, else the base's.
pub fn ld_library_path(
    recipe_env: &BTreeMap<String, String>,
    base_config: Option<&serde_json::Value>,
) -> Vec<String> {
    let value = recipe_env.get("LD_LIBRARY_PATH").cloned().or_else(|| {
        base_config?["config"]["Env"]
            .as_array()?
            .iter()
            .filter_map(|e| e.as_str()?.strip_prefix("LD_LIBRARY_PATH="))
            .next_back()
            .map(str::to_string)
    });
    value
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .collect()
}

/// The dependencies of wheel `w`'s shared objects: from the store's facts, else read and kept.
fn wheel_deps(
    w: &LockedWheel,
    interp: &Interpreter,
    store: &Store,
) -> Result<BTreeMap<String, Dynamic>, SystemError> {
    let wheel_err = |reason: String| SystemError::Wheel {
        package: w.name.clone(),
        reason,
    };
    let listing = listing_key(&w.sha256, interp).map_err(|e| wheel_err(e.to_string()))?;
    let key = Digest::of(format!("ocibuild wheel elf deps {DEPS_VERSION} {listing}").as_bytes());
    if let Some(b) = store.meta(&key)? {
        if let Ok(d) = serde_json::from_slice(&b) {
            return Ok(d);
        }
    }
    let input = WheelInput {
        path: store.blob_path(&w.sha256),
        file: WheelFile::parse(&w.filename).map_err(|e| wheel_err(e.to_string()))?,
        sha256: w.sha256,
        exclude: BTreeSet::new(),
    };
    let deps = wheel_dynamic(&input, interp).map_err(|e| SystemError::WheelListing {
        package: w.name.clone(),
        error: e,
    })?;
    let bytes = serde_json::to_vec(&deps).map_err(|e| wheel_err(e.to_string()))?;
    store.put_meta(&key, &bytes)?;
    Ok(deps)
}

/// Fills in which copy loads for each of `dups` (`loads`, `users`, `unusedBytes`). The wheels
/// are in the store (the set's analysis fetched them).
pub fn explain(
    dups: &mut [DuplicateLibrary],
    set: &WheelSet,
    wheels: &[LockedWheel],
    interp: &Interpreter,
    store: &Store,
    ld_library_path: &[String],
    threads: usize,
) -> Result<(), SystemError> {
    if dups.is_empty() {
        return Ok(());
    }
    let deps: Vec<BTreeMap<String, Dynamic>> =
        parallel_map(wheels, threads.max(1), |w| wheel_deps(w, interp, store))
            .into_iter()
            .collect::<Result<_, _>>()?;
    let pathfinder = wheels
        .iter()
        .any(|w| crate::python::tags::normalize_name(&w.name) == "cuda-pathfinder");
    for d in dups.iter_mut() {
        let copies = [
            Copy {
                origin: &d.origin,
                path: &d.base_path,
            },
            Copy {
                origin: "wheel",
                path: &d.wheel_path,
            },
        ];
        let mut users = Vec::new();
        for (wi, files) in deps.iter().enumerate() {
            let excluded = set.overlaps.excluded.get(wi);
            for (path, dynamic) in files {
                let abs = format!("/{path}");
                if abs == d.wheel_path
                    || excluded.is_some_and(|x| x.contains(path))
                    || !dynamic.needed.contains(&d.soname)
                {
                    continue;
                }
                let (i, via) = resolve(&abs, dynamic, ld_library_path, &copies);
                users.push(LibraryUser {
                    path: abs,
                    loads: i.map_or("none", |i| copies[i].origin).to_string(),
                    via,
                });
            }
        }
        let loads: BTreeSet<&str> = users.iter().map(|u| u.loads.as_str()).collect();
        d.loads = match (loads.len(), loads.first()) {
            (0, _) if pathfinder => "wheel".to_string(),
            (0, _) => "unknown".to_string(),
            (1, Some(one)) => one.to_string(),
            _ => "mixed".to_string(),
        };
        d.via = match (users.is_empty(), pathfinder) {
            (true, true) => Some("no ELF file links it; cuda-pathfinder, in the image, loads the nvidia wheels' copy first".into()),
            (true, false) => Some("no ELF file of the wheels links it: a program loads it with dlopen, by a path or a name this cannot see".into()),
            // Seen with CuPy 14: it loads libcublas.so.12 by path before the module that links
            // it, which then gets that copy whatever its search says.
            (false, true) => Some("cuda-pathfinder, in the image, may load the wheel's copy by path before these users, and the loader then gives them that one".into()),
            (false, false) => None,
        };
        d.unused_bytes = if d.loads == "wheel" {
            d.base_size
        } else if d.loads == d.origin {
            d.wheel_size
        } else {
            0
        };
        d.users = users;
    }
    Ok(())
}

/// With `[image] drop-unused-copies`: per wheel (lock order), the paths of its copies that
/// nothing loads (the base's or the apt layer's copy loads for every user), to leave out of its
/// layer; the duplicates dropped are marked.
pub fn wheel_drops(
    dups: &mut [DuplicateLibrary],
    set: &WheelSet,
    wheels: &[LockedWheel],
) -> Vec<BTreeSet<String>> {
    let mut out = vec![BTreeSet::new(); wheels.len()];
    for d in dups.iter_mut() {
        if d.loads != d.origin {
            continue;
        }
        let path = d.wheel_path.trim_start_matches('/');
        let owner = set
            .libraries
            .iter()
            .find(|l| l.path == path && wheels.get(l.wheel).is_some_and(|w| w.name == d.wheel));
        if let Some(l) = owner {
            out[l.wheel].insert(path.to_string());
            d.dropped = Some("wheel".into());
        }
    }
    out
}

/// With `[image] drop-unused-copies`: the apt layer's copies (their paths, no leading `/`)
/// that nothing in the wheels loads, to leave out of the apt layer, the duplicates marked. A
/// copy whose package another package of the layer depends on (`Depends`, `Pre-Depends`) is
/// kept: a program of that package may link it; `kept` says so. `status` is the apt layer's
/// `var/lib/dpkg/status.d` (records and md5sums, as [`crate::apt::base::BaseFacts`] holds it).
pub fn apt_drops(
    dups: &mut [DuplicateLibrary],
    status: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    const DIR: &str = "var/lib/dpkg/status.d/";
    // Path → package, from each package's md5sums; package → the packages that depend on it.
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    let mut dependents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in status {
        let Some(name) = path.strip_prefix(DIR) else {
            continue;
        };
        if let Some(pkg) = name.strip_suffix(".md5sums") {
            for line in text.lines() {
                if let Some((_, p)) = line.split_once("  ") {
                    owner.insert(p.trim_start_matches('/'), pkg);
                }
            }
            continue;
        }
        let Ok(paras) = crate::apt::control::parse_paragraphs(text) else {
            continue;
        };
        for p in paras {
            let Some(me) = p.get("Package") else { continue };
            for field in ["Depends", "Pre-Depends"] {
                let deps = p
                    .get(field)
                    .and_then(|d| crate::apt::control::parse_depends(d).ok())
                    .unwrap_or_default();
                for dep in deps.into_iter().flatten() {
                    dependents
                        .entry(dep.name)
                        .or_default()
                        .insert(me.to_string());
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    for d in dups.iter_mut() {
        if d.origin != "apt" || d.loads != "wheel" {
            continue;
        }
        let path = d.base_path.trim_start_matches('/');
        let Some(pkg) = owner.get(path) else {
            d.kept = Some("no package's md5sums lists it".into());
            continue;
        };
        if let Some(users) = dependents.get(*pkg).filter(|s| !s.is_empty()) {
            d.kept = Some(format!(
                "{pkg} is a dependency of {}, whose programs may link it",
                users.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        } else {
            out.insert(path.to_string());
            d.dropped = Some("apt".into());
        }
    }
    out
}

/// What the build reads of its own apt layer for the lint: the shared libraries by soname →
/// (path, bytes), and the dpkg `status.d` files (records and md5sums).
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct LayerFacts {
    pub libraries: BTreeMap<String, (String, u64)>,
    pub status: BTreeMap<String, String>,
}

/// What building the apt layer again takes ([`drop_from_apt`]).
pub struct AptRebuild<'r, 'i> {
    pub recipe: &'r Recipe,
    /// The base's packages and files, as the first apt layer was built on them.
    pub base: &'r crate::apt::Base,
    /// Whether the image is on `scratch`.
    pub scratch: bool,
    /// The apt layer's dpkg `status.d` files ([`LayerFacts::status`]).
    pub status: &'r BTreeMap<String, String>,
    pub io: &'r super::Io<'i>,
    pub opts: &'r super::SystemOptions,
}

/// With `[image] drop-unused-copies`: the apt layer built again without its copies that nothing
/// loads ([`apt_drops`]), in the first one's place; their pruning reports go with them.
pub fn drop_from_apt(
    dups: &mut [DuplicateLibrary],
    how: &AptRebuild<'_, '_>,
    sys: &mut super::System,
) -> Result<(), SystemError> {
    let AptRebuild {
        recipe,
        base,
        scratch,
        status,
        io,
        opts,
    } = *how;
    let Some(apt) = &recipe.apt else {
        return Ok(());
    };
    if !dups.iter().any(|d| d.origin == "apt" && d.loads == "wheel") {
        return Ok(());
    }
    let Some(at) = sys.layers.iter().position(|l| l.name == "apt") else {
        return Ok(());
    };
    let drop = apt_drops(dups, status);
    if drop.is_empty() {
        return Ok(());
    }
    let mirrors = super::apt::DebMirrors::of(Some(apt));
    let input = super::apt::LayerInput {
        packages: &sys.apt_packages,
        mirrors: &mirrors,
        base,
        scratch,
        cuda: recipe.image.cuda.as_ref(),
        drop: &drop,
    };
    let (layer, _) = super::apt::layer(&input, io, opts)?;
    sys.layers[at] = layer;
    sys.cuda_libraries
        .retain(|r| !drop.contains(r.path.trim_start_matches('/')));
    Ok(())
}
