//! Building on a registry base: Debian's docker-registry on 127.0.0.1 (htpasswd auth, plain HTTP
//! allowed for it by a registries file), a base pushed there with skopeo, and ocibuild pulling
//! it pinned by digest through NAME.lock.

use crate::common;

use fs_err as fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::context::TestContext;
use common::registry::{auth_file, start_registry, PASS, USER};
use serde_json::Value;

fn ready() -> bool {
    common::require_tool("docker-registry")
        && common::require_tool("skopeo")
        && common::require_static_busybox().is_some()
}

/// Build a busybox base (with `marker` in its env) and push it to `dest` with skopeo.
fn push_base(dir: &Path, addr: &str, dest: &str, marker: &str) -> String {
    fs::create_dir_all(dir).unwrap();
    let recipe = dir.join("base.toml");
    fs::write(
        &recipe,
        format!(
            r#"[image]
name = "localhost/base"
tag = "b"
[[layer]]
name = "busybox"
src = "/bin/busybox"
dest = "/bin/busybox"
[config]
env = {{ PATH = "/bin", BASE_MARKER = "{marker}" }}
cmd = ["/bin/busybox", "echo", "from base"]
labels = {{ "base.label" = "x" }}
"#
        ),
    )
    .unwrap();
    let layout = dir.join("layout");
    common::assert_success(
        &common::run(
            common::ocibuild()
                .arg("build")
                .arg(&recipe)
                .arg("-o")
                .arg(&layout),
        ),
        "base build",
    );
    common::registry::push_layout(&layout, "b", addr, dest);
    let v = common::skopeo_json([
        "inspect",
        "--tls-verify=false",
        "--creds",
        &format!("{USER}:{PASS}"),
        &format!("docker://{addr}/{dest}"),
    ]);
    v["Digest"].as_str().unwrap().to_string()
}

struct App {
    recipe: PathBuf,
    registries: PathBuf,
    auth: PathBuf,
}

fn app_project(dir: &Path, addr: &str, base: &str) -> App {
    fs::create_dir_all(dir.join("app")).unwrap();
    fs::write(
        dir.join("app/hello.sh"),
        "echo \"app on $BASE_MARKER base, APP=$APP\"\n",
    )
    .unwrap();
    let recipe = dir.join("app.toml");
    fs::write(
        &recipe,
        format!(
            r#"[image]
name = "localhost/app"
tag = "a"
[base]
image = "{addr}/{base}"
[[layer]]
name = "app"
src = "app"
dest = "/app"
[config]
env = {{ APP = "yes" }}
cmd = ["/bin/busybox", "sh", "/app/hello.sh"]
labels = {{ "app.label" = "y" }}
"#
        ),
    )
    .unwrap();
    let registries = dir.join("registries.toml");
    fs::write(
        &registries,
        format!("[[registry]]\nname = \"{addr}\"\ninsecure-http = true\n"),
    )
    .unwrap();
    let auth = auth_file(dir, addr, PASS);
    App {
        recipe,
        registries,
        auth,
    }
}

impl App {
    /// `ocibuild` with this project's registries file and credentials.
    fn ocibuild(&self) -> std::process::Command {
        let mut c = common::ocibuild();
        c.arg("--registries")
            .arg(&self.registries)
            .env("REGISTRY_AUTH_FILE", &self.auth);
        c
    }
}

fn build(app: &App, out: &Path, extra: &[&str]) -> std::process::Output {
    common::run(
        app.ocibuild()
            .arg("build")
            .arg(&app.recipe)
            .arg("-o")
            .arg(out)
            .arg("--json")
            .args(extra),
    )
}

fn json(out: &std::process::Output) -> Value {
    common::assert_success(out, "ocibuild build");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn blob(layout: &Path, digest: &str) -> PathBuf {
    layout
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

fn read_json(path: PathBuf) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// A registry with a busybox base pushed as `test/base:1`, and the app on it built once (its
/// lock written) into `out1`.
struct OnBase {
    tmp: TestContext,
    reg: common::registry::Registry,
    addr: String,
    base1: String,
    app: App,
    out1: PathBuf,
    v1: Value,
}

fn on_base() -> OnBase {
    let tmp = TestContext::new();
    let reg = start_registry(None);
    let addr = reg.addr.clone();
    let base1 = push_base(&tmp.path().join("base1"), &addr, "test/base:1", "first");
    let app = app_project(&tmp.path().join("app"), &addr, "test/base:1");
    // First build: resolves the tag, pins it in app.lock, pulls the base.
    let out1 = tmp.path().join("out1");
    let v1 = json(&build(&app, &out1, &[]));
    OnBase {
        tmp,
        reg,
        addr,
        base1,
        app,
        out1,
        v1,
    }
}

/// [`on_base`] made once by the first test that asks; `None` when the tools are missing.
fn shared() -> Option<&'static OnBase> {
    static SHARED: OnceLock<Option<OnBase>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            ready().then(|| {
                let mut b = on_base();
                b.tmp = std::mem::take(&mut b.tmp).shared();
                common::context::clean_up_after_exit(
                    &[b.reg.pid().to_string()],
                    &[b.reg.dir().to_path_buf()],
                );
                b
            })
        })
        .as_ref()
}

#[test]
fn builds_on_a_registry_base_pinned_by_the_lock() {
    let Some(b) = shared() else {
        return;
    };
    let (tmp, addr, base1) = (&b.tmp, &b.addr, &b.base1);
    let lock = fs::read_to_string(tmp.path().join("app/app.lock")).unwrap();
    assert!(
        lock.contains(&format!("reference = \"{addr}/test/base:1\"")),
        "{lock}"
    );
    assert!(
        lock.contains(&format!("manifest-digest = \"{base1}\"")),
        "{lock}"
    );
}

#[test]
fn the_base_layer_is_the_registrys_and_its_config_is_inherited() {
    let Some(b) = shared() else {
        return;
    };
    let (tmp, addr, base1, out1, v1) = (&b.tmp, &b.addr, &b.base1, &b.out1, &b.v1);
    // The base's layer is the registry's, byte for byte; config inherited with our overrides.
    let manifest = read_json(blob(out1, v1["manifest"].as_str().unwrap()));
    let base_manifest = common::skopeo_json([
        "inspect",
        "--raw",
        "--tls-verify=false",
        "--creds",
        &format!("{USER}:{PASS}"),
        &format!("docker://{addr}/test/base:1"),
    ]);
    assert_eq!(
        manifest["layers"][0]["digest"],
        base_manifest["layers"][0]["digest"]
    );
    let base_layer = blob(
        &tmp.path().join("base1/layout"),
        base_manifest["layers"][0]["digest"].as_str().unwrap(),
    );
    assert_eq!(
        fs::read(blob(
            out1,
            manifest["layers"][0]["digest"].as_str().unwrap()
        ))
        .unwrap(),
        fs::read(base_layer).unwrap()
    );
    assert_eq!(manifest["layers"].as_array().unwrap().len(), 2);
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.base.name"],
        format!("{addr}/test/base:1")
    );
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.base.digest"],
        base1.as_str()
    );
    let config = read_json(blob(out1, v1["config"].as_str().unwrap()));
    let env: Vec<&str> = config["config"]["Env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(env, ["BASE_MARKER=first", "PATH=/bin", "APP=yes"]);
    assert_eq!(
        config["config"]["Labels"],
        serde_json::json!({"app.label": "y", "base.label": "x"})
    );
    assert_eq!(
        config["config"]["Cmd"],
        serde_json::json!(["/bin/busybox", "sh", "/app/hello.sh"])
    );
    assert_eq!(config["rootfs"]["diff_ids"].as_array().unwrap().len(), 2);
    assert_eq!(config["history"].as_array().unwrap().len(), 2);

    if common::require_tool("podman") {
        let out = common::podman_run(out1, "a", &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(common::stdout(&out).trim(), "app on first base, APP=yes");
    }
}

#[test]
fn a_push_mounts_the_base_layer_and_a_second_uploads_nothing() {
    let Some(b) = shared() else {
        return;
    };
    let (tmp, addr, app, out1, v1) = (&b.tmp, &b.addr, &b.app, &b.out1, &b.v1);
    // Push: the base layer is mounted from the base's repository (same registry), not uploaded;
    // a second push uploads nothing; skopeo sees the digest we built.
    let push = |src: &str, dest: &str| {
        let out = common::run(app.ocibuild().args(["push", src, dest, "--json"]));
        common::assert_success(&out, "ocibuild push");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let src = format!("{}:a", out1.display());
    let p1 = push(&src, &format!("{addr}/test/app:1"));
    assert_eq!(p1["digest"], v1["manifest"]);
    let results: Vec<&str> = p1["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["result"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["mounted", "uploaded", "uploaded"], "{p1:#}");
    let app_layer_and_config =
        p1["blobs"][1]["size"].as_u64().unwrap() + p1["blobs"][2]["size"].as_u64().unwrap();
    assert_eq!(p1["uploadedBytes"].as_u64().unwrap(), app_layer_and_config);
    let p2 = push(&src, &format!("{addr}/test/app:1"));
    assert!(
        p2["blobs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["result"] == "existed"),
        "{p2:#}"
    );
    assert_eq!(p2["uploadedBytes"], 0);
    let remote = common::skopeo_json([
        "inspect",
        "--tls-verify=false",
        "--creds",
        &format!("{USER}:{PASS}"),
        &format!("docker://{addr}/test/app:1"),
    ]);
    assert_eq!(remote["Digest"], v1["manifest"]);
    let vp = json(&build(
        app,
        &tmp.path().join("outp"),
        &["--push", &format!("{addr}/test/app:2")],
    ));
    assert_eq!(vp["push"]["digest"], vp["manifest"]);
}

#[test]
fn a_moved_tag_is_followed_only_by_lock_update_and_a_warm_store_needs_no_network() {
    if !ready() {
        return;
    }
    // (its own registry and project: the tag moves, and the registry goes)
    let OnBase {
        tmp,
        reg,
        addr,
        base1,
        app,
        out1: _,
        v1,
    } = on_base();
    // The tag moves: a plain build keeps the locked digest; `lock --update` reports the move.
    let base2 = push_base(&tmp.path().join("base2"), &addr, "test/base:1", "second");
    assert_ne!(base1, base2);
    let v2 = json(&build(&app, &tmp.path().join("out2"), &[]));
    assert_eq!(
        v2["manifest"], v1["manifest"],
        "a moved tag must not be followed silently"
    );
    let out = common::run(app.ocibuild().args(["lock", "--update"]).arg(&app.recipe));
    common::assert_success(&out, "lock --update");
    let said = format!(
        "{}{}",
        common::stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("moved") && said.contains(&base1) && said.contains(&base2),
        "{said}"
    );
    let v3 = json(&build(&app, &tmp.path().join("out3"), &[]));
    assert_ne!(v3["manifest"], v1["manifest"]);

    // With the lock present and the store warm, no network: the registry is gone.
    drop(reg);
    let v4 = json(&build(&app, &tmp.path().join("out4"), &[]));
    assert_eq!(v4["manifest"], v3["manifest"]);
}

#[test]
fn registry_errors_name_the_registry_and_repository() {
    if !ready() {
        return;
    }
    let tmp = common::tempdir();
    let reg = start_registry(None);
    let app = app_project(&tmp.path().join("app"), &reg.addr, "test/missing:1");
    let out = build(&app, &tmp.path().join("out"), &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&reg.addr) && err.contains("test/missing"),
        "{err}"
    );
    assert!(!tmp.path().join("out").exists());
    assert!(
        !tmp.path().join("app/app.lock").exists(),
        "a failed resolution writes no lock"
    );

    // Wrong password: an auth error that never shows the secret.
    let bad = auth_file(&tmp.path().join("app"), &reg.addr, "wrong-password");
    let out = common::run(
        common::ocibuild()
            .arg("--registries")
            .arg(&app.registries)
            .env("REGISTRY_AUTH_FILE", &bad)
            .arg("build")
            .arg(&app.recipe)
            .arg("-o")
            .arg(tmp.path().join("out")),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.to_lowercase().contains("unauthorized") || err.to_lowercase().contains("auth"),
        "{err}"
    );
    assert!(!err.contains("wrong-password"), "{err}");
}

#[test]
fn mirror_rules_serve_a_docker_io_base_from_a_local_registry() {
    if !ready() {
        return;
    }
    let tmp = common::tempdir();
    let reg = start_registry(None);
    let addr = reg.addr.clone();
    let base = push_base(&tmp.path().join("base"), &addr, "team/base:7", "mirrored");
    // The recipe names docker.io; the registries file sends docker.io to the local mirror.
    let app = app_project(&tmp.path().join("app"), "docker.io", "team/base:7");
    // Credentials are looked up for the host actually contacted: the mirror.
    auth_file(&tmp.path().join("app"), &addr, PASS);
    fs::write(
        &app.registries,
        format!(
            "[[registry]]\nname = \"{addr}\"\ninsecure-http = true\n\n\
             [[mirror]]\nprefix = \"docker.io\"\nlocations = [\"{addr}\"]\n"
        ),
    )
    .unwrap();
    let v = json(&build(&app, &tmp.path().join("out"), &[]));
    let lock = fs::read_to_string(tmp.path().join("app/app.lock")).unwrap();
    assert!(
        lock.contains("reference = \"docker.io/team/base:7\""),
        "{lock}"
    );
    assert!(
        lock.contains(&format!("manifest-digest = \"{base}\"")),
        "{lock}"
    );
    let manifest = read_json(blob(
        &tmp.path().join("out"),
        v["manifest"].as_str().unwrap(),
    ));
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.base.name"],
        "docker.io/team/base:7"
    );
}

/// Build a busybox image for `platform` into `layout` under `tag`; returns its manifest
/// descriptor JSON from the layout's index.
fn platform_image(dir: &Path, layout: &Path, platform: &str, tag: &str) -> Value {
    fs::create_dir_all(dir).unwrap();
    let recipe = dir.join(format!("{tag}.toml"));
    fs::write(
        &recipe,
        format!(
            "[image]\nname = \"localhost/multi\"\ntag = \"{tag}\"\nplatform = \"{platform}\"\n\
             [[layer]]\nname = \"busybox\"\nsrc = \"/bin/busybox\"\ndest = \"/bin/busybox\"\n\
             [config]\nenv = {{ PLATFORM = \"{platform}\" }}\n"
        ),
    )
    .unwrap();
    common::assert_success(
        &common::run(
            common::ocibuild()
                .arg("build")
                .arg(&recipe)
                .arg("-o")
                .arg(layout),
        ),
        "build",
    );
    let index = read_json(layout.join("index.json"));
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag)
        .unwrap()
        .clone()
}

#[test]
fn a_two_platform_base_resolves_to_the_recipe_platform() {
    if !ready() {
        return;
    }
    let tmp = common::tempdir();
    let reg = start_registry(None);
    let addr = reg.addr.clone();
    let layout = tmp.path().join("multi-layout");
    let amd = platform_image(&tmp.path().join("m"), &layout, "linux/amd64", "amd");
    let arm = platform_image(&tmp.path().join("m"), &layout, "linux/arm64", "arm");
    let app = app_project(&tmp.path().join("app"), &addr, "test/multi:1");
    let push = |src: String, dest: String| {
        let out = common::run(app.ocibuild().args(["push", "--json", &src, &dest]));
        common::assert_success(&out, "push");
    };
    push(
        format!("{}:amd", layout.display()),
        format!("{addr}/test/multi:amd"),
    );
    push(
        format!("{}:arm", layout.display()),
        format!("{addr}/test/multi:arm"),
    );
    // The index, pushed with ocibuild's own client (skopeo cannot compose one).
    let strip = |m: &Value| serde_json::json!({"mediaType": m["mediaType"], "digest": m["digest"], "size": m["size"], "platform": m["platform"]});
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [strip(&amd), strip(&arm),
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": amd["digest"], "size": amd["size"],
             "platform": {"architecture": "unknown", "os": "unknown"}}],
    });
    let bytes = serde_json::to_vec(&index).unwrap();
    let mut config = ocibuild::registry::ClientConfig {
        auth_env: ocibuild::registry::auth::AuthEnv::empty().with("REGISTRY_AUTH_FILE", &app.auth),
        ..Default::default()
    };
    config.registries.insert(
        addr.clone(),
        ocibuild::registry::RegistrySettings {
            insecure_http: true,
            ..Default::default()
        },
    );
    let client = ocibuild::registry::Client::new(config);
    let target: ocibuild::registry::Reference = format!("{addr}/test/multi:1").parse().unwrap();
    let index_digest = client
        .push_manifest(
            &target,
            "1",
            &bytes,
            "application/vnd.oci.image.index.v1+json",
        )
        .unwrap();

    for (platform, want) in [("linux/arm64", &arm), ("linux/amd64", &amd)] {
        let text = fs::read_to_string(&app.recipe).unwrap();
        let text = match text.find("platform = ") {
            Some(_) => text
                .lines()
                .map(|l| {
                    if l.starts_with("platform = ") {
                        format!("platform = \"{platform}\"")
                    } else {
                        l.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n"),
            None => text.replacen(
                "tag = \"a\"",
                &format!("tag = \"a\"\nplatform = \"{platform}\""),
                1,
            ),
        };
        fs::write(&app.recipe, text).unwrap();
        let out = tmp
            .path()
            .join(format!("out-{}", platform.replace('/', "-")));
        let v = json(&build(&app, &out, &[]));
        let manifest = read_json(blob(&out, v["manifest"].as_str().unwrap()));
        assert_eq!(
            manifest["annotations"]["org.opencontainers.image.base.digest"], want["digest"],
            "{platform}"
        );
        let lock = fs::read_to_string(tmp.path().join("app/app.lock")).unwrap();
        assert!(
            lock.contains(&format!("index-digest = \"{index_digest}\"")),
            "{lock}"
        );
        // arm64 is normalized to arm64/v8, as docker does.
        assert!(lock.contains(&format!("platform = \"{platform}")), "{lock}");
        let config = read_json(blob(&out, v["config"].as_str().unwrap()));
        assert_eq!(config["architecture"], platform.rsplit('/').next().unwrap());
    }

    // A platform the index lacks: a clear error naming it.
    let text = fs::read_to_string(&app.recipe)
        .unwrap()
        .replace("platform = \"linux/amd64\"", "platform = \"linux/s390x\"");
    fs::write(&app.recipe, text).unwrap();
    let out = build(&app, &tmp.path().join("out-s390x"), &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("s390x") && err.contains("test/multi"), "{err}");
}

#[test]
fn tls_registry_with_the_test_ca_in_the_registries_file() {
    if !ready() {
        return;
    }
    let tmp = common::tempdir();
    let (ca_pem, cert_pem, key_pem) = common::registry::make_ca_and_server_cert();
    let (ca, cert, key) = (
        tmp.path().join("ca.pem"),
        tmp.path().join("server.crt"),
        tmp.path().join("server.key"),
    );
    fs::write(&ca, ca_pem).unwrap();
    fs::write(&cert, cert_pem).unwrap();
    fs::write(&key, key_pem).unwrap();
    let reg = start_registry(Some((&cert, &key)));
    let addr = reg.addr.clone();
    // skopeo pushes the base without verifying; ocibuild verifies against the test CA.
    let base = push_base(&tmp.path().join("base"), &addr, "tls/base:1", "tls");
    let app = app_project(&tmp.path().join("app"), &addr, "tls/base:1");

    // Without the CA: a certificate error that says what to do, nothing built.
    fs::write(&app.registries, "").unwrap();
    let out = build(&app, &tmp.path().join("out-noca"), &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&addr) && err.to_lowercase().contains("ca"),
        "{err}"
    );

    fs::write(
        &app.registries,
        format!(
            "[[registry]]\nname = \"{addr}\"\nca-file = \"{}\"\n",
            ca.display()
        ),
    )
    .unwrap();
    let v = json(&build(
        &app,
        &tmp.path().join("out"),
        &["--push", &format!("{addr}/tls/app:1")],
    ));
    let manifest = read_json(blob(
        &tmp.path().join("out"),
        v["manifest"].as_str().unwrap(),
    ));
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.base.digest"],
        base.as_str()
    );
    assert_eq!(v["push"]["digest"], v["manifest"]);
    let remote = common::skopeo_json([
        "inspect",
        "--tls-verify=false",
        "--creds",
        &format!("{USER}:{PASS}"),
        &format!("docker://{addr}/tls/app:1"),
    ]);
    assert_eq!(remote["Digest"], v["manifest"]);
}

/// `build --push-only` to the base's own registry: a shallow base. The base's layers are
/// mounted, never downloaded (the cache never holds them), and the pushed image is the one a
/// full build makes.
#[test]
fn push_only_to_the_base_registry_never_downloads_base_layers() {
    if !ready() {
        return;
    }
    let tmp = common::tempdir();
    let reg = start_registry(None);
    let addr = reg.addr.clone();
    push_base(&tmp.path().join("base"), &addr, "test/base:1", "shallow");
    let app = app_project(&tmp.path().join("app"), &addr, "test/base:1");
    let full = json(&build(&app, &tmp.path().join("full"), &[]));

    let cache = tmp.path().join("shallow-cache");
    let out = common::run(
        app.ocibuild()
            .env("OCIBUILD_CACHE", &cache)
            .args(["build", "--json", "--push-only", "--push"])
            .arg(format!("{addr}/test/shallow:1"))
            .arg(&app.recipe),
    );
    let v = json(&out);
    assert_eq!(
        v["manifest"], full["manifest"],
        "the same image as a full build"
    );
    assert_eq!(v["output"], Value::Null);
    assert_eq!(v["push"]["digest"], v["manifest"]);
    let base_layer = v["layers"][0]["digest"].as_str().unwrap();
    assert_eq!(v["push"]["blobs"][0]["digest"], base_layer);
    assert_eq!(v["push"]["blobs"][0]["result"], "mounted", "{v:#}");
    assert!(
        blob(&common::test_dir("cache"), base_layer).exists(),
        "the full build's cache holds the base layer (the check below means something)"
    );
    assert!(
        !blob(&cache, base_layer).exists(),
        "the base layer was downloaded into the cache"
    );
    let remote = common::skopeo_json([
        "inspect",
        "--tls-verify=false",
        "--creds",
        &format!("{USER}:{PASS}"),
        &format!("docker://{addr}/test/shallow:1"),
    ]);
    assert_eq!(remote["Digest"], v["manifest"]);
    // --push-only writes nothing locally, so it excludes an output and the test stage.
    let out = common::run(
        app.ocibuild()
            .args(["build", "--push-only", "-o", "x"])
            .arg(&app.recipe),
    );
    assert!(!out.status.success());
}

/// A base with accounts (as nvidia/cuda and ubuntu have): a declared user joins the base's
/// /etc/passwd and /etc/group (whose lines stay as they are) in complete new files, with no
/// baseline; a name or id the base has is refused, naming the recipe line.
#[test]
fn declared_accounts_join_the_base_accounts() {
    if !ready() {
        return;
    }
    let tmp = common::tempdir();
    let reg = start_registry(None);
    let addr = reg.addr.clone();
    let dir = tmp.path().join("base");
    fs::create_dir_all(dir.join("etc")).unwrap();
    let passwd = "root:x:0:0:root:/root:/bin/sh\nubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/sh\n";
    fs::write(dir.join("etc/passwd"), passwd).unwrap();
    fs::write(dir.join("etc/group"), "root:x:0:\nubuntu:x:1000:\n").unwrap();
    let recipe = dir.join("base.toml");
    fs::write(
        &recipe,
        "[image]\nname = \"localhost/base\"\ntag = \"b\"\n[[layer]]\nname = \"busybox\"\nsrc = \"/bin/busybox\"\ndest = \"/bin/busybox\"\n[[layer]]\nname = \"etc\"\nsrc = \"etc\"\ndest = \"/etc\"\n",
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
    common::registry::push_layout(&layout, "b", &addr, "test/accounts:1");
    let app = app_project(&tmp.path().join("app"), &addr, "test/accounts:1");
    let text = fs::read_to_string(&app.recipe).unwrap().replace(
        "[config]\n",
        "[[accounts.user]]\nname = \"app\"\nuid = 1001\n\n[config]\nuser = \"app\"\n",
    );
    fs::write(&app.recipe, &text).unwrap();
    let out = tmp.path().join("out");
    let v = json(&build(&app, &out, &[]));
    assert_eq!(v["rootfs"]["baseline"], false);
    assert_eq!(v["rootfs"]["accounts"]["origin"], "base");
    let l = v["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "rootfs")
        .expect("a rootfs layer");
    let rootfs = blob(&out, l["digest"].as_str().unwrap());
    assert_eq!(
        common::tar_listing(&rootfs),
        [
            "d 0755 0:0 etc/",
            "f 0644 0:0 etc/group",
            "f 0644 0:0 etc/passwd",
            "f 0640 0:0 etc/shadow",
            "d 0755 0:0 home/",
            "d 0700 1001:1001 home/app/",
        ]
    );
    let file = |p: &str| {
        let o = common::run_ok(
            std::process::Command::new("tar")
                .arg("-xOzf")
                .arg(&rootfs)
                .arg(p),
        );
        String::from_utf8(o.stdout).unwrap()
    };
    // This base has account files but no /bin/sh: a user declared without a shell gets
    // /usr/sbin/nologin (the base's files are read, as on scratch).
    assert_eq!(
        file("etc/passwd"),
        format!("{passwd}app:x:1001:1001::/home/app:/usr/sbin/nologin\n")
    );
    assert_eq!(
        file("etc/group"),
        "root:x:0:\nubuntu:x:1000:\napp:x:1001:\n"
    );
    if common::require_tool("podman") {
        let o = common::podman_run(&out, "a", &["/bin/busybox", "id"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            common::stdout(&o).contains("uid=1001(app) gid=1001(app)"),
            "{}",
            common::stdout(&o)
        );
    }
    // The base's id 1000 is taken (first by the user's own group): refused, and the lock the
    // base had to be resolved for is not left behind.
    fs::write(&app.recipe, text.replace("uid = 1001", "uid = 1000")).unwrap();
    let lock = tmp.path().join("app/app.lock");
    fs::remove_file(&lock).unwrap();
    let o = build(&app, &tmp.path().join("out2"), &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success()
            && err.contains("app.toml:")
            && err.contains("group `app` (1000) collides with `ubuntu` (1000) of the base image"),
        "{err}"
    );
    assert!(!tmp.path().join("out2").exists());
    assert!(!lock.exists(), "the lock was written for a refused recipe");
}
