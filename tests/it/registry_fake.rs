//! The registry client against an in-process fake registry that misbehaves on purpose:
//! Bearer challenges with scope escalation, redirects to another host, cut streams, wrong
//! digests, 429 with Retry-After, 202 answering a mount, 416 on a chunk, and bad input.
//! Everything listens on 127.0.0.1 with ephemeral ports.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use ocibuild::digest::Digest;
use ocibuild::image::{Platform, MEDIA_TYPE_INDEX, MEDIA_TYPE_MANIFEST};
use ocibuild::progress::{Reporter, Silent};
use ocibuild::registry::auth::AuthEnv;
use ocibuild::registry::client::BlobPush;
use ocibuild::registry::{Client, ClientConfig, Reference, RegistryError, RegistrySettings};
use ocibuild::store::Store;

// ---------------------------------------------------------------------------------------------
// A tiny HTTP/1.1 server: one request per connection (`Connection: close`).

#[derive(Clone, Debug)]
struct HttpReq {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl HttpReq {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
    fn query_all(&self, key: &str) -> Vec<String> {
        let Some((_, q)) = self.target.split_once('?') else {
            return vec![];
        };
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| percent_decode(v))
            .collect()
    }
    fn query(&self, key: &str) -> Option<String> {
        self.query_all(key).into_iter().next()
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let h = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(h, 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

struct HttpResp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Send the full Content-Length but only this many body bytes, then close.
    cut_after: Option<usize>,
}

impl HttpResp {
    fn new(status: u16) -> Self {
        HttpResp {
            status,
            headers: vec![],
            body: vec![],
            cut_after: None,
        }
    }
    fn header(mut self, k: &str, v: impl Into<String>) -> Self {
        self.headers.push((k.to_string(), v.into()));
        self
    }
    fn body(mut self, b: impl Into<Vec<u8>>) -> Self {
        self.body = b.into();
        self
    }
    fn json(self, v: serde_json::Value) -> Self {
        self.header("Content-Type", "application/json")
            .body(serde_json::to_vec(&v).unwrap())
    }
    fn error(status: u16, code: &str, message: &str) -> Self {
        HttpResp::new(status)
            .json(serde_json::json!({"errors": [{"code": code, "message": message}]}))
    }
}

type Handler = Arc<dyn Fn(&HttpReq) -> HttpResp + Send + Sync>;

/// Serve `handler` on 127.0.0.1:0; returns `127.0.0.1:PORT`. The server lives as long as the
/// test process.
fn serve(handler: Handler) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let handler = handler.clone();
            std::thread::spawn(move || {
                let _ = handle_conn(conn, &*handler);
            });
        }
    });
    addr
}

fn handle_conn(conn: TcpStream, handler: &dyn Fn(&HttpReq) -> HttpResp) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let req = HttpReq {
        method,
        target,
        headers,
        body,
    };
    let resp = handler(&req);
    let mut out = conn;
    let mut head = format!("HTTP/1.1 {} X\r\n", resp.status);
    for (k, v) in &resp.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        resp.body.len()
    ));
    out.write_all(head.as_bytes())?;
    if req.method != "HEAD" {
        let n = resp.cut_after.unwrap_or(resp.body.len());
        out.write_all(&resp.body[..n])?;
    }
    out.flush()?;
    if resp.cut_after.is_some() {
        // Let the client read what was sent, then reset.
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The fake registry

#[derive(Default)]
struct State {
    blobs: HashMap<String, Vec<u8>>,
    /// (repository, digest) pairs HEAD answers for; repository `*` is every repository.
    blob_repos: std::collections::HashSet<(String, String)>,
    manifests: HashMap<(String, String), (Vec<u8>, String)>,
    uploads: HashMap<String, Vec<u8>>,
    tokens: HashMap<String, String>,
    /// (scopes asked for, Authorization sent) per token request.
    token_requests: Vec<(Vec<String>, Option<String>)>,
    /// `METHOD target` of every registry request.
    log: Vec<String>,
    /// Authorization headers the redirect target saw.
    redirect_auth: Vec<Option<String>>,
    next_id: u64,
}

#[derive(Default)]
struct Knobs {
    bearer: bool,
    /// Token endpoint requires these Basic credentials.
    token_creds: Option<(String, String)>,
    token_expires_in: u64,
    redirect_blobs: bool,
    cut_blob_gets: AtomicUsize,
    ignore_range: bool,
    corrupt_blobs: bool,
    rate_limit_manifest_gets: AtomicUsize,
    mount_creates: bool,
    refuse_monolithic: bool,
    fail_second_patch_416: AtomicBool,
    huge_manifest: bool,
    /// The first token asked for with push is granted pull only (as a registry does for an
    /// account without push rights): the registry then answers insufficient_scope.
    downgrade_push_once: AtomicBool,
}

struct Fake {
    addr: String,
    redirect_addr: String,
    state: Arc<Mutex<State>>,
}

impl Fake {
    fn start(knobs: Knobs) -> Fake {
        let state = Arc::new(Mutex::new(State::default()));
        let knobs = Arc::new(knobs);
        // The second host, where blob GETs are redirected: it must never see Authorization.
        let st = state.clone();
        let redirect_addr = serve(Arc::new(move |req: &HttpReq| {
            let mut s = st.lock().unwrap();
            s.redirect_auth
                .push(req.header("authorization").map(String::from));
            let digest = req.path().trim_start_matches("/storage/");
            match s.blobs.get(digest) {
                Some(b) => HttpResp::new(200).body(b.clone()),
                None => HttpResp::new(404),
            }
        }));
        let addr_cell: Arc<Mutex<String>> = Arc::default();
        let st = state.clone();
        let ac = addr_cell.clone();
        let ra = redirect_addr.clone();
        let addr = serve(Arc::new(move |req: &HttpReq| {
            let base = ac.lock().unwrap().clone();
            handle(&st, &knobs, &base, &ra, req)
        }));
        *addr_cell.lock().unwrap() = addr.clone();
        Fake {
            addr,
            redirect_addr,
            state,
        }
    }

    fn put_blob(&self, data: &[u8]) -> Digest {
        self.put_blob_in("*", data)
    }

    fn put_blob_in(&self, repo: &str, data: &[u8]) -> Digest {
        let d = Digest::of(data);
        let mut s = self.state.lock().unwrap();
        s.blobs.insert(d.to_string(), data.to_vec());
        s.blob_repos.insert((repo.to_string(), d.to_string()));
        d
    }

    fn put_manifest(&self, repo: &str, tag: &str, bytes: &[u8], media_type: &str) -> Digest {
        let d = Digest::of(bytes);
        let mut s = self.state.lock().unwrap();
        for r in [tag.to_string(), d.to_string()] {
            s.manifests.insert(
                (repo.to_string(), r),
                (bytes.to_vec(), media_type.to_string()),
            );
        }
        d
    }

    fn reference(&self, rest: &str) -> Reference {
        Reference::parse(&format!("{}/{rest}", self.addr)).unwrap()
    }

    fn client(&self) -> Client {
        self.client_with(AuthEnv::empty(), |_| {})
    }

    fn client_with(&self, env: AuthEnv, tweak: impl FnOnce(&mut ClientConfig)) -> Client {
        let mut cfg = ClientConfig {
            auth_env: env,
            backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
            max_retry_after: Duration::from_secs(5),
            timeout: Duration::from_secs(30),
            ..ClientConfig::default()
        };
        for a in [&self.addr, &self.redirect_addr] {
            cfg.registries.insert(
                a.clone(),
                RegistrySettings {
                    insecure_http: true,
                    ..Default::default()
                },
            );
        }
        tweak(&mut cfg);
        Client::new(cfg)
    }

    fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }
}

fn scopes_grant(granted: &str, repo: &str, action: &str) -> bool {
    granted.split(' ').any(|s| {
        let Some(rest) = s.strip_prefix("repository:") else {
            return false;
        };
        let Some((name, actions)) = rest.rsplit_once(':') else {
            return false;
        };
        name == repo && actions.split(',').any(|a| a == action || a == "*")
    })
}

fn handle(
    st: &Mutex<State>,
    k: &Knobs,
    base: &str,
    redirect_addr: &str,
    req: &HttpReq,
) -> HttpResp {
    let path = req.path().to_string();
    if path == "/token" {
        let mut s = st.lock().unwrap();
        let scopes = req.query_all("scope");
        let auth = req.header("authorization").map(String::from);
        s.token_requests.push((scopes.clone(), auth.clone()));
        if let Some((u, p)) = &k.token_creds {
            let want = format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
            );
            if auth.as_deref() != Some(want.as_str()) {
                return HttpResp::new(401)
                    .json(serde_json::json!({"details": "incorrect username or password"}));
            }
            assert_eq!(req.query("account").as_deref(), Some(u.as_str()));
        }
        s.next_id += 1;
        let token = format!("tok{}", s.next_id);
        let mut granted = scopes.join(" ");
        if granted.contains(",push") && k.downgrade_push_once.swap(false, Ordering::SeqCst) {
            granted = granted.replace(",push", "");
        }
        s.tokens.insert(token.clone(), granted);
        let mut answer = serde_json::json!({"access_token": token});
        if k.token_expires_in > 0 {
            answer["expires_in"] = k.token_expires_in.into();
        }
        return HttpResp::new(200).json(answer);
    }
    st.lock()
        .unwrap()
        .log
        .push(format!("{} {}", req.method, req.target));
    if path == "/v2/" {
        return HttpResp::new(200);
    }
    let Some(rest) = path.strip_prefix("/v2/") else {
        return HttpResp::new(404);
    };
    let (repo, kind, arg) = if let Some((r, a)) = rest.split_once("/manifests/") {
        (r, "manifests", a)
    } else if let Some((r, a)) = rest.split_once("/blobs/uploads/") {
        (r, "uploads", a)
    } else if let Some((r, a)) = rest.split_once("/blobs/") {
        (r, "blobs", a)
    } else {
        return HttpResp::new(404);
    };
    let (repo, arg) = (repo.to_string(), arg.to_string());

    if k.bearer {
        let action = match (req.method.as_str(), kind) {
            ("GET" | "HEAD", "manifests" | "blobs") => "pull",
            _ => "push",
        };
        let s = st.lock().unwrap();
        let token = req
            .header("authorization")
            .and_then(|a| a.strip_prefix("Bearer "));
        let granted = token.and_then(|t| s.tokens.get(t));
        if !granted.is_some_and(|g| scopes_grant(g, &repo, action)) {
            let scope = if action == "push" {
                format!("repository:{repo}:pull,push")
            } else {
                format!("repository:{repo}:pull")
            };
            let mut challenge =
                format!(r#"Bearer realm="http://{base}/token",service="fake",scope="{scope}""#);
            if token.is_some() {
                challenge.push_str(r#",error="insufficient_scope""#);
            }
            return HttpResp::error(401, "UNAUTHORIZED", "authentication required")
                .header("WWW-Authenticate", challenge);
        }
    }

    let mut s = st.lock().unwrap();
    match (req.method.as_str(), kind) {
        ("GET" | "HEAD", "manifests") => {
            if k.rate_limit_manifest_gets.load(Ordering::SeqCst) > 0 {
                k.rate_limit_manifest_gets.fetch_sub(1, Ordering::SeqCst);
                return HttpResp::error(429, "TOOMANYREQUESTS", "slow down")
                    .header("Retry-After", "1");
            }
            if k.huge_manifest {
                return HttpResp::new(200)
                    .header("Content-Type", MEDIA_TYPE_MANIFEST)
                    .body(vec![b' '; 5 << 20]);
            }
            match s.manifests.get(&(repo, arg)) {
                Some((b, mt)) => HttpResp::new(200)
                    .header("Content-Type", mt.clone())
                    .header("Docker-Content-Digest", Digest::of(b).to_string())
                    .body(b.clone()),
                None => HttpResp::error(404, "MANIFEST_UNKNOWN", "manifest unknown"),
            }
        }
        ("PUT", "manifests") => {
            let mt = req.header("content-type").unwrap_or("").to_string();
            let d = Digest::of(&req.body);
            for r in [arg, d.to_string()] {
                s.manifests
                    .insert((repo.clone(), r), (req.body.clone(), mt.clone()));
            }
            HttpResp::new(201).header("Docker-Content-Digest", d.to_string())
        }
        ("HEAD", "blobs") => {
            let known = s.blob_repos.contains(&(repo.clone(), arg.clone()))
                || s.blob_repos.contains(&("*".to_string(), arg.clone()));
            HttpResp::new(if known { 200 } else { 404 })
        }
        ("GET", "blobs") => {
            let Some(mut data) = s.blobs.get(&arg).cloned() else {
                return HttpResp::error(404, "BLOB_UNKNOWN", "blob unknown to registry");
            };
            if k.redirect_blobs {
                return HttpResp::new(307)
                    .header("Location", format!("http://{redirect_addr}/storage/{arg}"));
            }
            if k.corrupt_blobs {
                data[0] ^= 0xff;
            }
            let range_start = req
                .header("range")
                .and_then(|r| r.strip_prefix("bytes="))
                .and_then(|r| r.strip_suffix('-'))
                .and_then(|n| n.parse::<usize>().ok());
            let mut resp = match range_start {
                Some(start) if !k.ignore_range => HttpResp::new(206)
                    .header(
                        "Content-Range",
                        format!("bytes {start}-{}/{}", data.len() - 1, data.len()),
                    )
                    .body(data[start..].to_vec()),
                _ => HttpResp::new(200).body(data),
            };
            if k.cut_blob_gets.load(Ordering::SeqCst) > 0 {
                k.cut_blob_gets.fetch_sub(1, Ordering::SeqCst);
                resp.cut_after = Some(resp.body.len() / 3);
            }
            resp
        }
        ("POST", "uploads") => {
            if let (Some(mount), Some(_from)) = (req.query("mount"), req.query("from")) {
                if k.mount_creates && s.blobs.contains_key(&mount) {
                    s.blob_repos.insert((repo.clone(), mount.clone()));
                    return HttpResp::new(201)
                        .header("Location", format!("/v2/{repo}/blobs/{mount}"))
                        .header("Docker-Content-Digest", mount);
                }
            }
            s.next_id += 1;
            let id = format!("up{}", s.next_id);
            s.uploads.insert(id.clone(), Vec::new());
            HttpResp::new(202)
                .header("Location", format!("/v2/{repo}/blobs/uploads/{id}"))
                .header("Range", "0-0")
        }
        ("PATCH", "uploads") => {
            let id = arg.clone();
            let patches = s.log.iter().filter(|l| l.starts_with("PATCH")).count();
            let Some(buf) = s.uploads.get_mut(&id) else {
                return HttpResp::error(404, "BLOB_UPLOAD_UNKNOWN", "no such upload");
            };
            let start: usize = req
                .header("content-range")
                .and_then(|r| r.split('-').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(usize::MAX);
            if (patches == 2 && k.fail_second_patch_416.swap(false, Ordering::SeqCst))
                || start != buf.len()
            {
                return HttpResp::error(416, "BLOB_UPLOAD_INVALID", "range not satisfiable");
            }
            buf.extend_from_slice(&req.body);
            HttpResp::new(202)
                .header("Location", format!("/v2/{repo}/blobs/uploads/{id}"))
                .header("Range", format!("0-{}", buf.len().saturating_sub(1)))
        }
        ("GET", "uploads") => match s.uploads.get(&arg) {
            Some(buf) => HttpResp::new(204)
                .header("Location", format!("/v2/{repo}/blobs/uploads/{arg}"))
                .header("Range", format!("0-{}", buf.len().saturating_sub(1))),
            None => HttpResp::new(404),
        },
        ("PUT", "uploads") => {
            if k.refuse_monolithic && !req.body.is_empty() {
                return HttpResp::error(413, "SIZE_INVALID", "too large");
            }
            let Some(mut buf) = s.uploads.remove(&arg) else {
                return HttpResp::error(404, "BLOB_UPLOAD_UNKNOWN", "no such upload");
            };
            buf.extend_from_slice(&req.body);
            let d = Digest::of(&buf);
            if Some(d.to_string()) != req.query("digest") {
                return HttpResp::error(400, "DIGEST_INVALID", "digest mismatch");
            }
            s.blobs.insert(d.to_string(), buf);
            s.blob_repos.insert((repo.clone(), d.to_string()));
            HttpResp::new(201)
                .header("Location", format!("/v2/{repo}/blobs/{d}"))
                .header("Docker-Content-Digest", d.to_string())
        }
        _ => HttpResp::new(405),
    }
}

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
                .wrapping_add(seed as u32) as u8
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
