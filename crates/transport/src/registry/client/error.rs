//! [`RegistryError`]: every failure of the registry client, with its context and a hint.

use std::io;

use crate::digest::Digest;
use crate::registry::auth::AuthError;
use crate::registry::reference::ReferenceError;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    #[error("offline: {registry}/{repository}: {action} needs the network; it is not in the store or the vendor directory")]
    Offline {
        registry: String,
        repository: String,
        action: String,
    },
    /// Every mirror failed, then the registry itself: its error, with what each mirror said.
    #[error("{last} (mirrors tried first: {})", mirrors.join("; "))]
    AfterMirrors {
        mirrors: Vec<String>,
        last: Box<RegistryError>,
    },
    #[error("{registry}/{repository}: {action} was refused (HTTP {status}{detail}); {hint}")]
    Unauthorized {
        registry: String,
        repository: String,
        action: String,
        status: u16,
        detail: String,
        hint: String,
    },
    #[error("{registry}/{repository}: authentication failed ({hint})")]
    Auth {
        registry: String,
        repository: String,
        source: Box<AuthError>,
        hint: String,
    },
    #[error("{registry}/{repository}: manifest `{reference}` not found (HTTP {status}{detail}); check that the tag or digest exists (`skopeo list-tags docker://{registry}/{repository}`)")]
    ManifestUnknown {
        registry: String,
        repository: String,
        reference: String,
        status: u16,
        detail: String,
    },
    #[error("{registry}/{repository}: blob {digest} not found (HTTP 404{detail}); the registry lost a blob its manifest names, or the image was deleted: pick another tag or digest")]
    BlobUnknown {
        registry: String,
        repository: String,
        digest: Digest,
        detail: String,
    },
    #[error("{registry}/{repository}: manifest `{reference}` is larger than the limit of {limit} bytes{}; an image manifest is far smaller: check the reference", size.map(|s| format!(" ({s} bytes)")).unwrap_or_default())]
    ManifestTooLarge {
        registry: String,
        repository: String,
        reference: String,
        limit: u64,
        size: Option<u64>,
    },
    #[error("{registry}/{repository}: {what} has digest {}, expected {}; nothing was kept: the registry (or something in between) served other bytes than asked for; retry, and report it to the registry's operator if it persists", digests.found, digests.expected)]
    DigestMismatch {
        registry: String,
        repository: String,
        what: String,
        /// Boxed: two digests inline would make every `RegistryError` larger.
        digests: Box<Digests>,
    },
    #[error("{registry}/{repository}: blob {digest} is {found} bytes (or more), expected {expected}; nothing was kept: the manifest and the blob disagree, or the registry served other bytes")]
    SizeMismatch {
        registry: String,
        repository: String,
        digest: Digest,
        expected: u64,
        found: u64,
    },
    #[error("{registry}/{repository}: `{reference}` has no image for platform {wanted}; it has: {available}. Choose one of those platforms, or another image")]
    NoPlatform {
        registry: String,
        repository: String,
        reference: String,
        wanted: String,
        available: String,
    },
    #[error("{registry}/{repository}: manifest `{reference}`: {problem}")]
    BadManifest {
        registry: String,
        repository: String,
        reference: String,
        problem: String,
    },
    #[error("{registry}/{repository}: {action}: HTTP {status}{detail}{hint}")]
    Status {
        registry: String,
        repository: String,
        action: String,
        status: u16,
        detail: String,
        hint: String,
    },
    #[error("{registry}/{repository}: {action}: {message} (after {attempts} attempt(s)); {hint}")]
    Transport {
        registry: String,
        repository: String,
        action: String,
        attempts: u32,
        message: String,
        hint: String,
    },
    /// The host failed earlier in this command (see [`crate::http::peers`]).
    #[error("{registry}/{repository}: {action}: {problem}; {hint}")]
    Unreachable {
        registry: String,
        repository: String,
        action: String,
        problem: String,
        hint: String,
    },
    #[error("registry {registry}: TLS settings: {problem}")]
    Tls { registry: String, problem: String },
    #[error("{registry}/{repository}: blob {digest}")]
    Store {
        registry: String,
        repository: String,
        digest: Digest,
        source: Box<StoreError>,
    },
    #[error("{registry}/{repository}: reading blob {digest} from the store")]
    Io {
        registry: String,
        repository: String,
        digest: Digest,
        source: io::Error,
    },
}

/// What a [`RegistryError::DigestMismatch`] expected and found.
#[derive(Debug)]
pub struct Digests {
    pub expected: Digest,
    pub found: Digest,
}
