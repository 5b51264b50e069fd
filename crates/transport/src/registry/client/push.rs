//! Pushes: blobs (existence check, cross-repository mounts, monolithic or chunked uploads)
//! and manifests.

use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fs_err as fs;
use reqwest::blocking::{Body, Response};
use reqwest::{Method, StatusCode, Url};

use super::{
    header_str, parse_range_end, Client, Digests, Endpoint, RegistryError, Reporter, Request,
    Silent,
};
use crate::digest::Digest;
use crate::registry::auth::Scopes;
use crate::registry::reference::Reference;
use crate::store::Store;

/// What [`Client::push_blob`] did.
/// A blob to upload: its digest and size, the file that holds it in the store, and an upload
/// session a mount attempt already opened.
struct Upload<'a> {
    digest: &'a Digest,
    size: u64,
    on_disk: &'a std::path::Path,
    location: Option<Url>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobPush {
    /// The registry had it already (HEAD).
    Existed,
    /// Mounted from another repository of the same registry.
    Mounted,
    /// Uploaded in one PUT.
    Uploaded,
    /// Uploaded in chunks (PATCH), after the monolithic upload was refused or for its size.
    UploadedChunked,
}

impl Client {
    /// True if the repository has the blob (HEAD).
    pub fn blob_exists(&self, target: &Reference, digest: &Digest) -> Result<bool, RegistryError> {
        let ep = self.endpoint(target.registry(), target.repository())?;
        self.blob_exists_at(&ep, digest, &Scopes::repository(&ep.repository, &["pull"]))
    }

    fn blob_exists_at(
        &self,
        ep: &Endpoint,
        digest: &Digest,
        scopes: &Scopes,
    ) -> Result<bool, RegistryError> {
        let action = format!("HEAD blob {digest}");
        let req = Request::new(
            Method::HEAD,
            ep.url(&format!("blobs/{digest}")),
            action.clone(),
            scopes.clone(),
        );
        let resp = self.send(ep, &req, &Silent)?;
        match resp.status() {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(self.status_error(ep, &action, resp)),
        }
    }

    /// Push a blob from the store to `target`'s repository: skipped when present (HEAD);
    /// mounted from `mount_from` (same registry) when given and the registry agrees; else
    /// uploaded in one PUT, or in chunks when that is refused.
    pub fn push_blob(
        &self,
        target: &Reference,
        digest: &Digest,
        size: u64,
        store: &Store,
        mount_from: Option<&Reference>,
        progress: &dyn Reporter,
    ) -> Result<BlobPush, RegistryError> {
        let ep = self.endpoint(target.registry(), target.repository())?;
        let mut scopes = Scopes::repository(&ep.repository, &["pull", "push"]);
        if self.blob_exists_at(&ep, digest, &scopes)? {
            progress.detail(&format!(
                "blob {digest}: already at {}/{}",
                ep.registry, ep.repository
            ));
            return Ok(BlobPush::Existed);
        }
        let io_err = |source| RegistryError::Io {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            digest: *digest,
            source,
        };
        let mut location = None;
        if let Some(from) = mount_from
            .filter(|f| f.registry() == target.registry() && f.repository() != target.repository())
        {
            scopes.add("repository", from.repository(), ["pull"]);
            let mut url = ep.url("blobs/uploads/");
            url.query_pairs_mut()
                .append_pair("mount", &digest.to_string())
                .append_pair("from", from.repository());
            let action = format!("mount blob {digest} from {}", from.repository());
            let req = Request::new(Method::POST, url, action.clone(), scopes.clone())
                .header("Content-Length", "0");
            let resp = self.send(&ep, &req, progress)?;
            match resp.status() {
                StatusCode::CREATED => {
                    progress.detail(&format!(
                        "blob {digest}: mounted from {}",
                        from.repository()
                    ));
                    return Ok(BlobPush::Mounted);
                }
                // Not mounted: the registry opened an upload session instead.
                StatusCode::ACCEPTED => location = Some(self.location(&ep, &action, &resp)?),
                _ => return Err(self.status_error(&ep, &action, resp)),
            }
        }

        // Not mounted, and not here (a shallow base's layer): fetch it from the repository it
        // was to be mounted from, verified, then upload it.
        if !store.has_blob(digest) {
            if let Some(from) = mount_from {
                self.pull_blob(from, digest, Some(size), store, progress)?;
            }
        }
        // The blob must be in the store, and be what it claims.
        let on_disk = store.blob_path(digest);
        let meta = fs::metadata(&on_disk).map_err(io_err)?;
        if meta.len() != size {
            return Err(RegistryError::SizeMismatch {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                digest: *digest,
                expected: size,
                found: meta.len(),
            });
        }

        progress.blob_started(digest, Some(size));
        let blob = Upload {
            digest,
            size,
            on_disk: &on_disk,
            location,
        };
        let pushed = self.upload(&ep, blob, &scopes, progress)?;
        progress.blob_finished(digest);
        Ok(pushed)
    }

    /// Uploads the blob in one PUT (its bytes reported as they go), or in chunks when that is
    /// refused or it is over the monolithic limit.
    fn upload(
        &self,
        ep: &Endpoint,
        blob: Upload<'_>,
        scopes: &Scopes,
        progress: &dyn Reporter,
    ) -> Result<BlobPush, RegistryError> {
        let Upload {
            digest,
            size,
            on_disk,
            mut location,
        } = blob;
        let io_err = |source| RegistryError::Io {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            digest: *digest,
            source,
        };
        if size <= self.config.monolithic_limit {
            let loc = match location.take() {
                Some(l) => l,
                None => self.start_upload(ep, digest, scopes, progress)?,
            };
            let mut url = loc;
            url.query_pairs_mut()
                .append_pair("digest", &digest.to_string());
            let action = format!("upload blob {digest}");
            let sent = Arc::new(AtomicU64::new(0));
            let make_body = || -> Result<Body, RegistryError> {
                let f = fs::File::open(on_disk).map_err(io_err)?;
                // A new body (a retry) starts the count over, as a new attempt.
                let attempt = (sent.load(Ordering::Relaxed) >> COUNT_BITS) + 1;
                sent.store(attempt << COUNT_BITS, Ordering::Relaxed);
                progress.blob_started(digest, Some(size));
                Ok(Body::sized(Counted(f, Arc::clone(&sent)), size))
            };
            let mut req = Request::new(Method::PUT, url, action.clone(), scopes.clone())
                .header("Content-Type", "application/octet-stream")
                .body(&make_body);
            req.timeout = Some(self.upload_timeout(size));
            let resp = report_sent(&sent, digest, progress, || self.send(ep, &req, progress))?;
            match resp.status() {
                StatusCode::CREATED | StatusCode::NO_CONTENT | StatusCode::OK => {
                    self.check_pushed_digest(ep, &action, &resp, digest)?;
                    return Ok(BlobPush::Uploaded);
                }
                // Refused as too large, or monolithic uploads not supported: chunks.
                StatusCode::PAYLOAD_TOO_LARGE
                | StatusCode::BAD_REQUEST
                | StatusCode::METHOD_NOT_ALLOWED
                | StatusCode::NOT_IMPLEMENTED
                | StatusCode::RANGE_NOT_SATISFIABLE => {
                    let why = format!("monolithic upload refused (HTTP {})", resp.status());
                    progress.message(&format!(
                        "{}/{}: {why}; uploading {digest} in chunks",
                        ep.registry, ep.repository
                    ));
                }
                _ => return Err(self.status_error(ep, &action, resp)),
            }
        }
        progress.blob_started(digest, Some(size));
        self.push_chunked(ep, digest, size, on_disk, scopes, progress)?;
        Ok(BlobPush::UploadedChunked)
    }

    fn upload_timeout(&self, size: u64) -> Duration {
        // At least 64 KiB/s, on top of the usual timeout.
        self.config.timeout + Duration::from_secs(size / (64 * 1024))
    }

    fn location(&self, ep: &Endpoint, action: &str, resp: &Response) -> Result<Url, RegistryError> {
        let bad = |detail: String| RegistryError::Status {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            action: action.to_string(),
            status: resp.status().as_u16(),
            detail,
            hint: String::new(),
        };
        let loc = header_str(resp.headers(), "location")
            .ok_or_else(|| bad(": no Location header in the answer".into()))?;
        ep.origin
            .join(&loc)
            .map_err(|e| bad(format!(": bad Location `{loc}` ({e})")))
    }

    /// Whether these credentials may push to `target`'s repository: an upload session is
    /// opened and cancelled (the error says why not). For a dry run that must know whether
    /// the writes it counts would be made.
    pub fn check_push(&self, target: &Reference) -> Result<(), RegistryError> {
        let ep = self.endpoint(target.registry(), target.repository())?;
        let scopes = Scopes::repository(&ep.repository, &["pull", "push"]);
        let loc = self.open_upload(&ep, "open an upload session", &scopes, &Silent)?;
        // Cancelled; a registry that keeps it lets it expire.
        let cancel = Request::new(Method::DELETE, loc, "cancel the upload", scopes);
        let _ = self.send(&ep, &cancel, &Silent);
        Ok(())
    }

    fn start_upload(
        &self,
        ep: &Endpoint,
        digest: &Digest,
        scopes: &Scopes,
        progress: &dyn Reporter,
    ) -> Result<Url, RegistryError> {
        self.open_upload(
            ep,
            &format!("start upload of blob {digest}"),
            scopes,
            progress,
        )
    }

    /// Opens an upload session (POST `blobs/uploads/`): its location.
    fn open_upload(
        &self,
        ep: &Endpoint,
        action: &str,
        scopes: &Scopes,
        progress: &dyn Reporter,
    ) -> Result<Url, RegistryError> {
        let req = Request::new(
            Method::POST,
            ep.url("blobs/uploads/"),
            action.to_string(),
            scopes.clone(),
        )
        .header("Content-Length", "0");
        let resp = self.send(ep, &req, progress)?;
        if resp.status() != StatusCode::ACCEPTED {
            return Err(self.status_error(ep, action, resp));
        }
        self.location(ep, action, &resp)
    }

    fn check_pushed_digest(
        &self,
        ep: &Endpoint,
        action: &str,
        resp: &Response,
        digest: &Digest,
    ) -> Result<(), RegistryError> {
        if let Some(claimed) =
            header_str(resp.headers(), "docker-content-digest").and_then(|c| c.parse().ok())
        {
            if claimed != *digest {
                return Err(RegistryError::DigestMismatch {
                    registry: ep.registry.clone(),
                    repository: ep.repository.clone(),
                    what: format!("{action}: the registry's record"),
                    digests: Box::new(Digests {
                        expected: *digest,
                        found: claimed,
                    }),
                });
            }
        }
        Ok(())
    }

    fn push_chunked(
        &self,
        ep: &Endpoint,
        digest: &Digest,
        size: u64,
        path: &std::path::Path,
        scopes: &Scopes,
        progress: &dyn Reporter,
    ) -> Result<(), RegistryError> {
        let io_err = |source| RegistryError::Io {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            digest: *digest,
            source,
        };
        let action = format!("chunked upload of blob {digest}");
        let mut loc = self.start_upload(ep, digest, scopes, progress)?;
        let mut offset = 0u64;
        let mut resyncs = 0u32;
        let chunk = self.config.chunk_size.max(1);
        while offset < size {
            let len = chunk.min(size - offset);
            let start = offset;
            let make_body = || -> Result<Body, RegistryError> {
                let mut f = fs::File::open(path).map_err(io_err)?;
                f.seek(SeekFrom::Start(start)).map_err(io_err)?;
                Ok(Body::sized(f.take(len), len))
            };
            let mut req = Request::new(Method::PATCH, loc.clone(), action.clone(), scopes.clone())
                .header("Content-Type", "application/octet-stream")
                .header("Content-Range", format!("{start}-{}", start + len - 1))
                .body(&make_body);
            req.timeout = Some(self.upload_timeout(len));
            let resp = self.send(ep, &req, progress)?;
            match resp.status() {
                StatusCode::ACCEPTED | StatusCode::NO_CONTENT => {
                    let next_loc = self.location(ep, &action, &resp).unwrap_or(loc.clone());
                    let end = header_str(resp.headers(), "range").and_then(|r| parse_range_end(&r));
                    // The server's count of what it has is authoritative.
                    offset = match end {
                        Some(e) => e + 1,
                        None => start + len,
                    };
                    loc = next_loc;
                    progress.blob_progress(digest, len);
                }
                StatusCode::RANGE_NOT_SATISFIABLE => {
                    // Out of step with the server: ask where it is, continue from there.
                    resyncs += 1;
                    if resyncs >= self.config.max_attempts {
                        return Err(self.status_error(ep, &action, resp));
                    }
                    drop(resp);
                    let (l, o) = self.upload_status(ep, &loc, scopes, &action, progress)?;
                    loc = l;
                    offset = o;
                    progress.retrying(
                        &action,
                        resyncs,
                        Duration::ZERO,
                        &format!("HTTP 416: resuming at byte {offset}"),
                    );
                }
                _ => return Err(self.status_error(ep, &action, resp)),
            }
        }
        let mut url = loc;
        url.query_pairs_mut()
            .append_pair("digest", &digest.to_string());
        let empty = || -> Result<Body, RegistryError> { Ok(Body::from(Vec::new())) };
        let req = Request::new(Method::PUT, url, action.clone(), scopes.clone())
            .header("Content-Type", "application/octet-stream")
            .body(&empty);
        let resp = self.send(ep, &req, progress)?;
        match resp.status() {
            StatusCode::CREATED | StatusCode::NO_CONTENT | StatusCode::OK => {
                self.check_pushed_digest(ep, &action, &resp, digest)
            }
            _ => Err(self.status_error(ep, &action, resp)),
        }
    }

    /// GET an upload session: its location and the next byte the server expects.
    fn upload_status(
        &self,
        ep: &Endpoint,
        loc: &Url,
        scopes: &Scopes,
        action: &str,
        progress: &dyn Reporter,
    ) -> Result<(Url, u64), RegistryError> {
        let req = Request::new(
            Method::GET,
            loc.clone(),
            format!("{action}: upload status"),
            scopes.clone(),
        );
        let resp = self.send(ep, &req, progress)?;
        if !resp.status().is_success() {
            return Err(self.status_error(ep, action, resp));
        }
        let next = self.location(ep, action, &resp).unwrap_or(loc.clone());
        // Distribution answers `0-0` for an empty upload too: take it as nothing received.
        let offset = header_str(resp.headers(), "range")
            .and_then(|r| parse_range_end(&r))
            .map_or(0, |e| if e == 0 { 0 } else { e + 1 });
        Ok((next, offset))
    }

    // -----------------------------------------------------------------------------------------
    // Manifests: push

    /// Push a manifest (or index) under a tag or its digest; returns its digest.
    pub fn push_manifest(
        &self,
        target: &Reference,
        tag_or_digest: &str,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<Digest, RegistryError> {
        let ep = self.endpoint(target.registry(), target.repository())?;
        let digest = Digest::of(bytes);
        if bytes.len() as u64 > self.config.max_manifest_bytes {
            return Err(RegistryError::ManifestTooLarge {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                reference: tag_or_digest.to_string(),
                limit: self.config.max_manifest_bytes,
                size: Some(bytes.len() as u64),
            });
        }
        let action = format!("PUT manifest {tag_or_digest}");
        let data = bytes.to_vec();
        let make_body = move || -> Result<Body, RegistryError> { Ok(Body::from(data.clone())) };
        let req = Request::new(
            Method::PUT,
            ep.url(&format!("manifests/{tag_or_digest}")),
            action.clone(),
            Scopes::repository(&ep.repository, &["pull", "push"]),
        )
        .header("Content-Type", media_type)
        .body(&make_body);
        let resp = self.send(&ep, &req, &Silent)?;
        match resp.status() {
            StatusCode::CREATED | StatusCode::OK | StatusCode::ACCEPTED => {
                self.check_pushed_digest(&ep, &action, &resp, &digest)?;
                Ok(digest)
            }
            _ => Err(self.status_error(&ep, &action, resp)),
        }
    }
}

/// The bytes a [`Counted`] body sent are the low 48 bits of its counter; the attempt (each new
/// body of a retried request) is the bits above, so a count read once is one attempt's.
const COUNT_BITS: u32 = 48;

/// A body counting the bytes read from it (by the HTTP client) into a shared counter.
struct Counted<R>(R, Arc<AtomicU64>);

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        self.1.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Sets `done` and wakes the ticker when dropped: also when `send` panics, so the scope's
/// join does not wait for a ticker that never stops.
struct StopTicker<'a>(&'a AtomicBool, std::thread::Thread);

impl Drop for StopTicker<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
        self.1.unpark();
    }
}

/// Runs `send` while a second thread reports what [`Counted`] bodies have sent, ten times a
/// second: the HTTP client owns the body, the reporter is borrowed.
fn report_sent<T>(
    sent: &AtomicU64,
    digest: &Digest,
    progress: &dyn Reporter,
    send: impl FnOnce() -> T,
) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let ticker = s.spawn(|| {
            let (mut attempt, mut reported) = (0u64, 0u64);
            loop {
                let finished = done.load(Ordering::Acquire);
                let v = sent.load(Ordering::Relaxed);
                let (a, now) = (v >> COUNT_BITS, v & ((1 << COUNT_BITS) - 1));
                if a != attempt {
                    // blob_started restarted the bar for this attempt.
                    (attempt, reported) = (a, 0);
                }
                if now > reported {
                    progress.blob_progress(digest, now - reported);
                    reported = now;
                }
                if finished {
                    break;
                }
                std::thread::park_timeout(Duration::from_millis(100));
            }
        });
        let _stop = StopTicker(&done, ticker.thread().clone());
        send()
    })
}
