//! Registry authentication: credentials, challenges, Bearer tokens.
//!
//! Credentials are looked up the way podman (containers/image) and docker do:
//! 1. `$REGISTRY_AUTH_FILE`: when set, the only file consulted (as podman's `--authfile`);
//! 2. `$XDG_RUNTIME_DIR/containers/auth.json`;
//! 3. `$XDG_CONFIG_HOME/containers/auth.json` (`~/.config/containers/auth.json`);
//! 4. `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
//!
//! The first file with an entry for the registry wins. Within a file: `credHelpers[registry]`,
//! then `auths` (the most specific key first: `registry/namespace/repo`, …, `registry`; keys
//! with a scheme or a `/v1/` suffix as docker writes them are accepted), then `credsStore`. A
//! helper is run as `docker-credential-NAME get`, the server URL on stdin, JSON on stdout.
//!
//! Secrets live in [`Secret`], whose `Debug` and `Display` print `***`; no error here carries one.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use fs_err as fs;
use serde::Deserialize;

/// Tokens without `expires_in` live 60 s (the distribution token spec's default).
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60);
/// A token is renewed this long before it expires (at most half its lifetime).
const TOKEN_EXPIRY_MARGIN: Duration = Duration::from_secs(10);
/// Token responses larger than this are refused.
const MAX_TOKEN_RESPONSE: u64 = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("reading credentials from {path}: {source}")]
    ReadFile { path: PathBuf, source: io::Error },
    #[error("credentials file {path} is not valid JSON: {source}; fix or remove it")]
    ParseFile {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("credentials file {path}, entry `{key}`: {problem}; log in again (`podman login` / `docker login`)")]
    BadEntry {
        path: PathBuf,
        key: String,
        problem: String,
    },
    #[error("credential helper `{helper}` (named in {config}) is not on PATH; install it or remove it from that file")]
    HelperNotFound { helper: String, config: PathBuf },
    #[error("credential helper `{helper}` failed for {registry} ({status}): {message}")]
    HelperFailed {
        helper: String,
        registry: String,
        status: String,
        message: String,
    },
    #[error("credential helper `{helper}` printed no valid credentials for {registry}: {problem}")]
    HelperOutput {
        helper: String,
        registry: String,
        problem: String,
    },
    #[error("running credential helper `{helper}`: {source}")]
    HelperIo { helper: String, source: io::Error },
    #[error("cannot parse the registry's WWW-Authenticate header `{header}`: {problem}")]
    Challenge { header: String, problem: String },
    #[error("token endpoint {realm} answered {status}{detail}")]
    TokenStatus {
        realm: String,
        status: u16,
        detail: String,
    },
    #[error("token endpoint {realm}: {source}")]
    TokenTransport {
        realm: String,
        source: reqwest::Error,
    },
    #[error("token endpoint {realm}: {problem}")]
    TokenResponse { realm: String, problem: String },
}

// ---------------------------------------------------------------------------------------------
// Secrets and credentials

/// A secret string (password, token). `Debug` and `Display` print `***`; read it with
/// [`Secret::expose`] only where it goes onto the wire.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Credentials for one registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    /// User name and password (or a personal access token used as a password).
    Basic { username: String, password: Secret },
    /// An OAuth2 refresh token (`identitytoken` in the auth file, or a helper's `<token>` user):
    /// exchanged at the token endpoint with `grant_type=refresh_token`.
    IdentityToken(Secret),
}

impl Credential {
    /// The `Authorization` header value for Basic auth, if these are Basic credentials.
    pub fn basic_header(&self) -> Option<Secret> {
        match self {
            Credential::Basic { username, password } => Some(Secret(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD
                    .encode(format!("{username}:{}", password.expose()))
            ))),
            Credential::IdentityToken(_) => None,
        }
    }
}

/// Credentials and where they were found (a file or a helper), for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundCredential {
    pub credential: Credential,
    pub source: String,
}

/// The environment credential lookup reads: a snapshot, so tests can pass their own.
#[derive(Clone, Debug, Default)]
pub struct AuthEnv {
    vars: BTreeMap<String, OsString>,
}

const ENV_KEYS: &[&str] = &[
    "REGISTRY_AUTH_FILE",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "DOCKER_CONFIG",
    "HOME",
    "PATH",
];

impl AuthEnv {
    /// The variables credential lookup uses, from this process's environment.
    pub fn from_process() -> Self {
        let mut vars = BTreeMap::new();
        for k in ENV_KEYS {
            if let Some(v) = std::env::var_os(k) {
                vars.insert(k.to_string(), v);
            }
        }
        AuthEnv { vars }
    }

    /// No variables at all: no auth file, no helper is found.
    pub fn empty() -> Self {
        AuthEnv::default()
    }

    /// Set a variable (builder style).
    pub fn with(mut self, key: &str, value: impl Into<OsString>) -> Self {
        self.vars.insert(key.to_string(), value.into());
        self
    }

    fn var(&self, key: &str) -> Option<&OsStr> {
        self.vars
            .get(key)
            .map(|v| v.as_os_str())
            .filter(|v| !v.is_empty())
    }

    /// The auth files consulted, in order (whether or not they exist).
    pub fn auth_files(&self) -> Vec<PathBuf> {
        if let Some(f) = self.var("REGISTRY_AUTH_FILE") {
            return vec![PathBuf::from(f)];
        }
        let home = self.var("HOME").map(PathBuf::from);
        let mut files = Vec::new();
        if let Some(d) = self.var("XDG_RUNTIME_DIR") {
            files.push(Path::new(d).join("containers/auth.json"));
        }
        match (self.var("XDG_CONFIG_HOME"), &home) {
            (Some(d), _) => files.push(Path::new(d).join("containers/auth.json")),
            (None, Some(h)) => files.push(h.join(".config/containers/auth.json")),
            (None, None) => {}
        }
        match (self.var("DOCKER_CONFIG"), &home) {
            (Some(d), _) => files.push(Path::new(d).join("config.json")),
            (None, Some(h)) => files.push(h.join(".docker/config.json")),
            (None, None) => {}
        }
        files
    }

    fn find_program(&self, name: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.var("PATH")?;
        std::env::split_paths(path).map(|d| d.join(name)).find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    }
}

#[derive(Deserialize, Default)]
struct AuthFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
}

#[derive(Deserialize, Default)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

/// Normalize an auth-file key: docker writes `https://index.docker.io/v1/`, podman writes
/// `registry[/namespace…]`.
fn normalize_key(key: &str) -> String {
    let (had_scheme, rest) = match key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
    {
        Some(r) => (true, r),
        None => (false, key),
    };
    // With a scheme (docker's legacy form) only the host counts.
    let rest = if had_scheme {
        rest.split('/').next().unwrap_or(rest)
    } else {
        rest.trim_end_matches('/')
    };
    let (host, path) = match rest.split_once('/') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    let host = match host {
        "index.docker.io" | "registry-1.docker.io" => "docker.io",
        h => h,
    };
    match path {
        Some(p) => format!("{host}/{p}"),
        None => host.to_string(),
    }
}

/// The server URL a credential helper is asked about.
fn helper_server_url(registry: &str) -> String {
    if registry == "docker.io" {
        "https://index.docker.io/v1/".to_string()
    } else {
        registry.to_string()
    }
}

/// Credentials for `registry` (as in references: `docker.io`, `localhost:5000`) and
/// `repository`, or None for anonymous access.
pub fn lookup_credentials(
    env: &AuthEnv,
    registry: &str,
    repository: &str,
) -> Result<Option<FoundCredential>, AuthError> {
    // Most specific first: registry/a/b/c, registry/a/b, registry/a, registry.
    let mut keys = vec![];
    let mut k = format!("{registry}/{repository}");
    loop {
        keys.push(k.clone());
        match k.rfind('/') {
            Some(i) => k.truncate(i),
            None => break,
        }
    }
    for path in env.auth_files() {
        let data = match fs::read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(AuthError::ReadFile { path, source }),
        };
        let file: AuthFile =
            serde_json::from_slice(&data).map_err(|source| AuthError::ParseFile {
                path: path.clone(),
                source,
            })?;
        let helpers: BTreeMap<String, &String> = file
            .cred_helpers
            .iter()
            .map(|(k, v)| (normalize_key(k), v))
            .collect();
        if let Some(helper) = helpers.get(registry) {
            return run_helper(env, helper, registry, &path);
        }
        let auths: BTreeMap<String, (&String, &AuthEntry)> = file
            .auths
            .iter()
            .map(|(k, v)| (normalize_key(k), (k, v)))
            .collect();
        for key in &keys {
            if let Some((raw_key, entry)) = auths.get(key) {
                if let Some(cred) = entry_credential(&path, raw_key, entry)? {
                    return Ok(Some(FoundCredential {
                        credential: cred,
                        source: path.display().to_string(),
                    }));
                }
            }
        }
        if let Some(store) = &file.creds_store {
            if let Some(found) = run_helper(env, store, registry, &path)? {
                return Ok(Some(found));
            }
        }
    }
    Ok(None)
}

fn entry_credential(
    path: &Path,
    key: &str,
    entry: &AuthEntry,
) -> Result<Option<Credential>, AuthError> {
    let bad = |problem: &str| AuthError::BadEntry {
        path: path.to_path_buf(),
        key: key.to_string(),
        problem: problem.to_string(),
    };
    if let Some(t) = entry.identitytoken.as_deref().filter(|t| !t.is_empty()) {
        return Ok(Some(Credential::IdentityToken(Secret::new(t))));
    }
    if let Some(auth) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|_| bad("`auth` is not base64"))?;
        let text = String::from_utf8(raw).map_err(|_| bad("`auth` is not UTF-8"))?;
        let (user, pass) = text
            .split_once(':')
            .ok_or_else(|| bad("`auth` is not base64 of `user:password`"))?;
        if user.is_empty() && pass.is_empty() {
            return Ok(None);
        }
        return Ok(Some(Credential::Basic {
            username: user.to_string(),
            password: Secret::new(pass),
        }));
    }
    if let (Some(u), Some(p)) = (&entry.username, &entry.password) {
        if !u.is_empty() || !p.is_empty() {
            return Ok(Some(Credential::Basic {
                username: u.clone(),
                password: Secret::new(p.as_str()),
            }));
        }
    }
    Ok(None)
}

#[derive(Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username", default)]
    username: String,
    #[serde(rename = "Secret", default)]
    secret: String,
}

fn run_helper(
    env: &AuthEnv,
    name: &str,
    registry: &str,
    config: &Path,
) -> Result<Option<FoundCredential>, AuthError> {
    let helper = format!("docker-credential-{name}");
    let program = env
        .find_program(&helper)
        .ok_or_else(|| AuthError::HelperNotFound {
            helper: helper.clone(),
            config: config.to_path_buf(),
        })?;
    let io_err = |source| AuthError::HelperIo {
        helper: helper.clone(),
        source,
    };
    let mut child = Command::new(&program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io_err)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(helper_server_url(registry).as_bytes())
            .map_err(io_err)?;
    }
    let out = child.wait_with_output().map_err(io_err)?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stdout);
        if text.contains("credentials not found") {
            return Ok(None);
        }
        // The helper's own message (never its stdout beyond this: it is not credentials when
        // the helper failed, but keep it short anyway).
        let mut message = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if message.is_empty() {
            message = text.trim().to_string();
        }
        message.truncate(200);
        return Err(AuthError::HelperFailed {
            helper,
            registry: registry.to_string(),
            status: out.status.to_string(),
            message,
        });
    }
    let answer: HelperAnswer =
        serde_json::from_slice(&out.stdout).map_err(|e| AuthError::HelperOutput {
            helper: helper.clone(),
            registry: registry.to_string(),
            // serde_json's message names a position, never the input.
            problem: e.to_string(),
        })?;
    let credential = if answer.username == "<token>" {
        Credential::IdentityToken(Secret::new(answer.secret))
    } else if answer.username.is_empty() && answer.secret.is_empty() {
        return Ok(None);
    } else {
        Credential::Basic {
            username: answer.username,
            password: Secret::new(answer.secret),
        }
    };
    Ok(Some(FoundCredential {
        credential,
        source: helper,
    }))
}

// ---------------------------------------------------------------------------------------------
// Challenges

/// One challenge of a `WWW-Authenticate` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Challenge {
    Basic {
        realm: Option<String>,
    },
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
        /// `insufficient_scope`, `invalid_token`, …
        error: Option<String>,
    },
}

/// Parse a `WWW-Authenticate` header value into its Basic and Bearer challenges (other schemes
/// are skipped). Quoted values may hold commas (`scope="repository:a:pull,push"`).
pub fn parse_challenges(header: &str) -> Result<Vec<Challenge>, AuthError> {
    let bad = |problem: &str| AuthError::Challenge {
        header: header.chars().take(300).collect(),
        problem: problem.to_string(),
    };
    let b = header.as_bytes();
    let mut i = 0;
    let is_tchar = |c: u8| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/:".contains(&c);
    let skip = |i: &mut usize, set: &[u8]| {
        while *i < b.len() && set.contains(&b[*i]) {
            *i += 1;
        }
    };
    let token = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && is_tchar(b[*i]) {
            *i += 1;
        }
        &header[start..*i]
    };
    let mut out = Vec::new();
    loop {
        skip(&mut i, b" \t,");
        if i >= b.len() {
            break;
        }
        let scheme = token(&mut i);
        if scheme.is_empty() {
            return Err(bad("expected an authentication scheme"));
        }
        let mut params: BTreeMap<String, String> = BTreeMap::new();
        loop {
            let save = i;
            skip(&mut i, b" \t,");
            let name = token(&mut i);
            skip(&mut i, b" \t");
            if name.is_empty() || i >= b.len() || b[i] != b'=' {
                i = save;
                break;
            }
            i += 1;
            skip(&mut i, b" \t");
            let value = if i < b.len() && b[i] == b'"' {
                i += 1;
                let mut v = String::new();
                let mut closed = false;
                while i < b.len() {
                    match b[i] {
                        b'\\' if i + 1 < b.len() => {
                            v.push(b[i + 1] as char);
                            i += 2;
                        }
                        b'"' => {
                            i += 1;
                            closed = true;
                            break;
                        }
                        _ => {
                            // Push the whole UTF-8 character.
                            let ch = header[i..].chars().next().unwrap_or('\u{fffd}');
                            v.push(ch);
                            i += ch.len_utf8();
                        }
                    }
                }
                if !closed {
                    return Err(bad("unterminated quoted string"));
                }
                v
            } else {
                let start = i;
                while i < b.len() && b[i] != b',' && b[i] != b' ' {
                    i += 1;
                }
                header[start..i].to_string()
            };
            params.insert(name.to_ascii_lowercase(), value);
        }
        // A token68 (`Basic abc==`) after the scheme: skip it.
        if params.is_empty() {
            let save = i;
            skip(&mut i, b" \t");
            let t = token(&mut i);
            skip(&mut i, b"=");
            if t.is_empty() {
                i = save;
            } else {
                skip(&mut i, b" \t");
                if i < b.len() && b[i] != b',' {
                    i = save;
                }
            }
        }
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => out.push(Challenge::Basic {
                realm: params.remove("realm"),
            }),
            "bearer" => {
                let realm = params
                    .remove("realm")
                    .ok_or_else(|| bad("Bearer challenge without realm"))?;
                out.push(Challenge::Bearer {
                    realm,
                    service: params.remove("service"),
                    scope: params.remove("scope"),
                    error: params.remove("error"),
                });
            }
            _ => {}
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Scopes

/// A set of token scopes: resource (`repository`, name) → actions (`pull`, `push`, …).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scopes(BTreeMap<(String, String), BTreeSet<String>>);

impl Scopes {
    pub fn new() -> Self {
        Scopes::default()
    }

    /// `repository:NAME:ACTIONS`.
    pub fn repository(name: &str, actions: &[&str]) -> Self {
        let mut s = Scopes::new();
        s.add("repository", name, actions.iter().copied());
        s
    }

    pub fn add<'a>(&mut self, kind: &str, name: &str, actions: impl IntoIterator<Item = &'a str>) {
        self.0
            .entry((kind.to_string(), name.to_string()))
            .or_default()
            .extend(actions.into_iter().map(String::from));
    }

    /// Parse a space-separated scope list (`repository:a/b:pull,push registry:catalog:*`);
    /// malformed entries are skipped.
    pub fn parse(s: &str) -> Self {
        let mut out = Scopes::new();
        for item in s.split_whitespace() {
            let Some((kind, rest)) = item.split_once(':') else {
                continue;
            };
            let Some((name, actions)) = rest.rsplit_once(':') else {
                continue;
            };
            out.add(kind, name, actions.split(',').filter(|a| !a.is_empty()));
        }
        out
    }

    /// Add every scope of `other`.
    pub fn merge(&mut self, other: &Scopes) {
        for ((k, n), acts) in &other.0 {
            self.add(k, n, acts.iter().map(String::as_str));
        }
    }

    /// True if every action of `other` is in `self` (`*` covers every action).
    pub fn covers(&self, other: &Scopes) -> bool {
        other.0.iter().all(|(res, acts)| {
            self.0
                .get(res)
                .is_some_and(|have| have.contains("*") || acts.iter().all(|a| have.contains(a)))
        })
    }

    /// The scopes of `self` on the resources that `other` names.
    fn restricted_to(&self, other: &Scopes) -> Scopes {
        Scopes(
            self.0
                .iter()
                .filter(|(res, _)| other.0.contains_key(*res))
                .map(|(r, a)| (r.clone(), a.clone()))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One `type:name:a,b` string per resource (what the token endpoint's `scope` takes).
    pub fn to_params(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|((k, n), a)| {
                format!(
                    "{k}:{n}:{}",
                    a.iter().cloned().collect::<Vec<_>>().join(",")
                )
            })
            .collect()
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_params().join(" "))
    }
}

// ---------------------------------------------------------------------------------------------
// Tokens

/// A Bearer token and when to stop using it.
#[derive(Clone, Debug)]
pub struct Token {
    pub value: Secret,
    pub scopes: Scopes,
    pub renew_at: Instant,
}

#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// Fetch a token from a Bearer `realm` for `scopes`: anonymously, with Basic credentials (GET,
/// as docker does), or with an identity token (OAuth2 POST, `grant_type=refresh_token`).
pub fn fetch_token(
    http: &reqwest::blocking::Client,
    realm: &str,
    service: Option<&str>,
    scopes: &Scopes,
    credential: Option<&Credential>,
    timeout: Duration,
) -> Result<Token, AuthError> {
    let realm_err = |problem: String| AuthError::TokenResponse {
        realm: realm.to_string(),
        problem,
    };
    let mut url = reqwest::Url::parse(realm)
        .map_err(|e| realm_err(format!("the realm is not a URL ({e})")))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(realm_err("the realm is not an http(s) URL".into()));
    }
    let started = Instant::now();
    let request = match credential {
        Some(Credential::IdentityToken(refresh)) => {
            let mut form =
                reqwest::Url::parse("http://form/").map_err(|e| realm_err(e.to_string()))?;
            {
                let mut q = form.query_pairs_mut();
                q.append_pair("grant_type", "refresh_token");
                q.append_pair("refresh_token", refresh.expose());
                q.append_pair("client_id", "ocibuild");
                if let Some(s) = service {
                    q.append_pair("service", s);
                }
                for s in scopes.to_params() {
                    q.append_pair("scope", &s);
                }
            }
            let body = form.query().unwrap_or_default().to_string();
            http.post(url)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(body)
        }
        other => {
            {
                let mut q = url.query_pairs_mut();
                if let Some(s) = service {
                    q.append_pair("service", s);
                }
                for s in scopes.to_params() {
                    q.append_pair("scope", &s);
                }
                if let Some(Credential::Basic { username, .. }) = other {
                    q.append_pair("account", username);
                }
            }
            let mut req = http.get(url);
            if let Some(h) = other.and_then(Credential::basic_header) {
                req = req.header("Authorization", h.expose());
            }
            req
        }
    };
    let resp = request
        .timeout(timeout)
        .send()
        .map_err(|source| AuthError::TokenTransport {
            realm: realm.to_string(),
            source: source.without_url(),
        })?;
    let status = resp.status();
    let mut body = Vec::new();
    resp.take(MAX_TOKEN_RESPONSE)
        .read_to_end(&mut body)
        .map_err(|e| realm_err(format!("reading the answer: {e}")))?;
    if !status.is_success() {
        return Err(AuthError::TokenStatus {
            realm: realm.to_string(),
            status: status.as_u16(),
            detail: super::client::error_detail(&body),
        });
    }
    let answer: TokenAnswer = serde_json::from_slice(&body)
        .map_err(|e| realm_err(format!("the answer is not token JSON ({e})")))?;
    let value = answer
        .token
        .filter(|t| !t.is_empty())
        .or(answer.access_token.filter(|t| !t.is_empty()))
        .ok_or_else(|| realm_err("the answer has neither `token` nor `access_token`".into()))?;
    let lifetime = answer
        .expires_in
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TOKEN_LIFETIME);
    let margin = TOKEN_EXPIRY_MARGIN.min(lifetime / 2);
    Ok(Token {
        value: Secret::new(value),
        scopes: scopes.clone(),
        renew_at: started + lifetime - margin,
    })
}

/// Tokens of one registry, each for the scope set it was issued for.
#[derive(Debug, Default)]
pub struct TokenCache {
    tokens: Vec<Token>,
}

impl TokenCache {
    /// An unexpired token covering `wanted`.
    pub fn get(&self, wanted: &Scopes, now: Instant) -> Option<&Token> {
        self.tokens
            .iter()
            .find(|t| now < t.renew_at && t.scopes.covers(wanted))
    }

    /// The scopes to ask for when `wanted` has no token: `wanted` plus what unexpired tokens
    /// already hold on the same resources (so a push token keeps pull: `pull,push`).
    pub fn scopes_to_request(&self, wanted: &Scopes, now: Instant) -> Scopes {
        let mut s = wanted.clone();
        for t in self.tokens.iter().filter(|t| now < t.renew_at) {
            s.merge(&t.scopes.restricted_to(wanted));
        }
        s
    }

    /// Keep `token`; drops expired ones and those it covers.
    pub fn insert(&mut self, token: Token, now: Instant) {
        self.tokens
            .retain(|t| now < t.renew_at && !token.scopes.covers(&t.scopes));
        self.tokens.push(token);
    }

    /// Forget every token (after the registry refused one).
    pub fn clear(&mut self) {
        self.tokens.clear();
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn basic(u: &str, p: &str) -> Credential {
        Credential::Basic {
            username: u.into(),
            password: Secret::new(p),
        }
    }

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{s:?}"), "***");
        let c = basic("me", "hunter2");
        assert!(!format!("{c:?}").contains("hunter2"));
        let h = c.basic_header().unwrap();
        assert_eq!(h.expose(), format!("Basic {}", b64("me:hunter2")));
        assert_eq!(format!("{h:?}"), "***");
        let t = Credential::IdentityToken(Secret::new("refresh"));
        assert!(!format!("{t:?}").contains("refresh"));
        assert!(t.basic_header().is_none());
    }

    #[test]
    fn auth_file_order() {
        let home = Path::new("/h");
        let env = AuthEnv::empty().with("HOME", home);
        assert_eq!(
            env.auth_files(),
            vec![
                home.join(".config/containers/auth.json"),
                home.join(".docker/config.json")
            ]
        );
        let env = env
            .with("XDG_RUNTIME_DIR", "/run/user/1")
            .with("XDG_CONFIG_HOME", "/cfg")
            .with("DOCKER_CONFIG", "/dc");
        assert_eq!(
            env.auth_files(),
            vec![
                PathBuf::from("/run/user/1/containers/auth.json"),
                PathBuf::from("/cfg/containers/auth.json"),
                PathBuf::from("/dc/config.json"),
            ]
        );
        // REGISTRY_AUTH_FILE is exclusive, like podman's --authfile.
        let env = env.with("REGISTRY_AUTH_FILE", "/a.json");
        assert_eq!(env.auth_files(), vec![PathBuf::from("/a.json")]);
        // Empty variables count as unset.
        let env = AuthEnv::empty()
            .with("REGISTRY_AUTH_FILE", "")
            .with("HOME", "/h");
        assert_eq!(env.auth_files().len(), 2);
        assert!(AuthEnv::empty().auth_files().is_empty());
    }

    #[test]
    fn key_normalization() {
        assert_eq!(normalize_key("https://index.docker.io/v1/"), "docker.io");
        assert_eq!(normalize_key("http://localhost:5000/v2/"), "localhost:5000");
        assert_eq!(normalize_key("registry-1.docker.io"), "docker.io");
        assert_eq!(normalize_key("quay.io/team/"), "quay.io/team");
        assert_eq!(
            normalize_key("docker.io/library/ubuntu"),
            "docker.io/library/ubuntu"
        );
        assert_eq!(
            helper_server_url("docker.io"),
            "https://index.docker.io/v1/"
        );
        assert_eq!(helper_server_url("ghcr.io"), "ghcr.io");
    }

    #[test]
    fn lookup_precedence_and_formats() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("run/containers")).unwrap();
        std::fs::create_dir_all(d.join("cfg/containers")).unwrap();
        std::fs::create_dir_all(d.join("docker")).unwrap();
        let env = AuthEnv::empty()
            .with("XDG_RUNTIME_DIR", d.join("run"))
            .with("XDG_CONFIG_HOME", d.join("cfg"))
            .with("DOCKER_CONFIG", d.join("docker"));
        let write = |rel: &str, v: serde_json::Value| {
            std::fs::write(d.join(rel), serde_json::to_vec(&v).unwrap()).unwrap()
        };
        // Nothing anywhere: anonymous.
        assert_eq!(lookup_credentials(&env, "ghcr.io", "a/b").unwrap(), None);

        write(
            "docker/config.json",
            serde_json::json!({"auths": {
                "https://index.docker.io/v1/": {"auth": b64("hubuser:hubpass")},
                "ghcr.io": {"auth": b64("docker:dpass")},
                "legacy.io": {"username": "lu", "password": "lp"},
                "oauth.io": {"identitytoken": "refresh-tok"},
                "empty.io": {},
            }}),
        );
        let get = |reg: &str, repo: &str| {
            lookup_credentials(&env, reg, repo)
                .unwrap()
                .map(|f| f.credential)
        };
        assert_eq!(
            get("docker.io", "library/ubuntu"),
            Some(basic("hubuser", "hubpass"))
        );
        assert_eq!(get("ghcr.io", "a/b"), Some(basic("docker", "dpass")));
        assert_eq!(get("legacy.io", "x"), Some(basic("lu", "lp")));
        assert_eq!(
            get("oauth.io", "x"),
            Some(Credential::IdentityToken(Secret::new("refresh-tok")))
        );
        assert_eq!(get("empty.io", "x"), None);
        assert_eq!(get("other.io", "x"), None);

        // containers auth.json (XDG_CONFIG_HOME) wins over docker's; namespaced keys are more
        // specific than the bare registry.
        write(
            "cfg/containers/auth.json",
            serde_json::json!({"auths": {
                "ghcr.io": {"auth": b64("podman:ppass")},
                "ghcr.io/team": {"auth": b64("team:tpass")},
            }}),
        );
        assert_eq!(get("ghcr.io", "a/b"), Some(basic("podman", "ppass")));
        assert_eq!(get("ghcr.io", "team/app"), Some(basic("team", "tpass")));
        // Registries not in that file still come from docker's.
        assert_eq!(
            get("docker.io", "library/ubuntu"),
            Some(basic("hubuser", "hubpass"))
        );

        // XDG_RUNTIME_DIR's wins over both.
        write(
            "run/containers/auth.json",
            serde_json::json!({"auths": {"ghcr.io": {"auth": b64("rt:rpass")}}}),
        );
        assert_eq!(get("ghcr.io", "team/app"), Some(basic("rt", "rpass")));
        let found = lookup_credentials(&env, "ghcr.io", "x").unwrap().unwrap();
        assert!(found.source.ends_with("run/containers/auth.json"));

        // REGISTRY_AUTH_FILE alone.
        let own = d.join("own.json");
        std::fs::write(
            &own,
            serde_json::to_vec(&serde_json::json!({"auths": {"quay.io": {"auth": b64("q:qp")}}}))
                .unwrap(),
        )
        .unwrap();
        let env2 = env.clone().with("REGISTRY_AUTH_FILE", &own);
        assert_eq!(
            lookup_credentials(&env2, "quay.io", "x")
                .unwrap()
                .unwrap()
                .credential,
            basic("q", "qp")
        );
        assert_eq!(lookup_credentials(&env2, "ghcr.io", "x").unwrap(), None);
    }

    #[test]
    fn bad_files_are_clear_errors_without_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("auth.json");
        let env = AuthEnv::empty().with("REGISTRY_AUTH_FILE", &f);
        std::fs::write(&f, b"{not json").unwrap();
        let e = lookup_credentials(&env, "r.io", "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not valid JSON") && e.contains("auth.json"),
            "{e}"
        );
        std::fs::write(&f, br#"{"auths":{"r.io":{"auth":"!!!"}}}"#).unwrap();
        let e = lookup_credentials(&env, "r.io", "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not base64") && e.contains("r.io"), "{e}");
        let no_colon = b64("justsecret");
        std::fs::write(
            &f,
            format!(r#"{{"auths":{{"r.io":{{"auth":"{no_colon}"}}}}}}"#),
        )
        .unwrap();
        let e = lookup_credentials(&env, "r.io", "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("user:password") && !e.contains("justsecret"),
            "{e}"
        );
    }

    fn helper_script(dir: &Path, name: &str, body: &str) {
        let p = dir.join(format!("docker-credential-{name}"));
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn credential_helpers() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let bin = d.join("bin");
        std::fs::create_dir(&bin).unwrap();
        // Answers with the server URL it was asked about as the user name.
        helper_script(
            &bin,
            "echoer",
            r#"[ "$1" = get ] || exit 3; read url; printf '{"ServerURL":"%s","Username":"%s","Secret":"s3cret"}' "$url" "$url""#,
        );
        helper_script(
            &bin,
            "store",
            r#"read url; case "$url" in store.io) printf '{"Username":"<token>","Secret":"idtok"}';; *) echo "credentials not found in native keychain"; exit 1;; esac"#,
        );
        helper_script(&bin, "broken", "echo 'helper exploded' >&2; exit 2");
        helper_script(&bin, "garbage", "echo not-json");
        let cfg = d.join("config.json");
        std::fs::write(
            &cfg,
            serde_json::to_vec(&serde_json::json!({
                "credHelpers": {
                    "https://index.docker.io/v1/": "echoer",
                    "helped.io": "echoer",
                    "broken.io": "broken",
                    "garbage.io": "garbage",
                    "missing.io": "nosuchhelper",
                },
                "credsStore": "store",
                "auths": {"helped.io": {"auth": b64("file:filepass")}, "plain.io": {"auth": b64("p:pp")}},
            }))
            .unwrap(),
        )
        .unwrap();
        let env = AuthEnv::empty()
            .with("REGISTRY_AUTH_FILE", &cfg)
            .with("PATH", &bin);
        let get = |reg: &str| lookup_credentials(&env, reg, "x/y");
        // credHelpers wins over auths; docker.io asks about docker's legacy URL.
        let f = get("docker.io").unwrap().unwrap();
        assert_eq!(f.credential, basic("https://index.docker.io/v1/", "s3cret"));
        assert_eq!(f.source, "docker-credential-echoer");
        assert_eq!(
            get("helped.io").unwrap().unwrap().credential,
            basic("helped.io", "s3cret")
        );
        // auths before credsStore.
        assert_eq!(
            get("plain.io").unwrap().unwrap().credential,
            basic("p", "pp")
        );
        // credsStore: identity token, and "not found" is anonymous.
        assert_eq!(
            get("store.io").unwrap().unwrap().credential,
            Credential::IdentityToken(Secret::new("idtok"))
        );
        assert_eq!(get("nowhere.io").unwrap(), None);
        // Failures name the helper and what to do, never the secret.
        let e = get("broken.io").unwrap_err().to_string();
        assert!(
            e.contains("docker-credential-broken") && e.contains("helper exploded"),
            "{e}"
        );
        let e = get("garbage.io").unwrap_err().to_string();
        assert!(
            e.contains("docker-credential-garbage") && e.contains("no valid credentials"),
            "{e}"
        );
        let e = get("missing.io").unwrap_err().to_string();
        assert!(
            e.contains("docker-credential-nosuchhelper") && e.contains("not on PATH"),
            "{e}"
        );
    }

    #[test]
    fn challenges() {
        let c = parse_challenges(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull,push""#,
        )
        .unwrap();
        assert_eq!(
            c,
            vec![Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into()),
                scope: Some("repository:library/ubuntu:pull,push".into()),
                error: None,
            }]
        );
        assert_eq!(
            parse_challenges(r#"Basic realm="Registry Realm""#).unwrap(),
            vec![Challenge::Basic {
                realm: Some("Registry Realm".into())
            }]
        );
        assert_eq!(
            parse_challenges("basic").unwrap(),
            vec![Challenge::Basic { realm: None }]
        );
        // Two challenges in one header, unquoted values, odd spacing, an unknown scheme.
        let c = parse_challenges(
            r#"Negotiate abc==, Bearer realm=https://t.example/tok , error="insufficient_scope", scope="a:b:c" ,Basic realm="x\"y""#,
        )
        .unwrap();
        assert_eq!(
            c,
            vec![
                Challenge::Bearer {
                    realm: "https://t.example/tok".into(),
                    service: None,
                    scope: Some("a:b:c".into()),
                    error: Some("insufficient_scope".into()),
                },
                Challenge::Basic {
                    realm: Some("x\"y".into())
                },
            ]
        );
        assert!(parse_challenges(r#"Bearer service="x""#)
            .unwrap_err()
            .to_string()
            .contains("without realm"));
        assert!(parse_challenges(r#"Bearer realm="x"#)
            .unwrap_err()
            .to_string()
            .contains("unterminated"));
        assert!(parse_challenges("").unwrap().is_empty());
    }

    #[test]
    fn scope_algebra() {
        let pull = Scopes::repository("a/b", &["pull"]);
        let push = Scopes::repository("a/b", &["pull", "push"]);
        assert!(push.covers(&pull));
        assert!(!pull.covers(&push));
        assert_eq!(push.to_params(), vec!["repository:a/b:pull,push"]);
        let mut m = Scopes::parse("repository:a/b:push repository:c:pull registry:catalog:*");
        m.merge(&pull);
        assert_eq!(
            m.to_params(),
            vec![
                "registry:catalog:*",
                "repository:a/b:pull,push",
                "repository:c:pull"
            ]
        );
        assert!(m.covers(&push) && m.covers(&Scopes::repository("c", &["pull"])));
        assert!(!m.covers(&Scopes::repository("c", &["push"])));
        assert!(Scopes::parse("registry:catalog:*").covers(&Scopes::parse("registry:catalog:x")));
        // Port-qualified names keep their colon (name is between the first and last colon).
        assert_eq!(
            Scopes::parse("repository:host:5000/x:pull").to_params(),
            vec!["repository:host:5000/x:pull"]
        );
        assert!(Scopes::parse("garbage").is_empty());
        assert_eq!(m.to_string().split(' ').count(), 3);
    }

    #[test]
    fn token_cache_merges_and_expires() {
        let now = Instant::now();
        let mut cache = TokenCache::default();
        let pull = Scopes::repository("a", &["pull"]);
        let push = Scopes::repository("a", &["push"]);
        let other = Scopes::repository("b", &["pull"]);
        assert!(cache.get(&pull, now).is_none());
        cache.insert(
            Token {
                value: Secret::new("t1"),
                scopes: pull.clone(),
                renew_at: now + Duration::from_secs(60),
            },
            now,
        );
        assert_eq!(cache.get(&pull, now).unwrap().value.expose(), "t1");
        assert!(cache.get(&push, now).is_none());
        // Asking for push asks for pull,push; another repository is not dragged in.
        assert_eq!(
            cache.scopes_to_request(&push, now),
            Scopes::repository("a", &["pull", "push"])
        );
        assert_eq!(cache.scopes_to_request(&other, now), other);
        cache.insert(
            Token {
                value: Secret::new("t2"),
                scopes: Scopes::repository("a", &["pull", "push"]),
                renew_at: now + Duration::from_secs(60),
            },
            now,
        );
        // The pull,push token replaced the pull one and serves both.
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get(&pull, now).unwrap().value.expose(), "t2");
        // Expired tokens are not used.
        let later = now + Duration::from_secs(61);
        assert!(cache.get(&pull, later).is_none());
        assert_eq!(cache.scopes_to_request(&pull, later), pull);
        cache.clear();
        assert!(cache.is_empty());
    }
}
