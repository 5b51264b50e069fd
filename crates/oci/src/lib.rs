//! ocibuild-oci: The ground floor: digests and canonical JSON, the OCI documents, bounded reads,
//! diagnostics, progress events, and trees and tars read without following a link out of their
//! root.
//!
//! - [`bounded`]: small input files read as regular files with a bound; long values clipped in
//!   messages.
//! - [`defaults`]: default index, archive and registry locations.
//! - [`diag`]: where in a TOML file a problem is, and did-you-mean for misspelt names.
//! - [`fsat`]: trees read through directory handles, never through a symlink below the root.
//! - [`image`]: OCI config, manifest and index documents.
//! - [`par`]: work spread over a few threads, results in input order.
//! - [`progress`]: the one trait progress events go through.
//! - [`unpack`]: unpacking an untrusted tar beneath a root, never following a link.
//!
//! Each crate re-exports the floors below it under their module names, so a path reads the
//! same in every crate of the workspace (`crate::digest::Digest`).

pub mod bounded;
pub mod defaults;
pub mod diag;
pub mod digest;
pub mod fsat;
pub mod image;
pub mod json;
pub mod par;
pub mod progress;
pub mod tarbound;
pub mod unpack;
