//! `ocibuild test` run by a user who is not root, under rootless podman: the suite runs as root
//! (CI, containers), so this test runs the test stage as the user `ocibuild-rootless`, which
//! scripts/test.sh creates with subordinate uid/gid ranges (`/etc/subuid`, `/etc/subgid`).
//! It checks that a test gets no network unless it asks for one (`network = true`).

use crate::common;

use fs_err as fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The user scripts/test.sh creates (as root) for this test.
const USER: &str = "ocibuild-rootless";

const RECIPE: &str = r#"[image]
name = "localhost/ocibuild-test/rootless"
tag = "t"

[[layer]]
name = "busybox"
src = "/bin/busybox"
dest = "/bin/busybox"

[[test]]
name = "offline"
run = ["/bin/busybox", "sh", "-c", "/bin/busybox ip -o link | /bin/busybox grep -q link/ether || echo loopback only"]
expect-output = "loopback only"

[[test]]
name = "online"
run = ["/bin/busybox", "ip", "-o", "link"]
expect-output = "link/ether"
network = true
"#;

/// `podman run` flags for the user's runs: the suite's own, less its `--network`, so that the
/// test stage's choice is what is tested.
fn podman_args() -> String {
    let args = common::podman_args();
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--network" || a == "--net" {
            i += 2;
            continue;
        }
        if !(a.starts_with("--network=") || a.starts_with("--net=")) {
            out.push(a.clone());
        }
        i += 1;
    }
    out.join(" ")
}

/// Whether `USER` exists and has subordinate uid and gid ranges.
fn user_ready() -> bool {
    let has_user = Command::new("id")
        .args(["-u", USER])
        .output()
        .is_ok_and(|o| o.status.success());
    let ranged = |f: &str| {
        fs::read_to_string(f).is_ok_and(|s| s.lines().any(|l| l.starts_with(&format!("{USER}:"))))
    };
    has_user && ranged("/etc/subuid") && ranged("/etc/subgid")
}

/// Runs `argv` as `USER` (runuser keeps the environment, but sets HOME to the user's).
fn as_user(argv: &[&str]) -> Command {
    let mut cmd = Command::new("runuser");
    cmd.args(["-u", USER, "--"]).args(argv);
    cmd
}

/// A directory (and everything in it) that `USER` may read, and enter where it is one.
fn readable(path: &Path) {
    let meta = fs::metadata(path).unwrap();
    let mode = meta.permissions().mode();
    let add = if meta.is_dir() {
        0o755
    } else {
        0o644 | (mode & 0o111)
    };
    fs::set_permissions(path, std::fs::Permissions::from_mode(mode | add)).unwrap();
    if meta.is_dir() {
        for e in fs::read_dir(path).unwrap() {
            readable(&e.unwrap().path());
        }
    }
}

#[test]
fn the_test_stage_runs_rootless_with_no_network_unless_asked() {
    if !common::is_root() {
        common::notice(&format!(
            "SKIPPED: {}: runs as root only (it runs the test stage as the user {USER})",
            common::test_name()
        ));
        return;
    }
    if !(common::require_tools_all(&["podman", "runuser", "newuidmap", "newgidmap"])
        && common::require_static_busybox().is_some()
        && common::require_setup(
            user_ready(),
            &format!("the user {USER} with /etc/subuid and /etc/subgid ranges"),
        ))
    {
        return;
    }
    // All of it where the user can read it: the binary (the target dir may not be), the
    // recipe, the built layout. The user writes only its own podman storage and /tmp.
    let tmp = common::tempdir();
    let dir = tmp.path();
    let bin = dir.join("ocibuild");
    fs::copy(env!("CARGO_BIN_EXE_ocibuild"), &bin).unwrap();
    let recipe = dir.join("rootless.toml");
    fs::write(&recipe, RECIPE).unwrap();
    let layout = dir.join("layout");
    let built = common::run(
        common::ocibuild()
            .arg("build")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout),
    );
    common::assert_success(&built, "build");
    readable(dir);

    let out = common::run(
        as_user(&[
            bin.to_str().unwrap(),
            "--verbose",
            "test",
            recipe.to_str().unwrap(),
            "-o",
            layout.to_str().unwrap(),
            "--json",
        ])
        .env("OCIBUILD_PODMAN_ARGS", podman_args())
        .env_remove("OCIBUILD_CACHE")
        .env_remove("XDG_RUNTIME_DIR"),
    );
    let (stdout, stderr) = (common::stdout(&out), common::stderr(&out));
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: not JSON:\n{stdout}\nstderr:\n{stderr}"));
    let by = |n: &str| {
        v["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap_or_else(|| panic!("no test {n}:\n{stdout}"))
            .clone()
    };
    let command = |n: &str| {
        stderr
            .lines()
            .find(|l| l.starts_with(&format!("test {n}: ")))
            .unwrap_or_else(|| panic!("no command for {n}:\n{stderr}"))
            .to_string()
    };
    // A host where this user cannot have a user namespace at all (a sandbox that refuses
    // newuidmap, no nested namespaces): podman says so, and there is nothing rootless to test.
    let offline = by("offline");
    let reason = offline["reason"].as_str().unwrap_or_default();
    if offline["status"] == "failed"
        && reason.starts_with("podman could not run the container")
        && ["newuidmap", "uid_map", "namespace"]
            .iter()
            .any(|w| reason.contains(w))
    {
        common::notice(&format!(
            "SKIPPED: {}: rootless podman cannot start a container here: {reason}",
            common::test_name()
        ));
        return;
    }
    // The test that asks for nothing runs with no network, as the user.
    assert_eq!(offline["status"], "passed", "{stdout}\n{stderr}");
    assert!(command("offline").contains("--network=none"), "{stderr}");
    // The one with `network = true` gets podman's default: rootless, slirp4netns or pasta,
    // which need /dev/net/tun (a sandbox may keep it from other users than root).
    assert!(!command("online").contains("--network"), "{stderr}");
    let tun = as_user(&["/bin/busybox", "sh", "-c", ": <>/dev/net/tun"])
        .output()
        .is_ok_and(|o| o.status.success());
    let online = by("online");
    if tun {
        assert_eq!(online["status"], "passed", "{online}\n{stderr}");
    } else {
        // Then podman itself fails, and says so: not the command's exit status.
        let reason = online["reason"].as_str().unwrap_or_default();
        assert_eq!(online["status"], "failed", "{online}");
        assert!(
            reason.starts_with("podman could not run the container (exit 12"),
            "{reason}"
        );
        common::notice(&format!(
            "NOTE: {}: /dev/net/tun is not usable by {USER} here: checked that the \
             `network = true` test fails with podman's error: {reason}",
            common::test_name()
        ));
    }
}
