//! Online (OCIBUILD_ONLINE=1): recipes/c-extension.toml, a compiled extension of the app built
//! by a `[[step]]` in a Debian 13 builder that another recipe makes (gcc, python3-dev from the
//! Debian archive), imported by the app's test under podman; then built again from the lock in
//! an empty store, step and builder included, to the same digest.

use fs_err as fs;
use std::path::Path;

use crate::common::{self, ocibuild, run_ok, stdout, tempdir};

#[test]
fn a_c_extension_compiled_by_a_step_is_imported_and_rebuilds_bit_for_bit() {
    if !common::online("builds a C extension with Debian 13's gcc in a build step")
        || !common::require_tool("podman")
    {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    let t = tempdir();
    let p = t.path();
    fs::create_dir_all(p.join("keys")).unwrap();
    fs::create_dir_all(p.join("c-extension")).unwrap();
    fs::copy(
        repo.join("keys/debian-trixie.asc"),
        p.join("keys/debian-trixie.asc"),
    )
    .unwrap();
    // The recipes without their locks: resolved against the live archive.
    for f in [
        "c-extension.toml",
        "c-extension/builder.toml",
        "c-extension/hello.c",
    ] {
        fs::copy(repo.join(f), p.join(f)).unwrap();
    }
    let recipe = p.join("c-extension.toml");
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", p.join("cache-a"))
            .args(["build", "--test", "-o"])
            .arg(p.join("a"))
            .arg(&recipe),
    );
    let text = stdout(&o);
    assert!(
        text.contains("step hello-ext: ran in") && text.contains("test import-c ... passed"),
        "{text}"
    );
    let lock = fs::read_to_string(p.join("c-extension.lock")).unwrap();
    assert!(lock.contains("[[step]]\nname = \"hello-ext\""), "{lock}");
    assert!(p.join("c-extension/builder.lock").is_file());

    let json = |dir: &str, cache: &str, extra: &[&str]| -> serde_json::Value {
        let o = run_ok(
            ocibuild()
                .env("OCIBUILD_CACHE", p.join(cache))
                .args(["build", "--json", "-o"])
                .arg(p.join(dir))
                .args(extra)
                .arg(&recipe),
        );
        serde_json::from_str(&stdout(&o)).unwrap()
    };
    let warm = json("a", "cache-a", &[]);
    assert_eq!(warm["steps"][0]["cached"], true, "{warm:#}");
    let cold = json("b", "cache-b", &["--locked"]);
    assert_eq!(cold["steps"][0]["cached"], false, "{cold:#}");
    assert_eq!(
        cold["manifest"], warm["manifest"],
        "the step's output is reproducible"
    );
}
