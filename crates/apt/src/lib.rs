//! ocibuild-apt: Debian packages: signed indices, the resolver, .debs rewritten into a layer.
//!
//! - [`apt`]: Debian/Ubuntu packages: signed indices, a resolver, and .debs rewritten into a layer
//!   (driven by [`system`] for the recipe's `[apt]`).
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

pub mod apt;
