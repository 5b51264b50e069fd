//! Bounds on the records a tar declares, checked before tar-rs reads them.
//!
//! tar-rs reads a PAX extended header (`x`) and a GNU long name or long link record (`L`, `K`)
//! whole into memory before it returns the member they describe, with the size the record's
//! header declares: a 1.5 GB record in a 6 MB layer is a 1.5 GB allocation. Every tar ocibuild
//! reads (base layers, .deb data and control tars, interpreter archives, image archives) goes
//! through [`archive`], whose reader sits under tar-rs, follows the archive's framing block by
//! block as tar-rs does (header sizes, a PAX `size` overriding the next member's, GNU sparse
//! extension blocks) and fails the read of a record's header when the record declares more
//! than [`MAX_RECORD`] bytes: the header never reaches tar-rs, so nothing is allocated.
//!
//! The error goes out as an `io::Error` wrapping [`Error`] (tar-rs passes read errors on as
//! they are), so each reader's own error, which names the layer or archive, carries it.

use std::io::{self, Read, Seek, SeekFrom};

/// The largest PAX extended header, PAX global header, GNU long name or GNU long link record.
/// Real ones are a few hundred bytes (a path, a link target, a few xattrs).
pub const MAX_RECORD: u64 = 1 << 20;

const BLOCK: u64 = 512;

/// A record over the bound.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error(
        "the tar member at offset {offset} is a {kind} that declares {size} bytes \
         (at most {limit} are accepted): the archive is corrupt or hostile"
    )]
    RecordTooLarge {
        offset: u64,
        kind: &'static str,
        size: u64,
        limit: u64,
    },
}

/// A tar archive over `reader` whose extension records are bounded by [`MAX_RECORD`].
pub fn archive<R: Read>(reader: R) -> tar::Archive<Bounded<R>> {
    tar::Archive::new(Bounded::new(reader, MAX_RECORD))
}

/// The [`Error`] inside an `io::Error` from a bounded archive, if that is what it is.
pub fn as_bound_error(e: &io::Error) -> Option<&Error> {
    e.get_ref().and_then(|inner| inner.downcast_ref::<Error>())
}

/// What the next block at `next` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// A member's header.
    Header,
    /// A GNU sparse extension block; `data` bytes (rounded) of the member follow the last one.
    SparseExt { data: u64 },
    /// Past the end of the archive, or past a block tar-rs refuses: nothing more to check.
    Done,
}

/// A reader that checks each tar header it passes on. See the module doc.
pub struct Bounded<R> {
    inner: R,
    limit: u64,
    /// Bytes handed out so far: the offset in the tar stream.
    pos: u64,
    /// The offset of the next block to inspect, and what it is.
    next: u64,
    kind: Next,
    /// The block inspected last, while it is being handed out.
    block: [u8; BLOCK as usize],
    block_len: usize,
    block_served: usize,
    /// A PAX extended header's data, collected as it passes: (data offset, size, bytes).
    pax: Option<(u64, u64, Vec<u8>)>,
    /// The `size` the last PAX extended header gives the next member.
    pax_size: Option<u64>,
    failed: Option<Error>,
}

impl<R> Bounded<R> {
    /// `inner`, at the start of a tar stream, with records bounded by `limit` bytes.
    pub fn new(inner: R, limit: u64) -> Self {
        Bounded {
            inner,
            limit,
            pos: 0,
            next: 0,
            kind: Next::Header,
            block: [0; BLOCK as usize],
            block_len: 0,
            block_served: 0,
            pax: None,
            pax_size: None,
            failed: None,
        }
    }

    /// Looks at the block at `self.pos`, now in `self.block`; sets what comes next.
    fn inspect(&mut self) -> Result<(), Error> {
        let at = self.pos;
        match self.kind {
            Next::Done => Ok(()),
            Next::SparseExt { data } => {
                // GnuExtSparseHeader: 21 entries of 24 bytes, then `isextended`.
                if self.block[504] != 0 {
                    self.next = at + BLOCK;
                } else {
                    self.after(at + BLOCK, data);
                }
                Ok(())
            }
            Next::Header => self.inspect_header(at),
        }
    }

    /// The next header comes `data` bytes (rounded up to a block) after `from`.
    fn after(&mut self, from: u64, data: u64) {
        match from.checked_add(data) {
            Some(n) => {
                self.next = n;
                self.kind = Next::Header;
            }
            None => self.kind = Next::Done,
        }
    }

    fn inspect_header(&mut self, at: u64) -> Result<(), Error> {
        let pax = self.pax.take();
        let bytes = &self.block;
        // The end of the archive: tar-rs stops at the first zero block.
        if bytes.iter().all(|b| *b == 0) {
            self.kind = Next::Done;
            return Ok(());
        }
        let header = tar::Header::from_byte_slice(bytes);
        let sum = bytes[..148]
            .iter()
            .chain(&bytes[156..])
            .fold(0u32, |a, b| a + u32::from(*b))
            + 8 * 32;
        let size = match (header.cksum(), header.entry_size()) {
            (Ok(cksum), Ok(size)) if cksum == sum => size,
            // tar-rs refuses this header: it reads no further.
            _ => {
                self.kind = Next::Done;
                return Ok(());
            }
        };
        let t = header.entry_type();
        let record = if t.is_pax_local_extensions() {
            Some("PAX extended header")
        } else if t.is_pax_global_extensions() {
            Some("PAX global header")
        } else if t.is_gnu_longname() {
            Some("GNU long name record")
        } else if t.is_gnu_longlink() {
            Some("GNU long link record")
        } else {
            None
        };
        if let Some(kind) = record {
            if size > self.limit {
                return Err(Error::RecordTooLarge {
                    offset: at,
                    kind,
                    size,
                    limit: self.limit,
                });
            }
        }
        let recognized = header.as_gnu().is_some() || header.as_ustar().is_some();
        // tar-rs reads the data of a recognized `x`, `L` or `K` record and goes on to the next
        // header for the same member; any other header ends the member (and takes the PAX
        // `size` a `x` record gave it, unless it is itself an extension header).
        let continues = recognized
            && (t.is_pax_local_extensions() || t.is_gnu_longname() || t.is_gnu_longlink());
        let pending = if let Some((off, len, data)) = pax {
            if off + len <= at && data.len() as u64 == len {
                tar::PaxExtensions::new(&data)
                    .map_while(Result::ok)
                    .find(|e| e.key() == Ok("size"))
                    .and_then(|e| e.value().ok().and_then(|v| v.parse::<u64>().ok()))
            } else {
                None
            }
        } else {
            self.pax_size
        };
        self.pax_size = None;
        let size = match (record, pending) {
            (None, Some(s)) => s,
            _ => size,
        };
        if continues {
            self.pax_size = pending;
            if t.is_pax_local_extensions() {
                self.pax = Some((at + BLOCK, size, Vec::new()));
            }
        }
        let Some(rounded) = size.checked_add(BLOCK - 1).map(|s| s & !(BLOCK - 1)) else {
            self.kind = Next::Done;
            return Ok(());
        };
        if t.is_gnu_sparse() && record.is_none() {
            match header.as_gnu() {
                Some(gnu) if gnu.is_extended() => {
                    self.next = at + BLOCK;
                    self.kind = Next::SparseExt { data: rounded };
                    return Ok(());
                }
                Some(_) => {}
                None => {
                    self.kind = Next::Done;
                    return Ok(());
                }
            }
        }
        self.after(at + BLOCK, rounded);
        Ok(())
    }

    fn fail(&self) -> Option<io::Error> {
        self.failed.clone().map(io::Error::other)
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.fail() {
            return Err(e);
        }
        if buf.is_empty() {
            return Ok(0);
        }
        if self.block_served == self.block_len && self.kind != Next::Done && self.pos == self.next {
            // Take the whole block before handing any of it out.
            let mut n = 0;
            while n < self.block.len() {
                match self.inner.read(&mut self.block[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            self.block_len = n;
            self.block_served = 0;
            if n < self.block.len() {
                // A short archive: tar-rs sees the end or a truncated header.
                self.kind = Next::Done;
            } else if let Err(e) = self.inspect() {
                self.failed = Some(e.clone());
                self.block_len = 0;
                return Err(io::Error::other(e));
            }
        }
        if self.block_served < self.block_len {
            let n = buf.len().min(self.block_len - self.block_served);
            buf[..n].copy_from_slice(&self.block[self.block_served..self.block_served + n]);
            self.block_served += n;
            self.pos += n as u64;
            return Ok(n);
        }
        let mut want = buf.len();
        if self.kind != Next::Done {
            let room = self.next.saturating_sub(self.pos);
            want = want.min(usize::try_from(room).unwrap_or(usize::MAX));
        }
        let n = self.inner.read(&mut buf[..want])?;
        if let Some((off, len, data)) = self.pax.as_mut() {
            let end = *off + *len;
            if self.pos >= *off && self.pos < end {
                let take = (n as u64).min(end - self.pos) as usize;
                data.extend_from_slice(&buf[..take]);
            }
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read + Seek> Seek for Bounded<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        if let Some(e) = self.fail() {
            return Err(e);
        }
        // tar-rs seeks forward over members' data, never into a block it has not read; the
        // stream starts at offset 0 of `inner`.
        let pending = (self.block_len - self.block_served) as i64;
        let to = match to {
            SeekFrom::Current(d) => SeekFrom::Current(d - pending),
            other => other,
        };
        let at = self.inner.seek(to)?;
        self.block_len = 0;
        self.block_served = 0;
        if self.kind != Next::Done && at > self.next {
            // Over a header unread: the framing is lost, so is the check; tar-rs never does it.
            self.kind = Next::Done;
        }
        if at != self.pos {
            self.pax = None;
        }
        self.pos = at;
        Ok(at)
    }
}

#[cfg(test)]
mod tests;
