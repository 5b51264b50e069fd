//! Reproducibility audits (`ocibuild diff`, `ocibuild verify`).
//!
//! - [`source`]: open an image from an OCI layout, an oci-archive or docker-archive tar, a
//!   registry, or a store, as one uniform view (manifest, config, layers as tar streams).
//! - [`import`]: an oci-archive or docker-archive copied into a store as an OCI image (for
//!   `push`).
//! - [`tarmeta`]: one streaming pass over a layer tar → per-file metadata and content digests.
//! - [`diff`]: the comparison of two images, down to files; [`render`]: its text form.
//! - [`verify`]: a rebuild against a target.
//! - [`sbom`], [`provenance`]: SPDX / CycloneDX SBOMs and an in-toto SLSA provenance statement,
//!   made from the lock and the built image; [`attest`]: their inputs, and attaching them to the
//!   image as OCI 1.1 artifacts (referrers).
//!
//! Nothing here prints.

mod error;

pub mod attest;
pub mod attest_types;
pub mod change;
pub mod diff;
pub mod import;
pub mod license;
pub mod naming;
pub mod packages;
pub mod provenance;
pub mod render;
pub mod sbom;
mod sbom_items;
pub mod source;
pub mod supplier;
pub mod tarmeta;
pub mod verify;

pub use diff::{diff, DiffOptions, DiffReport, Outcome};
pub use error::AuditError;
pub use source::{open, open_store, Image, OpenOptions};
pub use verify::{verify, InputMismatch, VerifyReport};
