//! A source's packages on disk: an unlinked temporary file in the store's `tmp/`, one record
//! per package, written as its index is parsed (as apt keeps its package cache in a file).
//! What stays in memory is a 24-byte key per package and per `Provides` entry ([`Key`]: a
//! hash of the name and where the record is), so a loaded source costs the same few MB
//! whatever the index's size; the resolver reads back the records of the names it looks up.
//!
//! A record is `sha256 (32 bytes) · size (u64 LE) · Multi-Arch (u8)`, then five strings each
//! as a u32 LE length and its bytes: name, version, architecture, filename, `Provides`; then
//! the dependencies (`Pre-Depends` and `Depends` joined by `,`) to the end. Every field was
//! checked when the index was read. Records of an index that then fails its hash check stay
//! in the file, unreferenced: no key points to them.

use std::collections::HashSet;
use std::fs::File;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::control::parse_provides;
use super::package::{MultiArch, Package};
use super::version::Version;
use super::AptError;
use crate::digest::Digest;

/// A package's record in a [`Spill`], found by the hash of a name (its own, or one it
/// provides).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub(crate) hash: u64,
    /// Also the record's number in file order: index order, as first seen.
    pub(crate) offset: u64,
    pub(crate) len: u32,
}

/// The hash a name is looked up by (in memory only: any stable hash does).
pub(crate) fn name_hash(name: &str) -> u64 {
    let mut h = DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

/// Most packages of one source read back for one name (its own or one it provides): a Debian
/// suite has one to three versions of a package and a few dozen providers of the busiest
/// virtual package; a hostile index with a million must not make a lookup read them all.
pub const MAX_PER_NAME: usize = 4096;

/// A loaded source: its packages on disk, and in memory a key per package name and per
/// `Provides` entry, each list sorted by the name's hash, then index order. A package in more
/// than one index of the source (the Debian archive lists `all` packages in both) counts once,
/// as first seen.
#[derive(Clone, Debug)]
pub struct SourceIndex {
    pub source_url: String,
    /// The source's Release `Date` (seconds since the epoch), when it has one.
    pub release_date: Option<i64>,
    /// Where it was loaded from (the source, its verified Release): what
    /// [`super::components::explain`] reads the other components with. `None` for a source
    /// made in memory.
    pub origin: Option<Arc<super::origin::Origin>>,
    spill: Arc<Spill>,
    names: Vec<Key>,
    provides: Vec<Key>,
    /// The names of the packages marked `Essential: yes` (of the source's architecture and
    /// `all`), sorted, each once.
    essential: Vec<Arc<str>>,
}

impl SourceIndex {
    pub(crate) fn new(
        spill: Arc<Spill>,
        mut names: Vec<Key>,
        mut provides: Vec<Key>,
    ) -> SourceIndex {
        names.sort_unstable();
        provides.sort_unstable();
        SourceIndex {
            source_url: spill.source_url().to_string(),
            release_date: None,
            origin: None,
            spill,
            names,
            provides,
            essential: Vec::new(),
        }
    }

    /// Records the names its indices mark `Essential: yes`.
    pub(crate) fn set_essential(&mut self, mut names: Vec<Arc<str>>) {
        names.sort_unstable();
        names.dedup();
        self.essential = names;
    }

    /// The names of its essential packages (`Essential: yes`): Debian's essential set, what
    /// debootstrap's minbase installs before anything else.
    pub fn essential(&self) -> impl Iterator<Item = &str> {
        self.essential.iter().map(|n| &**n)
    }

    /// A source of the given packages, as if read from an index in this order; its spill is
    /// in `dir`.
    pub fn from_packages(
        source_url: &str,
        packages: &[Package],
        dir: &Path,
    ) -> Result<SourceIndex, AptError> {
        let spill = Spill::new(source_url, dir)?;
        let mut keys = Keys::default();
        for p in packages {
            keys.push(&spill, p)?;
        }
        Ok(SourceIndex::new(spill, keys.names, keys.provides))
    }

    /// The packages under `keys` whose `want` holds, each (name, version as written,
    /// architecture) once, in index order.
    fn read(
        &self,
        keys: &[Key],
        name: &str,
        want: impl Fn(&Package) -> bool,
    ) -> Result<Vec<(Key, Package)>, AptError> {
        let hash = name_hash(name);
        let start = keys.partition_point(|k| k.hash < hash);
        let end = start + keys[start..].partition_point(|k| k.hash == hash);
        if end - start > MAX_PER_NAME {
            return Err(AptError::NameTooCommon {
                url: self.source_url.clone(),
                name: name.to_string(),
                limit: MAX_PER_NAME,
            });
        }
        let mut out: Vec<(Key, Package)> = Vec::new();
        for k in &keys[start..end] {
            let p = self.spill.get(*k)?;
            let seen = out.iter().any(|(_, o)| same(o, &p));
            if want(&p) && !seen {
                out.push((*k, p));
            }
        }
        Ok(out)
    }

    /// The packages named `name`, in index order.
    pub fn named(&self, name: &str) -> Result<Vec<Package>, AptError> {
        let named = self.read(&self.names, name, |p| *p.name == *name)?;
        Ok(named.into_iter().map(|(_, p)| p).collect())
    }

    /// The packages that provide `name`, in index order: each the first seen of its (name,
    /// version, architecture), as [`SourceIndex::named`] has it, so a later copy with other
    /// fields (another `Provides`, file or sha256) is not taken for it.
    pub fn providing(&self, name: &str) -> Result<Vec<Package>, AptError> {
        let mut out = Vec::new();
        for (k, p) in self.read(&self.provides, name, |p| {
            p.provides.iter().any(|d| d.name == name)
        })? {
            let first = self
                .read(&self.names, &p.name, |o| same(o, &p))?
                .into_iter()
                .next()
                .map(|(f, _)| f.offset);
            if first == Some(k.offset) {
                out.push(p);
            }
        }
        Ok(out)
    }

    /// Calls `f` with the name of every package of `arch` and `all` and each name it
    /// provides (some more than once). Reads every package: for error messages.
    pub fn each_name(&self, arch: &str, mut f: impl FnMut(&str)) -> Result<(), AptError> {
        for k in &self.names {
            let p = self.spill.get(*k)?;
            if *p.architecture != *arch && &*p.architecture != "all" {
                continue;
            }
            f(&p.name);
            for d in &p.provides {
                f(&d.name);
            }
        }
        Ok(())
    }

    /// Every package, in index order. Reads them all into memory: for tests and small
    /// sources.
    pub fn packages(&self) -> Result<Vec<Package>, AptError> {
        let mut keys = self.names.clone();
        keys.sort_unstable_by_key(|k| k.offset);
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for k in keys {
            let p = self.spill.get(k)?;
            if seen.insert((
                Arc::clone(&p.name),
                p.version.as_str().to_string(),
                Arc::clone(&p.architecture),
            )) {
                out.push(p);
            }
        }
        Ok(out)
    }
}

/// An index's keys, pushed as its packages go to the spill.
#[derive(Debug, Default)]
pub(crate) struct Keys {
    pub(crate) names: Vec<Key>,
    pub(crate) provides: Vec<Key>,
    /// The names of the packages marked `Essential: yes`.
    pub(crate) essential: Vec<Arc<str>>,
}

impl Keys {
    /// Adds another index's keys after these (moved, not copied, when these are none: the
    /// first index is most of a source).
    pub(crate) fn append(&mut self, mut other: Keys) {
        if self.names.is_empty() {
            self.names = std::mem::take(&mut other.names);
        }
        if self.provides.is_empty() {
            self.provides = std::mem::take(&mut other.provides);
        }
        self.names.append(&mut other.names);
        self.provides.append(&mut other.provides);
        self.essential.append(&mut other.essential);
    }

    pub(crate) fn push(&mut self, spill: &Spill, p: &Package) -> Result<(), AptError> {
        let key = spill.push(p)?;
        self.names.push(key);
        for d in &p.provides {
            self.provides.push(Key {
                hash: name_hash(&d.name),
                ..key
            });
        }
        Ok(())
    }
}

/// Whether two packages are the same (name, version as written, architecture): a package an
/// index lists twice counts once, as first seen.
fn same(a: &Package, b: &Package) -> bool {
    a.name == b.name && a.version.as_str() == b.version.as_str() && a.architecture == b.architecture
}

/// One source's records, and the archive root they came from.
#[derive(Debug)]
pub struct Spill {
    source_url: Arc<str>,
    dir: PathBuf,
    file: Mutex<Writer>,
}

#[derive(Debug)]
struct Writer {
    out: BufWriter<File>,
    len: u64,
}

impl Spill {
    /// An empty spill in `dir`, removed when the last holder drops it (or the process ends).
    pub(crate) fn new(source_url: &str, dir: &Path) -> Result<Arc<Spill>, AptError> {
        let file = tempfile::tempfile_in(dir).map_err(|source| AptError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(Arc::new(Spill {
            source_url: Arc::from(source_url),
            dir: dir.to_path_buf(),
            file: Mutex::new(Writer {
                out: BufWriter::with_capacity(1 << 16, file),
                len: 0,
            }),
        }))
    }

    /// The archive root of the source ([`super::release::Source::archive_url`]).
    pub fn source_url(&self) -> &str {
        &self.source_url
    }

    fn io_err(&self, source: io::Error) -> AptError {
        AptError::Io {
            path: self.dir.clone(),
            source,
        }
    }

    /// Appends a package's record; its key is by its own name.
    pub(crate) fn push(&self, p: &Package) -> Result<Key, AptError> {
        let provides: Vec<String> = p.provides.iter().map(ToString::to_string).collect();
        let provides = provides.join(", ");
        let strings = [
            p.name.as_bytes(),
            p.version.as_str().as_bytes(),
            p.architecture.as_bytes(),
            p.filename.as_bytes(),
            provides.as_bytes(),
        ];
        let mut rec = Vec::with_capacity(64 + strings.iter().map(|s| s.len() + 4).sum::<usize>());
        rec.extend_from_slice(p.sha256.as_bytes());
        rec.extend_from_slice(&p.size.to_le_bytes());
        rec.push(multi_arch_byte(p.multi_arch));
        for s in strings {
            let n = u32::try_from(s.len()).map_err(|_| self.io_err(too_long()))?;
            rec.extend_from_slice(&n.to_le_bytes());
            rec.extend_from_slice(s);
        }
        rec.extend_from_slice(p.depends.as_bytes());
        let len = u32::try_from(rec.len()).map_err(|_| self.io_err(too_long()))?;
        let mut w = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        w.out.write_all(&rec).map_err(|e| self.io_err(e))?;
        let key = Key {
            hash: name_hash(&p.name),
            offset: w.len,
            len,
        };
        w.len += u64::from(len);
        Ok(key)
    }

    /// Reads a record back.
    pub(crate) fn get(&self, key: Key) -> Result<Package, AptError> {
        let mut buf = vec![0u8; key.len as usize];
        {
            let mut w = self.file.lock().unwrap_or_else(PoisonError::into_inner);
            w.out.flush().map_err(|e| self.io_err(e))?;
            w.out
                .get_ref()
                .read_exact_at(&mut buf, key.offset)
                .map_err(|e| self.io_err(e))?;
        }
        self.decode(&buf)
            .ok_or_else(|| self.io_err(io::Error::other("a package record is corrupt")))
    }

    fn decode(&self, buf: &[u8]) -> Option<Package> {
        let sha: [u8; 32] = buf.get(..32)?.try_into().ok()?;
        let size = u64::from_le_bytes(buf.get(32..40)?.try_into().ok()?);
        let multi_arch = match buf.get(40)? {
            0 => MultiArch::No,
            1 => MultiArch::Same,
            2 => MultiArch::Foreign,
            3 => MultiArch::Allowed,
            _ => return None,
        };
        let mut at = 41;
        let mut next = || -> Option<&str> {
            let n = u32::from_le_bytes(buf.get(at..at + 4)?.try_into().ok()?) as usize;
            let s = std::str::from_utf8(buf.get(at + 4..(at + 4).checked_add(n)?)?).ok()?;
            at += 4 + n;
            Some(s)
        };
        let (name, version, architecture, filename, provides) =
            (next()?, next()?, next()?, next()?, next()?);
        let provides = if provides.is_empty() {
            Vec::new()
        } else {
            parse_provides(provides).ok()?
        };
        let depends = std::str::from_utf8(buf.get(at..)?).ok()?;
        Some(Package {
            name: name.into(),
            version: Version::parse(version).ok()?,
            architecture: architecture.into(),
            multi_arch,
            depends: depends.into(),
            provides: provides.into(),
            filename: filename.into(),
            size,
            sha256: Digest::from_bytes(sha),
            source_url: Arc::clone(&self.source_url),
        })
    }
}

fn multi_arch_byte(m: MultiArch) -> u8 {
    match m {
        MultiArch::No => 0,
        MultiArch::Same => 1,
        MultiArch::Foreign => 2,
        MultiArch::Allowed => 3,
    }
}

fn too_long() -> io::Error {
    io::Error::other("a package record is over 4 GiB")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(name: &str, depends: &str, provides: &str, ma: MultiArch) -> Package {
        Package {
            name: name.into(),
            version: Version::parse("1:2.0~rc1-3").unwrap(),
            architecture: "amd64".into(),
            multi_arch: ma,
            depends: depends.into(),
            provides: parse_provides(provides).unwrap().into(),
            filename: format!("pool/main/{name}.deb").into(),
            size: u64::MAX,
            sha256: Digest::of(name.as_bytes()),
            source_url: "http://x".into(),
        }
    }

    fn same(a: &Package, b: &Package) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn records_read_back_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let s = Spill::new("http://x", dir.path()).unwrap();
        let a = pkg(
            "a",
            "libc6 (>= 2.36), b | c:any",
            "v (= 1), w",
            MultiArch::Foreign,
        );
        let b = pkg("b", "", "", MultiArch::Same);
        let ka = s.push(&a).unwrap();
        let kb = s.push(&b).unwrap();
        assert_eq!(ka.hash, name_hash("a"));
        assert!(same(&s.get(kb).unwrap(), &b));
        assert!(same(&s.get(ka).unwrap(), &a));
        // Written after a read: still appended where it belongs.
        let kc = s.push(&a).unwrap();
        assert!(same(&s.get(kc).unwrap(), &a));
        assert!(same(&s.get(kb).unwrap(), &b));
        assert_eq!(s.source_url(), "http://x");
        assert!(s.decode(&[0u8; 43]).is_none());
        // Nothing is left in the directory: the file is unlinked from the start.
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 0);
    }
}
