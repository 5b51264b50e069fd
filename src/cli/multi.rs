//! `build` of a multi-platform recipe (`[image] platforms`): each platform built as the recipe
//! for it alone ([`Recipe::for_platform`], its own section of the lock), natively (nothing
//! runs at build time, so nothing is emulated), then one OCI image index of their manifests,
//! written to the layout under the tag and pushed as an index.

use std::process::ExitCode;

use super::build::{build_in_store, BuildArgs, InputOptions};
use super::Cli;
use crate::digest::Digest;
use crate::image::{IndexRecord, Platform};
use crate::outcome::{BuildOutcome, IndexOutcome, IndexPush, ManifestOutcome, PlatformManifest};
use crate::output::{self, Target};
use crate::recipe::Recipe;

pub fn run(cli: &Cli, args: &BuildArgs, recipe: &Recipe) -> anyhow::Result<ExitCode> {
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
    // The key first: a wrong passphrase or key type fails before anything is built.
    let key = match &args.sign_key {
        Some(p) => Some(super::sign::load_key(cli, p, &args.passphrase)?),
        None => None,
    };
    let push_only = InputOptions::from_args(args).push_only_to;
    let (store, cache) =
        super::cache_repo::store(cli, &args.cache, push_only.as_deref(), args.offline)?;
    let mut images = Vec::new();
    // Each platform's manifest as `--json` reports it.
    let mut manifests = Vec::new();
    // Each platform's SBOMs and provenance (signed with the key), about its own manifest.
    let mut referrers = Vec::new();
    // The base index a platform's section already pins: a platform not pinned yet takes its
    // manifest from the same index.
    let mut base_index =
        crate::session::Session::base_index_of(recipe, &args.recipe, &recipe.platforms())?;
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
                base_index,
                ..InputOptions::from_args(args)
            },
        )
        .map_err(|e| e.context(format!("platform {p}")))?;
        // The other platforms' base tag through the index this one pinned.
        if base_index.is_none() {
            base_index = crate::session::Session::base_index_of(
                recipe,
                &args.recipe,
                std::slice::from_ref(&p),
            )?;
        }
        if args.attach {
            let attached =
                super::attest::attach_built(&store, &args.recipe, &rp, &built.image, key.as_ref())
                    .map_err(|e| e.context(format!("platform {p}")))?;
            referrers.push(attached);
        } else {
            referrers.push(Vec::new());
        }
        let refs = referrers.last().into_iter().flatten().map(|(d, _)| d);
        manifests.push(PlatformManifest {
            platform: built
                .image
                .manifest
                .platform
                .as_ref()
                .map(|p| p.to_string()),
            manifest: ManifestOutcome::new(&built, refs),
        });
        images.push(built.image);
    }
    let index = IndexRecord::new(&store, images)?;
    // The signed digests: the index (what a pull by tag checks) and each platform's manifest
    // (what a pull by that digest checks), as `cosign sign --recursive` does.
    let signed: Vec<Digest> = std::iter::once(index.index.digest)
        .chain(index.images.iter().map(|i| i.manifest.digest))
        .collect();
    if let (Target::Layout(dir), false) = (&target, args.push_only) {
        let mut in_layout: Vec<_> = referrers.iter().flatten().cloned().collect();
        // The signatures the push will carry (the same bytes), for `mirror` to take along.
        if let (Some(k), Some(dest)) = (&key, &args.push) {
            let identity =
                super::sign::identity_of(&crate::imageref::ImageRef::parse_registry(dest)?);
            for d in &signed {
                in_layout.push(crate::sign::layout_signature(&store, &identity, d, k)?);
            }
        }
        output::write_layout_with(dir, &store, &index, &in_layout)?;
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
        let opts = super::test::TestOptions {
            show_commands: cli.verbose,
            ..args.test_opts.clone()
        };
        let code =
            super::test::run_stage(&recipe.for_platform(&host)?, dir, &opts, false, cli.quiet)?;
        if code != ExitCode::SUCCESS {
            return Ok(code);
        }
    }
    let mut pushed = None;
    let (mut attached, mut signatures) = (Vec::new(), Vec::new());
    if let Some(dest) = &args.push {
        let reference = crate::imageref::ImageRef::parse_registry(dest)?;
        let client = super::push::client(cli)?;
        let bars = cli.bars(args.json);
        let mut uploaded = 0;
        let (_, name) =
            super::push::push_index_to(&client, &store, &index.index, &reference, &bars, |r| {
                uploaded += r.uploaded_bytes
            })?;
        if args.json {
            pushed = Some(IndexPush {
                pushed: name,
                uploaded_bytes: uploaded,
            });
        } else if cli.quiet {
            println!("{name}");
        } else {
            println!("pushed {name} ({uploaded} bytes uploaded)");
        }
        for (image, refs) in index.images.iter().zip(&referrers) {
            let Some(r) =
                super::build::push_referrers(cli, &client, &image.manifest, refs, &reference)?
            else {
                continue;
            };
            if args.json {
                attached.push(r);
            } else if !cli.quiet {
                for p in &r.pushed {
                    println!("attached {p}");
                }
                println!("referrers tag {} ({})", r.fallback_tag, r.fallback_digest);
            }
        }
        if let Some(k) = &key {
            for d in &signed {
                let report = super::sign::sign_pushed(cli, &client, &reference, d, k)?;
                if args.json {
                    signatures.push(report);
                } else {
                    super::sign::print_signed(cli, &report);
                }
            }
        }
    }
    if args.json {
        let doc = BuildOutcome::Index(Box::new(IndexOutcome {
            image: index.full_name(),
            output: (!args.push_only).then(|| target.absolute().to_string()),
            index: index.index.digest,
            index_size: index.index.size,
            manifests,
            push: pushed,
            referrers_push: attached,
            signatures,
            cache_repo: cache.as_ref().map(|c| c.stats()),
        }));
        // Through a Value: its keys sorted, as they always were.
        let doc = serde_json::to_value(&doc)?;
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if let Some(c) = &cache {
        super::cache_repo::report(cli, &c.stats());
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
