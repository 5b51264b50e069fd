//! The registry as a shared layer cache (`--cache-repo`), against Debian's docker-registry:
//! machine A builds and pushes; machine B (another store, nothing downloaded before) changes the
//! app and pushes with `--push-only`: the registry's log shows no download of the base's, the
//! .debs' or the wheels' layers, and uploads only the app layer (into the cache repository,
//! from where the push mounts it) and the config. A read-only job writes nothing; a local
//! output downloads the hits instead of rebuilding; an entry that lies is caught by `verify`,
//! and a machine that took it never offers it to another cache repository; a machine with a
//! warm store that joins a cache records its layers there, as its plan said.
//!
//! One set-up (the registry, the base, the locked project and machine A's build) serves every
//! test; the tests run one at a time (they read the registry's log), each on its own copy of
//! the project and its own stores.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};

use fs_err as fs;
use serde_json::Value;

use crate::aptfix::{fixture, python_universe};
use crate::common::context::TestContext;
use crate::common::registry::{Registry, PASS, USER};
use crate::common::{ocibuild, run, run_ok, stdout};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The blob digests the registry was asked to download (GET) in `log`.
fn blob_gets(log: &str) -> BTreeSet<String> {
    log.lines()
        .filter(|l| l.contains("http.request.method=GET") && l.contains("/blobs/sha256:"))
        .filter_map(|l| {
            let i = l.find("/blobs/sha256:")? + "/blobs/".len();
            Some(l[i..i + 71].to_string())
        })
        .collect()
}

fn tags(reg: &Registry, repo: &str) -> BTreeSet<String> {
    let o = run(Command::new("skopeo")
        .args(["list-tags", "--tls-verify=false", "--creds"])
        .arg(format!("{USER}:{PASS}"))
        .arg(format!("docker://{}/{repo}", reg.addr)));
    if !o.status.success() {
        return BTreeSet::new();
    }
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["Tags"]
        .as_array()
        .map(|a| a.iter().map(|t| t.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// The layer of a `build --json` document whose name is `name` (or starts with it, for
/// `wheels`).
fn layer<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"].as_str().unwrap_or_default().starts_with(name))
        .unwrap_or_else(|| panic!("no layer {name}: {doc:#}"))
}

/// `plan --json` of `recipe` by `cmd` against `against`.
fn plan_json(mut cmd: Command, cache_repo: &str, against: &str, recipe: &Path) -> Value {
    let o = run_ok(
        cmd.args([
            "plan",
            "--json",
            "--cache-repo",
            cache_repo,
            "--against",
            against,
        ])
        .arg(recipe),
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}{}", stdout(&o), stderr(&o)))
}

/// A base of `mib` MiB of incompressible data and an /etc/passwd, pushed to `image`.
fn push_base(dir: &Path, auth: &Path, image: &str, mib: u64) {
    let b = dir.join("base");
    fs::create_dir_all(b.join("root/etc")).unwrap();
    fs::create_dir_all(b.join("root/opt")).unwrap();
    fs::write(b.join("root/etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
    crate::common::write_pseudo_random(&b.join("root/opt/blob"), 7, mib << 20);
    fs::write(
        b.join("base.toml"),
        "[image]\nname = \"example.com/base\"\nplatform = \"linux/amd64\"\n\n\
         [[layer]]\nname = \"root\"\nsrc = \"root\"\ndest = \"/\"\n",
    )
    .unwrap();
    run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", dir.join("base-cache"))
            .env("REGISTRY_AUTH_FILE", auth)
            .args(["build", "-q", "--push-only", "--push", image])
            .arg(b.join("base.toml")),
    );
}

/// What every test here starts from, made once by the first test that asks: the registry with
/// the base pushed, the project locked, and machine A's build (a local layout, and pushed)
/// with every layer recorded in the cache repository. Each test then works on a copy of the
/// project with an app of its own, in stores of its own.
struct Shared {
    cx: TestContext,
    _archive: crate::aptfix::Fixture,
    base: String,
    /// The project as A built it (app `one`), locked.
    project: PathBuf,
    w: crate::wheel_recipe::Wheels,
    cache_repo: String,
    /// A's `build --json`.
    a: Value,
    names: Vec<String>,
    /// The layer digests of A's manifest.
    a_layers: Vec<String>,
    app_a: String,
    /// How many layers are the project's own (not the base's).
    ours: u64,
    /// The cache repository's tags right after A.
    entry_tags: BTreeSet<String>,
}

static SHARED: OnceLock<Option<Shared>> = OnceLock::new();

/// The tests read the registry's log and change entries of the shared cache repository: they
/// run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// The shared set-up, and the lock held while a test runs; `None` (skipped) without
/// docker-registry or skopeo.
fn shared() -> Option<(&'static Shared, MutexGuard<'static, ()>)> {
    let serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let s = SHARED
        .get_or_init(|| {
            crate::common::require_tools_all(&["docker-registry", "skopeo"]).then(make_shared)
        })
        .as_ref()?;
    Some((s, serial))
}

/// `ocibuild` as a machine whose store is `store`.
fn machine(s: &Shared, store: &str) -> Command {
    s.cx.ocibuild_with_store(&s.cx.join(store))
}

/// A copy of the locked project in `name/`, its app printing `app`; returns its recipe.
fn project(s: &Shared, name: &str, app: &str) -> PathBuf {
    let dir = s.cx.join(name);
    run_ok(Command::new("cp").arg("-a").arg(&s.project).arg(&dir));
    fs::write(dir.join("app/main.py"), format!("print('{app}')\n")).unwrap();
    dir.join("app.toml")
}

fn make_shared() -> Shared {
    let cx = TestContext::with_registry().shared();
    let reg = cx.registry();
    let auth = cx.auth_file().to_path_buf();
    let base = format!("{}/team/base:1", reg.addr);
    push_base(cx.path(), &auth, &base, 4);

    // The project: python3 from a Debian archive (the test's), two wheels from a pylock, the
    // app; on the base.
    let f = fixture(&python_universe(), false);
    let p = cx.join("proj");
    fs::create_dir_all(p.join("app")).unwrap();
    fs::write(p.join("app/main.py"), "print('one')\n").unwrap();
    let w = crate::wheel_recipe::wheels(&p);
    crate::wheel_recipe::pylock(&p, &w, &|f| {
        !f.contains("musllinux") && !f.contains("2_39") && !f.contains("cp311")
    });
    let r = crate::wheel_recipe::recipe(&p, &f, "lock = \"pylock.toml\"");
    let text = fs::read_to_string(&r).unwrap();
    fs::write(
        &r,
        format!(
            "{text}\n[base]\nimage = \"{base}\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n"
        ),
    )
    .unwrap();
    let cache_repo = format!("{}/team/cache", reg.addr);
    run_ok(
        cx.ocibuild_with_store(&cx.join("lock-store"))
            .arg("lock")
            .arg(&r),
    );

    // Machine A: builds (a local layout) and pushes, recording every layer in the cache.
    let a_out = cx.join("a.oci");
    let o = run_ok(
        cx.ocibuild_with_store(&cx.join("store-a"))
            .args(["build", "--locked", "--json", "--cache-repo", &cache_repo])
            .args(["--push", &format!("{}/team/app:1", reg.addr), "-o"])
            .arg(&a_out)
            .arg(&r),
    );
    let a: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<String> = a["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap_or("").to_string())
        .collect();
    let ours = names.iter().filter(|n| !n.starts_with("base#")).count() as u64;
    let entry_tags = tags(reg, "team/cache");
    let a_manifest = crate::platforms::json(
        &a_out.join("blobs/sha256").join(
            a["manifest"]
                .as_str()
                .unwrap()
                .trim_start_matches("sha256:"),
        ),
    );
    let a_layers: Vec<String> = a_manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["digest"].as_str().unwrap().to_string())
        .collect();
    let app_a = layer(&a, "app")["digest"].as_str().unwrap().to_string();
    Shared {
        cx,
        _archive: f,
        base,
        project: p,
        w,
        cache_repo,
        a,
        names,
        a_layers,
        app_a,
        ours,
        entry_tags,
    }
}

#[test]
fn the_first_machine_records_every_layer_and_its_push_uploads_only_the_config() {
    let Some((s, _serial)) = shared() else {
        return;
    };
    let (a, names) = (&s.a, &s.names);
    assert!(
        names.iter().any(|n| n == "apt") && names.iter().any(|n| n == "app"),
        "{names:?}"
    );
    // A's push mounts every layer (the base's from its repository, ours from the cache
    // repository they were just recorded in): only the config is uploaded.
    let a_blobs = a["push"]["blobs"].as_array().unwrap();
    let (config, layers) = a_blobs.split_last().unwrap();
    assert!(
        layers.iter().all(|b| b["result"] == "mounted"),
        "{:#}",
        a["push"]
    );
    assert_eq!(config["result"], "uploaded", "{:#}", a["push"]);
    let a_cache = &a["cacheRepo"];
    assert_eq!(a_cache["layersWritten"], s.ours, "{names:?} {a_cache:#}");
    assert!(
        a_cache["factsWritten"].as_u64().unwrap() >= 1,
        "{a_cache:#}"
    );
    let entry_tags = &s.entry_tags;
    assert!(
        entry_tags.iter().any(|t| t.starts_with("ocibuild-layer-"))
            && entry_tags.iter().any(|t| t.starts_with("ocibuild-fact-")),
        "{entry_tags:?}"
    );
}

#[test]
fn a_second_machine_downloads_nothing_the_cache_has() {
    let Some((s, _serial)) = shared() else {
        return;
    };
    let reg = s.cx.registry();
    let cache_repo = &s.cache_repo;
    // Machine B: an empty store, the app changed, --push-only to the same registry. First
    // its plan: the app layer new, every other layer in the cache repository, and the bytes
    // the push will upload (the push below uploads exactly those).
    let r = project(s, "b", "two");
    let mark = reg.log_text().len();
    let app2 = format!("{}/team/app:2", reg.addr);
    let plan = plan_json(machine(s, "store-b"), cache_repo, &app2, &r);
    for l in plan["layers"].as_array().unwrap() {
        let want = match l["name"].as_str().unwrap() {
            "app" => "new",
            n if n.starts_with("base#") => "base",
            _ => "cached in the repo",
        };
        assert_eq!(l["status"], want, "{plan:#}");
    }
    let o = run_ok(
        machine(s, "store-b")
            .args(["build", "--locked", "--json", "--cache-repo", cache_repo])
            .args(["--push-only", "--push", &app2])
            .arg(&r),
    );
    let b: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("{}{}", stdout(&o), stderr(&o)));
    let got = blob_gets(&reg.log_text()[mark..]);
    for d in s.a_layers.iter().filter(|d| **d != s.app_a) {
        assert!(!got.contains(d), "B downloaded {d}: {got:?}");
    }
    assert_eq!(b["cacheRepo"]["downloadedBytes"], 0, "{:#}", b["cacheRepo"]);
    // Uploaded: the new app layer (once, into the cache repository, from where the push
    // mounts it) and the config; everything else mounted or already there.
    let app_b = layer(&b, "app")["digest"].as_str().unwrap().to_string();
    assert_ne!(app_b, s.app_a);
    let result_of = |digest: &str| {
        b["push"]["blobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["digest"] == digest)
            .map(|x| x["result"].as_str().unwrap().to_string())
    };
    let uploaded: BTreeSet<&str> = b["push"]["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["result"].as_str().unwrap().starts_with("uploaded"))
        .map(|x| x["digest"].as_str().unwrap())
        .collect();
    let want: BTreeSet<&str> = [b["config"].as_str().unwrap()].into();
    assert_eq!(uploaded, want, "{:#}", b["push"]);
    assert_eq!(
        result_of(&app_b).as_deref(),
        Some("mounted"),
        "{:#}",
        b["push"]
    );
    assert_eq!(b["cacheRepo"]["layersWritten"], 1, "{:#}", b["cacheRepo"]);
    assert_eq!(
        b["cacheRepo"]["uploadedBytes"],
        layer(&b, "app")["size"],
        "{:#}",
        b["cacheRepo"]
    );
    // The plan said all of it: the push's bytes, and what the build writes to the cache.
    assert_eq!(
        plan["push"]["uploadBytes"], b["push"]["uploadedBytes"],
        "{plan:#}"
    );
    assert_eq!(plan["cacheRepo"]["dryRun"], true, "{plan:#}");
    for k in ["layersWritten", "factsWritten", "uploadedBytes"] {
        assert_eq!(plan["cacheRepo"][k], b["cacheRepo"][k], "{k}: {plan:#}");
    }
    assert_eq!(plan["manifest"], b["manifest"]);
    // No .deb and no wheel reached B's store.
    let store_b = s.cx.join("store-b/blobs/sha256");
    let lock = fs::read_to_string(r.with_file_name("app.lock")).unwrap();
    for (file, sha, _) in &s.w.files {
        if lock.contains(sha.as_str()) {
            assert!(!store_b.join(sha).exists(), "wheel {file} downloaded by B");
        }
    }
    let deb_shas: Vec<&str> = lock
        .lines()
        .filter_map(|l| l.strip_prefix("sha256 = \"sha256:"))
        .map(|l| l.trim_end_matches('"'))
        .collect();
    assert!(!deb_shas.is_empty(), "{lock}");
    for sha in deb_shas {
        assert!(!store_b.join(sha).exists(), "B has {sha}");
    }
}

#[test]
fn a_read_only_job_downloads_the_hits_and_writes_nothing() {
    let Some((s, _serial)) = shared() else {
        return;
    };
    let reg = s.cx.registry();
    // A read-only job with a local output: the hits downloaded and verified (not rebuilt),
    // nothing written to the cache.
    let r = project(s, "c", "three");
    let before = tags(reg, "team/cache");
    let c_out = s.cx.join("c.oci");
    // (the machine's cache repository from its registries file, read-only there)
    let registries = s.cx.join("registries.toml");
    fs::write(
        &registries,
        format!("[cache]\nrepo = \"{}\"\nreadonly = true\n", s.cache_repo),
    )
    .unwrap();
    let o = run_ok(
        machine(s, "store-c")
            .arg("--registries")
            .arg(&registries)
            .args(["build", "--locked", "--json", "-o"])
            .arg(&c_out)
            .arg(&r),
    );
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(tags(reg, "team/cache"), before, "a read-only job wrote");
    assert_eq!(c["cacheRepo"]["readonly"], true, "{:#}", c["cacheRepo"]);
    assert_eq!(c["cacheRepo"]["layersWritten"], 0);
    assert!(
        c["cacheRepo"]["downloadedBytes"].as_u64().unwrap() > 0,
        "{:#}",
        c["cacheRepo"]
    );
    for (la, lc) in s.a["layers"]
        .as_array()
        .unwrap()
        .iter()
        .zip(c["layers"].as_array().unwrap())
    {
        if la["name"] != "app" {
            assert_eq!(la["digest"], lc["digest"], "{}", la["name"]);
            assert_eq!(lc["cached"], true, "{}: rebuilt", lc["name"]);
        }
    }
    crate::common::check_layout(&c_out, u64::MAX).unwrap();
}

/// Puts a cache entry's manifest back as it was when dropped (also when the test fails, so
/// the other tests see the true entry).
struct RestoreEntry<'a> {
    addr: &'a str,
    tag: String,
    raw: Vec<u8>,
}

impl Drop for RestoreEntry<'_> {
    fn drop(&mut self) {
        crate::signing::registry_manifest(
            self.addr,
            "team/cache",
            &self.tag,
            Some((&self.raw, "application/vnd.oci.image.manifest.v1+json")),
        );
    }
}

#[test]
fn an_entry_that_lies_is_caught_by_verify_and_never_offered_to_another_cache() {
    let Some((s, _serial)) = shared() else {
        return;
    };
    let reg = s.cx.registry();
    let cache_repo = &s.cache_repo;
    let r = project(s, "d", "four");
    // An entry that lies (the apt layer's key pointing at the wheels' layer, a blob of the
    // cache repository): a build takes it, `verify` (which rebuilds without the cache)
    // catches it.
    let apt_a = layer(&s.a, "apt").clone();
    let entry = tags(reg, "team/cache")
        .into_iter()
        .find(|tag| {
            let o = run_ok(
                Command::new("skopeo")
                    .args(["inspect", "--raw", "--tls-verify=false", "--creds"])
                    .arg(format!("{USER}:{PASS}"))
                    .arg(format!("docker://{cache_repo}:{tag}")),
            );
            String::from_utf8_lossy(&o.stdout).contains(apt_a["digest"].as_str().unwrap())
        })
        .expect("the apt layer's entry");
    let raw = crate::signing::registry_manifest(&reg.addr, "team/cache", &entry, None);
    let mut lie: Value = serde_json::from_slice(&raw).unwrap();
    let other = layer(&s.a, "wheels");
    lie["layers"][0]["digest"] = other["digest"].clone();
    lie["layers"][0]["size"] = other["size"].clone();
    let lie = serde_json::to_vec(&lie).unwrap();
    let _restore = RestoreEntry {
        addr: &reg.addr,
        tag: entry.clone(),
        raw,
    };
    crate::signing::registry_manifest(
        &reg.addr,
        "team/cache",
        &entry,
        Some((&lie, "application/vnd.oci.image.manifest.v1+json")),
    );
    let d_out = s.cx.join("d.oci");
    run_ok(
        machine(s, "store-d")
            .args(["build", "--locked", "--cache-repo", cache_repo, "-o"])
            .arg(&d_out)
            .arg(&r),
    );
    // What D took from the cache (the lie among it) it never offers to another one: only
    // the app layer, which D built, reaches it.
    run_ok(
        machine(s, "store-d")
            .args(["build", "--locked", "--cache-repo"])
            .arg(format!("{}/team/cache3", reg.addr))
            .arg("-o")
            .arg(s.cx.join("d2.oci"))
            .arg(&r),
    );
    let cache3: Vec<String> = tags(reg, "team/cache3")
        .into_iter()
        .filter(|t| t.starts_with("ocibuild-layer-"))
        .collect();
    assert_eq!(cache3.len(), 1, "{cache3:?}");
    assert!(!cache3.contains(&entry), "{cache3:?}");
    let o = run(machine(s, "store-e")
        .args(["verify", "--against"])
        .arg(format!("oci:{}", d_out.display()))
        .arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("NOT reproduced"), "{}", stdout(&o));
    // A machine that built the true layer for those inputs without the cache, then joins
    // it: it leaves the entry and says they differ.
    run_ok(
        machine(s, "store-g")
            .args(["build", "--locked", "-o"])
            .arg(s.cx.join("g1.oci"))
            .arg(&r),
    );
    let o = run_ok(
        machine(s, "store-g")
            .args(["build", "--locked", "--cache-repo", cache_repo, "-o"])
            .arg(s.cx.join("g2.oci"))
            .arg(&r),
    );
    let warned = format!(
        "where this machine has {}",
        apt_a["digest"].as_str().unwrap()
    );
    assert!(stderr(&o).contains(&warned), "{}", stderr(&o));
    assert_eq!(
        crate::signing::registry_manifest(&reg.addr, "team/cache", &entry, None),
        lie,
        "the entry was overwritten"
    );
    // (`_restore` puts the entry back as it was.)
}

#[test]
fn a_rebase_relocks_only_the_base_and_the_push_uploads_what_the_plan_said() {
    let Some((s, _serial)) = shared() else {
        return;
    };
    let reg = s.cx.registry();
    let cache_repo = &s.cache_repo;
    // The image under a tag, as it was before the base moved.
    let r = project(s, "rebase", "five");
    let target = format!("{}/team/app-rebase:1", reg.addr);
    run_ok(
        machine(s, "store-rebase")
            .args(["build", "--locked", "-q", "--cache-repo", cache_repo])
            .args(["--push-only", "--push", &target])
            .arg(&r),
    );
    // A rebase: the base's tag moves; `lock --update base` re-pins only the base, and the
    // plan against the pushed image says the base moved and no layer of ours changed; the
    // push then uploads what the plan said (the config: the new base layer is mounted). (The
    // other tests' copies keep the lock of the base as it was, pinned by digest.)
    let lock = r.with_file_name("app.lock");
    let lock_before = fs::read_to_string(&lock).unwrap();
    push_base(&s.cx.join("rebase-base"), s.cx.auth_file(), &s.base, 1);
    let o = run_ok(
        machine(s, "lock-store")
            .args(["lock", "--update", "base"])
            .arg(&r),
    );
    assert!(stdout(&o).contains("moved"), "{}", stdout(&o));
    let lock_after = fs::read_to_string(&lock).unwrap();
    let without_base = |l: &str| l.split("[apt]").nth(1).unwrap_or_default().to_string();
    assert_ne!(lock_before, lock_after);
    assert_eq!(without_base(&lock_before), without_base(&lock_after));
    let plan = plan_json(machine(s, "store-rebase"), cache_repo, &target, &r);
    assert!(plan["baseMoved"]["from"].is_string(), "{plan:#}");
    for l in plan["layers"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        let changed = name.starts_with("base#");
        assert_eq!(l["changedFromTarget"], changed, "{name}: {plan:#}");
    }
    let o = run_ok(
        machine(s, "store-rebase")
            .args(["build", "--locked", "--json", "--cache-repo", cache_repo])
            .args(["--push-only", "--push", &target])
            .arg(&r),
    );
    let rebased: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        plan["push"]["uploadBytes"], rebased["push"]["uploadedBytes"],
        "{plan:#}"
    );
    assert_eq!(
        rebased["push"]["uploadedBytes"],
        rebased["push"]["blobs"].as_array().unwrap().last().unwrap()["size"],
        "only the config: {:#}",
        rebased["push"]
    );
}

#[test]
fn a_warm_store_joining_a_cache_records_its_layers_until_prune_forgets_the_marks() {
    let Some((s, _serial)) = shared() else {
        return;
    };
    let reg = s.cx.registry();
    let ours = s.ours;
    let r = project(s, "join", "six");
    let target = format!("{}/team/app-join:1", reg.addr);
    // A machine whose store already has the layers joins a new cache repository: its hits
    // are recorded there too (a second build writes nothing more), and a machine with an
    // empty store then finds every layer of ours there.
    run_ok(
        machine(s, "store-a")
            .args(["build", "--locked", "-o"])
            .arg(s.cx.join("j0.oci"))
            .arg(&r),
    );
    let shared = format!("{}/team/cache2", reg.addr);
    let joined = |out: &str| {
        let o = run_ok(
            machine(s, "store-a")
                .args(["build", "--locked", "--json", "--cache-repo", &shared, "-o"])
                .arg(s.cx.join(out))
                .arg(&r),
        );
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    let planned = plan_json(machine(s, "store-a"), &shared, &target, &r);
    let first = joined("j1.oci");
    for k in ["layersWritten", "factsWritten", "uploadedBytes"] {
        assert_eq!(
            planned["cacheRepo"][k], first["cacheRepo"][k],
            "{k}: {:#} {:#}",
            planned["cacheRepo"], first["cacheRepo"]
        );
    }
    assert!(
        first["layers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["cached"] == true),
        "store-a has every layer: {first:#}"
    );
    assert_eq!(
        first["cacheRepo"]["layersWritten"], ours,
        "{:#}",
        first["cacheRepo"]
    );
    let second = joined("j2.oci");
    assert_eq!(
        second["cacheRepo"]["layersWritten"], 0,
        "{:#}",
        second["cacheRepo"]
    );
    assert!(
        first["cacheRepo"]["factsWritten"].as_u64().unwrap() >= 1,
        "the base's facts: {:#}",
        first["cacheRepo"]
    );
    assert_eq!(
        second["cacheRepo"]["factsWritten"], 0,
        "{:#}",
        second["cacheRepo"]
    );
    let mark = reg.log_text().len();
    let plan = plan_json(machine(s, "store-f"), &shared, &target, &r);
    let got = blob_gets(&reg.log_text()[mark..]);
    for l in plan["layers"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        if name.starts_with("base#") {
            let d = l["digest"].as_str().unwrap();
            assert!(!got.contains(d), "{name} downloaded: {got:?}");
        } else {
            assert_eq!(l["status"], "cached in the repo", "{name}: {plan:#}");
        }
    }

    // The layer entries deleted from the repository: store-a's marks say it has them, so
    // they are not recorded again until `cache prune` forgets the marks.
    for tag in tags(reg, "team/cache2") {
        if tag.starts_with("ocibuild-layer-") {
            run_ok(
                Command::new("skopeo")
                    .args(["delete", "--tls-verify=false", "--creds"])
                    .arg(format!("{USER}:{PASS}"))
                    .arg(format!("docker://{shared}:{tag}")),
            );
        }
    }
    let stale = joined("j3.oci");
    assert_eq!(
        stale["cacheRepo"]["layersWritten"], 0,
        "{:#}",
        stale["cacheRepo"]
    );
    let o = run_ok(machine(s, "store-a").args(["cache", "prune", "--json"]));
    let pruned: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        pruned["sharedMarks"].as_u64().unwrap() >= ours,
        "{pruned:#}"
    );
    let again = joined("j4.oci");
    assert_eq!(
        again["cacheRepo"]["layersWritten"], ours,
        "{:#}",
        again["cacheRepo"]
    );
}
