//! Several platforms from one recipe and one lock (`[image] platforms`), with nothing run:
//! a Debian archive made by the test with amd64, arm64 and `all` packages; each platform's
//! section of the lock, its manifest in one OCI image index, and the same manifest as a build
//! of that platform alone; the index the same for two cold builds; a package the arm64 archive
//! lacks named with its platform; a pylock.toml per platform (`[python.locks]`).
//!
//! One set-up (the two-platform project, locked and built) serves the first tests, one
//! behaviour each, in a store they share.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use fs_err as fs;

use crate::aptfix::{self, deb, fixture, Data};
use crate::common::context::TestContext;
use crate::common::{ocibuild, run, run_ok, stdout, tempdir};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// The layout's tagged entry, and the index it names (manifests with their platforms).
pub(crate) fn index_of(layout: &Path) -> (serde_json::Value, serde_json::Value) {
    let top = json(&layout.join("index.json"));
    let entry = top["manifests"][0].clone();
    let digest = entry["digest"].as_str().unwrap();
    let index = json(&layout.join("blobs/sha256").join(&digest["sha256:".len()..]));
    (entry, index)
}

/// A file's text in a gzip layer blob (read with the tar and flate2 crates).
pub(crate) fn file_in_layer(blob: &Path, path: &str) -> String {
    use std::io::Read;
    let gz = flate2::read::GzDecoder::new(fs::File::open(blob).unwrap());
    let mut archive = tar::Archive::new(gz);
    for e in archive.entries().unwrap() {
        let mut e = e.unwrap();
        if e.path().unwrap().to_string_lossy().trim_start_matches("./") == path {
            let mut s = String::new();
            e.read_to_string(&mut s).unwrap();
            return s;
        }
    }
    panic!("no {path} in {}", blob.display())
}

pub(crate) fn manifest_for(index: &serde_json::Value, arch: &str) -> String {
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["platform"]["architecture"] == arch)
        .unwrap_or_else(|| panic!("no {arch} manifest in {index:#}"))["digest"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `hello` 1.0 for amd64 and for arm64, each printing its architecture.
pub(crate) fn hello_debs() -> Vec<aptfix::Deb> {
    vec![
        deb("hello", "1.0").data(Data::File(
            "./usr/bin/hello",
            "#!/bin/sh\necho amd64\n",
            0o755,
        )),
        deb("hello", "1.0").arch("arm64").data(Data::File(
            "./usr/bin/hello",
            "#!/bin/sh\necho arm64\n",
            0o755,
        )),
    ]
}

/// The test archive's python3 universe for amd64, and the same packages for arm64.
fn python_universe_both() -> Vec<aptfix::Deb> {
    let mut debs = aptfix::python_universe();
    let arm: Vec<_> = debs
        .iter()
        .filter(|d| d.arch == "amd64")
        .map(|d| d.clone().arch("arm64"))
        .collect();
    debs.extend(arm);
    debs
}

/// The two-platform project (with an amd64-only package in its archive), locked, and built
/// into `layout`: made once by the first test that asks, in a store the tests share.
struct Shared {
    cx: TestContext,
    f: aptfix::Fixture,
    dir: PathBuf,
    r: PathBuf,
    /// The recipe's text.
    text: String,
    cache: PathBuf,
    /// `lock`'s output.
    lock_out: Output,
    layout: PathBuf,
    /// The layout's index.json entry and the index.
    entry: serde_json::Value,
    index: serde_json::Value,
    arm64: String,
}

fn cmd(cache: &Path) -> Command {
    let mut c = ocibuild();
    c.env("OCIBUILD_CACHE", cache);
    c
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let cx = TestContext::new().shared();
        let t = &cx;
        let mut debs = hello_debs();
        debs.extend([
            deb("common", "2").arch("all").data(Data::File(
                "./usr/share/common.txt",
                "shared\n",
                0o644,
            )),
            deb("onlyamd", "1").data(Data::File("./usr/bin/onlyamd", "x\n", 0o755)),
        ]);
        let f = fixture(&debs, false);
        let dir = t.path().join("p");
        fs::create_dir_all(dir.join("app")).unwrap();
        fs::write(dir.join("app/main.py"), "print('hi')\n").unwrap();
        let r = aptfix::apt_recipe(
            &dir,
            &f,
            &f.key,
            &["hello", "common"],
            "\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n",
        );
        let text = fs::read_to_string(&r).unwrap().replace(
            "platform = \"linux/amd64\"",
            "platforms = [\"linux/amd64\", \"linux/arm64\"]",
        );
        fs::write(&r, &text).unwrap();
        let cache = t.path().join("cache");
        let lock_out = run_ok(cmd(&cache).arg("lock").arg(&r));
        let layout = t.path().join("img");
        run_ok(cmd(&cache).args(["build", "-o"]).arg(&layout).arg(&r));
        let (entry, index) = index_of(&layout);
        let arm64 = manifest_for(&index, "arm64");
        Shared {
            cx,
            f,
            dir,
            r,
            text,
            cache,
            lock_out,
            layout,
            entry,
            index,
            arm64,
        }
    })
}

#[test]
fn one_lock_has_a_section_per_platform() {
    let s = shared();
    let dir = &s.dir;
    // One lock, a section per platform, each with its own architecture's packages.
    assert!(
        stdout(&s.lock_out).contains("platform linux/amd64\n")
            && stdout(&s.lock_out).contains("platform linux/arm64/v8\n"),
        "{}",
        stdout(&s.lock_out)
    );
    let lock = fs::read_to_string(dir.join("app.lock")).unwrap();
    for want in [
        "[platform.\"linux/amd64\".apt]",
        // arm64 is written as containerd normalizes it.
        "[platform.\"linux/arm64/v8\".apt]",
        "hello_1.0_arm64.deb",
        "hello_1.0_amd64.deb",
    ] {
        assert!(lock.contains(want), "{want}: {lock}");
    }
}

#[test]
fn the_build_is_one_index_with_each_platforms_own_manifest() {
    let s = shared();
    let layout = &s.layout;
    let entry = s.entry.clone();
    let index = s.index.clone();
    let arm64 = s.arm64.clone();
    // The build: one index, a manifest per platform.
    assert_eq!(
        entry["mediaType"], "application/vnd.oci.image.index.v1+json",
        "{entry:#}"
    );
    assert_eq!(index["manifests"].as_array().unwrap().len(), 2, "{index:#}");
    let amd64 = manifest_for(&index, "amd64");
    assert_ne!(arm64, amd64);
    // The arm64 manifest's apt layer holds the arm64 package's file.
    let m = json(&layout.join("blobs/sha256").join(&arm64["sha256:".len()..]));
    let apt = m["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["annotations"]["dev.ocibuild.layer"] == "apt")
        .unwrap_or_else(|| panic!("no apt layer: {m:#}"))["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let hello = file_in_layer(
        &layout.join("blobs/sha256").join(&apt["sha256:".len()..]),
        "usr/bin/hello",
    );
    assert!(hello.contains("echo arm64"), "{hello}");
}

#[test]
fn one_platform_alone_gives_the_same_manifest_from_the_same_lock() {
    let s = shared();
    let t = &s.cx;
    let dir = &s.dir;
    let r = &s.r;
    let text = s.text.clone();
    let cache = &s.cache;
    let arm64 = s.arm64.clone();
    // A platform alone (--platform) gives the same manifest, from the same lock.
    let single = t.path().join("arm64-only");
    run_ok(
        cmd(cache)
            .args(["build", "--locked", "--platform", "linux/arm64", "-o"])
            .arg(&single)
            .arg(r),
    );
    let (_, one) = index_of(&single);
    assert_eq!(manifest_for(&one, "arm64"), arm64, "{one:#}");

    // A recipe of that one platform (`platform = "linux/arm64"`), with the arm64 section as
    // its lock: the very same manifest.
    let solo = t.path().join("solo");
    fs::create_dir_all(solo.join("app")).unwrap();
    fs::copy(dir.join("app/main.py"), solo.join("app/main.py")).unwrap();
    let whole = ocibuild::lock::Lock::load(&dir.join("app.lock"))
        .unwrap()
        .unwrap();
    fs::write(
        solo.join("app.lock"),
        whole.view("linux/arm64/v8").to_toml(),
    )
    .unwrap();
    fs::write(
        solo.join("app.toml"),
        text.replace(
            "platforms = [\"linux/amd64\", \"linux/arm64\"]",
            "platform = \"linux/arm64\"",
        ),
    )
    .unwrap();
    let o = run_ok(
        cmd(cache)
            .args(["build", "--locked", "-q", "-o"])
            .arg(t.path().join("solo.oci"))
            .arg(solo.join("app.toml")),
    );
    assert!(
        stdout(&o).trim().ends_with(&format!("@{arm64}")),
        "{}",
        stdout(&o)
    );
    // The whole two-platform lock is stale for it.
    fs::copy(dir.join("app.lock"), solo.join("app.lock")).unwrap();
    let o = run(cmd(cache)
        .args(["build", "--locked", "-o"])
        .arg(t.path().join("solo.oci"))
        .arg(solo.join("app.toml")));
    assert!(
        stderr(&o).contains("the lock has sections for several platforms"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn build_json_and_verify_report_every_platform() {
    let s = shared();
    let t = &s.cx;
    let r = &s.r;
    let cache = &s.cache;
    let layout = &s.layout;
    let entry = s.entry.clone();
    let arm64 = s.arm64.clone();
    // build --json: the index and each platform's manifest and layers.
    let o = run_ok(
        cmd(cache)
            .args(["build", "--json", "-o"])
            .arg(t.path().join("json.oci"))
            .arg(r),
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["index"], entry["digest"], "{doc:#}");
    assert_eq!(doc["manifests"][1]["platform"], "linux/arm64/v8", "{doc:#}");
    assert_eq!(doc["manifests"][1]["manifest"], arm64.as_str(), "{doc:#}");
    assert_eq!(doc["manifests"][1]["layers"][0]["name"], "apt", "{doc:#}");

    // verify rebuilds each platform in an empty store and compares it with the index's.
    let o = run(cmd(cache)
        .args(["verify", "--json", "--against"])
        .arg(format!("oci:{}", layout.display()))
        .arg(r));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("{}{}", stdout(&o), stderr(&o)));
    assert_eq!(v["reproduced"], true, "{v:#}");
    assert_eq!(v["platforms"][1]["platform"], "linux/arm64/v8", "{v:#}");
    assert_eq!(v["platforms"][1]["rebuilt"], arm64.as_str(), "{v:#}");
}

#[test]
fn two_cold_builds_give_one_index_digest() {
    let s = shared();
    let t = &s.cx;
    let r = &s.r;
    let entry = s.entry.clone();
    // Two cold builds (empty stores) give one index digest.
    let again = t.path().join("again");
    run_ok(
        cmd(&t.path().join("cold"))
            .args(["build", "--locked", "-o"])
            .arg(&again)
            .arg(r),
    );
    assert_eq!(index_of(&again).0["digest"], entry["digest"]);
}

#[test]
fn a_package_missing_for_one_platform_is_named_with_it() {
    let s = shared();
    let t = &s.cx;
    let f = &s.f;
    let cache = &s.cache;
    // A package the arm64 archive does not have: named, with the platform.
    fs::create_dir_all(t.path().join("q")).unwrap();
    let r2 = aptfix::apt_recipe(&t.path().join("q"), f, &f.key, &["onlyamd"], "");
    let text = fs::read_to_string(&r2).unwrap().replace(
        "platform = \"linux/amd64\"",
        "platforms = [\"linux/amd64\", \"linux/arm64\"]",
    );
    fs::write(&r2, &text).unwrap();
    let o = run(cmd(cache)
        .args(["build", "-o"])
        .arg(t.path().join("q.oci"))
        .arg(&r2));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("platform linux/arm64/v8") && err.contains("onlyamd"),
        "{err}"
    );
}

#[test]
fn the_index_is_pushed_and_mirrored_with_its_digest() {
    let s = shared();
    let t = &s.cx;
    let r = &s.r;
    let cache = &s.cache;
    let entry = s.entry.clone();
    let arm64 = s.arm64.clone();
    // Pushed as an index, mirrored into a second registry: the same index digest on both
    // (skopeo reads it raw); skopeo's --override-arch takes the arm64 manifest.
    if crate::common::require_tools_all(&["docker-registry", "skopeo"]) {
        use crate::common::registry::{auth_file_for, start_registry, PASS, USER};
        let (a, b) = (start_registry(None), start_registry(None));
        let auth = auth_file_for(t.path(), &[&a.addr, &b.addr], PASS);
        let with_auth = |c: &mut std::process::Command| {
            c.env("REGISTRY_AUTH_FILE", &auth)
                .env_remove("OCIBUILD_REGISTRIES")
                .env("XDG_CONFIG_HOME", t.path().join("no-config"));
        };
        let pushed = t.path().join("pushed");
        let mut c = cmd(cache);
        with_auth(&mut c);
        c.args([
            "build",
            "--locked",
            "--push",
            &format!("{}/plat/app:1", a.addr),
            "-o",
        ])
        .arg(&pushed)
        .arg(r);
        let o = run_ok(&mut c);
        assert!(
            stdout(&o).contains(&format!("pushed {}/plat/app:1@", a.addr)),
            "{}",
            stdout(&o)
        );
        let mut c = cmd(cache);
        with_auth(&mut c);
        c.arg("mirror")
            .arg(&pushed)
            .args(["--to", &format!("{}/copy", b.addr)]);
        run_ok(&mut c);
        let raw = |image: &str| {
            let o = run_ok(
                std::process::Command::new("skopeo")
                    .args(["inspect", "--raw", "--tls-verify=false", "--creds"])
                    .arg(format!("{USER}:{PASS}"))
                    .arg(format!("docker://{image}")),
            );
            crate::common::sha256_bytes(&o.stdout)
        };
        let first = raw(&format!("{}/plat/app:1", a.addr));
        assert_eq!(first, entry["digest"].as_str().unwrap());
        // `push` of the layout: the index again, with its manifests.
        let mut c = cmd(cache);
        with_auth(&mut c);
        c.arg("push")
            .arg(&pushed)
            .arg(format!("{}/plat/again:2", a.addr));
        run_ok(&mut c);
        assert_eq!(raw(&format!("{}/plat/again:2", a.addr)), first);
        // A destination digest that is not the index's is refused.
        let other = format!("sha256:{}", "0".repeat(64));
        let mut c = cmd(cache);
        with_auth(&mut c);
        c.arg("push")
            .arg(&pushed)
            .arg(format!("{}/plat/again@{other}", a.addr));
        let o = run(&mut c);
        assert!(
            stderr(&o).contains(&format!("names digest {other}")),
            "{}",
            stderr(&o)
        );
        assert_eq!(raw(&format!("{}/copy/apt:latest", b.addr)), first);
        let arm = t.path().join("arm-copy");
        run_ok(
            std::process::Command::new("skopeo")
                .args([
                    "--override-arch",
                    "arm64",
                    "copy",
                    "--src-tls-verify=false",
                    "--src-creds",
                ])
                .arg(format!("{USER}:{PASS}"))
                .arg(format!("docker://{}/plat/app:1", a.addr))
                .arg(format!("oci:{}:x", arm.display())),
        );
        let copied = json(&arm.join("index.json"));
        assert_eq!(
            copied["manifests"][0]["digest"],
            arm64.as_str(),
            "{copied:#}"
        );
    }
}

#[test]
fn a_platform_outside_the_recipes_is_refused_naming_them() {
    let s = shared();
    let r = &s.r;
    let cache = &s.cache;
    // --platform outside the recipe's platforms is refused, naming them.
    let o = run(cmd(cache)
        .args(["build", "--platform", "linux/s390x"])
        .arg(r));
    assert!(
        stderr(&o).contains("not one of the recipe's platforms (linux/amd64, linux/arm64/v8)"),
        "{}",
        stderr(&o)
    );
}

/// A universal pylock with a wheel for x86_64 only: the arm64 platform is refused, naming the
/// package and the platform.
#[test]
fn a_wheel_missing_for_one_platform_is_named_with_it() {
    let f = fixture(&python_universe_both(), false);
    let t = tempdir();
    let hex = "0".repeat(64);
    fs::write(
        t.path().join("pylock.toml"),
        format!(
            "lock-version = \"1.0\"\ncreated-by = \"uv\"\nrequires-python = \">=3.12\"\n\n\
             [[packages]]\nname = \"fastpkg\"\nversion = \"1.0\"\nwheels = [{{ url = \
             \"https://example.invalid/fastpkg-1.0-cp312-cp312-manylinux_2_17_x86_64.whl\", \
             size = 10, hashes = {{ sha256 = \"{hex}\" }} }}]\n"
        ),
    )
    .unwrap();
    let r = aptfix::apt_recipe(
        t.path(),
        &f,
        &f.key,
        &["python3"],
        "\n[python]\nlock = \"pylock.toml\"\n",
    );
    let text = fs::read_to_string(&r).unwrap().replace(
        "platform = \"linux/amd64\"",
        "platforms = [\"linux/amd64\", \"linux/arm64\"]",
    );
    fs::write(&r, &text).unwrap();
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", t.path().join("cache"))
        .arg("lock")
        .arg(&r));
    let err = stderr(&o);
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("platform linux/amd64\napt ")
            && stdout(&o).contains("wheels 1 (resolved)"),
        "{}",
        stdout(&o)
    );
    assert!(
        err.contains("platform linux/arm64/v8") && err.contains("fastpkg"),
        "{err}"
    );
}

/// `--test` of a multi-platform recipe none of whose platforms is the host's: refused, saying
/// why (nothing is emulated), before anything runs.
#[test]
fn a_test_stage_with_no_host_platform_is_refused() {
    let t = tempdir();
    fs::create_dir_all(t.path().join("app")).unwrap();
    fs::write(t.path().join("app/x"), "x\n").unwrap();
    let host = if std::env::consts::ARCH == "s390x" {
        "linux/arm64"
    } else {
        "linux/s390x"
    };
    let r = t.path().join("r.toml");
    fs::write(
        &r,
        format!(
            "[image]\nname = \"example.com/x\"\nplatforms = [\"{host}\", \"linux/riscv64\"]\n\n\
             [[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n"
        ),
    )
    .unwrap();
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", t.path().join("cache"))
        .args(["build", "--test", "-o"])
        .arg(t.path().join("img"))
        .arg(&r));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("none of the recipe's platforms is this host's")
            && stdout(&o).contains(&format!("skipped: {host} is not this host's platform")),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
}

/// `[python.locks]`: a pylock.toml per platform (the amd64 one with a native wheel, the arm64
/// one without it). Each platform's section pins its own lock's wheels, and the arm64 manifest
/// is the one a one-platform recipe with `lock = "pylock.arm64.toml"` gives.
#[test]
fn a_pylock_per_platform() {
    let f = fixture(&python_universe_both(), false);
    let t = tempdir();
    let p = t.path().join("p");
    fs::create_dir_all(&p).unwrap();
    let w = crate::wheel_recipe::wheels(&p);
    let amd = crate::wheel_recipe::pylock(&p, &w, &|f| {
        f.starts_with("click-") || f.contains("cp312-cp312-manylinux_2_28")
    });
    fs::rename(&amd, p.join("pylock.amd64.toml")).unwrap();
    let (click, sha, size) = w.files.iter().find(|x| x.0.starts_with("click-")).unwrap();
    fs::write(
        p.join("pylock.arm64.toml"),
        format!(
            "lock-version = \"1.0\"\ncreated-by = \"test\"\nrequires-python = \">=3.11\"\n\n\
             [[packages]]\nname = \"click\"\nversion = \"8.1.7\"\nwheels = [{{ name = \
             \"{click}\", path = \"wheels/{click}\", size = {size}, hashes = {{ sha256 = \
             \"{sha}\" }} }}]\n"
        ),
    )
    .unwrap();
    let r = crate::wheel_recipe::recipe(
        &p,
        &f,
        "[python.locks]\n\"linux/amd64\" = \"pylock.amd64.toml\"\n\"linux/arm64\" = \"pylock.arm64.toml\"\n",
    );
    let text = fs::read_to_string(&r).unwrap().replace(
        "platform = \"linux/amd64\"",
        "platforms = [\"linux/amd64\", \"linux/arm64\"]",
    );
    fs::write(&r, &text).unwrap();
    let cache = t.path().join("cache");
    let cmd = || {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", &cache);
        c
    };
    run_ok(cmd().arg("lock").arg(&r));
    let whole = ocibuild::lock::Lock::load(&p.join("app.lock"))
        .unwrap()
        .unwrap();
    let amd64 = whole.view("linux/amd64").to_toml();
    let arm64 = whole.view("linux/arm64/v8").to_toml();
    assert!(
        amd64.contains("fastlib") && amd64.contains("click"),
        "{amd64}"
    );
    assert!(
        !arm64.contains("fastlib") && arm64.contains("click"),
        "{arm64}"
    );
    let out = t.path().join("multi.oci");
    run_ok(
        cmd()
            .args(["build", "--locked", "-q", "-o"])
            .arg(&out)
            .arg(&r),
    );
    let (_, index) = index_of(&out);
    let arm64_manifest = manifest_for(&index, "arm64");

    // The one-platform recipe of arm64 with its pylock, the arm64 section as its lock.
    let solo = t.path().join("solo");
    fs::create_dir_all(&solo).unwrap();
    fs::rename(p.join("wheels"), solo.join("wheels")).unwrap();
    fs::copy(p.join("pylock.arm64.toml"), solo.join("pylock.arm64.toml")).unwrap();
    fs::write(solo.join("app.lock"), arm64).unwrap();
    fs::write(
        solo.join("app.toml"),
        text.replace(
            "platforms = [\"linux/amd64\", \"linux/arm64\"]",
            "platform = \"linux/arm64\"",
        )
        .replace(
            "[python.locks]\n\"linux/amd64\" = \"pylock.amd64.toml\"\n\"linux/arm64\" = \"pylock.arm64.toml\"\n",
            "lock = \"pylock.arm64.toml\"\n",
        ),
    )
    .unwrap();
    let o = run_ok(
        cmd()
            .args(["build", "--locked", "-q", "-o"])
            .arg(t.path().join("solo.oci"))
            .arg(solo.join("app.toml")),
    );
    assert!(
        stdout(&o).trim().ends_with(&format!("@{arm64_manifest}")),
        "{} vs {arm64_manifest}",
        stdout(&o)
    );

    // A platform without its pylock, and `locks` beside `lock`: refused, saying so.
    fs::write(
        &r,
        text.replace("\"linux/arm64\" = \"pylock.arm64.toml\"\n", ""),
    )
    .unwrap();
    let o = run(cmd().arg("lock").arg(&r));
    assert!(
        stderr(&o).contains("[python.locks]: no pylock.toml for linux/arm64/v8"),
        "{}",
        stderr(&o)
    );
    fs::write(
        &r,
        text.replace(
            "[python.locks]\n",
            "lock = \"pylock.amd64.toml\"\n[python.locks]\n",
        ),
    )
    .unwrap();
    let o = run(cmd().arg("lock").arg(&r));
    assert!(
        stderr(&o).contains("`locks` excludes `lock`"),
        "{}",
        stderr(&o)
    );
}

/// The keys of `a` and `b`, which must be the same, and recursively those of the objects both
/// have under a key (an array's first elements for arrays of objects).
fn same_keys(a: &serde_json::Value, b: &serde_json::Value, at: &str) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let (ka, kb): (Vec<_>, Vec<_>) = (a.keys().collect(), b.keys().collect());
            assert_eq!(ka, kb, "the keys of {at}");
            for (k, v) in a {
                same_keys(v, &b[k], &format!("{at}.{k}"));
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if let (Some(x), Some(y)) = (a.first(), b.first()) {
                same_keys(x, y, &format!("{at}[0]"));
            }
        }
        _ => {}
    }
}

/// `build --json` of a one-platform and of a two-platform recipe: each manifest has the same
/// keys (the one-platform document's at its top, beside the image's; the other's under
/// `manifests[]`, with its `platform`).
#[test]
fn build_json_has_the_same_manifest_keys_for_one_platform_and_several() {
    let t = tempdir();
    fs::create_dir_all(t.path().join("app")).unwrap();
    fs::write(t.path().join("app/x"), "x\n").unwrap();
    let build = |name: &str, platforms: &str| {
        let r = t.path().join(format!("{name}.toml"));
        fs::write(
            &r,
            format!(
                "[image]\nname = \"example.com/{name}\"\n{platforms}\n\n\
                 [[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n"
            ),
        )
        .unwrap();
        let o = run_ok(
            ocibuild()
                .env("OCIBUILD_CACHE", t.path().join("cache"))
                .args(["build", "--json", "-o"])
                .arg(t.path().join(format!("{name}.oci")))
                .arg(&r),
        );
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let one = build("one", "platform = \"linux/amd64\"");
    let two = build("two", "platforms = [\"linux/amd64\", \"linux/arm64\"]");

    // The one-platform document's manifest: its keys less the image's.
    let mut manifest = one.clone();
    for k in [
        "image",
        "output",
        "push",
        "referrersPush",
        "signature",
        "cacheRepo",
    ] {
        assert!(
            manifest.as_object_mut().unwrap().remove(k).is_some(),
            "{k}: {one:#}"
        );
    }
    for k in [
        "manifest",
        "layers",
        "python",
        "rootfs",
        "wheels",
        "hostProvides",
        "referrers",
    ] {
        assert!(manifest.get(k).is_some(), "{k}: {one:#}");
    }
    let manifests = two["manifests"].as_array().unwrap();
    assert_eq!(manifests.len(), 2, "{two:#}");
    for (i, m) in manifests.iter().enumerate() {
        let mut m = m.clone();
        assert!(m.as_object_mut().unwrap().remove("platform").is_some());
        same_keys(&manifest, &m, &format!("manifests[{i}]"));
    }
    assert_eq!(manifests[1]["platform"], "linux/arm64/v8", "{two:#}");
    assert!(manifests[1]["layers"][0]["cached"].is_boolean(), "{two:#}");
    assert!(
        manifests[1]["layers"][0]["uncompressedSize"].is_u64(),
        "{two:#}"
    );
    for k in ["image", "output", "index", "indexSize", "push", "cacheRepo"] {
        assert!(two.get(k).is_some(), "{k}: {two:#}");
    }
}
