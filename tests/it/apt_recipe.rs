//! `[apt]` and `[python]` through the recipe, the lock and the CLI, against an apt repository
//! the test generates and serves on 127.0.0.1 (tests/aptfix), and interpreter archives it makes.

use crate::aptfix;
use crate::common;

use fs_err as fs;
use std::path::{Path, PathBuf};

use aptfix::{fixture, python_universe as universe, Fixture, CERT_A, CERT_B};
use common::{ocibuild, run, run_ok, stdout, tar_listing, tempdir};
use serde_json::Value;

fn recipe(dir: &Path, f: &Fixture, packages: &[&str], key: &Path) -> PathBuf {
    let list: Vec<String> = packages.iter().map(|p| format!("{p:?}")).collect();
    let text = format!(
        r#"[image]
name = "example.com/apt-test"
platform = "linux/amd64"

{source}
[apt]
packages = [{list}]

[python]
version = "3.12"
"#,
        source = aptfix::source_toml(f, key),
        list = list.join(", ")
    );
    let p = dir.join("app.toml");
    fs::write(&p, text).unwrap();
    p
}

fn build_json(recipe: &Path, out: &Path, extra: &[&str]) -> Value {
    let o = run_ok(
        ocibuild()
            .args(["build", "--json", "-o"])
            .arg(out)
            .arg(recipe)
            .args(extra),
    );
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn layer_blob(layout: &Path, v: &Value, i: usize) -> PathBuf {
    let d = v["layers"][i]["digest"].as_str().unwrap();
    layout
        .join("blobs/sha256")
        .join(d.trim_start_matches("sha256:"))
}

#[test]
fn apt_layer_lock_interpreter_and_ca_bundle() {
    let f = fixture(&universe(), false);
    let t = tempdir();
    let r = recipe(t.path(), &f, &["python3", "ca-certificates"], &f.key);
    let out = t.path().join("img");
    let v = build_json(&r, &out, &[]);

    // The interpreter, found from the packages without running anything.
    let py = &v["python"];
    assert_eq!(py["version"], "3.12");
    assert_eq!(py["abi"], "cp312");
    assert_eq!(py["executable"], "/usr/bin/python3.12");
    assert_eq!(py["glibc"], "2.36");
    assert_eq!(py["machine"], "x86_64");
    assert_eq!(py["purelib"], "/usr/local/lib/python3.12/dist-packages");
    assert_eq!(py["scripts"], "/usr/local/bin");

    // The lock pins exactly the resolved packages, sorted.
    let lock = fs::read_to_string(t.path().join("app.lock")).unwrap();
    let names: Vec<&str> = lock
        .lines()
        .filter_map(|l| l.strip_prefix("name = "))
        .collect();
    assert_eq!(
        names,
        [
            "\"ca-certificates\"",
            "\"libc6\"",
            "\"python3\"",
            "\"python3.12-minimal\""
        ]
    );
    assert!(
        lock.contains("requests = [\"ca-certificates\", \"python3\"]"),
        "{lock}"
    );

    // The layer: the packages' files, status.d records, and the CA bundle their postinst would
    // have written.
    assert_eq!(v["layers"][0]["name"], "apt");
    assert_eq!(v["layers"][0]["cached"], false);
    let blob = layer_blob(&out, &v, 0);
    let listing = tar_listing(&blob);
    for want in [
        "f 0755 0:0 usr/bin/python3.12",
        "l 0777 0:0 usr/bin/python3 -> python3.12",
        "f 0644 0:0 var/lib/dpkg/status.d/python3",
        "f 0644 0:0 var/lib/dpkg/status.d/libc6",
        "f 0644 0:0 etc/ssl/certs/ca-certificates.crt",
    ] {
        assert!(
            listing.iter().any(|l| l == want),
            "{want} not in {listing:#?}"
        );
    }
    let unpack = t.path().join("unpacked");
    fs::create_dir(&unpack).unwrap();
    run_ok(
        std::process::Command::new("tar")
            .arg("-xf")
            .arg(&blob)
            .arg("-C")
            .arg(&unpack),
    );
    assert_eq!(
        fs::read_to_string(unpack.join("etc/ssl/certs/ca-certificates.crt")).unwrap(),
        format!("{CERT_A}{CERT_B}\n")
    );
    let status = fs::read_to_string(unpack.join("var/lib/dpkg/status.d/python3")).unwrap();
    assert!(status.contains("Package: python3\n") && status.contains("Version: 3.12.1-1\n"));

    // Rebuild with the archive gone (every URL now 404s): the lock answers the request, the
    // layer comes from the cache, and even without the cache the .debs come from the store.
    fs::rename(&f.repo.root, f.repo.root.with_extension("gone")).unwrap();
    let v2 = build_json(&r, &t.path().join("img2"), &[]);
    assert_eq!(v2["layers"][0]["cached"], true);
    assert_eq!(v2["manifest"], v["manifest"]);
    let v3 = build_json(&r, &t.path().join("img3"), &["--no-cache", "-j", "1"]);
    assert_eq!(v3["layers"][0]["cached"], false);
    assert_eq!(v3["manifest"], v["manifest"]);
    // The .debs read on three threads: the same layer.
    let v4 = build_json(&r, &t.path().join("img3j"), &["--no-cache", "-j", "3"]);
    assert_eq!(v4["manifest"], v["manifest"]);
    fs::rename(f.repo.root.with_extension("gone"), &f.repo.root).unwrap();

    // A recipe edit: --locked refuses and names the change; a plain build re-resolves.
    recipe(
        t.path(),
        &f,
        &["python3", "ca-certificates", "tool"],
        &f.key,
    );
    let o = run(ocibuild()
        .args(["build", "--locked", "-o"])
        .arg(t.path().join("img4"))
        .arg(&r));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("package `tool` added") && err.contains("ocibuild lock"),
        "{err}"
    );
    assert!(!t.path().join("img4").exists());
    let o = run_ok(ocibuild().arg("lock").arg(&r));
    assert!(
        stdout(&o).contains("apt 5 packages (resolved)"),
        "{}",
        stdout(&o)
    );
    let o = run_ok(ocibuild().arg("lock").arg(&r));
    assert!(
        stdout(&o).contains("apt 5 packages (unchanged)"),
        "{}",
        stdout(&o)
    );
    let v5 = build_json(&r, &t.path().join("img5"), &["--locked"]);
    assert_ne!(v5["manifest"], v["manifest"]);
}

#[test]
fn apt_bad_input_is_a_clear_error_and_writes_nothing() {
    let f = fixture(&universe(), false);
    let cases: &[(&[&str], bool, &str)] = &[
        (
            &["pyhton3"],
            false,
            "unknown package `pyhton3` (did you mean python3",
        ),
        (
            &["needs-missing"],
            false,
            "unsatisfiable dependency: needs-missing → tool (>= 2.0)",
        ),
        (&["python3"], true, "bad signature"),
    ];
    for (packages, wrong_key, want) in cases {
        let t = tempdir();
        let key = if *wrong_key { &f.other_key } else { &f.key };
        let r = recipe(t.path(), &f, packages, key);
        let out = t.path().join("img");
        let o = run(ocibuild().args(["build", "-o"]).arg(&out).arg(&r));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{packages:?}");
        assert!(err.contains(want), "{packages:?}: {err}");
        assert!(!out.exists(), "{packages:?}: output written");
        assert!(
            !t.path().join("app.lock").exists(),
            "{packages:?}: lock written"
        );
    }
}

/// Two .debs changed in the store under seals that still hold (a byte flipped in place, the
/// mtime put back), read on three threads: the layer's own check against the lock names the
/// first of them in package order, whichever thread read it, and nothing is written.
#[test]
fn changed_debs_read_in_parallel_name_the_first_in_package_order() {
    use std::io::{Read, Seek, SeekFrom, Write};
    let f = fixture(&universe(), false);
    let t = tempdir();
    let store = t.path().join("store");
    let r = recipe(t.path(), &f, &["python3", "ca-certificates"], &f.key);
    let build = |out: &str, extra: &[&str]| {
        run(ocibuild()
            .env("OCIBUILD_CACHE", &store)
            .args(["build", "-o"])
            .arg(t.path().join(out))
            .arg(&r)
            .args(extra))
    };
    common::assert_success(&build("img", &[]), "first build");
    let lock: toml::Value =
        toml::from_str(&fs::read_to_string(t.path().join("app.lock")).unwrap()).unwrap();
    let mut packages: Vec<(String, String)> = lock["apt"]["package"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["sha256"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("sha256:")
                    .to_string(),
            )
        })
        .collect();
    packages.sort();
    let names: Vec<&str> = packages.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["ca-certificates", "libc6", "python3", "python3.12-minimal"]
    );
    // The last package first, then the second: the error must still be the second's.
    for (_, hex) in [&packages[3], &packages[1]] {
        let blob = store.join("blobs/sha256").join(hex);
        let modified = fs::metadata(&blob).unwrap().modified().unwrap();
        let mut file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&blob)
            .unwrap();
        let mid = file.metadata().unwrap().len() / 2;
        let mut byte = [0u8];
        file.seek(SeekFrom::Start(mid)).unwrap();
        file.read_exact(&mut byte).unwrap();
        file.seek(SeekFrom::Start(mid)).unwrap();
        file.write_all(&[byte[0] ^ 0xff]).unwrap();
        file.set_times(std::fs::FileTimes::new().set_modified(modified))
            .unwrap();
    }
    let o = build("img2", &["--no-cache", "--offline", "-j", "3"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("package libc6 "), "{err}");
    assert!(err.contains("expected sha256"), "{err}");
    assert!(!err.contains("python3.12-minimal"), "{err}");
    assert!(!t.path().join("img2").exists());
}

/// `[python] version` that the interpreter found does not have: the error is placed at the
/// recipe's `version` (file:line:col), names both versions and the interpreter, writes nothing.
#[test]
fn a_python_version_mismatch_is_placed_at_the_recipes_version() {
    let f = fixture(&universe(), false);
    let t = tempdir();
    let r = recipe(t.path(), &f, &["python3"], &f.key);
    let text = fs::read_to_string(&r)
        .unwrap()
        .replace("version = \"3.12\"", "version = \"3.11\"");
    fs::write(&r, &text).unwrap();
    let line = text
        .lines()
        .position(|l| l == "version = \"3.11\"")
        .unwrap()
        + 1;
    let out = t.path().join("img");
    let o = run(ocibuild().args(["build", "-o"]).arg(&out).arg(&r));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    let want = format!(
        "app.toml:{line}:11: [python]: the recipe asks for Python 3.11, but the interpreter found \
         is 3.12 (/usr/bin/python3.12)"
    );
    assert!(err.contains(&want), "{err}");
    assert!(!out.exists(), "output written");
}

/// A python-build-standalone style `install_only` archive: `python/bin/python3.13`, a
/// `python3` symlink, a hardlink, a library directory.
fn pbs_archive(path: &Path, evil: bool) -> String {
    pbs_archive_with(path, b"# os\n", evil)
}

/// [`pbs_archive`] with `os_py` as the text of `lib/python3.13/os.py`.
pub(crate) fn pbs_archive_with(path: &Path, os_py: &[u8], evil: bool) -> String {
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    let mut add = |name: &str, kind: tar::EntryType, mode: u32, body: &[u8], link: Option<&str>| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_mode(mode);
        h.set_size(body.len() as u64);
        h.set_mtime(1_700_000_000);
        if let Some(l) = link {
            h.set_link_name(l).unwrap();
        }
        let name_bytes = name.as_bytes();
        h.as_gnu_mut().unwrap().name[..name_bytes.len()].copy_from_slice(name_bytes);
        h.set_cksum();
        b.append(&h, body).unwrap();
    };
    add("python/", tar::EntryType::Directory, 0o755, b"", None);
    add("python/bin/", tar::EntryType::Directory, 0o755, b"", None);
    add(
        "python/bin/python3.13",
        tar::EntryType::Regular,
        0o755,
        b"\x7fELF",
        None,
    );
    add(
        "python/bin/python3",
        tar::EntryType::Symlink,
        0o777,
        b"",
        Some("python3.13"),
    );
    add("python/lib/", tar::EntryType::Directory, 0o755, b"", None);
    add(
        "python/lib/python3.13/",
        tar::EntryType::Directory,
        0o755,
        b"",
        None,
    );
    add(
        "python/lib/python3.13/os.py",
        tar::EntryType::Regular,
        0o644,
        os_py,
        None,
    );
    add(
        "python/lib/python3.13/os2.py",
        tar::EntryType::Link,
        0o644,
        b"",
        Some("python/lib/python3.13/os.py"),
    );
    if evil {
        add(
            "python/../../etc/passwd",
            tar::EntryType::Regular,
            0o644,
            b"x",
            None,
        );
    }
    let bytes = b.into_inner().unwrap().finish().unwrap();
    fs::write(path, &bytes).unwrap();
    common::sha256_file(path).unwrap()
}

fn archive_recipe(dir: &Path, sha: &str) -> PathBuf {
    let p = dir.join("py.toml");
    fs::write(
        &p,
        format!(
            r#"[image]
name = "example.com/py"
platform = "linux/arm64"

[python]
archive = {{ url = "cpython.tar.gz", sha256 = "{sha}", prefix = "/opt/python", strip = 1 }}
"#
        ),
    )
    .unwrap();
    p
}

#[test]
fn python_archive_layer_and_interpreter() {
    let t = tempdir();
    let sha = pbs_archive(&t.path().join("cpython.tar.gz"), false);
    let r = archive_recipe(t.path(), &sha);
    let out = t.path().join("img");
    let v = build_json(&r, &out, &[]);
    let py = &v["python"];
    assert_eq!(py["version"], "3.13");
    assert_eq!(py["executable"], "/opt/python/bin/python3.13");
    assert_eq!(py["machine"], "aarch64");
    assert_eq!(py["glibc"], Value::Null);
    assert_eq!(py["purelib"], "/opt/python/lib/python3.13/site-packages");
    assert_eq!(py["scripts"], "/opt/python/bin");
    assert_eq!(v["layers"][0]["name"], "rootfs");
    assert_eq!(v["layers"][1]["name"], "python");
    let listing = tar_listing(&layer_blob(&out, &v, 1));
    assert_eq!(
        listing,
        [
            "d 0755 0:0 opt/",
            "d 0755 0:0 opt/python/",
            "d 0755 0:0 opt/python/bin/",
            "l 0777 0:0 opt/python/bin/python3 -> python3.13",
            "f 0755 0:0 opt/python/bin/python3.13",
            "d 0755 0:0 opt/python/lib/",
            "d 0755 0:0 opt/python/lib/python3.13/",
            "f 0644 0:0 opt/python/lib/python3.13/os.py",
            "h 0644 0:0 opt/python/lib/python3.13/os2.py -> opt/python/lib/python3.13/os.py",
        ]
    );
    // Cached the second time, with the interpreter still known.
    let v2 = build_json(&r, &t.path().join("img2"), &[]);
    assert_eq!(v2["layers"][0]["cached"], true);
    assert_eq!(v2["python"], v["python"]);
    assert_eq!(v2["manifest"], v["manifest"]);

    // A wrong sha256, and an archive escaping its root: clear errors, nothing written.
    let bad = archive_recipe(t.path(), &format!("sha256:{}", "0".repeat(64)));
    let o = run(ocibuild()
        .args(["build", "-o"])
        .arg(t.path().join("bad"))
        .arg(&bad));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("sha256 mismatch"),
        "{err}"
    );
    let evil_sha = pbs_archive(&t.path().join("cpython.tar.gz"), true);
    let evil = archive_recipe(t.path(), &evil_sha);
    let o = run(ocibuild()
        .args(["build", "-o"])
        .arg(t.path().join("evil"))
        .arg(&evil));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("absolute or `..` path"),
        "{err}"
    );
    assert!(!t.path().join("bad").exists() && !t.path().join("evil").exists());
}
