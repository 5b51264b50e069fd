//! What a layer is made of: [`Entry`]s (a path, its kind, owner and mode), the copies of host
//! files that produce them ([`CopySpec`]), and how host permissions map into the layer.

use std::path::PathBuf;

/// How permission bits get from the host into the layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModePolicy {
    /// Dirs 0755, files 0755 if any execute bit is set on the host else 0644, symlinks 0777.
    Normalize,
    /// The host permission bits (& 0o7777).
    Preserve,
}

/// One copy of a host file or directory into the image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopySpec {
    /// Absolute host path: a file or a directory. If it is a symlink it is resolved (like
    /// `docker COPY` does); symlinks beneath a directory are kept as symlinks.
    pub src: PathBuf,
    /// Absolute path in the image, e.g. "/app" or "/etc/app.conf". For a file source, a
    /// destination ending in "/" means "into this directory, under the source's file name".
    pub dest: String,
    /// .dockerignore-style patterns, relative to `src` (see [`ignore`]).
    pub ignore: Vec<String>,
    pub uid: u32,
    pub gid: u32,
    pub mode: ModePolicy,
}

/// What an entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    /// A regular file, streamed from `src`; `size` as seen at scan time.
    File {
        src: PathBuf,
        size: u64,
    },
    /// A symlink; the target is kept verbatim.
    Symlink {
        target: String,
    },
    /// A hardlink to an earlier entry (its tar path).
    Hardlink {
        target: String,
    },
}

/// Host metadata used ONLY as a cache fingerprint (never written into a tar). All zero for
/// synthesized parent dirs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StatKey {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub mode: u32,
}

/// One tar entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Tar path: relative, no leading "/" or "./", directories end with "/".
    pub path: String,
    pub kind: EntryKind,
    /// Permission bits (07777 mask) after the mode policy.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub stat: StatKey,
}
