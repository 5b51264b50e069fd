//! `ocibuild lock RECIPE`, and the base resolution every build does through the lock.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::base::{self, BaseImage, LockChange, Pin};
use crate::lock::Lock;
use crate::recipe::{self, Base, Recipe};
use crate::registry::{settings, Client};
use crate::store::Store;
use crate::system::{self, AptPin, System, SystemOptions};

/// The `[apt]` fetcher: https (system CA store), http, file; `offline`: file only.
pub fn fetcher(offline: bool) -> anyhow::Result<crate::apt::HttpFetcher> {
    Ok(if offline {
        crate::apt::HttpFetcher::offline()?
    } else {
        crate::apt::HttpFetcher::new()?
    })
}

/// The registry client, with the registries file's settings (mirrors); `offline`: one that
/// refuses every request.
pub fn registry_client(cli: &Cli, offline: bool) -> anyhow::Result<Client> {
    let mut config = settings::load(settings::locate(cli.registries.as_deref()).as_deref())?;
    config.offline = offline;
    Ok(Client::new(config))
}

/// How a build treats its lock and the network (`build --locked/--frozen/--offline/--vendor`).
#[derive(Clone, Copy, Debug, Default)]
pub struct LockMode {
    /// Resolve nothing the lock does not pin; never touch the network.
    pub offline: bool,
    /// Never write the lock (`--locked`, `--frozen`, `--offline`).
    pub read_only: bool,
    /// Fetch the base's manifest and config only, not its layers (`build --push-only` to the
    /// base's own registry: the push mounts them).
    pub shallow: bool,
}

/// Builds the system layers (`[apt]`, `[python]`) through the lock, saving the lock when `[apt]`
/// was resolved again.
#[allow(clippy::too_many_arguments)] // the build's context, passed through as is
pub fn prepare_system(
    cli: &Cli,
    recipe: &Recipe,
    recipe_path: &Path,
    base: Option<&BaseImage>,
    store: &Store,
    opts: &SystemOptions,
    mode: LockMode,
    reporter: &dyn crate::progress::Reporter,
) -> anyhow::Result<System> {
    if recipe.apt.is_none() && recipe.python.is_none() {
        return Ok(System::default());
    }
    let lock_path = Lock::path_for(recipe_path);
    let mut lock = Lock::load(&lock_path)?.unwrap_or_else(Lock::new);
    let sys = system::prepare(
        recipe,
        base,
        &mut lock,
        &fetcher(mode.offline)?,
        store,
        opts,
        reporter,
    )?;
    if sys.lock_changed && !mode.read_only {
        lock.save(&lock_path)?;
    }
    if let Some(n) = sys.apt_resolved {
        if !cli.quiet {
            eprintln!(
                "resolved [apt]: {n} packages to install, pinned in {}",
                lock_path.display()
            );
        }
    }
    Ok(sys)
}

#[derive(Args, Debug)]
pub struct LockArgs {
    /// The recipe whose inputs are pinned into NAME.lock beside it.
    pub recipe: PathBuf,
    /// Resolve tags again even where the lock pins them, and report what moved.
    #[arg(long)]
    pub update: bool,
}

/// Resolve the recipe's base through its lock (writing the lock when it changed) and fetch what
/// the store lacks. `None` for a scratch base.
pub fn resolve_base(
    cli: &Cli,
    recipe: &Recipe,
    recipe_path: &Path,
    pin: Pin,
    store: &Store,
    mode: LockMode,
) -> anyhow::Result<Option<(BaseImage, LockChange)>> {
    let Base::Image { reference } = &recipe.base else {
        return Ok(None);
    };
    let lock_path = Lock::path_for(recipe_path);
    let mut lock = Lock::load(&lock_path)?.unwrap_or_else(Lock::new);
    let client = registry_client(cli, mode.offline)?;
    let (image, change) = base::resolve(
        reference,
        &recipe.image.platform,
        &mut lock,
        pin,
        &client,
        store,
        !mode.shallow,
    )?;
    if change != LockChange::Unchanged && !mode.read_only {
        lock.save(&lock_path)?;
        if !cli.quiet {
            match &change {
                LockChange::Pinned { digest } => {
                    eprintln!(
                        "pinned base {} to {digest} in {}",
                        image.reference,
                        lock_path.display()
                    )
                }
                LockChange::Moved { from, to } => eprintln!(
                    "base {} moved: {from} -> {to} (updated {})",
                    image.reference,
                    lock_path.display()
                ),
                LockChange::Unchanged => {}
            }
        }
    }
    Ok(Some((image, change)))
}

pub fn run(cli: &Cli, args: &LockArgs) -> anyhow::Result<ExitCode> {
    let recipe = recipe::load(&args.recipe)?;
    let store = cli.store()?;
    let pin = if args.update {
        Pin::Update
    } else {
        Pin::Locked
    };
    let lock_path = Lock::path_for(&args.recipe);
    let base = resolve_base(cli, &recipe, &args.recipe, pin, &store, LockMode::default())?;
    if recipe.apt.is_some() || recipe.python.is_some() {
        // Everything after the base, resolved into the lock without building layers.
        let mut lock = Lock::load(&lock_path)?.unwrap_or_else(Lock::new);
        let opts = SystemOptions {
            epoch: super::build::env_epoch()?
                .or(recipe.image.source_date_epoch)
                .unwrap_or(0),
            compression: recipe.image.compression,
            threads: cli.threads(),
            no_cache: false,
            pin: if args.update {
                AptPin::Update
            } else {
                AptPin::Locked
            },
            build_layers: false,
        };
        let bars = super::progress::Bars::new(cli.quiet);
        let sys = system::prepare(
            &recipe,
            base.as_ref().map(|(b, _)| b),
            &mut lock,
            &fetcher(false)?,
            &store,
            &opts,
            &bars,
        )?;
        if sys.lock_changed {
            lock.save(&lock_path)?;
        }
        let state = |resolved: Option<usize>| {
            if resolved.is_some() {
                "resolved"
            } else {
                "unchanged"
            }
        };
        if recipe.apt.is_some() {
            println!(
                "apt {} packages ({})",
                sys.apt_packages.len(),
                state(sys.apt_resolved)
            );
        }
        if let Some(i) = &sys.interpreter {
            println!("python {} ({}) at {}", i.version, i.abi(), i.executable);
        }
        if recipe.python.as_ref().is_some_and(|p| p.packages.is_some()) {
            println!(
                "wheels {} ({})",
                sys.wheels.len(),
                state(sys.wheels_resolved)
            );
        }
    }
    match base {
        Some((image, change)) => {
            let state = match change {
                LockChange::Unchanged => "unchanged",
                LockChange::Pinned { .. } => "pinned",
                LockChange::Moved { .. } => "moved",
            };
            println!(
                "base {} {} ({state})",
                image.reference, image.manifest_digest
            );
        }
        None => {
            if Lock::load(&lock_path)?.is_none() {
                Lock::new().save(&lock_path)?;
            }
            println!("base scratch (nothing to pin)");
        }
    }
    println!("lock {}", lock_path.display());
    Ok(ExitCode::SUCCESS)
}
