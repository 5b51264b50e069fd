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
//! - Nothing is printed: progress and retries are reported through [`Progress`].

// `RegistryError` carries its context (registry, repository, what failed, a hint) as fields, so
// it is larger than clippy's 128-byte threshold; it is built only on the failure path.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fs_err as fs;
use reqwest::blocking::{Body, Response};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};

use super::auth::{
    self, AuthEnv, AuthError, Challenge, FoundCredential, Scopes, Secret, TokenCache,
};
use super::reference::{api_host, Reference, ReferenceError};
use crate::digest::Digest;
use crate::image::{Descriptor, Platform, MEDIA_TYPE_INDEX, MEDIA_TYPE_MANIFEST};
use crate::store::{Store, StoreError};

pub const MEDIA_TYPE_DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const MEDIA_TYPE_DOCKER_LIST: &str =
    "application/vnd.docker.distribution.manifest.list.v2+json";
/// The manifest media types ocibuild reads, all sent in `Accept`.
pub const MANIFEST_MEDIA_TYPES: [&str; 4] = [
    MEDIA_TYPE_INDEX,
    MEDIA_TYPE_MANIFEST,
    MEDIA_TYPE_DOCKER_LIST,
    MEDIA_TYPE_DOCKER_MANIFEST,
];

const MAX_REDIRECTS: u32 = 10;
/// Error bodies are read up to this size for their message.
const MAX_ERROR_BODY: u64 = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    #[error("{registry}/{repository}: {action} was refused (HTTP {status}{detail}); {hint}")]
    Unauthorized {
        registry: String,
        repository: String,
        action: String,
        status: u16,
        detail: String,
        hint: String,
    },
    #[error("{registry}/{repository}: authentication failed: {source}; {hint}")]
    Auth {
        registry: String,
        repository: String,
        source: AuthError,
        hint: String,
    },
    #[error("{registry}/{repository}: manifest `{reference}` not found (HTTP {status}{detail}); check that the tag or digest exists (`skopeo list-tags docker://{registry}/{repository}`)")]
    ManifestUnknown {
        registry: String,
        repository: String,
        reference: String,
        status: u16,
        detail: String,
    },
    #[error("{registry}/{repository}: blob {digest} not found (HTTP 404{detail}); the registry lost a blob its manifest names, or the image was deleted: pick another tag or digest")]
    BlobUnknown {
        registry: String,
        repository: String,
        digest: Digest,
        detail: String,
    },
    #[error("{registry}/{repository}: manifest `{reference}` is larger than the limit of {limit} bytes{}; an image manifest is far smaller: check the reference", size.map(|s| format!(" ({s} bytes)")).unwrap_or_default())]
    ManifestTooLarge {
        registry: String,
        repository: String,
        reference: String,
        limit: u64,
        size: Option<u64>,
    },
    #[error("{registry}/{repository}: {what} has digest {found}, expected {expected}; nothing was kept: the registry (or something in between) served other bytes than asked for; retry, and report it to the registry's operator if it persists")]
    DigestMismatch {
        registry: String,
        repository: String,
        what: String,
        expected: Digest,
        found: Digest,
    },
    #[error("{registry}/{repository}: blob {digest} is {found} bytes (or more), expected {expected}; nothing was kept: the manifest and the blob disagree, or the registry served other bytes")]
    SizeMismatch {
        registry: String,
        repository: String,
        digest: Digest,
        expected: u64,
        found: u64,
    },
    #[error("{registry}/{repository}: `{reference}` has no image for platform {wanted}; it has: {available}. Choose one of those platforms, or another image")]
    NoPlatform {
        registry: String,
        repository: String,
        reference: String,
        wanted: String,
        available: String,
    },
    #[error("{registry}/{repository}: manifest `{reference}`: {problem}")]
    BadManifest {
        registry: String,
        repository: String,
        reference: String,
        problem: String,
    },
    #[error("{registry}/{repository}: {action}: HTTP {status}{detail}{hint}")]
    Status {
        registry: String,
        repository: String,
        action: String,
        status: u16,
        detail: String,
        hint: String,
    },
    #[error("{registry}/{repository}: {action}: {message} (after {attempts} attempt(s)); {hint}")]
    Transport {
        registry: String,
        repository: String,
        action: String,
        attempts: u32,
        message: String,
        hint: String,
    },
    #[error("registry {registry}: TLS settings: {problem}")]
    Tls { registry: String, problem: String },
    #[error("{registry}/{repository}: blob {digest}: {source}")]
    Store {
        registry: String,
        repository: String,
        digest: Digest,
        source: StoreError,
    },
    #[error("{registry}/{repository}: reading blob {digest} from the store: {source}")]
    Io {
        registry: String,
        repository: String,
        digest: Digest,
        source: io::Error,
    },
}

// ---------------------------------------------------------------------------------------------
// Configuration

/// Settings of one registry (keyed by its name as in references: `ghcr.io`, `127.0.0.1:5000`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegistrySettings {
    /// Talk plain HTTP to this registry. Never the default.
    pub insecure_http: bool,
    /// A PEM file of CA certificates trusted for this registry, in addition to the system's.
    pub ca_file: Option<PathBuf>,
    /// A directory whose `*.crt` files are CA certificates for this registry (the layout of
    /// `/etc/containers/certs.d/HOST/`), in addition to the system's.
    pub cert_dir: Option<PathBuf>,
}

/// Mirrors for a registry or a registry namespace, tried in order before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mirror {
    /// `docker.io` or `docker.io/library`: which references this applies to.
    pub prefix: String,
    /// Locations replacing the prefix: `mirror.example:5000` or `mirror.example/dockerhub`.
    pub locations: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub registries: BTreeMap<String, RegistrySettings>,
    pub mirrors: Vec<Mirror>,
    /// Where credentials are looked up ([`AuthEnv::from_process`] by default).
    pub auth_env: AuthEnv,
    pub user_agent: String,
    /// Manifests larger than this are refused.
    pub max_manifest_bytes: u64,
    /// Tries per request (transport errors, 429, 5xx) and per blob download (cut streams).
    pub max_attempts: u32,
    /// First retry delay; doubled per attempt, at most [`Self::max_backoff`].
    pub backoff: Duration,
    pub max_backoff: Duration,
    /// `Retry-After` is honoured up to this long.
    pub max_retry_after: Duration,
    /// Connecting.
    pub connect_timeout: Duration,
    /// Waiting for response headers, and for each read of a body.
    pub timeout: Duration,
    /// Chunk size of chunked uploads (the fallback when a monolithic upload is refused).
    pub chunk_size: u64,
    /// Blobs larger than this are uploaded in chunks from the start.
    pub monolithic_limit: u64,
    /// Concurrent blob downloads in [`Client::pull_blobs`].
    pub concurrency: usize,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            registries: BTreeMap::new(),
            mirrors: Vec::new(),
            auth_env: AuthEnv::from_process(),
            user_agent: format!("ocibuild/{}", env!("CARGO_PKG_VERSION")),
            max_manifest_bytes: 4 << 20,
            max_attempts: 5,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(30),
            timeout: Duration::from_secs(120),
            chunk_size: 16 << 20,
            monolithic_limit: u64::MAX,
            concurrency: 4,
        }
    }
}

/// Receives progress and retry events; every method has a no-op default.
pub trait Progress: Sync {
    /// A blob download starts (again, after a restart from zero).
    fn blob_started(&self, _digest: &Digest, _size: Option<u64>) {}
    /// `bytes` more of a blob arrived (or were uploaded).
    fn blob_progress(&self, _digest: &Digest, _bytes: u64) {}
    fn blob_finished(&self, _digest: &Digest) {}
    /// Something failed and is tried again after `delay`.
    fn retrying(&self, _what: &str, _attempt: u32, _delay: Duration, _reason: &str) {}
    /// A status line (e.g. a mirror that failed, and why).
    fn message(&self, _msg: &str) {}
}

/// Reports nothing.
pub struct NoProgress;
impl Progress for NoProgress {}

// ---------------------------------------------------------------------------------------------
// Results

/// A manifest (or index) as the registry served it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchedManifest {
    pub bytes: Vec<u8>,
    pub media_type: String,
    pub digest: Digest,
}

impl FetchedManifest {
    pub fn is_index(&self) -> bool {
        self.media_type == MEDIA_TYPE_INDEX || self.media_type == MEDIA_TYPE_DOCKER_LIST
    }
}

/// What [`Client::push_blob`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobPush {
    /// The registry had it already (HEAD).
    Existed,
    /// Mounted from another repository of the same registry.
    Mounted,
    /// Uploaded in one PUT.
    Uploaded,
    /// Uploaded in chunks (PATCH), after the monolithic upload was refused or for its size.
    UploadedChunked,
}

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
        }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    fn settings(&self, registry: &str) -> RegistrySettings {
        self.config
            .registries
            .get(registry)
            .cloned()
            .unwrap_or_default()
    }

    fn endpoint(&self, registry: &str, repository: &str) -> Result<Endpoint, RegistryError> {
        let scheme = if self.settings(registry).insecure_http {
            "http"
        } else {
            "https"
        };
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
        let mut map = self.http.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = map.get(registry) {
            return Ok(c.clone());
        }
        let tls = |problem: String| RegistryError::Tls {
            registry: registry.to_string(),
            problem,
        };
        let settings = self.settings(registry);
        let mut pem_files = Vec::new();
        if let Some(f) = &settings.ca_file {
            pem_files.push(f.clone());
        }
        if let Some(d) = &settings.cert_dir {
            let entries = fs::read_dir(d).map_err(|e| tls(e.to_string()))?;
            let mut crts: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "crt"))
                .collect();
            crts.sort();
            pem_files.extend(crts);
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
        let mut builder = reqwest::blocking::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(self.config.user_agent.clone())
            .connect_timeout(self.config.connect_timeout)
            .timeout(self.config.timeout);
        if !certs.is_empty() {
            builder = builder.tls_certs_merge(certs);
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
        let factor = 1u32 << attempt.saturating_sub(1).min(16);
        self.config
            .backoff
            .saturating_mul(factor)
            .min(self.config.max_backoff)
    }

    // -----------------------------------------------------------------------------------------
    // Authentication

    fn credential(
        &self,
        ep: &Endpoint,
        state: &mut RegistryAuth,
    ) -> Result<Option<FoundCredential>, RegistryError> {
        if state.credential.is_none() {
            let found =
                auth::lookup_credentials(&self.config.auth_env, &ep.registry, &ep.repository)
                    .map_err(|source| RegistryError::Auth {
                        registry: ep.registry.clone(),
                        repository: ep.repository.clone(),
                        source,
                        hint: "fix the credentials configuration".into(),
                    })?;
            state.credential = Some(found);
        }
        Ok(state.credential.clone().flatten())
    }

    fn login_hint(&self, ep: &Endpoint, cred: Option<&FoundCredential>) -> String {
        match cred {
            None => format!(
                "no credentials for {0}: log in with `podman login {0}` (or `docker login {0}`), or set REGISTRY_AUTH_FILE to an auth.json that has them",
                ep.registry
            ),
            Some(f) => format!(
                "the credentials for {} from {} were refused or lack access to {}: log in again, or check the account's permissions",
                ep.registry, f.source, ep.repository
            ),
        }
    }

    fn token(
        &self,
        ep: &Endpoint,
        state: &mut RegistryAuth,
        realm: &str,
        service: Option<&str>,
        wanted: &Scopes,
    ) -> Result<Secret, RegistryError> {
        let now = Instant::now();
        if let Some(t) = state.tokens.get(wanted, now) {
            return Ok(t.value.clone());
        }
        let scopes = state.tokens.scopes_to_request(wanted, now);
        let cred = self.credential(ep, state)?;
        let http = self.http(&ep.registry)?;
        let token = auth::fetch_token(
            &http,
            realm,
            service,
            &scopes,
            cred.as_ref().map(|f| &f.credential),
            self.config.timeout,
        )
        .map_err(|source| {
            let hint = self.login_hint(ep, cred.as_ref());
            RegistryError::Auth {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                source,
                hint,
            }
        })?;
        let value = token.value.clone();
        state.tokens.insert(token, Instant::now());
        Ok(value)
    }

    /// The `Authorization` value for a request to `ep`'s origin, from what the registry asked.
    fn authorization(
        &self,
        ep: &Endpoint,
        scopes: &Scopes,
    ) -> Result<Option<Secret>, RegistryError> {
        let mut map = self.auth.lock().unwrap_or_else(|e| e.into_inner());
        let state = map.entry(ep.registry.clone()).or_default();
        match state.challenge.clone() {
            None => Ok(None),
            Some(Challenge::Basic { .. }) => Ok(self
                .credential(ep, state)?
                .and_then(|f| f.credential.basic_header())),
            Some(Challenge::Bearer { realm, service, .. }) => {
                let token = self.token(ep, state, &realm, service.as_deref(), scopes)?;
                Ok(Some(Secret::new(format!("Bearer {}", token.expose()))))
            }
        }
    }

    /// React to a 401: remember the challenge, get a token for the (merged) scopes. False when
    /// there is nothing new to try.
    fn answer_challenge(
        &self,
        ep: &Endpoint,
        scopes: &Scopes,
        header: Option<&str>,
    ) -> Result<bool, RegistryError> {
        let Some(header) = header else {
            return Ok(false);
        };
        let challenges = auth::parse_challenges(header).map_err(|source| RegistryError::Auth {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            source,
            hint: "the registry's authentication is not supported".into(),
        })?;
        let bearer = challenges
            .iter()
            .find(|c| matches!(c, Challenge::Bearer { .. }));
        let chosen = bearer.or_else(|| challenges.first()).cloned();
        let mut map = self.auth.lock().unwrap_or_else(|e| e.into_inner());
        let state = map.entry(ep.registry.clone()).or_default();
        match chosen {
            None => Ok(false),
            Some(Challenge::Basic { realm }) => {
                let had_basic = matches!(state.challenge, Some(Challenge::Basic { .. }));
                state.challenge = Some(Challenge::Basic { realm });
                // Credentials already sent and refused, or none to send: nothing new.
                Ok(!had_basic && self.credential(ep, state)?.is_some())
            }
            Some(Challenge::Bearer {
                realm,
                service,
                scope,
                error,
            }) => {
                let mut wanted = scopes.clone();
                if let Some(s) = &scope {
                    wanted.merge(&Scopes::parse(s));
                }
                let now = Instant::now();
                let had_token = state.tokens.get(&wanted, now).is_some();
                if had_token || error.as_deref() == Some("invalid_token") {
                    // The registry refused a token that should have done: start afresh.
                    state.tokens.clear();
                }
                state.challenge = Some(Challenge::Bearer {
                    realm: realm.clone(),
                    service: service.clone(),
                    scope: None,
                    error: None,
                });
                self.token(ep, state, &realm, service.as_deref(), &wanted)?;
                Ok(true)
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Sending

    /// Send a request: auth for the registry's own origin only, redirects by hand, bounded
    /// retries for transport errors, 429 and 5xx (with `Retry-After`), one re-authentication
    /// round per challenge.
    fn send(
        &self,
        ep: &Endpoint,
        req: &Request<'_>,
        progress: &dyn Progress,
    ) -> Result<Response, RegistryError> {
        let http = self.http(&ep.registry)?;
        let mut url = req.url.clone();
        let mut method = req.method.clone();
        let mut with_body = req.body.is_some();
        let (mut attempts, mut redirects, mut auth_rounds) = (0u32, 0u32, 0u32);
        loop {
            let same_origin = url.origin() == ep.origin.origin();
            let mut rb = http.request(method.clone(), url.clone());
            for (k, v) in &req.headers {
                rb = rb.header(*k, v.as_str());
            }
            if same_origin {
                if let Some(a) = self.authorization(ep, &req.scopes)? {
                    let mut v =
                        HeaderValue::from_str(a.expose()).map_err(|_| RegistryError::Auth {
                            registry: ep.registry.clone(),
                            repository: ep.repository.clone(),
                            source: AuthError::TokenResponse {
                                realm: ep.registry.clone(),
                                problem: "the token has characters not allowed in a header".into(),
                            },
                            hint: "report this to the registry's operator".into(),
                        })?;
                    v.set_sensitive(true);
                    rb = rb.header(reqwest::header::AUTHORIZATION, v);
                }
            }
            if let (true, Some(body)) = (with_body, req.body) {
                rb = rb.body(body()?);
            }
            if let Some(t) = req.timeout {
                rb = rb.timeout(t);
            }
            let resp = match rb.send() {
                Ok(r) => r,
                Err(e) => {
                    attempts += 1;
                    let message = error_chain(&e);
                    if attempts >= self.config.max_attempts {
                        return Err(RegistryError::Transport {
                            registry: ep.registry.clone(),
                            repository: ep.repository.clone(),
                            action: req.action.clone(),
                            attempts,
                            message,
                            hint: self.transport_hint(ep),
                        });
                    }
                    let delay = self.backoff(attempts);
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
            let retryable = status == StatusCode::TOO_MANY_REQUESTS
                || status == StatusCode::BAD_GATEWAY
                || status == StatusCode::SERVICE_UNAVAILABLE
                || status == StatusCode::GATEWAY_TIMEOUT
                || status == StatusCode::INTERNAL_SERVER_ERROR;
            if retryable && attempts + 1 < self.config.max_attempts {
                attempts += 1;
                let delay = header_str(resp.headers(), "retry-after")
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .map(|s| Duration::from_secs(s).min(self.config.max_retry_after))
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

    fn transport_hint(&self, ep: &Endpoint) -> String {
        if ep.origin.scheme() == "https" {
            format!(
                "check the network (HTTPS_PROXY / NO_PROXY) and that {0} is reachable; for a private CA set a CA file for {0} (or SSL_CERT_FILE); a registry that serves plain HTTP must be allowed explicitly (insecure_http for {0})",
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
            let map = self.auth.lock().unwrap_or_else(|e| e.into_inner());
            map.get(&ep.registry)
                .and_then(|s| s.credential.clone().flatten())
        };
        RegistryError::Unauthorized {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            action: action.to_string(),
            status,
            detail: read_error_detail(resp),
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
            detail: read_error_detail(resp),
            hint,
        }
    }

    // -----------------------------------------------------------------------------------------
    // Manifests

    /// Fetch the manifest or index `reference` names, trying mirrors first. Verified against the
    /// reference's digest (if any) and the registry's `Docker-Content-Digest` (if sent).
    pub fn get_manifest(&self, reference: &Reference) -> Result<FetchedManifest, RegistryError> {
        self.get_manifest_with(reference, &NoProgress)
    }

    pub fn get_manifest_with(
        &self,
        reference: &Reference,
        progress: &dyn Progress,
    ) -> Result<FetchedManifest, RegistryError> {
        self.try_endpoints(reference, progress, |ep| {
            self.get_manifest_from(ep, reference, progress)
        })
    }

    fn try_endpoints<T>(
        &self,
        reference: &Reference,
        progress: &dyn Progress,
        f: impl Fn(&Endpoint) -> Result<T, RegistryError>,
    ) -> Result<T, RegistryError> {
        let eps = self.pull_endpoints(reference)?;
        let last = eps.len() - 1;
        for (i, ep) in eps.iter().enumerate() {
            match f(ep) {
                Ok(v) => return Ok(v),
                Err(e) if i < last => {
                    progress.message(&format!(
                        "mirror {}/{} failed, trying the next: {e}",
                        ep.registry, ep.repository
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        unreachable!("pull_endpoints always returns the registry itself")
    }

    fn get_manifest_from(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        progress: &dyn Progress,
    ) -> Result<FetchedManifest, RegistryError> {
        let mref = reference.manifest_reference();
        let action = format!("GET manifest {mref}");
        let req = Request::new(
            Method::GET,
            ep.url(&format!("manifests/{mref}")),
            action.clone(),
            Scopes::repository(&ep.repository, &["pull"]),
        )
        .header("Accept", MANIFEST_MEDIA_TYPES.join(", "));
        let resp = self.send(ep, &req, progress)?;
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            return Err(RegistryError::ManifestUnknown {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                reference: mref,
                status: status.as_u16(),
                detail: read_error_detail(resp),
            });
        }
        if !status.is_success() {
            return Err(self.status_error(ep, &action, resp));
        }
        let limit = self.config.max_manifest_bytes;
        let too_large = |size| RegistryError::ManifestTooLarge {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            reference: mref.clone(),
            limit,
            size,
        };
        if let Some(len) = resp.content_length().filter(|l| *l > limit) {
            return Err(too_large(Some(len)));
        }
        let content_type = header_str(resp.headers(), "content-type")
            .map(|s| s.split(';').next().unwrap_or("").trim().to_string());
        let claimed = header_str(resp.headers(), "docker-content-digest");
        let mut bytes = Vec::new();
        resp.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| RegistryError::Transport {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                action: action.clone(),
                attempts: 1,
                message: e.to_string(),
                hint: self.transport_hint(ep),
            })?;
        if bytes.len() as u64 > limit {
            return Err(too_large(None));
        }
        let digest = Digest::of(&bytes);
        let mismatch = |expected| RegistryError::DigestMismatch {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            what: format!("manifest `{mref}`"),
            expected,
            found: digest,
        };
        if let Some(expected) = reference.digest() {
            if expected != digest {
                return Err(mismatch(expected));
            }
        } else if let Some(claimed) = claimed.and_then(|c| c.parse::<Digest>().ok()) {
            if claimed != digest {
                return Err(mismatch(claimed));
            }
        }
        let media_type =
            manifest_media_type(content_type.as_deref(), &bytes).map_err(|problem| {
                RegistryError::BadManifest {
                    registry: ep.registry.clone(),
                    repository: ep.repository.clone(),
                    reference: mref.clone(),
                    problem,
                }
            })?;
        Ok(FetchedManifest {
            bytes,
            media_type,
            digest,
        })
    }

    /// The image manifest of `reference` for `platform`: the manifest itself when the reference
    /// names one, else the index's entry for the platform (fetched by digest and verified).
    /// Returns the index too, when there was one.
    pub fn get_image_manifest(
        &self,
        reference: &Reference,
        platform: &Platform,
        progress: &dyn Progress,
    ) -> Result<(FetchedManifest, Option<FetchedManifest>), RegistryError> {
        let top = self.get_manifest_with(reference, progress)?;
        if !top.is_index() {
            return Ok((top, None));
        }
        let desc = select_platform(reference, &top.bytes, platform)?;
        let child = self.get_manifest_with(&reference.with_digest(desc.digest), progress)?;
        if child.bytes.len() as u64 != desc.size {
            return Err(RegistryError::BadManifest {
                registry: reference.registry().to_string(),
                repository: reference.repository().to_string(),
                reference: desc.digest.to_string(),
                problem: format!(
                    "is {} bytes, the index says {}",
                    child.bytes.len(),
                    desc.size
                ),
            });
        }
        Ok((child, Some(top)))
    }

    // -----------------------------------------------------------------------------------------
    // Blobs: pull

    /// Download a blob into the store, verified (nothing is kept unless the digest matches).
    /// Does nothing when the store has it. `size`, when known, is checked too.
    pub fn pull_blob(
        &self,
        reference: &Reference,
        digest: &Digest,
        size: Option<u64>,
        store: &Store,
        progress: &dyn Progress,
    ) -> Result<(), RegistryError> {
        if store.has_blob(digest) {
            return Ok(());
        }
        self.try_endpoints(reference, progress, |ep| {
            self.pull_blob_from(ep, digest, size, store, progress)
        })
    }

    /// [`Self::pull_blob`] for many blobs, [`ClientConfig::concurrency`] at a time. Stops at the
    /// first error (downloads in flight finish or fail on their own).
    pub fn pull_blobs(
        &self,
        reference: &Reference,
        blobs: &[Descriptor],
        store: &Store,
        progress: &dyn Progress,
    ) -> Result<(), RegistryError> {
        let todo: Vec<&Descriptor> = blobs
            .iter()
            .filter(|d| !store.has_blob(&d.digest))
            .collect();
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let first_error: Mutex<Option<RegistryError>> = Mutex::new(None);
        let workers = self.config.concurrency.clamp(1, todo.len().max(1));
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| loop {
                    if failed.load(Ordering::Relaxed) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(d) = todo.get(i) else { return };
                    if let Err(e) =
                        self.pull_blob(reference, &d.digest, Some(d.size), store, progress)
                    {
                        failed.store(true, Ordering::Relaxed);
                        let mut slot = first_error.lock().unwrap_or_else(|e| e.into_inner());
                        slot.get_or_insert(e);
                        return;
                    }
                });
            }
        });
        match first_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn pull_blob_from(
        &self,
        ep: &Endpoint,
        digest: &Digest,
        size: Option<u64>,
        store: &Store,
        progress: &dyn Progress,
    ) -> Result<(), RegistryError> {
        let store_err = |source| RegistryError::Store {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            digest: *digest,
            source,
        };
        let action = format!("GET blob {digest}");
        let url = ep.url(&format!("blobs/{digest}"));
        let scopes = Scopes::repository(&ep.repository, &["pull"]);
        let mut writer = store.blob_writer().map_err(store_err)?;
        let mut cuts = 0u32;
        progress.blob_started(digest, size);
        loop {
            let offset = writer.bytes_written();
            let mut req = Request::new(Method::GET, url.clone(), action.clone(), scopes.clone());
            if offset > 0 {
                req = req.header("Range", format!("bytes={offset}-"));
            }
            let resp = self.send(ep, &req, progress)?;
            let status = resp.status();
            match status {
                StatusCode::OK if offset > 0 => {
                    // The server ignored the Range: start over.
                    writer = store.blob_writer().map_err(store_err)?;
                    progress.blob_started(digest, size);
                }
                StatusCode::OK => {}
                StatusCode::PARTIAL_CONTENT => {
                    let start = header_str(resp.headers(), "content-range")
                        .and_then(|v| parse_content_range_start(&v));
                    if start != Some(offset) {
                        // Not the part asked for: start over.
                        writer = store.blob_writer().map_err(store_err)?;
                        progress.blob_started(digest, size);
                        cuts += 1;
                        if cuts >= self.config.max_attempts {
                            return Err(self.cut_error(ep, &action, cuts, "bad Content-Range"));
                        }
                        continue;
                    }
                }
                StatusCode::RANGE_NOT_SATISFIABLE if offset > 0 => {
                    writer = store.blob_writer().map_err(store_err)?;
                    progress.blob_started(digest, size);
                    continue;
                }
                StatusCode::NOT_FOUND => {
                    return Err(RegistryError::BlobUnknown {
                        registry: ep.registry.clone(),
                        repository: ep.repository.clone(),
                        digest: *digest,
                        detail: read_error_detail(resp),
                    })
                }
                _ => return Err(self.status_error(ep, &action, resp)),
            }
            match copy_body(resp, &mut writer, digest, size, progress) {
                Ok(()) if size.is_none_or(|s| writer.bytes_written() >= s) => break,
                Ok(()) => {
                    // A clean end before the size: the server closed early. Resume.
                    cuts += 1;
                    if cuts >= self.config.max_attempts {
                        return Err(self.cut_error(ep, &action, cuts, "the stream ended early"));
                    }
                }
                Err(CopyError::TooLong(found)) => {
                    return Err(RegistryError::SizeMismatch {
                        registry: ep.registry.clone(),
                        repository: ep.repository.clone(),
                        digest: *digest,
                        expected: size.unwrap_or(0),
                        found,
                    })
                }
                Err(CopyError::Store(e)) => return Err(store_err(StoreError::Io(e))),
                Err(CopyError::Read(e)) => {
                    cuts += 1;
                    if cuts >= self.config.max_attempts {
                        return Err(self.cut_error(ep, &action, cuts, &e.to_string()));
                    }
                    let delay = self.backoff(cuts);
                    progress.retrying(
                        &action,
                        cuts,
                        delay,
                        &format!("stream cut after {} bytes: {e}", writer.bytes_written()),
                    );
                    std::thread::sleep(delay);
                }
            }
        }
        let found_size = writer.bytes_written();
        match writer.commit(Some(*digest)) {
            Ok(_) => {}
            Err(StoreError::DigestMismatch {
                expected, found, ..
            }) => {
                return Err(RegistryError::DigestMismatch {
                    registry: ep.registry.clone(),
                    repository: ep.repository.clone(),
                    what: format!("blob {digest} ({found_size} bytes)"),
                    expected,
                    found,
                })
            }
            Err(e) => return Err(store_err(e)),
        }
        progress.blob_finished(digest);
        Ok(())
    }

    fn cut_error(&self, ep: &Endpoint, action: &str, attempts: u32, why: &str) -> RegistryError {
        RegistryError::Transport {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            action: action.to_string(),
            attempts,
            message: format!("download interrupted: {why}"),
            hint: self.transport_hint(ep),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Blobs: push

    /// True if the repository has the blob (HEAD).
    pub fn blob_exists(&self, target: &Reference, digest: &Digest) -> Result<bool, RegistryError> {
        let ep = self.endpoint(target.registry(), target.repository())?;
        self.blob_exists_at(&ep, digest, &Scopes::repository(&ep.repository, &["pull"]))
    }

    fn blob_exists_at(
        &self,
        ep: &Endpoint,
        digest: &Digest,
        scopes: &Scopes,
    ) -> Result<bool, RegistryError> {
        let action = format!("HEAD blob {digest}");
        let req = Request::new(
            Method::HEAD,
            ep.url(&format!("blobs/{digest}")),
            action.clone(),
            scopes.clone(),
        );
        let resp = self.send(ep, &req, &NoProgress)?;
        match resp.status() {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(self.status_error(ep, &action, resp)),
        }
    }

    /// Push a blob from the store to `target`'s repository: skipped when present (HEAD);
    /// mounted from `mount_from` (same registry) when given and the registry agrees; else
    /// uploaded in one PUT, or in chunks when that is refused.
    pub fn push_blob(
        &self,
        target: &Reference,
        digest: &Digest,
        size: u64,
        store: &Store,
        mount_from: Option<&Reference>,
        progress: &dyn Progress,
    ) -> Result<BlobPush, RegistryError> {
        let ep = self.endpoint(target.registry(), target.repository())?;
        let mut scopes = Scopes::repository(&ep.repository, &["pull", "push"]);
        if self.blob_exists_at(&ep, digest, &scopes)? {
            return Ok(BlobPush::Existed);
        }
        let io_err = |source| RegistryError::Io {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            digest: *digest,
            source,
        };
        // The blob must be in the store, and be what it claims.
        let on_disk = store.blob_path(digest);
        let meta = fs::metadata(&on_disk).map_err(io_err)?;
        if meta.len() != size {
            return Err(RegistryError::SizeMismatch {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                digest: *digest,
                expected: size,
                found: meta.len(),
            });
        }

        let mut location = None;
        if let Some(from) = mount_from
            .filter(|f| f.registry() == target.registry() && f.repository() != target.repository())
        {
            scopes.add("repository", from.repository(), ["pull"]);
            let mut url = ep.url("blobs/uploads/");
            url.query_pairs_mut()
                .append_pair("mount", &digest.to_string())
                .append_pair("from", from.repository());
            let action = format!("mount blob {digest} from {}", from.repository());
            let req = Request::new(Method::POST, url, action.clone(), scopes.clone())
                .header("Content-Length", "0");
            let resp = self.send(&ep, &req, progress)?;
            match resp.status() {
                StatusCode::CREATED => return Ok(BlobPush::Mounted),
                // Not mounted: the registry opened an upload session instead.
                StatusCode::ACCEPTED => location = Some(self.location(&ep, &action, &resp)?),
                _ => return Err(self.status_error(&ep, &action, resp)),
            }
        }

        if size <= self.config.monolithic_limit {
            let loc = match location.take() {
                Some(l) => l,
                None => self.start_upload(&ep, digest, &scopes, progress)?,
            };
            let mut url = loc;
            url.query_pairs_mut()
                .append_pair("digest", &digest.to_string());
            let action = format!("upload blob {digest}");
            let path = on_disk.clone();
            let make_body = move || -> Result<Body, RegistryError> {
                let f = fs::File::open(&path).map_err(io_err)?;
                Ok(Body::sized(f, size))
            };
            let mut req = Request::new(Method::PUT, url, action.clone(), scopes.clone())
                .header("Content-Type", "application/octet-stream")
                .body(&make_body);
            req.timeout = Some(self.upload_timeout(size));
            let resp = self.send(&ep, &req, progress)?;
            match resp.status() {
                StatusCode::CREATED | StatusCode::NO_CONTENT | StatusCode::OK => {
                    self.check_pushed_digest(&ep, &action, &resp, digest)?;
                    progress.blob_progress(digest, size);
                    return Ok(BlobPush::Uploaded);
                }
                // Refused as too large, or monolithic uploads not supported: chunks.
                StatusCode::PAYLOAD_TOO_LARGE
                | StatusCode::BAD_REQUEST
                | StatusCode::METHOD_NOT_ALLOWED
                | StatusCode::NOT_IMPLEMENTED
                | StatusCode::RANGE_NOT_SATISFIABLE => {
                    let why = format!("monolithic upload refused (HTTP {})", resp.status());
                    progress.message(&format!(
                        "{}/{}: {why}; uploading {digest} in chunks",
                        ep.registry, ep.repository
                    ));
                }
                _ => return Err(self.status_error(&ep, &action, resp)),
            }
        }
        self.push_chunked(&ep, digest, size, &on_disk, &scopes, progress)?;
        Ok(BlobPush::UploadedChunked)
    }

    fn upload_timeout(&self, size: u64) -> Duration {
        // At least 64 KiB/s, on top of the usual timeout.
        self.config.timeout + Duration::from_secs(size / (64 * 1024))
    }

    fn location(&self, ep: &Endpoint, action: &str, resp: &Response) -> Result<Url, RegistryError> {
        let bad = |detail: String| RegistryError::Status {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            action: action.to_string(),
            status: resp.status().as_u16(),
            detail,
            hint: String::new(),
        };
        let loc = header_str(resp.headers(), "location")
            .ok_or_else(|| bad(": no Location header in the answer".into()))?;
        ep.origin
            .join(&loc)
            .map_err(|e| bad(format!(": bad Location `{loc}` ({e})")))
    }

    fn start_upload(
        &self,
        ep: &Endpoint,
        digest: &Digest,
        scopes: &Scopes,
        progress: &dyn Progress,
    ) -> Result<Url, RegistryError> {
        let action = format!("start upload of blob {digest}");
        let req = Request::new(
            Method::POST,
            ep.url("blobs/uploads/"),
            action.clone(),
            scopes.clone(),
        )
        .header("Content-Length", "0");
        let resp = self.send(ep, &req, progress)?;
        if resp.status() != StatusCode::ACCEPTED {
            return Err(self.status_error(ep, &action, resp));
        }
        self.location(ep, &action, &resp)
    }

    fn check_pushed_digest(
        &self,
        ep: &Endpoint,
        action: &str,
        resp: &Response,
        digest: &Digest,
    ) -> Result<(), RegistryError> {
        if let Some(claimed) =
            header_str(resp.headers(), "docker-content-digest").and_then(|c| c.parse().ok())
        {
            if claimed != *digest {
                return Err(RegistryError::DigestMismatch {
                    registry: ep.registry.clone(),
                    repository: ep.repository.clone(),
                    what: format!("{action}: the registry's record"),
                    expected: *digest,
                    found: claimed,
                });
            }
        }
        Ok(())
    }

    fn push_chunked(
        &self,
        ep: &Endpoint,
        digest: &Digest,
        size: u64,
        path: &std::path::Path,
        scopes: &Scopes,
        progress: &dyn Progress,
    ) -> Result<(), RegistryError> {
        let io_err = |source| RegistryError::Io {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            digest: *digest,
            source,
        };
        let action = format!("chunked upload of blob {digest}");
        let mut loc = self.start_upload(ep, digest, scopes, progress)?;
        let mut offset = 0u64;
        let mut resyncs = 0u32;
        let chunk = self.config.chunk_size.max(1);
        while offset < size {
            let len = chunk.min(size - offset);
            let start = offset;
            let make_body = || -> Result<Body, RegistryError> {
                let mut f = fs::File::open(path).map_err(io_err)?;
                f.seek(SeekFrom::Start(start)).map_err(io_err)?;
                Ok(Body::sized(f.take(len), len))
            };
            let mut req = Request::new(Method::PATCH, loc.clone(), action.clone(), scopes.clone())
                .header("Content-Type", "application/octet-stream")
                .header("Content-Range", format!("{start}-{}", start + len - 1))
                .body(&make_body);
            req.timeout = Some(self.upload_timeout(len));
            let resp = self.send(ep, &req, progress)?;
            match resp.status() {
                StatusCode::ACCEPTED | StatusCode::NO_CONTENT => {
                    let next_loc = self.location(ep, &action, &resp).unwrap_or(loc.clone());
                    let end = header_str(resp.headers(), "range").and_then(|r| parse_range_end(&r));
                    // The server's count of what it has is authoritative.
                    offset = match end {
                        Some(e) => e + 1,
                        None => start + len,
                    };
                    loc = next_loc;
                    progress.blob_progress(digest, len);
                }
                StatusCode::RANGE_NOT_SATISFIABLE => {
                    // Out of step with the server: ask where it is, continue from there.
                    resyncs += 1;
                    if resyncs >= self.config.max_attempts {
                        return Err(self.status_error(ep, &action, resp));
                    }
                    drop(resp);
                    let (l, o) = self.upload_status(ep, &loc, scopes, &action, progress)?;
                    loc = l;
                    offset = o;
                    progress.retrying(
                        &action,
                        resyncs,
                        Duration::ZERO,
                        &format!("HTTP 416: resuming at byte {offset}"),
                    );
                }
                _ => return Err(self.status_error(ep, &action, resp)),
            }
        }
        let mut url = loc;
        url.query_pairs_mut()
            .append_pair("digest", &digest.to_string());
        let empty = || -> Result<Body, RegistryError> { Ok(Body::from(Vec::new())) };
        let req = Request::new(Method::PUT, url, action.clone(), scopes.clone())
            .header("Content-Type", "application/octet-stream")
            .body(&empty);
        let resp = self.send(ep, &req, progress)?;
        match resp.status() {
            StatusCode::CREATED | StatusCode::NO_CONTENT | StatusCode::OK => {
                self.check_pushed_digest(ep, &action, &resp, digest)
            }
            _ => Err(self.status_error(ep, &action, resp)),
        }
    }

    /// GET an upload session: its location and the next byte the server expects.
    fn upload_status(
        &self,
        ep: &Endpoint,
        loc: &Url,
        scopes: &Scopes,
        action: &str,
        progress: &dyn Progress,
    ) -> Result<(Url, u64), RegistryError> {
        let req = Request::new(
            Method::GET,
            loc.clone(),
            format!("{action}: upload status"),
            scopes.clone(),
        );
        let resp = self.send(ep, &req, progress)?;
        if !resp.status().is_success() {
            return Err(self.status_error(ep, action, resp));
        }
        let next = self.location(ep, action, &resp).unwrap_or(loc.clone());
        // Distribution answers `0-0` for an empty upload too: take it as nothing received.
        let offset = header_str(resp.headers(), "range")
            .and_then(|r| parse_range_end(&r))
            .map_or(0, |e| if e == 0 { 0 } else { e + 1 });
        Ok((next, offset))
    }

    // -----------------------------------------------------------------------------------------
    // Manifests: push

    /// Push a manifest (or index) under a tag or its digest; returns its digest.
    pub fn push_manifest(
        &self,
        target: &Reference,
        tag_or_digest: &str,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<Digest, RegistryError> {
        let ep = self.endpoint(target.registry(), target.repository())?;
        let digest = Digest::of(bytes);
        if bytes.len() as u64 > self.config.max_manifest_bytes {
            return Err(RegistryError::ManifestTooLarge {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                reference: tag_or_digest.to_string(),
                limit: self.config.max_manifest_bytes,
                size: Some(bytes.len() as u64),
            });
        }
        let action = format!("PUT manifest {tag_or_digest}");
        let data = bytes.to_vec();
        let make_body = move || -> Result<Body, RegistryError> { Ok(Body::from(data.clone())) };
        let req = Request::new(
            Method::PUT,
            ep.url(&format!("manifests/{tag_or_digest}")),
            action.clone(),
            Scopes::repository(&ep.repository, &["pull", "push"]),
        )
        .header("Content-Type", media_type)
        .body(&make_body);
        let resp = self.send(&ep, &req, &NoProgress)?;
        match resp.status() {
            StatusCode::CREATED | StatusCode::OK | StatusCode::ACCEPTED => {
                self.check_pushed_digest(&ep, &action, &resp, &digest)?;
                Ok(digest)
            }
            _ => Err(self.status_error(&ep, &action, resp)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Platform selection

fn normalize_variant(arch: &str, variant: Option<&str>) -> Option<String> {
    match (arch, variant) {
        ("arm64", Some("v8")) | ("arm64", None) => None,
        ("arm", None) => Some("v7".into()),
        (_, v) => v.map(String::from),
    }
}

fn platform_string(p: &Platform) -> String {
    match &p.variant {
        Some(v) => format!("{}/{}/{v}", p.os, p.architecture),
        None => format!("{}/{}", p.os, p.architecture),
    }
}

/// The descriptor in an image index (OCI index or Docker manifest list) for `platform`
/// (os, architecture, variant; `arm64` = `arm64/v8`, `arm` = `arm/v7`). Attestation entries
/// (`unknown/unknown`, or annotated as attestation manifests) are skipped.
pub fn select_platform(
    reference: &Reference,
    index: &[u8],
    platform: &Platform,
) -> Result<Descriptor, RegistryError> {
    #[derive(serde::Deserialize)]
    struct AnyIndex {
        #[serde(default)]
        manifests: Option<Vec<Descriptor>>,
    }
    let bad = |problem: String| RegistryError::BadManifest {
        registry: reference.registry().to_string(),
        repository: reference.repository().to_string(),
        reference: reference.manifest_reference(),
        problem,
    };
    let parsed: AnyIndex = serde_json::from_slice(index)
        .map_err(|e| bad(format!("is not a valid image index ({e})")))?;
    let manifests = parsed
        .manifests
        .ok_or_else(|| bad("is not an image index (no `manifests`)".into()))?;
    let wanted_variant = normalize_variant(&platform.architecture, platform.variant.as_deref());
    let mut available = Vec::new();
    for d in manifests {
        let Some(p) = &d.platform else { continue };
        let attestation = (p.os == "unknown" && p.architecture == "unknown")
            || d.annotations
                .get("vnd.docker.reference.type")
                .map(String::as_str)
                == Some("attestation-manifest");
        if attestation {
            continue;
        }
        if p.os == platform.os
            && p.architecture == platform.architecture
            && normalize_variant(&p.architecture, p.variant.as_deref()) == wanted_variant
        {
            return Ok(d);
        }
        available.push(platform_string(p));
    }
    Err(RegistryError::NoPlatform {
        registry: reference.registry().to_string(),
        repository: reference.repository().to_string(),
        reference: reference.manifest_reference(),
        wanted: platform_string(platform),
        available: if available.is_empty() {
            "no platforms".into()
        } else {
            available.join(", ")
        },
    })
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn manifest_media_type(content_type: Option<&str>, bytes: &[u8]) -> Result<String, String> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default, rename = "mediaType")]
        media_type: Option<String>,
        #[serde(default, rename = "schemaVersion")]
        schema_version: Option<u32>,
        #[serde(default)]
        manifests: Option<serde_json::Value>,
    }
    let probe: Probe = serde_json::from_slice(bytes)
        .map_err(|e| format!("is not JSON ({e}); the registry served something else"))?;
    if probe.schema_version == Some(1) {
        return Err("is a Docker schema 1 manifest, which ocibuild does not read; use an image pushed in the v2 or OCI format".into());
    }
    let from_header = content_type.filter(|c| MANIFEST_MEDIA_TYPES.contains(c));
    let mt = match (from_header, probe.media_type) {
        (Some(h), _) => h.to_string(),
        (None, Some(m)) if MANIFEST_MEDIA_TYPES.contains(&m.as_str()) => m,
        (None, Some(m)) => return Err(format!("has the unsupported media type `{m}`")),
        (None, None) if probe.manifests.is_some() => MEDIA_TYPE_INDEX.to_string(),
        (None, None) => MEDIA_TYPE_MANIFEST.to_string(),
    };
    Ok(mt)
}

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
/// the start of a plain body; empty when there is nothing useful.
pub(crate) fn error_detail(body: &[u8]) -> String {
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

fn read_error_detail(resp: Response) -> String {
    let mut body = Vec::new();
    let _ = resp.take(MAX_ERROR_BODY).read_to_end(&mut body);
    error_detail(&body)
}

/// An error and its sources, joined (`error sending request: … : invalid peer certificate`).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(cause) = src {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        src = cause.source();
    }
    s
}

enum CopyError {
    Read(io::Error),
    Store(io::Error),
    /// More bytes than the expected size: at least this many.
    TooLong(u64),
}

fn copy_body(
    mut resp: Response,
    writer: &mut crate::store::BlobWriter,
    digest: &Digest,
    size: Option<u64>,
    progress: &dyn Progress,
) -> Result<(), CopyError> {
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match resp.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Read(e)),
        };
        let total = writer.bytes_written() + n as u64;
        if size.is_some_and(|s| total > s) {
            return Err(CopyError::TooLong(total));
        }
        writer.write_all(&buf[..n]).map_err(CopyError::Store)?;
        progress.blob_progress(digest, n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Reference {
        Reference::parse(s).unwrap()
    }

    fn plat(os: &str, arch: &str, variant: Option<&str>) -> Platform {
        Platform {
            os: os.into(),
            architecture: arch.into(),
            variant: variant.map(String::from),
        }
    }

    fn index_json() -> Vec<u8> {
        let d = |s: &str| Digest::of(s.as_bytes()).to_string();
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MEDIA_TYPE_INDEX,
            "manifests": [
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("att"), "size": 1,
                 "platform": {"os": "unknown", "architecture": "unknown"},
                 "annotations": {"vnd.docker.reference.type": "attestation-manifest"}},
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("amd64"), "size": 2,
                 "platform": {"os": "linux", "architecture": "amd64"}},
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("arm64"), "size": 3,
                 "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("armv6"), "size": 4,
                 "platform": {"os": "linux", "architecture": "arm", "variant": "v6"}},
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("armv7"), "size": 5,
                 "platform": {"os": "linux", "architecture": "arm", "variant": "v7"}},
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("win"), "size": 6,
                 "platform": {"os": "windows", "architecture": "amd64", "os.version": "10.0"}},
            ]
        }))
        .unwrap()
    }

    #[test]
    fn platform_selection() {
        let idx = index_json();
        let rf = r("docker.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04");
        let pick = |p: Platform| select_platform(&rf, &idx, &p).map(|d| d.size);
        assert_eq!(pick(plat("linux", "amd64", None)).unwrap(), 2);
        assert_eq!(pick(plat("linux", "arm64", None)).unwrap(), 3);
        assert_eq!(pick(plat("linux", "arm64", Some("v8"))).unwrap(), 3);
        assert_eq!(pick(plat("linux", "arm", None)).unwrap(), 5);
        assert_eq!(pick(plat("linux", "arm", Some("v6"))).unwrap(), 4);
        assert_eq!(pick(plat("windows", "amd64", None)).unwrap(), 6);
        let e = pick(plat("linux", "ppc64le", None))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("docker.io/nvidia/cuda")
                && e.contains("linux/ppc64le")
                && e.contains(
                    "linux/amd64, linux/arm64/v8, linux/arm/v6, linux/arm/v7, windows/amd64"
                )
                && !e.contains("unknown"),
            "{e}"
        );
        let e = select_platform(&rf, b"{}", &plat("linux", "amd64", None))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not an image index"), "{e}");
        let e = select_platform(&rf, b"nope", &plat("linux", "amd64", None))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a valid image index"), "{e}");
    }

    #[test]
    fn media_types() {
        let mt = |ct: Option<&str>, body: &str| manifest_media_type(ct, body.as_bytes());
        assert_eq!(mt(Some(MEDIA_TYPE_INDEX), "{}").unwrap(), MEDIA_TYPE_INDEX);
        assert_eq!(
            mt(
                Some("application/json"),
                &format!(r#"{{"mediaType":"{MEDIA_TYPE_DOCKER_LIST}"}}"#)
            )
            .unwrap(),
            MEDIA_TYPE_DOCKER_LIST
        );
        assert_eq!(mt(None, r#"{"manifests":[]}"#).unwrap(), MEDIA_TYPE_INDEX);
        assert_eq!(mt(None, r#"{"layers":[]}"#).unwrap(), MEDIA_TYPE_MANIFEST);
        assert!(mt(None, r#"{"schemaVersion":1}"#)
            .unwrap_err()
            .contains("schema 1"));
        assert!(mt(None, r#"{"mediaType":"x/y"}"#)
            .unwrap_err()
            .contains("x/y"));
        assert!(mt(None, "<html>").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn header_parsing() {
        assert_eq!(parse_content_range_start("bytes 100-199/200"), Some(100));
        assert_eq!(parse_content_range_start("bytes 0-9/*"), Some(0));
        assert_eq!(parse_content_range_start("items 1-2"), None);
        assert_eq!(parse_range_end("0-99"), Some(99));
        assert_eq!(parse_range_end("bytes=0-4"), Some(4));
        assert_eq!(parse_range_end("junk"), None);
        assert_eq!(
            error_detail(
                br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#
            ),
            ": MANIFEST_UNKNOWN: manifest unknown"
        );
        assert_eq!(
            error_detail(br#"{"details":"incorrect username or password"}"#),
            ": incorrect username or password"
        );
        assert_eq!(error_detail(b"<html>nope</html>"), "");
        assert_eq!(error_detail(b"plain words"), ": plain words");
        assert_eq!(error_detail(b""), "");
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
        std::fs::write(&bad, b"not a certificate").unwrap();
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
