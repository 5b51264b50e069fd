//! The system layers between the base image and the recipe's own layers, and the interpreter.
//!
//! - [`apt`]: `[apt]` resolved through the lock (re-resolved only when the recipe's request
//!   changed or `lock --update` asks), the locked .debs downloaded and verified, one layer.
//! - [`python`]: `[python]`: an interpreter archive layer, and the target [`Interpreter`]
//!   (version, ABI, scheme, glibc) found from the apt packages, the archive or the base, without
//!   running Python.
//!
//! - [`rootfs`]: the `rootfs` layer above the packages: baseline, accounts, alternatives.
//!
//! These layers are cached by a content key over their inputs (the .debs' or archive's sha256,
//! the contract, compressor and epoch), so a rebuild with nothing changed reads no .deb.

pub mod apt;
pub mod copies;
pub mod listing;
pub mod project;
pub mod python;
pub mod rootfs;
pub mod sdist;
pub mod uv;
pub mod wheels;
pub mod wheelset;

mod prepare;

use std::io::{self, Read};

use crate::apt::AptError;
use crate::base::BaseImage;
use crate::cuda::CudaReport;
use crate::digest::Digest;
use crate::http::Fetcher;
use crate::json::JsonError;
use crate::layer::{Compression, LayerError};
use crate::lock::{Lock, LockPolicy};
use crate::progress::Reporter;
use crate::python::Interpreter;
use crate::recipe::{PythonSource, Recipe};
use crate::store::{CachedLayer, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    #[error("[apt]")]
    Apt(#[from] AptError),
    /// A resolver error about one of the recipe's own requests, with where it is written.
    #[error("{at}: [apt]")]
    AptRequest {
        at: String,
        #[source]
        source: Box<AptError>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Layer(#[from] LayerError),
    #[error(transparent)]
    Json(#[from] JsonError),
    #[error("base layer {digest}")]
    BaseLayer {
        digest: Digest,
        #[source]
        source: io::Error,
    },
    /// A layer this build made (the apt layer), read back from the store.
    #[error("reading layer {digest} back from the store")]
    BuiltLayer {
        digest: Digest,
        #[source]
        source: io::Error,
    },
    #[error("[python] archive {url}: {reason}")]
    Archive { url: String, reason: String },
    #[error("[python]: {problem}")]
    Python { problem: String },
    #[error(
        "{at}: [python]: the recipe asks for Python {want}, but the interpreter found is {found} \
         ({exe})"
    )]
    PythonVersion {
        at: String,
        want: String,
        found: String,
        exe: String,
    },
    #[error("--frozen: {lock} has no [apt] section, but the recipe has one: run `ocibuild lock` (online)")]
    NotLocked { lock: String },
    #[error(
        "{section} changed since the lock was written ({what}) and --locked forbids resolving \
         again: run `ocibuild lock` to update {lock}"
    )]
    StaleLock {
        section: String,
        what: String,
        lock: String,
    },
    #[error(
        "[apt] source {url}: {lock} was resolved for suite `{locked}`, the recipe names \
         `{recipe}`: another release, whose packages replace every one the lock pins; resolve \
         it for `{recipe}` with `ocibuild lock --update`"
    )]
    OtherRelease {
        url: String,
        locked: String,
        recipe: String,
        lock: String,
    },
    #[error("python package `{package}`: {reason}")]
    Wheel { package: String, reason: String },
    // These say only their own part and leave the cause to the chain, which the CLI prints
    // (`{:#}`): a message that also embedded it would say it twice.
    #[error("[python] wheels")]
    WheelSet(#[source] crate::python::wheel::WheelError),
    #[error("[python] wheels")]
    WheelPlan(#[source] crate::python::plan::PlanError),
    #[error("python package `{package}`")]
    WheelListing {
        package: String,
        #[source]
        error: crate::python::wheel::WheelError,
    },
    #[error("wheel layer `{layer}`")]
    WheelLayer {
        layer: String,
        #[source]
        error: crate::python::wheel::WheelError,
    },
    #[error("{what}: fetching {url}: {reason}")]
    Fetch {
        what: String,
        url: String,
        reason: String,
    },
    #[error("{0}")]
    HashMismatch(Box<FetchMismatch>),
    #[error(transparent)]
    Rootfs(#[from] crate::rootfs::RootfsError),
    #[error("python package `{package}`: the lock pins a wheel built from its sdist, but [python] names no `sdist-builder` to build it in: add `sdist-builder = {{ recipe = \"builder.toml\" }}` (or a registry image), or run `ocibuild lock --update`")]
    NoSdistBuilder { package: String },
    #[error("python package `{package}`: building its sdist")]
    Sdist {
        package: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("python package `{package}`: the wheel built from its sdist, {wheel}: {reason}")]
    BuiltWheel {
        package: String,
        wheel: String,
        reason: String,
    },
    #[error("python package `{package}`: its sdist built again gives {found}, the lock pins {expected}: the build is not reproducible (its step says why when its output changed); `ocibuild lock` pins the new wheel")]
    BuiltWheelChanged {
        package: String,
        expected: String,
        found: String,
    },
    #[error("{at}: [python] project: {problem}")]
    Project { at: String, problem: String },
    #[error("{at}: [python] project: `{project}` is a virtual project in uv.lock (`[tool.uv] package = false`, or no [build-system]): uv does not build it, and neither does ocibuild; give it a [build-system] (and `uv lock`), or leave `project` out and install its files with a [[layer]]")]
    VirtualProject { at: String, project: String },
    #[error("[python] project `{project}`: building its wheel")]
    ProjectBuild {
        project: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("[python] project `{project}`: the wheel its backend built, {wheel}: {reason}")]
    ProjectWheel {
        project: String,
        wheel: String,
        reason: String,
    },
    #[error("[python] project `{project}`: its files are those the lock pins, but its wheel built again is {found}, the lock pins {expected}: the build is not reproducible; `ocibuild lock` pins the new wheel")]
    ProjectWheelChanged {
        project: String,
        expected: String,
        found: String,
    },
}

impl std::fmt::Display for FetchMismatch {
    /// A size that differs is said as such (a truncated or padded download), before the hash.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.expected_size {
            Some(size) if size != self.found_size => write!(
                f,
                "{} ({}): size mismatch: expected {size} bytes, found {} (sha256 {}, expected {})",
                self.what, self.url, self.found_size, self.found, self.expected
            ),
            _ => write!(
                f,
                "{} ({}): sha256 mismatch: expected {}, found {} ({} bytes)",
                self.what, self.url, self.expected, self.found, self.found_size
            ),
        }
    }
}

/// The details of [`SystemError::HashMismatch`].
#[derive(Debug)]
pub struct FetchMismatch {
    pub what: String,
    pub url: String,
    pub expected: Digest,
    pub expected_size: Option<u64>,
    pub found: Digest,
    pub found_size: u64,
}

/// Fetches `url` into the store unless the blob is there, verified by sha256 (and size when
/// known) as it streams; nothing is committed on a mismatch. Returns the blob's path.
pub fn fetch_verified(
    fetcher: &dyn Fetcher,
    store: &Store,
    url: &str,
    sha256: Digest,
    size: Option<u64>,
    what: &str,
) -> Result<std::path::PathBuf, SystemError> {
    if store.has_blob(&sha256) {
        return Ok(store.blob_path(&sha256));
    }
    let fetch_err = |reason: String| SystemError::Fetch {
        what: what.to_string(),
        url: url.to_string(),
        reason,
    };
    let r = fetcher
        .open(url)
        .map_err(|e| fetch_err(crate::diag::chain(&e)))?
        .ok_or_else(|| fetch_err("not found (HTTP 404, or no such file)".into()))?;
    let mut w = store.blob_writer()?;
    let mut hr = crate::digest::HashingReader::new(r);
    // A size bound, so a wrong server cannot fill the disk: one byte past the expected size is
    // enough to know it is wrong.
    let limit = size.map(|s| s + 1).unwrap_or(u64::MAX);
    io::copy(&mut (&mut hr).take(limit), &mut w).map_err(|e| fetch_err(e.to_string()))?;
    let (_, found, found_size) = hr.finish();
    if found != sha256 || size.is_some_and(|s| s != found_size) {
        return Err(SystemError::HashMismatch(Box::new(FetchMismatch {
            what: what.to_string(),
            url: url.to_string(),
            expected: sha256,
            expected_size: size,
            found,
            found_size,
        })));
    }
    w.commit(Some(sha256))?;
    Ok(store.blob_path(&sha256))
}

/// `f` over `items` on up to `n` threads; results in input order.
pub use crate::par::map_in_order as parallel_map;

/// Layer options for the system layers.
#[derive(Clone, Copy, Debug)]
pub struct SystemOptions {
    pub epoch: u64,
    pub compression: Compression,
    pub threads: usize,
    pub no_cache: bool,
    pub pin: LockPolicy,
    /// Accept an `[apt]` resolution that lowers a version the lock pins (`lock
    /// --allow-downgrade`).
    pub allow_downgrade: bool,
    /// Build the apt and wheel layers; `false` only resolves into the lock (`ocibuild lock`:
    /// the interpreter archive is still unpacked, since its version comes from its files).
    pub build_layers: bool,
}

/// Where the system layers' inputs come from and go: the downloads (`.debs`, archives,
/// wheels), the store, and the progress of both.
#[derive(Clone, Copy)]
pub struct Io<'a> {
    pub fetcher: &'a dyn Fetcher,
    pub store: &'a Store,
    pub reporter: &'a dyn Reporter,
    /// Where sdists are built into wheels (`[python] sdist-builder`); `None` refuses them.
    pub sdists: Option<&'a dyn sdist::SdistBuilder>,
    /// Where `[python] project` is built into a wheel (the same builder).
    pub project: Option<&'a dyn project::ProjectBuilder>,
}

/// A layer built (or found in the cache) by this module.
#[derive(Clone, Debug)]
pub struct Extra {
    /// `apt`, `python`.
    pub name: String,
    pub layer: CachedLayer,
    pub cached: bool,
    /// The history entry's `created_by`.
    pub created_by: String,
}

impl Extra {
    /// The layer cached under `key`, unless `no_cache`; reported as cached when found.
    pub(crate) fn from_cache(
        store: &Store,
        key: &Digest,
        no_cache: bool,
        name: &str,
        created_by: &str,
        reporter: &dyn Reporter,
    ) -> Result<Option<Extra>, StoreError> {
        if no_cache {
            reporter.detail(&format!("layer {name}: building (--no-cache)"));
            return Ok(None);
        }
        let Some(layer) = store.cached_layer(key)? else {
            reporter.detail(&format!(
                "layer {name}: building (no layer cache entry for key {key})"
            ));
            return Ok(None);
        };
        reporter.detail(&format!(
            "layer {name}: cached as {} (key {key})",
            layer.digest
        ));
        reporter.layer_finished(name, true);
        Ok(Some(Extra {
            name: name.to_string(),
            layer,
            cached: true,
            created_by: created_by.to_string(),
        }))
    }

    /// A layer just built: recorded in the cache under `key` and reported as built.
    pub(crate) fn built(
        store: &Store,
        key: &Digest,
        layer: CachedLayer,
        name: String,
        created_by: String,
        reporter: &dyn Reporter,
    ) -> Result<Extra, StoreError> {
        store.put_cached_layer(key, &layer)?;
        reporter.layer_finished(&name, false);
        Ok(Extra {
            name,
            layer,
            cached: false,
            created_by,
        })
    }
}

/// What [`prepare`] produced.
#[derive(Clone, Debug, Default)]
pub struct System {
    /// In image order (above the base, below the recipe's layers).
    pub layers: Vec<Extra>,
    pub interpreter: Option<Interpreter>,
    /// Whether `[apt]` was resolved (and the lock changed), with the package count.
    pub apt_resolved: Option<usize>,
    /// Packages the layer installs (after the base's were left out).
    pub apt_packages: Vec<crate::lock::LockedDeb>,
    /// The `[apt] host-provides` names, each with the dependencies it satisfied (the lock's).
    pub host_provides: Vec<crate::lock::LockedHostProvides>,
    /// What the user should know but that stops nothing (a `host-provides` name nothing
    /// depends on); printed by the CLI.
    pub warnings: Vec<String>,
    /// Whether the wheels were resolved (and the lock changed), with their count.
    pub wheels_resolved: Option<usize>,
    /// The wheels installed.
    pub wheels: Vec<crate::lock::LockedWheel>,
    /// How the wheels share paths, and the shared libraries the base already has.
    pub wheel_report: wheelset::WheelReport,
    /// Whether the lock changed (and should be saved).
    pub lock_changed: bool,
    /// With `[image] cuda-archs`: each CUDA library of the apt and wheel layers, and what
    /// pruning did to it (gathered into `wheel_report.cuda` at the end).
    pub cuda_libraries: Vec<crate::cuda::LibraryReport>,
    /// What the `rootfs` layer holds and which maintainer scripts were not run; `None` when
    /// the image gets no `rootfs` step (no `[apt]`, `[python]` or `[accounts]`).
    pub rootfs: Option<crate::rootfs::Report>,
}

/// The base image's layers as uncompressed tar streams, lowest first.
pub fn base_streams<'a>(
    store: &'a Store,
    base: &'a BaseImage,
) -> impl Iterator<Item = Result<(String, Box<dyn Read + 'a>), SystemError>> + 'a {
    base.layers.iter().map(move |l| {
        let d = l.descriptor.digest;
        let f = store.open_blob(&d)?;
        let r = crate::layer::decompressor(&l.descriptor.media_type, io::BufReader::new(f))
            .map_err(|source| SystemError::BaseLayer { digest: d, source })?;
        Ok((d.to_string(), r))
    })
}

/// Reads what the base brings (installed packages, merged /usr, Python executables, glibc),
/// from its cached facts ([`base_facts`]).
pub fn scan_base(store: &Store, base: Option<&BaseImage>) -> Result<crate::apt::Base, SystemError> {
    let Some(base) = base else {
        return Ok(crate::apt::Base::default());
    };
    Ok(base_facts(store, base)?.base()?)
}

/// The key the base's facts are cached under: its layers' digests (the same layers under
/// another manifest share them).
fn base_facts_key(base: &BaseImage) -> Result<Digest, SystemError> {
    let v = serde_json::json!({
        "kind": "base-facts",
        "version": 1,
        "layers": base.layers.iter().map(|l| l.descriptor.digest.to_string()).collect::<Vec<_>>(),
    });
    Ok(Digest::of(&crate::json::to_canonical_vec(
        "base facts key",
        &v,
    )?))
}

/// What the base's layers hold that `[apt]`, `[python]` and the rootfs step read, read once
/// and cached (in the store, and in a shared cache behind it) under [`base_facts_key`]: a
/// build whose facts are cached reads none of the base's layers.
pub fn base_facts(
    store: &Store,
    base: &BaseImage,
) -> Result<crate::apt::base::BaseFacts, SystemError> {
    let key = base_facts_key(base)?;
    if let Some(bytes) = store.meta(&key)? {
        if let Ok(found) = serde_json::from_slice(&bytes) {
            return Ok(found);
        }
    }
    let streams: Vec<_> = base_streams(store, base).collect::<Result<_, _>>()?;
    let facts = crate::apt::base::scan_facts(streams)?;
    let bytes = serde_json::to_vec(&facts).map_err(|e| SystemError::Python {
        problem: format!("caching the base's facts: {e}"),
    })?;
    store.put_meta(&key, &bytes)?;
    Ok(facts)
}

/// Whether the base's facts are cached (in the store or the shared cache behind it), so that
/// its layers need not be downloaded to read them.
pub fn base_facts_known(store: &Store, base: &BaseImage) -> Result<bool, SystemError> {
    let key = base_facts_key(base)?;
    Ok(store
        .meta(&key)?
        .is_some_and(|b| serde_json::from_slice::<crate::apt::base::BaseFacts>(&b).is_ok()))
}

/// The base's shared libraries by soname (see [`crate::apt::Base::libraries`]), for a build
/// that reads nothing else from the base: cached under its layers' digests, so only the first
/// build on a base pays for reading it. `None` for a shallow base, whose layers were never
/// downloaded.
fn base_libraries(
    store: &Store,
    base: Option<&BaseImage>,
) -> Result<Option<wheelset::Libraries>, SystemError> {
    let Some(b) = base else {
        return Ok(Some(Default::default()));
    };
    let downloaded = b
        .layers
        .iter()
        .all(|l| store.has_blob(&l.descriptor.digest));
    if !downloaded && !base_facts_known(store, b)? {
        return Ok(None);
    }
    Ok(Some(base_facts(store, b)?.libraries))
}

/// The shared libraries by soname of one layer the build made (the apt layer), and its dpkg
/// `status.d` files (what [`copies::apt_drops`] reads), read once and cached in the store under
/// its diff_id: Debian's libcublas12 and a wheel's nvidia-cublas-cu12 are the same library twice,
/// as much as the base's copy would be.
fn layer_facts(store: &Store, layer: &CachedLayer) -> Result<copies::LayerFacts, SystemError> {
    let v = serde_json::json!({
        "kind": "layer-libraries",
        "version": 2,
        "diffId": layer.diff_id.to_string(),
    });
    let key = Digest::of(&crate::json::to_canonical_vec("layer libraries key", &v)?);
    if let Some(bytes) = store.meta(&key)? {
        if let Ok(found) = serde_json::from_slice(&bytes) {
            return Ok(found);
        }
    }
    let f = store.open_blob(&layer.digest)?;
    let r =
        crate::layer::decompressor(&layer.media_type, io::BufReader::new(f)).map_err(|source| {
            SystemError::BuiltLayer {
                digest: layer.digest,
                source,
            }
        })?;
    let facts = crate::apt::base::scan_facts([(layer.digest.to_string(), r)])?;
    let found = copies::LayerFacts {
        libraries: facts.libraries,
        status: facts.status,
    };
    let bytes = serde_json::to_vec(&found).map_err(|e| SystemError::Python {
        problem: format!("caching the apt layer's libraries: {e}"),
    })?;
    store.put_meta(&key, &bytes)?;
    Ok(found)
}

/// The base's account files (`etc/passwd`, `etc/group`, `etc/shadow`), from its cached facts.
fn base_accounts(
    store: &Store,
    base: Option<&BaseImage>,
) -> Result<std::collections::BTreeMap<String, String>, SystemError> {
    let Some(b) = base else {
        return Ok(Default::default());
    };
    Ok(base_facts(store, b)?.accounts)
}

/// Whether the image gets the `rootfs` step ([`Recipe::has_rootfs_step`]).
pub fn needs_rootfs(recipe: &Recipe) -> bool {
    recipe.has_rootfs_step()
}

/// `[apt]` (nothing without it): the packages through the lock, their layer, and the
/// `host-provides` they use.
fn apt_step(
    recipe: &Recipe,
    scanned: &crate::apt::Base,
    scratch: bool,
    lock: &mut Lock,
    io: &Io<'_>,
    opts: &SystemOptions,
    sys: &mut System,
) -> Result<(), SystemError> {
    let Some(apt) = &recipe.apt else {
        return Ok(());
    };
    let (packages, resolved) = apt::resolve_locked(apt, scanned, lock, io, opts, &recipe.path)?;
    if resolved {
        sys.apt_resolved = Some(packages.len());
        sys.lock_changed = true;
    }
    if !packages.is_empty() && opts.build_layers {
        let mirrors = apt::DebMirrors::of(Some(apt));
        let input = apt::LayerInput {
            packages: &packages,
            mirrors: &mirrors,
            base: scanned,
            scratch,
            cuda: recipe.image.cuda.as_ref(),
            drop: &Default::default(),
        };
        let (layer, report) = apt::layer(&input, io, opts)?;
        sys.layers.push(layer);
        sys.cuda_libraries.extend(report);
    }
    sys.apt_packages = packages;
    sys.host_provides = lock
        .apt
        .as_ref()
        .map(|l| l.host_provides.clone())
        .unwrap_or_default();
    sys.warnings
        .extend(apt::host_provides_warnings(&sys.host_provides));
    Ok(())
}

/// The listing of the base's files, when its layers are in the store (`None` on scratch, for a
/// shallow base, or a lazy hit from a cache repository).
fn base_files(
    store: &Store,
    base: Option<&BaseImage>,
) -> Result<Option<crate::rootfs::listing::Listing>, SystemError> {
    let Some(b) = base else {
        return Ok(None);
    };
    let layers: Vec<_> = b
        .layers
        .iter()
        .map(|l| (l.descriptor.digest, l.descriptor.media_type.clone()))
        .collect();
    listing::image_listing(store, &layers)
}

/// The lock's `[python]` archive pin set to the recipe's: whether it changed.
fn pin_archive(recipe: &Recipe, lock: &mut Lock) -> bool {
    let archive = match recipe.python.as_ref().map(|p| &p.source) {
        Some(PythonSource::Archive(a)) => Some(crate::lock::LockedPython {
            url: a.written.clone(),
            sha256: a.sha256,
        }),
        _ => None,
    };
    if lock.python == archive {
        return false;
    }
    lock.python = archive;
    true
}

/// Builds the system layers and finds the interpreter. `lock` is updated in place when `[apt]`
/// was resolved (the caller saves it).
pub fn prepare(
    recipe: &Recipe,
    base: Option<&BaseImage>,
    lock: &mut Lock,
    io: Io<'_>,
    opts: &SystemOptions,
) -> Result<System, SystemError> {
    // A --no-cache build reads every wheel again, and the wheel analysis checks each one first
    // (Store::has_blob: hashed unless sealed, then sealed). The locked wheels already in the
    // store are checked here instead, on a thread of their own while the apt and rootfs layers
    // build (they leave a core idle), so the analysis finds them sealed; it waits for this
    // thread first, so no wheel is hashed twice (bench/torch.sh: 4 GB of sha256 moved off the
    // critical path).
    let wheels: Vec<Digest> = if opts.no_cache && opts.build_layers && opts.threads > 1 {
        lock.wheels.iter().map(|w| w.sha256).collect()
    } else {
        Vec::new()
    };
    let store = io.store;
    std::thread::scope(|s| {
        let check = || {
            for d in &wheels {
                // Its answer is the analysis's to act on: a missing blob is fetched there.
                let _ = store.has_blob(d);
            }
        };
        let checking = if wheels.is_empty() {
            None
        } else {
            std::thread::Builder::new().spawn_scoped(s, check).ok()
        };
        prepare_layers(recipe, base, lock, io, opts, checking)
    })
}

/// [`prepare`], with the thread checking the wheels' blobs to wait for before the wheel layers.
fn prepare_layers(
    recipe: &Recipe,
    base: Option<&BaseImage>,
    lock: &mut Lock,
    io: Io<'_>,
    opts: &SystemOptions,
    mut checking: Option<std::thread::ScopedJoinHandle<'_, ()>>,
) -> Result<System, SystemError> {
    let mut sys = System::default();
    let store = io.store;
    let rootfs = needs_rootfs(recipe);
    let needs_base_scan = recipe.apt.is_some()
        || matches!(
            recipe.python.as_ref().map(|p| &p.source),
            Some(PythonSource::Auto | PythonSource::Path(_))
        );
    if !rootfs {
        return Ok(sys);
    }
    let scanned = if needs_base_scan {
        scan_base(store, base)?
    } else {
        crate::apt::Base::default()
    };
    apt_step(recipe, &scanned, base.is_none(), lock, &io, opts, &mut sys)?;
    let step = prepare::Prepare {
        recipe,
        base,
        io,
        opts,
        scanned: &scanned,
        needs_base_scan,
    };
    if opts.build_layers {
        step.rootfs_layer(&mut sys)?;
    }
    sys.lock_changed |= pin_archive(recipe, lock);
    if let Some(py) = &recipe.python {
        step.python_step(py, lock, &mut checking, &mut sys)?;
    }
    if let Some(t) = &recipe.image.cuda {
        let mut libraries = std::mem::take(&mut sys.cuda_libraries);
        libraries.sort_by(|a, b| a.path.cmp(&b.path));
        sys.wheel_report.cuda = Some(CudaReport {
            archs: t.names(),
            ptx: t.ptx.as_str().to_string(),
            libraries,
        });
    }
    Ok(sys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_mismatch_is_said_as_such() {
        let m = |expected_size| FetchMismatch {
            what: "deb x".into(),
            url: "https://h/x.deb".into(),
            expected: Digest::of(b"a"),
            expected_size,
            found: Digest::of(b"b"),
            found_size: 10,
        };
        assert!(m(Some(12)).to_string().starts_with(
            "deb x (https://h/x.deb): size mismatch: expected 12 bytes, found 10 (sha256 "
        ));
        assert!(m(Some(10))
            .to_string()
            .contains(": sha256 mismatch: expected "));
        assert!(m(None).to_string().contains(": sha256 mismatch: expected "));
    }
}
