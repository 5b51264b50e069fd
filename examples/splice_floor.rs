//! bench/torch.sh: a lower bound on the work of the wheel layers of a gzip image whose layers
//! reuse the wheels' deflate bytes, measured on this machine in the same run as the builds.
//! It does only the work issue 38 names as the floor:
//! - reading every member's compressed bytes from the wheel files (1 MiB positional reads,
//!   from the page cache as in a warm build) and inflating the deflated ones, 1 MiB of output
//!   at a time (the layer's diff_id covers the inflated bytes);
//! - sha256 of the inflated bytes once (the diff_id) and of the compressed bytes once (the
//!   blob digest, as if every byte of the blob were a spliced one);
//! - writing the compressed bytes to a file in OUTDIR (no fsync; removed at the end).
//!
//! Not counted: the gzip and tar framing, the CRC-32 of the gzip trailer and of each member,
//! the RECORD check (a sealed wheel skips it), fsync, finding where the deflate blocks end,
//! and every layer other than the wheels' (the apt and interpreter layers, the app, the
//! config). The members are split into CORES shares of equal inflated size (largest first,
//! each to the lightest share) and the shares run at once, one thread each: no pipeline, no
//! waiting. It is a bound for these libraries (zlib-rs through flate2, sha2).
//! Usage: splice_floor CORES OUTDIR WHEEL...   (prints what each thread spent on each phase on
//! stderr; time it from outside)
#![allow(clippy::print_stderr)] // a benchmark prints its figures

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use flate2::{Decompress, FlushDecompress, Status};
use sha2::{Digest, Sha256};

const PIECE: usize = 1 << 20;

/// A member: which wheel, where its compressed bytes start, how many, what they inflate to.
struct Member {
    wheel: usize,
    offset: u64,
    len: u64,
    size: u64,
    deflated: bool,
}

/// What one thread spent: reading, inflating, hashing, writing; and the bytes it inflated.
#[derive(Default)]
struct Spent {
    read: Duration,
    inflate: Duration,
    hash: Duration,
    write: Duration,
    inflated: u64,
}

fn share(files: &[std::fs::File], members: &[Member], dest: &PathBuf) -> anyhow::Result<Spent> {
    let mut spent = Spent::default();
    let mut out = fs_err::File::create(dest)?;
    let mut raw = vec![0u8; PIECE];
    let mut buf = vec![0u8; PIECE];
    let mut tar = Sha256::new_with_prefix([0u8; 512]);
    let mut blob = Sha256::new();
    for m in members {
        let mut z = Decompress::new(false);
        let mut at = 0u64;
        let mut inflated = 0u64;
        while at < m.len {
            let n = usize::try_from((m.len - at).min(PIECE as u64))?;
            let t = Instant::now();
            files[m.wheel].read_exact_at(&mut raw[..n], m.offset + at)?;
            spent.read += t.elapsed();
            at += n as u64;
            let t = Instant::now();
            blob.update(&raw[..n]);
            spent.hash += t.elapsed();
            if m.deflated {
                let mut input = &raw[..n];
                loop {
                    let t = Instant::now();
                    let (before_in, before_out) = (z.total_in(), z.total_out());
                    let status = z.decompress(input, &mut buf, FlushDecompress::None)?;
                    let used = usize::try_from(z.total_in() - before_in)?;
                    let made = usize::try_from(z.total_out() - before_out)?;
                    spent.inflate += t.elapsed();
                    input = &input[used..];
                    let t = Instant::now();
                    tar.update(&buf[..made]);
                    spent.hash += t.elapsed();
                    inflated += made as u64;
                    if status == Status::StreamEnd || (input.is_empty() && made < buf.len()) {
                        break;
                    }
                }
            } else {
                let t = Instant::now();
                tar.update(&raw[..n]);
                spent.hash += t.elapsed();
                inflated += n as u64;
            }
            let t = Instant::now();
            out.write_all(&raw[..n])?;
            spent.write += t.elapsed();
        }
        anyhow::ensure!(
            inflated == m.size,
            "a member of wheel {} inflated to {inflated} bytes, not {}",
            m.wheel,
            m.size
        );
        spent.inflated += inflated;
    }
    std::hint::black_box((tar.finalize(), blob.finalize()));
    Ok(spent)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(cores), Some(outdir), Some(wheels)) = (args.get(1), args.get(2), args.get(3..))
    else {
        anyhow::bail!("usage: splice_floor CORES OUTDIR WHEEL...");
    };
    let cores: usize = cores.parse::<usize>()?.max(1);
    let files = wheels
        .iter()
        .map(|p| fs_err::File::open(p).map(fs_err::File::into_file))
        .collect::<Result<Vec<_>, _>>()?;
    let mut members = Vec::new();
    for (wheel, f) in files.iter().enumerate() {
        let mut ar = zip::ZipArchive::new(f)?;
        for i in 0..ar.len() {
            let m = ar.by_index_raw(i)?;
            let deflated = match m.compression() {
                zip::CompressionMethod::Deflated => true,
                zip::CompressionMethod::Stored => false,
                other => anyhow::bail!("member {i} of wheel {wheel}: {other:?}"),
            };
            let offset = m
                .data_start()
                .ok_or_else(|| anyhow::anyhow!("member {i} of wheel {wheel}: no data start"))?;
            let (len, size) = (m.compressed_size(), m.size());
            members.push(Member {
                wheel,
                offset,
                len,
                size,
                deflated,
            });
        }
    }
    members.sort_by_key(|m| std::cmp::Reverse(m.size));
    let mut shares: Vec<(u64, Vec<Member>)> = (0..cores).map(|_| (0, Vec::new())).collect();
    for m in members {
        if let Some(s) = shares.iter_mut().min_by_key(|s| s.0) {
            s.0 += m.size;
            s.1.push(m);
        }
    }
    let dests: Vec<PathBuf> = (0..cores)
        .map(|i| PathBuf::from(outdir).join(format!(".splice_floor.{}.{i}", std::process::id())))
        .collect();
    let t = Instant::now();
    let spent = std::thread::scope(|scope| {
        let threads: Vec<_> = shares
            .iter()
            .zip(&dests)
            .map(|((_, ms), d)| {
                let files = &files;
                scope.spawn(move || share(files, ms, d))
            })
            .collect();
        threads
            .into_iter()
            .map(|th| {
                th.join()
                    .map_err(|_| anyhow::anyhow!("a thread panicked"))?
            })
            .collect::<anyhow::Result<Vec<_>>>()
    });
    let wall = t.elapsed().as_secs_f64();
    for d in &dests {
        let _ = fs_err::remove_file(d);
    }
    let spent = spent?;
    let sum = |f: fn(&Spent) -> Duration| spent.iter().map(f).sum::<Duration>().as_secs_f64();
    eprintln!(
        "{cores} threads, {} bytes inflated: {wall:.2} s; thread seconds: read {:.2}, \
         inflate {:.2}, sha256 {:.2}, write {:.2}",
        spent.iter().map(|s| s.inflated).sum::<u64>(),
        sum(|s| s.read),
        sum(|s| s.inflate),
        sum(|s| s.hash),
        sum(|s| s.write),
    );
    Ok(())
}
