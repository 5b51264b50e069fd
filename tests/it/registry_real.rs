//! The registry client against real registries: Debian's `docker-registry` (CNCF Distribution
//! 2.8), started here on 127.0.0.1 with an ephemeral port and htpasswd Basic auth; once over
//! plain HTTP (explicitly allowed) and once behind TLS with a CA this test makes; and the same
//! push and pull against ferro-oci-server, a second implementation. skopeo, an independent
//! client, reads back what was pushed.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use ocibuild::digest::Digest;
use ocibuild::image::{Platform, MEDIA_TYPE_INDEX, MEDIA_TYPE_MANIFEST};
use ocibuild::progress::Silent;
use ocibuild::registry::auth::AuthEnv;
use ocibuild::registry::client::BlobPush;
use ocibuild::registry::{Client, ClientConfig, Reference, RegistryError, RegistrySettings};
use ocibuild::store::Store;

use common::registry::{start_registry, Registry, PASS, USER};

fn auth_env(dir: &Path, registry: &str, pass: &str) -> AuthEnv {
    AuthEnv::empty().with(
        "REGISTRY_AUTH_FILE",
        common::registry::auth_file(dir, registry, pass),
    )
}

fn client(reg: &Registry, env: AuthEnv, settings: RegistrySettings) -> Client {
    let mut cfg = ClientConfig {
        auth_env: env,
        backoff: Duration::from_millis(20),
        ..ClientConfig::default()
    };
    cfg.registries.insert(reg.addr.clone(), settings);
    Client::new(cfg)
}

fn data(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

struct Pushed {
    index: Vec<u8>,
    index_digest: Digest,
    manifests: Vec<(String, Vec<u8>, Digest)>,
    blobs: Vec<(Digest, Vec<u8>)>,
}

/// Which implementation a test runs against.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Peer {
    /// Distribution, with the test's login: wrong or missing credentials are checked too.
    Distribution,
    /// ferro-oci-server: no login; blobs are kept by content for every repository.
    Ferro,
}

/// Push a two-platform image (plus `one`, the amd64 manifest alone) and read it all back.
fn push_and_pull(reg: &Registry, settings: RegistrySettings, peer: Peer) -> Pushed {
    let login = peer == Peer::Distribution;
    let work = common::tempdir();
    let env = if login {
        auth_env(work.path(), &reg.addr, PASS)
    } else {
        AuthEnv::empty()
    };
    let client = client(reg, env.clone(), settings.clone());
    let store = Store::open(work.path().join("store")).unwrap();
    let repo = Reference::parse(&format!("{}/ocibuild/test:multi", reg.addr)).unwrap();

    let mut descs = vec![];
    let mut manifests = vec![];
    let mut blobs = vec![];
    for (i, arch) in ["amd64", "arm64"].into_iter().enumerate() {
        let layer = data((3 << 20) + i * 1000, i as u32 + 1);
        let cfg = format!(
            r#"{{"architecture":"{arch}","os":"linux","rootfs":{{"type":"layers","diff_ids":[]}}}}"#
        );
        let ld = store.put_bytes(&layer).unwrap();
        let cd = store.put_bytes(cfg.as_bytes()).unwrap();
        for (d, bytes) in [(ld, layer.clone()), (cd, cfg.clone().into_bytes())] {
            let how = client
                .push_blob(&repo, &d, bytes.len() as u64, &store, None, &Silent)
                .unwrap();
            assert_eq!(how, BlobPush::Uploaded);
            blobs.push((d, bytes));
        }
        let m = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MEDIA_TYPE_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cfg.len()},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": ld, "size": layer.len()}],
        }))
        .unwrap();
        let md = client
            .push_manifest(&repo, &Digest::of(&m).to_string(), &m, MEDIA_TYPE_MANIFEST)
            .unwrap();
        assert_eq!(md, Digest::of(&m));
        descs.push(
            serde_json::json!({"mediaType": MEDIA_TYPE_MANIFEST, "digest": md, "size": m.len(),
            "platform": {"os": "linux", "architecture": arch}}),
        );
        manifests.push((arch.to_string(), m, md));
    }
    // The same blob again: HEAD finds it.
    let (d0, b0) = &blobs[0];
    assert_eq!(
        client
            .push_blob(&repo, d0, b0.len() as u64, &store, None, &Silent)
            .unwrap(),
        BlobPush::Existed
    );
    // Cross-repository mount into another repository (a registry that keeps blobs by content
    // for all repositories, as ferro does, has it there already: HEAD says so first).
    let other = Reference::parse(&format!("{}/ocibuild/other:x", reg.addr)).unwrap();
    let how = client
        .push_blob(&other, d0, b0.len() as u64, &store, Some(&repo), &Silent)
        .unwrap();
    if peer == Peer::Distribution {
        assert_eq!(how, BlobPush::Mounted);
    } else {
        assert!(
            matches!(how, BlobPush::Mounted | BlobPush::Existed),
            "{how:?}"
        );
    }
    // A chunked upload (PATCH) to the real registry.
    let chunky = {
        let mut cfg = ClientConfig {
            auth_env: env.clone(),
            monolithic_limit: 0,
            chunk_size: 1 << 20,
            ..ClientConfig::default()
        };
        cfg.registries.insert(reg.addr.clone(), settings.clone());
        Client::new(cfg)
    };
    let big = data((2 << 20) + 123, 99);
    let bd = store.put_bytes(&big).unwrap();
    assert_eq!(
        chunky
            .push_blob(&other, &bd, big.len() as u64, &store, None, &Silent)
            .unwrap(),
        BlobPush::UploadedChunked
    );
    blobs.push((bd, big));

    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": MEDIA_TYPE_INDEX, "manifests": descs}))
    .unwrap();
    let index_digest = client
        .push_manifest(&repo, "multi", &index, MEDIA_TYPE_INDEX)
        .unwrap();
    let one = repo.with_tag("one").unwrap();
    client
        .push_manifest(&one, "one", &manifests[0].1, MEDIA_TYPE_MANIFEST)
        .unwrap();

    // Read everything back with a fresh client and an empty store.
    let reader = self::client(reg, env, settings.clone());
    let got = reader.get_manifest(&repo).unwrap();
    assert_eq!(got.bytes, index);
    assert_eq!(got.digest, index_digest);
    assert_eq!(got.media_type, MEDIA_TYPE_INDEX);
    let pulled = Store::open(work.path().join("pulled")).unwrap();
    for (arch, m, md) in &manifests {
        let p = Platform {
            os: "linux".into(),
            architecture: arch.clone(),
            variant: None,
        };
        let (im, idx) = reader.get_image_manifest(&repo, &p, &Silent).unwrap();
        assert_eq!(&im.bytes, m);
        assert_eq!(im.digest, *md);
        assert_eq!(idx.unwrap().digest, index_digest);
        let parsed: ocibuild::image::Manifest = serde_json::from_slice(&im.bytes).unwrap();
        let mut want = parsed.layers.clone();
        want.push(parsed.config.clone());
        reader.pull_blobs(&repo, &want, &pulled, &Silent).unwrap();
    }
    reader
        .pull_blob(
            &other,
            &blobs[4].0,
            Some(blobs[4].1.len() as u64),
            &pulled,
            &Silent,
        )
        .unwrap();
    for (d, bytes) in &blobs {
        assert_eq!(&pulled.read_blob(d).unwrap(), bytes, "blob {d}");
    }
    let pinned = repo.with_digest(manifests[1].2);
    assert_eq!(reader.get_manifest(&pinned).unwrap().bytes, manifests[1].1);

    // Clear errors: unknown tag, wrong password, no credentials.
    let e = reader
        .get_manifest(&repo.with_tag("nope").unwrap())
        .unwrap_err();
    assert!(matches!(e, RegistryError::ManifestUnknown { .. }), "{e}");
    if !login {
        return Pushed {
            index,
            index_digest,
            manifests,
            blobs,
        };
    }
    let bad = common::tempdir();
    let wrong = self::client(
        reg,
        auth_env(bad.path(), &reg.addr, "wrong"),
        settings.clone(),
    );
    let e = wrong.get_manifest(&repo).unwrap_err();
    assert!(
        matches!(e, RegistryError::Unauthorized { status: 401, .. }),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains(&reg.addr) && msg.contains("ocibuild/test") && msg.contains("log in again"),
        "{msg}"
    );
    let anon = self::client(reg, AuthEnv::empty(), settings);
    let msg = anon.get_manifest(&repo).unwrap_err().to_string();
    assert!(msg.contains(&format!("podman login {}", reg.addr)), "{msg}");

    Pushed {
        index,
        index_digest,
        manifests,
        blobs,
    }
}

/// skopeo, an independent client, sees what was pushed.
fn skopeo_agrees(reg: &Registry, pushed: &Pushed, peer: Peer) {
    if !common::require_tool("skopeo") {
        return;
    }
    let creds = format!("{USER}:{PASS}");
    let base = format!("docker://{}/ocibuild/test", reg.addr);
    let inspect = |args: &[&str]| {
        let mut c = Command::new("skopeo");
        c.args(["inspect", "--tls-verify=false"]);
        if peer == Peer::Distribution {
            c.args(["--creds", &creds]);
        }
        common::run_ok(c.args(args)).stdout
    };
    let raw = inspect(&["--raw", &format!("{base}:multi")]);
    assert_eq!(raw, pushed.index);
    assert_eq!(Digest::of(&raw), pushed.index_digest);
    let one: serde_json::Value =
        serde_json::from_slice(&inspect(&[&format!("{base}:one")])).unwrap();
    assert_eq!(one["Digest"], pushed.manifests[0].2.to_string());
    let layer = pushed.blobs[0].0.to_string();
    assert_eq!(one["Layers"][0], layer);
}

#[test]
fn real_registry_plain_http_with_basic_auth() {
    if !common::require_tool("docker-registry") {
        return;
    }
    let reg = start_registry(None);
    let pushed = push_and_pull(
        &reg,
        RegistrySettings {
            insecure_http: true,
            ..Default::default()
        },
        Peer::Distribution,
    );
    skopeo_agrees(&reg, &pushed, Peer::Distribution);
}

#[test]
fn real_registry_behind_tls_with_own_ca() {
    if !common::require_tool("docker-registry") {
        return;
    }
    let dir = common::tempdir();
    let (ca_pem, cert_pem, key_pem) = common::registry::make_ca_and_server_cert();
    let ca = dir.path().join("ca.pem");
    let cert = dir.path().join("server.crt");
    let key = dir.path().join("server.key");
    fs_err::write(&ca, ca_pem).unwrap();
    fs_err::write(&cert, cert_pem).unwrap();
    fs_err::write(&key, key_pem).unwrap();
    let reg = start_registry(Some((&cert, &key)));

    // Without the CA: a certificate error that says what to do.
    let work = common::tempdir();
    let env = auth_env(work.path(), &reg.addr, PASS);
    let r = Reference::parse(&format!("{}/ocibuild/test:multi", reg.addr)).unwrap();
    let mut cfg = ClientConfig {
        auth_env: env,
        backoff: Duration::from_millis(5),
        max_attempts: 2,
        ..ClientConfig::default()
    };
    cfg.registries.clear();
    let e = Client::new(cfg).get_manifest(&r).unwrap_err().to_string();
    assert!(e.contains(&reg.addr) && e.contains("CA file"), "{e}");

    // With the CA file, and with a certs.d-style directory.
    let pushed = push_and_pull(
        &reg,
        RegistrySettings {
            ca_file: Some(ca.clone()),
            ..Default::default()
        },
        Peer::Distribution,
    );
    let certs_d = dir.path().join("certs.d");
    fs_err::create_dir(&certs_d).unwrap();
    fs_err::copy(&ca, certs_d.join("ca.crt")).unwrap();
    let via_dir = client(
        &reg,
        auth_env(work.path(), &reg.addr, PASS),
        RegistrySettings {
            cert_dir: Some(certs_d),
            ..Default::default()
        },
    );
    assert_eq!(via_dir.get_manifest(&r).unwrap().bytes, pushed.index);
    skopeo_agrees(&reg, &pushed, Peer::Distribution);
}

/// A registry that requires client certificates (mutual TLS): refused without one; with a
/// containers-certs.d directory holding `ca.crt`, `client.cert` and `client.key`, a full push
/// and pull works.
#[test]
fn real_registry_with_client_certificates_from_a_cert_dir() {
    if !common::require_tool("docker-registry") {
        return;
    }
    let dir = common::tempdir();
    let (ca_pem, cert_pem, key_pem, client_cert, client_key) =
        common::registry::make_ca_server_and_client_certs();
    let ca = dir.path().join("ca.pem");
    let cert = dir.path().join("server.crt");
    let key = dir.path().join("server.key");
    fs_err::write(&ca, &ca_pem).unwrap();
    fs_err::write(&cert, cert_pem).unwrap();
    fs_err::write(&key, key_pem).unwrap();
    let reg = common::registry::start_registry_with(Some((&cert, &key)), Some(&ca));

    // The CA alone: the server asks for a client certificate and gets none.
    let work = common::tempdir();
    let r = Reference::parse(&format!("{}/ocibuild/mtls:none", reg.addr)).unwrap();
    let mut cfg = ClientConfig {
        auth_env: auth_env(work.path(), &reg.addr, PASS),
        backoff: Duration::from_millis(5),
        max_attempts: 2,
        ..ClientConfig::default()
    };
    cfg.registries.insert(
        reg.addr.clone(),
        RegistrySettings {
            ca_file: Some(ca.clone()),
            ..Default::default()
        },
    );
    let e = Client::new(cfg).get_manifest(&r).unwrap_err().to_string();
    assert!(e.contains(&reg.addr), "{e}");
    assert!(!e.contains("not found"), "the TLS handshake must fail: {e}");

    let certs_d = dir.path().join("certs.d");
    fs_err::create_dir(&certs_d).unwrap();
    fs_err::write(certs_d.join("ca.crt"), &ca_pem).unwrap();
    fs_err::write(certs_d.join("client.cert"), client_cert).unwrap();
    fs_err::write(certs_d.join("client.key"), client_key).unwrap();
    let pushed = push_and_pull(
        &reg,
        RegistrySettings {
            cert_dir: Some(certs_d),
            ..Default::default()
        },
        Peer::Distribution,
    );
    assert!(!pushed.blobs.is_empty());
}

/// The same push and pull against a second implementation, ferro-oci-server: an index and its
/// manifests, a blob found by HEAD, a cross-repository mount, a chunked upload, everything read
/// back by digest with a fresh client, an unknown tag told apart; skopeo agrees.
#[test]
fn second_registry_push_pull_mount_and_chunked_upload() {
    if !common::require_tool("ferro-oci-server") {
        return;
    }
    let reg = common::registry::start_ferro();
    let pushed = push_and_pull(
        &reg,
        RegistrySettings {
            insecure_http: true,
            ..Default::default()
        },
        Peer::Ferro,
    );
    skopeo_agrees(&reg, &pushed, Peer::Ferro);
}
