//! The audits of a multi-platform image, per platform: `--attach` (each platform's SBOMs and
//! provenance about its own manifest), `--sign-key` (the index and every platform's manifest,
//! checked by `verify-signature` and by Debian 13's skopeo policy), `sbom`/`provenance
//! --platform`, `verify --attest` (a VSA per platform), `diff` of two indexes; an interpreter
//! archive per platform (`[python.archives]`); a base without one of the platforms.
//!
//! One set-up (the two-platform project, locked and built with `--attach`, in a shared store)
//! serves the tests; each starts its own registries.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use fs_err as fs;

use crate::aptfix::{self, fixture};
use crate::common::context::TestContext;
use crate::common::{ocibuild, run, run_ok, stdout, tempdir};
use crate::platforms::{file_in_layer, index_of, json, manifest_for};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn blob(layout: &Path, digest: &str) -> PathBuf {
    layout
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

/// A two-platform recipe (amd64, arm64) with one `[apt]` package built per architecture and an
/// app layer whose file says `app`.
fn two_platform_recipe(dir: &Path, f: &aptfix::Fixture, app: &str) -> PathBuf {
    fs::create_dir_all(dir.join("app")).unwrap();
    fs::write(dir.join("app/main.py"), app).unwrap();
    let r = aptfix::apt_recipe(
        dir,
        f,
        &f.key,
        &["hello"],
        "\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n",
    );
    let text = fs::read_to_string(&r).unwrap().replace(
        "platform = \"linux/amd64\"",
        "platforms = [\"linux/amd64\", \"linux/arm64\"]",
    );
    fs::write(&r, text).unwrap();
    r
}

/// The referrers (entries with an `artifactType`) of a layout's index.json, by subject digest.
fn referrers_by_subject(layout: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let top = json(&layout.join("index.json"));
    let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for e in top["manifests"].as_array().unwrap() {
        let Some(kind) = e["artifactType"].as_str() else {
            continue;
        };
        let m = json(&blob(layout, e["digest"].as_str().unwrap()));
        let subject = m["subject"]["digest"]
            .as_str()
            .unwrap_or("none")
            .to_string();
        out.entry(subject).or_default().push(kind.to_string());
    }
    out
}

/// The two-platform project, locked, and its image built with `--attach` into `l1`: made
/// once by the first test that asks, in a store the tests share (their builds take its layers).
struct Shared {
    cx: TestContext,
    _archive: aptfix::Fixture,
    dir: PathBuf,
    r: PathBuf,
    l1: PathBuf,
}

impl Shared {
    /// `ocibuild` with the shared store.
    fn cmd(&self) -> Command {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", self.cx.join("cache"));
        c
    }
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let cx = TestContext::new().shared();
        let f = fixture(&crate::platforms::hello_debs(), false);
        let dir = cx.join("p");
        let r = two_platform_recipe(&dir, &f, "print('one')\n");
        let mut s = Shared {
            cx,
            _archive: f,
            dir,
            r,
            l1: PathBuf::new(),
        };
        run_ok(s.cmd().arg("lock").arg(&s.r));
        s.l1 = s.cx.join("l1");
        run_ok(
            s.cmd()
                .args(["build", "--attach", "-o"])
                .arg(&s.l1)
                .arg(&s.r),
        );
        s
    })
}

#[test]
fn attach_sbom_and_provenance_are_each_platforms_own() {
    let s = shared();
    let cmd = || s.cmd();
    let (dir, r, l1) = (&s.dir, &s.r, &s.l1);
    // --attach (the shared build): each platform's three documents, about its own manifest.
    let (_, index) = index_of(l1);
    let (amd64, arm64) = (manifest_for(&index, "amd64"), manifest_for(&index, "arm64"));
    let by_subject = referrers_by_subject(l1);
    assert_eq!(by_subject.len(), 2, "{by_subject:?}");
    for m in [&amd64, &arm64] {
        let kinds = &by_subject[m.as_str()];
        assert_eq!(kinds.len(), 3, "{m}: {kinds:?}");
        assert!(
            kinds.iter().any(|k| k == "application/spdx+json"),
            "{kinds:?}"
        );
    }

    // sbom/provenance --platform: the document of that platform's image and lock section.
    let o = run(cmd().arg("sbom").arg(r).arg("--image").arg(l1));
    assert!(
        !o.status.success()
            && stderr(&o).contains("builds several platforms (linux/amd64, linux/arm64/v8)")
            && stderr(&o).contains("--platform"),
        "{}",
        stderr(&o)
    );
    let o = run_ok(
        cmd()
            .args(["provenance", "--platform", "linux/arm64", "--image"])
            .arg(l1)
            .arg(r),
    );
    let prov: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        prov["subject"][0]["digest"]["sha256"],
        arm64.trim_start_matches("sha256:"),
        "{prov:#}"
    );
    let lock_param = &prov["predicate"]["buildDefinition"]["externalParameters"]["lock"];
    assert_eq!(lock_param["platform"], "linux/arm64/v8", "{prov:#}");
    let whole = ocibuild::lock::Lock::load(&dir.join("app.lock"))
        .unwrap()
        .unwrap();
    let view = whole.view("linux/arm64/v8").to_toml();
    assert_eq!(
        lock_param["digest"]["sha256"],
        crate::common::sha256_bytes(view.as_bytes()).trim_start_matches("sha256:"),
        "{prov:#}"
    );
    let deps = prov["predicate"]["buildDefinition"]["resolvedDependencies"].to_string();
    assert!(
        deps.contains("hello_1.0_arm64.deb") && !deps.contains("hello_1.0_amd64.deb"),
        "{deps}"
    );
    let o = run_ok(
        cmd()
            .args([
                "sbom",
                "--format",
                "cyclonedx",
                "--platform",
                "linux/amd64",
                "--image",
            ])
            .arg(l1)
            .arg(r),
    );
    let cdx = stdout(&o);
    assert!(
        cdx.contains("hello_1.0_amd64.deb") && cdx.contains(&amd64) && !cdx.contains(&arm64),
        "{cdx}"
    );
    let o = run(cmd()
        .args(["sbom", "--platform", "linux/s390x", "--image"])
        .arg(l1)
        .arg(r));
    assert!(
        stderr(&o).contains("the recipe does not build it"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_diff_of_two_indexes_compares_every_platform() {
    let s = shared();
    let cmd = || s.cmd();
    let (r, l1) = (&s.r, &s.l1);
    let t = tempdir();
    // diff of two indexes: every platform compared.
    let l2 = t.path().join("l2");
    run_ok(cmd().args(["build", "-o"]).arg(&l2).arg(r));
    let o = run_ok(cmd().arg("diff").arg(l1).arg(&l2));
    assert!(
        stdout(&o).contains("platform linux/amd64:\n")
            && stdout(&o).contains("platform linux/arm64/v8:\n")
            && stdout(&o).contains("result: identical (2 platforms)"),
        "{}",
        stdout(&o)
    );
    // (the app changed on a copy of the project: the other tests read the shared one)
    let copy = t.path().join("p2");
    run_ok(Command::new("cp").arg("-a").arg(&s.dir).arg(&copy));
    let r = copy.join(r.file_name().unwrap());
    fs::write(copy.join("app/main.py"), "print('two')\n").unwrap();
    let l3 = t.path().join("l3");
    run_ok(cmd().args(["build", "-o"]).arg(&l3).arg(&r));
    let o = run(cmd().args(["diff", "--json"]).arg(l1).arg(&l3));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["schema"], "ocibuild-diff-index/1", "{d:#}");
    assert_eq!(d["result"], "different", "{d:#}");
    for (i, p) in ["linux/amd64", "linux/arm64/v8"].iter().enumerate() {
        assert_eq!(d["platforms"][i]["platform"], *p, "{d:#}");
        let files = d["platforms"][i]["report"]["layers"].to_string();
        assert!(files.contains("app/main.py"), "{p}: {files}");
    }
    let amd_only = t.path().join("amd-only");
    run_ok(
        cmd()
            .args(["build", "--platform", "linux/amd64", "-o"])
            .arg(&amd_only)
            .arg(&r),
    );
    let o = run(cmd().arg("diff").arg(&l3).arg(&amd_only));
    assert!(
        o.status.code() == Some(1)
            && stdout(&o).contains("platform linux/arm64/v8: only in a")
            && stdout(&o).contains("result: different (2 platforms)"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    // --platform still picks one.
    let o = run_ok(
        cmd()
            .args(["diff", "--platform", "linux/amd64"])
            .arg(&l3)
            .arg(&amd_only),
    );
    assert!(stdout(&o).contains("result: identical"), "{}", stdout(&o));
}

#[test]
fn a_signed_pushed_index_verifies_per_platform_and_after_a_mirror() {
    let s = shared();
    let cmd = || s.cmd();
    let r = &s.r;
    if !crate::common::require_tools_all(&["docker-registry", "openssl"]) {
        return;
    }
    let t = tempdir();
    // Signed and pushed: the index and each platform's manifest carry a signature; each
    // platform's attestations are DSSE envelopes about its manifest.
    use crate::common::registry::{auth_file_for, start_registry, PASS};
    let (a, b) = (start_registry(None), start_registry(None));
    let auth = auth_file_for(t.path(), &[&a.addr, &b.addr], PASS);
    let (key, public) = crate::signing::keypair(t.path(), "rel");
    let (_, other) = crate::signing::keypair(t.path(), "other");
    let reg = || {
        let mut c = cmd();
        c.env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"));
        c
    };

    let image = format!("{}/multi/app:1", a.addr);
    let signed = t.path().join("signed");
    let o = run_ok(
        reg()
            .args(["build", "--attach", "--push", &image, "--sign-key"])
            .arg(&key)
            .arg("-o")
            .arg(&signed)
            .arg(r),
    );
    let out = stdout(&o);
    assert_eq!(out.matches("\nsigned ").count(), 3, "{out}");
    assert_eq!(out.matches("referrers tag ").count(), 2, "{out}");
    let (pushed_entry, pushed_index) = index_of(&signed);
    let (amd64, arm64) = (
        manifest_for(&pushed_index, "amd64"),
        manifest_for(&pushed_index, "arm64"),
    );
    // The layout holds the three signatures the push carried, and the six envelopes.
    let top = json(&signed.join("index.json")).to_string();
    for d in [pushed_entry["digest"].as_str().unwrap(), &amd64, &arm64] {
        let tag = format!("sha256-{}.sig", d.trim_start_matches("sha256:"));
        assert!(top.contains(&tag), "{tag}: {top}");
    }
    // Each platform's attestations also in cosign's layout, under its own manifest's digest:
    // what `cosign verify-attestation REPO@PLATFORM-DIGEST` reads.
    for d in [&amd64, &arm64] {
        let tag = format!("sha256-{}.att", d.trim_start_matches("sha256:"));
        assert!(top.contains(&tag), "{tag}: {top}");
    }
    if crate::common::require_sigstore_tools(&["cosign"]) {
        let docker_config = t.path().join("docker");
        fs::create_dir_all(&docker_config).unwrap();
        fs::copy(&auth, docker_config.join("config.json")).unwrap();
        let cosign = |reference: &str, kind: &str, key: &Path| {
            run(Command::new("cosign")
                .env("DOCKER_CONFIG", &docker_config)
                .args(["verify-attestation", "--type", kind])
                .args(["--insecure-ignore-tlog=true", "--allow-http-registry=true"])
                .arg("--key")
                .arg(key)
                .arg(reference))
        };
        for d in [&amd64, &arm64] {
            let at = format!("{}/multi/app@{d}", a.addr);
            let o = cosign(&at, "spdxjson", &public);
            assert!(o.status.success(), "{at}: {}", stderr(&o));
            assert!(!cosign(&at, "spdxjson", &other).status.success(), "{at}");
        }
        // The index has no attestations of its own: its platforms' are about their manifests.
        assert!(!cosign(&image, "spdxjson", &public).status.success());
    }
    let by_subject = referrers_by_subject(&signed);
    assert_eq!(by_subject[amd64.as_str()].len(), 6, "{by_subject:?}");
    assert_eq!(by_subject[arm64.as_str()].len(), 6, "{by_subject:?}");

    let o = run(reg()
        .args(["verify-signature", "--json", &image, "--key"])
        .arg(&public));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("{}{}", stdout(&o), stderr(&o)));
    assert!(o.status.success(), "{v:#}");
    let findings = v["findings"].as_array().unwrap();
    for p in [None, Some("linux/amd64"), Some("linux/arm64/v8")] {
        let of = |what: &str| {
            findings
                .iter()
                .any(|f| f["platform"].as_str() == p && f["what"] == what && f["ok"] == true)
        };
        assert!(of("signature"), "{p:?}: {v:#}");
        if p.is_some() {
            assert!(of("https://spdx.dev/Document"), "{p:?}: {v:#}");
            assert!(of("https://slsa.dev/provenance/v1"), "{p:?}: {v:#}");
        }
    }
    let o = run(reg()
        .args(["verify-signature", &image, "--key"])
        .arg(&other));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        crate::signing::row(&stdout(&o), "signature", "linux/arm64/v8", "FAILED").is_some(),
        "{}",
        stdout(&o)
    );

    // verify --attest: a signed VSA on each platform's manifest.
    let o = run_ok(
        reg()
            .args(["verify", "--attest", "--sign-key"])
            .arg(&key)
            .arg("--against")
            .arg(format!("docker://{image}"))
            .arg(r),
    );
    assert_eq!(
        stdout(&o).matches("\nattested ").count(),
        2,
        "{}",
        stdout(&o)
    );
    let o = run_ok(
        reg()
            .args(["verify-signature", &image, "--key"])
            .arg(&public),
    );
    for p in ["linux/amd64", "linux/arm64/v8"] {
        let row = crate::signing::row(&stdout(&o), "SLSA verification summary", p, "verified");
        assert!(row.is_some(), "{p}: {}", stdout(&o));
    }

    // Mirrored with its signatures and referrers: verified there under the pushed identity.
    let mut c = reg();
    c.arg("mirror")
        .arg(&signed)
        .args(["--to", &format!("{}/air", b.addr)]);
    run_ok(&mut c);
    let o = run_ok(
        reg()
            .args(["verify-signature", &format!("{}/air/apt:latest", b.addr)])
            .args(["--signed-identity", &image, "--key"])
            .arg(&public),
    );
    assert!(stdout(&o).contains("signature verified"), "{}", stdout(&o));

    // Debian 13's skopeo: its sigstoreSigned policy takes the index (by tag), and refuses it
    // under another key.
    if crate::common::require_sigstore_tools(&["skopeo-sigstore"]) {
        let scope = format!("{}/multi/app", a.addr);
        let (ok, why) = crate::signing::skopeo_accepts(t.path(), &a.addr, &scope, &public, &image);
        assert!(ok, "{why}");
        let (ok, _) = crate::signing::skopeo_accepts(t.path(), &a.addr, &scope, &other, &image);
        assert!(!ok);
    }
}

#[test]
fn the_base_tag_is_resolved_once_per_build_and_sign_signs_every_platform() {
    let s = shared();
    let cmd = || s.cmd();
    if !crate::common::require_tools_all(&["docker-registry", "openssl"]) {
        return;
    }
    let t = tempdir();
    use crate::common::registry::{auth_file_for, start_registry, PASS};
    let a = start_registry(None);
    let auth = auth_file_for(t.path(), &[&a.addr], PASS);
    let (key, public) = crate::signing::keypair(t.path(), "rel");
    let reg = || {
        let mut c = cmd();
        c.env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"));
        c
    };
    // The base's tag is resolved once per build: a platform whose section is missing is
    // pinned through the index another platform's section pins, even after the tag moved;
    // `lock --update` takes the tag's new index for all.
    let base_dir = t.path().join("base");
    fs::create_dir_all(base_dir.join("etc")).unwrap();
    let base_recipe = base_dir.join("base.toml");
    fs::write(
        &base_recipe,
        "[image]\nname = \"example.com/base\"\nplatforms = [\"linux/amd64\", \"linux/arm64\"]\n\n\
         [[layer]]\nname = \"etc\"\nsrc = \"etc\"\ndest = \"/etc\"\n",
    )
    .unwrap();
    let base_ref = format!("{}/base/multi:1", a.addr);
    let push_base = |text: &str| {
        fs::write(base_dir.join("etc/release"), text).unwrap();
        let o = run_ok(
            reg()
                .args(["build", "-q", "--push-only", "--push", &base_ref])
                .arg(&base_recipe),
        );
        stdout(&o).trim().rsplit('@').next().unwrap().to_string()
    };
    let first = push_base("1\n");
    // `sign` of an index signs it and each platform's manifest, as `build --sign-key` does.
    let o = run_ok(reg().args(["sign", &base_ref, "--key"]).arg(&key));
    assert_eq!(stdout(&o).matches("signed ").count(), 3, "{}", stdout(&o));
    let o = run_ok(
        reg()
            .args(["verify-signature", &base_ref, "--key"])
            .arg(&public),
    );
    assert!(
        crate::signing::row(&stdout(&o), "signature", "linux/arm64/v8", "verified")
            .is_some_and(|r| r[4].starts_with("signed as")),
        "{}",
        stdout(&o)
    );
    let q = t.path().join("on-base");
    fs::create_dir_all(q.join("app")).unwrap();
    fs::write(q.join("app/x"), "x\n").unwrap();
    let r3 = q.join("on.toml");
    fs::write(
        &r3,
        format!(
            "[image]\nname = \"example.com/on\"\nplatforms = [\"linux/amd64\", \"linux/arm64\"]\n\n\
             [base]\nimage = \"{base_ref}\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n"
        ),
    )
    .unwrap();
    run_ok(reg().arg("lock").arg(&r3));
    let pinned = |p: &str| {
        let l = ocibuild::lock::Lock::load(&q.join("on.lock"))
            .unwrap()
            .unwrap();
        let b = l.view(p).base.unwrap_or_else(|| panic!("{p}: no base"));
        b.index_digest.unwrap().to_string()
    };
    assert_eq!(pinned("linux/amd64"), first);
    assert_eq!(pinned("linux/arm64/v8"), first);
    let moved = push_base("2\n");
    assert_ne!(moved, first);
    let mut l = ocibuild::lock::Lock::load(&q.join("on.lock"))
        .unwrap()
        .unwrap();
    l.retain_platforms(&["linux/amd64".to_string()]);
    l.save(&q.join("on.lock")).unwrap();
    run_ok(reg().arg("lock").arg(&r3));
    assert_eq!(
        pinned("linux/arm64/v8"),
        first,
        "resolved through the amd64 section's index"
    );
    run_ok(reg().args(["lock", "--update"]).arg(&r3));
    assert_eq!(pinned("linux/amd64"), moved);
    assert_eq!(pinned("linux/arm64/v8"), moved);
}

#[test]
fn a_base_index_without_a_platform_is_named_with_it() {
    let s = shared();
    let cmd = || s.cmd();
    let r = &s.r;
    if !crate::common::require_tools_all(&["docker-registry"]) {
        return;
    }
    let t = tempdir();
    use crate::common::registry::{auth_file_for, start_registry, PASS};
    let a = start_registry(None);
    let auth = auth_file_for(t.path(), &[&a.addr], PASS);
    let reg = || {
        let mut c = cmd();
        c.env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"));
        c
    };
    // A base that is an index without linux/arm64: named with the platform.
    let amd_image = format!("{}/base/amd:1", a.addr);
    run_ok(
        reg()
            .args([
                "build",
                "--locked",
                "--push-only",
                "--platform",
                "linux/amd64",
            ])
            .args(["--push", &amd_image])
            .arg(r),
    );
    let q = t.path().join("q");
    fs::create_dir_all(q.join("app")).unwrap();
    fs::write(q.join("app/x"), "x\n").unwrap();
    let r2 = q.join("q.toml");
    fs::write(
        &r2,
        format!(
            "[image]\nname = \"example.com/q\"\nplatforms = [\"linux/amd64\", \"linux/arm64\"]\n\n\
             [base]\nimage = \"{amd_image}\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n"
        ),
    )
    .unwrap();
    let o = run(reg().arg("lock").arg(&r2));
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("error"))
        .unwrap_or_default();
    assert!(
        !o.status.success()
            && line.contains("linux/arm64")
            && line.contains(&amd_image)
            && line.contains("through the index"),
        "{}{err}",
        stdout(&o)
    );
}

/// `[python.archives."PLATFORM"]`: each platform's own interpreter archive, locked in its
/// section; the arm64 manifest the same as a one-platform recipe's with `archive` of it.
#[test]
fn an_interpreter_archive_per_platform() {
    let t = tempdir();
    let dir = t.path();
    let amd = crate::apt_recipe::pbs_archive_with(&dir.join("amd.tar.gz"), b"# amd64\n", false);
    let arm = crate::apt_recipe::pbs_archive_with(&dir.join("arm.tar.gz"), b"# arm64\n", false);
    let archives = format!(
        "[python.archives.\"linux/amd64\"]\nurl = \"amd.tar.gz\"\nsha256 = \"{amd}\"\nprefix = \
         \"/opt/python\"\nstrip = 1\n\n[python.archives.\"linux/arm64\"]\nurl = \"arm.tar.gz\"\n\
         sha256 = \"{arm}\"\nprefix = \"/opt/python\"\nstrip = 1\n"
    );
    let r = dir.join("py.toml");
    let head =
        "[image]\nname = \"example.com/py\"\nplatforms = [\"linux/amd64\", \"linux/arm64\"]\n\n";
    fs::write(&r, format!("{head}[python]\n\n{archives}")).unwrap();
    let cache = dir.join("cache");
    let cmd = || {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", &cache);
        c
    };
    let out = dir.join("img");
    let o = run_ok(cmd().args(["build", "--json", "-o"]).arg(&out).arg(&r));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for (i, marker) in [(0, "# amd64\n"), (1, "# arm64\n")] {
        let layers = doc["manifests"][i]["layers"].as_array().unwrap();
        let py = layers.iter().find(|l| l["name"] == "python").unwrap();
        let text = file_in_layer(
            &blob(&out, py["digest"].as_str().unwrap()),
            "opt/python/lib/python3.13/os.py",
        );
        assert_eq!(text, marker, "{doc:#}");
    }
    let lock = fs::read_to_string(dir.join("py.lock")).unwrap();
    assert!(
        lock.contains("[platform.\"linux/arm64/v8\".python]") && lock.contains("arm.tar.gz"),
        "{lock}"
    );
    let arm64 = doc["manifests"][1]["manifest"]
        .as_str()
        .unwrap()
        .to_string();

    // A one-platform recipe with that archive, and the arm64 section as its lock.
    let solo = dir.join("solo");
    fs::create_dir_all(&solo).unwrap();
    fs::copy(dir.join("arm.tar.gz"), solo.join("arm.tar.gz")).unwrap();
    fs::write(
        solo.join("py.toml"),
        format!(
            "[image]\nname = \"example.com/py\"\nplatform = \"linux/arm64\"\n\n[python]\narchive = \
             {{ url = \"arm.tar.gz\", sha256 = \"{arm}\", prefix = \"/opt/python\", strip = 1 }}\n"
        ),
    )
    .unwrap();
    let whole = ocibuild::lock::Lock::load(&dir.join("py.lock"))
        .unwrap()
        .unwrap();
    fs::write(solo.join("py.lock"), whole.view("linux/arm64/v8").to_toml()).unwrap();
    let o = run_ok(
        cmd()
            .args(["build", "--locked", "-q", "-o"])
            .arg(dir.join("solo.oci"))
            .arg(solo.join("py.toml")),
    );
    assert!(
        stdout(&o).trim().ends_with(&format!("@{arm64}")),
        "{}",
        stdout(&o)
    );

    // Errors: a platform without its archive, a platform the recipe does not build, one
    // `archive` for several platforms.
    let cases = [
        (
            format!("{head}[python.archives.\"linux/amd64\"]\nurl = \"amd.tar.gz\"\nsha256 = \"{amd}\"\nprefix = \"/opt/python\"\n"),
            "[python.archives]: no interpreter archive for linux/arm64/v8",
        ),
        (
            format!("{head}[python]\n\n{archives}\n[python.archives.\"linux/s390x\"]\nurl = \"amd.tar.gz\"\nsha256 = \"{amd}\"\nprefix = \"/opt/python\"\n"),
            "`linux/s390x` is not a platform the recipe builds",
        ),
        (
            format!("{head}[python]\narchive = {{ url = \"amd.tar.gz\", sha256 = \"{amd}\", prefix = \"/opt/python\" }}\n"),
            "give one per platform in [python.archives.\"PLATFORM\"]",
        ),
    ];
    for (text, want) in cases {
        fs::write(&r, text).unwrap();
        let o = run(cmd().arg("lock").arg(&r));
        assert!(
            !o.status.success() && stderr(&o).contains(want),
            "{want}: {}",
            stderr(&o)
        );
    }
}
