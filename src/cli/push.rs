//! `ocibuild push LAYOUT[:TAG] REF`, and `build --push REF`.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::image::Descriptor;
use crate::output::Layout;
use crate::push::{self, PushReport};
use crate::registry::{Client, Reference};
use crate::store::Store;

#[derive(Args, Debug)]
pub struct PushArgs {
    /// The image to push: an OCI layout `DIR[:TAG]` (or `oci:DIR[:TAG]`); TAG may be left out
    /// when the layout holds one image.
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

pub fn client(cli: &Cli) -> anyhow::Result<Client> {
    Ok(crate::session::registry_client(
        cli.registries.as_deref(),
        false,
        cli.tls_verify,
    )?)
}

/// Push and print the outcome.
pub fn push_and_report(
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
                println!("  blob {} ({} bytes): {}", b.digest, b.size, b.result);
            }
        }
        if cli.quiet {
            // Only the result: the reference pushed, with its digest.
            println!("{}", report.pushed);
        } else {
            println!(
                "pushed {} ({} bytes uploaded)",
                report.pushed, report.uploaded_bytes
            );
        }
    }
    Ok(report)
}

pub fn run(cli: &Cli, args: &PushArgs) -> anyhow::Result<ExitCode> {
    let (dir, tag) = crate::imageref::ImageRef::parse_layout(&args.source)?;
    let manifest = find_manifest(&dir, tag.as_deref())?;
    if manifest.media_type == crate::image::MEDIA_TYPE_INDEX {
        return push_index(
            cli,
            &Store::view(&dir),
            &manifest,
            &args.destination,
            args.json,
        );
    }
    push_and_report(
        cli,
        &Store::view(&dir),
        &manifest,
        &args.destination,
        args.json,
    )?;
    Ok(ExitCode::SUCCESS)
}

/// A multi-platform image: each platform's manifest (with its blobs) by digest, then the index
/// under the destination's tag (`latest` when it names none), or by digest when it names one
/// (which must be the index's). Each manifest's report goes to `each`. Returns the index's
/// digest and `registry/repository[:tag]@digest`.
pub fn push_index_to(
    client: &Client,
    blobs: &Store,
    index: &Descriptor,
    target: &Reference,
    bars: &dyn crate::progress::Reporter,
    mut each: impl FnMut(&PushReport),
) -> anyhow::Result<(crate::digest::Digest, String)> {
    if let Some(named) = target.digest().filter(|d| *d != index.digest) {
        return Err(push::PushError::DigestMismatch {
            target: target.to_string(),
            named,
            manifest: index.digest,
        }
        .into());
    }
    let bytes = blobs.read_blob(&index.digest)?;
    let ix: crate::image::Index = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("image index {}: {e}", index.digest))?;
    for m in &ix.manifests {
        // By digest alone: the tag names only the index, never one platform's manifest.
        let r = push::push(client, blobs, m, &target.by_digest(m.digest), bars)?;
        each(&r);
    }
    let (reference, shown) = match (target.tag(), target.digest()) {
        (_, Some(d)) => (d.to_string(), format!("@{d}")),
        (Some(t), None) => (t.to_string(), format!(":{t}")),
        (None, None) => ("latest".to_string(), ":latest".to_string()),
    };
    let pushed =
        client.push_manifest(target, &reference, &bytes, crate::image::MEDIA_TYPE_INDEX)?;
    let name = if target.digest().is_some() {
        format!("{}/{}{shown}", target.registry(), target.repository())
    } else {
        format!(
            "{}/{}{shown}@{pushed}",
            target.registry(),
            target.repository()
        )
    };
    Ok((pushed, name))
}

/// `push` of a layout's multi-platform image, printed.
pub fn push_index(
    cli: &Cli,
    blobs: &Store,
    index: &Descriptor,
    destination: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let target = crate::imageref::ImageRef::parse_registry(destination)?;
    let client = client(cli)?;
    let bars = cli.bars(json);
    let mut reports = Vec::new();
    let (pushed, name) = push_index_to(&client, blobs, index, &target, &bars, |r| {
        reports.push(r.clone())
    })?;
    let uploaded: u64 = reports.iter().map(|r| r.uploaded_bytes).sum();
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "pushed": name,
                "digest": pushed,
                "manifests": reports,
                "uploadedBytes": uploaded,
            }))?
        );
    } else if cli.quiet {
        println!("{name}");
    } else {
        for r in &reports {
            println!("  manifest {}", r.pushed);
        }
        println!("pushed {name} ({uploaded} bytes uploaded)");
    }
    Ok(ExitCode::SUCCESS)
}
