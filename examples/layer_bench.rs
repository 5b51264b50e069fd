//! Hand-run throughput check (see bench/layer-throughput.sh), not part of the test suite:
//! `layer_bench DIR gzip|zstd|none[:LEVEL] THREADS OUT` scans DIR and writes its layer to OUT.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use std::time::Instant;

use ocibuild::layer::{scan, write_layer, Compression, CopySpec, LayerOptions, ModePolicy};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, comp, threads, out] = &args[..] else {
        anyhow::bail!("usage: layer_bench DIR gzip|zstd|none[:LEVEL] THREADS OUT");
    };
    let compression = comp.parse::<Compression>().map_err(anyhow::Error::msg)?;
    let start = Instant::now();
    let spec = CopySpec {
        src: dir.into(),
        dest: "/data".into(),
        ignore: vec![],
        uid: 0,
        gid: 0,
        mode: ModePolicy::Normalize,
    };
    let entries = scan(&[spec])?;
    let mut file = std::io::BufWriter::with_capacity(1 << 20, fs_err::File::create(out)?);
    let opts = LayerOptions {
        epoch: 0,
        compression,
        threads: threads.parse()?,
    };
    let stats = write_layer(&entries, &opts, &mut file, &|_| {})?;
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "{comp} threads={threads}: {:.2}s, {} -> {} bytes, diff_id {}",
        secs, stats.uncompressed_size, stats.size, stats.diff_id
    );
    Ok(())
}
