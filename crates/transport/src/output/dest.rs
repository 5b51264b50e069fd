//! What an output may be written over, checked before anything is written: an archive replaces
//! only a regular file (or nothing), a layout is written only into a real directory whose
//! `blobs/sha256` are real directories. Nothing is followed: a destination that is a symlink,
//! a device, a FIFO or a socket is refused, so `-o docker-archive:/dev/full` or a planted
//! `blobs -> /elsewhere` cannot make a build write somewhere it was not told to.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use fs_err as fs;

use super::OutputError;

/// Name prefix of the temporary files written inside a layout.
pub(super) const TEMP_PREFIX: &str = ".ocibuild-tmp-";

/// What a path is, in words, when it is not what an output may replace.
fn odd_kind(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_symlink() {
        Some("a symbolic link")
    } else if t.is_block_device() || t.is_char_device() {
        Some("a device")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

fn lstat(path: &Path) -> Result<Option<std::fs::Metadata>, OutputError> {
    match fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn refuse(path: &Path, kind: &'static str) -> OutputError {
    OutputError::Destination {
        path: path.to_path_buf(),
        kind,
    }
}

/// An archive's destination: missing, or a regular file (which the archive replaces).
pub(super) fn check_file(path: &Path) -> Result<(), OutputError> {
    match lstat(path)? {
        None => Ok(()),
        Some(m) if m.is_file() => Ok(()),
        Some(m) if m.is_dir() => Err(refuse(path, "a directory")),
        Some(m) => Err(refuse(
            path,
            odd_kind(m.file_type()).unwrap_or("not a file"),
        )),
    }
}

/// A layout's directory and its `blobs/sha256`: each missing or a real directory. Returns
/// whether `dir` is missing or empty (a new layout).
pub(super) fn check_layout(dir: &Path) -> Result<bool, OutputError> {
    let fresh = match lstat(dir)? {
        None => true,
        Some(m) if m.is_dir() => fs::read_dir(dir)?.next().is_none(),
        Some(m) if m.is_file() => {
            return Err(OutputError::NotALayout {
                path: dir.to_path_buf(),
            })
        }
        Some(m) => return Err(refuse(dir, odd_kind(m.file_type()).unwrap_or("not a file"))),
    };
    check_dirs(&[dir.join("blobs"), dir.join("blobs").join("sha256")])?;
    Ok(fresh)
}

/// Each of `dirs`: missing or a real directory, never a symlink (nor a file, a device, a FIFO,
/// a socket): for an output made of directories (a layout's `blobs/sha256`, a vendor
/// directory), so nothing is written through a planted link.
pub fn check_dirs(dirs: &[PathBuf]) -> Result<(), OutputError> {
    for sub in dirs {
        match lstat(sub)? {
            None => {}
            Some(m) if m.is_dir() => {}
            Some(m) => {
                return Err(refuse(sub, odd_kind(m.file_type()).unwrap_or("a file")));
            }
        }
    }
    Ok(())
}

/// A directory beside `dir` to build a new layout in, removed when dropped unless renamed into
/// place with [`Staged::commit`]. Made with `mkdir`, so the umask gives it its mode as it
/// would `dir`.
pub(super) struct Staged {
    path: PathBuf,
    done: bool,
}

impl Staged {
    pub(super) fn new(dir: &Path) -> Result<Staged, OutputError> {
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent)?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for n in 0u32.. {
            let path = parent.join(format!("{}{name}-{}-{n}", TEMP_PREFIX, std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => return Ok(Staged { path, done: false }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(io::Error::other("no free temporary name").into())
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the staged layout to `dir`. `Ok(false)`: `dir` is no longer missing or empty
    /// (another writer got there first, or it is busy); the staged copy is dropped and the
    /// caller writes into `dir` instead.
    pub(super) fn commit(mut self, dir: &Path) -> Result<bool, OutputError> {
        // std's rename: its error keeps the errno told apart below (fs-err's wraps it away);
        // the message names the path through OutputError::Io.
        #[allow(clippy::disallowed_methods)]
        let renamed = std::fs::rename(&self.path, dir);
        match renamed {
            Ok(()) => {
                self.done = true;
                if let Some(p) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                    fs::File::open(p)?.sync_all()?;
                }
                Ok(true)
            }
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOTEMPTY | libc::EEXIST | libc::EBUSY | libc::EXDEV)
                ) =>
            {
                Ok(false)
            }
            Err(source) => Err(OutputError::Io {
                path: dir.to_path_buf(),
                source,
            }),
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// A file's identity: device and inode.
pub(crate) type Inode = (u64, u64);

pub fn inode(m: &std::fs::Metadata) -> Inode {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

/// Whether the regular file at `path` (as `m` describes it) holds exactly the blob `digest`:
/// opened without following a link (nor blocking), checked to be the inode `m` describes, and
/// hashed. Any failure is a no: the blob is then copied over it.
pub fn holds(path: &Path, m: &std::fs::Metadata, digest: &crate::digest::Digest) -> bool {
    use fs_err::os::unix::fs::OpenOptionsExt;
    let Ok(file) = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return false;
    };
    if !file
        .metadata()
        .is_ok_and(|f| f.is_file() && inode(&f) == inode(m))
    {
        return false;
    }
    let mut r = crate::digest::HashingReader::new(std::io::BufReader::new(file));
    if std::io::copy(&mut r, &mut std::io::sink()).is_err() {
        return false;
    }
    let (_, found, _) = r.finish();
    found == *digest
}
