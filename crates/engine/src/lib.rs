//! ocibuild-engine: The engine: the recipe and its lock, the base, the system layers, steps, the
//! build, the commands' pipeline (`ops`), push, mirror, the cache repository, vendoring, signatures
//! and the audits.
//!
//! - [`airgap`]: vendor directories (every locked input, content-addressed).
//! - [`audit`]: `diff` and `verify`: comparing images down to files, checking a rebuild.
//! - [`base`]: the base image, resolved through the lock and fetched into the store.
//! - [`build`]: the planner: recipe → layers → image → output.
//! - [`cache_repo`]: the registry as a shared layer cache (entries as small OCI artifacts).
//! - [`lock`]: the lock file, every input pinned by digest.
//! - [`mirror`]: copying images into a registry, digests unchanged.
//! - [`ops`]: the commands' engine: `build`'s pipeline (every platform, attach, write, test, push,
//!   sign) from a request to its outcome, and the one platform loop.
//! - [`outcome`]: what a build did, per platform: the `build --json` document.
//! - [`push`]: pushing a built image to a registry.
//! - [`recipe`]: the recipe TOML schema and its validation.
//! - [`rootfs`]: what maintainer scripts and a Debian base would have made (the baseline
//!   directories, accounts, alternatives), planned without running anything.
//! - [`session`]: a command's inputs and one lock policy: the base, the system layers and the
//!   vendored inputs through the lock, then [`build`]; what [`ops`] calls per platform.
//! - [`sign`]: sigstore signatures and DSSE attestations (ECDSA P-256), signing and checking.
//! - [`steps`]: `[[step]]`, commands run at build time in a podman sandbox whose inputs are
//!   declared; their outputs read back as layers, cached by key and pinned in the lock.
//! - [`system`]: the `[apt]` packages layer, the `[python]` archive layer, the interpreter.
//!
//! Each crate re-exports the floors below it under their module names, so a path reads the
//! same in every crate of the workspace (`crate::digest::Digest`).

pub use ocibuild_apt::apt;
pub use ocibuild_cuda::cuda;
pub use ocibuild_import::import;
pub use ocibuild_layer::layer;
pub use ocibuild_oci::{
    bounded, defaults, diag, digest, fsat, image, json, par, progress, tarbound, unpack,
};
pub use ocibuild_python::python;
pub use ocibuild_run::run;
pub use ocibuild_store::store;
pub use ocibuild_transport::{http, imageref, output, partial, registry};

pub mod airgap;
pub mod audit;
pub mod base;
pub mod build;
pub mod cache_repo;
pub mod lock;
pub mod mirror;
pub mod ops;
pub mod outcome;
pub mod paths;
pub mod push;
pub mod recipe;
pub mod report;
pub mod rootfs;
pub mod session;
pub mod sign;
pub mod steps;
pub mod system;
