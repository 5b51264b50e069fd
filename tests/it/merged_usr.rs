//! Merged /usr on `scratch` (Debian 13, trixie), offline with generated .debs: a base-files
//! like trixie's (shipping `bin -> usr/bin`, `sbin`, `lib`, `lib64`) or a libc6 like trixie's
//! (its loader only under `usr/`) makes the image merged; a .deb shipping `./bin/foo` lands at
//! `usr/bin/foo` as dpkg puts it on a merged system, and no layer holds a path beneath a link
//! another layer makes; an alternative whose link is `/bin/x` is made at `usr/bin/x`; dpkg's
//! database lists the paths as the .debs name them. And trixie's 64-bit time_t renames: a
//! dependency on the old name resolves to the `t64` package that provides it.

use std::collections::BTreeMap;
use std::path::Path;

use fs_err as fs;
use serde_json::Value;

use crate::aptfix::{self, deb, fixture, Data, Deb};
use crate::common::{layer_named, ocibuild, run_ok, stdout, tar_listing, tempdir};

/// base-files 13's links and the directories they point at.
fn base_files() -> Deb {
    deb("base-files", "13.8")
        .field("Essential", "yes")
        .data(Data::Dir("./usr/bin/"))
        .data(Data::Dir("./usr/lib/"))
        .data(Data::Dir("./usr/lib64/"))
        .data(Data::Dir("./usr/sbin/"))
        .data(Data::Symlink("./bin", "usr/bin"))
        .data(Data::Symlink("./lib", "usr/lib"))
        .data(Data::Symlink("./lib64", "usr/lib64"))
        .data(Data::Symlink("./sbin", "usr/sbin"))
}

/// A package that still ships files under /bin, /sbin and /lib (as some in trixie do), with
/// an alternative whose link is `/bin/oldtool`.
fn old_paths() -> Deb {
    deb("oldtool", "1.0")
        .data(Data::Dir("./bin/"))
        .data(Data::File("./bin/oldtool.real", "#!old\n", 0o755))
        .data(Data::Dir("./sbin/"))
        .data(Data::File("./sbin/oldd", "#!oldd\n", 0o755))
        .data(Data::Dir("./lib/"))
        .data(Data::Dir("./lib/oldtool/"))
        .data(Data::File("./lib/oldtool/data", "data\n", 0o644))
        .script(
            "postinst",
            "#!/bin/sh\nupdate-alternatives --install /bin/oldtool oldtool /bin/oldtool.real 10\n",
        )
}

/// trixie's libc6: the loader only under `usr/` (`usr/lib64/ld-linux-x86-64.so.2` a link).
fn trixie_libc6() -> Deb {
    deb("libc6", "2.41-12")
        .field("Multi-Arch", "same")
        .data(Data::Dir("./usr/lib/"))
        .data(Data::Dir("./usr/lib/x86_64-linux-gnu/"))
        .data(Data::File(
            "./usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
            "ELF ld",
            0o755,
        ))
        .data(Data::File(
            "./usr/lib/x86_64-linux-gnu/libc.so.6",
            "ELF libc",
            0o755,
        ))
        .data(Data::Dir("./usr/lib64/"))
        .data(Data::Symlink(
            "./usr/lib64/ld-linux-x86-64.so.2",
            "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
        ))
}

fn build(dir: &Path, debs: &[Deb], packages: &[&str]) -> (Value, std::path::PathBuf) {
    let f = fixture(debs, false);
    let r = aptfix::apt_recipe(dir, &f, &f.key, packages, "");
    let out = dir.join("img");
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", dir.join("cache"))
            .args(["build", "--json", "-o"])
            .arg(&out)
            .arg(&r),
    );
    // The fixture's server must outlive the build.
    drop(f);
    (serde_json::from_str(&stdout(&o)).unwrap(), out)
}

/// Every layer's listing, in order: (layer name, its `tar_listing` lines).
fn layers(out: &Path, v: &Value) -> Vec<(String, Vec<String>)> {
    v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let name = l["name"].as_str().unwrap().to_string();
            let (_, blob) = layer_named(out, v, &name);
            (name, tar_listing(&blob))
        })
        .collect()
}

/// Fails on a path beneath a merged-/usr link (`bin/x` beside `bin -> usr/bin`) or a
/// directory where a link is, in any layer: the link would hide it or it would replace the
/// link. Returns the links (path → target).
fn assert_merged(layers: &[(String, Vec<String>)]) -> BTreeMap<String, String> {
    let mut links = BTreeMap::new();
    for (_, lines) in layers {
        for l in lines {
            let path = l.splitn(4, ' ').nth(3).unwrap();
            if let Some((p, t)) = path.split_once(" -> ") {
                if ["bin", "sbin", "lib", "lib64"].contains(&p) {
                    links.insert(p.to_string(), t.to_string());
                }
            }
        }
    }
    for d in ["bin", "sbin", "lib", "lib64"] {
        assert_eq!(
            links.get(d).map(String::as_str),
            Some(format!("usr/{d}").as_str()),
            "{layers:#?}"
        );
    }
    for (name, lines) in layers {
        for l in lines {
            let path = l.splitn(4, ' ').nth(3).unwrap();
            let top = path.split(['/', ' ']).next().unwrap();
            let is_link = path.starts_with(&format!("{top} -> "));
            assert!(
                !links.contains_key(top) || is_link,
                "layer {name}: `{l}` is beneath or instead of the link /{top}"
            );
        }
    }
    links
}

fn file(out: &Path, v: &Value, layer: &str, path: &str) -> String {
    let (_, blob) = layer_named(out, v, layer);
    let o = run_ok(std::process::Command::new("python3").args([
        "-c",
        "import sys, tarfile\nwith tarfile.open(sys.argv[1]) as t: sys.stdout.write(t.extractfile(sys.argv[2]).read().decode())",
    ]).arg(blob).arg(path));
    stdout(&o)
}

#[test]
fn base_files_links_put_bin_paths_under_usr_with_alternatives_and_dpkg_lists() {
    let t = tempdir();
    let (v, out) = build(
        t.path(),
        &[base_files(), old_paths()],
        &["base-files", "oldtool"],
    );
    let ls = layers(&out, &v);
    assert_merged(&ls);
    let apt = &ls.iter().find(|(n, _)| n == "apt").unwrap().1;
    for want in [
        "f 0755 0:0 usr/bin/oldtool.real",
        "f 0755 0:0 usr/sbin/oldd",
        "f 0644 0:0 usr/lib/oldtool/data",
        "l 0777 0:0 bin -> usr/bin",
    ] {
        assert!(apt.iter().any(|l| l == want), "{want}: {apt:#?}");
    }
    // The alternative's link /bin/oldtool is made through the link, at usr/bin/oldtool.
    let rootfs = &ls.iter().find(|(n, _)| n == "rootfs").unwrap().1;
    assert!(
        rootfs
            .iter()
            .any(|l| l == "l 0777 0:0 usr/bin/oldtool -> /etc/alternatives/oldtool"),
        "{rootfs:#?}"
    );
    // dpkg's database: the paths as the .deb names them, in its order, `/.` first.
    assert_eq!(
        file(&out, &v, "apt", "var/lib/dpkg/info/oldtool.list"),
        "/.\n/usr\n/usr/share\n/usr/share/doc\n/bin\n/bin/oldtool.real\n/sbin\n/sbin/oldd\n\
         /lib\n/lib/oldtool\n/lib/oldtool/data\n"
    );
    let status = file(&out, &v, "apt", "var/lib/dpkg/status");
    assert!(
        status.starts_with("Package: base-files\nEssential: yes\nStatus: install ok installed\n")
            && status.contains("\n\nPackage: oldtool\nStatus: install ok installed\n")
            && status.ends_with("\n\n"),
        "{status}"
    );
    assert_eq!(file(&out, &v, "apt", "var/lib/dpkg/info/format"), "1\n");
}

#[test]
fn trixie_libc6_without_base_files_gets_base_files_13_links() {
    let t = tempdir();
    let (v, out) = build(
        t.path(),
        &[trixie_libc6(), old_paths()],
        &["libc6", "oldtool"],
    );
    let ls = layers(&out, &v);
    let links = assert_merged(&ls);
    assert_eq!(links.len(), 4, "{links:?}");
    let apt = &ls.iter().find(|(n, _)| n == "apt").unwrap().1;
    for want in [
        "l 0777 0:0 lib64 -> usr/lib64",
        "f 0755 0:0 usr/bin/oldtool.real",
        "l 0777 0:0 usr/lib64/ld-linux-x86-64.so.2 -> ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
    ] {
        assert!(apt.iter().any(|l| l == want), "{want}: {apt:#?}");
    }
    // The baseline keeps the links (no `bin/` directory over them) and the rest of its
    // directories.
    let rootfs = &ls.iter().find(|(n, _)| n == "rootfs").unwrap().1;
    assert!(rootfs.iter().any(|l| l == "d 1777 0:0 tmp/"), "{rootfs:#?}");
    assert_eq!(
        file(&out, &v, "apt", "var/lib/dpkg/info/libc6:amd64.list")
            .lines()
            .last(),
        Some("/usr/lib64/ld-linux-x86-64.so.2")
    );
}

/// trixie's 64-bit time_t renames: `libglib2.0-0t64` provides `libglib2.0-0 (= V)`; a package
/// depending on `libglib2.0-0 (>= 2.80)`, and a request for the old name, resolve to it.
#[test]
fn t64_packages_answer_their_old_names() {
    let t = tempdir();
    let debs = [
        deb("libglib2.0-0t64", "2.84.4-3")
            .field(
                "Provides",
                "libglib2.0-0 (= 2.84.4-3), libgio-2.0-0 (= 2.84.4-3)",
            )
            .field("Replaces", "libglib2.0-0")
            .field("Breaks", "libglib2.0-0 (<< 2.84.4-3)")
            .data(Data::File("./usr/share/doc/glib", "glib\n", 0o644)),
        deb("app", "1.0").field("Depends", "libglib2.0-0 (>= 2.80)"),
    ];
    for request in ["app", "libglib2.0-0"] {
        let dir = t.path().join(request);
        fs::create_dir(&dir).unwrap();
        let (v, _) = build(&dir, &debs, &[request]);
        let names: Vec<&str> = v["apt"]["packages"]
            .as_array()
            .map(|a| a.iter().filter_map(|p| p["name"].as_str()).collect())
            .unwrap_or_default();
        let lock = fs::read_to_string(dir.join("app.lock")).unwrap();
        assert!(
            lock.contains("name = \"libglib2.0-0t64\""),
            "{request}: {names:?}\n{lock}"
        );
    }
}

/// A trixie recipe with a bookworm lock (here: the lock's suite edited to `bookworm`, the
/// recipe's `stable`): `build` and `lock` refuse, naming both suites and `ocibuild lock
/// --update`; `--locked` says so too; `lock --update` resolves it for the recipe's suite.
#[test]
fn a_lock_of_another_release_is_refused_until_lock_update() {
    let t = tempdir();
    let f = fixture(&[trixie_libc6()], false);
    let r = aptfix::apt_recipe(t.path(), &f, &f.key, &["libc6"], "");
    let cache = t.path().join("cache");
    let cmd = |args: &[&str]| {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", &cache).args(args).arg(&r);
        crate::common::run(&mut c)
    };
    let o = cmd(&["lock"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lock = t.path().join("app.lock");
    let text = fs::read_to_string(&lock).unwrap();
    assert_eq!(text.matches("suite = \"stable\"").count(), 1, "{text}");
    fs::write(
        &lock,
        text.replace("suite = \"stable\"", "suite = \"bookworm\""),
    )
    .unwrap();
    for args in [
        &["build", "-o", t.path().join("img").to_str().unwrap()][..],
        &["lock"][..],
    ] {
        let o = cmd(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(
            err.contains("was resolved for suite `bookworm`, the recipe names `stable`")
                && err.contains("`ocibuild lock --update`"),
            "{args:?}: {err}"
        );
    }
    let o = cmd(&[
        "build",
        "--locked",
        "-o",
        t.path().join("img").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success()
            && err.contains("suite bookworm → stable (another release: `ocibuild lock --update`)"),
        "{err}"
    );
    assert!(fs::read_to_string(&lock)
        .unwrap()
        .contains("suite = \"bookworm\""));
    let o = cmd(&["lock", "--update"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(fs::read_to_string(&lock)
        .unwrap()
        .contains("suite = \"stable\""));
}
