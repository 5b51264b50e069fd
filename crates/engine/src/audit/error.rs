//! [`AuditError`]: everything `diff` and `verify` can fail with, with the source it concerns.

use std::io;

use crate::digest::Digest;
use crate::registry::RegistryError;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// An image named on the command line that is not one ([`crate::imageref`]'s message).
    #[error(transparent)]
    ImageRef(#[from] crate::imageref::ImageRefError),
    /// An fs-err error: its message already names the path.
    #[error(transparent)]
    Fs(#[from] io::Error),
    #[error("{source_name}: {problem}")]
    Bad {
        source_name: String,
        problem: String,
    },
    #[error("{source_name}: blob {digest} is missing")]
    MissingBlob { source_name: String, digest: Digest },
    #[error("{source_name}: layer {layer} ({digest}): {problem}")]
    Layer {
        source_name: String,
        layer: usize,
        digest: String,
        problem: String,
    },
    #[error("--platform `{value}`: {problem}")]
    Platform { value: String, problem: String },
    #[error(transparent)]
    Registry(Box<RegistryError>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Layout(#[from] crate::output::ReadError),
    /// Opening or reading an image ([`crate::image::source`]).
    #[error(transparent)]
    Source(#[from] crate::image::source::SourceError),
}

impl From<RegistryError> for AuditError {
    fn from(e: RegistryError) -> Self {
        AuditError::Registry(Box::new(e))
    }
}
