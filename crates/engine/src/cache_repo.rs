//! The registry as a shared layer cache (`build --cache-repo REG/REPO`): a layer's cache entry
//! (its input key → the layer's descriptor, diff_id and size) and a cached fact (key → a small
//! JSON document: the base's facts, a wheel set's plan, an interpreter's description) are
//! small OCI artifacts in one repository, each under a tag made from its key, with the layer
//! blobs beside them. Keys are pure functions of the inputs (the lock's digests, the files'
//! hashes), so an entry is exact: a machine that never saw the recipe finds the layers of
//! another machine's build, and a push to the same registry mounts them without downloading.
//!
//! Entries are as trusted as the registry they are in: a hit's blob is verified against the
//! digest the entry names, but that the entry's layer is what its inputs build is not
//! checked here; `verify` rebuilds without the cache and catches an entry that lies. No
//! referrers API is needed (plain tags).
//!
//! A registry that fails is a miss (and a warning), never a failed build.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::Serialize;
use serde_json::json;

use crate::diag::chain;
use crate::digest::Digest;
use crate::image::{self, Descriptor, Manifest};
use crate::progress::Silent;
use crate::registry::{Client, Reference, RegistryError};
use crate::store::remote::{Offered, Remote};
use crate::store::{CachedLayer, Store};

/// The artifact type of a layer's cache entry.
pub const LAYER_ENTRY: &str = "application/vnd.dev.ocibuild.cache.layer.v1";
/// The artifact type of a cached fact, and its one layer's media type.
pub const FACT_ENTRY: &str = "application/vnd.dev.ocibuild.cache.fact.v1+json";
/// A cached fact is a small document; an entry claiming more is refused before downloading.
const MAX_FACT: u64 = 16 << 20;

pub mod annotations {
    /// The entry's input key.
    pub const KEY: &str = "dev.ocibuild.cache.key";
    pub const DIFF_ID: &str = "dev.ocibuild.cache.diff-id";
    pub const UNCOMPRESSED_SIZE: &str = "dev.ocibuild.cache.uncompressed-size";
}

/// The tag of the layer entry for `key`.
pub fn layer_tag(key: &Digest) -> String {
    format!("ocibuild-layer-{}", key.hex())
}

/// The tag of the fact entry for `key`.
pub fn fact_tag(key: &Digest) -> String {
    format!("ocibuild-fact-{}", key.hex())
}

/// What the cache repository did during one build, for its report.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheStats {
    pub repo: String,
    pub readonly: bool,
    /// `plan`'s: nothing was written; the counts of writes are what the build will write.
    pub dry_run: bool,
    /// Layers found there (`layerHits`), with their blobs' bytes downloaded (`downloadedBytes`;
    /// none when a push to the same registry mounts them).
    pub layer_hits: u64,
    pub downloaded_bytes: u64,
    pub layer_misses: u64,
    pub fact_hits: u64,
    /// Entries written (layers with their blobs, facts) and the blob bytes uploaded.
    pub layers_written: u64,
    pub facts_written: u64,
    pub uploaded_bytes: u64,
    /// What failed (each a miss or a write left out, not a failed build).
    pub warnings: Vec<String>,
}

/// A cache repository.
pub struct RepoCache {
    client: std::sync::Arc<Client>,
    repo: Reference,
    readonly: bool,
    lazy: bool,
    /// Writes counted, not made ([`RepoCache::dry_run`]); the layer blobs they would put.
    dry_run: bool,
    pending: Mutex<BTreeSet<Digest>>,
    /// A dry run's answer to whether these credentials may push (asked once).
    may_push: Mutex<Option<bool>>,
    /// What became of each entry (by tag) this build wrote, would write or found there: each
    /// is written, or asked for, once.
    done: Mutex<BTreeMap<String, Offered>>,
    /// Set after a read that failed (not a miss): the registry is not read again in this
    /// build. Writes have their own flag: a refused write leaves reads on.
    down: AtomicBool,
    write_down: AtomicBool,
    stats: Mutex<CacheStats>,
}

impl RepoCache {
    /// The cache in `repo` (`REGISTRY/REPOSITORY`, no tag), through `client`. `readonly`: read,
    /// never write (untrusted jobs). `lazy`: a hit's blob is left in the registry (a push to
    /// the same registry mounts it).
    pub fn new(
        client: std::sync::Arc<Client>,
        repo: Reference,
        readonly: bool,
        lazy: bool,
    ) -> RepoCache {
        let stats = CacheStats {
            repo: format!("{}/{}", repo.registry(), repo.repository()),
            readonly,
            ..CacheStats::default()
        };
        RepoCache {
            client,
            repo,
            readonly,
            lazy,
            dry_run: false,
            pending: Mutex::default(),
            may_push: Mutex::default(),
            done: Mutex::default(),
            down: AtomicBool::new(false),
            write_down: AtomicBool::new(false),
            stats: Mutex::new(stats),
        }
    }

    /// This cache for `plan`: it reads, and writes nothing, but says what a build would write
    /// (counted in its stats), and [`Remote::will_have`] the layer blobs it would put there.
    pub fn dry_run(mut self) -> RepoCache {
        self.dry_run = true;
        if let Ok(s) = self.stats.get_mut() {
            s.dry_run = true;
        }
        self
    }

    /// The repository (`REGISTRY/REPOSITORY`).
    pub fn repo(&self) -> &Reference {
        &self.repo
    }

    /// What it did so far.
    pub fn stats(&self) -> CacheStats {
        self.stats.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn count(&self, f: impl FnOnce(&mut CacheStats)) {
        if let Ok(mut s) = self.stats.lock() {
            f(&mut s);
        }
    }

    /// A failed read: reported, and the registry not read again in this build.
    fn failed(&self, what: &str, e: &dyn std::fmt::Display) {
        self.down.store(true, Ordering::Relaxed);
        self.warn(what, e);
    }

    /// A failed write: reported, and nothing more written in this build.
    fn failed_write(&self, what: &str, e: &dyn std::fmt::Display) {
        self.write_down.store(true, Ordering::Relaxed);
        self.warn(what, e);
    }

    fn warn(&self, what: &str, e: &dyn std::fmt::Display) {
        let line = format!(
            "cache repo {}/{}: {what}: {e}; going on without it",
            self.repo.registry(),
            self.repo.repository()
        );
        self.count(|s| s.warnings.push(line));
    }

    fn at(&self, tag: &str) -> Option<Reference> {
        match self.repo.with_tag(tag) {
            Ok(r) => Some(r),
            Err(e) => {
                self.failed("a tag", &chain(&e));
                None
            }
        }
    }

    /// What became of the entry under `tag` in this build, if it was written or looked at.
    fn done(&self, tag: &str) -> Option<Offered> {
        self.done.lock().ok().and_then(|d| d.get(tag).copied())
    }

    fn set_done(&self, tag: &str, offered: Offered) -> Offered {
        if let Ok(mut d) = self.done.lock() {
            d.insert(tag.to_string(), offered);
        }
        offered
    }

    /// Whether a write may go on: not read-only, not after a failed write, and for a dry run
    /// the registry lets these credentials push (what it counts would not be written else).
    fn writable(&self) -> bool {
        if self.readonly || self.write_down.load(Ordering::Relaxed) {
            return false;
        }
        if !self.dry_run {
            return true;
        }
        let Ok(mut asked) = self.may_push.lock() else {
            return false;
        };
        *asked.get_or_insert_with(|| match self.client.check_push(&self.repo) {
            Ok(()) => true,
            Err(e) => {
                self.failed_write("the build's writes would fail", &chain(&e));
                false
            }
        })
    }

    /// A dry run's write of the entry under `tag`, whose one blob is `digest`: counted (its
    /// bytes unless the repository, or an earlier write, has that blob), not made.
    fn dry_write(&self, tag: &str, digest: &Digest, size: u64, layer: bool) -> Offered {
        let pending = self.will_have(digest);
        let there = pending
            || (!self.down.load(Ordering::Relaxed)
                && self.client.blob_exists(&self.repo, digest).unwrap_or(false));
        self.count(|s| {
            if layer {
                s.layers_written += 1;
            } else {
                s.facts_written += 1;
            }
            s.uploaded_bytes += if there { 0 } else { size };
        });
        if let Ok(mut p) = self.pending.lock() {
            p.insert(*digest);
        }
        self.set_done(tag, Offered::WouldRecord)
    }

    /// The entry manifest under `tag`, if there is one.
    fn entry(&self, tag: &str) -> Option<Manifest> {
        if self.down.load(Ordering::Relaxed) {
            return None;
        }
        let at = self.at(tag)?;
        match self.client.get_manifest(&at) {
            Ok(m) => match serde_json::from_slice::<Manifest>(&m.bytes) {
                Ok(parsed) => Some(parsed),
                Err(e) => {
                    self.count(|s| {
                        s.warnings
                            .push(format!("cache entry {at}: not a manifest ({e}); ignored"));
                    });
                    None
                }
            },
            Err(e) if crate::push::is_manifest_unknown(&e) => None,
            Err(e) => {
                self.failed("reading an entry", &chain(&e));
                None
            }
        }
    }

    /// Pushes an artifact manifest with the empty config and `layer` (its blob in `store`)
    /// under `tag`; the bytes uploaded, or what failed.
    fn put_entry(
        &self,
        tag: &str,
        artifact_type: &str,
        layer: Descriptor,
        annotations: serde_json::Value,
        store: &Store,
    ) -> Result<u64, String> {
        let e = |e: RegistryError| chain(&e);
        let at = self.repo.with_tag(tag).map_err(|e| chain(&e))?;
        let mut uploaded = 0;
        let pushed = self
            .client
            .push_blob(&self.repo, &layer.digest, layer.size, store, None, &Silent)
            .map_err(e)?;
        if matches!(
            pushed,
            crate::registry::client::BlobPush::Uploaded
                | crate::registry::client::BlobPush::UploadedChunked
        ) {
            uploaded += layer.size;
        }
        let empty = store.put_bytes(image::EMPTY_JSON).map_err(|e| chain(&e))?;
        let empty_size = image::EMPTY_JSON.len() as u64;
        self.client
            .push_blob(&self.repo, &empty, empty_size, store, None, &Silent)
            .map_err(e)?;
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": image::MEDIA_TYPE_MANIFEST,
            "artifactType": artifact_type,
            "config": {
                "mediaType": image::MEDIA_TYPE_EMPTY,
                "digest": empty,
                "size": empty_size,
                "data": "e30=",
            },
            "layers": [layer],
            "annotations": annotations,
        });
        let bytes =
            crate::json::to_canonical_vec("cache entry", &manifest).map_err(|e| chain(&e))?;
        self.client
            .push_manifest(&at, tag, &bytes, image::MEDIA_TYPE_MANIFEST)
            .map_err(e)?;
        Ok(uploaded)
    }
}

/// The layer an entry for `key` describes, if it is a well-formed one.
fn layer_of(m: &Manifest, key: &Digest) -> Option<CachedLayer> {
    if m.artifact_type.as_deref() != Some(LAYER_ENTRY)
        || m.annotations.get(annotations::KEY) != Some(&key.to_string())
    {
        return None;
    }
    let [l] = m.layers.as_slice() else {
        return None;
    };
    if !crate::layer::LAYER_MEDIA_TYPES.contains(&l.media_type.as_str()) {
        return None;
    }
    Some(CachedLayer {
        media_type: l.media_type.clone(),
        digest: l.digest,
        size: l.size,
        diff_id: m.annotations.get(annotations::DIFF_ID)?.parse().ok()?,
        uncompressed_size: m
            .annotations
            .get(annotations::UNCOMPRESSED_SIZE)?
            .parse()
            .ok()?,
        annotations: l.annotations.clone(),
    })
}

/// The one blob of a fact entry for `key`, if it is a well-formed one of a bounded size.
fn fact_of<'a>(m: &'a Manifest, key: &Digest) -> Option<&'a Descriptor> {
    if m.artifact_type.as_deref() != Some(FACT_ENTRY)
        || m.annotations.get(annotations::KEY) != Some(&key.to_string())
    {
        return None;
    }
    match m.layers.as_slice() {
        [l] if l.size <= MAX_FACT => Some(l),
        _ => None,
    }
}

impl Remote for RepoCache {
    fn layer(&self, key: &Digest) -> Option<CachedLayer> {
        let found = self.entry(&layer_tag(key)).and_then(|m| layer_of(&m, key));
        self.count(|s| match found {
            Some(_) => s.layer_hits += 1,
            None => s.layer_misses += 1,
        });
        found
    }

    fn fetch(&self, layer: &CachedLayer, store: &Store) -> bool {
        if self.down.load(Ordering::Relaxed) {
            return false;
        }
        match self
            .client
            .pull_blob(&self.repo, &layer.digest, Some(layer.size), store, &Silent)
        {
            Ok(()) => {
                self.count(|s| s.downloaded_bytes += layer.size);
                true
            }
            Err(e) => {
                self.failed(&format!("downloading {}", layer.digest), &chain(&e));
                false
            }
        }
    }

    fn lazy(&self) -> bool {
        self.lazy
    }

    fn will_have(&self, digest: &Digest) -> bool {
        self.pending
            .lock()
            .map(|p| p.contains(digest))
            .unwrap_or(false)
    }

    fn mount_source(&self) -> Option<String> {
        Some(format!(
            "{}/{}",
            self.repo.registry(),
            self.repo.repository()
        ))
    }

    fn put_layer(&self, key: &Digest, layer: &CachedLayer, store: &Store) -> Offered {
        let tag = layer_tag(key);
        if !self.writable() {
            return Offered::No;
        }
        if let Some(done) = self.done(&tag) {
            return done;
        }
        if self.dry_run {
            return self.dry_write(&tag, &layer.digest, layer.size, true);
        }
        // The layer's own annotations (a partial-pull TOC's) travel on its descriptor.
        let descriptor = layer.descriptor();
        let notes = json!({
            annotations::KEY: key.to_string(),
            annotations::DIFF_ID: layer.diff_id.to_string(),
            annotations::UNCOMPRESSED_SIZE: layer.uncompressed_size.to_string(),
        });
        match self.put_entry(&tag, LAYER_ENTRY, descriptor, notes, store) {
            Ok(n) => {
                self.count(|s| {
                    s.layers_written += 1;
                    s.uploaded_bytes += n;
                });
                self.set_done(&tag, Offered::There)
            }
            Err(e) => {
                self.failed_write(&format!("writing the entry of {}", layer.digest), &e);
                Offered::No
            }
        }
    }

    fn has_layer(&self, key: &Digest, digest: &Digest) -> bool {
        let tag = layer_tag(key);
        if let Some(done) = self.done(&tag) {
            return done == Offered::There;
        }
        let there = self
            .entry(&tag)
            .and_then(|m| layer_of(&m, key))
            .is_some_and(|l| l.digest == *digest);
        there && self.set_done(&tag, Offered::There) == Offered::There
    }

    fn share(&self, key: &Digest, layer: &CachedLayer, store: &Store) -> Offered {
        let tag = layer_tag(key);
        if self.readonly || self.write_down.load(Ordering::Relaxed) {
            return Offered::No;
        }
        if let Some(done) = self.done(&tag) {
            return done;
        }
        match self.entry(&tag).and_then(|m| layer_of(&m, key)) {
            Some(there) if there.digest == layer.digest => self.set_done(&tag, Offered::There),
            Some(there) => {
                // Not overwritten: which one is right is for `verify` to say.
                self.count(|s| {
                    s.warnings.push(format!(
                        "cache entry {tag}: names {} where this machine has {} for the same \
                         inputs (an entry that lies, or a build that is not reproducible: \
                         `ocibuild verify` says which)",
                        there.digest, layer.digest
                    ));
                });
                self.set_done(&tag, Offered::No)
            }
            None if self.down.load(Ordering::Relaxed) => Offered::No,
            None => self.put_layer(key, layer, store),
        }
    }

    fn meta(&self, key: &Digest) -> Option<Vec<u8>> {
        let m = self.entry(&fact_tag(key))?;
        let l = fact_of(&m, key)?;
        let scratch = tempfile::Builder::new()
            .prefix("ocibuild-cache-fact-")
            .tempdir()
            .ok()?;
        let store = Store::open(scratch.path()).ok()?;
        match self
            .client
            .pull_blob(&self.repo, &l.digest, Some(l.size), &store, &Silent)
        {
            Ok(()) => {
                let bytes = store.read_blob(&l.digest).ok()?;
                self.count(|s| s.fact_hits += 1);
                Some(bytes)
            }
            Err(e) => {
                self.failed(&format!("downloading the fact {}", l.digest), &chain(&e));
                None
            }
        }
    }

    fn share_meta(&self, key: &Digest, data: &[u8]) -> Offered {
        let tag = fact_tag(key);
        if self.readonly || self.write_down.load(Ordering::Relaxed) {
            return Offered::No;
        }
        if let Some(done) = self.done(&tag) {
            return done;
        }
        match self.entry(&tag) {
            Some(m) if fact_of(&m, key).is_some() => self.set_done(&tag, Offered::There),
            None if self.down.load(Ordering::Relaxed) => Offered::No,
            // Missing, or not a fact entry (a miss for every reader): ours is recorded.
            _ => self.put_meta(key, data),
        }
    }

    fn put_meta(&self, key: &Digest, data: &[u8]) -> Offered {
        let tag = fact_tag(key);
        if !self.writable() {
            return Offered::No;
        }
        if let Some(done) = self.done(&tag) {
            return done;
        }
        if self.dry_run {
            return self.dry_write(&tag, &Digest::of(data), data.len() as u64, false);
        }
        let scratch = match tempfile::Builder::new()
            .prefix("ocibuild-cache-fact-")
            .tempdir()
        {
            Ok(d) => d,
            Err(e) => {
                self.failed_write("a temporary directory", &e);
                return Offered::No;
            }
        };
        let put = Store::open(scratch.path())
            .map_err(|e| chain(&e))
            .and_then(|store| {
                let digest = store.put_bytes(data).map_err(|e| chain(&e))?;
                let layer = Descriptor::new(FACT_ENTRY, digest, data.len() as u64);
                let notes = json!({ annotations::KEY: key.to_string() });
                self.put_entry(&tag, FACT_ENTRY, layer, notes, &store)
            });
        match put {
            Ok(n) => {
                self.count(|s| {
                    s.facts_written += 1;
                    s.uploaded_bytes += n;
                });
                self.set_done(&tag, Offered::There)
            }
            Err(e) => {
                self.failed_write("writing a fact", &e);
                Offered::No
            }
        }
    }
}
