//! `ocibuild report`'s trust part: an image built with `--attach --sign-key` and pushed to
//! Debian's docker-registry, reported from its layout and from the registry, with the signing
//! key (the grid verified, each row by that key), another key (nothing verified, the signature
//! FAILED) and no key (attached, not verified); unsigned documents never verified; an image
//! without signatures (the grid says what is missing); a registry that answers 500 for the
//! signature and referrers tags (the in-process fake: the page says so, exit 0), and one that
//! answers 404 (what is missing); `--verify`
//! reproduced and not reproduced.

use std::path::Path;
use std::process::Command;

use fs_err as fs;
use serde_json::Value;

use crate::common::fake_registry::{Fake, Knobs};
use crate::common::registry::{auth_file, start_registry, PASS};
use crate::common::{ocibuild, run, run_ok, stdout, tempdir};
use crate::signing::{app, keypair};

fn env(c: &mut Command, dir: &Path, auth: Option<&Path>) {
    c.env("OCIBUILD_CACHE", dir.join("cache"))
        .env_remove("OCIBUILD_REGISTRIES")
        .env("XDG_CONFIG_HOME", dir.join("no-config"));
    match auth {
        Some(a) => c.env("REGISTRY_AUTH_FILE", a),
        None => c.env("REGISTRY_AUTH_FILE", dir.join("no-auth.json")),
    };
}

/// `report IMAGE --json [--key K]…` and the page (-o): the JSON document, the page.
fn report(dir: &Path, auth: Option<&Path>, image: &str, keys: &[&Path]) -> (Value, String) {
    let page = dir.join("report.html");
    let mut c = ocibuild();
    env(&mut c, dir, auth);
    c.args(["report", image, "--json", "-o"]).arg(&page);
    for k in keys {
        c.arg("--key").arg(k);
    }
    let o = run_ok(&mut c);
    (
        serde_json::from_str(&stdout(&o)).unwrap(),
        fs::read_to_string(&page).unwrap(),
    )
}

/// The grid rows of `item` (as `verify-signature` names it) whose `signed` is `signed`.
fn rows<'a>(v: &'a Value, item: &str, signed: bool) -> Vec<&'a Value> {
    v["trust"]["grid"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["item"] == item && r["signed"] == signed)
        .collect()
}

/// `data-ATTR` of the element with id `id`.
fn attr(html: &str, id: &str, name: &str) -> String {
    let at = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the page"));
    let tag = &html[at..at + html[at..].find('>').unwrap()];
    let key = format!("{name}=\"");
    let start = tag.find(&key).unwrap_or_else(|| panic!("{tag}")) + key.len();
    tag[start..start + tag[start..].find('"').unwrap()].to_string()
}

/// Whatever the keys, an unsigned document is never verified, and no row is verified by a key
/// other than `by`.
fn never_verified_unsigned(v: &Value, by: Option<&str>) {
    for r in v["trust"]["grid"].as_array().unwrap() {
        if r["signed"] == false {
            assert_eq!(r["result"], "unsigned", "{r}");
            assert!(r["key"].is_null(), "{r}");
        }
        if r["result"] == "verified" {
            assert_eq!(r["key"].as_str(), by, "{r}");
        }
    }
}

fn check_signed(v: &Value, html: &str, key: &Path) {
    let key = key.to_str().unwrap();
    assert_eq!(v["trust"]["verified"], true, "{:#}", v["trust"]);
    for item in [
        "signature",
        "SPDX SBOM",
        "CycloneDX SBOM",
        "SLSA provenance",
    ] {
        let r = rows(v, item, true);
        assert_eq!(r.len(), 1, "{item}: {:#}", v["trust"]["grid"]);
        assert_eq!(r[0]["result"], "verified", "{item}: {}", r[0]);
        assert_eq!(r[0]["key"], key, "{item}");
    }
    for item in ["SPDX SBOM", "CycloneDX SBOM", "SLSA provenance"] {
        assert_eq!(rows(v, item, false).len(), 1, "{item} unsigned");
    }
    never_verified_unsigned(v, Some(key));
    // The signed attestations also in cosign's layout (`sha256-<hex>.att`).
    let cosign = rows(v, "cosign .att", true);
    assert_eq!(cosign[0]["status"], "present", "{:#}", v["trust"]["grid"]);
    assert_eq!(attr(html, "trust", "data-verified"), "true");
    assert_eq!(
        attr(html, "grid-image-signature", "data-status"),
        "verified"
    );
    assert_eq!(
        attr(html, "grid-image-spdx-sbom-unsigned", "data-status"),
        "unsigned"
    );
    let p = &v["trust"]["provenance"][0];
    assert!(
        p["builder"]
            .as_str()
            .unwrap()
            .starts_with("https://ocibuild.dev/builder/ocibuild@"),
        "{p}"
    );
    assert_eq!(p["subject"], v["images"][0]["manifest"]);
    assert_eq!(p["recipe"], "app.toml");
}

fn check_other_key(v: &Value, html: &str) {
    assert_eq!(v["trust"]["verified"], false);
    assert_eq!(rows(v, "signature", true)[0]["result"], "failed");
    never_verified_unsigned(v, None);
    assert_eq!(attr(html, "grid-image-signature", "data-status"), "failed");
    assert!(!html.contains("data-status=\"verified\""));
}

fn check_no_key(v: &Value, html: &str) {
    assert_eq!(v["trust"]["verified"], false);
    assert!(v["trust"]["keys"].as_array().unwrap().is_empty());
    let sig = &rows(v, "signature", true)[0];
    assert_eq!(sig["result"], "attached-not-verified", "{sig}");
    assert_eq!(sig["detail"], "attached, not verified (no key given)");
    never_verified_unsigned(v, None);
    assert!(!html.contains("data-status=\"verified\""));
    assert!(html.contains("not verified (no key given)"));
}

#[test]
fn a_signed_image_is_verified_with_its_key_only_in_the_layout_and_the_registry() {
    if !crate::common::require_tools_all(&["docker-registry", "openssl"]) {
        return;
    }
    let t = tempdir();
    let (key, public) = keypair(t.path(), "release");
    let (_, other) = keypair(t.path(), "other");
    let reg = start_registry(None);
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let image = format!("{}/trust/app:1", reg.addr);
    let layout = t.path().join("img");
    let r = app(&t.path().join("a"), "signed\n");
    let mut build = ocibuild();
    env(&mut build, t.path(), Some(&auth));
    build.args(["build", "--attach", "--sign-key"]).arg(&key);
    build.args(["--push", &image, "-o"]).arg(&layout).arg(&r);
    run_ok(&mut build);

    let oci = format!("oci:{}", layout.display());
    let docker = format!("docker://{image}");
    for source in [&oci, &docker] {
        let (v, html) = report(t.path(), Some(&auth), source, &[&public]);
        assert_eq!(
            v["trust"]["lookedIn"],
            if source == &oci { "layout" } else { "registry" }
        );
        check_signed(&v, &html, &public);
        let (v, html) = report(t.path(), Some(&auth), source, &[&other]);
        check_other_key(&v, &html);
        // Two keys: the right one verifies, and is the one named.
        let (v, html) = report(t.path(), Some(&auth), source, &[&other, &public]);
        check_signed(&v, &html, &public);
        let (v, html) = report(t.path(), Some(&auth), source, &[]);
        check_no_key(&v, &html);
    }

    // --signed-identity: a registry image's signature must name that repository (a mirror's).
    let page = t.path().join("mirror.html");
    let mut c = ocibuild();
    env(&mut c, t.path(), Some(&auth));
    c.args([
        "report",
        &docker,
        "--json",
        "--signed-identity",
        "mirror.example/x",
        "-o",
    ])
    .arg(&page)
    .arg("--key")
    .arg(&public);
    let v: Value = serde_json::from_str(&stdout(&run_ok(&mut c))).unwrap();
    let sig = &rows(&v, "signature", true)[0];
    assert_eq!(sig["result"], "failed", "{sig}");
    assert!(
        sig["detail"]
            .as_str()
            .unwrap()
            .contains("not as mirror.example/x"),
        "{sig}"
    );
    let mut c = ocibuild();
    env(&mut c, t.path(), Some(&auth));
    let o = run(c.args(["report", &docker, "--signed-identity", "Not A Ref"]));
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn an_unsigned_image_without_attachments_says_what_is_missing() {
    let t = tempdir();
    let r = app(&t.path().join("a"), "plain\n");
    let layout = t.path().join("img");
    let mut build = ocibuild();
    env(&mut build, t.path(), None);
    run_ok(build.args(["build", "-o"]).arg(&layout).arg(&r));
    let (_, public) = if crate::common::require_tools_all(&["openssl"]) {
        keypair(t.path(), "k")
    } else {
        return;
    };
    let (v, html) = report(
        t.path(),
        None,
        &format!("oci:{}", layout.display()),
        &[&public],
    );
    let grid = v["trust"]["grid"].as_array().unwrap();
    assert_eq!(grid.len(), 2, "{grid:#?}");
    assert_eq!(rows(&v, "signature", true)[0]["result"], "missing");
    assert_eq!(rows(&v, "attestations", true)[0]["result"], "note");
    assert_eq!(v["trust"]["verified"], false);
    assert!(v["trust"]["provenance"].as_array().unwrap().is_empty());
    assert_eq!(
        attr(&html, "grid-image-signature", "data-status"),
        "missing"
    );
    assert!(html.contains("id=\"provenance-none\""));
    // The packages table still renders (read from the image).
    assert!(html.contains("<h1>Image report</h1>"));
}

#[test]
fn a_registry_that_does_not_answer_for_referrers_is_said_not_fatal() {
    let fake = Fake::start(Knobs {
        fail_attachment_tags: true,
        ..Knobs::default()
    });
    let t = tempdir();
    let r = app(&t.path().join("a"), "fake\n");
    let image = format!("{}/team/app:1", fake.addr);
    let mut push = ocibuild();
    env(&mut push, t.path(), None);
    run_ok(push.args(["build", "--push", &image]).arg(&r));
    let (v, html) = report(t.path(), None, &format!("docker://{image}"), &[]);
    let problems = v["trust"]["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p
            .as_str()
            .unwrap()
            .contains("the registry did not answer for the signature and referrers")),
        "{problems:#?}"
    );
    assert_eq!(
        rows(&v, "signature", true)[0]["result"],
        "unavailable",
        "{:#}",
        v["trust"]
    );
    assert!(html.contains("id=\"trust-problems\""));
    assert!(html.contains("the registry did not answer"));
    assert_eq!(
        attr(&html, "grid-image-signature", "data-status"),
        "unavailable"
    );

    // A registry that answers 404 (no signature, no referrers tag): what is missing, no problem.
    let plain = Fake::start(Knobs::default());
    let image = format!("{}/team/app:1", plain.addr);
    let mut push = ocibuild();
    env(&mut push, t.path(), None);
    run_ok(push.args(["build", "--push", &image]).arg(&r));
    let (v, html) = report(t.path(), None, &format!("docker://{image}"), &[]);
    assert!(v["trust"]["problems"].as_array().unwrap().is_empty());
    assert_eq!(rows(&v, "signature", true)[0]["result"], "missing");
    assert_eq!(rows(&v, "attestations", true)[0]["result"], "note");
    assert_eq!(
        attr(&html, "grid-image-signature", "data-status"),
        "missing"
    );
    assert!(!html.contains("id=\"trust-problems\""));
}

#[test]
fn verify_says_reproduced_then_not_with_the_differing_file() {
    let t = tempdir();
    let dir = t.path().join("a");
    let r = app(&dir, "one\n");
    let mut build = ocibuild();
    env(&mut build, t.path(), None);
    run_ok(build.arg("build").arg(&r));
    let verify = || {
        let page = t.path().join("v.html");
        let mut c = ocibuild();
        env(&mut c, t.path(), None);
        c.arg("report").arg(&r).args(["--verify", "--json", "-o"]);
        let o = run(c.arg(&page));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        (v, fs::read_to_string(&page).unwrap())
    };
    let (v, html) = verify();
    assert_eq!(v["verify"]["reproduced"], true, "{:#}", v["verify"]);
    assert_eq!(
        v["verify"]["platforms"][0]["rebuilt"],
        v["images"][0]["manifest"]
    );
    assert_eq!(attr(&html, "verify", "data-reproduced"), "true");

    // The source changed after the build: the rebuild differs, in app/hello.txt.
    fs::write(dir.join("src/hello.txt"), "two\n").unwrap();
    let (v, html) = verify();
    assert_eq!(v["verify"]["reproduced"], false, "{:#}", v["verify"]);
    let diff = v["verify"]["platforms"][0]["differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(diff.contains("app/hello.txt"), "{diff}");
    assert_eq!(attr(&html, "verify", "data-reproduced"), "false");
    assert!(html.contains("NOT reproduced"));

    // --verify of an image (not a recipe) is refused.
    let mut c = ocibuild();
    env(&mut c, t.path(), None);
    let o = run(c
        .args(["report", "--verify"])
        .arg(ocibuild::output::default_output(&r)));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--verify rebuilds a recipe"));
}

/// A two-platform image signed and attested by `build`: one grid row per item and platform,
/// in the layout and in the registry, each platform's signature verified by the key; the
/// page's rows `grid-linux-amd64-signature`, `grid-linux-arm64-v8-spdx-sbom`.
#[test]
fn a_two_platform_image_has_a_grid_per_platform() {
    if !crate::common::require_tools_all(&["docker-registry", "openssl"]) {
        return;
    }
    let t = tempdir();
    let (key, public) = keypair(t.path(), "release");
    let reg = start_registry(None);
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let dir = t.path().join("m");
    fs::create_dir_all(dir.join("etc")).unwrap();
    fs::write(dir.join("etc/release"), "1\n").unwrap();
    let r = dir.join("multi.toml");
    fs::write(
        &r,
        "[image]\nname = \"example.com/multi\"\nplatforms = [\"linux/amd64\", \"linux/arm64\"]\n\n\
         [[layer]]\nname = \"etc\"\nsrc = \"etc\"\ndest = \"/etc\"\n",
    )
    .unwrap();
    let image = format!("{}/trust/multi:1", reg.addr);
    let layout = t.path().join("img");
    let mut build = ocibuild();
    env(&mut build, t.path(), Some(&auth));
    build.args(["build", "--attach", "--sign-key"]).arg(&key);
    build.args(["--push", &image, "-o"]).arg(&layout).arg(&r);
    run_ok(&mut build);
    for source in [
        format!("oci:{}", layout.display()),
        format!("docker://{image}"),
    ] {
        let (v, html) = report(t.path(), Some(&auth), &source, &[&public]);
        assert_eq!(v["images"].as_array().unwrap().len(), 2);
        for p in ["linux/amd64", "linux/arm64/v8"] {
            for item in [
                "signature",
                "SPDX SBOM",
                "CycloneDX SBOM",
                "SLSA provenance",
            ] {
                let row = v["trust"]["grid"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["item"] == item && r["platform"] == p && r["signed"] == true)
                    .unwrap_or_else(|| panic!("{source}: no {item} for {p}: {:#}", v["trust"]));
                assert_eq!(row["result"], "verified", "{source} {p} {item}: {row}");
            }
        }
        never_verified_unsigned(&v, Some(public.to_str().unwrap()));
        assert_eq!(v["trust"]["provenance"].as_array().unwrap().len(), 2);
        assert_eq!(
            attr(&html, "grid-linux-amd64-signature", "data-status"),
            "verified"
        );
        assert_eq!(
            attr(&html, "grid-linux-arm64-v8-spdx-sbom", "data-status"),
            "verified"
        );
        assert_eq!(
            attr(
                &html,
                "grid-linux-arm64-v8-spdx-sbom-unsigned",
                "data-status"
            ),
            "unsigned"
        );
    }
}
