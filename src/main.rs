fn main() -> std::process::ExitCode {
    restore_sigpipe();
    ocibuild::cli::main()
}

/// `ocibuild diff a b | head -1`: a closed stdout ends the process quietly, as it ends `cat`
/// and `skopeo`, instead of a panic in `println!` (Rust ignores SIGPIPE by default, so every
/// write would fail with EPIPE). The default disposition is restored before anything runs.
#[allow(unsafe_code)]
fn restore_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_DFL at the start of main, before any thread
    // exists, installs no handler and touches no Rust state.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
