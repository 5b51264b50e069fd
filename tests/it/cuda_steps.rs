//! `[image] cuda-archs` on a `[[step]]`'s output: a step (busybox under real podman) copies a
//! synthetic CUDA library (`ocibuild::cuda::fixture`) into an output that goes into the image
//! and into one that does not. The image's copy is pruned in place, `build --json` lists it
//! (`from`: the step), a cache hit reports the same, and other targets rerun the step.

use std::path::Path;

use fs_err as fs;
use serde_json::Value;

use ocibuild::cuda::fixture::{library, ptx, sass};

use crate::common;

const LIB: &str = "opt/k/lib/libk.so.1";

/// The step copies the library into both outputs, and (hostile) puts a symlink named like a
/// library that points at `host`, a fatbin library outside the output, on the host.
fn recipe(archs: &str, host: &Path) -> String {
    format!(
        r#"[image]
name = "localhost/ocibuild-test/cuda-steps"
cuda-archs = [{archs}]

[[step]]
name = "compile"
image = {{ recipe = "builder.toml" }}
inputs = [{{ src = "lib", dest = "/in" }}]
run = ["/bin/busybox", "sh", "-c", "/bin/busybox cp /in/libk.so.1 /out/ && /bin/busybox cp /in/libk.so.1 /res/ && /bin/busybox ln -s {} /out/libhost.so.1"]
outputs = [{{ path = "/out", dest = "/opt/k/lib" }}, {{ path = "/res", dest = "/opt/res", image = false }}]
"#,
        host.display()
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
    let host = dir.join("host-libk.so.1");
    fs::write(&host, &lib).unwrap();
    let app = dir.join("app.toml");
    let cache = dir.join("cache");
    let build = |archs: &str| -> Value {
        fs::write(&app, recipe(archs, &host)).unwrap();
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
    let files = crate::cuda::gzip_layer_files(fs::File::open(&blob).unwrap());
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

    // The symlink went into the layer as a symlink; the host file it names was not touched.
    let link = format!("opt/k/lib/libhost.so.1 -> {}", host.display());
    assert!(
        common::tar_listing(&blob)
            .iter()
            .any(|l| l.starts_with("l ") && l.ends_with(&link)),
        "the symlink is a symlink in the layer"
    );
    assert_eq!(
        fs::read(&host).unwrap(),
        lib,
        "a file outside the output is never pruned"
    );

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
    assert_eq!(fs::read(&host).unwrap(), lib);
}
