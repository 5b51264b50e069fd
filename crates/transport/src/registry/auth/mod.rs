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
//!
//! Files: this one holds [`AuthError`] and [`Secret`]; `credentials` the lookup in auth files and
//! credential helpers; `token` `WWW-Authenticate` challenges, scopes, and Bearer tokens.

use std::fmt;
use std::io;
use std::path::PathBuf;

mod credentials;
mod token;

pub use credentials::{lookup_credentials, AuthEnv, Credential, FoundCredential};
pub use token::{fetch_token, parse_challenges, Challenge, Scopes, Token, TokenCache};

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("reading credentials from {path}")]
    ReadFile { path: PathBuf, source: io::Error },
    #[error("credentials file {path} is not valid JSON (fix or remove it)")]
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
    #[error("running credential helper `{helper}`")]
    HelperIo { helper: String, source: io::Error },
    #[error("credential helper `{helper}` gave no answer for {registry} within {secs} s: stopped it (a helper waiting for a desktop prompt or a locked keyring?)")]
    HelperTimeout {
        helper: String,
        registry: String,
        secs: u64,
    },
    #[error("credentials file {path} is not a regular file (a FIFO or device?): not read")]
    NotAFile { path: PathBuf },
    #[error("cannot parse the registry's WWW-Authenticate header `{header}`: {problem}")]
    Challenge { header: String, problem: String },
    #[error("token endpoint {realm} answered {status}{detail}")]
    TokenStatus {
        realm: String,
        status: u16,
        detail: String,
    },
    #[error("token endpoint {realm}")]
    TokenTransport {
        realm: String,
        source: reqwest::Error,
    },
    #[error("token endpoint {realm}: {problem}")]
    TokenResponse { realm: String, problem: String },
}

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
