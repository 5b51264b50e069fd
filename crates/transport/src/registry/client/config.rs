//! The client's configuration: [`ClientConfig`], per-registry settings, mirrors.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::registry::auth::{AuthEnv, Credential};

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
    /// `[cache] repo` (and `readonly`): the machine's shared layer cache, for `build`.
    pub cache_repo: Option<(String, bool)>,
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
    ///
    /// [`Client::pull_blobs`]: super::Client::pull_blobs
    pub concurrency: usize,
    /// Refuse every request (`build --offline`): each one fails with [`RegistryError::Offline`]
    /// before anything is sent, so no code path reaches the network.
    ///
    /// [`RegistryError::Offline`]: super::RegistryError::Offline
    pub offline: bool,
    /// `--tls-verify=false` makes it false: certificates are not checked, and a registry
    /// that does not speak TLS is spoken to in plain HTTP.
    pub tls_verify: bool,
    /// `--cert-dir`: the certificate directory of every registry, in place of the registries
    /// file's `cert-dir` entries (its `ca-file` entries still apply).
    pub cert_dir: Option<PathBuf>,
    /// `--creds`: the login for every registry this client talks to, in place of any auth
    /// file or credential helper. Its password is a [`crate::registry::auth::Secret`].
    pub creds: Option<Credential>,
}

/// A command line's registry flags, as skopeo and podman spell them, applied over the
/// registries file's settings by [`RegistryFlags::apply`].
#[derive(Clone, Debug)]
pub struct RegistryFlags {
    /// `--tls-verify` (default true).
    pub tls_verify: bool,
    /// `--authfile FILE`: the only credentials file consulted (as `$REGISTRY_AUTH_FILE`, which
    /// it wins over).
    pub authfile: Option<PathBuf>,
    /// `--creds USER:PASSWORD`.
    pub creds: Option<Credential>,
    /// `--cert-dir DIR`.
    pub cert_dir: Option<PathBuf>,
}

impl Default for RegistryFlags {
    fn default() -> Self {
        RegistryFlags {
            tls_verify: true,
            authfile: None,
            creds: None,
            cert_dir: None,
        }
    }
}

impl RegistryFlags {
    /// `config` with these flags over it.
    pub fn apply(self, config: &mut ClientConfig) {
        config.tls_verify = self.tls_verify;
        if let Some(f) = self.authfile {
            config.auth_env = config.auth_env.clone().with("REGISTRY_AUTH_FILE", f);
        }
        if self.creds.is_some() {
            config.creds = self.creds;
        }
        if self.cert_dir.is_some() {
            config.cert_dir = self.cert_dir;
        }
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            registries: BTreeMap::new(),
            mirrors: Vec::new(),
            cache_repo: None,
            auth_env: AuthEnv::from_process(),
            user_agent: format!("ocibuild/{}", env!("CARGO_PKG_VERSION")),
            max_manifest_bytes: 4 << 20,
            max_attempts: 5,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(60),
            connect_timeout: crate::http::peers::capped(Duration::from_secs(30)),
            timeout: crate::http::peers::capped(Duration::from_secs(120)),
            chunk_size: 16 << 20,
            monolithic_limit: u64::MAX,
            concurrency: 4,
            offline: false,
            tls_verify: true,
            cert_dir: None,
            creds: None,
        }
    }
}
