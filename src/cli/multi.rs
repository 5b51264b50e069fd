//! `build` of a multi-platform recipe (`[image] platforms`): each platform built as the recipe
//! for it alone ([`Recipe::for_platform`], its own section of the lock), natively (nothing
//! runs at build time, so nothing is emulated), then one OCI image index of their manifests,
//! written to the layout under the tag and pushed as an index.

use std::process::ExitCode;

use super::build::{build_in_store, BuildArgs, InputOptions};
use super::Cli;
use crate::image::{IndexRecord, Platform};
use crate::output::{self, Target};
use crate::recipe::Recipe;

pub fn run(cli: &Cli, args: &BuildArgs, recipe: &Recipe) -> anyhow::Result<ExitCode> {
    if args.attach || args.sign_key.is_some() {
        anyhow::bail!(
            "--attach and --sign-key are not yet supported for a multi-platform recipe \
             ([image] platforms): build one platform with --platform, or leave them out"
        );
    }
    if args.test && args.json {
        anyhow::bail!("--test and --json together are not supported: run `ocibuild test --json` after the build");
    }
    let target: Target = match &args.output {
        Some(o) => o.parse()?,
        None => Target::Layout(super::default_output(&args.recipe)),
    };
    if !args.push_only && !matches!(target, Target::Layout(_)) {
        anyhow::bail!(
            "a multi-platform image is an index: write it to an OCI layout (DIR or oci:DIR) or \
             push it, not to {target}"
        );
    }
    let store = cli.store()?;
    let mut images = Vec::new();
    for p in recipe.platforms() {
        let rp = recipe.for_platform(&p)?;
        let built = build_in_store(
            cli,
            &args.recipe,
            &rp,
            &store,
            args.no_cache,
            &InputOptions {
                outputs: vec![target.path().to_path_buf()],
                ..InputOptions::from_args(args)
            },
        )
        .map_err(|e| e.context(format!("platform {p}")))?;
        images.push(built.image);
    }
    let index = IndexRecord::new(&store, images)?;
    if let (Target::Layout(dir), false) = (&target, args.push_only) {
        output::write_layout_with(dir, &store, &index, &[])?;
    }
    if args.json {
        // Printed once pushed (below).
    } else if cli.quiet {
        if args.push.is_none() {
            println!("{}@{}", index.full_name(), index.index.digest);
        }
    } else {
        super::build::print_destination(&index.full_name(), args, &target);
        println!("index {}", index.index.digest);
        for i in &index.images {
            let platform = i.manifest.platform.as_ref().map(|p| p.to_string());
            println!(
                "  {}: manifest {}",
                platform.unwrap_or_default(),
                i.manifest.digest
            );
        }
    }
    if let (true, Target::Layout(dir)) = (args.test, &target) {
        let host = host_platform(recipe, cli.quiet)?;
        let code = super::test::run_stage(
            &recipe.for_platform(&host)?,
            dir,
            &args.test_opts,
            false,
            cli.quiet,
        )?;
        if code != ExitCode::SUCCESS {
            return Ok(code);
        }
    }
    let mut pushed = None;
    if let Some(dest) = &args.push {
        let reference = super::push::destination_ref(dest)?;
        let client = super::push::client(cli)?;
        let bars = cli.bars(args.json);
        let mut uploaded = 0;
        let (_, name) =
            super::push::push_index_to(&client, &store, &index.index, &reference, &bars, |r| {
                uploaded += r.uploaded_bytes
            })?;
        if args.json {
            pushed = Some(serde_json::json!({"pushed": name, "uploadedBytes": uploaded}));
        } else if cli.quiet {
            println!("{name}");
        } else {
            println!("pushed {name} ({uploaded} bytes uploaded)");
        }
    }
    if args.json {
        let manifests: Vec<serde_json::Value> = index
            .images
            .iter()
            .map(|i| {
                serde_json::json!({
                    "platform": i.manifest.platform.as_ref().map(|p| p.to_string()),
                    "manifest": i.manifest.digest,
                    "manifestSize": i.manifest.size,
                    "config": i.config.digest,
                    "layers": i.layers.iter().map(|l| serde_json::json!({
                        "name": l.descriptor.annotations.get(crate::image::annotations::LAYER_NAME),
                        "mediaType": l.descriptor.media_type,
                        "digest": l.descriptor.digest,
                        "size": l.descriptor.size,
                        "diffId": l.diff_id,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let doc = serde_json::json!({
            "image": index.full_name(),
            "output": (!args.push_only).then(|| target.absolute().to_string()),
            "index": index.index.digest,
            "indexSize": index.index.size,
            "manifests": manifests,
            "push": pushed,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// The host's platform, which a test stage runs, when the recipe builds it; the others are
/// said to be skipped (on stderr with `-q`). An error when the host's is not among them.
pub fn host_platform(recipe: &Recipe, quiet: bool) -> anyhow::Result<Platform> {
    let host = Platform::host();
    for p in recipe.platforms().iter().filter(|p| **p != host) {
        let line =
            format!("skipped: {p} is not this host's platform ({host}); nothing is emulated");
        if quiet {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    if !recipe.platforms().contains(&host) {
        anyhow::bail!(
            "none of the recipe's platforms is this host's ({host}): nothing to test without emulation"
        );
    }
    Ok(host)
}
