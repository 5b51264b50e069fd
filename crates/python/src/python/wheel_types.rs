//! What installing wheels shares: the error, the wheel to install, the contested file of an
//! overlap, the install contract's version, and the scheme as cache keys hold it.

use std::collections::BTreeSet;
use std::io;
use std::path::PathBuf;

use super::interpreter::Interpreter;
use super::tags::WheelFile;
use crate::digest::Digest;
use crate::json::JsonError;
use crate::layer::LayerError;
use crate::store::StoreError;

/// Bump when the installed bytes change for the same inputs (part of [`super::wheel::layer_key`]).
pub(super) const INSTALL_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum WheelError {
    #[error("I/O error on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Layer(#[from] LayerError),
    #[error(transparent)]
    Json(#[from] JsonError),
    #[error("{wheel}: expected sha256 {expected}, the file has {found}")]
    WheelHash {
        wheel: String,
        expected: Digest,
        found: Digest,
    },
    #[error("{wheel}: cannot read the zip archive")]
    Zip {
        wheel: String,
        #[source]
        source: zip::result::ZipError,
    },
    #[error("{wheel}: {reason}")]
    Format { wheel: String, reason: String },
    #[error("{wheel}: member `{member}`: {reason}")]
    BadPath {
        wheel: String,
        member: String,
        reason: &'static str,
    },
    #[error("{wheel}: member `{member}` is not listed in RECORD")]
    NotInRecord { wheel: String, member: String },
    #[error("{wheel}: RECORD lists `{member}`, which the wheel does not contain")]
    MissingMember { wheel: String, member: String },
    #[error(
        "{wheel}: member `{member}` does not match RECORD: expected {expected}, found {found}"
    )]
    RecordMismatch {
        wheel: String,
        member: String,
        expected: String,
        found: String,
    },
    /// A member that inflates to other bytes than the zip's CRC-32 says: a damaged wheel, or
    /// a store blob changed under an unchanged seal (its RECORD check recorded).
    #[error(
        "{wheel}: member `{member}` does not match the zip's CRC-32 (expected {expected:08x}, found {found:08x})"
    )]
    CrcMismatch {
        wheel: String,
        member: String,
        expected: u32,
        found: u32,
    },
    #[error("`/{path}` is installed twice: by {first} and by {second}")]
    Conflict {
        path: String,
        first: String,
        second: String,
    },
    #[error(
        "`/{}` is installed with different content by {} (sha256 {}, mode {:o}) and by {} \
         (sha256 {}, mode {:o}): set `[python] overlap = \"last\"` to install the file of the \
         wheel later in lock order",
        .0.path, .0.first.wheel, .0.first.sha256.hex(), .0.first.mode,
        .0.second.wheel, .0.second.sha256.hex(), .0.second.mode
    )]
    ContentConflict(Box<ContentConflict>),
    #[error(
        "`/{path}` is a file in {file_wheel} and a directory in {dir_wheel} (which installs \
         files beneath it): no install order gives both"
    )]
    FileOverDirectory {
        path: String,
        file_wheel: String,
        dir_wheel: String,
    },
    #[error("{wheel}: entry_points.txt line {line}: {reason}")]
    EntryPoint {
        wheel: String,
        line: usize,
        reason: String,
    },
}

/// The details of [`WheelError::ContentConflict`]: the path, and each wheel's file.
#[derive(Debug)]
pub struct ContentConflict {
    pub path: String,
    pub first: WheelFileAt,
    pub second: WheelFileAt,
}

/// One wheel's file at a contested path: the wheel (file name), its content's sha256, its mode.
#[derive(Debug)]
pub struct WheelFileAt {
    pub wheel: String,
    pub sha256: Digest,
    pub mode: u32,
}

/// One wheel to install: a `.whl` file already checked against the lock's sha256 (checked
/// again here before anything in it is believed: hashed, or a store blob's seal matched).
#[derive(Clone, Debug)]
pub struct WheelInput {
    pub path: PathBuf,
    pub file: WheelFile,
    pub sha256: Digest,
    /// Installed paths (layer paths) this wheel leaves out: another wheel's different file
    /// wins there (`[python] overlap = "last"`, decided by [`super::overlap::resolve`]).
    pub exclude: BTreeSet<String>,
}

/// The install scheme as it enters cache keys (the layer's, the listing's).
pub(super) fn scheme_json(interp: &Interpreter) -> serde_json::Value {
    let s = &interp.scheme;
    serde_json::json!({
        "purelib": s.purelib, "platlib": s.platlib, "scripts": s.scripts,
        "headers": s.headers, "data": s.data,
    })
}
