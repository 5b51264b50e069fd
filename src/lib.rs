//! ocibuild: a daemonless, reproducible OCI image builder.
//!
//! This crate is the command line ([`cli`], the only code that prints); the work is done by
//! the workspace's crates, floor by floor, each using only those below it (docs/design.md
//! draws them):
//!
//! - `ocibuild-oci`: The ground floor: digests and canonical JSON, the OCI documents, bounded
//!   reads, diagnostics, progress events, and trees and tars read without following a link out of
//!   their root.
//! - `ocibuild-cuda`: CUDA libraries read and pruned: fatbins, ELF dynamic sections, which copy of
//!   a library the loader picks.
//! - `ocibuild-layer`: The deterministic layer writer (the determinism contract) and its
//!   compressors.
//! - `ocibuild-store`: The content-addressed blob store and the layer cache.
//! - `ocibuild-transport`: Where images come from and go to: the one HTTP layer, the registry
//!   client, the one parser of image references, OCI layouts and archives, partial-pull estimates.
//! - `ocibuild-apt`: Debian packages: signed indices, the resolver, .debs rewritten into a layer.
//! - `ocibuild-python`: The target Python interpreter, wheels and their locks, and wheel layers.
//! - `ocibuild-run`: The test stage's machinery: podman, GPU discovery, the sandbox a build step
//!   runs in, and the built-in cuda-smoke check (the only cudarc and dlopen code).
//! - `ocibuild-import`: `ocibuild import`: a Dockerfile read into a recipe.
//! - `ocibuild-engine`: The engine: the recipe and its lock, the base, the system layers, steps,
//!   the build, the commands' pipeline (`ops`), push, mirror, the cache repository, vendoring,
//!   signatures and the audits.
//!
//! Every module of every floor is re-exported here under its name (`ocibuild::digest`,
//! `ocibuild::ops`), which is how the tests, the examples and the fuzz targets reach them.

pub use ocibuild_apt::apt;
pub use ocibuild_cuda::cuda;
pub use ocibuild_engine::{
    airgap, audit, base, build, cache_repo, lock, mirror, ops, outcome, paths, push, recipe,
    report, rootfs, session, sign, steps, system,
};
pub use ocibuild_import::import;
pub use ocibuild_layer::layer;
pub use ocibuild_oci::{
    bounded, defaults, diag, digest, fsat, image, json, par, progress, tarbound, unpack,
};
pub use ocibuild_python::python;
pub use ocibuild_run::run;
pub use ocibuild_store::store;
pub use ocibuild_transport::{http, imageref, output, partial, registry};

pub mod cli;
