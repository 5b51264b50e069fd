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
    /// Records `layer` (its blob read from `store`) under `key`; whether it did (a read-only
    /// remote, or one whose writes failed, did not).
    fn put_layer(&self, key: &Digest, layer: &CachedLayer, store: &Store) -> bool;
    /// Records `layer`, a hit of the store's own, under `key` unless the remote has it
    /// already (a machine with a warm store joining a cache); whether the remote has it
    /// now. A read-only remote neither looks nor writes.
    fn share(&self, key: &Digest, layer: &CachedLayer, store: &Store) -> bool;
    /// The fact recorded under `key`, if any.
    fn meta(&self, key: &Digest) -> Option<Vec<u8>>;
    /// Records a fact under `key`.
    fn put_meta(&self, key: &Digest, data: &[u8]);
    /// Records a fact the store had under `key` unless the remote has one (see
    /// [`Remote::share`]).
    fn share_meta(&self, key: &Digest, data: &[u8]);
    /// Whether blob `digest` will be in the remote before a push that follows (a dry run's
    /// write, counted and not made: `plan` predicts the push's mount of it).
    fn will_have(&self, _digest: &Digest) -> bool {
        false
    }
    /// Where a push may mount the blobs of its layers from (`REGISTRY/REPOSITORY`), if
    /// anywhere: a lazy hit's blob is only there.
    fn mount_source(&self) -> Option<String>;
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A lazy remote holding one layer (its bytes in memory), counting fetches and writes.
    struct Fake {
        key: Digest,
        layer: CachedLayer,
        bytes: Vec<u8>,
        fetches: Mutex<u32>,
        facts: Mutex<Vec<Digest>>,
    }

    impl Remote for Fake {
        fn layer(&self, key: &Digest) -> Option<CachedLayer> {
            (*key == self.key).then(|| self.layer.clone())
        }
        fn fetch(&self, layer: &CachedLayer, store: &Store) -> bool {
            *self.fetches.lock().unwrap() += 1;
            store.put_bytes(&self.bytes).ok() == Some(layer.digest)
        }
        fn lazy(&self) -> bool {
            true
        }
        fn put_layer(&self, _: &Digest, _: &CachedLayer, _: &Store) -> bool {
            false
        }
        fn share(&self, _: &Digest, _: &CachedLayer, _: &Store) -> bool {
            false
        }
        fn meta(&self, _: &Digest) -> Option<Vec<u8>> {
            None
        }
        fn put_meta(&self, key: &Digest, _: &[u8]) {
            self.facts.lock().unwrap().push(*key);
        }
        fn share_meta(&self, _: &Digest, _: &[u8]) {}
        fn mount_source(&self) -> Option<String> {
            Some("registry.example/cache".into())
        }
    }

    #[test]
    fn a_lazy_hit_is_fetched_only_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = b"layer bytes".to_vec();
        let layer = CachedLayer {
            media_type: "application/vnd.oci.image.layer.v1.tar".into(),
            digest: Digest::of(&bytes),
            size: bytes.len() as u64,
            diff_id: Digest::of(&bytes),
            uncompressed_size: bytes.len() as u64,
        };
        let key = Digest::of(b"key");
        let fake = Arc::new(Fake {
            key,
            layer: layer.clone(),
            bytes: bytes.clone(),
            fetches: Mutex::new(0),
            facts: Mutex::new(Vec::new()),
        });
        let store = Store::open(dir.path()).unwrap().with_remote(fake.clone());
        // A hit: the layer, its blob left in the remote.
        assert_eq!(store.cached_layer(&key).unwrap(), Some(layer.clone()));
        assert!(!store.has_blob(&layer.digest) && store.is_remote_blob(&layer.digest));
        assert_eq!(*fake.fetches.lock().unwrap(), 0);
        // A reader needs it: fetched then, once.
        assert_eq!(store.read_blob(&layer.digest).unwrap(), bytes);
        assert_eq!(store.read_blob(&layer.digest).unwrap(), bytes);
        assert_eq!(*fake.fetches.lock().unwrap(), 1);
        // A miss stays a miss; a fact recorded here is recorded in the remote too.
        assert_eq!(store.cached_layer(&Digest::of(b"other")).unwrap(), None);
        store.put_meta(&key, b"{}").unwrap();
        assert_eq!(*fake.facts.lock().unwrap(), vec![key]);
    }
}
