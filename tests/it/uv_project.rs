//! `[python] project`: a uv project's own package built into a wheel by a step in the
//! `sdist-builder`, under real podman. As in tests/it/sdists.rs the builder is Debian's static
//! busybox with a stand-in `python3` (the project carries the wheel the stand-in "builds"), so
//! this is offline and about ocibuild's part: the project's files as the step's input (hashed
//! as a `[[layer]]`'s, `.dockerignore` honoured), the wheel checked against uv.lock's project
//! entry, pinned in the lock (`built-from` the `project:NAME` step), installed in its own layer
//! after the dependencies' with its console script; a changed file rebuilding only that layer;
//! `--locked` with the pinned files and with changed ones; and the refusals. The real backend
//! building a real uv project is tests/it/online_uvlock.rs.

use std::path::{Path, PathBuf};

use fs_err as fs;
use serde_json::Value;

use crate::aptfix::{fixture, python_universe, Fixture};
use crate::common::{self, ocibuild, run, stderr, stdout, tempdir};
use crate::wheel_recipe::{recipe, wheels};
use crate::wheelfix::make_wheel;

/// `python3 -c FRONTEND PROJECT_DIR OUT` in the builder: checks that it was given ocibuild's
/// frontend for a project, and copies the wheel the project carries in `dist/`; a project
/// with a `FAIL` file fails as pep517.py does when the backend is not in the builder.
const STAND_IN: &str = r#"#!/bin/busybox sh
set -e
echo "$2" | /bin/busybox grep -q "frontend for \`\[python\] project\`" || { echo "not the project frontend"; exit 9; }
echo "$2" | /bin/busybox grep -q 'build_wheel' || { echo "no build half"; exit 9; }
if [ -e "$3/FAIL" ]; then
  echo "ocibuild: the builder lacks build requirements of $(/bin/busybox basename "$3"): hatchling (not installed)"
  exit 3
fi
/bin/busybox cp "$3"/dist/*.whl "$4"/
echo "stand-in: built $(/bin/busybox ls "$4")"
"#;

/// A podman that appends a line to `dir/runs` for each container it starts.
fn counting_podman(dir: &Path) -> PathBuf {
    let real = common::which("podman").expect("podman on PATH");
    let script = dir.join("podman");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \" $* \" in *\" run \"*) echo run >> '{}';; esac\nexec '{}' \"$@\"\n",
            dir.join("runs").display(),
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn runs(dir: &Path) -> usize {
    fs::read_to_string(dir.join("runs"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// The wheel the stand-in "builds": `app` `version`, a console script `app`, `body` as its
/// module.
fn project_wheel(proj: &Path, name: &str, version: &str, body: &str) {
    let dist = proj.join("dist");
    let _ = fs::remove_dir_all(&dist);
    fs::create_dir_all(&dist).unwrap();
    let di = format!("{name}-{version}.dist-info");
    make_wheel(
        &dist,
        &format!("{name}-{version}-py3-none-any.whl"),
        &[
            ("app/__init__.py", body.as_bytes(), 0o644),
            (
                &format!("{di}/entry_points.txt"),
                b"[console_scripts]\napp = app:main\n",
                0o644,
            ),
            (
                &format!("{di}/METADATA"),
                format!("Metadata-Version: 2.4\nName: {name}\nVersion: {version}\nRequires-Dist: click\n")
                    .as_bytes(),
                0o644,
            ),
        ],
        true,
        &|_| {},
    );
}

/// uv.lock's text: the project `app` 0.1.0 (`source`: `editable` or `virtual`) depending on
/// click, whose wheel is the test's.
fn uv_lock(click_sha: &str, click_size: u64, source: &str) -> String {
    format!(
        r#"version = 1
revision = 2
requires-python = ">=3.11"

[[package]]
name = "app"
version = "0.1.0"
source = {{ {source} = "." }}
dependencies = [
    {{ name = "click" }},
]

[package.metadata]
requires-dist = [{{ name = "click" }}]

[[package]]
name = "click"
version = "8.1.7"
source = {{ registry = "https://example.invalid/simple" }}
wheels = [
    {{ path = "../wheels/click-8.1.7-py3-none-any.whl", hash = "sha256:{click_sha}", size = {click_size} }},
]
"#
    )
}

/// The uv project (`proj/`: pyproject.toml, uv.lock, its module, a `.dockerignore` leaving out
/// `.venv`, and the wheel the stand-in copies), click's wheel, the busybox builder and the
/// recipe (`python` added to `[python]`). `None` without podman or a static busybox.
fn setup(dir: &Path, source: &str, python: &str) -> Option<(PathBuf, Fixture)> {
    if !common::require_tool("podman") {
        return None;
    }
    let busybox = common::require_static_busybox()?;
    let f = fixture(&python_universe(), false);
    let w = wheels(dir);
    let (_, sha, size) = w
        .files
        .iter()
        .find(|(n, _, _)| n.starts_with("click-"))
        .unwrap()
        .clone();
    let proj = dir.join("proj");
    fs::create_dir_all(proj.join("app")).unwrap();
    fs::write(
        proj.join("pyproject.toml"),
        "[project]\nname = \"app\"\nversion = \"0.1.0\"\nrequires-python = \">=3.11\"\n\
         dependencies = [\"click\"]\n\n[project.scripts]\napp = \"app:main\"\n\n\
         [build-system]\nrequires = [\"hatchling\"]\nbuild-backend = \"hatchling.build\"\n",
    )
    .unwrap();
    fs::write(proj.join("uv.lock"), uv_lock(&sha, size, source)).unwrap();
    fs::write(
        proj.join("app/__init__.py"),
        "def main():\n    print('app')\n",
    )
    .unwrap();
    fs::write(proj.join(".dockerignore"), ".venv\n").unwrap();
    project_wheel(&proj, "app", "0.1.0", "def main():\n    print('app')\n");
    fs::write(dir.join("python3"), STAND_IN).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(dir.join("python3"), std::fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(
        dir.join("builder.toml"),
        format!(
            "[image]\nname = \"localhost/ocibuild-test/project-builder\"\n\n[[layer]]\n\
             name = \"busybox\"\nsrc = \"{}\"\ndest = \"/bin/busybox\"\n\n[[layer]]\n\
             name = \"python3\"\nsrc = \"python3\"\ndest = \"/bin/python3\"\n\n\
             [config]\nenv = {{ PATH = \"/bin\" }}\n",
            busybox.display()
        ),
    )
    .unwrap();
    let r = recipe(
        dir,
        &f,
        &format!(
            "lock = \"proj/uv.lock\"\nproject = \"proj\"\nsdist-builder = {{ recipe = \"builder.toml\" }}\n{python}"
        ),
    );
    Some((r, f))
}

fn build(
    dir: &Path,
    recipe: &Path,
    out: &str,
    cache: &str,
    extra: &[&str],
) -> std::process::Output {
    run(ocibuild()
        .env("OCIBUILD_PODMAN", counting_podman(dir))
        .env("OCIBUILD_CACHE", dir.join(cache))
        .args(["build", "--json", "-o"])
        .arg(dir.join(out))
        .args(extra)
        .arg(recipe))
}

fn json(o: &std::process::Output) -> Value {
    common::assert_success(o, "build");
    serde_json::from_str(&stdout(o)).expect("build --json")
}

/// The layers' names and digests, in order.
fn layers(v: &Value) -> Vec<(String, String)> {
    v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap_or("").to_string(),
                l["digest"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Built once (one container), installed in the last layer with its console script and
/// dist-info, pinned in the lock; a rebuild runs nothing; a file `.dockerignore` leaves out
/// changes nothing; a changed file rebuilds only the project's wheel and layer; `--locked`
/// with those files in an empty store gives the same image; `--locked` with other files
/// builds them and pins nothing.
#[test]
fn the_project_is_built_installed_last_and_rebuilt_alone_when_its_files_change() {
    let t = tempdir();
    let p = t.path();
    let Some((app, _f)) = setup(p, "editable", "") else {
        return;
    };
    let first = json(&build(p, &app, "a", "cache-a", &[]));
    assert_eq!(runs(p), 1, "one step ran: the project's");
    let ls = layers(&first);
    assert_eq!(
        ls.last().unwrap().0,
        "wheel-app",
        "the project's layer is last: {ls:?}"
    );
    assert_eq!(ls[ls.len() - 2].0, "wheel-click", "{ls:?}");
    let (_, blob) = common::layer_named(&p.join("a"), &first, "wheel-app");
    let files = common::tar_listing(&blob).join("\n");
    for want in [
        "usr/local/lib/python3.12/dist-packages/app/__init__.py",
        "usr/local/lib/python3.12/dist-packages/app-0.1.0.dist-info/RECORD",
        "usr/local/lib/python3.12/dist-packages/app-0.1.0.dist-info/METADATA",
        "usr/local/lib/python3.12/dist-packages/app-0.1.0.dist-info/INSTALLER",
        "usr/local/bin/app",
    ] {
        assert!(files.contains(want), "{want} in\n{files}");
    }
    let lock = fs::read_to_string(p.join("app.lock")).unwrap();
    let entry = lock
        .split("[[wheel]]")
        .find(|w| w.contains("name = \"app\""))
        .unwrap_or_else(|| panic!("the project's wheel in the lock: {lock}"));
    assert!(
        entry.contains("filename = \"app-0.1.0-py3-none-any.whl\"")
            && entry.contains("url = \"proj\"")
            && entry.contains("step = \"project:app\""),
        "{entry}"
    );
    assert!(
        lock.contains("name = \"project:app\""),
        "the step is pinned: {lock}"
    );

    let warm = json(&build(p, &app, "b", "cache-a", &[]));
    assert_eq!(runs(p), 1, "a rebuild runs no step");
    assert_eq!(warm["manifest"], first["manifest"]);

    // What .dockerignore leaves out is not the project's input.
    fs::create_dir_all(p.join("proj/.venv/lib")).unwrap();
    fs::write(p.join("proj/.venv/lib/junk.py"), "x = 1\n").unwrap();
    let ignored = json(&build(p, &app, "b2", "cache-a", &[]));
    assert_eq!(runs(p), 1, ".venv is ignored");
    assert_eq!(ignored["manifest"], first["manifest"]);

    // An empty store, --locked, the files the lock pins: built again to the same image.
    let cold = json(&build(p, &app, "c", "cache-c", &["--locked"]));
    assert_eq!(runs(p), 2, "an empty store builds the project again");
    assert_eq!(
        cold["manifest"], first["manifest"],
        "the same wheel, the same image"
    );

    // A file of the project changed: only its wheel is built again, only its layer differs.
    fs::write(
        p.join("proj/app/__init__.py"),
        "def main():\n    print('app 2')\n",
    )
    .unwrap();
    project_wheel(
        &p.join("proj"),
        "app",
        "0.1.0",
        "def main():\n    print('app 2')\n",
    );
    let lock_before = fs::read_to_string(p.join("app.lock")).unwrap();
    let o = build(p, &app, "d", "cache-a", &["--locked"]);
    let locked = json(&o);
    assert_eq!(runs(p), 3, "the project's step ran again");
    assert!(
        stderr(&o).contains("[python] project: its files are not those"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        fs::read_to_string(p.join("app.lock")).unwrap(),
        lock_before,
        "--locked pins nothing"
    );
    let changed = json(&build(p, &app, "e", "cache-a", &[]));
    assert_eq!(runs(p), 3, "the same files, the step's cache");
    // The same layers; the manifests differ by the lock's digest the image records (the
    // --locked build left the lock as it was).
    assert_eq!(layers(&changed), layers(&locked));
    let (old, new) = (layers(&first), layers(&changed));
    assert_eq!(old.len(), new.len());
    let differ: Vec<&str> = old
        .iter()
        .zip(&new)
        .filter(|(a, b)| a != b)
        .map(|(a, _)| a.0.as_str())
        .collect();
    assert_eq!(differ, ["wheel-app"], "only the project's layer changed");
    let lock = fs::read_to_string(p.join("app.lock")).unwrap();
    assert_ne!(lock, lock_before, "a build pins the new wheel");
    assert_eq!(lock.matches("name = \"project:app\"").count(), 1, "{lock}");

    // The lock's wheel altered by hand, with the files it pins: --locked says it differs.
    let sha = lock
        .split("[[wheel]]")
        .find(|w| w.contains("name = \"app\""))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("sha256 = "))
        .unwrap()
        .to_string();
    let altered = format!("sha256 = \"sha256:{}\"", "1".repeat(64));
    fs::write(p.join("app.lock"), lock.replacen(&sha, &altered, 1)).unwrap();
    let o = build(p, &app, "f", "cache-a", &["--locked"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("[python] project `app`: its files are those the lock pins, but its wheel built again is app-0.1.0-py3-none-any.whl")
            && err.contains("not reproducible"),
        "{err}"
    );
}

/// A virtual project (uv's `package = false`) is refused; a wheel of another version than
/// uv.lock's project entry is refused; a backend missing from the builder is named with the
/// project; none of them pins a project wheel.
#[test]
fn a_virtual_project_a_wrong_version_and_a_missing_backend_are_refused() {
    let t = tempdir();
    let p = t.path();
    let Some((app, _f)) = setup(p, "virtual", "") else {
        return;
    };
    let o = build(p, &app, "a", "cache", &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("app.toml:")
            && err.contains("[python] project: `app` is a virtual project in uv.lock")
            && err.contains("uv does not build it"),
        "{err}"
    );
    assert_eq!(runs(p), 0, "nothing ran");

    let t = tempdir();
    let p = t.path();
    let (app, _f) = setup(p, "editable", "").unwrap();
    project_wheel(&p.join("proj"), "app", "0.2.0", "");
    let o = build(p, &app, "a", "cache", &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("[python] project `app`: the wheel its backend built, app-0.2.0-py3-none-any.whl: it is version 0.2.0, uv.lock's project entry says 0.1.0"),
        "{err}"
    );
    project_wheel(&p.join("proj"), "other", "0.1.0", "");
    let o = build(p, &app, "a", "cache", &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("it is a wheel of other, uv.lock's project is app"),
        "{err}"
    );
    assert!(!fs::read_to_string(p.join("app.lock"))
        .unwrap_or_default()
        .contains("project:app"));

    fs::write(p.join("proj/FAIL"), "").unwrap();
    let o = build(p, &app, "a", "cache", &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("[python] project `app`: building its wheel")
            && err.contains("step `project:app` failed (exit code 3)")
            && err
                .contains("the builder lacks build requirements of app: hatchling (not installed)"),
        "{err}"
    );
}

/// `project` needs a uv.lock and an `sdist-builder`, a directory with pyproject.toml, and is
/// never editable: each refused at its place when the recipe is read.
#[test]
fn project_needs_a_uv_lock_a_builder_and_refuses_editable() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    let p = t.path();
    let w = wheels(p);
    crate::wheel_recipe::pylock(p, &w, &|_| true);
    fs::create_dir_all(p.join("proj")).unwrap();
    fs::write(p.join("proj/pyproject.toml"), "[project]\nname = \"app\"\n").unwrap();
    fs::write(p.join("proj/uv.lock"), uv_lock("00", 1, "editable")).unwrap();
    let refused = |python: &str, want: &[&str]| {
        let r = recipe(p, &f, python);
        let o = run(ocibuild().args(["build", "-o"]).arg(p.join("img")).arg(&r));
        assert!(!o.status.success());
        let err = stderr(&o);
        assert!(err.contains("app.toml:"), "{err}");
        for w in want {
            assert!(err.contains(w), "{w} in {err}");
        }
    };
    refused(
        "lock = \"pylock.toml\"\nproject = \"proj\"\nsdist-builder = \"debian:trixie\"",
        &["[python] project needs `lock = \"uv.lock\"`"],
    );
    refused(
        "lock = \"proj/uv.lock\"\nproject = \"proj\"",
        &["[python] project: the project is built into a wheel by its PEP 517 backend in the `sdist-builder`"],
    );
    refused(
        "lock = \"proj/uv.lock\"\nproject = { path = \"proj\", editable = true }\nsdist-builder = \"debian:trixie\"",
        &["an editable install is refused", "`uv sync --no-editable`"],
    );
    refused(
        "lock = \"proj/uv.lock\"\nproject = \"wheels\"\nsdist-builder = \"debian:trixie\"",
        &["[python] project `wheels`: no pyproject.toml in it"],
    );
    assert!(!p.join("img").exists());
}

/// A uv.lock package with no wheel for the image's platform and no sdist is refused naming the
/// package and the image's platform (the wheel and why it does not fit).
#[test]
fn a_uv_lock_package_with_no_wheel_for_the_platform_and_no_sdist_is_named() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    let p = t.path();
    fs::create_dir_all(p.join("proj")).unwrap();
    fs::write(
        p.join("proj/pyproject.toml"),
        "[project]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"click\"]\n",
    )
    .unwrap();
    let text = uv_lock(&"0".repeat(64), 1, "editable").replace(
        "../wheels/click-8.1.7-py3-none-any.whl",
        "../wheels/click-8.1.7-py3-none-musllinux_1_2_aarch64.whl",
    );
    fs::write(p.join("proj/uv.lock"), text).unwrap();
    let r = recipe(p, &f, "lock = \"proj/uv.lock\"");
    let o = run(ocibuild().args(["build", "-o"]).arg(p.join("img")).arg(&r));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("proj/uv.lock:")
            && err.contains("click: no wheel fits the image (CPython 3.12, x86_64, glibc")
            && err.contains("click-8.1.7-py3-none-musllinux_1_2_aarch64.whl"),
        "{err}"
    );
}

/// `ocibuild lock` says when uv.lock no longer answers pyproject.toml (a warning; the lock is
/// written from uv.lock as it is), and `build --locked` refuses it.
#[test]
fn lock_warns_when_the_uv_lock_is_stale_and_locked_refuses_it() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    let p = t.path();
    let w = wheels(p);
    let (_, sha, size) = w
        .files
        .iter()
        .find(|(n, _, _)| n.starts_with("click-"))
        .unwrap()
        .clone();
    fs::create_dir_all(p.join("proj")).unwrap();
    fs::write(p.join("proj/uv.lock"), uv_lock(&sha, size, "editable")).unwrap();
    let pyproject = |spec: &str| {
        fs::write(
            p.join("proj/pyproject.toml"),
            format!("[project]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"click{spec}\"]\n"),
        )
        .unwrap();
    };
    pyproject("");
    let r = recipe(p, &f, "lock = \"proj/uv.lock\"");
    let lock = |extra: &[&str]| {
        run(ocibuild()
            .env("OCIBUILD_CACHE", p.join("cache"))
            .arg("lock")
            .args(extra)
            .arg(&r))
    };
    let o = lock(&[]);
    common::assert_success(&o, "lock");
    assert!(!stderr(&o).contains("is stale"), "{}", stderr(&o));
    pyproject(">=9");
    let o = lock(&[]);
    common::assert_success(&o, "lock");
    let err = stderr(&o);
    assert!(
        err.contains("warning: [python]: ")
            && err.contains("proj/uv.lock is stale: pyproject.toml's requirements are not the ones it was resolved for")
            && err.contains("pyproject.toml has click>=9")
            && err.contains("run `uv lock`"),
        "{err}"
    );
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", p.join("cache"))
        .args(["build", "--locked", "-o"])
        .arg(p.join("img"))
        .arg(&r));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("proj/uv.lock is stale"),
        "{}",
        stderr(&o)
    );
}

/// The shipped example (recipes/uv-app.toml building examples/uv-app; built by hand, as it
/// needs the Debian archive and PyPI): it and its builder load, the project's `.dockerignore`
/// applies, its lock pins the project's wheel and step, and uv's own builds of the project are
/// pinned to the builder's hatchling.
#[test]
fn shipped_uv_app_recipe_loads_and_pins_the_project_wheel() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let recipe = ocibuild::recipe::load(&root.join("recipes/uv-app.toml")).unwrap();
    ocibuild::recipe::load(&root.join("recipes/uv-app/builder.toml")).unwrap();
    let py = recipe.python.as_ref().unwrap();
    let project = py.project.as_ref().expect("[python] project");
    assert_eq!(project.written, "../examples/uv-app");
    assert!(project.spec.ignore.iter().any(|i| i.contains(".venv")));
    let lock = fs::read_to_string(root.join("recipes/uv-app.lock")).unwrap();
    assert!(
        lock.contains("filename = \"uv_app-0.1.0-py3-none-any.whl\"")
            && lock.contains("step = \"project:uv-app\"")
            && lock.contains("name = \"project:uv-app\""),
        "{lock}"
    );
    let uvlock = fs::read_to_string(root.join("examples/uv-app/uv.lock")).unwrap();
    assert!(
        uvlock.contains("name = \"uv-app\"\nversion = \"0.1.0\"\nsource = { editable = \".\" }")
    );
    let builder = fs::read_to_string(root.join("recipes/uv-app/builder.lock")).unwrap();
    let hatchling = builder
        .split("[[apt.package]]")
        .find(|p| p.contains("name = \"python3-hatchling\""))
        .unwrap();
    let pyproject = fs::read_to_string(root.join("examples/uv-app/pyproject.toml")).unwrap();
    assert!(
        hatchling.contains("version = \"1.27.0-1\"") && pyproject.contains("\"hatchling==1.27.0\""),
        "the builder's hatchling is the one uv's builds are pinned to"
    );
}

/// A project that depends on another member of its uv workspace is refused naming the member
/// (`uv sync` would build it; ocibuild builds the one project named), before any builder runs.
#[test]
fn a_project_depending_on_a_workspace_member_is_refused() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    let p = t.path();
    let w = wheels(p);
    let (_, sha, size) = w
        .files
        .iter()
        .find(|(n, _, _)| n.starts_with("click-"))
        .unwrap()
        .clone();
    fs::create_dir_all(p.join("proj")).unwrap();
    let text = uv_lock(&sha, size, "editable").replace(
        "dependencies = [\n    { name = \"click\" },\n]",
        "dependencies = [\n    { name = \"click\" },\n    { name = \"lib\" },\n]",
    )
        + "\n[[package]]\nname = \"lib\"\nversion = \"0.1.0\"\nsource = { editable = \"lib\" }\n";
    fs::write(p.join("proj/uv.lock"), text).unwrap();
    fs::write(
        p.join("proj/pyproject.toml"),
        "[project]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"click\", \"lib\"]\n",
    )
    .unwrap();
    let r = recipe(
        p,
        &f,
        "lock = \"proj/uv.lock\"\nproject = \"proj\"\nsdist-builder = \"localhost/none:1\"",
    );
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", p.join("cache"))
        .args(["build", "-o"])
        .arg(p.join("img"))
        .arg(&r));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("app.toml:")
            && err.contains("[python] project: `app` depends on the workspace member(s) lib"),
        "{err}"
    );
}
