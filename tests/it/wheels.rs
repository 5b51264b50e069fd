//! Installing wheels into layers (crates/python/src/python/wheel.rs), end to end and offline: the wheels are
//! built here with the `zip` crate, installed into a store, and the layer's tar is read back.

use crate::common;

use crate::wheelfix;
use wheelfix::{big_text, make_wheel};

mod overlap;
mod record;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use ocibuild::digest::Digest;
use ocibuild::layer::{Compression, LayerOptions};
use ocibuild::python::interpreter::PyVersion;
use ocibuild::python::wheel::{build_wheel_layer, layer_key, record_hash, WheelError, WheelInput};
use ocibuild::python::{pylock, Interpreter, Scheme};
use ocibuild::store::{CachedLayer, Store};

const SITE: &str = "usr/local/lib/python3.11/dist-packages";

fn interp() -> Interpreter {
    let version = PyVersion {
        major: 3,
        minor: 11,
    };
    Interpreter {
        version,
        executable: "/usr/bin/python3.11".into(),
        machine: "x86_64".into(),
        glibc: Some((2, 36)),
        scheme: Scheme::debian_local(version),
        full_version: None,
    }
}

fn opts(compression: Compression, threads: usize) -> LayerOptions {
    LayerOptions {
        epoch: 1_700_000_000,
        compression,
        threads,
    }
}

fn no_tweak(_: &mut Vec<String>) {}

/// The layer's entries: path → (mode, is_dir, content).
fn read_layer(store: &Store, layer: &CachedLayer) -> BTreeMap<String, (u32, bool, Vec<u8>)> {
    assert_eq!(layer.media_type, "application/vnd.oci.image.layer.v1.tar");
    let mut ar = tar::Archive::new(store.open_blob(&layer.digest).unwrap());
    let mut out = BTreeMap::new();
    let mut order = Vec::new();
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let path = String::from_utf8(e.path_bytes().into_owned()).unwrap();
        let h = e.header();
        assert_eq!((h.uid().unwrap(), h.gid().unwrap()), (0, 0));
        assert_eq!(h.mtime().unwrap(), 1_700_000_000);
        let mode = h.mode().unwrap();
        let dir = h.entry_type().is_dir();
        let mut c = Vec::new();
        e.read_to_end(&mut c).unwrap();
        order.push(path.clone());
        out.insert(path, (mode, dir, c));
    }
    let mut sorted = order.clone();
    sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    assert_eq!(order, sorted, "entries are sorted");
    out
}

fn text(l: &BTreeMap<String, (u32, bool, Vec<u8>)>, path: &str) -> String {
    String::from_utf8(
        l.get(path)
            .unwrap_or_else(|| panic!("no {path} in {:?}", l.keys()))
            .2
            .clone(),
    )
    .unwrap()
}

fn store_files(store: &Store) -> usize {
    ["blobs/sha256", "tmp"]
        .iter()
        .map(|d| fs_err::read_dir(store.root().join(d)).unwrap().count())
        .sum()
}

fn demo_wheel(dir: &Path) -> WheelInput {
    let eps: &[u8] = b"[console_scripts]\ndemo = demo.cli:main\n\n[gui_scripts]\ndemo-gui = demo.gui:App.run [gui]\n";
    make_wheel(
        dir,
        "demo-1.0-py3-none-any.whl",
        &[
            ("demo/__init__.py", b"VERSION = '1.0'\n", 0o644),
            ("demo/cli.py", b"def main():\n    print('hi')\n", 0o644),
            (
                "demo/gui.py",
                b"class App:\n    @staticmethod\n    def run(): pass\n",
                0o644,
            ),
            (
                "demo-1.0.dist-info/METADATA",
                b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
                0o644,
            ),
            ("demo-1.0.dist-info/entry_points.txt", eps, 0o644),
        ],
        true,
        &no_tweak,
    )
}

fn native_wheel(dir: &Path) -> WheelInput {
    make_wheel(
        dir,
        "native-2.0-cp311-cp311-manylinux_2_17_x86_64.whl",
        &[
            ("native/__init__.py", b"", 0o644),
            ("native/_ext.so", b"\x7fELF fake", 0o755),
            ("native-2.0.data/purelib/native_py.py", b"X = 1\n", 0o644),
            (
                "native-2.0.data/scripts/run",
                b"#!python -E\r\nimport native\n",
                0o644,
            ),
            (
                "native-2.0.data/scripts/runw",
                b"#!pythonw\nimport native\n",
                0o644,
            ),
            (
                "native-2.0.data/scripts/tool.sh",
                b"#!/bin/sh\necho hi\n",
                0o644,
            ),
            ("native-2.0.data/headers/native.h", b"int f(void);\n", 0o644),
            ("native-2.0.data/data/share/native/x.txt", b"data\n", 0o644),
            (
                "native-2.0.dist-info/METADATA",
                b"Metadata-Version: 2.1\nName: native\nVersion: 2.0\n",
                0o644,
            ),
        ],
        false,
        &no_tweak,
    )
}

#[test]
fn pure_wheel_with_entry_points() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let w = demo_wheel(tmp.path());
    let layer = build_wheel_layer(&store, &[w], &interp(), &opts(Compression::None, 1)).unwrap();
    let l = read_layer(&store, &layer);
    let paths: Vec<&str> = l.keys().map(String::as_str).collect();
    let expected = [
        "usr/",
        "usr/local/",
        "usr/local/bin/",
        "usr/local/bin/demo",
        "usr/local/bin/demo-gui",
        "usr/local/lib/",
        "usr/local/lib/python3.11/",
        "usr/local/lib/python3.11/dist-packages/",
        "usr/local/lib/python3.11/dist-packages/demo-1.0.dist-info/",
        "usr/local/lib/python3.11/dist-packages/demo-1.0.dist-info/INSTALLER",
        "usr/local/lib/python3.11/dist-packages/demo-1.0.dist-info/METADATA",
        "usr/local/lib/python3.11/dist-packages/demo-1.0.dist-info/RECORD",
        "usr/local/lib/python3.11/dist-packages/demo-1.0.dist-info/WHEEL",
        "usr/local/lib/python3.11/dist-packages/demo-1.0.dist-info/entry_points.txt",
        "usr/local/lib/python3.11/dist-packages/demo/",
        "usr/local/lib/python3.11/dist-packages/demo/__init__.py",
        "usr/local/lib/python3.11/dist-packages/demo/cli.py",
        "usr/local/lib/python3.11/dist-packages/demo/gui.py",
    ];
    assert_eq!(paths, expected);
    for (p, (mode, dir, _)) in &l {
        let want = if *dir || p.starts_with("usr/local/bin/") {
            0o755
        } else {
            0o644
        };
        assert_eq!(*mode, want, "{p}");
    }
    assert_eq!(
        text(&l, &format!("{SITE}/demo-1.0.dist-info/INSTALLER")),
        "ocibuild\n"
    );
    assert_eq!(
        text(&l, "usr/local/bin/demo"),
        "#!/usr/bin/python3.11\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom demo.cli import main\nif __name__ == \"__main__\":\n    sys.argv[0] = re.sub(r\"(-script\\.pyw|\\.exe)?$\", \"\", sys.argv[0])\n    sys.exit(main())\n"
    );
    let gui = text(&l, "usr/local/bin/demo-gui");
    assert!(
        gui.contains("from demo.gui import App\n") && gui.contains("sys.exit(App.run())"),
        "{gui}"
    );
    // RECORD: sorted, relative to the site directory, hashes of the installed bytes.
    let record = text(&l, &format!("{SITE}/demo-1.0.dist-info/RECORD"));
    let lines: Vec<&str> = record.lines().collect();
    let rel: Vec<&str> = lines.iter().map(|r| r.split(',').next().unwrap()).collect();
    assert_eq!(
        rel,
        [
            "../../../bin/demo",
            "../../../bin/demo-gui",
            "demo-1.0.dist-info/INSTALLER",
            "demo-1.0.dist-info/METADATA",
            "demo-1.0.dist-info/RECORD",
            "demo-1.0.dist-info/WHEEL",
            "demo-1.0.dist-info/entry_points.txt",
            "demo/__init__.py",
            "demo/cli.py",
            "demo/gui.py",
        ]
    );
    assert!(lines.contains(&"demo-1.0.dist-info/RECORD,,"));
    for line in lines.iter().filter(|l| !l.ends_with(",,")) {
        let mut f = line.split(',');
        let (p, h, n) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        let installed = if let Some(b) = p.strip_prefix("../../../bin/") {
            format!("usr/local/bin/{b}")
        } else {
            format!("{SITE}/{p}")
        };
        let content = &l[&installed].2;
        assert_eq!(h, record_hash(&Digest::of(content)), "{p}");
        assert_eq!(n, content.len().to_string(), "{p}");
    }
}

#[test]
fn platlib_wheel_with_data_dirs() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let w = native_wheel(tmp.path());
    let layer = build_wheel_layer(&store, &[w], &interp(), &opts(Compression::None, 1)).unwrap();
    let l = read_layer(&store, &layer);
    let mode = |p: &str| l.get(p).unwrap_or_else(|| panic!("no {p}")).0;
    assert_eq!(mode(&format!("{SITE}/native/_ext.so")), 0o755);
    assert_eq!(mode(&format!("{SITE}/native/__init__.py")), 0o644);
    assert_eq!(text(&l, &format!("{SITE}/native_py.py")), "X = 1\n");
    assert_eq!(
        text(&l, "usr/local/bin/run"),
        "#!/usr/bin/python3.11\nimport native\n"
    );
    assert_eq!(
        text(&l, "usr/local/bin/runw"),
        "#!/usr/bin/python3.11\nimport native\n"
    );
    assert_eq!(text(&l, "usr/local/bin/tool.sh"), "#!/bin/sh\necho hi\n");
    for s in ["run", "runw", "tool.sh"] {
        assert_eq!(mode(&format!("usr/local/bin/{s}")), 0o755);
    }
    assert_eq!(
        text(&l, "usr/local/include/python3.11/native/native.h"),
        "int f(void);\n"
    );
    assert_eq!(text(&l, "usr/local/share/native/x.txt"), "data\n");
    assert!(!l.keys().any(|p| p.contains(".data/")), "{:?}", l.keys());
    let record = text(&l, &format!("{SITE}/native-2.0.dist-info/RECORD"));
    for want in [
        "../../../bin/run,",
        "../../../include/python3.11/native/native.h,",
        "../../../share/native/x.txt,",
        "native_py.py,",
        "native/_ext.so,",
    ] {
        assert!(
            record.lines().any(|l| l.starts_with(want)),
            "{want} not in\n{record}"
        );
    }
    let script = b"#!/usr/bin/python3.11\nimport native\n";
    let run = format!(
        "../../../bin/run,{},{}",
        record_hash(&Digest::of(script)),
        script.len()
    );
    assert!(record.lines().any(|l| l == run), "{run} not in\n{record}");
}

#[test]
fn deterministic_across_threads_and_input_order() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let a = demo_wheel(tmp.path());
    let b = native_wheel(tmp.path());
    let one = build_wheel_layer(
        &store,
        &[a.clone(), b.clone()],
        &interp(),
        &opts(Compression::GZIP, 1),
    )
    .unwrap();
    let four = build_wheel_layer(
        &store,
        &[b.clone(), a.clone()],
        &interp(),
        &opts(Compression::GZIP, 4),
    )
    .unwrap();
    assert_eq!(one, four);
    let zstd1 = build_wheel_layer(
        &store,
        &[a.clone(), b.clone()],
        &interp(),
        &opts(Compression::ZSTD, 1),
    )
    .unwrap();
    let zstd3 = build_wheel_layer(
        &store,
        &[a.clone(), b.clone()],
        &interp(),
        &opts(Compression::ZSTD, 3),
    )
    .unwrap();
    assert_eq!(zstd1, zstd3);
    assert_eq!(one.diff_id, zstd1.diff_id);
    let k1 = layer_key(
        &[a.clone(), b.clone()],
        &interp(),
        &opts(Compression::GZIP, 1),
        None,
    )
    .unwrap();
    let k2 = layer_key(
        &[b.clone(), a.clone()],
        &interp(),
        &opts(Compression::GZIP, 8),
        None,
    )
    .unwrap();
    assert_eq!(k1, k2);
    assert_ne!(
        k1,
        layer_key(
            &[a.clone(), b.clone()],
            &interp(),
            &opts(Compression::ZSTD, 1),
            None
        )
        .unwrap()
    );
    assert_ne!(
        k1,
        layer_key(
            &[a.clone(), b.clone()],
            &interp(),
            &opts(Compression::Gzip(1), 1),
            None
        )
        .unwrap(),
        "the level is part of the key"
    );
    let mut other = interp();
    other.executable = "/opt/py/bin/python3".into();
    assert_ne!(
        k1,
        layer_key(&[a, b], &other, &opts(Compression::GZIP, 1), None).unwrap()
    );
}

#[test]
fn unsafe_member_paths_are_refused() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    for (i, (member, why)) in [
        ("../evil.py", "`..` path component"),
        ("/etc/evil", "absolute path"),
        ("a\\b.py", "backslash"),
    ]
    .iter()
    .enumerate()
    {
        let w = make_wheel(
            tmp.path(),
            &format!("e-{i}-py3-none-any.whl"),
            &[(member, b"x", 0o644)],
            true,
            &no_tweak,
        );
        let e =
            build_wheel_layer(&store, &[w], &interp(), &opts(Compression::None, 1)).unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(e, WheelError::BadPath { .. }) && msg.contains(why) && msg.contains(member),
            "{msg}"
        );
    }
}

#[test]
fn zip_symlinks_and_local_names_that_lie_are_refused() {
    use std::io::Write;
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    // A symlink member: refused, not written as a file holding its target.
    let w = make_wheel(
        tmp.path(),
        "lnk-1.0-py3-none-any.whl",
        &[("lnk/a.py", b"x", 0o644)],
        true,
        &no_tweak,
    );
    let mut zw = zip::ZipWriter::new_append(
        fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&w.path)
            .unwrap(),
    )
    .unwrap();
    zw.add_symlink(
        "lnk/evil",
        "/etc/shadow",
        zip::write::SimpleFileOptions::default(),
    )
    .unwrap();
    zw.finish().unwrap().flush().unwrap();
    let w = WheelInput {
        sha256: ocibuild::digest::Digest::of(&fs_err::read(&w.path).unwrap()),
        ..w
    };
    let e = build_wheel_layer(&store, &[w], &interp(), &opts(Compression::None, 1)).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("`lnk/evil`") && msg.contains("a symlink"),
        "{msg}"
    );

    // A local header that names another file than the central directory (same length).
    let w = make_wheel(
        tmp.path(),
        "lie-1.0-py3-none-any.whl",
        &[("lie/good.py", b"print(1)", 0o644)],
        true,
        &no_tweak,
    );
    let mut bytes = fs_err::read(&w.path).unwrap();
    let at = bytes
        .windows(11)
        .position(|x| x == b"lie/good.py")
        .expect("the local header's name");
    bytes[at + 4..at + 8].copy_from_slice(b"evil");
    fs_err::write(&w.path, &bytes).unwrap();
    let w = WheelInput {
        sha256: ocibuild::digest::Digest::of(&bytes),
        ..w
    };
    let e = build_wheel_layer(&store, &[w], &interp(), &opts(Compression::None, 1)).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("`lie/good.py`") && msg.contains("local header names another file"),
        "{msg}"
    );
}

#[test]
fn metadata_that_names_another_version_or_project_is_refused() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let build = |file: &str, metadata: &str| {
        let di = format!(
            "{}.dist-info/METADATA",
            file.split('-').take(2).collect::<Vec<_>>().join("-")
        );
        let w = make_wheel(
            tmp.path(),
            file,
            &[("m/x.py", b"x", 0o644), (&di, metadata.as_bytes(), 0o644)],
            true,
            &no_tweak,
        );
        build_wheel_layer(&store, &[w], &interp(), &opts(Compression::None, 1))
    };
    let meta = |name: &str, v: &str| {
        format!("Metadata-Version: 2.1\nName: {name}\nVersion: {v}\n\nVersion: 0 in the body\n")
    };
    assert!(build("victim-1.0-py3-none-any.whl", &meta("Victim", "1.0.0")).is_ok());
    let e = build("victim-2.0-py3-none-any.whl", &meta("victim", "9.9")).unwrap_err();
    assert!(
        e.to_string()
            .contains("its METADATA says version 9.9, the file name 2.0"),
        "{e}"
    );
    let e = build("victim-3.0-py3-none-any.whl", &meta("other", "3.0")).unwrap_err();
    assert!(e.to_string().contains("its METADATA names `other`"), "{e}");
}

#[test]
fn pylock_chooses_the_wheel_for_the_image() {
    let tmp = common::tempdir();
    let dir = tmp.path();
    let files: &[(&str, &[u8], u32)] = &[("fast/__init__.py", b"", 0o644)];
    let names = [
        "fast-1.0-cp311-cp311-manylinux_2_39_x86_64.whl",
        "fast-1.0-cp311-cp311-musllinux_1_2_x86_64.whl",
        "fast-1.0-cp311-cp311-manylinux_2_17_aarch64.whl",
        "fast-1.0-cp312-cp312-manylinux_2_17_x86_64.whl",
        "fast-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "fast-1.0-cp311-abi3-manylinux_2_34_x86_64.whl",
        "fast-1.0-py3-none-any.whl",
    ];
    let mut lock = String::from("lock-version = \"1.0\"\nrequires-python = \">=3.9\"\n\n[[packages]]\nname = \"fast\"\nversion = \"1.0\"\nwheels = [\n");
    let mut inputs = BTreeMap::new();
    for n in names {
        let w = make_wheel(dir, n, files, false, &no_tweak);
        lock.push_str(&format!(
            "  {{ path = \"{n}\", size = 1, hashes = {{ sha256 = \"{}\" }} }},\n",
            w.sha256.hex()
        ));
        inputs.insert(n.to_string(), w);
    }
    lock.push_str("]\n\n[[packages]]\nname = \"winonly\"\nversion = \"1\"\nmarker = \"sys_platform == 'win32'\"\nsdist = { url = \"https://x/winonly-1.tar.gz\" }\n");
    let pkgs = pylock::parse(&lock, &interp()).unwrap();
    assert_eq!(pkgs.len(), 1, "the win32-only package is left out");
    let chosen = pkgs[0].select_wheel(&interp()).unwrap();
    assert_eq!(
        chosen.file.filename,
        "fast-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    );
    let w = WheelInput {
        path: dir.join(chosen.path.as_deref().unwrap()),
        file: chosen.file.clone(),
        sha256: chosen.sha256,
        exclude: Default::default(),
    };
    let store = Store::open(dir.join("store")).unwrap();
    let layer = build_wheel_layer(&store, &[w], &interp(), &opts(Compression::None, 1)).unwrap();
    assert!(read_layer(&store, &layer).contains_key(&format!("{SITE}/fast-1.0.dist-info/RECORD")));
    // An older glibc falls back to the pure wheel; the too-new one alone is refused, saying why.
    let mut old = interp();
    old.glibc = Some((2, 27));
    assert_eq!(
        pkgs[0].select_wheel(&old).unwrap().file.filename,
        "fast-1.0-py3-none-any.whl"
    );
    let only_new = pylock::LockedPackage {
        wheels: pkgs[0]
            .wheels
            .iter()
            .filter(|w| w.file.filename.contains("2_39"))
            .cloned()
            .collect(),
        ..pkgs[0].clone()
    };
    let e = only_new.select_wheel(&interp()).unwrap_err().to_string();
    assert!(
        e.contains("fast-1.0-cp311-cp311-manylinux_2_39_x86_64.whl needs glibc 2.39, the image has glibc 2.36"),
        "{e}"
    );
}

/// Walks `root`: relative path → (mode, content) for files.
fn tree(root: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (u32, Vec<u8>)>) {
        for e in fs_err::read_dir(dir).unwrap() {
            let p: PathBuf = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                let mode = fs_err::metadata(&p).unwrap().permissions().mode() & 0o777;
                out.insert(rel, (mode, fs_err::read(&p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Our install against `pip install --target` for the same wheel, file for file (bytecode,
/// INSTALLER, pip's own REQUESTED / direct_url.json and RECORD row order aside).
#[test]
fn matches_pip_install_target() {
    let pip_ok = std::process::Command::new("python3")
        .args(["-m", "pip", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !pip_ok {
        common::notice(&format!(
            "SKIPPED: {} needs python3 with pip",
            common::test_name()
        ));
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let exe = String::from_utf8(out.stdout).unwrap().trim().to_string();
    // pip --target installs with the "home" scheme into a temporary directory, then moves
    // lib/python's content to the target root (and bin/, include/, data next to it).
    let target = dir.join("target");
    let mut i = interp();
    i.executable = exe;
    let t = target.to_str().unwrap();
    i.scheme = Scheme {
        purelib: t.to_string(),
        platlib: t.to_string(),
        scripts: format!("{t}/bin"),
        headers: format!("{t}/include/python"),
        data: t.to_string(),
    };
    let files: &[(&str, &[u8], u32)] = &[
        ("demo/__init__.py", b"", 0o644),
        ("demo/cli.py", b"def main(): pass\n", 0o644),
        ("demo/_x.so", b"ELF", 0o755),
        (
            "demo-1.0.data/scripts/run",
            b"#!python\nimport demo\n",
            0o644,
        ),
        ("demo-1.0.data/headers/demo.h", b"int f(void);\n", 0o644),
        (
            "demo-1.0.dist-info/METADATA",
            b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
            0o644,
        ),
        (
            "demo-1.0.dist-info/entry_points.txt",
            b"[console_scripts]\ndemo = demo.cli:main\n",
            0o644,
        ),
    ];
    let w = make_wheel(dir, "demo-1.0-py3-none-any.whl", files, true, &no_tweak);
    let pip = std::process::Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-compile",
            "--no-index",
            "--disable-pip-version-check",
            "--target",
        ])
        .arg(&target)
        .arg(&w.path)
        .output()
        .unwrap();
    assert!(
        pip.status.success(),
        "pip: {}",
        String::from_utf8_lossy(&pip.stderr)
    );
    let theirs = tree(&target);
    let store = Store::open(dir.join("store")).unwrap();
    let layer = build_wheel_layer(&store, &[w], &i, &opts(Compression::None, 1)).unwrap();
    let prefix = format!("{}/", t.trim_start_matches('/'));
    let ours: BTreeMap<String, (u32, Vec<u8>)> = read_layer(&store, &layer)
        .into_iter()
        .filter(|(_, (_, d, _))| !d)
        .filter_map(|(p, (m, _, c))| p.strip_prefix(&prefix).map(|r| (r.to_string(), (m, c))))
        .collect();
    let skip = |p: &str| {
        p.contains("__pycache__")
            || p.ends_with("/INSTALLER")
            || p.ends_with("/REQUESTED")
            || p.ends_with("/direct_url.json")
    };
    // Deliberate differences: .data/scripts are 0755 here whatever their zip mode (pip keeps
    // the zip's); pip's launcher (distlib) quotes with ' where installer's (ours) uses ", so its
    // RECORD hash differs too; pip's RECORD paths are relative to the home scheme's lib/python,
    // where --target first installs, so its bin/ and include/ rows start with ../../.
    assert!(ours
        .iter()
        .filter(|(p, _)| p.starts_with("bin/"))
        .all(|(_, (m, _))| *m == 0o755));
    let norm = |m: &BTreeMap<String, (u32, Vec<u8>)>| -> BTreeMap<String, (u32, Vec<u8>)> {
        m.iter()
            .filter(|(p, _)| !skip(p))
            .map(|(p, (mode, c))| {
                let c = if p.ends_with("/RECORD") {
                    let s = String::from_utf8_lossy(c).replace("\r\n", "\n");
                    let mut rows: Vec<String> = s
                        .lines()
                        .map(|r| r.strip_prefix("../../").unwrap_or(r))
                        .filter(|r| !skip(r.split(',').next().unwrap_or("")))
                        .map(|r| {
                            if r.starts_with("bin/demo,") {
                                "bin/demo".to_string()
                            } else {
                                r.to_string()
                            }
                        })
                        .collect();
                    rows.sort();
                    rows.join("\n").into_bytes()
                } else if p.starts_with("bin/") {
                    String::from_utf8_lossy(c).replace('\'', "\"").into_bytes()
                } else {
                    c.clone()
                };
                let mode = if p.starts_with("bin/") { 0o755 } else { *mode };
                (p.clone(), (mode, c))
            })
            .collect()
    };
    let (theirs, ours) = (norm(&theirs), norm(&ours));
    let show = |m: &BTreeMap<String, (u32, Vec<u8>)>| {
        m.iter()
            .map(|(p, (mode, c))| format!("{p} {mode:o}\n{}\n", String::from_utf8_lossy(c)))
            .collect::<String>()
    };
    assert_eq!(show(&ours), show(&theirs));
}

/// The wheel with a large member, a member just under the splice threshold and small ones.
fn big_wheel(dir: &Path, tweak: &dyn Fn(&mut Vec<String>)) -> WheelInput {
    let big = big_text(300_000);
    let under = big_text(ocibuild::layer::SPLICE_MIN as usize - 1);
    make_wheel(
        dir,
        "big-1.0-py3-none-any.whl",
        &[
            ("big/__init__.py", b"", 0o644),
            ("big/generated.py", &big, 0o644),
            ("big/under.py", &under, 0o644),
            (
                "big-1.0.dist-info/METADATA",
                b"Metadata-Version: 2.1\nName: big\nVersion: 1.0\n",
                0o644,
            ),
        ],
        true,
        tweak,
    )
}

/// Golden digest of big_wheel's gzip layer: pins contract 3's reuse of a member's deflate
/// blocks (the wheel itself is written by the pinned zip crate and zlib-rs).
const GOLDEN_BIG_WHEEL_GZIP: &str =
    "sha256:cee3d598e0a351d0dee70e2e554afdd60a008df06dcab1877df0c206d3c25554";

#[test]
fn gzip_wheel_layers_reuse_large_members_deflate_blocks() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let w = big_wheel(tmp.path(), &no_tweak);
    let build = |c, threads| {
        build_wheel_layer(
            &store,
            std::slice::from_ref(&w),
            &interp(),
            &opts(c, threads),
        )
        .unwrap()
    };
    let gz1 = build(Compression::GZIP, 1);
    let gz4 = build(Compression::GZIP, 4);
    assert_eq!(gz1, gz4, "the thread count changes nothing");
    let none = build(Compression::None, 2);
    assert_eq!(gz1.diff_id, none.diff_id, "the same tar");
    // The gzip layer decodes to exactly that tar, also for gzip(1).
    let gz = fs_err::read(store.blob_path(&gz1.digest)).unwrap();
    let tar = fs_err::read(store.blob_path(&none.digest)).unwrap();
    let mut back = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut back)
        .unwrap();
    assert!(back == tar);
    let out = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(store.blob_path(&gz1.digest))
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout == tar, "gzip -dc");
    // The large member's compressed bytes are in the layer as they are (its first 4 KiB;
    // the final block's header bit is cleared further on), the one under the threshold not.
    let mut ar = zip::ZipArchive::new(fs_err::File::open(&w.path).unwrap()).unwrap();
    let raw = |ar: &mut zip::ZipArchive<fs_err::File>, name: &str| {
        let mut v = Vec::new();
        ar.by_name_raw(name.as_bytes())
            .unwrap()
            .read_to_end(&mut v)
            .unwrap();
        v
    };
    let big = raw(&mut ar, "big/generated.py");
    let under = raw(&mut ar, "big/under.py");
    let contains = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    assert!(contains(&gz, &big[..4096]), "spliced");
    assert!(!contains(&gz, &under[..1024]), "compressed again");
    assert_eq!(gz1.digest.to_string(), GOLDEN_BIG_WHEEL_GZIP);
}

#[test]
fn a_large_member_not_matching_record_fails_the_gzip_layer() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let w = big_wheel(tmp.path(), &|rec| {
        for r in rec
            .iter_mut()
            .filter(|r| r.starts_with("big/generated.py,"))
        {
            *r = format!(
                "big/generated.py,{},300000",
                record_hash(&Digest::of(b"other"))
            );
        }
    });
    let before = store_files(&store);
    for c in [Compression::GZIP, Compression::ZSTD] {
        let err = build_wheel_layer(&store, std::slice::from_ref(&w), &interp(), &opts(c, 2))
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("member `big/generated.py` does not match RECORD"),
            "{c:?}: {msg}"
        );
    }
    assert_eq!(store_files(&store), before, "nothing committed");
}
