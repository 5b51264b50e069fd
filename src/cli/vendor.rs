//! `ocibuild vendor`: copy recipes' locked inputs into a vendor directory, merge two vendor
//! directories, or check one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::airgap::{self, Online, Stats, VendorDir};
use crate::bounded::human_bytes;
use crate::recipe::{self, PythonSource};

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["recipes", "merge", "check"])))]
pub(super) struct VendorArgs {
    /// Recipes whose locked inputs (base image blobs, .debs, interpreter archive, wheels) are
    /// copied into the vendor directory; each lock must match its recipe.
    #[arg(value_name = "RECIPE")]
    pub recipes: Vec<PathBuf>,
    /// The vendor directory to fill (created when missing; existing entries are kept).
    #[arg(long, value_name = "DIR", required_unless_present = "check")]
    pub into: Option<PathBuf>,
    /// Merge these vendor directories into --into DIR (every blob verified on the way).
    #[arg(long, value_name = "SRC", conflicts_with_all = ["recipes", "check"])]
    pub merge: Vec<PathBuf>,
    /// Check a vendor directory: re-hash every blob, check every index entry resolves.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["recipes", "into"])]
    pub check: Option<PathBuf>,
    /// Print what was done as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Vendor `recipe_path`'s locked inputs into `dir`.
fn vendor_recipe(
    cli: &Cli,
    dir: &mut VendorDir,
    recipe_path: &Path,
    client: &crate::registry::Client,
    bars: &super::progress::Bars,
    stats: &mut Stats,
) -> anyhow::Result<()> {
    let recipe = recipe::load(recipe_path)?;
    let fetcher = crate::session::fetcher(&recipe, false)?.with_reporter(bars);
    let online = Online {
        client,
        fetcher: &fetcher,
        reporter: bars,
    };
    // Each platform's section of the lock, checked against the recipe for that platform.
    for p in recipe.platforms() {
        let rp = recipe.for_platform(&p)?;
        let lock = crate::session::load_checked_lock(&rp, recipe_path, "vendor").map_err(|e| {
            let e = anyhow::Error::from(e);
            if recipe.is_multi_platform() {
                e.context(format!("platform {p}"))
            } else {
                e
            }
        })?;
        let archive_url = match rp.python.as_ref().map(|p| &p.source) {
            Some(PythonSource::Archive(a))
                if lock.python.as_ref().map(|p| &p.url) == Some(&a.written) =>
            {
                Some(a.url.as_str())
            }
            _ => None,
        };
        let inputs = airgap::inputs(&lock, archive_url);
        airgap::vendor(dir, &inputs, &cli.store()?, &online, stats)?;
    }
    Ok(())
}

pub(super) fn run(cli: &Cli, args: &VendorArgs) -> anyhow::Result<ExitCode> {
    if let Some(d) = &args.check {
        let dir = VendorDir::open(d, false)?;
        let report = airgap::check(&dir)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            println!(
                "vendor {}: {} entries, {} blobs ({}) verified",
                d.display(),
                report.entries,
                report.blobs,
                crate::bounded::human_bytes(report.bytes)
            );
            for f in &report.unreferenced {
                eprintln!("note: blobs/sha256/{f} is named by no entry");
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(into) = &args.into else {
        anyhow::bail!("--into DIR is required");
    };
    let mut dir = VendorDir::open(into, true)?;
    let mut stats = Stats::default();
    if args.merge.is_empty() {
        let client = cli.client(false)?;
        let bars = cli.bars(false);
        for r in &args.recipes {
            vendor_recipe(cli, &mut dir, r, &client, &bars, &mut stats)?;
        }
    } else {
        for src in &args.merge {
            let src = VendorDir::open(src, false)?;
            airgap::merge(&mut dir, &src, &mut stats)?;
        }
    }
    stats.bytes_written += dir.save()?;
    stats.entries = dir.index.entries.len();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
    } else {
        println!(
            "vendor {}: {} entries ({} new); blobs: {} copied ({}), {} linked ({}), {} already there; {} written",
            into.display(),
            stats.entries,
            stats.new_entries,
            stats.copied,
            human_bytes(stats.copied_bytes),
            stats.linked,
            human_bytes(stats.linked_bytes),
            stats.present,
            human_bytes(stats.bytes_written)
        );
        if stats.replaced > 0 {
            println!(
                "vendor {}: {} entries at a blob's name were not that blob (a symlink, other bytes): replaced",
                into.display(),
                stats.replaced
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
