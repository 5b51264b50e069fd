//! PEP 751 lock files (`pylock.toml`, lock-version 1.0): the packages to install for the
//! image's interpreter and, for each, the candidate wheels (choose one with
//! [`LockedPackage::select_wheel`]).
//!
//! Packages whose `marker` does not hold are left out. A package that needs building or
//! checking out (`vcs`, `directory`, `archive`) is an error naming it; one with only an
//! `sdist` is an error once a wheel is asked for. Only sha256 hashes are used.

use serde::Deserialize;

use super::interpreter::Interpreter;
use super::markers::{Marker, MarkerEnv, MarkerError, SpecifierSet, Version};
use super::tags::{self, TagError, WheelFile};
use crate::digest::Digest;

#[derive(Debug, thiserror::Error)]
pub enum PylockError {
    /// Not TOML, or not PEP 751's shape: where (1-based line and column) and the parser's
    /// words.
    #[error("{line}:{col}: pylock.toml is not valid TOML for PEP 751: {message}")]
    Toml {
        line: usize,
        col: usize,
        message: String,
    },
    #[error("lock-version {0} is not supported (only 1.x)")]
    LockVersion(String),
    #[error("none of its environments ({environments}) is the image's")]
    Environments { environments: String },
    #[error("requires-python {spec} does not hold for Python {python}")]
    RequiresPython { spec: String, python: String },
    #[error("{at}package {package}: {what}")]
    Invalid {
        at: Place,
        package: String,
        what: String,
        /// Boxed: inline it would make every `PylockError` larger.
        #[source]
        source: Option<Box<MarkerError>>,
    },
    #[error("{at}package {package}: requires-python {spec} does not hold for Python {python}")]
    PackageRequiresPython {
        at: Place,
        package: String,
        spec: String,
        python: String,
    },
    #[error("{at}package {package} comes from {kind}: ocibuild installs wheels only (no builds, no checkouts)")]
    Unsupported {
        at: Place,
        package: String,
        kind: &'static str,
    },
    #[error("{at}package {package}: wheel {wheel}: {what}")]
    Wheel {
        at: Place,
        package: String,
        wheel: String,
        what: String,
    },
    #[error(transparent)]
    Tag(#[from] TagError),
}

/// Where in the lock a package is (its `name`'s line and column, 1-based): shown as
/// `LINE:COL: ` before the message, which the caller puts after the file's path. Empty for
/// what is about the lock as a whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Place(pub Option<(usize, usize)>);

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some((line, col)) => write!(f, "{line}:{col}: "),
            None => Ok(()),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawLock {
    lock_version: String,
    #[serde(default)]
    environments: Option<Vec<String>>,
    #[serde(default)]
    requires_python: Option<String>,
    #[serde(default)]
    packages: Vec<RawPackage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawPackage {
    name: toml::Spanned<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    index: Option<String>,
    #[serde(default)]
    marker: Option<String>,
    #[serde(default)]
    requires_python: Option<String>,
    #[serde(default)]
    wheels: Vec<RawFile>,
    #[serde(default)]
    sdist: Option<RawFile>,
    #[serde(default)]
    vcs: Option<toml::Value>,
    #[serde(default)]
    directory: Option<toml::Value>,
    #[serde(default)]
    archive: Option<toml::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
}

/// One wheel a package may be installed from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockedWheel {
    pub file: WheelFile,
    pub url: Option<String>,
    /// A local path (relative to the lock file's directory, as written).
    pub path: Option<String>,
    pub size: Option<u64>,
    pub sha256: Digest,
}

/// A package to install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockedPackage {
    /// Where its `name` is in the lock.
    pub at: Place,
    pub name: String,
    pub version: Option<String>,
    pub wheels: Vec<LockedWheel>,
    /// The lock also has an sdist.
    pub has_sdist: bool,
    /// That sdist, when it has a sha256 and a url or path (what building it needs).
    pub sdist: Option<LockedSdist>,
}

/// A package's sdist: what a step builds a wheel from when no wheel fits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockedSdist {
    pub filename: String,
    pub url: Option<String>,
    /// A local path (relative to the lock file's directory, as written).
    pub path: Option<String>,
    pub size: Option<u64>,
    pub sha256: Digest,
}

impl LockedSdist {
    fn parse(f: &RawFile) -> Option<LockedSdist> {
        let filename = f
            .name
            .clone()
            .or_else(|| f.url.as_deref().map(url_filename))
            .or_else(|| f.path.as_deref().map(url_filename))?;
        if f.url.is_none() && f.path.is_none() {
            return None;
        }
        let hex = f.hashes.get("sha256")?;
        let sha256 = format!("sha256:{}", hex.to_ascii_lowercase())
            .parse()
            .ok()?;
        Some(LockedSdist {
            filename,
            url: f.url.as_deref().map(crate::http::redact),
            path: f.path.clone(),
            size: f.size,
            sha256,
        })
    }
}

impl LockedPackage {
    /// The most preferred wheel for `interp` (see [`tags::select`]).
    pub fn select_wheel(&self, interp: &Interpreter) -> Result<&LockedWheel, TagError> {
        if self.wheels.is_empty() {
            return Err(if self.has_sdist {
                TagError::OnlySdist {
                    package: self.name.clone(),
                }
            } else {
                TagError::NoCandidates {
                    package: self.name.clone(),
                }
            });
        }
        let files: Vec<WheelFile> = self.wheels.iter().map(|w| w.file.clone()).collect();
        let best = tags::select(&files, interp)?;
        let i = files
            .iter()
            .position(|f| f.filename == best.filename)
            .unwrap_or(0);
        Ok(&self.wheels[i])
    }
}

/// The last path segment of a URL, without query or fragment, percent-decoded.
pub(crate) fn url_filename(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let seg = url[..end].rsplit('/').next().unwrap_or("");
    let b = seg.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses `pylock.toml` and returns the packages to install for `interp`, in file order.
pub fn parse(text: &str, interp: &Interpreter) -> Result<Vec<LockedPackage>, PylockError> {
    let raw: RawLock = toml::from_str(text).map_err(|e| {
        let super::TomlError { line, col, message } = super::TomlError::of(text, &e);
        PylockError::Toml { line, col, message }
    })?;
    if raw.lock_version.split('.').next() != Some("1") {
        return Err(PylockError::LockVersion(raw.lock_version));
    }
    let env = MarkerEnv::for_interpreter(interp);
    let python = Version::parse(&env.python_full_version)
        .map_err(|_| PylockError::LockVersion(raw.lock_version.clone()))?;
    let lock_err = |what: String, source| PylockError::Invalid {
        at: Place::default(),
        package: "(lock)".into(),
        what,
        source: Some(Box::new(source)),
    };
    if let Some(envs) = &raw.environments {
        let mut any = envs.is_empty();
        for e in envs {
            let m = Marker::parse(e).map_err(|s| lock_err(format!("environment `{e}`"), s))?;
            any |= m.evaluate(&env);
        }
        if !any {
            return Err(PylockError::Environments {
                environments: envs.join("; "),
            });
        }
    }
    if let Some(rp) = &raw.requires_python {
        let spec =
            SpecifierSet::parse(rp).map_err(|s| lock_err(format!("requires-python `{rp}`"), s))?;
        if !spec.contains(&python) {
            return Err(PylockError::RequiresPython {
                spec: rp.clone(),
                python: env.python_full_version.clone(),
            });
        }
    }
    let mut out = Vec::new();
    for p in raw.packages {
        let at = Place(Some(crate::diag::line_col(text, p.name.span().start)));
        let name = p.name.get_ref().clone();
        let invalid = |what: String, source| PylockError::Invalid {
            at,
            package: name.clone(),
            what,
            source: Some(Box::new(source)),
        };
        if let Some(m) = &p.marker {
            let marker = Marker::parse(m).map_err(|s| invalid("its marker".into(), s))?;
            if !marker.evaluate(&env) {
                continue;
            }
        }
        if let Some(rp) = &p.requires_python {
            let spec = SpecifierSet::parse(rp)
                .map_err(|s| invalid(format!("requires-python `{rp}`"), s))?;
            if !spec.contains(&python) {
                return Err(PylockError::PackageRequiresPython {
                    at,
                    package: name.clone(),
                    spec: rp.clone(),
                    python: env.python_full_version.clone(),
                });
            }
        }
        for (kind, v) in [
            ("a VCS checkout", &p.vcs),
            ("a local directory", &p.directory),
            ("an archive", &p.archive),
        ] {
            if v.is_some() {
                return Err(PylockError::Unsupported {
                    at,
                    package: name.clone(),
                    kind,
                });
            }
        }
        let mut wheels = Vec::new();
        for w in &p.wheels {
            let filename = w
                .name
                .clone()
                .or_else(|| w.url.as_deref().map(url_filename))
                .or_else(|| w.path.as_deref().map(url_filename))
                .unwrap_or_default();
            let werr = |what: String| PylockError::Wheel {
                at,
                package: name.clone(),
                wheel: filename.clone(),
                what,
            };
            if w.url.is_none() && w.path.is_none() {
                return Err(werr("neither url nor path".into()));
            }
            let file = WheelFile::parse(&filename).map_err(|e| werr(e.to_string()))?;
            if tags::normalize_name(&file.name) != tags::normalize_name(&name) {
                return Err(werr(format!("the file is not a wheel of {name}")));
            }
            // The lock's version is what the SBOM and the lock check report: it must be the
            // wheel's (PEP 440 equality: `1.0` is `1`).
            if let Some(v) = &p.version {
                let locked =
                    Version::parse(v).map_err(|_| werr(format!("invalid version `{v}`")))?;
                if Version::parse(&file.version).ok().as_ref() != Some(&locked) {
                    return Err(werr(format!(
                        "the file is version {}, but the lock says {v}",
                        file.version
                    )));
                }
            }
            let hex = w
                .hashes
                .get("sha256")
                .ok_or_else(|| werr("no sha256 hash (the only one ocibuild checks)".into()))?;
            let sha256: Digest = format!("sha256:{}", hex.to_ascii_lowercase())
                .parse()
                .map_err(|_| werr(format!("invalid sha256 `{hex}`")))?;
            wheels.push(LockedWheel {
                file,
                url: w.url.as_deref().map(crate::http::redact),
                path: w.path.clone(),
                size: w.size,
                sha256,
            });
        }
        out.push(LockedPackage {
            at,
            name,
            version: p.version,
            wheels,
            has_sdist: p.sdist.is_some(),
            sdist: p.sdist.as_ref().and_then(LockedSdist::parse),
        });
    }
    Ok(out)
}

/// The logins in a lock's URLs (its packages' `index` and wheel `url`s, where PEP 751 lets a
/// URL carry `user:password@`), which [`parse`] leaves out of the URLs it returns. None when
/// the text is not a lock ([`parse`] says why).
pub fn credentials(text: &str) -> crate::http::Credentials {
    let mut c = crate::http::Credentials::default();
    if let Ok(raw) = toml::from_str::<RawLock>(text) {
        for p in &raw.packages {
            let urls = p.wheels.iter().filter_map(|w| w.url.as_deref());
            for u in p.index.as_deref().into_iter().chain(urls) {
                c.take(u);
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::interpreter::{PyVersion, Scheme};

    fn interp() -> Interpreter {
        let version = PyVersion {
            major: 3,
            minor: 11,
        };
        Interpreter {
            version,
            executable: "/usr/bin/python3.11".into(),
            machine: "x86_64".into(),
            glibc: Some((2, 36)),
            scheme: Scheme::debian_local(version),
            full_version: None,
        }
    }

    const H: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    #[test]
    fn parses_and_filters() {
        let text = format!(
            r#"
lock-version = "1.0"
requires-python = ">=3.9"
environments = ["sys_platform == 'linux'"]
created-by = "uv"

[[packages]]
name = "numpy"
version = "2.1.0"
requires-python = ">=3.10"
sdist = {{ url = "https://x/numpy-2.1.0.tar.gz", hashes = {{ sha256 = "{H}" }} }}
wheels = [
  {{ url = "https://x/numpy-2.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", size = 10, upload-time = 2024-08-18T12:00:00Z, hashes = {{ sha256 = "{H}" }} }},
  {{ name = "numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.whl", url = "https://x/dl?id=1", hashes = {{ sha256 = "{H}" }} }},
]

[[packages]]
name = "pywin32"
version = "306"
marker = "sys_platform == 'win32'"
vcs = {{ url = "https://x/pywin32.git", commit-id = "abc" }}

[[packages]]
name = "local-thing"
version = "1+local"
wheels = [{{ path = "dist/local_thing-1%2Blocal-py3-none-any.whl", hashes = {{ sha256 = "{H}" }} }}]
"#
        );
        let pkgs = parse(&text, &interp()).unwrap();
        assert_eq!(pkgs.len(), 2);
        assert_eq!(pkgs[0].name, "numpy");
        assert!(pkgs[0].has_sdist);
        assert_eq!(
            pkgs[0].wheels[1].file.filename,
            "numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.whl"
        );
        assert_eq!(pkgs[0].wheels[0].size, Some(10));
        let best = pkgs[0].select_wheel(&interp()).unwrap();
        assert!(best.file.filename.contains("cp311"));
        assert_eq!(pkgs[1].wheels[0].file.version, "1+local");
    }

    #[test]
    fn refuses_what_it_cannot_install() {
        let vcs = "lock-version = \"1.0\"\n[[packages]]\nname = \"x\"\nvcs = { url = \"u\" }\n";
        let e = parse(vcs, &interp()).unwrap_err().to_string();
        // Placed at the package's `name` (line 3, column 8), for the caller to put after the
        // file's path.
        assert!(
            e.starts_with("3:8: package x comes from a VCS checkout"),
            "{e}"
        );
        let sdist = format!("lock-version = \"1.0\"\n[[packages]]\nname = \"y\"\nsdist = {{ url = \"u\", hashes = {{ sha256 = \"{H}\" }} }}\n");
        let pkgs = parse(&sdist, &interp()).unwrap();
        let e = pkgs[0].select_wheel(&interp()).unwrap_err().to_string();
        assert!(
            e.contains("only an sdist, and [python] names no `sdist-builder`"),
            "{e}"
        );
        let v2 = "lock-version = \"2.0\"\n";
        assert!(matches!(
            parse(v2, &interp()),
            Err(PylockError::LockVersion(_))
        ));
        let rp = "lock-version = \"1.0\"\nrequires-python = \">=3.12\"\n";
        assert!(parse(rp, &interp())
            .unwrap_err()
            .to_string()
            .contains(">=3.12 does not hold for Python 3.11.0"));
        let env = "lock-version = \"1.0\"\nenvironments = [\"sys_platform == 'darwin'\"]\n";
        assert!(matches!(
            parse(env, &interp()),
            Err(PylockError::Environments { .. })
        ));
        let md5 = "lock-version = \"1.0\"\n[[packages]]\nname = \"z\"\nwheels = [{ url = \"https://x/z-1-py3-none-any.whl\", hashes = { md5 = \"00\" } }]\n";
        assert!(parse(md5, &interp())
            .unwrap_err()
            .to_string()
            .contains("no sha256 hash"));
        let other = format!("lock-version = \"1.0\"\n[[packages]]\nname = \"z\"\nwheels = [{{ url = \"https://x/q-1-py3-none-any.whl\", hashes = {{ sha256 = \"{H}\" }} }}]\n");
        assert!(parse(&other, &interp())
            .unwrap_err()
            .to_string()
            .contains("not a wheel of z"));
        let lying = format!("lock-version = \"1.0\"\n[[packages]]\nname = \"victim\"\nversion = \"9.9\"\nwheels = [{{ url = \"https://x/victim-1.0-py3-none-any.whl\", hashes = {{ sha256 = \"{H}\" }} }}]\n");
        let e = parse(&lying, &interp()).unwrap_err().to_string();
        assert!(
            e.contains("the file is version 1.0, but the lock says 9.9"),
            "{e}"
        );
        let same = lying.replace("9.9", "1.0.0");
        assert!(parse(&same, &interp()).is_ok());
    }
}
