//! ocibuild-transport: Where images come from and go to: the one HTTP layer, the registry client,
//! the one parser of image references, OCI layouts and archives, partial-pull estimates.
//!
//! - [`http`]: the one HTTP layer: the client, bounded waits, retries, redaction,
//!   [`http::Fetcher`].
//! - [`imageref`]: the one parser of images named on the command line (`[oci:]DIR[:TAG]`, archives,
//!   `docker://REF`, digests, `vendor:DIR`), with what each command takes.
//! - [`output`]: OCI layout, oci-archive and docker-archive writers.
//! - [`registry`]: image references, registry auth and the OCI Distribution client.
//!
//! Each crate re-exports the floors below it under their module names, so a path reads the
//! same in every crate of the workspace (`crate::digest::Digest`).

pub use ocibuild_layer::layer;
pub use ocibuild_oci::{
    bounded, defaults, diag, digest, fsat, image, json, par, progress, tarbound, unpack,
};
pub use ocibuild_store::store;

pub mod http;
pub mod imageref;
pub mod output;
pub mod partial;
pub mod registry;
