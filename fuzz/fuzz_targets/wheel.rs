//! Wheels, the way the `[python]` layer installs them: `python::wheel::build_wheel_layer` on
//! the fuzz input as `fuzz-1.0-py3-none-any.whl` (its sha256 is the input's), into a gzip
//! layer (so large deflated members go through the splicer) in a scratch store: the zip
//! directory, member paths, WHEEL, RECORD and its hashes, entry points and scripts.
#![no_main]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use ocibuild::digest::Digest;
use ocibuild::layer::{Compression, LayerOptions};
use ocibuild::python::interpreter::{Interpreter, PyVersion, Scheme};
use ocibuild::python::tags::WheelFile;
use ocibuild::python::wheel::{build_wheel_layer, list_wheel, WheelInput};
use ocibuild::store::Store;

struct Scratch {
    store: Store,
    wheel: PathBuf,
}

fn scratch() -> &'static Scratch {
    static S: OnceLock<Scratch> = OnceLock::new();
    S.get_or_init(|| {
        let root = tempfile::Builder::new()
            .prefix("fuzz-wheel-")
            .tempdir()
            .expect("tempdir")
            .keep();
        Scratch {
            store: Store::open(root.join("store")).expect("store"),
            wheel: root.join("fuzz-1.0-py3-none-any.whl"),
        }
    })
}

fn interp() -> Interpreter {
    let version = PyVersion {
        major: 3,
        minor: 11,
    };
    Interpreter {
        version,
        executable: "/usr/bin/python3.11".into(),
        machine: "x86_64".into(),
        glibc: Some((2, 36)),
        scheme: Scheme::debian_local(version),
    }
}

fuzz_target!(|data: &[u8]| {
    let s = scratch();
    std::fs::write(&s.wheel, data).expect("write the wheel");
    let input = WheelInput {
        path: s.wheel.clone(),
        file: WheelFile::parse("fuzz-1.0-py3-none-any.whl").expect("a valid file name"),
        sha256: Digest::of(data),
        exclude: BTreeSet::new(),
    };
    let interp = interp();
    let listed = list_wheel(&input, &interp);
    let opts = LayerOptions {
        epoch: 0,
        compression: Compression::Gzip(1),
        threads: 1,
    };
    let built = build_wheel_layer(&s.store, std::slice::from_ref(&input), &interp, &opts);
    if let Ok(layer) = &built {
        let _ = std::fs::remove_file(s.store.blob_path(&layer.digest));
    }
    // Listing plans what building writes: a wheel that builds lists.
    if let (Err(e), Ok(_)) = (&listed, &built) {
        panic!("the wheel builds but does not list: {e}");
    }
});
