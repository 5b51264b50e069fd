//! What each command prints, human and `--json`, as reviewed snapshots
//! (tests/it/snapshots/it__command_output__*.snap; `cargo insta review` after a change).
//!
//! The image is the cheapest there is: a scratch recipe with one small app layer, built in a
//! few milliseconds, so every command runs offline (push, mirror and sign against a
//! docker-registry on 127.0.0.1). The snapshots go through the shared filters
//! (tests/it/common/context.rs): digests, the temporary directory, the registry's port and
//! durations are named, not kept.
//!
//! docs/json.md is pinned twice: a JSON snapshot holds every key of the document (a new,
//! renamed or dropped key is a reviewed diff), and [`assert_documented`] fails when the
//! document has a key that the command's section of docs/json.md does not name.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fs_err as fs;
use serde_json::Value;

use crate::common::context::TestContext;
use crate::common::{require_tool, require_tools_all, run};

/// The app: three small files and a recipe naming them; `v2` changes one file and adds one.
fn project(dir: &Path, v2: bool) -> PathBuf {
    fs::create_dir_all(dir.join("app/lib")).unwrap();
    fs::write(dir.join("app/main.sh"), "#!/bin/sh\necho hello\n").unwrap();
    fs::write(dir.join("app/lib/util.sh"), "greet() { echo hi; }\n").unwrap();
    let readme = if v2 { "read me, v2\n" } else { "read me\n" };
    fs::write(dir.join("app/README"), readme).unwrap();
    if v2 {
        fs::write(dir.join("app/CHANGES"), "v2: a new file\n").unwrap();
    }
    let r = dir.join("app.toml");
    fs::write(
        &r,
        "[image]\nname = \"example.com/snap/app\"\ntag = \"1\"\nplatform = \"linux/amd64\"\n\n\
         [[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/srv/app\"\n\n\
         [config]\nentrypoint = [\"/srv/app/main.sh\"]\n",
    )
    .unwrap();
    r
}

/// A context with the app locked and built into `app.oci` (and, with `v2`, the second
/// version built into `v2/app.oci`).
struct Built {
    cx: TestContext,
    recipe: PathBuf,
    layout: PathBuf,
}

fn built(cx: TestContext) -> Built {
    let recipe = project(&cx.join("v1"), false);
    let layout = cx.join("app.oci");
    ok(cx.ocibuild().arg("lock").arg(&recipe));
    ok(cx
        .ocibuild()
        .args(["build", "-q", "--locked", "-o"])
        .arg(&layout)
        .arg(&recipe));
    Built { cx, recipe, layout }
}

fn ok(cmd: &mut Command) -> Output {
    let o = run(cmd);
    assert!(o.status.success(), "{}", transcript(&o));
    o
}

/// Exit status, stdout and stderr, as one text to snapshot.
fn transcript(o: &Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        o.status.code().map_or("signal".into(), |c| c.to_string()),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Snapshots the human output of `cmd`, run in the context's directory.
fn snap_text(cx: &TestContext, name: &str, cmd: &mut Command) -> Output {
    let o = run(cmd.current_dir(cx.path()));
    cx.snapshot_settings()
        .bind(|| insta::assert_snapshot!(name, transcript(&o)));
    o
}

/// Snapshots the `--json` document of `cmd` (it must exit `code`) and checks its keys against
/// `section` of docs/json.md (`None`: a standard document, SPDX, CycloneDX, in-toto).
fn snap_json(
    cx: &TestContext,
    name: &str,
    section: Option<&str>,
    code: i32,
    cmd: &mut Command,
) -> Value {
    let o = run(cmd.current_dir(cx.path()));
    assert_eq!(o.status.code(), Some(code), "{}", transcript(&o));
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", transcript(&o)));
    if let Some(section) = section {
        assert_documented(section, &v);
    }
    cx.snapshot_settings()
        .bind(|| insta::assert_json_snapshot!(name, v));
    v
}

/// The section of docs/json.md whose heading contains `` `heading` ``: its text up to the
/// next heading.
fn json_md_section(heading: &str) -> String {
    let md = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.md")).unwrap();
    let start = md
        .lines()
        .position(|l| l.starts_with("## ") && l.contains(heading))
        .unwrap_or_else(|| panic!("docs/json.md has no section {heading}"));
    md.lines()
        .skip(start + 1)
        .take_while(|l| !l.starts_with("## "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every key of `doc` (at any depth, under objects and arrays) is named in backticks in the
/// section of docs/json.md for its command: a key the docs do not list fails here.
fn assert_documented(heading: &str, doc: &Value) {
    let text = json_md_section(heading);
    let mut keys = BTreeSet::new();
    fn walk(v: &Value, keys: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    keys.insert(k.clone());
                    walk(v, keys);
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, keys)),
            _ => {}
        }
    }
    walk(doc, &mut keys);
    let missing: Vec<&String> = keys
        .iter()
        .filter(|k| {
            !text.contains(&format!("`{k}`"))
                && !text.contains(&format!("`{k}[]`"))
                && !text.contains(&format!("`{k}`/"))
                && !text.contains(&format!("`{k} "))
                && !text.contains(&format!(" {k}`"))
                && !text.contains(&format!(" {k} "))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/json.md's `{heading}` section does not name {missing:?}; the document: {doc:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// build, lock, plan

#[test]
fn build_text() {
    let cx = TestContext::new();
    let r = project(&cx.join("v1"), false);
    snap_text(
        &cx,
        "build_text",
        cx.ocibuild().args(["build", "-o", "app.oci"]).arg(&r),
    );
}

#[test]
fn build_json() {
    let cx = TestContext::new();
    let r = project(&cx.join("v1"), false);
    let v = snap_json(
        &cx,
        "build_json",
        Some("`build --json`"),
        0,
        cx.ocibuild()
            .args(["build", "--json", "-o", "app.oci"])
            .arg(&r),
    );
    assert_eq!(v["layers"][0]["cached"], false, "{v:#}");
}

#[test]
fn lock_text() {
    let cx = TestContext::new();
    let r = project(&cx.join("v1"), false);
    snap_text(&cx, "lock_text", cx.ocibuild().arg("lock").arg(&r));
    assert!(cx.join("v1/app.lock").is_file());
}

#[test]
fn plan_text_and_json() {
    let b = built(TestContext::new());
    snap_text(
        &b.cx,
        "plan_text",
        b.cx.ocibuild().arg("plan").arg(&b.recipe),
    );
    let v = snap_json(
        &b.cx,
        "plan_json",
        Some("`plan --json`"),
        0,
        b.cx.ocibuild().args(["plan", "--json"]).arg(&b.recipe),
    );
    assert_eq!(v["layers"][0]["status"], "cached locally", "{v:#}");
}

// ---------------------------------------------------------------------------------------------
// verify, diff, report

#[test]
fn verify_text_and_json() {
    let b = built(TestContext::new());
    let against = format!("oci:{}", b.layout.display());
    snap_text(
        &b.cx,
        "verify_text",
        b.cx.ocibuild()
            .args(["verify", "--against", &against])
            .arg(&b.recipe),
    );
    let v = snap_json(
        &b.cx,
        "verify_json",
        Some("`verify --json`"),
        0,
        b.cx.ocibuild()
            .args(["verify", "--json", "--against", &against])
            .arg(&b.recipe),
    );
    assert_eq!(v["reproduced"], true, "{v:#}");
}

#[test]
fn diff_text_and_json() {
    let b = built(TestContext::new());
    let r2 = project(&b.cx.join("v2"), true);
    let v2 = b.cx.join("v2.oci");
    ok(b.cx
        .ocibuild()
        .args(["build", "-q", "-o"])
        .arg(&v2)
        .arg(&r2));
    let (a, bb) = (b.layout.display().to_string(), v2.display().to_string());
    let o = snap_text(&b.cx, "diff_text", b.cx.ocibuild().args(["diff", &a, &bb]));
    assert_eq!(o.status.code(), Some(1), "{}", transcript(&o));
    let v = snap_json(
        &b.cx,
        "diff_json",
        Some("`diff --json`"),
        1,
        b.cx.ocibuild().args(["diff", "--json", &a, &bb]),
    );
    assert_eq!(v["result"], "different", "{v:#}");
}

#[test]
fn report_text_and_json() {
    let b = built(TestContext::new());
    let image = b.layout.display().to_string();
    snap_text(
        &b.cx,
        "report_text",
        b.cx.ocibuild().args(["report", &image]),
    );
    // `report --json` is schema `ocibuild-report/1` (docs/commands.md), not in docs/json.md:
    // the snapshot holds its keys.
    snap_json(
        &b.cx,
        "report_json",
        None,
        0,
        b.cx.ocibuild().args(["report", "--json", &image]),
    );
}

// ---------------------------------------------------------------------------------------------
// sbom, provenance (standard documents)

#[test]
fn sbom_and_provenance_documents() {
    let b = built(TestContext::new());
    let image = format!("oci:{}", b.layout.display());
    for (name, args) in [
        ("sbom_spdx", &["sbom", "--image"][..]),
        (
            "sbom_cyclonedx",
            &["sbom", "--format", "cyclonedx", "--image"],
        ),
        ("provenance", &["provenance", "--image"]),
    ] {
        snap_json(
            &b.cx,
            name,
            None,
            0,
            b.cx.ocibuild().args(args).arg(&image).arg(&b.recipe),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// vendor, cache, import

#[test]
fn vendor_text_and_json() {
    let b = built(TestContext::new());
    snap_text(
        &b.cx,
        "vendor_text",
        b.cx.ocibuild()
            .args(["vendor", "--into", "vendor"])
            .arg(&b.recipe),
    );
    snap_json(
        &b.cx,
        "vendor_json",
        Some("`vendor --json`"),
        0,
        b.cx.ocibuild()
            .args(["vendor", "--json", "--into", "vendor"])
            .arg(&b.recipe),
    );
    snap_text(
        &b.cx,
        "vendor_check_text",
        b.cx.ocibuild().args(["vendor", "--check", "vendor"]),
    );
}

#[test]
fn cache_verify_and_prune() {
    let b = built(TestContext::new());
    snap_text(
        &b.cx,
        "cache_verify_text",
        b.cx.ocibuild().args(["cache", "verify"]),
    );
    let v = snap_json(
        &b.cx,
        "cache_verify_json",
        Some("`cache verify --json`"),
        0,
        b.cx.ocibuild().args(["cache", "verify", "--json"]),
    );
    assert!(v["blobs"].as_u64().unwrap() >= 3, "{v:#}");
    snap_text(
        &b.cx,
        "cache_prune_text",
        b.cx.ocibuild().args(["cache", "prune"]),
    );
    snap_json(
        &b.cx,
        "cache_prune_json",
        Some("`cache prune --json`"),
        0,
        b.cx.ocibuild().args(["cache", "prune", "--json"]),
    );
}

#[test]
fn import_text_and_json() {
    let cx = TestContext::new();
    project(&cx.join("ctx"), false);
    fs::write(
        cx.join("ctx/Dockerfile"),
        "FROM scratch\nCOPY app /srv/app\nENV GREETING=hello\nEXPOSE 8080\n\
         ENTRYPOINT [\"/srv/app/main.sh\"]\n",
    )
    .unwrap();
    snap_text(
        &cx,
        "import_text",
        cx.ocibuild()
            .args(["import", "ctx/Dockerfile", "-o", "out-text"]),
    );
    let v = snap_json(
        &cx,
        "import_json",
        Some("`import --json`"),
        0,
        cx.ocibuild()
            .args(["import", "--json", "ctx/Dockerfile", "-o", "out-json"]),
    );
    assert!(cx.join("out-json/recipe.toml").is_file(), "{v:#}");
}

// ---------------------------------------------------------------------------------------------
// push, mirror, sign, verify-signature (a registry on 127.0.0.1)

#[test]
fn push_and_mirror() {
    if !require_tool("docker-registry") {
        return;
    }
    let b = built(TestContext::with_registry());
    let reg = b.cx.registry_addr().to_string();
    let layout = b.layout.display().to_string();
    snap_text(
        &b.cx,
        "push_text",
        b.cx.ocibuild()
            .args(["push", &layout, &format!("{reg}/snap/app:1")]),
    );
    let v = snap_json(
        &b.cx,
        "push_json",
        Some("`push --json`"),
        0,
        b.cx.ocibuild()
            .args(["push", "--json", &layout, &format!("{reg}/snap/app:2")]),
    );
    assert!(
        v["blobs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["result"] == "existed"),
        "{v:#}"
    );
    snap_text(
        &b.cx,
        "mirror_text",
        b.cx.ocibuild()
            .args(["mirror", "--to", &format!("{reg}/m1"), &layout]),
    );
    snap_json(
        &b.cx,
        "mirror_json",
        Some("`mirror --json`"),
        0,
        b.cx.ocibuild()
            .args(["mirror", "--json", "--to", &format!("{reg}/m2"), &layout]),
    );
}

#[test]
fn sign_and_verify_signature() {
    if !require_tools_all(&["docker-registry", "openssl"]) {
        return;
    }
    let b = built(TestContext::with_registry());
    let (key, public) = crate::signing::keypair(b.cx.path(), "release");
    let image = format!("{}/snap/signed:1", b.cx.registry_addr());
    ok(b.cx
        .ocibuild()
        .args(["push", "-q"])
        .arg(&b.layout)
        .arg(&image));
    snap_text(
        &b.cx,
        "sign_text",
        b.cx.ocibuild()
            .args(["sign", "--key"])
            .arg(&key)
            .arg(&image),
    );
    snap_json(
        &b.cx,
        "sign_json",
        Some("`sign --json`"),
        0,
        b.cx.ocibuild()
            .args(["sign", "--json", "--key"])
            .arg(&key)
            .arg(&image),
    );
    snap_text(
        &b.cx,
        "verify_signature_text",
        b.cx.ocibuild()
            .args(["verify-signature", "--key"])
            .arg(&public)
            .arg(&image),
    );
    let v = snap_json(
        &b.cx,
        "verify_signature_json",
        Some("`verify-signature --json`"),
        0,
        b.cx.ocibuild()
            .args(["verify-signature", "--json", "--key"])
            .arg(&public)
            .arg(&image),
    );
    assert_eq!(v["verified"], true, "{v:#}");
}
