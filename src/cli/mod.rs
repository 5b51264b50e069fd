//! Command line: clap types and one file per subcommand. The only module that prints.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod attest;
mod build;
mod cache;
mod cache_repo;
mod diff;
mod import;
mod lock;
mod mirror;
mod pipe;
mod plan;
mod progress;
mod push;
mod recipe_args;
mod reference;
mod render;
mod report;
mod report_verify;
mod shell;
mod sign;
mod test;
mod usage;
mod vendor;
mod verify;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::store::Store;

const AFTER_HELP: &str = "\
`ocibuild RECIPE.toml` is short for `ocibuild build RECIPE.toml`.

Examples:
  ocibuild recipes/hello.toml                        build into ./hello.oci (an OCI layout)
  ocibuild build app.toml -o oci-archive:app.tar     one tar holding the layout
  ocibuild build app.toml -o docker-archive:app.tar  for `docker load` / `podman load`
  ocibuild build app.toml --test                     build, then run the recipe's [[test]]s
  ocibuild test app.toml --only smoke --json         run one test again, JSON results
  ocibuild build app.toml --json | jq -r .manifest   the manifest digest, for scripts
  ocibuild build app.toml --push registry.example/team/app:1.0
  ocibuild push app.oci:latest registry.example/team/app:1.0
  ocibuild lock app.toml --update                    re-resolve the base's tag, report a move
  ocibuild diff a.oci oci-archive:b.tar --semantic   what differs, down to files (exit 1 if any)
  ocibuild report app.toml -o report.html            layer stack, wasted bytes, packages: one page
  ocibuild verify app.toml                           rebuild from the lock in an empty store and
                                                     check it is bit-identical to ./app.oci
  ocibuild vendor app.toml --into vendor/            every locked input, for an air-gapped build
  ocibuild build app.toml --vendor vendor/ --offline build with no network at all
  ocibuild mirror --recipe app.toml --to mirror.internal:5000/hub
                                                     copy the locked base, digests unchanged
  ocibuild build app.toml --attach --push REG/app:1  attach SBOMs + provenance, push them too
  ocibuild sbom app.toml --format cyclonedx          the SBOM of ./app.oci, from app.lock
  ocibuild provenance app.toml -o app.intoto.json    its in-toto SLSA provenance statement

Environment:
  SOURCE_DATE_EPOCH     timestamp for every file and history entry (wins over the recipe; default 0)
  OCIBUILD_CACHE        content store and layer cache directory (default $XDG_CACHE_HOME/ocibuild)
  OCIBUILD_JOBS         worker threads (default: all cores); never changes the output
  OCIBUILD_PODMAN_ARGS  extra `podman run` flags for the test stage (whitespace-separated)
  OCIBUILD_REGISTRIES   the registries file (plain HTTP, CA files, mirrors)
  OCIBUILD_NET_TIMEOUT  seconds a silent network host may keep a command waiting (default 60)
  OCIBUILD_KEY_PASSPHRASE  a cosign signing key's passphrase (else --passphrase-file)
  REGISTRY_AUTH_FILE    registry credentials (else containers' auth.json, else ~/.docker/config.json)

Docs: README.md, docs/recipe.md and docs/cli/ (a page per subcommand) in the ocibuild repository.";

#[derive(Parser, Debug)]
#[command(name = "ocibuild", version, about = "Daemonless, reproducible OCI image builder", after_help = AFTER_HELP)]
pub struct Cli {
    /// No progress output; only results and errors.
    #[arg(
        short,
        long,
        global = true,
        conflicts_with = "verbose",
        help_heading = "Global"
    )]
    quiet: bool,
    /// Also print what each step decided and why: cache hits and their keys, mirrors tried,
    /// lock entries kept or re-resolved, blobs already in the store.
    #[arg(short, long, global = true, help_heading = "Global")]
    verbose: bool,
    /// Content store and layer cache directory.
    #[arg(
        long,
        global = true,
        env = "OCIBUILD_CACHE",
        value_name = "DIR",
        help_heading = "Global"
    )]
    cache_dir: Option<PathBuf>,
    /// Worker threads for hashing and compression (default: all cores). Never changes the output.
    #[arg(
        short,
        long,
        global = true,
        env = "OCIBUILD_JOBS",
        value_name = "N",
        help_heading = "Global"
    )]
    jobs: Option<usize>,
    /// Registries file: per-registry plain HTTP / CA settings and mirrors (default:
    /// $OCIBUILD_REGISTRIES, else ~/.config/ocibuild/registries.toml when it exists).
    #[arg(long, global = true, value_name = "FILE", help_heading = "Global")]
    registries: Option<PathBuf>,
    /// `--tls-verify=false`: registries' certificates are not checked, and a registry that does
    /// not speak TLS is spoken to in plain HTTP (skopeo's flag). A loopback registry
    /// (localhost, 127.0.0.1, ::1) falls back to plain HTTP without it.
    #[arg(long, global = true, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set, help_heading = "Global")]
    tls_verify: bool,
    /// The credentials file (auth.json, as podman and docker write it): the only one consulted,
    /// in place of $REGISTRY_AUTH_FILE and the default locations. It must be a readable file.
    #[arg(long, global = true, value_name = "FILE", help_heading = "Global")]
    authfile: Option<PathBuf>,
    /// The login for every registry this command talks to (skopeo's --creds), in place of any
    /// credentials file. Both parts must be given; it is never printed. Other users of this
    /// machine may see a command line: prefer --authfile where that matters.
    #[arg(long, global = true, value_name = "USER:PASSWORD", value_parser = usage::CredsArg::parse, help_heading = "Global")]
    creds: Option<usage::CredsArg>,
    /// A certificate directory for every registry, laid out as /etc/containers/certs.d/HOST/
    /// (*.crt CA certificates, NAME.cert + NAME.key a client certificate), in place of the
    /// registries file's cert-dir entries. It must exist.
    #[arg(long, global = true, value_name = "DIR", help_heading = "Global")]
    cert_dir: Option<PathBuf>,
    /// The longest a network host (registry, apt archive, package index) may keep this command
    /// waiting for an answer, all retries together (its silent waits add up until it answers):
    /// past it, the command fails naming the host. A host that cannot be resolved or refuses
    /// connections fails at once, and is not tried again in this command.
    #[arg(long, global = true, env = "OCIBUILD_NET_TIMEOUT", value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400), help_heading = "Global")]
    net_timeout: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Build an image from a recipe and write it to an OCI layout or archive.
    Build(build::BuildArgs),
    /// Pin the recipe's inputs (the base's digests, every .deb and wheel) into NAME.lock without
    /// building.
    Lock(lock::LockArgs),
    /// Push an image from an OCI layout to a registry.
    Push(push::PushArgs),
    /// Run the recipe's [[test]] entries under podman against the image already built.
    Test(test::TestArgs),
    /// Compare two images (layouts, archives, registry images) down to files; exit 1 if they differ.
    Diff(diff::DiffArgs),
    /// Describe an image: its layer stack, files by package, wheel or directory, wasted bytes
    /// (as dive counts them), identical content at different paths, installed packages; as
    /// JSON or one self-contained HTML page.
    Report(report::ReportArgs),
    /// Rebuild a recipe from its lock in an empty store and check the result is bit-identical.
    Verify(verify::VerifyArgs),
    /// Copy recipes' locked inputs into a vendor directory (for air-gapped builds); merge or
    /// check vendor directories.
    Vendor(vendor::VendorArgs),
    /// Copy base images (from locks), built images (OCI layouts) or vendored images into a
    /// registry, digests unchanged.
    Mirror(mirror::MirrorArgs),
    /// Say what a build and a push would do, layer by layer: new, cached locally or in the
    /// cache repository, already at the destination, and the bytes the push will upload.
    Plan(plan::PlanArgs),
    /// Print the SBOM (SPDX 2.3 or CycloneDX 1.6 JSON) of the recipe's built image, from its lock.
    Sbom(attest::SbomArgs),
    /// Print the in-toto SLSA v1 provenance statement of the recipe's built image.
    Provenance(attest::ProvenanceArgs),
    /// Sign an image in a registry (a sigstore signature, as cosign and skopeo verify).
    Sign(sign::SignArgs),
    /// Check an image's signature and every attached attestation against a public key.
    VerifySignature(sign::VerifySignatureArgs),
    /// Check the content store (every blob rehashed) or prune what no build can use.
    Cache(cache::CacheArgs),
    /// Read a Dockerfile into a recipe (recipe.toml, requirements.in) and print what each
    /// instruction became.
    Import(import::ImportArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(shell::CompletionsArgs),
    /// Print the man page (roff) on stdout, or write one per subcommand into a directory.
    Man(shell::ManArgs),
    /// The built-in GPU check (a cudarc vector-add kernel); run inside containers by `test`.
    #[command(name = "cuda-smoke", hide = true)]
    CudaSmoke(test::SmokeArgs),
}

/// After each subcommand's help: the global options, which only `ocibuild --help` lists.
const GLOBALS_NOTE: &str =
    "Global: -q -v -j --cache-dir --registries --tls-verify --authfile --creds --cert-dir --net-timeout";

/// The command definition as parsed and as its help, man pages and reference show it: each
/// subcommand carries the global options hidden (clap then propagates nothing over them), so
/// that its help lists its own options and [`GLOBALS_NOTE`] names the global ones. They are
/// accepted there all the same.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let globals: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.clone().hide(true))
        .collect();
    with_hidden(cmd, &globals)
}

fn with_hidden(cmd: clap::Command, globals: &[clap::Arg]) -> clap::Command {
    cmd.mut_subcommands(|sub| {
        let note = match sub.get_after_help() {
            Some(h) => format!("{h}\n\n{GLOBALS_NOTE}"),
            None => GLOBALS_NOTE.to_string(),
        };
        let sub = globals.iter().fold(sub, |sub, a| sub.arg(a.clone()));
        with_hidden(sub.after_help(note), globals)
    })
}

/// Subcommand names, for the `ocibuild RECIPE.toml` shorthand.
const SUBCOMMANDS: &[&str] = &[
    "build",
    "lock",
    "push",
    "test",
    "diff",
    "report",
    "verify",
    "vendor",
    "mirror",
    "plan",
    "sbom",
    "provenance",
    "sign",
    "verify-signature",
    "cache",
    "completions",
    "man",
    "cuda-smoke",
    "help",
];

/// Insert `build` before the first positional argument when it is a recipe (an existing file
/// or a name ending in `.toml`) and no subcommand was given; anything else is left to clap,
/// which suggests the subcommand a typo was meant to be.
fn with_default_subcommand(args: Vec<OsString>) -> Vec<OsString> {
    let takes_value = [
        "--cache-dir",
        "-j",
        "--jobs",
        "--registries",
        "--tls-verify",
        "--authfile",
        "--creds",
        "--cert-dir",
        "--net-timeout",
    ];
    let mut i = 1;
    while i < args.len() {
        let a = args[i].to_string_lossy();
        if takes_value.contains(&a.as_ref()) {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        if SUBCOMMANDS.contains(&a.as_ref()) {
            return args;
        }
        let recipe = a.ends_with(".toml") || Path::new(&args[i]).is_file();
        if !recipe {
            return args;
        }
        let mut out = args;
        out.insert(i, OsString::from("build"));
        return out;
    }
    args
}

/// `--update base` (as written in the docs) for clap's `--update=base`: the value of
/// `lock --update` is optional, so it must be attached to the flag.
fn with_update_value(args: Vec<OsString>) -> Vec<OsString> {
    if !args.iter().any(|a| a == "lock") {
        return args;
    }
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter().peekable();
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a);
            out.extend(it);
            break;
        }
        let value = it
            .peek()
            .and_then(|n| n.to_str())
            .filter(|n| matches!(*n, "base" | "all"))
            .map(str::to_string);
        match (a.to_str(), value) {
            (Some("--update"), Some(v)) => {
                it.next();
                out.push(OsString::from(format!("--update={v}")));
            }
            _ => out.push(a),
        }
    }
    out
}

pub fn main() -> ExitCode {
    pipe::quiet_panics();
    let args = with_update_value(with_default_subcommand(std::env::args_os().collect()));
    let matches = command().get_matches_from(args);
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    crate::http::peers::set_budget(std::time::Duration::from_secs(cli.net_timeout));
    if let Err(e) = cli.registry_flags() {
        eprintln!("error: {}", crate::diag::chain(&e));
        return ExitCode::from(usage::EXIT_USAGE);
    }
    let result = match &cli.command {
        Command::Build(a) => build::run(&cli, a),
        Command::Lock(a) => lock::run(&cli, a),
        Command::Push(a) => push::run(&cli, a),
        Command::Test(a) => test::run(&cli, a),
        Command::Diff(a) => diff::run(&cli, a),
        Command::Report(a) => report::run(&cli, a),
        Command::Verify(a) => verify::run(&cli, a),
        Command::Vendor(a) => vendor::run(&cli, a),
        Command::Mirror(a) => mirror::run(&cli, a),
        Command::Plan(a) => plan::run(&cli, a),
        Command::Sbom(a) => attest::run_sbom(&cli, a),
        Command::Provenance(a) => attest::run_provenance(&cli, a),
        Command::Sign(a) => sign::run_sign(&cli, a),
        Command::VerifySignature(a) => sign::run_verify(&cli, a),
        Command::Cache(a) => cache::run(&cli, a),
        Command::Import(a) => import::run(&cli, a),
        Command::Completions(a) => shell::completions(a),
        Command::Man(a) => shell::man(a),
        Command::CudaSmoke(a) => return test::smoke(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if let Some(code) = pipe::quiet_exit(&e) {
                return code;
            }
            eprintln!("error: {}", message(&e));
            if usage::is_usage(&e) {
                return ExitCode::from(usage::EXIT_USAGE);
            }
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes, each said once: every level's message says only its own context
/// (never its source's text), so the chain is printed whole, joined by ": ".
fn message(e: &anyhow::Error) -> String {
    crate::diag::chain(e.as_ref())
}

pub use crate::output::default_output;

/// SOURCE_DATE_EPOCH from the environment, if set ([`crate::session::env_epoch`]).
pub fn env_epoch() -> anyhow::Result<Option<u64>> {
    Ok(crate::session::env_epoch()?)
}

impl Cli {
    /// The progress display for a command; `silent` (its `--json`) hides bars and notes.
    fn bars(&self, silent: bool) -> progress::Bars {
        progress::Bars::new(self.quiet || silent, self.verbose)
    }

    fn threads(&self) -> usize {
        self.jobs.filter(|&n| n > 0).unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(std::num::NonZero::get)
                .unwrap_or(1)
        })
    }

    /// A session on `store` with this command line's global settings (registries file,
    /// threads), resolving what the lock lacks; commands set the rest (`SOURCE_DATE_EPOCH`
    /// where they build or lock layers).
    fn session<'a>(
        &self,
        store: &'a Store,
        client: &'a crate::registry::Client,
        reporter: &'a dyn crate::progress::Reporter,
    ) -> crate::session::Session<'a> {
        crate::session::Session {
            threads: self.threads(),
            sandbox: crate::run::SandboxOptions {
                podman: std::env::var_os("OCIBUILD_PODMAN")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from("podman")),
                podman_args: std::env::var("OCIBUILD_PODMAN_ARGS")
                    .map(|a| a.split_whitespace().map(String::from).collect())
                    .unwrap_or_default(),
                copies: Default::default(),
            },
            ..crate::session::Session::new(store, client, reporter)
        }
    }

    /// The command's one registry client: the registries file's settings, with `--tls-verify`,
    /// `--authfile`, `--creds` and `--cert-dir` over them (each checked first: a usage error);
    /// `offline`, one that refuses every request.
    fn client(&self, offline: bool) -> anyhow::Result<crate::registry::Client> {
        Ok(crate::session::registry_client(
            self.registries.as_deref(),
            offline,
            self.registry_flags()?,
        )?)
    }

    /// `--tls-verify`, `--authfile`, `--creds` and `--cert-dir`, checked (before any command
    /// runs, and again for its client).
    fn registry_flags(&self) -> Result<crate::registry::RegistryFlags, usage::UsageError> {
        if let Some(f) = &self.authfile {
            usage::check_authfile(f)?;
        }
        if let Some(d) = &self.cert_dir {
            usage::check_cert_dir(d)?;
        }
        Ok(crate::registry::RegistryFlags {
            tls_verify: self.tls_verify,
            authfile: self.authfile.clone(),
            creds: self
                .creds
                .as_ref()
                .map(usage::CredsArg::credential)
                .transpose()?,
            cert_dir: self.cert_dir.clone(),
        })
    }

    fn store_root(&self) -> anyhow::Result<PathBuf> {
        Ok(match &self.cache_dir {
            Some(p) => p.clone(),
            None => Store::default_root()?,
        })
    }

    fn store(&self) -> anyhow::Result<Store> {
        Ok(Store::open(self.store_root()?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_takes_its_value_as_written_in_the_docs() {
        let got = with_update_value(v(&["ocibuild", "lock", "--update", "base", "app.toml"]));
        assert_eq!(got, v(&["ocibuild", "lock", "--update=base", "app.toml"]));
        let got = with_update_value(v(&["ocibuild", "lock", "--update", "app.toml"]));
        assert_eq!(got, v(&["ocibuild", "lock", "--update", "app.toml"]));
        let got = with_update_value(v(&["ocibuild", "lock", "--update", "--", "base"]));
        assert_eq!(got, v(&["ocibuild", "lock", "--update", "--", "base"]));
        let cli = Cli::try_parse_from(v(&["ocibuild", "lock", "--update", "app.toml"])).unwrap();
        let Command::Lock(a) = cli.command else {
            panic!("not lock")
        };
        assert_eq!(a.update, Some(lock::Update::All));
    }

    fn v(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn shorthand_inserts_build() {
        assert_eq!(
            with_default_subcommand(v(&["ocibuild", "r.toml"])),
            v(&["ocibuild", "build", "r.toml"])
        );
        assert_eq!(
            with_default_subcommand(v(&["ocibuild", "-q", "--jobs", "2", "r.toml", "-o", "x"])),
            v(&["ocibuild", "-q", "--jobs", "2", "build", "r.toml", "-o", "x"])
        );
        assert_eq!(
            with_default_subcommand(v(&["ocibuild", "build", "r.toml"])),
            v(&["ocibuild", "build", "r.toml"])
        );
        assert_eq!(
            with_default_subcommand(v(&["ocibuild", "--help"])),
            v(&["ocibuild", "--help"])
        );
        // A typo or an unknown word is clap's to explain (with its suggestion).
        for typo in [
            &["ocibuild", "buidl", "r.toml"][..],
            &["ocibuild", "version"],
        ] {
            assert_eq!(with_default_subcommand(v(typo)), v(typo));
        }
    }

    #[test]
    fn clap_definition_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        command().debug_assert();
    }
}
