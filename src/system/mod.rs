//! The system layers between the base image and the recipe's own layers, and the interpreter.
//!
//! - [`apt`]: `[apt]` resolved through the lock (re-resolved only when the recipe's request
//!   changed or `lock --update` asks), the locked .debs downloaded and verified, one layer.
//! - [`python`]: `[python]`: an interpreter archive layer, and the target [`Interpreter`]
//!   (version, ABI, scheme, glibc) found from the apt packages, the archive or the base, without
//!   running Python.
//!
//! Both layers are cached by a content key over their inputs (the .debs' or archive's sha256,
//! the contract, compressor and epoch), so a rebuild with nothing changed reads no .deb.

pub mod apt;
pub mod python;

use std::io::{self, Read};

use crate::apt::{AptError, Fetcher};
use crate::base::BaseImage;
use crate::digest::Digest;
use crate::json::JsonError;
use crate::layer::{Compression, LayerError};
use crate::lock::Lock;
use crate::progress::Reporter;
use crate::python::Interpreter;
use crate::recipe::{PythonSource, Recipe};
use crate::store::{CachedLayer, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    #[error("[apt]: {0}")]
    Apt(#[from] AptError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Layer(#[from] LayerError),
    #[error(transparent)]
    Json(#[from] JsonError),
    #[error("base layer {digest}: {source}")]
    BaseLayer {
        digest: Digest,
        #[source]
        source: io::Error,
    },
    #[error("[python] archive {url}: {reason}")]
    Archive { url: String, reason: String },
    #[error("[python]: {problem}")]
    Python { problem: String },
    #[error("--frozen: {lock} has no [apt] section, but the recipe has one: run `ocibuild lock` (online)")]
    NotLocked { lock: String },
    #[error(
        "[apt] changed since the lock was written ({what}) and --locked forbids resolving again: \
         run `ocibuild lock` to update {lock}"
    )]
    Stale { what: String, lock: String },
}

/// How a build treats the lock's `[apt]` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AptPin {
    /// Use the locked packages while the recipe's request matches; resolve otherwise.
    Locked,
    /// Resolve again (`ocibuild lock --update`).
    Update,
    /// Fail instead of resolving (`--locked`).
    Frozen,
    /// Use the lock's packages whatever the recipe asks (`--frozen`); fail when it has none.
    AsLocked,
}

/// Layer options for the system layers.
#[derive(Clone, Copy, Debug)]
pub struct SystemOptions {
    pub epoch: u64,
    pub compression: Compression,
    pub threads: usize,
    pub no_cache: bool,
    pub pin: AptPin,
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
    /// Whether the lock changed (and should be saved).
    pub lock_changed: bool,
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

/// Reads what the base brings (installed packages, merged /usr, Python executables, glibc).
pub fn scan_base(store: &Store, base: Option<&BaseImage>) -> Result<crate::apt::Base, SystemError> {
    let Some(base) = base else {
        return Ok(crate::apt::Base::default());
    };
    let streams: Vec<_> = base_streams(store, base).collect::<Result<_, _>>()?;
    Ok(crate::apt::scan_base(streams)?)
}

/// Builds the system layers and finds the interpreter. `lock` is updated in place when `[apt]`
/// was resolved (the caller saves it).
pub fn prepare(
    recipe: &Recipe,
    base: Option<&BaseImage>,
    lock: &mut Lock,
    fetcher: &dyn Fetcher,
    store: &Store,
    opts: &SystemOptions,
    reporter: &dyn Reporter,
) -> Result<System, SystemError> {
    let mut sys = System::default();
    let needs_base_scan = recipe.apt.is_some()
        || matches!(
            recipe.python.as_ref().map(|p| &p.source),
            Some(PythonSource::Auto | PythonSource::Path(_))
        );
    if recipe.apt.is_none() && recipe.python.is_none() {
        return Ok(sys);
    }
    let scanned = if needs_base_scan {
        scan_base(store, base)?
    } else {
        crate::apt::Base::default()
    };
    if let Some(apt) = &recipe.apt {
        let (packages, resolved) =
            apt::resolve_locked(apt, &scanned, lock, fetcher, opts.pin, &recipe.path)?;
        if resolved {
            sys.apt_resolved = Some(packages.len());
            sys.lock_changed = true;
        }
        if !packages.is_empty() {
            sys.layers.push(apt::layer(
                &packages, &scanned, fetcher, store, opts, reporter,
            )?);
        }
        sys.apt_packages = packages;
    }
    let archive = match recipe.python.as_ref().map(|p| &p.source) {
        Some(PythonSource::Archive(a)) => Some(crate::lock::LockedPython {
            url: a.written.clone(),
            sha256: a.sha256,
        }),
        _ => None,
    };
    if lock.python != archive {
        lock.python = archive;
        sys.lock_changed = true;
    }
    if let Some(py) = &recipe.python {
        let (interp, layer) = python::prepare(
            py,
            &recipe.image.platform,
            &sys.apt_packages,
            &scanned,
            fetcher,
            store,
            opts,
            reporter,
        )?;
        if let Some(l) = layer {
            sys.layers.push(l);
        }
        sys.interpreter = Some(interp);
    }
    Ok(sys)
}
