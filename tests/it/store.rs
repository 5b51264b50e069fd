//! The store and layouts against directories that are not what they seem (the hardening
//! issue, second round: cases 5, 6 and 8; case 9, vendor directories, is vendor.rs), offline,
//! with generated inputs.
//! Each test asserts the refusal or the correct result, and that nothing outside the build's
//! own directories changed.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use fs_err as fs;
use serde_json::json;

use crate::common;

pub(crate) fn recipe(dir: &Path, tag: &str, data: &[u8]) -> PathBuf {
    let src = dir.join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("data.bin"), data).unwrap();
    let r = dir.join(format!("{tag}.toml"));
    fs::write(
        &r,
        format!(
            "[image]\nname = \"example.com/ocibuild/store\"\ntag = \"{tag}\"\n\
             compression = \"gzip\"\n\n[[layer]]\nname = \"data\"\nsrc = \"src\"\ndest = \"/data\"\n"
        ),
    )
    .unwrap();
    r
}

/// Bytes gzip cannot shrink.
pub(crate) fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ seed;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A refusal: a failed exit and one line on stderr containing every one of `needles`.
pub(crate) fn refused(out: &Output, needles: &[&str]) {
    let err = stderr(out);
    assert!(!out.status.success(), "should have failed:\n{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line:\n{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in:\n{err}");
    }
}

/// Everything under `root`, not following links: path → what it is (a file's bytes, a link's
/// target, a directory).
pub(crate) fn tree(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(p) = todo.pop() {
        let m = fs::symlink_metadata(&p).unwrap();
        let rel = p.strip_prefix(root).unwrap().to_path_buf();
        let what = if m.file_type().is_symlink() {
            format!("link {}", fs::read_link(&p).unwrap().display())
        } else if m.is_dir() {
            for e in fs::read_dir(&p).unwrap() {
                todo.push(e.unwrap().path());
            }
            "dir".to_string()
        } else {
            format!("file {}", common::sha256_file(&p).unwrap())
        };
        out.insert(rel, what);
    }
    out
}

pub(crate) fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// Every blob of a layout (or vendor directory) is a regular file whose sha256 is its name.
pub(crate) fn blobs_intact(dir: &Path) {
    for e in fs::read_dir(dir.join("blobs/sha256")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        let m = fs::symlink_metadata(e.path()).unwrap();
        assert!(m.is_file(), "{}: not a regular file", e.path().display());
        assert_eq!(
            common::sha256_file(&e.path()).unwrap(),
            format!("sha256:{name}"),
            "{}",
            e.path().display()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Case 5: a directory that is not a store

#[test]
fn a_directory_that_is_not_a_store_is_refused_and_left_as_it_was() {
    let d = common::test_dir("w");
    let r = recipe(&d, "v1", b"hello\n");
    // Someone's directory, named as the cache by mistake: a tmp/ of theirs, a file named like
    // a blob, a layers/ folder.
    let home = d.join("home");
    let hex = "ab".repeat(32);
    fs::create_dir_all(home.join("tmp")).unwrap();
    fs::create_dir_all(home.join("blobs/sha256")).unwrap();
    fs::create_dir_all(home.join("layers")).unwrap();
    fs::write(home.join("notes.txt"), b"mine").unwrap();
    fs::write(home.join("tmp/blob-draft1"), b"draft").unwrap();
    fs::write(home.join("tmp/report.txt"), b"report").unwrap();
    fs::write(home.join("blobs/sha256").join(&hex), b"not that blob").unwrap();
    fs::write(home.join("layers").join(format!("{hex}.json")), b"{}").unwrap();
    let before = tree(&home);
    let out = d.join("out.oci");
    let home_s = home.display().to_string();
    let runs: Vec<(&str, Output)> = vec![
        (
            "cache prune",
            common::run(
                common::ocibuild()
                    .args(["cache", "prune"])
                    .env("OCIBUILD_CACHE", &home),
            ),
        ),
        (
            "cache verify",
            common::run(
                common::ocibuild()
                    .args(["cache", "verify"])
                    .env("OCIBUILD_CACHE", &home),
            ),
        ),
        (
            "cache prune --cache-dir",
            common::run(
                common::ocibuild()
                    .arg("--cache-dir")
                    .arg(&home)
                    .args(["cache", "prune"]),
            ),
        ),
        (
            "build",
            common::run(
                common::ocibuild()
                    .arg("build")
                    .arg(&r)
                    .arg("-o")
                    .arg(&out)
                    .env("OCIBUILD_CACHE", &home),
            ),
        ),
    ];
    for (what, o) in &runs {
        eprintln!("{what}: {}", stderr(o));
        refused(
            o,
            &[
                &home_s,
                "is not an ocibuild store",
                "ocibuild-store",
                "OCIBUILD_CACHE or --cache-dir",
            ],
        );
        assert_eq!(tree(&home), before, "{what} changed {home_s}");
    }
    assert!(!out.exists(), "a refused build wrote its output");
}

#[test]
fn a_store_removes_only_what_it_named_itself() {
    let d = common::test_dir("w");
    let r = recipe(&d, "v1", &noise(64 << 10, 1));
    let cache = d.join("cache");
    let outside = d.join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("blob-k1lled"), b"keep").unwrap();
    let outside_before = tree(&outside);
    let ocibuild = || {
        let mut c = common::ocibuild();
        c.env("OCIBUILD_CACHE", &cache);
        c
    };
    common::run_ok(
        ocibuild()
            .arg("build")
            .arg(&r)
            .arg("-o")
            .arg(d.join("a.oci")),
    );
    // What a store looks like after a build: its marker and its own folders only (what an
    // unmarked store of an earlier version is recognised by); checked at the end.
    let layout_after_build = names(&cache);
    let marker_after_build = fs::read_to_string(cache.join("ocibuild-store")).ok();

    // Files a person put in the store's folders, beside what a killed build leaves.
    let hex = "cd".repeat(32);
    fs::write(cache.join("tmp/blob-Ab12Cd"), vec![0u8; 4096]).unwrap();
    fs::create_dir_all(cache.join("tmp/apt-spool-Xy34Zw/debs")).unwrap();
    fs::write(cache.join("tmp/notes.txt"), b"mine").unwrap();
    fs::write(cache.join("tmp/blob-mine"), b"mine").unwrap();
    fs::write(cache.join("layers/README"), b"mine").unwrap();
    fs::write(cache.join("layers").join(format!("{hex}.txt")), b"mine").unwrap();
    fs::write(cache.join("blobs/sha256/notes"), b"mine").unwrap();
    fs::os::unix::fs::symlink(
        outside.join("blob-k1lled"),
        cache.join("blobs/sha256").join(&hex),
    )
    .unwrap();
    let p = common::run_ok(ocibuild().args(["cache", "prune", "--json"]));
    let report: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
    assert_eq!(names(&cache.join("tmp")), ["blob-mine", "notes.txt"]);
    assert_eq!(report["temporary"], 2, "{report}");
    assert_eq!(
        report["foreignTemporary"],
        json!(["blob-mine", "notes.txt"]),
        "{report}"
    );
    for kept in [
        cache.join("layers/README"),
        cache.join("layers").join(format!("{hex}.txt")),
        cache.join("blobs/sha256/notes"),
    ] {
        assert_eq!(fs::read(&kept).unwrap(), b"mine", "{}", kept.display());
    }
    let v = common::run_ok(ocibuild().args(["cache", "verify"]));
    let text = common::stdout(&v);
    assert!(text.contains("not a blob: notes (left alone)"), "{text}");
    assert!(
        text.contains(&format!("not a blob: {hex} (left alone)")),
        "{text}"
    );
    assert!(fs::symlink_metadata(cache.join("blobs/sha256").join(&hex)).is_ok());
    assert_eq!(fs::read(cache.join("blobs/sha256/notes")).unwrap(), b"mine");

    // A store folder that is a symlink to elsewhere: prune refuses, nothing removed there.
    fs::remove_dir_all(cache.join("tmp")).unwrap();
    fs::os::unix::fs::symlink(&outside, cache.join("tmp")).unwrap();
    let p = common::run(ocibuild().args(["cache", "prune"]));
    refused(
        &p,
        &[
            &cache.join("tmp").display().to_string(),
            "is a symbolic link",
        ],
    );
    assert_eq!(tree(&outside), outside_before);
    fs::remove_file(cache.join("tmp")).unwrap();
    fs::create_dir(cache.join("tmp")).unwrap();

    // A store of an earlier version (no marker): adopted, marked, and used as it was.
    fs::remove_file(cache.join("blobs/sha256").join(&hex)).unwrap();
    fs::remove_file(cache.join("blobs/sha256/notes")).unwrap();
    for f in ["README", &format!("{hex}.txt")] {
        fs::remove_file(cache.join("layers").join(f)).unwrap();
    }
    fs::remove_dir_all(cache.join("tmp")).unwrap();
    fs::create_dir(cache.join("tmp")).unwrap();
    fs::remove_file(cache.join("ocibuild-store")).unwrap();
    let b = common::run_ok(
        ocibuild()
            .args(["build", "--json"])
            .arg(&r)
            .arg("-o")
            .arg(d.join("b.oci")),
    );
    let v: serde_json::Value = serde_json::from_slice(&b.stdout).unwrap();
    assert_eq!(v["layers"][0]["cached"], true, "{v:#}");
    assert_eq!(tree(&outside), outside_before);
    assert!(cache.join("ocibuild-store").is_file());
    assert_eq!(
        layout_after_build,
        [
            "blobs",
            "fingerprints",
            "layers",
            "locks",
            "meta",
            "ocibuild-store",
            "seals",
            "tmp"
        ]
    );
    assert_eq!(marker_after_build.as_deref(), Some("ocibuild-store 1\n"));
}

// ---------------------------------------------------------------------------------------------
// Case 6: an existing layout whose blob has other bytes

/// A directory on another filesystem than the test's own (tmpfs `/dev/shm`), if there is one.
fn other_filesystem(than: &Path) -> Option<tempfile::TempDir> {
    let t = tempfile::Builder::new()
        .prefix("ocibuild-test-")
        .tempdir_in("/dev/shm")
        .ok()?;
    let dev = |p: &Path| fs::metadata(p).unwrap().dev();
    (dev(t.path()) != dev(than)).then_some(t)
}

/// Writes a new file (another inode) over the biggest blob of `layout`, keeping its size.
fn corrupt_biggest_blob(layout: &Path) -> PathBuf {
    let (blob, len) = fs::read_dir(layout.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let len = fs::metadata(&p).unwrap().len();
            (p, len)
        })
        .max_by_key(|(_, len)| *len)
        .unwrap();
    fs::remove_file(&blob).unwrap();
    fs::write(&blob, noise(len as usize, 99)).unwrap();
    assert_eq!(fs::metadata(&blob).unwrap().len(), len);
    blob
}

fn rebuild_repairs_a_same_size_blob(cache: &Path, d: &Path) {
    let r = recipe(d, "v1", &noise(256 << 10, 2));
    let build = |out: &Path, cache: &Path| {
        common::run_ok(
            common::ocibuild()
                .arg("build")
                .arg(&r)
                .arg("-o")
                .arg(out)
                .env("OCIBUILD_CACHE", cache),
        )
    };
    let layout = d.join("layout.oci");
    build(&layout, cache);
    let blob = corrupt_biggest_blob(&layout);
    let out = build(&layout, cache);
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    blobs_intact(&layout);
    assert!(blob.is_file());
    // A fresh build, from a store of its own, is the same image: `diff` compares the bytes
    // both layouts hold, and every one of them now hashes to its name.
    let fresh = d.join("fresh.oci");
    build(&fresh, &d.join("fresh-cache"));
    blobs_intact(&fresh);
    assert_eq!(
        names(&layout.join("blobs/sha256")),
        names(&fresh.join("blobs/sha256"))
    );
    let diff = common::run_ok(common::ocibuild().arg("diff").arg(&layout).arg(&fresh));
    assert!(
        common::stdout(&diff).contains("identical"),
        "{}",
        common::stdout(&diff)
    );
}

#[test]
fn a_layout_blob_with_other_bytes_is_replaced_by_a_rebuild() {
    let d = common::test_dir("w");
    // The store on another filesystem than the layout: the layout's blobs are copies.
    match other_filesystem(&d) {
        Some(store) => rebuild_repairs_a_same_size_blob(&store.path().join("cache"), &d.join("x")),
        None => common::notice(&format!(
            "SKIPPED (part): {}: no other filesystem at /dev/shm",
            common::test_name()
        )),
    }
    // And on one filesystem, the hard link broken by writing a new file.
    rebuild_repairs_a_same_size_blob(&d.join("cache"), &d.join("same"));
}

// ---------------------------------------------------------------------------------------------
// Case 8: a base descriptor with a known digest and a lying size

/// A registry serving one repository, `test/base`: `manifests` by tag or digest, `blobs` by
/// digest; plain HTTP on 127.0.0.1, one request per connection.
fn serve_registry(
    manifests: BTreeMap<String, Vec<u8>>,
    blobs: BTreeMap<String, Vec<u8>>,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let state = Arc::new((manifests, blobs));
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let state = state.clone();
            std::thread::spawn(move || {
                let _ = answer(conn, &state.0, &state.1);
            });
        }
    });
    addr
}

fn answer(
    conn: TcpStream,
    manifests: &BTreeMap<String, Vec<u8>>,
    blobs: &BTreeMap<String, Vec<u8>>,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts
        .next()
        .unwrap_or("")
        .split('?')
        .next()
        .unwrap_or("")
        .to_string();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let found = if path == "/v2/" {
        Some((b"{}".to_vec(), "application/json", None))
    } else if let Some(r) = path.strip_prefix("/v2/test/base/manifests/") {
        manifests.get(r).map(|m| {
            (
                m.clone(),
                "application/vnd.oci.image.manifest.v1+json",
                Some(common::sha256_bytes(m)),
            )
        })
    } else if let Some(d) = path.strip_prefix("/v2/test/base/blobs/") {
        blobs
            .get(d)
            .map(|b| (b.clone(), "application/octet-stream", Some(d.to_string())))
    } else {
        None
    };
    let mut out = conn;
    let (status, body, ctype, digest) = match found {
        Some((b, t, d)) => ("200 OK", b, t, d),
        None => (
            "404 Not Found",
            br#"{"errors":[{"code":"NOT_FOUND","message":"no"}]}"#.to_vec(),
            "application/json",
            None,
        ),
    };
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(d) = digest {
        head.push_str(&format!("Docker-Content-Digest: {d}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    if method != "HEAD" {
        out.write_all(&body)?;
    }
    out.flush()
}

/// An uncompressed tar of one file (made by tar, so any reader takes it).
fn layer_tar(dir: &Path) -> Vec<u8> {
    let root = dir.join("layer-root");
    fs::create_dir_all(root.join("etc")).unwrap();
    fs::write(root.join("etc/base-marker"), b"base\n").unwrap();
    let tar = dir.join("layer.tar");
    let ok = Command::new("tar")
        .args(["--owner=0", "--group=0", "--mtime=@0", "-cf"])
        .arg(&tar)
        .arg("-C")
        .arg(&root)
        .arg("etc")
        .status()
        .unwrap()
        .success();
    assert!(ok);
    fs::read(&tar).unwrap()
}

fn descriptor(media_type: &str, bytes: &[u8], size: u64) -> serde_json::Value {
    json!({"mediaType": media_type, "digest": common::sha256_bytes(bytes), "size": size})
}

/// A base registry with tag `good` (true sizes) and `liar` (the same config and layer, the
/// layer declared 2^62 bytes). Returns its address and the layer.
pub(crate) fn lying_registry(dir: &Path) -> (String, Vec<u8>) {
    let layer = layer_tar(dir);
    let config = serde_json::to_vec(&json!({
        "architecture": common::host_arch(),
        "os": "linux",
        "config": {"Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [common::sha256_bytes(&layer)]},
    }))
    .unwrap();
    let manifest = |layer_size: u64| {
        serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": descriptor("application/vnd.oci.image.config.v1+json", &config, config.len() as u64),
            "layers": [descriptor("application/vnd.oci.image.layer.v1.tar", &layer, layer_size)],
        }))
        .unwrap()
    };
    let good = manifest(layer.len() as u64);
    let liar = manifest(1u64 << 62);
    let mut manifests = BTreeMap::new();
    for m in [&good, &liar] {
        manifests.insert(common::sha256_bytes(m), m.clone());
    }
    manifests.insert("good".to_string(), good);
    manifests.insert("liar".to_string(), liar);
    let mut blobs = BTreeMap::new();
    blobs.insert(common::sha256_bytes(&layer), layer.clone());
    blobs.insert(common::sha256_bytes(&config), config);
    (serve_registry(manifests, blobs), layer)
}

/// A project building on `ADDR/test/base:TAG`, with the registries file that allows plain
/// HTTP to it.
pub(crate) fn base_project(dir: &Path, addr: &str, tag: &str) -> (PathBuf, PathBuf) {
    fs::create_dir_all(dir.join("app")).unwrap();
    fs::write(dir.join("app/hello.txt"), b"hello\n").unwrap();
    let recipe = dir.join("app.toml");
    fs::write(
        &recipe,
        format!(
            "[image]\nname = \"localhost/app\"\ntag = \"a\"\n[base]\nimage = \"{addr}/test/base:{tag}\"\n\
             [[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n"
        ),
    )
    .unwrap();
    let registries = dir.join("registries.toml");
    fs::write(
        &registries,
        format!("[[registry]]\nname = \"{addr}\"\ninsecure-http = true\n"),
    )
    .unwrap();
    (recipe, registries)
}

#[test]
fn a_warm_store_does_not_take_a_base_descriptors_lying_size() {
    let d = common::test_dir("w");
    let (addr, layer) = lying_registry(&d);
    let cache = d.join("cache");
    let build = |project: &Path, tag: &str| {
        let (recipe, registries) = base_project(project, &addr, tag);
        let out = project.join("out.oci");
        let o = common::run(
            common::ocibuild()
                .arg("--registries")
                .arg(&registries)
                .arg("build")
                .arg(&recipe)
                .arg("-o")
                .arg(&out)
                .env("OCIBUILD_CACHE", &cache),
        );
        (o, out)
    };
    // The honest tag warms the store with the layer and the config.
    let (o, out) = build(&d.join("good"), "good");
    common::assert_success(&o, "build on the honest base");
    blobs_intact(&out);
    // The lying one names the same digests: refused, naming the reference, the digest and
    // both sizes; no output, and nothing else in the project.
    let project = d.join("liar");
    let (o, out) = build(&project, "liar");
    let layer_digest = common::sha256_bytes(&layer);
    refused(
        &o,
        &[
            &format!("{addr}/test/base:liar"),
            &layer_digest,
            &format!("as {} bytes", 1u64 << 62),
            &format!("that blob is {} bytes", layer.len()),
        ],
    );
    assert!(!out.exists());
    assert_eq!(names(&project), ["app", "app.toml", "registries.toml"]);
}
