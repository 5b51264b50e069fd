//! Progress events from the library to whoever displays them (the CLI). The library never prints.

/// Receives progress events. Every method has a no-op default.
pub trait Reporter: Sync {
    /// A layer starts building; `total_bytes` is the sum of its regular files' sizes.
    fn layer_started(&self, _name: &str, _total_bytes: u64) {}
    /// `bytes` more file content went into layer `name` (several layers may build at once).
    fn layer_progress(&self, _name: &str, _bytes: u64) {}
    /// A layer is done; `cached` when it came from the layer cache.
    fn layer_finished(&self, _name: &str, _cached: bool) {}
    /// A free-form status line (verbose output).
    fn message(&self, _msg: &str) {}
}

/// Reports nothing.
pub struct Silent;
impl Reporter for Silent {}
