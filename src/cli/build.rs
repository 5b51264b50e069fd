//! `ocibuild build RECIPE`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::Cli;
use crate::image::Platform;
use crate::imageref::ImageRef;
use crate::lock::LockPolicy;
use crate::ops::{self, BuildEvents, BuildRequest};
use crate::output::Target;
use crate::session::Session;

#[derive(Args, Debug)]
// The help flag among the output flags: an `Options:` group of it alone would take 3 of the 40
// lines the help keeps to.
#[command(disable_help_flag = true)]
pub(super) struct BuildArgs {
    /// The recipe (TOML).
    pub recipe: PathBuf,
    /// Print help.
    #[arg(short, long, action = clap::ArgAction::Help, help_heading = "Output")]
    pub help: Option<bool>,
    /// DIR, oci:DIR, oci-archive:FILE or docker-archive:FILE (./NAME.oci).
    #[arg(short, long, value_name = "TARGET", help_heading = "Output")]
    pub output: Option<String>,
    /// Rebuild every layer instead of taking it from the layer cache.
    #[arg(long, help_heading = "Inputs")]
    pub no_cache: bool,
    /// Give the network to the [[step]]s that ask for it (`network = true`).
    #[arg(long, help_heading = "Inputs")]
    pub allow_network: bool,
    /// The image's tag instead of the recipe's `[image] tag`.
    #[arg(long, value_name = "TAG", help_heading = "Output")]
    pub tag: Option<String>,
    /// The platform(s) to build instead of the recipe's (`P[,P…]`).
    #[arg(long, value_name = "OS/ARCH", help_heading = "Inputs")]
    pub platform: Option<String>,
    /// Fail if NAME.lock is missing or stale; never write it.
    #[arg(long, conflicts_with = "frozen", help_heading = "Inputs")]
    pub locked: bool,
    /// Use NAME.lock as it is, unchecked; never write it.
    #[arg(long, help_heading = "Inputs")]
    pub frozen: bool,
    /// No network: every input from the store or --vendor (implies --locked).
    #[arg(long, conflicts_with = "push", help_heading = "Inputs")]
    pub offline: bool,
    /// Take the lock's inputs from this vendor directory, each verified.
    #[arg(long, value_name = "DIR", help_heading = "Inputs")]
    pub vendor: Option<PathBuf>,
    /// Print the result as JSON on stdout (docs/json.md).
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// After building, run the recipe's [[test]] entries (needs a layout).
    #[arg(long, help_heading = "Test")]
    pub test: bool,
    /// After building (and testing), push the image to this reference.
    #[arg(long, value_name = "REF", help_heading = "Output")]
    pub push: Option<String>,
    /// With --push: write no local image (a base there is mounted).
    #[arg(long, requires = "push", conflicts_with_all = ["output", "test", "attach"], help_heading = "Output")]
    pub push_only: bool,
    /// Attach SBOMs and provenance as OCI 1.1 artifacts (layout and --push).
    #[arg(long, help_heading = "Output")]
    pub attach: bool,
    /// Sign the pushed image (and the --attach documents) with this key.
    #[arg(long, value_name = "FILE", requires = "push", help_heading = "Output")]
    pub sign_key: Option<PathBuf>,
    #[command(flatten, next_help_heading = "Output")]
    pub passphrase: super::sign::PassphraseArgs,
    #[command(flatten, next_help_heading = "Inputs")]
    pub cache: super::cache_repo::CacheRepoArgs,
    #[command(flatten)]
    pub recipe_args: super::recipe_args::RecipeArgs,
    #[command(flatten, next_help_heading = "Test")]
    pub test_opts: super::test::TestOptions,
}

/// The test stage's lines as the build goes, and what was built before them.
struct Events<'a> {
    cli: &'a Cli,
    json: bool,
    pushing: bool,
    printer: super::test::Printer,
}

impl BuildEvents for Events<'_> {
    fn built(&self, outcome: &crate::outcome::BuildOutcome) {
        if !self.json {
            super::render::built(outcome, self.cli.quiet, self.pushing);
        }
    }
    fn untested(&self, platform: &Platform, host: &Platform) {
        super::test::print_untested(platform, host, self.cli.quiet);
    }
    fn test(&self, event: crate::run::TestEvent<'_>) {
        self.printer.event(event);
    }
    fn tested(&self, results: &[crate::run::TestResult]) {
        // The counts are text only (--json with --test is refused).
        let _ = self.printer.summary(results);
    }
}

/// The lock policy the flags ask for: `--frozen`, else `--locked` (also implied by
/// `--offline`), else resolve what the lock lacks.
fn policy(args: &BuildArgs) -> LockPolicy {
    if args.frozen {
        LockPolicy::Frozen
    } else if args.locked || args.offline {
        LockPolicy::Locked
    } else {
        LockPolicy::Resolve
    }
}

pub(super) fn run(cli: &Cli, args: &BuildArgs) -> anyhow::Result<ExitCode> {
    if args.test && args.json {
        anyhow::bail!("--test and --json together are not supported: run `ocibuild test --json` after the build");
    }
    // The destination first: a bad reference (a login pasted in it) fails before anything is
    // built.
    let push = match &args.push {
        Some(dest) => Some(ImageRef::parse_registry(dest)?),
        None => None,
    };
    let recipe = args
        .recipe_args
        .load(&args.recipe)?
        .with_overrides(args.tag.as_deref(), args.platform.as_deref())?;
    let output: Target = match &args.output {
        Some(o) => o.parse()?,
        None => Target::Layout(super::default_output(&args.recipe)),
    };
    // The key first: a wrong passphrase or key type fails before anything is built.
    let key = match &args.sign_key {
        Some(p) => Some(super::sign::load_key(cli, p, &args.passphrase)?),
        None => None,
    };
    let push_only_to = push
        .as_ref()
        .filter(|_| args.push_only)
        .map(|r| r.registry().to_string());
    let client = Arc::new(cli.client(args.offline)?);
    let (store, cache) = super::cache_repo::store(
        cli,
        &args.cache,
        &client,
        push_only_to.as_deref(),
        args.offline,
    )?;
    let bars = cli.bars(false);
    let mut session = Session {
        policy: policy(args),
        locked_by: if args.locked { "--locked" } else { "--offline" },
        offline: args.offline,
        epoch_override: super::env_epoch()?,
        vendor: args.vendor.clone(),
        push_only_to,
        no_cache: args.no_cache,
        allow_network: args.allow_network,
        ..cli.session(&store, &client, &bars)
    };
    // Steps run with the test stage's podman and the command line's podman flags.
    let stage = args.test_opts.stage();
    session.sandbox = crate::run::SandboxOptions {
        podman: stage.podman.clone(),
        podman_args: stage.podman_args.clone(),
        copies: Default::default(),
    };
    let request = BuildRequest {
        recipe_path: &args.recipe,
        recipe: &recipe,
        output,
        push_only: args.push_only,
        push,
        attach: args.attach,
        key: key.as_ref(),
        test: args.test.then(|| args.test_opts.stage()),
    };
    let events = Events {
        cli,
        json: args.json,
        pushing: args.push.is_some(),
        printer: super::test::Printer {
            show_commands: cli.verbose,
            json: false,
            quiet: cli.quiet,
        },
    };
    let done = ops::build(&mut session, &client, cache.as_deref(), &request, &events)?;
    if done.failed() {
        return Ok(ExitCode::FAILURE);
    }
    if args.json {
        // Through a Value: its keys sorted, as they always were.
        let doc = serde_json::to_value(&done.outcome)?;
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    super::render::pushed(&done.outcome, cli.quiet);
    if let Some(c) = &cache {
        super::cache_repo::report(cli, &c.stats());
    }
    Ok(ExitCode::SUCCESS)
}
