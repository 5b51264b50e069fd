//! `ocibuild build --test` and `ocibuild test` on images ocibuild built, under real podman.

use crate::common;
use crate::common::{ocibuild, run, run_ok, stderr, stdout, tempdir};

use fs_err as fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

const STAGE_RECIPE: &str = r#"[image]
name = "localhost/ocibuild-test/stage"
tag = "t"

[[layer]]
name = "busybox"
src = "/bin/busybox"
dest = "/bin/busybox"

[config]
entrypoint = ["/bin/busybox"]

[[test]]
name = "pass"
run = ["/bin/busybox", "echo", "hello stage"]
expect-output = "hello stage"

[[test]]
name = "fails"
run = ["/bin/busybox", "sh", "-c", "echo about to fail; exit 3"]

[[test]]
name = "expected-exit"
run = ["/bin/busybox", "sh", "-c", "exit 3"]
exit-code = 3

[[test]]
name = "timeout"
run = ["/bin/busybox", "sleep", "60"]
timeout = 2

[[test]]
name = "wrong-output"
run = ["/bin/busybox", "echo", "something else"]
expect-output = "hello stage"

[[test]]
name = "missing-command"
run = ["/usr/bin/python3", "-c", "print(1)"]

[[test]]
name = "env-workdir-user"
run = ["/bin/busybox", "sh", "-c", "echo \"$GREETING from $(/bin/busybox pwd) as $(/bin/busybox id -u)\""]
env = { GREETING = "hi" }
workdir = "/bin"
user = "1234"
expect-output = "hi from /bin as 1234"

[[test]]
name = "gpu-optional"
run = ["/bin/busybox", "true"]
gpu = "optional"

[[test]]
name = "no-glibc-smoke"
check = "cuda-smoke"
"#;

fn project(dir: &Path, recipe: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let p = dir.join("stage.toml");
    fs::write(&p, recipe).unwrap();
    p
}

fn ready() -> bool {
    common::require_tool("podman") && common::require_static_busybox().is_some()
}

fn gpu_here() -> bool {
    ocibuild::run::discover_gpu().is_available()
}

#[test]
fn build_test_reports_each_outcome() {
    if !ready() {
        return;
    }
    let tmp = common::tempdir();
    let recipe = project(tmp.path(), STAGE_RECIPE);
    let layout = tmp.path().join("layout");
    let out = common::run(
        common::ocibuild()
            .arg("build")
            .arg(&recipe)
            .arg("--output")
            .arg(&layout)
            .arg("--test"),
    );
    let text = common::stdout(&out);
    assert!(
        !out.status.success(),
        "a failing test must fail the command:\n{text}"
    );
    for line in [
        "test pass ... passed",
        "test fails ... FAILED",
        "test expected-exit ... passed",
        "test timeout ... FAILED",
        "test wrong-output ... FAILED",
        "test missing-command ... FAILED",
        "test env-workdir-user ... passed",
        "test no-glibc-smoke ... FAILED",
    ] {
        assert!(text.contains(line), "missing `{line}` in:\n{text}");
    }
    assert!(
        text.contains("    | about to fail"),
        "the output tail of a failed test is shown:\n{text}"
    );
    if !gpu_here() {
        assert!(
            text.contains("test gpu-optional ... skipped: no GPU"),
            "{text}"
        );
        assert!(text.contains("3 passed, 5 failed, 1 skipped"), "{text}");
    }

    // The same through `ocibuild test --json`, with the reasons.
    let out = common::run(
        common::ocibuild()
            .arg("test")
            .arg(&recipe)
            .arg("--output")
            .arg(&layout)
            .arg("--json"),
    );
    assert!(!out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_name = |n: &str| {
        v["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(by_name("pass")["status"], "passed");
    assert_eq!(by_name("fails")["exitCode"], 3);
    let reason = |n: &str| {
        by_name(n)["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        reason("timeout").contains("timed out"),
        "{}",
        reason("timeout")
    );
    assert!(
        reason("wrong-output").contains("hello stage"),
        "{}",
        reason("wrong-output")
    );
    assert!(
        reason("missing-command").contains("not found"),
        "{}",
        reason("missing-command")
    );
    assert!(
        reason("no-glibc-smoke").contains("needs glibc"),
        "{}",
        reason("no-glibc-smoke")
    );
    assert!(by_name("timeout")["durationSecs"].as_f64().unwrap() < 30.0);
    // No container left behind by an ocibuild that has ended: names carry the process id
    // (`ocibuild-test-PID-…`), and a live one belongs to a test running beside this one.
    common::podman(&["ps", "-a", "--format", "{{.Names}}"])
        .lines()
        .filter(|n| n.starts_with("ocibuild-"))
        .for_each(|n| {
            let pid = n.split('-').nth(2).unwrap_or_default();
            let live = !pid.is_empty() && Path::new("/proc").join(pid).exists();
            assert!(live, "container {n} left behind");
        });

    // --only selects; an unknown name is a clear error.
    let out = common::run(
        common::ocibuild()
            .arg("test")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout)
            .args(["--only", "pass"]),
    );
    assert!(out.status.success(), "{}", common::stdout(&out));
    assert!(common::stdout(&out).contains("1 passed, 0 failed, 0 skipped"));
    let out = common::run(
        common::ocibuild()
            .arg("test")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout)
            .args(["--only", "nope"]),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown test `nope`") && err.contains("pass"),
        "{err}"
    );
}

#[test]
fn podman_missing_and_no_layout_are_clear_errors() {
    if common::require_static_busybox().is_none() {
        return;
    }
    let tmp = common::tempdir();
    let recipe = project(tmp.path(), STAGE_RECIPE);
    let layout = tmp.path().join("layout");
    let out = common::run(
        common::ocibuild()
            .arg("test")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("no OCI layout at") && err.contains("ocibuild build"),
        "{err}"
    );

    let built = common::run(
        common::ocibuild()
            .arg("build")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout),
    );
    common::assert_success(&built, "build");
    let out = common::run(
        common::ocibuild()
            .arg("test")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout)
            .args(["--podman", "/nonexistent/podman"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("podman not found") && err.contains("apt-get install podman"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// The repository's cuda-smoke recipe builds here; without a GPU its test fails cleanly: by
/// discovery ("no NVIDIA GPU/driver found"), and forced, from the check itself inside the
/// container ("libcuda.so.1 not found"), never with a panic.
#[test]
fn cuda_smoke_without_a_gpu_fails_cleanly() {
    if !common::require_tool("podman") || gpu_here() {
        return;
    }
    let tmp = common::tempdir();
    let layout = tmp.path().join("layout");
    let recipe = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/cuda-smoke.toml");
    common::assert_success(
        &common::run(
            common::ocibuild()
                .arg("build")
                .arg(&recipe)
                .arg("-o")
                .arg(&layout),
        ),
        "build",
    );

    let out = common::run(
        common::ocibuild()
            .arg("test")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout),
    );
    let text = common::stdout(&out);
    assert!(!out.status.success());
    assert!(
        text.contains("test cuda-smoke ... FAILED") && text.contains("no NVIDIA GPU/driver found"),
        "{text}"
    );

    let out = common::run(
        common::ocibuild()
            .arg("test")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout)
            .arg("--force-gpu"),
    );
    let text = format!(
        "{}{}",
        common::stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success());
    assert!(text.contains("libcuda.so.1 not found"), "{text}");
    assert!(text.contains("exit code 3"), "{text}");
    assert!(!text.contains("panicked"), "{text}");
}

/// `test -v` prints each test's podman command on stderr, whole and pasteable, with the value
/// of an environment variable that may hold a credential masked.
#[test]
fn test_verbose_prints_the_podman_command() {
    if !ready() {
        return;
    }
    let tmp = common::tempdir();
    let recipe = project(
        tmp.path(),
        r#"[image]
name = "localhost/ocibuild-test/verbose"
tag = "t"

[[layer]]
name = "busybox"
src = "/bin/busybox"
dest = "/bin/busybox"

[[test]]
name = "greets"
run = ["/bin/busybox", "sh", "-c", "echo \"$GREETING\""]
env = { GREETING = "hi there", API_TOKEN = "do-not-print-me" }
expect-output = "hi there"
"#,
    );
    let layout = tmp.path().join("layout");
    common::run_ok(
        common::ocibuild()
            .arg("build")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout),
    );
    let out = common::run(
        common::ocibuild()
            .args(["test", "-v"])
            .arg(&recipe)
            .arg("-o")
            .arg(&layout),
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{}\n{err}", common::stdout(&out));
    let line = err
        .lines()
        .find(|l| l.starts_with("test greets: "))
        .unwrap_or_else(|| panic!("no command line in:\n{err}"));
    assert!(line.contains(" run --rm "), "{line}");
    assert!(
        line.contains(":t "),
        "the image reference oci:DIR:t: {line}"
    );
    assert!(line.contains("'GREETING=hi there'"), "quoted: {line}");
    assert!(line.contains("'API_TOKEN=***'"), "masked: {line}");
    assert!(!err.contains("do-not-print-me"), "{err}");
    // the results stay on stdout, the command is not among them; without -v, no command
    assert!(!common::stdout(&out).contains(" run --rm "));
    let out = common::run(
        common::ocibuild()
            .arg("test")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout),
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains(" run --rm "));
    // build --test -v prints them the same way
    let out = common::run(
        common::ocibuild()
            .args(["build", "--test", "-v"])
            .arg(&recipe)
            .arg("-o")
            .arg(&layout),
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("test greets: "))
        .unwrap_or_else(|| panic!("build --test -v printed no command line:\n{err}"));
    assert!(line.contains("'API_TOKEN=***'"), "masked: {line}");
    assert!(!err.contains("do-not-print-me"), "{err}");
}

/// Item 4: the test stage runs without `--ulimit` flags on a host that refuses podman's
/// default limits (ocibuild passes its own, then small ones).
#[test]
fn the_test_stage_needs_no_ulimit_flags() {
    if !crate::common::require_tool("podman") {
        return;
    }
    let Some(busybox) = crate::common::require_static_busybox() else {
        return;
    };
    let t = tempdir();
    let r = t.path().join("bb.toml");
    fs::write(
        &r,
        format!(
            "[image]\nname = \"example.com/bb\"\n\n[[layer]]\nname = \"busybox\"\nsrc = \"{}\"\ndest = \"/bin/busybox\"\n\n[[test]]\nname = \"echo\"\nrun = [\"/bin/busybox\", \"echo\", \"hi from the test\"]\nexpect-output = \"hi from the test\"\n",
            busybox.display()
        ),
    )
    .unwrap();
    // The harness's own flags, less its ulimits.
    let flags = crate::common::podman_args();
    let mut kept = Vec::new();
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        if f == "--ulimit" {
            it.next();
        } else if !f.starts_with("--ulimit=") {
            kept.push(f.clone());
        }
    }
    // A podman storage of its own: the layout's copy is removed when the last run using a
    // storage ends, and the other tests' runs share the default one (item 14 below).
    let storage = tempdir();
    let private = [
        format!("--root={}", storage.path().join("root").display()),
        format!("--runroot={}", storage.path().join("run").display()),
    ];
    kept.extend(private.iter().cloned());
    let o = run(ocibuild()
        .env("OCIBUILD_PODMAN_ARGS", kept.join(" "))
        .args(["build", "--test", "-o"])
        .arg(t.path().join("img"))
        .arg(&r));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("test echo ... passed"),
        "{}",
        stdout(&o)
    );
    // Item 16 (part): `-q --test` prints only the reference; a pass says nothing more.
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_PODMAN_ARGS", kept.join(" "))
            .args(["-q", "build", "--test", "-o"])
            .arg(t.path().join("img"))
            .arg(&r),
    );
    let lines: Vec<String> = stdout(&o).lines().map(String::from).collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with("example.com/bb:latest@sha256:"),
        "{lines:?}"
    );

    // Item 14: no copy of the layout (named after its path, or after the staged copy's) is
    // left in podman's storage: only these runs used it, so it holds no image at all...
    let images = run_ok(std::process::Command::new("podman").args(&private).args([
        "images",
        "--format",
        "{{.Repository}}:{{.Tag}}",
    ]));
    assert!(
        stdout(&images).trim().is_empty(),
        "images left in podman's storage:\n{}",
        stdout(&images)
    );
    let img = t.path().join("img");
    // ...and `test` refuses an image the recipe no longer builds.
    let text = fs::read_to_string(&r).unwrap();
    fs::write(
        &r,
        text.replace("[[test]]", "[config]\nenv = { X = \"1\" }\n\n[[test]]"),
    )
    .unwrap();
    let o = run(ocibuild()
        .env("OCIBUILD_PODMAN_ARGS", kept.join(" "))
        .args(["test", "-o"])
        .arg(&img)
        .arg(&r));
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("was built from another version of")
            && err.contains("--test`"),
        "{err}"
    );
}
