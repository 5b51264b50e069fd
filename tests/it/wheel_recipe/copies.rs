//! The base-versus-wheels lint (issue 39) with real ELF files made by the C compiler: a Debian
//! package ships `libfoo.so.1`, a wheel ships it again, and another wheel's extension links it
//! with `RUNPATH $ORIGIN/../nvidia/foo/lib`. The build says which copy loads and why, and the
//! host's own loader (`ldd` over the same tree) agrees; with `LD_LIBRARY_PATH` in the config the
//! Debian copy loads, and `[image] drop-unused-copies` leaves the wheel's out of its layer and
//! its RECORD.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use fs_err as fs;
use serde_json::Value;

use super::aptfix::{self, fixture, python_universe, Data};
use super::common::context::TestContext;
use super::common::{self, ocibuild, run, stdout, tar_listing};
use super::no_tweak;
use super::wheelfix::make_wheel;

const SITE: &str = "usr/local/lib/python3.12/dist-packages";
const DEB_LIB: &str = "usr/lib/x86_64-linux-gnu/libfoo.so.1";
const RUNPATH: &str = "$ORIGIN/../nvidia/foo/lib";

fn cc(dir: &Path, args: &[&str]) {
    let out = run(Command::new("cc").current_dir(dir).args(args));
    common::assert_success(&out, "cc");
}

/// `libfoo.so.1` (soname libfoo.so.1) and `_ext.so`, which needs it, with RUNPATH [`RUNPATH`].
fn compile(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    fs::write(dir.join("foo.c"), "int foo(void) { return 42; }\n").unwrap();
    fs::write(
        dir.join("ext.c"),
        "int foo(void);\nint ext(void) { return foo() + 1; }\n",
    )
    .unwrap();
    cc(
        dir,
        &[
            "-shared",
            "-fPIC",
            "-o",
            "libfoo.so.1",
            "-Wl,-soname,libfoo.so.1",
            "foo.c",
        ],
    );
    cc(
        dir,
        &[
            "-shared",
            "-fPIC",
            "-o",
            "_ext.so",
            "ext.c",
            "-L.",
            "-l:libfoo.so.1",
            &format!("-Wl,-rpath,{RUNPATH}"),
            "-Wl,--enable-new-dtags",
        ],
    );
    (
        fs::read(dir.join("libfoo.so.1")).unwrap(),
        fs::read(dir.join("_ext.so")).unwrap(),
    )
}

/// Two wheels: nvidia-foo (the library again) and fooext (the extension). The pylock's path.
fn wheels(dir: &Path, lib: &[u8], ext: &[u8]) -> PathBuf {
    let wd = dir.join("wheels");
    fs::create_dir_all(&wd).unwrap();
    let mut text = String::from(
        "lock-version = \"1.0\"\ncreated-by = \"test\"\nrequires-python = \">=3.11\"\n",
    );
    for (name, member, body) in [
        ("nvidia-foo", "nvidia/foo/lib/libfoo.so.1", lib),
        ("fooext", "fooext/_ext.so", ext),
    ] {
        let dist = name.replace('-', "_");
        let w = make_wheel(
            &wd,
            &format!("{dist}-1.0-py3-none-manylinux2014_x86_64.whl"),
            &[
                (member, body, 0o755),
                (
                    &format!("{dist}-1.0.dist-info/METADATA"),
                    format!("Name: {name}\nVersion: 1.0\n").as_bytes(),
                    0o644,
                ),
            ],
            true,
            &no_tweak,
        );
        let f = &w.file.filename;
        let size = fs::metadata(&w.path).unwrap().len();
        text.push_str(&format!(
            "\n[[packages]]\nname = \"{name}\"\nversion = \"1.0\"\nwheels = [{{ name = \"{f}\", path = \"wheels/{f}\", size = {size}, hashes = {{ sha256 = \"{}\" }} }}]\n",
            w.sha256.hex()
        ));
    }
    let p = dir.join("pylock.toml");
    fs::write(&p, text).unwrap();
    p
}

/// What the host's loader resolves `libfoo.so.1` to for `_ext.so` placed in `root` as in the
/// image, with `llp` as LD_LIBRARY_PATH (image paths, mapped into `root`): an image path.
fn host_loader(root: &Path, lib: &[u8], ext: &[u8], llp: Option<&str>) -> String {
    for (p, b) in [
        (DEB_LIB.to_string(), lib),
        (format!("{SITE}/nvidia/foo/lib/libfoo.so.1"), lib),
        (format!("{SITE}/fooext/_ext.so"), ext),
    ] {
        let at = root.join(p);
        fs::create_dir_all(at.parent().unwrap()).unwrap();
        fs::write(&at, b).unwrap();
    }
    let mut c = Command::new("ldd");
    c.arg(root.join(format!("{SITE}/fooext/_ext.so")));
    c.env_remove("LD_LIBRARY_PATH");
    if let Some(d) = llp {
        c.env("LD_LIBRARY_PATH", root.join(d.trim_start_matches('/')));
    }
    let out = stdout(&run(&mut c));
    let line = out
        .lines()
        .find(|l| l.contains("libfoo.so.1 =>"))
        .unwrap_or_else(|| panic!("ldd: {out}"));
    let path = line
        .split("=> ")
        .nth(1)
        .unwrap()
        .split(" (")
        .next()
        .unwrap();
    let root = fs::canonicalize(root).unwrap();
    let path = fs::canonicalize(path).unwrap();
    format!("/{}", path.strip_prefix(&root).unwrap().display())
}

fn recipe(dir: &Path, f: &aptfix::Fixture, image_extra: &str, config: &str) -> PathBuf {
    recipe_with(dir, f, image_extra, config, "\"libfoo1\"")
}

fn recipe_with(
    dir: &Path,
    f: &aptfix::Fixture,
    image_extra: &str,
    config: &str,
    packages: &str,
) -> PathBuf {
    let text = format!(
        "[image]\nname = \"example.com/copies\"\nplatform = \"linux/amd64\"\n{image_extra}\n{}\n[apt]\npackages = [\"python3\", {packages}]\n\n[python]\nlock = \"pylock.toml\"\n\n{config}",
        aptfix::source_toml(f, &f.key),
    );
    let p = dir.join("app.toml");
    fs::write(&p, text).unwrap();
    p
}

/// The text of the file at `path` in the (gzip) layer.
fn layer_text(blob: &Path, path: &str) -> String {
    let files = crate::cuda::gzip_layer_files(fs::File::open(blob).unwrap());
    let bytes = files
        .get(path)
        .unwrap_or_else(|| panic!("no {path} in {}", blob.display()));
    String::from_utf8(bytes.clone()).unwrap()
}

fn dup(v: &Value) -> &Value {
    let dups = v["wheels"]["duplicateLibraries"].as_array().unwrap();
    assert_eq!(dups.len(), 1, "{v:#}");
    &dups[0]
}

/// What `LD_LIBRARY_PATH` names in the tests that set it.
const LD_CONFIG: &str = "[config]\nenv = { LD_LIBRARY_PATH = \"/usr/lib/x86_64-linux-gnu\" }\n";

/// The compiled library and extension, and the archive with libfoo1 and foo-tools: made once
/// by the first test that asks (`None` off x86_64 or without cc), with a store the tests share.
struct Compiled {
    cx: TestContext,
    lib: Vec<u8>,
    ext: Vec<u8>,
    f: aptfix::Fixture,
}

fn compiled() -> Option<&'static Compiled> {
    static COMPILED: OnceLock<Option<Compiled>> = OnceLock::new();
    COMPILED
        .get_or_init(|| {
            if std::env::consts::ARCH != "x86_64" || !common::require_tool("cc") {
                return None;
            }
            let cx = TestContext::new().shared();
            let (lib, ext) = compile(cx.path());
            let leaked: &'static [u8] = Box::leak(lib.clone().into_boxed_slice());
            let mut universe = python_universe();
            universe.push(
                aptfix::deb("libfoo1", "1.0-1")
                    .data(Data::Dir("./usr/lib/"))
                    .data(Data::Dir("./usr/lib/x86_64-linux-gnu/"))
                    .data(Data::Binary(
                        "./usr/lib/x86_64-linux-gnu/libfoo.so.1",
                        leaked,
                        0o644,
                    ))
                    .data(Data::Symlink(
                        "./usr/lib/x86_64-linux-gnu/libfoo.so",
                        "libfoo.so.1",
                    )),
            );
            // A package whose programs may link libfoo: its copy must stay.
            universe.push(
                aptfix::deb("foo-tools", "1.0-1")
                    .field("Depends", "libfoo1 (>= 1.0)")
                    .data(Data::Dir("./usr/share/"))
                    .data(Data::File("./usr/share/foo-tools", "tools\n", 0o644)),
            );
            let f = fixture(&universe, false);
            Some(Compiled { cx, lib, ext, f })
        })
        .as_ref()
}

impl Compiled {
    /// A project directory `name` with the wheels.
    fn project(&self, name: &str) -> PathBuf {
        let dir = self.cx.join(name);
        fs::create_dir_all(&dir).unwrap();
        wheels(&dir, &self.lib, &self.ext);
        dir
    }

    /// `ocibuild build` (`--json` with `json`) of `r` into `out` under `dir`, with the shared store.
    fn build(&self, dir: &Path, r: &Path, out: &str, json: bool) -> std::process::Output {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", self.cx.join("cache")).arg("build");
        if json {
            c.arg("--json");
        }
        let o = run(c.arg("-o").arg(dir.join(out)).arg(r));
        common::assert_success(&o, "build");
        o
    }
}

#[test]
fn which_copy_loads_is_said_as_the_loader_decides() {
    let Some(s) = compiled() else {
        return;
    };
    let (f, lib, ext) = (&s.f, &s.lib, &s.ext);
    let dir = s.project("which_copy_loads_is_said_as_the_loader_d");
    let build = |r: &Path, out: &str, json: bool| s.build(&dir, r, out, json);
    let user = format!("/{SITE}/fooext/_ext.so");
    // 1. RUNPATH reaches the wheel's copy: it loads, the Debian copy is unused.
    let r = recipe(dir.as_path(), f, "", "");
    let v: Value = serde_json::from_str(&stdout(&build(&r, "img1", true))).unwrap();
    let d = dup(&v);
    assert_eq!(d["origin"], "apt");
    assert_eq!(d["basePath"], format!("/{DEB_LIB}"));
    assert_eq!(d["loads"], "wheel", "{d:#}");
    assert_eq!(d["users"][0]["path"], user.as_str());
    assert_eq!(d["users"][0]["loads"], "wheel");
    assert_eq!(d["users"][0]["via"], format!("RUNPATH {RUNPATH}"));
    assert_eq!(d["unusedBytes"], lib.len());
    assert!(d.get("dropped").is_none());
    let host = host_loader(&dir.as_path().join("root1"), lib, ext, None);
    assert_eq!(
        host,
        d["wheelPath"].as_str().unwrap(),
        "the host's loader agrees"
    );
    let err = common::stderr(&build(&r, "img1", false));
    assert!(
        err.contains(&format!(
            "loaded: the wheel's copy, by the 1 ELF file(s) that link it (e.g. {user} through RUNPATH {RUNPATH}); the apt layer's copy is unused"
        )),
        "{err}"
    );
}

#[test]
fn ld_library_path_loads_the_debian_copy_and_the_wheels_is_dropped() {
    let Some(s) = compiled() else {
        return;
    };
    let (f, lib, ext) = (&s.f, &s.lib, &s.ext);
    let dir = s.project("ld_library_path_loads_the_debian_copy_an");
    let build = |r: &Path, out: &str, json: bool| s.build(&dir, r, out, json);
    let config = LD_CONFIG;
    // 2. LD_LIBRARY_PATH comes first: the Debian copy loads; dropping leaves the wheel's out.
    let r = recipe(dir.as_path(), f, "drop-unused-copies = true", config);
    let v: Value = serde_json::from_str(&stdout(&build(&r, "img2", true))).unwrap();
    let d = dup(&v);
    assert_eq!(d["loads"], "apt", "{d:#}");
    assert_eq!(
        d["users"][0]["via"],
        "LD_LIBRARY_PATH /usr/lib/x86_64-linux-gnu"
    );
    assert_eq!(d["unusedBytes"], d["wastedBytes"]);
    assert_eq!(d["dropped"], "wheel");
    let host = host_loader(
        &dir.as_path().join("root2"),
        lib,
        ext,
        Some("/usr/lib/x86_64-linux-gnu"),
    );
    assert_eq!(host, format!("/{DEB_LIB}"), "the host's loader agrees");
    // Small wheels share one layer.
    let name = v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .find(|n| n.starts_with("wheel"))
        .expect("a wheel layer");
    let (_, blob) = common::layer_named(&dir.as_path().join("img2"), &v, name);
    let listing = tar_listing(&blob);
    assert!(
        !listing.iter().any(|p| p.ends_with("libfoo.so.1")),
        "the wheel's copy is left out: {listing:?}"
    );
    let text = layer_text(&blob, &format!("{SITE}/nvidia_foo-1.0.dist-info/RECORD"));
    assert!(
        !text.contains("libfoo.so.1"),
        "RECORD lists it no more: {text}"
    );
    assert!(text.contains("METADATA"), "{text}");
}

#[test]
fn the_unused_debian_copy_is_dropped_from_the_apt_layer() {
    let Some(s) = compiled() else {
        return;
    };
    let f = &s.f;
    let dir = s.project("the_unused_debian_copy_is_dropped_from_t");
    let build = |r: &Path, out: &str, json: bool| s.build(&dir, r, out, json);
    // 3. The wheel's copy loads (no LD_LIBRARY_PATH) and dropping is asked: the Debian copy,
    // its symlink and its md5sums line leave the apt layer.
    let r = recipe(dir.as_path(), f, "drop-unused-copies = true", "");
    let v: Value = serde_json::from_str(&stdout(&build(&r, "img4", true))).unwrap();
    let d = dup(&v);
    assert_eq!(
        (&d["loads"], &d["dropped"]),
        (&Value::from("wheel"), &Value::from("apt")),
        "{d:#}"
    );
    let (_, blob) = common::layer_named(&dir.as_path().join("img4"), &v, "apt");
    let listing = tar_listing(&blob);
    assert!(
        !listing.iter().any(|p| p.contains("libfoo.so")),
        "the Debian copy and its link are left out: {listing:?}"
    );
    assert!(
        listing.iter().any(|p| p.contains("status.d/libfoo1")),
        "{listing:?}"
    );
    let md5 = layer_text(&blob, "var/lib/dpkg/status.d/libfoo1.md5sums");
    assert!(!md5.contains("libfoo.so.1"), "{md5}");
    let err = common::stderr(&build(&r, "img4", false));
    assert!(
        err.contains("the apt layer's copy is unused")
            && err.contains(": left out of the apt layer"),
        "{err}"
    );
}

#[test]
fn a_debian_copy_another_package_depends_on_is_kept() {
    let Some(s) = compiled() else {
        return;
    };
    let f = &s.f;
    let dir = s.project("a_debian_copy_another_package_depends_on");
    let build = |r: &Path, out: &str, json: bool| s.build(&dir, r, out, json);
    // ...unless another package depends on its package.
    let r = recipe_with(
        dir.as_path(),
        f,
        "drop-unused-copies = true",
        "",
        "\"libfoo1\", \"foo-tools\"",
    );
    let v: Value = serde_json::from_str(&stdout(&build(&r, "img5", true))).unwrap();
    let d = dup(&v);
    assert!(d.get("dropped").is_none(), "{d:#}");
    assert_eq!(
        d["kept"],
        "libfoo1 is a dependency of foo-tools, whose programs may link it"
    );
    let (_, blob) = common::layer_named(&dir.as_path().join("img5"), &v, "apt");
    assert!(tar_listing(&blob).iter().any(|p| p.ends_with(DEB_LIB)));
    let md5 = layer_text(&blob, "var/lib/dpkg/status.d/libfoo1.md5sums");
    assert!(md5.contains(DEB_LIB), "kept, and listed: {md5}");
}

#[test]
fn without_the_request_the_build_says_how_to_drop_the_unused_copy() {
    let Some(s) = compiled() else {
        return;
    };
    let f = &s.f;
    let dir = s.project("without_the_request_the_build_says_how_t");
    let build = |r: &Path, out: &str, json: bool| s.build(&dir, r, out, json);
    let config = LD_CONFIG;
    // 4. Without the request, the same config keeps the wheel's copy and says how to drop it.
    let r = recipe(dir.as_path(), f, "", config);
    let err = common::stderr(&build(&r, "img3", false));
    assert!(
        err.contains("the wheel's copy is unused")
            && err.contains("drop-unused-copies = true leaves it out"),
        "{err}"
    );
}
