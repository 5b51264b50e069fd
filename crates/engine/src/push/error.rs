//! [`PushError`]: what a push, a signature's or an attachment's, fails with.

use crate::digest::Digest;
use crate::registry::RegistryError;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error(transparent)]
    Registry(Box<RegistryError>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("manifest {digest} is not an image manifest")]
    BadManifest {
        digest: Digest,
        source: serde_json::Error,
    },
    #[error("{repository}: the referrers tag `{tag}` holds something other than an image index ({problem}); delete that tag or push the artifacts elsewhere")]
    BadReferrersIndex {
        repository: String,
        tag: String,
        problem: String,
    },
    /// The image or index pushed, as read from its store.
    #[error(transparent)]
    Source(#[from] crate::image::source::SourceError),
    #[error(transparent)]
    Json(#[from] crate::json::JsonError),
    #[error("{target} names digest {named}, but the image pushed is {manifest}: push to a tag, or to the digest of this image")]
    DigestMismatch {
        target: String,
        named: Digest,
        manifest: Digest,
    },
}

impl From<RegistryError> for PushError {
    fn from(e: RegistryError) -> Self {
        PushError::Registry(Box::new(e))
    }
}
