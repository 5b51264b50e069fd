//! `ocibuild push SRC REF` (SRC a layout, an oci-archive or a docker-archive), and
//! `build --push REF`.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::image::Descriptor;
use crate::output::Layout;
use crate::push::{self, PushReport};
use crate::registry::Client;
use crate::store::Store;

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

fn find_manifest(dir: &Path, tag: Option<&str>) -> anyhow::Result<Descriptor> {
    let layout = Layout::open(dir)?;
    Ok(layout.descriptor(layout.image(tag)?)?)
}

pub(super) fn client(cli: &Cli) -> anyhow::Result<Client> {
    cli.client(false)
}

/// Push and print the outcome.
pub(super) fn push_and_report(
    cli: &Cli,
    blobs: &Store,
    manifest: &Descriptor,
    destination: &str,
    json: bool,
) -> anyhow::Result<PushReport> {
    let target = crate::imageref::ImageRef::parse_registry(destination)?;
    let bars = cli.bars(json);
    let report = push::push(&client(cli)?, blobs, manifest, &target, &bars)?;
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
    let imported;
    let (blobs, manifest) = match &source {
        ImageRef::Layout { dir, tag } => (Store::view(dir), find_manifest(dir, tag.as_deref())?),
        archive => {
            // Copied into a temporary store beside the content store (on its disk).
            let tmp = cli.store()?.tmp_dir();
            imported = crate::audit::import::import_archive(archive, Some(&tmp))?;
            (Store::view(imported.store.root()), imported.image.clone())
        }
    };
    if manifest.media_type == crate::image::MEDIA_TYPE_INDEX {
        return push_index(cli, &blobs, &manifest, &args.destination, args.json);
    }
    push_and_report(cli, &blobs, &manifest, &args.destination, args.json)?;
    Ok(ExitCode::SUCCESS)
}

/// `push` of a layout's multi-platform image, printed.
pub(super) fn push_index(
    cli: &Cli,
    blobs: &Store,
    index: &Descriptor,
    destination: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let target = crate::imageref::ImageRef::parse_registry(destination)?;
    let bars = cli.bars(json);
    let r = push::push_index(&client(cli)?, blobs, index, &target, &bars)?;
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
