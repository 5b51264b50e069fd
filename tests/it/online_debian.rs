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

#[test]
fn bookworm_python3_from_the_debian_archive() {
    if !common::online("builds python3 from the Debian archive") || !require_tool("podman") {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    let t = tempdir();
    fs::create_dir(t.path().join("keys")).unwrap();
    fs::copy(
        repo.join("keys/debian-bookworm.asc"),
        t.path().join("keys/debian-bookworm.asc"),
    )
    .unwrap();
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

    // Same lock, cold store: the same layers and the same image.
    let second = build(&recipe, &t.path().join("b"), &t.path().join("cache-b"));
    assert_eq!(second["layers"], {
        let mut l = first["layers"].clone();
        l[0]["cached"] = serde_json::Value::Bool(false);
        l
    });
    assert_eq!(second["manifest"], first["manifest"]);
}
