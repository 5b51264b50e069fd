//! `ocibuild cache verify` and `ocibuild cache prune`: keeping the store sound.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::Cli;
use crate::store;

#[derive(Args, Debug)]
pub(super) struct CacheArgs {
    #[command(subcommand)]
    pub action: CacheAction,
    /// Print the result as JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub(super) enum CacheAction {
    /// Rehash every blob in the store; remove those whose bytes changed (they are built or
    /// fetched again when next needed). Exit 1 if any had changed.
    Verify,
    /// Remove what no build can use: temporary files left by killed builds, cache entries that
    /// name a missing blob, seals without a blob; and forget what cache repositories were
    /// seen to have (the next build asks them again). Refused while a build uses the store.
    /// Only what the store made is removed; a directory that is not a store is refused.
    Prune,
}

pub(super) fn run(cli: &Cli, args: &CacheArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        CacheAction::Verify => {
            let store = cli.store()?;
            let bars = cli.bars(args.json);
            let report = store::verify(&store, &bars)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                for d in &report.changed {
                    println!("changed: {d} (removed)");
                }
                for f in &report.foreign {
                    println!("not a blob: {f} (left alone)");
                }
                println!(
                    "{} blobs ({}) checked in {}: {} changed, {} dangling cache entries removed",
                    report.blobs,
                    crate::bounded::human_bytes(report.bytes),
                    store.root().display(),
                    report.changed.len(),
                    report.dangling_entries
                );
            }
            Ok(if report.changed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        CacheAction::Prune => {
            let root = cli.store_root()?;
            let report = store::prune(&root)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                for f in &report.foreign_temporary {
                    println!("not the store's: tmp/{f} (left alone)");
                }
                println!(
                    "pruned {}: {} temporary entries ({}), {} dangling cache entries, {} stray seals, {} cache repository marks",
                    root.display(),
                    report.temporary,
                    crate::bounded::human_bytes(report.temporary_bytes),
                    report.dangling_entries,
                    report.seals,
                    report.shared_marks
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
