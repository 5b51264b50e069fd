//! Credentials: auth files (podman and docker locations and formats) and credential helpers.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine as _;
use fs_err as fs;
use serde::Deserialize;

use super::{AuthError, Secret};

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

    /// What a message must never show: the password or token, and the Basic header's token.
    pub fn secrets(&self) -> Vec<String> {
        match self {
            Credential::Basic { password, .. } => {
                let mut out = vec![password.expose().to_string()];
                if let Some(h) = self.basic_header() {
                    out.push(h.expose().trim_start_matches("Basic ").to_string());
                }
                out
            }
            Credential::IdentityToken(t) => vec![t.expose().to_string()],
        }
    }
}

/// Credentials and where they were found (a file or a helper), for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundCredential {
    pub credential: Credential,
    pub source: String,
}

/// Largest auth file read.
const MAX_AUTH_FILE: u64 = 4 << 20;

/// Longest a credential helper may take to answer (see [`AuthEnv::helper_timeout`]).
pub(super) const HELPER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The child's exit status and output, or `None` (the child killed) when it has not exited
/// within `limit`. Its stdout and stderr are read on threads, so a chatty child cannot block.
fn wait_bounded(
    mut child: std::process::Child,
    limit: std::time::Duration,
) -> io::Result<Option<std::process::Output>> {
    fn drain(r: Option<impl io::Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = io::Read::read_to_end(&mut io::Read::take(&mut r, 1 << 20), &mut v);
            }
            v
        })
    }
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            // The readers are left to end with the pipes: a grandchild may still hold them.
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Ok(Some(std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }))
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
    "OCIBUILD_CREDENTIAL_HELPER_TIMEOUT",
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

    /// How long a credential helper may take: `OCIBUILD_CREDENTIAL_HELPER_TIMEOUT` seconds,
    /// else [`HELPER_TIMEOUT`].
    pub fn helper_timeout(&self) -> std::time::Duration {
        self.vars
            .get("OCIBUILD_CREDENTIAL_HELPER_TIMEOUT")
            .and_then(|v| v.to_str()?.trim().parse::<u64>().ok())
            .filter(|s| *s > 0)
            .map(std::time::Duration::from_secs)
            .unwrap_or(HELPER_TIMEOUT)
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
            .map(std::ffi::OsString::as_os_str)
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
            fs_err::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
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
        // A FIFO or a device there would block the read (or never end): only a regular file
        // (through a symlink or not) is read, and only up to a bound.
        match fs::metadata(&path) {
            Ok(m) if m.is_file() => {}
            Ok(_) => return Err(AuthError::NotAFile { path }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(AuthError::ReadFile { path, source }),
        }
        let mut data = Vec::new();
        fs::File::open(&path)
            .and_then(|f| io::Read::read_to_end(&mut io::Read::take(f, MAX_AUTH_FILE), &mut data))
            .map_err(|source| AuthError::ReadFile {
                path: path.clone(),
                source,
            })?;
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
        // A helper may exit without reading its input; its exit status and output say what
        // happened, so a broken pipe here is not the error to report.
        match stdin.write_all(helper_server_url(registry).as_bytes()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(io_err(e)),
            _ => {}
        }
    }
    let limit = env.helper_timeout();
    let out =
        wait_bounded(child, limit)
            .map_err(io_err)?
            .ok_or_else(|| AuthError::HelperTimeout {
                helper: helper.clone(),
                registry: registry.to_string(),
                secs: limit.as_secs(),
            })?;
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
        fs_err::create_dir_all(d.join("run/containers")).unwrap();
        fs_err::create_dir_all(d.join("cfg/containers")).unwrap();
        fs_err::create_dir_all(d.join("docker")).unwrap();
        let env = AuthEnv::empty()
            .with("XDG_RUNTIME_DIR", d.join("run"))
            .with("XDG_CONFIG_HOME", d.join("cfg"))
            .with("DOCKER_CONFIG", d.join("docker"));
        let write = |rel: &str, v: serde_json::Value| {
            fs_err::write(d.join(rel), serde_json::to_vec(&v).unwrap()).unwrap();
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
        fs_err::write(
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
        fs_err::write(&f, b"{not json").unwrap();
        let e = lookup_credentials(&env, "r.io", "x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not valid JSON") && e.contains("auth.json"),
            "{e}"
        );
        fs_err::write(&f, br#"{"auths":{"r.io":{"auth":"!!!"}}}"#).unwrap();
        let e = lookup_credentials(&env, "r.io", "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not base64") && e.contains("r.io"), "{e}");
        let no_colon = b64("justsecret");
        fs_err::write(
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
        fs_err::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs_err::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn credential_helpers() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let bin = d.join("bin");
        fs_err::create_dir(&bin).unwrap();
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
        fs_err::write(
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
    fn a_helper_that_never_answers_and_an_auth_file_that_is_a_fifo_do_not_hang() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let bin = d.join("bin");
        fs_err::create_dir(&bin).unwrap();
        // Never answers; its own child keeps the pipes open after it is killed.
        helper_script(&bin, "stuck", "sleep 600 & sleep 600");
        let cfg = d.join("config.json");
        fs_err::write(&cfg, r#"{"credHelpers": {"stuck.io": "stuck"}}"#).unwrap();
        let env = AuthEnv::empty()
            .with("REGISTRY_AUTH_FILE", &cfg)
            .with("PATH", &bin)
            .with("OCIBUILD_CREDENTIAL_HELPER_TIMEOUT", "1");
        let e = lookup_credentials(&env, "stuck.io", "x/y").unwrap_err();
        assert!(matches!(e, AuthError::HelperTimeout { secs: 1, .. }), "{e}");
        // A FIFO as the auth file: refused without opening it (which would block).
        let fifo = d.join("fifo.json");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let env = AuthEnv::empty().with("REGISTRY_AUTH_FILE", &fifo);
        let e = lookup_credentials(&env, "any.io", "x/y").unwrap_err();
        assert!(matches!(e, AuthError::NotAFile { .. }), "{e}");
        assert_eq!(AuthEnv::empty().helper_timeout(), HELPER_TIMEOUT);
    }
}
