//! `ocibuild lock RECIPE`: the session pins; this prints what it pinned.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::base::LockChange;
use crate::lock::LockPolicy;
use crate::ops;
use crate::recipe;
use crate::session::{Locked, Session};

#[derive(Args, Debug)]
pub(super) struct LockArgs {
    /// The recipe whose inputs are pinned into NAME.lock beside it.
    pub recipe: PathBuf,
    /// Resolve again even what the lock pins, and report what moved: everything (`--update`,
    /// `--update all`), or only the base image's tag (`--update base`: a rebase; the next
    /// build reuses every layer whose inputs did not change).
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "all", value_name = "WHAT")]
    pub update: Option<Update>,
    /// Accept an `[apt]` resolution that lowers the version of a package the lock pins
    /// (refused otherwise, and each such package named: an archive that went back, a stale
    /// mirror or an old Release served again, does that).
    #[arg(long)]
    pub allow_downgrade: bool,
    #[command(flatten)]
    pub recipe_args: super::recipe_args::RecipeArgs,
}

/// What `lock --update` resolves again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Update {
    /// The base's tag, the `[apt]` packages and the wheels.
    All,
    /// The base's tag only.
    Base,
}

pub(super) fn run(cli: &Cli, args: &LockArgs) -> anyhow::Result<ExitCode> {
    let recipe = args.recipe_args.load(&args.recipe)?;
    let store = cli.store()?;
    let bars = cli.bars(false);
    let client = super::push::client(cli)?;
    let mut session = Session {
        policy: match args.update {
            Some(Update::All) => LockPolicy::Update,
            Some(Update::Base) => LockPolicy::UpdateBase,
            None => LockPolicy::Resolve,
        },
        allow_downgrade: args.allow_downgrade,
        // Read only where a layer key needs it, as before: a lock of a bare base never fails
        // on a malformed SOURCE_DATE_EPOCH.
        epoch_override: if recipe.apt.is_some() || recipe.python.is_some() {
            super::env_epoch()?
        } else {
            None
        },
        ..cli.session(&store, &client, &bars)
    };
    let multi = recipe.is_multi_platform();
    // A multi-platform recipe: each platform's section in turn, its base tag through the index
    // a section already pins (unless the tag is to be resolved again).
    let base_index = match args.update {
        Some(_) => ops::BaseIndex::Fresh,
        None => ops::BaseIndex::Shared,
    };
    // Sections of platforms the recipe no longer builds go, in memory: the loop writes the
    // lock once.
    let removed = multi
        && session.retain_lock_platforms(
            &args.recipe,
            &recipe
                .platforms()
                .iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>(),
        )?;
    let paths = ops::for_each(
        &mut session,
        &args.recipe,
        &recipe,
        base_index,
        |s, p, rp| {
            if multi {
                println!("platform {p}");
            }
            let locked = s.lock(rp, &args.recipe)?;
            Ok(report(rp, locked))
        },
    )?;
    let lock_path = paths.last().cloned();
    if let Some(path) = lock_path {
        if removed {
            println!("removed the sections of platforms the recipe no longer builds");
        }
        println!("lock {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints what was pinned; returns the lock's path.
fn report(recipe: &recipe::Recipe, locked: Locked) -> PathBuf {
    let Locked {
        base,
        system,
        lock_path,
    } = locked;
    if let Some(sys) = &system {
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
        super::render::host_provides(
            sys.host_provides
                .iter()
                .map(|h| (h.name.as_str(), &h.satisfies[..])),
            &sys.warnings,
        );
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
        None => println!("base scratch (nothing to pin)"),
    }
    lock_path
}
