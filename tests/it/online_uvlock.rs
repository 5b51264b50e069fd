//! Online (OCIBUILD_ONLINE=1): `[python] lock = "uv.lock"`, uv's own lock read as it is. A uv
//! project made here (`uv init`, `uv add` of numpy and click, a dev group with pytest, an
//! extra with pillow), locked by uv, installed onto recipes/bookworm-python.toml's python3
//! (CPython 3.11, as this host's, so that uv can install the same set here): the image's
//! site-packages equals what `uv sync --frozen --no-dev --extra plot --no-install-project`
//! installs, file for file; the same uv.lock for linux/amd64 and linux/arm64 in one build; a
//! hash altered by hand is refused naming the wheel; a pyproject.toml changed after `uv lock`
//! makes the lock stale, which --locked refuses.

use std::path::Path;
use std::process::Command;

use fs_err as fs;

use crate::common::{self, ocibuild, run, run_ok, stderr, stdout, tempdir};
use crate::online_wheels::{comparable, tree, uv};

#[test]
fn a_uv_project_lock_installs_what_uv_sync_installs() {
    if !common::online("installs a uv project's uv.lock from PyPI")
        || common::which("python3.11").is_none()
    {
        return;
    }
    let t = tempdir();
    let p = t.path();
    let uv = uv(p);
    let uvx = |args: &[&str]| {
        run_ok(Command::new(&uv).current_dir(p.join("proj")).args(args));
    };
    run_ok(Command::new(&uv).current_dir(p).args([
        "init",
        "-q",
        "--package",
        "--python",
        "python3.11",
        "proj",
    ]));
    uvx(&["add", "-q", "numpy", "click>=8"]);
    uvx(&["add", "-q", "--dev", "pytest"]);
    uvx(&["add", "-q", "--optional", "plot", "pillow"]);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    fs::create_dir(p.join("keys")).unwrap();
    fs::copy(
        repo.join("keys/debian-bookworm.asc"),
        p.join("keys/debian-bookworm.asc"),
    )
    .unwrap();
    let base = fs::read_to_string(repo.join("bookworm-python.toml")).unwrap();
    let recipe = |name: &str, extra: &str| {
        let text = base.replace(
            "[python]\n",
            &format!(
                "[python]\nlock = \"proj/uv.lock\"\nno-dev = true\nextras = [\"plot\"]\n{extra}"
            ),
        );
        let path = p.join(name);
        fs::write(&path, text).unwrap();
        path
    };
    let app = recipe("app.toml", "");
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", p.join("cache"))
            .args(["build", "--json", "-o"])
            .arg(p.join("img"))
            .arg(&app),
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();

    // uv's own install of the same lock for this host's CPython 3.11 (glibc 2.36, as bookworm).
    uvx(&[
        "sync",
        "-q",
        "--frozen",
        "--no-dev",
        "--extra",
        "plot",
        "--no-install-project",
        "--python",
        "python3.11",
    ]);
    let theirs = tree(&p.join("proj/.venv/lib/python3.11/site-packages"));
    let unpacked = p.join("unpacked");
    fs::create_dir(&unpacked).unwrap();
    for l in v["layers"].as_array().unwrap() {
        if l["name"].as_str().unwrap().starts_with("wheel") {
            let d = l["digest"].as_str().unwrap().trim_start_matches("sha256:");
            run_ok(
                Command::new("tar")
                    .arg("-xf")
                    .arg(p.join("img/blobs/sha256").join(d))
                    .arg("-C")
                    .arg(&unpacked),
            );
        }
    }
    let ours = tree(&unpacked.join("usr/local/lib/python3.11/dist-packages"));
    let dists =
        |t: &std::collections::BTreeMap<String, Vec<u8>>| -> std::collections::BTreeSet<String> {
            t.keys()
                .filter_map(|k| k.split('/').next())
                .filter(|d| d.ends_with(".dist-info"))
                .map(String::from)
                .collect()
        };
    assert_eq!(dists(&ours), dists(&theirs));
    let names: Vec<String> = dists(&ours).into_iter().collect();
    assert!(
        names.iter().any(|d| d.starts_with("numpy-"))
            && names.iter().any(|d| d.starts_with("pillow-"))
            && !names.iter().any(|d| d.starts_with("pytest-"))
            && !names.iter().any(|d| d.starts_with("proj-")),
        "{names:?}"
    );
    let keep = |t: std::collections::BTreeMap<String, Vec<u8>>| -> std::collections::BTreeMap<String, Vec<u8>> {
        t.into_iter()
            .filter(|(k, _)| comparable(k) && !k.starts_with("_virtualenv") && !k.ends_with(".pth") && !k.starts_with("proj"))
            .collect()
    };
    let (ours, theirs) = (keep(ours), keep(theirs));
    let differ: Vec<&String> = ours
        .keys()
        .chain(theirs.keys())
        .filter(|k| ours.get(*k) != theirs.get(*k))
        .collect();
    assert!(differ.is_empty(), "files that differ: {differ:?}");
    assert!(ours.len() > 500, "{} files compared", ours.len());

    // One uv.lock, two platforms.
    let multi = recipe("multi.toml", "").display().to_string();
    let text = fs::read_to_string(&multi).unwrap().replace(
        "[image]\n",
        "[image]\nplatforms = [\"linux/amd64\", \"linux/arm64\"]\n",
    );
    fs::write(&multi, text).unwrap();
    run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", p.join("cache"))
            .args(["lock"])
            .arg(&multi),
    );
    let lock = fs::read_to_string(p.join("multi.lock")).unwrap();
    assert!(
        lock.contains("manylinux_2_28_x86_64") && lock.contains("manylinux_2_28_aarch64"),
        "{lock}"
    );

    // A hash altered by hand: the download says which wheel.
    let uvlock = fs::read_to_string(p.join("proj/uv.lock")).unwrap();
    // click's wheel (its sdist's hash is not used: a wheel fits).
    let click = uvlock.find("/click-").unwrap();
    let click = click + uvlock[click..].find(".whl\"").unwrap();
    let hash_at = click + uvlock[click..].find("hash = \"sha256:").unwrap() + 15;
    let mut tampered = uvlock.clone();
    tampered.replace_range(hash_at..hash_at + 8, "00000000");
    fs::write(p.join("proj/uv.lock"), &tampered).unwrap();
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", p.join("cache-empty"))
        .args(["build", "-o"])
        .arg(p.join("img2"))
        .arg(&app));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("click-8") && err.contains("sha256"), "{err}");
    fs::write(p.join("proj/uv.lock"), &uvlock).unwrap();

    // pyproject.toml changed after `uv lock`: stale, as `uv sync --locked` says.
    let pyproject = fs::read_to_string(p.join("proj/pyproject.toml")).unwrap();
    fs::write(
        p.join("proj/pyproject.toml"),
        pyproject.replace("\"click>=8", "\"click>=8.9"),
    )
    .unwrap();
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", p.join("cache"))
        .args(["build", "--locked", "-o"])
        .arg(p.join("img3"))
        .arg(&app));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("proj/uv.lock is stale")
            && err.contains("pyproject.toml has click>=8.9")
            && err.contains("run `uv lock`"),
        "{err}"
    );
}
