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
//! - a run holds a shared lock for as long as its copy and container live ([`Janitor::running`]),
//!   and records the names podman may give its copy before it starts ([`Janitor::record`]), so
//!   that a run killed midway leaves them recorded;
//! - a command that runs build steps holds the lock from its first step to its end
//!   ([`LayoutCopies`]): the builder's layers stay for its next step instead of being copied in
//!   again;
//! - when a run (or such a command) ends, it gives back the lock and tries the exclusive lock
//!   without waiting ([`Janitor::release`]); whoever gets it (no run in progress anywhere)
//!   removes every recorded name of this storage with one `podman rmi --ignore`. The last run of
//!   a busy period removes what the others left.
//!
//! The lock and the recorded names live in `/tmp/ocibuild-podman-UID` (a fixed place, so that
//! every shell of a user finds the same lock whatever its `TMPDIR` or `XDG_RUNTIME_DIR`), one
//! subdirectory per podman storage named on the command line (`--root`, `--runroot`, resolved).
//! A directory that is not this user's own (another user made it first, or it is a link) is not
//! used: nothing is then removed, which is safe, only untidy. Everything here is best effort: a
//! failure never fails a build, it leaves an image behind.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};
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

/// A run in progress: the shared lock, given back by [`Janitor::release`] (or on drop).
pub(super) struct Running {
    lock: Option<fs_err::File>,
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
            loop {
                match f.lock_shared() {
                    Ok(()) => return Some(f),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return None,
                }
            }
        });
        Running { lock }
    }

    /// Records `names` (what podman may call a run's copy) for removal. Done while `running`
    /// holds the lock, before the run: no sweep can remove them until every run has ended, and
    /// a run that is killed leaves them recorded. Nothing is recorded without the lock.
    pub(super) fn record(&self, running: &Running, names: &[String]) {
        let (Some(dir), Some(_)) = (&self.dir, &running.lock) else {
            return;
        };
        let pending = dir.join("pending");
        for name in names {
            if valid_name(name) {
                let _ = write_pending(&pending, name);
            }
        }
    }

    /// Gives back a run's shared lock and removes every recorded name if no run is in progress.
    pub(super) fn release(&self, running: Running) {
        if let Some(f) = running.lock {
            // Unlocked by hand: a child being spawned by another thread may hold a copy of the
            // descriptor until its exec, and closing ours alone would keep the lock that long.
            let _ = f.unlock();
        }
        if let Some(dir) = &self.dir {
            self.sweep(dir);
        }
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

/// The copies of the layouts one command's build steps run (carried by
/// [`super::SandboxOptions`], whose clones share it): the lock is taken at the first step and
/// given back, with a sweep, when the last clone is dropped at the command's end. Between its
/// steps the builder's layers stay in podman's storage for the next one.
#[derive(Default)]
pub struct LayoutCopies {
    held: Mutex<Option<(Janitor, Running)>>,
}

impl std::fmt::Debug for LayoutCopies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LayoutCopies")
    }
}

impl LayoutCopies {
    /// Records `names` under this command's hold on the storage `global` names, taking the
    /// hold first if this is its first step. `false`: the hold is on another storage (the
    /// caller then holds the lock for this run alone).
    pub(super) fn record(&self, podman: &Path, global: &[String], names: &[String]) -> bool {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if held.is_none() {
            let janitor = Janitor::new(podman, global);
            let running = janitor.running();
            *held = Some((janitor, running));
        }
        match &*held {
            Some((j, running)) if j.podman == podman && j.global == global => {
                j.record(running, names);
                true
            }
            _ => false,
        }
    }
}

impl Drop for LayoutCopies {
    fn drop(&mut self) {
        let held = self
            .held
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some((janitor, running)) = held {
            janitor.release(running);
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

/// What names the storage on podman's command line: `--root` and `--runroot`, resolved. Any
/// other flag shares the default storage's lock, which is only more careful; an explicit
/// `--root` naming the default storage's own directory gets a lock of its own.
fn storage_key(global: &[String]) -> String {
    let mut named = Vec::new();
    let mut it = global.iter();
    while let Some(a) = it.next() {
        for flag in ["--root", "--runroot"] {
            let value = if a == flag {
                it.clone().next().map(String::as_str)
            } else {
                a.strip_prefix(flag).and_then(|v| v.strip_prefix('='))
            };
            if let Some(v) = value {
                // The directory itself, however it was spelled (`/s/`, a link to it).
                let resolved = fs_err::canonicalize(v)
                    .map_or_else(|_| v.to_string(), |p| p.display().to_string());
                named.push(format!("{flag}={resolved}"));
            }
        }
    }
    if named.is_empty() {
        return "default".into();
    }
    let digest = crate::digest::Digest::of(named.join("\n").as_bytes());
    format!("storage-{}", &digest.hex()[..16])
}

/// `/tmp/ocibuild-podman-UID`.
fn base_dir() -> Option<PathBuf> {
    own_dir(&PathBuf::from(format!("/tmp/ocibuild-podman-{}", euid()?)))
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

    /// A podman script in `dir` that appends its arguments to `dir/log`, after `body`.
    fn podman(dir: &Path, body: &str) -> PathBuf {
        let p = dir.join("podman");
        fs_err::write(
            &p,
            format!(
                "#!/bin/sh\n{body}\necho \"$*\" >> '{}'\n",
                dir.join("log").display()
            ),
        )
        .unwrap();
        fs_err::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn janitor(dir: &Path, podman: PathBuf, global: &[&str]) -> (Janitor, PathBuf) {
        let d = own_dir(&dir.join("j")).unwrap();
        let j = Janitor {
            podman,
            global: v(global),
            dir: Some(d.clone()),
        };
        (j, d.join("pending"))
    }

    fn pending(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs_err::read_dir(dir)
            .map(|d| {
                d.map(|e| fs_err::read_to_string(e.unwrap().path()).unwrap())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Names are recorded before the run, while its lock is held; a sweep tried then (another
    /// run ending) removes nothing. The last run out removes every name in one call.
    #[test]
    fn the_last_run_out_removes_what_is_pending() {
        let t = tempfile::tempdir().unwrap();
        let (j, pend) = janitor(t.path(), podman(t.path(), ""), &["--root", "/s"]);
        let log = t.path().join("log");
        let a = j.running();
        j.record(&a, &layout_image_names(Path::new("/tmp/a"), "step"));
        assert_eq!(pending(&pend).len(), 2, "recorded before the run");
        let b = j.running();
        j.record(&b, &layout_image_names(Path::new("/tmp/b"), "latest"));
        j.release(a);
        assert!(!log.exists(), "removed while b runs");
        assert_eq!(pending(&pend).len(), 3);
        j.release(b);
        assert_eq!(
            fs_err::read_to_string(&log).unwrap(),
            "--root /s rmi --ignore localhost/tmp/a:latest localhost/tmp/a:step localhost/tmp/b:latest\n"
        );
        assert!(pending(&pend).is_empty());
    }

    /// A name podman will not remove stays pending; the others go.
    #[test]
    fn a_name_podman_keeps_stays_pending() {
        let t = tempfile::tempdir().unwrap();
        let (j, pend) = janitor(
            t.path(),
            podman(t.path(), "case \"$*\" in *keep*) exit 2;; esac"),
            &[],
        );
        let r = j.running();
        j.record(
            &r,
            &v(&["localhost/tmp/keep:latest", "localhost/tmp/go:latest"]),
        );
        j.release(r);
        assert_eq!(pending(&pend), ["localhost/tmp/keep:latest"]);
    }

    /// A command's steps share one hold: nothing is removed between them (the builder's layers
    /// stay for the next step), everything when the command's options are dropped.
    #[test]
    fn a_commands_steps_are_removed_when_it_ends() {
        let t = tempfile::tempdir().unwrap();
        let script = podman(t.path(), "");
        let (j, pend) = janitor(t.path(), script.clone(), &[]);
        let copies = LayoutCopies::default();
        let held = j.running();
        *copies.held.lock().unwrap() = Some((j, held));
        for step in ["a", "b"] {
            let names = layout_image_names(&PathBuf::from(format!("/tmp/{step}")), "step");
            assert!(copies.record(&script, &[], &names));
            // A run of the test stage ending meanwhile in the same process sweeps nothing.
            let (other, _) = janitor(t.path(), script.clone(), &[]);
            let r = other.running();
            other.release(r);
        }
        assert!(
            !t.path().join("log").exists(),
            "nothing removed between steps"
        );
        assert_eq!(pending(&pend).len(), 4);
        assert!(!copies.record(&script, &v(&["--root", "/elsewhere"]), &[]));
        drop(copies);
        assert!(pending(&pend).is_empty(), "{:?}", pending(&pend));
        assert_eq!(
            fs_err::read_to_string(t.path().join("log"))
                .unwrap()
                .lines()
                .count(),
            1
        );
    }

    /// A podman that hangs is killed at the sweep's bound, and its names stay pending.
    #[test]
    fn a_hanging_rmi_is_bounded() {
        let t = tempfile::tempdir().unwrap();
        let (j, _) = janitor(t.path(), podman(t.path(), "exec sleep 600"), &[]);
        let start = std::time::Instant::now();
        assert!(!j.rmi(
            &["localhost/tmp/x:latest"],
            start + Duration::from_millis(300)
        ));
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(
            !j.rmi(&["localhost/tmp/x:latest"], start),
            "past the bound: not started"
        );
    }

    /// Without the lock (no usable directory) nothing is recorded or removed.
    #[test]
    fn without_a_lock_nothing_is_recorded() {
        let t = tempfile::tempdir().unwrap();
        let (j, pend) = janitor(t.path(), podman(t.path(), ""), &[]);
        j.record(&Running { lock: None }, &v(&["localhost/tmp/a:latest"]));
        assert!(pending(&pend).is_empty());
    }
}
