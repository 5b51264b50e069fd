//! .deb files, the way the apt layer reads them: `apt::build_layer` on the fuzz input as the
//! one locked .deb of package `fuzz` 1.0 amd64 (its sha256 and size are the input's, so the
//! lock check passes and the ar container, control.tar and data.tar are what is fuzzed), with
//! merged-/usr rewriting on, into an uncompressed layer in a scratch store.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use ocibuild::apt::{build_layer, DebInput, LayerRequest, Locked, UsrMerge};
use ocibuild::digest::Digest;
use ocibuild::layer::{Compression, LayerOptions};
use ocibuild::store::Store;

struct Scratch {
    store: Store,
    debs: PathBuf,
}

fn scratch() -> &'static Scratch {
    static S: OnceLock<Scratch> = OnceLock::new();
    S.get_or_init(|| {
        let root = tempfile::Builder::new()
            .prefix("fuzz-deb-")
            .tempdir()
            .expect("tempdir")
            .keep();
        let debs = root.join("debs");
        std::fs::create_dir_all(&debs).expect("mkdir");
        Scratch {
            store: Store::open(root.join("store")).expect("store"),
            debs,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let s = scratch();
    let path: &Path = &s.debs.join("fuzz.deb");
    std::fs::write(path, data).expect("write the .deb");
    let locked = Locked {
        name: "fuzz".into(),
        version: "1.0".into(),
        architecture: "amd64".into(),
        filename: "pool/f/fuzz_1.0_amd64.deb".into(),
        size: data.len() as u64,
        sha256: Digest::of(data),
        source_url: "http://fuzz/debian".into(),
    };
    let debs = [DebInput {
        locked,
        path: path.to_path_buf(),
    }];
    let req = LayerRequest {
        layer: LayerOptions {
            epoch: 0,
            compression: Compression::None,
            threads: 1,
        },
        usr_merge: UsrMerge::all(),
    };
    match build_layer(&s.store, &debs, &req) {
        Ok(layer) => {
            assert_eq!(
                layer.digest, layer.diff_id,
                "an uncompressed layer is its tar"
            );
            assert_eq!(layer.size, layer.uncompressed_size);
            // Keep the scratch store small over millions of runs.
            let _ = std::fs::remove_file(s.store.blob_path(&layer.digest));
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
