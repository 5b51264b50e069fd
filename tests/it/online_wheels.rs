//! Online (OCIBUILD_ONLINE=1): numpy, pillow and click from PyPI, locked by uv into a
//! pylock.toml, installed without pip onto recipes/bookworm-python.toml's python3 (CPython
//! 3.11, glibc 2.36) and recipes/trixie-python.toml's (CPython 3.13, glibc 2.41); the image
//! imports numpy and PIL, computes, and runs numpy's console script. Its site-packages is
//! compared file for file with `uv pip install --target` of the same wheels.

use crate::common;

use fs_err as fs;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{ocibuild, podman_run, require_tool, run_ok, stdout, tempdir};

use crate::online_debian::{Release, BOOKWORM, TRIXIE};

/// The release's glibc for uv's `--python-platform`: bookworm's 2.36; for trixie's 2.41, the
/// highest uv knows (`x86_64-manylinux_2_40`: uv 0.9 has no 2_41). ocibuild itself chooses the
/// wheels for the image's glibc 2.41 (`python::tags`).
fn glibc(rel: &Release) -> &'static str {
    match rel.name {
        "trixie" => "2_40",
        _ => "2_36",
    }
}

/// A venv with uv in it (from PyPI): the peer and the pylock.toml generator.
pub(crate) fn uv(dir: &Path) -> PathBuf {
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
pub(crate) fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
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
/// rows differ by INSTALLER's hash, and uv writes it in install order: compared row by row
/// instead), uv's `.lock` file.
pub(crate) fn comparable(path: &str) -> bool {
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
fn numpy_pillow_click_from_a_uv_pylock_bookworm() {
    numpy_pillow_click_from_a_uv_pylock(&BOOKWORM);
}

#[test]
fn numpy_pillow_click_from_a_uv_pylock_trixie() {
    numpy_pillow_click_from_a_uv_pylock(&TRIXIE);
}

fn numpy_pillow_click_from_a_uv_pylock(rel: &Release) {
    if !common::online(&format!(
        "installs numpy, pillow and click from PyPI on {}",
        rel.name
    )) || !require_tool("podman")
    {
        return;
    }
    let t = tempdir();
    let uv = uv(t.path());
    uv_lock(&uv, t.path(), "numpy\npillow\nclick\n", rel);
    let recipe = python_recipe(t.path(), rel);
    let (cache, out) = (t.path().join("cache"), t.path().join("img"));
    let v = build_json(&recipe, &cache, &out);
    let names: Vec<&str> = v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"wheel-numpy"), "{names:?}");
    // The wheels chosen for the interpreter: CPython's ABI tag, manylinux up to its glibc.
    let lock = fs::read_to_string(t.path().join("app.lock")).unwrap();
    let cp = format!("cp{}", rel.python.replace('.', ""));
    assert!(
        lock.contains(&format!("-{cp}-{cp}-manylinux")),
        "no {cp} manylinux wheel in\n{lock}"
    );

    let o = podman_run(
        &out,
        rel.python,
        &[
            "python3",
            "-c",
            "import numpy, PIL.Image, click; a = numpy.arange(12).reshape(3, 4); \
             im = PIL.Image.fromarray(numpy.uint8(a)); print(int(a.sum()), im.size)",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o).trim(), "66 (4, 3)");
    let o = podman_run(&out, rel.python, &["numpy-config", "--version"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout(&o).trim().starts_with(|c: char| c.is_ascii_digit()),
        "{}",
        stdout(&o)
    );

    same_as_uv_target(&uv, t.path(), &cache, &out, &v, 500, rel);
}

/// `uv pip install --target` of the lock's wheels (from the store) against the image's wheel
/// layers, unpacked: the same files with the same bytes (bytecode, installer markers aside),
/// and the same RECORD rows in any order (INSTALLER's and RECORD's own aside). At least
/// `min_files` are compared.
fn same_as_uv_target(
    uv: &Path,
    dir: &Path,
    cache: &Path,
    out: &Path,
    v: &serde_json::Value,
    min_files: usize,
    rel: &Release,
) {
    let lock = fs::read_to_string(dir.join("app.lock")).unwrap();
    let wheels_dir = dir.join("wheels");
    fs::create_dir(&wheels_dir).unwrap();
    let mut wheel_paths = Vec::new();
    let parsed: toml::Value = toml::from_str(&lock).unwrap();
    for w in parsed["wheel"].as_array().unwrap() {
        let sha = w["sha256"].as_str().unwrap().trim_start_matches("sha256:");
        let file = wheels_dir.join(w["filename"].as_str().unwrap());
        fs::copy(cache.join("blobs/sha256").join(sha), &file).unwrap();
        wheel_paths.push(file);
    }
    let target = dir.join("uv-target");
    run_ok(
        Command::new(uv)
            .args([
                "pip",
                "install",
                "--no-deps",
                "--no-index",
                "--quiet",
                "--target",
            ])
            .arg(&target)
            .args(["--python-version", rel.python, "--python-platform"])
            .arg(format!("{}-manylinux_{}", machine(), glibc(rel)))
            .args(&wheel_paths),
    );
    let unpacked = dir.join("unpacked");
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
    let ours = tree(&unpacked.join(format!("usr/local/lib/python{}/dist-packages", rel.python)));
    let theirs: BTreeMap<String, Vec<u8>> = tree(&target)
        .into_iter()
        .filter(|(p, _)| !p.starts_with("bin/"))
        .collect();
    // RECORD: the same rows, whatever their order.
    let rows = |files: &BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<String>> {
        files
            .iter()
            .filter(|(p, _)| p.ends_with(".dist-info/RECORD"))
            .map(|(p, c)| {
                let mut r: Vec<String> = String::from_utf8_lossy(c)
                    .lines()
                    // Scripts aside: uv writes them to `--target`'s bin/, we to the scheme's.
                    .filter(|l| {
                        let p = l.split(',').next().unwrap_or("");
                        comparable(p) && !p.starts_with("../") && !p.starts_with("bin/")
                    })
                    .map(String::from)
                    .collect();
                r.sort();
                (p.clone(), r)
            })
            .collect()
    };
    let (our_rows, their_rows) = (rows(&ours), rows(&theirs));
    assert!(!our_rows.is_empty());
    assert_eq!(our_rows, their_rows, "RECORD rows");
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
    assert!(ours.len() >= min_files, "{} files compared", ours.len());
}

/// The release's python recipe, copied with its key into `dir`, installing `pylock.toml`.
pub(crate) fn python_recipe(dir: &Path, rel: &Release) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    fs::create_dir(dir.join("keys")).unwrap();
    let key = format!("keys/debian-{}.asc", rel.name);
    fs::copy(repo.join(&key), dir.join(&key)).unwrap();
    let recipe = dir.join("app.toml");
    let text = fs::read_to_string(repo.join(format!("{}-python.toml", rel.name)))
        .unwrap()
        .replace("[python]\n", "[python]\nlock = \"pylock.toml\"\n");
    fs::write(&recipe, text).unwrap();
    recipe
}

/// `ocibuild build --json` of `recipe` with store `cache` into `out`: its report.
fn build_json(recipe: &Path, cache: &Path, out: &Path) -> serde_json::Value {
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", cache)
            .args(["build", "--json", "-o"])
            .arg(out)
            .arg(recipe),
    );
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// `uv pip compile` of `requirements` into `dir/pylock.toml`, for the release's CPython on its
/// glibc.
pub(crate) fn uv_lock(uv: &Path, dir: &Path, requirements: &str, rel: &Release) {
    fs::write(dir.join("req.in"), requirements).unwrap();
    run_ok(
        Command::new(uv)
            .current_dir(dir)
            .args([
                "pip",
                "compile",
                "req.in",
                "--format",
                "pylock.toml",
                "-o",
                "pylock.toml",
            ])
            .args(["--python-version", rel.python, "--python-platform"])
            .arg(format!("{}-manylinux_{}", machine(), glibc(rel)))
            .arg("--quiet"),
    );
}

/// Issue 16: three CUDA 12 wheels that each ship the same `nvidia/__init__.py` build, import and
/// load their library under podman, with no GPU. Pinned to the versions `torch==2.9.1` locks:
/// the 12.9 releases dropped the file (a PEP 420 namespace package), so unpinned they would
/// not exercise the shared path at all.
#[test]
fn cuda_wheels_sharing_the_nvidia_namespace_file() {
    if !common::online("installs nvidia-* CUDA 12 wheels from PyPI") || !require_tool("podman") {
        return;
    }
    let t = tempdir();
    let uv = uv(t.path());
    uv_lock(
        &uv,
        t.path(),
        "nvidia-cuda-runtime-cu12==12.8.90\nnvidia-nvjitlink-cu12==12.8.93\nnvidia-cufile-cu12==1.13.1.3\n",
        &BOOKWORM,
    );
    let recipe = python_recipe(t.path(), &BOOKWORM);
    let (cache, out) = (t.path().join("cache"), t.path().join("img"));
    let v = build_json(&recipe, &cache, &out);
    let shared = v["wheels"]["sharedFiles"].as_array().unwrap();
    let init = shared
        .iter()
        .find(|s| s["path"] == "/usr/local/lib/python3.11/dist-packages/nvidia/__init__.py")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert!(init["wheels"].as_array().unwrap().len() >= 3, "{init}");
    let o = podman_run(
        &out,
        "3.11",
        &[
            "python3",
            "-c",
            "import ctypes, os, nvidia.cuda_runtime as r; \
             d = os.path.join(list(r.__path__)[0], 'lib'); \
             lib = ctypes.CDLL(os.path.join(d, 'libcudart.so.12')); \
             v = ctypes.c_int(); print('loaded', lib._name.rsplit('/', 1)[1], \
             hasattr(lib, 'cudaRuntimeGetVersion'))",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o).trim(), "loaded libcudart.so.12 True");
    same_as_uv_target(&uv, t.path(), &cache, &out, &v, 20, &BOOKWORM);
}
