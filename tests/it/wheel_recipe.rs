//! Wheels through the recipe: a pylock.toml with several wheels per package, a hashed
//! requirements.txt against a simple index served on 127.0.0.1 (PEP 691 JSON and PEP 503
//! HTML), the lock, layers, cache and thread independence, and the refusals. The interpreter
//! (CPython 3.12, glibc 2.36, x86_64) comes from the generated apt repository (tests/aptfix).

use crate::aptfix;
use crate::common;
mod copies;
mod overlap;
use crate::wheelfix;

use fs_err as fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use aptfix::{fixture, python_universe, serve, Fixture};
use common::context::TestContext;
use common::{layer_named as layer, ocibuild, run, run_ok, stdout, tar_listing, tempdir};
use ocibuild::python::wheel::WheelInput;
use serde_json::Value;
use wheelfix::{big_text, make_wheel};

fn no_tweak(_: &mut Vec<String>) {}

pub(crate) struct Wheels {
    pub(crate) dir: PathBuf,
    /// filename → (sha256 hex, size)
    pub(crate) files: Vec<(String, String, u64)>,
}

fn info(w: &WheelInput) -> (String, String, u64) {
    (
        w.file.filename.clone(),
        w.sha256.hex(),
        fs::metadata(&w.path).unwrap().len(),
    )
}

/// click (pure, a console script) and fastlib in four builds: only the manylinux_2_28 one fits.
pub(crate) fn wheels(dir: &Path) -> Wheels {
    let wd = dir.join("wheels");
    fs::create_dir_all(&wd).unwrap();
    let mut files = vec![info(&make_wheel(
        &wd,
        "click-8.1.7-py3-none-any.whl",
        &[
            (
                "click_demo/__init__.py",
                b"def main():\n    print('demo')\n",
                0o644,
            ),
            (
                "click-8.1.7.dist-info/entry_points.txt",
                b"[console_scripts]\nclick-demo = click_demo:main\n",
                0o644,
            ),
            (
                "click-8.1.7.dist-info/METADATA",
                b"Name: click\nVersion: 8.1.7\nLicense-Expression: BSD-3-Clause\n",
                0o644,
            ),
        ],
        true,
        &no_tweak,
    ))];
    for tag in [
        "cp312-cp312-manylinux_2_28_x86_64",
        "cp312-cp312-manylinux_2_39_x86_64",
        "cp311-cp311-manylinux_2_17_x86_64",
        "cp312-cp312-musllinux_1_2_x86_64",
    ] {
        let body = format!("BUILD = {tag:?}\n");
        files.push(info(&fastlib_wheel(&wd, tag, &body)));
    }
    Wheels { dir: wd, files }
}

/// fastlib 1.0's `_core.so`: large enough that a gzip layer reuses its deflate blocks.
fn core_so() -> Vec<u8> {
    let mut v = b"\x7fELF".to_vec();
    v.extend(big_text(2 * ocibuild::layer::SPLICE_MIN as usize));
    v
}

/// fastlib 1.0 for `tag`, its `__init__.py` being `body`.
fn fastlib_wheel(dir: &Path, tag: &str, body: &str) -> WheelInput {
    make_wheel(
        dir,
        &format!("fastlib-1.0-{tag}.whl"),
        &[
            ("fastlib/__init__.py", body.as_bytes(), 0o644),
            ("fastlib/_core.so", &core_so(), 0o755),
            (
                "fastlib-1.0.dist-info/METADATA",
                b"Name: fastlib\nVersion: 1.0\nLicense: free text\nClassifier: License :: OSI Approved :: MIT License\n",
                0o644,
            ),
        ],
        false,
        &no_tweak,
    )
}

pub(crate) fn pylock(dir: &Path, w: &Wheels, only: &dyn Fn(&str) -> bool) -> PathBuf {
    let mut text = String::from(
        "lock-version = \"1.0\"\ncreated-by = \"test\"\nrequires-python = \">=3.11\"\n",
    );
    for pkg in ["click", "fastlib"] {
        let version = if pkg == "click" { "8.1.7" } else { "1.0" };
        let entries: Vec<String> = w
            .files
            .iter()
            .filter(|(f, _, _)| f.starts_with(&format!("{pkg}-")) && only(f))
            .map(|(f, sha, size)| {
                format!("{{ name = \"{f}\", path = \"wheels/{f}\", size = {size}, hashes = {{ sha256 = \"{sha}\" }} }}")
            })
            .collect();
        text.push_str(&format!(
            "\n[[packages]]\nname = \"{pkg}\"\nversion = \"{version}\"\nwheels = [\n  {}\n]\n",
            entries.join(",\n  ")
        ));
        if pkg == "fastlib" && entries.is_empty() {
            text.push_str("sdist = { url = \"https://example.invalid/fastlib-1.0.tar.gz\", hashes = { sha256 = \"00\" } }\n");
        }
    }
    let p = dir.join("pylock.toml");
    fs::write(&p, text).unwrap();
    p
}

pub(crate) fn recipe(dir: &Path, f: &Fixture, python: &str) -> PathBuf {
    let text = format!(
        r#"[image]
name = "example.com/wheels"
platform = "linux/amd64"

{source}
[apt]
packages = ["python3"]

[python]
{python}
"#,
        source = aptfix::source_toml(f, &f.key),
    );
    let p = dir.join("app.toml");
    fs::write(&p, text).unwrap();
    p
}

fn build(recipe: &Path, out: &Path, cache: &Path, extra: &[&str]) -> Value {
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", cache)
            .args(["build", "--json", "-o"])
            .arg(out)
            .arg(recipe)
            .args(extra),
    );
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// The pylock recipe of several wheels per package, built once (by the first test that asks)
/// into `img` with the store `cache1`.
struct Built {
    _cx: TestContext,
    _f: Fixture,
    /// The project directory (the recipe, its lock, pylock.toml, wheels/).
    t: PathBuf,
    w: Wheels,
    r: PathBuf,
    out: PathBuf,
    v: Value,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cx = TestContext::new().shared();
        let f = fixture(&python_universe(), false);
        let t = cx.path().to_path_buf();
        let w = wheels(&t);
        pylock(&t, &w, &|_| true);
        let r = recipe(&t, &f, "lock = \"pylock.toml\"");
        let out = t.join("img");
        let v = build(&r, &out, &t.join("cache1"), &[]);
        Built {
            _cx: cx,
            _f: f,
            t,
            w,
            r,
            out,
            v,
        }
    })
}

#[test]
fn the_lock_pins_the_one_fitting_wheel_of_each_package() {
    let b = built();
    let t = &b.t;
    let v = &b.v;
    let names: Vec<&str> = v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["apt", "rootfs", "wheels-click-and-1-more"]);

    // The lock pins the one fitting fastlib wheel.
    let lock = fs::read_to_string(t.join("app.lock")).unwrap();
    assert!(
        lock.contains("[python-packages]\nfile = \"pylock.toml\""),
        "{lock}"
    );
    assert!(
        lock.contains("target = \"cp312-x86_64-glibc2.36\""),
        "{lock}"
    );
    assert!(
        lock.contains("filename = \"fastlib-1.0-cp312-cp312-manylinux_2_28_x86_64.whl\""),
        "{lock}"
    );
    assert_eq!(lock.matches("[[wheel]]").count(), 2);
}

#[test]
fn the_sbom_declares_each_wheels_licence_from_its_metadata() {
    let b = built();
    let (t, r, out) = (&b.t, &b.r, &b.out);
    // The SBOM declares each wheel's licence from its METADATA in the store: PEP 639's
    // License-Expression (click), an OSI classifier (fastlib; its free-text License is not one).
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", t.join("cache1"))
            .args(["sbom", "--format", "cyclonedx", "--image"])
            .arg(format!("oci:{}", out.display()))
            .arg(r),
    );
    let cdx: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let comps = cdx["components"].as_array().unwrap();
    let licence = |n: &str| comps.iter().find(|c| c["name"] == n).unwrap()["licenses"].clone();
    assert_eq!(
        licence("click"),
        serde_json::json!([{"license": {"id": "BSD-3-Clause"}}])
    );
    assert_eq!(
        licence("fastlib"),
        serde_json::json!([{"license": {"id": "MIT"}}])
    );
}

#[test]
fn the_wheel_layer_holds_the_installed_files_and_splices_the_wheels_deflate_blocks() {
    let b = built();
    let (t, w, out, v) = (&b.t, &b.w, &b.out, &b.v);
    let (_, blob) = layer(out, v, "wheels-click-and-1-more");
    let listing = tar_listing(&blob);
    let site = "usr/local/lib/python3.12/dist-packages";
    for want in [
        format!("f 0644 0:0 {site}/fastlib/__init__.py"),
        format!("f 0755 0:0 {site}/fastlib/_core.so"),
        format!("f 0644 0:0 {site}/fastlib-1.0.dist-info/INSTALLER"),
        format!("f 0644 0:0 {site}/click_demo/__init__.py"),
        "f 0755 0:0 usr/local/bin/click-demo".to_string(),
    ] {
        assert!(listing.contains(&want), "{want} not in {listing:#?}");
    }
    let unpack = t.join("unpack");
    fs::create_dir(&unpack).unwrap();
    run_ok(
        std::process::Command::new("tar")
            .arg("-xf")
            .arg(&blob)
            .arg("-C")
            .arg(&unpack),
    );
    let init = fs::read_to_string(unpack.join(site).join("fastlib/__init__.py")).unwrap();
    assert!(fs::read(unpack.join(site).join("fastlib/_core.so")).unwrap() == core_so());
    // The layer (gzip, the default) carries _core.so's deflate blocks from the wheel as they
    // are; umoci (Go's compress/gzip) unpacks it to the same bytes.
    let whl = w
        .dir
        .join("fastlib-1.0-cp312-cp312-manylinux_2_28_x86_64.whl");
    let mut ar = zip::ZipArchive::new(fs::File::open(&whl).unwrap()).unwrap();
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut ar.by_name_raw(b"fastlib/_core.so").unwrap(), &mut raw)
        .unwrap();
    let gz = fs::read(&blob).unwrap();
    // (From its second byte: in a one-block stream the first holds the last-block bit, cleared.)
    assert!(gz.windows(4095).any(|win| win == &raw[1..4096]), "spliced");
    if common::require_tool("umoci") {
        let bundle = t.join("bundle");
        common::umoci_unpack(out, "latest", &bundle);
        let rootfs = bundle.join("rootfs").join(site);
        assert!(fs::read(rootfs.join("fastlib/_core.so")).unwrap() == core_so());
        assert_eq!(
            fs::read(rootfs.join("fastlib/__init__.py")).unwrap(),
            init.as_bytes()
        );
    }
    assert!(init.contains("manylinux_2_28"), "{init}");
    let launcher = fs::read_to_string(unpack.join("usr/local/bin/click-demo")).unwrap();
    assert!(
        launcher.starts_with("#!/usr/bin/python3.12\n"),
        "{launcher}"
    );
    assert!(
        launcher.contains("from click_demo import main"),
        "{launcher}"
    );
}

#[test]
fn warm_store_cold_store_and_thread_counts_give_the_same_image() {
    let b = built();
    let (t, r, v) = (&b.t, &b.r, &b.v);
    // Warm store, cold store, one thread or two: the same image.
    let warm = build(r, &t.join("img2"), &t.join("cache1"), &["-j", "1"]);
    assert_eq!(warm["manifest"], v["manifest"]);
    assert!(warm["layers"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["cached"] == true));
    let cold = build(r, &t.join("img3"), &t.join("cache2"), &["-j", "2"]);
    assert_eq!(cold["manifest"], v["manifest"]);
}

#[test]
fn the_lock_answers_without_the_wheels_and_names_an_edited_pylock() {
    let b = built();
    let t = &b.t;
    // The lock answers: with the wheels gone, a locked build in the warm store still works;
    // an edited pylock.toml makes --locked name the change.
    // (on a copy of the project: the other tests read its wheels and its pylock.toml)
    let copy = b.t.join("copy");
    fs::create_dir_all(&copy).unwrap();
    for file in ["app.toml", "app.lock", "pylock.toml"] {
        fs::copy(b.t.join(file), copy.join(file)).unwrap();
    }
    run_ok(
        std::process::Command::new("cp")
            .arg("-a")
            .arg(&b.w.dir)
            .arg(&copy),
    );
    let r = copy.join("app.toml");
    let w = Wheels {
        dir: copy.join("wheels"),
        files: b.w.files.clone(),
    };
    fs::rename(&w.dir, copy.join("wheels-gone")).unwrap();
    build(&r, &t.join("img4"), &t.join("cache1"), &["--locked"]);
    fs::rename(copy.join("wheels-gone"), &w.dir).unwrap();
    pylock(&copy, &w, &|f| !f.contains("musllinux"));
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", t.join("cache1"))
        .args(["build", "--locked", "-o"])
        .arg(t.join("img5"))
        .arg(&r));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("pylock.toml changed"),
        "{err}"
    );
}

/// A simple index for click and fastlib: JSON (PEP 691) for one, HTML (PEP 503) for the other.
fn index(root: &Path, w: &Wheels) {
    for pkg in ["click", "fastlib"] {
        let d = root.join("simple").join(pkg);
        fs::create_dir_all(&d).unwrap();
        let files: Vec<&(String, String, u64)> = w
            .files
            .iter()
            .filter(|(f, _, _)| f.starts_with(&format!("{pkg}-")))
            .collect();
        if pkg == "click" {
            let json: Vec<String> = files
                .iter()
                .map(|(f, sha, size)| format!(r#"{{"filename":"{f}","url":"../../files/{f}","hashes":{{"sha256":"{sha}"}},"size":{size}}}"#))
                .collect();
            fs::write(
                d.join("index.json"),
                format!(
                    r#"{{"meta":{{"api-version":"1.1"}},"name":"{pkg}","files":[{}]}}"#,
                    json.join(",")
                ),
            )
            .unwrap();
        } else {
            let html: Vec<String> = files
                .iter()
                .map(|(f, sha, _)| format!("<a href=\"../../files/{f}#sha256={sha}\">{f}</a><br/>"))
                .collect();
            fs::write(
                d.join("index.html"),
                format!("<html><body>{}</body></html>", html.join("\n")),
            )
            .unwrap();
        }
    }
    let fd = root.join("files");
    fs::create_dir_all(&fd).unwrap();
    for (f, _, _) in &w.files {
        fs::copy(w.dir.join(f), fd.join(f)).unwrap();
    }
}

#[test]
fn requirements_with_hashes_from_a_simple_index_match_the_pylock_build() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    let w = wheels(t.path());
    let root = t.path().join("index");
    index(&root, &w);
    let url = serve(root);
    let hash = |name: &str| {
        let (_, sha, _) = w
            .files
            .iter()
            .find(|(f, _, _)| f.starts_with(name))
            .unwrap();
        format!("--hash=sha256:{sha}")
    };
    let all_fastlib: Vec<String> = w
        .files
        .iter()
        .filter(|(f, _, _)| f.starts_with("fastlib"))
        .map(|(_, sha, _)| format!("    --hash=sha256:{sha}"))
        .collect();
    fs::write(
        t.path().join("requirements.txt"),
        format!(
            "# pinned\nclick==8.1.7 {}\nfastlib==1.0 \\\n{}\nwindows-only==1.0 ; sys_platform == \"win32\" --hash=sha256:{}\n",
            hash("click"),
            all_fastlib.join(" \\\n"),
            "0".repeat(64)
        ),
    )
    .unwrap();
    let r = recipe(
        t.path(),
        &f,
        &format!("requirements = \"requirements.txt\"\nindex = \"{url}/simple\""),
    );
    let v = build(&r, &t.path().join("img"), &t.path().join("cache"), &[]);
    let (req_layer, _) = layer(&t.path().join("img"), &v, "wheels-click-and-1-more");

    pylock(t.path(), &w, &|_| true);
    let r2 = recipe(t.path(), &f, "lock = \"pylock.toml\"");
    fs::remove_file(t.path().join("app.lock")).unwrap();
    let v2 = build(&r2, &t.path().join("img2"), &t.path().join("cache"), &[]);
    let (lock_layer, _) = layer(&t.path().join("img2"), &v2, "wheels-click-and-1-more");
    assert_eq!(req_layer, lock_layer, "same wheels, same layer");
}

#[test]
fn wheel_refusals_are_clear_and_write_nothing() {
    let f = fixture(&python_universe(), false);
    type Filter<'a> = &'a dyn Fn(&str) -> bool;
    let cases: &[(Filter<'_>, &str)] = &[
        (
            &|f: &str| !f.starts_with("fastlib") || f.contains("2_39"),
            "needs glibc 2.39, the image has glibc 2.36",
        ),
        (
            &|f: &str| !f.starts_with("fastlib"),
            "names no `sdist-builder` to build it in",
        ),
    ];
    for (only, want) in cases {
        let t = tempdir();
        let w = wheels(t.path());
        pylock(t.path(), &w, *only);
        let r = recipe(t.path(), &f, "lock = \"pylock.toml\"");
        let out = t.path().join("img");
        let o = run(ocibuild().args(["build", "-o"]).arg(&out).arg(&r));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{want}");
        assert!(err.contains(want), "{want}: {err}");
        assert!(!out.exists());
    }
}

/// `verify` from the recipe and the lock: a lock that points to another wheel than the image was
/// built with is found, with the lock digest named first and the changed file listed.
#[test]
fn verify_finds_a_lock_pointing_to_another_wheel() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    let w = wheels(t.path());
    pylock(t.path(), &w, &|_| true);
    let r = recipe(t.path(), &f, "lock = \"pylock.toml\"");
    let out = t.path().join("img");
    let cache = t.path().join("cache");
    build(&r, &out, &cache, &[]);
    let ok = run(ocibuild()
        .env("OCIBUILD_CACHE", &cache)
        .arg("verify")
        .arg(&r)
        .arg("--against")
        .arg(format!("oci:{}", out.display())));
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    // Another build of fastlib 1.0 (same tags, other content), swapped into the lock by hand.
    let other = fastlib_wheel(
        &w.dir,
        "cp312-cp312-manylinux_2_17_x86_64",
        "BUILD = 'rebuilt'\n",
    );
    let (file, sha, size) = info(&other);
    let lock_path = t.path().join("app.lock");
    let lock = fs::read_to_string(&lock_path).unwrap();
    let old = w
        .files
        .iter()
        .find(|(f, _, _)| f.contains("manylinux_2_28"))
        .unwrap();
    let edited = lock
        .replace(&old.0, &file)
        .replace(&old.1, &sha)
        .replace(&format!("size = {}", old.2), &format!("size = {size}"));
    assert_ne!(edited, lock);
    fs::write(&lock_path, edited).unwrap();
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", &cache)
        .arg("verify")
        .arg(&r)
        .arg("--against")
        .arg(format!("oci:{}", out.display())));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("the image was built from another lock"),
        "{text}"
    );
    assert!(
        text.contains("usr/local/lib/python3.12/dist-packages/fastlib/__init__.py"),
        "{text}"
    );
}

/// `extras`, `groups` and `no-dev` choose from a uv.lock; with a pylock.toml they are refused
/// at their place; a uv.lock of another format version is named with the version read.
#[test]
fn uv_keys_need_a_uv_lock_and_an_unknown_uv_lock_version_is_named() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    let w = wheels(t.path());
    pylock(t.path(), &w, &|_| true);
    let r = recipe(t.path(), &f, "lock = \"pylock.toml\"\nextras = [\"plot\"]");
    let o = run(ocibuild()
        .args(["build", "-o"])
        .arg(t.path().join("img"))
        .arg(&r));
    assert!(!o.status.success());
    let err = common::stderr(&o);
    assert!(
        err.contains("app.toml:")
            && err.contains("`extras`, `groups` and `no-dev` choose from a uv.lock"),
        "{err}"
    );
    fs::write(
        t.path().join("uv.lock"),
        "version = 2\nrevision = 1\nrequires-python = \">=3.11\"\n",
    )
    .unwrap();
    let r = recipe(t.path(), &f, "lock = \"uv.lock\"\nno-dev = true");
    let o = run(ocibuild()
        .args(["build", "-o"])
        .arg(t.path().join("img"))
        .arg(&r));
    assert!(!o.status.success());
    let err = common::stderr(&o);
    assert!(
        err.contains("uv.lock: uv.lock version 2 is not one ocibuild reads (it reads version 1)"),
        "{err}"
    );
    assert!(!t.path().join("img").exists());
}
