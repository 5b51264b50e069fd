//! The images ocibuild leaves in podman's storage, and when they may go.
//!
//! podman runs an OCI layout (`oci:DIR:TAG`) by copying it into its image storage, and podman
//! 4.3 names the copy after the layout's path (`localhost/tmp/ocibuild-step-…/layout:latest`,
//! whatever the tag). Each build step and each test stage makes such a copy. Removing one as soon
//! as its container ends breaks other ocibuild processes (or threads) copying an image with the
//! same layers into the same storage at that moment: podman 4.3 then fails their copy with `layer
//! not known` or `image not known`.
//!
//! So:
//! - a run holds a shared lock for as long as its copy and container live ([`Janitor::running`]);
//! - after it, the names podman may have given its copy are recorded as pending
//!   ([`Janitor::release`]);
//! - then whoever takes the exclusive lock without waiting (no run in progress anywhere) removes
//!   every pending name of this storage with one `podman rmi --ignore`. The last run of a busy
//!   period removes what the others left.
//!
//! The lock and the pending names live in a directory of this user's
//! (`$XDG_RUNTIME_DIR/ocibuild-podman`, else `ocibuild-podman-UID` in the temporary directory),
//! one subdirectory per podman storage named by the command line (`--root`, `--runroot`). A
//! directory that is not this user's own (another user made it first, or it is a link) is not
//! used: nothing is then removed, which is safe, only untidy. Everything here is best effort: a
//! failure never fails a build, it leaves an image behind.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long one sweep's `podman rmi` calls may take in all before the one running is killed
/// (a sweep holds the exclusive lock, which every run waits for).
const RMI_LIMIT: Duration = Duration::from_secs(120);

/// The lock and pending names of one podman storage.
pub(super) struct Janitor {
    podman: PathBuf,
    global: Vec<String>,
    /// `None`: no usable directory; nothing is locked or removed.
    dir: Option<PathBuf>,
}

/// A run in progress: the shared lock, given back on drop.
pub(super) struct Running {
    _lock: Option<fs_err::File>,
}

impl Janitor {
    pub(super) fn new(podman: &Path, global: &[String]) -> Janitor {
        let dir = base_dir().and_then(|b| own_dir(&b.join(storage_key(global))));
        Janitor {
            podman: podman.to_path_buf(),
            global: global.to_vec(),
            dir,
        }
    }

    /// Takes the shared lock (waiting while a sweep runs: at most [`RMI_LIMIT`] and a bit).
    pub(super) fn running(&self) -> Running {
        let lock = self.dir.as_ref().and_then(|d| {
            let f = lock_file(d)?;
            f.lock_shared().ok()?;
            Some(f)
        });
        Running { _lock: lock }
    }

    /// Records `names` (what podman may have called a run's copy) as pending, gives back the
    /// run's shared lock, and removes every pending name if no run is in progress.
    pub(super) fn release(&self, running: Running, names: &[String]) {
        let Some(dir) = &self.dir else {
            return;
        };
        let pending = dir.join("pending");
        for name in names {
            if valid_name(name) {
                let _ = write_pending(&pending, name);
            }
        }
        drop(running);
        self.sweep(dir);
    }

    /// Removes every pending name, under the exclusive lock, when it is free right now.
    fn sweep(&self, dir: &Path) {
        let Some(lock) = lock_file(dir) else {
            return;
        };
        if lock.try_lock().is_err() {
            return; // a run is in progress (or another sweep): the last one out sweeps
        }
        let pending = dir.join("pending");
        let Ok(entries) = fs_err::read_dir(&pending) else {
            return;
        };
        let mut found: Vec<(PathBuf, String)> = entries
            .flatten()
            .filter_map(|e| {
                let name = fs_err::read_to_string(e.path()).ok()?;
                Some((e.path(), name))
            })
            .filter(|(_, n)| valid_name(n))
            .collect();
        found.sort_by(|a, b| a.1.cmp(&b.1));
        if found.is_empty() {
            return;
        }
        let names: Vec<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
        let end = std::time::Instant::now() + RMI_LIMIT;
        if !self.rmi(&names, end) {
            // One at a time, so one name podman will not remove (an image a container of the
            // user's still uses) does not keep the others: it stays pending. Within the same
            // time bound: what is left when it is over stays pending too.
            found.retain(|(_, n)| self.rmi(&[n], end));
        }
        for (path, _) in found {
            let _ = fs_err::remove_file(path);
        }
        drop(lock);
    }

    /// `podman rmi --ignore NAMES…`: whether it succeeded before `end`.
    fn rmi(&self, names: &[&str], end: std::time::Instant) -> bool {
        if std::time::Instant::now() >= end {
            return false;
        }
        let Ok(mut child) = Command::new(&self.podman)
            .args(&self.global)
            .args(["rmi", "--ignore"])
            .args(names)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        else {
            return false;
        };
        loop {
            match child.try_wait() {
                Ok(Some(s)) => return s.success(),
                Ok(None) if std::time::Instant::now() < end => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return false;
                }
            }
        }
    }
}

/// The names podman may give the copy of `oci:LAYOUT:TAG`: podman 4.3 says `latest` whatever
/// the tag; later versions keep it.
pub(super) fn layout_image_names(layout: &Path, tag: &str) -> Vec<String> {
    let mut v = vec![format!("localhost{}:latest", layout.display())];
    if tag != "latest" {
        v.push(format!("localhost{}:{tag}", layout.display()));
    }
    v
}

/// What names the storage on podman's command line: `--root` and `--runroot` (anything else
/// shares the default storage's lock, which is only more careful).
fn storage_key(global: &[String]) -> String {
    let mut named = Vec::new();
    let mut it = global.iter();
    while let Some(a) = it.next() {
        for flag in ["--root", "--runroot"] {
            if a == flag {
                named.push(format!("{flag}={}", it.clone().next().map_or("", |v| v)));
            } else if a.starts_with(&format!("{flag}=")) {
                named.push(a.clone());
            }
        }
    }
    if named.is_empty() {
        return "default".into();
    }
    let digest = crate::digest::Digest::of(named.join("\n").as_bytes());
    format!("storage-{}", &digest.hex()[..16])
}

/// `$XDG_RUNTIME_DIR/ocibuild-podman` when that is this user's, else
/// `$TMPDIR/ocibuild-podman-UID`.
fn base_dir() -> Option<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        if x.is_absolute() && is_own(&x) {
            return own_dir(&x.join("ocibuild-podman"));
        }
    }
    own_dir(&std::env::temp_dir().join(format!("ocibuild-podman-{}", euid()?)))
}

/// `dir`, made if missing (mode 0700), when it is a directory (not a link) of this user's that
/// nobody else may write.
fn own_dir(dir: &Path) -> Option<PathBuf> {
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    is_own(dir).then(|| dir.to_path_buf())
}

fn is_own(dir: &Path) -> bool {
    let Some(uid) = euid() else {
        return false;
    };
    fs_err::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o022 == 0)
}

/// This process's effective user: the owner of `/proc/self`.
fn euid() -> Option<u32> {
    fs_err::metadata("/proc/self").ok().map(|m| m.uid())
}

fn lock_file(dir: &Path) -> Option<fs_err::File> {
    fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("lock"))
        .ok()
}

/// One file per name, named by its digest, written whole (temp file and rename).
fn write_pending(pending: &Path, name: &str) -> std::io::Result<()> {
    let _ = std::fs::DirBuilder::new().mode(0o700).create(pending);
    let file = crate::digest::Digest::of(name.as_bytes()).hex();
    let mut tmp = tempfile::NamedTempFile::new_in(pending)?;
    tmp.write_all(name.as_bytes())?;
    tmp.persist(pending.join(file)).map_err(|e| e.error)?;
    Ok(())
}

/// What this module records and removes: a podman name of a layout's copy, nothing else.
fn valid_name(n: &str) -> bool {
    n.starts_with("localhost/")
        && n.len() < 4096
        && !n.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn the_storage_is_named_by_root_and_runroot_only() {
        assert_eq!(storage_key(&[]), "default");
        assert_eq!(storage_key(&v(&["--runtime", "runc"])), "default");
        let a = storage_key(&v(&["--root", "/s", "--runtime", "runc"]));
        assert!(a.starts_with("storage-"), "{a}");
        assert_eq!(a, storage_key(&v(&["--root=/s"])));
        assert_ne!(a, storage_key(&v(&["--root", "/t"])));
        assert_ne!(a, storage_key(&v(&["--root", "/s", "--runroot", "/r"])));
    }

    #[test]
    fn only_layout_names_are_recorded() {
        assert_eq!(
            layout_image_names(Path::new("/tmp/x/layout"), "step"),
            [
                "localhost/tmp/x/layout:latest",
                "localhost/tmp/x/layout:step"
            ]
        );
        assert_eq!(
            layout_image_names(Path::new("/tmp/y"), "latest"),
            ["localhost/tmp/y:latest"]
        );
        assert!(valid_name("localhost/tmp/x/layout:latest"));
        for bad in [
            "docker.io/library/debian",
            "localhost/a b",
            "--all",
            "localhost/\n",
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_directory_of_someone_else_or_a_link_is_not_used() {
        let t = tempfile::tempdir().unwrap();
        let mine = t.path().join("mine");
        assert_eq!(own_dir(&mine), Some(mine.clone()));
        let open = t.path().join("open");
        fs_err::create_dir(&open).unwrap();
        fs_err::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(own_dir(&open), None);
        let link = t.path().join("link");
        fs_err::os::unix::fs::symlink(&mine, &link).unwrap();
        assert_eq!(own_dir(&link), None);
    }

    /// A name released while another run holds the shared lock stays pending; the last run out
    /// removes it (with a podman that records what it was asked).
    #[test]
    fn the_last_run_out_removes_what_is_pending() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("log");
        let podman = t.path().join("podman");
        fs_err::write(
            &podman,
            format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display()),
        )
        .unwrap();
        fs_err::set_permissions(&podman, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = own_dir(&t.path().join("j")).unwrap();
        let j = Janitor {
            podman: podman.clone(),
            global: v(&["--root", "/s"]),
            dir: Some(dir.clone()),
        };
        let a = j.running();
        let b = j.running();
        j.release(a, &layout_image_names(Path::new("/tmp/a"), "step"));
        assert!(!log.exists(), "removed while b runs");
        assert_eq!(fs_err::read_dir(dir.join("pending")).unwrap().count(), 2);
        j.release(b, &layout_image_names(Path::new("/tmp/b"), "latest"));
        assert_eq!(
            fs_err::read_to_string(&log).unwrap(),
            "--root /s rmi --ignore localhost/tmp/a:latest localhost/tmp/a:step localhost/tmp/b:latest\n"
        );
        assert_eq!(fs_err::read_dir(dir.join("pending")).unwrap().count(), 0);
    }

    /// A name podman will not remove stays pending; the others go.
    #[test]
    fn a_name_podman_keeps_stays_pending() {
        let t = tempfile::tempdir().unwrap();
        let podman = t.path().join("podman");
        fs_err::write(&podman, "#!/bin/sh\ncase \"$*\" in *keep*) exit 2;; esac\n").unwrap();
        fs_err::set_permissions(&podman, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = own_dir(&t.path().join("j")).unwrap();
        let j = Janitor {
            podman,
            global: Vec::new(),
            dir: Some(dir.clone()),
        };
        let r = j.running();
        j.release(
            r,
            &v(&["localhost/tmp/keep:latest", "localhost/tmp/go:latest"]),
        );
        let left: Vec<String> = fs_err::read_dir(dir.join("pending"))
            .unwrap()
            .map(|e| fs_err::read_to_string(e.unwrap().path()).unwrap())
            .collect();
        assert_eq!(left, ["localhost/tmp/keep:latest"]);
    }
}
