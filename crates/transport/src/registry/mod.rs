//! Registry access: image references, authentication, and an OCI Distribution 1.1 client.
//!
//! - [`reference`]: parse and normalize `[registry/]repository[:tag][@digest]` like docker/podman.
//! - [`auth`]: credentials (auth files, credential helpers), `WWW-Authenticate` challenges,
//!   Bearer token fetch and cache, and the [`auth::Secret`] type that never prints.
//! - [`client`]: manifests (platform selection, digest verification), verified and resumable
//!   blob downloads into the [`crate::store::Store`], and pushes (blobs, mounts, manifests, tags).
//!
//! Nothing here prints: progress goes through [`crate::progress::Reporter`].

pub mod auth;
pub mod client;
pub mod image;
pub mod reference;
pub mod settings;

pub use client::{Client, ClientConfig, RegistryError, RegistryFlags, RegistrySettings};
pub use reference::{Reference, ReferenceError};
