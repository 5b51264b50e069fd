fn main() -> std::process::ExitCode {
    quiet_on_closed_stdout();
    ocibuild::cli::main()
}

/// `ocibuild diff a b | head -1`: when the reader of stdout goes away, `println!` panics with
/// "failed printing to stdout: Broken pipe" (Rust ignores SIGPIPE, so the write fails with
/// EPIPE). That one panic ends the process quietly, as a closed pipe ends `cat`; every other
/// panic is reported as usual. SIGPIPE itself stays ignored: a credential helper that exits
/// without reading its stdin, or a registry that closes a connection mid-write, must give an
/// error, not kill the process.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if payload.starts_with("failed printing to stdout") && payload.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}
