//! [`LayerError`]: everything that can go wrong while scanning sources or writing a layer.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while scanning sources or writing a layer.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    #[error("I/O error on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} changed while reading: {expected} bytes at scan time, {found} bytes now", path.display())]
    Changed {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    #[error("{} changed while it was read: its bytes differ from those its cache key was computed from; nothing was cached (build again once it no longer changes)", path.display())]
    ContentChanged { path: PathBuf },
    #[error("{} was replaced while the layer was built (it, or a directory above it, is no longer what the scan listed: swapped, e.g. for a symlink); nothing was read through it and nothing was cached: build again once the source tree is left alone", crate::bounded::clip_path(path))]
    Replaced { path: PathBuf },
    #[error("{}: {kind} cannot be put in a layer (only regular files, directories and symlinks)", path.display())]
    Unsupported { path: PathBuf, kind: &'static str },
    #[error("{}: file name is not valid UTF-8, which a layer cannot represent deterministically", path.display())]
    NonUtf8 { path: PathBuf },
    #[error("{}: a name starting with `.wh.` is a whiteout in a layer (it would delete what the layers below have there): rename it, or exclude it with `ignore`", path.display())]
    Whiteout { path: PathBuf },
    #[error("`/{path}` is produced twice: by {first} and by {second}")]
    Conflict {
        path: String,
        first: String,
        second: String,
    },
    #[error("copy of {}: invalid destination `{dest}`: {reason}", src.display())]
    InvalidDest {
        src: PathBuf,
        dest: String,
        reason: &'static str,
    },
    #[error("ignore patterns for {}: invalid pattern `{pattern}`: {reason}", src.display())]
    IgnorePattern {
        src: PathBuf,
        pattern: String,
        reason: &'static str,
    },
    #[error("tar entry `{entry}`: content yielded {found} bytes, the header says {expected}")]
    SizeMismatch {
        entry: String,
        expected: u64,
        found: u64,
    },
    #[error("tar entry `{entry}`: reading its content failed")]
    ReadContent {
        entry: String,
        #[source]
        source: io::Error,
    },
    #[error("tar entry `{entry}`: writing the layer stream failed")]
    Write {
        entry: String,
        #[source]
        source: io::Error,
    },
    #[error("tar entry `{entry}`: invalid path: {reason}")]
    InvalidPath { entry: String, reason: &'static str },
    #[error("tar entry `{entry}` breaks the layer contract: {reason}")]
    Contract { entry: String, reason: &'static str },
    #[error("starting the {what} compressor failed")]
    Compressor {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("finishing the {what} stream failed")]
    Compress {
        what: String,
        #[source]
        source: io::Error,
    },
}
