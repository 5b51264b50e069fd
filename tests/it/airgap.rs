//! The air-gapped workflow (issue 7) end to end, with the real binary and nothing from the
//! internet: a loopback docker-registry stands for Docker Hub (a `[[mirror]]` rule sends
//! `docker.io` there), a generated apt repository and an HTTP-served interpreter archive for
//! the other inputs. Then: `vendor` (twice: the second copies nothing), `build --vendor
//! --offline` with every original endpoint dead and an empty store, `mirror` into a second
//! registry standing for the air-gapped one and a build through a mirror rule, tampering, and
//! a stale lock under `--locked`.

use crate::aptfix;
use crate::common;

use fs_err as fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aptfix::{deb, fixture, Data};
use common::registry::{start_registry, PASS, USER};
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

#[test]
fn vendor_offline_mirror_tamper_and_stale_lock() {
    if !ready() {
        return;
    }
    let t = common::tempdir();
    let root = t.path();

    // "The internet": a registry (Docker Hub through a mirror rule), an apt archive, a URL.
    let internet = start_registry(None);
    let gap = start_registry(None);
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

    // 1. The online build: pins everything in app.lock.
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
    assert!(lock.contains(&format!("reference = \"{BASE}\"")), "{lock}");
    assert!(lock.contains(&base_digest), "{lock}");
    assert!(
        lock.contains("[python]") && lock.contains("name = \"tool\""),
        "{lock}"
    );

    // 2. vendor: every input; a second run writes nothing.
    let vdir = root.join("vendor");
    let s1 = json(&common::run(
        p.cmd(&online, &cache1)
            .args(["vendor", "--json", "--into"])
            .arg(&vdir)
            .arg(&p.recipe),
    ));
    // base manifest + config + layer, one .deb, the archive.
    assert_eq!(s1["entries"], 3, "{s1}");
    assert_eq!(s1["newEntries"], 3, "{s1}");
    assert_eq!(
        s1["copied"].as_u64().unwrap() + s1["linked"].as_u64().unwrap(),
        5,
        "{s1}"
    );
    let s2 = json(&common::run(
        p.cmd(&online, &cache1)
            .args(["vendor", "--json", "--into"])
            .arg(&vdir)
            .arg(&p.recipe),
    ));
    assert_eq!(s2["bytesWritten"], 0, "{s2}");
    assert_eq!(s2["copiedBytes"], 0, "{s2}");
    assert_eq!(s2["linked"], 0, "{s2}");
    assert_eq!(s2["present"], 5, "{s2}");
    assert_eq!(s2["newEntries"], 0, "{s2}");
    let index: Value = serde_json::from_slice(&fs::read(vdir.join("index.json")).unwrap()).unwrap();
    assert_eq!(index["schemaVersion"], 1);
    let kinds: Vec<&str> = index["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["deb", "oci", "url"]);
    let o = common::run_ok(
        p.cmd(&online, &cache1)
            .args(["vendor", "--check"])
            .arg(&vdir),
    );
    assert!(
        common::stdout(&o).contains("3 entries, 5 blobs"),
        "{}",
        common::stdout(&o)
    );

    // Mirror the base (from the lock) into the air-gapped registry, and the built image too.
    let gap_rules = p.registries(
        "gap.toml",
        &[&gap.addr, &internet.addr],
        &format!("{}/hub/library", gap.addr),
    );
    let m = json(&common::run(
        p.cmd(&gap_rules, &cache1)
            .args(["mirror", "--json", "--recipe"])
            .arg(&p.recipe)
            .args(["--to", &format!("{}/hub", gap.addr)]),
    ));
    assert_eq!(m[0]["manifest"], base_digest.as_str(), "{m}");
    assert!(m[0]["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["result"] == "copied"));
    let m2 = json(&common::run(
        p.cmd(&gap_rules, &cache1)
            .args(["mirror", "--json", "--recipe"])
            .arg(&p.recipe)
            .args(["--to", &format!("{}/hub", gap.addr)]),
    ));
    assert_eq!(m2[0]["copiedBytes"], 0, "{m2}");
    assert!(m2[0]["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["result"] == "skipped"));
    let mb = json(&common::run(
        p.cmd(&gap_rules, &cache1)
            .args(["mirror", "--json"])
            .arg(&out1)
            .args(["--to", &format!("{}/built", gap.addr)]),
    ));
    assert_eq!(mb[0]["manifest"], digest.as_str(), "{mb}");
    let inspected = common::skopeo_json([
        "inspect",
        "--tls-verify=false",
        "--creds",
        &format!("{USER}:{PASS}"),
        &format!("docker://{}/built/airgap:1", gap.addr),
    ]);
    assert_eq!(inspected["Digest"], digest.as_str());

    // 3. Every original endpoint dead: the registry stopped, the apt archive and the URL 404.
    drop(internet);
    let repo_gone = f.repo.root.with_extension("gone");
    fs::rename(&f.repo.root, &repo_gone).unwrap();
    let files_gone = files.with_extension("gone");
    fs::rename(&files, &files_gone).unwrap();
    let lock_before = fs::read(&lock_path).unwrap();

    // Offline without the vendor directory and an empty store: names the missing input.
    let o = common::run(
        p.cmd(&online, &root.join("cache-empty"))
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
        p.cmd(&online, &root.join("cache2"))
            .args(["build", "--json", "--offline", "--vendor"])
            .arg(&vdir)
            .arg("-o")
            .arg(&out2)
            .arg(&p.recipe),
    ));
    assert_eq!(v2["manifest"], digest.as_str());
    assert_eq!(fs::read(&lock_path).unwrap(), lock_before);

    // 4. Inside the gap, online to the gap's registry only: the recipe builds unchanged through
    //    the mirror rule (docker.io/library → the gap registry), apt and the URL from the vendor
    //    directory.
    let v3 = json(&common::run(
        p.cmd(&gap_rules, &root.join("cache3"))
            .args(["build", "--json", "--locked", "--vendor"])
            .arg(&vdir)
            .arg("-o")
            .arg(root.join("out3"))
            .arg(&p.recipe),
    ));
    assert_eq!(v3["manifest"], digest.as_str());
    // And with the apt archive and URL back but no vendor directory: base from the mirror.
    fs::rename(&repo_gone, &f.repo.root).unwrap();
    fs::rename(&files_gone, &files).unwrap();
    let v4 = json(&common::run(
        p.cmd(&gap_rules, &root.join("cache4"))
            .args(["build", "--json", "--locked", "-o"])
            .arg(root.join("out4"))
            .arg(&p.recipe),
    ));
    assert_eq!(v4["manifest"], digest.as_str());

    // 5. Tampering, on a copy: a blob byte, then an index entry.
    let bad = root.join("vendor-bad");
    copy_dir(&vdir, &bad);
    let deb_digest = index["entries"][0]["digest"].as_str().unwrap().to_string();
    let deb_blob = bad
        .join("blobs/sha256")
        .join(deb_digest.trim_start_matches("sha256:"));
    let mut bytes = fs::read(&deb_blob).unwrap();
    bytes[100] ^= 1;
    fs::remove_file(&deb_blob).unwrap();
    fs::write(&deb_blob, &bytes).unwrap();
    let entry = format!("deb tool 1.0 all {}/pool/main/tool_1.0_all.deb", f.repo.url);
    let o = common::run(
        p.cmd(&online, &cache1)
            .args(["vendor", "--check"])
            .arg(&bad),
    );
    let err = failed(&o);
    assert!(
        err.contains(&format!("entry `{entry}`: blob {deb_digest} was modified")),
        "{err}"
    );
    let cache5 = root.join("cache5");
    let o = common::run(
        p.cmd(&online, &cache5)
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
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(staged.is_empty(), "{staged:?}");
    assert_eq!(fs::read(&lock_path).unwrap(), lock_before);

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
    let o = common::run(
        p.cmd(&online, &cache1)
            .args(["vendor", "--check"])
            .arg(&bad),
    );
    let err = failed(&o);
    assert!(
        err.contains(&format!("entry `{entry}`: blob {other} is missing")),
        "{err}"
    );
    let o = common::run(
        p.cmd(&online, &root.join("cache6"))
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

    // 6. A stale lock: --locked names every change and writes nothing; so does --offline.
    p.write_recipe(
        "docker.io/library/ocibuild-airgap-base:2",
        &f.repo.url,
        &f.key,
        "\"tool\", \"extra\"",
        &py.replace(&sha, &format!("sha256:{}", "0".repeat(64))),
    );
    for flag in ["--locked", "--offline"] {
        let o = common::run(
            p.cmd(&online, &cache1)
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
    p.write_recipe(BASE, &f.repo.url, &f.key, "\"tool\", \"extra\"", &py);
    let o8 = common::run(
        p.cmd(&online, &cache1)
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
    assert_eq!(digests(&v8), digests(&v1));
    assert_eq!(fs::read(&lock_path).unwrap(), lock_before);
}
