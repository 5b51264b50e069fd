//! Online (OCIBUILD_ONLINE=1): `[python] lock = "uv.lock"`, uv's own lock read as it is. A uv
//! project made here (`uv init`, `uv add` of numpy and click, a dev group with pytest, an
//! extra with pillow), locked by uv, installed onto recipes/bookworm-python.toml's python3
//! (CPython 3.11, as this host's, so that uv can install the same set here): the image's
//! site-packages equals what `uv sync --frozen --no-dev --extra plot --no-install-project`
//! installs, file for file; the same uv.lock for linux/amd64 and linux/arm64 in one build; a
//! hash altered by hand is refused naming the wheel; a pyproject.toml changed after `uv lock`
//! makes the lock stale, which --locked refuses.

use std::collections::{BTreeMap, BTreeSet};
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

/// The builder of `[python] project` on bookworm: the image's python3 (3.11) and Debian's
/// hatchling, the project's build backend.
const PROJECT_BUILDER: &str = r#"[image]
name = "localhost/ocibuild-test/uv-project-builder"

[[apt.source]]
url = "https://deb.debian.org/debian"
suite = "bookworm"
components = ["main"]
signed-by = "keys/debian-bookworm.asc"

[apt]
packages = ["python3", "python3-hatchling"]

[config]
env = { PATH = "/usr/sbin:/usr/bin:/sbin:/bin", LANG = "C.UTF-8" }
"#;

/// The upstream version of Debian package `name` as `lock` (a builder's NAME.lock) pins it:
/// `1:2.3+dfsg-4` → `2.3`.
fn debian_upstream(lock: &str, name: &str) -> String {
    let entry = lock
        .split("[[apt.package]]")
        .find(|p| p.contains(&format!("name = \"{name}\"")))
        .unwrap_or_else(|| panic!("{name} in the builder's lock"));
    let v = entry
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .unwrap()
        .trim_end_matches('"');
    let v = v.split_once(':').map_or(v, |(_, v)| v);
    let v = v.rsplit_once('-').map_or(v, |(v, _)| v);
    v.split(['+', '~']).next().unwrap().to_string()
}

/// `[python] project`: a uv project made here (`uv init --package` with hatchling, `uv add` of
/// numpy and click, a dev group, an extra with pillow, its `[project.scripts]` console script
/// printing numpy's version), locked by uv, built into a wheel by Debian bookworm's hatchling
/// in a builder recipe with no network, and installed with its dependencies onto
/// recipes/bookworm-python.toml's python3: the console script runs under podman (`--test`);
/// the image's site-packages (every distribution's files, the project's own included) equals
/// what `uv sync --frozen --no-dev --extra plot --no-editable` installs for this host's
/// CPython 3.11, file for file, and their RECORDs row for row (the console script's row by
/// path: its shebang names each one's Python). uv builds the project with its own build
/// isolation from PyPI, so pyproject.toml pins uv's build to the builder's hatchling and
/// packaging (`[tool.uv] build-constraint-dependencies`): with another backend version the
/// METADATA and WHEEL files would differ by the generator's own text. Then: `ocibuild lock`
/// warns when pyproject.toml's requirements are no longer uv.lock's; and a builder without
/// hatchling is refused naming it and the project.
#[test]
fn a_uv_project_is_built_and_installed_as_uv_sync_no_editable_installs() {
    if !common::online("builds a uv project with Debian's hatchling and installs it from PyPI")
        || common::which("python3.11").is_none()
        || !common::require_tool("podman")
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
        "--build-backend",
        "hatch",
        "--vcs",
        "none",
        "--no-workspace",
        "--python",
        "python3.11",
        "proj",
    ]));
    uvx(&["add", "-q", "--no-sync", "numpy", "click>=8"]);
    uvx(&["add", "-q", "--no-sync", "--dev", "pytest"]);
    uvx(&["add", "-q", "--no-sync", "--optional", "plot", "pillow"]);
    fs::write(
        p.join("proj/src/proj/__init__.py"),
        "import click\nimport numpy\n\n\ndef main() -> None:\n    click.echo(\"proj numpy \" + numpy.__version__)\n",
    )
    .unwrap();
    fs::write(p.join("proj/.dockerignore"), ".venv\n__pycache__\n").unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    fs::create_dir(p.join("keys")).unwrap();
    fs::copy(
        repo.join("keys/debian-bookworm.asc"),
        p.join("keys/debian-bookworm.asc"),
    )
    .unwrap();
    fs::write(p.join("builder.toml"), PROJECT_BUILDER).unwrap();
    run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", p.join("cache"))
            .arg("lock")
            .arg(p.join("builder.toml")),
    );
    let block = fs::read_to_string(p.join("builder.lock")).unwrap();
    let pins = format!(
        "\n[tool.uv]\nbuild-constraint-dependencies = [\"hatchling=={}\", \"packaging=={}\"]\n",
        debian_upstream(&block, "python3-hatchling"),
        debian_upstream(&block, "python3-packaging")
    );
    let pyproject = fs::read_to_string(p.join("proj/pyproject.toml")).unwrap() + &pins;
    fs::write(p.join("proj/pyproject.toml"), &pyproject).unwrap();
    uvx(&["lock", "-q"]);

    let base = fs::read_to_string(repo.join("bookworm-python.toml")).unwrap();
    let app = p.join("app.toml");
    fs::write(
        &app,
        base.replace(
            "[python]\n",
            "[python]\nlock = \"proj/uv.lock\"\nproject = \"proj\"\nno-dev = true\nextras = [\"plot\"]\nsdist-builder = { recipe = \"builder.toml\" }\n",
        ) + "\n[[test]]\nname = \"console-script\"\nrun = [\"/usr/local/bin/proj\"]\nexpect-output = \"proj numpy \"\n",
    )
    .unwrap();
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", p.join("cache"))
            .args(["build", "--json", "-o"])
            .arg(p.join("img"))
            .arg(&app),
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // The console script, under podman.
    let o = run_ok(ocibuild().args(["test", "-o"]).arg(p.join("img")).arg(&app));
    assert!(stdout(&o).contains("console-script"), "{}", stdout(&o));
    let layers = v["layers"].as_array().unwrap();
    assert_eq!(
        layers.last().unwrap()["name"],
        "wheel-proj",
        "the project's layer is last"
    );
    let lock = fs::read_to_string(p.join("app.lock")).unwrap();
    assert!(
        lock.contains("step = \"project:proj\"") && lock.contains("name = \"project:proj\""),
        "{lock}"
    );

    // uv's own install of the same lock, the project built as a wheel, for this host's
    // CPython 3.11 (glibc 2.36, as bookworm).
    run_ok(
        Command::new(&uv)
            .current_dir(p.join("proj"))
            .env("UV_PROJECT_ENVIRONMENT", p.join("venv-uv"))
            .args([
                "sync",
                "-q",
                "--frozen",
                "--no-dev",
                "--extra",
                "plot",
                "--no-editable",
                "--python",
                "python3.11",
            ]),
    );
    let theirs = tree(&p.join("venv-uv/lib/python3.11/site-packages"));
    let unpacked = p.join("unpacked");
    fs::create_dir(&unpacked).unwrap();
    for l in layers {
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
    assert!(
        unpacked.join("usr/local/bin/proj").is_file(),
        "the console script"
    );
    let dists = |t: &BTreeMap<String, Vec<u8>>| -> BTreeSet<String> {
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
            && names.iter().any(|d| d == "proj-0.1.0.dist-info")
            && !names.iter().any(|d| d.starts_with("pytest-")),
        "{names:?}"
    );
    // RECORD row by row: the installer's own files are left out, the console script's row is
    // compared by path.
    let rows = |t: &BTreeMap<String, Vec<u8>>| -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for (k, v) in t.iter().filter(|(k, _)| k.ends_with(".dist-info/RECORD")) {
            for row in String::from_utf8_lossy(v).lines() {
                let path = row.split(',').next().unwrap_or("");
                if !comparable(path) || path.ends_with(".pyc") {
                    continue;
                }
                let row = if path.starts_with("../../../bin/") {
                    path
                } else {
                    row
                };
                out.insert(format!("{k}: {row}"));
            }
        }
        out
    };
    let (our_rows, their_rows) = (rows(&ours), rows(&theirs));
    let differ: Vec<&String> = our_rows.symmetric_difference(&their_rows).collect();
    assert!(differ.is_empty(), "RECORD rows that differ: {differ:?}");
    assert!(
        our_rows
            .iter()
            .any(|r| r.starts_with("proj-0.1.0.dist-info/RECORD: proj/__init__.py,sha256=")),
        "the project's RECORD: {our_rows:?}"
    );
    let keep = |t: BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        t.into_iter()
            .filter(|(k, _)| comparable(k) && !k.starts_with("_virtualenv") && !k.ends_with(".pth"))
            .collect()
    };
    let (ours, theirs) = (keep(ours), keep(theirs));
    let differ: Vec<&String> = ours
        .keys()
        .chain(theirs.keys())
        .filter(|k| ours.get(*k) != theirs.get(*k))
        .collect();
    assert!(differ.is_empty(), "files that differ: {differ:?}");
    for f in [
        "proj/__init__.py",
        "proj-0.1.0.dist-info/METADATA",
        "proj-0.1.0.dist-info/WHEEL",
        "proj-0.1.0.dist-info/entry_points.txt",
    ] {
        assert!(ours.contains_key(f), "{f} compared");
    }

    // pyproject.toml asks for more than uv.lock: `ocibuild lock` warns, as `uv sync --locked`.
    fs::write(
        p.join("proj/pyproject.toml"),
        pyproject.replace("\"click>=8", "\"click>=8.9"),
    )
    .unwrap();
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", p.join("cache"))
            .arg("lock")
            .arg(&app),
    );
    let err = stderr(&o);
    assert!(
        err.contains("warning: [python]: ")
            && err.contains("proj/uv.lock is stale")
            && err.contains("pyproject.toml has click>=8.9"),
        "{err}"
    );
    fs::write(p.join("proj/pyproject.toml"), &pyproject).unwrap();

    // A builder without the project's backend: refused naming it and the project.
    fs::write(
        p.join("builder.toml"),
        PROJECT_BUILDER.replace(", \"python3-hatchling\"", ""),
    )
    .unwrap();
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", p.join("cache"))
        .args(["build", "-o"])
        .arg(p.join("img2"))
        .arg(&app));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("[python] project `proj`: building its wheel")
            && err.contains(
                "the builder lacks build requirements of proj: hatchling (not installed)"
            ),
        "{err}"
    );
}
