//! The registry as a shared layer cache (`--cache-repo`), against Debian's docker-registry:
//! machine A builds and pushes; machine B (another store, nothing downloaded before) changes the
//! app and pushes with `--push-only`: the registry's log shows no download of the base's, the
//! .debs' or the wheels' layers, and uploads only the app layer (into the cache repository,
//! from where the push mounts it) and the config. A read-only job writes nothing; a local
//! output downloads the hits instead of rebuilding; an entry that lies is caught by `verify`,
//! and a machine that took it never offers it to another cache repository; a machine with a
//! warm store that joins a cache records its layers there, as its plan said.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use fs_err as fs;
use serde_json::Value;

use crate::aptfix::{fixture, python_universe};
use crate::common::registry::{auth_file, start_registry, Registry, PASS, USER};
use crate::common::{ocibuild, run, run_ok, stdout, tempdir};

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

#[test]
fn a_second_machine_downloads_nothing_the_cache_has() {
    if !crate::common::require_tools_all(&["docker-registry", "skopeo"]) {
        return;
    }
    let reg = start_registry(None);
    let t = tempdir();
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let base = format!("{}/team/base:1", reg.addr);
    push_base(t.path(), &auth, &base, 4);

    // The project: python3 from a Debian archive (the test's), two wheels from a pylock, the
    // app; on the base.
    let f = fixture(&python_universe(), false);
    let p = t.path().join("proj");
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
    let machine = |store: &str| {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", t.path().join(store))
            .env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"));
        c
    };
    run_ok(machine("lock-store").arg("lock").arg(&r));

    // Machine A: builds (a local layout) and pushes, recording every layer in the cache.
    let a_out = t.path().join("a.oci");
    let o = run_ok(
        machine("store-a")
            .args(["build", "--locked", "--json", "--cache-repo", &cache_repo])
            .args(["--push", &format!("{}/team/app:1", reg.addr), "-o"])
            .arg(&a_out)
            .arg(&r),
    );
    let a: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = a["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap_or(""))
        .collect();
    assert!(
        names.contains(&"apt") && names.contains(&"app"),
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
    let ours = names.iter().filter(|n| !n.starts_with("base#")).count() as u64;
    assert_eq!(a_cache["layersWritten"], ours, "{names:?} {a_cache:#}");
    assert!(
        a_cache["factsWritten"].as_u64().unwrap() >= 1,
        "{a_cache:#}"
    );
    let entry_tags = tags(&reg, "team/cache");
    assert!(
        entry_tags.iter().any(|t| t.starts_with("ocibuild-layer-"))
            && entry_tags.iter().any(|t| t.starts_with("ocibuild-fact-")),
        "{entry_tags:?}"
    );
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

    // Machine B: an empty store, the app changed, --push-only to the same registry. First
    // its plan: the app layer new, every other layer in the cache repository, and the bytes
    // the push will upload (the push below uploads exactly those).
    fs::write(p.join("app/main.py"), "print('two')\n").unwrap();
    let mark = reg.log_text().len();
    let app2 = format!("{}/team/app:2", reg.addr);
    let plan = plan_json(machine("store-b"), &cache_repo, &app2, &r);
    for l in plan["layers"].as_array().unwrap() {
        let want = match l["name"].as_str().unwrap() {
            "app" => "new",
            n if n.starts_with("base#") => "base",
            _ => "cached in the repo",
        };
        assert_eq!(l["status"], want, "{plan:#}");
    }
    let o = run_ok(
        machine("store-b")
            .args(["build", "--locked", "--json", "--cache-repo", &cache_repo])
            .args(["--push-only", "--push", &format!("{}/team/app:2", reg.addr)])
            .arg(&r),
    );
    let b: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("{}{}", stdout(&o), stderr(&o)));
    let got = blob_gets(&reg.log_text()[mark..]);
    for d in a_layers.iter().filter(|d| **d != app_a) {
        assert!(!got.contains(d), "B downloaded {d}: {got:?}");
    }
    assert_eq!(b["cacheRepo"]["downloadedBytes"], 0, "{:#}", b["cacheRepo"]);
    // Uploaded: the new app layer (once, into the cache repository, from where the push
    // mounts it) and the config; everything else mounted or already there.
    let app_b = layer(&b, "app")["digest"].as_str().unwrap().to_string();
    assert_ne!(app_b, app_a);
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
    let store_b = t.path().join("store-b/blobs/sha256");
    let lock = fs::read_to_string(p.join("app.lock")).unwrap();
    for (file, sha, _) in &w.files {
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

    // A read-only job with a local output: the hits downloaded and verified (not rebuilt),
    // nothing written to the cache.
    fs::write(p.join("app/main.py"), "print('three')\n").unwrap();
    let before = tags(&reg, "team/cache");
    let c_out = t.path().join("c.oci");
    // (the machine's cache repository from its registries file, read-only there)
    let registries = t.path().join("registries.toml");
    fs::write(
        &registries,
        format!("[cache]\nrepo = \"{cache_repo}\"\nreadonly = true\n"),
    )
    .unwrap();
    let o = run_ok(
        machine("store-c")
            .arg("--registries")
            .arg(&registries)
            .args(["build", "--locked", "--json", "-o"])
            .arg(&c_out)
            .arg(&r),
    );
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(tags(&reg, "team/cache"), before, "a read-only job wrote");
    assert_eq!(c["cacheRepo"]["readonly"], true, "{:#}", c["cacheRepo"]);
    assert_eq!(c["cacheRepo"]["layersWritten"], 0);
    assert!(
        c["cacheRepo"]["downloadedBytes"].as_u64().unwrap() > 0,
        "{:#}",
        c["cacheRepo"]
    );
    for (la, lc) in a["layers"]
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

    // An entry that lies (the apt layer's key pointing at the wheels' layer, a blob of the
    // cache repository): a build takes it, `verify` (which rebuilds without the cache)
    // catches it.
    let apt_a = layer(&a, "apt").clone();
    let entry = before
        .iter()
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
    let raw = crate::signing::registry_manifest(&reg.addr, "team/cache", entry, None);
    let mut lie: Value = serde_json::from_slice(&raw).unwrap();
    let other = layer(&a, "wheels");
    lie["layers"][0]["digest"] = other["digest"].clone();
    lie["layers"][0]["size"] = other["size"].clone();
    let lie = serde_json::to_vec(&lie).unwrap();
    crate::signing::registry_manifest(
        &reg.addr,
        "team/cache",
        entry,
        Some((&lie, "application/vnd.oci.image.manifest.v1+json")),
    );
    let d_out = t.path().join("d.oci");
    run_ok(
        machine("store-d")
            .args(["build", "--locked", "--cache-repo", &cache_repo, "-o"])
            .arg(&d_out)
            .arg(&r),
    );
    // What D took from the cache (the lie among it) it never offers to another one: only
    // the app layer, which D built, reaches it.
    run_ok(
        machine("store-d")
            .args(["build", "--locked", "--cache-repo"])
            .arg(format!("{}/team/cache3", reg.addr))
            .arg("-o")
            .arg(t.path().join("d2.oci"))
            .arg(&r),
    );
    let cache3: Vec<String> = tags(&reg, "team/cache3")
        .into_iter()
        .filter(|t| t.starts_with("ocibuild-layer-"))
        .collect();
    assert_eq!(cache3.len(), 1, "{cache3:?}");
    assert!(!cache3.contains(entry), "{cache3:?}");
    let o = run(machine("store-e")
        .args(["verify", "--against"])
        .arg(format!("oci:{}", d_out.display()))
        .arg(&r));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("NOT reproduced"), "{}", stdout(&o));
    // A machine that built the true layer for those inputs without the cache, then joins
    // it: it leaves the entry and says they differ.
    run_ok(
        machine("store-g")
            .args(["build", "--locked", "-o"])
            .arg(t.path().join("g1.oci"))
            .arg(&r),
    );
    let o = run_ok(
        machine("store-g")
            .args(["build", "--locked", "--cache-repo", &cache_repo, "-o"])
            .arg(t.path().join("g2.oci"))
            .arg(&r),
    );
    let warned = format!(
        "where this machine has {}",
        apt_a["digest"].as_str().unwrap()
    );
    assert!(stderr(&o).contains(&warned), "{}", stderr(&o));
    assert_eq!(
        crate::signing::registry_manifest(&reg.addr, "team/cache", entry, None),
        lie,
        "the entry was overwritten"
    );
    // The entry as it was.
    crate::signing::registry_manifest(
        &reg.addr,
        "team/cache",
        entry,
        Some((&raw, "application/vnd.oci.image.manifest.v1+json")),
    );

    // A rebase: the base's tag moves; `lock --update base` re-pins only the base, and the
    // plan against the pushed image says the base moved and no layer of ours changed; the
    // push then uploads what the plan said (the config: the new base layer is mounted).
    fs::write(p.join("app/main.py"), "print('two')\n").unwrap();
    let lock_before = fs::read_to_string(p.join("app.lock")).unwrap();
    push_base(&t.path().join("rebase"), &auth, &base, 1);
    let o = run_ok(
        machine("lock-store")
            .args(["lock", "--update", "base"])
            .arg(&r),
    );
    assert!(stdout(&o).contains("moved"), "{}", stdout(&o));
    let lock_after = fs::read_to_string(p.join("app.lock")).unwrap();
    let without_base = |l: &str| l.split("[apt]").nth(1).unwrap_or_default().to_string();
    assert_ne!(lock_before, lock_after);
    assert_eq!(without_base(&lock_before), without_base(&lock_after));
    let plan = plan_json(machine("store-b"), &cache_repo, &app2, &r);
    assert!(plan["baseMoved"]["from"].is_string(), "{plan:#}");
    for l in plan["layers"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        let changed = name.starts_with("base#");
        assert_eq!(l["changedFromTarget"], changed, "{name}: {plan:#}");
    }
    let o = run_ok(
        machine("store-b")
            .args(["build", "--locked", "--json", "--cache-repo", &cache_repo])
            .args(["--push-only", "--push", &app2])
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

    // A machine whose store already has the layers joins a new cache repository: its hits
    // are recorded there too (a second build writes nothing more), and a machine with an
    // empty store then finds every layer of ours there.
    run_ok(
        machine("store-a")
            .args(["build", "--locked", "-o"])
            .arg(t.path().join("j0.oci"))
            .arg(&r),
    );
    let shared = format!("{}/team/cache2", reg.addr);
    let joined = |out: &str| {
        let o = run_ok(
            machine("store-a")
                .args(["build", "--locked", "--json", "--cache-repo", &shared, "-o"])
                .arg(t.path().join(out))
                .arg(&r),
        );
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    let planned = plan_json(machine("store-a"), &shared, &app2, &r);
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
    let plan = plan_json(machine("store-f"), &shared, &app2, &r);
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
    for tag in tags(&reg, "team/cache2") {
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
    let o = run_ok(machine("store-a").args(["cache", "prune", "--json"]));
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
