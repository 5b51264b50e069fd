//! An in-process fake registry for the faults a real one will not produce on demand: Bearer
//! challenges with scope escalation, redirects to another host, cut streams, wrong digests,
//! 429 with Retry-After, 202 answering a mount, 416 on a chunk, a token service that grants
//! pull but not push, 401 for a manifest that is not there. It listens on 127.0.0.1 with
//! ephemeral ports (tests/it/registry_fake.rs, tests/it/registry_behaviours.rs).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use ocibuild::digest::Digest;
use ocibuild::image::MEDIA_TYPE_MANIFEST;
use ocibuild::registry::auth::AuthEnv;
use ocibuild::registry::{Client, ClientConfig, Reference, RegistrySettings};

// ---------------------------------------------------------------------------------------------
// A tiny HTTP/1.1 server: one request per connection (`Connection: close`).

#[derive(Clone, Debug)]
pub(crate) struct HttpReq {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl HttpReq {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub(crate) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
    pub(crate) fn query_all(&self, key: &str) -> Vec<String> {
        let Some((_, q)) = self.target.split_once('?') else {
            return vec![];
        };
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| percent_decode(v))
            .collect()
    }
    pub(crate) fn query(&self, key: &str) -> Option<String> {
        self.query_all(key).into_iter().next()
    }
}

pub(crate) fn percent_decode(s: &str) -> String {
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

pub(crate) struct HttpResp {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// Send the full Content-Length but only this many body bytes, then close.
    pub(crate) cut_after: Option<usize>,
}

impl HttpResp {
    pub(crate) fn new(status: u16) -> Self {
        HttpResp {
            status,
            headers: vec![],
            body: vec![],
            cut_after: None,
        }
    }
    pub(crate) fn header(mut self, k: &str, v: impl Into<String>) -> Self {
        self.headers.push((k.to_string(), v.into()));
        self
    }
    pub(crate) fn body(mut self, b: impl Into<Vec<u8>>) -> Self {
        self.body = b.into();
        self
    }
    pub(crate) fn json(self, v: serde_json::Value) -> Self {
        self.header("Content-Type", "application/json")
            .body(serde_json::to_vec(&v).unwrap())
    }
    pub(crate) fn error(status: u16, code: &str, message: &str) -> Self {
        HttpResp::new(status)
            .json(serde_json::json!({"errors": [{"code": code, "message": message}]}))
    }
}

pub(crate) type Handler = Arc<dyn Fn(&HttpReq) -> HttpResp + Send + Sync>;

/// Serve `handler` on 127.0.0.1:0; returns `127.0.0.1:PORT`. The server lives as long as the
/// test process.
pub(crate) fn serve(handler: Handler) -> String {
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

pub(crate) fn handle_conn(
    conn: TcpStream,
    handler: &dyn Fn(&HttpReq) -> HttpResp,
) -> std::io::Result<()> {
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
pub(crate) struct State {
    pub(crate) blobs: HashMap<String, Vec<u8>>,
    /// (repository, digest) pairs HEAD answers for; repository `*` is every repository.
    pub(crate) blob_repos: std::collections::HashSet<(String, String)>,
    pub(crate) manifests: HashMap<(String, String), (Vec<u8>, String)>,
    pub(crate) uploads: HashMap<String, Vec<u8>>,
    pub(crate) tokens: HashMap<String, String>,
    /// (scopes asked for, Authorization sent) per token request.
    pub(crate) token_requests: Vec<(Vec<String>, Option<String>)>,
    /// `METHOD target` of every registry request.
    pub(crate) log: Vec<String>,
    /// Authorization headers the redirect target saw.
    pub(crate) redirect_auth: Vec<Option<String>>,
    pub(crate) next_id: u64,
}

#[derive(Default)]
pub(crate) struct Knobs {
    pub(crate) bearer: bool,
    /// Token endpoint requires these Basic credentials.
    pub(crate) token_creds: Option<(String, String)>,
    pub(crate) token_expires_in: u64,
    pub(crate) redirect_blobs: bool,
    pub(crate) cut_blob_gets: AtomicUsize,
    pub(crate) ignore_range: bool,
    pub(crate) corrupt_blobs: bool,
    pub(crate) rate_limit_manifest_gets: AtomicUsize,
    pub(crate) mount_creates: bool,
    pub(crate) refuse_monolithic: bool,
    pub(crate) fail_second_patch_416: AtomicBool,
    pub(crate) huge_manifest: bool,
    /// The first token asked for with push is granted pull only (as a registry does for an
    /// account without push rights): the registry then answers insufficient_scope.
    pub(crate) downgrade_push_once: AtomicBool,
    /// Every token is granted pull only, whatever was asked (an account without push rights).
    pub(crate) pull_only: bool,
    /// A manifest that is not there is answered 401 (with a Bearer challenge), not 404.
    pub(crate) missing_manifest_401: bool,
    /// Every tag of the sigstore / referrers-tag layout (`sha256-<hex>…`) is answered 500: a
    /// registry that does not answer for an image's signature and referrers.
    pub(crate) fail_attachment_tags: bool,
}

pub(crate) struct Fake {
    pub(crate) addr: String,
    pub(crate) redirect_addr: String,
    pub(crate) state: Arc<Mutex<State>>,
}

impl Fake {
    pub(crate) fn start(knobs: Knobs) -> Fake {
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

    pub(crate) fn put_blob(&self, data: &[u8]) -> Digest {
        self.put_blob_in("*", data)
    }

    pub(crate) fn put_blob_in(&self, repo: &str, data: &[u8]) -> Digest {
        let d = Digest::of(data);
        let mut s = self.state.lock().unwrap();
        s.blobs.insert(d.to_string(), data.to_vec());
        s.blob_repos.insert((repo.to_string(), d.to_string()));
        d
    }

    pub(crate) fn put_manifest(
        &self,
        repo: &str,
        tag: &str,
        bytes: &[u8],
        media_type: &str,
    ) -> Digest {
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

    pub(crate) fn reference(&self, rest: &str) -> Reference {
        Reference::parse(&format!("{}/{rest}", self.addr)).unwrap()
    }

    pub(crate) fn client(&self) -> Client {
        self.client_with(AuthEnv::empty(), |_| {})
    }

    pub(crate) fn client_with(
        &self,
        env: AuthEnv,
        tweak: impl FnOnce(&mut ClientConfig),
    ) -> Client {
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

    pub(crate) fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }
}

pub(crate) fn scopes_grant(granted: &str, repo: &str, action: &str) -> bool {
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

pub(crate) fn handle(
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
        if granted.contains(",push")
            && (k.pull_only || k.downgrade_push_once.swap(false, Ordering::SeqCst))
        {
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
            if k.fail_attachment_tags && arg.starts_with("sha256-") {
                return HttpResp::error(500, "UNKNOWN", "referrers are not served here");
            }
            if k.huge_manifest {
                return HttpResp::new(200)
                    .header("Content-Type", MEDIA_TYPE_MANIFEST)
                    .body(vec![b' '; 5 << 20]);
            }
            match s.manifests.get(&(repo.clone(), arg)) {
                Some((b, mt)) => HttpResp::new(200)
                    .header("Content-Type", mt.clone())
                    .header("Docker-Content-Digest", Digest::of(b).to_string())
                    .body(b.clone()),
                None if k.missing_manifest_401 => {
                    HttpResp::error(401, "UNAUTHORIZED", "authentication required").header(
                        "WWW-Authenticate",
                        format!(
                            r#"Bearer realm="http://{base}/token",service="fake",scope="repository:{repo}:pull",error="insufficient_scope""#
                        ),
                    )
                }
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
        ("DELETE", "uploads") => match s.uploads.remove(&arg) {
            Some(_) => HttpResp::new(204),
            None => HttpResp::error(404, "BLOB_UPLOAD_UNKNOWN", "no such upload"),
        },
        _ => HttpResp::new(405),
    }
}
