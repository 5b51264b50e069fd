//! ocibuild-import: `ocibuild import`: a Dockerfile read into a recipe.
//!
//! - [`import`]: `ocibuild import`: a Dockerfile read into a recipe, with a table of what each
//!   instruction became.
//!
//! Each crate re-exports the floors below it under their module names, so a path reads the
//! same in every crate of the workspace (`crate::digest::Digest`).

pub use ocibuild_oci::{
    bounded, defaults, diag, digest, fsat, image, json, par, progress, tarbound, unpack,
};

pub mod import;
