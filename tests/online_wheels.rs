//! Online (OCIBUILD_ONLINE=1): numpy, pillow and click from PyPI, locked by uv into a
//! pylock.toml, installed without pip onto recipes/bookworm-python.toml's python3; the image
//! imports numpy and PIL, computes, and runs numpy's console script. Its site-packages is
//! compared file for file with `uv pip install --target` of the same wheels.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{ocibuild, podman_run, require_tool, run_ok, stdout, tempdir};

/// A venv with uv in it (from PyPI): the peer and the pylock.toml generator.
fn uv(dir: &Path) -> PathBuf {
    run_ok(
        Command::new("python3")
            .args(["-m", "venv"])
            .arg(dir.join("venv")),
    );
    run_ok(Command::new(dir.join("venv/bin/pip")).args(["install", "--quiet", "uv"]));
    dir.join("venv/bin/uv")
}

fn machine() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "aarch64",
        _ => "x86_64",
    }
}

/// Every regular file under `root`: relative path → content.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else if m.is_file() {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// What the comparison leaves out: bytecode, the installer's own marker files, RECORD (its
/// rows differ by INSTALLER's hash, and uv writes it in install order), uv's `.lock` file.
fn comparable(path: &str) -> bool {
    !(path == ".lock"
        || path.ends_with(".pyc")
        || path.contains("__pycache__")
        || path.ends_with(".dist-info/INSTALLER")
        || path.ends_with(".dist-info/RECORD")
        || path.ends_with(".dist-info/REQUESTED")
        || path.ends_with(".dist-info/direct_url.json")
        || path.ends_with(".dist-info/uv_cache.json")
        || path.ends_with(".dist-info/uv_build.json"))
}

#[test]
fn numpy_pillow_click_from_a_uv_pylock() {
    if !common::online("installs numpy, pillow and click from PyPI") || !require_tool("podman") {
        return;
    }
    let t = tempdir();
    let uv = uv(t.path());
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    fs::create_dir(t.path().join("keys")).unwrap();
    fs::copy(
        repo.join("keys/debian-bookworm.asc"),
        t.path().join("keys/debian-bookworm.asc"),
    )
    .unwrap();
    fs::write(t.path().join("req.in"), "numpy\npillow\nclick\n").unwrap();
    run_ok(
        Command::new(&uv)
            .current_dir(t.path())
            .args([
                "pip",
                "compile",
                "req.in",
                "--format",
                "pylock.toml",
                "-o",
                "pylock.toml",
            ])
            .args(["--python-version", "3.11", "--python-platform"])
            .arg(format!("{}-manylinux_2_36", machine()))
            .arg("--quiet"),
    );
    let recipe = t.path().join("app.toml");
    let text = fs::read_to_string(repo.join("bookworm-python.toml"))
        .unwrap()
        .replace("[python]\n", "[python]\nlock = \"pylock.toml\"\n");
    fs::write(&recipe, text).unwrap();
    let cache = t.path().join("cache");
    let out = t.path().join("img");
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", &cache)
            .args(["build", "--json", "-o"])
            .arg(&out)
            .arg(&recipe),
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let names: Vec<&str> = v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"wheel-numpy"), "{names:?}");

    let o = podman_run(
        &out,
        "3.11",
        &[
            "python3",
            "-c",
            "import numpy, PIL.Image, click; a = numpy.arange(12).reshape(3, 4); \
             im = PIL.Image.fromarray(numpy.uint8(a)); print(int(a.sum()), im.size)",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o).trim(), "66 (4, 3)");
    let o = podman_run(&out, "3.11", &["numpy-config", "--version"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout(&o).trim().starts_with(|c: char| c.is_ascii_digit()),
        "{}",
        stdout(&o)
    );

    // The same wheels through `uv pip install --target`: file for file the same site-packages.
    let lock = fs::read_to_string(t.path().join("app.lock")).unwrap();
    let wheels_dir = t.path().join("wheels");
    fs::create_dir(&wheels_dir).unwrap();
    let mut wheel_paths = Vec::new();
    let parsed: toml::Value = toml::from_str(&lock).unwrap();
    for w in parsed["wheel"].as_array().unwrap() {
        let sha = w["sha256"].as_str().unwrap().trim_start_matches("sha256:");
        let file = wheels_dir.join(w["filename"].as_str().unwrap());
        fs::copy(cache.join("blobs/sha256").join(sha), &file).unwrap();
        wheel_paths.push(file);
    }
    let target = t.path().join("uv-target");
    run_ok(
        Command::new(&uv)
            .args([
                "pip",
                "install",
                "--no-deps",
                "--no-index",
                "--quiet",
                "--target",
            ])
            .arg(&target)
            .args(["--python-version", "3.11", "--python-platform"])
            .arg(format!("{}-manylinux_2_36", machine()))
            .args(&wheel_paths),
    );
    let unpacked = t.path().join("unpacked");
    fs::create_dir(&unpacked).unwrap();
    for l in v["layers"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        if name.starts_with("wheel") {
            let d = l["digest"].as_str().unwrap().trim_start_matches("sha256:");
            run_ok(
                Command::new("tar")
                    .arg("-xf")
                    .arg(out.join("blobs/sha256").join(d))
                    .arg("-C")
                    .arg(&unpacked),
            );
        }
    }
    let ours = tree(&unpacked.join("usr/local/lib/python3.11/dist-packages"));
    let theirs: BTreeMap<String, Vec<u8>> = tree(&target)
        .into_iter()
        .filter(|(p, _)| !p.starts_with("bin/"))
        .collect();
    let ours: BTreeMap<_, _> = ours.into_iter().filter(|(p, _)| comparable(p)).collect();
    let theirs: BTreeMap<_, _> = theirs.into_iter().filter(|(p, _)| comparable(p)).collect();
    let only_ours: Vec<_> = ours.keys().filter(|k| !theirs.contains_key(*k)).collect();
    let only_theirs: Vec<_> = theirs.keys().filter(|k| !ours.contains_key(*k)).collect();
    let differ: Vec<_> = ours
        .iter()
        .filter(|(k, c)| theirs.get(*k).is_some_and(|t| t != *c))
        .map(|(k, _)| k)
        .collect();
    assert!(
        only_ours.is_empty() && only_theirs.is_empty() && differ.is_empty(),
        "only ocibuild: {only_ours:?}\nonly uv: {only_theirs:?}\ndiffer: {differ:?}"
    );
    assert!(ours.len() > 500, "{} files compared", ours.len());
}
