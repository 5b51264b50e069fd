//! Unpacking an untrusted tar onto disk, beneath a root, without ever following a link.
//!
//! The builder writes archive contents to disk in one place, the `[python]` interpreter archive
//! (everything else is read in place: .deb data members are spooled to numbered files, wheels
//! are streamed from the zip into the layer, vendor blobs are content-addressed). That one place
//! goes through [`unpack_tar`], which holds these rules whatever the archive says:
//!
//! - A path is relative and made of plain names only (`..` and absolute paths are refused).
//! - Every directory above an entry is a real directory beneath the root: each component is
//!   checked with `lstat` and created with `mkdir`, never `create_dir_all`, so a symlink in the
//!   way (from the archive or not) is refused rather than followed.
//! - The final component is never followed either. A later entry replaces an earlier file or
//!   symlink at the same path (like tar); a directory entry over an earlier symlink replaces the
//!   symlink by a directory; a file or symlink over an existing directory is refused. Files
//!   are created with `O_CREAT | O_EXCL | O_NOFOLLOW`, directories opened with `O_NOFOLLOW |
//!   O_DIRECTORY`, and permissions are set through those handles (`fchmod`), never by path.
//! - A hard link may point only at a regular file unpacked earlier by this archive.
//! - Devices, FIFOs and other special entries are refused.
//! - Directory modes are applied last, deepest first (so a read-only directory does not block
//!   its own children), each through a fresh no-follow handle.
//!
//! The root is a fresh private directory of the caller's: the rules defend against the archive,
//! not against another process rewriting the root while it is unpacked.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;

use fs_err::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use fs_err as fs;

/// Why an archive could not be unpacked.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("entry `{entry}`: {reason}")]
    Entry { entry: String, reason: String },
    #[error("reading the tar")]
    Read(#[source] io::Error),
    #[error("`{entry}`")]
    Io {
        entry: String,
        #[source]
        source: io::Error,
    },
}

fn refuse(entry: &str, reason: impl Into<String>) -> UnpackError {
    UnpackError::Entry {
        entry: entry.to_string(),
        reason: reason.into(),
    }
}

/// The relative path of an archive member with `strip` leading names removed; `None` for a
/// member that `strip` removes entirely (or the root itself).
fn relative(raw: &Path, strip: usize, shown: &str) -> Result<Option<PathBuf>, UnpackError> {
    let mut rel = PathBuf::new();
    let mut names = 0;
    for c in raw.components() {
        match c {
            Component::Normal(n) => {
                if names >= strip {
                    rel.push(n);
                }
                names += 1;
            }
            Component::CurDir => {}
            _ => return Err(refuse(shown, "absolute or `..` path")),
        }
    }
    Ok((names > strip).then_some(rel))
}

/// Opens the directory `path` without following a symlink at its last component.
fn open_dir_nofollow(path: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_DIRECTORY)
        .open(path)
}

/// Unpacks the tar stream `reader` beneath `root` (an existing directory), with `strip`
/// leading names removed from every member. See the module doc for the rules.
pub fn unpack_tar(reader: impl Read, strip: usize, root: &Path) -> Result<(), UnpackError> {
    let mut u = Unpacker {
        root,
        dirs: BTreeMap::new(),
        files: BTreeSet::new(),
    };
    let mut tar = crate::tarbound::archive(reader);
    for entry in tar.entries().map_err(UnpackError::Read)? {
        let mut entry = entry.map_err(UnpackError::Read)?;
        let raw = entry.path().map_err(UnpackError::Read)?.into_owned();
        let shown = raw.display().to_string();
        let Some(rel) = relative(&raw, strip, &shown)? else {
            continue;
        };
        let mode = entry.header().mode().unwrap_or(0o644) & 0o7777;
        let io = |source| UnpackError::Io {
            entry: shown.clone(),
            source,
        };
        match entry.header().entry_type() {
            tar::EntryType::Directory => u.dir(&rel, mode, &shown)?,
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let mut out = u.file(&rel, &shown)?;
                io::copy(&mut entry, &mut out).map_err(io)?;
                // Through the handle: the mode of this file, never of what a path names now.
                out.set_permissions(PermissionsExt::from_mode(mode))
                    .map_err(io)?;
                u.files.insert(rel);
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name()
                    .map_err(UnpackError::Read)?
                    .ok_or_else(|| refuse(&shown, "symlink without a target"))?;
                let dest = u.replaceable(&rel, &shown)?;
                fs::os::unix::fs::symlink(&target, &dest).map_err(io)?;
            }
            tar::EntryType::Link => {
                let target = entry
                    .link_name()
                    .map_err(UnpackError::Read)?
                    .ok_or_else(|| refuse(&shown, "hard link without a target"))?;
                let trel = relative(&target, strip, &shown)?
                    .filter(|t| u.files.contains(t))
                    .ok_or_else(|| {
                        refuse(
                            &shown,
                            format!(
                                "hard link to `{}`, which is not a file unpacked before it",
                                target.display()
                            ),
                        )
                    })?;
                // The target was created by this archive as a regular file; check it still is
                // one (a later entry may have replaced it) before linking to it.
                let tpath = root.join(&trel);
                if !fs::symlink_metadata(&tpath).map_err(io)?.is_file() {
                    return Err(refuse(&shown, "hard link to something that is not a file"));
                }
                let dest = u.replaceable(&rel, &shown)?;
                fs::hard_link(&tpath, &dest).map_err(io)?;
                u.files.insert(rel);
            }
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => {}
            other => return Err(refuse(&shown, format!("unsupported type {other:?}"))),
        }
    }
    u.finish()
}

struct Unpacker<'a> {
    root: &'a Path,
    /// Directories created (or claimed) and the mode each gets at the end.
    dirs: BTreeMap<PathBuf, u32>,
    /// Regular files this archive created: the only hard-link targets.
    files: BTreeSet<PathBuf>,
}

impl Unpacker<'_> {
    /// Makes every directory above `rel` a real directory beneath the root, never following a
    /// symlink, and returns the full path of `rel`.
    fn parents(&mut self, rel: &Path, shown: &str) -> Result<PathBuf, UnpackError> {
        let mut at = self.root.to_path_buf();
        let mut sub = PathBuf::new();
        let names: Vec<_> = rel.components().collect();
        for c in &names[..names.len().saturating_sub(1)] {
            at.push(c);
            sub.push(c);
            match fs::symlink_metadata(&at) {
                Ok(m) if m.is_dir() => {}
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(refuse(
                        shown,
                        format!("lies under a symlink (`{}`)", sub.display()),
                    ))
                }
                Ok(_) => {
                    return Err(refuse(
                        shown,
                        format!("lies under a file (`{}`)", sub.display()),
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    fs::create_dir(&at).map_err(|source| UnpackError::Io {
                        entry: shown.to_string(),
                        source,
                    })?;
                    self.dirs.entry(sub.clone()).or_insert(0o755);
                }
                Err(source) => {
                    return Err(UnpackError::Io {
                        entry: shown.to_string(),
                        source,
                    })
                }
            }
        }
        Ok(self.root.join(rel))
    }

    /// The path of `rel`, ready for a new file, symlink or hard link: parents made, and an
    /// earlier file or symlink there removed (never followed). An existing directory is refused.
    fn replaceable(&mut self, rel: &Path, shown: &str) -> Result<PathBuf, UnpackError> {
        let dest = self.parents(rel, shown)?;
        match fs::symlink_metadata(&dest) {
            Ok(m) if m.is_dir() => {
                return Err(refuse(shown, "would replace a directory"));
            }
            Ok(_) => {
                fs::remove_file(&dest).map_err(|source| UnpackError::Io {
                    entry: shown.to_string(),
                    source,
                })?;
                self.files.remove(rel);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(UnpackError::Io {
                    entry: shown.to_string(),
                    source,
                })
            }
        }
        Ok(dest)
    }

    /// A new regular file at `rel`, created without following any link.
    fn file(&mut self, rel: &Path, shown: &str) -> Result<fs::File, UnpackError> {
        let dest = self.replaceable(rel, shown)?;
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o600)
            .open(&dest)
            .map_err(|source| UnpackError::Io {
                entry: shown.to_string(),
                source,
            })
    }

    /// A directory at `rel`: an existing one is kept (its mode updated at the end), an earlier
    /// file or symlink there is replaced.
    fn dir(&mut self, rel: &Path, mode: u32, shown: &str) -> Result<(), UnpackError> {
        let dest = self.parents(rel, shown)?;
        let io = |source| UnpackError::Io {
            entry: shown.to_string(),
            source,
        };
        match fs::symlink_metadata(&dest) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                fs::remove_file(&dest).map_err(io)?;
                self.files.remove(rel);
                fs::create_dir(&dest).map_err(io)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(&dest).map_err(io)?,
            Err(source) => return Err(io(source)),
        }
        self.dirs.insert(rel.to_path_buf(), mode);
        Ok(())
    }

    /// Directory modes, deepest first, each set through a handle opened without following a
    /// link: a path that is no longer a directory is refused, never followed.
    fn finish(self) -> Result<(), UnpackError> {
        for (rel, mode) in self.dirs.iter().rev() {
            let shown = rel.display().to_string();
            let io = |source| UnpackError::Io {
                entry: shown.clone(),
                source,
            };
            let d = open_dir_nofollow(&self.root.join(rel)).map_err(io)?;
            d.set_permissions(PermissionsExt::from_mode(*mode))
                .map_err(io)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
