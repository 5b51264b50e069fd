//! Proves the test harness (tests/common) and the independent readers work on this host:
//! each test reads a tiny OCI image layout that umoci makes from busybox-static, not ocibuild's
//! output. When one of these fails, the tests of ocibuild's output cannot be trusted either.

use crate::common;

use common::*;
use std::path::Path;

const TAG: &str = "t";

/// The host's architecture as OCI names it.
fn oci_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

#[test]
fn skopeo_inspects_layout() {
    if !(require_busybox_layout_tools() && require_tool("skopeo")) {
        return;
    }
    let dir = tempdir();
    let layout = busybox_layout(dir.path(), TAG);
    let image = format!("oci:{}:{TAG}", layout.display());

    let info = skopeo_inspect(&image);
    assert_eq!(info["Os"], "linux", "{info:#}");
    assert_eq!(info["Architecture"], oci_arch(), "{info:#}");
    assert_eq!(info["Layers"].as_array().map(Vec::len), Some(1), "{info:#}");

    let manifest = skopeo_inspect_raw(&image);
    assert_eq!(manifest["schemaVersion"], 2, "{manifest:#}");
    assert_eq!(
        manifest["layers"][0]["mediaType"], "application/vnd.oci.image.layer.v1.tar+gzip",
        "{manifest:#}"
    );
    assert_eq!(
        info["Digest"].as_str().map(|d| d.starts_with("sha256:")),
        Some(true)
    );

    let config = skopeo_inspect_config(&image);
    assert_eq!(config["rootfs"]["type"], "layers", "{config:#}");
}

#[test]
fn umoci_unpacks_layout() {
    if !require_busybox_layout_tools() {
        return;
    }
    let dir = tempdir();
    let layout = busybox_layout(dir.path(), TAG);
    let bundle = dir.path().join("unpacked");
    umoci_unpack(&layout, TAG, &bundle);

    let busybox = which("busybox").unwrap();
    let unpacked = bundle.join("rootfs/bin/busybox");
    assert_eq!(
        fs_err::read(&unpacked).expect("unpacked busybox"),
        fs_err::read(&busybox).unwrap(),
        "{} differs from {}",
        unpacked.display(),
        busybox.display()
    );
    let sh = fs_err::read_link(bundle.join("rootfs/bin/sh")).expect("bin/sh is a symlink");
    assert_eq!(sh, Path::new("busybox"));
    assert!(
        bundle.join("config.json").is_file(),
        "runtime bundle config"
    );
}

#[test]
fn oci_image_tool_validates_layout_and_catches_corruption() {
    if !(require_busybox_layout_tools() && require_tool("oci-image-tool")) {
        return;
    }
    let dir = tempdir();
    let layout = busybox_layout(dir.path(), TAG);
    let text = oci_image_tool_validate(&layout);
    assert!(text.contains(": OK"), "{text}");

    // A validator that passes everything proves nothing: break one blob and see it fail.
    let index: serde_json::Value =
        serde_json::from_slice(&fs_err::read(layout.join("index.json")).unwrap()).unwrap();
    let manifest_digest = index["manifests"][0]["digest"].as_str().unwrap();
    let blob = |digest: &str| layout.join("blobs/sha256").join(&digest["sha256:".len()..]);
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs_err::read(blob(manifest_digest)).unwrap()).unwrap();
    let config = blob(manifest["config"]["digest"].as_str().unwrap());
    let mut bytes = fs_err::read(&config).unwrap();
    bytes.push(b' ');
    fs_err::write(&config, bytes).unwrap();
    let out = oci_image_tool_validate_output(&layout);
    assert!(
        !out.status.success(),
        "oci-image-tool accepted a config blob whose digest does not match:\n{}",
        stdout(&out)
    );
}

#[test]
fn podman_runs_layout() {
    if !(require_busybox_layout_tools() && require_tool("podman")) {
        return;
    }
    // tempdir() names have upper-case letters, which podman refuses in an image name:
    // podman_run must cope with that.
    let dir = tempdir();
    let layout = busybox_layout(dir.path(), TAG);
    let out = podman_run(&layout, TAG, &["/bin/busybox", "echo", "hi"]);
    assert_success(&out, "podman run");
    assert_eq!(stdout(&out), "hi\n");

    // The image's own /bin/sh, through a symlink in the layer.
    let out = podman_run(&layout, TAG, &["/bin/sh", "-c", "echo $((6 * 7))"]);
    assert_success(&out, "podman run sh");
    assert_eq!(stdout(&out), "42\n");
}

#[test]
fn podman_loads_docker_archive_from_skopeo() {
    if !(require_busybox_layout_tools() && require_tool("skopeo") && require_tool("podman")) {
        return;
    }
    let dir = tempdir();
    let layout = busybox_layout(dir.path(), TAG);
    let archive = dir.path().join("docker.tar");
    let name = format!("localhost/ocibuild-smoke-{}:{TAG}", std::process::id());
    skopeo_copy(
        &format!("oci:{}:{TAG}", layout.display()),
        &format!("docker-archive:{}:{name}", archive.display()),
    );
    let info = skopeo_inspect(&format!("docker-archive:{}", archive.display()));
    assert_eq!(info["Layers"].as_array().map(Vec::len), Some(1), "{info:#}");

    let loaded = podman_load(&archive);
    assert_eq!(loaded, name);
    let out = podman_run_image(&loaded, &["--pull=never"], &["/bin/echo", "loaded"]);
    podman_rmi(&loaded);
    assert_success(&out, "podman run of the loaded image");
    assert_eq!(stdout(&out), "loaded\n");
    assert!(!podman_image_exists(&loaded), "podman rmi left {loaded}");
}

#[test]
fn harness_names_podman_accepts() {
    assert!(podman_nameable("/tmp/ocibuild-podman-12-0/layout"));
    assert!(podman_nameable("/tmp/a.b/c_d/e__f/g--h"));
    assert!(!podman_nameable("/tmp/.tmpabc/layout"));
    assert!(!podman_nameable("/tmp/UpCase/layout"));
    assert!(!podman_nameable("/tmp/x y/layout"));
    assert!(!podman_nameable("/tmp/a..b"));
    assert!(!podman_nameable("relative/path"));
}

#[test]
fn harness_detects_static_elf() {
    // The test binary itself is dynamically linked (against glibc).
    let me = std::env::current_exe().unwrap();
    assert!(!is_static_elf(&me), "{} reported static", me.display());
    assert!(!is_static_elf(Path::new("/nonexistent")));
    if let Some(busybox) = which("busybox") {
        eprintln!(
            "busybox at {}: static {}",
            busybox.display(),
            is_static_elf(&busybox)
        );
    }
}

#[test]
fn harness_ocibuild_command_is_isolated() {
    // libtest names the thread by the test's path in the one test binary.
    assert_eq!(
        test_name(),
        "tools_smoke::harness_ocibuild_command_is_isolated"
    );
    let cmd = ocibuild();
    assert!(Path::new(cmd.get_program()).is_file());
    let envs: Vec<_> = cmd.get_envs().collect();
    assert!(
        envs.contains(&("SOURCE_DATE_EPOCH".as_ref(), None)),
        "SOURCE_DATE_EPOCH not cleared: {envs:?}"
    );
    let cache = envs
        .iter()
        .find(|(k, _)| *k == "OCIBUILD_CACHE")
        .and_then(|(_, v)| *v)
        .expect("OCIBUILD_CACHE set");
    assert!(Path::new(cache).is_dir());
    assert!(
        cache
            .to_string_lossy()
            .contains("tools_smoke__harness_ocibuild_command_is_isolated"),
        "{cache:?}"
    );
    // One cache dir per test, the same for each call in it.
    assert_eq!(
        ocibuild()
            .get_envs()
            .find(|(k, _)| *k == "OCIBUILD_CACHE")
            .unwrap()
            .1,
        Some(cache)
    );
}
