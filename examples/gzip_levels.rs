//! Hand-run gzip study (see BENCHMARKS.md), not part of the test suite and not the library's
//! compressor: a copy of `crates/layer/src/layer/compress.rs`'s block scheme (fresh zlib-rs deflate per
//! block, primed with the previous block's last 32 KiB, sync flush between blocks) with the
//! level, block size and thread count as knobs, run over a tar held in memory.
//!
//! `gzip_levels TAR` — environment knobs:
//! - `LEVELS`  comma-separated zlib levels (default `1,2,3,4,5,6`)
//! - `BLOCK`   uncompressed bytes per block (default 1048576, the library's)
//! - `THREADS` worker threads (default 1)
//! - `OUT`     directory: write each result as `OUT/level-L-block-B.gz` (for `gzip -t`, sizes,
//!   or comparing with the library's output: level 6 / 1 MiB must be byte-identical)
//! - `EXTRA=1` also time, single-threaded over the same bytes: sha256, crc32, and one plain
//!   deflate stream (no blocks, no dictionaries) per level
//!
//! Prints one line per measurement: wall seconds, process CPU seconds (user+sys, from
//! getrusage, so it covers every thread), output bytes and input MB per wall second.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures
// getrusage(2) for the peak RSS.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use flate2::{Compress, FlushCompress, Status};
use sha2::Digest as _;

const WINDOW: usize = 32 * 1024;
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];

/// One compressed block and the crc32 of its input, filled in by whichever worker took it.
type Slot = Mutex<Option<(Vec<u8>, crc32fast::Hasher)>>;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// Process user+sys CPU seconds (all threads).
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &raw mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Wall and CPU seconds of `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (c0, t0) = (cpu_seconds(), Instant::now());
    let r = f();
    (r, t0.elapsed().as_secs_f64(), cpu_seconds() - c0)
}

/// The library's `deflate_block`, with the level as a parameter.
fn deflate_block(level: u32, dict: &[u8], data: &[u8], last: bool) -> Vec<u8> {
    let mut c = Compress::new(flate2::Compression::new(level), false);
    if !dict.is_empty() {
        c.set_dictionary(dict).expect("deflate dictionary");
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
        let consumed = c.total_in() as usize;
        let status = c
            .compress_vec(&data[consumed..], &mut out, flush)
            .expect("deflate");
        let all_in = c.total_in() as usize == data.len();
        let room_left = out.len() < out.capacity();
        match status {
            Status::StreamEnd => return out,
            _ if !last && all_in && room_left => return out,
            _ => {}
        }
    }
}

/// The whole gzip member: blocks compressed by `threads` workers (each also runs crc32 over its
/// block, as the library's workers do), concatenated in order.
fn gzip_blocks(data: &[u8], level: u32, block: usize, threads: usize) -> Vec<u8> {
    let blocks: Vec<&[u8]> = if data.is_empty() {
        vec![&[][..]]
    } else {
        data.chunks(block).collect()
    };
    let results: Vec<Slot> = blocks.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= blocks.len() {
                    return;
                }
                let start = i * block;
                let dict = &data[start.saturating_sub(WINDOW)..start];
                let mut crc = crc32fast::Hasher::new();
                crc.update(blocks[i]);
                let out = deflate_block(level, dict, blocks[i], i + 1 == blocks.len());
                *results[i].lock().unwrap() = Some((out, crc));
            });
        }
    });
    let mut gz = GZIP_HEADER.to_vec();
    let mut crc = crc32fast::Hasher::new();
    for r in results {
        let (out, c) = r.into_inner().unwrap().unwrap();
        gz.extend_from_slice(&out);
        crc.combine(&c);
    }
    gz.extend_from_slice(&crc.finalize().to_le_bytes());
    gz.extend_from_slice(&(data.len() as u32).to_le_bytes());
    gz
}

/// One plain raw-deflate stream over everything (no blocks, no dictionaries).
fn deflate_stream(data: &[u8], level: u32) -> usize {
    let mut c = Compress::new(flate2::Compression::new(level), false);
    let mut out = Vec::with_capacity(1 << 20);
    let mut total = 0usize;
    loop {
        out.clear();
        let consumed = c.total_in() as usize;
        let end = (consumed + (1 << 20)).min(data.len());
        let flush = if end == data.len() {
            FlushCompress::Finish
        } else {
            FlushCompress::None
        };
        let status = c
            .compress_vec(&data[consumed..end], &mut out, flush)
            .expect("deflate");
        total += out.len();
        if status == Status::StreamEnd {
            return total;
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, tar] = &args[..] else {
        anyhow::bail!("usage: gzip_levels TAR (knobs: LEVELS BLOCK THREADS OUT EXTRA)");
    };
    let levels: Vec<u32> = env_or("LEVELS", "1,2,3,4,5,6")
        .split(',')
        .map(|l| l.trim().parse())
        .collect::<Result<_, _>>()?;
    let block: usize = env_or("BLOCK", "1048576").parse()?;
    let threads: usize = env_or("THREADS", "1").parse()?;
    let out_dir = std::env::var_os("OUT").map(std::path::PathBuf::from);
    let extra = env_or("EXTRA", "0") == "1";

    let data = fs_err::read(tar)?;
    let mb = data.len() as f64 / 1e6;
    println!("input {} bytes ({tar})", data.len());
    if extra {
        let (_, w, c) = timed(|| sha2::Sha256::digest(&data));
        println!("sha256      wall={w:.3}s cpu={c:.3}s {:.0} MB/s", mb / w);
        let (_, w, c) = timed(|| crc32fast::hash(&data));
        println!("crc32       wall={w:.3}s cpu={c:.3}s {:.0} MB/s", mb / w);
    }
    for &level in &levels {
        let (gz, w, c) = timed(|| gzip_blocks(&data, level, block, threads));
        println!(
            "blocks level={level} block={block} threads={threads} wall={w:.3}s cpu={c:.3}s size={} {:.0} MB/s",
            gz.len(),
            mb / w
        );
        if let Some(dir) = &out_dir {
            fs_err::write(dir.join(format!("level-{level}-block-{block}.gz")), &gz)?;
        }
        if extra {
            let (n, w, c) = timed(|| deflate_stream(&data, level));
            println!(
                "stream level={level} threads=1 wall={w:.3}s cpu={c:.3}s size={} {:.0} MB/s",
                n + 18,
                mb / w
            );
        }
    }
    Ok(())
}
