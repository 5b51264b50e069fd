//! The command reference cannot drift from the command definition: docs/cli/ is what
//! `ocibuild man --markdown-dir` writes, byte for byte; the man pages are one per subcommand;
//! and the help stays short and complete.

use std::collections::BTreeMap;
use std::path::Path;

use fs_err as fs;

use crate::build_output::app;
use crate::common::{ocibuild, run, run_ok, stderr, stdout, tempdir};

const REGENERATE: &str =
    "regenerate it with `cargo run -- man --markdown-dir docs/cli` and commit docs/cli/";

fn read_dir(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn docs_cli_is_the_generated_reference() {
    let t = tempdir();
    let out = t.path().join("cli");
    run_ok(ocibuild().arg("man").arg("--markdown-dir").arg(&out));
    let generated = read_dir(&out);
    let checked_in = read_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli"));
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&generated),
        names(&checked_in),
        "docs/cli/ lists other pages than the command definition has: {REGENERATE}"
    );
    for (name, text) in &generated {
        assert!(
            checked_in[name] == *text,
            "docs/cli/{name} differs from what the command definition generates: {REGENERATE}"
        );
    }
    assert!(generated.contains_key("build.md") && generated.contains_key("cache-verify.md"));
}

#[test]
fn man_dir_writes_a_page_per_subcommand() {
    let t = tempdir();
    let out = t.path().join("man1");
    run_ok(ocibuild().arg("man").arg("--dir").arg(&out));
    let pages = read_dir(&out);
    for name in [
        "ocibuild.1",
        "ocibuild-build.1",
        "ocibuild-lock.1",
        "ocibuild-cache-prune.1",
    ] {
        let page = String::from_utf8(pages[name].clone()).unwrap();
        assert!(page.contains(".TH"), "{name}: {page}");
    }
    assert!(
        !pages.contains_key("ocibuild-cuda-smoke.1"),
        "a hidden command has no page"
    );
    assert!(String::from_utf8_lossy(&pages["ocibuild-build.1"]).contains("\\-\\-locked"));
}

#[test]
fn build_help_is_short_and_grouped() {
    let o = run_ok(ocibuild().args(["build", "--help"]));
    let help = stdout(&o);
    let lines = help.lines().count();
    assert!(
        lines <= 40,
        "`ocibuild build --help` is {lines} lines:\n{help}"
    );
    for heading in [
        "Inputs:",
        "Output:",
        "Test:",
        "Global: -q -v -j --cache-dir",
    ] {
        assert!(help.contains(heading), "no `{heading}` in\n{help}");
    }
    // The global options are accepted after the subcommand though its help leaves them out.
    let o = run_ok(ocibuild().args([
        "build",
        "-q",
        "--jobs",
        "2",
        "--cache-dir",
        "/nonexistent",
        "--help",
    ]));
    assert_eq!(stdout(&o), help);
}

#[test]
fn top_level_help_lists_every_subcommand() {
    let o = run_ok(ocibuild().arg("--help"));
    let help = stdout(&o);
    for sub in [
        "build",
        "lock",
        "push",
        "test",
        "diff",
        "report",
        "verify",
        "vendor",
        "mirror",
        "plan",
        "sbom",
        "provenance",
        "sign",
        "verify-signature",
        "cache",
        "completions",
        "man",
    ] {
        assert!(
            help.lines()
                .any(|l| l.trim_start().starts_with(&format!("{sub} "))),
            "`{sub}` missing from\n{help}"
        );
    }
    assert!(
        help.contains("Global:") && help.contains("--net-timeout"),
        "{help}"
    );
    assert!(
        help.contains("every .deb and wheel"),
        "lock's description: {help}"
    );
}

/// Item 2: A mistyped subcommand gets clap's suggestion instead of "cannot read recipe".
#[test]
fn a_mistyped_subcommand_is_suggested() {
    let t = tempdir();
    let r = app(&t.path().join("p"));
    let o = run(ocibuild().arg("buidl").arg(&r));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("unrecognized subcommand 'buidl'")
            && err.contains("similar subcommand exists: 'build'"),
        "{err}"
    );
    let o = run(ocibuild().arg("version"));
    assert!(
        stderr(&o).contains("unrecognized subcommand 'version'"),
        "{}",
        stderr(&o)
    );
    // The shorthand still takes a recipe.
    let o = run_ok(ocibuild().current_dir(t.path().join("p")).arg("app.toml"));
    assert!(
        stdout(&o).contains("example.com/ux:latest"),
        "{}",
        stdout(&o)
    );
}

/// Item 16 (part): shell completions and a man page, from the command definition.
#[test]
fn completions_and_the_man_page() {
    let t = tempdir();
    let o = run_ok(ocibuild().args(["completions", "bash"]));
    let script = stdout(&o);
    assert!(
        script.contains("_ocibuild()") && script.contains("--tls-verify"),
        "{script}"
    );
    let f = t.path().join("ocibuild.bash");
    fs::write(&f, &script).unwrap();
    run_ok(std::process::Command::new("bash").arg("-n").arg(&f));
    for shell in ["zsh", "fish"] {
        let o = run_ok(ocibuild().args(["completions", shell]));
        assert!(stdout(&o).contains("build"), "{shell}");
    }
    let o = run_ok(ocibuild().arg("man"));
    let page = stdout(&o);
    assert!(
        page.contains(".TH ocibuild 1") && page.contains("build"),
        "{page}"
    );
}
