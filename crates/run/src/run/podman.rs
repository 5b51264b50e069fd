//! Running one container with podman: the command line, output capture, timeout and cleanup.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::capture::{OutputCapture, TAIL_LINES};
use super::RunError;

/// Finds `podman`: a path with a `/` is taken as is, a bare name is looked up on `PATH`.
pub(super) fn find_executable(
    name: &Path,
    path_var: Option<OsString>,
) -> Result<PathBuf, RunError> {
    let missing = || RunError::PodmanMissing {
        podman: name.to_path_buf(),
    };
    if name.components().count() > 1 || name.is_absolute() {
        return if is_executable(name) {
            Ok(name.to_path_buf())
        } else {
            Err(missing())
        };
    }
    let path_var = path_var.ok_or_else(missing)?;
    std::env::split_paths(&path_var)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
        .ok_or_else(missing)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs_err::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A unique container name for this process.
pub(super) fn container_name() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "ocibuild-test-{}-{nanos:x}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// One `podman run`.
#[derive(Debug, Clone)]
pub(super) struct Invocation {
    pub podman: PathBuf,
    /// Global podman options (before `run`, and for cleanup).
    pub global: Vec<String>,
    /// Everything between `run` and the image: `--rm`, `--name`, user flags, GPU flags, -e/-w/-u…
    pub run_args: Vec<String>,
    /// `oci:DIR:TAG`
    pub image: String,
    /// Arguments after the image.
    pub args: Vec<String>,
    pub name: String,
    pub timeout: Duration,
    pub expect_output: Option<String>,
}

impl Invocation {
    /// The full argument list after the podman executable.
    pub(super) fn argv(&self) -> Vec<String> {
        let mut v = self.global.clone();
        v.push("run".into());
        v.extend(self.run_args.iter().cloned());
        v.push(self.image.clone());
        v.extend(self.args.iter().cloned());
        v
    }
}

/// What happened to one container.
#[derive(Debug)]
pub(super) struct RunOutcome {
    /// None when killed by a signal (or on timeout).
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub duration: Duration,
    pub tail: Vec<String>,
    pub matched: bool,
}

fn status_parts(s: ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    (s.code(), s.signal())
}

/// Runs the container; output is captured with bounded memory; on timeout the container is killed
/// by name (`podman kill`, `podman rm -f`) and so is the podman client.
pub(super) fn execute(inv: &Invocation) -> Result<RunOutcome, RunError> {
    let start = Instant::now();
    let mut child = Command::new(&inv.podman)
        .args(inv.argv())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| RunError::Spawn {
            program: inv.podman.clone(),
            source: e,
        })?;
    let (tx, rx) = mpsc::channel::<(usize, Vec<u8>)>();
    if let Some(out) = child.stdout.take() {
        spawn_reader(out, 0, tx.clone());
    }
    if let Some(err) = child.stderr.take() {
        spawn_reader(err, 1, tx.clone());
    }
    drop(tx);

    let mut capture = OutputCapture::new(2, inv.expect_output.as_deref(), TAIL_LINES);
    let deadline = start + inv.timeout;
    let mut timed_out = false;
    let mut drain_until: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let until = drain_until.unwrap_or(deadline);
        if now >= until {
            if drain_until.is_some() {
                break; // grace period over; reader threads end when the pipes close
            }
            timed_out = true;
            kill_container(inv);
            let _ = child.kill();
            drain_until = Some(Instant::now() + Duration::from_secs(5));
            continue;
        }
        match rx.recv_timeout(until - now) {
            Ok((stream, chunk)) => capture.feed(stream, &chunk),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let status =
        wait_bounded(&mut child, Duration::from_secs(10)).map_err(|e| RunError::Spawn {
            program: inv.podman.clone(),
            source: e,
        })?;
    let duration = start.elapsed();
    if timed_out {
        // `--rm` normally removes it; make sure, in case the client was killed first.
        remove_container(inv);
    }
    let (exit_code, signal) = status.map(status_parts).unwrap_or((None, None));
    let matched = capture.matched();
    Ok(RunOutcome {
        exit_code: if timed_out { None } else { exit_code },
        signal,
        timed_out,
        duration,
        tail: capture.finish(),
        matched,
    })
}

fn spawn_reader(
    mut r: impl Read + Send + 'static,
    stream: usize,
    tx: mpsc::Sender<(usize, Vec<u8>)>,
) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if tx.send((stream, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
}

fn wait_bounded(child: &mut Child, limit: Duration) -> std::io::Result<Option<ExitStatus>> {
    let end = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait()? {
            return Ok(Some(s));
        }
        if Instant::now() >= end {
            let _ = child.kill();
            return child.wait().map(Some);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn podman_quiet(inv: &Invocation, args: &[&str]) {
    let _ = Command::new(&inv.podman)
        .args(&inv.global)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn kill_container(inv: &Invocation) {
    podman_quiet(inv, &["kill", "--signal", "KILL", &inv.name]);
    remove_container(inv);
}

fn remove_container(inv: &Invocation) {
    podman_quiet(
        inv,
        &["rm", "--force", "--ignore", "--time", "0", &inv.name],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn podman_missing_from_path_is_a_clear_error() {
        let t = tempfile::tempdir().unwrap();
        let e = find_executable(Path::new("podman"), Some(t.path().as_os_str().to_owned()))
            .unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("apt-get install podman runc"), "{msg}");
        assert!(find_executable(Path::new("podman"), None).is_err());
        assert!(find_executable(&t.path().join("podman"), None).is_err());
        // found on PATH when present and executable
        let p = t.path().join("podman");
        fs_err::write(&p, "#!/bin/sh\n").unwrap();
        assert!(
            find_executable(Path::new("podman"), Some(t.path().as_os_str().to_owned())).is_err()
        );
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            find_executable(Path::new("podman"), Some(t.path().as_os_str().to_owned())).unwrap(),
            p
        );
    }

    #[test]
    fn container_names_are_unique() {
        assert_ne!(container_name(), container_name());
    }
}

/// `--ulimit` flags that ask for exactly this process's limits on open files and processes
/// (from `/proc/self/limits`): podman otherwise asks runc for its own defaults, which a
/// sandboxed host refuses (`error setting rlimit type 7: operation not permitted`). Nothing
/// when the user passes a `--ulimit` of their own, or the limits cannot be read.
pub(super) fn ulimit_flags(user_args: &[String]) -> Vec<String> {
    if user_args.iter().any(|a| a.starts_with("--ulimit")) {
        return Vec::new();
    }
    let Ok(text) = fs_err::read_to_string("/proc/self/limits") else {
        return Vec::new();
    };
    limits_flags(&text)
}

fn limits_flags(limits: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (row, name) in [("Max open files", "nofile"), ("Max processes", "nproc")] {
        let Some(line) = limits.lines().find(|l| l.starts_with(row)) else {
            continue;
        };
        let nums: Vec<&str> = line[row.len()..].split_whitespace().take(2).collect();
        // Soft and hard both at this process's hard limit, as podman's default would raise
        // the soft one: a test gets the most it may have, not the shell's soft 1024.
        if let [_, hard] = nums[..] {
            if hard.parse::<u64>().is_ok() {
                out.push(format!("--ulimit={name}={hard}:{hard}"));
            }
        }
    }
    out
}

/// The limits tried when a sandbox refuses this process's own (the ones the test suite's
/// default `OCIBUILD_PODMAN_ARGS` use).
pub(super) const SMALL_NOFILE: &str = "--ulimit=nofile=1024:1024";
pub(super) const SMALL_NPROC: &str = "--ulimit=nproc=1000:1000";

fn is_rlimit_error(line: &str) -> bool {
    line.contains("runc") && line.contains("error setting rlimit")
}

/// Whether a container failed to start because runc could not set a resource limit: podman's
/// own exit codes (125 to 127) with runc's message, not a test's output that mentions it.
pub(super) fn rlimit_refused(exit_code: Option<i32>, tail: &[String]) -> bool {
    matches!(exit_code, Some(125..=127)) && tail.iter().any(|l| is_rlimit_error(l))
}

/// What to do when runc cannot set a resource limit, if the output says so.
pub(super) fn rlimit_hint(tail: &[String]) -> Option<&'static str> {
    tail.iter().any(|l| is_rlimit_error(l)).then_some(
        "runc could not set a resource limit on this host, even small ones: pass limits it \
             allows (`--podman-arg=--ulimit=nofile=N:N --podman-arg=--ulimit=nproc=N:N`, or \
             OCIBUILD_PODMAN_ARGS), or `--podman-arg=--runtime=crun`",
    )
}

/// podman's `Error: ` line (the last one, without the prefix), when the container ended with
/// one of podman's own exit codes (125 to 127): podman prints its errors at a line's start.
fn podman_error(code: i32, tail: &[String]) -> Option<&str> {
    if !(125..=127).contains(&code) {
        return None;
    }
    tail.iter()
        .rev()
        .find_map(|l| l.strip_prefix("Error: "))
        .map(str::trim)
        .filter(|l| !l.is_empty())
}

/// What an exit code of podman's own (125 to 127) means, the container's image called `what`
/// ("image", "builder"); `None` for any other code, which is the command's. With podman's
/// `Error: ` line in the output, it is in the text, and the second value is true: podman could
/// not run the container (rootless networking missing, a limit refused, …), or its OCI runtime
/// could not find or execute the command; without one, the command itself exited so.
pub fn exit_reason(code: Option<i32>, tail: &[String], what: &str) -> Option<(String, bool)> {
    let code = code.filter(|c| (125..=127).contains(c))?;
    let not_found = format!("the command was not found in the {what} (exit {code})");
    let not_executable = format!("the command could not be executed in the {what} (exit {code})");
    Some(match podman_error(code, tail) {
        // podman's texts for its runtime's ENOENT and EACCES on the command.
        Some(e) if code == 127 && e.ends_with("invoke a command that was not found") => {
            (format!("{not_found}: {e}"), true)
        }
        Some(e) if code == 126 && e.contains("OCI") && e.ends_with("permission denied") => {
            (format!("{not_executable}: {e}"), true)
        }
        Some(e) => (
            format!("podman could not run the container (exit {code}): {e}"),
            true,
        ),
        None => (
            match code {
                125 => format!("podman could not run the container (exit {code})"),
                126 => not_executable,
                _ => not_found,
            },
            false,
        ),
    })
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn limits_from_proc() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \nMax processes             63433                63433                processes \nMax open files            1024                 524288               files     \nMax locked memory         unlimited            unlimited            bytes     \n";
        assert_eq!(
            limits_flags(text),
            [
                "--ulimit=nofile=524288:524288",
                "--ulimit=nproc=63433:63433"
            ]
        );
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert!(limits_flags(unlimited).is_empty());
        assert!(ulimit_flags(&["--ulimit=nofile=10:10".into()]).is_empty());
        assert!(rlimit_hint(&[
            "Error: runc: error setting rlimit type 7: operation not permitted".into()
        ])
        .is_some());
        assert!(rlimit_hint(&["fine".into()]).is_none());
        let refused =
            ["Error: runc: error setting rlimit type 7: operation not permitted".to_string()];
        assert!(rlimit_refused(Some(126), &refused) && !rlimit_refused(Some(0), &refused));
        assert!(!rlimit_refused(
            Some(126),
            &["a test that prints error setting rlimit".into()]
        ));
    }

    fn lines(l: &[&str]) -> Vec<String> {
        l.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn podman_failures_are_told_apart_from_the_command() {
        let slirp = lines(&[
            "Storing signatures",
            "Error: /usr/bin/slirp4netns failed: \"open(\\\"/dev/net/tun\\\"): Permission denied\"",
        ]);
        assert_eq!(
            exit_reason(Some(126), &slirp, "image").unwrap(),
            (
                "podman could not run the container (exit 126): /usr/bin/slirp4netns failed: \"open(\\\"/dev/net/tun\\\"): Permission denied\"".into(),
                true
            )
        );
        let uidmap =
            lines(&["Error: cannot set up namespace using \"/usr/bin/newuidmap\": exit status 1"]);
        for code in [125, 127] {
            let (text, line) = exit_reason(Some(code), &uidmap, "builder").unwrap();
            assert!(line);
            assert_eq!(text, format!("podman could not run the container (exit {code}): cannot set up namespace using \"/usr/bin/newuidmap\": exit status 1"));
        }
        // The last `Error: ` line is podman's; one mid-line is not.
        let two = lines(&[
            "Error: first",
            "Error: second",
            "warn: Error: not at the start",
        ]);
        assert!(exit_reason(Some(125), &two, "image")
            .unwrap()
            .0
            .ends_with("(exit 125): second"));
        // The OCI runtime's own not-found and permission-denied: the command's fault.
        let nf = lines(&["Error: runc: runc create failed: unable to start container process: exec: \"/nope\": stat /nope: no such file or directory: OCI runtime attempted to invoke a command that was not found"]);
        let (text, line) = exit_reason(Some(127), &nf, "image").unwrap();
        assert!(
            line && text.starts_with("the command was not found in the image (exit 127): runc: "),
            "{text}"
        );
        let pd = lines(&["Error: runc: runc create failed: unable to start container process: exec: \"/bin\": permission denied: OCI permission denied"]);
        let (text, _) = exit_reason(Some(126), &pd, "builder").unwrap();
        assert!(
            text.starts_with("the command could not be executed in the builder (exit 126): runc: "),
            "{text}"
        );
        // No podman line: the command itself exited so (a shell's 127, an exec's 126).
        let plain = lines(&["sh: nosuch: not found"]);
        assert_eq!(
            exit_reason(Some(127), &plain, "image").unwrap(),
            (
                "the command was not found in the image (exit 127)".into(),
                false
            )
        );
        assert_eq!(
            exit_reason(Some(126), &[], "builder").unwrap().0,
            "the command could not be executed in the builder (exit 126)"
        );
        assert_eq!(
            exit_reason(Some(125), &[], "image").unwrap().0,
            "podman could not run the container (exit 125)"
        );
        // Any other code is the command's, `Error: ` line or not.
        assert_eq!(exit_reason(Some(1), &uidmap, "image"), None);
        assert_eq!(exit_reason(None, &uidmap, "image"), None);
    }
}
