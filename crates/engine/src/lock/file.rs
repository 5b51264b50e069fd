//! NAME.lock as a command holds it: read once (its bytes and what they say), views of a
//! platform's section taken in memory, changed in memory, and written back once with the
//! digest an image records computed from the bytes written, not read again.

use std::path::{Path, PathBuf};

use super::{Lock, LockError};
use crate::bounded;
use crate::digest::Digest;

/// One lock file, as read (or as last written) by this command.
#[derive(Clone, Debug)]
pub struct LockFile {
    path: PathBuf,
    /// The file's bytes; `None` when there is no file.
    bytes: Option<Vec<u8>>,
    /// What they say.
    whole: Option<Lock>,
    /// Changed in memory since it was read or written.
    dirty: bool,
}

impl LockFile {
    /// Reads the lock at `path`; no file is a `LockFile` without one.
    pub fn load(path: &Path) -> Result<LockFile, LockError> {
        let bytes = match bounded::read_regular(path, bounded::MAX_TEXT_FILE) {
            Ok(b) => Some(b),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        let whole = match &bytes {
            Some(b) => Some(Lock::parse(&String::from_utf8_lossy(b), path)?),
            None => None,
        };
        Ok(LockFile {
            path: path.to_path_buf(),
            bytes,
            whole,
            dirty: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether there is a lock file.
    pub fn exists(&self) -> bool {
        self.bytes.is_some()
    }

    /// The whole lock, when there is one.
    pub fn whole(&self) -> Option<&Lock> {
        self.whole.as_ref()
    }

    /// The lock a build reads ([`Lock::load_view`]): the file's, or with `view` that
    /// platform's section.
    pub fn view(&self, view: Option<&str>) -> Option<Lock> {
        match view {
            Some(p) => self.whole.as_ref().map(|l| l.view(p)),
            None => self.whole.clone(),
        }
    }

    /// Sets `lock` as the file, or with `view` as that platform's section of it (the other
    /// platforms' kept, as [`Lock::written_into`] says), in memory: [`LockFile::write`] writes
    /// it, once, whatever was set before.
    pub fn set_view(&mut self, lock: &Lock, view: Option<&str>) {
        let new = lock.written_into(self.whole.clone(), view);
        self.bytes = Some(new.to_toml().into_bytes());
        self.whole = Some(Lock {
            had_logins: false,
            ..new
        });
        self.dirty = true;
    }

    /// Drops the sections of platforms not in `platforms` ([`Lock::retain_platforms`]), in
    /// memory; whether there were any.
    pub fn retain_platforms(&mut self, platforms: &[String]) -> bool {
        let Some(mut whole) = self.whole.clone() else {
            return false;
        };
        if !whole.retain_platforms(platforms) {
            return false;
        }
        self.bytes = Some(whole.to_toml().into_bytes());
        self.whole = Some(whole);
        self.dirty = true;
        true
    }

    /// Writes the lock as set, if it changed since it was read or last written.
    pub fn write(&mut self) -> Result<(), LockError> {
        if let (true, Some(bytes)) = (self.dirty, &self.bytes) {
            Lock::write_bytes(&self.path, bytes).map_err(|source| LockError::Write {
                path: self.path.clone(),
                source,
            })?;
            self.dirty = false;
        }
        Ok(())
    }

    /// The lock digest an image records ([`Lock::digest_view`]), from the bytes held.
    pub fn digest_view(&self, view: Option<&str>) -> Option<Digest> {
        match view {
            None => self.bytes.as_deref().map(Digest::of),
            Some(p) => self
                .whole
                .as_ref()
                .map(|l| Digest::of(l.view(p).to_toml().as_bytes())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read once, written once: a platform's section saved into a lock that did not exist is a
    /// valid lock of this version, and the digest an image records is of the bytes written.
    #[test]
    fn a_section_saved_into_a_new_lock_reads_back_and_digests_what_was_written() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("app.lock");
        let mut f = LockFile::load(&path).unwrap();
        assert!(!f.exists() && f.view(Some("linux/amd64")).is_none());
        f.set_view(&Lock::new(), Some("linux/amd64"));
        assert!(!path.exists(), "set in memory, not written");
        f.write().unwrap();
        let again = LockFile::load(&path).unwrap();
        assert_eq!(
            again.whole().map(|l| l.version),
            Some(super::super::LOCK_VERSION)
        );
        assert!(again.whole().unwrap().platforms.contains_key("linux/amd64"));
        f.set_view(&Lock::new(), None);
        f.write().unwrap();
        let bytes = fs_err::read(&path).unwrap();
        assert_eq!(f.digest_view(None), Some(Digest::of(&bytes)));
        assert_eq!(
            LockFile::load(&path).unwrap().digest_view(None),
            f.digest_view(None)
        );
    }
}
