//! The deflate backend pin (see the comment on flate2 in Cargo.toml): flate2 is built with the
//! zlib-rs backend and nothing else, so feature unification cannot silently switch the gzip
//! output to another implementation (which would change every gzip layer digest).

use crate::common;

use std::collections::BTreeSet;
use std::process::{Command, Output};

/// `cargo ARGS...` in this package, offline and locked to Cargo.lock.
fn cargo(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(args)
        .args(["--locked", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // Plain output whatever the caller's terminal or config says.
        .env("CARGO_TERM_COLOR", "never");
    common::run(&mut cmd)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Features enabled on flate2, as `cargo tree -e features -i flate2` shows them
/// (`flate2 feature "NAME"` nodes).
fn flate2_features(tree: &str) -> BTreeSet<String> {
    const NODE: &str = "flate2 feature \"";
    tree.lines()
        .filter_map(|l| {
            let at = l.find(NODE)?;
            // Only flate2's own nodes, not e.g. `xflate2 feature`.
            if at > 0 && !l[..at].ends_with(' ') {
                return None;
            }
            let rest = &l[at + NODE.len()..];
            rest.split('"').next().map(String::from)
        })
        .collect()
}

#[test]
fn flate2_is_pinned_to_the_zlib_rs_backend() {
    let out = cargo(&["tree", "-e", "features", "-i", "flate2"]);
    let (tree, err) = text(&out);
    assert!(
        out.status.success(),
        "cargo tree failed ({}):\n{err}",
        out.status
    );
    let root = tree.lines().next().unwrap_or("");
    assert!(
        root.starts_with("flate2 v1."),
        "unexpected root {root:?}:\n{tree}"
    );
    let features = flate2_features(&tree);
    // zlib-rs and what it implies (its optional dependency's implicit feature included).
    let expected: BTreeSet<String> = ["zlib-rs", "libz-rs-sys", "any_zlib", "any_impl"]
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    let forbidden = [
        "default",
        "rust_backend",
        "miniz_oxide",
        "miniz-sys",
        "zlib",
        "zlib-default",
        "zlib-ng",
        "zlib-ng-compat",
        "cloudflare_zlib",
        "libz-sys",
        "libz-ng-sys",
        "cloudflare-zlib-sys",
    ];
    let bad: Vec<&str> = forbidden
        .iter()
        .copied()
        .filter(|f| features.contains(*f))
        .collect();
    assert!(
        features.contains("zlib-rs") && bad.is_empty(),
        "flate2 must use the zlib-rs backend only; other backends enabled: {bad:?}\n{tree}"
    );
    assert_eq!(
        features, expected,
        "flate2's features are not exactly zlib-rs and what it implies:\n{tree}"
    );
}

#[test]
fn miniz_oxide_is_not_a_normal_dependency() {
    // miniz_oxide is in Cargo.lock (flate2 depends on it unconditionally on wasm32 only), so
    // `cargo tree -i` knows the package and, when no path leads to it on this host, prints
    // nothing on stdout and "warning: nothing to print." on stderr, exit status 0. Were it absent
    // from Cargo.lock, cargo would say the spec "did not match any packages": also no path.
    let out = cargo(&["tree", "-i", "miniz_oxide", "-e", "normal"]);
    let (tree, err) = text(&out);
    let no_path = if out.status.success() {
        tree.trim().is_empty() && err.contains("nothing to print")
    } else {
        err.contains("did not match any packages")
    };
    assert!(
        no_path,
        "miniz_oxide is reachable from ocibuild's normal dependencies ({}):\n{tree}\n{err}",
        out.status
    );
}
