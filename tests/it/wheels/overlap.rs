//! Paths several wheels install, in one layer (issue 16): the identical namespace file, different
//! content, an exclusion decided by `overlap = "last"`, and a file over a directory.

use std::path::Path;

use super::common;
use super::wheelfix::make_wheel;
use super::{interp, no_tweak, opts, read_layer, store_files, text, SITE};
use ocibuild::digest::Digest;
use ocibuild::layer::Compression;
use ocibuild::python::wheel::{build_wheel_layer, layer_key, record_hash, WheelInput};
use ocibuild::store::Store;

/// nvidia-*-cu12 style: three wheels that each ship `nvidia/__init__.py` (empty).
fn namespace_wheels(dir: &Path, third_init: &[u8]) -> Vec<WheelInput> {
    ["nvidia_a", "nvidia_b", "nvidia_c"]
        .iter()
        .map(|n| {
            let init: &[u8] = if *n == "nvidia_c" { third_init } else { b"" };
            let own = format!("nvidia/{}/lib/lib{n}.so.12", &n[7..]);
            make_wheel(
                dir,
                &format!("{n}-1-py3-none-any.whl"),
                &[
                    ("nvidia/__init__.py", init, 0o644),
                    (own.as_str(), n.as_bytes(), 0o755),
                ],
                true,
                &no_tweak,
            )
        })
        .collect()
}

#[test]
fn an_identical_file_from_three_wheels_is_written_once_and_in_every_record() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let ws = namespace_wheels(tmp.path(), b"");
    let layer = build_wheel_layer(&store, &ws, &interp(), &opts(Compression::None, 1)).unwrap();
    let l = read_layer(&store, &layer);
    let init = format!("{SITE}/nvidia/__init__.py");
    assert_eq!(l[&init], (0o644, false, Vec::new()));
    for n in ["a", "b", "c"] {
        assert!(l.contains_key(&format!("{SITE}/nvidia/{n}/lib/libnvidia_{n}.so.12")));
        let record = text(&l, &format!("{SITE}/nvidia_{n}-1.dist-info/RECORD"));
        assert!(
            record.contains(&format!(
                "nvidia/__init__.py,{},0\n",
                record_hash(&Digest::of(b""))
            )),
            "{record}"
        );
    }
    // The tar has the path once (read_layer would have kept the last of two silently).
    let mut ar = tar::Archive::new(store.open_blob(&layer.digest).unwrap());
    let count = ar
        .entries()
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path_bytes().as_ref() == init.as_bytes())
        .count();
    assert_eq!(count, 1);
}

#[test]
fn the_unwritten_copy_of_a_shared_file_is_still_checked_against_its_record() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let before = store_files(&store);
    let mut ws = namespace_wheels(tmp.path(), b"");
    // nvidia_c's RECORD claims the empty file's hash, but its member holds other bytes: the
    // layer writes nvidia_a's copy, and nvidia_c's must still fail, as it would alone.
    let liar = make_wheel(
        tmp.path(),
        "nvidia_c-1-py3-none-any.whl",
        &[
            ("nvidia/__init__.py", b"import os\n", 0o644),
            ("nvidia/c/lib/libnvidia_c.so.12", b"nvidia_c", 0o755),
        ],
        true,
        &|rows: &mut Vec<String>| {
            for r in rows.iter_mut() {
                if r.starts_with("nvidia/__init__.py,") {
                    *r = format!("nvidia/__init__.py,{},0", record_hash(&Digest::of(b"")));
                }
            }
        },
    );
    ws[2] = liar;
    let e = build_wheel_layer(&store, &ws, &interp(), &opts(Compression::None, 1))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "nvidia_c-1-py3-none-any.whl: member `nvidia/__init__.py` does not match RECORD"
        ),
        "{e}"
    );
    assert_eq!(store_files(&store), before, "nothing committed");
}

#[test]
fn different_content_names_both_wheels_and_hashes_and_writes_nothing() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let before = store_files(&store);
    let ws = namespace_wheels(tmp.path(), b"# not empty\n");
    let e = build_wheel_layer(&store, &ws, &interp(), &opts(Compression::None, 1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "`/{SITE}/nvidia/__init__.py` is installed with different content by \
             nvidia_a-1-py3-none-any.whl (sha256 {}, mode 644) and by nvidia_c-1-py3-none-any.whl \
             (sha256 {}, mode 644): set `[python] overlap = \"last\"` to install the file of the \
             wheel later in lock order",
            Digest::of(b"").hex(),
            Digest::of(b"# not empty\n").hex()
        )
    );
    assert_eq!(store_files(&store), before, "nothing committed");
}

#[test]
fn an_excluded_path_is_neither_written_nor_listed() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let mut ws = namespace_wheels(tmp.path(), b"# not empty\n");
    let init = format!("{SITE}/nvidia/__init__.py");
    // What `overlap = "last"` decides: the later wheel (nvidia_c) wins; a and b leave it out.
    for w in &mut ws[..2] {
        w.exclude.insert(init.clone());
    }
    let layer = build_wheel_layer(&store, &ws, &interp(), &opts(Compression::None, 1)).unwrap();
    let l = read_layer(&store, &layer);
    assert_eq!(l[&init].2, b"# not empty\n");
    let a = text(&l, &format!("{SITE}/nvidia_a-1.dist-info/RECORD"));
    assert!(!a.contains("nvidia/__init__.py"), "{a}");
    let c = text(&l, &format!("{SITE}/nvidia_c-1.dist-info/RECORD"));
    assert!(c.contains("nvidia/__init__.py"), "{c}");
    // The exclusion is part of the key: the same wheels without it are another layer.
    let mut plain = ws.clone();
    for w in &mut plain {
        w.exclude.clear();
    }
    assert_ne!(
        layer_key(&ws, &interp(), &opts(Compression::None, 1), None).unwrap(),
        layer_key(&plain, &interp(), &opts(Compression::None, 1), None).unwrap()
    );
    // A wheel with nothing excluded keeps the key it had before exclusions existed.
    assert_eq!(
        layer_key(&ws[2..], &interp(), &opts(Compression::None, 1), None).unwrap(),
        layer_key(&plain[2..], &interp(), &opts(Compression::None, 1), None).unwrap()
    );
}

#[test]
fn a_file_where_another_wheel_has_a_directory_conflicts() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let a = make_wheel(
        tmp.path(),
        "alpha-1-py3-none-any.whl",
        &[("shared", b"a file", 0o644)],
        true,
        &no_tweak,
    );
    let b = make_wheel(
        tmp.path(),
        "beta-1-py3-none-any.whl",
        &[("shared/x.py", b"b", 0o644)],
        true,
        &no_tweak,
    );
    let e = build_wheel_layer(&store, &[b, a], &interp(), &opts(Compression::None, 1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("`/{SITE}/shared` is a file in alpha-1-py3-none-any.whl and a directory in beta-1-py3-none-any.whl (which installs files beneath it): no install order gives both")
    );
}
