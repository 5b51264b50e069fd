//! bench/wheels.sh: the wheel step alone, as builds run it (plan, install from the zips,
//! compress, into the store; no layer cache), for the `[[wheel]]`s of an ocibuild lock whose
//! wheel files are already in the store. Target: CPython 3.11, x86_64, glibc 2.36, Debian's
//! scheme (the bookworm python3 recipe's).
//! Usage: wheel_bench LOCK STORE gzip|zstd|none[:LEVEL] THREADS
#![allow(clippy::print_stdout, clippy::print_stderr)] // a benchmark prints its figures

use std::time::Instant;

use ocibuild::layer::Compression;
use ocibuild::lock::Lock;
use ocibuild::lock::LockPolicy;
use ocibuild::progress::Silent;
use ocibuild::python::interpreter::PyVersion;
use ocibuild::python::{Interpreter, Scheme};
use ocibuild::store::Store;
use ocibuild::system::{wheels, SystemOptions};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, lock, store, comp, threads] = &args[..] else {
        anyhow::bail!("usage: wheel_bench LOCK STORE gzip|zstd|none[:LEVEL] THREADS");
    };
    let lock = Lock::load(lock.as_ref())?.ok_or_else(|| anyhow::anyhow!("no lock"))?;
    let store = Store::open(store)?;
    let v = PyVersion {
        major: 3,
        minor: 11,
    };
    let interp = Interpreter {
        version: v,
        executable: "/usr/bin/python3.11".into(),
        machine: "x86_64".into(),
        glibc: Some((2, 36)),
        scheme: Scheme::debian_local(v),
        full_version: None,
    };
    let opts = SystemOptions {
        epoch: 0,
        compression: comp.parse::<Compression>().map_err(anyhow::Error::msg)?,
        threads: threads.parse()?,
        no_cache: true,
        pin: LockPolicy::Resolve,
        allow_downgrade: false,
        build_layers: true,
    };
    let fetcher = ocibuild::http::HttpFetcher::offline()?;
    let start = Instant::now();
    // As under recipes/bookworm-python.toml: scratch, the apt layer, no recipe layers.
    let overlap = ocibuild::recipe::Overlap::Error;
    let set = ocibuild::system::wheelset::analyze(
        &lock.wheels,
        &interp,
        overlap,
        &fetcher,
        &store,
        opts.threads,
        opts.no_cache,
    )?;
    let layout = wheels::WheelLayout {
        overlap,
        max_layer_size: ocibuild::recipe::DEFAULT_MAX_LAYER_SIZE,
        other_layers: 1,
        project_last: false,
        cuda: None,
        set,
    };
    let layers = wheels::layers(
        &lock.wheels,
        &interp,
        layout,
        &fetcher,
        &store,
        &opts,
        &Silent,
    )?
    .layers;
    let size: u64 = layers.iter().map(|l| l.layer.size).sum();
    let raw: u64 = layers.iter().map(|l| l.layer.uncompressed_size).sum();
    eprintln!(
        "{comp} threads={threads}: {:.2}s, {} layers, {raw} -> {size} bytes",
        start.elapsed().as_secs_f64(),
        layers.len()
    );
    println!("{size}");
    Ok(())
}
