//! `[python] sdist-builder`: a pylock package with only an sdist built into a wheel by a step
//! in the builder, under real podman. The builder is Debian's static busybox with a stand-in
//! `python3` (the test's sdists carry the wheel the stand-in "builds"), so this is offline and
//! about ocibuild's part: the step (no network, its key, its cache, its lock entry), the wheel
//! read back from its output, checked against the image's interpreter, pinned in the lock
//! (`built-from`) and installed like any other. The real PEP 517 frontend building a real
//! sdist is tests/it/online_sdists.rs.

use std::path::{Path, PathBuf};

use fs_err as fs;
use serde_json::Value;

use crate::aptfix::{fixture, python_universe, Fixture};
use crate::common::{self, ocibuild, run, stderr, stdout, tempdir};
use crate::wheel_recipe::{pylock, recipe, wheels};
use crate::wheelfix::make_wheel;

/// `python3 -c FRONTEND SDIST OUT` in the builder: checks that it was given ocibuild's
/// frontend, unpacks the sdist and copies the wheel it carries; an sdist with a `FAIL` file
/// fails as a real backend lacking a build requirement does.
const STAND_IN: &str = r#"#!/bin/busybox sh
set -e
echo "$2" | /bin/busybox grep -q 'build_wheel' || { echo "not ocibuild's frontend"; exit 9; }
cd /tmp && /bin/busybox tar -xzf "$3"
if [ -e /tmp/fastlib-1.0/FAIL ]; then
  echo "ocibuild: the builder lacks build requirements of fastlib-1.0.tar.gz: cython>=3 (not installed)"
  exit 3
fi
/bin/busybox cp /tmp/fastlib-1.0/dist/*.whl "$4"/
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

/// The project: click as a wheel, fastlib 1.0 as an sdist only (carrying a wheel of `tag`,
/// and a `FAIL` file when `fail`), the busybox builder, the recipe naming it; with the apt
/// fixture it is built against.
fn project(dir: &Path, tag: &str, fail: bool) -> Option<(PathBuf, Fixture)> {
    if !common::require_tool("podman") || !common::require_tool("tar") {
        return None;
    }
    let busybox = common::require_static_busybox()?;
    let f = fixture(&python_universe(), false);
    let w = wheels(dir);
    // pylock.toml without fastlib's wheels: it gets an sdist line, replaced here by ours.
    let lock = pylock(dir, &w, &|f: &str| !f.starts_with("fastlib"));
    let src = dir.join("sdist-src/fastlib-1.0");
    fs::create_dir_all(src.join("dist")).unwrap();
    fs::write(src.join("PKG-INFO"), "Name: fastlib\nVersion: 1.0\n").unwrap();
    if fail {
        fs::write(src.join("FAIL"), "").unwrap();
    }
    make_wheel(
        &src.join("dist"),
        &format!("fastlib-1.0-{tag}.whl"),
        &[
            ("fastlib/__init__.py", b"BUILT = 'from the sdist'\n", 0o644),
            (
                "fastlib-1.0.dist-info/METADATA",
                b"Name: fastlib\nVersion: 1.0\nLicense-Expression: MIT\n",
                0o644,
            ),
        ],
        false,
        &|_| {},
    );
    fs::create_dir_all(dir.join("sdists")).unwrap();
    let sdist = dir.join("sdists/fastlib-1.0.tar.gz");
    common::run_ok(
        std::process::Command::new("tar")
            .args([
                "--sort=name",
                "--mtime=@0",
                "--owner=0",
                "--group=0",
                "-czf",
            ])
            .arg(&sdist)
            .arg("-C")
            .arg(dir.join("sdist-src"))
            .arg("fastlib-1.0"),
    );
    let sha = ocibuild::digest::Digest::of(&fs::read(&sdist).unwrap()).hex();
    let text = fs::read_to_string(&lock).unwrap().replace(
        "sdist = { url = \"https://example.invalid/fastlib-1.0.tar.gz\", hashes = { sha256 = \"00\" } }",
        &format!("sdist = {{ name = \"fastlib-1.0.tar.gz\", path = \"sdists/fastlib-1.0.tar.gz\", hashes = {{ sha256 = \"{sha}\" }} }}"),
    );
    assert!(text.contains(&sha), "{text}");
    fs::write(&lock, text).unwrap();
    fs::write(dir.join("python3"), STAND_IN).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(dir.join("python3"), std::fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(
        dir.join("builder.toml"),
        format!(
            "[image]\nname = \"localhost/ocibuild-test/sdist-builder\"\n\n[[layer]]\n\
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
        "lock = \"pylock.toml\"\nsdist-builder = { recipe = \"builder.toml\" }",
    );
    // The fixture's archive lives as long as it does.
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

/// Built once (one container), pinned in the lock with the sdist it came from and its step,
/// installed with its files and RECORD; a rebuild runs nothing; a `--locked` build in an empty
/// store builds it again to the same wheel and the same image; a lock whose wheel sha256 the
/// build does not give is refused under `--locked`.
#[test]
fn an_sdist_is_built_in_its_builder_pinned_and_installed_like_a_wheel() {
    let t = tempdir();
    let p = t.path();
    let Some((app, _f)) = project(p, "cp312-cp312-linux_x86_64", false) else {
        return;
    };
    let first = json(&build(p, &app, "a", "cache-a", &[]));
    assert_eq!(runs(p), 1, "one step ran: the sdist's");
    let lock = fs::read_to_string(p.join("app.lock")).unwrap();
    assert!(
        lock.contains("filename = \"fastlib-1.0-cp312-cp312-linux_x86_64.whl\""),
        "{lock}"
    );
    assert!(
        lock.contains("[wheel.built-from]") || lock.contains("built-from = {"),
        "{lock}"
    );
    assert!(lock.contains("step = \"sdist:fastlib\""), "{lock}");
    assert!(
        lock.contains("name = \"sdist:fastlib\""),
        "the step is in the lock: {lock}"
    );
    assert!(
        lock.contains("fastlib-1.0.tar.gz"),
        "the wheel's url is the sdist's: {lock}"
    );
    // The wheel layer has the built package, installed (RECORD, INSTALLER).
    let (_, blob) = common::layer_named(&p.join("a"), &first, "wheels-click-and-1-more");
    let files = common::tar_listing(&blob).join("\n");
    for want in [
        "fastlib/__init__.py",
        "fastlib-1.0.dist-info/RECORD",
        "fastlib-1.0.dist-info/INSTALLER",
    ] {
        assert!(files.contains(want), "{want} in\n{files}");
    }

    let warm = json(&build(p, &app, "b", "cache-a", &[]));
    assert_eq!(runs(p), 1, "a rebuild runs no step");
    assert_eq!(warm["manifest"], first["manifest"]);

    let cold = json(&build(p, &app, "c", "cache-c", &["--locked"]));
    assert_eq!(runs(p), 2, "an empty store builds the sdist again");
    assert_eq!(
        cold["manifest"], first["manifest"],
        "the same wheel, the same image"
    );

    // The lock's wheel sha256 altered: the build gives another, and --locked says so.
    let lock = fs::read_to_string(p.join("app.lock")).unwrap();
    let built = lock
        .split("[[wheel]]")
        .find(|w| w.contains("name = \"fastlib\""))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("sha256 = "))
        .unwrap()
        .to_string();
    let altered = format!("sha256 = \"sha256:{}\"", "1".repeat(64));
    fs::write(p.join("app.lock"), lock.replacen(&built, &altered, 1)).unwrap();
    let o = build(p, &app, "d", "cache-a", &["--locked"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("python package `fastlib`: its sdist built again gives fastlib-1.0-cp312-cp312-linux_x86_64.whl")
            && err.contains("the build is not reproducible"),
        "{err}"
    );
}

/// A wheel built for another Python is refused, naming its tags and the image's Python; a
/// failing build shows its exit code and what it printed; neither writes a wheel to the lock.
#[test]
fn a_wheel_for_another_python_and_a_failing_build_are_refused() {
    let t = tempdir();
    let p = t.path();
    let Some((app, _f)) = project(p, "cp311-cp311-linux_x86_64", false) else {
        return;
    };
    let o = build(p, &app, "a", "cache", &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("python package `fastlib`: the wheel built from its sdist, fastlib-1.0-cp311-cp311-linux_x86_64.whl")
            && err.contains("the builder's Python must be the image's")
            && err.contains("cp311-cp311-linux_x86_64"),
        "{err}"
    );
    assert!(!fs::read_to_string(p.join("app.lock"))
        .unwrap_or_default()
        .contains("fastlib-1.0-cp311"));

    let t = tempdir();
    let p = t.path();
    let (app, _f) = project(p, "cp312-cp312-linux_x86_64", true).unwrap();
    let o = build(p, &app, "a", "cache", &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("python package `fastlib`: building its sdist")
            && err.contains("step `sdist:fastlib` failed (exit code 3)")
            && err
                .contains("the builder lacks build requirements of fastlib-1.0.tar.gz: cython>=3"),
        "{err}"
    );
    let lock = fs::read_to_string(p.join("app.lock")).unwrap_or_default();
    assert!(
        !lock.contains("sdist:fastlib"),
        "nothing pinned for a failed step: {lock}"
    );
}

/// The shipped recipe that installs PyCUDA from uv's pylock.toml (recipes/pycuda-pylock.toml;
/// its builder is ~5 GB, so it is built by hand, not here): it and its builder load, the lock
/// has PyCUDA only as an sdist, and the recipe's lock pins the wheel built from it.
#[test]
fn shipped_pycuda_pylock_recipe_loads_and_pins_the_built_wheel() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    let recipe = ocibuild::recipe::load(&repo.join("pycuda-pylock.toml")).unwrap();
    ocibuild::recipe::load(&repo.join("pycuda-pylock/builder.toml")).unwrap();
    let py = recipe.python.as_ref().unwrap();
    assert!(
        matches!(&py.sdist_builder.as_ref().unwrap().image, ocibuild::recipe::StepImage::Recipe { written, .. } if written == "pycuda-pylock/builder.toml")
    );
    let pylock = fs::read_to_string(repo.join("pycuda-pylock/pylock.toml")).unwrap();
    let pycuda = pylock
        .split("[[packages]]")
        .find(|p| p.contains("name = \"pycuda\""))
        .unwrap();
    assert!(
        pycuda.contains("sdist = {") && !pycuda.contains("wheels"),
        "{pycuda}"
    );
    let lock = fs::read_to_string(repo.join("pycuda-pylock.lock")).unwrap();
    assert!(
        lock.contains("filename = \"pycuda-2025.1.3-cp313-cp313-linux_x86_64.whl\"")
            && lock.contains("step = \"sdist:pycuda\"")
            && lock.contains("name = \"sdist:pycuda\""),
        "{lock}"
    );
}
