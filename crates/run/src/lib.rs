//! ocibuild-run: The test stage's machinery: podman, GPU discovery, the sandbox a build step runs
//! in, and the built-in cuda-smoke check (the only cudarc and dlopen code).
//!
//! - [`run`]: the test stage (podman, GPU discovery) and the built-in cuda-smoke check; the sandbox
//!   a build step runs in.
//!
//! Each crate re-exports the floors below it under their module names, so a path reads the
//! same in every crate of the workspace (`crate::digest::Digest`).

pub use ocibuild_layer::layer;
pub use ocibuild_oci::{
    bounded, defaults, diag, digest, fsat, image, json, par, progress, tarbound, unpack,
};
pub use ocibuild_store::store;
pub use ocibuild_transport::{http, imageref, output, partial, registry};

pub mod run;
