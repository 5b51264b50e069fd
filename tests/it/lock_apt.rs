//! apt archives and the lock, hardened (issue 31, cases 3, 10 for the lock, 11 and 12), offline:
//! signed archives generated here (served from `file://`), each test asserting the refusal's
//! message or the correct result, and that nothing outside the test's directories changed.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use fs_err as fs;
use ocibuild::digest::Digest;
use pgp::composed::SignedSecretKey;

use crate::aptfix::{build_deb, deb, keygen, write_dists_dated, write_key, Deb, Signing};
use crate::common;

/// Generous: every refusal here is immediate; a regression that hangs fails instead of hanging
/// the suite.
const LIMIT: Duration = Duration::from_secs(120);

/// A Release date line, as archives write it.
const D1: &str = "Date: Sat, 10 Feb 2024 09:56:43 UTC\n";
const D2: &str = "Date: Sun, 11 Feb 2024 09:56:43 UTC\n";
const D3: &str = "Date: Mon, 12 Feb 2024 09:56:43 UTC\n";

/// The archive at `root` made again: `debs` in its pool, one Packages index listing them
/// (`filename` overrides a package's `Filename:`), the Release with `dated`, clearsigned with
/// `key` (one key per test: a key made again has another creation time, so another
/// fingerprint).
fn publish(
    key: &SignedSecretKey,
    root: &Path,
    debs: &[Deb],
    dated: &str,
    filename: Option<(&str, &str)>,
) {
    let _ = fs::remove_dir_all(root.join("dists"));
    fs::create_dir_all(root.join("pool/main")).unwrap();
    let mut packages = String::new();
    for d in debs {
        let bytes = build_deb(d, false);
        let mut file = format!("pool/main/{}_{}_{}.deb", d.name, d.version, d.arch);
        fs::write(root.join(&file), &bytes).unwrap();
        if let Some((name, f)) = filename {
            if name == d.name {
                file = f.to_string();
            }
        }
        packages.push_str(&format!(
            "{}Filename: {file}\nSize: {}\nSHA256: {}\n\n",
            d.control(),
            bytes.len(),
            Digest::of(&bytes).hex()
        ));
    }
    write_dists_dated(
        root,
        &[("amd64", &packages)],
        Signing::InRelease(key),
        dated,
    );
}

/// `DIR/app.toml`: scratch, linux/amd64, the archive at `url` (key `key`), `[apt] packages`.
fn recipe(dir: &Path, url: &str, key: &Path, source_extra: &str, packages: &[&str]) -> PathBuf {
    let list: Vec<String> = packages.iter().map(|p| format!("\"{p}\"")).collect();
    let p = dir.join("app.toml");
    fs::write(
        &p,
        format!(
            "[image]\nname = \"example.com/apt\"\nplatform = \"linux/amd64\"\n\n\
             [[apt.source]]\nurl = \"{url}\"\nsuite = \"stable\"\ncomponents = [\"main\"]\n\
             signed-by = \"{}\"\n{source_extra}\n[apt]\npackages = [{}]\n",
            key.display(),
            list.join(", ")
        ),
    )
    .unwrap();
    p
}

/// A test's directories: the work directory (recipe, lock, archive) and one outside it that
/// must not change.
struct Dirs {
    _tmp: tempfile::TempDir,
    work: PathBuf,
    outside: PathBuf,
    key: PathBuf,
    secret: SignedSecretKey,
}

impl Dirs {
    fn new() -> Dirs {
        let tmp = common::tempdir();
        let work = tmp.path().join("work");
        let outside = tmp.path().join("outside");
        fs::create_dir_all(&work).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("keep"), b"keep").unwrap();
        let secret = keygen(1);
        let key = write_key(&work, "archive.asc", &secret);
        Dirs {
            work,
            outside,
            key,
            secret,
            _tmp: tmp,
        }
    }

    fn archive(&self) -> (PathBuf, String) {
        let root = self.work.join("archive");
        let url = format!("file://{}", root.display());
        (root, url)
    }

    /// The outside directory holds what it held.
    fn untouched(&self) {
        let mut names: Vec<_> = fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let mut expected: Vec<String> = vec!["keep".into()];
        if self.outside.join("secret.deb").exists() {
            expected.push("secret.deb".into());
        }
        expected.sort();
        assert_eq!(names, expected, "{} changed", self.outside.display());
        assert_eq!(fs::read(self.outside.join("keep")).unwrap(), b"keep");
    }
}

fn ocibuild(args: &[&str], recipe: &Path) -> Output {
    common::run_timeout(
        common::ocibuild().arg("--quiet").args(args).arg(recipe),
        LIMIT,
    )
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The error line of a failed run: exactly one line on stderr, returned.
fn refused(o: &Output) -> String {
    assert!(
        !o.status.success(),
        "expected a refusal, got success\n{}",
        stderr(o)
    );
    let err = stderr(o);
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected:\n{err}"
    );
    err.trim_end().to_string()
}

fn lock_text(dir: &Dirs) -> String {
    fs::read_to_string(dir.work.join("app.lock")).unwrap()
}

fn tool(v: &'static str) -> Deb {
    deb("tool", v).data(crate::aptfix::Data::File(
        "./usr/share/doc/tool.txt",
        "tool\n",
        0o644,
    ))
}

#[test]
fn an_expired_release_is_refused_unless_a_snapshot_or_frozen_on_purpose() {
    let d = Dirs::new();
    let (root, url) = d.archive();
    publish(
        &d.secret,
        &root,
        &[tool("1")],
        &format!("{D1}Valid-Until: Sat, 17 Feb 2024 09:56:43 UTC\n"),
        None,
    );
    let r = recipe(&d.work, &url, &d.key, "", &["tool"]);
    let err = refused(&ocibuild(&["lock"], &r));
    assert!(
        err.contains(&format!("{url}/dists/stable/InRelease: the Release expired on 2024-02-17T09:56:43Z (its Valid-Until)")),
        "{err}"
    );
    assert!(err.contains("check-valid-until = false"), "{err}");
    assert!(!d.work.join("app.lock").exists() || !lock_text(&d).contains("tool"));
    d.untouched();

    // Valid until far ahead: accepted.
    publish(
        &d.secret,
        &root,
        &[tool("1")],
        &format!("{D1}Valid-Until: Fri, 31 Dec 9999 23:59:59 UTC\n"),
        None,
    );
    common::assert_success(&ocibuild(&["lock"], &r), "lock, valid");
    assert!(
        lock_text(&d).contains("release-date = \"2024-02-10T09:56:43Z\""),
        "{}",
        lock_text(&d)
    );

    // Expired, but the source says it is frozen on purpose.
    publish(
        &d.secret,
        &root,
        &[tool("1")],
        &format!("{D2}Valid-Until: Sat, 17 Feb 2024 09:56:43 UTC\n"),
        None,
    );
    let r = recipe(
        &d.work,
        &url,
        &d.key,
        "check-valid-until = false\n",
        &["tool"],
    );
    common::assert_success(&ocibuild(&["lock", "--update"], &r), "lock, frozen");

    // A snapshot source (the timestamp appended to the URL) is never checked.
    let snap = d.work.join("snap");
    publish(
        &d.secret,
        &snap.join("20240210T000000Z"),
        &[tool("1")],
        &format!("{D1}Valid-Until: Sat, 17 Feb 2024 09:56:43 UTC\n"),
        None,
    );
    let snap_url = format!("file://{}", snap.display());
    let r = recipe(
        &d.work,
        &snap_url,
        &d.key,
        "snapshot = \"20240210T000000Z\"\n",
        &["tool"],
    );
    common::assert_success(&ocibuild(&["lock"], &r), "lock, snapshot");
    d.untouched();
}

#[test]
fn a_replayed_older_release_and_a_downgrade_are_refused_by_a_relock() {
    let d = Dirs::new();
    let (root, url) = d.archive();
    publish(&d.secret, &root, &[tool("2")], D2, None);
    let r = recipe(&d.work, &url, &d.key, "", &["tool"]);
    common::assert_success(&ocibuild(&["lock"], &r), "lock");
    let locked = lock_text(&d);
    assert!(
        locked.contains("release-date = \"2024-02-11T09:56:43Z\""),
        "{locked}"
    );
    assert!(locked.contains("version = \"2\""), "{locked}");

    // The archive serves an older, validly signed Release again (with the older version).
    publish(&d.secret, &root, &[tool("1")], D1, None);
    let err = refused(&ocibuild(&["lock", "--update"], &r));
    assert_eq!(
        err,
        format!(
            "error: [apt]: source {url} suite stable: the Release is dated 2024-02-10T09:56:43Z, \
             older than the 2024-02-11T09:56:43Z the lock recorded: the mirror is stale or serves \
             an old Release again; the lock's [apt] section was left as it was: use an \
             up-to-date mirror"
        )
    );
    assert_eq!(lock_text(&d), locked, "the lock changed");
    // --allow-downgrade does not accept an older Release.
    refused(&ocibuild(&["lock", "--update", "--allow-downgrade"], &r));
    assert_eq!(lock_text(&d), locked, "the lock changed");

    // A newer Release with a lower version: the package is named, the relock refused.
    publish(&d.secret, &root, &[tool("1")], D3, None);
    let err = refused(&ocibuild(&["lock", "--update"], &r));
    assert!(
        err.contains("the new resolution would downgrade a package the lock pins (tool 2 → 1)"),
        "{err}"
    );
    assert!(err.contains("`ocibuild lock --allow-downgrade`"), "{err}");
    assert_eq!(lock_text(&d), locked, "the lock changed");
    // A recipe change that relocks (a plain `lock`, and a `build`) is held to it too.
    let r = recipe(&d.work, &url, &d.key, "", &["tool (>= 0)"]);
    let err = refused(&ocibuild(&["lock"], &r));
    assert!(err.contains("tool 2 → 1"), "{err}");
    assert_eq!(lock_text(&d), locked, "the lock changed");

    // Accepted with the flag: the lower version and the newer date are pinned.
    let o = ocibuild(&["lock", "--update", "--allow-downgrade"], &r);
    common::assert_success(&o, "lock --allow-downgrade");
    let now = lock_text(&d);
    assert!(now.contains("version = \"1\""), "{now}");
    assert!(
        now.contains("release-date = \"2024-02-12T09:56:43Z\""),
        "{now}"
    );
    d.untouched();
}

#[test]
fn a_lock_without_release_dates_still_reads_and_gets_them_when_written_again() {
    let d = Dirs::new();
    let (root, url) = d.archive();
    publish(&d.secret, &root, &[tool("2")], D2, None);
    let r = recipe(&d.work, &url, &d.key, "", &["tool"]);
    common::assert_success(&ocibuild(&["lock"], &r), "lock");
    // The lock as an ocibuild before dates were recorded wrote it.
    let old: String = lock_text(&d)
        .lines()
        .filter(|l| !l.starts_with("release-date"))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(d.work.join("app.lock"), &old).unwrap();
    let o = common::run_timeout(
        common::ocibuild()
            .args(["build", "--locked", "-o"])
            .arg(d.work.join("out"))
            .arg(&r),
        LIMIT,
    );
    common::assert_success(&o, "build --locked with an old lock");
    assert_eq!(lock_text(&d), old, "a locked build rewrote the lock");
    publish(&d.secret, &root, &[tool("2")], D1, None);
    // No date recorded: nothing to compare with; the relock records one.
    common::assert_success(&ocibuild(&["lock", "--update"], &r), "relock");
    assert!(lock_text(&d).contains("release-date = \"2024-02-10T09:56:43Z\""));
    d.untouched();
}

#[test]
fn filenames_outside_the_archive_are_refused_naming_the_package_and_index() {
    let d = Dirs::new();
    let (root, url) = d.archive();
    // A file outside the archive with the .deb's very bytes: the hash would hold.
    let secret = tool("1");
    fs::write(d.outside.join("secret.deb"), build_deb(&secret, false)).unwrap();
    let r = recipe(&d.work, &url, &d.key, "", &["tool"]);
    for (name, why) in [
        ("../../outside/secret.deb", "it has a `..` component"),
        (
            "pool/main/../../../outside/secret.deb",
            "it has a `..` component",
        ),
        (
            &*format!("{}", d.outside.join("secret.deb").display()),
            "it is an absolute path",
        ),
        ("http://evil.example/pool/tool_1_amd64.deb", "it is a URL"),
    ] {
        publish(
            &d.secret,
            &root,
            std::slice::from_ref(&secret),
            D1,
            Some(("tool", name)),
        );
        let err = refused(&ocibuild(&["lock"], &r));
        assert_eq!(
            err,
            format!(
                "error: [apt]: {url}/dists/stable/main/binary-amd64/Packages.xz: package `tool`: \
                 Filename `{name}`: {why}; a Filename must be a path relative to the archive \
                 root without `..`: the archive is broken or hostile, report it to its \
                 maintainers"
            )
        );
        assert!(!d.work.join("app.lock").exists(), "a lock was written");
    }
    // A lock edited to point outside: refused when read, naming the lock and the package.
    publish(&d.secret, &root, std::slice::from_ref(&secret), D1, None);
    common::assert_success(&ocibuild(&["lock"], &r), "lock");
    let lock = d.work.join("app.lock");
    let edited = lock_text(&d).replace("filename = \"pool/main/", "filename = \"../../outside/");
    let edited = edited.replace("outside/tool_1_amd64.deb", "outside/secret.deb");
    fs::write(&lock, &edited).unwrap();
    let o = common::run_timeout(
        common::ocibuild()
            .args(["build", "--frozen", "-o"])
            .arg(d.work.join("out"))
            .arg(&r),
        LIMIT,
    );
    let err = refused(&o);
    assert!(
        err.contains(&format!(
            "{}: not a valid lock file: [[apt.package]] `tool`: filename `../../outside/secret.deb`: \
             it has a `..` component",
            lock.display()
        )),
        "{err}"
    );
    assert!(!d.work.join("out").exists());
    d.untouched();
}

#[test]
fn a_lock_written_again_keeps_its_mode_and_owner() {
    let d = Dirs::new();
    let (root, url) = d.archive();
    publish(&d.secret, &root, &[tool("1")], D1, None);
    let r = recipe(&d.work, &url, &d.key, "", &["tool"]);
    let lock = d.work.join("app.lock");
    // A new lock: as any new file, 0666 less the umask.
    let o = common::run_timeout(
        Command::new("sh")
            .arg("-c")
            .arg("umask 027 && exec \"$0\" lock \"$1\"")
            .arg(env!("CARGO_BIN_EXE_ocibuild"))
            .arg(&r)
            .env("OCIBUILD_CACHE", common::test_dir("cache")),
        LIMIT,
    );
    common::assert_success(&o, "lock under umask 027");
    assert_eq!(
        fs::metadata(&lock).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    if !common::is_root() {
        common::notice("SKIPPED (partly): the owner check needs root");
        return;
    }
    std::os::unix::fs::chown(&lock, Some(1234), Some(1234)).unwrap();
    fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o604)).unwrap();
    let before = fs::metadata(&lock).unwrap();
    publish(&d.secret, &root, &[tool("2")], D2, None);
    common::assert_success(&ocibuild(&["lock", "--update"], &r), "relock");
    let after = fs::metadata(&lock).unwrap();
    assert_ne!(after.ino(), before.ino(), "the lock was not written again");
    assert!(lock_text(&d).contains("version = \"2\""));
    assert_eq!(
        (after.mode() & 0o7777, after.uid(), after.gid()),
        (0o604, 1234, 1234)
    );
    // No temporary file left beside it.
    let left: Vec<_> = fs::read_dir(&d.work)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".ocibuild-lock-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    d.untouched();
}

/// `app.lock` (or what `which` names) as a FIFO and as a symlink to /dev/zero.
fn specials(dir: &Path, name: &str) -> Vec<(PathBuf, &'static str)> {
    let fifo = dir.join(format!("fifo-{name}"));
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    let zero = dir.join(format!("zero-{name}"));
    fs::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    vec![(fifo, "a FIFO"), (zero, "a character device")]
}

#[test]
fn a_lock_recipe_or_registries_file_that_is_a_fifo_or_dev_zero_is_refused_at_once() {
    let d = Dirs::new();
    let (root, url) = d.archive();
    publish(&d.secret, &root, &[tool("1")], D1, None);
    let r = recipe(&d.work, &url, &d.key, "", &["tool"]);
    let lock = d.work.join("app.lock");
    for (special, kind) in specials(&d.work, "lock") {
        for args in [
            &["lock"][..],
            &["lock", "--update"],
            &["build", "--frozen"],
            &["build"],
        ] {
            let _ = fs::remove_file(&lock);
            fs::os::unix::fs::symlink(&special, &lock).unwrap();
            let err = refused(&ocibuild(args, &r));
            assert!(
                err.contains(&format!(
                    "`{}` is {kind}, not a regular file",
                    lock.display()
                )),
                "{args:?}: {err}"
            );
            assert!(fs::symlink_metadata(&lock)
                .unwrap()
                .file_type()
                .is_symlink());
        }
    }
    let _ = fs::remove_file(&lock);
    for (special, kind) in specials(&d.work, "recipe") {
        let err = refused(&ocibuild(&["lock"], &special));
        assert_eq!(
            err,
            format!(
                "error: {}: cannot read recipe: it is {kind}, not a regular file: give the path \
                 of the recipe file itself",
                special.display()
            )
        );
    }
    // The registries file, read before any registry is asked (a base image recipe).
    let based = d.work.join("based.toml");
    fs::write(
        &based,
        "[image]\nname = \"example.com/b\"\nplatform = \"linux/amd64\"\n\n[base]\nimage = \"registry.invalid/base:1\"\n",
    )
    .unwrap();
    for (special, kind) in specials(&d.work, "registries") {
        let o = common::run_timeout(
            common::ocibuild()
                .arg("--registries")
                .arg(&special)
                .arg("lock")
                .arg(&based),
            LIMIT,
        );
        let err = refused(&o);
        assert_eq!(
            err,
            format!(
                "error: registries file: `{}` is {kind}, not a regular file",
                special.display()
            )
        );
    }
    d.untouched();
}
