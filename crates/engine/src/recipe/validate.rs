//! Semantic checks: raw recipe → [`Recipe`], or the first error, pointing at the offending value.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use super::fields::{backticked, env_map, opt_abs, opt_user, resolve};
use super::grammar::{
    check_repository, check_signal, check_tag, is_layer_name, normalize_abs, parse_owner,
    parse_port,
};
use super::ignore::{ignore_patterns, IgnoreSource};
use super::raw::{Argv, RawConfig, RawImage, RawLayer, RawRecipe, RawTest, SpannedMap};
use super::{
    Base, Config, Ctx, Gpu, Image, Layer, Platform, Podman, Recipe, RecipeError, Test, TestRun,
    KNOWN_CHECKS,
};
use crate::layer::{Compression, CopySpec, ModePolicy};

type Result<T> = std::result::Result<T, RecipeError>;

const DEFAULT_TIMEOUT_SECS: u64 = 300;

pub(super) fn recipe(ctx: &Ctx<'_>, raw: RawRecipe, dir: &Path) -> Result<Recipe> {
    let image = image(ctx, raw.image)?;
    let base = base(ctx, raw.base.and_then(|b| b.image))?;
    let layer_spans: Vec<Range<usize>> = raw.layer.iter().map(toml::Spanned::span).collect();
    let layers = layers(ctx, raw.layer, dir)?;
    let config = match raw.config {
        Some(c) => config(ctx, c)?,
        None => Config::default(),
    };
    let apt = match raw.apt {
        Some(a) => {
            let span = a.span();
            // Every platform needs a Debian architecture; the first one's is the recipe's.
            if let Some(p) = image
                .platforms
                .iter()
                .find(|p| super::packages::debian_arch(p).is_none())
            {
                return Err(ctx.err(
                    span,
                    format!("[apt]: the platform {p} has no Debian architecture"),
                ));
            }
            let several = image.platforms.len() > 1;
            Some(super::packages::apt(ctx, a, &image.platform, several, dir)?)
        }
        None => None,
    };
    let python = match raw.python {
        Some(p) => Some(super::python::python(ctx, p, dir, &image)?),
        None => None,
    };
    let podman = Podman {
        args: raw.podman.and_then(|p| p.args).unwrap_or_default(),
    };
    let accounts = super::accounts::accounts(ctx, raw.accounts)?;
    let mut tests = Vec::with_capacity(raw.test.len());
    let mut seen = BTreeMap::new();
    for (i, t) in raw.test.into_iter().enumerate() {
        tests.push(test(ctx, t, i, &mut seen)?);
    }
    let layer_names: Vec<&str> = layers.iter().map(|l| l.name.as_str()).collect();
    let steps = super::step::steps(ctx, raw.step, dir, &layer_names)?;
    let paths = super::paths::paths(ctx, raw.path)?;
    let mut recipe = Recipe {
        path: ctx.path.to_path_buf(),
        dir: dir.to_path_buf(),
        image,
        base,
        layers,
        config,
        tests,
        podman,
        apt,
        python,
        accounts,
        steps,
        paths,
        args: None,
        credentials: crate::http::Credentials::default(),
    };
    take_credentials(&mut recipe);
    let own = recipe.system_layer_names();
    if let Some((l, span)) = recipe
        .layers
        .iter()
        .zip(&layer_spans)
        .find(|(l, _)| own.contains(&l.name.as_str()))
    {
        return Err(ctx.err(
            span.clone(),
            format!(
                "layer name `{}` is also the name of a layer ocibuild adds to this recipe's \
                 image: pick another",
                l.name
            ),
        ));
    }
    Ok(recipe)
}

/// Takes every URL's `user:password@` out of the recipe into [`Recipe::credentials`]: what
/// the lock, the reports and the messages get from the recipe has none.
fn take_credentials(r: &mut Recipe) {
    let c = &mut r.credentials;
    if let Some(apt) = &mut r.apt {
        for s in &mut apt.sources {
            s.url = c.take(&s.url);
        }
    }
    if let Some(py) = &mut r.python {
        let archives = py.archives.values_mut();
        for a in archives.chain(match &mut py.source {
            super::PythonSource::Archive(a) => Some(a),
            _ => None,
        }) {
            a.url = c.take(&a.url);
            a.written = c.take(&a.written);
        }
        if let Some(super::PythonPackages::Requirements { index, .. }) = &mut py.packages {
            *index = c.take(index);
        }
    }
}

fn image(ctx: &Ctx<'_>, raw: Option<Spanned<RawImage>>) -> Result<Image> {
    let Some(raw) = raw else {
        return Err(ctx.err_at(
            None,
            "missing table `[image]`: a recipe needs at least `[image]` with `name = \"...\"`",
        ));
    };
    let span = raw.span();
    let raw = raw.into_inner();
    let name = raw.name.ok_or_else(|| {
        ctx.err(
            span,
            "[image]: missing required key `name` (the repository, like `example.com/team/app`)",
        )
    })?;
    check_repository(name.get_ref()).map_err(|m| {
        ctx.err(
            name.span(),
            format!("invalid image name `{}`: {m}", name.get_ref()),
        )
    })?;
    let tag = match raw.tag {
        None => "latest".to_string(),
        Some(t) => {
            check_tag(t.get_ref()).map_err(|m| {
                ctx.err(
                    t.span(),
                    format!("invalid image tag `{}`: {m}", t.get_ref()),
                )
            })?;
            t.into_inner()
        }
    };
    let level = raw.compression_level.as_ref().map(|l| *l.get_ref());
    let compression = match &raw.compression {
        None => Compression::from_name("gzip", level),
        Some(c) => Compression::from_name(c.get_ref(), level),
    }
    .map_err(|m| {
        // An unknown name is the name's fault; a bad level is the level's.
        let span = match (&raw.compression, &raw.compression_level) {
            (Some(c), _) if !matches!(c.get_ref().as_str(), "gzip" | "zstd" | "none") => c.span(),
            (_, Some(l)) => l.span(),
            (Some(c), None) => c.span(),
            (None, None) => 0..0,
        };
        ctx.err(span, m)
    })?;
    let mut epoch_from_git = false;
    let source_date_epoch = match raw.source_date_epoch {
        None => None,
        Some(s) if s.get_ref().as_str() == Some("git") => {
            epoch_from_git = true;
            None
        }
        Some(s) => {
            let span = s.span();
            let Some(n) = s.get_ref().as_integer() else {
                return Err(ctx.err(
                    span,
                    format!(
                        "invalid source-date-epoch {}: expected seconds since 1970-01-01 UTC (an \
                         integer >= 0), or \"git\" (the time of the recipe's last git commit)",
                        s.get_ref()
                    ),
                ));
            };
            let s = Spanned::new(span, n);
            let v = u64::try_from(*s.get_ref()).map_err(|_| {
                ctx.err(
                    s.span(),
                    format!(
                        "invalid source-date-epoch `{}`: expected seconds since 1970-01-01 UTC \
                         (an integer >= 0)",
                        s.get_ref()
                    ),
                )
            })?;
            if v > crate::layer::MAX_EPOCH {
                return Err(ctx.err(
                    s.span(),
                    format!(
                        "invalid source-date-epoch `{v}`: after 9999-12-31T23:59:59Z ({}), \
                         which an image's `created` cannot say",
                        crate::layer::MAX_EPOCH
                    ),
                ));
            }
            Some(v)
        }
    };
    let parse = |p: &Spanned<String>| {
        Platform::parse(p.get_ref())
            .map_err(|m| ctx.err(p.span(), format!("invalid platform `{}`: {m}", p.get_ref())))
    };
    let mut platforms = Vec::new();
    if let Some(list) = &raw.platforms {
        if let Some(p) = &raw.platform {
            return Err(ctx.err(
                p.span(),
                "[image] has both `platform` and `platforms`: keep `platforms`",
            ));
        }
        if list.get_ref().is_empty() {
            return Err(ctx.err(list.span(), "`platforms` is empty: name at least one"));
        }
        for p in list.get_ref() {
            let parsed = parse(p)?;
            if platforms.contains(&parsed) {
                return Err(ctx.err(p.span(), format!("platform `{parsed}` is listed twice")));
            }
            platforms.push(parsed);
        }
    }
    let platform = match (&raw.platform, platforms.first()) {
        (_, Some(first)) => first.clone(),
        (None, None) => Platform::host(),
        (Some(p), None) => parse(p)?,
    };
    let cuda = cuda_targets(ctx, &raw.cuda_archs, &raw.cuda_ptx)?;
    Ok(Image {
        name: name.into_inner(),
        tag,
        compression,
        source_date_epoch,
        epoch_from_git,
        platform,
        platforms,
        cuda,
        drop_unused_copies: raw.drop_unused_copies.unwrap_or(false),
    })
}

/// `cuda-archs` and `cuda-ptx`: known names (a misspelt one gets its closest and the list),
/// each architecture once, `cuda-ptx` only with `cuda-archs`.
fn cuda_targets(
    ctx: &Ctx<'_>,
    archs: &Option<Spanned<Vec<Spanned<String>>>>,
    ptx: &Option<Spanned<String>>,
) -> Result<Option<crate::cuda::Targets>> {
    use crate::cuda::{parse_arch, PtxPolicy, Targets, KNOWN_ARCHS, PTX_POLICIES};
    let Some(list) = archs else {
        if let Some(p) = ptx {
            return Err(ctx.err(
                p.span(),
                "`cuda-ptx` without `cuda-archs`: name the GPUs to prune for (e.g. \
                 `cuda-archs = [\"sm_90\"]`), or remove it",
            ));
        }
        return Ok(None);
    };
    if list.get_ref().is_empty() {
        return Err(ctx.err(
            list.span(),
            "`cuda-archs` is empty: name at least one GPU architecture (e.g. \"sm_90\")",
        ));
    }
    let mut set = std::collections::BTreeSet::new();
    for a in list.get_ref() {
        let name = a.get_ref();
        let Some(n) = parse_arch(name) else {
            let hint = crate::diag::closest(name, KNOWN_ARCHS.iter().copied())
                .map(|c| format!("did you mean `{c}`? "))
                .unwrap_or_default();
            return Err(ctx.err(
                a.span(),
                format!(
                    "unknown CUDA architecture `{name}`: {hint}known: {}",
                    KNOWN_ARCHS.join(", ")
                ),
            ));
        };
        if !set.insert(n) {
            return Err(ctx.err(a.span(), format!("`{name}` is listed twice")));
        }
    }
    let ptx = match ptx {
        None => PtxPolicy::default(),
        Some(p) => PtxPolicy::parse(p.get_ref()).ok_or_else(|| {
            ctx.err(
                p.span(),
                format!(
                    "unknown cuda-ptx `{}`: expected one of {}",
                    p.get_ref(),
                    PTX_POLICIES.join(", ")
                ),
            )
        })?,
    };
    Ok(Some(Targets { archs: set, ptx }))
}

fn base(ctx: &Ctx<'_>, raw: Option<Spanned<String>>) -> Result<Base> {
    let Some(r) = raw else {
        return Ok(Base::Scratch);
    };
    let s = r.get_ref();
    if s == "scratch" {
        return Ok(Base::Scratch);
    }
    let shown = crate::registry::reference::shown(s);
    if crate::registry::reference::login_end(s).is_some() {
        return Err(ctx.err(
            r.span(),
            format!(
                "invalid base image `{shown}`: {}",
                crate::registry::reference::LOGIN_PROBLEM
            ),
        ));
    }
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ctx.err(
            r.span(),
            format!(
                "invalid base image `{shown}`: expected `scratch` or an image reference like \
                 `debian:bookworm-slim` or `example.com/team/base@sha256:...`"
            ),
        ));
    }
    if let Some((_, digest)) = s.rsplit_once('@') {
        if digest.parse::<crate::digest::Digest>().is_err() {
            return Err(ctx.err(
                r.span(),
                format!(
                    "invalid base image `{shown}`: `@{}` is not a digest: expected `sha256:` and 64 lowercase hex digits",
                    crate::bounded::clip(digest)
                ),
            ));
        }
    }
    Ok(Base::Image {
        reference: r.into_inner(),
    })
}

fn layers(ctx: &Ctx<'_>, raw: Vec<Spanned<RawLayer>>, dir: &Path) -> Result<Vec<Layer>> {
    let mut out = Vec::with_capacity(raw.len());
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, l) in raw.into_iter().enumerate() {
        let span = l.span();
        out.push(layer(ctx, span, l.into_inner(), i, dir, &mut seen)?);
    }
    Ok(out)
}

fn layer(
    ctx: &Ctx<'_>,
    span: Range<usize>,
    l: RawLayer,
    index: usize,
    dir: &Path,
    seen: &mut BTreeMap<String, usize>,
) -> Result<Layer> {
    let missing = |what: &str, key: &str, hint: &str| {
        ctx.err(
            span.clone(),
            format!("{what}: missing required key `{key}` ({hint})"),
        )
    };
    let name = l.name.ok_or_else(|| {
        missing(
            &format!("layer #{}", index + 1),
            "name",
            "a unique name like `app`",
        )
    })?;
    let ns = name.get_ref();
    if !is_layer_name(ns) {
        return Err(ctx.err(
            name.span(),
            format!(
                "invalid layer name `{ns}`: expected lowercase letters, digits, `.`, `_` and `-`, \
                 starting with a letter or digit"
            ),
        ));
    }
    if let Some(first) = seen.get(ns) {
        return Err(ctx.err(
            name.span(),
            format!("duplicate layer name `{ns}` (first used at line {first})"),
        ));
    }
    seen.insert(ns.clone(), ctx.line_of(name.span().start));
    let what = format!("layer `{ns}`");

    let src = l.src.ok_or_else(|| {
        missing(
            &what,
            "src",
            "a file or directory, relative to the recipe's directory",
        )
    })?;
    if src.get_ref().is_empty() {
        return Err(ctx.err(
            src.span(),
            format!("{what}: `src` is empty; use \".\" for the recipe's directory"),
        ));
    }
    let src_path = resolve(dir, src.get_ref());
    let is_dir = source_is_dir(ctx, &what, &src, &src_path)?;

    let dest = l
        .dest
        .ok_or_else(|| missing(&what, "dest", "an absolute path in the image, like `/app`"))?;
    let dest_norm = normalize_abs(dest.get_ref()).map_err(|m| {
        ctx.err(
            dest.span(),
            format!("{what}: invalid dest `{}`: {m}", dest.get_ref()),
        )
    })?;

    let ignore = ignore_patterns(
        ctx,
        &what,
        dir,
        IgnoreSource {
            path: &src_path,
            is_dir,
            span: src.span(),
        },
        l.ignore_file.as_ref(),
        l.ignore.unwrap_or_default(),
    )?;

    let (uid, gid) = match &l.owner {
        None => (0, 0),
        Some(o) => parse_owner(o.get_ref()).ok_or_else(|| {
            ctx.err(
                o.span(),
                format!(
                    "{what}: invalid owner `{}`: expected numeric `uid:gid`, like `1000:1000`",
                    o.get_ref()
                ),
            )
        })?,
    };
    let mode = match &l.mode {
        None => ModePolicy::Normalize,
        Some(m) => match m.get_ref().as_str() {
            "normalize" => ModePolicy::Normalize,
            "preserve" => ModePolicy::Preserve,
            other => {
                return Err(ctx.err(
                    m.span(),
                    format!("{what}: unknown mode `{other}`, expected `normalize` or `preserve`"),
                ))
            }
        },
    };
    Ok(Layer {
        name: name.into_inner(),
        src: src.into_inner(),
        spec: CopySpec {
            src: src_path,
            dest: dest_norm,
            ignore,
            uid,
            gid,
            mode,
        },
    })
}

/// Whether a layer's resolved source is a directory (else a file); anything else, or nothing
/// there, is an error at `src`.
fn source_is_dir(ctx: &Ctx<'_>, what: &str, src: &Spanned<String>, path: &Path) -> Result<bool> {
    let problem = |m: String| {
        ctx.err(
            src.span(),
            format!("{what}: {m} (resolved to {})", path.display()),
        )
    };
    // std's error, not fs-err's: the message names the path already.
    #[allow(clippy::disallowed_methods)]
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(true),
        Ok(m) if m.is_file() => Ok(false),
        Ok(_) => Err(problem(format!(
            "source `{}` is neither a file nor a directory",
            src.get_ref()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(problem(format!(
            "source `{}` does not exist",
            src.get_ref()
        ))),
        Err(e) => Err(ctx.err(
            src.span(),
            format!(
                "{what}: cannot access source `{}` (resolved to {}): {e}",
                src.get_ref(),
                path.display()
            ),
        )),
    }
}

fn config(ctx: &Ctx<'_>, c: RawConfig) -> Result<Config> {
    let env = env_map(ctx, "[config]", c.env)?;
    let workdir = opt_abs(ctx, "[config]", "workdir", c.workdir)?;
    let user_at = c.user.as_ref().map(|u| ctx.at(u.span()));
    let user = opt_user(ctx, "[config]", c.user)?;
    let labels = keyed_map(ctx, "label", c.labels)?;
    let annotations = keyed_map(ctx, "annotation", c.annotations)?;
    let mut ports = BTreeSet::new();
    for p in c.exposed_ports.unwrap_or_default() {
        let port = parse_port(p.get_ref()).map_err(|m| ctx.err(p.span(), m))?;
        ports.insert(port);
    }
    let stop_signal = match c.stop_signal {
        None => None,
        Some(s) => {
            check_signal(s.get_ref()).map_err(|m| {
                ctx.err(
                    s.span(),
                    format!("invalid stop-signal `{}`: {m}", s.get_ref()),
                )
            })?;
            Some(s.into_inner())
        }
    };
    Ok(Config {
        env,
        entrypoint: c.entrypoint.map(|a| a.into_inner().0),
        cmd: c.cmd.map(|a| a.into_inner().0),
        workdir,
        user,
        user_at,
        labels,
        exposed_ports: ports.into_iter().collect(),
        annotations,
        stop_signal,
        volumes: super::docker::volumes(ctx, c.volumes)?,
        shell: super::docker::shell(ctx, c.shell)?,
        healthcheck: super::docker::healthcheck(ctx, c.healthcheck)?,
    })
}

/// A test's `run` (a command) or `check` (a built-in): exactly one of them.
fn test_run(
    ctx: &Ctx<'_>,
    what: &str,
    run: Option<Spanned<Argv>>,
    check: Option<Spanned<String>>,
    span: Range<usize>,
) -> Result<TestRun> {
    Ok(match (run, check) {
        (Some(_), Some(c)) => {
            return Err(ctx.err(
                c.span(),
                format!("{what}: has both `run` and `check`; keep one"),
            ))
        }
        (None, None) => {
            return Err(ctx.err(
                span,
                format!(
                    "{what}: needs `run = [...]` (a command) or `check = \"...\"` (one of {})",
                    backticked(KNOWN_CHECKS)
                ),
            ))
        }
        (Some(r), None) => {
            if r.get_ref().0.is_empty() {
                return Err(ctx.err(
                    r.span(),
                    format!("{what}: `run` is empty; give the command's argv, like [\"/bin/app\", \"--version\"]"),
                ));
            }
            TestRun::Command(r.into_inner().0)
        }
        (None, Some(c)) => {
            if !KNOWN_CHECKS.contains(&c.get_ref().as_str()) {
                return Err(ctx.err(
                    c.span(),
                    format!(
                        "{what}: unknown check `{}`, expected one of {}",
                        c.get_ref(),
                        backticked(KNOWN_CHECKS)
                    ),
                ));
            }
            TestRun::Check(c.into_inner())
        }
    })
}

fn test(
    ctx: &Ctx<'_>,
    t: Spanned<RawTest>,
    index: usize,
    seen: &mut BTreeMap<String, usize>,
) -> Result<Test> {
    let span = t.span();
    let t = t.into_inner();
    let name = t.name.ok_or_else(|| {
        ctx.err(
            span.clone(),
            format!(
                "test #{}: missing required key `name` (a unique name like `smoke`)",
                index + 1
            ),
        )
    })?;
    let ns = name.get_ref();
    if ns.trim().is_empty() || ns.chars().any(char::is_control) {
        return Err(ctx.err(
            name.span(),
            format!(
                "invalid test name {ns:?}: expected a non-empty name without control characters"
            ),
        ));
    }
    if let Some(first) = seen.get(ns) {
        return Err(ctx.err(
            name.span(),
            format!("duplicate test name `{ns}` (first used at line {first})"),
        ));
    }
    seen.insert(ns.clone(), ctx.line_of(name.span().start));
    let what = format!("test `{ns}`");

    let run = test_run(ctx, &what, t.run, t.check, span.clone())?;
    let needs_gpu = matches!(&run, TestRun::Check(c) if c == "cuda-smoke");

    let env = env_map(ctx, &what, t.env)?;
    let workdir = opt_abs(ctx, &what, "workdir", t.workdir)?;
    let user = opt_user(ctx, &what, t.user)?;
    let exit_code = match t.exit_code {
        None => 0,
        Some(e) => match i32::try_from(*e.get_ref()) {
            Ok(v) if (0..=255).contains(&v) => v,
            _ => {
                return Err(ctx.err(
                    e.span(),
                    format!(
                        "{what}: invalid exit-code `{}`: expected 0 to 255",
                        e.get_ref()
                    ),
                ))
            }
        },
    };
    let timeout_secs = match t.timeout {
        None => DEFAULT_TIMEOUT_SECS,
        Some(s) => match u64::try_from(*s.get_ref()) {
            Ok(v) if v >= 1 => v,
            _ => {
                return Err(ctx.err(
                    s.span(),
                    format!(
                        "{what}: invalid timeout `{}`: expected a number of seconds >= 1",
                        s.get_ref()
                    ),
                ))
            }
        },
    };
    let gpu = match &t.gpu {
        None if needs_gpu => Gpu::Required,
        None => Gpu::Off,
        Some(g) => {
            let gpu = match g.get_ref().as_str() {
                "required" => Gpu::Required,
                "optional" => Gpu::Optional,
                "off" => Gpu::Off,
                other => {
                    return Err(ctx.err(
                        g.span(),
                        format!(
                        "{what}: unknown gpu `{other}`, expected `required`, `optional` or `off`"
                    ),
                    ))
                }
            };
            if needs_gpu && gpu == Gpu::Off {
                return Err(ctx.err(
                    g.span(),
                    format!(
                        "{what}: check `cuda-smoke` needs a GPU; use `gpu = \"required\"` \
                         (the default) or `\"optional\"` (skip on hosts without one)"
                    ),
                ));
            }
            gpu
        }
    };
    Ok(Test {
        name: name.into_inner(),
        run,
        env,
        workdir,
        user,
        exit_code,
        expect_output: t.expect_output,
        timeout_secs,
        gpu,
        network: t.network.unwrap_or(false),
    })
}

// ---- shared field checks ---------------------------------------------------------------------

fn keyed_map(ctx: &Ctx<'_>, kind: &str, m: Option<SpannedMap>) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (k, v) in m.unwrap_or_default() {
        if k.get_ref().trim().is_empty() {
            return Err(ctx.err(k.span(), format!("[config]: {kind} keys must not be empty")));
        }
        out.insert(k.into_inner(), v.into_inner());
    }
    Ok(out)
}
