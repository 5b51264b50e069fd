//! Output writers: OCI image layout directory, `oci-archive` tar, `docker-archive` tar; and
//! the layout reader beside the layout writer ([`Layout`]).
//!
//! Every writer is atomic: blobs are renamed into place before anything names them, and the
//! file that names them (`index.json`, or the archive itself) is renamed into place last.

mod archive;
mod dest;
mod layout;
mod read;
pub mod source;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::digest::Digest;
use crate::image::ImageRecord;
use crate::json::JsonError;
use crate::layer::LayerError;
use crate::store::{Store, StoreError};

pub use dest::{check_dirs, holds, inode};
pub use layout::{read_index, write_layout, write_layout_with, Tagged};
pub use read::{Layout, ReadError};

#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{path}")]
    Io { path: PathBuf, source: io::Error },
    /// An fs-err error: its message already names the path.
    #[error(transparent)]
    Fs(#[from] io::Error),
    #[error(
        "refusing to write into {path}: it exists and is neither empty nor an OCI image layout"
    )]
    NotALayout { path: PathBuf },
    #[error("refusing to write {path}: it is {kind}; outputs are written only to a regular file or directory path")]
    Destination { path: PathBuf, kind: &'static str },
    #[error("locking the image layout {path}")]
    Lock { path: PathBuf, source: io::Error },
    #[error("{path}: invalid index.json")]
    BadIndex {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("layer {digest}: decompressed content has diff_id {found}, expected {expected}")]
    DiffIdMismatch {
        digest: Digest,
        expected: Digest,
        found: Digest,
    },
    /// `-o` not parsed as an output: [`crate::imageref`]'s message.
    #[error(transparent)]
    ImageRef(#[from] crate::imageref::ImageRefError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Layer(#[from] LayerError),
    #[error(transparent)]
    Json(#[from] JsonError),
}

pub(crate) fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> OutputError {
    let path = path.into();
    move |source| OutputError::Io { path, source }
}

/// The output a recipe builds to when `--output` is not given: `./<recipe file stem>.oci`.
pub fn default_output(recipe: &Path) -> PathBuf {
    let stem = recipe
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "image".into());
    PathBuf::from(format!("{stem}.oci"))
}

/// Where a built image goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// An OCI image layout directory (`DIR` or `oci:DIR`).
    Layout(PathBuf),
    /// A tar of an OCI image layout (`oci-archive:FILE`).
    OciArchive(PathBuf),
    /// A `docker save` style tar that `docker load` and `podman load` accept (`docker-archive:FILE`).
    DockerArchive(PathBuf),
}

impl FromStr for Target {
    type Err = OutputError;
    /// `DIR`, `oci:DIR`, `oci-archive:FILE` or `docker-archive:FILE`, as
    /// [`crate::imageref`] parses an output (no tag; `NAME:` a transport).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        use crate::imageref::{ImageRef, ImageRefError, Role};
        Ok(match ImageRef::parse(s, Role::Output)? {
            ImageRef::Layout { dir, .. } => Target::Layout(dir),
            ImageRef::OciArchive(p) => Target::OciArchive(p),
            ImageRef::DockerArchive(p) => Target::DockerArchive(p),
            // Never parsed for an output: refused as `imageref` refuses any other form.
            _ => return Err(ImageRefError::unknown(s, Role::Output).into()),
        })
    }
}

impl Target {
    /// The directory or file written.
    pub fn path(&self) -> &Path {
        match self {
            Target::Layout(p) | Target::OciArchive(p) | Target::DockerArchive(p) => p,
        }
    }

    /// The same target with its path made absolute against the current directory (symlinks
    /// not resolved), for saying where an image went.
    pub fn absolute(&self) -> Target {
        let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        match self {
            Target::Layout(p) => Target::Layout(abs(p)),
            Target::OciArchive(p) => Target::OciArchive(abs(p)),
            Target::DockerArchive(p) => Target::DockerArchive(abs(p)),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Layout(p) => write!(f, "oci:{}", p.display()),
            Target::OciArchive(p) => write!(f, "oci-archive:{}", p.display()),
            Target::DockerArchive(p) => write!(f, "docker-archive:{}", p.display()),
        }
    }
}

/// Write `image` (whose blobs are in `store`) to `target`.
pub fn write(target: &Target, store: &Store, image: &ImageRecord) -> Result<(), OutputError> {
    match target {
        Target::Layout(dir) => write_layout(dir, store, image),
        Target::OciArchive(file) => archive::write_oci_archive(file, store, image),
        Target::DockerArchive(file) => archive::write_docker_archive(file, store, image),
    }
}

/// Writes a document (an SBOM, a provenance statement) to `path` as the build writes an
/// archive: `path` must be missing or a regular file (a symlink, FIFO, device, socket or
/// directory is refused, nothing followed), and the bytes go to a temporary file beside it,
/// renamed into place, so the file is whole or as it was.
pub fn write_document(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    dest::check_file(path)?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    layout::write_atomic(dir, path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_targets() {
        assert_eq!(
            "out".parse::<Target>().unwrap(),
            Target::Layout("out".into())
        );
        assert_eq!(
            "oci:/a/b".parse::<Target>().unwrap(),
            Target::Layout("/a/b".into())
        );
        assert_eq!(
            "oci-archive:x.tar".parse::<Target>().unwrap(),
            Target::OciArchive("x.tar".into())
        );
        assert_eq!(
            "docker-archive:d.tar".parse::<Target>().unwrap(),
            Target::DockerArchive("d.tar".into())
        );
        assert!("oci-archive:".parse::<Target>().is_err());
        for (bad, transport) in [
            ("tar:x", "tar"),
            ("oci-archiv:y.tar", "oci-archiv"),
            ("docker://host/x:1", "docker"),
            ("containers-storage:x", "containers-storage"),
        ] {
            let e = bad.parse::<Target>().unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "unknown output transport `{transport}:` in `{bad}`"
                )),
                "{e}"
            );
        }
        assert!("docker://h/x"
            .parse::<Target>()
            .unwrap_err()
            .to_string()
            .ends_with("use --push REF"));
        assert_eq!(
            "./a:b".parse::<Target>().unwrap(),
            Target::Layout("./a:b".into())
        );
        assert_eq!(
            "oci:a:b".parse::<Target>().unwrap(),
            Target::Layout("a:b".into())
        );
        assert!("".parse::<Target>().is_err());
    }
}
