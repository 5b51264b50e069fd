//! `ocibuild diff` and `ocibuild verify`: pairs of images built from small recipes with known
//! differences, and the exact reports (text and JSON) they must give. Offline; the docker://
//! test needs Debian's docker-registry.

use crate::common;

use fs_err as fs;
use fs_err::os::unix::fs::symlink;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use ocibuild::digest::Digest;
use serde_json::{json, Value};

fn recipe_text(compression: &str, greeting: &str) -> String {
    format!(
        r#"[image]
name = "example.com/audit/app"
tag = "v1"
compression = "{compression}"
platform = "linux/amd64"

[[layer]]
name = "app"
src = "app"
dest = "/srv/app"

[config]
env = {{ GREETING = "{greeting}" }}
cmd = ["/srv/app/run.sh"]
"#
    )
}

fn write_file(path: &Path, content: &str, mode: u32) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
    fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Variant `a`: main.py "print(1)", run.sh 0644, old.txt, link → main.py, GREETING=hello.
/// Variant `b`: main.py "print(2)", run.sh 0755, new.txt, link → run.sh, GREETING=hi.
fn project(dir: &Path, variant: char, compression: &str) -> PathBuf {
    let app = dir.join("app");
    fs::create_dir_all(&app).unwrap();
    let b = variant == 'b';
    write_file(
        &app.join("main.py"),
        if b { "print(2)\n" } else { "print(1)\n" },
        0o644,
    );
    write_file(
        &app.join("run.sh"),
        "echo run\n",
        if b { 0o755 } else { 0o644 },
    );
    if b {
        write_file(&app.join("new.txt"), "new\n", 0o644);
    } else {
        write_file(&app.join("old.txt"), "old\n", 0o644);
    }
    symlink(if b { "run.sh" } else { "main.py" }, app.join("link")).unwrap();
    let recipe = dir.join("app.toml");
    fs::write(
        &recipe,
        recipe_text(compression, if b { "hi" } else { "hello" }),
    )
    .unwrap();
    recipe
}

/// What `build --json` says about a one-layer image.
#[derive(Debug)]
struct Built {
    manifest: String,
    config: String,
    layer: String,
    diff_id: String,
}

fn build(recipe: &Path, out: &str, epoch: Option<&str>) -> Built {
    let mut cmd = common::ocibuild();
    cmd.current_dir(recipe.parent().unwrap())
        .arg("build")
        .arg(recipe)
        .args(["-o", out, "--json"]);
    if let Some(e) = epoch {
        cmd.env("SOURCE_DATE_EPOCH", e);
    }
    let v: Value = serde_json::from_slice(&common::run_ok(&mut cmd).stdout).unwrap();
    let s = |v: &Value| v.as_str().unwrap().to_string();
    Built {
        manifest: s(&v["manifest"]),
        config: s(&v["config"]),
        layer: s(&v["layers"][0]["digest"]),
        diff_id: s(&v["layers"][0]["diffId"]),
    }
}

fn ocibuild_in(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = common::ocibuild();
    cmd.current_dir(dir).args(args);
    common::run(&mut cmd)
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn short(content: &str) -> String {
    format!("sha256:{}…", &Digest::of(content.as_bytes()).hex()[..12])
}

fn side(which: &str, image: &str, b: &Built) -> String {
    format!(
        "{which}: {image} (manifest {}, config {}, 1 layers)\n",
        b.manifest, b.config
    )
}

/// The recipe identity of `text` (a recipe whose one layer's `src` is `app`), computed by the
/// library, as the `dev.ocibuild.recipe.digest` annotation records it.
fn identity(text: &str) -> Digest {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir_all(d.path().join("app")).unwrap();
    ocibuild::recipe::parse(text, Path::new("app.toml"), d.path())
        .unwrap()
        .identity()
        .unwrap()
}

/// The manifest line for recipes that define different images: the
/// `dev.ocibuild.recipe.digest` annotation is the recipe's identity (its parsed,
/// image-defining parts), computed here by the library from the text.
fn recipe_note(a: &str, b: &str) -> String {
    format!(
        "manifest annotations[dev.ocibuild.recipe.digest]: {} → {}\n",
        identity(a),
        identity(b)
    )
}

fn entry(size: u64, content: &str) -> Value {
    json!({
        "kind": "file", "mode": "0644", "uid": 0, "gid": 0, "uname": "", "gname": "",
        "mtime": "0", "size": size, "content": Digest::of(content.as_bytes()).to_string(),
        "encoding": "ustar",
    })
}

#[test]
fn diff_reports_content_mode_added_removed_symlink_and_env() {
    let dir = common::test_dir("w");
    let ra = project(&dir.join("a"), 'a', "gzip");
    let rb = project(&dir.join("b"), 'b', "gzip");
    let a = build(&ra, "../a.oci", None);
    let b = build(&rb, "../b.oci", None);

    let out = ocibuild_in(&dir, &["diff", "a.oci", "oci:b.oci:v1"]);
    assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let expected = side("a", "oci:a.oci", &a)
        + &side("b", "oci:b.oci:v1", &b)
        + &format!("manifest digest: {} → {}\n", a.manifest, b.manifest)
        + &recipe_note(&recipe_text("gzip", "hello"), &recipe_text("gzip", "hi"))
        + &format!("config digest: {} → {}\n", a.config, b.config)
        + "config Env[GREETING]: hello → hi\n"
        + &format!("config rootfs.diff_ids[0]: {} → {}\n", a.diff_id, b.diff_id)
        + &format!(
            "layer 1 (app): differs: digest {} → {}, diffId {} → {}\n",
            a.layer, b.layer, a.diff_id, b.diff_id
        )
        + "layer 1 (app): ~ srv/app/link: link main.py → run.sh\n"
        + &format!(
            "layer 1 (app): ~ srv/app/main.py: content {} → {}\n",
            short("print(1)\n"),
            short("print(2)\n")
        )
        // A small text file's change: its unified diff, indented.
        + "    --- a/srv/app/main.py\n"
        + "    +++ b/srv/app/main.py\n"
        + "    @@ -1 +1 @@\n"
        + "    -print(1)\n"
        + "    +print(2)\n"
        + "layer 1 (app): + srv/app/new.txt (file, 4 B, mode 0644)\n"
        + "layer 1 (app): - srv/app/old.txt (file, 4 B, mode 0644)\n"
        + "layer 1 (app): ~ srv/app/run.sh: mode 0644 → 0755\n"
        + "result: different\n";
    assert_eq!(common::stdout(&out), expected);

    // The same with --semantic: the digests that only follow from the content go.
    let out = ocibuild_in(&dir, &["diff", "--semantic", "--json", "a.oci", "b.oci"]);
    assert_eq!(code(&out), 1);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected = json!({
        "schema": "ocibuild-diff/2",
        "semantic": true,
        "result": "different",
        "a": {"image": "oci:a.oci", "manifest": a.manifest, "config": a.config, "layers": 1},
        "b": {"image": "oci:b.oci", "manifest": b.manifest, "config": b.config, "layers": 1},
        "packages": [],
        "manifest": [{
            "field": "annotations[dev.ocibuild.recipe.digest]",
            "a": identity(&recipe_text("gzip", "hello")).to_string(),
            "b": identity(&recipe_text("gzip", "hi")).to_string(),
        }],
        "config": [{"field": "Env[GREETING]", "a": "hello", "b": "hi"}],
        "layers": [{
            "index": 1,
            "name": "app",
            "status": "different",
            "a": {"digest": a.layer, "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "diffId": a.diff_id},
            "b": {"digest": b.layer, "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "diffId": b.diff_id},
            "fields": [],
            "order": null,
            "files": [
                {"path": "srv/app/link", "change": "changed",
                 "attributes": [{"attribute": "link", "a": "main.py", "b": "run.sh"}]},
                {"path": "srv/app/main.py", "change": "changed",
                 "attributes": [{"attribute": "content",
                    "a": Digest::of(b"print(1)\n").to_string(),
                    "b": Digest::of(b"print(2)\n").to_string()}],
                 "text": "--- a/srv/app/main.py\n+++ b/srv/app/main.py\n@@ -1 +1 @@\n-print(1)\n+print(2)\n"},
                {"path": "srv/app/new.txt", "change": "added", "entry": entry(4, "new\n")},
                {"path": "srv/app/old.txt", "change": "removed", "entry": entry(4, "old\n")},
                {"path": "srv/app/run.sh", "change": "changed",
                 "attributes": [{"attribute": "mode", "a": "0644", "b": "0755"}]},
            ],
        }],
        "notes": [],
    });
    assert_eq!(v, expected);

    // Identical: exit 0, nothing but the sides and the result.
    let out = ocibuild_in(&dir, &["diff", "a.oci", "a.oci"]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        common::stdout(&out),
        side("a", "oci:a.oci", &a) + &side("b", "oci:a.oci", &a) + "result: identical\n"
    );
}

/// The `dev.ocibuild.compression` annotation of a layout's manifest.
fn compression_note(layout: &Path, manifest: &str) -> String {
    let m: Value = serde_json::from_slice(
        &fs::read(layout.join("blobs/sha256").join(&manifest[7..])).unwrap(),
    )
    .unwrap();
    m["annotations"]["dev.ocibuild.compression"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn diff_gzip_against_zstd_is_the_same_content_in_another_blob() {
    let dir = common::test_dir("w");
    let ra = project(&dir.join("a"), 'a', "gzip");
    let a = build(&ra, "../gz.oci", None);
    fs::write(&ra, recipe_text("zstd", "hello")).unwrap();
    let b = build(&ra, "../zst.oci", None);
    assert_eq!(a.diff_id, b.diff_id);
    assert_eq!(a.config, b.config);
    let out = ocibuild_in(&dir, &["diff", "gz.oci", "zst.oci"]);
    assert_eq!(code(&out), 1);
    let expected = side("a", "oci:gz.oci", &a)
        + &side("b", "oci:zst.oci", &b)
        + &format!("manifest digest: {} → {}\n", a.manifest, b.manifest)
        + &format!(
            "manifest annotations[dev.ocibuild.compression]: {} → {}\n",
            compression_note(&dir.join("gz.oci"), &a.manifest),
            compression_note(&dir.join("zst.oci"), &b.manifest)
        )
        + &recipe_note(&recipe_text("gzip", "hello"), &recipe_text("zstd", "hello"))
        + &format!(
            "layer 1 (app): same content (diff_id {}), another blob: mediaType \
             application/vnd.oci.image.layer.v1.tar+gzip → application/vnd.oci.image.layer.v1.tar+zstd, \
             digest {} → {}\n",
            a.diff_id, a.layer, b.layer
        )
        + "result: different\n";
    assert_eq!(common::stdout(&out), expected);
    // Compression is not something --semantic ignores.
    let out = ocibuild_in(&dir, &["diff", "--semantic", "gz.oci", "zst.oci"]);
    assert_eq!(code(&out), 1);
}

#[test]
fn diff_source_date_epoch_only_is_semantically_equivalent() {
    let dir = common::test_dir("w");
    let r = project(&dir.join("a"), 'a', "gzip");
    let a = build(&r, "../e0.oci", None);
    let b = build(&r, "../e100.oci", Some("100"));
    let out = ocibuild_in(&dir, &["diff", "e0.oci", "e100.oci"]);
    assert_eq!(code(&out), 1);
    let text = common::stdout(&out);
    for line in [
        "manifest annotations[org.opencontainers.image.created]: 1970-01-01T00:00:00Z → 1970-01-01T00:01:40Z\n",
        "config created: 1970-01-01T00:00:00Z → 1970-01-01T00:01:40Z\n",
        "layer 1 (app): ~ srv/app/main.py: mtime 0 → 100\n",
        "layer 1 (app): ~ srv/app/link: mtime 0 → 100\n",
        "layer 1 (app): ~ srv: mtime 0 → 100\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    let out = ocibuild_in(&dir, &["diff", "--semantic", "e0.oci", "e100.oci"]);
    assert_eq!(code(&out), 0, "{}", common::stdout(&out));
    assert_eq!(
        common::stdout(&out),
        side("a", "oci:e0.oci", &a)
            + &side("b", "oci:e100.oci", &b)
            + "layer 1 (app): equivalent (only timestamps, header encoding or entry order differ)\n"
            + "result: equivalent (timestamps, header encoding and entry order ignored)\n"
    );
    let out = ocibuild_in(
        &dir,
        &["diff", "--semantic", "--json", "e0.oci", "e100.oci"],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"], "equivalent");
    assert_eq!(v["layers"][0]["status"], "equivalent");
    assert_eq!(v["layers"][0]["files"], json!([]));
}

#[test]
fn diff_reads_archives_and_errors_exit_2() {
    let dir = common::test_dir("w");
    let r = project(&dir.join("a"), 'a', "zstd");
    let a = build(&r, "../a.oci", None);
    build(&r, "oci-archive:../a-oci.tar", None);
    build(&r, "docker-archive:../a-docker.tar", None);
    let out = ocibuild_in(&dir, &["diff", "a.oci", "oci-archive:a-oci.tar"]);
    assert_eq!(code(&out), 0, "{}", common::stdout(&out));
    // A docker-archive has no manifest and stores layers uncompressed: the config and the
    // diff_ids are what can be compared, and they are the same.
    let out = ocibuild_in(&dir, &["diff", "oci:a.oci", "docker-archive:a-docker.tar"]);
    assert_eq!(code(&out), 0, "{}", common::stdout(&out));
    assert_eq!(
        common::stdout(&out),
        side("a", "oci:a.oci", &a)
            + &format!(
                "b: docker-archive:a-docker.tar (manifest none, config {}, 1 layers)\n",
                a.config
            )
            + "layer 1 (app): identical\n"
            + "note: a docker-archive holds no manifest: only the config and the layers are compared\n"
            + "result: identical\n"
    );
    let out = ocibuild_in(&dir, &["diff", "a.oci", "missing.oci"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: oci:missing.oci: no OCI image layout there (missing.oci/index.json is missing)\n"
    );
    let out = ocibuild_in(&dir, &["diff", "a.oci", &a.manifest]);
    assert_eq!(code(&out), 2);
}

#[test]
fn verify_passes_on_a_clean_rebuild_and_explains_changes() {
    let dir = common::test_dir("w");
    let r = project(&dir.join("p"), 'a', "gzip");
    let p = dir.join("p");
    let a = build(&r, "app.oci", None);
    build(&r, "oci-archive:app.tar", None);

    // Default target: ./app.oci, the recipe's tag.
    let out = ocibuild_in(&p, &["verify", "app.toml"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        common::stdout(&out),
        format!(
            "rebuilt manifest {m}\ntarget  manifest {m} (oci:app.oci:v1)\nreproduced: the rebuild is bit-identical\n",
            m = a.manifest
        )
    );
    for against in ["oci-archive:app.tar", a.manifest.as_str()] {
        let out = ocibuild_in(&p, &["verify", "app.toml", "--against", against]);
        assert_eq!(code(&out), 0, "{against}: {}", common::stdout(&out));
    }

    // One input's content changes after the build.
    write_file(&p.join("app/main.py"), "print(3)\n", 0o644);
    let c = build(&r, "changed.oci", None);
    let out = ocibuild_in(&p, &["verify", "app.toml"]);
    assert_eq!(code(&out), 1);
    assert_eq!(
        common::stdout(&out),
        format!("rebuilt manifest {}\n", c.manifest)
            + &format!("target  manifest {} (oci:app.oci:v1)\n", a.manifest)
            + "NOT reproduced: the rebuild differs (a = target, b = rebuild):\n"
            + &format!("manifest digest: {} → {}\n", a.manifest, c.manifest)
            + &format!("config digest: {} → {}\n", a.config, c.config)
            + &format!("config rootfs.diff_ids[0]: {} → {}\n", a.diff_id, c.diff_id)
            + &format!(
                "layer 1 (app): differs: digest {} → {}, diffId {} → {}\n",
                a.layer, c.layer, a.diff_id, c.diff_id
            )
            + &format!(
                "layer 1 (app): ~ srv/app/main.py: content {} → {}\n",
                short("print(1)\n"),
                short("print(3)\n")
            )
            + "    --- a/srv/app/main.py\n    +++ b/srv/app/main.py\n    @@ -1 +1 @@\n"
            + "    -print(1)\n    +print(3)\n"
            + "compared with tag `v1` of app.oci (the recipe's [image] tag)\n"
    );
    // The digest alone: compared, not explained.
    let out = ocibuild_in(&p, &["verify", "app.toml", "--against", &a.manifest]);
    assert_eq!(code(&out), 1);
    assert!(common::stdout(&out).contains("NOT reproduced: the manifest digests differ"));

    // Its mode changes instead.
    write_file(&p.join("app/main.py"), "print(1)\n", 0o755);
    let out = ocibuild_in(&p, &["verify", "app.toml", "--json"]);
    assert_eq!(code(&out), 1);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["reproduced"], false);
    assert_eq!(v["targetManifest"], a.manifest);
    assert_eq!(
        v["diff"]["layers"][0]["files"],
        json!([{"path": "srv/app/main.py", "change": "changed",
                "attributes": [{"attribute": "mode", "a": "0644", "b": "0755"}]}])
    );
    fs::set_permissions(
        p.join("app/main.py"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let out = ocibuild_in(
        &p,
        &["verify", "app.toml", "--against", "oci-archive:app.tar"],
    );
    assert_eq!(code(&out), 0, "{}", common::stdout(&out));

    // The compression setting changes.
    fs::write(&r, recipe_text("zstd", "hello")).unwrap();
    let out = ocibuild_in(&p, &["verify", "app.toml"]);
    assert_eq!(code(&out), 1);
    let text = common::stdout(&out);
    assert!(
        text.contains(&format!(
            "layer 1 (app): same content (diff_id {}), another blob: mediaType \
             application/vnd.oci.image.layer.v1.tar+gzip → application/vnd.oci.image.layer.v1.tar+zstd",
            a.diff_id
        )),
        "{text}"
    );
    assert!(
        text.contains("manifest annotations[dev.ocibuild.compression]: "),
        "{text}"
    );
    // The recipe changed: said first, before what differs.
    let line = format!(
        "the image was built from another recipe: it records recipe {}, this recipe is {}\n\
         NOT reproduced: the rebuild differs",
        identity(&recipe_text("gzip", "hello")),
        identity(&recipe_text("zstd", "hello"))
    );
    assert!(text.contains(&line), "{text}");
}

#[test]
fn diff_a_registry_image_against_its_layout() {
    if !common::require_tool("docker-registry") {
        return;
    }
    use common::registry::{auth_file, start_registry, PASS};
    let reg = start_registry(None);
    let dir = common::test_dir("w");
    let r = project(&dir.join("a"), 'a', "gzip");
    build(&r, "../a.oci", None);
    let registries = dir.join("registries.toml");
    fs::write(
        &registries,
        format!(
            "[[registry]]\nname = \"{}\"\ninsecure-http = true\n",
            reg.addr
        ),
    )
    .unwrap();
    let auth = auth_file(&dir, &reg.addr, PASS);
    let remote = format!("{}/audit/app:v1", reg.addr);
    let with_registry = |args: &[&str]| {
        let mut cmd = common::ocibuild();
        cmd.current_dir(&dir)
            .arg("--registries")
            .arg(&registries)
            .env("REGISTRY_AUTH_FILE", &auth)
            .args(args);
        common::run(&mut cmd)
    };
    common::assert_success(&with_registry(&["push", "a.oci", &remote]), "push");
    let docker = format!("docker://{remote}");
    let out = with_registry(&["diff", &docker, "a.oci"]);
    assert_eq!(
        code(&out),
        0,
        "{}{}",
        common::stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(common::stdout(&out).ends_with("result: identical\n"));
    // And verify against the registry copy.
    let out = with_registry(&["verify", "a/app.toml", "--against", &docker]);
    assert_eq!(
        code(&out),
        0,
        "{}{}",
        common::stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `verify --tag` compares with the tag `build --tag` wrote; without it, the recipe's tag where
/// the layout holds it, else the layout's only image of the recipe's name.
#[test]
fn verify_tag_follows_build_tag() {
    let dir = common::test_dir("w");
    project(&dir.join("p"), 'a', "gzip");
    let p = dir.join("p");
    common::run_ok(
        common::ocibuild()
            .current_dir(&p)
            .args(["build", "app.toml", "--tag", "v2"]),
    );
    let out = ocibuild_in(&p, &["verify", "app.toml", "--tag", "v2"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let text = common::stdout(&out);
    assert!(text.contains("(oci:app.oci:v2)\nreproduced"), "{text}");

    // No `v1` (the recipe's tag) in the layout, one image of the recipe's name: that one.
    let out = ocibuild_in(&p, &["verify", "app.toml"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(common::stdout(&out).contains("(oci:app.oci:v2)\nreproduced"));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        err.contains("comparing with oci:app.oci:v2 (the layout has no tag `v1`, the recipe's; `v2` is its only image of "),
        "{err}"
    );
    // A tag that is not there; --tag beside an --against that names one image.
    let out = ocibuild_in(&p, &["verify", "app.toml", "--tag", "v9"]);
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("v2"));
    let out = ocibuild_in(
        &p,
        &[
            "verify",
            "app.toml",
            "--tag",
            "v2",
            "--against",
            "oci:app.oci:v2",
        ],
    );
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("already names one image"));

    // Two tags of the image and none the recipe's: which one is for the user to say.
    write_file(&p.join("app/main.py"), "print(3)\n", 0o644);
    common::run_ok(
        common::ocibuild()
            .current_dir(&p)
            .args(["build", "app.toml", "--tag", "v3"]),
    );
    let out = ocibuild_in(&p, &["verify", "app.toml"]);
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        err.contains("has no image tagged `v1` (the recipe's [image] tag) but 2 of ")
            && err.contains(": v2, v3; give one with --tag TAG"),
        "{err}"
    );

    // The recipe's tag there: it is the default. NOT reproduced says which tag it compared
    // and which others the layout holds.
    common::run_ok(
        common::ocibuild()
            .current_dir(&p)
            .args(["build", "app.toml"]),
    );
    let out = ocibuild_in(&p, &["verify", "app.toml"]);
    assert_eq!(code(&out), 0, "{}", common::stdout(&out));
    assert!(common::stdout(&out).contains("(oci:app.oci:v1)\nreproduced"));
    let out = ocibuild_in(&p, &["verify", "app.toml", "--tag", "v2"]);
    assert_eq!(code(&out), 1);
    let text = common::stdout(&out);
    assert!(
        text.contains("compared with tag `v2` of app.oci (--tag)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            " at v1, v3: `ocibuild verify app.toml --tag TAG` compares with one of them\n"
        ),
        "{text}"
    );
}
