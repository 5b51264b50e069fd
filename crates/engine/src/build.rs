//! The planner: recipe → layers (cached or built into the store) → config and manifest.
//!
//! A layer is a pure function of its inputs. Its cache key is the sha256 of a canonical
//! description of those inputs: the determinism contract version, the compressor identity,
//! SOURCE_DATE_EPOCH, and for every entry its path, type, mode, owner and content digest (or link
//! target). Computing that key means reading every file, so a second, cheaper key sits in front of
//! it: a fingerprint of the entries' host metadata (device, inode, size, mtime, ctime). When the
//! fingerprint is known, the files are not read at all; when it is not (a touched file, a fresh
//! checkout), contents are hashed and the content key decides.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use fs_err as fs;
use serde_json::json;

use crate::base::BaseImage;
use crate::digest::Digest;
use crate::image::{
    self, annotations, Descriptor, History, ImageConfig, ImageRecord, LayerRecord, Manifest,
    RootFs, RunConfig,
};
use crate::json::{self as cjson, JsonError};
use crate::layer::{self, Compression, Entry, EntryKind, LayerError, LayerOptions};
use crate::progress::Reporter;
use crate::recipe::{Base, Recipe};
use crate::store::{CachedLayer, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("base image `{reference}` was not resolved (internal: build needs the resolved base)")]
    RegistryBase { reference: String },
    #[error("base image config: {problem}")]
    BaseConfig { problem: String },
    #[error("layer `{layer}`")]
    Layer { layer: String, source: LayerError },
    #[error(transparent)]
    Paths(#[from] crate::paths::PathsError),
    #[error("reading the layers below the `paths` layer")]
    Listing(#[source] Box<crate::system::SystemError>),
    #[error("layer `{layer}`: reading {path}")]
    Read {
        layer: String,
        path: PathBuf,
        source: io::Error,
    },
    #[error(
        "the image would have {count} layers ({base} from the base), more than the {} an image \
         may have (containerd's and Docker's overlay storage); merge some [[layer]]s",
        image::MAX_LAYERS
    )]
    TooManyLayers { count: usize, base: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Json(#[from] JsonError),
}

/// Knobs that do not change the image (except `epoch`).
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Worker threads for hashing and compression. Never changes any output byte.
    pub threads: usize,
    /// The epoch of every layer and of the config's `created`, as the session resolved it
    /// ([`crate::session::Session::epoch`]).
    pub epoch: u64,
    /// Ignore the layer cache (still writes into it).
    pub no_cache: bool,
    /// sha256 of the recipe file's bytes: the `dev.ocibuild.recipe.digest` annotation.
    pub recipe_digest: Option<Digest>,
    /// sha256 of the lock file's bytes, when there is a lock: `dev.ocibuild.lock.digest`.
    pub lock_digest: Option<Digest>,
}

/// The result of a build, with per-layer cache information.
#[derive(Clone, Debug)]
pub struct Built {
    pub image: ImageRecord,
    /// For each layer, in order: (name, came from the cache).
    pub cached: Vec<(String, bool)>,
    /// The target interpreter, when the recipe has `[python]` (set by the caller that prepared
    /// the system layers).
    pub interpreter: Option<crate::python::Interpreter>,
    /// The wheels' shared paths and the shared libraries the base already has (set by the
    /// same caller; empty without wheels).
    pub wheels: crate::system::wheelset::WheelReport,
    /// What the `rootfs` layer holds and which maintainer scripts were not run (set by the
    /// same caller; `None` without that step).
    pub rootfs: Option<crate::rootfs::Report>,
    /// The `[apt] host-provides` names with what each satisfied, and the warnings of the
    /// system step (set by the same caller).
    pub host_provides: Vec<crate::lock::LockedHostProvides>,
    pub warnings: Vec<String>,
    /// What each `[[step]]` did (set by the same caller; empty without steps).
    pub steps: Vec<crate::steps::report::StepReport>,
    /// Whether the image has `/bin/sh`, where ocibuild knows its files (set by the same
    /// caller; `None`: not known).
    pub shell: Option<bool>,
}

/// Build every layer of `recipe` into `store` and assemble the image documents.
///
/// A recipe with a registry base needs `base`, resolved by [`crate::base::resolve`]: its layers
/// come first, byte for byte, and its config is inherited with the recipe's overrides.
pub fn build(
    recipe: &Recipe,
    base: Option<&BaseImage>,
    system: &[crate::system::Extra],
    opts: &BuildOptions,
    store: &Store,
    reporter: &dyn Reporter,
) -> Result<Built, BuildError> {
    if let (Base::Image { reference }, None) = (&recipe.base, base) {
        return Err(BuildError::RegistryBase {
            reference: reference.clone(),
        });
    }
    let epoch = opts.epoch;
    let compression = recipe.image.compression;
    let threads = opts.threads.max(1);
    let base_layers = base.map_or(0, |b| b.layers.len());
    let count =
        base_layers + system.len() + recipe.layers.len() + usize::from(!recipe.paths.is_empty());
    if count > image::MAX_LAYERS {
        return Err(BuildError::TooManyLayers {
            count,
            base: base_layers,
        });
    }

    // The base's layers first, byte for byte, as the store holds them.
    let mut layers: Vec<LayerRecord> = base.map(|b| b.layers.clone()).unwrap_or_default();
    let mut cached: Vec<(String, bool)> = (0..layers.len())
        .map(|i| (format!("base#{i}"), true))
        .collect();
    let ours_from = layers.len();
    let mut history = Vec::with_capacity(recipe.layers.len() + system.len());
    let created = image::rfc3339(epoch);
    // The system layers ([apt], [python]) above the base, below the recipe's own.
    for x in system {
        layers.push(LayerRecord::named(&x.name, &x.layer));
        cached.push((x.name.clone(), x.cached));
        history.push(History {
            created: Some(created.clone()),
            created_by: Some(x.created_by.clone()),
            comment: None,
            empty_layer: false,
        });
    }
    for l in &recipe.layers {
        let (rec, was_cached) = build_layer(
            l,
            epoch,
            compression,
            threads,
            opts.no_cache,
            store,
            reporter,
        )?;
        layers.push(rec);
        cached.push((l.name.clone(), was_cached));
        history.push(History {
            created: Some(created.clone()),
            created_by: Some(format!("ocibuild layer {}: {}", l.name, l.spec.dest)),
            comment: None,
            empty_layer: false,
        });
    }
    // The `[[path]]` entries, above everything else of ours.
    if !recipe.paths.is_empty() {
        let lopts = LayerOptions {
            epoch,
            compression,
            threads,
        };
        let (rec, was_cached) = paths_layer(recipe, &layers, &lopts, opts.no_cache, store)?;
        let name = crate::recipe::PATHS_LAYER;
        reporter.layer_finished(name, was_cached);
        layers.push(rec);
        cached.push((name.to_string(), was_cached));
        history.push(History {
            created: Some(created.clone()),
            created_by: Some(format!("ocibuild layer {name}: [[path]]")),
            comment: None,
            empty_layer: false,
        });
    }

    let c = &recipe.config;
    let run = run_config(c, base.is_none());
    let platform = &recipe.image.platform;
    let config = ImageConfig {
        created: Some(created.clone()),
        architecture: platform.architecture.clone(),
        os: platform.os.clone(),
        variant: platform.variant.clone(),
        config: run,
        rootfs: RootFs {
            kind: "layers".into(),
            diff_ids: layers[ours_from..].iter().map(|l| l.diff_id).collect(),
        },
        history,
    };
    let config_bytes = match base {
        None => cjson::to_canonical_vec("image config", &config)?,
        Some(b) => cjson::to_canonical_vec("image config", &inherit(&b.config, &config, c)?)?,
    };
    let config_desc = Descriptor::new(
        image::MEDIA_TYPE_CONFIG,
        store.put_bytes(&config_bytes)?,
        config_bytes.len() as u64,
    );

    let notes = manifest_annotations(recipe, base, opts, created);
    let manifest = Manifest {
        schema_version: 2,
        media_type: image::MEDIA_TYPE_MANIFEST.into(),
        artifact_type: None,
        config: config_desc.clone(),
        layers: layers.iter().map(|l| l.descriptor.clone()).collect(),
        subject: None,
        annotations: notes,
    };
    let manifest_bytes = cjson::to_canonical_vec("image manifest", &manifest)?;
    let mut manifest_desc = Descriptor::new(
        image::MEDIA_TYPE_MANIFEST,
        store.put_bytes(&manifest_bytes)?,
        manifest_bytes.len() as u64,
    );
    manifest_desc.platform = Some(platform.clone());

    Ok(Built {
        image: ImageRecord {
            name: recipe.image.name.clone(),
            tag: recipe.image.tag.clone(),
            manifest: manifest_desc,
            config: config_desc,
            layers,
            epoch,
        },
        cached,
        interpreter: None,
        rootfs: None,
        host_provides: Vec::new(),
        warnings: Vec::new(),
        wheels: Default::default(),
        steps: Vec::new(),
        shell: None,
    })
}

/// The config's runtime part: the recipe's `[config]`, with Docker's `PATH` on `scratch`.
fn run_config(c: &crate::recipe::Config, scratch: bool) -> RunConfig {
    RunConfig {
        env: config_env(&c.env, scratch),
        entrypoint: c.entrypoint.clone(),
        cmd: c.cmd.clone(),
        working_dir: c.workdir.clone(),
        user: c.user.clone(),
        labels: c.labels.clone(),
        exposed_ports: c
            .exposed_ports
            .iter()
            .map(|p| (p.clone(), json!({})))
            .collect(),
        stop_signal: c.stop_signal.clone(),
        volumes: c.volumes.iter().map(|v| (v.clone(), json!({}))).collect(),
        shell: c.shell.clone(),
        healthcheck: c
            .healthcheck
            .as_ref()
            .map(super::recipe::Healthcheck::config_value),
    }
}

/// The manifest's annotations: the recipe's, then ocibuild's (the base, `created`, the recipe
/// and lock digests, the contract and the compressor).
fn manifest_annotations(
    recipe: &Recipe,
    base: Option<&BaseImage>,
    opts: &BuildOptions,
    created: String,
) -> BTreeMap<String, String> {
    let mut notes: BTreeMap<String, String> = recipe.config.annotations.clone();
    if let Some(b) = base {
        notes.insert(annotations::BASE_NAME.into(), b.reference.clone());
        notes.insert(
            annotations::BASE_DIGEST.into(),
            b.manifest_digest.to_string(),
        );
    }
    notes.insert(annotations::CREATED.into(), created);
    if let Some(d) = &opts.recipe_digest {
        notes.insert(annotations::RECIPE_DIGEST.into(), d.to_string());
    }
    if let Some(d) = &opts.lock_digest {
        notes.insert(annotations::LOCK_DIGEST.into(), d.to_string());
    }
    notes.insert(
        annotations::CONTRACT.into(),
        layer::CONTRACT_VERSION.to_string(),
    );
    notes.insert(
        annotations::COMPRESSION.into(),
        recipe.image.compression.describe(),
    );
    notes
}

fn build_layer(
    l: &crate::recipe::Layer,
    epoch: u64,
    compression: Compression,
    threads: usize,
    no_cache: bool,
    store: &Store,
    reporter: &dyn Reporter,
) -> Result<(LayerRecord, bool), BuildError> {
    let opts = CopyLayer {
        epoch,
        compression,
        threads,
        no_cache,
    };
    let (layer, cached) = copy_layer(l, &opts, store, reporter)?;
    Ok((LayerRecord::named(&l.name, &layer), cached))
}

/// How [`copy_layer`] writes a layer.
#[derive(Clone, Copy, Debug)]
pub struct CopyLayer {
    pub epoch: u64,
    pub compression: Compression,
    pub threads: usize,
    pub no_cache: bool,
}

/// The layer of `l`'s files (a recipe's layer, a step's input or output) into `store`, from
/// the layer cache when its files' content key is there; whether it was.
pub fn copy_layer(
    l: &crate::recipe::Layer,
    opts: &CopyLayer,
    store: &Store,
    reporter: &dyn Reporter,
) -> Result<(CachedLayer, bool), BuildError> {
    let CopyLayer {
        epoch,
        compression,
        threads,
        no_cache,
    } = *opts;
    let lerr = |source| BuildError::Layer {
        layer: l.name.clone(),
        source,
    };
    let entries = layer::scan(std::slice::from_ref(&l.spec)).map_err(lerr)?;
    let total: u64 = entries
        .iter()
        .map(|e| {
            if let EntryKind::File { size, .. } = e.kind {
                size
            } else {
                0
            }
        })
        .sum();

    let fp = fingerprint(l, &entries, epoch, compression)?;
    let name = &l.name;
    if !no_cache {
        if let Some(key) = store.fingerprint(&fp)? {
            if let Some(hit) = store.cached_layer(&key)? {
                reporter.detail(&format!(
                    "layer {name}: cached as {} (its files' sizes and times are as when it \
                     was built; key {key})",
                    hit.digest
                ));
                reporter.layer_finished(name, true);
                return Ok((hit, true));
            }
        }
    }

    let (key, digests) = content_key(l, &entries, epoch, compression, threads)?;
    let _guard = store.lock(&key.hex())?;
    if no_cache {
        reporter.detail(&format!("layer {name}: building (--no-cache)"));
    } else {
        if let Some(hit) = store.cached_layer(&key)? {
            reporter.detail(&format!(
                "layer {name}: cached as {} (its files rehashed to key {key})",
                hit.digest
            ));
            store.put_fingerprint(&fp, &key)?;
            reporter.layer_finished(name, true);
            return Ok((hit, true));
        }
        reporter.detail(&format!(
            "layer {name}: building (no layer cache entry for key {key})"
        ));
    }

    reporter.layer_started(&l.name, total);
    let mut w = store.prehashed_blob_writer()?;
    let mut reader = layer::HostReader::new(std::slice::from_ref(&l.spec));
    let stats = layer::write_layer_with(
        &entries,
        &LayerOptions {
            epoch,
            compression,
            threads,
        },
        &mut w,
        &|n| reporter.layer_progress(&l.name, n),
        &mut |i, e, sink| {
            checked_host_content(&mut reader, e, digests.get(i).copied().flatten(), sink)
        },
    )
    .map_err(lerr)?;
    // Only now is the layer known to be of the bytes its key names: stored and cached.
    w.commit(Some(stats.digest))?;
    let cached = stats.cached(compression);
    store.put_cached_layer(&key, &cached)?;
    store.put_fingerprint(&fp, &key)?;
    reporter.layer_finished(&l.name, false);
    Ok((cached, false))
}

fn kind_code(k: &EntryKind) -> &'static str {
    match k {
        EntryKind::Dir => "dir",
        EntryKind::File { .. } => "file",
        EntryKind::Symlink { .. } => "symlink",
        EntryKind::Hardlink { .. } => "hardlink",
    }
}

/// The host-metadata fingerprint: cheap, and only ever used to find a content key computed before.
fn fingerprint(
    l: &crate::recipe::Layer,
    entries: &[Entry],
    epoch: u64,
    compression: Compression,
) -> Result<Digest, BuildError> {
    let s = &l.spec;
    let rows: Vec<_> = entries
        .iter()
        .map(|e| {
            let st = &e.stat;
            json!([
                e.path,
                kind_code(&e.kind),
                e.mode,
                e.uid,
                e.gid,
                link_target(&e.kind),
                st.dev,
                st.ino,
                st.size,
                st.mtime_ns.to_string(),
                st.ctime_ns.to_string(),
                st.mode
            ])
        })
        .collect();
    let spec = json!({"src": s.src.to_string_lossy(), "dest": s.dest, "ignore": s.ignore,
                      "uid": s.uid, "gid": s.gid, "mode": format!("{:?}", s.mode)});
    Ok(layer::cache_key(
        "layer fingerprint",
        "fingerprint/1",
        compression,
        epoch,
        [("spec", spec), ("entries", json!(rows))],
    )?)
}

fn link_target(k: &EntryKind) -> &str {
    match k {
        EntryKind::Symlink { target } | EntryKind::Hardlink { target } => target,
        _ => "",
    }
}

/// The content key: what the layer's bytes are a function of. Hashes file contents on `threads` threads.
fn content_key(
    l: &crate::recipe::Layer,
    entries: &[Entry],
    epoch: u64,
    compression: Compression,
    threads: usize,
) -> Result<(Digest, Vec<Option<blake3::Hash>>), BuildError> {
    let files: Vec<(usize, &PathBuf, u64)> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.kind {
            EntryKind::File { src, size } => Some((i, src, *size)),
            _ => None,
        })
        .collect();
    let mut digests: Vec<Option<blake3::Hash>> = vec![None; entries.len()];
    let next = AtomicU64::new(0);
    let results: Vec<Result<Vec<(usize, blake3::Hash)>, BuildError>> =
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads.min(files.len()).max(1))
                .map(|_| {
                    scope.spawn(|| {
                        let mut out = Vec::new();
                        let mut buf = vec![0u8; 256 * 1024];
                        // Each worker's own directory handles; its files come in entry order.
                        let mut reader = layer::HostReader::new(std::slice::from_ref(&l.spec));
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                            let Some(&(idx, path, size)) = files.get(i) else {
                                break;
                            };
                            let file =
                                open_scanned(&mut reader, &entries[idx]).map_err(|source| {
                                    BuildError::Layer {
                                        layer: l.name.clone(),
                                        source,
                                    }
                                })?;
                            let d = hash_file(file, size, &mut buf).map_err(|source| {
                                BuildError::Read {
                                    layer: l.name.clone(),
                                    path: path.clone(),
                                    source,
                                }
                            })?;
                            out.push((idx, d));
                        }
                        Ok(out)
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join().unwrap_or_else(|_| {
                        Err(BuildError::Read {
                            layer: l.name.clone(),
                            path: PathBuf::new(),
                            source: io::Error::other("hashing thread panicked"),
                        })
                    })
                })
                .collect()
        });
    for r in results {
        for (idx, d) in r? {
            digests[idx] = Some(d);
        }
    }
    let rows: Vec<_> = entries
        .iter()
        .zip(&digests)
        .map(|(e, d)| {
            let size = if let EntryKind::File { size, .. } = e.kind {
                size
            } else {
                0
            };
            json!([
                e.path,
                kind_code(&e.kind),
                e.mode,
                e.uid,
                e.gid,
                size,
                link_target(&e.kind),
                d.map(|d| format!("blake3:{}", d.to_hex()))
                    .unwrap_or_default()
            ])
        })
        .collect();
    let key = layer::cache_key(
        "layer key",
        "layer/2",
        compression,
        epoch,
        [("entries", json!(rows))],
    )?;
    Ok((key, digests))
}

/// A reader that hashes what passes through it (BLAKE3, as the content key does).
struct Blake3Reader<R> {
    inner: R,
    hasher: blake3::Hasher,
}

impl<R: Read> Read for Blake3Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// A scanned file opened through `reader`: the inode the scan listed, reached without following
/// a symlink below the layer's source, or [`LayerError::Replaced`].
fn open_scanned(reader: &mut layer::HostReader<'_>, e: &Entry) -> Result<fs::File, LayerError> {
    let path = match &e.kind {
        EntryKind::File { src, .. } => src.clone(),
        _ => PathBuf::new(),
    };
    match reader.open(e)? {
        Some(file) => Ok(fs::File::from_parts(file, path)),
        None => Err(LayerError::Contract {
            entry: e.path.clone(),
            reason: "only a regular file has content to read",
        }),
    }
}

/// The content of a host file for the layer writer, hashed as it streams and compared with
/// `expected` (what the cache key was computed from): a file rewritten between the two reads
/// fails the layer, so a layer is never cached under a key of other bytes than its own. The
/// file is opened through `reader` (the inode the scan listed).
fn checked_host_content(
    reader: &mut layer::HostReader<'_>,
    e: &Entry,
    expected: Option<blake3::Hash>,
    sink: &mut layer::ContentSink<'_>,
) -> Result<(), LayerError> {
    let EntryKind::File { src, .. } = &e.kind else {
        return Ok(());
    };
    let file = open_scanned(reader, e)?;
    let mut r = Blake3Reader {
        inner: file,
        hasher: blake3::Hasher::new(),
    };
    sink(layer::Content::Bytes(&mut r)).map_err(|err| layer::host_file_error(src, err))?;
    if Some(r.hasher.finalize()) != expected {
        return Err(LayerError::ContentChanged { path: src.clone() });
    }
    Ok(())
}

/// A file's BLAKE3 digest for the content key (a cache key only: it never reaches an image).
fn hash_file(mut f: fs::File, size: u64, buf: &mut [u8]) -> io::Result<blake3::Hash> {
    let mut h = blake3::Hasher::new();
    let mut n: u64 = 0;
    loop {
        let got = f.read(buf)?;
        if got == 0 {
            break;
        }
        h.update(&buf[..got]);
        n += got as u64;
    }
    let d = h.finalize();
    if n != size {
        return Err(io::Error::other(format!(
            "file changed while reading: expected {size} bytes, read {n}"
        )));
    }
    Ok(d)
}

/// The `paths` layer of the recipe's `[[path]]`s, written against `below` (every layer under
/// it, which the store must hold).
fn paths_layer(
    recipe: &Recipe,
    below: &[LayerRecord],
    opts: &LayerOptions,
    no_cache: bool,
    store: &Store,
) -> Result<(LayerRecord, bool), BuildError> {
    let layers: Vec<(Digest, String)> = below
        .iter()
        .map(|l| (l.descriptor.digest, l.descriptor.media_type.clone()))
        .collect();
    let lower = crate::system::listing::image_listing(store, &layers)
        .map_err(|e| BuildError::Listing(Box::new(e)))?
        .ok_or(crate::paths::PathsError::LowerUnknown)?;
    let (layer, was_cached) = crate::paths::layer(&recipe.paths, &lower, opts, no_cache, store)?;
    Ok((
        LayerRecord::named(crate::recipe::PATHS_LAYER, &layer),
        was_cached,
    ))
}

/// The config's `Env`: the recipe's, and on `scratch` Docker's default `PATH` unless the recipe
/// sets one (contract rule 20: what `docker run` assumes when an image has none, written down so
/// podman, `crane`, and a shell in the image see the same search path).
fn config_env(env: &BTreeMap<String, String>, scratch: bool) -> Vec<String> {
    let mut env = env.clone();
    if scratch {
        env.entry("PATH".into())
            .or_insert_with(|| image::DEFAULT_PATH.into());
    }
    env.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// The base's config with ours on top: rootfs and history appended, `created` ours, and the
/// recipe's settings overriding the base's (env by name, labels by key, ports and volumes added,
/// shell and healthcheck replaced). Setting an entrypoint without a cmd clears the base's cmd,
/// as a Dockerfile's ENTRYPOINT does. Fields ocibuild does not know are kept as the base had
/// them.
fn inherit(
    base: &serde_json::Value,
    ours: &ImageConfig,
    c: &crate::recipe::Config,
) -> Result<serde_json::Value, BuildError> {
    use serde_json::Value;
    let bad = |problem: &str| BuildError::BaseConfig {
        problem: problem.to_string(),
    };
    let mut out = base.clone();
    let top = out
        .as_object_mut()
        .ok_or_else(|| bad("not a JSON object"))?;
    top.insert("created".into(), json!(ours.created));

    let rootfs = top
        .entry("rootfs")
        .or_insert_with(|| json!({"type": "layers", "diff_ids": []}));
    let diff_ids = rootfs
        .get_mut("diff_ids")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| bad("rootfs.diff_ids is not a list"))?;
    diff_ids.extend(ours.rootfs.diff_ids.iter().map(|d| json!(d)));

    let history = top.entry("history").or_insert_with(|| json!([]));
    let history = history
        .as_array_mut()
        .ok_or_else(|| bad("history is not a list"))?;
    for h in &ours.history {
        history.push(serde_json::to_value(h).map_err(|_| bad("history entry"))?);
    }

    let cfg = top.entry("config").or_insert_with(|| json!({}));
    if cfg.is_null() {
        *cfg = json!({});
    }
    let cfg = cfg
        .as_object_mut()
        .ok_or_else(|| bad("config is not an object"))?;
    if !c.env.is_empty() {
        let mut env: Vec<String> = cfg
            .get("Env")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        for (k, v) in &c.env {
            let entry = format!("{k}={v}");
            match env
                .iter_mut()
                .find(|e| e.split('=').next() == Some(k.as_str()))
            {
                Some(e) => *e = entry,
                None => env.push(entry),
            }
        }
        cfg.insert("Env".into(), json!(env));
    }
    if let Some(ep) = &c.entrypoint {
        cfg.insert("Entrypoint".into(), json!(ep));
        if c.cmd.is_none() {
            cfg.remove("Cmd");
        }
    }
    if let Some(cmd) = &c.cmd {
        cfg.insert("Cmd".into(), json!(cmd));
    }
    for (key, value) in [
        ("WorkingDir", &c.workdir),
        ("User", &c.user),
        ("StopSignal", &c.stop_signal),
    ] {
        if let Some(v) = value {
            cfg.insert(key.into(), json!(v));
        }
    }
    for (key, add) in [("Labels", &c.labels)] {
        if add.is_empty() {
            continue;
        }
        let slot = cfg.entry(key).or_insert_with(|| json!({}));
        if slot.is_null() {
            *slot = json!({});
        }
        let map = slot
            .as_object_mut()
            .ok_or_else(|| bad("config.Labels is not an object"))?;
        for (k, v) in add {
            map.insert(k.clone(), json!(v));
        }
    }
    // Merged over the base's, as docker's EXPOSE and VOLUME are.
    for (key, add) in [("ExposedPorts", &c.exposed_ports), ("Volumes", &c.volumes)] {
        if add.is_empty() {
            continue;
        }
        let slot = cfg.entry(key).or_insert_with(|| json!({}));
        if slot.is_null() {
            *slot = json!({});
        }
        let map = slot
            .as_object_mut()
            .ok_or_else(|| bad(&format!("config.{key} is not an object")))?;
        for p in add {
            map.insert(p.clone(), json!({}));
        }
    }
    if let Some(shell) = &c.shell {
        cfg.insert("Shell".into(), json!(shell));
    }
    if let Some(h) = &c.healthcheck {
        cfg.insert("Healthcheck".into(), h.config_value());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recipe's config over a base's: volumes added to the base's, shell and health check
    /// replaced, what the recipe leaves out kept.
    #[test]
    fn docker_keys_merge_over_the_base() {
        let base = json!({
            "architecture": "amd64", "os": "linux",
            "config": {
                "Volumes": {"/base": {}},
                "Healthcheck": {"Test": ["CMD", "/old"], "Retries": 9},
                "Shell": ["/bin/sh", "-c"],
                "OnBuild": ["RUN x"],
            },
            "rootfs": {"type": "layers", "diff_ids": []},
            "history": [],
        });
        let ours = ImageConfig {
            created: Some("1970-01-01T00:00:00Z".into()),
            architecture: "amd64".into(),
            os: "linux".into(),
            variant: None,
            config: RunConfig::default(),
            rootfs: RootFs {
                kind: "layers".into(),
                diff_ids: Vec::new(),
            },
            history: Vec::new(),
        };
        let c = crate::recipe::Config {
            volumes: vec!["/data".into()],
            shell: Some(vec!["/bin/bash".into(), "-c".into()]),
            healthcheck: Some(crate::recipe::Healthcheck {
                test: vec!["NONE".into()],
                ..Default::default()
            }),
            ..Default::default()
        };
        let out = inherit(&base, &ours, &c).unwrap();
        let cfg = &out["config"];
        assert_eq!(cfg["Volumes"], json!({"/base": {}, "/data": {}}));
        assert_eq!(cfg["Shell"], json!(["/bin/bash", "-c"]));
        assert_eq!(cfg["Healthcheck"], json!({"Test": ["NONE"]}));
        assert_eq!(cfg["OnBuild"], json!(["RUN x"]));
        // Left out: the base's stay.
        let kept = inherit(&base, &ours, &crate::recipe::Config::default()).unwrap();
        assert_eq!(kept["config"]["Healthcheck"]["Retries"], 9);
        assert_eq!(kept["config"]["Volumes"], json!({"/base": {}}));
    }
}
