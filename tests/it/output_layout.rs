//! Outputs and layouts in hostile and broken surroundings (the hardening issue), offline, with
//! generated inputs: special files at `-o`, a full disk or a crash, the outputs' modes, a blob
//! edited through a layout, an app file rewritten while it is read. Each test asserts the
//! refusal or the correct result, and that nothing outside the build's own directories
//! changed. Its `recipe`, `build` and `stderr` also serve podman_args.rs and epoch.rs.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use fs_err as fs;

use crate::common;

pub(crate) fn recipe(dir: &Path, tag: &str, data: &[u8]) -> PathBuf {
    let src = dir.join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("data.bin"), data).unwrap();
    let r = dir.join(format!("{tag}.toml"));
    fs::write(
        &r,
        format!(
            "[image]\nname = \"example.com/ocibuild/hardening\"\ntag = \"{tag}\"\n\
             compression = \"gzip\"\n\n[[layer]]\nname = \"data\"\nsrc = \"src\"\ndest = \"/data\"\n"
        ),
    )
    .unwrap();
    r
}

/// Bytes gzip cannot shrink.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub(crate) fn build(recipe: &Path, output: &str) -> std::process::Output {
    common::run(
        common::ocibuild()
            .arg("--quiet")
            .arg("build")
            .arg(recipe)
            .arg("--output")
            .arg(output),
    )
}

pub(crate) fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// A directory outside the build's own, and a check that it is as it was.
struct Outside {
    dir: PathBuf,
}

impl Outside {
    fn new(root: &Path) -> Outside {
        let dir = root.join("outside");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("keep"), b"keep").unwrap();
        Outside { dir }
    }

    fn untouched(&self) {
        let names: Vec<_> = fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["keep"], "{} changed", self.dir.display());
        assert_eq!(fs::read(self.dir.join("keep")).unwrap(), b"keep");
    }
}

#[test]
fn outputs_never_replace_or_write_through_special_files() {
    let d = common::test_dir("w");
    let r = recipe(&d, "v1", b"hello\n");
    let outside = Outside::new(&d);
    let victim = outside.dir.join("keep");

    // An archive over a FIFO, a socket, a symlink, a directory and (as root) a device node.
    let fifo = d.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // In a short temporary directory: a socket path must fit in sun_path (108 bytes), and the
    // test directory's path depends on where the checkout is.
    let sock_dir = common::tempdir();
    let sock = sock_dir.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let link = d.join("link.tar");
    fs::os::unix::fs::symlink(&victim, &link).unwrap();
    let dir = d.join("adir");
    fs::create_dir(&dir).unwrap();
    let mut cases = vec![
        (fifo.clone(), "is a FIFO"),
        (sock.clone(), "is a socket"),
        (link.clone(), "is a symbolic link"),
        (dir.clone(), "is a directory"),
    ];
    let dev = d.join("null");
    if common::is_root() {
        // The null device (1:3), made here rather than touching /dev.
        let made = Command::new("mknod")
            .args([dev.to_str().unwrap(), "c", "1", "3"])
            .status()
            .unwrap();
        if made.success() {
            cases.push((dev.clone(), "is a device"));
        }
    }
    for (path, expected) in &cases {
        for kind in ["docker-archive", "oci-archive"] {
            let out = build(&r, &format!("{kind}:{}", path.display()));
            assert!(!out.status.success(), "{kind}:{}", path.display());
            let e = stderr(&out);
            assert!(
                e.contains(&format!(
                    "refusing to write {}: it {expected}",
                    path.display()
                )),
                "{e}"
            );
        }
    }
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(fs::symlink_metadata(&sock).unwrap().file_type().is_socket());
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    if cases.len() == 5 {
        assert!(fs::symlink_metadata(&dev)
            .unwrap()
            .file_type()
            .is_char_device());
    }
    outside.untouched();

    // A layout that is a symlink, or whose blobs/ or blobs/sha256 is one.
    let layout_link = d.join("link.oci");
    fs::os::unix::fs::symlink(&outside.dir, &layout_link).unwrap();
    let out = build(&r, layout_link.to_str().unwrap());
    assert!(
        stderr(&out).contains("it is a symbolic link"),
        "{}",
        stderr(&out)
    );
    for planted in ["blobs", "blobs/sha256"] {
        let l = d.join(format!("planted-{}.oci", planted.replace('/', "-")));
        let ok = build(&r, l.to_str().unwrap());
        common::assert_success(&ok, "first build");
        let p = l.join(planted);
        fs::remove_dir_all(&p).unwrap();
        fs::os::unix::fs::symlink(&outside.dir, &p).unwrap();
        let out = build(&r, l.to_str().unwrap());
        assert!(!out.status.success());
        let e = stderr(&out);
        assert!(
            e.contains(&format!(
                "refusing to write {}: it is a symbolic link",
                p.display()
            )),
            "{e}"
        );
    }
    outside.untouched();

    // A blob in the layout that is a symlink to a file of the right size is replaced, not
    // trusted or written through.
    let l = d.join("blob-link.oci");
    common::assert_success(&build(&r, l.to_str().unwrap()), "build");
    let blobs = l.join("blobs/sha256");
    let (name, len) = fs::read_dir(&blobs)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name(), e.metadata().unwrap().len()))
        .max_by_key(|(_, len)| *len)
        .unwrap();
    let fake = outside.dir.join("fake");
    fs::write(&fake, vec![b'x'; len as usize]).unwrap();
    fs::remove_file(blobs.join(&name)).unwrap();
    fs::os::unix::fs::symlink(&fake, blobs.join(&name)).unwrap();
    common::assert_success(&build(&r, l.to_str().unwrap()), "rebuild");
    assert!(fs::symlink_metadata(blobs.join(&name)).unwrap().is_file());
    assert_eq!(fs::read(&fake).unwrap(), vec![b'x'; len as usize]);
    fs::remove_file(&fake).unwrap();
    outside.untouched();
}

/// Runs `ocibuild build` under a file-size limit (bytes; `prlimit --fsize`), with SIGXFSZ
/// ignored (`ignore`: writes past the limit fail with EFBIG, as on a full disk) or not (the
/// process is killed mid-write, as in a crash).
fn build_limited(recipe: &Path, output: &Path, cache: &Path, limit: u64, ignore: bool) -> bool {
    let trap = if ignore { "trap '' XFSZ; " } else { "" };
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("{trap}exec prlimit --fsize={limit} \"$@\""))
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_ocibuild"))
        .arg("--quiet")
        .arg("build")
        .arg(recipe)
        .arg("--output")
        .arg(output)
        .env("OCIBUILD_CACHE", cache)
        .env_remove("SOURCE_DATE_EPOCH");
    let out = common::run(&mut c);
    LAST_STDERR.with(|s| *s.borrow_mut() = stderr(&out));
    out.status.success()
}

thread_local! {
    /// What the last [`build_limited`] printed on stderr.
    static LAST_STDERR: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn a_layout_is_complete_or_untouched_after_a_full_disk_or_a_crash() {
    if !common::require_tool("prlimit") {
        return;
    }
    let d = common::test_dir("w");
    // The store on another filesystem than the layouts, so blobs are copied (written) into
    // them rather than hard-linked.
    let shm = Path::new("/dev/shm");
    use std::os::unix::fs::MetadataExt;
    if !shm.is_dir() || fs::metadata(shm).unwrap().dev() == fs::metadata(&d).unwrap().dev() {
        common::notice("SKIP: no /dev/shm on another filesystem for the store");
        return;
    }
    let cache_dir = tempfile::Builder::new()
        .prefix("ocibuild-hardening-")
        .tempdir_in(shm)
        .unwrap();
    let cache = cache_dir.path();
    let a = recipe(&d.join("a"), "a", &noise(3 << 20));
    let b = recipe(&d.join("b"), "b", &noise(4 << 20));
    // Warm the cache with both images, without a limit.
    for r in [&a, &b] {
        let out = common::run(
            common::ocibuild()
                .arg("--quiet")
                .arg("build")
                .arg(r)
                .arg("--output")
                .arg(d.join("warm.oci"))
                .env("OCIBUILD_CACHE", cache),
        );
        common::assert_success(&out, "warm build");
    }
    let limit = 1 << 20;
    // A new layout: absent after either failure, and no staging directory left after the
    // handled one.
    for ignore in [true, false] {
        let l = d.join(format!("new-{ignore}.oci"));
        assert!(!build_limited(&a, &l, cache, limit, ignore));
        assert!(!l.exists(), "{} exists after a failed write", l.display());
        if ignore {
            let e = LAST_STDERR.with(|s| s.borrow().clone());
            assert_eq!(e.matches("File too large").count(), 1, "{e}");
            let strays: Vec<_> = listing(&d)
                .into_iter()
                .filter(|n| n.starts_with(".ocibuild-tmp-"))
                .collect();
            assert!(strays.is_empty(), "{strays:?}");
        }
    }
    // An existing layout: its index.json and blobs exactly as before.
    let l = d.join("existing.oci");
    assert!(build_limited(&a, &l, cache, 64 << 20, true));
    let index = fs::read(l.join("index.json")).unwrap();
    let blobs = listing(&l.join("blobs/sha256"));
    for ignore in [true, false] {
        assert!(!build_limited(&b, &l, cache, limit, ignore));
        assert_eq!(fs::read(l.join("index.json")).unwrap(), index);
        if ignore {
            assert_eq!(listing(&l.join("blobs/sha256")), blobs);
        }
        // After the crash, at most unreferenced files; the image still reads.
        for name in &blobs {
            assert!(l.join("blobs/sha256").join(name).is_file());
        }
    }
    // And the next unlimited build completes it.
    assert!(build_limited(&b, &l, cache, 64 << 20, true));
    assert!(listing(&l.join("blobs/sha256")).len() > blobs.len());
}

#[test]
fn outputs_are_created_0644_less_the_umask() {
    let d = common::test_dir("w");
    let r = recipe(&d, "v1", b"hello\n");
    for (umask, file, dir) in [("022", 0o644, 0o755), ("027", 0o640, 0o750)] {
        let l = d.join(format!("u{umask}.oci"));
        let tar = d.join(format!("u{umask}.tar"));
        for out in [
            l.to_str().unwrap().to_string(),
            format!("oci-archive:{}", tar.display()),
        ] {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!("umask {umask}; exec \"$@\""))
                .arg("sh")
                .arg(env!("CARGO_BIN_EXE_ocibuild"))
                .args(["--quiet", "build"])
                .arg(&r)
                .arg("--output")
                .arg(&out)
                .env("OCIBUILD_CACHE", d.join("cache"));
            common::assert_success(&common::run(&mut c), "build");
        }
        assert_eq!(mode(&l), dir, "layout dir, umask {umask}");
        assert_eq!(mode(&l.join("blobs")), dir);
        assert_eq!(mode(&l.join("index.json")), file, "umask {umask}");
        assert_eq!(mode(&l.join("oci-layout")), file);
        assert_eq!(mode(&tar), file, "archive, umask {umask}");
    }
}

/// Inverts the byte at `offset` of `path` in place, as `dd conv=notrunc` would (made writable
/// first: blobs are 0444).
fn flip(path: &Path, offset: u64) {
    use std::io::{Read, Seek, SeekFrom, Write};
    fs::set_permissions(path, PermissionsExt::from_mode(0o644)).unwrap();
    let mut f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8];
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.read_exact(&mut b).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(&[!b[0]]).unwrap();
}

/// Every blob file in a layout, by hex name, hashed.
fn layout_blobs_intact(layout: &Path) {
    for e in fs::read_dir(layout.join("blobs/sha256")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        assert_eq!(
            common::sha256_file(&e.path()).unwrap(),
            format!("sha256:{name}"),
            "{}",
            layout.display()
        );
    }
}

#[test]
fn a_blob_edited_through_a_layout_is_never_shipped_again() {
    let d = common::test_dir("w");
    let r = recipe(&d, "v1", &noise(256 << 10));
    let cache = d.join("cache");
    let build_to = |out: &Path| {
        common::run(
            common::ocibuild()
                .arg("build")
                .arg(&r)
                .arg("--output")
                .arg(out)
                .env("OCIBUILD_CACHE", &cache),
        )
    };
    let a = d.join("a.oci");
    common::assert_success(&build_to(&a), "first build");
    // The biggest blob is the data layer; it is the store's inode (a hard link).
    let (layer, _) = fs::read_dir(a.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.path(), e.metadata().unwrap().len()))
        .max_by_key(|(_, len)| *len)
        .unwrap();
    let hex = layer.file_name().unwrap().to_str().unwrap().to_string();
    // Edit one byte in place, as `dd conv=notrunc` would (chmod first: blobs are 0444).
    flip(&layer, 1000);
    assert_ne!(
        common::sha256_file(&cache.join("blobs/sha256").join(&hex)).unwrap(),
        format!("sha256:{hex}")
    );
    // The next build, into another layout, finds the change and builds the layer again.
    let b = d.join("b.oci");
    let out = build_to(&b);
    common::assert_success(&out, "second build");
    assert!(
        stderr(&out).contains(&format!("store blob sha256:{hex} had changed")),
        "{}",
        stderr(&out)
    );
    layout_blobs_intact(&b);
    assert_eq!(
        common::sha256_file(&cache.join("blobs/sha256").join(&hex)).unwrap(),
        format!("sha256:{hex}")
    );
    // Building into the edited layout again replaces its changed blob too.
    common::assert_success(&build_to(&a), "rebuild into a");
    layout_blobs_intact(&a);

    // `cache verify` finds a change even when the mtime was set back (the seal cannot see that).
    let blob = cache.join("blobs/sha256").join(&hex);
    let stamp = d.join("stamp");
    assert!(Command::new("touch")
        .arg("-r")
        .arg(&blob)
        .arg(&stamp)
        .status()
        .unwrap()
        .success());
    flip(&blob, 2000);
    assert!(Command::new("touch")
        .arg("-r")
        .arg(&stamp)
        .arg(&blob)
        .status()
        .unwrap()
        .success());
    let cache_cmd = |args: &[&str]| {
        common::run(
            common::ocibuild()
                .arg("cache")
                .args(args)
                .env("OCIBUILD_CACHE", &cache),
        )
    };
    let v = cache_cmd(&["verify", "--json"]);
    assert_eq!(v.status.code(), Some(1), "{}", stderr(&v));
    let report: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(
        report["changed"],
        serde_json::json!([format!("sha256:{hex}")])
    );
    assert!(!blob.exists());
    assert!(report["danglingEntries"].as_u64().unwrap() >= 1);
    let v = cache_cmd(&["verify"]);
    assert!(v.status.success(), "{}", stderr(&v));
    assert!(
        common::stdout(&v).contains(" 0 changed"),
        "{}",
        common::stdout(&v)
    );
    // And the next build makes the layer again.
    let c = d.join("c.oci");
    common::assert_success(&build_to(&c), "third build");
    layout_blobs_intact(&c);

    // `cache prune`: temporary files of killed builds go; refused while a build has the store.
    fs::write(cache.join("tmp/blob-killed"), vec![0u8; 4096]).unwrap();
    fs::create_dir_all(cache.join("tmp/python-spool-K1lled/root")).unwrap();
    let held = fs::File::open(cache.join("locks/store.lock")).unwrap();
    held.file().lock_shared().unwrap();
    let p = cache_cmd(&["prune"]);
    assert!(!p.status.success());
    assert!(
        stderr(&p).contains("is in use by a running build"),
        "{}",
        stderr(&p)
    );
    held.file().unlock().unwrap();
    let p = cache_cmd(&["prune", "--json"]);
    assert!(p.status.success(), "{}", stderr(&p));
    let report: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
    assert_eq!(report["temporary"], 2, "{report}");
    assert!(report["temporaryBytes"].as_u64().unwrap() >= 4096);
    assert_eq!(fs::read_dir(cache.join("tmp")).unwrap().count(), 0);
    // What is left still builds, all cached.
    let out = build_to(&d.join("e.oci"));
    common::assert_success(&out, "build after prune");
}

/// The content of `/data/data.bin` in the layout's one data layer (the biggest blob).
fn data_in_layout(layout: &Path) -> Vec<u8> {
    use std::io::Read;
    let (blob, _) = fs::read_dir(layout.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.path(), e.metadata().unwrap().len()))
        .max_by_key(|(_, len)| *len)
        .unwrap();
    let gz = flate2::read::GzDecoder::new(fs::File::open(&blob).unwrap());
    let mut ar = tar::Archive::new(gz);
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        if e.path().unwrap().to_str() == Some("data/data.bin") {
            let mut v = Vec::new();
            e.read_to_end(&mut v).unwrap();
            return v;
        }
    }
    panic!("no data/data.bin in {}", blob.display());
}

#[test]
fn a_file_rewritten_while_it_is_read_is_never_cached() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let d = common::test_dir("w");
    let len = 16 << 20;
    let a = noise(len);
    let b: Vec<u8> = a.iter().map(|x| !x).collect();
    let r = recipe(&d, "v1", &a);
    let file = d.join("src/data.bin");
    let stop = AtomicBool::new(false);
    /// Stops the rewriting thread however the scope ends (a failed assertion included).
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let mut outcomes = Vec::new();
    std::thread::scope(|s| {
        let _stop = Stop(&stop);
        // Rewrites the file in place, same size, A and B in turns, in 1 MiB pieces.
        s.spawn(|| {
            use std::io::{Seek, SeekFrom, Write};
            let mut f = fs::OpenOptions::new().write(true).open(&file).unwrap();
            let mut turn = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let src = if turn.is_multiple_of(2) { &b } else { &a };
                f.seek(SeekFrom::Start(0)).unwrap();
                for chunk in src.chunks(1 << 20) {
                    f.write_all(chunk).unwrap();
                }
                turn += 1;
            }
        });
        for i in 0..3 {
            let out = build(&r, d.join(format!("race{i}.oci")).to_str().unwrap());
            let e = stderr(&out);
            if out.status.success() {
                // A layer that did get built holds one whole version of the file.
                let got = data_in_layout(&d.join(format!("race{i}.oci")));
                assert!(
                    got == a || got == b,
                    "build {i}: a layer of neither version"
                );
                outcomes.push("built");
            } else {
                assert!(
                    e.contains("changed while it was read") || e.contains("changed while reading"),
                    "{e}"
                );
                outcomes.push("refused");
            }
        }
    });
    common::notice(&format!("racing builds: {outcomes:?}"));
    // The file restored: the next build holds exactly it, whatever the racing builds cached.
    fs::write(&file, &a).unwrap();
    let l = d.join("after.oci");
    common::assert_success(&build(&r, l.to_str().unwrap()), "build after the race");
    assert!(
        data_in_layout(&l) == a,
        "a layer of other bytes than the file's"
    );
}

/// A crafted `index.json` (a digest that is a path, `../` out of `blobs/sha256/`) makes `push`
/// and `mirror` stop at the layout, naming the digest, before any registry is asked: neither
/// reads a file outside the layout.
#[test]
fn push_and_mirror_refuse_a_layout_whose_index_names_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("img.oci");
    fs::create_dir_all(layout.join("blobs/sha256")).unwrap();
    fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    fs::write(dir.path().join("secret"), b"{}").unwrap();
    fs::write(
        layout.join("index.json"),
        r#"{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:../../../secret","size":2,"annotations":{"org.opencontainers.image.ref.name":"t"}}]}"#,
    )
    .unwrap();
    let cache = dir.path().join("cache");
    // Port 9 (discard): nothing there; neither command may get as far as asking.
    for args in [
        vec!["push", layout.to_str().unwrap(), "127.0.0.1:9/x/y:t"],
        vec!["mirror", layout.to_str().unwrap(), "--to", "127.0.0.1:9/x"],
    ] {
        let out = common::ocibuild()
            .env("OCIBUILD_CACHE", &cache)
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            err.contains("bad digest `sha256:../../../secret`"),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("127.0.0.1:9"),
            "{args:?} asked the registry: {err}"
        );
    }
}
