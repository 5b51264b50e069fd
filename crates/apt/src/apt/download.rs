//! Downloading a locked .deb into the store, verified against the lock: from its source's
//! `url`, then the same path under each of its mirrors ([`super::roots`]).

use std::io::{self, Read};
use std::path::PathBuf;

use super::resolve::Locked;
use super::roots::{first_good, Missed};
use super::AptError;
use crate::digest::{Digest, HashingReader};
use crate::http::{join_url, Fetcher};
use crate::store::{Store, StoreError};

/// Downloads a locked .deb into the store (verified against the lock's sha256 and size),
/// unless the store has it.
pub fn download(
    fetcher: &dyn Fetcher,
    store: &Store,
    locked: &Locked,
) -> Result<PathBuf, AptError> {
    download_from(fetcher, store, locked, &[])
}

/// [`download`], looking for the .deb at `mirrors` (other archive roots of its source, as
/// [`super::Source::archive_urls`] gives them) in order when its own URL lacks it or serves
/// another file: the same path under each. The lock's sha256 decides, wherever it comes from.
pub fn download_from(
    fetcher: &dyn Fetcher,
    store: &Store,
    locked: &Locked,
    mirrors: &[String],
) -> Result<PathBuf, AptError> {
    let blob = store.blob_path(&locked.sha256);
    if store.has_blob(&locked.sha256) {
        return Ok(blob);
    }
    let mut urls = vec![locked.url()];
    urls.extend(mirrors.iter().map(|m| join_url(m, &locked.filename)));
    match first_good(&urls, |url| download_at(store, locked, url, fetcher))? {
        Ok(()) => Ok(blob),
        Err(Missed::Mismatch(m)) => Err(AptError::HashMismatch(m)),
        Err(Missed::Failed(_, Some(e))) => Err(e),
        Err(Missed::NotFound(tried) | Missed::Failed(tried, None)) => Err(AptError::MissingDeb {
            package: locked.name.clone(),
            version: locked.version.clone(),
            filename: locked.filename.clone(),
            url: locked.url(),
            tried: if tried.len() > 1 {
                tried.into()
            } else {
                Box::default()
            },
        }),
    }
}

/// One URL of [`download_from`]: `None` when it is not there.
fn download_at(
    store: &Store,
    locked: &Locked,
    url: &str,
    fetcher: &dyn Fetcher,
) -> Result<Option<()>, AptError> {
    let Some(r) = fetcher.open(url)? else {
        return Ok(None);
    };
    let mut w = store.blob_writer()?;
    let mut hr = HashingReader::new(r);
    let read_err = |source| AptError::Read {
        url: url.to_string(),
        source,
    };
    let read = io::copy(&mut (&mut hr).take(locked.size + 1), &mut w).map_err(read_err)?;
    let mismatch = |found: Digest, found_size: u64| {
        AptError::HashMismatch(Box::new(super::Mismatch {
            what: format!("package {} {}", locked.name, locked.version),
            url: url.to_string(),
            expected: locked.sha256,
            found,
            expected_size: locked.size,
            found_size,
            tried: Vec::new(),
            index: false,
        }))
    };
    if read != locked.size {
        // Hash the rest (bounded) for the message; the writer is dropped, nothing committed.
        drop(w);
        io::copy(&mut (&mut hr).take(1 << 30), &mut io::sink()).map_err(read_err)?;
        let (_, found, n) = hr.finish();
        return Err(mismatch(found, n));
    }
    match w.commit(Some(locked.sha256)) {
        Ok(_) => Ok(Some(())),
        Err(StoreError::DigestMismatch { found, .. }) => Err(mismatch(found, read)),
        Err(e) => Err(e.into()),
    }
}
