//! The test stage against real podman: OCI layouts made here with umoci and busybox-static (and
//! the host's glibc for cuda-smoke), run through `run_tests`.
//!
//! Needs podman, runc, umoci and busybox (`apt-get install podman runc umoci busybox-static`).
//! Without them the tests say "skipped: …" and pass, unless OCIBUILD_REQUIRE_TOOLS=1.
//! podman's flags come from OCIBUILD_TEST_PODMAN_ARGS (whitespace-separated); the default suits
//! a sandboxed host without cgroup delegation (see design.md, "podman in a sandboxed host").

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ocibuild::run::{
    run_tests, GpuPolicy, Outcome, RunError, RunOptions, Summary, TestCommand, TestEvent,
    TestResult, TestSpec,
};

const DEFAULT_PODMAN_ARGS: &str =
    "--runtime runc --network none --ulimit nofile=1024:1024 --ulimit nproc=1000:1000";

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool} >/dev/null")])
        .status()
        .is_ok_and(|s| s.success())
}

/// True when every tool is there; otherwise prints a visible skip (or panics when required).
/// A skip notice straight to stderr: libtest swallows `eprintln!` of tests that pass, and a
/// skip must show in CI's log.
fn skip(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED: {msg}");
}

fn tools(names: &[&str]) -> bool {
    let missing: Vec<&str> = names.iter().copied().filter(|t| !have(t)).collect();
    if missing.is_empty() {
        return true;
    }
    let msg = format!("missing {missing:?} (apt-get install podman runc umoci busybox-static)");
    assert!(
        std::env::var("OCIBUILD_REQUIRE_TOOLS").as_deref() != Ok("1"),
        "OCIBUILD_REQUIRE_TOOLS=1 and {msg}"
    );
    skip(&msg);
    false
}

fn sh(cmd: &str) {
    let out = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An OCI layout at `dir/layout` with image `t`: busybox-static, plus the host's glibc when
/// `glibc` (enough to run a dynamically linked Rust binary).
fn make_layout(dir: &Path, glibc: bool) -> PathBuf {
    let layout = dir.join("layout");
    let bundle = dir.join("bundle");
    let (l, b) = (layout.display(), bundle.display());
    sh(&format!(
        "umoci init --layout {l} && umoci new --image {l}:t && umoci unpack --rootless --image {l}:t {b}"
    ));
    let rootfs = bundle.join("rootfs");
    let r = rootfs.display();
    sh(&format!(
        "mkdir -p {r}/bin {r}/tmp && cp \"$(command -v busybox)\" {r}/bin/busybox && \
         for x in sh echo cat sleep id pwd true; do ln -s busybox {r}/bin/$x; done"
    ));
    if glibc {
        sh(&format!(
            "set -e; mkdir -p {r}/lib64 {r}/lib/x86_64-linux-gnu {r}/lib/aarch64-linux-gnu
             for lib in $(ldd {exe} | awk '/=>/ {{print $3}} /ld-linux/ {{print $1}}') $(ldconfig -p | awk '/libgcc_s.so.1 / {{print $NF; exit}}'); do
               cp -L \"$lib\" \"{r}$lib\"
             done",
            exe = env!("CARGO_BIN_EXE_ocibuild")
        ));
    }
    sh(&format!(
        "umoci repack --image {l}:t {b} && umoci config --image {l}:t --config.env PATH=/bin --config.cmd /bin/sh"
    ));
    layout
}

fn podman_args() -> Vec<String> {
    std::env::var("OCIBUILD_PODMAN_ARGS")
        .unwrap_or_else(|_| DEFAULT_PODMAN_ARGS.to_string())
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn opts(force_gpu: bool) -> RunOptions {
    RunOptions {
        podman: PathBuf::from("podman"),
        podman_args: podman_args(),
        self_exe: PathBuf::from(env!("CARGO_BIN_EXE_ocibuild")),
        force_gpu,
        host_libraries: Vec::new(),
    }
}

fn spec(name: &str, argv: &[&str]) -> TestSpec {
    TestSpec {
        name: name.into(),
        run: TestCommand::Argv(argv.iter().map(std::string::ToString::to_string).collect()),
        env: BTreeMap::new(),
        workdir: None,
        user: None,
        exit_code: 0,
        expect_output: None,
        timeout: Duration::from_secs(60),
        gpu: GpuPolicy::Off,
        network: false,
    }
}

fn run(layout: &Path, tests: &[TestSpec], o: &RunOptions) -> Vec<TestResult> {
    let seen = RefCell::new(Vec::new());
    let commands = RefCell::new(Vec::new());
    let results = run_tests(layout, "t", tests, o, &|e| match e {
        TestEvent::Command { test, line } => commands
            .borrow_mut()
            .push((test.to_string(), line.to_string())),
        TestEvent::Finished(r) => {
            eprintln!("{}", serde_json::to_string(r).unwrap());
            seen.borrow_mut().push(r.name.clone());
        }
    })
    .unwrap();
    // the reporter saw each result, in order
    assert_eq!(
        *seen.borrow(),
        results.iter().map(|r| r.name.clone()).collect::<Vec<_>>()
    );
    // each podman command was reported, whole: `podman … run … oci:DIR:t …`
    for (test, line) in commands.borrow().iter() {
        assert!(results.iter().any(|r| &r.name == test), "{test}: {line}");
        assert!(
            line.contains(" run --rm ") && line.contains(":t"),
            "{test}: {line}"
        );
    }
    results
}

fn reason(r: &TestResult) -> &str {
    match &r.outcome {
        Outcome::Passed => "",
        Outcome::Failed { reason } | Outcome::Skipped { reason } => reason,
    }
}

#[test]
fn pass_fail_timeout_output_and_missing_command() {
    if !tools(&["podman", "runc", "umoci", "busybox"]) {
        return;
    }
    // tempfile's names start with a dot and have capitals: run_tests must stage a plain copy.
    let t = tempfile::tempdir().unwrap();
    let layout = make_layout(t.path(), false);

    let mut tests = Vec::new();
    let mut s = spec(
        "pass",
        &["sh", "-c", "echo hello world; echo to-stderr >&2"],
    );
    s.expect_output = Some("hello world".into());
    tests.push(s);
    tests.push(spec("exit-3", &["sh", "-c", "exit 3"]));
    let mut s = spec("exit-3-expected", &["sh", "-c", "exit 3"]);
    s.exit_code = 3;
    tests.push(s);
    let mut s = spec("wrong-output", &["echo", "something else"]);
    s.expect_output = Some("hello".into());
    tests.push(s);
    let mut s = spec("timeout", &["sleep", "60"]);
    s.timeout = Duration::from_secs(3);
    tests.push(s);
    tests.push(spec("missing-command", &["/usr/bin/nosuch", "x"]));
    let mut s = spec(
        "env-workdir-user",
        &["sh", "-c", "echo \"FOO=$FOO\" $(pwd) uid=$(id -u)"],
    );
    s.env.insert("FOO".into(), "bar baz".into());
    s.workdir = Some("/tmp".into());
    s.user = Some("1234".into());
    s.expect_output = Some("FOO=bar baz /tmp uid=1234".into());
    tests.push(s);
    let mut s = spec(
        "many-lines",
        &[
            "sh",
            "-c",
            "i=0; while [ $i -lt 500 ]; do echo line $i; i=$((i+1)); done",
        ],
    );
    s.expect_output = Some("line 499".into());
    tests.push(s);
    tests.push(spec("image-default-cmd", &[]));

    let r = run(&layout, &tests, &opts(false));
    let by = |n: &str| r.iter().find(|x| x.name == n).unwrap();

    assert_eq!(by("pass").outcome, Outcome::Passed, "{:?}", by("pass"));
    assert_eq!(by("pass").exit_code, Some(0));
    assert!(
        by("pass").output_tail.contains(&"to-stderr".to_string()),
        "{:?}",
        by("pass")
    );

    assert_eq!(by("exit-3").exit_code, Some(3));
    assert!(
        reason(by("exit-3")).starts_with("exit code 3, expected 0"),
        "{:?}",
        by("exit-3")
    );
    assert_eq!(by("exit-3-expected").outcome, Outcome::Passed);

    assert!(reason(by("wrong-output")).contains("did not contain \"hello\""));

    let to = by("timeout");
    assert!(reason(to).starts_with("timed out after 3s"), "{to:?}");
    assert!(to.duration < Duration::from_secs(20), "{to:?}");

    let mc = by("missing-command");
    assert!(mc.failed());
    assert!(matches!(mc.exit_code, Some(126 | 127)), "{mc:?}");
    assert!(
        reason(mc).contains("/usr/bin/nosuch"),
        "podman's message is in the reason: {mc:?}"
    );

    assert_eq!(
        by("env-workdir-user").outcome,
        Outcome::Passed,
        "{:?}",
        by("env-workdir-user")
    );
    let ml = by("many-lines");
    assert_eq!(ml.outcome, Outcome::Passed);
    assert_eq!(ml.output_tail.len(), 20);
    assert_eq!(ml.output_tail.last().unwrap(), "line 499");
    // image cmd is /bin/sh with no stdin: exits 0
    assert_eq!(
        by("image-default-cmd").outcome,
        Outcome::Passed,
        "{:?}",
        by("image-default-cmd")
    );

    assert_eq!(Summary::of(&r).to_string(), "5 passed, 4 failed, 0 skipped");

    // nothing left behind: no container of ours, no staged copy
    let ps = Command::new("podman")
        .args(podman_global_args())
        .args(["ps", "-a", "--format", "{{.Names}}"])
        .output()
        .unwrap();
    let names = String::from_utf8_lossy(&ps.stdout);
    let pid = format!("ocibuild-test-{}-", std::process::id());
    assert!(!names.contains(&pid), "left containers: {names}");
}

fn podman_global_args() -> Vec<String> {
    ocibuild::run::split_global_args(&podman_args()).0
}

#[test]
fn gpu_policies_without_a_gpu_and_cuda_smoke_preconditions() {
    if !tools(&["podman", "runc", "umoci", "busybox"]) {
        return;
    }
    if ocibuild::run::discover_gpu().is_available() {
        skip("this host has a GPU; these are the no-GPU paths");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let layout = make_layout(t.path(), false);
    let mut opt = spec("optional", &["true"]);
    opt.gpu = GpuPolicy::Optional;
    let mut req = spec("required", &["true"]);
    req.gpu = GpuPolicy::Required;
    let mut smoke = spec("smoke-on-busybox", &[]);
    smoke.run = TestCommand::CudaSmoke;
    smoke.gpu = GpuPolicy::Required;
    let r = run(
        &layout,
        &[opt.clone(), req.clone(), smoke.clone()],
        &opts(false),
    );
    assert_eq!(
        r[0].outcome,
        Outcome::Skipped {
            reason: "no GPU".into()
        }
    );
    assert!(
        reason(&r[1]).starts_with("no NVIDIA GPU/driver found: "),
        "{:?}",
        r[1]
    );
    assert!(
        reason(&r[2]).starts_with("cuda-smoke needs glibc in the image"),
        "{:?}",
        r[2]
    );

    // force_gpu: the tests run anyway
    let r = run(&layout, &[opt, req], &opts(true));
    assert!(r.iter().all(|x| x.outcome == Outcome::Passed), "{r:?}");
}

#[test]
fn cuda_smoke_in_a_glibc_image_reports_the_missing_driver() {
    if !tools(&["podman", "runc", "umoci", "busybox"]) {
        return;
    }
    let exe = env!("CARGO_BIN_EXE_ocibuild");
    let native = Command::new(exe).arg("cuda-smoke").output().unwrap();
    let text = String::from_utf8_lossy(&native.stdout).to_string()
        + &String::from_utf8_lossy(&native.stderr);
    assert!(
        text.contains("cuda-smoke"),
        "`ocibuild cuda-smoke` printed {text:?}"
    );
    if ocibuild::run::discover_gpu().is_available() {
        skip("this host has a GPU (scripts/gpu-smoke.sh covers it)");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let layout = make_layout(t.path(), true);
    assert!(ocibuild::run::image_has_glibc(&layout, "t").unwrap());
    let mut smoke = spec("smoke", &[]);
    smoke.run = TestCommand::CudaSmoke;
    smoke.gpu = GpuPolicy::Required;
    let r = run(&layout, &[smoke], &opts(true));
    assert!(r[0].failed(), "{:?}", r[0]);
    assert!(
        r[0].output_tail
            .iter()
            .any(|l| l.contains("libcuda.so.1 not found")),
        "{:?}",
        r[0]
    );
}

#[test]
fn stage_level_errors() {
    let t = tempfile::tempdir().unwrap();
    let mut o = opts(false);
    o.podman = PathBuf::from("podman-that-does-not-exist");
    let e = run_tests(t.path(), "t", &[], &o, &|_| {}).unwrap_err();
    assert!(matches!(e, RunError::PodmanMissing { .. }));
    assert!(e.to_string().contains("apt-get install podman runc"), "{e}");

    if !tools(&["podman", "runc", "umoci", "busybox"]) {
        return;
    }
    let layout = make_layout(t.path(), false);
    let e = run_tests(&layout, "nope", &[], &opts(false), &|_| {}).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "OCI layout {} has no image tagged `nope` (tags: t)",
            layout.display()
        )
    );
}

/// On a GPU host (scripts/gpu-smoke.sh runs it): cuda-smoke through `run_tests`, with the GPU
/// discovered for real. Set OCIBUILD_GPU_LAYOUT (and OCIBUILD_GPU_TAG, default `t`), OCIBUILD_PODMAN
/// (e.g. a podman bundle's wrapper) and OCIBUILD_SELF_EXE (an ocibuild with the cuda-smoke
/// subcommand). OCIBUILD_TEST_PODMAN_ARGS as above.
#[test]
#[ignore = "GPU hosts only: scripts/gpu-smoke.sh runs it with OCIBUILD_GPU_LAYOUT set"]
fn gpu_host_cuda_smoke_through_run_tests() {
    let layout =
        std::env::var("OCIBUILD_GPU_LAYOUT").expect("OCIBUILD_GPU_LAYOUT: the OCI layout to test");
    let tag = std::env::var("OCIBUILD_GPU_TAG").unwrap_or_else(|_| "t".into());
    let gpu = ocibuild::run::discover_gpu();
    eprintln!("GPU access: {}", serde_json::to_string(&gpu).unwrap());
    assert!(gpu.is_available(), "{gpu:?}");
    let o = RunOptions {
        podman: std::env::var("OCIBUILD_PODMAN")
            .unwrap_or_else(|_| "podman".into())
            .into(),
        podman_args: podman_args(),
        self_exe: std::env::var("OCIBUILD_SELF_EXE")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_ocibuild").into())
            .into(),
        force_gpu: false,
        host_libraries: Vec::new(),
    };
    let mut smoke = spec("cuda-smoke", &[]);
    smoke.run = TestCommand::CudaSmoke;
    smoke.gpu = GpuPolicy::Required;
    smoke.expect_output = Some("cuda-smoke: PASSED".into());
    smoke.timeout = Duration::from_secs(300);
    let r = run_tests(Path::new(&layout), &tag, &[smoke], &o, &|e| {
        if let TestEvent::Finished(r) = e {
            eprintln!("{}", serde_json::to_string_pretty(r).unwrap());
        }
    })
    .unwrap();
    assert_eq!(r[0].outcome, Outcome::Passed, "{:?}", r[0]);
}

#[test]
fn no_network_unless_asked_and_podman_errors_named() {
    if !tools(&["podman", "runc", "umoci", "busybox"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let layout = make_layout(t.path(), false);
    // The suite's flags less their `--network`: the test stage's own choice is tested.
    let mut o = opts(false);
    let args = std::mem::take(&mut o.podman_args);
    let mut skip_value = false;
    for a in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        match a.as_str() {
            "--network" | "--net" => skip_value = true,
            a if a.starts_with("--network=") || a.starts_with("--net=") => {}
            _ => o.podman_args.push(a),
        }
    }
    let mut offline = spec(
        "offline",
        &[
            "sh",
            "-c",
            "/bin/busybox ip -o link | /bin/busybox grep -q link/ether || echo loopback only",
        ],
    );
    offline.expect_output = Some("loopback only".into());
    let mut online = spec("online", &["/bin/busybox", "ip", "-o", "link"]);
    online.expect_output = Some("link/ether".into());
    online.network = true;
    let shell_127 = spec(
        "shell-127",
        &["sh", "-c", "echo 'nosuch: not found'; exit 127"],
    );
    let tests = [offline, online, shell_127];
    let commands = RefCell::new(Vec::new());
    let r = run_tests(&layout, "t", &tests, &o, &|e| {
        if let TestEvent::Command { test, line } = e {
            commands.borrow_mut().push(format!("{test}: {line}"));
        }
    })
    .unwrap();
    let commands = commands.into_inner();
    let line = |n: &str| {
        commands
            .iter()
            .find(|l| l.starts_with(&format!("{n}: ")))
            .unwrap()
            .clone()
    };
    assert_eq!(r[0].outcome, Outcome::Passed, "{:?}", r[0]);
    assert!(line("offline").contains(" --network=none "), "{commands:?}");
    // Root's default network (a bridge) gives the container an interface where the host lets
    // podman make one; where it does not (a sandbox without NET_ADMIN), podman's own error is
    // what the result says, not the command's exit status.
    if r[1].outcome != Outcome::Passed {
        let why = reason(&r[1]);
        assert!(
            why.starts_with("podman could not run the container"),
            "{:?}",
            r[1]
        );
        crate::common::notice(&format!(
            "NOTE: {}: podman's default network is not usable here: {why}",
            crate::common::test_name()
        ));
    }
    assert!(!line("online").contains("--network"), "{commands:?}");
    // A command's own 127 (no podman `Error: ` line) is the command's.
    assert_eq!(
        reason(&r[2]),
        "the command was not found in the image (exit 127): nosuch: not found",
        "{:?}",
        r[2]
    );

    // The command line's own network flag is taken, and none added, even for a test that
    // asks for the network.
    let mut o2 = o.clone();
    o2.podman_args
        .extend(["--net".to_string(), "none".to_string()]);
    let commands = RefCell::new(Vec::new());
    let r = run_tests(&layout, "t", &tests[..2], &o2, &|e| {
        if let TestEvent::Command { line, .. } = e {
            commands.borrow_mut().push(line.to_string());
        }
    })
    .unwrap();
    let commands = commands.into_inner();
    assert!(
        commands.iter().all(|l| !l.contains("--network")),
        "{commands:?}"
    );
    assert_eq!(r[0].outcome, Outcome::Passed, "{:?}", r[0]);
    assert!(r[1].failed(), "no interface but lo: {:?}", r[1]);
}
