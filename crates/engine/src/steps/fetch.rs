//! A step's downloads: by the recipe's sha256, else by the lock's pin, else (a build that may
//! write the lock) fetched once, hashed while streaming, and pinned.

use std::io;
use std::path::PathBuf;

use super::{StepContext, StepError};
use crate::digest::{Digest, HashingReader};
use crate::lock::{LockPolicy, LockedFetch};
use crate::recipe::{Fetch, Step};

/// `f` as a file in the store. `pins`: the step's downloads the lock pins, a new pin added.
pub(super) fn fetch(
    ctx: &StepContext<'_>,
    step: &Step,
    f: &Fetch,
    pins: &mut Vec<LockedFetch>,
) -> Result<PathBuf, StepError> {
    let pinned = pins
        .iter()
        .find(|p| p.url == f.url)
        .map(|p| p.sha256)
        // `lock --update` fetches an unpinned download again.
        .filter(|_| ctx.policy != LockPolicy::Update);
    let sha256 = match (f.sha256, pinned) {
        (Some(d), _) | (None, Some(d)) => d,
        (None, None) if matches!(ctx.policy, LockPolicy::Locked | LockPolicy::Frozen) => {
            return Err(StepError::FetchNotPinned {
                mode: if ctx.policy == LockPolicy::Frozen {
                    "--frozen"
                } else {
                    ctx.locked_by
                },
                step: step.name.clone(),
                url: f.url.clone(),
                lock: ctx.lock_path.display().to_string(),
            });
        }
        (None, None) => {
            let d = download(ctx, step, &f.url)?;
            pins.retain(|p| p.url != f.url);
            pins.push(LockedFetch {
                url: f.url.clone(),
                sha256: d,
            });
            ctx.reporter.message(&format!(
                "pinned step {}'s download {} to {d} in {}",
                step.name,
                f.url,
                ctx.lock_path.display()
            ));
            return Ok(ctx.store.blob_path(&d));
        }
    };
    let what = format!("step `{}` download", step.name);
    crate::system::fetch_verified(ctx.fetcher, ctx.store, &f.url, sha256, None, &what).map_err(
        |e| StepError::Fetch {
            step: step.name.clone(),
            url: f.url.clone(),
            source: Box::new(e),
        },
    )
}

/// Fetches `url` into the store, hashing it as it streams: its digest.
fn download(ctx: &StepContext<'_>, step: &Step, url: &str) -> Result<Digest, StepError> {
    let failed = |reason: String| StepError::Download {
        step: step.name.clone(),
        url: url.to_string(),
        reason,
    };
    let body = ctx
        .fetcher
        .open(url)
        .map_err(|e| failed(crate::diag::chain(&e)))?
        .ok_or_else(|| failed("not found (HTTP 404, or no such file)".into()))?;
    let mut w = ctx.store.blob_writer()?;
    let mut r = HashingReader::new(body);
    io::copy(&mut r, &mut w).map_err(|e| failed(e.to_string()))?;
    let (_, digest, _) = r.finish();
    w.commit(Some(digest))?;
    Ok(digest)
}
