//! `build --cache-repo REG/REPO` (and `[cache] repo` in the registries file): the registry as
//! the layer cache shared by every machine that builds ([`crate::cache_repo`]).

use std::sync::Arc;

use clap::Args;

use super::Cli;
use crate::bounded::human_bytes;
use crate::cache_repo::{CacheStats, RepoCache};
use crate::registry::{Client, Reference};
use crate::store::Store;

#[derive(Args, Debug, Default)]
pub(super) struct CacheRepoArgs {
    /// A registry repository as the layer cache shared by machines.
    #[arg(long, value_name = "REG/REPO")]
    pub cache_repo: Option<String>,
    /// Read the cache repository, never write to it (an untrusted job).
    #[arg(long)]
    pub cache_repo_readonly: bool,
}

/// The user's store, with the cache repository behind it when one is configured. `push_only`:
/// the registry of a `--push-only` destination (a hit's blob in that registry is mounted by
/// the push, not downloaded).
pub(super) fn store(
    cli: &Cli,
    args: &CacheRepoArgs,
    client: &Arc<Client>,
    push_only: Option<&str>,
    offline: bool,
) -> anyhow::Result<(Store, Option<Arc<RepoCache>>)> {
    if offline {
        // No network: the cache repository is not asked (the local cache still is).
        if args.cache_repo.is_some() {
            anyhow::bail!("--cache-repo and --offline exclude each other: the cache repository is on the network");
        }
        return Ok((cli.store()?, None));
    }
    open(
        cli,
        args,
        client,
        |repo| push_only == Some(repo.registry()),
        false,
    )
}

/// [`store`], with `lazy` saying whether a hit's blob stays in the registry, and `dry_run`
/// a cache that writes nothing and counts what a build would write (`plan`).
pub(super) fn open(
    cli: &Cli,
    args: &CacheRepoArgs,
    client: &Arc<Client>,
    lazy: impl FnOnce(&Reference) -> bool,
    dry_run: bool,
) -> anyhow::Result<(Store, Option<Arc<RepoCache>>)> {
    let store = cli.store()?;
    let configured = client.config().cache_repo.clone();
    let (repo, readonly) = match (&args.cache_repo, configured) {
        // The registries file's `readonly` holds for its repository named again.
        (Some(r), Some((c, ro))) if *r == c => (r.clone(), ro || args.cache_repo_readonly),
        (Some(r), _) => (r.clone(), args.cache_repo_readonly),
        (None, Some((r, ro))) => (r, ro || args.cache_repo_readonly),
        (None, None) if args.cache_repo_readonly => {
            anyhow::bail!(
                "--cache-repo-readonly needs --cache-repo (or [cache] repo in the registries file)"
            )
        }
        (None, None) => return Ok((store, None)),
    };
    let text = repo.strip_prefix("docker://").unwrap_or(&repo);
    // The parse error quotes the reference (a login in it masked).
    let repo: Reference = text
        .parse()
        .map_err(|e| anyhow::anyhow!("--cache-repo: {e}"))?;
    let last = text.rsplit('/').next().unwrap_or_default();
    if !text.contains('/') || last.contains(':') || last.contains('@') {
        anyhow::bail!(
            "--cache-repo {}: name a repository (REGISTRY/REPO), without a tag or digest",
            crate::registry::reference::shown(text)
        );
    }
    let lazy = lazy(&repo);
    let cache = RepoCache::new(client.clone(), repo, readonly, lazy);
    let cache = Arc::new(if dry_run { cache.dry_run() } else { cache });
    Ok((store.with_remote(cache.clone()), Some(cache)))
}

/// One line on what the cache repository did (unless `-q`), its warnings on stderr.
pub(super) fn report(cli: &Cli, stats: &CacheStats) {
    for w in &stats.warnings {
        eprintln!("warning: {w}");
    }
    if cli.quiet {
        return;
    }
    let written = if stats.readonly {
        "read-only".to_string()
    } else if stats.dry_run {
        format!(
            "the build will write {} layers and {} facts ({} to upload)",
            stats.layers_written,
            stats.facts_written,
            human_bytes(stats.uploaded_bytes)
        )
    } else {
        format!(
            "{} layers and {} facts written ({} uploaded)",
            stats.layers_written,
            stats.facts_written,
            human_bytes(stats.uploaded_bytes)
        )
    };
    println!(
        "cache repo {}: {} layers found ({} downloaded), {} not there, {} facts found; {written}",
        stats.repo,
        stats.layer_hits,
        human_bytes(stats.downloaded_bytes),
        stats.layer_misses,
        stats.fact_hits
    );
}
