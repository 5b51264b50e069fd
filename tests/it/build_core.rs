//! Core build: golden digests, reproducibility across host conditions, layout atomicity, and
//! bad input. Drives the real `ocibuild` binary.

use crate::common;

use fs_err as fs;
use fs_err::os::unix::fs::symlink;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

use serde_json::Value;

/// A fixed app tree. `order` flips the creation order (so read_dir order differs) and `mode` is
/// the permission base the host gives new files (like a umask would).
fn make_tree(root: &Path, reverse: bool, file_mode: u32) {
    let mut files: Vec<(&str, &[u8], bool)> = vec![
        ("app/main.sh", b"#!/bin/sh\necho hello\n", true),
        ("app/data/values.txt", b"1 2 3\n", false),
        ("app/data/z-last.bin", &[0u8, 1, 2, 255], false),
        ("app/README", b"readme\n", false),
        ("app/skip.pyc", b"bytecode", false),
        ("app/nested/deeper/leaf.txt", b"leaf\n", false),
    ];
    if reverse {
        files.reverse();
    }
    for (p, content, exec) in files {
        let path = root.join(p);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        let mode = if exec { file_mode | 0o111 } else { file_mode };
        fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    symlink("../../etc/hostname", root.join("app/outside-link")).unwrap();
    symlink("data/values.txt", root.join("app/values-link")).unwrap();
    fs::write(root.join("app/.dockerignore"), "*.pyc\n").unwrap();
}

fn recipe_text(compression: &str) -> String {
    format!(
        r#"[image]
name = "example.com/ocibuild/golden"
tag = "v1"
compression = "{compression}"
platform = "linux/amd64"

[[layer]]
name = "app"
src = "app"
dest = "/srv/app"
owner = "1000:1000"

[config]
env = {{ GREETING = "hello", PATH = "/usr/bin:/bin" }}
entrypoint = ["/srv/app/main.sh"]
cmd = ["--verbose"]
workdir = "/srv/app"
user = "1000:1000"
labels = {{ "org.opencontainers.image.source" = "https://example.com/golden" }}
exposed-ports = ["8080", "53/udp"]
annotations = {{ "org.example.team" = "ml" }}
"#
    )
}

fn write_project(dir: &Path, compression: &str, reverse: bool, file_mode: u32) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    make_tree(dir, reverse, file_mode);
    let recipe = dir.join("golden.toml");
    fs::write(&recipe, recipe_text(compression)).unwrap();
    recipe
}

fn build_json(mut cmd: std::process::Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "build failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bad --json output ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn build_cmd(recipe: &Path, out: &Path, cache: &Path) -> std::process::Command {
    let mut c = common::ocibuild();
    c.arg("build")
        .arg(recipe)
        .arg("--output")
        .arg(out)
        .arg("--json")
        .env("OCIBUILD_CACHE", cache);
    c
}

/// Every blob file name under a layout, sorted.
fn blob_names(layout: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(layout.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

// Golden digests pin the determinism contract (now v6). A change here is a deliberate, visible
// event: bump layer::CONTRACT_VERSION when layer bytes change, and say why in the commit.
// (Updated, layers unchanged: when manifests gained `dev.ocibuild.recipe.digest`, the sha256
// of the recipe file's bytes, which these recipes now carry; for contract 3, which changed
// only gzip wheel layers, and contract 4, which added the rootfs layer to images with [apt],
// [python] or [accounts], through the `dev.ocibuild.contract` annotation; and contract 5, whose
// `dev.ocibuild.recipe.digest` is the recipe's identity, no longer its file's bytes; and
// contract 6, which gives scratch images without a PATH Docker's default one: this recipe sets
// its own, so only the `dev.ocibuild.contract` annotation changed.)
const GOLDEN_GZIP: &str = "sha256:7f0c0e77ccf51a2279e9934e0c1e19af673829486b722116b674914481e06e8c";
const GOLDEN_ZSTD: &str = "sha256:20436fb1c354e761e9b036e1e378c8681963efe8b999491da5f989fda035c7cb";
const GOLDEN_NONE: &str = "sha256:6f5d1d6fea4753fe58e5035fb2a9bfa898ec7bc9e2c1665846f22e852a4a9cee";

#[test]
fn golden_manifest_digests() {
    let mut changed = Vec::new();
    for (compression, golden) in [
        ("gzip", GOLDEN_GZIP),
        ("zstd", GOLDEN_ZSTD),
        ("none", GOLDEN_NONE),
    ] {
        let tmp = common::tempdir();
        let recipe = write_project(&tmp.path().join("p"), compression, false, 0o644);
        let v = build_json(build_cmd(
            &recipe,
            &tmp.path().join("out"),
            &tmp.path().join("cache"),
        ));
        if v["manifest"] != golden {
            changed.push(format!(
                "{compression}: expected {golden}, built {}",
                v["manifest"]
            ));
        }
    }
    assert!(
        changed.is_empty(),
        "golden manifest digests changed:\n{}",
        changed.join("\n")
    );
}

#[test]
fn reproducible_across_hosts_conditions() {
    let tmp = common::tempdir();
    // A: plain conditions, one thread, cold cache.
    let ra = write_project(&tmp.path().join("a/project"), "gzip", false, 0o644);
    let mut ca = build_cmd(&ra, &tmp.path().join("a/out"), &tmp.path().join("a/cache"));
    ca.current_dir(tmp.path().join("a"))
        .env("OCIBUILD_JOBS", "1")
        .env("TZ", "UTC")
        .env("LANG", "C");
    let a = build_json(ca);

    // B: another directory, files created in reverse order with other permission bits, odd
    // mtimes and atimes, other owners, a strict umask, another TZ and LANG, two threads, cold cache.
    let rb = write_project(&tmp.path().join("b/elsewhere/project"), "gzip", true, 0o600);
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_234_567_890);
    for entry in walk(&tmp.path().join("b/elsewhere/project/app")) {
        let f = fs::File::options().read(true).open(&entry).ok();
        if let Some(f) = f {
            let times = std::fs::FileTimes::new()
                .set_accessed(t)
                .set_modified(t + Duration::from_secs(77));
            let _ = f.set_times(times);
        }
        if common::is_root() {
            std::os::unix::fs::lchown(&entry, Some(4321), Some(8765)).unwrap();
        }
    }
    let mut cb = std::process::Command::new("sh");
    cb.arg("-c")
        .arg("umask 077; exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_ocibuild"))
        .arg("build")
        .arg(&rb)
        .arg("--output")
        .arg(tmp.path().join("b/out"))
        .arg("--json")
        .current_dir(tmp.path().join("b/elsewhere"))
        .env("OCIBUILD_CACHE", tmp.path().join("b/cache"))
        .env("OCIBUILD_JOBS", "2")
        .env("TZ", "Asia/Tokyo")
        .env("LANG", "de_DE.UTF-8")
        .env_remove("SOURCE_DATE_EPOCH");
    let b = build_json(cb);

    // C: B's project again with a warm cache and eight threads.
    let mut cc = build_cmd(&rb, &tmp.path().join("c/out"), &tmp.path().join("b/cache"));
    cc.env("OCIBUILD_JOBS", "8");
    let c = build_json(cc);
    assert_eq!(
        c["layers"][0]["cached"], true,
        "warm build should hit the cache: {c:#}"
    );

    for (name, v) in [("B", &b), ("C", &c)] {
        assert_eq!(
            a["manifest"], v["manifest"],
            "A vs {name}: manifest digest differs"
        );
        assert_eq!(
            a["config"], v["config"],
            "A vs {name}: config digest differs"
        );
        for i in 0..a["layers"].as_array().unwrap().len() {
            assert_eq!(
                a["layers"][i]["digest"], v["layers"][i]["digest"],
                "A vs {name}: layer {i}"
            );
            assert_eq!(
                a["layers"][i]["diffId"], v["layers"][i]["diffId"],
                "A vs {name}: layer {i}"
            );
        }
    }
    // The layouts hold the same blobs, byte for byte, and the same index.json.
    let (la, lb) = (tmp.path().join("a/out"), tmp.path().join("b/out"));
    assert_eq!(blob_names(&la), blob_names(&lb));
    assert_eq!(
        fs::read(la.join("index.json")).unwrap(),
        fs::read(lb.join("index.json")).unwrap()
    );
}

/// `--no-cache` computes the content key while the layer streams (no separate hashing pass);
/// it must be the very key a normal build computes, so its result serves later builds.
#[test]
fn a_no_cache_build_fills_the_cache_under_the_normal_content_key() {
    let tmp = common::tempdir();
    let recipe = write_project(&tmp.path().join("p"), "zstd", false, 0o644);
    let cache = tmp.path().join("cache");
    let mut first = build_cmd(&recipe, &tmp.path().join("o1"), &cache);
    first.arg("--no-cache");
    let a = build_json(first);
    assert_eq!(a["layers"][0]["cached"], false, "{a:#}");
    // New mtimes: the stat fingerprint misses, so the content key decides.
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    for entry in walk(&tmp.path().join("p/app")) {
        if let Ok(f) = fs::File::options().read(true).open(&entry) {
            let _ = f.set_times(std::fs::FileTimes::new().set_modified(t));
        }
    }
    let b = build_json(build_cmd(&recipe, &tmp.path().join("o2"), &cache));
    assert_eq!(
        b["layers"][0]["cached"], true,
        "the --no-cache result is found by content: {b:#}"
    );
    assert_eq!(a["manifest"], b["manifest"]);
    // A file whose content changed (same size) is not.
    fs::write(tmp.path().join("p/app/data/values.txt"), "1 2 4\n").unwrap();
    let c = build_json(build_cmd(&recipe, &tmp.path().join("o3"), &cache));
    assert_eq!(c["layers"][0]["cached"], false, "{c:#}");
    assert_ne!(a["manifest"], c["manifest"]);
}

#[test]
fn compression_level_is_recorded_and_keys_the_cache() {
    let tmp = common::tempdir();
    let recipe = write_project(&tmp.path().join("p"), "zstd", false, 0o644);
    let cache = tmp.path().join("cache");
    let manifest = |layout: &Path, v: &Value| -> Value {
        let d = v["manifest"].as_str().unwrap();
        serde_json::from_slice(&fs::read(blob(layout, d)).unwrap()).unwrap()
    };
    let o3 = tmp.path().join("o3");
    let l3 = build_json(build_cmd(&recipe, &o3, &cache));
    assert_eq!(l3["manifest"], GOLDEN_ZSTD, "level 3 is zstd's default");
    let text = fs::read_to_string(&recipe).unwrap();
    fs::write(
        &recipe,
        text.replace(
            "compression = \"zstd\"\n",
            "compression = \"zstd\"\ncompression-level = 1\n",
        ),
    )
    .unwrap();
    let o1 = tmp.path().join("o1");
    let l1 = build_json(build_cmd(&recipe, &o1, &cache));
    assert_eq!(
        l1["layers"][0]["cached"], false,
        "another level, another layer"
    );
    let (m3, m1) = (manifest(&o3, &l3), manifest(&o1, &l1));
    assert_eq!(
        m3["annotations"]["dev.ocibuild.compression"],
        "zstd;libzstd;level=3;mt"
    );
    assert_eq!(
        m1["annotations"]["dev.ocibuild.compression"],
        "zstd;libzstd;level=1;mt"
    );
    assert_ne!(m1["layers"][0]["digest"], m3["layers"][0]["digest"]);
    let diff_ids = |layout: &Path, m: &Value| -> Value {
        let c: Value = serde_json::from_slice(
            &fs::read(blob(layout, m["config"]["digest"].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        c["rootfs"]["diff_ids"].clone()
    };
    assert_eq!(diff_ids(&o1, &m1), diff_ids(&o3, &m3), "the same tar");
    // And the level-1 build repeats from its cache.
    let again = build_json(build_cmd(&recipe, &tmp.path().join("o1b"), &cache));
    assert_eq!(again["layers"][0]["cached"], true);
    assert_eq!(again["manifest"], l1["manifest"]);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn source_date_epoch_env_wins_and_changes_the_digest() {
    let tmp = common::tempdir();
    let recipe = write_project(&tmp.path().join("p"), "gzip", false, 0o644);
    let cache = tmp.path().join("cache");
    let base = build_json(build_cmd(&recipe, &tmp.path().join("o1"), &cache));
    let mut c = build_cmd(&recipe, &tmp.path().join("o2"), &cache);
    c.env("SOURCE_DATE_EPOCH", "1700000000");
    let dated = build_json(c);
    assert_ne!(base["manifest"], dated["manifest"]);
    let layout = tmp.path().join("o2");
    let manifest: Value = serde_json::from_slice(
        &fs::read(blob(&layout, dated["manifest"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.created"],
        "2023-11-14T22:13:20Z"
    );
    let config: Value = serde_json::from_slice(
        &fs::read(blob(&layout, dated["config"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    assert_eq!(config["created"], "2023-11-14T22:13:20Z");
    assert_eq!(config["history"][0]["created"], "2023-11-14T22:13:20Z");
}

fn blob(layout: &Path, digest: &str) -> PathBuf {
    layout
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

#[test]
fn layout_contents_and_config() {
    let tmp = common::tempdir();
    let recipe = write_project(&tmp.path().join("p"), "gzip", false, 0o644);
    let layout = tmp.path().join("out");
    let v = build_json(build_cmd(&recipe, &layout, &tmp.path().join("cache")));
    assert_eq!(
        fs::read_to_string(layout.join("oci-layout")).unwrap(),
        r#"{"imageLayoutVersion":"1.0.0"}"#
    );
    let index: Value =
        serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
    let m = &index["manifests"][0];
    assert_eq!(m["digest"], v["manifest"]);
    assert_eq!(m["annotations"]["org.opencontainers.image.ref.name"], "v1");
    assert_eq!(
        m["annotations"]["io.containerd.image.name"],
        "example.com/ocibuild/golden:v1"
    );
    assert_eq!(m["platform"]["architecture"], "amd64");
    let config: Value =
        serde_json::from_slice(&fs::read(blob(&layout, v["config"].as_str().unwrap())).unwrap())
            .unwrap();
    assert_eq!(
        config["config"]["Env"],
        serde_json::json!(["GREETING=hello", "PATH=/usr/bin:/bin"])
    );
    assert_eq!(
        config["config"]["ExposedPorts"],
        serde_json::json!({"53/udp": {}, "8080/tcp": {}})
    );
    assert_eq!(config["rootfs"]["diff_ids"][0], v["layers"][0]["diffId"]);
    assert_eq!(config["history"].as_array().unwrap().len(), 1);
    assert_eq!(config["created"], "1970-01-01T00:00:00Z");
    // The layer is written to disk once: the layout's blob is the store's (same filesystem here).
    {
        use std::os::unix::fs::MetadataExt;
        let digest = v["layers"][0]["digest"].as_str().unwrap();
        let in_layout = fs::metadata(blob(&layout, digest)).unwrap();
        let in_store = fs::metadata(blob(&tmp.path().join("cache"), digest)).unwrap();
        assert_eq!(
            (in_layout.dev(), in_layout.ino()),
            (in_store.dev(), in_store.ino())
        );
        assert_eq!(in_store.mode() & 0o777, 0o444, "store blobs are read-only");
    }
    // Canonical JSON: no whitespace, sorted keys.
    let raw = fs::read_to_string(layout.join("index.json")).unwrap();
    assert!(!raw.contains(": ") && !raw.contains('\n'), "{raw}");

    // The layer lists what the contract says: sorted, parents first, owner and modes by policy,
    // the ignored file absent, symlinks kept verbatim (also the one pointing outside).
    let listing = common::tar_listing(&blob(&layout, v["layers"][0]["digest"].as_str().unwrap()));
    let expected = [
        "d 0755 0:0 srv/",
        "d 0755 1000:1000 srv/app/",
        "f 0644 1000:1000 srv/app/.dockerignore",
        "f 0644 1000:1000 srv/app/README",
        "d 0755 1000:1000 srv/app/data/",
        "f 0644 1000:1000 srv/app/data/values.txt",
        "f 0644 1000:1000 srv/app/data/z-last.bin",
        "f 0755 1000:1000 srv/app/main.sh",
        "d 0755 1000:1000 srv/app/nested/",
        "d 0755 1000:1000 srv/app/nested/deeper/",
        "f 0644 1000:1000 srv/app/nested/deeper/leaf.txt",
        "l 0777 1000:1000 srv/app/outside-link -> ../../etc/hostname",
        "l 0777 1000:1000 srv/app/values-link -> data/values.txt",
    ];
    assert_eq!(listing, expected);

    // A second build into the same layout with another tag keeps both tags.
    let recipe2 = tmp.path().join("p/second.toml");
    fs::write(
        &recipe2,
        recipe_text("gzip").replace("tag = \"v1\"", "tag = \"v2\""),
    )
    .unwrap();
    build_json(build_cmd(&recipe2, &layout, &tmp.path().join("cache")));
    let index: Value =
        serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
    let tags: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["annotations"]["org.opencontainers.image.ref.name"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(tags, ["v1", "v2"]);
}

fn run_fail(args: &[&str], cwd: &Path, cache: &Path) -> String {
    let out: Output = common::ocibuild()
        .args(args)
        .current_dir(cwd)
        .env("OCIBUILD_CACHE", cache)
        .output()
        .unwrap();
    assert!(!out.status.success(), "expected failure for {args:?}");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "expected a one-line error, got: {err}");
    err
}

#[test]
fn bad_input_is_a_one_line_error_and_writes_nothing() {
    let tmp = common::tempdir();
    let dir = tmp.path();
    let cache = dir.join("cache");
    fs::create_dir_all(dir.join("app")).unwrap();
    fs::write(dir.join("app/ok.txt"), "ok").unwrap();
    let good =
        "[image]\nname = \"t\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n";

    fs::write(dir.join("malformed.toml"), "[image\nname = \"t\"\n").unwrap();
    let e = run_fail(&["build", "malformed.toml", "-o", "out1"], dir, &cache);
    assert!(e.contains("malformed.toml:1:"), "{e}");

    fs::write(
        dir.join("unknown.toml"),
        good.replace("dest = \"/app\"", "dest = \"/app\"\nsorce = \"x\""),
    )
    .unwrap();
    let e = run_fail(&["build", "unknown.toml", "-o", "out2"], dir, &cache);
    assert!(e.contains("unknown.toml:8:1") && e.contains("sorce"), "{e}");

    fs::write(
        dir.join("missing.toml"),
        good.replace("src = \"app\"", "src = \"nope\""),
    )
    .unwrap();
    let e = run_fail(&["build", "missing.toml", "-o", "out3"], dir, &cache);
    assert!(e.contains("missing.toml:6:7") && e.contains("nope"), "{e}");

    // An unreadable file: as root, drop to nobody so permission bits apply.
    fs::create_dir_all(dir.join("locked")).unwrap();
    fs::write(dir.join("locked/secret"), "s").unwrap();
    fs::set_permissions(
        dir.join("locked/secret"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    fs::write(
        dir.join("locked.toml"),
        good.replace("src = \"app\"", "src = \"locked\""),
    )
    .unwrap();
    for p in [dir.to_path_buf(), dir.join("locked")] {
        fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let mut cmd = if common::is_root() {
        let mut c = std::process::Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_ocibuild"),
        ]);
        c
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_ocibuild"))
    };
    let out = cmd
        .args(["build", "locked.toml", "-o", "out4"])
        .current_dir(dir)
        .env("OCIBUILD_CACHE", dir.join("nobody-cache"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("locked/secret") && err.to_lowercase().contains("permission denied"),
        "{err}"
    );

    for o in ["out1", "out2", "out3", "out4"] {
        assert!(
            !dir.join(o).exists(),
            "{o} must not exist after a failed build"
        );
    }
}

#[test]
fn refuses_to_overwrite_a_directory_that_is_not_a_layout() {
    let tmp = common::tempdir();
    let recipe = write_project(&tmp.path().join("p"), "gzip", false, 0o644);
    let out = tmp.path().join("precious");
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("notes.txt"), "keep me").unwrap();
    let o = build_cmd(&recipe, &out, &tmp.path().join("cache"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("neither empty nor an OCI image layout"));
    assert_eq!(
        fs::read_to_string(out.join("notes.txt")).unwrap(),
        "keep me"
    );
}

/// A name that is not UTF-8 cannot be put in a layer, but `ignore` can leave it out: patterns
/// match names as bytes (`?` takes an invalid byte as one character). Not ignored, it is a
/// one-line error naming the file.
#[test]
fn a_name_that_is_not_utf8_can_be_ignored() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = common::tempdir();
    let dir = tmp.path();
    let app = dir.join("app");
    fs::create_dir_all(&app).unwrap();
    fs::write(app.join("ok.txt"), "ok").unwrap();
    fs::write(app.join(std::ffi::OsStr::from_bytes(b"bad\xff")), "x").unwrap();
    let logs = app.join(std::ffi::OsStr::from_bytes(b"logs\xfe"));
    fs::create_dir_all(&logs).unwrap();
    fs::write(logs.join("today"), "x").unwrap();
    let recipe = |ignore: &str| {
        format!(
            "[image]\nname = \"t\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\n\
             dest = \"/app\"\nignore = {ignore}\n"
        )
    };
    fs::write(dir.join("ignored.toml"), recipe(r#"["bad?", "logs*"]"#)).unwrap();
    let layout = dir.join("out");
    let v = build_json(build_cmd(
        &dir.join("ignored.toml"),
        &layout,
        &dir.join("cache"),
    ));
    let listing = common::tar_listing(&blob(&layout, v["layers"][0]["digest"].as_str().unwrap()));
    assert_eq!(listing, ["d 0755 0:0 app/", "f 0644 0:0 app/ok.txt"]);

    // Only the directory ignored: the file is an error, and so is a file re-included beneath
    // the directory.
    for (name, ignore, bad) in [
        (
            "file.toml",
            r#"["logs*"]"#,
            app.join(std::ffi::OsStr::from_bytes(b"bad\xff")),
        ),
        (
            "reinclude.toml",
            r#"["bad*", "logs*", "!logs*/today"]"#,
            logs.join("today"),
        ),
    ] {
        fs::write(dir.join(name), recipe(ignore)).unwrap();
        let e = run_fail(&["build", name, "-o", "failed"], dir, &dir.join("cache"));
        assert!(e.contains("file name is not valid UTF-8"), "{e}");
        assert!(e.contains(&bad.display().to_string()), "{e}");
        assert!(!dir.join("failed").exists());
    }
}

/// Contract rule 20: a `scratch` image that sets no `PATH` gets Docker's default one; the
/// recipe's own `PATH` (the golden recipe's) is kept, and nothing else is added to `Env`.
#[test]
fn scratch_images_get_dockers_default_path_unless_the_recipe_sets_one() {
    let tmp = common::tempdir();
    let recipe = write_project(&tmp.path().join("p"), "gzip", false, 0o644);
    let text = recipe_text("gzip").replace(", PATH = \"/usr/bin:/bin\"", "");
    fs::write(&recipe, text).unwrap();
    let layout = tmp.path().join("out");
    let v = build_json(build_cmd(&recipe, &layout, &tmp.path().join("cache")));
    let config: Value =
        serde_json::from_slice(&fs::read(blob(&layout, v["config"].as_str().unwrap())).unwrap())
            .unwrap();
    assert_eq!(
        config["config"]["Env"],
        serde_json::json!([
            "GREETING=hello",
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        ])
    );
}

/// A whiteout name (`.wh.etc`, `.wh..wh..opq`) in a source tree would delete what the layers
/// below have: refused, naming the file, unless ignored.
#[test]
fn a_whiteout_name_in_a_source_tree_is_refused_unless_ignored() {
    let tmp = common::tempdir();
    let dir = tmp.path();
    fs::create_dir_all(dir.join("app/sub")).unwrap();
    fs::write(dir.join("app/ok.txt"), "ok").unwrap();
    fs::write(dir.join("app/sub/.wh..wh..opq"), "").unwrap();
    let recipe = |ignore: &str| {
        format!(
            "[image]\nname = \"t\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\n\
             dest = \"/app\"\nignore = {ignore}\n"
        )
    };
    fs::write(dir.join("plain.toml"), recipe("[]")).unwrap();
    let out = common::run(&mut build_cmd(
        &dir.join("plain.toml"),
        &dir.join("out"),
        &dir.join("cache"),
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("sub/.wh..wh..opq: a name starting with `.wh.` is a whiteout"),
        "{err}"
    );
    assert!(!dir.join("out").exists());
    fs::write(dir.join("ignored.toml"), recipe(r#"[".wh.*", "**/.wh.*"]"#)).unwrap();
    let v = build_json(build_cmd(
        &dir.join("ignored.toml"),
        &dir.join("out2"),
        &dir.join("cache"),
    ));
    let listing = common::tar_listing(&blob(
        &dir.join("out2"),
        v["layers"][0]["digest"].as_str().unwrap(),
    ));
    assert_eq!(
        listing,
        [
            "d 0755 0:0 app/",
            "f 0644 0:0 app/ok.txt",
            "d 0755 0:0 app/sub/"
        ]
    );
}
