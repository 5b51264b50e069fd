//! The text a person reads (issue 37): sizes rounded for reading (exact in `--json`), each
//! attached document named, and a layout's signature and attestation tags never taken for, nor
//! listed with, its images.
//!
//! One signed, attached and pushed build (its text and its `--json`) serves the tests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use fs_err as fs;
use serde_json::Value;

use crate::common::context::TestContext;
use crate::common::{run, run_ok, stdout};

/// A recipe whose app layer holds 30 kB of incompressible bytes (its size is in kB).
fn app(dir: &Path) -> std::path::PathBuf {
    fs::create_dir_all(dir.join("src")).unwrap();
    crate::common::write_pseudo_random(&dir.join("src/data.bin"), 37, 30_000);
    let r = dir.join("app.toml");
    fs::write(
        &r,
        "[image]\nname = \"example.com/text\"\n\n[[layer]]\nname = \"app\"\nsrc = \"src\"\ndest = \"/app\"\n",
    )
    .unwrap();
    r
}

/// `N.NN kB`, `NN.N kB` or `NNN kB`: three significant digits in kB.
fn is_kb(s: &str) -> bool {
    let Some(n) = s.strip_suffix(" kB") else {
        return false;
    };
    let digits = n.chars().filter(char::is_ascii_digit).count();
    n.parse::<f64>().is_ok() && digits == 3
}

/// The app built with `--attach --sign-key` and pushed, once with text output and once with
/// `--json`, into `layout`: made once by the first test that asks.
struct Shared {
    cx: TestContext,
    layout: PathBuf,
    image: String,
    /// The text build's stdout.
    out: String,
    /// The `--json` build's document.
    v: Value,
}

impl Shared {
    fn cmd(&self) -> Command {
        self.cx.ocibuild_with_store(&self.cx.join("cache"))
    }
}

fn shared() -> Option<&'static Shared> {
    static SHARED: OnceLock<Option<Shared>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            if !crate::common::require_tools_all(&["docker-registry", "openssl"]) {
                return None;
            }
            let cx = TestContext::with_registry().shared();
            let (key, _) = crate::signing::keypair(cx.path(), "release");
            let r = app(&cx.join("a"));
            let layout = cx.join("img");
            let image = format!("{}/text/app:1", cx.registry_addr());
            let mut s = Shared {
                cx,
                layout,
                image,
                out: String::new(),
                v: Value::Null,
            };
            let o = run_ok(
                s.cmd()
                    .args(["build", "--attach", "--push", &s.image, "--sign-key"])
                    .arg(&key)
                    .arg("-o")
                    .arg(&s.layout)
                    .arg(&r),
            );
            s.out = stdout(&o);
            let o = run_ok(
                s.cmd()
                    .args([
                        "build",
                        "--json",
                        "--attach",
                        "--push",
                        &s.image,
                        "--sign-key",
                    ])
                    .arg(&key)
                    .arg("-o")
                    .arg(&s.layout)
                    .arg(&r),
            );
            s.v = serde_json::from_slice(&o.stdout).unwrap();
            Some(s)
        })
        .as_ref()
}

#[test]
fn sizes_are_rounded_in_text_and_exact_in_json() {
    let Some(s) = shared() else {
        return;
    };
    let (out, image, v) = (&s.out, &s.image, &s.v);
    // 1. The layer's and the push's sizes in kB.
    let size = size_of_layer(out);
    assert!(is_kb(&size), "{out}");
    let pushed = out
        .lines()
        .find(|l| l.starts_with(&format!("pushed {image}@sha256:")))
        .unwrap_or_else(|| panic!("no pushed line: {out}"));
    let uploaded = pushed
        .rsplit_once(" (")
        .and_then(|(_, s)| s.strip_suffix(" uploaded)"))
        .unwrap_or_else(|| panic!("{pushed}"));
    assert!(is_kb(uploaded), "{pushed}");

    // --json keeps exact bytes.
    let size = v["layers"][0]["size"].as_u64().unwrap();
    assert_eq!(
        ocibuild::bounded::human_bytes(size),
        size_of_layer(out),
        "{v:#}"
    );
}

#[test]
fn each_attached_document_is_named() {
    let Some(s) = shared() else {
        return;
    };
    let (out, v) = (&s.out, &s.v);
    let reg_addr = s.cx.registry_addr();
    // 2. Each attached document says what it is.
    let repo = format!("attached {reg_addr}/text/app@sha256:");
    let named: BTreeSet<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix(&repo))
        .map(|l| {
            l[64..]
                .strip_prefix(" (")
                .and_then(|l| l.strip_suffix(')'))
                .unwrap_or_else(|| panic!("{l}"))
        })
        .collect();
    let want: BTreeSet<&str> = [
        "SPDX SBOM",
        "CycloneDX SBOM",
        "SLSA provenance",
        "SPDX SBOM, signed attestation",
        "CycloneDX SBOM, signed attestation",
        "SLSA provenance, signed attestation",
    ]
    .into();
    assert_eq!(named, want, "{out}");

    // --json lists the same documents beside `pushed`.
    let refs = &v["referrersPush"];
    let docs = refs["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 6, "{refs:#}");
    for (d, p) in docs.iter().zip(refs["pushed"].as_array().unwrap()) {
        assert_eq!(&d["reference"], p, "{refs:#}");
        assert!(d["artifactType"].is_string(), "{refs:#}");
    }
}

#[test]
fn a_layouts_signature_and_fallback_tags_are_never_taken_for_images() {
    let Some(s) = shared() else {
        return;
    };
    let layout = &s.layout;
    let cmd = || s.cmd();
    let reg_addr = s.cx.registry_addr();
    // 3. The layout holds the image and its signature (`sha256-<hex>.sig`); add the image
    // again under a referrers-fallback tag (`sha256-<hex>`, no artifactType) as another tool
    // might. Neither is an image: an error lists only the image's tag, and `push` without a
    // tag takes the only image.
    let index_path = layout.join("index.json");
    let mut index: Value = serde_json::from_slice(&fs::read(&index_path).unwrap()).unwrap();
    let entries = index["manifests"].as_array_mut().unwrap();
    let tag_of = |m: &Value| {
        m["annotations"]["org.opencontainers.image.ref.name"]
            .as_str()
            .map(str::to_string)
    };
    let tags: Vec<String> = entries.iter().filter_map(tag_of).collect();
    assert!(
        tags.iter().any(|t| t.ends_with(".sig")),
        "no signature in the layout: {tags:?}"
    );
    let own = entries
        .iter()
        .find(|m| m["artifactType"].is_null())
        .unwrap()
        .clone();
    let own_tag = tag_of(&own).unwrap();
    let mut fallback = own.clone();
    let hex = own["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    fallback["annotations"] = serde_json::json!({
        "org.opencontainers.image.ref.name": format!("sha256-{hex}")
    });
    entries.push(fallback);
    fs::write(&index_path, serde_json::to_vec(&index).unwrap()).unwrap();

    let o = run(cmd()
        .arg("diff")
        .arg(format!("{}:nope", layout.display()))
        .arg(layout));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains(&format!("no image tagged `nope` (tags: {own_tag})")),
        "{err}"
    );
    let o = run(cmd()
        .arg("push")
        .arg(format!("{}:nope", layout.display()))
        .arg(format!("{reg_addr}/text/other:1")));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("no image tagged `nope` (tags: {own_tag})")),
        "{err}"
    );
    let o = run_ok(
        cmd()
            .arg("push")
            .arg(layout)
            .arg(format!("{reg_addr}/text/other:1")),
    );
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "pushed {}/text/other:1@{}",
            reg_addr,
            own["digest"].as_str().unwrap()
        )),
        "{out}"
    );
}

/// The size on the `layer app:` line of `out`.
fn size_of_layer(out: &str) -> String {
    let l = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("layer app: sha256:"))
        .unwrap();
    l[64..]
        .trim_start_matches(" (")
        .trim_end_matches(')')
        .to_string()
}
