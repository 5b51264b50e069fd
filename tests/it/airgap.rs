//! The air-gapped workflow (issue 7) end to end, with the real binary and nothing from the
//! internet: a loopback docker-registry stands for Docker Hub (a `[[mirror]]` rule sends
//! `docker.io` there), a generated apt repository and an HTTP-served interpreter archive for
//! the other inputs. Then: `vendor` (twice: the second copies nothing), `build --vendor
//! --offline` with every original endpoint dead and an empty store, `mirror` into a second
//! registry standing for the air-gapped one and a build through a mirror rule, tampering, and
//! a stale lock under `--locked`.
//!
//! One set-up (the online build, `vendor`, `mirror`) serves the tests; the two that take the
//! internet's endpoints down run one at a time, the others need no network.

use crate::aptfix;
use crate::common;

use fs_err as fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};

use aptfix::{deb, fixture, Data};
use common::context::TestContext;
use common::registry::{start_registry, Registry, PASS, USER};
use serde_json::Value;

const BASE: &str = "docker.io/library/ocibuild-airgap-base:1";

fn ready() -> bool {
    common::require_tool("docker-registry")
        && common::require_tool("skopeo")
        && common::require_static_busybox().is_some()
}

/// Build a busybox base and push it to `addr/dest` with skopeo; returns its manifest digest.
fn push_base(dir: &Path, addr: &str, dest: &str) -> String {
    fs::create_dir_all(dir).unwrap();
    let recipe = dir.join("base.toml");
    fs::write(
        &recipe,
        "[image]\nname = \"localhost/base\"\ntag = \"b\"\n[[layer]]\nname = \"busybox\"\n\
         src = \"/bin/busybox\"\ndest = \"/bin/busybox\"\n[config]\nenv = { PATH = \"/bin\" }\n",
    )
    .unwrap();
    let layout = dir.join("layout");
    common::run_ok(
        common::ocibuild()
            .arg("build")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout),
    );
    common::registry::push_layout(&layout, "b", addr, dest);
    common::skopeo_json([
        "inspect",
        "--tls-verify=false",
        "--creds",
        &format!("{USER}:{PASS}"),
        &format!("docker://{addr}/{dest}"),
    ])["Digest"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A python-build-standalone style archive (gzip tar under `python/`); returns its sha256.
fn archive(path: &Path) -> String {
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (name, body, mode) in [
        ("python/bin/python3.13", &b"\x7fELF"[..], 0o755),
        ("python/lib/python3.13/os.py", &b"# os\n"[..], 0o644),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_mode(mode);
        h.set_size(body.len() as u64);
        h.set_mtime(1_700_000_000);
        b.append_data(&mut h, name, body).unwrap();
    }
    fs::write(path, b.into_inner().unwrap().finish().unwrap()).unwrap();
    common::sha256_file(path).unwrap()
}

struct Project {
    dir: PathBuf,
    recipe: PathBuf,
    auth: PathBuf,
}

impl Project {
    fn write_recipe(&self, base: &str, apt_url: &str, key: &Path, packages: &str, py: &str) {
        fs::write(
            &self.recipe,
            format!(
                r#"[image]
name = "localhost/airgap"
tag = "1"
platform = "linux/amd64"

[base]
image = "{base}"

[[apt.source]]
url = "{apt_url}"
suite = "stable"
components = ["main"]
signed-by = "{key}"

[apt]
packages = [{packages}]

[python]
{py}

[config]
cmd = ["/bin/busybox", "true"]
"#,
                key = key.display()
            ),
        )
        .unwrap();
    }

    /// A registries file: plain HTTP for `insecure`, and `docker.io` mirrored to `mirror`.
    fn registries(&self, name: &str, insecure: &[&str], mirror: &str) -> PathBuf {
        let mut s = String::new();
        for r in insecure {
            s.push_str(&format!(
                "[[registry]]\nname = \"{r}\"\ninsecure-http = true\n\n"
            ));
        }
        s.push_str(&format!(
            "[[mirror]]\nprefix = \"docker.io/library\"\nlocations = [\"{mirror}\"]\n"
        ));
        let p = self.dir.join(name);
        fs::write(&p, s).unwrap();
        p
    }

    fn cmd(&self, registries: &Path, cache: &Path) -> Command {
        let mut c = common::ocibuild();
        c.arg("--registries")
            .arg(registries)
            .arg("--cache-dir")
            .arg(cache)
            .env("REGISTRY_AUTH_FILE", &self.auth);
        c
    }
}

fn json(o: &Output) -> Value {
    common::assert_success(o, "ocibuild");
    serde_json::from_slice(&o.stdout).unwrap()
}

fn failed(o: &Output) -> String {
    assert!(
        !o.status.success(),
        "expected a failure: {}",
        common::stdout(o)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn auth_file(dir: &Path, registries: &[&str]) -> PathBuf {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASS}"));
    let auths: serde_json::Map<String, Value> = registries
        .iter()
        .map(|r| (r.to_string(), serde_json::json!({ "auth": auth })))
        .collect();
    let f = dir.join("auth.json");
    fs::write(
        &f,
        serde_json::to_vec(&serde_json::json!({ "auths": auths })).unwrap(),
    )
    .unwrap();
    f
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::write(&dest, fs::read(e.path()).unwrap()).unwrap();
        }
    }
}

/// What every test here starts from, made once by the first test that asks: "the internet"
/// (a registry standing for Docker Hub through a mirror rule, an apt archive, a URL), the
/// online build that pins everything in app.lock, `vendor` run twice, and the base and the
/// built image mirrored into the air-gapped registry.
struct Shared {
    cx: TestContext,
    /// Taken (stopped) by the tests that need every original endpoint dead.
    internet: Mutex<Option<Registry>>,
    gap: Registry,
    base_digest: String,
    f: aptfix::Fixture,
    files: PathBuf,
    sha: String,
    py: String,
    p: Project,
    online: PathBuf,
    gap_rules: PathBuf,
    cache1: PathBuf,
    v1: Value,
    digest: String,
    lock_path: PathBuf,
    /// app.lock as the online build wrote it.
    lock: String,
    vdir: PathBuf,
    s1: Value,
    s2: Value,
    index: Value,
    m: Value,
    m2: Value,
    mb: Value,
}

static SHARED: OnceLock<Option<Shared>> = OnceLock::new();

/// The shared set-up; `None` (skipped) without docker-registry, skopeo or a static busybox.
fn shared() -> Option<&'static Shared> {
    SHARED.get_or_init(|| ready().then(make_shared)).as_ref()
}

/// [`shared`], and the lock held by the tests that take the internet's endpoints down (the
/// others need no network once the set-up is made).
fn exclusive() -> Option<(&'static Shared, MutexGuard<'static, ()>)> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Some((shared()?, serial))
}

fn make_shared() -> Shared {
    let cx = TestContext::new().shared();
    let root = cx.path();

    // "The internet": a registry (Docker Hub through a mirror rule), an apt archive, a URL.
    let internet = start_registry(None);
    let gap = start_registry(None);
    for r in [&internet, &gap] {
        common::context::clean_up_after_exit(&[r.pid().to_string()], &[r.dir().to_path_buf()]);
    }
    let base_digest = push_base(
        &root.join("base"),
        &internet.addr,
        "library/ocibuild-airgap-base:1",
    );
    let f = fixture(
        &[
            deb("tool", "1.0").arch("all").data(Data::File(
                "./usr/share/doc/tool.txt",
                "tool\n",
                0o644,
            )),
            deb("extra", "2.0").data(Data::File("./usr/share/doc/extra", "x\n", 0o644)),
        ],
        false,
    );
    let files = root.join("files");
    fs::create_dir_all(&files).unwrap();
    let sha = archive(&files.join("cpython.tar.gz"));
    let files_url = aptfix::serve(files.clone());
    let py = format!(
        "archive = {{ url = \"{files_url}/cpython.tar.gz\", sha256 = \"{sha}\", prefix = \"/opt/python\", strip = 1 }}"
    );

    let p = Project {
        dir: root.join("app"),
        recipe: root.join("app/app.toml"),
        auth: auth_file(root, &[&internet.addr, &gap.addr]),
    };
    fs::create_dir_all(&p.dir).unwrap();
    p.write_recipe(BASE, &f.repo.url, &f.key, "\"tool\"", &py);
    let online = p.registries(
        "online.toml",
        &[&internet.addr],
        &format!("{}/library", internet.addr),
    );

    // The online build: pins everything in app.lock.
    let cache1 = root.join("cache1");
    let out1 = root.join("out1");
    let v1 = json(&common::run(
        p.cmd(&online, &cache1)
            .args(["build", "--json", "-o"])
            .arg(&out1)
            .arg(&p.recipe),
    ));
    let digest = v1["manifest"].as_str().unwrap().to_string();
    let lock_path = p.dir.join("app.lock");
    let lock = fs::read_to_string(&lock_path).unwrap();

    // vendor: every input; then a second run.
    let vdir = root.join("vendor");
    let vendor = || {
        json(&common::run(
            p.cmd(&online, &cache1)
                .args(["vendor", "--json", "--into"])
                .arg(&vdir)
                .arg(&p.recipe),
        ))
    };
    let s1 = vendor();
    let s2 = vendor();
    let index: Value = serde_json::from_slice(&fs::read(vdir.join("index.json")).unwrap()).unwrap();

    // Mirror the base (from the lock) into the air-gapped registry, twice, and the built image.
    let gap_rules = p.registries(
        "gap.toml",
        &[&gap.addr, &internet.addr],
        &format!("{}/hub/library", gap.addr),
    );
    let mirror = || {
        json(&common::run(
            p.cmd(&gap_rules, &cache1)
                .args(["mirror", "--json", "--recipe"])
                .arg(&p.recipe)
                .args(["--to", &format!("{}/hub", gap.addr)]),
        ))
    };
    let m = mirror();
    let m2 = mirror();
    let mb = json(&common::run(
        p.cmd(&gap_rules, &cache1)
            .args(["mirror", "--json"])
            .arg(&out1)
            .args(["--to", &format!("{}/built", gap.addr)]),
    ));
    Shared {
        cx,
        internet: Mutex::new(Some(internet)),
        gap,
        base_digest,
        f,
        files,
        sha,
        py,
        p,
        online,
        gap_rules,
        cache1,
        v1,
        digest,
        lock_path,
        lock,
        vdir,
        s1,
        s2,
        index,
        m,
        m2,
        mb,
    }
}

impl Shared {
    /// The internet's registry stopped, for good.
    fn stop_internet_registry(&self) {
        drop(
            self.internet
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        );
    }

    /// Every original endpoint dead: the registry stopped (for good), the apt archive and the
    /// URL 404 until the returned guard is dropped.
    fn internet_down(&self) -> EndpointsBack {
        self.stop_internet_registry();
        let moves = vec![
            (
                self.f.repo.root.clone(),
                self.f.repo.root.with_extension("gone"),
            ),
            (self.files.clone(), self.files.with_extension("gone")),
        ];
        for (from, to) in &moves {
            fs::rename(from, to).unwrap();
        }
        EndpointsBack(moves)
    }
}

/// The apt archive and the URL back where they were, when dropped.
struct EndpointsBack(Vec<(PathBuf, PathBuf)>);

impl Drop for EndpointsBack {
    fn drop(&mut self) {
        for (home, gone) in &self.0 {
            let _ = fs::rename(gone, home);
        }
    }
}

#[test]
fn the_online_build_pins_every_input_in_the_lock() {
    let Some(s) = shared() else {
        return;
    };
    let (lock, base_digest) = (&s.lock, &s.base_digest);
    assert!(lock.contains(&format!("reference = \"{BASE}\"")), "{lock}");
    assert!(lock.contains(base_digest.as_str()), "{lock}");
    assert!(
        lock.contains("[python]") && lock.contains("name = \"tool\""),
        "{lock}"
    );
}

#[test]
fn vendor_copies_every_input_and_a_second_run_writes_nothing() {
    let Some(s) = shared() else {
        return;
    };
    let (s1, s2, index) = (&s.s1, &s.s2, &s.index);
    // base manifest + config + layer, one .deb, the archive.
    assert_eq!(s1["entries"], 3, "{s1}");
    assert_eq!(s1["newEntries"], 3, "{s1}");
    assert_eq!(
        s1["copied"].as_u64().unwrap() + s1["linked"].as_u64().unwrap(),
        5,
        "{s1}"
    );
    assert_eq!(s2["bytesWritten"], 0, "{s2}");
    assert_eq!(s2["copiedBytes"], 0, "{s2}");
    assert_eq!(s2["linked"], 0, "{s2}");
    assert_eq!(s2["present"], 5, "{s2}");
    assert_eq!(s2["newEntries"], 0, "{s2}");
    assert_eq!(index["schemaVersion"], 1);
    let kinds: Vec<&str> = index["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["deb", "oci", "url"]);
    let o = common::run_ok(
        s.p.cmd(&s.online, &s.cache1)
            .args(["vendor", "--check"])
            .arg(&s.vdir),
    );
    assert!(
        common::stdout(&o).contains("3 entries, 5 blobs"),
        "{}",
        common::stdout(&o)
    );
}

#[test]
fn mirror_copies_the_locked_base_once_and_the_built_image_digests_unchanged() {
    let Some(s) = shared() else {
        return;
    };
    let (m, m2, mb) = (&s.m, &s.m2, &s.mb);
    assert_eq!(m[0]["manifest"], s.base_digest.as_str(), "{m}");
    assert!(m[0]["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["result"] == "copied"));
    assert_eq!(m2[0]["copiedBytes"], 0, "{m2}");
    assert!(m2[0]["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["result"] == "skipped"));
    assert_eq!(mb[0]["manifest"], s.digest.as_str(), "{mb}");
    let inspected = common::skopeo_json([
        "inspect",
        "--tls-verify=false",
        "--creds",
        &format!("{USER}:{PASS}"),
        &format!("docker://{}/built/airgap:1", s.gap.addr),
    ]);
    assert_eq!(inspected["Digest"], s.digest.as_str());
}

#[test]
fn offline_with_every_endpoint_dead_builds_the_same_image_from_the_vendor_directory() {
    let Some((s, _serial)) = exclusive() else {
        return;
    };
    let (p, online, root) = (&s.p, &s.online, s.cx.path());
    let (base_digest, digest, lock_path) = (&s.base_digest, &s.digest, &s.lock_path);
    let _back = s.internet_down();
    let lock_before = fs::read(lock_path).unwrap();

    // Offline without the vendor directory and an empty store: names the missing input.
    let o = common::run(
        p.cmd(online, &root.join("cache-empty"))
            .args(["build", "--offline", "-o"])
            .arg(root.join("out-none"))
            .arg(&p.recipe),
    );
    let err = failed(&o);
    assert!(
        err.contains(&format!(
            "offline: base {BASE}@{base_digest} manifest {base_digest} is not in the store or the vendor directory"
        )),
        "{err}"
    );
    assert!(!root.join("out-none").exists());

    // From the vendor directory, offline, with an empty store: the same image.
    let out2 = root.join("out2");
    let v2 = json(&common::run(
        p.cmd(online, &root.join("cache2"))
            .args(["build", "--json", "--offline", "--vendor"])
            .arg(&s.vdir)
            .arg("-o")
            .arg(&out2)
            .arg(&p.recipe),
    ));
    assert_eq!(v2["manifest"], digest.as_str());
    assert_eq!(fs::read(lock_path).unwrap(), lock_before);
}

#[test]
fn inside_the_gap_the_recipe_builds_unchanged_through_the_mirror_rule() {
    let Some((s, _serial)) = exclusive() else {
        return;
    };
    let (p, gap_rules, root, digest) = (&s.p, &s.gap_rules, s.cx.path(), &s.digest);
    let back = s.internet_down();
    // Inside the gap, online to the gap's registry only: the recipe builds unchanged through
    // the mirror rule (docker.io/library → the gap registry), apt and the URL from the vendor
    // directory.
    let v3 = json(&common::run(
        p.cmd(gap_rules, &root.join("cache3"))
            .args(["build", "--json", "--locked", "--vendor"])
            .arg(&s.vdir)
            .arg("-o")
            .arg(root.join("out3"))
            .arg(&p.recipe),
    ));
    assert_eq!(v3["manifest"], digest.as_str());
    // And with the apt archive and URL back but no vendor directory: base from the mirror.
    drop(back);
    let v4 = json(&common::run(
        p.cmd(gap_rules, &root.join("cache4"))
            .args(["build", "--json", "--locked", "-o"])
            .arg(root.join("out4"))
            .arg(&p.recipe),
    ));
    assert_eq!(v4["manifest"], digest.as_str());
}

#[test]
fn a_tampered_vendor_directory_is_refused_all_or_nothing() {
    let Some(s) = shared() else {
        return;
    };
    let (p, online, cache1, root) = (&s.p, &s.online, &s.cache1, s.cx.path());
    let (f, index, vdir, lock_path) = (&s.f, &s.index, &s.vdir, &s.lock_path);
    s.stop_internet_registry();
    let lock_before = fs::read(lock_path).unwrap();
    // Tampering, on a copy: a blob byte, then an index entry.
    let bad = root.join("vendor-bad");
    copy_dir(vdir, &bad);
    let deb_digest = index["entries"][0]["digest"].as_str().unwrap().to_string();
    let deb_blob = bad
        .join("blobs/sha256")
        .join(deb_digest.trim_start_matches("sha256:"));
    let mut bytes = fs::read(&deb_blob).unwrap();
    bytes[100] ^= 1;
    fs::remove_file(&deb_blob).unwrap();
    fs::write(&deb_blob, &bytes).unwrap();
    let entry = format!("deb tool 1.0 all {}/pool/main/tool_1.0_all.deb", f.repo.url);
    let o = common::run(p.cmd(online, cache1).args(["vendor", "--check"]).arg(&bad));
    let err = failed(&o);
    assert!(
        err.contains(&format!("entry `{entry}`: blob {deb_digest} was modified")),
        "{err}"
    );
    let cache5 = root.join("cache5");
    let o = common::run(
        p.cmd(online, &cache5)
            .args(["build", "--offline", "--vendor"])
            .arg(&bad)
            .arg("-o")
            .arg(root.join("out5"))
            .arg(&p.recipe),
    );
    let err = failed(&o);
    assert!(
        err.contains(&format!("entry `{entry}`: blob {deb_digest} was modified")),
        "{err}"
    );
    assert!(!root.join("out5").exists());
    // All or nothing: not even the good blobs went into the store.
    let staged: Vec<_> = fs::read_dir(cache5.join("blobs/sha256"))
        .map(std::iter::Iterator::collect)
        .unwrap_or_default();
    assert!(staged.is_empty(), "{staged:?}");
    assert_eq!(fs::read(lock_path).unwrap(), lock_before);

    fs::remove_file(&deb_blob).unwrap();
    fs::write(
        &deb_blob,
        fs::read(
            vdir.join("blobs/sha256")
                .join(deb_digest.trim_start_matches("sha256:")),
        )
        .unwrap(),
    )
    .unwrap();
    let other = format!("sha256:{}", "ab".repeat(32));
    let text = fs::read_to_string(bad.join("index.json")).unwrap();
    fs::write(
        bad.join("index.json"),
        text.replacen(&deb_digest, &other, 1),
    )
    .unwrap();
    let o = common::run(p.cmd(online, cache1).args(["vendor", "--check"]).arg(&bad));
    let err = failed(&o);
    assert!(
        err.contains(&format!("entry `{entry}`: blob {other} is missing")),
        "{err}"
    );
    let o = common::run(
        p.cmd(online, &root.join("cache6"))
            .args(["build", "--offline", "--vendor"])
            .arg(&bad)
            .arg("-o")
            .arg(root.join("out6"))
            .arg(&p.recipe),
    );
    let err = failed(&o);
    assert!(
        err.contains(&format!(
            "entry `{entry}` says {other}, but the lock pins {deb_digest}"
        )),
        "{err}"
    );
    assert!(!root.join("out6").exists());
}

#[test]
fn a_stale_lock_is_refused_under_locked_and_offline_and_frozen_builds_from_it() {
    let Some(s) = shared() else {
        return;
    };
    let (online, cache1, root, f) = (&s.online, &s.cache1, s.cx.path(), &s.f);
    let (py, sha, v1) = (&s.py, &s.sha, &s.v1);
    s.stop_internet_registry();
    // On a copy of the project: the recipe is edited.
    let copy = root.join("app-stale");
    copy_dir(&s.p.dir, &copy);
    let p = Project {
        recipe: copy.join("app.toml"),
        dir: copy,
        auth: s.p.auth.clone(),
    };
    let lock_path = p.dir.join("app.lock");
    let lock_before = fs::read(&lock_path).unwrap();
    // A stale lock: --locked names every change and writes nothing; so does --offline.
    p.write_recipe(
        "docker.io/library/ocibuild-airgap-base:2",
        &f.repo.url,
        &f.key,
        "\"tool\", \"extra\"",
        &py.replace(sha.as_str(), &format!("sha256:{}", "0".repeat(64))),
    );
    for flag in ["--locked", "--offline"] {
        let o = common::run(
            p.cmd(online, cache1)
                .args(["build", flag, "-o"])
                .arg(root.join("out7"))
                .arg(&p.recipe),
        );
        let err = failed(&o);
        for change in [
            format!("base reference {BASE} → docker.io/library/ocibuild-airgap-base:2"),
            "[apt] package `extra` added".to_string(),
            format!("python archive sha256 {sha} → sha256:{}", "0".repeat(64)),
            "ocibuild lock".to_string(),
        ] {
            assert!(err.contains(&change), "{flag}: {change}: {err}");
        }
        assert!(!root.join("out7").exists());
        assert_eq!(fs::read(&lock_path).unwrap(), lock_before);
    }
    // --frozen uses the lock as it is: the locked base, the locked packages. The manifest
    // records the (edited) recipe's digest, so only it differs: the config and every layer are
    // the locked build's. What it ignores is a warning.
    p.write_recipe(BASE, &f.repo.url, &f.key, "\"tool\", \"extra\"", py);
    let o8 = common::run(
        p.cmd(online, cache1)
            .args(["build", "--json", "--frozen", "-o"])
            .arg(root.join("out8"))
            .arg(&p.recipe),
    );
    let err8 = String::from_utf8_lossy(&o8.stderr);
    assert!(
        err8.contains(&format!(
            "warning: {} no longer matches the recipe ([apt] package `extra` added); --frozen \
             ignores this and builds from the lock as it is",
            lock_path.display()
        )),
        "{err8}"
    );
    let v8 = json(&o8);
    assert_eq!(v8["config"], v1["config"]);
    let digests = |v: &Value| -> Vec<Value> {
        v["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["digest"].clone())
            .collect()
    };
    assert_eq!(digests(&v8), digests(v1));
    assert_eq!(fs::read(&lock_path).unwrap(), lock_before);
}
