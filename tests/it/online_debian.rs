//! Online (OCIBUILD_ONLINE=1): recipes/bookworm-python.toml and recipes/trixie-python.toml
//! built from the Debian archive, re-resolved (the committed lock is not trusted: the live
//! archive moves), run under podman, and rebuilt cold from the new lock to the same digest;
//! mawk's alternative on both; on trixie, merged /usr as `/bin/sh`, `ldd` and `dpkg -S` see it.

use crate::common;

use fs_err as fs;
use std::path::Path;

use common::{ocibuild, podman_run, require_tool, run_ok, stdout, tempdir};

/// What differs between the two releases' python recipes.
pub(crate) struct Release {
    pub name: &'static str,
    /// The recipe's `[python] version` and image tag.
    pub python: &'static str,
    /// Packages the python3 lock must hold (trixie's 64-bit time_t names: `libssl3t64`).
    pub packages: &'static [&'static str],
}

pub(crate) const BOOKWORM: Release = Release {
    name: "bookworm",
    python: "3.11",
    packages: &[
        "python3.11-minimal",
        "libpython3.11-stdlib",
        "libssl3",
        "libsqlite3-0",
        "zlib1g",
    ],
};

pub(crate) const TRIXIE: Release = Release {
    name: "trixie",
    python: "3.13",
    packages: &[
        "python3.13-minimal",
        "libpython3.13-stdlib",
        "libssl3t64",
        "libsqlite3-0",
        "zlib1g",
    ],
};

fn build(recipe: &Path, out: &Path, cache: &Path) -> serde_json::Value {
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", cache)
            .args(["build", "--json", "-o"])
            .arg(out)
            .arg(recipe),
    );
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// The repository's recipes directory, and a temporary project with the release's keys the
/// recipes name.
fn project(rel: &Release) -> (std::path::PathBuf, tempfile::TempDir) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    let t = tempdir();
    fs::create_dir(t.path().join("keys")).unwrap();
    let key = format!("keys/debian-{}.asc", rel.name);
    fs::copy(repo.join(&key), t.path().join(&key)).unwrap();
    (repo, t)
}

/// The release's python recipe with `extra` packages added, written into the project.
fn recipe_with(repo: &Path, dir: &Path, rel: &Release, extra: &[&str]) -> std::path::PathBuf {
    let text = fs::read_to_string(repo.join(format!("{}-python.toml", rel.name))).unwrap();
    let mut add = String::new();
    for e in extra {
        add.push_str(&format!(", \"{e}\""));
    }
    let text = text.replace("\"libstdc++6\"]", &format!("\"libstdc++6\"{add}]"));
    assert!(extra.iter().all(|e| text.contains(&format!("\"{e}\""))));
    let recipe = dir.join(format!("{}-python.toml", rel.name));
    fs::write(&recipe, text).unwrap();
    recipe
}

#[test]
fn bookworm_python3_from_the_debian_archive() {
    python3_from_the_debian_archive(&BOOKWORM);
}

#[test]
fn trixie_python3_from_the_debian_archive() {
    python3_from_the_debian_archive(&TRIXIE);
}

fn python3_from_the_debian_archive(rel: &Release) {
    if !common::online(&format!(
        "builds {}'s python3 from the Debian archive",
        rel.name
    )) || !require_tool("podman")
    {
        return;
    }
    let (repo, t) = project(rel);
    let recipe = recipe_with(&repo, t.path(), rel, &[]);
    let py = rel.python;

    let first = build(&recipe, &t.path().join("a"), &t.path().join("cache-a"));
    let lock = fs::read_to_string(t.path().join(format!("{}-python.lock", rel.name))).unwrap();
    for pkg in rel.packages {
        assert!(
            lock.contains(&format!("name = \"{pkg}\"")),
            "{pkg} not in the lock"
        );
    }
    assert_eq!(first["python"]["version"], py);
    assert_eq!(
        first["python"]["executable"],
        format!("/usr/bin/python{py}").as_str()
    );

    let o = podman_run(
        &t.path().join("a"),
        py,
        &[
            "python3",
            "-c",
            "import ssl, sqlite3, json, zlib; print('ok')",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o).trim(), "ok");

    // A Debian system: /tmp and /var/tmp, accounts for root and nobody (the rootfs layer).
    let check = "import tempfile, pwd, getpass, os, stat\n\
        for d in ('/tmp', '/var/tmp'):\n    assert stat.S_IMODE(os.stat(d).st_mode) == 0o1777, d\n\
        assert tempfile.gettempdir() == '/tmp', tempfile.gettempdir()\n\
        open('/tmp/x.png', 'wb').write(b'x')\n\
        print(pwd.getpwuid(0).pw_name, pwd.getpwuid(os.getuid()).pw_name, getpass.getuser(), os.getuid())";
    for (flags, want) in [
        (vec![], "root root root 0"),
        (vec!["--user", "65534:65534"], "root nobody nobody 65534"),
    ] {
        let o =
            common::podman_run_flags(&t.path().join("a"), py, &flags, &["python3", "-c", check]);
        assert!(
            o.status.success(),
            "{flags:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(stdout(&o).trim(), want, "{flags:?}");
    }
    assert_eq!(first["rootfs"]["baseline"], true);
    assert_eq!(first["rootfs"]["accounts"]["origin"], "minimal");
    assert_eq!(
        first["rootfs"]["ldSoCache"]["needed"], false,
        "{:#}",
        first["rootfs"]
    );

    // Same lock, cold store: the same layers and the same image.
    let second = build(&recipe, &t.path().join("b"), &t.path().join("cache-b"));
    assert_eq!(second["layers"], {
        let mut l = first["layers"].clone();
        l[0]["cached"] = serde_json::Value::Bool(false);
        l
    });
    assert_eq!(second["manifest"], first["manifest"]);
}

/// mawk from the Debian archive: its postinst's `update-alternatives --install` (not run)
/// becomes `/usr/bin/awk -> /etc/alternatives/awk -> /usr/bin/mawk`, which runs.
#[test]
fn mawk_from_the_debian_archive_gives_usr_bin_awk_bookworm() {
    mawk_gives_usr_bin_awk(&BOOKWORM);
}

#[test]
fn mawk_from_the_debian_archive_gives_usr_bin_awk_trixie() {
    mawk_gives_usr_bin_awk(&TRIXIE);
}

fn mawk_gives_usr_bin_awk(rel: &Release) {
    if !common::online(&format!(
        "installs {}'s mawk from the Debian archive",
        rel.name
    )) || !require_tool("podman")
    {
        return;
    }
    let (repo, t) = project(rel);
    let recipe = recipe_with(&repo, t.path(), rel, &["mawk"]);
    let v = build(&recipe, &t.path().join("img"), &t.path().join("cache"));
    let alts = v["rootfs"]["alternatives"].as_array().unwrap();
    assert!(
        alts.iter()
            .any(|a| a["name"] == "awk" && a["path"] == "/usr/bin/mawk" && a["package"] == "mawk"),
        "{:#}",
        v["rootfs"]
    );
    let not_run = v["rootfs"]["scriptsNotRun"].as_array().unwrap();
    assert!(
        not_run.iter().any(|s| s["package"] == "mawk"),
        "{:#}",
        v["rootfs"]
    );
    let o = podman_run(
        &t.path().join("img"),
        rel.python,
        &["/usr/bin/awk", "BEGIN { print 6 * 7 }"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o).trim(), "42");
}

/// The commands the merged-/usr test runs with `/bin/sh`, one answer a line.
const MERGED_USR_CHECK: &str = "readlink /bin; readlink /lib; readlink /lib64; readlink /sbin\n\
    readlink -f /bin/sh\n\
    /bin/sh -c 'echo sh runs'\n\
    ldd /usr/bin/python3 | sed 's/ (0x[0-9a-f]*)//'\n\
    dpkg -S /usr/bin/python3.13 /usr/bin/sh /usr/bin/ldd\n\
    dpkg -S /bin/sh 2>&1; echo \"rc=$?\"\n";

/// trixie on scratch is merged /usr, as base-files 13 makes it: `/bin`, `/lib`, `/lib64` and
/// `/sbin` are links into `/usr`, `/bin/sh` is dash at `/usr/bin/dash`, python3's libraries
/// resolve through `/lib` to `/usr/lib/x86_64-linux-gnu`, and dpkg's database (written by
/// ocibuild) answers `dpkg -S` as on a debootstrapped trixie: `/usr/bin/sh` is dash's,
/// `/bin/sh` is no package's path (dash ships `/usr/bin/sh`; dpkg 1.22 does not resolve the
/// links).
#[test]
fn trixie_merged_usr_sh_python3_ldd_and_dpkg_agree() {
    if !common::online("installs trixie's dash, python3, libc-bin and dpkg")
        || !require_tool("podman")
    {
        return;
    }
    if std::env::consts::ARCH != "x86_64" {
        eprintln!("SKIPPED: expects x86_64's library paths; this host is not x86_64");
        return;
    }
    let (repo, t) = project(&TRIXIE);
    let recipe = recipe_with(
        &repo,
        t.path(),
        &TRIXIE,
        &["dash", "bash", "coreutils", "sed", "libc-bin", "dpkg"],
    );
    let img = t.path().join("img");
    build(&recipe, &img, &t.path().join("cache"));
    let o = podman_run(&img, "3.13", &["/bin/sh", "-c", MERGED_USR_CHECK]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lib = "/lib/x86_64-linux-gnu";
    let want = format!(
        "usr/bin\nusr/lib\nusr/lib64\nusr/sbin\n/usr/bin/dash\nsh runs\n\
         \tlinux-vdso.so.1\n\
         \tlibm.so.6 => {lib}/libm.so.6\n\
         \tlibz.so.1 => {lib}/libz.so.1\n\
         \tlibexpat.so.1 => {lib}/libexpat.so.1\n\
         \tlibc.so.6 => {lib}/libc.so.6\n\
         \t/lib64/ld-linux-x86-64.so.2\n\
         python3.13-minimal: /usr/bin/python3.13\n\
         dash: /usr/bin/sh\n\
         libc-bin: /usr/bin/ldd\n\
         dpkg-query: no path found matching pattern /bin/sh\n\
         rc=1\n"
    );
    assert_eq!(stdout(&o), want);
    // Every library resolves into /usr (through /lib).
    let o = podman_run(
        &img,
        "3.13",
        &["/bin/sh", "-c", "for l in $(ldd /usr/bin/python3 | sed -n 's/.*=> \\([^ ]*\\).*/\\1/p'); do readlink -f $l; done"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let real = stdout(&o);
    assert!(
        real.lines().count() == 4
            && real
                .lines()
                .all(|l| l.starts_with("/usr/lib/x86_64-linux-gnu/")),
        "{real}"
    );
}
