//! The apt layer's spool: the content of every regular file of every .deb, appended to one
//! unnamed temporary file in the store's `tmp/` while the data tars stream by, and read back by
//! offset when the sorted layer is written. The .debs read at once on several threads each
//! fill a spool of their own, appended whole to the layer's in package order
//! ([`Spool::append_spool`]).
//!
//! One file instead of one temporary file per member: a Debian image has thousands of small
//! files, and creating, reopening and removing a file each cost more than its bytes (measured on
//! the build host: 2,748 creates were 2 of the 5 seconds of a trixie python build). The file has
//! no name (`O_TMPFILE` where the filesystem has it), so nothing is left behind by a crash.

use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::AptError;
use crate::digest::{Digest, HashingWriter};

/// Where one file's content lies in the spool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) offset: u64,
    pub(super) size: u64,
}

/// An append-only spool (see the module doc).
pub(super) struct Spool {
    out: BufWriter<std::fs::File>,
    len: u64,
    /// The directory it lives in, for messages.
    dir: PathBuf,
}

impl Spool {
    pub(super) fn new(dir: &Path) -> Result<Spool, AptError> {
        let file = tempfile::tempfile_in(dir).map_err(|source| AptError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(Spool {
            out: BufWriter::with_capacity(256 * 1024, file),
            len: 0,
            dir: dir.to_path_buf(),
        })
    }

    /// The directory the spool lives in (the path its errors name).
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends everything `r` yields; returns where it went and its sha256. An error is the
    /// reader's or the spool's, as `io::copy` returns it.
    pub(super) fn append(&mut self, r: &mut dyn Read) -> io::Result<(Span, Digest)> {
        let mut w = HashingWriter::new(&mut self.out);
        io::copy(r, &mut w)?;
        let (_, digest, size) = w.finish();
        let span = Span {
            offset: self.len,
            size,
        };
        self.len += size;
        Ok((span, digest))
    }

    /// Appends `data`.
    pub(super) fn append_bytes(&mut self, mut data: &[u8]) -> Result<(Span, Digest), AptError> {
        self.append(&mut data).map_err(|source| self.io(source))
    }

    /// Appends all of `other` (flushed first); returns the offset its spans now start at.
    pub(super) fn append_spool(&mut self, other: &mut Spool) -> Result<u64, AptError> {
        let at = self.len;
        let len = other.len;
        let mut whole = other.reader()?.at(Span {
            offset: 0,
            size: len,
        });
        let copied = io::copy(&mut whole, &mut self.out).map_err(|source| self.io(source))?;
        self.len += copied;
        Ok(at)
    }

    /// The bytes of `span`.
    pub(super) fn read(&mut self, span: Span) -> Result<Vec<u8>, AptError> {
        let mut buf = Vec::new();
        self.reader()?
            .at(span)
            .read_to_end(&mut buf)
            .map_err(|source| self.io(source))?;
        Ok(buf)
    }

    /// Everything appended so far, readable by span (what was buffered is written first).
    pub(super) fn reader(&mut self) -> Result<SpoolReader<'_>, AptError> {
        self.out.flush().map_err(|source| AptError::Io {
            path: self.dir.clone(),
            source,
        })?;
        Ok(SpoolReader {
            file: self.out.get_ref(),
        })
    }

    fn io(&self, source: io::Error) -> AptError {
        AptError::Io {
            path: self.dir.clone(),
            source,
        }
    }
}

/// Reads spans of a flushed spool; any number of spans, in any order.
pub(super) struct SpoolReader<'a> {
    file: &'a std::fs::File,
}

impl<'a> SpoolReader<'a> {
    /// A reader of exactly `span`'s bytes (an early end of file is an error).
    pub(super) fn at(&self, span: Span) -> At<'a> {
        At {
            file: self.file,
            pos: span.offset,
            end: span.offset + span.size,
        }
    }
}

/// One span of the spool as a reader (`pread`: no shared file position).
pub(super) struct At<'a> {
    file: &'a std::fs::File,
    pos: u64,
    end: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end - self.pos;
        if left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the spool ends at {} of a span ending at {}",
                    self.pos, self.end
                ),
            ));
        }
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_back_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::new(dir.path()).unwrap();
        let (a, da) = s.append_bytes(b"first file").unwrap();
        let (e, _) = s.append_bytes(b"").unwrap();
        let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let (b, db) = s.append(&mut big.as_slice()).unwrap();
        assert_eq!((a.offset, a.size, e.size, b.offset), (0, 10, 0, 10));
        assert_eq!(da, Digest::of(b"first file"));
        assert_eq!(db, Digest::of(&big));
        assert_eq!(s.read(b).unwrap(), big);
        assert_eq!(s.read(a).unwrap(), b"first file");
        assert_eq!(s.read(e).unwrap(), b"");
        // The file has no name: the directory stays empty.
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// A spool appended to another: its spans, moved by the offset returned, read the same
    /// bytes, and the whole is what one spool written in that order would hold.
    #[test]
    fn an_appended_spool_reads_back_at_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let mut main = Spool::new(dir.path()).unwrap();
        let mut serial = Spool::new(dir.path()).unwrap();
        main.append_bytes(b"head").unwrap();
        serial.append_bytes(b"head").unwrap();
        let mut other = Spool::new(dir.path()).unwrap();
        let big: Vec<u8> = (0..600_000u32).map(|i| (i % 241) as u8).collect();
        let (x, _) = other.append_bytes(b"x").unwrap();
        let (b, _) = other.append(&mut big.as_slice()).unwrap();
        serial.append_bytes(b"x").unwrap();
        serial.append(&mut big.as_slice()).unwrap();
        let at = main.append_spool(&mut other).unwrap();
        assert_eq!(at, 4);
        let moved = |s: Span| Span {
            offset: s.offset + at,
            size: s.size,
        };
        assert_eq!(main.read(moved(x)).unwrap(), b"x");
        assert_eq!(main.read(moved(b)).unwrap(), big);
        let (after, _) = main.append_bytes(b"tail").unwrap();
        assert_eq!(after.offset, 4 + 1 + 600_000);
        serial.append_bytes(b"tail").unwrap();
        let whole = |s: &mut Spool, len| {
            s.read(Span {
                offset: 0,
                size: len,
            })
            .unwrap()
        };
        assert_eq!(whole(&mut main, 600_009), whole(&mut serial, 600_009));
    }

    #[test]
    fn a_span_past_the_end_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::new(dir.path()).unwrap();
        s.append_bytes(b"abc").unwrap();
        let r = s.reader().unwrap();
        let mut buf = Vec::new();
        let err = r
            .at(Span { offset: 1, size: 5 })
            .read_to_end(&mut buf)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}
