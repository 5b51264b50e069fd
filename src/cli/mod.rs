//! Command line: clap types and one file per subcommand. The only module that prints.
pub fn main() -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
