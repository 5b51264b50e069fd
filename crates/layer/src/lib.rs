//! ocibuild-layer: The deterministic layer writer (the determinism contract) and its compressors.
//!
//! - [`layer`]: the deterministic tar writer (the determinism contract) and compressors.
//!
//! Each crate re-exports the floors below it under their module names, so a path reads the
//! same in every crate of the workspace (`crate::digest::Digest`).

pub use ocibuild_oci::{
    bounded, defaults, diag, digest, fsat, image, json, par, progress, tarbound, unpack,
};

pub mod layer;
