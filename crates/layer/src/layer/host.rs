//! Reading the host files [`super::scan`] listed, each through a handle opened relative to its
//! directory's handle and checked to be the inode the scan recorded.
//!
//! Between the scan and the reads (the content key's hashing, then the tar stream) the tree can
//! change. A file opened by its full path would follow a directory of the tree swapped for a
//! symlink to anywhere on the host. Here every directory below the source is opened with
//! `O_NOFOLLOW | O_DIRECTORY` relative to its parent's handle, the file with `O_NOFOLLOW`
//! relative to its directory's, and the opened file's device and inode must be those the scan
//! recorded: anything else is [`LayerError::Replaced`], so a layer only ever holds bytes of the
//! files the scan found inside the source.
//!
//! Entries come in contract order (sorted paths), so the files of one directory are read
//! together: the reader keeps the handles of the current directory and its ancestors (as many
//! as the depth) and opens each directory once per run of its files.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Component, Path};

use super::{CopySpec, Entry, EntryKind, LayerError};

/// How many of the last file's directories (the deepest) a reader keeps open.
const HELD: usize = 4;

/// A directory's name (one component) and its handle, while it is held.
type Named = (OsString, Option<Dir>);
use crate::fsat::{self, Dir};

/// Opens the scanned files of some copy specs (those the entries were scanned from). Not
/// shared between threads: each keeps its own directory handles.
pub struct HostReader<'a> {
    specs: &'a [CopySpec],
    /// The spec whose source the handles are under, its root handle, and the directories
    /// below it down to the last file's: each name, with its handle for the deepest
    /// [`HELD`] of them only. A reader per hashing thread holding a handle per level would
    /// hold threads × depth descriptors (64 threads at depth 16 passed a soft limit of 1024);
    /// reopening the whole chain at every change of directory cost a deep tree 75% more
    /// `openat` calls.
    open: Option<(usize, Dir, Vec<Named>)>,
}

impl<'a> HostReader<'a> {
    pub fn new(specs: &'a [CopySpec]) -> HostReader<'a> {
        HostReader { specs, open: None }
    }

    /// Opens the file of a `File` entry from the scan: the file the scan listed, or an error.
    /// `Ok(None)` for other entries.
    pub fn open(&mut self, e: &Entry) -> Result<Option<File>, LayerError> {
        let EntryKind::File { src, .. } = &e.kind else {
            return Ok(None);
        };
        let replaced = || LayerError::Replaced { path: src.clone() };
        let io = |source| LayerError::Io {
            path: src.clone(),
            source,
        };
        // The source this file was scanned beneath: the longest source that is its prefix.
        let (idx, rel) = self
            .specs
            .iter()
            .enumerate()
            .filter_map(|(i, s)| src.strip_prefix(&s.src).ok().map(|rel| (i, rel)))
            .min_by_key(|(_, rel)| rel.as_os_str().len())
            .ok_or_else(replaced)?;
        let file = if rel.as_os_str().is_empty() {
            // The source itself is the file: a symlink there is followed, as the scan did.
            fsat::open_file(src, true).map_err(io)?
        } else {
            let mut names = Vec::new();
            for c in rel.components() {
                match c {
                    Component::Normal(n) => names.push(n.to_os_string()),
                    _ => return Err(replaced()),
                }
            }
            let name = names.pop().ok_or_else(replaced)?;
            let dir = self.dir(idx, &names).map_err(|(path, err)| {
                if fsat::is_replaced(&err) {
                    LayerError::Replaced { path }
                } else {
                    LayerError::Io { path, source: err }
                }
            })?;
            dir.open_file(&name).map_err(|err| {
                if fsat::is_replaced(&err) {
                    replaced()
                } else {
                    io(err)
                }
            })?
        };
        let meta = fsat::meta(&file).map_err(io)?;
        if !meta.is_file() || !meta.same_file(e.stat.dev, e.stat.ino) {
            return Err(replaced());
        }
        Ok(Some(file))
    }

    /// The handle of the directory `names` below spec `idx`'s source, reusing the last file's
    /// when it is the same directory, else opened again from the root, each level through its
    /// parent's handle (dropped once the child is open). An error names the directory.
    fn dir(
        &mut self,
        idx: usize,
        names: &[OsString],
    ) -> Result<&Dir, (std::path::PathBuf, std::io::Error)> {
        let root_path: &Path = &self.specs[idx].src;
        let open = match self.open.take() {
            Some(open) if open.0 == idx => open,
            // The source itself may be a symlink (followed, like the scan did).
            _ => (
                idx,
                Dir::open_root(root_path, true).map_err(|e| (root_path.to_path_buf(), e))?,
                Vec::new(),
            ),
        };
        let (_, root, stack) = self.open.insert(open);
        let same = stack
            .iter()
            .zip(names)
            .take_while(|((have, _), want)| have == *want)
            .count();
        stack.truncate(same);
        // From the deepest handle still held on the shared path (else the root), each level
        // through its parent's handle.
        let from = stack
            .iter()
            .rposition(|(_, d)| d.is_some())
            .map_or(0, |i| i + 1);
        stack.truncate(from);
        for (depth, name) in names.iter().enumerate().skip(from) {
            let parent = stack.last().and_then(|(_, d)| d.as_ref()).unwrap_or(root);
            let d = parent.open_dir(name).map_err(|e| {
                let mut p = root_path.to_path_buf();
                p.extend(&names[..=depth]);
                (p, e)
            })?;
            stack.push((name.clone(), Some(d)));
            // Only the deepest are kept open.
            if let Some(old) = stack.len().checked_sub(HELD + 1) {
                stack[old].1 = None;
            }
        }
        Ok(stack.last().and_then(|(_, d)| d.as_ref()).unwrap_or(root))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::{scan, ModePolicy};
    use std::io::Read;

    fn spec(src: &Path) -> CopySpec {
        CopySpec {
            src: src.to_path_buf(),
            dest: "/app".into(),
            ignore: vec![],
            uid: 0,
            gid: 0,
            mode: ModePolicy::Normalize,
        }
    }

    fn read(r: &mut HostReader<'_>, e: &Entry) -> Result<String, LayerError> {
        let mut s = String::new();
        if let Some(mut f) = r.open(e)? {
            f.read_to_string(&mut s).unwrap();
        }
        Ok(s)
    }

    #[test]
    fn reads_only_the_inodes_the_scan_listed() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs_err::create_dir_all(src.join("a/b")).unwrap();
        fs_err::write(src.join("a/b/f"), "in-f").unwrap();
        fs_err::write(src.join("a/g"), "in-g").unwrap();
        fs_err::write(src.join("top"), "in-top").unwrap();
        let outside = d.path().join("outside");
        fs_err::create_dir_all(outside.join("b")).unwrap();
        fs_err::write(outside.join("b/f"), "out-f").unwrap();
        fs_err::write(outside.join("g"), "out-g").unwrap();
        let specs = [spec(&src)];
        let entries = scan(&specs).unwrap();
        let file = |p: &str| entries.iter().find(|e| e.path == p).unwrap();
        let mut r = HostReader::new(&specs);
        assert_eq!(read(&mut r, file("app/a/b/f")).unwrap(), "in-f");
        assert_eq!(read(&mut r, file("app/a/g")).unwrap(), "in-g");
        assert_eq!(read(&mut r, file("app/top")).unwrap(), "in-top");
        // Not a file: nothing to open.
        assert!(r.open(file("app/a/")).unwrap().is_none());

        // `a` swapped for a symlink to the outside (which has the same names): refused, for a
        // fresh reader and for one holding handles of `a` from before.
        let mut warm = HostReader::new(&specs);
        read(&mut warm, file("app/a/g")).unwrap();
        fs_err::rename(src.join("a"), d.path().join("a.moved")).unwrap();
        fs_err::os::unix::fs::symlink(&outside, src.join("a")).unwrap();
        for p in ["app/a/b/f", "app/a/g"] {
            let err = read(&mut HostReader::new(&specs), file(p)).unwrap_err();
            assert!(
                matches!(&err, LayerError::Replaced { path } if path.starts_with(src.join("a"))),
                "{p}: {err}"
            );
            assert!(err.to_string().contains("was replaced"), "{err}");
        }
        // The warm reader's handle of `a` is the moved directory's: the same inode, so the
        // scanned file's own bytes, never the outside ones.
        assert_eq!(read(&mut warm, file("app/a/g")).unwrap(), "in-g");

        // A directory in the symlink's place holding other files of the same names: other
        // inodes, refused.
        fs_err::remove_file(src.join("a")).unwrap();
        fs_err::create_dir_all(src.join("a/b")).unwrap();
        fs_err::write(src.join("a/b/f"), "new-f").unwrap();
        let err = read(&mut HostReader::new(&specs), file("app/a/b/f")).unwrap_err();
        assert!(matches!(err, LayerError::Replaced { .. }), "{err}");
        // A file swapped for a symlink to the same bytes: refused (never followed).
        fs_err::remove_file(src.join("top")).unwrap();
        fs_err::os::unix::fs::symlink(d.path().join("a.moved/g"), src.join("top")).unwrap();
        let err = read(&mut HostReader::new(&specs), file("app/top")).unwrap_err();
        assert!(matches!(err, LayerError::Replaced { .. }), "{err}");
    }

    #[test]
    fn a_file_source_is_followed_and_checked() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        fs_err::write(&f, "one").unwrap();
        let link = d.path().join("link");
        fs_err::os::unix::fs::symlink(&f, &link).unwrap();
        let specs = [spec(&link)];
        let entries = scan(&specs).unwrap();
        let e = entries.last().unwrap();
        assert_eq!(read(&mut HostReader::new(&specs), e).unwrap(), "one");
        let other = d.path().join("other");
        fs_err::write(&other, "two").unwrap();
        fs_err::rename(&other, &f).unwrap();
        let err = read(&mut HostReader::new(&specs), e).unwrap_err();
        assert!(matches!(err, LayerError::Replaced { .. }), "{err}");
    }
}
