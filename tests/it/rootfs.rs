//! The `rootfs` layer: on `scratch`, the Debian baseline directories; accounts (root and
//! nobody, base-passwd's masters, or the base's) with the recipe's users added; the
//! alternatives the packages' postinst scripts install; `build --json`'s report of the scripts
//! not run. Golden listings, reproducible under changed TZ, umask, cwd and threads; the
//! recipe's user running under podman; the refusals, one line each, nothing written.

use std::path::{Path, PathBuf};
use std::process::Command;

use fs_err as fs;
use serde_json::Value;

use crate::aptfix::{self, deb, fixture, python_universe, Data, Deb, Fixture};
use crate::common::{
    self, layer_named as layer, ocibuild, run, run_ok, stdout, tar_listing, tempdir,
};

const MAWK_POSTINST: &str = "#!/bin/sh\nset -e\nif [ \"$1\" = \"configure\" ]; then\n        update-alternatives --install /usr/bin/awk awk /usr/bin/mawk 5 \\\n            --slave /usr/share/man/man1/awk.1.gz awk.1.gz /usr/share/man/man1/mawk.1.gz \\\n            --slave /usr/bin/nawk nawk /usr/bin/mawk\nfi\n";
const OAWK_POSTINST: &str =
    "#!/bin/sh\nupdate-alternatives --install /usr/bin/awk awk /usr/bin/original-awk 1\n";
const ODD_POSTINST: &str = "#!/bin/sh\nfor v in 1 2; do update-alternatives --install /usr/bin/odd odd /usr/bin/odd$v 10; done\n";
const PASSWD_MASTER: &str = "root:*:0:0:root:/root:/bin/bash\ndaemon:*:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nnobody:*:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
const GROUP_MASTER: &str =
    "root:*:0:\ndaemon:*:1:\nmail:*:8:\nshadow:*:42:\nstaff:*:50:\nnogroup:*:65534:\n";

/// The python universe, plus two awk providers, a script that cannot be read statically, and
/// base-passwd.
fn universe() -> Vec<Deb> {
    let mut u = python_universe();
    u.push(
        deb("mawk", "1.3.4")
            .script("postinst", MAWK_POSTINST)
            .script(
                "prerm",
                "#!/bin/sh\nupdate-alternatives --remove awk /usr/bin/mawk\n",
            )
            .data(Data::Dir("./usr/bin/"))
            .data(Data::File("./usr/bin/mawk", "#!mawk\n", 0o755)),
    );
    u.push(
        deb("original-awk", "2012")
            .script("postinst", OAWK_POSTINST)
            .data(Data::Dir("./usr/bin/"))
            .data(Data::File("./usr/bin/original-awk", "#!oawk\n", 0o755)),
    );
    u.push(
        deb("odd", "1.0")
            .script("postinst", ODD_POSTINST)
            .data(Data::Dir("./usr/bin/"))
            .data(Data::File("./usr/bin/odd1", "odd\n", 0o755)),
    );
    u.push(
        deb("libfoo1", "1.0")
            .script(
                "triggers",
                "# Triggers added by dh_makeshlibs/13.11.4\nactivate-noawait ldconfig\n",
            )
            .data(Data::Dir("./usr/lib/"))
            .data(Data::Dir("./usr/lib/x86_64-linux-gnu/"))
            .data(Data::File(
                "./usr/lib/x86_64-linux-gnu/libfoo.so.1",
                "ELF foo",
                0o644,
            )),
    );
    u.push(
        deb("libbar1", "1.0")
            .data(Data::Dir("./etc/"))
            .data(Data::Dir("./etc/ld.so.conf.d/"))
            .data(Data::File(
                "./etc/ld.so.conf.d/bar.conf",
                "# bar\n/opt/bar/lib\n",
                0o644,
            ))
            .data(Data::Dir("./opt/"))
            .data(Data::Dir("./opt/bar/"))
            .data(Data::Dir("./opt/bar/lib/"))
            .data(Data::File("./opt/bar/lib/libbar.so.1", "ELF bar", 0o644)),
    );
    u.push(
        deb("base-passwd", "3.6.1")
            .script(
                "postinst",
                "#!/bin/sh\ncp /usr/share/base-passwd/passwd.master /etc/passwd\n",
            )
            .data(Data::Dir("./usr/share/base-passwd/"))
            .data(Data::File(
                "./usr/share/base-passwd/passwd.master",
                PASSWD_MASTER,
                0o644,
            ))
            .data(Data::File(
                "./usr/share/base-passwd/group.master",
                GROUP_MASTER,
                0o644,
            )),
    );
    u
}

fn recipe(dir: &Path, f: &Fixture, packages: &[&str], extra: &str) -> PathBuf {
    aptfix::apt_recipe(dir, f, &f.key, packages, extra)
}

fn build(recipe: &Path, out: &Path, cache: &Path, cmd: impl FnOnce(&mut Command)) -> Value {
    let mut c = ocibuild();
    c.env("OCIBUILD_CACHE", cache);
    cmd(&mut c);
    let o = run_ok(c.args(["build", "--json", "-o"]).arg(out).arg(recipe));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// A file's content from a layer blob.
fn file_in(blob: &Path, path: &str) -> String {
    let o = run_ok(Command::new("python3").args([
        "-c",
        "import sys, tarfile\nwith tarfile.open(sys.argv[1]) as t: sys.stdout.write(t.extractfile(sys.argv[2]).read().decode())",
    ]).arg(blob).arg(path));
    stdout(&o)
}

/// The baseline as the layer lists it (directories of Debian's base-files and its postinst),
/// less what the packages ship themselves (`usr/lib/`, `var/lib/dpkg/`).
const BASELINE: &[&str] = &[
    "d 0755 0:0 bin/",
    "d 0755 0:0 boot/",
    "d 0755 0:0 dev/",
    "d 0755 0:0 etc/",
    "d 0755 0:0 etc/alternatives/",
    "l 0777 0:0 etc/alternatives/awk -> /usr/bin/mawk",
    "l 0777 0:0 etc/alternatives/nawk -> /usr/bin/mawk",
    "d 0755 0:0 etc/default/",
    "d 0755 0:0 etc/dpkg/",
    "d 0755 0:0 etc/dpkg/origins/",
    "f 0644 0:0 etc/group",
    "d 0755 0:0 etc/opt/",
    "f 0644 0:0 etc/passwd",
    "d 0755 0:0 etc/profile.d/",
    "f 0640 0:42 etc/shadow",
    "d 0755 0:0 etc/skel/",
    "d 0755 0:0 home/",
    "d 0700 1000:1000 home/app/",
    "d 0755 0:0 lib/",
    "d 0755 0:0 media/",
    "d 0755 0:0 mnt/",
    "d 0755 0:0 opt/",
    "d 0755 0:0 proc/",
    "d 0700 0:0 root/",
    "d 0755 0:0 run/",
    "d 1777 0:0 run/lock/",
    "d 0755 0:0 sbin/",
    "d 0755 0:0 srv/",
    "d 0755 0:0 sys/",
    "d 1777 0:0 tmp/",
    "d 0755 0:0 usr/",
    "d 0755 0:0 usr/bin/",
    "l 0777 0:0 usr/bin/awk -> /etc/alternatives/awk",
    "l 0777 0:0 usr/bin/nawk -> /etc/alternatives/nawk",
    "d 0755 0:0 usr/games/",
    "d 0755 0:0 usr/include/",
    "d 0755 0:0 usr/local/",
    "d 0755 0:0 usr/local/bin/",
    "d 0755 0:0 usr/local/etc/",
    "d 0755 0:0 usr/local/games/",
    "d 0755 0:0 usr/local/include/",
    "d 0755 0:0 usr/local/lib/",
    "l 0777 0:0 usr/local/man -> share/man",
    "d 0755 0:0 usr/local/sbin/",
    "d 0755 0:0 usr/local/share/",
    "d 0755 0:0 usr/local/share/man/",
    "d 0755 0:0 usr/local/src/",
    "d 0755 0:0 usr/sbin/",
    "d 0755 0:0 usr/share/",
    "d 0755 0:0 usr/share/dict/",
    "d 0755 0:0 usr/share/info/",
    "d 0755 0:0 usr/share/man/",
    "d 0755 0:0 usr/share/misc/",
    "d 0755 0:0 usr/src/",
    "d 0755 0:0 var/",
    "d 0755 0:0 var/backups/",
    "d 0755 0:0 var/cache/",
    "d 0755 0:0 var/lib/",
    "d 0755 0:0 var/lib/misc/",
    "d 2775 0:50 var/local/",
    "l 0777 0:0 var/lock -> /run/lock",
    "d 0755 0:0 var/log/",
    "d 2775 0:8 var/mail/",
    "d 0755 0:0 var/opt/",
    "l 0777 0:0 var/run -> /run",
    "d 0755 0:0 var/spool/",
    "l 0777 0:0 var/spool/mail -> ../mail",
    "d 1777 0:0 var/tmp/",
];

const ACCOUNTS: &str =
    "\n[[accounts.user]]\nname = \"app\"\nuid = 1000\n\n[config]\nuser = \"app\"\n";

#[test]
fn scratch_system_gets_baseline_accounts_and_alternatives_reproducibly() {
    let f = fixture(&universe(), false);
    let t = tempdir();
    let pkgs = [
        "python3",
        "mawk",
        "original-awk",
        "odd",
        "libfoo1",
        "base-passwd",
    ];
    let r = recipe(t.path(), &f, &pkgs, ACCOUNTS);
    let out = t.path().join("img");
    let v = build(&r, &out, &t.path().join("cache"), |_| {});
    let names: Vec<&str> = v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["apt", "rootfs"]);
    let (digest, blob) = layer(&out, &v, "rootfs");
    assert_eq!(tar_listing(&blob), BASELINE);
    assert_eq!(
        file_in(&blob, "etc/passwd"),
        // No package gives /bin/sh: a user declared without a shell gets nologin.
        format!("{PASSWD_MASTER}app:x:1000:1000::/home/app:/usr/sbin/nologin\n")
    );
    assert_eq!(
        file_in(&blob, "etc/group"),
        format!("{GROUP_MASTER}app:x:1000:\n")
    );
    assert_eq!(
        file_in(&blob, "etc/shadow"),
        "root:*::0:99999:7:::\ndaemon:*::0:99999:7:::\nnobody:*::0:99999:7:::\napp:*::0:99999:7:::\n"
    );

    let rf = &v["rootfs"];
    assert_eq!(rf["baseline"], true);
    assert_eq!(rf["accounts"]["origin"], "base-passwd");
    assert_eq!(
        rf["alternatives"],
        serde_json::json!([{"name": "awk", "link": "/usr/bin/awk", "path": "/usr/bin/mawk", "priority": 5, "package": "mawk"}])
    );
    let scripts = rf["scriptsNotRun"].as_array().unwrap();
    let of = |p: &str| {
        scripts
            .iter()
            .find(|s| s["package"] == p)
            .unwrap_or_else(|| panic!("{p}: {rf:#}"))
    };
    assert_eq!(
        of("mawk")["scripts"],
        serde_json::json!(["postinst", "prerm"])
    );
    assert_eq!(
        of("mawk")["emulated"],
        serde_json::json!(["update-alternatives: /usr/bin/awk -> /usr/bin/mawk"])
    );
    assert_eq!(of("original-awk")["emulated"], serde_json::json!([]));
    assert!(
        of("odd")["notEmulated"][0]
            .as_str()
            .unwrap()
            .contains("odd$v"),
        "{rf:#}"
    );
    assert!(of("base-passwd")["emulated"][0]
        .as_str()
        .unwrap()
        .contains("passwd.master"));
    assert_eq!(rf["ldSoCache"]["needed"], false);
    assert_eq!(
        of("libfoo1")["emulated"],
        serde_json::json!(["ldconfig trigger: no ld.so.cache needed (see ldSoCache)"])
    );
    assert!(
        scripts.iter().all(|s| s["package"] != "python3"),
        "a package without scripts is not listed"
    );

    // The same bytes from another directory, umask, TZ, locale and thread count, with a cold
    // cache.
    let elsewhere = t.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let o = run_ok(
        Command::new("sh")
            .args(["-c", "umask 077 && exec \"$0\" \"$@\""])
            .arg(env!("CARGO_BIN_EXE_ocibuild"))
            .args(["-j", "1", "build", "--json", "-o"])
            .arg(t.path().join("img2"))
            .arg(&r)
            .current_dir(&elsewhere)
            .env_remove("SOURCE_DATE_EPOCH")
            .env("OCIBUILD_CACHE", t.path().join("cache2"))
            .env("TZ", "Asia/Kolkata")
            .env("LANG", "de_DE.UTF-8"),
    );
    let v2: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(layer(&t.path().join("img2"), &v2, "rootfs").0, digest);
    assert_eq!(v2["manifest"], v["manifest"]);
    // A library directory that only ld.so.conf.d names: the cache would be needed, and the
    // build says so.
    let d = t.path().join("bar");
    fs::create_dir_all(&d).unwrap();
    let rb = recipe(&d, &f, &["python3", "libbar1"], "");
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", t.path().join("cache"))
            .args(["build", "-o"])
            .arg(d.join("img"))
            .arg(&rb),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "warning: /etc/ld.so.cache needed and not written: ld.so.conf.d names /opt/bar/lib"
        ),
        "{err}"
    );
    // And cached on a rebuild.
    let v3 = build(&r, &out, &t.path().join("cache"), |_| {});
    assert!(
        v3["layers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["cached"] == true),
        "{v3:#}"
    );
}

#[test]
fn accounts_on_a_base_without_them_and_the_refusals() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    // No base-passwd: root and nobody.
    let r = recipe(t.path(), &f, &["python3"], "");
    let out = t.path().join("img");
    let v = build(&r, &out, &t.path().join("cache"), |_| {});
    let (_, blob) = layer(&out, &v, "rootfs");
    assert_eq!(
        file_in(&blob, "etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    );
    assert_eq!(file_in(&blob, "etc/group"), "root:x:0:\nnogroup:x:65534:\n");
    assert_eq!(v["rootfs"]["accounts"]["origin"], "minimal");
    assert!(tar_listing(&blob).contains(&"f 0640 0:0 etc/shadow".to_string()));

    // Refusals: one line with the recipe's location, and nothing written.
    let cases: &[(&str, &str)] = &[
        (
            "\n[[accounts.user]]\nname = \"a\"\nuid = 1000\n\n[[accounts.user]]\nname = \"b\"\nuid = 1000\n",
            "app.toml:20:7: [[accounts.user]] #2: uid 1000 is already user `a`'s",
        ),
        (
            "\n[[accounts.user]]\nname = \"a\"\nuid = 1000\n\n[[accounts.user]]\nname = \"a\"\nuid = 1001\n",
            "[[accounts.user]] #2: user `a` is declared twice",
        ),
        (
            "\n[[accounts.user]]\nname = \"nobody\"\nuid = 1000\n",
            "app.toml:14:1: user `nobody` (1000) collides with `nobody` (65534) of the default accounts",
        ),
        (
            "\n[[accounts.group]]\nname = \"staff\"\ngid = 0\n",
            "group `staff` (0) collides with `root` (0)",
        ),
        (
            "\n[config]\nuser = \"web\"\n",
            "app.toml:15:8: [config] user `web`: no account `web`: declare it in [[accounts.user]]",
        ),
        (
            "\n[[accounts.user]]\nname = \"a\"\nuid = 1000\nhome = \"home/a\"\n",
            "[[accounts.user]] #1: invalid home `home/a`: expected an absolute path",
        ),
        (
            "\n[[accounts.user]]\nname = \"a\"\nuid = 1000\nhome = \"/tmp\"\n",
            "user `a`: home `/tmp` is a system directory",
        ),
        (
            "\n[[accounts.user]]\nname = \"Bad\"\nuid = 1000\n",
            "[[accounts.user]] #1: invalid name `Bad`",
        ),
        (
            "\n[[accounts.user]]\nname = \"a\"\nuid = 1000\nshell = \"/bin/sh\\nevil:x:0:0::/:/bin/sh\"\n",
            "[[accounts.user]] #1: invalid shell `/bin/sh\\nevil:x:0:0::/:/bin/sh`: must not contain `:` or control characters",
        ),
        (
            "\n[[accounts.user]]\nname = \"a\"\nuid = 1000\nhome = \"/tmp/a\"\n",
            "user `a`: home `/tmp/a` is beneath a system symlink or a directory such as /tmp",
        ),
        (
            "\n[[accounts.user]]\nname = \"a\"\nuid = 1000\n\n[[accounts.user]]\nname = \"b\"\nuid = 1001\nhome = \"/home/a\"\n",
            "[[accounts.user]] #2: home `/home/a` is already user `a`'s",
        ),
        (
            "\n[[apt.source]]\nurl = \"https://u:ab/cd@deb.example/debian\"\nsuite = \"s\"\ncomponents = [\"main\"]\nallow-unsigned = true\n",
            "[[apt.source]] #2: the url is not a valid URL (not repeated here, in case it holds a login)",
        ),
        (
            "\n[[layer]]\nname = \"rootfs\"\nsrc = \".\"\ndest = \"/x\"\n",
            "layer name `rootfs` is also the name of a layer ocibuild adds to this recipe's image",
        ),
    ];
    for (i, (extra, want)) in cases.iter().enumerate() {
        let d = t.path().join(format!("bad{i}"));
        fs::create_dir_all(&d).unwrap();
        let r = recipe(&d, &f, &["python3"], extra);
        let out = d.join("img");
        let o = run(ocibuild()
            .env("OCIBUILD_CACHE", t.path().join("cache"))
            .args(["build", "-o"])
            .arg(&out)
            .arg(&r));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(want),
            "case {i}: want {want}\n{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "case {i}: one line\n{err}");
        assert!(
            !err.contains("ab/cd"),
            "case {i}: a login in a message\n{err}"
        );
        assert!(!out.exists(), "case {i}: nothing written");
    }
}

/// A scratch image with a static busybox and a declared user runs as that user, in its home.
#[test]
fn the_recipes_user_runs_under_podman() {
    if !common::require_tool("podman") {
        return;
    }
    let Some(busybox) = common::require_static_busybox() else {
        return;
    };
    let t = tempdir();
    let text = format!(
        "[image]\nname = \"example.com/user\"\ntag = \"1\"\n\n[[layer]]\nname = \"busybox\"\nsrc = \"{}\"\ndest = \"/bin/busybox\"\n\n[[accounts.user]]\nname = \"app\"\nuid = 1000\n\n[config]\nuser = \"app\"\nentrypoint = [\"/bin/busybox\", \"sh\", \"-c\"]\n",
        busybox.display()
    );
    let r = t.path().join("user.toml");
    fs::write(&r, text).unwrap();
    let out = t.path().join("img");
    build(&r, &out, &t.path().join("cache"), |_| {});
    let o = common::podman_run(
        &out,
        "1",
        &["/bin/busybox id; /bin/busybox stat -c '%u:%g %a %n' \"$HOME\" /tmp; echo > /tmp/x && echo tmp-ok"],
    );
    let text = format!("{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{text}");
    assert!(text.contains("uid=1000(app) gid=1000(app)"), "{text}");
    assert!(text.contains("1000:1000 700 /home/app"), "{text}");
    assert!(
        text.contains("0:0 1777 /tmp") && text.contains("tmp-ok"),
        "{text}"
    );
}
