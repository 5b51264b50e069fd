//! Trees read through directory handles: every name below a root is opened relative to its
//! parent's handle and never through a symlink (`openat` with `O_NOFOLLOW`, `fstatat` with
//! `AT_SYMLINK_NOFOLLOW`), so swapping a directory for a symlink while a tree is read cannot
//! lead a read outside it.
//!
//! The calls are rustix's (safe wrappers over the raw syscalls; the crate is already built for
//! `tempfile`), so no `unsafe` is needed here. Errors are plain `io::Error`s: each caller names
//! the path in its own error.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use rustix::fs::{AtFlags, Dir as RawDir, FileType, Mode, OFlags, Stat};

/// What a name is, from its `lstat` (or the `fstat` of its handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub dev: u64,
    pub ino: u64,
    /// `st_mode`: type and permission bits.
    pub mode: u32,
    pub nlink: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl Meta {
    // The field widths of `struct stat` differ between architectures; every value fits.
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    fn of(st: &Stat) -> Meta {
        Meta {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            mode: st.st_mode as u32,
            nlink: st.st_nlink as u64,
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime_ns: i128::from(st.st_mtime as i64) * 1_000_000_000
                + i128::from(st.st_mtime_nsec as i64),
            ctime_ns: i128::from(st.st_ctime as i64) * 1_000_000_000
                + i128::from(st.st_ctime_nsec as i64),
        }
    }

    pub fn file_type(&self) -> FileType {
        FileType::from_raw_mode(self.mode)
    }

    pub fn is_dir(&self) -> bool {
        self.file_type() == FileType::Directory
    }

    pub fn is_file(&self) -> bool {
        self.file_type() == FileType::RegularFile
    }

    /// The same inode as `other`.
    pub fn same_file(&self, dev: u64, ino: u64) -> bool {
        self.dev == dev && self.ino == ino
    }
}

impl From<&std::fs::Metadata> for Meta {
    fn from(m: &std::fs::Metadata) -> Meta {
        use std::os::unix::fs::MetadataExt;
        Meta {
            dev: m.dev(),
            ino: m.ino(),
            mode: m.mode(),
            nlink: m.nlink(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        }
    }
}

/// What a file type is called in a message.
pub fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "an unknown file type",
    }
}

/// Flags of every directory opened below a root: never through a symlink, never a non-directory.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Flags of every file opened for reading below a root: never through a symlink; a FIFO swapped
/// in opens without blocking (and is refused by its type), a terminal is not made ours.
fn file_flags() -> OFlags {
    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC
}

/// An open directory: the handle its children are opened relative to.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

impl Dir {
    /// Opens `path` as the root of a tree. `follow`: whether `path` itself may be a symlink
    /// (its ancestors always may; they are above the tree).
    pub fn open_root(path: &Path, follow: bool) -> io::Result<Dir> {
        let mut flags = dir_flags();
        if follow {
            flags.remove(OFlags::NOFOLLOW);
        }
        let fd = rustix::fs::openat(rustix::fs::CWD, path, flags, Mode::empty())?;
        Ok(Dir { fd })
    }

    /// Opens the child directory `name` (one component), never through a symlink: a symlink
    /// is `ELOOP`, anything else that is not a directory `ENOTDIR`.
    pub fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let fd = rustix::fs::openat(&self.fd, name, dir_flags(), Mode::empty())?;
        Ok(Dir { fd })
    }

    /// Opens the child `name` for reading, never through a symlink (`ELOOP`), without blocking
    /// on a FIFO. The caller checks what it opened ([`meta`]).
    pub fn open_file(&self, name: &OsStr) -> io::Result<File> {
        let fd = rustix::fs::openat(&self.fd, name, file_flags(), Mode::empty())?;
        Ok(File::from(fd))
    }

    /// Opens the child `name` for reading and writing in place, never through a symlink
    /// (`ELOOP`), without blocking on a FIFO. The caller checks what it opened ([`meta`]).
    pub fn open_file_rw(&self, name: &OsStr) -> io::Result<File> {
        let flags =
            OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())?;
        Ok(File::from(fd))
    }

    /// The child `name`'s own metadata (a symlink is described, not followed).
    pub fn stat(&self, name: &OsStr) -> io::Result<Meta> {
        let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(Meta::of(&st))
    }

    /// This directory's own metadata (of the handle).
    pub fn meta(&self) -> io::Result<Meta> {
        Ok(Meta::of(&rustix::fs::fstat(&self.fd)?))
    }

    /// The target of the symlink `name`.
    pub fn read_link(&self, name: &OsStr) -> io::Result<OsString> {
        let target = rustix::fs::readlinkat(&self.fd, name, Vec::new())?;
        Ok(OsString::from_vec(target.into_bytes()))
    }

    /// The names in this directory (without `.` and `..`), in the order the kernel gives them.
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        // A second handle of the same directory (`openat(fd, ".")`): listing moves its offset.
        let mut dir = RawDir::read_from(&self.fd)?;
        let mut out = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                out.push(OsStr::from_bytes(name).to_os_string());
            }
        }
        Ok(out)
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The metadata of an open file's handle.
pub fn meta(file: &File) -> io::Result<Meta> {
    Ok(Meta::of(&rustix::fs::fstat(file)?))
}

/// Opens `path` for reading without blocking on a FIFO; `follow`: whether its last component
/// may be a symlink (its directories are the caller's to trust).
pub fn open_file(path: &Path, follow: bool) -> io::Result<File> {
    let mut flags = file_flags();
    if follow {
        flags.remove(OFlags::NOFOLLOW);
    }
    let fd = rustix::fs::openat(rustix::fs::CWD, path, flags, Mode::empty())?;
    Ok(File::from(fd))
}

/// Opens the regular file at `rel` (names, one component each) below `root` (which may itself
/// be a symlink): every directory below `root` is opened without following a symlink, and so is
/// the file, without blocking on a FIFO. A symlink or a special file anywhere below `root` is an
/// error naming its path (kind `InvalidInput`); a missing one keeps the kind `NotFound`.
pub fn open_regular_beneath(root: &Path, rel: &[&str]) -> io::Result<File> {
    let Some((last, dirs)) = rel.split_last() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no file name given",
        ));
    };
    // An empty root (a relative path's parent) is the working directory.
    let root = if root.as_os_str().is_empty() {
        Path::new(".")
    } else {
        root
    };
    let mut path = root.to_path_buf();
    // An error naming the path; a name that is not what was opened says what it is instead.
    let named = |parent: Option<&Dir>, name: &str, path: &Path, err: io::Error| {
        let found = parent
            .filter(|_| is_replaced(&err))
            .and_then(|d| d.stat(OsStr::new(name)).ok());
        let what = match found.map(|m| m.file_type()) {
            Some(FileType::Symlink) => {
                "is a symbolic link, never followed here: put the file or directory itself there"
                    .to_string()
            }
            Some(t) => format!("is {}, not a directory", kind_name(t)),
            None => err.to_string(),
        };
        io::Error::new(
            err.kind(),
            format!("`{}` {what}", crate::bounded::clip_path(path)),
        )
    };
    let mut dir = Dir::open_root(root, true).map_err(|e| named(None, "", root, e))?;
    for name in dirs {
        path.push(name);
        let sub = dir.open_dir(OsStr::new(name));
        dir = sub.map_err(|e| named(Some(&dir), name, &path, e))?;
    }
    path.push(last);
    let file = dir
        .open_file(OsStr::new(last))
        .map_err(|e| named(Some(&dir), last, &path, e))?;
    let m = meta(&file).map_err(|e| named(None, last, &path, e))?;
    if !m.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "`{}` is {}, not a regular file",
                crate::bounded::clip_path(&path),
                kind_name(m.file_type())
            ),
        ));
    }
    Ok(file)
}

/// Whether `err` says a name was not what it was expected to be: a symlink where a directory
/// or file was opened with `O_NOFOLLOW` (`ELOOP`), or a non-directory opened as one (`ENOTDIR`).
pub fn is_replaced(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_through_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        fs_err::create_dir_all(root.join("sub")).unwrap();
        fs_err::write(root.join("sub/f"), "in").unwrap();
        let outside = d.path().join("outside");
        fs_err::create_dir(&outside).unwrap();
        fs_err::write(outside.join("f"), "out").unwrap();
        fs_err::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        fs_err::os::unix::fs::symlink(outside.join("f"), root.join("flink")).unwrap();

        let r = Dir::open_root(&root, false).unwrap();
        let mut names = r.names().unwrap();
        names.sort();
        assert_eq!(names, ["flink", "link", "sub"]);
        let err = r.open_dir(OsStr::new("link")).unwrap_err();
        assert!(is_replaced(&err), "{err}");
        let err = r.open_file(OsStr::new("flink")).unwrap_err();
        assert!(is_replaced(&err), "{err}");
        let err = r.open_dir(OsStr::new("flink")).unwrap_err();
        assert!(is_replaced(&err), "{err}");
        assert_eq!(
            r.stat(OsStr::new("link")).unwrap().file_type(),
            FileType::Symlink
        );
        assert_eq!(
            r.read_link(OsStr::new("link")).unwrap(),
            outside.as_os_str()
        );
        let sub = r.open_dir(OsStr::new("sub")).unwrap();
        let f = sub.open_file(OsStr::new("f")).unwrap();
        let m = meta(&f).unwrap();
        assert!(m.is_file());
        assert_eq!(m, sub.stat(OsStr::new("f")).unwrap());
        assert!(sub.meta().unwrap().is_dir());
        // The root itself: followed only when asked.
        let rl = d.path().join("rootlink");
        fs_err::os::unix::fs::symlink(&root, &rl).unwrap();
        assert!(is_replaced(&Dir::open_root(&rl, false).unwrap_err()));
        assert!(Dir::open_root(&rl, true).is_ok());
        assert!(is_replaced(
            &open_file(&root.join("flink"), false).unwrap_err()
        ));
        assert!(open_file(&root.join("flink"), true).is_ok());
    }

    #[test]
    fn regular_files_beneath_a_root() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("layout");
        fs_err::create_dir_all(root.join("blobs/sha256")).unwrap();
        fs_err::write(root.join("blobs/sha256/ab"), "blob").unwrap();
        let outside = d.path().join("outside");
        fs_err::create_dir_all(&outside).unwrap();
        fs_err::write(outside.join("cd"), "secret").unwrap();
        let mut s = String::new();
        use std::io::Read;
        open_regular_beneath(&root, &["blobs", "sha256", "ab"])
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "blob");
        // A symlinked blob, a symlinked blob directory, a FIFO: refused, naming the path.
        fs_err::os::unix::fs::symlink(outside.join("cd"), root.join("blobs/sha256/cd")).unwrap();
        let e = open_regular_beneath(&root, &["blobs", "sha256", "cd"]).unwrap_err();
        assert!(
            e.to_string()
                .contains("blobs/sha256/cd` is a symbolic link"),
            "{e}"
        );
        fs_err::rename(root.join("blobs/sha256"), d.path().join("moved")).unwrap();
        fs_err::os::unix::fs::symlink(&outside, root.join("blobs/sha256")).unwrap();
        let e = open_regular_beneath(&root, &["blobs", "sha256", "cd"]).unwrap_err();
        assert!(
            e.to_string().contains("blobs/sha256` is a symbolic link"),
            "{e}"
        );
        rustix::fs::mkfifoat(rustix::fs::CWD, root.join("p"), Mode::RUSR).unwrap();
        let e = open_regular_beneath(&root, &["p"]).unwrap_err();
        assert!(
            e.to_string().ends_with("is a FIFO, not a regular file"),
            "{e}"
        );
        let e = open_regular_beneath(&root, &["none"]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_fifo_opens_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        rustix::fs::mkfifoat(rustix::fs::CWD, d.path().join("p"), Mode::RUSR).unwrap();
        let r = Dir::open_root(d.path(), false).unwrap();
        let f = r.open_file(OsStr::new("p")).unwrap();
        assert_eq!(meta(&f).unwrap().file_type(), FileType::Fifo);
    }
}
