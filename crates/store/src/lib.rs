//! ocibuild-store: The content-addressed blob store and the layer cache.
//!
//! - [`store`]: the content-addressed blob store and the layer cache.
//!
//! Each crate re-exports the floors below it under their module names, so a path reads the
//! same in every crate of the workspace (`crate::digest::Digest`).

pub use ocibuild_layer::layer;
pub use ocibuild_oci::{
    bounded, defaults, diag, digest, fsat, image, json, par, progress, tarbound, unpack,
};

pub mod store;
