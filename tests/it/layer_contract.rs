//! The determinism contract, end to end: a real tree on disk → scan → write_layer, read back by
//! our own minimal tar reader, by Python's `tarfile` and by GNU tar.

use fs_err as fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use ocibuild::digest::Digest;
use ocibuild::layer::{
    scan, write_layer, Compression, CopySpec, Entry, EntryKind, LayerError, LayerOptions,
    ModePolicy,
};

const EPOCH: u64 = 1_700_000_000;
/// Where the tree lands in the image; "srv/" is a synthesized ancestor.
const P: &str = "srv/app/";

fn d60() -> String {
    "d".repeat(60)
}
fn e60() -> String {
    "e".repeat(60)
}
fn g200() -> String {
    "g".repeat(200)
}
fn long_target() -> String {
    "t/".repeat(70)
}

/// Host permission bits for one variant of the tree: Normalize must erase the difference.
struct Perms {
    file: u32,
    exec: u32,
    dir: u32,
    mtime: SystemTime,
}

const PLAIN: Perms = Perms {
    file: 0o644,
    exec: 0o755,
    dir: 0o755,
    mtime: SystemTime::UNIX_EPOCH,
};

fn odd() -> Perms {
    Perms {
        file: 0o600,
        exec: 0o700,
        dir: 0o750,
        mtime: SystemTime::UNIX_EPOCH + Duration::from_secs(1_234_567_891),
    }
}

/// Builds the fixed tree; `reverse` creates everything in the opposite order so the
/// directory order the host returns differs.
fn build_tree(root: &Path, perms: &Perms, reverse: bool) {
    let deep = format!("{}/{}", d60(), e60());
    let mut dirs = vec![
        "bin".to_string(),
        "data/nested/deep".into(),
        "empty".into(),
        deep.clone(),
    ];
    let mut files: Vec<(String, &[u8], bool)> = vec![
        ("bin/run.sh".into(), b"#!/bin/sh\necho hi\n", true),
        ("data/a.txt".into(), b"alpha\n", false),
        ("data/b.txt".into(), b"beta\n", false),
        ("data/nested/deep/c.txt".into(), b"gamma\n", false),
        ("hard1".into(), b"shared content\n", false),
        (format!("{deep}/f.txt"), b"in a long directory\n", false),
        (format!("{deep}/{}", g200()), b"very long name\n", false),
    ];
    let mut links = vec![
        ("link-out", "/etc/passwd".to_string()),
        ("dangling", "missing/file".into()),
        ("long-target", long_target()),
    ];
    if reverse {
        dirs.reverse();
        files.reverse();
        links.reverse();
    }
    for d in &dirs {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    for (f, content, exec) in &files {
        let p = root.join(f);
        fs::write(&p, content).unwrap();
        let mode = if *exec { perms.exec } else { perms.file };
        fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(perms.mtime)
            .unwrap();
    }
    for (l, target) in &links {
        fs_err::os::unix::fs::symlink(target, root.join(l)).unwrap();
    }
    fs::hard_link(root.join("hard1"), root.join("hard2")).unwrap();
    for d in [
        "bin",
        "data",
        "data/nested",
        "data/nested/deep",
        "empty",
        &d60(),
        &deep,
        ".",
    ] {
        let p = root.join(d);
        fs::set_permissions(&p, std::fs::Permissions::from_mode(perms.dir)).unwrap();
        fs::File::open(&p)
            .unwrap()
            .set_modified(perms.mtime)
            .unwrap();
    }
}

fn spec(src: &Path) -> CopySpec {
    CopySpec {
        src: src.to_path_buf(),
        dest: "/srv/app".into(),
        ignore: vec![],
        uid: 1000,
        gid: 1001,
        mode: ModePolicy::Normalize,
    }
}

fn layer(
    entries: &[Entry],
    compression: Compression,
    threads: usize,
) -> (Vec<u8>, ocibuild::layer::LayerStats) {
    let mut out = Vec::new();
    let opts = LayerOptions {
        epoch: EPOCH,
        compression,
        threads,
    };
    let stats = write_layer(entries, &opts, &mut out, &|_| {}).unwrap();
    (out, stats)
}

/// (path, typeflag, mode, uid, gid, size, linkname): what the tree must become.
fn expected() -> Vec<(String, u8, u32, u32, u32, u64, String)> {
    let deep = format!("{P}{}/{}/", d60(), e60());
    let dir = |p: &str| (format!("{P}{p}"), b'5', 0o755, 1000, 1001, 0, String::new());
    let file = |p: &str, mode, size| {
        (
            format!("{P}{p}"),
            b'0',
            mode,
            1000,
            1001,
            size,
            String::new(),
        )
    };
    let sym = |p: &str, t: &str| (format!("{P}{p}"), b'2', 0o777, 1000, 1001, 0, t.to_string());
    vec![
        ("srv/".into(), b'5', 0o755, 0, 0, 0, String::new()),
        (P.into(), b'5', 0o755, 1000, 1001, 0, String::new()),
        dir("bin/"),
        file("bin/run.sh", 0o755, 18),
        sym("dangling", "missing/file"),
        dir("data/"),
        file("data/a.txt", 0o644, 6),
        file("data/b.txt", 0o644, 5),
        dir("data/nested/"),
        dir("data/nested/deep/"),
        file("data/nested/deep/c.txt", 0o644, 6),
        dir(&format!("{}/", d60())),
        (deep.clone(), b'5', 0o755, 1000, 1001, 0, String::new()),
        (
            format!("{deep}f.txt"),
            b'0',
            0o644,
            1000,
            1001,
            20,
            String::new(),
        ),
        (
            format!("{deep}{}", g200()),
            b'0',
            0o644,
            1000,
            1001,
            15,
            String::new(),
        ),
        dir("empty/"),
        file("hard1", 0o644, 15),
        (
            format!("{P}hard2"),
            b'1',
            0o644,
            1000,
            1001,
            0,
            format!("{P}hard1"),
        ),
        sym("link-out", "/etc/passwd"),
        sym("long-target", &long_target()),
    ]
}

/// One header as our minimal reader sees it (PAX records applied).
#[derive(Debug)]
struct Hdr {
    path: String,
    typeflag: u8,
    mode: u32,
    uid: u32,
    gid: u32,
    size: u64,
    mtime: u64,
    linkname: String,
    /// PAX keys that preceded this header, in stream order.
    pax_keys: Vec<String>,
    content: Vec<u8>,
}

fn cstr(f: &[u8]) -> String {
    let end = f.iter().position(|&b| b == 0).unwrap_or(f.len());
    String::from_utf8(f[..end].to_vec()).unwrap()
}

/// Octal field: digits, then NUL (checked strictly: the contract says NUL-terminated).
fn oct(f: &[u8]) -> u64 {
    assert_eq!(
        *f.last().unwrap(),
        0,
        "octal field not NUL-terminated: {f:?}"
    );
    u64::from_str_radix(std::str::from_utf8(&f[..f.len() - 1]).unwrap(), 8).unwrap()
}

/// A strict minimal tar reader: checks every header field the contract fixes.
fn read_tar(tar: &[u8]) -> Vec<Hdr> {
    assert_eq!(tar.len() % 512, 0);
    let mut out = Vec::new();
    let mut pax: Vec<(String, String)> = Vec::new();
    let mut off = 0;
    loop {
        let h = &tar[off..off + 512];
        if h.iter().all(|&b| b == 0) {
            // Exactly two zero blocks, and nothing after them (no record padding).
            assert!(tar[off..].iter().all(|&b| b == 0));
            assert_eq!(tar.len() - off, 1024, "end of archive is two zero blocks");
            return out;
        }
        let mut copy = h.to_vec();
        copy[148..156].copy_from_slice(b"        ");
        let sum: u64 = copy.iter().map(|&b| u64::from(b)).sum();
        assert_eq!(&h[154..156], b"\0 ", "checksum terminator");
        assert_eq!(oct(&h[148..155]), sum, "checksum");
        assert_eq!(&h[257..263], b"ustar\0");
        assert_eq!(&h[263..265], b"00");
        assert!(
            h[265..329].iter().all(|&b| b == 0),
            "uname/gname must be empty"
        );
        assert_eq!(&h[329..345], b"0000000\x000000000\0", "devmajor/devminor");
        assert!(h[500..].iter().all(|&b| b == 0), "padding after prefix");
        let mtime = oct(&h[136..148]);
        let size = oct(&h[124..136]);
        let body = &tar[off + 512..off + 512 + size as usize];
        off += 512 + (size as usize).div_ceil(512) * 512;
        if h[156] == b'x' {
            assert_eq!(cstr(&h[0..100]), "././@PaxHeader");
            assert_eq!(
                (oct(&h[100..108]), oct(&h[108..116]), oct(&h[116..124])),
                (0o644, 0, 0)
            );
            assert_eq!(mtime, EPOCH);
            let mut rest = std::str::from_utf8(body).unwrap();
            while !rest.is_empty() {
                let (len, _) = rest.split_once(' ').unwrap();
                let len: usize = len.parse().unwrap();
                let rec = &rest[..len];
                assert!(rec.ends_with('\n'));
                let (k, v) = rec[rec.find(' ').unwrap() + 1..len - 1]
                    .split_once('=')
                    .unwrap();
                pax.push((k.to_string(), v.to_string()));
                rest = &rest[len..];
            }
            let keys: Vec<_> = pax.iter().map(|(k, _)| k.clone()).collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted, "PAX records in sorted key order");
            continue;
        }
        let prefix = cstr(&h[345..500]);
        let name = cstr(&h[0..100]);
        let mut path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let mut linkname = cstr(&h[157..257]);
        for (k, v) in &pax {
            match k.as_str() {
                "path" => path = v.clone(),
                "linkpath" => linkname = v.clone(),
                other => panic!("unexpected PAX key {other}"),
            }
        }
        out.push(Hdr {
            path,
            typeflag: h[156],
            mode: oct(&h[100..108]) as u32,
            uid: oct(&h[108..116]) as u32,
            gid: oct(&h[116..124]) as u32,
            size,
            mtime,
            linkname,
            pax_keys: pax.drain(..).map(|(k, _)| k).collect(),
            content: body.to_vec(),
        });
    }
}

#[test]
fn tree_becomes_exactly_the_contract_listing() {
    let dir = tempfile::tempdir().unwrap();
    build_tree(dir.path(), &PLAIN, false);
    let entries = scan(&[spec(dir.path())]).unwrap();
    let (tar, stats) = layer(&entries, Compression::None, 1);
    assert_eq!(stats.diff_id, Digest::of(&tar));
    let got = read_tar(&tar);
    let want = expected();
    let got_rows: Vec<_> = got
        .iter()
        .map(|h| {
            (
                h.path.clone(),
                h.typeflag,
                h.mode,
                h.uid,
                h.gid,
                h.size,
                h.linkname.clone(),
            )
        })
        .collect();
    assert_eq!(got_rows, want);
    let paths: Vec<&[u8]> = got.iter().map(|h| h.path.as_bytes()).collect();
    assert!(
        paths.windows(2).all(|w| w[0] < w[1]),
        "sorted by path bytes"
    );
    for h in &got {
        assert_eq!(h.mtime, EPOCH, "{}", h.path);
        let needs_pax = h.path.len() > 255 || h.linkname.len() > 100;
        assert_eq!(
            !h.pax_keys.is_empty(),
            needs_pax,
            "PAX only when needed: {}",
            h.path
        );
    }
    let long_file = got.iter().find(|h| h.path.ends_with(&g200())).unwrap();
    assert_eq!(long_file.pax_keys, ["path"]);
    assert!(long_file.path.len() > 255);
    assert_eq!(
        got.iter()
            .find(|h| h.path.ends_with("long-target"))
            .unwrap()
            .pax_keys,
        ["linkpath"]
    );
    // The > 100-byte directory path uses the USTAR prefix, no PAX.
    let deep = &got[12];
    assert!(deep.path.len() > 100 && deep.pax_keys.is_empty());
    assert_eq!(got[3].content, b"#!/bin/sh\necho hi\n");
    assert_eq!(got[14].content, b"very long name\n");
}

#[test]
fn python_tarfile_and_gnu_tar_agree() {
    let dir = tempfile::tempdir().unwrap();
    build_tree(&dir.path().join("src").tap_mkdir(), &PLAIN, false);
    let entries = scan(&[spec(&dir.path().join("src"))]).unwrap();
    let (tar, _) = layer(&entries, Compression::None, 1);
    let path = dir.path().join("layer.tar");
    fs::write(&path, &tar).unwrap();
    let script = r"
import json, sys, tarfile
out = []
with tarfile.open(sys.argv[1], errorlevel=2) as t:
    for m in t.getmembers():
        out.append([m.name, m.type.decode(), m.mode, m.uid, m.gid, m.size, m.linkname,
                    m.mtime, m.uname, m.gname, m.devmajor, m.devminor, sorted(m.pax_headers)])
print(json.dumps(out))
";
    let py = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&py.stdout).unwrap();
    let want = expected();
    assert_eq!(rows.len(), want.len());
    for (row, w) in rows.iter().zip(&want) {
        // tarfile strips the trailing "/" of directory names.
        assert_eq!(row[0], w.0.trim_end_matches('/'));
        assert_eq!(row[1], (w.1 as char).to_string());
        assert_eq!(row[2], w.2);
        assert_eq!((row[3].clone(), row[4].clone()), (w.3.into(), w.4.into()));
        assert_eq!(row[5], w.5);
        assert_eq!(row[6], w.6.as_str());
        assert_eq!(row[7], EPOCH);
        assert_eq!((row[8].as_str(), row[9].as_str()), (Some(""), Some("")));
        assert_eq!((row[10].as_u64(), row[11].as_u64()), (Some(0), Some(0)));
    }
    let tar_out = Command::new("tar").arg("-tf").arg(&path).output().unwrap();
    assert!(
        tar_out.status.success(),
        "{}",
        String::from_utf8_lossy(&tar_out.stderr)
    );
    let names: Vec<String> = String::from_utf8(tar_out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(names, want.iter().map(|w| w.0.clone()).collect::<Vec<_>>());
    let v = Command::new("tar")
        .args(["--numeric-owner", "-tvf"])
        .arg(&path)
        .output()
        .unwrap();
    let listing = String::from_utf8(v.stdout).unwrap();
    assert!(listing.contains("hrw-r--r-- 1000/1001"), "{listing}");
    assert!(
        listing.contains(&format!("{P}hard2 link to {P}hard1")),
        "{listing}"
    );
    assert!(listing.contains("-rwxr-xr-x 1000/1001"), "{listing}");
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}
impl TapMkdir for std::path::PathBuf {
    fn tap_mkdir(self) -> Self {
        fs::create_dir(&self).unwrap();
        self
    }
}

/// The golden digest of the uncompressed tar of the fixed tree. If this changes, the
/// determinism contract changed: bump CONTRACT_VERSION and say so in the commit.
const GOLDEN_DIFF_ID: &str =
    "sha256:f154712e7c22cf3b73704056a705da604877f86ffe7a37d6ffd10747f2ae1a8e";

#[test]
fn golden_digest_and_no_host_leaks() {
    let a = tempfile::tempdir().unwrap();
    build_tree(a.path(), &PLAIN, false);
    let b = tempfile::tempdir().unwrap();
    build_tree(b.path(), &odd(), true);
    let ea = scan(&[spec(a.path())]).unwrap();
    let eb = scan(&[spec(b.path())]).unwrap();
    let (_, sa) = layer(&ea, Compression::None, 1);
    let (_, sb) = layer(&eb, Compression::None, 1);
    assert_eq!(sa.diff_id.to_string(), GOLDEN_DIFF_ID);
    assert_eq!(
        sb.diff_id, sa.diff_id,
        "host permission bits, mtimes or creation order leaked"
    );
    // Compressed digests: stable for a pinned compressor, whatever the thread count.
    for c in [Compression::GZIP, Compression::ZSTD] {
        let (bytes1, s1) = layer(&ea, c, 1);
        let (_, s4) = layer(&eb, c, 4);
        assert_eq!((s1.diff_id, s1.digest), (sa.diff_id, s4.digest), "{c:?}");
        assert_eq!(s1.size, bytes1.len() as u64);
        assert_eq!(s1.uncompressed_size, sa.uncompressed_size);
        let mut back = Vec::new();
        match c {
            Compression::Gzip(_) => {
                flate2::read::MultiGzDecoder::new(&bytes1[..])
                    .read_to_end(&mut back)
                    .unwrap();
            }
            _ => back = zstd::decode_all(&bytes1[..]).unwrap(),
        }
        assert_eq!(Digest::of(&back), sa.diff_id);
    }
}

#[test]
fn preserve_keeps_host_bits() {
    let dir = tempfile::tempdir().unwrap();
    build_tree(dir.path(), &odd(), false);
    let mut s = spec(dir.path());
    s.mode = ModePolicy::Preserve;
    let entries = scan(&[s]).unwrap();
    let mode_of = |p: &str| {
        entries
            .iter()
            .find(|e| e.path == format!("{P}{p}"))
            .unwrap()
            .mode
    };
    assert_eq!(
        (
            mode_of(""),
            mode_of("bin/"),
            mode_of("bin/run.sh"),
            mode_of("data/a.txt")
        ),
        (0o750, 0o750, 0o700, 0o600)
    );
    assert_eq!(mode_of("link-out"), 0o777);
    assert_eq!(entries[0].mode, 0o755, "synthesized ancestors stay 0755");
}

#[test]
fn file_changed_between_scan_and_write_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("grows.log");
    fs::write(&f, "12345").unwrap();
    let mut s = spec(&f);
    s.dest = "/var/log/".into();
    let entries = scan(&[s]).unwrap();
    let paths: Vec<_> = entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["var/", "var/log/", "var/log/grows.log"]);
    let opts = LayerOptions {
        epoch: 0,
        compression: Compression::GZIP,
        threads: 2,
    };
    for content in ["123456789", "12"] {
        fs::write(&f, content).unwrap();
        let err = write_layer(&entries, &opts, &mut std::io::sink(), &|_| {}).unwrap_err();
        match &err {
            LayerError::Changed {
                path,
                expected: 5,
                found,
            } if *path == f => {
                assert_eq!(*found, content.len() as u64);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(err.to_string().contains("changed while reading"));
        assert!(err.to_string().contains(&f.display().to_string()));
    }
}

#[test]
fn top_level_symlink_source_is_resolved_and_progress_counts_content() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    fs::create_dir(&real).unwrap();
    fs::write(real.join("x"), vec![7u8; 70_000]).unwrap();
    fs_err::os::unix::fs::symlink("real", dir.path().join("via-link")).unwrap();
    let mut s = spec(&dir.path().join("via-link"));
    s.dest = "/".into();
    let entries = scan(&[s]).unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].path, "x");
    assert!(matches!(
        entries[0].kind,
        EntryKind::File { size: 70_000, .. }
    ));
    let total = std::cell::Cell::new(0u64);
    let opts = LayerOptions {
        epoch: 0,
        compression: Compression::ZSTD,
        threads: 2,
    };
    write_layer(&entries, &opts, &mut std::io::sink(), &|n| {
        total.set(total.get() + n);
    })
    .unwrap();
    assert_eq!(total.get(), 70_000);
}

#[test]
fn ignore_patterns_apply_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    build_tree(dir.path(), &PLAIN, false);
    let mut s = spec(dir.path());
    s.ignore = vec![
        "data".into(),
        "!data/nested/**/c.txt".into(),
        "**/*.sh".into(),
        "hard1".into(),
    ];
    let entries = scan(&[s]).unwrap();
    let paths: Vec<_> = entries
        .iter()
        .map(|e| e.path.strip_prefix(P).unwrap_or(&e.path))
        .collect();
    assert!(paths.contains(&"data/nested/deep/c.txt"));
    assert!(paths.contains(&"data/nested/deep/") && paths.contains(&"data/"));
    assert!(!paths.contains(&"data/a.txt") && !paths.contains(&"bin/run.sh"));
    // hard1 ignored: hard2 is a plain file now.
    let hard2 = entries.iter().find(|e| e.path.ends_with("hard2")).unwrap();
    assert!(matches!(hard2.kind, EntryKind::File { .. }));
}

/// Ten `**/a/` before `*c` over a 25-deep chain of `a` directories with 200 files: the
/// backtracking matcher took minutes here (it tried every way to share the `a`s among the
/// `**`s, for every entry and every prefix of it). The result is what the rules say: a file
/// ending in `c` at least ten `a`s deep is excluded, nothing else is.
#[test]
fn pathological_double_star_pattern_on_a_deep_tree() {
    let dir = tempfile::tempdir().unwrap();
    let mut rel = String::new();
    let mut expected = vec![String::new()];
    for depth in 1..=25 {
        rel.push_str("a/");
        fs::create_dir(dir.path().join(&rel)).unwrap();
        expected.push(rel.clone());
        for k in 0..8 {
            let name = format!("f{k}{}", if k % 2 == 0 { 'c' } else { 'd' });
            fs::write(dir.path().join(&rel).join(&name), "x").unwrap();
            if depth < 10 || k % 2 == 1 {
                expected.push(format!("{rel}{name}"));
            }
        }
    }
    let mut s = spec(dir.path());
    s.ignore = vec![format!("{}*c", "**/a/".repeat(10))];
    let entries = scan(&[s]).unwrap();
    // "srv/app/" itself is "" here.
    let paths: Vec<String> = entries
        .iter()
        .filter_map(|e| e.path.strip_prefix(P).map(str::to_string))
        .collect();
    expected.sort();
    assert_eq!(paths, expected);
    assert_eq!(paths.len(), 1 + 25 + 200 - 8 * 16 / 2);
}

/// The golden digests of the fixed tree as zstd:chunked and eStargz layers (docs/partial-pulls.md):
/// the same for any thread count and host; zstd:chunked decodes to the golden tar, eStargz to
/// the golden tar's entries plus its TOC entry. If one changes, the format or its compressor
/// changed: the layer cache key (`Compression::describe`) must change with it.
const GOLDEN_PARTIAL: [(&str, &str); 2] = [
    (
        "zstd:chunked",
        "sha256:861471d61e6752651c67d1f3a8fa8977b7c148543d2e2b5c1037a35bb42c965f",
    ),
    (
        "estargz",
        "sha256:795198e1aad3e86b9d17cefb04e48cb8112b8f64f8932d014a9492bb55a07784",
    ),
];

#[test]
fn golden_partial_pull_layers() {
    let a = tempfile::tempdir().unwrap();
    build_tree(a.path(), &PLAIN, false);
    let b = tempfile::tempdir().unwrap();
    build_tree(b.path(), &odd(), true);
    let ea = scan(&[spec(a.path())]).unwrap();
    let eb = scan(&[spec(b.path())]).unwrap();
    let (tar, _) = layer(&ea, Compression::None, 1);
    for (name, golden) in GOLDEN_PARTIAL {
        let c: Compression = name.parse().unwrap();
        let (bytes, s1) = layer(&ea, c, 1);
        let (_, s4) = layer(&eb, c, 4);
        assert_eq!(s1, s4, "{name}: the same layer, annotations included");
        assert_eq!(s1.digest.to_string(), golden, "{name}");
        assert_eq!(s1.size, bytes.len() as u64);
        let back = if name == "estargz" {
            let mut back = Vec::new();
            flate2::read::MultiGzDecoder::new(&bytes[..])
                .read_to_end(&mut back)
                .unwrap();
            assert!(back[..tar.len() - 1024] == tar[..tar.len() - 1024]);
            back
        } else {
            let back = zstd::decode_all(&bytes[..]).unwrap();
            assert!(back == tar);
            back
        };
        assert_eq!(
            (Digest::of(&back), back.len() as u64),
            (s1.diff_id, s1.uncompressed_size)
        );
    }
}
