//! Hand-run field check of `[image] cuda-archs` (src/cuda), not part of the test suite:
//! `cuda_prune IN OUT ARCH[,ARCH…] [newest|none|all]` prunes the library IN as a wheel layer
//! would and writes the result to OUT (same size), printing what was removed, for checking OUT
//! with `cuobjdump --list-elf --list-ptx` and loading it.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a field tool prints its figures

use ocibuild::cuda::{parse_arch, prune, PtxPolicy, Targets};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: cuda_prune IN OUT ARCH[,ARCH...] [newest|none|all]");
        std::process::exit(2);
    }
    let archs = args[3]
        .split(',')
        .map(|a| parse_arch(a).unwrap_or_else(|| panic!("unknown architecture {a}")))
        .collect();
    let ptx = args
        .get(4)
        .map_or(Some(PtxPolicy::Newest), |p| PtxPolicy::parse(p))
        .unwrap_or_else(|| panic!("unknown PTX policy"));
    let t = Targets { archs, ptx };
    let mut bytes = fs_err::read(&args[1]).unwrap_or_else(|e| panic!("{e}"));
    let start = std::time::Instant::now();
    match prune(&mut bytes, &t) {
        Ok(Some(p)) => println!(
            "{}: {} of {} bytes removed ({} entries) in {:.2}s; kept {:?}; removed {:?}",
            args[1],
            p.bytes_removed,
            bytes.len(),
            p.entries_removed,
            start.elapsed().as_secs_f64(),
            p.kept,
            p.removed
        ),
        Ok(None) => println!("{}: no fatbin", args[1]),
        Err(e) => println!("{}: left as it is: {e}", args[1]),
    }
    fs_err::write(&args[2], &bytes).unwrap_or_else(|e| panic!("{e}"));
}
