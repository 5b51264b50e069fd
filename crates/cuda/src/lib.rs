//! ocibuild-cuda: CUDA libraries read and pruned: fatbins, ELF dynamic sections, which copy of a
//! library the loader picks.
//!
//! - [`cuda`]: GPU code for other GPUs pruned from CUDA libraries' fatbins, in place.
//!
//! Each crate re-exports the floors below it under their module names, so a path reads the
//! same in every crate of the workspace (`crate::digest::Digest`).

pub use ocibuild_oci::{
    bounded, defaults, diag, digest, fsat, image, json, par, progress, tarbound, unpack,
};

pub mod cuda;
