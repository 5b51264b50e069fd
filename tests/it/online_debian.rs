//! Online (OCIBUILD_ONLINE=1): recipes/bookworm-python.toml built from the Debian archive,
//! re-resolved (the committed lock is not trusted: the live archive moves), run under podman,
//! and rebuilt cold from the new lock to the same digest.

use crate::common;

use fs_err as fs;
use std::path::Path;

use common::{ocibuild, podman_run, require_tool, run_ok, stdout, tempdir};

fn build(recipe: &Path, out: &Path, cache: &Path) -> serde_json::Value {
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", cache)
            .args(["build", "--json", "-o"])
            .arg(out)
            .arg(recipe),
    );
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// The repository's recipes directory, and a temporary project with the bookworm keys the
/// recipes name.
fn project() -> (std::path::PathBuf, tempfile::TempDir) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    let t = tempdir();
    fs::create_dir(t.path().join("keys")).unwrap();
    fs::copy(
        repo.join("keys/debian-bookworm.asc"),
        t.path().join("keys/debian-bookworm.asc"),
    )
    .unwrap();
    (repo, t)
}

#[test]
fn bookworm_python3_from_the_debian_archive() {
    if !common::online("builds python3 from the Debian archive") || !require_tool("podman") {
        return;
    }
    let (repo, t) = project();
    let recipe = t.path().join("bookworm-python.toml");
    fs::copy(repo.join("bookworm-python.toml"), &recipe).unwrap();

    let first = build(&recipe, &t.path().join("a"), &t.path().join("cache-a"));
    let lock = fs::read_to_string(t.path().join("bookworm-python.lock")).unwrap();
    for pkg in [
        "python3.11-minimal",
        "libpython3.11-stdlib",
        "libssl3",
        "libsqlite3-0",
        "zlib1g",
    ] {
        assert!(
            lock.contains(&format!("name = \"{pkg}\"")),
            "{pkg} not in the lock"
        );
    }
    assert_eq!(first["python"]["version"], "3.11");
    assert_eq!(first["python"]["executable"], "/usr/bin/python3.11");

    let o = podman_run(
        &t.path().join("a"),
        "3.11",
        &[
            "python3",
            "-c",
            "import ssl, sqlite3, json, zlib; print('ok')",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o).trim(), "ok");

    // A Debian system: /tmp and /var/tmp, accounts for root and nobody (the rootfs layer).
    let check = "import tempfile, pwd, getpass, os, stat\n\
        for d in ('/tmp', '/var/tmp'):\n    assert stat.S_IMODE(os.stat(d).st_mode) == 0o1777, d\n\
        assert tempfile.gettempdir() == '/tmp', tempfile.gettempdir()\n\
        open('/tmp/x.png', 'wb').write(b'x')\n\
        print(pwd.getpwuid(0).pw_name, pwd.getpwuid(os.getuid()).pw_name, getpass.getuser(), os.getuid())";
    for (flags, want) in [
        (vec![], "root root root 0"),
        (vec!["--user", "65534:65534"], "root nobody nobody 65534"),
    ] {
        let o = common::podman_run_flags(
            &t.path().join("a"),
            "3.11",
            &flags,
            &["python3", "-c", check],
        );
        assert!(
            o.status.success(),
            "{flags:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(stdout(&o).trim(), want, "{flags:?}");
    }
    assert_eq!(first["rootfs"]["baseline"], true);
    assert_eq!(first["rootfs"]["accounts"]["origin"], "minimal");
    assert_eq!(
        first["rootfs"]["ldSoCache"]["needed"], false,
        "{:#}",
        first["rootfs"]
    );

    // Same lock, cold store: the same layers and the same image.
    let second = build(&recipe, &t.path().join("b"), &t.path().join("cache-b"));
    assert_eq!(second["layers"], {
        let mut l = first["layers"].clone();
        l[0]["cached"] = serde_json::Value::Bool(false);
        l
    });
    assert_eq!(second["manifest"], first["manifest"]);
}

/// mawk from the Debian archive: its postinst's `update-alternatives --install` (not run)
/// becomes `/usr/bin/awk -> /etc/alternatives/awk -> /usr/bin/mawk`, which runs.
#[test]
fn mawk_from_the_debian_archive_gives_usr_bin_awk() {
    if !common::online("installs mawk from the Debian archive") || !require_tool("podman") {
        return;
    }
    let (repo, t) = project();
    let text = fs::read_to_string(repo.join("bookworm-python.toml"))
        .unwrap()
        .replace("\"libstdc++6\"]", "\"libstdc++6\", \"mawk\"]");
    assert!(text.contains("\"mawk\""));
    let recipe = t.path().join("awk.toml");
    fs::write(&recipe, text).unwrap();
    let v = build(&recipe, &t.path().join("img"), &t.path().join("cache"));
    let alts = v["rootfs"]["alternatives"].as_array().unwrap();
    assert!(
        alts.iter()
            .any(|a| a["name"] == "awk" && a["path"] == "/usr/bin/mawk" && a["package"] == "mawk"),
        "{:#}",
        v["rootfs"]
    );
    let not_run = v["rootfs"]["scriptsNotRun"].as_array().unwrap();
    assert!(
        not_run.iter().any(|s| s["package"] == "mawk"),
        "{:#}",
        v["rootfs"]
    );
    let o = podman_run(
        &t.path().join("img"),
        "3.11",
        &["/usr/bin/awk", "BEGIN { print 6 * 7 }"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o).trim(), "42");
}
