//! Blob downloads: verified into the store, concurrent, resumed with `Range` when cut.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use reqwest::blocking::Response;
use reqwest::{Method, StatusCode};

use super::{
    header_str, parse_content_range_start, Client, Digests, Endpoint, RegistryError, Reporter,
    Request,
};
use crate::digest::Digest;
use crate::image::Descriptor;
use crate::registry::auth::Scopes;
use crate::registry::reference::Reference;
use crate::store::{Store, StoreError};

impl Client {
    /// Download a blob into the store, verified (nothing is kept unless the digest matches).
    /// Does nothing when the store has it. `size`, when known, is checked too.
    pub fn pull_blob(
        &self,
        reference: &Reference,
        digest: &Digest,
        size: Option<u64>,
        store: &Store,
        progress: &dyn Reporter,
    ) -> Result<(), RegistryError> {
        if store.has_blob(digest) {
            return Ok(());
        }
        self.try_endpoints(reference, progress, |ep| {
            self.pull_blob_from(ep, digest, size, store, progress)
        })
    }

    /// [`Self::pull_blob`] for many blobs, [`ClientConfig::concurrency`] at a time. Stops at the
    /// first error (downloads in flight finish or fail on their own).
    ///
    /// [`ClientConfig::concurrency`]: super::ClientConfig::concurrency
    pub fn pull_blobs(
        &self,
        reference: &Reference,
        blobs: &[Descriptor],
        store: &Store,
        progress: &dyn Reporter,
    ) -> Result<(), RegistryError> {
        let todo: Vec<&Descriptor> = blobs
            .iter()
            .filter(|d| !store.has_blob(&d.digest))
            .collect();
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let first_error: Mutex<Option<RegistryError>> = Mutex::new(None);
        let workers = self.config.concurrency.clamp(1, todo.len().max(1));
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| loop {
                    if failed.load(Ordering::Relaxed) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(d) = todo.get(i) else { return };
                    if let Err(e) =
                        self.pull_blob(reference, &d.digest, Some(d.size), store, progress)
                    {
                        failed.store(true, Ordering::Relaxed);
                        let mut slot = first_error
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        slot.get_or_insert(e);
                        return;
                    }
                });
            }
        });
        match first_error
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn pull_blob_from(
        &self,
        ep: &Endpoint,
        digest: &Digest,
        size: Option<u64>,
        store: &Store,
        progress: &dyn Reporter,
    ) -> Result<(), RegistryError> {
        let store_err = |source| RegistryError::Store {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            digest: *digest,
            source: Box::new(source),
        };
        let action = format!("GET blob {digest}");
        let url = ep.url(&format!("blobs/{digest}"));
        let scopes = Scopes::repository(&ep.repository, &["pull"]);
        let mut writer = store.blob_writer().map_err(store_err)?;
        let mut cuts = 0u32;
        progress.blob_started(digest, size);
        loop {
            let offset = writer.bytes_written();
            let mut req = Request::new(Method::GET, url.clone(), action.clone(), scopes.clone());
            req.large = true;
            if offset > 0 {
                req = req.header("Range", format!("bytes={offset}-"));
            }
            let resp = self.send(ep, &req, progress)?;
            let status = resp.status();
            match status {
                StatusCode::OK if offset > 0 => {
                    // The server ignored the Range: start over.
                    writer = store.blob_writer().map_err(store_err)?;
                    progress.blob_started(digest, size);
                }
                StatusCode::OK => {}
                StatusCode::PARTIAL_CONTENT => {
                    let start = header_str(resp.headers(), "content-range")
                        .and_then(|v| parse_content_range_start(&v));
                    if start != Some(offset) {
                        // Not the part asked for: start over.
                        writer = store.blob_writer().map_err(store_err)?;
                        progress.blob_started(digest, size);
                        cuts += 1;
                        if cuts >= self.config.max_attempts {
                            return Err(self.cut_error(ep, &action, cuts, "bad Content-Range"));
                        }
                        continue;
                    }
                }
                StatusCode::RANGE_NOT_SATISFIABLE if offset > 0 => {
                    writer = store.blob_writer().map_err(store_err)?;
                    progress.blob_started(digest, size);
                    continue;
                }
                StatusCode::NOT_FOUND => {
                    return Err(RegistryError::BlobUnknown {
                        registry: ep.registry.clone(),
                        repository: ep.repository.clone(),
                        digest: *digest,
                        detail: self.read_error_detail(ep, resp),
                    })
                }
                _ => return Err(self.status_error(ep, &action, resp)),
            }
            match copy_body(resp, &mut writer, digest, size, progress) {
                Ok(()) if size.is_none_or(|s| writer.bytes_written() >= s) => break,
                Ok(()) => {
                    // A clean end before the size: the server closed early. Resume.
                    cuts += 1;
                    if cuts >= self.config.max_attempts {
                        return Err(self.cut_error(ep, &action, cuts, "the stream ended early"));
                    }
                }
                Err(CopyError::TooLong(found)) => {
                    return Err(RegistryError::SizeMismatch {
                        registry: ep.registry.clone(),
                        repository: ep.repository.clone(),
                        digest: *digest,
                        expected: size.unwrap_or(0),
                        found,
                    })
                }
                Err(CopyError::Store(e)) => return Err(store_err(StoreError::Io(e))),
                Err(CopyError::Read(e)) => {
                    cuts += 1;
                    if cuts >= self.config.max_attempts {
                        return Err(self.cut_error(ep, &action, cuts, &e.to_string()));
                    }
                    let delay = self.backoff(cuts);
                    progress.retrying(
                        &action,
                        cuts,
                        delay,
                        &format!("stream cut after {} bytes: {e}", writer.bytes_written()),
                    );
                    std::thread::sleep(delay);
                }
            }
        }
        let found_size = writer.bytes_written();
        match writer.commit(Some(*digest)) {
            Ok(_) => {}
            Err(StoreError::DigestMismatch {
                expected, found, ..
            }) => {
                return Err(RegistryError::DigestMismatch {
                    registry: ep.registry.clone(),
                    repository: ep.repository.clone(),
                    what: format!("blob {digest} ({found_size} bytes)"),
                    digests: Box::new(Digests { expected, found }),
                })
            }
            Err(e) => return Err(store_err(e)),
        }
        progress.blob_finished(digest);
        Ok(())
    }

    /// Bytes `offset .. offset + len` of a blob (a `Range` request), at most `RANGE_MAX`:
    /// for reading a partial-pull layer's table of contents without its files. The bytes are
    /// not verified here (a range has no digest of its own): the caller checks them against
    /// what the manifest says of them (the TOC's annotated checksum).
    pub fn get_blob_range(
        &self,
        reference: &Reference,
        digest: &Digest,
        offset: u64,
        len: u64,
        progress: &dyn Reporter,
    ) -> Result<Vec<u8>, RegistryError> {
        self.try_endpoints(reference, progress, |ep| {
            let action = format!("GET bytes {offset}+{len} of blob {digest}");
            if len == 0 || len > RANGE_MAX {
                return Err(self.cut_error(ep, &action, 0, "a range of that size is not asked"));
            }
            let url = ep.url(&format!("blobs/{digest}"));
            let scopes = Scopes::repository(&ep.repository, &["pull"]);
            let req = Request::new(Method::GET, url, action.clone(), scopes)
                .header("Range", format!("bytes={offset}-{}", offset + len - 1));
            let resp = self.send(ep, &req, progress)?;
            // 200: the server ignored the Range and sends the whole blob: skip to the range.
            let skip = match resp.status() {
                StatusCode::PARTIAL_CONTENT => {
                    let start = header_str(resp.headers(), "content-range")
                        .and_then(|v| parse_content_range_start(&v));
                    if start != Some(offset) {
                        return Err(self.cut_error(ep, &action, 1, "bad Content-Range"));
                    }
                    0
                }
                StatusCode::OK => offset,
                _ => return Err(self.status_error(ep, &action, resp)),
            };
            let mut body = resp.take(skip + len);
            io::copy(&mut (&mut body).take(skip), &mut io::sink())
                .map_err(|e| self.cut_error(ep, &action, 1, &e.to_string()))?;
            let mut out = Vec::with_capacity(len as usize);
            body.read_to_end(&mut out)
                .map_err(|e| self.cut_error(ep, &action, 1, &e.to_string()))?;
            if out.len() as u64 != len {
                return Err(self.cut_error(ep, &action, 1, "the range ended early"));
            }
            Ok(out)
        })
    }

    fn cut_error(&self, ep: &Endpoint, action: &str, attempts: u32, why: &str) -> RegistryError {
        RegistryError::Transport {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            action: action.to_string(),
            attempts,
            message: format!("download interrupted: {why}"),
            hint: self.transport_hint(ep, crate::http::peers::Failure::Other),
        }
    }
}

/// The largest range [`Client::get_blob_range`] asks for: containers/storage's own limit on a
/// TOC (50 MiB) plus room.
pub(super) const RANGE_MAX: u64 = 64 << 20;

enum CopyError {
    Read(io::Error),
    Store(io::Error),
    /// More bytes than the expected size: at least this many.
    TooLong(u64),
}

fn copy_body(
    resp: Response,
    writer: &mut crate::store::BlobWriter,
    digest: &Digest,
    size: Option<u64>,
    progress: &dyn Reporter,
) -> Result<(), CopyError> {
    let url = resp.url().to_string();
    let mut resp = crate::http::MinRate::new(resp, &url);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match resp.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Read(e)),
        };
        let total = writer.bytes_written() + n as u64;
        if size.is_some_and(|s| total > s) {
            return Err(CopyError::TooLong(total));
        }
        writer.write_all(&buf[..n]).map_err(CopyError::Store)?;
        progress.blob_progress(digest, n as u64);
    }
}
