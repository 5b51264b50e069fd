//! Hand-run field measurement of `[image] cuda-archs` on wheel layers (src/cuda), not part of
//! the test suite: `cuda_layer STORE ARCH[,ARCH…] PTX WHEEL…` builds each wheel's layer (gzip,
//! level 6, the default) as it is and pruned, the pruned one twice, and prints the layer sizes,
//! whether the two pruned builds gave one digest, and the bytes removed per library.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a field tool prints its figures

use std::path::PathBuf;

use ocibuild::cuda::{parse_arch, PtxPolicy, Targets};
use ocibuild::layer::{Compression, LayerOptions};
use ocibuild::python::interpreter::PyVersion;
use ocibuild::python::tags::WheelFile;
use ocibuild::python::wheel::{build_wheel_layer_with, WheelInput};
use ocibuild::python::{Interpreter, Scheme};
use ocibuild::store::Store;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: cuda_layer STORE ARCH[,ARCH...] newest|none|all WHEEL...");
        std::process::exit(2);
    }
    let store = Store::open(&args[1]).unwrap_or_else(|e| panic!("{e}"));
    let archs = args[2]
        .split(',')
        .map(|a| parse_arch(a).unwrap_or_else(|| panic!("unknown architecture {a}")))
        .collect();
    let ptx = PtxPolicy::parse(&args[3]).unwrap_or_else(|| panic!("unknown PTX policy"));
    let t = Targets { archs, ptx };
    let version = PyVersion {
        major: 3,
        minor: 12,
    };
    let interp = Interpreter {
        version,
        executable: "/usr/bin/python3.12".into(),
        machine: "x86_64".into(),
        glibc: Some((2, 36)),
        scheme: Scheme::debian_local(version),
        full_version: None,
    };
    let opts = LayerOptions {
        epoch: 0,
        compression: Compression::GZIP,
        threads: 2,
    };
    let (mut before, mut after) = (0u64, 0u64);
    for path in &args[4..] {
        let path = PathBuf::from(path);
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let w = WheelInput {
            file: WheelFile::parse(&name).unwrap_or_else(|e| panic!("{e}")),
            sha256: ocibuild::digest::hash_file(&path)
                .unwrap_or_else(|e| panic!("{e}"))
                .0,
            path: path.clone(),
            exclude: Default::default(),
        };
        let ws = std::slice::from_ref(&w);
        let build = |cuda: Option<&Targets>| {
            let start = std::time::Instant::now();
            let r = build_wheel_layer_with(&store, ws, &interp, &opts, cuda, &|_| {})
                .unwrap_or_else(|e| panic!("{}", ocibuild::diag::chain(&e)));
            (r, start.elapsed().as_secs_f64())
        };
        let ((plain, _), tp) = build(None);
        let ((pruned, report), tq) = build(Some(&t));
        let ((again, _), _) = build(Some(&t));
        println!(
            "{name}: layer {} bytes ({:.0}s) -> pruned {} bytes ({:.0}s), {} less; uncompressed {} \
             both; pruned twice: {}",
            plain.size,
            tp,
            pruned.size,
            tq,
            plain.size.saturating_sub(pruned.size),
            plain.uncompressed_size,
            if pruned.digest == again.digest {
                format!("same digest {}", pruned.digest)
            } else {
                format!("DIFFERENT digests {} and {}", pruned.digest, again.digest)
            }
        );
        for l in &report {
            match &l.pruned {
                Some(p) => println!(
                    "  {} ({} bytes): {} removed ({} entries); kept {}; removed {}",
                    l.path,
                    l.size,
                    p.bytes_removed,
                    p.entries_removed,
                    p.kept.join(" "),
                    p.removed.join(" ")
                ),
                None => println!(
                    "  {}: left as it is: {}",
                    l.path,
                    l.reason.as_deref().unwrap_or("")
                ),
            }
        }
        before += plain.size;
        after += pruned.size;
    }
    println!(
        "all: {before} -> {after} bytes compressed ({} less)",
        before - after
    );
}
