//! `[config] volumes`, `shell`, `[config.healthcheck]` and `[args]` in real images: the config
//! readers see (skopeo), and what podman does with the health check of each output.

use std::path::Path;

use crate::common::*;

/// A busybox image on scratch (`/bin/busybox`, `/bin/sh` a link to it) whose health check is
/// `test`, built to `output`.
fn healthcheck_recipe(dir: &Path, test: &str) -> std::path::PathBuf {
    // Each test's own name: they run at once, and podman's storage is shared.
    let name = format!(
        "hc-{}-{}",
        std::process::id(),
        dir.file_name()
            .unwrap()
            .to_string_lossy()
            .to_lowercase()
            .replace(['.', '_'], "")
    );
    let busybox = which("busybox").expect("busybox");
    let root = dir.join("root/bin");
    fs_err::create_dir_all(&root).unwrap();
    fs_err::copy(&busybox, root.join("busybox")).unwrap();
    for l in ["sh", "sleep", "true", "false"] {
        fs_err::os::unix::fs::symlink("busybox", root.join(l)).unwrap();
    }
    let recipe = dir.join("hc.toml");
    fs_err::write(
        &recipe,
        format!(
            r#"[image]
name = "localhost/ocibuild-test/{name}"
tag = "t"

[[layer]]
name = "root"
src = "root"
dest = "/"
mode = "preserve"

[config]
entrypoint = ["/bin/sleep", "300"]
env = {{ PATH = "/bin" }}
volumes = ["/data", "/cache/"]
shell = ["/bin/sh", "-c"]
# Another config per test: podman keeps one image per config digest, with the manifest it
# was first stored with, so a docker-archive and an oci-archive of one config are one image.
labels = {{ test = "{name}" }}

[config.healthcheck]
test = {test}
interval = "1m30s"
timeout = "5s"
start-period = "500ms"
retries = 2
"#
        ),
    )
    .unwrap();
    recipe
}

#[test]
fn config_keys_are_written_as_docker_writes_them() {
    if !require_tools_all(&["skopeo"]) || require_static_busybox().is_none() {
        return;
    }
    let d = tempdir();
    let recipe = healthcheck_recipe(d.path(), r#"["CMD", "/bin/true"]"#);
    let layout = d.path().join("out");
    let out = run_ok(ocibuild().args(["build", "-o"]).arg(&layout).arg(&recipe));
    let err = stderr(&out);
    assert!(
        err.contains("warning: [config.healthcheck] is in the image config, but podman runs a health check only for a Docker-format image"),
        "{err}"
    );
    // /bin/sh is there (a link to busybox in a [[layer]] at /): no shell warning.
    assert!(!err.contains("has no /bin/sh"), "{err}");
    // The config as written (skopeo's OCI view has no Shell or Healthcheck).
    let cfg = config_of(&layout);
    let c = &cfg["config"];
    assert_eq!(c["Volumes"], serde_json::json!({"/cache": {}, "/data": {}}));
    assert_eq!(c["Shell"], serde_json::json!(["/bin/sh", "-c"]));
    assert_eq!(
        c["Healthcheck"],
        serde_json::json!({
            "Test": ["CMD", "/bin/true"], "Interval": 90_000_000_000u64,
            "Timeout": 5_000_000_000u64, "StartPeriod": 500_000_000u64, "Retries": 2,
        })
    );
    // A docker-archive output: no warning.
    let archive = d.path().join("hc.tar");
    let out = run_ok(
        ocibuild()
            .args(["build", "-o"])
            .arg(format!("docker-archive:{}", archive.display()))
            .arg(&recipe),
    );
    assert!(
        !stderr(&out).contains("[config.healthcheck]"),
        "{}",
        stderr(&out)
    );
}

/// The config blob of the layout's one image.
fn config_of(layout: &Path) -> serde_json::Value {
    let read = |p: std::path::PathBuf| -> serde_json::Value {
        serde_json::from_slice(&fs_err::read(p).unwrap()).unwrap()
    };
    let blob = |d: &serde_json::Value| {
        layout
            .join("blobs/sha256")
            .join(d.as_str().unwrap().trim_start_matches("sha256:"))
    };
    let index = read(layout.join("index.json"));
    let manifest = read(blob(&index["manifests"][0]["digest"]));
    read(blob(&manifest["config"]["digest"]))
}

/// Runs the image's health check under podman: `podman run -d`, then `podman healthcheck
/// run`; its exit status, its output and the container's health status after it.
fn podman_health(image: &str) -> (bool, String, String) {
    let name = format!("ocibuild-hc-{}", std::process::id());
    let mut run = std::process::Command::new("podman");
    run.args(["run", "-d", "--name", &name, "--pull=never"])
        .args(podman_args())
        .arg(image);
    let started = crate::common::run(&mut run);
    assert_success(&started, "podman run -d");
    let check = crate::common::run(std::process::Command::new("podman").args([
        "healthcheck",
        "run",
        &name,
    ]));
    let status = crate::common::run(std::process::Command::new("podman").args([
        "inspect",
        "--format",
        "{{.State.Health.Status}}",
        &name,
    ]));
    let _ = crate::common::run(
        std::process::Command::new("podman").args(["rm", "-f", "-t", "0", &name]),
    );
    let text = format!("{}{}", stdout(&check), stderr(&check));
    (
        check.status.success(),
        text,
        stdout(&status).trim().to_string(),
    )
}

#[test]
fn podman_runs_the_health_check_of_a_docker_archive() {
    if !require_tool("podman") || require_static_busybox().is_none() {
        return;
    }
    for (test, healthy) in [
        (r#"["CMD", "/bin/true"]"#, true),
        (r#"["CMD-SHELL", "exit 1"]"#, false),
    ] {
        let d = tempdir();
        let recipe = healthcheck_recipe(d.path(), test);
        let archive = d.path().join("hc.tar");
        run_ok(
            ocibuild()
                .args(["build", "-o"])
                .arg(format!("docker-archive:{}", archive.display()))
                .arg(&recipe),
        );
        let image = podman_load(&archive);
        let inspect = podman(&[
            "image",
            "inspect",
            "--format",
            "{{json .HealthCheck}}",
            &image,
        ]);
        let (ok, text, status) = podman_health(&image);
        podman_rmi(&image);
        assert!(
            inspect.contains("\"Interval\":90000000000") && inspect.contains("\"Retries\":2"),
            "{inspect}"
        );
        assert_eq!(ok, healthy, "{test}: {text}");
        if healthy {
            assert_eq!(status, "healthy", "{text}");
        } else {
            // One failure of two retries: still starting, and `healthcheck run` says it.
            assert!(text.contains("unhealthy"), "{text}");
            assert_ne!(status, "healthy", "{text}");
        }
    }
}

#[test]
fn podman_ignores_the_health_check_of_an_oci_image() {
    if !require_tool("podman") || require_static_busybox().is_none() {
        return;
    }
    let d = tempdir();
    let recipe = healthcheck_recipe(d.path(), r#"["CMD", "/bin/true"]"#);
    let archive = d.path().join("hc.oci.tar");
    run_ok(
        ocibuild()
            .args(["build", "-o"])
            .arg(format!("oci-archive:{}", archive.display()))
            .arg(&recipe),
    );
    let image = podman_load(&archive);
    let inspect = podman(&[
        "image",
        "inspect",
        "--format",
        "{{json .HealthCheck}}",
        &image,
    ]);
    podman_rmi(&image);
    // What podman sees of it: nothing (the config has it; the manifest is OCI's).
    assert_eq!(inspect.trim(), "null");
    // Nor of an OCI layout run directly.
    let layout = d.path().join("out");
    run_ok(ocibuild().args(["build", "-o"]).arg(&layout).arg(&recipe));
    let alias = crate::common::podman_alias(&layout);
    let name = format!("ocibuild-hc-oci-{}", std::process::id());
    let mut run = std::process::Command::new("podman");
    run.args(["run", "-d", "--name", &name])
        .args(podman_args())
        .arg(alias.image_ref("t"));
    assert_success(&crate::common::run(&mut run), "podman run -d oci:");
    let check = crate::common::run(std::process::Command::new("podman").args([
        "healthcheck",
        "run",
        &name,
    ]));
    let _ = crate::common::run(
        std::process::Command::new("podman").args(["rm", "-f", "-t", "0", &name]),
    );
    assert!(
        stderr(&check).contains("has no defined healthcheck"),
        "{}",
        stderr(&check)
    );
}
