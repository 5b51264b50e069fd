//! The commands that talk to a registry, run the same way against two implementations: Debian's
//! `docker-registry` (CNCF Distribution 2.8, with a login) and ferro-oci-server (an OCI
//! Distribution 1.1 server in Rust, no login, with the referrers API Distribution lacks). Each
//! run: a base pushed, an app built on it (the base pulled), pushed with `--attach`,
//! `--sign-key` and `--cache-repo` (the base's layers and ours mounted, or on ferro, which keeps
//! blobs by content for all repositories, found there; only the config uploaded),
//! its signature and three attestations verified by `verify-signature`, found through the
//! referrers tag fallback on both and through the referrers API on ferro; then a second machine
//! with an empty store takes the app's layer from the cache repository and downloads nothing.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Command;

use fs_err as fs;
use serde_json::Value;

use crate::common::registry::{auth_file, start_ferro, start_registry, Registry, PASS};
use crate::common::{ocibuild, run, run_ok, stdout, tempdir};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Distribution,
    Ferro,
}

struct Setup {
    reg: Registry,
    /// The login file (Distribution's); ferro has no authentication.
    auth: Option<PathBuf>,
    dir: tempfile::TempDir,
}

impl Setup {
    fn start(kind: Kind) -> Setup {
        let dir = tempdir();
        let (reg, auth) = match kind {
            Kind::Distribution => {
                let reg = start_registry(None);
                let auth = auth_file(dir.path(), &reg.addr, PASS);
                (reg, Some(auth))
            }
            Kind::Ferro => (start_ferro(), None),
        };
        Setup { reg, auth, dir }
    }

    /// `ocibuild` with the store `store` (a directory of the test), the login if any, and
    /// nothing of the host's registries file or credentials.
    fn machine(&self, store: &str) -> Command {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", self.dir.path().join(store))
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", self.dir.path().join("no-config"))
            .env("HOME", self.dir.path().join("home"));
        match &self.auth {
            Some(a) => c.env("REGISTRY_AUTH_FILE", a),
            None => c.env("REGISTRY_AUTH_FILE", self.dir.path().join("no-auth.json")),
        };
        c
    }

    fn image(&self, repo: &str) -> String {
        format!("{}/{repo}", self.reg.addr)
    }
}

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            stdout(o),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// A base (an /etc/passwd and 1 MiB of data) pushed to `image` from its own store.
fn push_base(s: &Setup, image: &str) {
    let b = s.dir.path().join("base");
    fs::create_dir_all(b.join("root/etc")).unwrap();
    fs::create_dir_all(b.join("root/opt")).unwrap();
    fs::write(b.join("root/etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
    crate::common::write_pseudo_random(&b.join("root/opt/blob"), 11, 1 << 20);
    fs::write(
        b.join("base.toml"),
        "[image]\nname = \"example.com/base\"\nplatform = \"linux/amd64\"\n\n\
         [[layer]]\nname = \"root\"\nsrc = \"root\"\ndest = \"/\"\n",
    )
    .unwrap();
    run_ok(
        s.machine("base-store")
            .args(["build", "-q", "--push-only", "--push", image])
            .arg(b.join("base.toml")),
    );
}

/// The app recipe: one layer on `base`.
fn app_recipe(s: &Setup, base: &str) -> PathBuf {
    let p = s.dir.path().join("app");
    fs::create_dir_all(p.join("src")).unwrap();
    fs::write(p.join("src/hello.txt"), "hello from two registries\n").unwrap();
    let r = p.join("app.toml");
    fs::write(
        &r,
        format!(
            "[image]\nname = \"example.com/app\"\nplatform = \"linux/amd64\"\n\n\
             [base]\nimage = \"{base}\"\n\n\
             [[layer]]\nname = \"app\"\nsrc = \"src\"\ndest = \"/app\"\n"
        ),
    )
    .unwrap();
    r
}

/// A plain HTTP/1.0 GET of `path` on `addr` (HTTP/1.0: the body is not chunked): the status and
/// the body.
fn http_get(addr: &str, path: &str, accept: &str) -> (u16, Vec<u8>) {
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    write!(
        c,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: {accept}\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    c.read_to_end(&mut raw).unwrap();
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, raw[end + 4..].to_vec())
}

/// The artifact types of the manifests an image index lists.
fn artifact_types(index: &Value) -> Vec<String> {
    let mut v: Vec<String> = index["manifests"]
        .as_array()
        .unwrap_or_else(|| panic!("not an index: {index:#}"))
        .iter()
        .filter_map(|m| m["artifactType"].as_str().map(String::from))
        .collect();
    v.sort();
    v
}

/// What `--attach --sign-key` refers to the image: the SPDX and CycloneDX SBOMs, the SLSA
/// provenance (in-toto), and the three signed attestations (DSSE envelopes), by artifact type.
fn documents() -> Vec<String> {
    let mut v: Vec<String> = [
        "application/spdx+json",
        "application/vnd.cyclonedx+json",
        "application/vnd.in-toto+json",
        "application/vnd.dsse.envelope.v1+json",
        "application/vnd.dsse.envelope.v1+json",
        "application/vnd.dsse.envelope.v1+json",
    ]
    .map(String::from)
    .to_vec();
    v.sort();
    v
}

fn scenario(kind: Kind) {
    let s = Setup::start(kind);
    let (key, public) = crate::signing::keypair(s.dir.path(), "release");
    let base = s.image("two/base:1");
    push_base(&s, &base);
    let r = app_recipe(&s, &base);
    let cache_repo = s.image("two/cache");
    let app1 = s.image("two/app:1");

    // Machine A: the base pulled, the app built, attached, signed, recorded in the cache
    // repository and pushed.
    let layout = s.dir.path().join("a.oci");
    let o = run_ok(
        s.machine("store-a")
            .args(["build", "--json", "--attach", "--sign-key"])
            .arg(&key)
            .args(["--cache-repo", &cache_repo, "--push", &app1, "-o"])
            .arg(&layout)
            .arg(&r),
    );
    let a = json_of(&o);
    let blobs = a["push"]["blobs"].as_array().unwrap();
    let (config, layers) = blobs.split_last().unwrap();
    assert_eq!(layers.len(), 2, "{kind:?}: {:#}", a["push"]);
    // Distribution mounts the base's layer from its repository and ours from the cache
    // repository; ferro keeps blobs by content for every repository, so its HEAD finds them
    // already there (nothing is uploaded either way).
    let reused = match kind {
        Kind::Distribution => "mounted",
        Kind::Ferro => "existed",
    };
    assert!(
        layers.iter().all(|b| b["result"] == reused),
        "{kind:?}: the base's layer and ours: {:#}",
        a["push"]
    );
    assert_eq!(config["result"], "uploaded", "{kind:?}: {:#}", a["push"]);
    assert_eq!(a["cacheRepo"]["layersWritten"], 1, "{kind:?}: {a:#}");
    let manifest = a["manifest"].as_str().unwrap().to_string();

    // The signature and the three attestations, verified.
    let o = run(s
        .machine("store-v")
        .args(["verify-signature", &app1, "--key"])
        .arg(&public));
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "{kind:?}: {out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for item in [
        "signature",
        "SPDX SBOM",
        "CycloneDX SBOM",
        "SLSA provenance",
    ] {
        assert!(
            crate::signing::row(&out, item, "-", "verified").is_some(),
            "{kind:?}: {item}: {out}"
        );
    }

    // Found through the referrers tag fallback on both; through the referrers API on ferro
    // (the registry indexed our manifests' `subject`).
    let hex = manifest.trim_start_matches("sha256:");
    let index_type = "application/vnd.oci.image.index.v1+json";
    let (status, body) = http_get(
        &s.reg.addr,
        &format!("/v2/two/app/manifests/sha256-{hex}"),
        index_type,
    );
    if kind == Kind::Ferro {
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let fallback: Value = serde_json::from_slice(&body).unwrap();
        let (status, body) = http_get(
            &s.reg.addr,
            &format!("/v2/two/app/referrers/{manifest}"),
            index_type,
        );
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let api: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            artifact_types(&api),
            documents(),
            "the SBOMs, the provenance and their signed attestations by the referrers API: {api:#}"
        );
        assert_eq!(artifact_types(&fallback), documents(), "{fallback:#}");
    } else {
        // Distribution wants the login even to read: the fallback is checked through skopeo.
        let o = run_ok(
            Command::new("skopeo")
                .args(["inspect", "--raw", "--tls-verify=false", "--authfile"])
                .arg(s.auth.as_ref().unwrap())
                .arg(format!("docker://{}/two/app:sha256-{hex}", s.reg.addr)),
        );
        let fallback: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(artifact_types(&fallback), documents(), "{fallback:#}");
        assert_eq!(status, 401, "Distribution asks for the login");
    }

    // Machine B: an empty store; the app's layer comes from the cache repository, nothing is
    // downloaded, and the push finds every blob already there.
    let o = run_ok(
        s.machine("store-b")
            .args(["build", "--json", "--cache-repo", &cache_repo])
            .args(["--push-only", "--push", &s.image("two/app:2")])
            .arg(&r),
    );
    let b = json_of(&o);
    assert_eq!(b["manifest"], manifest, "{kind:?}: the same image");
    assert_eq!(b["cacheRepo"]["downloadedBytes"], 0, "{kind:?}: {b:#}");
    let uploaded: Vec<&Value> = b["push"]["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["result"] == "uploaded")
        .collect();
    assert!(uploaded.is_empty(), "{kind:?}: {:#}", b["push"]);
}

fn tools(kind: Kind) -> bool {
    let registry = match kind {
        Kind::Distribution => "docker-registry",
        Kind::Ferro => "ferro-oci-server",
    };
    crate::common::require_tools_all(&[registry, "openssl", "skopeo"])
}

#[test]
fn distribution_build_attach_sign_cache_and_pull() {
    if tools(Kind::Distribution) {
        scenario(Kind::Distribution);
    }
}

#[test]
fn ferro_build_attach_sign_cache_and_pull() {
    if tools(Kind::Ferro) {
        scenario(Kind::Ferro);
    }
}
