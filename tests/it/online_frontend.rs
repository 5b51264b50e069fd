//! Online (OCIBUILD_ONLINE=1): recipes/frontend.toml, a JavaScript frontend built by a
//! `[[step]]` (`npm ci --offline && npm run build` from the committed package-lock.json, with
//! Debian 13's Node.js, npm, esbuild and marked in a builder recipe), served from /app/static
//! by the app in its test; then built again from the lock in an empty store, step and builder
//! included, to the same digest.

use fs_err as fs;
use std::path::Path;

use crate::common::{self, ocibuild, run_ok, stdout, tempdir};

#[test]
fn a_javascript_frontend_built_by_npm_in_a_step_is_served_and_rebuilds_bit_for_bit() {
    if !common::online("builds a JavaScript frontend with Debian 13's npm in a build step")
        || !common::require_tool("podman")
    {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    let t = tempdir();
    let p = t.path();
    for d in ["keys", "frontend/app", "frontend/web/src"] {
        fs::create_dir_all(p.join(d)).unwrap();
    }
    // The recipes without their locks: resolved against the live archive.
    for f in [
        "keys/debian-trixie.asc",
        "frontend.toml",
        "frontend/builder.toml",
        "frontend/app/app.py",
        "frontend/web/package.json",
        "frontend/web/package-lock.json",
        "frontend/web/page.md",
        "frontend/web/render.mjs",
        "frontend/web/src/main.js",
    ] {
        fs::copy(repo.join(f), p.join(f)).unwrap();
    }
    let recipe = p.join("frontend.toml");
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", p.join("cache-a"))
            .args(["build", "--test", "-o"])
            .arg(p.join("a"))
            .arg(&recipe),
    );
    let text = stdout(&o);
    assert!(
        text.contains("step frontend: ran in") && text.contains("test serves-frontend ... passed"),
        "{text}"
    );
    let lock = fs::read_to_string(p.join("frontend.lock")).unwrap();
    assert!(lock.contains("[[step]]\nname = \"frontend\""), "{lock}");
    let builder = fs::read_to_string(p.join("frontend/builder.lock")).unwrap();
    for deb in [
        "name = \"nodejs\"",
        "name = \"npm\"",
        "name = \"esbuild\"",
        "name = \"node-marked\"",
    ] {
        assert!(builder.contains(deb), "{deb} pinned in the builder's lock");
    }

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
        "the frontend's bundle and page are reproducible"
    );
}
