//! `[apt] essential = true` and the shell report: an archive the test makes (one essential
//! package with `/bin/sh`, one plain package without), built on scratch; and, online, trixie's
//! essential set under podman.

use std::path::Path;

use crate::aptfix::{self, deb, fixture, Data, Deb, Fixture};
use crate::common::*;
use serde_json::Value;

/// `dash` (essential: `/usr/bin/dash`, `/usr/bin/sh -> dash`, with a merged /usr from
/// `base-files`, essential too), `libtiny` (what dash needs) and `hello` (no shell).
fn universe() -> Vec<Deb> {
    vec![
        deb("base-files", "13.8")
            .field("Essential", "yes")
            .data(Data::Symlink("./bin", "usr/bin"))
            .data(Data::Dir("./usr/bin/")),
        deb("dash", "0.5.12-12")
            .field("Essential", "yes")
            .field("Depends", "libtiny")
            .data(Data::Dir("./usr/bin/"))
            .data(Data::File("./usr/bin/dash", "#!elf\n", 0o755))
            .data(Data::Symlink("./usr/bin/sh", "dash")),
        deb("libtiny", "1.0").data(Data::File("./usr/share/doc/libtiny.txt", "t\n", 0o644)),
        deb("hello", "2.10")
            .data(Data::Dir("./usr/bin/"))
            .data(Data::File("./usr/bin/hello", "#!elf\n", 0o755)),
        // Essential, but for another architecture: not taken.
        deb("armonly", "1").arch("arm64").field("Essential", "yes"),
    ]
}

fn recipe(dir: &Path, f: &Fixture, apt: &str, extra: &str) -> std::path::PathBuf {
    let text = format!(
        "[image]\nname = \"example.com/shell\"\nplatform = \"linux/amd64\"\n\n{}\n[apt]\n{apt}\n{extra}",
        aptfix::source_toml(f, &f.key),
    );
    let p = dir.join("app.toml");
    fs_err::write(&p, text).unwrap();
    p
}

fn build(recipe: &Path, out: &Path, json: bool) -> (std::process::Output, Option<Value>) {
    let mut cmd = ocibuild();
    cmd.arg("build");
    if json {
        cmd.arg("--json");
    }
    let o = run(cmd.arg("-o").arg(out).arg(recipe));
    let v = (json && o.status.success()).then(|| serde_json::from_str(&stdout(&o)).unwrap());
    (o, v)
}

fn installed(v: &Value) -> Vec<String> {
    let lock = v["layers"].as_array().unwrap();
    lock.iter()
        .map(|l| l["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn essential_installs_the_essential_set_and_the_image_has_a_shell() {
    let f = fixture(&universe(), false);
    let t = tempdir();
    let r = recipe(t.path(), &f, "essential = true", "");
    let (o, v) = build(&r, &t.path().join("img"), true);
    assert_success(&o, "build essential");
    let v = v.unwrap();
    assert_eq!(v["shell"], Value::Bool(true), "{v}");
    assert!(installed(&v).contains(&"apt".to_string()));
    let lock = fs_err::read_to_string(t.path().join("app.lock")).unwrap();
    assert!(lock.contains("essential = true"), "{lock}");
    for name in ["\"base-files\"", "\"dash\"", "\"libtiny\""] {
        assert!(lock.contains(&format!("name = {name}")), "{name}: {lock}");
    }
    for name in ["\"hello\"", "\"armonly\""] {
        assert!(!lock.contains(&format!("name = {name}")), "{name}: {lock}");
    }
    let warnings = v["warnings"].to_string();
    assert!(!warnings.contains("/bin/sh"), "{warnings}");
    // A user without a shell gets /bin/sh, now that the image has it.
    let r = recipe(
        t.path(),
        &f,
        "essential = true",
        "[[accounts.user]]\nname = \"app\"\nuid = 1000\n",
    );
    let (o, _) = build(&r, &t.path().join("img2"), false);
    assert_success(&o, "build essential + accounts");
    let passwd = passwd_of(&t.path().join("img2"));
    assert!(
        passwd.contains("app:x:1000:1000::/home/app:/bin/sh\n"),
        "{passwd}"
    );
}

#[test]
fn an_image_without_a_shell_says_so() {
    let f = fixture(&universe(), false);
    let t = tempdir();
    let r = recipe(t.path(), &f, "packages = [\"hello\"]", "");
    let (o, v) = build(&r, &t.path().join("img"), true);
    assert_success(&o, "build hello");
    let v = v.unwrap();
    assert_eq!(v["shell"], Value::Bool(false), "{v}");
    let (o, _) = build(&r, &t.path().join("img-text"), false);
    assert_success(&o, "build hello (text)");
    let err = stderr(&o);
    assert!(
        err.contains("warning: the image has no /bin/sh")
            && err.contains("`[apt] essential = true`"),
        "{err}"
    );
    // A user without a shell gets nologin; a declared shell the image lacks is refused.
    let r = recipe(
        t.path(),
        &f,
        "packages = [\"hello\"]",
        "[[accounts.user]]\nname = \"app\"\nuid = 1000\n",
    );
    let (o, _) = build(&r, &t.path().join("img2"), false);
    assert_success(&o, "build hello + accounts");
    let passwd = passwd_of(&t.path().join("img2"));
    assert!(
        passwd.contains("app:x:1000:1000::/home/app:/usr/sbin/nologin\n"),
        "{passwd}"
    );
    let r = recipe(
        t.path(),
        &f,
        "packages = [\"hello\"]",
        "[[accounts.user]]\nname = \"app\"\nuid = 1000\nshell = \"/bin/bash\"\n",
    );
    let (o, _) = build(&r, &t.path().join("img3"), false);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("app.toml:13:1")
            && err.contains("user `app`: shell `/bin/bash` is not in the image"),
        "{err}"
    );
    assert!(!t.path().join("img3").join("index.json").exists());
}

/// The image's `/etc/passwd`: the topmost layer's that has one (the rootfs layer's).
fn passwd_of(layout: &Path) -> String {
    let index: Value =
        serde_json::from_slice(&fs_err::read(layout.join("index.json")).unwrap()).unwrap();
    let blob = |d: &str| {
        layout
            .join("blobs/sha256")
            .join(d.trim_start_matches("sha256:"))
    };
    let manifest: Value = serde_json::from_slice(
        &fs_err::read(blob(index["manifests"][0]["digest"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    for l in manifest["layers"].as_array().unwrap().iter().rev() {
        let f = fs_err::File::open(blob(l["digest"].as_str().unwrap())).unwrap();
        let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
        for e in a.entries().unwrap() {
            let mut e = e.unwrap();
            if e.path().unwrap().to_string_lossy().trim_start_matches("./") == "etc/passwd" {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut e, &mut s).unwrap();
                return s;
            }
        }
    }
    panic!("no etc/passwd in {}", layout.display())
}

#[test]
fn online_trixie_essential_runs_a_shell_under_podman() {
    if !online("builds trixie's essential set from the Debian archive") || !require_tool("podman") {
        return;
    }
    let key = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/keys/debian-trixie.asc");
    let key = key.display();
    let t = tempdir();
    let r = t.path().join("sh.toml");
    fs_err::write(
        &r,
        format!(
            "[image]\nname = \"localhost/ocibuild-test/essential\"\ntag = \"t\"\nplatform = \"linux/amd64\"\n\n\
             [[apt.source]]\nurl = \"https://deb.debian.org/debian\"\nsuite = \"trixie\"\n\
             components = [\"main\"]\nsigned-by = \"{key}\"\n\n[apt]\nessential = true\n"
        ),
    )
    .unwrap();
    let out = t.path().join("img");
    let (o, v) = build(&r, &out, true);
    assert_success(&o, "build trixie essential");
    assert_eq!(v.unwrap()["shell"], Value::Bool(true));
    let run = podman_run(&out, "t", &["/bin/sh", "-c", "echo ok"]);
    assert_success(&run, "podman run /bin/sh -c 'echo ok'");
    assert_eq!(stdout(&run).trim(), "ok");
    let bash = podman_run(&out, "t", &["/bin/bash", "-c", "echo $BASH_VERSION"]);
    assert_success(&bash, "podman run /bin/bash");
}

#[test]
fn a_static_program_on_scratch_is_reported_without_a_warning() {
    let t = tempdir();
    fs_err::create_dir(t.path().join("app")).unwrap();
    fs_err::write(t.path().join("app/prog"), "#!elf\n").unwrap();
    let r = t.path().join("static.toml");
    let base = "[image]\nname = \"example.com/static\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n";
    fs_err::write(
        &r,
        format!("{base}[config]\nentrypoint = [\"/app/prog\"]\n"),
    )
    .unwrap();
    let (o, v) = build(&r, &t.path().join("img"), true);
    assert_success(&o, "build static");
    let v = v.unwrap();
    assert_eq!(v["shell"], Value::Bool(false));
    assert_eq!(v["warnings"], serde_json::json!([]));
    // Run through /bin/sh, the same image is worth the warning.
    fs_err::write(
        &r,
        format!("{base}[config]\nentrypoint = [\"/bin/sh\", \"-c\", \"/app/prog\"]\n"),
    )
    .unwrap();
    let (o, _) = build(&r, &t.path().join("img2"), false);
    assert_success(&o, "build static via sh");
    assert!(
        stderr(&o).contains("warning: the image has no /bin/sh"),
        "{}",
        stderr(&o)
    );
}

/// On a registry base whose layers are here, an account's shell is checked against the base's
/// files as on scratch: a base without /bin/sh gives a user without a declared shell
/// /usr/sbin/nologin, a declared shell it lacks is refused at its line; a base with /bin/sh
/// gives /bin/sh.
#[test]
fn on_a_base_an_accounts_shell_is_checked_against_its_files() {
    use crate::common::registry::{auth_file, start_registry, PASS};
    if !crate::common::require_tool("docker-registry") {
        return;
    }
    let reg = start_registry(None);
    let t = tempdir();
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let push = |name: &str, with_sh: bool| {
        let b = t.path().join(name);
        fs_err::create_dir_all(b.join("root/etc")).unwrap();
        fs_err::create_dir_all(b.join("root/usr/bin")).unwrap();
        fs_err::write(b.join("root/etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
        fs_err::write(b.join("root/etc/group"), "root:x:0:\n").unwrap();
        fs_err::write(b.join("root/usr/bin/dash"), "not run").unwrap();
        if with_sh {
            fs_err::create_dir_all(b.join("root/bin")).unwrap();
            fs_err::os::unix::fs::symlink("/usr/bin/dash", b.join("root/bin/sh")).unwrap();
        }
        fs_err::write(
            b.join("base.toml"),
            "[image]\nname = \"example.com/base\"\nplatform = \"linux/amd64\"\n\n\
             [[layer]]\nname = \"root\"\nsrc = \"root\"\ndest = \"/\"\n",
        )
        .unwrap();
        let image = format!("{}/shells/{name}:1", reg.addr);
        crate::common::run_ok(
            ocibuild()
                .env("OCIBUILD_CACHE", t.path().join("base-cache"))
                .env("REGISTRY_AUTH_FILE", &auth)
                .args(["build", "-q", "--push-only", "--push", &image])
                .arg(b.join("base.toml")),
        );
        image
    };
    let build_on = |image: &str, user: &str, out: &str| {
        let p = t.path().join(format!("app-{out}"));
        fs_err::create_dir_all(&p).unwrap();
        let r = p.join("app.toml");
        fs_err::write(
            &r,
            format!(
                "[image]\nname = \"example.com/app\"\nplatform = \"linux/amd64\"\n\n\
                 [base]\nimage = \"{image}\"\n\n{user}"
            ),
        )
        .unwrap();
        let o = crate::common::run(
            ocibuild()
                .env("OCIBUILD_CACHE", t.path().join("cache"))
                .env("REGISTRY_AUTH_FILE", &auth)
                .args(["build", "-o"])
                .arg(t.path().join(format!("img-{out}")))
                .arg(&r),
        );
        (o, t.path().join(format!("img-{out}")))
    };
    let user = "[[accounts.user]]\nname = \"app\"\nuid = 1000\n";
    let bare = push("bare", false);
    let (o, out) = build_on(&bare, user, "bare");
    assert_success(&o, "build on a base without /bin/sh");
    assert!(
        passwd_of(&out).contains("app:x:1000:1000::/home/app:/usr/sbin/nologin\n"),
        "{}",
        passwd_of(&out)
    );
    let (o, out) = build_on(
        &bare,
        "[[accounts.user]]\nname = \"app\"\nuid = 1000\nshell = \"/bin/bash\"\n",
        "bash",
    );
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("app.toml:8:1")
            && err.contains("user `app`: shell `/bin/bash` is not in the image"),
        "{err}"
    );
    assert!(!out.join("index.json").exists());
    let with_sh = push("sh", true);
    let (o, out) = build_on(&with_sh, user, "sh");
    assert_success(&o, "build on a base with /bin/sh");
    assert!(
        passwd_of(&out).contains("app:x:1000:1000::/home/app:/bin/sh\n"),
        "{}",
        passwd_of(&out)
    );
}
