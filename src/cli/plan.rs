//! `ocibuild plan RECIPE [--against REF]`: what a build and a push would do, layer by layer,
//! before the push: each layer new, cached locally or in the cache repository, and with
//! `--against` whether the registry has it, with the bytes the push will upload.

use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::Cli;
use crate::image::annotations;
use crate::lock::LockPolicy;
use crate::ops;
use crate::session::Session;
use crate::store::image::StoreImage;

pub(super) const AFTER_HELP: &str = "\
The plan builds nothing a cache has: a layer the store or the cache repository has is taken as
it is (its blob left in the repository), the base's layers stay in the registry when their
facts are cached. A layer no cache has is built into the store (that is how its digest and size
are known; the build that follows reuses it). Nothing is written to an output, nothing is
pushed, nothing is written to the cache repository (the report says what the build will write
there, and a push to that registry mounts it from there; one upload session is opened there and
cancelled, to know the writes would be accepted), the lock is read (--locked) and never
written. With --against, the registry is asked
(HEAD requests) which blobs it has, which it can mount from the base's or the cache's
repository, and which the push will upload: the bytes a push then uploads are those printed.
It also opens an upload session in the destination's repository and cancels it (some
registries keep an empty session until they purge it): when these credentials may not push
there, the plan says why after the layers and exits 1.

Examples:
  ocibuild plan app.toml --cache-repo registry.example/team/cache
  ocibuild plan app.toml --against registry.example/team/app:1.1 --json";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(super) struct PlanArgs {
    /// The recipe; its lock must answer it (`ocibuild lock` first).
    pub recipe: std::path::PathBuf,
    /// The push destination to compare with (REGISTRY/REPO[:TAG]): what it has, what a push
    /// would mount or upload, and which layers differ from the image under that tag.
    #[arg(long, value_name = "REF")]
    pub against: Option<String>,
    /// The platform (one of a multi-platform recipe's).
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub cache: super::cache_repo::CacheRepoArgs,
    #[command(flatten)]
    pub recipe_args: super::recipe_args::RecipeArgs,
}

pub(super) fn run(cli: &Cli, args: &PlanArgs) -> anyhow::Result<ExitCode> {
    let whole = args
        .recipe_args
        .load(&args.recipe)?
        .with_overrides(None, args.platform.as_deref())?;
    if whole.platforms().len() > 1 {
        anyhow::bail!(
            "{} builds several platforms: plan one with --platform",
            args.recipe.display()
        );
    }
    // Never downloads a layer a cache has (only the push needs it), and writes nothing to the
    // cache repository: it counts what the build will write there (and the push then mounts
    // from there).
    let client = std::sync::Arc::new(super::push::client(cli)?);
    let (store, cache) = super::cache_repo::open(cli, &args.cache, &client, |_| true, true)?;
    let bars = cli.bars(args.json);
    let mut session = Session {
        policy: LockPolicy::Locked,
        locked_by: "plan",
        epoch_override: super::env_epoch()?,
        no_output: true,
        ..cli.session(&store, &client, &bars)
    };
    // The one platform loop (`ops::for_each`), over the one platform planned: a
    // multi-platform recipe's is its recipe for that platform, its base through the index its
    // lock pins, as `build` takes it.
    let built = ops::for_each(
        &mut session,
        &args.recipe,
        &whole,
        ops::BaseIndex::Shared,
        |s, _, rp| Ok(s.build(&args.recipe, rp)?),
    )?
    .into_iter()
    .next()
    .ok_or_else(|| anyhow::anyhow!("{}: no platform to plan", args.recipe.display()))?;
    let img = &built.image;
    let target = match &args.against {
        Some(a) => Some(crate::imageref::ImageRef::parse_registry(a)?),
        None => None,
    };
    let push_plan = match &target {
        Some(t) => {
            let name = args.recipe.display().to_string();
            let image = StoreImage::manifest(&name, store.clone(), img.manifest.digest)?;
            Some(crate::push::plan(&client, &image, t)?)
        }
        None => None,
    };
    let previous = match &target {
        Some(t) => previous_manifest(&client, t)?,
        None => None,
    };
    let refused = push_plan.as_ref().and_then(|p| p.refused.clone());
    let status = if refused.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    };
    // What a partial pull of each changed zstd:chunked or eStargz layer would fetch, given
    // the target image's layers (their TOCs read with range requests).
    let old_tocs = match (&target, &previous) {
        (Some(t), Some(m)) => old_tocs(&client, t, m, &bars),
        _ => Vec::new(),
    };
    let mut layers = Vec::new();
    for (l, (name, cached)) in img.layers.iter().zip(&built.cached) {
        let digest = l.descriptor.digest;
        let status = if name.starts_with("base#") {
            "base"
        } else if !cached {
            "new"
        } else if store.is_remote_blob(&digest) && !store.remote_will_have(&digest) {
            // (a local hit the build will record there is "cached locally")
            "cached in the repo"
        } else {
            "cached locally"
        };
        let push = push_plan
            .as_ref()
            .and_then(|p| p.blobs.iter().find(|b| b.digest == digest));
        let changed = target_digest(previous.as_ref(), name).map(|w| w != digest);
        // Why a layer differs from the target's: what its key is made of.
        let reason = changed.filter(|c| *c).map(|_| why_changed(name));
        let partial = match changed {
            Some(true) if !old_tocs.is_empty() => partial_pull(&store, &l.descriptor, &old_tocs),
            _ => None,
        };
        layers.push(json!({
            "name": name,
            "digest": digest,
            "size": l.descriptor.size,
            "status": status,
            "push": push.map(|b| b.action),
            "changedFromTarget": changed,
            "reason": reason,
            "partialPull": partial,
        }));
    }
    let now: crate::image::Manifest =
        serde_json::from_slice(&store.read_blob(&img.manifest.digest)?)?;
    let base_moved = previous.as_ref().and_then(|m| {
        let before = m.annotations.get(annotations::BASE_DIGEST)?;
        let after = now.annotations.get(annotations::BASE_DIGEST)?;
        (before != after).then(|| (before.clone(), after.clone()))
    });
    if args.json {
        let doc = json!({
            "image": img.full_name(),
            "manifest": img.manifest.digest,
            "config": img.config.digest,
            "configSize": img.config.size,
            "layers": layers,
            "steps": built.steps,
            "push": push_plan,
            "baseMoved": base_moved.as_ref().map(|(a, b)| json!({"from": a, "to": b})),
            "cacheRepo": cache.as_ref().map(|c| c.stats()),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(status);
    }
    print_plan(
        img,
        base_moved.as_ref(),
        &built.steps,
        &layers,
        push_plan.as_ref(),
    );
    if let Some(c) = &cache {
        super::cache_repo::report(cli, &c.stats());
    }
    if let (Some(p), Some(why)) = (&push_plan, &refused) {
        eprintln!("error: the push to {} would be refused: {why}", p.target);
    }
    Ok(status)
}

/// The plan as text: the image, the base's move, each step and layer, and the push.
fn print_plan(
    img: &crate::image::ImageRecord,
    base_moved: Option<&(String, String)>,
    steps: &[crate::steps::StepReport],
    layers: &[serde_json::Value],
    push_plan: Option<&crate::push::PushPlan>,
) {
    println!("{} manifest {}", img.full_name(), img.manifest.digest);
    if let Some((a, b)) = base_moved {
        println!("base: {a} at the target, {b} now (rebased)");
    }
    for st in steps {
        match st.duration_secs {
            Some(d) => println!("  step {}: ran in {d:.1}s (not cached)", st.name),
            None => println!("  step {}: cached", st.name),
        }
    }
    for l in layers {
        let changed = match (l["changedFromTarget"].as_bool(), l["reason"].as_str()) {
            (Some(true), Some(why)) => format!(", changed from the target's: {why}"),
            (Some(true), None) => ", changed from the target's".to_string(),
            (Some(false), _) => ", as at the target".to_string(),
            (None, _) => String::new(),
        };
        let push = l["push"]
            .as_str()
            .map(|p| format!("; push: {p}"))
            .unwrap_or_default();
        let partial = match (l["partialPull"]["fetchBytes"].as_u64(), l["size"].as_u64()) {
            (Some(n), Some(size)) if size > 0 => format!(
                "; a partial pull from the target's fetches about {} ({:.1} %, {} of {} files)",
                crate::bounded::human_bytes(n),
                n as f64 * 100.0 / size as f64,
                l["partialPull"]["filesFetched"],
                l["partialPull"]["files"],
            ),
            _ => String::new(),
        };
        println!(
            "  {}: {} ({}, {}{changed}{push}{partial})",
            l["name"].as_str().unwrap_or_default(),
            l["digest"].as_str().unwrap_or_default(),
            crate::bounded::human_bytes(l["size"].as_u64().unwrap_or_default()),
            l["status"].as_str().unwrap_or_default(),
        );
    }
    if let Some(p) = push_plan {
        let count = |a: &str| p.blobs.iter().filter(|b| b.action == a).count();
        println!(
            "push to {}: uploads {} ({} blobs), mounts {}, {} already there{}",
            p.target,
            crate::bounded::human_bytes(p.upload_bytes),
            count("upload"),
            count("mount"),
            count("existing"),
            if p.manifest_exists {
                "; the manifest too (nothing new)"
            } else {
                ""
            }
        );
    }
}

/// The TOCs of the target image's zstd:chunked and eStargz layers, read with range requests;
/// a layer whose TOC cannot be read (or checked) is left out, said at `-v`.
fn old_tocs(
    client: &crate::registry::Client,
    target: &crate::registry::reference::Reference,
    m: &crate::image::Manifest,
    bars: &super::progress::Bars,
) -> Vec<crate::partial::Toc> {
    m.layers
        .iter()
        .filter(|d| crate::partial::has_toc(d))
        .filter_map(|d| {
            let mut read = |offset, len| {
                client
                    .get_blob_range(target, &d.digest, offset, len, bars)
                    .map_err(|e| crate::partial::PartialError::from(Box::new(e)))
            };
            match crate::partial::read_toc(d, &mut read) {
                Ok(toc) => toc,
                Err(e) => {
                    crate::progress::Reporter::detail(
                        bars,
                        &format!("plan: no partial-pull estimate from {}: {e}", d.digest),
                    );
                    None
                }
            }
        })
        .collect()
}

/// What a partial pull of the layer `d` (in the store) fetches given `old`: None for a layer
/// without a TOC.
fn partial_pull(
    store: &crate::store::Store,
    d: &crate::image::Descriptor,
    old: &[crate::partial::Toc],
) -> Option<crate::partial::Estimate> {
    use std::io::{Read, Seek, SeekFrom};
    let path = store.blob_path(&d.digest);
    let mut read = |offset: u64, len: u64| {
        let err = |source| crate::partial::PartialError::Store {
            layer: d.digest,
            source,
        };
        let mut f = fs_err::File::open(&path).map_err(err)?;
        f.seek(SeekFrom::Start(offset)).map_err(err)?;
        let mut buf = Vec::new();
        f.take(len).read_to_end(&mut buf).map_err(err)?;
        Ok(buf)
    };
    let toc = crate::partial::read_toc(d, &mut read).ok()??;
    Some(crate::partial::estimate(&toc, old))
}

/// What a layer's cache key is made of, by the kind its name says: why it can differ.
fn why_changed(name: &str) -> &'static str {
    match name {
        n if n.starts_with("base#") => "the base moved (lock --update base)",
        "apt" => "its .debs (the lock's [apt]) or the base's merged /usr changed",
        "rootfs" => "the packages, [accounts] or the base's account files and alternatives changed",
        "python" => "the interpreter archive changed",
        "paths" => "its [[path]] entries changed, or what the layers below have at their parents",
        n if n.starts_with("wheel") => {
            "its wheels (the lock's [[wheel]]) or the interpreter changed"
        }
        _ => "its files or its [[layer]] settings changed",
    }
}

/// The image under the destination's tag, to say which layers changed. A 401 here, after the
/// blob requests of the push plan went through, is a registry's way of saying the tag is not
/// there (see `push::is_refused`): compared with nothing, as a missing tag.
fn previous_manifest(
    client: &crate::registry::Client,
    target: &crate::registry::Reference,
) -> anyhow::Result<Option<crate::image::Manifest>> {
    if target.tag().is_none() {
        return Ok(None);
    }
    match client.get_manifest(target) {
        Ok(m) => Ok(serde_json::from_slice::<crate::image::Manifest>(&m.bytes).ok()),
        Err(e) if crate::push::is_manifest_unknown(&e) || crate::push::is_refused(&e) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The digest of the layer `name` in the target's image: ours by name, the base's (`base#N`,
/// no name of ours) by position.
fn target_digest(
    previous: Option<&crate::image::Manifest>,
    name: &str,
) -> Option<crate::digest::Digest> {
    let m = previous?;
    if let Some(n) = name
        .strip_prefix("base#")
        .and_then(|n| n.parse::<usize>().ok())
    {
        return m.layers.get(n).map(|l| l.digest);
    }
    m.layers
        .iter()
        .find(|l| {
            l.annotations
                .get(annotations::LAYER_NAME)
                .map(String::as_str)
                == Some(name)
        })
        .map(|l| l.digest)
}
