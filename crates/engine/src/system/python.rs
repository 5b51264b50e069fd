//! `[python]`: the interpreter archive layer, and the target [`Interpreter`] found from the apt
//! packages, the archive's files or the base image's, without running Python.

use std::io::{self, BufRead, Read};
use std::path::Path;

use fs_err as fs;
use serde_json::json;

use super::{Extra, SystemError, SystemOptions};
use crate::apt::{self, Version};
use crate::digest::Digest;
use crate::http::Fetcher;
use crate::layer::{self, CopySpec, LayerOptions, ModePolicy};
use crate::lock::LockedDeb;
use crate::progress::Reporter;
use crate::python::interpreter::PyVersion;
use crate::python::{Interpreter, Scheme};
use crate::recipe::{Platform, Python, PythonArchive, PythonSource};
use crate::store::Store;

/// The machine name in wheel platform tags, for an OCI platform.
pub fn wheel_machine(p: &Platform) -> String {
    match (p.architecture.as_str(), p.variant.as_deref()) {
        ("amd64", _) => "x86_64",
        ("arm64", _) => "aarch64",
        ("386", _) => "i686",
        ("arm", Some("v6")) => "armv6l",
        ("arm", _) => "armv7l",
        ("ppc64le", _) => "ppc64le",
        ("s390x", _) => "s390x",
        ("riscv64", _) => "riscv64",
        (other, _) => other,
    }
    .to_string()
}

/// `2.36-9+deb12u4` → (2, 36).
fn glibc_of(v: &Version) -> Option<(u32, u32)> {
    let up = v.upstream();
    let mut it = up.split(['.', '+', '-', '~']);
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// `python3.11`, `python3.11-minimal`, `libpython3.11-minimal` → 3.11.
fn apt_python_version(name: &str) -> Option<PyVersion> {
    let rest = name
        .strip_prefix("libpython")
        .or_else(|| name.strip_prefix("python"))?;
    let v = rest.strip_suffix("-minimal").unwrap_or(rest);
    if !v.starts_with("3.") || v.contains('-') {
        return None;
    }
    PyVersion::parse(v)
}

/// `.../python3.11` → 3.11.
fn path_version(path: &str) -> Option<PyVersion> {
    PyVersion::parse(path.rsplit('/').next()?.strip_prefix("python")?)
}

/// Follows symlinks among the base's Python executables (relative or absolute targets) to a
/// versioned name.
fn base_version(base: &apt::Base, path: &str) -> Option<(PyVersion, String)> {
    let mut p = path.trim_start_matches('/').to_string();
    for _ in 0..8 {
        if let Some(v) = path_version(&p) {
            if base.pythons.contains_key(&p) {
                return Some((v, format!("/{p}")));
            }
        }
        match base.pythons.get(&p)? {
            Some(target) if target.starts_with('/') => p = target.trim_start_matches('/').into(),
            Some(target) => {
                let dir = p.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
                p = format!("{dir}/{target}");
            }
            None => return None,
        }
    }
    None
}

/// The scheme for an interpreter at `exe`: Debian's `/usr/local/…/dist-packages` for a distro
/// Python in /usr/bin, else the prefix layout (`<prefix>/lib/pythonX.Y/site-packages`).
fn scheme_for(exe: &str, v: PyVersion, debian: bool) -> Scheme {
    if debian && exe.starts_with("/usr/bin/") {
        return Scheme::debian_local(v);
    }
    let bin = exe.rsplit_once('/').map(|(d, _)| d).unwrap_or("/usr/bin");
    let prefix = bin.strip_suffix("/bin").unwrap_or("/usr");
    Scheme::prefix(prefix, v)
}

fn glibc(apt_pkgs: &[LockedDeb], base: &apt::Base) -> Option<(u32, u32)> {
    apt_pkgs
        .iter()
        .find(|p| p.name == "libc6")
        .and_then(|p| Version::parse(&p.version).ok())
        .and_then(|v| glibc_of(&v))
        .or_else(|| base.installed.version("libc6").and_then(glibc_of))
        .or(base.libc_file_version)
}

pub fn prepare(
    py: &Python,
    platform: &Platform,
    apt_pkgs: &[LockedDeb],
    base: &apt::Base,
    io: &super::Io<'_>,
    opts: &SystemOptions,
) -> Result<(Interpreter, Option<Extra>), SystemError> {
    let super::Io {
        fetcher,
        store,
        reporter,
        ..
    } = *io;
    let glibc = glibc(apt_pkgs, base);
    let debian = !apt_pkgs.is_empty() || !base.installed.is_empty();
    let apt_version = apt_pkgs
        .iter()
        .filter_map(|p| apt_python_version(&p.name))
        .max();
    let (version, exe, layer, scheme) = match &py.source {
        PythonSource::Archive(a) => {
            let (version, extra) = archive_layer(a, fetcher, store, opts, reporter)?;
            let exe = format!("{}/bin/python{version}", a.prefix);
            let scheme = Scheme::prefix(&a.prefix, version);
            (version, exe, Some(extra), scheme)
        }
        PythonSource::Path(p) => {
            let found = match (path_version(p), apt_version) {
                (Some(v), Some(av)) if v == av && p.starts_with("/usr/bin/") => {
                    Some((v, p.clone()))
                }
                (None, Some(av)) if p == "/usr/bin/python3" => {
                    Some((av, format!("/usr/bin/python{av}")))
                }
                _ => base_version(base, p),
            };
            let (v, exe) = found.ok_or_else(|| SystemError::Python {
                problem: format!(
                    "no Python interpreter at {p}: it is neither in the base image nor installed \
                     by [apt] (found: {})",
                    found_list(base, apt_version)
                ),
            })?;
            let scheme = scheme_for(&exe, v, debian);
            (v, exe, None, scheme)
        }
        PythonSource::Auto => {
            let found = match apt_version {
                Some(v) => Some((v, format!("/usr/bin/python{v}"))),
                None => ["usr/bin/python3", "usr/local/bin/python3"]
                    .iter()
                    .find_map(|p| base_version(base, p)),
            };
            let (v, exe) = found.ok_or_else(|| SystemError::Python {
                problem: "no interpreter: [apt] installs no python3.X package and the base \
                          image has no usr/bin/python3 or usr/local/bin/python3; add python3 to \
                          [apt] packages, set `path`, or give an `archive`"
                    .into(),
            })?;
            let scheme = scheme_for(&exe, v, debian);
            (v, exe, None, scheme)
        }
    };
    if let Some(want) = &py.version {
        if PyVersion::parse(want) != Some(version) {
            return Err(SystemError::PythonVersion {
                at: py.version_at.clone().unwrap_or_else(|| "recipe".into()),
                want: want.clone(),
                found: version.to_string(),
                exe,
            });
        }
    }
    // The full version: the archive's file name, else the Debian package's version (the
    // apt layer's, then the base's).
    let full_version = if let PythonSource::Archive(a) = &py.source {
        crate::python::interpreter::archive_version(&a.written)
    } else {
        let names = [
            format!("python{version}-minimal"),
            format!("python{version}"),
        ];
        apt_pkgs
            .iter()
            .find(|p| names.contains(&p.name))
            .map(|p| p.version.clone())
            .or_else(|| {
                names.iter().find_map(|n| {
                    base.installed
                        .version(n)
                        .map(std::string::ToString::to_string)
                })
            })
            .and_then(|v| crate::python::interpreter::upstream_version(&v))
    };
    Ok((
        Interpreter {
            version,
            executable: exe,
            machine: wheel_machine(platform),
            glibc,
            scheme,
            full_version,
        },
        layer,
    ))
}

fn found_list(base: &apt::Base, apt_version: Option<PyVersion>) -> String {
    let mut v: Vec<String> = base.pythons.keys().map(|p| format!("/{p}")).collect();
    if let Some(a) = apt_version {
        v.push(format!("/usr/bin/python{a} from [apt]"));
    }
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// The archive's decompressed tar stream, by magic bytes: gzip, zstd, xz or plain tar.
fn decompress<'a>(r: impl BufRead + 'a) -> io::Result<Box<dyn Read + 'a>> {
    let mut r = r;
    let head = r.fill_buf()?.to_vec();
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::bufread::MultiGzDecoder::new(r))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(zstd::stream::read::Decoder::with_buffer(r)?)
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Box::new(liblzma::bufread::XzDecoder::new_stream(
            r,
            crate::apt::xz_stream()?,
        ))
    } else {
        Box::new(r)
    })
}

/// Unpacks `archive` into `dir` with `strip` leading components removed, by
/// [`crate::unpack`]'s rules (nothing written, linked or chmod'ed through a symlink).
fn unpack(archive: &Path, strip: u32, dir: &Path, url: &str) -> Result<(), SystemError> {
    let err = |reason: String| SystemError::Archive {
        url: url.to_string(),
        reason,
    };
    let f = fs::File::open(archive).map_err(|e| err(e.to_string()))?;
    let tar = decompress(io::BufReader::new(f)).map_err(|e| err(format!("decompressing: {e}")))?;
    crate::unpack::unpack_tar(tar, strip as usize, dir).map_err(|e| err(crate::diag::chain(&e)))
}

/// The Python version of an unpacked archive: its `bin/python3.N`.
fn archive_version(dir: &Path, url: &str) -> Result<PyVersion, SystemError> {
    let bin = dir.join("bin");
    let mut found = Vec::new();
    if let Ok(rd) = fs::read_dir(&bin) {
        for e in rd.flatten() {
            if let Some(v) = e.file_name().to_str().and_then(path_version) {
                found.push(v);
            }
        }
    }
    found.sort();
    found.dedup();
    match found.as_slice() {
        [v] => Ok(*v),
        [] => Err(SystemError::Archive {
            url: url.to_string(),
            reason:
                "no bin/python3.N after stripping: is `strip` right? (python-build-standalone's \
                     install_only archives need strip = 1)"
                    .into(),
        }),
        many => Err(SystemError::Archive {
            url: url.to_string(),
            reason: format!(
                "several interpreters in bin/: {}",
                many.iter()
                    .map(|v| format!("python{v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// The archive layer (cached by the archive's digest, prefix and strip), and its version.
fn archive_layer(
    a: &PythonArchive,
    fetcher: &dyn Fetcher,
    store: &Store,
    opts: &SystemOptions,
    reporter: &dyn Reporter,
) -> Result<(PyVersion, Extra), SystemError> {
    let name = "python".to_string();
    let created_by = format!("ocibuild python: {} -> {}", a.sha256, a.prefix);
    let key = layer::cache_key(
        "python layer key",
        "python-archive/1",
        opts.compression,
        opts.epoch,
        [
            ("archive", json!(a.sha256)),
            ("prefix", json!(a.prefix)),
            ("strip", json!(a.strip)),
        ],
    )?;
    // The version found in the archive, a fact kept beside the cached layer (and shared with
    // it through a cache repository); asked first, so a layer hit is only taken with it.
    let meta_key = Digest::of(format!("python-version/1 {key}").as_bytes());
    if !opts.no_cache {
        let version = store
            .meta(&meta_key)?
            .and_then(|t| std::str::from_utf8(&t).ok().and_then(PyVersion::parse));
        let hit = match version {
            Some(_) => store.cached_layer(&key)?,
            None => None,
        };
        if let (Some(v), Some(hit)) = (version, hit) {
            reporter.layer_finished(&name, true);
            return Ok((
                v,
                Extra {
                    name,
                    layer: hit,
                    cached: true,
                    created_by,
                },
            ));
        }
    }
    let _guard = store.lock(&key.hex())?;
    let path = super::fetch_verified(fetcher, store, &a.url, a.sha256, None, "[python] archive")?;
    let spool = tempfile::Builder::new()
        .prefix("python-spool-")
        .tempdir_in(store.root().join("tmp"))
        .map_err(|e| SystemError::Archive {
            url: a.url.clone(),
            reason: format!("temporary directory: {e}"),
        })?;
    let root = spool.path().join("root");
    fs::create_dir(&root).map_err(|e| SystemError::Archive {
        url: a.url.clone(),
        reason: e.to_string(),
    })?;
    unpack(&path, a.strip, &root, &a.url)?;
    let version = archive_version(&root, &a.url)?;
    let specs = [CopySpec {
        src: root.clone(),
        dest: a.prefix.clone(),
        ignore: Vec::new(),
        uid: 0,
        gid: 0,
        mode: ModePolicy::Preserve,
    }];
    let entries = layer::scan(&specs)?;
    let total = entries
        .iter()
        .map(|e| match e.kind {
            layer::EntryKind::File { size, .. } => size,
            _ => 0,
        })
        .sum();
    reporter.layer_started(&name, total);
    let mut w = store.prehashed_blob_writer()?;
    // The unpacked files read as the scan listed them, through directory handles.
    let mut reader = layer::HostReader::new(&specs);
    let stats = layer::write_layer_with(
        &entries,
        &LayerOptions {
            epoch: opts.epoch,
            compression: opts.compression,
            threads: opts.threads,
        },
        &mut w,
        &|n| reporter.layer_progress(&name, n),
        &mut |_, e, sink| layer::host_content(&mut reader, e, sink),
    )?;
    w.commit(Some(stats.digest))?;
    let built = stats.cached(opts.compression);
    store.put_meta(&meta_key, version.to_string().as_bytes())?;
    let extra = Extra::built(store, &key, built, name, created_by, reporter)?;
    Ok((version, extra))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_names() {
        assert_eq!(
            apt_python_version("python3.11-minimal"),
            PyVersion::parse("3.11")
        );
        assert_eq!(
            apt_python_version("libpython3.12-minimal"),
            PyVersion::parse("3.12")
        );
        assert_eq!(apt_python_version("python3.11"), PyVersion::parse("3.11"));
        assert_eq!(apt_python_version("python3"), None);
        assert_eq!(apt_python_version("python3-pip"), None);
        assert_eq!(apt_python_version("python3.11-venv"), None);
        assert_eq!(
            glibc_of(&Version::parse("2.36-9+deb12u4").unwrap()),
            Some((2, 36))
        );
        assert_eq!(
            glibc_of(&Version::parse("2.39-0ubuntu8.3").unwrap()),
            Some((2, 39))
        );
    }

    #[test]
    fn base_symlinks_and_schemes() {
        let mut base = apt::Base::default();
        base.pythons
            .insert("usr/bin/python3".into(), Some("python3.12".into()));
        base.pythons.insert("usr/bin/python3.12".into(), None);
        base.pythons.insert(
            "usr/local/bin/python3".into(),
            Some("/opt/py/bin/python3.13".into()),
        );
        assert_eq!(
            base_version(&base, "/usr/bin/python3"),
            Some((
                PyVersion::parse("3.12").unwrap(),
                "/usr/bin/python3.12".into()
            ))
        );
        assert_eq!(base_version(&base, "usr/local/bin/python3"), None);
        let v = PyVersion::parse("3.12").unwrap();
        assert_eq!(
            scheme_for("/usr/bin/python3.12", v, true),
            Scheme::debian_local(v)
        );
        assert_eq!(
            scheme_for("/usr/local/bin/python3.12", v, true),
            Scheme::prefix("/usr/local", v)
        );
        assert_eq!(
            scheme_for("/usr/bin/python3.12", v, false),
            Scheme::prefix("/usr", v)
        );
    }
}
