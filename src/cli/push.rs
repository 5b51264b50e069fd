//! `ocibuild push SRC REF` (SRC a layout, an oci-archive or a docker-archive), and
//! `build --push REF`.

use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::push::source::Pushable;
use crate::push::{self, PushReport};
use crate::registry::Client;
use crate::store::image::{StoreImage, StoreIndex};

#[derive(Args, Debug)]
pub(super) struct PushArgs {
    /// The image to push: an OCI layout `DIR[:TAG]` (or `oci:DIR[:TAG]`; TAG may be left out
    /// when the layout holds one image), `oci-archive:FILE` or `docker-archive:FILE` (given an
    /// OCI manifest; its config and layers unchanged).
    pub source: String,
    /// Where to: `[docker://]registry/repository[:tag|@sha256:…]` (tag default: latest); a
    /// digest must be the image's own.
    pub destination: String,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn client(cli: &Cli) -> anyhow::Result<Client> {
    cli.client(false)
}

/// Push and print the outcome.
pub(super) fn push_and_report(
    cli: &Cli,
    image: &StoreImage,
    destination: &str,
    json: bool,
) -> anyhow::Result<PushReport> {
    let target = crate::imageref::ImageRef::parse_registry(destination)?;
    let bars = cli.bars(json);
    let report = push::push(&client(cli)?, image, &target, &bars)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        if !cli.quiet {
            for b in &report.blobs {
                println!(
                    "  blob {} ({}): {}",
                    b.digest,
                    crate::bounded::human_bytes(b.size),
                    b.result
                );
            }
        }
        if cli.quiet {
            // Only the result: the reference pushed, with its digest.
            println!("{}", report.pushed);
        } else {
            println!(
                "pushed {} ({} uploaded)",
                report.pushed,
                crate::bounded::human_bytes(report.uploaded_bytes)
            );
        }
    }
    Ok(report)
}

pub(super) fn run(cli: &Cli, args: &PushArgs) -> anyhow::Result<ExitCode> {
    use crate::imageref::{ImageRef, Role};
    // Both checked before anything is read.
    let source = ImageRef::parse(&args.source, Role::Push)?;
    ImageRef::parse_registry(&args.destination)?;
    // Archives are copied into a temporary store beside the content store (on its disk).
    let tmp = match &source {
        ImageRef::Layout { .. } => None,
        _ => Some(cli.store()?.tmp_dir()),
    };
    let opened = push::source::open(&source, tmp.as_deref())?;
    match &opened.pushable {
        Pushable::Index(index) => push_index(cli, index, &args.destination, args.json),
        Pushable::Image(image) => {
            push_and_report(cli, image, &args.destination, args.json)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `push` of a layout's multi-platform image, printed.
pub(super) fn push_index(
    cli: &Cli,
    index: &StoreIndex,
    destination: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let target = crate::imageref::ImageRef::parse_registry(destination)?;
    let bars = cli.bars(json);
    let r = push::push_index(&client(cli)?, index, &target, &bars)?;
    if json {
        // Through a Value: its keys sorted, as they always were.
        let doc = serde_json::to_value(&r)?;
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if cli.quiet {
        println!("{}", r.pushed);
    } else {
        for m in &r.manifests {
            println!("  manifest {}", m.pushed);
        }
        println!(
            "pushed {} ({} uploaded)",
            r.pushed,
            crate::bounded::human_bytes(r.uploaded_bytes)
        );
    }
    Ok(ExitCode::SUCCESS)
}
