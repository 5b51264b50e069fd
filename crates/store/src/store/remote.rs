//! A second tier for the layer cache and the cached facts: a shared cache somewhere else (the
//! registry's, [`crate::cache_repo`]), consulted when the store misses, told what the store
//! records, and offered the entries this machine built. The store knows only this interface,
//! not where the entries live.
//!
//! Everything here is an optimization: an unreachable or broken remote is a miss (reported
//! by the implementation), never a failed build. What a remote says is trusted as far as the
//! registry it lives in is: `verify` rebuilds without it and catches an entry that lies.

use std::path::{Path, PathBuf};

use fs_err as fs;

use super::{CachedLayer, Store};
use crate::digest::Digest;

/// What a remote did with an entry it was given or offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offered {
    /// It has the entry now (it had it, or recorded it).
    There,
    /// A dry run: it would record it (counted, not made).
    WouldRecord,
    /// Not there: a read-only remote, a failed write, an entry naming another layer.
    No,
}

/// A shared cache of layers (input key → layer) and facts (key → small JSON document).
pub trait Remote: Send + Sync {
    /// The layer recorded for `key`, if any.
    fn layer(&self, key: &Digest) -> Option<CachedLayer>;
    /// Puts `layer`'s blob into `store`, verified against its digest; whether it did.
    fn fetch(&self, layer: &CachedLayer, store: &Store) -> bool;
    /// Whether a hit's blob is left where it is (a push to the same registry mounts it).
    fn lazy(&self) -> bool;
    /// Records `layer` (its blob read from `store`) under `key`.
    fn put_layer(&self, key: &Digest, layer: &CachedLayer, store: &Store) -> Offered;
    /// Whether the remote's entry for `key` names the layer `digest` (asked, nothing written:
    /// for a layer this machine took from it, whose blob a push may mount from there).
    fn has_layer(&self, key: &Digest, digest: &Digest) -> bool;
    /// Records `layer`, built by this machine earlier, under `key` unless the remote has an
    /// entry for it already (a machine with a warm store joining a cache). A read-only remote
    /// neither looks nor writes.
    fn share(&self, key: &Digest, layer: &CachedLayer, store: &Store) -> Offered;
    /// The fact recorded under `key`, if any.
    fn meta(&self, key: &Digest) -> Option<Vec<u8>>;
    /// Records a fact under `key`.
    fn put_meta(&self, key: &Digest, data: &[u8]) -> Offered;
    /// Records a fact this machine derived earlier unless the remote has one for `key` (see
    /// [`Remote::share`]).
    fn share_meta(&self, key: &Digest, data: &[u8]) -> Offered;
    /// Whether blob `digest` will be in the remote before a push that follows (a dry run's
    /// write, counted and not made: `plan` predicts the push's mount of it).
    fn will_have(&self, _digest: &Digest) -> bool {
        false
    }
    /// Where a push may mount the blobs of its layers from (`REGISTRY/REPOSITORY`), if
    /// anywhere: a lazy hit's blob is only there.
    fn mount_source(&self) -> Option<String>;
}

/// The two kinds of entries, in the names of the store's marks.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Layer,
    Fact,
}

impl Kind {
    fn name(self, key: &Digest) -> String {
        match self {
            Kind::Layer => format!("layer-{}", key.hex()),
            Kind::Fact => format!("fact-{}", key.hex()),
        }
    }
}

/// What the store remembers about its remote, in marks (empty files) under `remote/`:
/// `taken/KIND-KEY`, the local entry came from a remote (never offered back: a bad entry
/// deleted from the repository must not return from each machine that took it); and
/// `shared/REPO-ID/KIND-KEY`, that repository has the entry (not asked again; a push to its
/// registry mounts the layer from there). Marks are hints: writing or removing one never fails
/// a build (a mark left out costs a question to the registry, a stale one a mount that falls
/// back to an upload), and `cache prune` forgets the `shared` ones.
impl Store {
    fn taken_mark(&self, kind: Kind, key: &Digest) -> PathBuf {
        self.root.join("remote/taken").join(kind.name(key))
    }

    fn shared_mark(&self, remote: &dyn Remote, kind: Kind, key: &Digest) -> Option<PathBuf> {
        let source = remote.mount_source()?;
        let id = Digest::of(source.as_bytes()).hex()[..16].to_string();
        Some(
            self.root
                .join("remote/shared")
                .join(id)
                .join(kind.name(key)),
        )
    }

    fn mark(&self, path: &Path) -> bool {
        if let Some(dir) = path.parent() {
            let _ = fs::create_dir_all(dir);
        }
        self.write_small(path, b"").is_ok()
    }

    /// The local entry for `key` about to be written comes from the remote, which has it;
    /// whether the taken mark was written (marked first: without it, the caller writes no
    /// local entry, which would be offered back).
    pub(super) fn mark_taken(&self, kind: Kind, key: &Digest) -> bool {
        if !self.mark(&self.taken_mark(kind, key)) {
            return false;
        }
        if let Some(r) = &self.remote {
            if let Some(p) = self.shared_mark(r.as_ref(), kind, key) {
                self.mark(&p);
            }
        }
        true
    }

    /// The entry for `key` was built here (again): not one taken from a remote, and what any
    /// repository has for it is asked again.
    pub(super) fn unmark(&self, kind: Kind, key: &Digest) {
        let _ = fs::remove_file(self.taken_mark(kind, key));
        let shared = self.root.join("remote/shared");
        if let Ok(repos) = fs::read_dir(&shared) {
            for repo in repos.flatten() {
                let _ = fs::remove_file(repo.path().join(kind.name(key)));
            }
        }
    }

    /// What the remote did with an entry given to it (`put_*`) or offered (`share*`): a blob
    /// it has (or a dry run would put there) is noted for the push to mount.
    pub(super) fn record_offer(
        &self,
        kind: Kind,
        key: &Digest,
        layer: Option<&CachedLayer>,
        offered: Offered,
    ) {
        let Some(remote) = &self.remote else {
            return;
        };
        if offered == Offered::No {
            return;
        }
        if let Some(l) = layer {
            self.note_remote_blob(l);
        }
        if offered == Offered::There {
            if let Some(p) = self.shared_mark(remote.as_ref(), kind, key) {
                self.mark(&p);
            }
        }
    }

    /// A local hit: noted as in the remote when that repository has it, else offered to it
    /// unless it came from a remote.
    pub(super) fn offer(&self, kind: Kind, key: &Digest, layer: Option<&CachedLayer>, fact: &[u8]) {
        let Some(remote) = &self.remote else {
            return;
        };
        if let Some(p) = self.shared_mark(remote.as_ref(), kind, key) {
            if p.exists() {
                if let Some(l) = layer {
                    self.note_remote_blob(l);
                }
                return;
            }
        }
        if self.taken_mark(kind, key).exists() {
            // Never offered back; but where the repository still has the layer (its shared
            // mark forgotten by `cache prune`), a push mounts it from there.
            if let Some(l) = layer {
                if remote.has_layer(key, &l.digest) {
                    self.record_offer(kind, key, layer, Offered::There);
                }
            }
            return;
        }
        let offered = match layer {
            Some(l) => remote.share(key, l, self),
            None => remote.share_meta(key, fact),
        };
        self.record_offer(kind, key, layer, offered);
    }
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
        lazy: bool,
        shared: Mutex<Vec<Digest>>,
    }

    impl Fake {
        fn new(key: Digest, layer: &CachedLayer, bytes: &[u8], lazy: bool) -> Arc<Fake> {
            Arc::new(Fake {
                key,
                layer: layer.clone(),
                bytes: bytes.to_vec(),
                fetches: Mutex::new(0),
                facts: Mutex::new(Vec::new()),
                lazy,
                shared: Mutex::new(Vec::new()),
            })
        }
    }

    fn layer_of(bytes: &[u8]) -> CachedLayer {
        CachedLayer {
            media_type: "application/vnd.oci.image.layer.v1.tar".into(),
            digest: Digest::of(bytes),
            size: bytes.len() as u64,
            diff_id: Digest::of(bytes),
            uncompressed_size: bytes.len() as u64,
            annotations: Default::default(),
        }
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
            self.lazy
        }
        fn put_layer(&self, _: &Digest, _: &CachedLayer, _: &Store) -> Offered {
            Offered::No
        }
        fn has_layer(&self, key: &Digest, digest: &Digest) -> bool {
            *key == self.key && *digest == self.layer.digest
        }
        fn share(&self, key: &Digest, _: &CachedLayer, _: &Store) -> Offered {
            self.shared.lock().unwrap().push(*key);
            Offered::There
        }
        fn meta(&self, _: &Digest) -> Option<Vec<u8>> {
            None
        }
        fn put_meta(&self, key: &Digest, _: &[u8]) -> Offered {
            self.facts.lock().unwrap().push(*key);
            Offered::There
        }
        fn share_meta(&self, _: &Digest, _: &[u8]) -> Offered {
            Offered::No
        }
        fn mount_source(&self) -> Option<String> {
            Some("registry.example/cache".into())
        }
    }

    #[test]
    fn a_lazy_hit_is_fetched_only_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = b"layer bytes".to_vec();
        let layer = layer_of(&bytes);
        let key = Digest::of(b"key");
        let fake = Fake::new(key, &layer, &bytes, true);
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

    #[test]
    fn a_hit_taken_from_the_remote_is_never_offered_back_and_one_built_here_once() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = b"their layer".to_vec();
        let theirs = layer_of(&bytes);
        let key = Digest::of(b"theirs");
        let fake = Fake::new(key, &theirs, &bytes, false);
        // Each build opens the store anew (its marks are on disk).
        let build = || Store::open(dir.path()).unwrap().with_remote(fake.clone());
        // Taken (fetched: not lazy), then a local hit in the next build: not offered.
        assert_eq!(build().cached_layer(&key).unwrap(), Some(theirs.clone()));
        assert_eq!(*fake.fetches.lock().unwrap(), 1);
        let next = build();
        assert_eq!(next.cached_layer(&key).unwrap(), Some(theirs.clone()));
        assert!(fake.shared.lock().unwrap().is_empty());
        // (the remote has it: a push to its registry mounts it), also once `cache prune`
        // forgot that, asked again and still never offered
        assert!(next.is_remote_blob(&theirs.digest));
        drop(next);
        let report = crate::store::prune(dir.path()).unwrap();
        assert_eq!(report.shared_marks, 1);
        let pruned = build();
        assert_eq!(pruned.cached_layer(&key).unwrap(), Some(theirs.clone()));
        assert!(pruned.is_remote_blob(&theirs.digest));
        assert!(fake.shared.lock().unwrap().is_empty());
        // Built here: offered on its first local hit, and the remote's answer remembered.
        let ours_bytes = b"our layer".to_vec();
        let ours = layer_of(&ours_bytes);
        let our_key = Digest::of(b"ours");
        let store = build();
        store.put_bytes(&ours_bytes).unwrap();
        store.put_cached_layer(&our_key, &ours).unwrap();
        assert_eq!(build().cached_layer(&our_key).unwrap(), Some(ours.clone()));
        assert_eq!(build().cached_layer(&our_key).unwrap(), Some(ours));
        assert_eq!(*fake.shared.lock().unwrap(), vec![our_key]);
        // Their layer rebuilt here (`--no-cache`) is ours now: offered.
        build().put_cached_layer(&key, &theirs).unwrap();
        build().cached_layer(&key).unwrap();
        assert_eq!(*fake.shared.lock().unwrap(), vec![our_key, key]);
    }
}
