//! A closed stdout (`ocibuild sbom app.toml | head`): the command ends quietly with status 141
//! (128 + SIGPIPE, what a shell reports for `cat` in the same place), whether the write that
//! found the reader gone was a `println!` (which panics) or a `write_all` whose error came
//! back up to [`super::main`].
//!
//! SIGPIPE itself stays ignored (Rust's default): a credential helper that exits without
//! reading its stdin, or a registry that closes a connection mid-write, must give an error, not
//! kill the process. So a broken pipe is quiet only when stdout's reader is in fact gone.

use std::process::ExitCode;

/// The exit status of a command whose stdout was closed early.
pub(super) const CLOSED_STDOUT: u8 = 141;

/// Whether stdout is a pipe (or socket) whose reader has gone: poll(2) says so at once.
fn stdout_closed() -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let out = std::io::stdout();
    let mut fds = [PollFd::new(&out, PollFlags::OUT)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    match poll(&mut fds, Some(&now)) {
        Ok(_) => fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP),
        Err(_) => false,
    }
}

/// The status to end with when `e` is a broken pipe on a closed stdout; `None` for any other
/// error (which is reported as usual).
pub(super) fn quiet_exit(e: &anyhow::Error) -> Option<ExitCode> {
    let broken = e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    });
    (broken && stdout_closed()).then(|| ExitCode::from(CLOSED_STDOUT))
}

/// Makes a panic from writing to a closed stdout (`println!`'s "failed printing to stdout:
/// Broken pipe", or a generator's `expect` on the same write) end the process quietly with
/// [`CLOSED_STDOUT`]; every other panic is reported as usual.
pub(super) fn quiet_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if payload.contains("Broken pipe") && stdout_closed() {
            std::process::exit(i32::from(CLOSED_STDOUT));
        }
        default(info);
    }));
}
