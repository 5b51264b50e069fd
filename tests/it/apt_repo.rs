//! apt/ end to end against an apt repository this test generates: .debs built here (ar +
//! control.tar.gz + data.tar.xz), Packages (plain, .gz, .xz), Release with SHA256, InRelease
//! clearsigned (or Release.gpg detached) with a key made here by rPGP, served by a tiny HTTP
//! server on 127.0.0.1. No other network.

use crate::aptfix;
use aptfix::*;

use std::collections::BTreeMap;

use ocibuild::apt::{
    build_layer, download, load_source, resolve, AptError, DebInput, Installed, Locked, UsrMerge,
};
use ocibuild::http::HttpFetcher;
use ocibuild::layer::Compression;

#[test]
fn resolves_alternatives_provides_versions_arch_and_base() {
    let f = fixture(&universe(), false);
    let idx = load(&f);
    let locked = resolve(&idx, "amd64", &[req("app")], &base()).unwrap();
    assert_eq!(
        names(&locked),
        [
            "abi-new=1", // libabi (>= 2): the versioned provide that satisfies it
            "app=1.0-1",
            "bigmta=9",       // mail-transport-agent: providers by name, the first wins
            "libalt=1",       // nosuch | libalt: the first satisfiable alternative
            "libfoo=3.0~rc1", // >= 2.0 and << 3.0: the ~ rule
            "oldpkg=1",       // in the base status, but only config-files: installed
            "pyish=3.11",     // :any with Multi-Arch: allowed
            "tool=1.0",       // Architecture: all
        ]
    );
    // libc6 (>= 2.30) is satisfied by the base's 2.36: not installed again; libalt2 not
    // needed because libfoo satisfies `libfoo | libalt2`.
    assert!(!locked
        .iter()
        .any(|l| l.name == "libc6" || l.name == "libalt2"));
    let tool = locked.iter().find(|l| l.name == "tool").unwrap();
    assert_eq!(tool.architecture, "all");
    assert_eq!(
        tool.url(),
        format!("{}/pool/main/tool_1.0_all.deb", f.repo.url)
    );

    // A constraint on the request itself; and without a base, libc6 comes from the archive.
    let locked = resolve(&idx, "amd64", &[req("libfoo (<< 2.5)")], &Installed::new()).unwrap();
    assert_eq!(names(&locked), ["libfoo=2.1"]);
    let locked = resolve(&idx, "amd64", &[req("libfoo=1.0")], &Installed::new()).unwrap();
    assert_eq!(names(&locked), ["libfoo=1.0"]);
    let locked = resolve(&idx, "amd64", &[req("app")], &Installed::new()).unwrap();
    assert!(locked
        .iter()
        .any(|l| l.name == "libc6" && l.version == "2.37-1"));
    // A request the base satisfies is not installed again.
    assert!(resolve(&idx, "amd64", &[req("libc6")], &base())
        .unwrap()
        .is_empty());
    // The lock entry round-trips through JSON.
    let json = serde_json::to_string(&locked).unwrap();
    assert_eq!(serde_json::from_str::<Vec<Locked>>(&json).unwrap(), locked);
}

#[test]
fn unknown_package_and_unsatisfiable_chain() {
    let f = fixture(&universe(), false);
    let idx = load(&f);
    let err = resolve(&idx, "amd64", &[req("ap")], &base()).unwrap_err();
    assert!(matches!(err, AptError::UnknownPackage { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("`ap`") && msg.contains("app"), "{msg}");

    let err = resolve(&idx, "amd64", &[req("needy")], &base()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("needy → middle (= 1.0) → libfoo (>= 9): no version satisfies it"),
        "{msg}"
    );
    assert!(msg.contains("available: 3.0, 3.0~rc1, 2.1, 1.0"), "{msg}");

    let err = resolve(&idx, "amd64", &[req("libfoo (>> 3.0)")], &base()).unwrap_err();
    assert!(
        err.to_string()
            .contains("libfoo (>> 3.0): no version satisfies"),
        "{err}"
    );
}

#[test]
fn layer_merged_usr_status_records_hardlinks() {
    let f = fixture(&universe(), false);
    let idx = load(&f);
    let locked = resolve(&idx, "amd64", &[req("app"), req("tinymta")], &base()).unwrap();
    let layer = build(&f, &locked, &layer_opts()).unwrap();
    assert_eq!(layer.digest, layer.diff_id);
    let l = listing(&f.store, &layer.digest);
    // Merged /usr: bin/ and sbin/ are never directories of the layer.
    assert!(
        !l.keys()
            .any(|p| p.starts_with("bin") || p.starts_with("sbin")),
        "{:?}",
        l.keys()
    );
    assert_eq!(l["usr/bin/mta"].0, '0');
    assert_eq!(l["usr/bin/mta"].1, 0o755);
    assert_eq!(l["usr/sbin/sendmail"].0, '1');
    assert_eq!(l["usr/sbin/sendmail"].2, "usr/bin/mta");
    assert_eq!(l["usr/sbin/mailq"].0, '2');
    assert_eq!(l["usr/sbin/mailq"].2, "../bin/mta");
    // Hardlink group led by the first path in sorted order.
    assert_eq!(l["usr/share/doc/a-first"].0, '0');
    assert_eq!(l["usr/share/doc/a-first"].3, b"same\n");
    assert_eq!(l["usr/share/doc/z-second"].0, '1');
    assert_eq!(l["usr/share/doc/z-second"].2, "usr/share/doc/a-first");
    // status.d records.
    let rec = String::from_utf8(l["var/lib/dpkg/status.d/app"].3.clone()).unwrap();
    assert!(
        rec.starts_with("Package: app\nStatus: install ok installed\nVersion: 1.0-1\n"),
        "{rec}"
    );
    assert!(
        rec.contains("Description: test package app\n A longer description.\n"),
        "{rec}"
    );
    let md5 = String::from_utf8(l["var/lib/dpkg/status.d/tinymta.md5sums"].3.clone()).unwrap();
    assert!(md5.ends_with("  usr/bin/mta\n"), "{md5}");
    for p in [
        "var/",
        "var/lib/",
        "var/lib/dpkg/",
        "var/lib/dpkg/status.d/",
    ] {
        assert_eq!(l[p].0, '5', "{p}");
    }
    // The layer's status.d records read back as an installed set.
    let mut installed = Installed::new();
    for (p, (_, _, _, body)) in &l {
        if p.starts_with("var/lib/dpkg/status.d/") && !p.ends_with(".md5sums") && !p.ends_with('/')
        {
            installed
                .add_status(std::str::from_utf8(body).unwrap(), p)
                .unwrap();
        }
    }
    assert!(installed.contains("tinymta") && installed.contains("app"));

    // Without merged /usr, paths stay where the package put them.
    let mut plain = layer_opts();
    plain.usr_merge = UsrMerge::none();
    let layer = build(&f, &locked, &plain).unwrap();
    let l = listing(&f.store, &layer.digest);
    assert!(l.contains_key("bin/") && l.contains_key("bin/mta"));
}

#[test]
fn layer_is_deterministic_across_builds_and_data_tar_order() {
    let debs = universe();
    let a = fixture(&debs, false);
    let b = fixture(&debs, true);
    let mut ids = Vec::new();
    for f in [&a, &a, &b] {
        let idx = load(f);
        let locked = resolve(&idx, "amd64", &[req("app"), req("tinymta")], &base()).unwrap();
        let mut opts = layer_opts();
        opts.layer.compression = Compression::GZIP;
        let layer = build(f, &locked, &opts).unwrap();
        ids.push((layer.diff_id, layer.digest));
    }
    assert_eq!(ids[0], ids[1]);
    assert_eq!(
        ids[0], ids[2],
        "shuffled data tar order must not change the layer"
    );
}

#[test]
fn signatures_bad_key_tampered_detached_unsigned() {
    let dir = tempfile::tempdir().unwrap();
    let k = keygen(1);
    let key = write_key(dir.path(), "k.asc", &k);
    let other = write_key(dir.path(), "o.asc", &keygen(2));
    let fetcher = HttpFetcher::new().unwrap();
    let debs = vec![deb("a", "1")];

    // InRelease: the right key verifies, another key does not.
    let repo = make_repo(&dir.path().join("r1"), &debs, Signing::InRelease(&k), false);
    assert_eq!(
        load_source(&fetcher, &source(&repo, Some(&key)), &std::env::temp_dir())
            .unwrap()
            .packages()
            .unwrap()
            .len(),
        1
    );
    let err = load_source(
        &fetcher,
        &source(&repo, Some(&other)),
        &std::env::temp_dir(),
    )
    .unwrap_err();
    assert!(matches!(err, AptError::BadSignature { .. }), "{err}");
    assert!(err.to_string().contains("InRelease"), "{err}");
    // A tampered signed text fails.
    let p = repo.root.join("dists/stable/InRelease");
    let text = fs_err::read_to_string(&p)
        .unwrap()
        .replace("Codename: testy", "Codename: tasty");
    fs_err::write(&p, text).unwrap();
    let err = load_source(&fetcher, &source(&repo, Some(&key)), &std::env::temp_dir()).unwrap_err();
    assert!(matches!(err, AptError::BadSignature { .. }), "{err}");

    // Signed by a signing subkey bound to the primary in the key file.
    let ks = keygen_with_subkey(4);
    let key_s = write_key(dir.path(), "ks.asc", &ks);
    let repo = make_repo(
        &dir.path().join("r4"),
        &debs,
        Signing::InReleaseSubkey(&ks),
        false,
    );
    assert_eq!(
        load_source(
            &fetcher,
            &source(&repo, Some(&key_s)),
            &std::env::temp_dir()
        )
        .unwrap()
        .packages()
        .unwrap()
        .len(),
        1
    );
    let err = load_source(&fetcher, &source(&repo, Some(&key)), &std::env::temp_dir()).unwrap_err();
    assert!(matches!(err, AptError::BadSignature { .. }), "{err}");

    // Release + Release.gpg (no InRelease).
    let repo = make_repo(&dir.path().join("r2"), &debs, Signing::Detached(&k), false);
    assert_eq!(
        load_source(&fetcher, &source(&repo, Some(&key)), &std::env::temp_dir())
            .unwrap()
            .packages()
            .unwrap()
            .len(),
        1
    );
    let err = load_source(
        &fetcher,
        &source(&repo, Some(&other)),
        &std::env::temp_dir(),
    )
    .unwrap_err();
    assert!(matches!(err, AptError::BadSignature { .. }), "{err}");

    // Unsigned: refused without a key unless allowed; a key with no signature is refused.
    let repo = make_repo(&dir.path().join("r3"), &debs, Signing::Unsigned, false);
    let err = load_source(&fetcher, &source(&repo, None), &std::env::temp_dir()).unwrap_err();
    assert!(matches!(err, AptError::Unsigned { .. }), "{err}");
    let mut s = source(&repo, None);
    s.allow_unsigned = true;
    assert_eq!(
        load_source(&fetcher, &s, &std::env::temp_dir())
            .unwrap()
            .packages()
            .unwrap()
            .len(),
        1
    );
    let err = load_source(&fetcher, &source(&repo, Some(&key)), &std::env::temp_dir()).unwrap_err();
    assert!(matches!(err, AptError::BadSignature { .. }), "{err}");
}

#[test]
fn packages_hash_mismatch_and_fallback() {
    let f = fixture(&[deb("a", "1")], false);
    let fetcher = HttpFetcher::new().unwrap();
    let xz = f
        .repo
        .root
        .join("dists/stable/main/binary-amd64/Packages.xz");
    // Missing .xz (not found): falls back to .gz.
    let saved = fs_err::read(&xz).unwrap();
    fs_err::remove_file(&xz).unwrap();
    assert_eq!(
        load_source(
            &fetcher,
            &source(&f.repo, Some(&f.key)),
            &std::env::temp_dir()
        )
        .unwrap()
        .packages()
        .unwrap()
        .len(),
        1
    );
    // A corrupted .xz is an error, never a fallback.
    let mut bad = saved.clone();
    let n = bad.len();
    bad[n / 2] ^= 1;
    fs_err::write(&xz, &bad).unwrap();
    let err = load_source(
        &fetcher,
        &source(&f.repo, Some(&f.key)),
        &std::env::temp_dir(),
    )
    .unwrap_err();
    assert!(matches!(err, AptError::HashMismatch(_)), "{err}");
    assert!(err.to_string().contains("Packages.xz"), "{err}");
    // Longer than the Release says: a mismatch naming both sizes.
    let mut long = saved.clone();
    long.extend_from_slice(b"trailing");
    fs_err::write(&xz, &long).unwrap();
    let err = load_source(
        &fetcher,
        &source(&f.repo, Some(&f.key)),
        &std::env::temp_dir(),
    )
    .unwrap_err();
    match &err {
        AptError::HashMismatch(m) => {
            assert_eq!(m.expected_size, saved.len() as u64);
            assert_eq!(m.found_size, saved.len() as u64 + 8);
        }
        other => panic!("{other}"),
    }
    let _ = f.other_key;
}

#[test]
fn deb_hash_mismatch_and_missing_file() {
    let f = fixture(
        &[deb("a", "1").data(Data::File("./usr/share/doc/a", "a\n", 0o644))],
        false,
    );
    let idx = load(&f);
    let locked = resolve(&idx, "amd64", &[req("a")], &Installed::new()).unwrap();
    let fetcher = HttpFetcher::new().unwrap();
    let file = f.repo.root.join(&locked[0].filename);
    let good = fs_err::read(&file).unwrap();

    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 10] ^= 0xff;
    fs_err::write(&file, &bad).unwrap();
    let err = download(&fetcher, &f.store, &locked[0]).unwrap_err();
    assert!(matches!(err, AptError::HashMismatch(_)), "{err}");
    assert!(err.to_string().contains("package a 1"), "{err}");
    assert!(!f.store.has_blob(&locked[0].sha256));
    assert_eq!(
        fs_err::read_dir(f.store.root().join("tmp"))
            .unwrap()
            .count(),
        0
    );
    // Truncated: a size mismatch.
    fs_err::write(&file, &good[..n - 1]).unwrap();
    let err = download(&fetcher, &f.store, &locked[0]).unwrap_err();
    assert!(
        matches!(err, AptError::HashMismatch(ref m) if m.found_size == n as u64 - 1),
        "{err}"
    );

    fs_err::remove_file(&file).unwrap();
    let err = download(&fetcher, &f.store, &locked[0]).unwrap_err();
    assert!(matches!(err, AptError::MissingDeb { .. }), "{err}");
    assert!(
        err.to_string().contains("package a 1") && err.to_string().contains("update the lock"),
        "{err}"
    );

    // A .deb on disk that is not what the lock says is refused by build_layer too.
    let p = f.store.root().join("not-the-deb");
    fs_err::write(&p, &bad).unwrap();
    let err = build_layer(
        &f.store,
        &[DebInput {
            locked: locked[0].clone(),
            path: p,
        }],
        &layer_opts(),
        &|_| {},
    )
    .unwrap_err();
    assert!(matches!(err, AptError::HashMismatch(_)), "{err}");
}

#[test]
fn unsafe_paths_in_data_tar_are_errors_and_nothing_is_written() {
    for (bad, what) in [
        (Data::RawName("./usr/../../etc/passwd"), ".."),
        (Data::RawName("/etc/passwd"), "absolute"),
        (Data::Hardlink("./usr/x", "../../etc/shadow"), ".."),
        (Data::Device("./dev/null"), "device"),
    ] {
        let f = fixture(
            &[
                deb("good", "1").data(Data::File("./usr/share/doc/g", "g\n", 0o644)),
                deb("evil", "1").data(bad),
            ],
            false,
        );
        let idx = load(&f);
        let locked = resolve(
            &idx,
            "amd64",
            &[req("good"), req("evil")],
            &Installed::new(),
        )
        .unwrap();
        let err = build(&f, &locked, &layer_opts()).unwrap_err();
        assert!(matches!(err, AptError::DebPath { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("package evil") && msg.contains(what), "{msg}");
        // The store holds the two downloaded .debs and no layer.
        let mut blobs: Vec<String> = fs_err::read_dir(f.store.root().join("blobs/sha256"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        blobs.sort();
        let mut debs: Vec<String> = locked.iter().map(|l| l.sha256.hex()).collect();
        debs.sort();
        assert_eq!(blobs, debs, "no layer blob");
        assert_eq!(
            fs_err::read_dir(f.store.root().join("tmp"))
                .unwrap()
                .count(),
            0
        );
    }
}

#[test]
fn conflicting_files_between_packages() {
    let f = fixture(
        &[
            deb("one", "1").data(Data::File("./usr/share/doc/same", "x\n", 0o644)),
            deb("two", "1").data(Data::File("./usr/share/doc/same", "x\n", 0o644)),
            deb("three", "1").data(Data::File("./usr/share/doc/same", "y\n", 0o644)),
        ],
        false,
    );
    let idx = load(&f);
    let ok = resolve(&idx, "amd64", &[req("one"), req("two")], &Installed::new()).unwrap();
    build(&f, &ok, &layer_opts()).unwrap();
    // A symlink in one package, a directory or a file beneath it in another.
    for writer in [
        deb("writer", "1")
            .data(Data::Dir("./usr/share/doc/dir/"))
            .data(Data::File("./usr/share/doc/dir/passwd", "x\n", 0o644)),
        deb("writer", "1").data(Data::File("./usr/share/doc/dir/passwd", "x\n", 0o644)),
    ] {
        let g = fixture(
            &[
                deb("linker", "1").data(Data::Symlink("./usr/share/doc/dir", "/etc")),
                writer,
            ],
            false,
        );
        let gl = resolve(
            &load(&g),
            "amd64",
            &[req("linker"), req("writer")],
            &Installed::new(),
        )
        .unwrap();
        let err = build(&g, &gl, &layer_opts()).unwrap_err();
        assert!(matches!(err, AptError::PathConflict { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("/usr/share/doc/dir`")
                && msg.contains("linker 1")
                && msg.contains("writer 1"),
            "{msg}"
        );
    }

    let bad = resolve(
        &idx,
        "amd64",
        &[req("one"), req("three")],
        &Installed::new(),
    )
    .unwrap();
    let err = build(&f, &bad, &layer_opts()).unwrap_err();
    assert!(matches!(err, AptError::PathConflict { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("usr/share/doc/same") && msg.contains("one 1") && msg.contains("three 1"),
        "{msg}"
    );
}

#[test]
fn file_url_source() {
    let dir = tempfile::tempdir().unwrap();
    let k = keygen(3);
    let key = write_key(dir.path(), "k.asc", &k);
    let repo = make_repo(
        &dir.path().join("r"),
        &[deb("a", "1")],
        Signing::InRelease(&k),
        false,
    );
    let mut s = source(&repo, Some(&key));
    s.url = format!("file://{}", repo.root.display());
    let idx = load_source(&HttpFetcher::new().unwrap(), &s, &std::env::temp_dir()).unwrap();
    assert_eq!(&*idx.packages().unwrap()[0].name, "a");
    assert!(idx.packages().unwrap()[0].source_url.starts_with("file://"));
}

#[test]
fn data_tar_compressions_owners_and_modes() {
    let f = fixture(
        &[
            deb("zpkg", "1")
                .comp("zst")
                .data(Data::Dir("./usr/games/"))
                .data(Data::Owned("./usr/games/score", "0\n", 0o664, 0, 60))
                .data(Data::Owned("./usr/games/su-ish", "x\n", 0o4755, 0, 0)),
            deb("gpkg", "1").comp("gz").data(Data::Owned(
                "./usr/share/doc/g",
                "g\n",
                0o640,
                1000,
                1000,
            )),
        ],
        false,
    );
    let idx = load(&f);
    let locked = resolve(
        &idx,
        "amd64",
        &[req("zpkg"), req("gpkg")],
        &Installed::new(),
    )
    .unwrap();
    let layer = build(&f, &locked, &layer_opts()).unwrap();
    let mut a = tar::Archive::new(fs_err::File::open(f.store.blob_path(&layer.digest)).unwrap());
    let mut seen = BTreeMap::new();
    for e in a.entries().unwrap() {
        let e = e.unwrap();
        let h = e.header();
        let p = String::from_utf8(e.path_bytes().into_owned()).unwrap();
        seen.insert(p, (h.mode().unwrap(), h.uid().unwrap(), h.gid().unwrap()));
    }
    assert_eq!(seen["usr/games/score"], (0o664, 0, 60));
    assert_eq!(seen["usr/games/su-ish"], (0o4755, 0, 0));
    assert_eq!(seen["usr/share/doc/g"], (0o640, 1000, 1000));
    assert_eq!(seen["usr/games/"], (0o755, 0, 0));
}
