//! ocibuild-python: The target Python interpreter, wheels and their locks, and wheel layers.
//!
//! - [`python`]: the target Python interpreter and wheels.
//!
//! Each crate re-exports the floors below it under their module names, so a path reads the
//! same in every crate of the workspace (`crate::digest::Digest`).

pub use ocibuild_cuda::cuda;
pub use ocibuild_layer::layer;
pub use ocibuild_oci::{
    bounded, defaults, diag, digest, fsat, image, json, par, progress, tarbound, unpack,
};
pub use ocibuild_store::store;
pub use ocibuild_transport::{http, imageref, output, partial, registry};

pub mod python;
