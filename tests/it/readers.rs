//! Independent readers accept ocibuild's output: skopeo, umoci, oci-image-tool and podman.
//! The image is Debian's static busybox on a scratch base, with an entrypoint that prints.

use crate::common;

use fs_err as fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

const GREETING: &str = "hello from ocibuild";

/// A project whose image runs `/bin/busybox echo GREETING`; returns the recipe path.
fn busybox_project(dir: &Path, compression: &str) -> PathBuf {
    fs::create_dir_all(dir.join("rootfs/bin")).unwrap();
    fs::copy("/bin/busybox", dir.join("rootfs/bin/busybox")).unwrap();
    fs_err::os::unix::fs::symlink("busybox", dir.join("rootfs/bin/sh")).unwrap();
    let recipe = dir.join("busybox.toml");
    fs::write(
        &recipe,
        format!(
            r#"[image]
name = "localhost/ocibuild-test/busybox"
tag = "t1"
compression = "{compression}"

[[layer]]
name = "rootfs"
src = "rootfs"
dest = "/"
mode = "preserve"

[config]
entrypoint = ["/bin/busybox", "echo"]
cmd = ["{GREETING}"]
"#
        ),
    )
    .unwrap();
    recipe
}

fn build(recipe: &Path, output: &str, cache: &Path) -> Value {
    let out = common::ocibuild()
        .arg("build")
        .arg(recipe)
        .args(["--output", output, "--json"])
        .env("OCIBUILD_CACHE", cache)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn have_all(tools: &[&str]) -> bool {
    tools.iter().all(|t| common::require_tool(t))
}

#[test]
fn skopeo_umoci_and_oci_image_tool_read_the_layout() {
    if !have_all(&["skopeo", "umoci", "oci-image-tool"]) || !Path::new("/bin/busybox").exists() {
        return;
    }
    let tmp = common::tempdir();
    let recipe = busybox_project(&tmp.path().join("p"), "gzip");
    let layout = tmp.path().join("layout");
    let v = build(&recipe, layout.to_str().unwrap(), &tmp.path().join("cache"));

    let inspect = common::skopeo_inspect(&format!("oci:{}:t1", layout.display()));
    assert_eq!(inspect["Digest"], v["manifest"], "{inspect:#}");
    assert_eq!(
        inspect["Architecture"].as_str().unwrap(),
        common::host_arch()
    );

    common::oci_image_tool_validate(&layout);

    let bundle = tmp.path().join("bundle");
    common::umoci_unpack(&layout, "t1", &bundle);
    let unpacked = bundle.join("rootfs/bin/busybox");
    assert_eq!(
        fs::read(&unpacked).unwrap(),
        fs::read("/bin/busybox").unwrap()
    );
    assert_eq!(
        fs::read_link(bundle.join("rootfs/bin/sh")).unwrap(),
        Path::new("busybox")
    );
}

#[test]
fn oci_archive_is_read_by_skopeo() {
    if !have_all(&["skopeo"]) || !Path::new("/bin/busybox").exists() {
        return;
    }
    let tmp = common::tempdir();
    let recipe = busybox_project(&tmp.path().join("p"), "zstd");
    let archive = tmp.path().join("image.tar");
    let v = build(
        &recipe,
        &format!("oci-archive:{}", archive.display()),
        &tmp.path().join("cache"),
    );
    let inspect = common::skopeo_inspect(&format!("oci-archive:{}", archive.display()));
    assert_eq!(inspect["Digest"], v["manifest"]);
    // The archive is itself reproducible.
    let again = tmp.path().join("again.tar");
    build(
        &recipe,
        &format!("oci-archive:{}", again.display()),
        &tmp.path().join("cache2"),
    );
    assert_eq!(fs::read(&archive).unwrap(), fs::read(&again).unwrap());
}

#[test]
fn podman_runs_the_image_and_loads_the_docker_archive() {
    if !have_all(&["podman"]) || !Path::new("/bin/busybox").exists() {
        return;
    }
    let tmp = common::tempdir();
    let recipe = busybox_project(&tmp.path().join("p"), "gzip");
    let cache = tmp.path().join("cache");
    let layout = tmp.path().join("layout");
    build(&recipe, layout.to_str().unwrap(), &cache);

    let out = common::podman_run(&layout, "t1", &[]);
    assert!(
        out.status.success(),
        "podman run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), GREETING);

    let archive = tmp.path().join("docker.tar");
    let v = build(
        &recipe,
        &format!("docker-archive:{}", archive.display()),
        &cache,
    );
    let loaded = common::podman_load(&archive);
    assert!(
        loaded.contains("localhost/ocibuild-test/busybox:t1"),
        "podman load said: {loaded}"
    );
    // The loaded image keeps our config: its ID is the config digest.
    let id = common::podman(&[
        "image",
        "inspect",
        "--format",
        "{{.Id}}",
        "localhost/ocibuild-test/busybox:t1",
    ]);
    assert_eq!(
        format!("sha256:{}", id.trim()),
        v["config"].as_str().unwrap()
    );
    common::podman(&["rmi", "-f", "localhost/ocibuild-test/busybox:t1"]);
}
