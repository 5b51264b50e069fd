fn main() -> std::process::ExitCode {
    ocibuild::cli::main()
}
