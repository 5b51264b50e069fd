//! `[image] cuda-archs` on a `[[step]]`'s output: a step (busybox under real podman) copies a
//! synthetic CUDA library (`ocibuild::cuda::fixture`) into an output that goes into the image
//! and into one that does not. The image's copy is pruned in place, `build --json` lists it
//! (`from`: the step), a cache hit reports the same, and other targets rerun the step.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use fs_err as fs;
use serde_json::Value;

use ocibuild::cuda::fixture::{library, ptx, sass};

use crate::common;

const LIB: &str = "opt/k/lib/libk.so.1";

/// path → content of every regular file of a gzip layer blob.
fn layer_files(blob: &Path) -> BTreeMap<String, Vec<u8>> {
    let gz = flate2::read::GzDecoder::new(fs::File::open(blob).unwrap());
    let mut ar = tar::Archive::new(gz);
    let mut out = BTreeMap::new();
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let p = String::from_utf8(e.path_bytes().into_owned()).unwrap();
        let mut c = Vec::new();
        e.read_to_end(&mut c).unwrap();
        out.insert(p, c);
    }
    out
}

fn recipe(archs: &str) -> String {
    format!(
        r#"[image]
name = "localhost/ocibuild-test/cuda-steps"
cuda-archs = [{archs}]

[[step]]
name = "compile"
image = {{ recipe = "builder.toml" }}
inputs = [{{ src = "lib", dest = "/in" }}]
run = ["/bin/busybox", "sh", "-c", "/bin/busybox cp /in/libk.so.1 /out/ && /bin/busybox cp /in/libk.so.1 /res/"]
outputs = [{{ path = "/out", dest = "/opt/k/lib" }}, {{ path = "/res", dest = "/opt/res", image = false }}]
"#
    )
}

#[test]
fn a_step_output_in_the_image_is_pruned_reported_and_keyed_by_the_targets() {
    if !common::require_tool("podman") {
        return;
    }
    let Some(busybox) = common::require_static_busybox() else {
        return;
    };
    let t = common::tempdir();
    let dir = t.path();
    fs::write(
        dir.join("builder.toml"),
        format!(
            "[image]\nname = \"localhost/ocibuild-test/builder\"\n\n[[layer]]\nname = \
             \"busybox\"\nsrc = \"{}\"\ndest = \"/bin/busybox\"\n\n[config]\nenv = {{ PATH = \
             \"/bin\" }}\n",
            busybox.display()
        ),
    )
    .unwrap();
    let lib = library(&[
        &[sass(80, 30_000), sass(90, 20_000), ptx(90, 5_000)],
        &[sass(75, 8_000), sass(90, 10_000)],
    ]);
    fs::create_dir_all(dir.join("lib")).unwrap();
    fs::write(dir.join("lib/libk.so.1"), &lib).unwrap();
    let app = dir.join("app.toml");
    let cache = dir.join("cache");
    let build = |archs: &str| -> Value {
        fs::write(&app, recipe(archs)).unwrap();
        let out = common::run_ok(
            common::ocibuild()
                .env("OCIBUILD_CACHE", &cache)
                .args(["build", "--json"])
                .arg(&app)
                .arg("-o")
                .arg(dir.join("img")),
        );
        serde_json::from_str(&common::stdout(&out)).expect("build --json")
    };

    let v = build("\"sm_90\"");
    let libs = v["cuda"]["libraries"].as_array().expect("cuda.libraries");
    assert_eq!(
        libs.len(),
        1,
        "only the output that goes into the image: {v:#}"
    );
    let l = &libs[0];
    assert_eq!(l["path"], format!("/{LIB}"));
    assert_eq!(l["from"], "step compile");
    assert_eq!(l["size"], lib.len());
    // sm_80's and sm_75's SASS: entries of 64-byte headers and their payloads.
    assert_eq!(l["pruned"]["bytesRemoved"], (64 + 30_000) + (64 + 8_000));
    assert_eq!(
        l["pruned"]["removed"],
        serde_json::json!(["sm_75", "sm_80"])
    );
    let (_, blob) = common::layer_named(&dir.join("img"), &v, "compile.1");
    let files = layer_files(&blob);
    let pruned = &files[LIB];
    assert_eq!(pruned.len(), lib.len(), "pruning keeps the file's size");
    assert_ne!(pruned, &lib, "the image's copy is pruned");
    let mut again = pruned.clone();
    let t90 = ocibuild::cuda::Targets {
        archs: [90].into_iter().collect(),
        ptx: ocibuild::cuda::PtxPolicy::Newest,
    };
    ocibuild::cuda::prune(&mut again, &t90).unwrap();
    assert_eq!(&again, pruned, "pruned as the library pruner prunes it");

    // A rebuild: the step is cached, the report and the image the same.
    let v2 = build("\"sm_90\"");
    assert_eq!(v2["steps"][0]["cached"], true, "{v2:#}");
    assert_eq!(v2["cuda"], v["cuda"]);
    assert_eq!(v2["manifest"], v["manifest"]);

    // Other targets: the step runs again and keeps other code (the second fatbin has nothing
    // for sm_80 and keeps its smallest entry, sm_75's, as a placeholder).
    let v3 = build("\"sm_80\"");
    assert_eq!(v3["steps"][0]["cached"], false, "{v3:#}");
    let l3 = &v3["cuda"]["libraries"][0];
    assert_eq!(l3["pruned"]["removed"], serde_json::json!(["sm_90"]));
    assert_ne!(v3["manifest"], v["manifest"]);
}
