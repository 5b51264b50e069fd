//! Reproducibility audits (`ocibuild diff`, `ocibuild verify`).
//!
//! - [`source`]: open an image from an OCI layout, an oci-archive or docker-archive tar, a
//!   registry, or a store, as one uniform view (manifest, config, layers as tar streams).
//! - [`tarmeta`]: one streaming pass over a layer tar → per-file metadata and content digests.
//! - [`diff`]: the comparison of two images, down to files; [`render`]: its text form.
//! - [`verify`]: a rebuild against a target.
//!
//! Nothing here prints.

mod error;

pub mod diff;
pub mod render;
pub mod source;
pub mod tarmeta;
pub mod verify;

pub use diff::{diff, DiffOptions, DiffReport, Outcome};
pub use error::AuditError;
pub use source::{open, open_store, Image, OpenOptions, Spec};
pub use verify::{verify, VerifyReport};
