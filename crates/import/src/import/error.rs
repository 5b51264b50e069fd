//! What can stop `ocibuild import`: each with where it happened (the Dockerfile's line and
//! column, the stage, the ARG, the file).

use std::path::PathBuf;

use crate::bounded::clip_path;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The Dockerfile could not be read.
    #[error("reading {}", clip_path(path))]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The parser stopped: where, and what it expected there.
    #[error("{}:{line}:{column}: {message}", clip_path(path))]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// An `ARG` with no default that no `--build-arg` gave a value.
    #[error("{}:{line}: ARG {name} has no value: give --build-arg {name}=VALUE or a default (ARG {name}=VALUE)", clip_path(path))]
    ArgWithoutValue {
        path: PathBuf,
        line: usize,
        name: String,
    },
    /// `--build-arg` not of the form `NAME=VALUE`.
    #[error("--build-arg `{arg}`: not NAME=VALUE")]
    BuildArgSyntax { arg: String },
    /// `--platform` is no platform.
    #[error("--platform `{value}`: {message}")]
    Platform { value: String, message: String },
    /// `--target` names no stage.
    #[error("--target {name}: no such stage; the stages are {}", known.join(", "))]
    NoTarget { name: String, known: Vec<String> },
    /// `COPY --from=NAME` (or `FROM NAME`, `RUN --mount=from=NAME`) names no earlier stage
    /// and is not an image reference ocibuild can use.
    #[error("{}:{line}: --from={name}: no such stage before this line; the stages are {}", clip_path(path), if known.is_empty() { "none".to_string() } else { known.join(", ") })]
    NoStage {
        path: PathBuf,
        line: usize,
        name: String,
        known: Vec<String>,
    },
    /// The output directory has a recipe already.
    #[error("{} exists: give --force to overwrite it", clip_path(path))]
    Exists { path: PathBuf },
    /// Writing a file into the output directory.
    #[error("writing {}", clip_path(path))]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `uv pip compile` could not be started.
    #[error("running uv (for pylock.toml)")]
    UvSpawn {
        #[source]
        source: std::io::Error,
    },
    /// `uv pip compile` failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    UvFailed {
        command: String,
        status: String,
        stderr: String,
    },
}

impl ImportError {
    /// Whether the command line asked for something that cannot be: exit status 2.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            ImportError::BuildArgSyntax { .. }
                | ImportError::Platform { .. }
                | ImportError::NoTarget { .. }
                | ImportError::Exists { .. }
                | ImportError::ArgWithoutValue { .. }
        )
    }
}
