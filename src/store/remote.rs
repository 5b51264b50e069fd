//! A second tier for the layer cache and the cached facts: a shared cache somewhere else (the
//! registry's, [`crate::cache_repo`]), consulted when the store misses and told what the
//! store records. The store knows only this interface, not where the entries live.
//!
//! Everything here is an optimization: an unreachable or broken remote is a miss (reported
//! by the implementation), never a failed build. What a remote says is trusted as far as the
//! registry it lives in is: `verify` rebuilds without it and catches an entry that lies.

use super::{CachedLayer, Store};
use crate::digest::Digest;

/// A shared cache of layers (input key → layer) and facts (key → small JSON document).
pub trait Remote: Send + Sync {
    /// The layer recorded for `key`, if any.
    fn layer(&self, key: &Digest) -> Option<CachedLayer>;
    /// Puts `layer`'s blob into `store`, verified against its digest; whether it did.
    fn fetch(&self, layer: &CachedLayer, store: &Store) -> bool;
    /// Whether a hit's blob is left where it is (a push to the same registry mounts it).
    fn lazy(&self) -> bool;
    /// Records `layer` (its blob read from `store`) under `key`.
    fn put_layer(&self, key: &Digest, layer: &CachedLayer, store: &Store);
    /// The fact recorded under `key`, if any.
    fn meta(&self, key: &Digest) -> Option<Vec<u8>>;
    /// Records a fact under `key`.
    fn put_meta(&self, key: &Digest, data: &[u8]);
    /// Where a push may mount the blobs of its layers from (`REGISTRY/REPOSITORY`), if
    /// anywhere: a lazy hit's blob is only there.
    fn mount_source(&self) -> Option<String>;
}
