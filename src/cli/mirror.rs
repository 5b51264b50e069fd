//! `ocibuild mirror`: copy base images (from recipes' locks), built images (OCI layouts) and
//! vendored images into a registry, digests unchanged.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::airgap::{self, Entry, Input, Online, VendorDir};
use crate::imageref::{ImageRef, ImageRefError, Role};
use crate::mirror::{self, Image, MirrorReport};
use crate::recipe;
use crate::store::Store;

#[derive(Args, Debug)]
pub(super) struct MirrorArgs {
    /// Images to copy: an OCI layout `DIR[:TAG]` or `oci:DIR[:TAG]` (every image, or the one
    /// tagged TAG), or `vendor:DIR` (every base image of a vendor directory).
    #[arg(value_name = "SRC")]
    pub sources: Vec<String>,
    /// Copy the base image this recipe's lock pins (fetched into the store first if needed).
    #[arg(long, value_name = "RECIPE")]
    pub recipe: Vec<PathBuf>,
    /// The registry (and optional namespace) to copy into: `REGISTRY[/PREFIX]`. An image
    /// `R/REPO:TAG` goes to `REGISTRY/PREFIX/REPO:TAG`.
    #[arg(long, value_name = "REGISTRY[/PREFIX]")]
    pub to: String,
    /// Print the reports as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn run(cli: &Cli, args: &MirrorArgs) -> anyhow::Result<ExitCode> {
    if args.sources.is_empty() && args.recipe.is_empty() {
        anyhow::bail!("nothing to mirror: give SRC (an OCI layout or vendor:DIR) or --recipe");
    }
    let client = cli.client(false)?;
    let bars = cli.bars(args.json);
    // (blobs, image) pairs, in argument order.
    let mut work: Vec<(Store, Image)> = Vec::new();
    if !args.recipe.is_empty() {
        let store = cli.store()?;
        // Only the base is mirrored: the fetcher (of archives and wheels) goes unused.
        let fetcher = crate::http::HttpFetcher::new()?.with_reporter(&bars);
        let online = Online {
            client: &client,
            fetcher: &fetcher,
            reporter: &bars,
        };
        for r in &args.recipe {
            let whole = recipe::load(r)?;
            // Each platform's base, as its section of the lock pins it.
            for p in whole.platforms() {
                let recipe = whole.for_platform(&p)?;
                let lock = crate::session::load_checked_lock(&recipe, r, "mirror")?;
                let Some(b) = lock.base else {
                    anyhow::bail!("{}: the recipe has no base image to mirror", r.display());
                };
                airgap::fetch_input(&Input::Base(b.clone()), &store, &online)
                    .map_err(|e| anyhow::Error::from(e).context(format!("platform {p}")))?;
                let img = Image::from_reference(&b.reference, b.manifest_digest, b.index_digest)?;
                // Platforms of one base index go as one image: the index and its manifests.
                let same = work
                    .iter_mut()
                    .find(|(_, i)| i.index.is_some() && i.index == img.index && i.name == img.name);
                match same {
                    Some((_, i)) => {
                        if i.manifest != img.manifest && !i.others.contains(&img.manifest) {
                            i.others.push(img.manifest);
                        }
                    }
                    None => work.push((store.clone(), img)),
                }
            }
        }
    }
    for s in &args.sources {
        match ImageRef::parse(s, Role::Mirror)? {
            ImageRef::Vendor(d) => {
                let dir = VendorDir::open(&d, false)?;
                for e in dir.index.entries.values() {
                    if let Entry::Oci {
                        reference,
                        digest,
                        index,
                        ..
                    } = e
                    {
                        work.push((
                            Store::view(&d),
                            Image::from_reference(
                                reference,
                                *digest,
                                index.as_ref().map(|i| i.digest),
                            )?,
                        ));
                    }
                }
            }
            ImageRef::Layout { dir, tag } => {
                let fallback = format!(
                    "localhost/{}",
                    dir.file_stem()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "image".into())
                );
                for img in mirror::layout_images(&dir, tag.as_deref(), &fallback)? {
                    work.push((Store::view(&dir), img));
                }
            }
            // Never parsed for mirror.
            _ => return Err(ImageRefError::unknown(s, Role::Mirror).into()),
        }
    }
    let mut reports: Vec<MirrorReport> = Vec::new();
    for (blobs, img) in &work {
        let r = mirror::mirror(&client, blobs, img, &args.to, &bars)?;
        if !args.json {
            let copied = r.blobs.iter().filter(|b| b.result == "copied").count();
            println!(
                "{} -> {}: {} blobs copied ({}), {} skipped ({}, already there){}",
                r.source,
                r.target,
                copied,
                crate::bounded::human_bytes(r.copied_bytes),
                r.blobs.len() - copied,
                crate::bounded::human_bytes(r.skipped_bytes),
                r.index
                    .as_ref()
                    .map(|i| format!("; index {i}"))
                    .unwrap_or_default()
            );
            let attached = std::iter::once((&r.signature, &r.referrers))
                .chain(r.attached.iter().map(|a| (&a.signature, &a.referrers)));
            for (signature, referrers) in attached {
                if let Some(sig) = signature {
                    println!("  signature {sig}");
                }
                if let Some(refs) = referrers {
                    for d in &refs.documents {
                        println!("  attached {} ({})", d.reference, d.describe());
                    }
                    println!(
                        "  referrers tag {} ({})",
                        refs.fallback_tag, refs.fallback_digest
                    );
                    if let Some(att) = &refs.attestation_tag {
                        println!("  attestations for cosign {att}");
                    }
                }
            }
        }
        reports.push(r);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(ExitCode::SUCCESS)
}
