//! The registry client against an in-process fake registry that misbehaves on purpose:
//! Bearer challenges with scope escalation, redirects to another host, cut streams, wrong
//! digests, 429 with Retry-After, 202 answering a mount, 416 on a chunk, and bad input.
//! Everything listens on 127.0.0.1 with ephemeral ports.

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use ocibuild::digest::Digest;
use ocibuild::image::{Platform, MEDIA_TYPE_INDEX, MEDIA_TYPE_MANIFEST};
use ocibuild::progress::{Reporter, Silent};
use ocibuild::registry::auth::AuthEnv;
use ocibuild::registry::client::BlobPush;
use ocibuild::registry::{Client, ClientConfig, Reference, RegistryError, RegistrySettings};
use ocibuild::store::Store;

use crate::common::fake_registry::*;
// ---------------------------------------------------------------------------------------------
// Helpers

/// Pushes blob `d` (`len` bytes) to `team/app`, asking to mount it from `other/base`; it
/// must succeed.
fn push_mounting(fake: &Fake, store: &Store, d: &Digest, len: usize) -> BlobPush {
    fake.client()
        .push_blob(
            &fake.reference("team/app"),
            d,
            len as u64,
            store,
            Some(&fake.reference("other/base")),
            &Silent,
        )
        .unwrap()
}

fn new_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    (dir, store)
}

fn tmp_is_empty(store: &Store) -> bool {
    fs_err::read_dir(store.root().join("tmp")).unwrap().count() == 0
}

fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| {
            (i as u32)
                .wrapping_mul(2654435761)
                .wrapping_add(u32::from(seed)) as u8
        })
        .collect()
}

/// A manifest for a config blob of `config_size` bytes and some layers.
/// A manifest for a `{}` config blob and no layers.
fn image_manifest(config: Digest, layers: &[(Digest, usize)]) -> Vec<u8> {
    image_manifest_sized(config, 2, layers)
}

fn image_manifest_sized(config: Digest, config_size: usize, layers: &[(Digest, usize)]) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MEDIA_TYPE_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": config_size},
        "layers": layers.iter().map(|(d, n)| serde_json::json!({
            "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": d, "size": n
        })).collect::<Vec<_>>(),
    }))
    .unwrap()
}

#[derive(Default)]
struct Recorder {
    retries: Mutex<Vec<String>>,
    bytes: AtomicU64,
}

impl Reporter for Recorder {
    fn blob_progress(&self, _d: &Digest, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }
    fn retrying(&self, what: &str, attempt: u32, _delay: Duration, reason: &str) {
        self.retries
            .lock()
            .unwrap()
            .push(format!("{what} #{attempt}: {reason}"));
    }
}

fn auth_file(dir: &std::path::Path, registry: &str, user: &str, pass: &str) -> AuthEnv {
    let f = dir.join("auth.json");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    fs_err::write(
        &f,
        serde_json::to_vec(&serde_json::json!({"auths": {registry: {"auth": auth}}})).unwrap(),
    )
    .unwrap();
    AuthEnv::empty().with("REGISTRY_AUTH_FILE", f)
}

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn bearer_anonymous_then_scope_escalation_on_push() {
    let fake = Fake::start(Knobs {
        bearer: true,
        ..Knobs::default()
    });
    let config = fake.put_blob(b"{}");
    let m = image_manifest(config, &[]);
    let md = fake.put_manifest("team/app", "v1", &m, MEDIA_TYPE_MANIFEST);
    let client = fake.client();
    let got = client.get_manifest(&fake.reference("team/app:v1")).unwrap();
    assert_eq!(got.bytes, m);
    assert_eq!(got.digest, md);
    assert_eq!(got.media_type, MEDIA_TYPE_MANIFEST);

    // Push a blob to the same repository: the pull token is not enough; the client asks for
    // pull,push on that repository.
    let (_d, store) = new_store();
    let blob = data(1000, 1);
    let bd = store.put_bytes(&blob).unwrap();
    let target = fake.reference("team/app:v1");
    let how = client
        .push_blob(&target, &bd, blob.len() as u64, &store, None, &Silent)
        .unwrap();
    assert_eq!(how, BlobPush::Uploaded);
    // Pushing again: HEAD says it is there.
    let how = client
        .push_blob(&target, &bd, blob.len() as u64, &store, None, &Silent)
        .unwrap();
    assert_eq!(how, BlobPush::Existed);

    let s = fake.state.lock().unwrap();
    let asked: Vec<Vec<String>> = s.token_requests.iter().map(|(sc, _)| sc.clone()).collect();
    assert_eq!(
        asked,
        vec![
            vec!["repository:team/app:pull".to_string()],
            vec!["repository:team/app:pull,push".to_string()],
        ],
        "one token for pull, one merged pull,push token; then cached"
    );
    // Anonymous: no credentials were sent to the token endpoint.
    assert!(s.token_requests.iter().all(|(_, a)| a.is_none()));
    assert_eq!(s.blobs.get(&bd.to_string()).unwrap(), &blob);
}

#[test]
fn insufficient_scope_is_answered_with_a_new_token() {
    let fake = Fake::start(Knobs {
        bearer: true,
        downgrade_push_once: AtomicBool::new(true),
        ..Knobs::default()
    });
    let (_d, store) = new_store();
    let blob = data(1000, 9);
    let bd = store.put_bytes(&blob).unwrap();
    let how = fake
        .client()
        .push_blob(
            &fake.reference("app"),
            &bd,
            blob.len() as u64,
            &store,
            None,
            &Silent,
        )
        .unwrap();
    assert_eq!(how, BlobPush::Uploaded);
    let s = fake.state.lock().unwrap();
    let asked: Vec<String> = s
        .token_requests
        .iter()
        .map(|(sc, _)| sc.join(" "))
        .collect();
    // HEAD: challenged, token for pull,push (granted pull only); POST: insufficient_scope, a new
    // token for pull,push.
    assert_eq!(
        asked,
        vec!["repository:app:pull,push", "repository:app:pull,push"],
        "{:?}",
        s.log
    );
    assert_eq!(s.blobs[&bd.to_string()], blob);
}

#[test]
fn bearer_with_credentials_expiry_and_auth_failure() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::start(Knobs {
        bearer: true,
        token_creds: Some(("alice".into(), "s3cret-pw".into())),
        token_expires_in: 1,
        ..Knobs::default()
    });
    let m = image_manifest(fake.put_blob(b"{}"), &[]);
    fake.put_manifest("app", "v1", &m, MEDIA_TYPE_MANIFEST);
    let r = fake.reference("app:v1");

    let env = auth_file(dir.path(), &fake.addr, "alice", "s3cret-pw");
    let client = fake.client_with(env, |_| {});
    client.get_manifest(&r).unwrap();
    client.get_manifest(&r).unwrap();
    assert_eq!(
        fake.state.lock().unwrap().token_requests.len(),
        1,
        "token cached"
    );
    // expires_in 1: renewed after half its lifetime.
    std::thread::sleep(Duration::from_millis(700));
    client.get_manifest(&r).unwrap();
    {
        let s = fake.state.lock().unwrap();
        assert_eq!(s.token_requests.len(), 2, "expired token renewed");
        assert!(s
            .token_requests
            .iter()
            .all(|(_, a)| a.as_deref().is_some_and(|a| a.starts_with("Basic "))));
    }

    // Wrong password: a clear error naming registry, repository and what to do; no secret.
    let env = auth_file(dir.path(), &fake.addr, "alice", "wrong-pw");
    let client = fake.client_with(env, |_| {});
    let e = client.get_manifest(&r).unwrap_err();
    assert!(matches!(e, RegistryError::Auth { .. }), "{e:?}");
    // The message with its causes, as the CLI prints it.
    let msg = ocibuild::diag::chain(&e);
    assert!(
        msg.contains(&format!("{}/app", fake.addr))
            && msg.contains("401")
            && msg.contains("incorrect username or password")
            && msg.contains("log in again"),
        "{msg}"
    );
    assert!(!msg.contains("wrong-pw") && !format!("{e:?}").contains("wrong-pw"));

    // No credentials at all: the hint says how to log in.
    let e = fake.client().get_manifest(&r).unwrap_err().to_string();
    assert!(
        e.contains(&format!("podman login {}", fake.addr)) && e.contains("REGISTRY_AUTH_FILE"),
        "{e}"
    );
}

#[test]
fn redirected_blob_get_carries_no_authorization() {
    let fake = Fake::start(Knobs {
        bearer: true,
        redirect_blobs: true,
        ..Knobs::default()
    });
    let blob = data(200_000, 2);
    let d = fake.put_blob(&blob);
    let (_dir, store) = new_store();
    fake.client()
        .pull_blob(
            &fake.reference("app"),
            &d,
            Some(blob.len() as u64),
            &store,
            &Silent,
        )
        .unwrap();
    assert_eq!(store.read_blob(&d).unwrap(), blob);
    let s = fake.state.lock().unwrap();
    assert_eq!(
        s.redirect_auth,
        vec![None],
        "the other host saw no Authorization"
    );
    // The registry itself did get a token.
    assert_eq!(s.token_requests.len(), 1);
}

#[test]
fn cut_stream_is_resumed_with_range() {
    let fake = Fake::start(Knobs {
        cut_blob_gets: AtomicUsize::new(2),
        ..Knobs::default()
    });
    let blob = data(3 << 20, 3);
    let d = fake.put_blob(&blob);
    let (_dir, store) = new_store();
    let rec = Recorder::default();
    fake.client()
        .pull_blob(
            &fake.reference("app"),
            &d,
            Some(blob.len() as u64),
            &store,
            &rec,
        )
        .unwrap();
    assert_eq!(store.read_blob(&d).unwrap(), blob);
    assert!(tmp_is_empty(&store));
    let gets: Vec<String> = fake
        .log()
        .into_iter()
        .filter(|l| l.starts_with("GET"))
        .collect();
    assert_eq!(gets.len(), 3, "{gets:?}");
    let retries = rec.retries.lock().unwrap();
    assert_eq!(retries.len(), 2, "{retries:?}");
    assert!(retries[0].contains("stream cut after"), "{retries:?}");
    // Resumed, not restarted: the bytes reported add up to the blob once.
    assert_eq!(rec.bytes.load(Ordering::Relaxed), blob.len() as u64);
}

#[test]
fn cut_stream_restarts_when_range_is_ignored() {
    let fake = Fake::start(Knobs {
        cut_blob_gets: AtomicUsize::new(1),
        ignore_range: true,
        ..Knobs::default()
    });
    let blob = data(1 << 20, 4);
    let d = fake.put_blob(&blob);
    let (_dir, store) = new_store();
    fake.client()
        .pull_blob(
            &fake.reference("app"),
            &d,
            Some(blob.len() as u64),
            &store,
            &Silent,
        )
        .unwrap();
    assert_eq!(store.read_blob(&d).unwrap(), blob);
    assert!(tmp_is_empty(&store));
}

#[test]
fn wrong_digest_is_an_error_and_nothing_is_kept() {
    let fake = Fake::start(Knobs {
        corrupt_blobs: true,
        ..Knobs::default()
    });
    let blob = data(50_000, 5);
    let d = fake.put_blob(&blob);
    let (_dir, store) = new_store();
    let e = fake
        .client()
        .pull_blob(
            &fake.reference("team/app"),
            &d,
            Some(blob.len() as u64),
            &store,
            &Silent,
        )
        .unwrap_err();
    assert!(matches!(e, RegistryError::DigestMismatch { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("{}/team/app", fake.addr))
            && msg.contains(&d.to_string())
            && msg.contains("nothing was kept"),
        "{msg}"
    );
    assert!(!store.has_blob(&d));
    assert!(tmp_is_empty(&store));
    assert_eq!(
        fs_err::read_dir(store.root().join("blobs/sha256"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn rate_limit_honours_retry_after() {
    let fake = Fake::start(Knobs {
        rate_limit_manifest_gets: AtomicUsize::new(1),
        ..Knobs::default()
    });
    let m = image_manifest(fake.put_blob(b"{}"), &[]);
    fake.put_manifest("app", "v1", &m, MEDIA_TYPE_MANIFEST);
    let rec = Recorder::default();
    let t = Instant::now();
    let got = fake
        .client()
        .get_manifest_with(&fake.reference("app:v1"), &rec)
        .unwrap();
    assert!(
        t.elapsed() >= Duration::from_secs(1),
        "waited for Retry-After"
    );
    assert_eq!(got.bytes, m);
    let retries = rec.retries.lock().unwrap();
    assert_eq!(retries.len(), 1);
    assert!(retries[0].contains("429"), "{retries:?}");
}

#[test]
fn mount_answered_with_202_falls_back_to_upload() {
    let fake = Fake::start(Knobs::default());
    let (_dir, store) = new_store();
    let blob = data(10_000, 6);
    let d = store.put_bytes(&blob).unwrap();
    let how = push_mounting(&fake, &store, &d, blob.len());
    assert_eq!(how, BlobPush::Uploaded);
    let log = fake.log();
    assert!(
        log.iter().any(|l| l.starts_with("POST")
            && l.contains("mount=")
            && l.contains("from=other%2Fbase")),
        "{log:?}"
    );
    // One upload session only: the one the 202 opened.
    assert_eq!(
        log.iter().filter(|l| l.starts_with("POST")).count(),
        1,
        "{log:?}"
    );
    assert_eq!(fake.state.lock().unwrap().blobs[&d.to_string()], blob);

    // A registry that mounts: 201, nothing uploaded.
    let fake = Fake::start(Knobs {
        mount_creates: true,
        ..Knobs::default()
    });
    fake.put_blob_in("other/base", &blob);
    let how = push_mounting(&fake, &store, &d, blob.len());
    assert_eq!(how, BlobPush::Mounted);
    assert!(!fake
        .log()
        .iter()
        .any(|l| l.starts_with("PUT") || l.starts_with("PATCH")));
}

#[test]
fn chunked_fallback_recovers_from_416() {
    let fake = Fake::start(Knobs {
        refuse_monolithic: true,
        fail_second_patch_416: AtomicBool::new(true),
        ..Knobs::default()
    });
    let (_dir, store) = new_store();
    let blob = data(100_000, 7);
    let d = store.put_bytes(&blob).unwrap();
    let client = fake.client_with(AuthEnv::empty(), |c| c.chunk_size = 30_000);
    let rec = Recorder::default();
    let how = client
        .push_blob(
            &fake.reference("app"),
            &d,
            blob.len() as u64,
            &store,
            None,
            &rec,
        )
        .unwrap();
    assert_eq!(how, BlobPush::UploadedChunked);
    assert_eq!(fake.state.lock().unwrap().blobs[&d.to_string()], blob);
    let log = fake.log();
    // PATCH 0, PATCH 1 (416), GET status, PATCH 1 again, PATCH 2, PATCH 3, PUT.
    assert_eq!(
        log.iter().filter(|l| l.starts_with("PATCH")).count(),
        5,
        "{log:?}"
    );
    assert_eq!(
        log.iter()
            .filter(|l| l.starts_with("GET") && l.contains("uploads"))
            .count(),
        1,
        "{log:?}"
    );
    assert!(rec.retries.lock().unwrap()[0].contains("416"));
}

#[test]
fn push_manifest_and_pull_back_an_index() {
    let fake = Fake::start(Knobs {
        bearer: true,
        ..Knobs::default()
    });
    let client = fake.client();
    let (_dir, store) = new_store();
    let target = fake.reference("multi:v1");
    let mut descs = vec![];
    for (arch, seed) in [("amd64", 10u8), ("arm64", 11)] {
        let layer = data(5000, seed);
        let ld = store.put_bytes(&layer).unwrap();
        let cfg = format!(r#"{{"architecture":"{arch}","os":"linux"}}"#);
        let cd = store.put_bytes(cfg.as_bytes()).unwrap();
        for (d, n) in [(ld, layer.len()), (cd, cfg.len())] {
            client
                .push_blob(&target, &d, n as u64, &store, None, &Silent)
                .unwrap();
        }
        let m = image_manifest_sized(cd, cfg.len(), &[(ld, layer.len())]);
        let md = client
            .push_manifest(
                &target,
                &Digest::of(&m).to_string(),
                &m,
                MEDIA_TYPE_MANIFEST,
            )
            .unwrap();
        descs.push(
            serde_json::json!({"mediaType": MEDIA_TYPE_MANIFEST, "digest": md, "size": m.len(),
            "platform": {"os": "linux", "architecture": arch}}),
        );
    }
    descs.push(serde_json::json!({"mediaType": MEDIA_TYPE_MANIFEST, "digest": Digest::of(b"att"), "size": 3,
        "platform": {"os": "unknown", "architecture": "unknown"}}));
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": MEDIA_TYPE_INDEX, "manifests": descs}))
    .unwrap();
    let idx_digest = client
        .push_manifest(&target, "v1", &index, MEDIA_TYPE_INDEX)
        .unwrap();

    let arm = Platform {
        os: "linux".into(),
        architecture: "arm64".into(),
        variant: None,
    };
    let (m, idx) = client.get_image_manifest(&target, &arm, &Silent).unwrap();
    let idx = idx.unwrap();
    assert_eq!(idx.digest, idx_digest);
    assert!(idx.is_index());
    let parsed: ocibuild::image::Manifest = serde_json::from_slice(&m.bytes).unwrap();
    let (_d2, store2) = new_store();
    let mut blobs = parsed.layers.clone();
    blobs.push(parsed.config.clone());
    client
        .pull_blobs(&target, &blobs, &store2, &Silent)
        .unwrap();
    assert_eq!(
        store2.read_blob(&parsed.layers[0].digest).unwrap(),
        data(5000, 11)
    );

    // By digest: verified.
    let pinned = target.with_digest(idx_digest);
    assert_eq!(client.get_manifest(&pinned).unwrap().bytes, index);

    // No manifest for the platform: names the choices, not the attestation.
    let e = client
        .get_image_manifest(
            &target,
            &Platform {
                os: "linux".into(),
                architecture: "s390x".into(),
                variant: None,
            },
            &Silent,
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("linux/s390x")
            && e.contains("linux/amd64, linux/arm64")
            && !e.contains("unknown/unknown"),
        "{e}"
    );
}

#[test]
fn bad_input_gives_clear_errors() {
    let fake = Fake::start(Knobs::default());
    let client = fake.client();
    // Unknown tag.
    let e = client
        .get_manifest(&fake.reference("team/app:nope"))
        .unwrap_err();
    assert!(matches!(e, RegistryError::ManifestUnknown { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("{}/team/app", fake.addr))
            && msg.contains("`nope`")
            && msg.contains("MANIFEST_UNKNOWN")
            && msg.contains("skopeo list-tags"),
        "{msg}"
    );
    // A registry serving different bytes than the digest asked for.
    let m = image_manifest(fake.put_blob(b"{}"), &[]);
    fake.put_manifest("app", "v1", &m, MEDIA_TYPE_MANIFEST);
    let other = Digest::of(b"something else");
    fake.state.lock().unwrap().manifests.insert(
        ("app".into(), other.to_string()),
        (m.clone(), MEDIA_TYPE_MANIFEST.into()),
    );
    let e = client
        .get_manifest(&fake.reference("app").with_digest(other))
        .unwrap_err();
    assert!(matches!(e, RegistryError::DigestMismatch { .. }), "{e}");
    // Unknown blob.
    let (_dir, store) = new_store();
    let e = client
        .pull_blob(&fake.reference("app"), &other, None, &store, &Silent)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("not found") && e.contains(&other.to_string()),
        "{e}"
    );
    // Malformed reference.
    let e = Reference::parse(&format!("{}/Team/App:v1", fake.addr))
        .unwrap_err()
        .to_string();
    assert!(e.contains("lowercase"), "{e}");

    // Oversized manifest.
    let fake = Fake::start(Knobs {
        huge_manifest: true,
        ..Knobs::default()
    });
    let e = fake
        .client()
        .get_manifest(&fake.reference("app:big"))
        .unwrap_err();
    assert!(matches!(e, RegistryError::ManifestTooLarge { .. }), "{e}");
    assert!(e.to_string().contains("4194304"), "{e}");
}

#[test]
fn nothing_listening_is_a_bounded_clear_error() {
    // A port that was free a moment ago.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let reg = format!("127.0.0.1:{port}");
    let mut cfg = ClientConfig {
        auth_env: AuthEnv::empty(),
        backoff: Duration::from_millis(5),
        max_attempts: 3,
        ..ClientConfig::default()
    };
    cfg.registries.insert(
        reg.clone(),
        RegistrySettings {
            insecure_http: true,
            ..Default::default()
        },
    );
    let e = Client::new(cfg)
        .get_manifest(&Reference::parse(&format!("{reg}/a:b")).unwrap())
        .unwrap_err()
        .to_string();
    // Refused: not tried again (nothing listens there), and the way to build offline said.
    assert!(
        e.contains(&reg) && e.contains("after 1 attempt") && e.contains("--offline --vendor DIR"),
        "{e}"
    );
}

#[test]
fn a_loopback_registry_without_tls_is_spoken_to_in_http() {
    // A plain-HTTP fake on 127.0.0.1 without `insecure-http`: HTTPS is tried, then plain HTTP,
    // as go-containerregistry does for loopback registries.
    let fake = Fake::start(Knobs::default());
    let mut cfg = ClientConfig {
        auth_env: AuthEnv::empty(),
        backoff: Duration::from_millis(5),
        max_attempts: 2,
        // The fake waits for a request line the TLS handshake never sends.
        timeout: Duration::from_secs(2),
        ..ClientConfig::default()
    };
    cfg.registries.clear();
    let e = Client::new(cfg)
        .get_manifest(&fake.reference("a:b"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("manifest `b` not found"), "{e}");
    assert!(!fake.log().is_empty(), "the requests reached the registry");
}

/// A shallow base's layer (not in the store) that the registry will not mount (202): fetched
/// from the repository it was to be mounted from, verified, then uploaded.
#[test]
fn unmounted_blob_missing_locally_is_fetched_from_the_mount_source() {
    let fake = Fake::start(Knobs::default());
    let (_dir, store) = new_store();
    let blob = data(20_000, 7);
    fake.put_blob_in("other/base", &blob);
    let d = ocibuild::digest::Digest::of(&blob);
    assert!(!store.has_blob(&d));
    let how = push_mounting(&fake, &store, &d, blob.len());
    assert_eq!(how, BlobPush::Uploaded);
    assert!(store.has_blob(&d), "fetched into the store, verified");
    let log = fake.log();
    assert!(
        log.iter()
            .any(|l| l.starts_with("GET") && l.contains(&format!("/v2/other/base/blobs/{d}"))),
        "{log:?}"
    );
    assert_eq!(fake.state.lock().unwrap().blobs[&d.to_string()], blob);
}
