//! A wheel's members against its RECORD (crates/python/src/python/wheel.rs): every mismatch
//! refused, and the check done once per wheel blob, recorded in its seal (`store::seal`) and
//! done again once the blob changes; meanwhile each member is held to the zip's CRC-32.

use std::path::{Path, PathBuf};

use super::common;
use super::wheelfix::make_wheel;
use super::{interp, no_tweak, opts, store_files, SITE};
use ocibuild::digest::Digest;
use ocibuild::layer::Compression;
use ocibuild::python::wheel::{
    build_wheel_layer, record_hash, WheelError, WheelInput, RECORD_CHECK,
};
use ocibuild::store::Store;

#[test]
fn bad_record_hash_commits_nothing() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let w = make_wheel(
        tmp.path(),
        "bad-1.0-py3-none-any.whl",
        &[
            ("bad/__init__.py", b"x = 1\n", 0o644),
            ("bad/z.py", b"y\n", 0o644),
        ],
        true,
        &|rec| {
            for r in rec.iter_mut().filter(|r| r.starts_with("bad/z.py,")) {
                *r = format!("bad/z.py,{},2", record_hash(&Digest::of(b"z\n")));
            }
        },
    );
    let before = store_files(&store);
    let err = build_wheel_layer(&store, &[w], &interp(), &opts(Compression::GZIP, 2)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, WheelError::RecordMismatch { .. }), "{msg}");
    assert!(
        msg.contains("bad-1.0-py3-none-any.whl: member `bad/z.py` does not match RECORD"),
        "{msg}"
    );
    assert_eq!(
        store_files(&store),
        before,
        "nothing committed, no temporary left"
    );
}

#[test]
fn record_must_match_the_members() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let files: &[(&str, &[u8], u32)] = &[("m/__init__.py", b"", 0o644), ("m/x.py", b"x\n", 0o644)];
    let unlisted = make_wheel(tmp.path(), "m-1-py3-none-any.whl", files, true, &|rec| {
        rec.retain(|r| !r.starts_with("m/x.py"));
    });
    let e =
        build_wheel_layer(&store, &[unlisted], &interp(), &opts(Compression::None, 1)).unwrap_err();
    assert!(
        e.to_string()
            .contains("member `m/x.py` is not listed in RECORD"),
        "{e}"
    );
    let ghost = make_wheel(tmp.path(), "m-2-py3-none-any.whl", files, true, &|rec| {
        rec.push(format!("m/ghost.py,{},1", record_hash(&Digest::of(b"g"))));
    });
    let e =
        build_wheel_layer(&store, &[ghost], &interp(), &opts(Compression::None, 1)).unwrap_err();
    assert!(
        e.to_string()
            .contains("RECORD lists `m/ghost.py`, which the wheel does not contain"),
        "{e}"
    );
    let size = make_wheel(tmp.path(), "m-3-py3-none-any.whl", files, true, &|rec| {
        for r in rec.iter_mut().filter(|r| r.starts_with("m/x.py,")) {
            *r = r.replace(",2", ",3");
        }
    });
    let e = build_wheel_layer(&store, &[size], &interp(), &opts(Compression::None, 1)).unwrap_err();
    assert!(
        e.to_string()
            .contains("`m/x.py` does not match RECORD: expected size 3, found size 2"),
        "{e}"
    );
    // The wheel file itself must match the sha256 it came with.
    let mut w = make_wheel(tmp.path(), "m-4-py3-none-any.whl", files, true, &no_tweak);
    w.sha256 = Digest::of(b"other");
    let e = build_wheel_layer(&store, &[w], &interp(), &opts(Compression::None, 1)).unwrap_err();
    assert!(matches!(e, WheelError::WheelHash { .. }), "{e}");
}

/// `w`'s file put in `store`, and `w` pointing at that blob (as the builds' wheels do).
fn in_store(store: &Store, mut w: WheelInput) -> WheelInput {
    let d = store.put_bytes(&fs_err::read(&w.path).unwrap()).unwrap();
    assert_eq!(d, w.sha256);
    w.path = store.blob_path(&d);
    w
}

/// A store blob (0444) opened for writing, as a stray tool would.
fn writable(path: &Path) -> fs_err::File {
    let mut p = fs_err::metadata(path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o644);
    fs_err::set_permissions(path, p).unwrap();
    fs_err::OpenOptions::new().write(true).open(path).unwrap()
}

fn seal(store: &Store, w: &WheelInput) -> PathBuf {
    store.root().join("seals").join(w.sha256.hex())
}

fn recorded(store: &Store, w: &WheelInput) -> bool {
    let line = format!("checked {RECORD_CHECK}");
    fs_err::read_to_string(seal(store, w))
        .unwrap()
        .lines()
        .any(|l| l == line)
}

/// A wheel whose RECORD gives `m/x.py` the digest of other bytes of the same size.
fn lying_wheel(dir: &Path) -> WheelInput {
    let files: &[(&str, &[u8], u32)] = &[("m/__init__.py", b"", 0o644), ("m/x.py", b"x\n", 0o644)];
    make_wheel(dir, "m-1-py3-none-any.whl", files, true, &|rec| {
        for r in rec.iter_mut().filter(|r| r.starts_with("m/x.py,")) {
            *r = format!("m/x.py,{},2", record_hash(&Digest::of(b"y\n")));
        }
    })
}

#[test]
fn a_wheel_blob_is_checked_against_record_once_and_again_when_it_changes() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let layer = |w: &WheelInput| {
        build_wheel_layer(
            &store,
            std::slice::from_ref(w),
            &interp(),
            &opts(Compression::GZIP, 1),
        )
    };
    // A good wheel: checked, and its seal says so.
    let files: &[(&str, &[u8], u32)] = &[("g/__init__.py", b"x = 1\n", 0o644)];
    let good = in_store(
        &store,
        make_wheel(tmp.path(), "g-1-py3-none-any.whl", files, true, &no_tweak),
    );
    assert!(!recorded(&store, &good));
    let first = layer(&good).unwrap();
    assert!(recorded(&store, &good));
    // Building it again gives the same layer (its members now held to the zip's CRC-32).
    assert_eq!(layer(&good).unwrap().digest, first.digest);

    // A lying RECORD: refused, and nothing recorded.
    let bad = in_store(&store, lying_wheel(tmp.path()));
    let e = layer(&bad).unwrap_err();
    assert!(matches!(e, WheelError::RecordMismatch { .. }), "{e}");
    assert!(!recorded(&store, &bad));
    // What a seal records is believed while the seal holds: the same wheel, with the check
    // written into its seal by hand, builds (this is the trust the seal carries).
    let s = seal(&store, &bad);
    let text = fs_err::read_to_string(&s).unwrap();
    fs_err::write(&s, format!("{text}checked {RECORD_CHECK}\n")).unwrap();
    layer(&bad).unwrap();
    // The blob changes (here only its mtime, the bytes stay): the seal no longer holds, the
    // wheel is hashed again and its members are checked again.
    let later = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    writable(&bad.path).file().set_modified(later).unwrap();
    let e = layer(&bad).unwrap_err();
    assert!(matches!(e, WheelError::RecordMismatch { .. }), "{e}");
}

#[test]
fn a_changed_byte_under_an_unchanged_seal_fails_the_zips_crc_check() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    // Bytes deflate cannot shrink: the zip keeps them verbatim (stored deflate blocks), so a
    // changed byte still inflates, to other content.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..40_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let files: &[(&str, &[u8], u32)] = &[
        ("n/__init__.py", b"", 0o644),
        ("n/noise.bin", &noise, 0o644),
    ];
    let w = in_store(
        &store,
        make_wheel(tmp.path(), "n-1-py3-none-any.whl", files, true, &no_tweak),
    );
    let layer = |c| build_wheel_layer(&store, std::slice::from_ref(&w), &interp(), &opts(c, 1));
    layer(Compression::GZIP).unwrap();
    assert!(recorded(&store, &w));
    // One byte of the member changed in place and the mtime put back: the seal still holds.
    let mtime = fs_err::metadata(&w.path).unwrap().modified().unwrap();
    let bytes = fs_err::read(&w.path).unwrap();
    let at = bytes
        .windows(64)
        .position(|win| win == &noise[20_000..20_064])
        .unwrap();
    let f = writable(&w.path);
    std::os::unix::fs::FileExt::write_all_at(f.file(), &[bytes[at] ^ 1], at as u64).unwrap();
    f.file().set_modified(mtime).unwrap();
    drop(f);
    assert!(recorded(&store, &w));
    for c in [Compression::GZIP, Compression::None] {
        let before = store_files(&store);
        let e = layer(c).unwrap_err();
        assert!(matches!(e, WheelError::CrcMismatch { .. }), "{e}");
        assert!(
            e.to_string().contains(
                "n-1-py3-none-any.whl: member `n/noise.bin` does not match the zip's CRC-32"
            ),
            "{e}"
        );
        assert_eq!(store_files(&store), before, "nothing committed");
    }
}

#[test]
fn a_wheel_with_an_excluded_member_leaves_no_record_of_the_check() {
    let tmp = common::tempdir();
    let store = Store::open(tmp.path().join("store")).unwrap();
    let files: &[(&str, &[u8], u32)] = &[("e/__init__.py", b"", 0o644), ("e/x.py", b"x\n", 0o644)];
    let mut w = in_store(
        &store,
        make_wheel(tmp.path(), "e-1-py3-none-any.whl", files, true, &no_tweak),
    );
    w.exclude.insert(format!("{SITE}/e/x.py"));
    build_wheel_layer(&store, &[w.clone()], &interp(), &opts(Compression::None, 1)).unwrap();
    assert!(!recorded(&store, &w), "e/x.py was not read, so not checked");
    w.exclude.clear();
    build_wheel_layer(&store, &[w.clone()], &interp(), &opts(Compression::None, 1)).unwrap();
    assert!(recorded(&store, &w));
}
