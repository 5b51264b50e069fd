//! What makes a directory a store, and what in it is the store's own.
//!
//! A store's root holds a marker, `ocibuild-store`: one line, `ocibuild-store 1` (the format).
//! Before anything is created in a directory named as the cache or removed from it (a build,
//! `cache verify`, `cache prune`), the directory is recognised ([`prepare`]):
//!
//! - missing or empty: a new store. The marker is made first (`O_EXCL`, so two builds starting
//!   on one new directory agree), then the folders. A marker still empty is one being written.
//! - with the marker: a store, whatever else its top holds (left alone).
//! - without it, a store made before markers: adopted (its marker written) only when it has the
//!   five folders every version made (`blobs`, `layers`, `fingerprints`, `locks`, `tmp`), each a
//!   real directory, and nothing else at its top but the store's other folders (`meta`, `seals`,
//!   `remote`). An ordinary directory does not look like that by chance.
//! - anything else is refused, naming the directory and an entry that is not the store's: an
//!   `OCIBUILD_CACHE` or `--cache-dir` naming a project or home directory by mistake gets
//!   nothing created in it and nothing removed from it.
//!
//! And inside a store, only what it names its own way is removed by `cache verify` and `cache
//! prune` ([`is_own_temp`], [`hex_name`]): a file a person put in `tmp/` or beside the blobs is
//! left alone.

use std::io::{self, Write};
use std::path::Path;

use fs_err as fs;
use fs_err::os::unix::fs::OpenOptionsExt;

use super::StoreError;
use crate::digest::Digest;

/// The marker's file name at a store's root.
pub const MARKER: &str = "ocibuild-store";
/// The marker's one line: the store format this ocibuild reads and writes.
pub const FORMAT: &str = "ocibuild-store 1";

/// The folders every writer of the store made, opening it or pruning it (an earlier version's
/// `cache prune` of a missing directory made these and no `fingerprints`).
const ALWAYS: [&str; 4] = ["blobs", "layers", "locks", "tmp"];
/// The folders made by opening it, or added by later versions (not always there).
const LATER: [&str; 4] = ["fingerprints", "meta", "seals", "remote"];
/// A filesystem's own folder at its root (ext2/3/4): a store on a volume of its own has it.
const LOST_FOUND: &str = "lost+found";

/// The prefixes of the store's own temporary files and directories in `tmp/` (each followed by
/// tempfile's six random alphanumerics): blob and small-file writers, seals, the apt and
/// `[python]` spools, and tempfile's default (an anonymous file's fallback name).
pub const TEMP_PREFIXES: [&str; 6] = [
    "blob-",
    "meta-",
    "seal-",
    "apt-spool-",
    "python-spool-",
    ".tmp",
];

/// Whether `name` (an entry of `tmp/`) is one of the store's own temporary names.
pub fn is_own_temp(name: &str) -> bool {
    TEMP_PREFIXES.iter().any(|p| {
        name.strip_prefix(p)
            .is_some_and(|rest| rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
    })
}

/// The digest a store file is named after: `<hex>` then `suffix` (`""` for blobs and seals,
/// `".json"` for cache entries), 64 lower-case hex digits; `None` for any other name.
pub fn hex_name(name: &std::ffi::OsStr, suffix: &str) -> Option<Digest> {
    let hex = name.to_str()?.strip_suffix(suffix)?;
    if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    format!("sha256:{hex}").parse().ok()
}

/// Recognises `root` as a store (see the module doc), creating a new one when it is missing or
/// empty and adopting an unmarked store of an earlier version. Nothing is created or removed in
/// a directory that is refused.
pub fn prepare(root: &Path) -> Result<(), StoreError> {
    let marker = root.join(MARKER);
    match fs::symlink_metadata(&marker) {
        Ok(_) => return check_marker(&marker),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    match fs::metadata(root) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(root)?;
        }
        Err(e) => return Err(e.into()),
    }
    let mut entries = Vec::new();
    for e in fs::read_dir(root)? {
        let e = e?;
        let kind = e.file_type()?;
        if e.file_name() == LOST_FOUND && kind.is_dir() {
            continue;
        }
        entries.push((e.file_name(), kind));
    }
    if entries.is_empty() {
        return create_marker(&marker);
    }
    if entries.iter().any(|(n, _)| n == MARKER) {
        // Made by a concurrent opener since the first look.
        return check_marker(&marker);
    }
    let foreign = entries.iter().find(|(name, kind)| {
        let known = name
            .to_str()
            .is_some_and(|n| ALWAYS.contains(&n) || LATER.contains(&n));
        !known || !kind.is_dir()
    });
    let missing = ALWAYS
        .iter()
        .find(|a| !entries.iter().any(|(n, _)| n == **a));
    if let Some((name, _)) = foreign {
        return Err(not_a_store(root, &name.to_string_lossy()));
    }
    if let Some(a) = missing {
        return Err(StoreError::NotAStore {
            root: root.to_path_buf(),
            found: format!("it has no `{a}` folder"),
        });
    }
    // A store of an earlier version: marked now. One this user cannot write (a read-only
    // mount, another user's cache) is used as it is.
    match create_marker(&marker) {
        Ok(()) => Ok(()),
        Err(StoreError::Io(e))
            if matches!(
                e.kind(),
                io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn not_a_store(root: &Path, entry: &str) -> StoreError {
    StoreError::NotAStore {
        root: root.to_path_buf(),
        found: format!("it holds `{}`", crate::bounded::clip(entry)),
    }
}

/// Writes the marker unless it exists (then it is checked: another opener made it first).
fn create_marker(marker: &Path) -> Result<(), StoreError> {
    let opened = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(marker);
    match opened {
        Ok(mut f) => Ok(f.write_all(format!("{FORMAT}\n").as_bytes())?),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => check_marker(marker),
        Err(e) => Err(e.into()),
    }
}

/// The marker: a regular file holding [`FORMAT`] (or nothing yet: being written).
fn check_marker(marker: &Path) -> Result<(), StoreError> {
    let text = crate::bounded::read_regular_text(marker, 4096)?;
    let line = text.lines().next().unwrap_or("").trim();
    if line.is_empty() || line == FORMAT {
        return Ok(());
    }
    Err(StoreError::Format {
        path: marker.to_path_buf(),
        found: crate::bounded::clip(line).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_names_only() {
        assert!(is_own_temp("blob-a1B2c3"));
        assert!(is_own_temp("apt-spool-XyZ123"));
        assert!(is_own_temp(".tmpAbc123"));
        for n in [
            "blob-",
            "blob-a1B2c3d",
            "notes.txt",
            "blob-a1B2c.",
            "my-blob-a1B2c3",
        ] {
            assert!(!is_own_temp(n), "{n}");
        }
        let hex = "a".repeat(64);
        assert!(hex_name(hex.as_ref(), "").is_some());
        assert!(hex_name(format!("{hex}.json").as_ref(), ".json").is_some());
        assert!(hex_name(format!("{hex}.txt").as_ref(), ".json").is_none());
        assert!(hex_name("A".repeat(64).as_ref(), "").is_none());
        assert!(hex_name("a".repeat(63).as_ref(), "").is_none());
    }

    #[test]
    fn a_directory_is_a_store_only_when_it_looks_like_one() {
        let t = tempfile::tempdir().unwrap();
        // Missing, and empty: created, marker first.
        let new = t.path().join("new");
        prepare(&new).unwrap();
        assert_eq!(
            fs::read_to_string(new.join(MARKER)).unwrap(),
            format!("{FORMAT}\n")
        );
        let empty = t.path().join("empty");
        fs::create_dir(&empty).unwrap();
        prepare(&empty).unwrap();
        assert!(empty.join(MARKER).is_file());
        // An ordinary directory: refused, nothing created.
        let home = t.path().join("home");
        fs::create_dir_all(home.join("tmp")).unwrap();
        fs::write(home.join("notes.txt"), b"mine").unwrap();
        let e = prepare(&home).unwrap_err().to_string();
        assert!(e.contains("is not an ocibuild store"), "{e}");
        assert!(e.contains("`notes.txt`") || e.contains("no `blobs`"), "{e}");
        let mut names: Vec<_> = fs::read_dir(&home)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["notes.txt", "tmp"]);
        // Only the store's folders, but not the four every store has: refused.
        let partial = t.path().join("partial");
        fs::create_dir_all(partial.join("tmp")).unwrap();
        fs::create_dir_all(partial.join("blobs")).unwrap();
        let e = prepare(&partial).unwrap_err().to_string();
        assert!(e.contains("no `layers` folder"), "{e}");
        assert!(!partial.join(MARKER).exists());
        // A store of an earlier version: adopted.
        let old = t.path().join("old");
        for sub in [
            "blobs/sha256",
            "layers",
            "fingerprints",
            "locks",
            "tmp",
            "meta",
        ] {
            fs::create_dir_all(old.join(sub)).unwrap();
        }
        prepare(&old).unwrap();
        assert!(old.join(MARKER).is_file());
        // What an earlier version's `cache prune` made of a missing directory (no
        // `fingerprints`), on a volume of its own (`lost+found`): adopted.
        let pruned = t.path().join("pruned");
        for sub in [
            "blobs/sha256",
            "layers",
            "locks",
            "tmp",
            "seals",
            "lost+found",
        ] {
            fs::create_dir_all(pruned.join(sub)).unwrap();
        }
        prepare(&pruned).unwrap();
        assert!(pruned.join(MARKER).is_file());
        // A new volume's root, holding only `lost+found`, is empty.
        let volume = t.path().join("volume");
        fs::create_dir_all(volume.join("lost+found")).unwrap();
        prepare(&volume).unwrap();
        assert!(volume.join(MARKER).is_file());
        // One whose folder is a file or a symlink is not.
        let odd = t.path().join("odd");
        for sub in ["blobs", "layers", "fingerprints", "locks"] {
            fs::create_dir_all(odd.join(sub)).unwrap();
        }
        fs::os::unix::fs::symlink(t.path(), odd.join("tmp")).unwrap();
        let e = prepare(&odd).unwrap_err().to_string();
        assert!(e.contains("`tmp`"), "{e}");
        // A marker of another format is refused.
        let newer = t.path().join("newer");
        fs::create_dir(&newer).unwrap();
        fs::write(newer.join(MARKER), "ocibuild-store 9\n").unwrap();
        let e = prepare(&newer).unwrap_err().to_string();
        assert!(e.contains("ocibuild-store 9"), "{e}");
    }
}
