//! Issue 31, case 1: a recipe's `[podman] args` must not run a program on the host. The trust
//! check once took the argument after `--label` / `-e` as the flag's value while the splitter
//! moved it before `run` as a podman global option: `["--label", "--hooks-dir=DIR", …]`
//! installed an OCI hook, `["-e", "--conmon=PATH", …]` a monitor program, both run as the user
//! of `ocibuild test` / `build --test`, outside any container.
//!
//! Each test drives real podman through a wrapper that notes each call, with a hook and a
//! conmon that would each write a marker; both live in, and write to, a directory of the test's
//! own that must stay as it was.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use fs_err as fs;

use crate::common;
use crate::output_layout::{build, recipe};

fn ready() -> bool {
    common::require_tool("podman") && common::require_static_busybox().is_some()
}

/// The test's files: the tools an attacker plants (a hook, a conmon) and the markers they would
/// write in `outside`, a podman wrapper that notes each call there too.
struct Bench {
    dir: PathBuf,
    outside: PathBuf,
    hooks: PathBuf,
    conmon: PathBuf,
    podman: PathBuf,
}

fn script(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

impl Bench {
    fn new() -> Bench {
        let dir = common::test_dir("w");
        let outside = dir.join("outside");
        let tools = dir.join("tools");
        let hooks = tools.join("hooks.d");
        fs::create_dir_all(&outside).unwrap();
        fs::create_dir_all(&hooks).unwrap();
        fs::write(outside.join("keep"), b"keep").unwrap();
        let hook = tools.join("hook.sh");
        script(
            &hook,
            &format!("#!/bin/sh\ntouch {}\n", outside.join("hook-ran").display()),
        );
        fs::write(
            hooks.join("marker.json"),
            serde_json::json!({
                "version": "1.0.0",
                "hook": {"path": hook},
                "when": {"always": true},
                "stages": ["prestart"],
            })
            .to_string(),
        )
        .unwrap();
        let conmon = tools.join("conmon.sh");
        let real_conmon = common::which("conmon").unwrap_or_else(|| "/usr/bin/conmon".into());
        script(
            &conmon,
            &format!(
                "#!/bin/sh\ntouch {}\nexec {} \"$@\"\n",
                outside.join("conmon-ran").display(),
                real_conmon.display()
            ),
        );
        let podman = tools.join("podman");
        script(
            &podman,
            &format!(
                "#!/bin/sh\ntouch {}\nexec {} \"$@\"\n",
                outside.join("podman-called").display(),
                common::which("podman").unwrap().display()
            ),
        );
        Bench {
            dir,
            outside,
            hooks,
            conmon,
            podman,
        }
    }

    /// A recipe of one busybox layer and one test, with these `[podman] args`.
    fn recipe(&self, name: &str, args: &[String]) -> PathBuf {
        let busybox = common::require_static_busybox().unwrap();
        let r = self.dir.join(format!("{name}.toml"));
        let text = format!(
            "[image]\nname = \"localhost/ocibuild-test/{name}\"\ntag = \"t\"\n\n\
             [[layer]]\nname = \"busybox\"\nsrc = {:?}\ndest = \"/bin/busybox\"\n\n\
             [podman]\nargs = {}\n\n\
             [[test]]\nname = \"t\"\nrun = [\"/bin/busybox\", \"true\"]\n",
            busybox.display().to_string(),
            serde_json::to_string(args).unwrap()
        );
        fs::write(&r, text).unwrap();
        r
    }

    /// The markers and calls in `outside` (`keep` aside).
    fn written(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != "keep")
            .collect();
        names.sort();
        names
    }

    fn untouched(&self) {
        assert_eq!(self.written(), Vec::<String>::new(), "a program ran");
        assert_eq!(fs::read(self.outside.join("keep")).unwrap(), b"keep");
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `ocibuild test` and `ocibuild build --test` both refuse the recipe before podman runs; the
/// build alone (no test stage) is not affected.
fn refused_both_ways(b: &Bench, name: &str, args: &[String], expect: &[&str]) {
    let r = b.recipe(name, args);
    let layout = b.dir.join(format!("{name}.oci"));
    common::assert_success(
        &common::run(
            common::ocibuild()
                .args(["--quiet", "build"])
                .arg(&r)
                .arg("-o")
                .arg(&layout),
        ),
        "build without the test stage",
    );
    let test = common::run(
        common::ocibuild()
            .arg("test")
            .arg(&r)
            .arg("-o")
            .arg(&layout)
            .arg("--podman")
            .arg(&b.podman),
    );
    let tested = b.dir.join(format!("{name}-tested.oci"));
    let build_test = common::run(
        common::ocibuild()
            .args(["--quiet", "build"])
            .arg(&r)
            .arg("-o")
            .arg(&tested)
            .arg("--test")
            .arg("--podman")
            .arg(&b.podman),
    );
    for (what, out) in [("test", &test), ("build --test", &build_test)] {
        let e = stderr(out);
        assert!(!out.status.success(), "{what} passed: {e}");
        assert_eq!(e.lines().count(), 1, "{what}: one line: {e}");
        assert!(
            e.contains(&format!("{}: the recipe's [podman] args hold", r.display())),
            "{what}: {e}"
        );
        for x in expect {
            assert!(e.contains(x), "{what}: no `{x}` in {e}");
        }
    }
    // `build --test` stops before it builds.
    assert!(!tested.exists(), "build --test wrote {}", tested.display());
    b.untouched();
}

#[test]
fn a_recipe_cannot_install_an_oci_hook_through_a_flag_value() {
    if !ready() {
        return;
    }
    let b = Bench::new();
    let hooks = format!("--hooks-dir={}", b.hooks.display());
    refused_both_ways(
        &b,
        "hook",
        &["--label".into(), hooks.clone(), "--rm".into()],
        &[
            &format!("`--label` followed by `{hooks}`"),
            "write `--label=VALUE`",
        ],
    );
    // Alone, or in `--flag value` form, it is a global option a recipe never sets, even when
    // the recipe's args are allowed.
    let r = b.recipe(
        "hook2",
        &["--hooks-dir".into(), b.hooks.display().to_string()],
    );
    let out = common::run(
        common::ocibuild()
            .arg("test")
            .arg(&r)
            .arg("-o")
            .arg(b.dir.join("none.oci"))
            .arg("--podman")
            .arg(&b.podman)
            .arg("--allow-recipe-podman-args"),
    );
    let e = stderr(&out);
    assert!(!out.status.success());
    assert!(e.contains("`--hooks-dir`, a podman global option"), "{e}");
    assert!(e.contains("pass it yourself with --podman-arg"), "{e}");
    b.untouched();
}

#[test]
fn a_recipe_cannot_set_podmans_monitor_program_through_a_flag_value() {
    if !ready() {
        return;
    }
    let b = Bench::new();
    let conmon = format!("--conmon={}", b.conmon.display());
    refused_both_ways(
        &b,
        "conmon",
        &["-e".into(), conmon.clone(), "--rm".into()],
        &[&format!("`-e` followed by `{conmon}`"), "write `-e=VALUE`"],
    );
    refused_both_ways(
        &b,
        "limits",
        &["--pids-limit=-1".into()],
        &[
            "`--pids-limit=-1`",
            "1 to 2048",
            "--allow-recipe-podman-args",
        ],
    );
}

/// The control: the user's own podman flags still work, global options included (moved before
/// `run`): the same hook and conmon, given on the command line, do run.
#[test]
fn the_users_own_global_options_still_reach_podman() {
    if !ready() {
        return;
    }
    let b = Bench::new();
    let r = b.recipe("user", &["--label".into(), "a=b".into()]);
    let layout = b.dir.join("user.oci");
    let out = common::run(
        common::ocibuild()
            .args(["--quiet", "build"])
            .arg(&r)
            .arg("-o")
            .arg(&layout)
            .arg("--test")
            .arg("--podman")
            .arg(&b.podman)
            .arg(format!("--podman-arg=--hooks-dir={}", b.hooks.display()))
            .arg("--podman-arg=--conmon")
            .arg(format!("--podman-arg={}", b.conmon.display())),
    );
    common::assert_success(&out, "build --test with the user's global options");
    assert_eq!(b.written(), ["conmon-ran", "hook-ran", "podman-called"]);
}

#[test]
fn recipe_podman_args_that_reach_the_host_are_refused() {
    let d = common::test_dir("w");
    let r = recipe(&d, "v1", b"x");
    let mut text = fs::read_to_string(&r).unwrap();
    text.push_str(
        "\n[podman]\nargs = [\"--runtime\", \"runc\", \"-v\", \"/:/host\"]\n\n[[test]]\nname = \"t\"\nrun = [\"/bin/true\"]\n",
    );
    fs::write(&r, text).unwrap();
    let l = d.join("img.oci");
    common::assert_success(&build(&r, l.to_str().unwrap()), "build");
    let test = |extra: &[&str]| {
        common::run(
            common::ocibuild()
                .arg("test")
                .arg(&r)
                .arg("-o")
                .arg(&l)
                .args(["--podman", "/nonexistent/podman"])
                .args(extra),
        )
    };
    let out = test(&[]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains("the recipe's [podman] args hold `-v`"), "{e}");
    assert!(e.contains("--allow-recipe-podman-args"), "{e}");
    // Allowed for this run: it goes on to podman (absent here).
    let e = stderr(&test(&["--allow-recipe-podman-args"]));
    assert!(e.contains("podman not found"), "{e}");
    // The same flag from the user is taken as given.
    let mut fixed = fs::read_to_string(&r).unwrap();
    fixed = fixed.replace(", \"-v\", \"/:/host\"", "");
    fs::write(&r, fixed).unwrap();
    let e = stderr(&test(&["--podman-arg=-v", "--podman-arg=/tmp:/t"]));
    assert!(e.contains("podman not found"), "{e}");
}
