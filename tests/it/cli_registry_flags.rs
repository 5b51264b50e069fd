//! skopeo's conventions on the command line, against a real registry (Distribution's
//! `docker-registry` on 127.0.0.1, htpasswd auth): `--creds`, `--authfile` over
//! `$REGISTRY_AUTH_FILE`, `--cert-dir`; bad values refused with one line and exit status 2
//! before anything is sent; `push` from an oci-archive and a docker-archive.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fs_err as fs;

use crate::build_output::app;
use crate::common::registry::{auth_file, start_registry, Registry, PASS, USER};
use crate::common::{self, ocibuild, run, run_ok, run_timeout, stdout, tempdir};
use ocibuild::registry::auth::AuthEnv;
use ocibuild::registry::{Client, ClientConfig, Reference};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A one-layer image built with no network, written as `out` (any `-o` form).
fn build(dir: &Path, out: &str) {
    let src = dir.join("p");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("hello.txt"), "hello\n").unwrap();
    let r = src.join("app.toml");
    fs::write(
        &r,
        "[image]\nname = \"example.com/flags\"\n\n[[layer]]\nname = \"app\"\nsrc = \".\"\ndest = \"/app\"\n",
    )
    .unwrap();
    run_ok(
        ocibuild()
            .current_dir(dir)
            .args(["build", "-q", "-o", out])
            .arg(&r),
    );
}

/// A client of the test's own (right login), to read back what was pushed.
fn reader(dir: &Path, reg: &Registry) -> Client {
    let f = dir.join("reader");
    fs::create_dir_all(&f).unwrap();
    Client::new(ClientConfig {
        auth_env: AuthEnv::empty().with("REGISTRY_AUTH_FILE", auth_file(&f, &reg.addr, PASS)),
        backoff: Duration::from_millis(20),
        ..ClientConfig::default()
    })
}

fn manifest(c: &Client, reg: &Registry, repo_tag: &str) -> Option<serde_json::Value> {
    let r = Reference::parse(&format!("{}/{repo_tag}", reg.addr)).unwrap();
    c.get_manifest(&r)
        .ok()
        .map(|m| serde_json::from_slice(&m.bytes).unwrap())
}

/// An auth file with the wrong password: what `$REGISTRY_AUTH_FILE` names in these tests, so
/// that no login of the user's is found and a flag must win over it to log in.
fn wrong_auth(dir: &Path, reg: &Registry) -> PathBuf {
    let d = dir.join("wrong");
    fs::create_dir_all(&d).unwrap();
    auth_file(&d, &reg.addr, "not-the-password")
}

/// `ocibuild` with `$REGISTRY_AUTH_FILE` set to `env_auth` and HOME empty.
fn cmd(dir: &Path, env_auth: &Path) -> std::process::Command {
    let mut c = ocibuild();
    c.current_dir(dir)
        .env("HOME", dir)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("DOCKER_CONFIG")
        .env("REGISTRY_AUTH_FILE", env_auth);
    c
}

#[test]
fn creds_and_authfile_log_in_over_registry_auth_file() {
    if !common::require_tool("docker-registry") {
        return;
    }
    let t = tempdir();
    let reg = start_registry(None);
    build(t.path(), "app.oci");
    let wrong = wrong_auth(t.path(), &reg);
    let dest = |repo: &str| format!("docker://{}/flags/{repo}:1", reg.addr);

    // `$REGISTRY_AUTH_FILE` alone (wrong password): refused.
    let o = run(cmd(t.path(), &wrong)
        .args(["push", "app.oci"])
        .arg(dest("env")));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));

    // --creds wins over it, and is never printed.
    let creds = format!("{USER}:{PASS}");
    run_ok(
        cmd(t.path(), &wrong)
            .args(["--creds", &creds, "push", "oci:app.oci:latest"])
            .arg(dest("creds")),
    );
    let c = reader(t.path(), &reg);
    assert!(manifest(&c, &reg, "flags/creds:1").is_some());
    // A wrong --creds: refused, the password unsaid, the source named.
    let o = run(cmd(t.path(), &wrong)
        .args([
            "push",
            "app.oci",
            "--creds",
            &format!("{USER}:hunter2-wrong"),
        ])
        .arg(dest("badcreds")));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("from --creds"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");

    // --authfile wins over $REGISTRY_AUTH_FILE, both ways.
    let good = {
        let d = t.path().join("good");
        fs::create_dir_all(&d).unwrap();
        auth_file(&d, &reg.addr, PASS)
    };
    run_ok(
        cmd(t.path(), &wrong)
            .arg("--authfile")
            .arg(&good)
            .args(["push", "app.oci"])
            .arg(dest("authfile")),
    );
    assert!(manifest(&c, &reg, "flags/authfile:1").is_some());
    let o = run(cmd(t.path(), &good)
        .arg("--authfile")
        .arg(&wrong)
        .args(["push", "app.oci"])
        .arg(dest("authfile2")));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(manifest(&c, &reg, "flags/authfile2:1").is_none());
}

#[test]
fn bad_registry_flags_and_transports_exit_2_with_one_line_and_push_nothing() {
    if !common::require_tool("docker-registry") {
        return;
    }
    let t = tempdir();
    let reg = start_registry(None);
    build(t.path(), "app.oci");
    let wrong = wrong_auth(t.path(), &reg);
    let fifo = t.path().join("auth.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let dir = t.path().display().to_string();
    let missing = t.path().join("missing.json").display().to_string();
    let fifo_s = fifo.display().to_string();
    let good = format!("{USER}:{PASS}");
    let dest = format!("docker://{}/flags/bad:1", reg.addr);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["push", "foo:bar"], "unknown image transport `foo:`"),
        (
            vec!["push", "containers-storage:x"],
            "unknown image transport `containers-storage:`",
        ),
        (
            vec!["--creds", ":s3cret-pw", "push", "app.oci"],
            "--creds: no user name before the `:`; give --creds USER:PASSWORD",
        ),
        (
            vec!["--creds", USER, "push", "app.oci"],
            "--creds: no `:PASSWORD` after the user name; give --creds USER:PASSWORD",
        ),
        (
            vec!["push", "--creds", "ocibuild:", "app.oci"],
            "--creds: the password is empty; give --creds USER:PASSWORD",
        ),
        (
            vec!["--authfile", &dir, "--creds", &good, "push", "app.oci"],
            "is a directory, not a regular file",
        ),
        (
            vec!["--authfile", &fifo_s, "push", "app.oci"],
            "is a FIFO, not a regular file",
        ),
        (
            vec!["--authfile", &missing, "push", "app.oci"],
            "--authfile: failed to read",
        ),
        (
            vec!["--cert-dir", &missing, "--creds", &good, "push", "app.oci"],
            "no such directory",
        ),
    ];
    for (args, want) in cases {
        let o = run_timeout(
            cmd(t.path(), &wrong).args(&args).arg(&dest),
            Duration::from_secs(60),
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert!(!err.contains("s3cret") && !err.contains(PASS), "{err}");
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
    assert!(manifest(&reader(t.path(), &reg), &reg, "flags/bad:1").is_none());
}

#[test]
fn push_from_oci_archive_and_docker_archive() {
    if !common::require_tool("docker-registry") {
        return;
    }
    let t = tempdir();
    let reg = start_registry(None);
    build(t.path(), "app.oci");
    build(t.path(), "oci-archive:app.tar");
    build(t.path(), "docker-archive:docker.tar");
    let wrong = wrong_auth(t.path(), &reg);
    let creds = format!("{USER}:{PASS}");
    let c = reader(t.path(), &reg);
    let push = |src: &str, repo: &str| {
        let o = run_ok(
            cmd(t.path(), &wrong)
                .args(["--creds", &creds, "push", "--json", src])
                .arg(format!("docker://{}/flags/{repo}:1", reg.addr)),
        );
        serde_json::from_str::<serde_json::Value>(&stdout(&o)).unwrap()
    };
    let from_layout = push("app.oci", "layout");
    let from_oci = push("oci-archive:app.tar", "ociarchive");
    // The same image, digests unchanged.
    assert_eq!(from_layout["digest"], from_oci["digest"], "{from_oci}");
    assert!(from_layout["digest"].as_str().is_some(), "{from_layout}");

    push("docker-archive:docker.tar", "dockerarchive");
    let layout = manifest(&c, &reg, "flags/layout:1").unwrap();
    let docker = manifest(&c, &reg, "flags/dockerarchive:1").unwrap();
    assert_eq!(
        docker["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    // The config as it was; each layer as the archive stores it (uncompressed: its diff_id).
    assert_eq!(docker["config"]["digest"], layout["config"]["digest"]);
    let config: serde_json::Value = {
        let r = Reference::parse(&format!("{}/flags/dockerarchive:1", reg.addr)).unwrap();
        let store_dir = t.path().join("pulled");
        let store = ocibuild::store::Store::open(&store_dir).unwrap();
        let d: ocibuild::digest::Digest = docker["config"]["digest"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        c.pull_blob(&r, &d, None, &store, &ocibuild::progress::Silent)
            .unwrap();
        serde_json::from_slice(&store.read_blob(&d).unwrap()).unwrap()
    };
    let layers = docker["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar"
    );
    assert_eq!(layers[0]["digest"], config["rootfs"]["diff_ids"][0]);
}

/// `--cert-dir`: a containers-certs.d directory with the CA of a TLS registry makes it trusted
/// (without it the push fails on the certificate).
#[test]
fn cert_dir_trusts_a_registry_ca() {
    if !common::require_tool("docker-registry") {
        return;
    }
    let t = tempdir();
    let (ca_pem, cert_pem, key_pem) = common::registry::make_ca_and_server_cert();
    let cert = t.path().join("server.crt");
    let key = t.path().join("server.key");
    fs::write(&cert, cert_pem).unwrap();
    fs::write(&key, key_pem).unwrap();
    let reg = crate::common::registry::start_registry(Some((&cert, &key)));
    build(t.path(), "app.oci");
    let wrong = wrong_auth(t.path(), &reg);
    let certs_d = t.path().join("certs.d");
    fs::create_dir(&certs_d).unwrap();
    fs::write(certs_d.join("ca.crt"), ca_pem).unwrap();
    let creds = format!("{USER}:{PASS}");
    let dest = format!("docker://{}/flags/tls:1", reg.addr);
    let o = run(cmd(t.path(), &wrong)
        .args(["--creds", &creds, "push", "app.oci"])
        .arg(&dest));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    run_ok(
        cmd(t.path(), &wrong)
            .args(["--creds", &creds, "push", "app.oci", "--cert-dir"])
            .arg(&certs_d)
            .arg(&dest),
    );
}

/// Item 5: A registry on 127.0.0.1 that speaks plain HTTP is reached without a registries file, as
/// crane and skopeo reach it; `--tls-verify=false` is accepted as skopeo spells it.
#[test]
fn a_loopback_registry_speaks_http_without_settings() {
    use crate::common::registry::{auth_file, start_registry, PASS};
    if !crate::common::require_tool("docker-registry") || !crate::common::require_tool("skopeo") {
        return;
    }
    let t = tempdir();
    let r = app(&t.path().join("p"));
    let layout = t.path().join("img");
    run_ok(ocibuild().args(["build", "-o"]).arg(&layout).arg(&r));
    let reg = start_registry(None);
    crate::common::registry::push_layout(&layout, "latest", &reg.addr, "ux/app:1");
    let auth = auth_file(t.path(), &reg.addr, PASS);
    for extra in [&[][..], &["--tls-verify=false"]] {
        let o = run(ocibuild()
            .env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"))
            .args(extra)
            .arg("diff")
            .arg(format!("docker://{}/ux/app:1", reg.addr))
            .arg(format!("oci:{}", layout.display())));
        assert!(
            o.status.success(),
            "{extra:?}: {}{}",
            stdout(&o),
            stderr(&o)
        );
    }

    // Item 10: push takes `docker://` too, and refuses a digest that is not the image's.
    let push = |dest: String| {
        run(ocibuild()
            .env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"))
            .arg("push")
            .arg(&layout)
            .arg(dest))
    };
    let o = push(format!("docker://{}/ux/app:2", reg.addr));
    assert!(o.status.success(), "{}", stderr(&o));
    let other = format!("sha256:{}", "0".repeat(64));
    let o = push(format!("{}/ux/app@{other}", reg.addr));
    let err = stderr(&o);
    assert!(!o.status.success(), "pushed to another digest");
    assert!(
        err.contains(&format!(
            "names digest {other}, but the image pushed is sha256:"
        )) && err.contains("push to a tag, or to the digest of this image"),
        "{err}"
    );
}
