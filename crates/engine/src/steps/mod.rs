//! `[[step]]`: what `RUN` does, hermetic. Each step runs its argv under podman in its builder
//! with its inputs as layers above it ([`image`]), no network unless the command line allowed
//! it, a read-only root and one empty writable directory per output
//! ([`crate::run::run_sandboxed`]); what it wrote there is read back through the layer writer,
//! so the determinism contract's normalization applies (order, times, owners 0:0, modes).
//!
//! A step's key is everything it ran with: the builder (its manifest digest, or an earlier
//! step's key), the input layers' diff_ids, the downloads' sha256, the argv, env, workdir,
//! user, the outputs, the network, the epoch and the contract. A key whose outputs are in the
//! layer cache runs nothing. The lock records each step's key and output layer digests: a
//! `--locked` build (and `verify`) that runs the step again and gets other bytes says
//! `step NAME is not reproducible`, with the files that differ when the old layer is at hand.

mod cuda;
mod fetch;
mod image;
pub mod project;
pub mod report;
pub mod sdist;

use std::path::Path;
use std::time::Duration;

use serde_json::json;

pub use self::image::Container;
use self::image::RunDir;
pub use self::report::{differing_files, StepReport};
use crate::build::{copy_layer, BuildError, CopyLayer};
use crate::digest::Digest;
use crate::http::Fetcher;
use crate::image::{LayerRecord, Platform};
use crate::layer::{CopySpec, ModePolicy};
use crate::lock::{LockPolicy, LockedStep};
use crate::progress::Reporter;
use crate::recipe::{Layer, Step, StepImage, StepInput};
use crate::run::{SandboxOptions, SandboxRun};
use crate::store::{CachedLayer, Store, StoreError};
use crate::system::Extra;

/// Bumped when what a step's key covers changes.
const STEP_KEY: &str = "step/1";

/// The lines of a failed step's output shown.
const FAILED_TAIL: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error("step `{step}` asks for the network (`network = true`), which a build gives only when the command line allows it: `--allow-network` (declared `fetch` downloads need no network in the step)")]
    NetworkNotAllowed { step: String },
    #[error("step `{step}` failed ({}){}{}", outcome(*exit_code, *timed_out, tail), tail_text(tail), if !*offline { "" } else if step.starts_with("sdist:") || step.starts_with("project:") { NO_NETWORK_SDIST } else { NO_NETWORK })]
    Failed {
        step: String,
        exit_code: Option<i32>,
        timed_out: bool,
        tail: Vec<String>,
        /// It had no network and its output says it tried to reach one.
        offline: bool,
    },
    #[error("step `{step}` wrote nothing to its output {path}: an output is a directory the step fills (it starts empty)")]
    EmptyOutput { step: String, path: String },
    #[error("step `{step}` is not reproducible: {} records output {} as {}, this run gave {}{}", m.lock, m.which, m.expected, m.found, files_text(&m.files))]
    NotReproducible { step: String, m: Box<Mismatch> },
    #[error("{mode}: step `{step}` is not pinned with these inputs in {lock} (its builder, inputs or command changed, or it never ran): run `ocibuild build` without {mode}, or `ocibuild lock`, and commit the lock")]
    NotPinned {
        mode: &'static str,
        step: String,
        lock: String,
    },
    #[error("step `{step}`")]
    Layer {
        step: String,
        #[source]
        source: Box<BuildError>,
    },
    #[error("step `{step}`")]
    Io {
        step: String,
        #[source]
        source: std::io::Error,
    },
    #[error("step `{step}`")]
    Run {
        step: String,
        #[source]
        source: Box<crate::run::RunError>,
    },
    #[error("{mode}: step `{step}`'s download {url} has no sha256 in the recipe and none pinned in {lock}: give its `sha256`, or build without {mode} (or `ocibuild lock`) to pin it")]
    FetchNotPinned {
        mode: &'static str,
        step: String,
        url: String,
        lock: String,
    },
    #[error("step `{step}`: downloading {url}: {reason}")]
    Download {
        step: String,
        url: String,
        reason: String,
    },
    #[error("step `{step}`: fetching {url}")]
    Fetch {
        step: String,
        url: String,
        #[source]
        source: Box<crate::system::SystemError>,
    },
    #[error("step `{step}` should write one wheel (NAME-VERSION-TAGS.whl) to its output; it wrote {}", if found.is_empty() { "nothing".to_string() } else { found.join(", ") })]
    NoWheel { step: String, found: Vec<String> },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Json(#[from] crate::json::JsonError),
    #[error(transparent)]
    Output(Box<crate::output::OutputError>),
}

const NO_NETWORK: &str = "\n  (the step has no network: declare its downloads as `fetch = [{ url, sha256, dest }]`, or give it `network = true` and build with --allow-network)";

const NO_NETWORK_SDIST: &str = "\n  (an sdist or a project is built into a wheel with no network: what its build downloads must be in the builder, e.g. its build requirements as the builder recipe's [apt] packages or [python] wheels)";

/// Words a resolver or socket error prints when there is no network.
const NETWORK_ERRORS: &[&str] = &[
    "bad address",
    "could not resolve",
    "temporary failure in name resolution",
    "name or service not known",
    "network is unreachable",
    "no route to host",
    "getaddrinfo",
    "connection refused",
];

/// What a step's rerun gave against what the lock records.
#[derive(Debug)]
pub struct Mismatch {
    /// The lock file.
    pub lock: String,
    /// The output's path in the step's container.
    pub which: String,
    pub expected: Digest,
    pub found: Digest,
    /// The files that differ (empty when the locked layer is not in the store).
    pub files: Vec<String>,
}

fn outcome(code: Option<i32>, timed_out: bool, tail: &[String]) -> String {
    // podman's own codes (125 to 127): its `Error: ` line tells podman's failure from the
    // command's, as in the test stage.
    let podman = crate::run::exit_reason(code, tail, "builder");
    match (code, timed_out, podman) {
        (_, true, _) => "timed out; the container was killed".into(),
        (_, _, Some((text, _))) => text,
        (Some(c), _, _) => format!("exit code {c}"),
        (None, _, _) => "killed by a signal".into(),
    }
}

fn tail_text(tail: &[String]) -> String {
    if tail.is_empty() {
        return String::new();
    }
    let mut s = String::from("; its last lines:");
    for l in tail {
        s.push_str("\n    | ");
        s.push_str(l);
    }
    s
}

fn files_text(files: &[String]) -> String {
    if files.is_empty() {
        return " (the locked layer is not in this store to compare files with)".into();
    }
    let mut s = String::from("; files that differ:");
    for f in files {
        s.push_str("\n    ");
        s.push_str(f);
    }
    s
}

/// What the steps run with.
pub struct StepContext<'a> {
    pub store: &'a Store,
    pub fetcher: &'a dyn Fetcher,
    pub reporter: &'a dyn Reporter,
    pub policy: LockPolicy,
    /// The flag that asked for [`LockPolicy::Locked`], for messages.
    pub locked_by: &'static str,
    pub epoch: u64,
    pub compression: crate::layer::Compression,
    pub threads: usize,
    pub no_cache: bool,
    pub platform: &'a Platform,
    pub sandbox: &'a SandboxOptions,
    /// `--allow-network`: a step that asks for the network gets it.
    pub allow_network: bool,
    /// The lock file, for messages.
    pub lock_path: &'a Path,
    /// `[image] cuda-archs`: the shared libraries of outputs that go into the image are pruned
    /// to these GPUs (`steps::cuda`).
    pub cuda: Option<&'a crate::cuda::Targets>,
}

/// One step as it ended: its container (for later steps) and its output layers.
struct Done {
    name: String,
    container: Container,
    outputs: Vec<LayerRecord>,
}

/// Runs (or takes from the cache) every step of `steps`, in order. `builders` holds each
/// step's resolved builder (`None` for a step whose image is an earlier step's). `locked`:
/// the lock's steps, checked and updated as the policy says. Returns the layers the image
/// gets (outputs with `image = true`), and what each step did.
pub fn run_steps(
    ctx: &StepContext<'_>,
    steps: &[Step],
    builders: &[Option<Container>],
    locked: &mut Vec<LockedStep>,
) -> Result<(Vec<Extra>, Vec<StepReport>), StepError> {
    let mut done: Vec<Done> = Vec::with_capacity(steps.len());
    let mut extras = Vec::new();
    let mut reports = Vec::new();
    for (step, builder) in steps.iter().zip(builders) {
        let earlier = |name: &str| done.iter().find(|d| d.name == name);
        let builder = match (&step.image, builder) {
            (_, Some(b)) => b.clone(),
            (StepImage::Step(n), None) => match earlier(n) {
                Some(d) => {
                    let id = d.container.id;
                    d.container.with_layers(id, &d.outputs)
                }
                None => continue,
            },
            (_, None) => continue,
        };
        let mut inputs: Vec<LayerRecord> = Vec::new();
        for input in &step.inputs {
            match input {
                StepInput::Files(l) => {
                    inputs.push(LayerRecord::named(&l.name, &layer(ctx, step, l)?.0));
                }
                StepInput::Step(n) => {
                    if let Some(d) = earlier(n) {
                        inputs.extend(d.outputs.iter().cloned());
                    }
                }
            }
        }
        let mut pins = locked
            .iter()
            .find(|l| l.name == step.name)
            .map(|l| l.fetch.clone())
            .unwrap_or_default();
        for (i, f) in step.fetch.iter().enumerate() {
            let blob = fetch::fetch(ctx, step, f, &mut pins)?;
            let l = Layer {
                name: format!("{}.fetch{}", step.name, i + 1),
                src: f.url.clone(),
                spec: spec(blob, &f.dest),
            };
            inputs.push(LayerRecord::named(&l.name, &layer(ctx, step, &l)?.0));
        }
        let key = key(ctx, step, &builder, &inputs)?;
        let container = builder.with_layers(key, &inputs);
        // With pruning, a cached run counts only with its report (a run whose report is gone
        // runs again, as a wheel layer without its report is built again).
        let cached =
            cached_outputs(ctx, step, &key)?.and_then(|o| match pruned_targets(ctx, step) {
                Some(_) => cuda::cached_reports(ctx.store, &key).map(|r| (o, r)),
                None => Some((o, Vec::new())),
            });
        let (outputs, ran, libraries) = if let Some((o, libraries)) = cached {
            ctx.reporter
                .detail(&format!("step {}: cached (key {key})", step.name));
            (o, None, libraries)
        } else {
            let started = std::time::Instant::now();
            let (o, libraries) = run_one(ctx, step, &container, &key)?;
            (o, Some(started.elapsed()), libraries)
        };
        // Pins of downloads the recipe still has and gives no sha256 for.
        pins.retain(|p| {
            step.fetch
                .iter()
                .any(|f| f.url == p.url && f.sha256.is_none())
        });
        check_lock(ctx, step, &key, &outputs, locked)?;
        if let Some(e) = locked.iter_mut().find(|l| l.name == step.name) {
            if ctx.policy != LockPolicy::Locked && ctx.policy != LockPolicy::Frozen {
                e.fetch = pins;
            }
        }
        let records: Vec<LayerRecord> = outputs
            .iter()
            .enumerate()
            .map(|(i, o)| LayerRecord::named(&output_name(step, i), o))
            .collect();
        for (i, (o, out)) in outputs.iter().zip(&step.outputs).enumerate() {
            if out.in_image {
                extras.push(Extra {
                    name: output_name(step, i),
                    layer: o.clone(),
                    cached: ran.is_none(),
                    created_by: format!("ocibuild step {}: {}", step.name, step.run.join(" ")),
                });
            }
        }
        reports.push(StepReport {
            name: step.name.clone(),
            key,
            cached: ran.is_none(),
            duration_secs: ran.map(|d| (d.as_secs_f64() * 1000.0).round() / 1000.0),
            outputs: outputs.iter().map(|o| o.digest).collect(),
            cuda: libraries,
        });
        done.push(Done {
            name: step.name.clone(),
            container,
            outputs: records,
        });
    }
    Ok((extras, reports))
}

/// The layer name of a step's output `i`: the step's name when it has one output, else
/// `NAME.N`.
fn output_name(step: &Step, i: usize) -> String {
    if step.outputs.len() == 1 {
        step.name.clone()
    } else {
        format!("{}.{}", step.name, i + 1)
    }
}

fn spec(src: std::path::PathBuf, dest: &str) -> CopySpec {
    CopySpec {
        src,
        dest: dest.to_string(),
        ignore: Vec::new(),
        uid: 0,
        gid: 0,
        mode: ModePolicy::Normalize,
    }
}

/// A step's input or output layer of host files, through the layer cache (`--no-cache`: not).
fn layer(ctx: &StepContext<'_>, step: &Step, l: &Layer) -> Result<(CachedLayer, bool), StepError> {
    let opts = CopyLayer {
        epoch: ctx.epoch,
        compression: ctx.compression,
        threads: ctx.threads,
        no_cache: ctx.no_cache,
    };
    copy_layer(l, &opts, ctx.store, ctx.reporter).map_err(|e| StepError::Layer {
        step: step.name.clone(),
        source: Box::new(e),
    })
}

/// The digest of the step's file input `i` as the layer it becomes (its diff_id), through the
/// layer cache: what a `[python] project`'s wheel is pinned as built from.
pub fn files_digest(ctx: &StepContext<'_>, step: &Step, i: usize) -> Result<Digest, StepError> {
    let Some(StepInput::Files(l)) = step.inputs.get(i) else {
        return Err(StepError::Io {
            step: step.name.clone(),
            source: std::io::Error::other("internal: no such file input"),
        });
    };
    Ok(layer(ctx, step, l)?.0.diff_id)
}

/// The step's key: everything its outputs are a function of.
fn key(
    ctx: &StepContext<'_>,
    step: &Step,
    builder: &Container,
    inputs: &[LayerRecord],
) -> Result<Digest, StepError> {
    let outputs: Vec<_> = step
        .outputs
        .iter()
        .map(|o| json!({"path": o.path, "dest": o.dest}))
        .collect();
    // Only where it changes an output (so a key without pruning is the one it always was).
    let cuda = pruned_targets(ctx, step).map(|t| ("cuda", t.to_json()));
    Ok(crate::layer::cache_key(
        "step key",
        STEP_KEY,
        ctx.compression,
        ctx.epoch,
        cuda.into_iter().chain([
            ("builder", json!(builder.id)),
            (
                "inputs",
                json!(inputs.iter().map(|l| l.diff_id).collect::<Vec<_>>()),
            ),
            ("run", json!(step.run)),
            ("env", json!(step.env)),
            ("workdir", json!(step.workdir)),
            ("user", json!(step.user)),
            ("outputs", json!(outputs)),
            ("network", json!(step.network)),
            ("platform", json!(ctx.platform.to_string())),
        ]),
    )?)
}

/// The GPUs the step's outputs are pruned to: `[image] cuda-archs`, when an output goes into
/// the image.
fn pruned_targets<'a>(ctx: &StepContext<'a>, step: &Step) -> Option<&'a crate::cuda::Targets> {
    ctx.cuda.filter(|_| step.outputs.iter().any(|o| o.in_image))
}

/// The cache key of output `i` of the step whose key is `key`.
pub(crate) fn output_key(key: &Digest, i: usize) -> Digest {
    Digest::of(format!("ocibuild step output {key} {i}").as_bytes())
}

/// Every output of the step from the layer cache, or `None` when one is missing (or
/// `--no-cache`).
fn cached_outputs(
    ctx: &StepContext<'_>,
    step: &Step,
    key: &Digest,
) -> Result<Option<Vec<CachedLayer>>, StepError> {
    if ctx.no_cache {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(step.outputs.len());
    for i in 0..step.outputs.len() {
        match ctx.store.cached_layer(&output_key(key, i))? {
            Some(l) if ctx.store.has_blob(&l.digest) => out.push(l),
            _ => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// Runs the step in its container and reads its outputs into layers (cached under the key).
fn run_one(
    ctx: &StepContext<'_>,
    step: &Step,
    container: &Container,
    key: &Digest,
) -> Result<(Vec<CachedLayer>, Vec<crate::cuda::LibraryReport>), StepError> {
    if step.network && !ctx.allow_network {
        return Err(StepError::NetworkNotAllowed {
            step: step.name.clone(),
        });
    }
    let dir = RunDir::new(&step.name)?;
    let record = container.record(ctx.store, ctx.platform)?;
    crate::output::write_layout_with(&dir.layout(), ctx.store, &record, &[])
        .map_err(|e| StepError::Output(Box::new(e)))?;
    let mut outputs = Vec::with_capacity(step.outputs.len());
    for (i, o) in step.outputs.iter().enumerate() {
        outputs.push((dir.output(&step.name, i)?, o.path.clone()));
    }
    ctx.reporter.task_started(&format!("step {}", step.name));
    let layout = dir.layout();
    let run = SandboxRun {
        step: &step.name,
        layout: &layout,
        tag: image::TAG,
        argv: &step.run,
        env: &step.env,
        workdir: step.workdir.as_deref(),
        user: step.user.as_deref(),
        outputs: &outputs,
        network: step.network && ctx.allow_network,
        timeout: Duration::from_secs(step.timeout_secs),
        epoch: ctx.epoch,
    };
    // The podman command, with `-v`.
    let show = |line: &str| ctx.reporter.detail(&format!("step {}: {line}", step.name));
    let result = crate::run::run_sandboxed(&run, ctx.sandbox, &show);
    ctx.reporter.task_finished(&format!("step {}", step.name));
    let out = result.map_err(|e| StepError::Run {
        step: step.name.clone(),
        source: Box::new(e),
    })?;
    if out.exit_code != Some(0) {
        let skip = out.tail.len().saturating_sub(FAILED_TAIL);
        let offline = !run.network
            && out.tail.iter().any(|l| {
                let l = l.to_lowercase();
                NETWORK_ERRORS.iter().any(|w| l.contains(w))
            });
        return Err(StepError::Failed {
            step: step.name.clone(),
            exit_code: out.exit_code,
            timed_out: out.timed_out,
            tail: out.tail[skip..].to_vec(),
            offline,
        });
    }
    let mut layers = Vec::with_capacity(outputs.len());
    let mut libraries = Vec::new();
    for (i, ((host, inside), o)) in outputs.iter().zip(&step.outputs).enumerate() {
        let empty = fs_err::read_dir(host)
            .map_err(|source| StepError::Io {
                step: step.name.clone(),
                source,
            })?
            .next()
            .is_none();
        if empty {
            return Err(StepError::EmptyOutput {
                step: step.name.clone(),
                path: inside.clone(),
            });
        }
        if let Some(t) = pruned_targets(ctx, step).filter(|_| o.in_image) {
            let from = format!("step {}", step.name);
            libraries.extend(
                cuda::prune_output(host, &o.dest, t, &from).map_err(|source| StepError::Io {
                    step: step.name.clone(),
                    source,
                })?,
            );
        }
        let l = Layer {
            name: output_name(step, i),
            src: inside.clone(),
            spec: spec(host.clone(), &o.dest),
        };
        let (cached, _) = layer(ctx, step, &l)?;
        layers.push(cached);
    }
    if pruned_targets(ctx, step).is_some() {
        cuda::save_reports(ctx.store, &step.name, key, &libraries)?;
    }
    // Only once every output is a layer: cached under the key, so a failed step caches nothing.
    for (i, l) in layers.iter().enumerate() {
        ctx.store.put_cached_layer(&output_key(key, i), l)?;
    }
    Ok((layers, libraries))
}

/// The lock's entry for the step, checked against this run and updated as the policy says.
fn check_lock(
    ctx: &StepContext<'_>,
    step: &Step,
    key: &Digest,
    outputs: &[CachedLayer],
    locked: &mut Vec<LockedStep>,
) -> Result<(), StepError> {
    let lock = ctx.lock_path.display().to_string();
    let found: Vec<Digest> = outputs.iter().map(|o| o.digest).collect();
    let entry = locked.iter_mut().find(|l| l.name == step.name);
    match (ctx.policy, entry) {
        (LockPolicy::Frozen, _) => Ok(()),
        (policy, Some(e)) if e.key == *key => {
            if let Some(i) = (0..found.len()).find(|&i| e.outputs.get(i) != Some(&found[i])) {
                let expected = e.outputs.get(i).copied().unwrap_or(found[i]);
                let err = StepError::NotReproducible {
                    step: step.name.clone(),
                    m: Box::new(Mismatch {
                        lock: lock.clone(),
                        which: step.outputs[i].path.clone(),
                        expected,
                        found: found[i],
                        files: differing_files(ctx.store, &expected, &outputs[i]),
                    }),
                };
                if policy == LockPolicy::Locked {
                    return Err(err);
                }
                ctx.reporter.message(&format!(
                    "warning: {}; pinned again",
                    crate::diag::chain(&err)
                ));
                e.outputs = found;
            }
            Ok(())
        }
        (LockPolicy::Locked, _) => Err(StepError::NotPinned {
            mode: ctx.locked_by,
            step: step.name.clone(),
            lock,
        }),
        (_, Some(e)) => {
            e.key = *key;
            e.outputs = found;
            Ok(())
        }
        (_, None) => {
            locked.push(LockedStep {
                name: step.name.clone(),
                image: None,
                key: *key,
                outputs: found,
                fetch: Vec::new(),
            });
            Ok(())
        }
    }
}
