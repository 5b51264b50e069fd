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
use crate::recipe;
use crate::session::Session;

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The recipe (TOML).
    pub recipe: PathBuf,
    /// Where to write the image: DIR or oci:DIR (OCI image layout), oci-archive:FILE, or
    /// docker-archive:FILE (for `docker load` / `podman load`). Default: ./<recipe name>.oci
    #[arg(short, long, value_name = "TARGET")]
    pub output: Option<String>,
    /// Rebuild every layer instead of taking it from the layer cache.
    #[arg(long)]
    pub no_cache: bool,
    /// The image's tag instead of the recipe's `[image] tag`.
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,
    /// The platform to build for instead of the recipe's `[image] platform` (`linux/arm64`);
    /// for a recipe with `[image] platforms`, the ones to build (`P[,P…]`, a subset).
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// Fail when NAME.lock is missing or does not match the recipe (base reference or platform,
    /// [apt] request, python archive), naming what changed; never write the lock.
    #[arg(long, conflicts_with = "frozen")]
    pub locked: bool,
    /// Use NAME.lock as it is, without checking it against the recipe; never write it.
    #[arg(long)]
    pub frozen: bool,
    /// Never touch the network (no registry, apt archive or URL): every input must be in the
    /// store or the --vendor directory. Implies --locked unless --frozen is given.
    #[arg(long, conflicts_with = "push")]
    pub offline: bool,
    /// Take the lock's inputs from this vendor directory (`ocibuild vendor`), each verified by
    /// digest before use.
    #[arg(long, value_name = "DIR")]
    pub vendor: Option<PathBuf>,
    /// Print the result as JSON (manifest digest, layers with diff_id, digest, size) on stdout.
    #[arg(long)]
    pub json: bool,
    /// After building, run the recipe's [[test]] entries (the image must go to an OCI layout).
    #[arg(long)]
    pub test: bool,
    /// After building (and testing, with --test), push the image to this registry reference.
    #[arg(long, value_name = "REF")]
    pub push: Option<String>,
    /// Push without writing a local image. Pushing to the base image's own registry, the base's
    /// layers are then never downloaded (they are mounted), unless [apt] or a [python]
    /// interpreter from the base needs to read them.
    #[arg(long, requires = "push", conflicts_with_all = ["output", "test", "attach"])]
    pub push_only: bool,
    /// Attach SBOMs (SPDX, CycloneDX) and a provenance statement to the image as OCI 1.1
    /// artifacts: listed in the layout's index.json, and pushed with --push (plus the
    /// `sha256-<digest>` referrers tag). Off by default: the layout then holds the image alone.
    #[arg(long)]
    pub attach: bool,
    /// Sign the pushed image with this private key (PKCS#8 or SEC1 PEM, or a cosign key): a
    /// sigstore signature under `sha256-<digest>.sig`; with --attach, the SBOMs and the
    /// provenance are also attached as DSSE envelopes signed with it.
    #[arg(long, value_name = "FILE", requires = "push")]
    pub sign_key: Option<PathBuf>,
    #[command(flatten)]
    pub passphrase: super::sign::PassphraseArgs,
    #[command(flatten)]
    pub cache: super::cache_repo::CacheRepoArgs,
    #[command(flatten)]
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

pub fn run(cli: &Cli, args: &BuildArgs) -> anyhow::Result<ExitCode> {
    if args.test && args.json {
        anyhow::bail!("--test and --json together are not supported: run `ocibuild test --json` after the build");
    }
    // The destination first: a bad reference (a login pasted in it) fails before anything is
    // built.
    let push = match &args.push {
        Some(dest) => Some(ImageRef::parse_registry(dest)?),
        None => None,
    };
    let recipe = recipe::load(&args.recipe)?
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
        ..cli.session(&store, &client, &bars)
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
