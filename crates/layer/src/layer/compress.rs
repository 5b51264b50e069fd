//! Pinned, deterministic compressors whose output never depends on the thread count.
//!
//! - gzip: pigz-style parallel deflate with flate2's zlib-rs backend at the recipe's level
//!   (default 6). The stream is cut into fixed 1 MiB blocks; each is compressed as raw deflate
//!   with the previous block's last 32 KiB as preset dictionary, non-final blocks end with a
//!   sync flush, the last with finish. A block's bytes depend only on its input and that
//!   dictionary, so any number of workers produces the same stream. One gzip member: fixed
//!   10-byte header (mtime 0, xfl 0, OS 255), CRC32 and ISIZE trailer.
//!   Spliced content (contract 3): where the tar stage hands over a file's bytes together with
//!   deflate blocks that already encode them (a wheel's zip member, see `splice`), the current
//!   block is cut short (sync flush), the blocks are copied as they are, and the next block is
//!   primed with the last 32 KiB of everything before it. The cuts sit where the content sits,
//!   so the stream still depends only on its input.
//! - zstd: vendored libzstd at the recipe's level (default 3) with `NbWorkers` = threads
//!   (always ≥ 1: libzstd's output is identical for every worker count ≥ 1, but may differ from
//!   single-threaded mode 0).
//! - zstd:chunked and eStargz: single-threaded writers that read the tar stream as it passes
//!   (see `zchunked` and `estargz`); their output depends only on the tar and the level.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use flate2::{Compress, FlushCompress, Status};

use super::{estargz, zchunked, Compression};
use crate::digest::Digest;

pub(crate) const GZIP_DEFAULT_LEVEL: u32 = 6;
pub(crate) const ZSTD_DEFAULT_LEVEL: i32 = 3;
/// The highest levels taken (the lowest is 1): zlib's, and zstd's without `--ultra`.
pub(crate) const GZIP_MAX_LEVEL: u32 = 9;
pub(crate) const ZSTD_MAX_LEVEL: i32 = 19;

/// The gzip writer's identity: backend, level and block size.
pub(crate) fn gzip_description(level: u32) -> String {
    format!("gzip;zlib-rs;level={level};block={BLOCK_SIZE}")
}

/// The zstd writer's identity: backend, level, multi-threaded framing.
pub(crate) fn zstd_description(level: i32) -> String {
    format!("zstd;libzstd;level={level};mt")
}

/// Uncompressed bytes per gzip block (part of [`gzip_description`]).
const BLOCK_SIZE: usize = 1 << 20;
/// The deflate window: how much of the previous block primes the next.
const WINDOW: usize = 32 * 1024;
/// Fixed gzip header: magic, CM=deflate, FLG=0, MTIME=0, XFL=0, OS=255 (unknown).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];

/// A streaming compressor in front of `W`.
pub(crate) enum Compressor<W: Write> {
    None(W),
    Gzip(ParallelGzip<W>),
    Zstd(zstd::stream::write::Encoder<'static, W>),
    ZstdChunked(Box<zchunked::Chunked<W>>),
    Estargz(Box<estargz::Estargz<W>>),
}

/// What a finished stream adds to its layer's description, beyond its bytes.
#[derive(Debug, Default)]
pub(crate) struct Finished {
    /// Descriptor annotations (the partial-pull formats' TOC positions and digests).
    pub annotations: std::collections::BTreeMap<String, String>,
    /// The uncompressed stream's digest and size when it is not the tar that went in (eStargz
    /// adds its TOC entry).
    pub uncompressed: Option<(Digest, u64)>,
}

impl<W: Write> Compressor<W> {
    #[cfg(test)]
    pub(crate) fn new(c: Compression, threads: usize, out: W) -> io::Result<Self> {
        Self::new_at(c, threads, 0, out)
    }

    /// [`new`](Self::new) for a layer of entries dated `epoch` (an eStargz TOC entry's mtime).
    pub(crate) fn new_at(c: Compression, threads: usize, epoch: u64, out: W) -> io::Result<Self> {
        let threads = threads.max(1);
        // Compression::from_name checks recipe levels; this guards the library's other callers
        // (an out-of-range zlib level would make flate2 panic).
        if !c.level_in_range() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("compression level out of range: {}", c.describe()),
            ));
        }
        Ok(match c {
            Compression::None => Compressor::None(out),
            Compression::Gzip(level) => Compressor::Gzip(ParallelGzip::new(out, level, threads)?),
            Compression::Zstd(level) => {
                let mut enc = zstd::stream::write::Encoder::new(out, level)?;
                let workers = u32::try_from(threads).unwrap_or(u32::MAX);
                enc.multithread(workers)?;
                // Pinned explicitly rather than left to library defaults.
                enc.include_checksum(false)?;
                enc.include_contentsize(false)?;
                enc.include_dictid(false)?;
                Compressor::Zstd(enc)
            }
            Compression::ZstdChunked(level) => {
                Compressor::ZstdChunked(Box::new(zchunked::Chunked::new(out, level)?))
            }
            Compression::Estargz(level) => {
                Compressor::Estargz(Box::new(estargz::Estargz::new(out, level, epoch)))
            }
        })
    }

    /// Content bytes that [`write_deflate`](Self::write_deflate) pieces carry already
    /// compressed: a gzip stream only counts and checksums them; the others compress them.
    pub(crate) fn write_covered(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Compressor::Gzip(g) => g.covered(buf),
            Compressor::Estargz(e) => e.write_covered(buf),
            other => other.write_all(buf),
        }
    }

    /// Deflate blocks (non-final, ending on a byte boundary) to copy into the stream as they
    /// are. Only a gzip or eStargz stream takes them.
    pub(crate) fn write_deflate(&mut self, raw: Vec<u8>) -> io::Result<()> {
        match self {
            Compressor::Gzip(g) => g.deflate(raw),
            Compressor::Estargz(e) => e.write_deflate(&raw),
            _ => Err(io::Error::other(
                "deflate blocks handed to a compressor other than gzip or estargz",
            )),
        }
    }

    /// Ends the stream and returns the inner writer, flushed.
    #[cfg(test)]
    pub(crate) fn finish(self) -> io::Result<W> {
        self.finish_layer().map(|(w, _)| w)
    }

    /// [`finish`](Self::finish), with what the stream adds to its layer's description.
    pub(crate) fn finish_layer(self) -> io::Result<(W, Finished)> {
        let mut done = Finished::default();
        let mut w = match self {
            Compressor::None(w) => w,
            Compressor::Gzip(g) => g.finish()?,
            Compressor::Zstd(z) => z.finish()?,
            Compressor::ZstdChunked(z) => {
                let (w, notes) = z.finish()?;
                done.annotations = notes;
                w
            }
            Compressor::Estargz(e) => {
                let e = e.finish()?;
                done.annotations = e.annotations;
                done.uncompressed = Some((e.diff_id, e.uncompressed_size));
                e.out
            }
        };
        w.flush()?;
        Ok((w, done))
    }
}

impl<W: Write> Write for Compressor<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Compressor::None(w) => w.write(buf),
            Compressor::Gzip(g) => g.write(buf),
            Compressor::Zstd(z) => z.write(buf),
            Compressor::ZstdChunked(z) => z.write(buf),
            Compressor::Estargz(e) => e.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        // Flushing must not change the bytes (a zstd or deflate flush would), so only the
        // pass-through forwards it; the others flush at finish.
        match self {
            Compressor::None(w) => w.flush(),
            _ => Ok(()),
        }
    }
}

struct Job {
    data: Vec<u8>,
    dict: Vec<u8>,
    last: bool,
    reply: SyncSender<Done>,
}

struct Done {
    compressed: Result<Vec<u8>, String>,
    crc: crc32fast::Hasher,
    data: Vec<u8>,
}

/// What the gzip writer emits, in order.
enum Pending {
    /// A block being compressed by a worker.
    Block(Receiver<Done>),
    /// Covered content: its checksum and length.
    Covered(crc32fast::Hasher, u64),
    /// Deflate blocks copied as they are.
    Deflate(Vec<u8>),
}

/// pigz-style parallel gzip writer. Memory: at most `2 × threads + 1` blocks of input in flight
/// plus their compressed output.
pub(crate) struct ParallelGzip<W: Write> {
    out: Option<W>,
    block: Vec<u8>,
    dict: Vec<u8>,
    jobs: Option<SyncSender<Job>>,
    inflight: VecDeque<Pending>,
    max_inflight: usize,
    workers: Vec<JoinHandle<()>>,
    crc: crc32fast::Hasher,
    total: u64,
    spare: Vec<Vec<u8>>,
}

impl<W: Write> ParallelGzip<W> {
    pub(crate) fn new(mut out: W, level: u32, threads: usize) -> io::Result<Self> {
        out.write_all(&GZIP_HEADER)?;
        let (tx, rx) = sync_channel::<Job>(threads);
        let rx = Arc::new(Mutex::new(rx));
        let mut workers = Vec::with_capacity(threads);
        for i in 0..threads {
            let rx = Arc::clone(&rx);
            let handle = std::thread::Builder::new()
                .name(format!("gzip-{i}"))
                .spawn(move || worker(&rx, level))?;
            workers.push(handle);
        }
        Ok(ParallelGzip {
            out: Some(out),
            block: Vec::with_capacity(BLOCK_SIZE),
            dict: Vec::new(),
            jobs: Some(tx),
            inflight: VecDeque::new(),
            max_inflight: 2 * threads,
            workers,
            crc: crc32fast::Hasher::new(),
            total: 0,
            spare: Vec::new(),
        })
    }

    /// Sends the current block to a worker; keeps at most `max_inflight` blocks in flight.
    fn dispatch(&mut self, last: bool) -> io::Result<()> {
        let fresh = self
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BLOCK_SIZE));
        let data = std::mem::replace(&mut self.block, fresh);
        let dict = self.dict.clone();
        slide_window(&mut self.dict, &data);
        let (reply, rx) = sync_channel(1);
        let jobs = self.jobs.as_ref().ok_or_else(worker_gone)?;
        jobs.send(Job {
            data,
            dict,
            last,
            reply,
        })
        .map_err(|_| worker_gone())?;
        self.push(Pending::Block(rx))
    }

    /// Queues `p` behind what is in flight; keeps at most `max_inflight` entries queued.
    fn push(&mut self, p: Pending) -> io::Result<()> {
        self.inflight.push_back(p);
        while self.inflight.len() > self.max_inflight {
            self.collect_one()?;
        }
        Ok(())
    }

    /// Ends the current block early (sync flush) before spliced content.
    fn cut(&mut self) -> io::Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        self.dispatch(false)
    }

    /// Content carried by deflate blocks from [`deflate`](Self::deflate).
    pub(crate) fn covered(&mut self, data: &[u8]) -> io::Result<()> {
        self.cut()?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(data);
        slide_window(&mut self.dict, data);
        self.push(Pending::Covered(crc, data.len() as u64))
    }

    /// Deflate blocks to copy as they are.
    pub(crate) fn deflate(&mut self, raw: Vec<u8>) -> io::Result<()> {
        self.cut()?;
        self.push(Pending::Deflate(raw))
    }

    /// Waits for the oldest entry (a block: for its worker) and writes it out.
    fn collect_one(&mut self) -> io::Result<()> {
        let out = self.out.as_mut().ok_or_else(worker_gone)?;
        let rx = match self.inflight.pop_front() {
            None => return Ok(()),
            Some(Pending::Block(rx)) => rx,
            Some(Pending::Covered(crc, len)) => {
                self.crc.combine(&crc);
                self.total += len;
                return Ok(());
            }
            Some(Pending::Deflate(raw)) => return out.write_all(&raw),
        };
        let done = rx.recv().map_err(|_| worker_gone())?;
        let compressed = done.compressed.map_err(io::Error::other)?;
        out.write_all(&compressed)?;
        self.crc.combine(&done.crc);
        self.total += done.data.len() as u64;
        if self.spare.len() < 2 {
            let mut data = done.data;
            data.clear();
            self.spare.push(data);
        }
        Ok(())
    }

    /// Compresses the final block, writes the trailer and returns the inner writer.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.dispatch(true)?;
        while !self.inflight.is_empty() {
            self.collect_one()?;
        }
        let mut out = self.out.take().ok_or_else(worker_gone)?;
        let crc = std::mem::replace(&mut self.crc, crc32fast::Hasher::new()).finalize();
        out.write_all(&crc.to_le_bytes())?;
        out.write_all(&(self.total as u32).to_le_bytes())?; // ISIZE: length mod 2^32
        Ok(out)
    }
}

impl<W: Write> Write for ParallelGzip<W> {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        let len = buf.len();
        while !buf.is_empty() {
            // A full block is sent only once more input proves it is not the last.
            if self.block.len() == BLOCK_SIZE {
                self.dispatch(false)?;
            }
            let n = (BLOCK_SIZE - self.block.len()).min(buf.len());
            self.block.extend_from_slice(&buf[..n]);
            buf = &buf[n..];
        }
        Ok(len)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<W: Write> Drop for ParallelGzip<W> {
    fn drop(&mut self) {
        // Closing the job channel ends the workers; replies never block (capacity 1).
        self.jobs = None;
        self.inflight.clear();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// Appends `data` to the deflate window `dict`, keeping its last [`WINDOW`] bytes.
fn slide_window(dict: &mut Vec<u8>, data: &[u8]) {
    if data.len() >= WINDOW {
        dict.clear();
        dict.extend_from_slice(&data[data.len() - WINDOW..]);
    } else {
        let excess = (dict.len() + data.len()).saturating_sub(WINDOW);
        dict.drain(..excess);
        dict.extend_from_slice(data);
    }
}

fn worker_gone() -> io::Error {
    io::Error::other("a gzip compression worker stopped unexpectedly")
}

fn worker(rx: &Mutex<Receiver<Job>>, level: u32) {
    loop {
        let job = match rx.lock() {
            Ok(guard) => match guard.recv() {
                Ok(job) => job,
                Err(_) => return,
            },
            Err(_) => return,
        };
        let mut crc = crc32fast::Hasher::new();
        crc.update(&job.data);
        let compressed = deflate_block(&job.dict, &job.data, level, job.last);
        // The writer may be gone (error path); nothing to do then.
        let _ = job.reply.send(Done {
            compressed,
            crc,
            data: job.data,
        });
    }
}

/// Raw deflate of one block at `level` primed with `dict`; sync flush unless `last`, then
/// finish.
///
/// A fresh compressor per block, never a reset one: with zlib-rs 0.5.5, a `reset()` compressor
/// reused across blocks produced different bytes than a fresh one (seen on a 300 MB layer: the
/// output depended on which worker had compressed which blocks before), which would make the
/// output depend on the thread count. The allocation is noise next to compressing 1 MiB.
fn deflate_block(dict: &[u8], data: &[u8], level: u32, last: bool) -> Result<Vec<u8>, String> {
    let mut c = Compress::new(flate2::Compression::new(level), false);
    let c = &mut c;
    if !dict.is_empty() {
        c.set_dictionary(dict)
            .map_err(|e| format!("deflate dictionary: {e}"))?;
    }
    let flush = if last {
        FlushCompress::Finish
    } else {
        FlushCompress::Sync
    };
    let mut out = Vec::with_capacity(data.len() + data.len() / 8 + 1024);
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve(out.capacity().max(4096));
        }
        let (in_before, out_before) = (c.total_in(), c.total_out());
        let consumed = in_before as usize;
        let status = c
            .compress_vec(&data[consumed..], &mut out, flush)
            .map_err(|e| format!("deflate: {e}"))?;
        let all_in = c.total_in() as usize == data.len();
        let room_left = out.len() < out.capacity();
        match status {
            Status::StreamEnd => return Ok(out),
            // zlib: a flush is complete once deflate returns with output space left.
            _ if !last && all_in && room_left => return Ok(out),
            Status::BufError
                if c.total_in() == in_before && c.total_out() == out_before && room_left =>
            {
                return Err("deflate made no progress".into())
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn sample(n: usize) -> Vec<u8> {
        crate::layer::testdata::test_sample(n, 0x9e3779b97f4a7c15)
    }

    fn compress(c: Compression, threads: usize, data: &[u8], chunk: usize) -> Vec<u8> {
        let mut w = Compressor::new(c, threads, Vec::new()).unwrap();
        for part in data.chunks(chunk.max(1)) {
            w.write_all(part).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn gzip_identical_for_any_thread_count_and_decodes() {
        // Sizes around block boundaries, including empty and exactly one block.
        for n in [
            0,
            1,
            BLOCK_SIZE - 1,
            BLOCK_SIZE,
            BLOCK_SIZE + 1,
            3 * BLOCK_SIZE + 12345,
        ] {
            let data = sample(n);
            let one = compress(Compression::GZIP, 1, &data, 100_000);
            for threads in [2, 4, 8] {
                assert_eq!(
                    one,
                    compress(Compression::GZIP, threads, &data, 77_777),
                    "n={n} t={threads}"
                );
            }
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&one[..])
                .read_to_end(&mut back)
                .unwrap();
            assert!(back == data, "gzip round trip n={n}");
            let mut back = Vec::new();
            flate2::read::MultiGzDecoder::new(&one[..])
                .read_to_end(&mut back)
                .unwrap();
            assert!(back == data, "multi gzip round trip n={n}");
            assert_eq!(&one[..10], &GZIP_HEADER);
        }
    }

    #[test]
    fn out_of_range_levels_are_errors_not_panics() {
        for c in [
            Compression::Gzip(0),
            Compression::Gzip(10),
            Compression::Zstd(0),
            Compression::Zstd(23),
        ] {
            let err = Compressor::new(c, 1, Vec::new()).err().expect("refused");
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{c:?}");
        }
    }

    #[test]
    fn gzip_passes_system_gzip_test() {
        let data = sample(2 * BLOCK_SIZE + 999);
        let gz = compress(Compression::GZIP, 3, &data, 65536);
        assert!(crate::layer::testdata::system_gunzip(&gz) == data);
    }

    #[test]
    fn zstd_identical_for_any_thread_count_and_decodes() {
        let data = sample(9 * BLOCK_SIZE + 7);
        let one = compress(Compression::ZSTD, 1, &data, 100_000);
        for threads in [2, 4] {
            assert!(
                one == compress(Compression::ZSTD, threads, &data, 33_333),
                "t={threads}"
            );
        }
        assert!(zstd::decode_all(&one[..]).unwrap() == data);
    }

    #[test]
    fn none_is_pass_through() {
        let data = sample(1000);
        assert_eq!(compress(Compression::None, 4, &data, 10), data);
    }
}
