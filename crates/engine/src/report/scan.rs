//! One streaming pass over a layer tar: every entry (normalized path, type, size as the header
//! says, sha256 of a regular file's content), the tar stream's length, and the contents of the
//! few small files the report reads (dpkg's status and file lists, wheels' RECORD and METADATA).

use std::collections::BTreeMap;
use std::io::{self, Read};

use crate::audit::tarmeta::normalize_path;
use crate::digest::{Digest, Hasher};

/// Files larger than this are not kept even when their path is one the report reads.
const MAX_KEPT: u64 = 16 << 20;
/// A Debian copyright file larger than this is not kept (its licence is then unknown).
const MAX_COPYRIGHT: u64 = 1 << 20;
/// At most this many bytes of such files are kept per layer (a hostile layer of many large
/// RECORDs must not fill the memory); the files beyond are counted in `not_kept`.
const MAX_KEPT_LAYER: u64 = 256 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Hardlink,
    Other,
}

#[derive(Clone, Debug)]
pub struct Entry {
    /// Normalized (`usr/bin/x`; the root is `.`).
    pub path: String,
    pub kind: Kind,
    /// The header's size (0 for links and directories).
    pub size: u64,
    /// sha256 of a regular file's content.
    pub content: Option<Digest>,
}

impl Entry {
    /// The last path component.
    pub fn base_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    pub fn is_whiteout(&self) -> bool {
        self.base_name().starts_with(".wh.")
    }
}

/// A layer, read.
#[derive(Clone, Debug, Default)]
pub struct LayerScan {
    /// In stream order.
    pub entries: Vec<Entry>,
    /// The tar stream's length.
    pub tar_bytes: u64,
    /// Contents of the files [`keep`] selects, by path.
    pub kept: BTreeMap<String, Vec<u8>>,
    /// Files [`keep`] selects that were too large to keep (over [`MAX_KEPT`], or beyond
    /// [`MAX_KEPT_LAYER`] in all).
    pub not_kept: u64,
}

/// Whether `path` is a Debian package's copyright file (`usr/share/doc/PKG/copyright`).
pub fn is_copyright(path: &str) -> bool {
    copyright_package(path).is_some()
}

/// The package of a copyright file `usr/share/doc/PKG/copyright`.
pub fn copyright_package(path: &str) -> Option<&str> {
    let pkg = path
        .strip_prefix("usr/share/doc/")?
        .strip_suffix("/copyright")?;
    (!pkg.is_empty() && !pkg.contains('/')).then_some(pkg)
}

/// Whether the report reads the file at `path`.
pub fn keep(path: &str) -> bool {
    if is_copyright(path) {
        return true;
    }
    if path == "var/lib/dpkg/status" || path.starts_with("var/lib/dpkg/status.d/") {
        return true;
    }
    if let Some(name) = path.strip_prefix("var/lib/dpkg/info/") {
        return !name.contains('/') && name.ends_with(".list");
    }
    let mut parts = path.rsplit('/');
    let file = parts.next().unwrap_or("");
    let dir = parts.next().unwrap_or("");
    dir.ends_with(".dist-info") && (file == "RECORD" || file == "METADATA")
}

struct Counting<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// Read a layer tar once.
pub fn scan_layer(reader: impl Read) -> io::Result<LayerScan> {
    let mut counting = Counting {
        inner: reader,
        count: 0,
    };
    let mut scan = LayerScan::default();
    let mut buf = vec![0u8; 256 * 1024];
    let mut kept_bytes = 0u64;
    {
        let mut archive = crate::tarbound::archive(&mut counting);
        for entry in archive.entries()? {
            let mut entry = entry?;
            let t = entry.header().entry_type();
            if matches!(t, tar::EntryType::XGlobalHeader) {
                continue;
            }
            let path = normalize_path(&String::from_utf8_lossy(&entry.path_bytes()));
            let kind = match t {
                tar::EntryType::Regular | tar::EntryType::Continuous => Kind::File,
                tar::EntryType::Directory => Kind::Dir,
                tar::EntryType::Symlink => Kind::Symlink,
                tar::EntryType::Link => Kind::Hardlink,
                _ => Kind::Other,
            };
            let size = entry.size();
            let content = if kind == Kind::File {
                let mut hasher = Hasher::new();
                let wanted = keep(&path);
                let room = kept_bytes + size <= MAX_KEPT_LAYER;
                let bound = if is_copyright(&path) {
                    MAX_COPYRIGHT
                } else {
                    MAX_KEPT
                };
                let mut kept = (wanted && size <= bound && room).then(Vec::new);
                if wanted && kept.is_none() {
                    scan.not_kept += 1;
                }
                loop {
                    let n = entry.read(&mut buf)?;
                    if n == 0 {
                        break;
                    }
                    hasher.update(&buf[..n]);
                    if let Some(k) = kept.as_mut() {
                        k.extend_from_slice(&buf[..n]);
                    }
                }
                if let Some(k) = kept {
                    kept_bytes += k.len() as u64;
                    scan.kept.insert(path.clone(), k);
                }
                Some(hasher.finish().0)
            } else {
                None
            };
            scan.entries.push(Entry {
                path,
                kind,
                size,
                content,
            });
        }
    }
    // The rest of the stream (the end-of-archive blocks and any padding).
    io::copy(&mut counting, &mut io::sink())?;
    scan.tar_bytes = counting.count;
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_only_the_records_it_reads() {
        assert!(keep("var/lib/dpkg/status"));
        assert!(keep("var/lib/dpkg/info/libc6:amd64.list"));
        assert!(!keep("var/lib/dpkg/info/libc6.md5sums"));
        assert!(keep("usr/lib/python3/site-packages/a-1.0.dist-info/RECORD"));
        assert!(keep("a-1.0.dist-info/METADATA"));
        assert!(!keep("a-1.0.dist-info/LICENSE"));
        assert!(!keep("srv/RECORD"));
        assert!(keep("usr/share/doc/libc6/copyright"));
        assert!(!keep("usr/share/doc/libc6/changelog.gz"));
        assert!(!keep("usr/share/doc/a/b/copyright"));
        assert_eq!(
            copyright_package("usr/share/doc/zlib1g/copyright"),
            Some("zlib1g")
        );
    }
}
