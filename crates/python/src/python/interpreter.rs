//! The target interpreter: everything the wheel step needs to choose and install wheels, known
//! without running Python on the build host.

use std::fmt;

/// A CPython `major.minor` version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyVersion {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for PyVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl PyVersion {
    /// Parses `3.11` or `3.11.2` (the patch level is ignored).
    pub fn parse(s: &str) -> Option<PyVersion> {
        let mut it = s.split('.');
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        Some(PyVersion { major, minor })
    }

    /// `cp311`: the interpreter and ABI tag of this CPython version (no debug or
    /// free-threaded builds).
    pub fn cp_tag(&self) -> String {
        format!("cp{}{}", self.major, self.minor)
    }
}

/// Where a wheel's parts go (the sysconfig install scheme, as absolute paths in the image).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scheme {
    /// Pure-Python packages, e.g. `/usr/local/lib/python3.11/dist-packages`.
    pub purelib: String,
    /// Extension modules; on Linux the same directory as `purelib`.
    pub platlib: String,
    /// Console scripts and `.data/scripts`, e.g. `/usr/local/bin`.
    pub scripts: String,
    /// `.data/headers` go to `headers/<dist name>`, e.g. `/usr/local/include/python3.11`.
    pub headers: String,
    /// `.data/data`: the prefix, e.g. `/usr/local`.
    pub data: String,
}

impl Scheme {
    /// The scheme of an interpreter installed under `prefix` (`/opt/python`):
    /// `prefix/lib/pythonX.Y/site-packages`, `prefix/bin`, …
    pub fn prefix(prefix: &str, v: PyVersion) -> Scheme {
        let p = prefix.trim_end_matches('/');
        let lib = format!("{p}/lib/python{v}/site-packages");
        Scheme {
            purelib: lib.clone(),
            platlib: lib,
            scripts: format!("{p}/bin"),
            headers: format!("{p}/include/python{v}"),
            data: if p.is_empty() { "/".into() } else { p.into() },
        }
    }

    /// Debian's and Ubuntu's scheme for packages installed outside dpkg (what `pip install`
    /// as root uses there): `/usr/local/lib/pythonX.Y/dist-packages`, `/usr/local/bin`.
    pub fn debian_local(v: PyVersion) -> Scheme {
        let lib = format!("/usr/local/lib/python{v}/dist-packages");
        Scheme {
            purelib: lib.clone(),
            platlib: lib,
            scripts: "/usr/local/bin".into(),
            headers: format!("/usr/local/include/python{v}"),
            data: "/usr/local".into(),
        }
    }
}

/// The interpreter the image runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Interpreter {
    pub version: PyVersion,
    /// The absolute path scripts' `#!python` shebangs are rewritten to, e.g. `/usr/bin/python3.11`.
    pub executable: String,
    /// The machine in wheel platform tags: `x86_64`, `aarch64`.
    pub machine: String,
    /// The image's glibc `(major, minor)`, from the base or the apt packages; `None` when the
    /// image has no glibc (then no manylinux wheel is compatible).
    pub glibc: Option<(u32, u32)>,
    pub scheme: Scheme,
    /// `3.11.2`, when known (from the apt package's version, the base's dpkg record or the
    /// archive's file name); markers and `requires-python` see `X.Y.0` otherwise.
    pub full_version: Option<String>,
}

impl Interpreter {
    /// The ABI tag (`cp311`).
    pub fn abi(&self) -> String {
        self.version.cp_tag()
    }

    /// `python_full_version`: the full version, else `X.Y.0`.
    pub fn full_version(&self) -> String {
        self.full_version
            .clone()
            .unwrap_or_else(|| format!("{}.0", self.version))
    }

    /// The `uv pip compile` line that locks for this interpreter: its full version and its
    /// platform (`x86_64-manylinux_2_36`, the image's glibc).
    pub fn relock_command(&self) -> String {
        let platform = match self.glibc {
            Some((a, b)) => format!("{}-manylinux_{a}_{b}", self.machine),
            None => format!("{}-unknown-linux-musl", self.machine),
        };
        format!(
            "uv pip compile requirements.in --format pylock.toml -o pylock.toml --python-version {} --python-platform {platform}",
            self.full_version()
        )
    }
}

/// The upstream version of a Debian package version that is a Python release: `3.11.2` of
/// `3.11.2-6+deb12u6` (or of `1:3.11.2-1`).
pub fn upstream_version(debian: &str) -> Option<String> {
    let v = debian.split_once(':').map_or(debian, |(_, v)| v);
    let v = v.split('-').next()?;
    let v = v.split(['~', '+']).next()?;
    let parts: Vec<&str> = v.split('.').collect();
    let numeric = parts
        .iter()
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (parts.len() == 3 && numeric).then(|| v.to_string())
}

/// The version in a python-build-standalone archive's file name: `3.12.7` of
/// `cpython-3.12.7+20241016-x86_64-unknown-linux-gnu-install_only.tar.gz`.
pub fn archive_version(url: &str) -> Option<String> {
    let name = url.rsplit('/').next()?;
    // Release URLs write the `+` as `%2B`.
    let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
    let rest = name.strip_prefix("cpython-")?;
    let v = rest.split(['+', '-']).next()?;
    upstream_version(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_versions_and_the_relock_line() {
        assert_eq!(
            upstream_version("3.11.2-6+deb12u6").as_deref(),
            Some("3.11.2")
        );
        assert_eq!(
            upstream_version("1:3.12.3-0ubuntu2").as_deref(),
            Some("3.12.3")
        );
        assert_eq!(upstream_version("3.13.0~rc1-1").as_deref(), Some("3.13.0"));
        assert_eq!(upstream_version("3.11-1"), None);
        assert_eq!(
            archive_version(
                "https://x/cpython-3.12.7+20241016-x86_64-unknown-linux-gnu-install_only.tar.gz"
            )
            .as_deref(),
            Some("3.12.7")
        );
        assert_eq!(archive_version("python.tar.gz"), None);
        assert_eq!(
            archive_version(
                "https://x/cpython-3.12.7%2B20241016-x86_64-unknown-linux-gnu-install_only.tar.gz"
            )
            .as_deref(),
            Some("3.12.7")
        );
        let i = Interpreter {
            version: PyVersion {
                major: 3,
                minor: 11,
            },
            executable: "/usr/bin/python3.11".into(),
            machine: "x86_64".into(),
            glibc: Some((2, 36)),
            scheme: Scheme::prefix(
                "/usr/local",
                PyVersion {
                    major: 3,
                    minor: 11,
                },
            ),
            full_version: Some("3.11.2".into()),
        };
        assert_eq!(
            i.relock_command(),
            "uv pip compile requirements.in --format pylock.toml -o pylock.toml --python-version 3.11.2 --python-platform x86_64-manylinux_2_36"
        );
    }

    #[test]
    fn versions_and_schemes() {
        let v = PyVersion::parse("3.11.2").unwrap();
        assert_eq!(
            v,
            PyVersion {
                major: 3,
                minor: 11
            }
        );
        assert_eq!(v.cp_tag(), "cp311");
        assert_eq!(PyVersion::parse("3"), None);
        let s = Scheme::prefix("/opt/python/", v);
        assert_eq!(s.purelib, "/opt/python/lib/python3.11/site-packages");
        assert_eq!(s.scripts, "/opt/python/bin");
        let d = Scheme::debian_local(v);
        assert_eq!(d.platlib, "/usr/local/lib/python3.11/dist-packages");
    }
}
