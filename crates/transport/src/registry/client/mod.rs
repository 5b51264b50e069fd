//! An OCI Distribution 1.1 client: manifests, verified blob downloads, pushes.
//!
//! Built on reqwest's blocking client (rustls; system roots plus per-registry CA files). The
//! blocking client is `Send + Sync`, so concurrent downloads are scoped threads sharing it.
//!
//! What it guarantees:
//! - Manifests are asked for with all four media types (OCI index/manifest, Docker list/v2),
//!   limited in size, and verified over their raw bytes against the reference's digest (and the
//!   registry's `Docker-Content-Digest`, when it sends one).
//! - Blobs stream into [`Store::blob_writer`] and are committed only when their sha256 matches;
//!   a cut stream resumes with `Range` (or restarts when the server ignores it).
//! - Retries are bounded, with exponential backoff; `429`/`503` honour `Retry-After` (capped).
//! - Redirects are followed by hand: `Authorization` goes only to the registry's own origin,
//!   never to the host a blob download is redirected to.
//! - Authentication: anonymous or credentialed Bearer tokens (cached per scope set, merged
//!   pull+push, renewed on expiry or on a new challenge), or Basic; see [`super::auth`].
//! - Mirrors: pulls try the configured mirrors in order, then the registry itself.
//! - Nothing is printed: progress and retries are reported through [`Reporter`](crate::progress::Reporter).
//!
//!
//! [`Store::blob_writer`]: crate::store::Store::blob_writer
//!
//! Files: this one holds the [`Client`] and request sending (retries, redirects, error
//! replies); `config` its settings; `authorize` the auth handshake;
//! `manifest`, `pull` and `push` the operations; `error` the [`RegistryError`].

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use fs_err as fs;
use reqwest::blocking::{Body, Response};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};

use super::auth::{AuthError, Challenge, FoundCredential, Scopes, TokenCache};
use super::reference::{api_host, Reference};
use crate::http::{error_chain, peers};

mod authorize;
mod config;
mod error;
mod manifest;
mod pull;
mod push;
mod scheme;

pub(crate) use crate::progress::{Reporter, Silent};
pub use config::{ClientConfig, Mirror, RegistryFlags, RegistrySettings};
pub use error::{Digests, RegistryError};
pub use manifest::{
    select_platform, FetchedManifest, MANIFEST_MEDIA_TYPES, MEDIA_TYPE_DOCKER_LIST,
    MEDIA_TYPE_DOCKER_MANIFEST,
};
pub use push::BlobPush;

const MAX_REDIRECTS: u32 = 10;
/// Error bodies are read up to this size for their message.
const MAX_ERROR_BODY: u64 = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// The client

/// Where requests for one repository go.
#[derive(Clone, Debug)]
struct Endpoint {
    /// As in references (`docker.io`): keys settings and credentials.
    registry: String,
    repository: String,
    /// `https://registry-1.docker.io`
    origin: Url,
}

impl Endpoint {
    fn url(&self, tail: &str) -> Url {
        let mut u = self.origin.clone();
        u.set_path(&format!("/v2/{}/{tail}", self.repository));
        u
    }
}

#[derive(Default)]
struct RegistryAuth {
    challenge: Option<Challenge>,
    credential: Option<Option<FoundCredential>>,
    tokens: TokenCache,
}

/// A registry client; share one per process (`&Client` is `Sync`).
pub struct Client {
    config: ClientConfig,
    http: Mutex<BTreeMap<String, reqwest::blocking::Client>>,
    auth: Mutex<BTreeMap<String, RegistryAuth>>,
    /// The scheme found for a registry that may fall back to plain HTTP (`scheme`).
    schemes: Mutex<BTreeMap<String, &'static str>>,
    /// The hosts given up on, and their silence (see [`peers`]).
    peers: peers::Peers,
}

/// A request body that can be made again for a retry.
type BodyFn<'a> = &'a dyn Fn() -> Result<Body, RegistryError>;

struct Request<'a> {
    method: Method,
    url: Url,
    headers: Vec<(&'static str, String)>,
    body: Option<BodyFn<'a>>,
    /// For messages: `GET manifest 24.04`.
    action: String,
    scopes: Scopes,
    /// Overall limit for sending the request (and its body) and reading the headers.
    timeout: Option<Duration>,
    /// A response that may be large (a blob): no deadline from the host's budget, which would
    /// cut the body of a host that answers.
    large: bool,
}

impl<'a> Request<'a> {
    fn new(method: Method, url: Url, action: impl Into<String>, scopes: Scopes) -> Self {
        Request {
            method,
            url,
            headers: Vec::new(),
            body: None,
            action: action.into(),
            scopes,
            timeout: None,
            large: false,
        }
    }
    fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
    fn body(mut self, body: BodyFn<'a>) -> Self {
        self.body = Some(body);
        self
    }
}

impl Client {
    pub fn new(config: ClientConfig) -> Client {
        Client {
            config,
            http: Mutex::new(BTreeMap::new()),
            auth: Mutex::new(BTreeMap::new()),
            schemes: Mutex::new(BTreeMap::new()),
            peers: peers::Peers::default(),
        }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// `registry`'s settings: the registries file's entry, with `--cert-dir` in place of its
    /// `cert-dir`.
    fn settings(&self, registry: &str) -> RegistrySettings {
        let mut s = self
            .config
            .registries
            .get(registry)
            .cloned()
            .unwrap_or_default();
        if let Some(d) = &self.config.cert_dir {
            s.cert_dir = Some(d.clone());
        }
        s
    }

    fn endpoint(&self, registry: &str, repository: &str) -> Result<Endpoint, RegistryError> {
        let scheme = self.scheme(registry);
        let origin = Url::parse(&format!("{scheme}://{}/", api_host(registry))).map_err(|e| {
            RegistryError::Status {
                registry: registry.to_string(),
                repository: repository.to_string(),
                action: "building the registry URL".into(),
                status: 0,
                detail: format!(": {e}"),
                hint: String::new(),
            }
        })?;
        Ok(Endpoint {
            registry: registry.to_string(),
            repository: repository.to_string(),
            origin,
        })
    }

    /// The endpoints a pull of `reference` tries: its mirrors in order, then the registry.
    fn pull_endpoints(&self, reference: &Reference) -> Result<Vec<Endpoint>, RegistryError> {
        let name = reference.name();
        let mut out = Vec::new();
        // The longest matching prefix decides.
        let best = self
            .config
            .mirrors
            .iter()
            .filter(|m| name == m.prefix || name.starts_with(&format!("{}/", m.prefix)))
            .max_by_key(|m| m.prefix.len());
        if let Some(m) = best {
            let rest = &name[m.prefix.len()..];
            for loc in &m.locations {
                let full = format!("{}{rest}", loc.trim_end_matches('/'));
                if let Some((reg, repo)) = full.split_once('/') {
                    out.push(self.endpoint(reg, repo)?);
                }
            }
        }
        out.push(self.endpoint(reference.registry(), reference.repository())?);
        Ok(out)
    }

    fn http(&self, registry: &str) -> Result<reqwest::blocking::Client, RegistryError> {
        let mut map = self
            .http
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = map.get(registry) {
            return Ok(c.clone());
        }
        let tls = |problem: String| RegistryError::Tls {
            registry: registry.to_string(),
            problem,
        };
        let settings = self.settings(registry);
        let mut pem_files = Vec::new();
        let mut identity = None;
        if let Some(f) = &settings.ca_file {
            pem_files.push(f.clone());
        }
        if let Some(d) = &settings.cert_dir {
            let entries = fs::read_dir(d).map_err(|e| tls(e.to_string()))?;
            let mut files: Vec<PathBuf> =
                entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            files.sort();
            let ext = |p: &PathBuf, x: &str| p.extension().is_some_and(|e| e == x);
            pem_files.extend(files.iter().filter(|p| ext(p, "crt")).cloned());
            // containers-certs.d(5): `NAME.cert` + `NAME.key` is a client certificate.
            if let Some(cert) = files.iter().find(|p| ext(p, "cert")) {
                let key = cert.with_extension("key");
                let mut pem = fs::read(cert).map_err(|e| tls(e.to_string()))?;
                pem.push(b'\n');
                pem.extend(fs::read(&key).map_err(|e| {
                    tls(format!(
                        "{}: the client certificate's key {} cannot be read: {e}",
                        cert.display(),
                        key.display()
                    ))
                })?);
                identity = Some(reqwest::Identity::from_pem(&pem).map_err(|e| {
                    tls(format!(
                        "{} + {}: not a PEM client certificate and key ({e})",
                        cert.display(),
                        key.display()
                    ))
                })?);
            }
        }
        let mut certs = Vec::new();
        for f in &pem_files {
            let pem = fs::read(f).map_err(|e| tls(e.to_string()))?;
            let found = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| tls(format!("{}: not PEM certificates ({e})", f.display())))?;
            if found.is_empty() {
                return Err(tls(format!("{}: no certificate in it", f.display())));
            }
            certs.extend(found);
        }
        let mut builder = crate::http::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(self.config.user_agent.clone())
            .connect_timeout(self.config.connect_timeout)
            .timeout(self.config.timeout);
        if !certs.is_empty() {
            builder = builder.tls_certs_merge(certs);
        }
        if let Some(id) = identity {
            builder = builder.identity(id);
        }
        if !self.config.tls_verify {
            // `--tls-verify=false`, as skopeo spells it: the user's explicit choice.
            builder = builder.danger_accept_invalid_certs(true);
        }
        let client = builder.build().map_err(|e| {
            tls(format!(
                "cannot set up the HTTP client: {}",
                error_chain(&e)
            ))
        })?;
        map.insert(registry.to_string(), client.clone());
        Ok(client)
    }

    fn backoff(&self, attempt: u32) -> Duration {
        crate::http::Retry {
            max_attempts: self.config.max_attempts,
            backoff: self.config.backoff,
            max_backoff: self.config.max_backoff,
            max_retry_after: self.config.max_retry_after,
        }
        .backoff(attempt)
    }

    // -----------------------------------------------------------------------------------------
    // Sending

    /// The `Authorization` header for `ep` with `scopes` (marked sensitive), when there is one.
    fn auth_header(
        &self,
        ep: &Endpoint,
        scopes: &Scopes,
    ) -> Result<Option<HeaderValue>, RegistryError> {
        let Some(a) = self.authorization(ep, scopes)? else {
            return Ok(None);
        };
        let mut v = HeaderValue::from_str(a.expose()).map_err(|_| RegistryError::Auth {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            source: Box::new(AuthError::TokenResponse {
                realm: ep.registry.clone(),
                problem: "the token has characters not allowed in a header".into(),
            }),
            hint: "report this to the registry's operator".into(),
        })?;
        v.set_sensitive(true);
        Ok(Some(v))
    }

    /// Send a request: auth for the registry's own origin only, redirects by hand, bounded
    /// retries for transport errors, 429 and 5xx (with `Retry-After`), one re-authentication
    /// round per challenge.
    fn send(
        &self,
        ep: &Endpoint,
        req: &Request<'_>,
        progress: &dyn Reporter,
    ) -> Result<Response, RegistryError> {
        if self.config.offline {
            return Err(RegistryError::Offline {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                action: req.action.clone(),
            });
        }
        let http = self.http(&ep.registry)?;
        let mut url = req.url.clone();
        let mut method = req.method.clone();
        let mut with_body = req.body.is_some();
        let (mut attempts, mut redirects, mut auth_rounds) = (0u32, 0u32, 0u32);
        loop {
            // A host that cannot be resolved, refused, or used its budget up fails at once.
            let host = peers::host_of(url.as_str());
            let left = self
                .peers
                .check(&host)
                .map_err(|down| RegistryError::Unreachable {
                    registry: ep.registry.clone(),
                    repository: ep.repository.clone(),
                    action: req.action.clone(),
                    problem: format!("not tried again in this command after: {}", down.message),
                    hint: self.transport_hint(ep, down.failure),
                })?;
            let same_origin = url.origin() == ep.origin.origin();
            let mut rb = http.request(method.clone(), url.clone());
            for (k, v) in &req.headers {
                rb = rb.header(*k, v.as_str());
            }
            if same_origin {
                if let Some(v) = self.auth_header(ep, &req.scopes)? {
                    rb = rb.header(reqwest::header::AUTHORIZATION, v);
                }
            }
            if let (true, Some(body)) = (with_body, req.body) {
                rb = rb.body(body()?);
            }
            // A host that has kept this command waiting gets what is left of its budget for a
            // small document (manifests, tags, `/v2/`: bounded), not for a blob, whose body the
            // deadline would cut (reqwest's covers the whole transfer); the client's connect and
            // read waits are capped by the budget all the same.
            match req.timeout {
                Some(t) => rb = rb.timeout(t),
                None if !req.large && left < peers::budget() => rb = rb.timeout(left),
                None => {}
            }
            let started = std::time::Instant::now();
            let resp = match rb.send() {
                Ok(r) => {
                    self.peers.answered(&host);
                    r
                }
                Err(e) => {
                    attempts += 1;
                    let message = error_chain(&e);
                    let failure = peers::classify(&e);
                    let delay = self.backoff(attempts);
                    // A timed-out request's pause before its next attempt is part of its
                    // silence: the attempts and their pauses together stay within the budget.
                    let timeout = failure == peers::Failure::Timeout;
                    let pause = if timeout { delay } else { Duration::ZERO };
                    let left =
                        self.peers
                            .record(&host, failure, started.elapsed() + pause, &message);
                    let again = failure.retryable() || timeout;
                    if attempts >= self.config.max_attempts
                        || !again
                        || left.is_zero()
                        || (!timeout && delay >= left)
                    {
                        return Err(RegistryError::Transport {
                            registry: ep.registry.clone(),
                            repository: ep.repository.clone(),
                            action: req.action.clone(),
                            attempts,
                            message,
                            hint: self.transport_hint(ep, failure),
                        });
                    }
                    progress.retrying(&req.action, attempts, delay, &message);
                    std::thread::sleep(delay);
                    continue;
                }
            };
            let status = resp.status();
            if status == StatusCode::UNAUTHORIZED && same_origin && auth_rounds < 2 {
                auth_rounds += 1;
                let header = resp
                    .headers()
                    .get(reqwest::header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .map(String::from);
                if self.answer_challenge(ep, &req.scopes, header.as_deref())? {
                    continue;
                }
                return Err(self.refused(ep, &req.action, resp));
            }
            if status.is_redirection() {
                if let Some(loc) = header_str(resp.headers(), "location") {
                    redirects += 1;
                    if redirects > MAX_REDIRECTS {
                        return Err(RegistryError::Status {
                            registry: ep.registry.clone(),
                            repository: ep.repository.clone(),
                            action: req.action.clone(),
                            status: status.as_u16(),
                            detail: format!(": more than {MAX_REDIRECTS} redirects"),
                            hint: String::new(),
                        });
                    }
                    url = url.join(&loc).map_err(|e| RegistryError::Status {
                        registry: ep.registry.clone(),
                        repository: ep.repository.clone(),
                        action: req.action.clone(),
                        status: status.as_u16(),
                        detail: format!(": bad redirect location ({e})"),
                        hint: String::new(),
                    })?;
                    if status == StatusCode::SEE_OTHER {
                        method = Method::GET;
                        with_body = false;
                    }
                    continue;
                }
            }
            if crate::http::retryable(status) && attempts + 1 < self.config.max_attempts {
                attempts += 1;
                let delay = header_str(resp.headers(), "retry-after")
                    .and_then(|s| crate::http::retry_after(&s, std::time::SystemTime::now()))
                    .map(|d| d.min(self.config.max_retry_after))
                    .unwrap_or_else(|| self.backoff(attempts));
                progress.retrying(&req.action, attempts, delay, &format!("HTTP {status}"));
                drop(resp);
                std::thread::sleep(delay);
                continue;
            }
            if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                return Err(self.refused(ep, &req.action, resp));
            }
            return Ok(resp);
        }
    }

    /// What to do about a failed request: TLS settings only when TLS is what failed.
    fn transport_hint(&self, ep: &Endpoint, failure: peers::Failure) -> String {
        if failure != peers::Failure::Tls {
            return peers::hint(failure, &ep.registry);
        }
        if ep.origin.scheme() == "https" {
            format!(
                "check the network (HTTPS_PROXY / NO_PROXY) and that {0} is reachable; for a private CA set a CA file for {0} (or SSL_CERT_FILE); a registry that serves plain HTTP must be allowed: `--tls-verify=false`, or `insecure-http = true` for {0} in the registries file",
                ep.registry
            )
        } else {
            format!(
                "check the network (HTTP_PROXY / NO_PROXY) and that {} is reachable",
                ep.registry
            )
        }
    }

    fn refused(&self, ep: &Endpoint, action: &str, resp: Response) -> RegistryError {
        let status = resp.status().as_u16();
        let cred = {
            let map = self
                .auth
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            map.get(&ep.registry)
                .and_then(|s| s.credential.clone().flatten())
        };
        RegistryError::Unauthorized {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            action: action.to_string(),
            status,
            detail: self.read_error_detail(ep, resp),
            hint: self.login_hint(ep, cred.as_ref()),
        }
    }

    fn status_error(&self, ep: &Endpoint, action: &str, resp: Response) -> RegistryError {
        let status = resp.status().as_u16();
        let hint = match status {
            404 => format!("; check that {}/{} exists", ep.registry, ep.repository),
            _ => String::new(),
        };
        RegistryError::Status {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            action: action.to_string(),
            status,
            detail: self.read_error_detail(ep, resp),
            hint,
        }
    }

    fn try_endpoints<T>(
        &self,
        reference: &Reference,
        progress: &dyn Reporter,
        f: impl Fn(&Endpoint) -> Result<T, RegistryError>,
    ) -> Result<T, RegistryError> {
        // The mirrors, in order, then the registry itself (always the last endpoint). Offline,
        // only the registry itself: its refusal names the reference as written.
        let mut eps = self.pull_endpoints(reference)?;
        if self.config.offline {
            eps.drain(..eps.len().saturating_sub(1));
        }
        let mut failed = Vec::new();
        let mut last_err = None;
        for (i, ep) in eps.iter().enumerate() {
            let mirror = i + 1 < eps.len();
            if mirror {
                progress.detail(&format!(
                    "{reference}: trying the mirror {}/{}",
                    ep.registry, ep.repository
                ));
            }
            match f(ep) {
                Ok(v) => return Ok(v),
                Err(e) => {
                    if mirror {
                        // Its error is in the final one (AfterMirrors) when all fail.
                        progress.message(&format!(
                            "{}/{} failed; trying the next location",
                            ep.registry, ep.repository
                        ));
                    }
                    if let Some(prev) = last_err.replace(e) {
                        failed.push(prev.to_string());
                    }
                }
            }
        }
        let last = last_err.unwrap_or_else(|| {
            RegistryError::Reference(crate::registry::ReferenceError::Invalid {
                input: reference.to_string(),
                problem: "no location to pull from".into(),
            })
        });
        Err(if failed.is_empty() {
            last
        } else {
            RegistryError::AfterMirrors {
                mirrors: failed,
                last: Box::new(last),
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn header_str(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name).and_then(|v| v.to_str().ok()).map(String::from)
}

/// `bytes 100-199/200` → 100.
fn parse_content_range_start(v: &str) -> Option<u64> {
    let v = v.trim().strip_prefix("bytes")?.trim_start();
    v.split(['-', '/']).next()?.trim().parse().ok()
}

/// `0-99` (or `bytes=0-99`) → 99.
fn parse_range_end(v: &str) -> Option<u64> {
    let v = v.trim();
    let v = v.strip_prefix("bytes=").unwrap_or(v);
    v.split_once('-')?.1.trim().parse().ok()
}

/// A registry error body (`{"errors":[{"code":…,"message":…}]}`) as `: CODE: message`, or
/// the start of a plain body; empty when there is nothing useful. Each of `secrets`, and
/// whatever looks like a credential ([`crate::http::redact_text`]), shows as `***`.
pub(crate) fn error_detail(body: &[u8], secrets: &[String]) -> String {
    // Redacted before it is cut short: a secret across the cut would leave its start.
    let text = crate::http::redact_text(&String::from_utf8_lossy(body), secrets);
    body_detail(text.as_bytes())
}

fn body_detail(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Errors {
        #[serde(default)]
        errors: Vec<ErrorItem>,
        #[serde(default)]
        error: Option<String>,
        #[serde(default)]
        details: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct ErrorItem {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    if let Ok(e) = serde_json::from_slice::<Errors>(body) {
        let parts: Vec<String> = e
            .errors
            .iter()
            .map(|i| match (i.code.is_empty(), i.message.is_empty()) {
                (false, false) => format!("{}: {}", i.code, i.message),
                (false, true) => i.code.clone(),
                _ => i.message.clone(),
            })
            .filter(|s| !s.is_empty())
            .collect();
        if !parts.is_empty() {
            return format!(": {}", parts.join("; "));
        }
        if let Some(m) = e.details.or(e.error) {
            return format!(": {m}");
        }
    }
    let text = String::from_utf8_lossy(body);
    let text: String = text.trim().chars().take(200).collect();
    if text.is_empty() || text.starts_with('<') {
        String::new()
    } else {
        format!(": {text}")
    }
}

impl Client {
    /// `resp`'s error body as [`error_detail`] gives it, without the credentials and tokens
    /// this client holds for `ep`'s registry.
    fn read_error_detail(&self, ep: &Endpoint, resp: Response) -> String {
        let mut body = Vec::new();
        let _ = resp.take(MAX_ERROR_BODY).read_to_end(&mut body);
        let secrets: Vec<String> = {
            let map = self
                .auth
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            map.get(&ep.registry)
                .map(|s| {
                    let cred = s.credential.iter().flatten();
                    cred.flat_map(|f| f.credential.secrets())
                        .chain(s.tokens.secrets().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        error_detail(&body, &secrets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::registry::auth::AuthEnv;

    fn r(s: &str) -> Reference {
        Reference::parse(s).unwrap()
    }

    #[test]
    fn header_parsing() {
        assert_eq!(parse_content_range_start("bytes 100-199/200"), Some(100));
        assert_eq!(parse_content_range_start("bytes 0-9/*"), Some(0));
        assert_eq!(parse_content_range_start("items 1-2"), None);
        assert_eq!(parse_range_end("0-99"), Some(99));
        assert_eq!(parse_range_end("bytes=0-4"), Some(4));
        assert_eq!(parse_range_end("junk"), None);
        let detail = |b: &[u8]| error_detail(b, &[]);
        assert_eq!(
            detail(br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#),
            ": MANIFEST_UNKNOWN: manifest unknown"
        );
        assert_eq!(
            detail(br#"{"details":"incorrect username or password"}"#),
            ": incorrect username or password"
        );
        assert_eq!(detail(b"<html>nope</html>"), "");
        assert_eq!(detail(b"plain words"), ": plain words");
        assert_eq!(detail(b""), "");
        // A body that echoes the request's credentials shows none of them.
        let echo = br#"{"errors":[{"code":"UNAUTHORIZED","message":"bad header Authorization: Basic dXNlcjpodW50ZXIy, password hunter2, token eyJhbGciOi"}]}"#;
        let d = error_detail(echo, &["hunter2".into(), "eyJhbGciOi".into()]);
        assert_eq!(
            d,
            ": UNAUTHORIZED: bad header Authorization: Basic ***, password ***, token ***"
        );
    }

    #[test]
    fn mirrors_rewrite_names() {
        let mut cfg = ClientConfig {
            auth_env: AuthEnv::empty(),
            ..ClientConfig::default()
        };
        cfg.mirrors = vec![
            Mirror {
                prefix: "docker.io".into(),
                locations: vec!["mirror.a:5000".into(), "mirror.b/hub/".into()],
            },
            Mirror {
                prefix: "docker.io/library".into(),
                locations: vec!["lib.mirror/official".into()],
            },
        ];
        cfg.registries.insert(
            "mirror.a:5000".into(),
            RegistrySettings {
                insecure_http: true,
                ..Default::default()
            },
        );
        let c = Client::new(cfg);
        let eps = |s: &str| {
            c.pull_endpoints(&r(s))
                .unwrap()
                .into_iter()
                .map(|e| format!("{}{}", e.origin, e.repository))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            eps("nvidia/cuda:12"),
            vec![
                "http://mirror.a:5000/nvidia/cuda",
                "https://mirror.b/hub/nvidia/cuda",
                "https://registry-1.docker.io/nvidia/cuda"
            ]
        );
        // The longest prefix wins.
        assert_eq!(
            eps("ubuntu"),
            vec![
                "https://lib.mirror/official/ubuntu",
                "https://registry-1.docker.io/library/ubuntu"
            ]
        );
        // `docker.io` does not match `docker.iox/...`; other registries have no mirrors.
        assert_eq!(eps("ghcr.io/a/b"), vec!["https://ghcr.io/a/b"]);
    }

    #[test]
    fn backoff_is_bounded() {
        let c = Client::new(ClientConfig {
            auth_env: AuthEnv::empty(),
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            ..ClientConfig::default()
        });
        assert_eq!(c.backoff(1), Duration::from_millis(100));
        assert_eq!(c.backoff(2), Duration::from_millis(200));
        assert_eq!(c.backoff(4), Duration::from_millis(800));
        assert_eq!(c.backoff(5), Duration::from_secs(1));
        assert_eq!(c.backoff(60), Duration::from_secs(1));
    }

    #[test]
    fn tls_settings_errors_name_the_registry() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.pem");
        fs_err::write(&bad, b"not a certificate").unwrap();
        let mut cfg = ClientConfig {
            auth_env: AuthEnv::empty(),
            ..ClientConfig::default()
        };
        cfg.registries.insert(
            "r.example".into(),
            RegistrySettings {
                ca_file: Some(bad),
                ..Default::default()
            },
        );
        let c = Client::new(cfg);
        let e = c.get_manifest(&r("r.example/a:b")).unwrap_err().to_string();
        assert!(e.contains("r.example") && e.contains("bad.pem"), "{e}");
    }
}
