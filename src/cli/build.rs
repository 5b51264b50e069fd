//! `ocibuild build RECIPE`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::build::Built;
use crate::lock::LockPolicy;
use crate::output::{self, Target};
use crate::recipe;
use crate::session::Session;
use crate::store::Store;

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The recipe (TOML).
    pub recipe: PathBuf,
    /// DIR, oci:DIR, oci-archive:FILE or docker-archive:FILE (./NAME.oci).
    #[arg(short, long, value_name = "TARGET", help_heading = "Output")]
    pub output: Option<String>,
    /// Rebuild every layer instead of taking it from the layer cache.
    #[arg(long, help_heading = "Inputs")]
    pub no_cache: bool,
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
    #[command(flatten, next_help_heading = "Test")]
    pub test_opts: super::test::TestOptions,
}

/// How a build treats the lock and where its inputs come from.
#[derive(Clone, Debug, Default)]
pub struct InputOptions {
    /// `--locked`: the lock must exist and match the recipe; it is never written.
    pub locked: bool,
    /// `--frozen`: the lock as it is, unchecked; never written.
    pub frozen: bool,
    /// `--offline`: no network; implies `locked` unless `frozen`.
    pub offline: bool,
    /// `--vendor DIR`.
    pub vendor: Option<PathBuf>,
    /// `--push-only`: the registry pushed to (no local output is written).
    pub push_only_to: Option<String>,
    /// Where the output goes (left out of every layer).
    pub outputs: Vec<PathBuf>,
    /// A multi-platform build: the base index the first platform pinned ([`Session::base_index`]).
    pub base_index: Option<crate::digest::Digest>,
}

impl InputOptions {
    /// The lock policy these options ask for: `--frozen`, else `--locked` (also implied by
    /// `--offline`), else resolve what the lock lacks.
    pub fn policy(&self) -> LockPolicy {
        if self.frozen {
            LockPolicy::Frozen
        } else if self.locked || self.offline {
            LockPolicy::Locked
        } else {
            LockPolicy::Resolve
        }
    }

    pub(super) fn from_args(args: &BuildArgs) -> Self {
        InputOptions {
            locked: args.locked,
            frozen: args.frozen,
            offline: args.offline,
            vendor: args.vendor.clone(),
            push_only_to: args
                .push
                .as_deref()
                .filter(|_| args.push_only)
                .and_then(|p| crate::imageref::ImageRef::parse_registry(p).ok())
                .map(|r| r.registry().to_string()),
            outputs: Vec::new(),
            base_index: None,
        }
    }
}

/// Build `recipe` (loaded from `recipe_path`) into `store` through a [`Session`], writing no
/// output. `build` uses the user's store; `verify` an empty temporary one.
pub fn build_in_store(
    cli: &Cli,
    recipe_path: &Path,
    recipe: &recipe::Recipe,
    store: &Store,
    no_cache: bool,
    inputs: &InputOptions,
) -> anyhow::Result<Built> {
    let bars = cli.bars(false);
    let session = Session {
        policy: inputs.policy(),
        locked_by: if inputs.locked {
            "--locked"
        } else {
            "--offline"
        },
        offline: inputs.offline,
        epoch_override: super::env_epoch()?,
        vendor: inputs.vendor.clone(),
        push_only_to: inputs.push_only_to.clone(),
        no_cache,
        outputs: inputs.outputs.clone(),
        base_index: inputs.base_index,
        ..cli.session(store, &bars)
    };
    Ok(session.build(recipe_path, recipe)?)
}

/// What [`build_recipe`] built, and where.
pub struct Outcome {
    pub built: Built,
    pub target: Target,
    pub recipe: recipe::Recipe,
    pub referrers: super::attest::Referrers,
    /// The store built into (with the cache repository behind it, if any): what a push reads.
    pub store: Store,
    pub cache: Option<std::sync::Arc<crate::cache_repo::RepoCache>>,
}

pub fn build_recipe(
    cli: &Cli,
    args: &BuildArgs,
    key: Option<&crate::sign::PrivateKey>,
) -> anyhow::Result<Outcome> {
    let target: Target = match &args.output {
        Some(o) => o.parse()?,
        None => Target::Layout(super::default_output(&args.recipe)),
    };
    let recipe = recipe::load(&args.recipe)?
        .with_overrides(args.tag.as_deref(), args.platform.as_deref())?;
    let push_only = InputOptions::from_args(args).push_only_to;
    let (store, cache) =
        super::cache_repo::store(cli, &args.cache, push_only.as_deref(), args.offline)?;
    let built = build_in_store(
        cli,
        &args.recipe,
        &recipe,
        &store,
        args.no_cache,
        &InputOptions {
            outputs: vec![target.path().to_path_buf()],
            ..InputOptions::from_args(args)
        },
    )?;
    if args.test && !matches!(target, Target::Layout(_)) {
        anyhow::bail!("--test needs an OCI layout output (DIR or oci:DIR), not {target}");
    }
    if args.attach && args.push.is_none() && !matches!(target, Target::Layout(_)) {
        anyhow::bail!(
            "--attach needs an OCI layout output (DIR or oci:DIR) or --push, not {target}"
        );
    }
    let referrers = if args.attach {
        super::attest::attach_built(&store, &args.recipe, &recipe, &built.image, key)?
    } else {
        Vec::new()
    };
    // The layout carries the signature the push will carry (the same bytes: signing is
    // deterministic), so that `mirror` takes it along to a registry that never saw the push.
    let mut in_layout = referrers.clone();
    if let (Some(k), Some(dest), Target::Layout(_)) = (key, &args.push, &target) {
        let identity = super::sign::identity_of(&crate::imageref::ImageRef::parse_registry(dest)?);
        let digest = built.image.manifest.digest;
        in_layout.push(crate::sign::layout_signature(
            &store, &identity, &digest, k,
        )?);
    }
    match &target {
        _ if args.push_only => {}
        Target::Layout(dir) => output::write_layout_with(dir, &store, &built.image, &in_layout)?,
        _ => output::write(&target, &store, &built.image)?,
    }
    Ok(Outcome {
        built,
        target,
        recipe,
        referrers,
        store,
        cache,
    })
}

pub fn run(cli: &Cli, args: &BuildArgs) -> anyhow::Result<ExitCode> {
    if args.test && args.json {
        anyhow::bail!("--test and --json together are not supported: run `ocibuild test --json` after the build");
    }
    // The destination first: a bad reference (a login pasted in it) fails before anything is
    // built.
    if let Some(dest) = &args.push {
        crate::imageref::ImageRef::parse_registry(dest)?;
    }
    let whole = recipe::load(&args.recipe)?
        .with_overrides(args.tag.as_deref(), args.platform.as_deref())?;
    if args.test {
        // A recipe's [podman] args that the test stage would refuse stop the build before it starts.
        super::test::check_recipe_podman_args(&whole, &args.test_opts)?;
    }
    if whole.is_multi_platform() {
        return super::multi::run(cli, args, &whole);
    }
    // The key first: a wrong passphrase or key type fails before anything is built.
    let key = match &args.sign_key {
        Some(p) => Some(super::sign::load_key(cli, p, &args.passphrase)?),
        None => None,
    };
    let Outcome {
        built,
        target,
        recipe,
        referrers,
        store,
        cache,
    } = build_recipe(cli, args, key.as_ref())?;
    let img = &built.image;
    // With --json, push first (no test stage then) so one document reports both.
    let mut pushed = None;
    let mut attached = None;
    let mut signature = None;
    if let (Some(dest), true) = (&args.push, args.json) {
        let target = crate::imageref::ImageRef::parse_registry(dest)?;
        let client = super::push::client(cli)?;
        let report = crate::push::push(
            &client,
            &store,
            &img.manifest,
            &target,
            &crate::progress::Silent,
        )?;
        attached = push_referrers(cli, &client, &img.manifest, &referrers, &target)?;
        if let Some(k) = &key {
            signature = Some(super::sign::sign_pushed(
                cli,
                &client,
                &target,
                &img.manifest.digest,
                k,
            )?);
        }
        pushed = Some(report);
    }
    if args.json {
        let doc = crate::outcome::BuildOutcome::Image(Box::new(crate::outcome::ImageOutcome {
            image: img.full_name(),
            // Where it went: outputs resolve against the current directory (not the recipe's,
            // as inputs do), so the path is said in full.
            output: (!args.push_only).then(|| target.absolute().to_string()),
            manifest: crate::outcome::ManifestOutcome::new(
                &built,
                referrers.iter().map(|(d, _)| d),
            ),
            push: pushed,
            referrers_push: attached,
            signature,
            cache_repo: cache.as_ref().map(|c| c.stats()),
        }));
        // Through a Value: its keys sorted, as they always were.
        let doc = serde_json::to_value(&doc)?;
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if cli.quiet {
        // Only the result, as ko prints only the reference: `NAME:TAG@sha256:…` (with
        // --push, the pushed reference instead, printed once pushed).
        if args.push.is_none() {
            println!("{}@{}", img.full_name(), img.manifest.digest);
        }
    } else {
        print_destination(&img.full_name(), args, &target);
        println!("manifest {}", img.manifest.digest);
        if let Some(i) = &built.interpreter {
            println!(
                "python {} ({}, {}, glibc {}) at {}; packages go to {}",
                i.version,
                i.abi(),
                i.machine,
                i.glibc
                    .map(|(a, b)| format!("{a}.{b}"))
                    .unwrap_or_else(|| "none".into()),
                i.executable,
                i.scheme.purelib
            );
        }
        if let Some(r) = &built.rootfs {
            report_rootfs(r);
        }
        report_host_provides(&built.host_provides, &built.warnings);
        if !cli.quiet {
            report_wheels(&built.wheels);
            for (l, (name, cached)) in img.layers.iter().zip(&built.cached) {
                println!(
                    "  layer {name}: {} ({} bytes{})",
                    l.descriptor.digest,
                    l.descriptor.size,
                    if *cached { ", cached" } else { "" }
                );
            }
        }
    }
    if args.test {
        if let Target::Layout(dir) = &target {
            let opts = super::test::TestOptions {
                show_commands: cli.verbose,
                ..args.test_opts.clone()
            };
            let code = super::test::run_stage(&recipe, dir, &opts, false, cli.quiet)?;
            if code != ExitCode::SUCCESS {
                return Ok(code);
            }
        }
    }
    if let (Some(dest), false) = (&args.push, args.json) {
        super::push::push_and_report(cli, &store, &img.manifest, dest, false)?;
        if let Some(r) = push_referrers(
            cli,
            &super::push::client(cli)?,
            &img.manifest,
            &referrers,
            &crate::imageref::ImageRef::parse_registry(dest)?,
        )? {
            for p in &r.pushed {
                println!("attached {p}");
            }
            println!("referrers tag {} ({})", r.fallback_tag, r.fallback_digest);
        }
        if let Some(k) = &key {
            let report = super::sign::sign_pushed(
                cli,
                &super::push::client(cli)?,
                &crate::imageref::ImageRef::parse_registry(dest)?,
                &img.manifest.digest,
                k,
            )?;
            super::sign::print_signed(cli, &report);
        }
    }
    if let (Some(c), false) = (&cache, args.json) {
        super::cache_repo::report(cli, &c.stats());
    }
    Ok(ExitCode::SUCCESS)
}

/// `[apt] host-provides` (stdout): each name with the packages whose dependency it satisfied;
/// the warnings (stderr).
pub(super) fn report_host_provides(host: &[crate::lock::LockedHostProvides], warnings: &[String]) {
    for h in host {
        if h.satisfies.is_empty() {
            continue;
        }
        let mut by: Vec<&str> = h
            .satisfies
            .iter()
            .map(|s| s.split_once(':').map_or(s.as_str(), |(p, _)| p))
            .collect();
        by.dedup();
        println!(
            "host provides {} at run time (not in the image), for {}",
            h.name,
            by.join(", ")
        );
    }
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

/// What the `rootfs` layer holds and which maintainer scripts were not run (stdout); a needed
/// `ld.so.cache` as a warning (stderr).
fn report_rootfs(r: &crate::rootfs::Report) {
    let mut parts = Vec::new();
    if r.baseline {
        parts.push("the Debian baseline directories".to_string());
    }
    if let Some(a) = &r.accounts {
        parts.push(format!(
            "{} users, {} groups",
            a.users.len(),
            a.groups.len()
        ));
    }
    if !r.alternatives.is_empty() {
        let names: Vec<String> = r
            .alternatives
            .iter()
            .map(|a| format!("{} -> {}", a.link, a.path))
            .collect();
        parts.push(format!("alternatives {}", names.join(", ")));
    }
    if !parts.is_empty() {
        println!("rootfs: {}", parts.join("; "));
    }
    if !r.scripts_not_run.is_empty() {
        let c = &r.script_effects;
        println!(
            "maintainer scripts (none run): {} packages; {} effects emulated, {} not needed in an image, {} not done (build --json: rootfs.scriptsNotRun)",
            c.packages, c.emulated, c.not_needed, c.not_done
        );
        for line in not_done_lines(r) {
            println!("  not done: {line}");
        }
    }
    if r.ld_so_cache.needed {
        eprintln!("warning: /etc/ld.so.cache {}", r.ld_so_cache.reason);
    }
}

/// One line per package and action not done: `package: action → consequence` (the
/// consequence up to its first `; `, a trigger's "activated by …" left out; unrecognized lines
/// counted).
fn not_done_lines(r: &crate::rootfs::Report) -> Vec<String> {
    use crate::rootfs::effects::Outcome;
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for s in &r.scripts_not_run {
        for e in s.effects.iter().filter(|e| e.outcome == Outcome::NotDone) {
            if !seen.insert((s.package.as_str(), e.action.as_str())) {
                continue;
            }
            let detail = match e.detail.strip_prefix("activated by") {
                Some(rest) => rest.split_once(": ").map_or(rest, |(_, d)| d),
                None => e.detail.as_str(),
            };
            let short = detail.split("; ").next().unwrap_or(detail);
            if e.action == "unrecognized" {
                let n: usize = s
                    .effects
                    .iter()
                    .filter(|x| x.action == e.action && x.outcome == Outcome::NotDone)
                    .map(|x| x.lines.len())
                    .sum();
                out.push(format!(
                    "{}: {n} unrecognized script line(s) → not run",
                    s.package
                ));
            } else {
                out.push(format!("{}: {} → {short}", s.package, e.action));
            }
        }
    }
    out
}

/// Notes on stderr: files several wheels share or that `overlap = "last"` settled, and the
/// shared libraries that the base and a wheel both ship.
fn report_wheels(r: &crate::system::wheelset::WheelReport) {
    if !r.shared.is_empty() {
        let wheels: std::collections::BTreeSet<&String> = r.shared.values().flatten().collect();
        eprintln!(
            "note: {} path(s) installed with the same content by several wheels ({}): kept once \
             per layer",
            r.shared.len(),
            wheels.into_iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    for (path, (winner, others)) in &r.replaced {
        eprintln!(
            "note: {path}: installed from {winner} (overlap = \"last\"), left out of {}",
            others.join(", ")
        );
    }
    let dups = r.duplicate_libraries.as_deref().unwrap_or_default();
    let wasted: u64 = dups.iter().map(|d| d.wheel_size).sum();
    for d in dups {
        eprintln!(
            "note: {} is in the {} at {} and installed again by wheel {} at {} ({} bytes twice)",
            d.soname,
            if d.origin == "apt" {
                "apt layer"
            } else {
                "base"
            },
            d.base_path,
            d.wheel,
            d.wheel_path,
            d.wheel_size
        );
    }
    if dups.len() > 1 {
        eprintln!(
            "note: {} shared libraries of the base or the apt layer are shipped again by wheels: \
             {wasted} bytes",
            dups.len()
        );
    }
}

/// The build's first line: where `name` went (the output in full, or that there is none).
pub(super) fn print_destination(name: &str, args: &BuildArgs, target: &Target) {
    if args.push_only {
        println!("{name} (no local output: --push-only)");
    } else {
        println!("{name} -> {}", target.absolute());
    }
}

/// With --attach: push the SBOM and provenance artifacts after the image, and the referrers tag.
pub(super) fn push_referrers(
    cli: &Cli,
    client: &crate::registry::Client,
    manifest: &crate::image::Descriptor,
    referrers: &super::attest::Referrers,
    target: &crate::registry::Reference,
) -> anyhow::Result<Option<crate::push::ReferrersReport>> {
    if referrers.is_empty() {
        return Ok(None);
    }
    let descriptors: Vec<_> = referrers.iter().map(|(d, _)| d.clone()).collect();
    Ok(Some(crate::push::push_referrers(
        client,
        &cli.store()?,
        &manifest.digest,
        &descriptors,
        target,
    )?))
}
