//! Progress events from the library to whoever displays them (the CLI). The library never prints.
//! One trait for every step: layers being built, blobs moving to and from registries, retries.

use std::time::Duration;

use crate::digest::Digest;

/// Receives progress events. Every method has a no-op default.
pub trait Reporter: Sync {
    /// A layer starts building; `total_bytes` is the sum of its regular files' sizes.
    fn layer_started(&self, _name: &str, _total_bytes: u64) {}
    /// `bytes` more file content went into layer `name` (several layers may build at once).
    fn layer_progress(&self, _name: &str, _bytes: u64) {}
    /// A layer is done; `cached` when it came from the layer cache.
    fn layer_finished(&self, _name: &str, _cached: bool) {}
    /// A status line: a note from a step (a pinned base, a mirror that failed, and why).
    fn message(&self, _msg: &str) {}
    /// A blob download or upload starts (again, after a restart from zero).
    fn blob_started(&self, _digest: &Digest, _size: Option<u64>) {}
    /// `bytes` more of a blob arrived (or were uploaded).
    fn blob_progress(&self, _digest: &Digest, _bytes: u64) {}
    fn blob_finished(&self, _digest: &Digest) {}
    /// Something failed and is tried again after `delay`.
    fn retrying(&self, _what: &str, _attempt: u32, _delay: Duration, _reason: &str) {}
    /// A file download starts (an index, a .deb, a wheel, an interpreter archive), by its
    /// URL (without credentials or query); `size` when the server said it.
    fn file_started(&self, _name: &str, _size: Option<u64>) {}
    /// `bytes` more of file `name` arrived.
    fn file_progress(&self, _name: &str, _bytes: u64) {}
    /// File `name` is read to its end (or given up on).
    fn file_finished(&self, _name: &str) {}
    /// A step with no byte count starts (resolving `[apt]`, reading the base); shown as a
    /// spinner until [`Reporter::task_finished`] with the same text.
    fn task_started(&self, _what: &str) {}
    fn task_finished(&self, _what: &str) {}
    /// What a step decided and why (a cache hit and its key, a mirror tried, a lock entry
    /// kept): shown only when asked for (`-v`).
    fn detail(&self, _msg: &str) {}
}

/// Reports nothing.
pub struct Silent;
impl Reporter for Silent {}
