//! What the base image brings: its installed packages (`var/lib/dpkg/status` and
//! `var/lib/dpkg/status.d/*`, the distroless convention) and its merged-/usr symlinks, read
//! from its layers' tar streams, in order, with OCI whiteouts applied.

use std::collections::BTreeMap;
use std::io::Read;

use super::resolve::Installed;
use super::usrmerge::{UsrMerge, USR_MERGE_DIRS};
use super::AptError;

/// Largest status file (or status.d record) read.
const MAX_STATUS: u64 = 256 << 20;

const STATUS: &str = "var/lib/dpkg/status";
const STATUS_D: &str = "var/lib/dpkg/status.d/";
/// The account files read from the base.
pub const ACCOUNT_FILES: [&str; 3] = ["etc/passwd", "etc/group", "etc/shadow"];

/// The base image as far as apt/ is concerned.
#[derive(Clone, Debug, Default)]
pub struct Base {
    pub installed: Installed,
    pub usr_merge: UsrMerge,
    /// It has dpkg's `var/lib/dpkg/status` (not only distroless `status.d` records).
    pub has_dpkg_status: bool,
    /// Python executables in a `bin/` directory (`usr/bin/python3.11`, `usr/local/bin/python3`,
    /// `opt/python/bin/python3.12`): path → symlink target (`None` for a regular file).
    pub pythons: BTreeMap<String, Option<String>>,
    /// glibc's version from a pre-2.34 `libc-2.NN.so` file name, when the base has one.
    pub libc_file_version: Option<(u32, u32)>,
    /// The account files it has (`etc/passwd`, `etc/group`, `etc/shadow`) → their text.
    pub accounts: BTreeMap<String, String>,
    /// The alternatives it has chosen already (the names in `etc/alternatives/`).
    pub alternatives: std::collections::BTreeSet<String>,
    /// Shared libraries by soname ([`soname`] of the file name) → (path, bytes): the regular
    /// file, or the first symlink of that soname when no regular file has it.
    pub libraries: BTreeMap<String, (String, u64)>,
}

/// The soname a shared library's file name stands for, as ldconfig names the links it makes:
/// `libcublas.so.12.8.4.1` and `libcublas.so.12` → `libcublas.so.12`. `None` for anything else
/// (`libfoo.so`, the development link, has no version and is not loaded at run time).
pub fn soname(file_name: &str) -> Option<String> {
    let (stem, version) = file_name.split_once(".so.")?;
    let numeric = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    // Every part numeric: `libstdc++.so.6.0.30-gdb.py` (a gdb script) is no library.
    let ok = stem.starts_with("lib") && stem.len() > 3 && version.split('.').all(numeric);
    let major = version.split('.').next()?;
    ok.then(|| format!("{stem}.so.{major}"))
}

/// Whether `path` (normalized, relative) names a Python executable in a `bin/` directory.
pub fn is_python_path(path: &str) -> bool {
    let Some((dir, name)) = path.rsplit_once('/') else {
        return false;
    };
    if !(dir == "bin" || dir.ends_with("/bin")) || dir.split('/').count() > 4 {
        return false;
    }
    let Some(v) = name.strip_prefix("python") else {
        return false;
    };
    let mut parts = v.split('.');
    let major_ok = parts.next().is_some_and(|m| m == "3");
    major_ok
        && parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && v.split('.').count() <= 2
}

/// `libc-2.31.so` → (2, 31).
fn libc_file(path: &str) -> Option<(u32, u32)> {
    let name = path.rsplit('/').next()?;
    let v = name.strip_prefix("libc-")?.strip_suffix(".so")?;
    let (a, b) = v.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Reads the base's layers (uncompressed tar streams, lowest first). `name` labels each one in
/// errors (e.g. its digest).
pub fn scan_base<'a>(
    layers: impl IntoIterator<Item = (String, Box<dyn Read + 'a>)>,
) -> Result<Base, AptError> {
    scan_facts(layers)?.base()
}

/// What [`scan_base`] reads from the base's layers, before it is parsed: small, and the same
/// for the same layers on any machine, so it is cached (also in a shared cache, so that a
/// build that pushes to the base's registry needs none of the base's layers).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BaseFacts {
    /// The dpkg status files (`var/lib/dpkg/status`, `status.d/*`) → their text.
    pub status: BTreeMap<String, String>,
    /// The top-level merged-/usr symlinks → their targets.
    pub links: BTreeMap<String, String>,
    pub pythons: BTreeMap<String, Option<String>>,
    pub libc_file_version: Option<(u32, u32)>,
    pub accounts: BTreeMap<String, String>,
    pub alternatives: std::collections::BTreeSet<String>,
    pub libraries: BTreeMap<String, (String, u64)>,
}

impl BaseFacts {
    /// The base these facts describe (its status files parsed).
    pub fn base(&self) -> Result<Base, AptError> {
        let mut installed = Installed::new();
        for (path, text) in &self.status {
            if path.ends_with(".md5sums") {
                continue;
            }
            installed.add_status(text, &format!("base /{path}"))?;
        }
        Ok(Base {
            installed,
            usr_merge: UsrMerge::from_symlinks(
                self.links.iter().map(|(p, t)| (p.as_str(), t.as_str())),
            ),
            has_dpkg_status: self.status.contains_key(STATUS),
            pythons: self.pythons.clone(),
            libc_file_version: self.libc_file_version,
            accounts: self.accounts.clone(),
            alternatives: self.alternatives.clone(),
            libraries: self.libraries.clone(),
        })
    }
}

/// Path → (soname, bytes, regular file, symlink or hard link target) of the base's shared
/// libraries.
type Libs = BTreeMap<String, (String, u64, bool, Option<String>)>;

/// Soname → (path, bytes): regular files first (in path order), then links for sonames no file
/// has, each with its target's path and size when the target is a regular file
/// (`libcuda.so.1 -> libcuda.so.580.65.06` names another "soname" than its target's).
fn shared_libraries(libs: &Libs) -> BTreeMap<String, (String, u64)> {
    let mut libraries: BTreeMap<String, (String, u64)> = BTreeMap::new();
    for want_regular in [true, false] {
        for (path, (so, size, regular, target)) in libs {
            if *regular != want_regular || libraries.contains_key(so) {
                continue;
            }
            let resolved = target
                .as_ref()
                .and_then(|t| libs.get(t).map(|l| (t, l)))
                .filter(|(_, l)| l.2);
            match resolved {
                Some((t, l)) => libraries.insert(so.clone(), (t.clone(), l.1)),
                None => libraries.insert(so.clone(), (path.clone(), *size)),
            };
        }
    }
    libraries
}

/// [`BaseFacts`] of the base's layers (uncompressed tar streams, lowest first).
pub fn scan_facts<'a>(
    layers: impl IntoIterator<Item = (String, Box<dyn Read + 'a>)>,
) -> Result<BaseFacts, AptError> {
    // Path → content for the files we care about; top-level symlinks.
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    let mut links: BTreeMap<String, String> = BTreeMap::new();
    let mut pythons: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut libc_file_version = None;
    let mut alternatives = std::collections::BTreeSet::new();
    let mut libs: Libs = BTreeMap::new();
    for (name, reader) in layers {
        let err = |source: std::io::Error| AptError::Decompress {
            what: format!("base layer {name}"),
            source,
        };
        let mut archive = crate::tarbound::archive(reader);
        for entry in archive.entries().map_err(err)? {
            let mut entry = entry.map_err(err)?;
            let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let path = raw
                .trim_start_matches("./")
                .trim_start_matches('/')
                .trim_end_matches('/')
                .to_string();
            let (dir, base) = match path.rsplit_once('/') {
                Some((d, b)) => (format!("{d}/"), b),
                None => (String::new(), path.as_str()),
            };
            if base == ".wh..wh..opq" {
                files.retain(|p, _| !p.starts_with(&dir));
                if dir == "etc/alternatives/" || dir == "etc/" || dir.is_empty() {
                    alternatives.clear();
                }
                pythons.retain(|p, _| !p.starts_with(&dir));
                libs.retain(|p, _| !p.starts_with(&dir));
                if dir.is_empty() {
                    // An opaque root: the top-level symlinks of lower layers go too.
                    links.clear();
                }
                continue;
            }
            if let Some(victim) = base.strip_prefix(".wh.") {
                let victim = format!("{dir}{victim}");
                if dir == "etc/alternatives/" {
                    alternatives.remove(&victim["etc/alternatives/".len()..]);
                } else if victim == "etc/alternatives" || victim == "etc" {
                    alternatives.clear();
                }
                files.retain(|p, _| *p != victim && !p.starts_with(&format!("{victim}/")));
                pythons.retain(|p, _| *p != victim && !p.starts_with(&format!("{victim}/")));
                libs.retain(|p, _| *p != victim && !p.starts_with(&format!("{victim}/")));
                links.remove(&victim);
                continue;
            }
            let etype = entry.header().entry_type();
            if dir == "etc/alternatives/" && !base.is_empty() {
                alternatives.insert(base.to_string());
            }
            if let Some(so) = soname(base) {
                match etype {
                    tar::EntryType::Regular | tar::EntryType::Continuous => {
                        libs.insert(path.clone(), (so, entry.size(), true, None));
                    }
                    tar::EntryType::Symlink | tar::EntryType::Link => {
                        let t = entry.link_name_bytes().map(|t| {
                            let t = String::from_utf8_lossy(&t).into_owned();
                            match (etype, t.starts_with('/'), path.rsplit_once('/')) {
                                // A hard link names a path from the root; so does `/x`.
                                (tar::EntryType::Link, _, _) | (_, true, _) => t
                                    .trim_start_matches("./")
                                    .trim_start_matches('/')
                                    .to_string(),
                                (_, false, Some((d, _))) => format!("{d}/{t}"),
                                (_, false, None) => t,
                            }
                        });
                        libs.insert(path.clone(), (so, 0, false, t));
                    }
                    _ => {
                        libs.remove(&path);
                    }
                }
            }
            if is_python_path(&path) {
                match etype {
                    tar::EntryType::Symlink => {
                        let t = entry
                            .link_name_bytes()
                            .map(|t| String::from_utf8_lossy(&t).into_owned());
                        pythons.insert(path.clone(), t);
                    }
                    tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::Link => {
                        pythons.insert(path.clone(), None);
                    }
                    _ => {
                        pythons.remove(&path);
                    }
                }
                continue;
            }
            if let Some(v) = libc_file(&path) {
                libc_file_version = libc_file_version.max(Some(v));
            }
            if USR_MERGE_DIRS.contains(&path.as_str()) {
                if etype == tar::EntryType::Symlink {
                    if let Some(t) = entry.link_name_bytes() {
                        links.insert(path.clone(), String::from_utf8_lossy(&t).into_owned());
                    }
                } else {
                    links.remove(&path);
                }
                continue;
            }
            let wanted = path == STATUS
                || (path.starts_with(STATUS_D) && !path[STATUS_D.len()..].contains('/'))
                || ACCOUNT_FILES.contains(&path.as_str());
            if !wanted {
                continue;
            }
            if !matches!(etype, tar::EntryType::Regular | tar::EntryType::Continuous) {
                files.remove(&path);
                continue;
            }
            let mut s = String::new();
            (&mut entry)
                .take(MAX_STATUS)
                .read_to_string(&mut s)
                .map_err(err)?;
            files.insert(path, s);
        }
    }
    let accounts: BTreeMap<String, String> = ACCOUNT_FILES
        .iter()
        .filter_map(|p| files.remove(*p).map(|t| (p.to_string(), t)))
        .collect();
    let libraries = shared_libraries(&libs);
    Ok(BaseFacts {
        status: files,
        links,
        pythons,
        libc_file_version,
        accounts,
        alternatives,
        libraries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonames_from_file_names() {
        assert_eq!(
            soname("libcublas.so.12.8.4.1").as_deref(),
            Some("libcublas.so.12")
        );
        assert_eq!(
            soname("libcudart.so.12").as_deref(),
            Some("libcudart.so.12")
        );
        for no in [
            "libfoo.so",
            "foo.so.1",
            "lib.so.1",
            "libx.so.abc",
            "libx.so.",
        ] {
            assert_eq!(soname(no), None, "{no}");
        }
    }

    fn layer(entries: &[(&str, Option<&str>, Option<&str>)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, body, link) in entries {
            let mut h = tar::Header::new_ustar();
            h.set_path(path).unwrap();
            h.set_mode(0o644);
            match (body, link) {
                (_, Some(t)) => {
                    h.set_entry_type(tar::EntryType::Symlink);
                    h.set_link_name(t).unwrap();
                    h.set_size(0);
                    h.set_cksum();
                    b.append(&h, &b""[..]).unwrap();
                }
                (Some(body), None) => {
                    h.set_size(body.len() as u64);
                    h.set_cksum();
                    b.append(&h, body.as_bytes()).unwrap();
                }
                (None, None) => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_size(0);
                    h.set_cksum();
                    b.append(&h, &b""[..]).unwrap();
                }
            }
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn status_status_d_whiteouts_and_usr_merge() {
        let l1 = layer(&[
            ("bin", None, Some("usr/bin")),
            ("lib", None, Some("/usr/lib")),
            ("sbin", None, None),
            (
                "var/lib/dpkg/status",
                Some("Package: libc6\nStatus: install ok installed\nVersion: 2.36\n"),
                None,
            ),
            (
                "var/lib/dpkg/status.d/tzdata",
                Some("Package: tzdata\nVersion: 2024a\n"),
                None,
            ),
            (
                "var/lib/dpkg/status.d/gone",
                Some("Package: gone\nVersion: 1\n"),
                None,
            ),
            ("var/lib/dpkg/status.d/tzdata.md5sums", Some("x  y\n"), None),
        ]);
        let l2 = layer(&[
            ("var/lib/dpkg/status.d/.wh.gone", Some(""), None),
            ("lib", None, None), // lib replaced by a real directory
        ]);
        let base = scan_base([
            ("l1".to_string(), Box::new(&l1[..]) as Box<dyn Read>),
            ("l2".to_string(), Box::new(&l2[..]) as Box<dyn Read>),
        ])
        .unwrap();
        assert!(base.installed.contains("libc6"));
        assert!(base.installed.contains("tzdata"));
        assert!(!base.installed.contains("gone"));
        assert_eq!(base.usr_merge.rewrite("bin/ls"), "usr/bin/ls");
        assert_eq!(base.usr_merge.rewrite("lib/x"), "lib/x");
        assert_eq!(base.usr_merge.rewrite("sbin/x"), "sbin/x");
    }

    #[test]
    fn pythons_and_libc() {
        for p in [
            "usr/bin/python3",
            "usr/bin/python3.11",
            "usr/local/bin/python3.12",
            "opt/py/bin/python3",
        ] {
            assert!(is_python_path(p), "{p}");
        }
        for p in [
            "usr/bin/python3-config",
            "usr/bin/python2.7",
            "usr/lib/python3.11",
            "python3",
            "usr/bin/python3.11.2",
        ] {
            assert!(!is_python_path(p), "{p}");
        }
        let l = layer(&[
            ("usr/bin/python3", None, Some("python3.11")),
            ("usr/bin/python3.11", Some("ELF"), None),
            ("lib/x86_64-linux-gnu/libc-2.31.so", Some("ELF"), None),
        ]);
        let base = scan_base([("l".to_string(), Box::new(&l[..]) as Box<dyn Read>)]).unwrap();
        assert_eq!(
            base.pythons.get("usr/bin/python3"),
            Some(&Some("python3.11".to_string()))
        );
        assert_eq!(base.pythons.get("usr/bin/python3.11"), Some(&None));
        assert_eq!(base.libc_file_version, Some((2, 31)));
    }
}
