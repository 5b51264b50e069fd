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

    /// Writes `lock` as the file, or with `view` as that platform's section of it (the other
    /// platforms' kept, as [`Lock::written_into`] says), and holds what was written.
    pub fn save_view(&mut self, lock: &Lock, view: Option<&str>) -> Result<(), LockError> {
        let new = lock.written_into(self.whole.clone(), view);
        let text = new.to_toml();
        new.save(&self.path)?;
        self.bytes = Some(text.into_bytes());
        self.whole = Some(Lock {
            had_logins: false,
            ..new
        });
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
        f.save_view(&Lock::new(), Some("linux/amd64")).unwrap();
        let again = LockFile::load(&path).unwrap();
        assert_eq!(
            again.whole().map(|l| l.version),
            Some(super::super::LOCK_VERSION)
        );
        assert!(again.whole().unwrap().platforms.contains_key("linux/amd64"));
        f.save_view(&Lock::new(), None).unwrap();
        let bytes = fs_err::read(&path).unwrap();
        assert_eq!(f.digest_view(None), Some(Digest::of(&bytes)));
        assert_eq!(
            LockFile::load(&path).unwrap().digest_view(None),
            f.digest_view(None)
        );
    }
}
