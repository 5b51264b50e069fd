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
    // A layer of this image's own (podman shares layers by digest across the images that tests
    // load and remove at once, and podman 4.3 can lose a shared layer to a concurrent rmi).
    fs_err::write(dir.join("root/.ocibuild-test"), &name).unwrap();
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

#[test]
fn build_args_from_the_command_line_and_the_environment() {
    let d = tempdir();
    fs_err::create_dir(d.path().join("app")).unwrap();
    fs_err::write(d.path().join("app/x"), "x\n").unwrap();
    let recipe = d.path().join("args.toml");
    fs_err::write(
        &recipe,
        r#"[image]
name = "localhost/ocibuild-test/args"
tag = "v${VERSION}"

[args]
VERSION = "1.0"
GREETING = "hello"

[[layer]]
name = "app"
src = "app"
dest = "/app"

[config]
env = { GREETING = "${GREETING}", KEPT = "$HOME and $$GREETING" }
"#,
    )
    .unwrap();
    let json = |out: &std::process::Output| -> serde_json::Value {
        serde_json::from_str(&stdout(out)).unwrap()
    };
    let layout = d.path().join("out");
    let plain = json(&run_ok(
        ocibuild()
            .args(["build", "--json", "-o"])
            .arg(&layout)
            .arg(&recipe),
    ));
    assert_eq!(plain["image"], "localhost/ocibuild-test/args:v1.0");
    let env = config_of_tag(&layout, "v1.0")["config"]["Env"].clone();
    assert_eq!(
        env,
        serde_json::json!([
            "GREETING=hello",
            "KEPT=$HOME and $GREETING",
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        ])
    );
    let set = json(&run_ok(
        ocibuild()
            .args([
                "build",
                "--json",
                "--build-arg",
                "VERSION=2.0",
                "--build-arg",
                "GREETING",
            ])
            .env("GREETING", "from-env")
            .arg("-o")
            .arg(&layout)
            .arg(&recipe),
    ));
    assert_eq!(set["image"], "localhost/ocibuild-test/args:v2.0");
    assert_eq!(
        config_of_tag(&layout, "v2.0")["config"]["Env"][0],
        "GREETING=from-env"
    );
    // The args are part of the identity: another value, another recipe digest.
    assert_ne!(plain["manifest"], set["manifest"]);
    // `verify` rebuilds it with the same --build-args (its tag is v2.0 then).
    let verified = run(ocibuild()
        .args([
            "verify",
            "--build-arg",
            "VERSION=2.0",
            "--build-arg",
            "GREETING=from-env",
        ])
        .arg("--against")
        .arg(format!("oci:{}:v2.0", layout.display()))
        .arg(&recipe));
    assert_success(&verified, "verify --build-arg");
    assert!(
        stdout(&verified).contains("reproduced"),
        "{}",
        stdout(&verified)
    );
    // An undeclared name: a usage error naming the declared ones.
    let bad = run(ocibuild()
        .args(["build", "--build-arg", "VERSON=2", "-o"])
        .arg(d.path().join("none"))
        .arg(&recipe));
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains(
            "--build-arg `VERSON`: not declared in [args]: did you mean `VERSION`? the recipe declares `GREETING`, `VERSION`"
        ),
        "{}",
        stderr(&bad)
    );
    assert!(!d.path().join("none").exists());
    // `plan` and `lock` take it too.
    let lock = run(ocibuild()
        .args(["lock", "--build-arg", "NOPE=1"])
        .arg(&recipe));
    assert_eq!(lock.status.code(), Some(2), "{}", stderr(&lock));
}

/// The config of the layout's image tagged `tag`.
fn config_of_tag(layout: &Path, tag: &str) -> serde_json::Value {
    let read = |p: std::path::PathBuf| -> serde_json::Value {
        serde_json::from_slice(&fs_err::read(p).unwrap()).unwrap()
    };
    let blob = |d: &serde_json::Value| {
        layout
            .join("blobs/sha256")
            .join(d.as_str().unwrap().trim_start_matches("sha256:"))
    };
    let index = read(layout.join("index.json"));
    let entry = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag)
        .unwrap()
        .clone();
    let manifest = read(blob(&entry["digest"]));
    read(blob(&manifest["config"]["digest"]))
}
