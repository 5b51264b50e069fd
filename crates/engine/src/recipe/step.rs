//! `[[step]]`: a command run at build time in a sandbox whose inputs are all declared (the
//! builder image, files of the recipe's directory, downloads with their sha256, earlier steps'
//! outputs); what it writes into its output directories becomes layers.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::fields::{env_map, opt_abs, opt_user, resolve};
use super::grammar::{is_layer_name, normalize_abs};
use super::ignore::{ignore_patterns, IgnoreSource};
use super::values::{Argv, SpannedMap};
use super::{Ctx, Layer, RecipeError};
use crate::digest::Digest;
use crate::layer::{CopySpec, ModePolicy};

type Result<T> = std::result::Result<T, RecipeError>;

/// The longest a step may run by default.
const DEFAULT_STEP_TIMEOUT_SECS: u64 = 3600;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawStep {
    pub name: Option<Spanned<String>>,
    pub image: Option<Spanned<toml::Value>>,
    pub inputs: Option<Vec<Spanned<RawStepInput>>>,
    pub fetch: Option<Vec<Spanned<RawFetch>>>,
    pub run: Option<Spanned<Argv>>,
    pub env: Option<SpannedMap>,
    pub workdir: Option<Spanned<String>>,
    pub user: Option<Spanned<String>>,
    pub outputs: Option<Vec<Spanned<RawStepOutput>>>,
    pub network: Option<bool>,
    pub timeout: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawStepInput {
    pub src: Option<Spanned<String>>,
    pub dest: Option<Spanned<String>>,
    pub step: Option<Spanned<String>>,
    pub ignore: Option<Vec<Spanned<String>>>,
    pub ignore_file: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawFetch {
    pub url: Option<Spanned<String>>,
    pub sha256: Option<Spanned<String>>,
    pub dest: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawStepOutput {
    pub path: Option<Spanned<String>>,
    pub dest: Option<Spanned<String>>,
    pub image: Option<bool>,
}

/// One `[[step]]`.
#[derive(Clone, Debug)]
pub struct Step {
    pub name: String,
    pub image: StepImage,
    /// In order: each a layer above the builder's.
    pub inputs: Vec<StepInput>,
    pub fetch: Vec<Fetch>,
    /// argv; a shell only when the argv names one.
    pub run: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub workdir: Option<String>,
    pub user: Option<String>,
    pub outputs: Vec<StepOutput>,
    /// The step asks for the network (allowed only from the command line: `--allow-network`).
    pub network: bool,
    pub timeout_secs: u64,
    /// `recipe.toml:LINE:COL` of the step, for messages given at build time.
    pub at: String,
}

/// The builder a step runs in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepImage {
    /// A registry image, pinned in the lock by digest.
    Registry(String),
    /// Another recipe of the repository, built first (with its own lock).
    Recipe { written: String, path: PathBuf },
    /// An earlier step's container as it ended: its builder, inputs and outputs.
    Step(String),
}

/// A layer put above the builder before the step runs.
#[derive(Clone, Debug)]
pub enum StepInput {
    /// Files of the recipe's directory, at `spec.dest`: a layer as a `[[layer]]` is (the one
    /// input layer spec), named `STEP.inputN` (its place among the step's inputs, from 1).
    Files(Layer),
    /// An earlier step's outputs, at their own `dest`s.
    Step(String),
}

/// A download the step gets as a file at `dest`, checked against `sha256` before it runs;
/// without one, pinned in the lock at its first resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetch {
    pub url: String,
    pub sha256: Option<Digest>,
    pub dest: String,
}

/// A directory the step writes (it starts empty; everything else is read-only): its files
/// become a layer at `dest`, in the image when `in_image`, and for later steps always.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepOutput {
    pub path: String,
    pub dest: String,
    pub in_image: bool,
}

impl Step {
    /// The names of the earlier steps this one uses (its image, its inputs).
    pub fn uses(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .inputs
            .iter()
            .filter_map(|i| match i {
                StepInput::Step(s) => Some(s.as_str()),
                StepInput::Files(_) => None,
            })
            .collect();
        if let StepImage::Step(s) = &self.image {
            out.push(s);
        }
        out
    }
}

/// The recipe's steps, checked: unique names, an image each, an argv, at least one output,
/// and only earlier steps used (so they never form a cycle).
pub(super) fn steps(
    ctx: &Ctx<'_>,
    raw: Vec<Spanned<RawStep>>,
    dir: &Path,
    layer_names: &[&str],
) -> Result<Vec<Step>> {
    let mut out: Vec<Step> = Vec::with_capacity(raw.len());
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, s) in raw.into_iter().enumerate() {
        let span = s.span();
        let step = step(ctx, span, s.into_inner(), i, dir, &seen, layer_names)?;
        seen.insert(step.name.clone(), i);
        out.push(step);
    }
    Ok(out)
}

fn step(
    ctx: &Ctx<'_>,
    span: Range<usize>,
    s: RawStep,
    index: usize,
    dir: &Path,
    earlier: &BTreeMap<String, usize>,
    layer_names: &[&str],
) -> Result<Step> {
    let name = s.name.ok_or_else(|| {
        ctx.err(
            span.clone(),
            format!(
                "step #{}: missing required key `name` (a unique name like `ext`)",
                index + 1
            ),
        )
    })?;
    let ns = name.get_ref().clone();
    if !is_layer_name(&ns) {
        return Err(ctx.err(
            name.span(),
            format!(
                "invalid step name `{ns}`: expected lowercase letters, digits, `.`, `_` and `-`, \
                 starting with a letter or digit"
            ),
        ));
    }
    if earlier.contains_key(&ns) {
        return Err(ctx.err(name.span(), format!("duplicate step name `{ns}`")));
    }
    if layer_names.contains(&ns.as_str()) {
        return Err(ctx.err(
            name.span(),
            format!("step name `{ns}` is also a layer's name: a step's outputs are layers of that name, pick another"),
        ));
    }
    let what = format!("step `{ns}`");
    let uses = |s: &Spanned<String>| -> Result<String> {
        let used = s.get_ref();
        if earlier.contains_key(used) {
            return Ok(used.clone());
        }
        let why = if *used == ns {
            "itself".to_string()
        } else {
            format!("`{used}`, which is not an earlier step (steps run in recipe order; a step can use only the ones above it)")
        };
        Err(ctx.err(s.span(), format!("{what} uses {why}")))
    };
    let image = match s.image {
        None => {
            return Err(ctx.err(
                span.clone(),
                format!(
                    "{what}: missing required key `image`, the builder it runs in: a registry \
                     image (`image = \"debian:trixie\"`, pinned in the lock), another recipe \
                     (`image = {{ recipe = \"builder.toml\" }}`) or an earlier step \
                     (`image = {{ step = \"deps\" }}`)"
                ),
            ))
        }
        Some(v) => step_image(ctx, &what, v, dir, &uses)?,
    };
    let mut inputs = Vec::new();
    for i in s.inputs.unwrap_or_default() {
        let ispan = i.span();
        let i = i.into_inner();
        if i.src.is_some() && i.step.is_none() {
            let name = input_name(&ns, inputs.len());
            inputs.push(files_input(ctx, &what, i, dir, ispan, name)?);
            continue;
        }
        inputs.push(match (i.src, i.step) {
            (None, Some(st)) => {
                if let Some(d) = i
                    .dest
                    .or(i.ignore_file)
                    .or_else(|| i.ignore.and_then(|v| v.into_iter().next()))
                {
                    return Err(ctx.err(
                        d.span(),
                        format!("{what}: an input from a step has its outputs at their own `dest`s and all their files: leave `dest` and `ignore` out"),
                    ));
                }
                StepInput::Step(uses(&st)?)
            }
            _ => {
                return Err(ctx.err(
                    ispan,
                    format!("{what}: an input is either `{{ src = \"dir\", dest = \"/src\" }}` (files of the recipe's directory) or `{{ step = \"name\" }}` (an earlier step's outputs)"),
                ))
            }
        });
    }
    let mut fetch = Vec::new();
    for f in s.fetch.unwrap_or_default() {
        fetch.push(fetch_entry(ctx, &what, f)?);
    }
    let run = match s.run {
        Some(r) if !r.get_ref().0.is_empty() => r.into_inner().0,
        Some(r) => return Err(ctx.err(r.span(), format!("{what}: `run` is empty"))),
        None => {
            return Err(ctx.err(
                span.clone(),
                format!("{what}: missing required key `run`, an argv like [\"make\", \"install\"] (a shell only when asked: [\"/bin/sh\", \"-c\", \"…\"])"),
            ))
        }
    };
    let outputs = outputs(ctx, &what, span.clone(), s.outputs.unwrap_or_default())?;
    let timeout_secs = match s.timeout {
        None => DEFAULT_STEP_TIMEOUT_SECS,
        Some(t) if *t.get_ref() >= 1 => *t.get_ref() as u64,
        Some(t) => {
            return Err(ctx.err(
                t.span(),
                format!(
                    "{what}: invalid timeout `{}`: expected a number of seconds >= 1",
                    t.get_ref()
                ),
            ))
        }
    };
    Ok(Step {
        image,
        inputs,
        fetch,
        run,
        env: env_map(ctx, &what, s.env)?,
        workdir: opt_abs(ctx, &what, "workdir", s.workdir)?,
        user: opt_user(ctx, &what, s.user)?,
        outputs,
        network: s.network.unwrap_or(false),
        timeout_secs,
        at: ctx.at(span),
        name: ns,
    })
}

/// A step's `outputs`: at least one, each an absolute `path` (not `/`) and `dest`.
fn outputs(
    ctx: &Ctx<'_>,
    what: &str,
    span: Range<usize>,
    raw: Vec<Spanned<RawStepOutput>>,
) -> Result<Vec<StepOutput>> {
    let mut outputs = Vec::new();
    for o in raw {
        let ospan = o.span();
        let o = o.into_inner();
        let path = opt_abs(ctx, what, "output path", o.path)?.ok_or_else(|| {
            ctx.err(
                ospan.clone(),
                format!("{what}: an output needs `path`, the directory in the step's container it writes, like `/out`"),
            )
        })?;
        if path == "/" {
            return Err(ctx.err(ospan, format!("{what}: an output path cannot be `/`")));
        }
        let dest = opt_abs(ctx, what, "output dest", o.dest)?.ok_or_else(|| {
            ctx.err(
                ospan.clone(),
                format!("{what}: an output needs `dest`, where its files go in the image, like `/app/lib`"),
            )
        })?;
        outputs.push(StepOutput {
            path,
            dest,
            in_image: o.image.unwrap_or(true),
        });
    }
    if outputs.is_empty() {
        return Err(ctx.err(
            span.clone(),
            format!("{what}: no `outputs`: a step's result is the directories it writes, like outputs = [{{ path = \"/out\", dest = \"/app/lib\" }}]"),
        ));
    }
    Ok(outputs)
}

pub(super) fn step_image(
    ctx: &Ctx<'_>,
    what: &str,
    v: Spanned<toml::Value>,
    dir: &Path,
    uses: &dyn Fn(&Spanned<String>) -> Result<String>,
) -> Result<StepImage> {
    let span = v.span();
    let bad = || {
        ctx.err(
            span.clone(),
            format!("{what}: `image` is a registry reference (a string), {{ recipe = \"FILE\" }} or {{ step = \"NAME\" }}"),
        )
    };
    match v.into_inner() {
        toml::Value::String(r) if !r.trim().is_empty() => Ok(StepImage::Registry(r)),
        toml::Value::Table(t) if t.len() == 1 => {
            let (k, val) = t.into_iter().next().ok_or_else(bad)?;
            let toml::Value::String(s) = val else {
                return Err(bad());
            };
            match k.as_str() {
                "recipe" => {
                    let path = resolve(dir, &s);
                    if !path.is_file() {
                        return Err(ctx.err(
                            span,
                            format!(
                                "{what}: builder recipe `{s}` does not exist (resolved to {})",
                                path.display()
                            ),
                        ));
                    }
                    Ok(StepImage::Recipe { written: s, path })
                }
                "step" => Ok(StepImage::Step(uses(&Spanned::new(span, s))?)),
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}

/// The name of a step's files input at `index` (from 0) among its inputs: `STEP.inputN`.
pub fn input_name(step: &str, index: usize) -> String {
    format!("{step}.input{}", index + 1)
}

/// An input of the recipe's files (`i.src` is set), written at `span`: its `ignore-file` and
/// `ignore` follow `[[layer]]`'s rules (the directory's own `.dockerignore` when no
/// `ignore-file` is given).
fn files_input(
    ctx: &Ctx<'_>,
    what: &str,
    i: RawStepInput,
    dir: &Path,
    span: Range<usize>,
    name: String,
) -> Result<StepInput> {
    let RawStepInput {
        src,
        dest,
        ignore_file,
        ignore: listed,
        step: _,
    } = i;
    let Some(src) = src else {
        return Err(ctx.err(span, format!("{what}: an input needs `src`")));
    };
    let path = resolve(dir, src.get_ref());
    if !(path.is_dir() || path.is_file()) {
        return Err(ctx.err(
            src.span(),
            format!(
                "{what}: input `{}` does not exist (resolved to {})",
                src.get_ref(),
                path.display()
            ),
        ));
    }
    let dest = opt_abs(ctx, what, "input dest", dest)?.ok_or_else(|| {
        ctx.err(
            span,
            format!("{what}: an input needs `dest`, where its files are in the step's container, like `/src`"),
        )
    })?;
    let ignore = ignore_patterns(
        ctx,
        what,
        dir,
        IgnoreSource {
            path: &path,
            is_dir: path.is_dir(),
            span: src.span(),
        },
        ignore_file.as_ref(),
        listed.unwrap_or_default(),
    )?;
    Ok(StepInput::Files(Layer {
        name,
        src: src.into_inner(),
        spec: CopySpec {
            src: path,
            dest,
            ignore,
            uid: 0,
            gid: 0,
            mode: ModePolicy::Normalize,
        },
    }))
}

fn fetch_entry(ctx: &Ctx<'_>, what: &str, f: Spanned<RawFetch>) -> Result<Fetch> {
    let span = f.span();
    let f = f.into_inner();
    let url = f
        .url
        .ok_or_else(|| ctx.err(span.clone(), format!("{what}: a fetch needs `url`")))?;
    let u = url.get_ref();
    if !(u.starts_with("https://") || u.starts_with("http://") || u.starts_with("file://")) {
        return Err(ctx.err(
            url.span(),
            format!("{what}: fetch url `{u}` is not http(s):// or file://"),
        ));
    }
    let digest = match f.sha256 {
        None => None,
        Some(sha256) => {
            let hex = sha256.get_ref();
            Some(
                format!("sha256:{}", hex.strip_prefix("sha256:").unwrap_or(hex))
                    .parse::<Digest>()
                    .map_err(|_| {
                        ctx.err(
                            sha256.span(),
                            format!(
                                "{what}: invalid sha256 `{}`: expected 64 hex digits",
                                sha256.get_ref()
                            ),
                        )
                    })?,
            )
        }
    };
    let dest = f.dest.ok_or_else(|| {
        ctx.err(
            span.clone(),
            format!("{what}: fetch `{u}` needs `dest`, the file's path in the step's container"),
        )
    })?;
    let dest_norm = normalize_abs(dest.get_ref()).map_err(|m| {
        ctx.err(
            dest.span(),
            format!("{what}: invalid fetch dest `{}`: {m}", dest.get_ref()),
        )
    })?;
    Ok(Fetch {
        url: url.into_inner(),
        sha256: digest,
        dest: dest_norm,
    })
}
