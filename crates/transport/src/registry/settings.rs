//! The registries file: per-registry connection settings and mirrors, for the machine (not the
//! recipe: the same recipe builds inside and outside an air gap).
//!
//! ```toml
//! [[registry]]
//! name = "registry.internal:5000"     # as in image references
//! insecure-http = true                # plain HTTP; never the default
//! ca-file = "/etc/ssl/internal-ca.pem"
//! cert-dir = "/etc/containers/certs.d/registry.internal:5000"
//!
//! [[mirror]]
//! prefix = "docker.io"                # a registry, or registry/namespace
//! locations = ["mirror.internal:5000", "mirror2.internal/dockerhub"]
//! ```
//!
//! Found at `--registries FILE`, else `$OCIBUILD_REGISTRIES`, else
//! `$XDG_CONFIG_HOME/ocibuild/registries.toml` (or `~/.config/…`) when it exists. Digests are
//! pinned by the lock, so a mirror can never change what is built.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::client::{ClientConfig, Mirror, RegistrySettings};

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("registries file")]
    Read(#[source] crate::bounded::Error),
    #[error("registries file {}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    registry: Vec<RegistryEntry>,
    #[serde(default)]
    mirror: Vec<MirrorEntry>,
    cache: Option<CacheEntry>,
}

/// `[cache]`: the machine's shared layer cache (`build --cache-repo` wins).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheEntry {
    repo: String,
    #[serde(default)]
    readonly: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RegistryEntry {
    name: String,
    #[serde(default)]
    insecure_http: bool,
    ca_file: Option<PathBuf>,
    cert_dir: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MirrorEntry {
    prefix: String,
    locations: Vec<String>,
}

/// The registries file to read: the explicit one, `$OCIBUILD_REGISTRIES`, or the user's default
/// when it exists.
pub fn locate(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = env("OCIBUILD_REGISTRIES") {
        return Some(p);
    }
    let dir = env("XDG_CONFIG_HOME").or_else(|| env("HOME").map(|h| h.join(".config")))?;
    let p = dir.join("ocibuild").join("registries.toml");
    p.is_file().then_some(p)
}

/// A client config with the file's settings (relative paths resolve against the file's folder).
pub fn load(path: Option<&Path>) -> Result<ClientConfig, SettingsError> {
    let mut config = ClientConfig::default();
    let Some(path) = path else { return Ok(config) };
    let text = crate::bounded::read_regular_text(path, crate::bounded::MAX_TEXT_FILE)
        .map_err(SettingsError::Read)?;
    let file: File = toml::from_str(&text).map_err(|e| SettingsError::Parse {
        path: path.to_path_buf(),
        message: e.message().to_string(),
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    for r in file.registry {
        config.registries.insert(
            r.name,
            RegistrySettings {
                insecure_http: r.insecure_http,
                ca_file: r.ca_file.map(|p| dir.join(p)),
                cert_dir: r.cert_dir.map(|p| dir.join(p)),
            },
        );
    }
    config.mirrors = file
        .mirror
        .into_iter()
        .map(|m| Mirror {
            prefix: m.prefix,
            locations: m.locations,
        })
        .collect();
    config.cache_repo = file.cache.map(|c| (c.repo, c.readonly));
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_registries_and_mirrors() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("registries.toml");
        fs_err::write(
            &f,
            "[[registry]]\nname = \"127.0.0.1:5000\"\ninsecure-http = true\nca-file = \"ca.pem\"\n\n\
             [[mirror]]\nprefix = \"docker.io\"\nlocations = [\"m1:5000\", \"m2/hub\"]\n",
        )
        .unwrap();
        let c = load(Some(&f)).unwrap();
        let r = &c.registries["127.0.0.1:5000"];
        assert!(r.insecure_http);
        assert_eq!(
            r.ca_file.as_deref(),
            Some(dir.path().join("ca.pem").as_path())
        );
        assert_eq!(
            c.mirrors,
            vec![Mirror {
                prefix: "docker.io".into(),
                locations: vec!["m1:5000".into(), "m2/hub".into()]
            }]
        );
        assert_eq!(c.cache_repo, None);
        fs_err::write(
            &f,
            "[cache]\nrepo = \"127.0.0.1:5000/cache\"\nreadonly = true\n",
        )
        .unwrap();
        let c = load(Some(&f)).unwrap();
        assert_eq!(c.cache_repo, Some(("127.0.0.1:5000/cache".into(), true)));
        fs_err::write(&f, "[[registry]]\nname = \"x\"\ninsecure = true\n").unwrap();
        let e = load(Some(&f)).unwrap_err().to_string();
        assert!(e.contains("unknown field `insecure`"), "{e}");
    }
}
