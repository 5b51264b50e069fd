//! Bounded reads of the small files a user points ocibuild at (locks, keys, passphrases, ignore
//! files, registries files), and bounded text in messages.
//!
//! A path given for a small input may name a FIFO (opening it blocks until a writer comes), a
//! device (`/dev/zero` never ends) or a file of gigabytes. [`read_regular`] opens without
//! blocking, checks through the open handle that it is a regular file, and reads at most the
//! bound: one error names the file and what it is instead.
//!
//! [`clip`] cuts a value quoted in a message (a 20 MB recipe string, an 8 KB path) to a length a
//! terminal can show, saying how long it was; [`human_bytes`] says a size the way a person
//! reads it (`26.7 MB`), for text output (`--json` keeps exact byte counts).

use std::borrow::Cow;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The bound for lock files, recipes, ignore files and registries files.
pub const MAX_TEXT_FILE: u64 = 16 << 20;
/// The bound for key and passphrase files.
pub const MAX_SECRET_FILE: u64 = 1 << 20;

/// A small input file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to read `{}`", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is {kind}, not a regular file", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("`{}` is larger than {limit} bytes", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("`{}` is not UTF-8", path.display())]
    NotUtf8 { path: PathBuf },
}

impl Error {
    /// Whether the file does not exist (a missing lock is a first build, not an error).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// What a file type is called in a message.
pub fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// Reads `path` (symlinks followed) when it is a regular file of at most `limit` bytes.
/// A FIFO is opened without blocking and refused; so are devices, sockets and directories.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    // std, not fs_err: `Error::Io` names the path once.
    #[allow(clippy::disallowed_methods)]
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(Error::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
        });
    }
    if meta.len() > limit {
        return Err(Error::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(Error::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(bytes)
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_text(path: &Path, limit: u64) -> Result<String, Error> {
    String::from_utf8(read_regular(path, limit)?).map_err(|_| Error::NotUtf8 {
        path: path.to_path_buf(),
    })
}

/// The longest value quoted whole in a message, in bytes.
pub const MESSAGE_VALUE: usize = 200;

/// `s` when it is at most [`MESSAGE_VALUE`] bytes; otherwise its start, cut on a character
/// boundary, and how long it was.
pub fn clip(s: &str) -> Cow<'_, str> {
    clip_to(s, MESSAGE_VALUE)
}

/// [`clip`] with another bound.
pub fn clip_to(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}… ({} bytes in all)", &s[..end], s.len()))
}

/// [`clip`] of a path, shown lossily.
pub fn clip_path(p: &Path) -> String {
    clip(&p.display().to_string()).into_owned()
}

/// A byte count for a person: `116 B`, `4.20 kB`, `26.7 MB`, `1.23 GB`. Decimal SI units
/// (1 kB = 1000 bytes, 1 MB = 1000 kB), as podman, skopeo and docker print sizes; three
/// significant digits above 1000 bytes, exact below.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1000.0;
    let mut unit = 0;
    // Rounding may carry into the next unit (999.7 kB is `1.00 MB`, not `1000 kB`).
    while v >= 999.5 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    let digits = if v < 9.995 { 2 } else { usize::from(v < 99.95) };
    format!("{v:.digits$} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_only_with_a_bound() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        fs_err::write(&f, b"hello").unwrap();
        assert_eq!(read_regular(&f, 5).unwrap(), b"hello");
        assert!(matches!(
            read_regular(&f, 4),
            Err(Error::TooLarge { limit: 4, .. })
        ));
        let fifo = dir.path().join("fifo");
        let st = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(st.success());
        // Returns at once (no writer needed) with a refusal naming the kind.
        let e = read_regular(&fifo, 100).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("`{}` is a FIFO, not a regular file", fifo.display())
        );
        let e = read_regular(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let e = read_regular(dir.path(), 100).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        assert!(read_regular(&dir.path().join("none"), 1)
            .unwrap_err()
            .is_not_found());
    }

    #[test]
    fn long_values_are_clipped() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(1000);
        let c = clip(&long);
        assert!(c.len() < 260, "{c}");
        assert!(c.ends_with("… (2000 bytes in all)"), "{c}");
    }

    #[test]
    fn sizes_for_people() {
        let cases = [
            (0, "0 B"),
            (116, "116 B"),
            (999, "999 B"),
            (1000, "1.00 kB"),
            (1234, "1.23 kB"),
            (9_994, "9.99 kB"),
            (9_995, "10.0 kB"),
            (26_700_000, "26.7 MB"),
            (99_949, "99.9 kB"),
            (99_950, "100 kB"),
            (116_000, "116 kB"),
            (999_499, "999 kB"),
            (999_500, "1.00 MB"),
            (1_000_000, "1.00 MB"),
            (1_230_000_000, "1.23 GB"),
            (u64::MAX, "18.4 EB"),
        ];
        for (n, want) in cases {
            assert_eq!(human_bytes(n), want, "{n}");
        }
    }
}
