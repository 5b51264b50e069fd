//! Inflating a raw deflate stream (RFC 1951) while keeping its compressed bytes for reuse.
//!
//! A zip member (a wheel's file) is already deflated. A gzip layer can carry those compressed
//! blocks as they are instead of compressing the inflated bytes again, the way zlib's
//! `examples/gzjoin.c` joins gzip files: inflate with `Z_BLOCK` to find every block boundary,
//! clear the last-block bit of the final block, and end on a byte boundary with empty blocks
//! (one stored block for an odd number of spare bits, one to three fixed blocks for an even
//! number). What comes out is a run of non-final deflate blocks that any decoder reads as part
//! of the surrounding stream. Its back-references never reach before its own first byte (the
//! member was compressed on its own), so it is valid wherever it is placed.
//!
//! [`Splicer`] reads the compressed bytes, yields the inflated bytes through [`Read`] and, when
//! asked to keep them, collects the patched compressed bytes for [`Splicer::take_raw`]. Memory
//! stays bounded: only the input not yet consumed by the decoder (one read buffer) is held.
// FFI: zlib's C API (inflate with Z_BLOCK), through libz-rs-sys.
#![allow(unsafe_code)]

use std::io::{self, Read};

use libz_rs_sys as z;

/// Compressed bytes read from the source per refill.
const READ_SIZE: usize = 64 * 1024;

/// A raw deflate decoder that also hands back its (patched) compressed input.
pub(crate) struct Splicer<'r> {
    src: &'r mut dyn Read,
    /// Boxed: zlib's state points back at its stream, so the stream must not move.
    strm: Box<z::z_stream>,
    /// Compressed bytes from absolute offset `base` on; `base` ≤ `emitted`.
    buf: Vec<u8>,
    base: u64,
    /// Absolute offset of the first compressed byte the decoder has not taken.
    consumed: u64,
    /// Absolute offset up to which compressed bytes were moved to `raw`.
    emitted: u64,
    eof: bool,
    keep_raw: bool,
    raw: Vec<u8>,
    /// The block now being decoded is the stream's last (its last-block bit was cleared).
    final_block: bool,
    started: bool,
    done: bool,
    /// Where the stream ended (absolute bit), once it has.
    end_bit: Option<u64>,
}

impl<'r> Splicer<'r> {
    /// A decoder of the raw deflate stream `src`. With `keep_raw`, [`take_raw`](Self::take_raw)
    /// returns the compressed bytes, patched to be non-final and byte-aligned.
    pub(crate) fn new(src: &'r mut dyn Read, keep_raw: bool) -> io::Result<Self> {
        let mut strm = Box::new(z::z_stream::default());
        let size = std::mem::size_of::<z::z_stream>() as i32;
        // SAFETY: `strm` is a valid, default-initialised stream (allocator set by Default);
        // the version string is the library's own. Raw deflate: window bits -15.
        let ret = unsafe { z::inflateInit2_(&raw mut *strm, -15, z::zlibVersion(), size) };
        if ret != z::Z_OK {
            return Err(io::Error::other(format!("inflateInit2 failed: {ret}")));
        }
        Ok(Splicer {
            src,
            strm,
            buf: Vec::with_capacity(READ_SIZE + 16),
            base: 0,
            consumed: 0,
            emitted: 0,
            eof: false,
            keep_raw,
            raw: Vec::new(),
            final_block: false,
            started: false,
            done: false,
            end_bit: None,
        })
    }

    /// The compressed bytes collected so far (all of them once the stream is done). Until the
    /// stream is done, the next collection starts with room for as many again (and a read
    /// more): grown from nothing, each piece was reallocated and copied about once more.
    pub(crate) fn take_raw(&mut self) -> Vec<u8> {
        let room = if self.done {
            0
        } else {
            self.raw.len() + 2 * READ_SIZE
        };
        std::mem::replace(&mut self.raw, Vec::with_capacity(room))
    }

    /// How many compressed bytes [`take_raw`](Self::take_raw) would return.
    pub(crate) fn raw_len(&self) -> usize {
        self.raw.len()
    }

    /// Whether the stream has ended (all its compressed bytes are collected).
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Compressed bytes available past `consumed`.
    fn available(&self) -> usize {
        (self.base + self.buf.len() as u64 - self.consumed) as usize
    }

    /// Reads more compressed input; false at the end of the source.
    fn refill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        // Drop what is both behind the decoder (emitted) and taken by it.
        let keep_from = self.emitted.min(self.consumed);
        let drop = (keep_from - self.base) as usize;
        self.buf.drain(..drop);
        self.base = keep_from;
        let old = self.buf.len();
        self.buf.resize(old + READ_SIZE, 0);
        let n = loop {
            match self.src.read(&mut self.buf[old..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(e);
                }
            }
        };
        self.buf.truncate(old + n);
        if n == 0 {
            self.eof = true;
        }
        Ok(n > 0)
    }

    /// Makes the byte at absolute offset `at` available; false if the source ends first.
    fn ensure(&mut self, at: u64) -> io::Result<bool> {
        while at >= self.base + self.buf.len() as u64 {
            if !self.refill()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// At a block boundary at absolute bit `bit`: looks at the next block's last-block bit and,
    /// if set, clears it (in the kept copy) and remembers that this block is the final one.
    fn next_block_at(&mut self, bit: u64) -> io::Result<()> {
        let byte = bit / 8;
        if !self.ensure(byte)? {
            return Err(truncated());
        }
        let i = (byte - self.base) as usize;
        let mask = 1u8 << (bit % 8);
        if self.buf[i] & mask != 0 {
            self.final_block = true;
            self.buf[i] &= !mask;
        }
        Ok(())
    }

    /// Marks compressed bytes before absolute offset `upto` as final (they are behind the
    /// decoder, so no last-block bit in them can still change) and, if kept, moves them to `raw`.
    fn emit(&mut self, upto: u64) {
        if upto > self.emitted {
            if self.keep_raw {
                let from = (self.emitted - self.base) as usize;
                let to = (upto - self.base) as usize;
                self.raw.extend_from_slice(&self.buf[from..to]);
            }
            self.emitted = upto;
        }
    }

    /// The stream ended at absolute bit `end`: emit the rest, zero the spare bits of the last
    /// byte and pad with empty non-final blocks to the next byte boundary (as gzjoin does).
    fn finish_at(&mut self, end: u64) {
        self.done = true;
        self.end_bit = Some(end);
        if !self.keep_raw {
            return;
        }
        let full = end / 8;
        self.emit(full);
        let used = (end % 8) as u32;
        if used == 0 {
            return;
        }
        let spare = 8 - used;
        let last = self.buf[(full - self.base) as usize] & ((1u16 << used) - 1) as u8;
        match spare {
            // Odd: an empty stored block (3 header bits, pad, LEN 0, NLEN 0xffff).
            1 => self.raw.extend_from_slice(&[last, 0, 0, 0, 0xff, 0xff]),
            3 | 5 | 7 => self.raw.extend_from_slice(&[last, 0, 0, 0xff, 0xff]),
            // Even: empty fixed-Huffman blocks of 10 bits each until aligned.
            2 => self.raw.extend_from_slice(&[last | 0x80, 0]),
            4 => self.raw.extend_from_slice(&[last | 0x20, 0x80, 0]),
            _ => self.raw.extend_from_slice(&[last | 0x08, 0x20, 0x80, 0]),
        }
        self.emitted = full + 1;
    }
}

impl Read for Splicer<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.done || out.is_empty() {
            return Ok(0);
        }
        if !self.started {
            // The first block's header is at bit 0 (raw inflate does not stop before it).
            self.started = true;
            self.next_block_at(0)?;
        }
        loop {
            if self.available() == 0 && !self.eof {
                self.refill()?;
            }
            let start = (self.consumed - self.base) as usize;
            let avail = self.available();
            let strm = &mut *self.strm;
            strm.next_in = self.buf[start..].as_ptr();
            strm.avail_in = u32::try_from(avail).unwrap_or(u32::MAX);
            strm.next_out = out.as_mut_ptr();
            strm.avail_out = u32::try_from(out.len()).unwrap_or(u32::MAX);
            let (in_before, out_before) = (strm.avail_in, strm.avail_out);
            // SAFETY: next_in/avail_in describe live bytes of `self.buf`, next_out/avail_out
            // the caller's buffer; both outlive the call, and the stream was initialised.
            let ret = unsafe { z::inflate(strm, z::Z_BLOCK) };
            let took = u64::from(in_before - strm.avail_in);
            let produced = (out_before - strm.avail_out) as usize;
            let data_type = strm.data_type;
            match ret {
                z::Z_OK | z::Z_BUF_ERROR => {}
                // Only reachable if the decoder passed a last-block bit this code did not see;
                // the exact end bit is lost then.
                z::Z_STREAM_END => return Err(invalid("the deflate stream ended unexpectedly")),
                _ => return Err(bad_data(strm)),
            }
            self.consumed += took;
            // The decoder's bit position: bytes taken, less the bits it holds unread.
            let bit = self.consumed * 8 - (data_type & 63) as u64;
            self.emit(bit / 8);
            if data_type & 128 != 0 {
                // Just past the end of a block (every call starting at a boundary moves on).
                if self.final_block {
                    self.finish_at(bit);
                    return Ok(produced);
                }
                if data_type & 64 != 0 {
                    return Err(invalid(
                        "the deflate stream's last block was not recognised",
                    ));
                }
                self.next_block_at(bit)?;
            }
            if produced > 0 {
                return Ok(produced);
            }
            if ret == z::Z_BUF_ERROR && data_type & 128 == 0 {
                if self.available() == 0 && self.eof {
                    return Err(truncated());
                }
                if self.available() > 0 {
                    return Err(invalid("the deflate decoder made no progress"));
                }
            }
        }
    }
}

impl Drop for Splicer<'_> {
    fn drop(&mut self) {
        // SAFETY: the stream was initialised by inflateInit2_ and is ended once.
        unsafe {
            z::inflateEnd(&raw mut *self.strm);
        }
    }
}

fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the deflate stream ends before its last block",
    )
}

fn invalid(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn bad_data(strm: &z::z_stream) -> io::Error {
    let msg = if strm.msg.is_null() {
        "invalid deflate data".to_string()
    } else {
        // SAFETY: zlib sets `msg` to a static NUL-terminated string.
        let m = unsafe { std::ffi::CStr::from_ptr(strm.msg) };
        format!("invalid deflate data: {}", m.to_string_lossy())
    };
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{read::DeflateDecoder, write::DeflateEncoder};
    use std::io::Write;

    use crate::layer::testdata::test_sample as sample;

    fn deflate(data: &[u8], level: u32) -> Vec<u8> {
        let mut e = DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Reads at most `step` bytes per call, to exercise refills.
    struct Trickle<'a>(&'a [u8], usize);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(buf.len()).min(self.1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Inflates `raw` through a splicer: (inflated, kept raw, end bit).
    fn run(raw: &[u8], step: usize, out_step: usize) -> io::Result<(Vec<u8>, Vec<u8>, u64)> {
        let mut src = Trickle(raw, step);
        let mut s = Splicer::new(&mut src, true)?;
        let mut data = Vec::new();
        let mut kept = Vec::new();
        let mut buf = vec![0; out_step];
        loop {
            let n = s.read(&mut buf)?;
            kept.extend(s.take_raw());
            if n == 0 {
                break;
            }
            data.extend_from_slice(&buf[..n]);
        }
        Ok((data, kept, s.end_bit.unwrap()))
    }

    #[test]
    fn spliced_streams_join_into_one_valid_stream() {
        let mut ends = std::collections::BTreeSet::new();
        let mut joined = Vec::new();
        let mut expected = Vec::new();
        let sizes = [0usize, 1, 7, 100, 1000, 5000, 70_000, 300_000]
            .into_iter()
            .chain(2..40);
        for (i, n) in sizes.enumerate() {
            let n = &n;
            for level in [0, 1, 6, 9] {
                let data = sample(*n, (i * 10 + level as usize) as u64 + 3);
                let raw = deflate(&data, level);
                for (step, out_step) in [(1 << 20, 1 << 20), (1, 7), (3, 65536)] {
                    if (*n > 5000 && step == 1) || (*n > 70_000 && step < 100) {
                        continue;
                    }
                    let (back, kept, end) = run(&raw, step, out_step).unwrap();
                    assert!(back == data, "n={n} level={level}");
                    ends.insert(end % 8);
                    // Non-final and byte-aligned: decodes to the same bytes once a final empty
                    // block follows, and not without one.
                    let mut alone = kept.clone();
                    alone.extend_from_slice(&[0x03, 0x00]);
                    let mut d = Vec::new();
                    DeflateDecoder::new(&alone[..]).read_to_end(&mut d).unwrap();
                    assert!(d == data, "n={n} level={level} alone");
                    if step == 1 << 20 {
                        joined.extend_from_slice(&kept);
                        expected.extend_from_slice(&data);
                    }
                }
            }
        }
        joined.extend_from_slice(&[0x03, 0x00]);
        let mut d = Vec::new();
        DeflateDecoder::new(&joined[..])
            .read_to_end(&mut d)
            .unwrap();
        assert!(d == expected);
        // Every padding case (0-7 spare bits) was exercised.
        assert_eq!(ends.len(), 8, "end bits mod 8 seen: {ends:?}");
    }

    #[test]
    fn truncated_and_corrupt_streams_are_errors() {
        let raw = deflate(&sample(200_000, 9), 6);
        let err = run(&raw[..raw.len() / 2], 1 << 20, 1 << 20).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
        assert!(run(&[], 1 << 20, 1 << 20).is_err());
        // A block type of 3 is invalid.
        let err = run(&[0x07, 0, 0], 1 << 20, 1 << 20).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
    }

    #[test]
    fn without_keeping_nothing_is_collected() {
        let data = sample(100_000, 5);
        let raw = deflate(&data, 6);
        let mut src = &raw[..];
        let mut s = Splicer::new(&mut src, false).unwrap();
        let mut back = Vec::new();
        s.read_to_end(&mut back).unwrap();
        assert!(back == data);
        assert!(s.take_raw().is_empty());
    }
}
