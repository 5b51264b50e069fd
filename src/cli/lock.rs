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
) -> anyhow::Result<Option<(BaseImage, LockChange)>> {
    let Base::Image { reference } = &recipe.base else {
        return Ok(None);
    };
    let lock_path = Lock::path_for(recipe_path);
    let mut lock = Lock::load(&lock_path)?.unwrap_or_else(Lock::new);
    let config = settings::load(settings::locate(cli.registries.as_deref()).as_deref())?;
    let client = Client::new(config);
    let (image, change) = base::resolve(
        reference,
        &recipe.image.platform,
        &mut lock,
        pin,
        &client,
        store,
    )?;
    if change != LockChange::Unchanged {
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
    match resolve_base(cli, &recipe, &args.recipe, pin, &store)? {
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
