//! bench/wheels.sh: a lower bound on the wall time of any zstd wheel layer build on this
//! machine. It does only the work that no installer writing a zstd layer with the checks
//! issue 5 asks for can skip:
//! - reading every deflated member's bytes from the wheel files (positional reads, from the
//!   page cache as in a warm build) and inflating them (the layer holds the inflated bytes);
//! - sha256 of the inflated bytes twice (RECORD, and the diff_id: the tar holds them too) and
//!   of the compressed bytes once (the blob digest);
//! - libzstd at the given level, single-threaded per share (its multi-threaded mode does the
//!   same matching plus job overlap);
//! - writing the compressed bytes to a file in OUTDIR (no fsync; removed after the clock stops).
//!
//! The members are split into CORES shares of equal size in bytes (largest first, each to the
//! lightest share), and the shares run at once, one thread each, on the real cores: so the
//! bound counts how well this machine runs CORES busy threads, but no pipeline and no waiting.
//! Not counted either: checking the wheel files' own sha256, zip and tar framing, fsync, page
//! faults (buffers and compressors are made, and buffers touched, before the clock starts; the
//! content to compress and hash is inflated before it starts too). Each round runs the whole;
//! the fastest of ROUNDS counts. It is a bound for these libraries (zlib-rs, sha2, libzstd):
//! another inflate or sha256 could be faster. It also hashes a few members (RECORD,
//! INSTALLER, signatures) that a real install does not check against RECORD: a few KiB.
//! Usage: wheel_floor LEVEL CORES OUTDIR WHEEL...   (prints the bound in seconds on stdout,
//! what the threads spent on each phase on stderr)
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::Instant;

use sha2::{Digest, Sha256};

const ROUNDS: usize = 3;

/// A deflated member: which wheel, where its compressed bytes start, how many.
struct Member {
    wheel: usize,
    offset: u64,
    len: usize,
}

/// One thread's part: its members, what they inflate to, and where its output goes.
struct Share<'f> {
    files: &'f [std::fs::File],
    members: Vec<Member>,
    content: Vec<u8>,
    raw: Vec<u8>,
    buf: Vec<u8>,
    out: Vec<u8>,
    zstd: zstd::bulk::Compressor<'static>,
    dest: PathBuf,
}

impl Share<'_> {
    /// Reads and inflates, compresses, hashes and writes the share; the seconds each of these
    /// took (reading and inflating are one phase: they alternate member by member).
    fn run(&mut self) -> anyhow::Result<[f64; 4]> {
        let t = Instant::now();
        let mut n = 0;
        for m in &self.members {
            let raw = &mut self.raw[..m.len];
            self.files[m.wheel].read_exact_at(raw, m.offset)?;
            let mut d = flate2::read::DeflateDecoder::new(&raw[..]);
            loop {
                match d.read(&mut self.buf)? {
                    0 => break,
                    k => n += k,
                }
            }
        }
        anyhow::ensure!(n == self.content.len(), "inflated {n} bytes");
        let inflate = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let size = self.zstd.compress_to_buffer(&self.content, &mut self.out)?;
        let zstd = t.elapsed().as_secs_f64();
        let t = Instant::now();
        // Two different messages over the content (RECORD's, and the tar's with its headers),
        // so neither hash can be folded into the other.
        std::hint::black_box([
            Sha256::digest(std::hint::black_box(&self.content)),
            Sha256::new_with_prefix([0u8; 512])
                .chain_update(&self.content)
                .finalize(),
            Sha256::digest(&self.out[..size]),
        ]);
        let hash = t.elapsed().as_secs_f64();
        let t = Instant::now();
        fs_err::File::create(&self.dest)?.write_all(&self.out[..size])?;
        Ok([inflate, zstd, hash, t.elapsed().as_secs_f64()])
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(level), Some(cores), Some(outdir), Some(wheels)) =
        (args.get(1), args.get(2), args.get(3), args.get(4..))
    else {
        anyhow::bail!("usage: wheel_floor LEVEL CORES OUTDIR WHEEL...");
    };
    let level: i32 = level.parse()?;
    let cores: usize = cores.parse::<usize>()?.max(1);
    let files = wheels
        .iter()
        .map(|p| fs_err::File::open(p).map(fs_err::File::into_file))
        .collect::<Result<Vec<_>, _>>()?;
    let mut members: Vec<(Member, Vec<u8>)> = Vec::new();
    for (wheel, f) in files.iter().enumerate() {
        let mut ar = zip::ZipArchive::new(f)?;
        for i in 0..ar.len() {
            let mut m = ar.by_index_raw(i)?;
            if m.compression() == zip::CompressionMethod::Deflated {
                let offset = m
                    .data_start()
                    .ok_or_else(|| anyhow::anyhow!("no data start"))?;
                let mut raw = Vec::new();
                m.read_to_end(&mut raw)?;
                let mut content = Vec::new();
                flate2::read::DeflateDecoder::new(&raw[..]).read_to_end(&mut content)?;
                let len = raw.len();
                members.push((Member { wheel, offset, len }, content));
            }
        }
    }
    let count = members.len();
    let longest = members.iter().map(|m| m.0.len).max().unwrap_or(0);
    members.sort_by_key(|m| std::cmp::Reverse(m.1.len()));
    let mut shares: Vec<Share> = (0..cores)
        .map(|i| {
            Ok(Share {
                files: &files,
                members: Vec::new(),
                content: Vec::new(),
                raw: vec![1; longest],
                buf: vec![1; 1 << 20],
                out: Vec::new(),
                zstd: zstd::bulk::Compressor::new(level)?,
                dest: PathBuf::from(outdir)
                    .join(format!(".wheel_floor.{}.{i}", std::process::id())),
            })
        })
        .collect::<anyhow::Result<_>>()?;
    for (member, content) in members {
        if let Some(s) = shares.iter_mut().min_by_key(|s| s.content.len()) {
            s.members.push(member);
            s.content.extend_from_slice(&content);
        }
    }
    for s in &mut shares {
        s.out = vec![1; zstd::zstd_safe::compress_bound(s.content.len())];
    }
    let mut best: Option<(f64, [f64; 4])> = None;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let phases = std::thread::scope(|scope| {
            let threads: Vec<_> = shares
                .iter_mut()
                .map(|s| scope.spawn(move || s.run()))
                .collect();
            let mut sum = [0.0; 4];
            for th in threads {
                let p = th
                    .join()
                    .map_err(|_| anyhow::anyhow!("a thread panicked"))??;
                for (a, b) in sum.iter_mut().zip(p) {
                    *a += b;
                }
            }
            Ok::<_, anyhow::Error>(sum)
        });
        let wall = t.elapsed().as_secs_f64();
        // Removed after the clock, and on every path, failures included.
        for s in &shares {
            let _ = fs_err::remove_file(&s.dest);
        }
        let phases = phases?;
        if best.is_none_or(|(b, _)| wall < b) {
            best = Some((wall, phases));
        }
    }
    let (wall, [inflate, zstd, hash, write]) = best.ok_or_else(|| anyhow::anyhow!("no rounds"))?;
    let bytes: usize = shares.iter().map(|s| s.content.len()).sum();
    eprintln!(
        "{count} members, {bytes} bytes, zstd level {level}, {cores} threads: {wall:.2} s; \
         thread seconds: read+inflate {inflate:.2}, zstd {zstd:.2}, sha256 {hash:.2}, \
         write {write:.2}"
    );
    println!("{wall:.3}");
    Ok(())
}
