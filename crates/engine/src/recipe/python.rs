//! `[python]`: the interpreter (a path, an archive, one archive per platform, or found in the
//! image) and its locked packages (a pylock.toml, a uv.lock, requirements, one lock per
//! platform), with the sdist builder and the uv project.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use toml::Spanned;

use super::fields::{backticked, resolve};
use super::grammar::normalize_abs;
use super::raw::{RawPython, RawPythonArchive};
use super::{
    Ctx, Overlap, Platform, Python, PythonArchive, PythonPackages, PythonSource, RecipeError,
    DEFAULT_MAX_LAYER_SIZE,
};
use crate::digest::Digest;

type Result<T> = std::result::Result<T, RecipeError>;

/// `[python.archives]`: one interpreter archive per platform; `other` is where an `archive` or
/// `path` is written, which it excludes.
fn archives(
    ctx: &Ctx<'_>,
    raw: Spanned<BTreeMap<Spanned<String>, Spanned<RawPythonArchive>>>,
    other: Option<std::ops::Range<usize>>,
    dir: &Path,
    image: &super::Image,
) -> Result<BTreeMap<Platform, PythonArchive>> {
    if let Some(other) = other {
        return Err(ctx.err(
            other,
            "[python]: `archives` excludes `archive` and `path`: the interpreter comes \
             from one place",
        ));
    }
    per_platform(
        ctx,
        "[python.archives]",
        "interpreter archive",
        raw,
        image,
        |v| archive(ctx, v, dir),
    )
}

/// `[python.locks]`: one pylock.toml per platform; `other` is where a `lock`, `requirements`
/// or `index` is written, which it excludes.
fn locks(
    ctx: &Ctx<'_>,
    raw: Spanned<BTreeMap<Spanned<String>, Spanned<String>>>,
    other: Option<std::ops::Range<usize>>,
    dir: &Path,
    image: &super::Image,
) -> Result<BTreeMap<Platform, PythonPackages>> {
    if let Some(other) = other {
        return Err(ctx.err(
            other,
            "[python]: `locks` excludes `lock`, `requirements` and `index`: each \
             platform's packages come from its own pylock.toml",
        ));
    }
    per_platform(ctx, "[python.locks]", "pylock.toml", raw, image, |v| {
        let path = existing(ctx, &v, dir, "[python.locks]")?;
        Ok(PythonPackages::Pylock {
            path,
            written: v.into_inner(),
        })
    })
}

/// `[python] version`: `major.minor`.
fn python_version(ctx: &Ctx<'_>, v: Spanned<String>) -> Result<String> {
    let s = v.get_ref();
    let ok = s.split('.').count() == 2 && s.split('.').all(|p| p.parse::<u32>().is_ok());
    if !ok {
        return Err(ctx.err(
            v.span(),
            format!("[python]: invalid version `{s}`: expected major.minor like \"3.11\""),
        ));
    }
    Ok(v.into_inner())
}

pub(super) fn python(
    ctx: &Ctx<'_>,
    raw: Spanned<RawPython>,
    dir: &Path,
    image: &super::Image,
) -> Result<Python> {
    let raw = raw.into_inner();
    let several = image.platforms.len() > 1;
    if let (Some(a), true) = (&raw.archive, several) {
        return Err(ctx.err(
            a.span(),
            "[python] archive is one interpreter for one platform; with several `platforms`, \
             give one per platform in [python.archives.\"PLATFORM\"], or take the interpreter \
             from [apt] or the base",
        ));
    }
    let archives = match raw.archives {
        Some(a) => {
            let other = raw.archive.as_ref().map(toml::Spanned::span);
            archives(
                ctx,
                a,
                other.or(raw.path.as_ref().map(toml::Spanned::span)),
                dir,
                image,
            )?
        }
        None => BTreeMap::new(),
    };
    let version_at = raw.version.as_ref().map(|v| ctx.at(v.span()));
    let version = raw.version.map(|v| python_version(ctx, v)).transpose()?;
    let source = python_source(ctx, raw.path, raw.archive, &archives, dir, image)?;
    let locks = match raw.locks {
        Some(l) => {
            let other = raw
                .lock
                .as_ref()
                .map(toml::Spanned::span)
                .or(raw.requirements.as_ref().map(toml::Spanned::span))
                .or(raw.index.as_ref().map(toml::Spanned::span));
            locks(ctx, l, other, dir, image)?
        }
        None => BTreeMap::new(),
    };
    let mut raw_sel = UvKeys {
        extras: raw.extras,
        groups: raw.groups,
        no_dev: raw.no_dev,
    };
    let keys = PackageKeys {
        lock: raw.lock,
        requirements: raw.requirements,
        index: raw.index,
    };
    // The platform built's lock; `Recipe::for_platform` picks another's.
    let packages = python_packages(ctx, keys, &mut raw_sel, locks.get(&image.platform), dir)?;
    // `extras`, `groups` and `no-dev` are uv's: left over without a uv.lock.
    if let Some(s) = raw_sel
        .extras
        .as_ref()
        .map(toml::Spanned::span)
        .or(raw_sel.groups.as_ref().map(toml::Spanned::span))
        .or(raw_sel.no_dev.as_ref().map(toml::Spanned::span))
    {
        return Err(ctx.err(
            s,
            "[python]: `extras`, `groups` and `no-dev` choose from a uv.lock (`lock = \"uv.lock\"`), as `uv sync` does; a pylock.toml or requirements.txt is one set already",
        ));
    }
    let overlap = python_overlap(ctx, raw.overlap)?;
    let max_layer_size = match raw.max_layer_size {
        None => DEFAULT_MAX_LAYER_SIZE,
        Some(v) => byte_size(v.get_ref())
            .map_err(|m| ctx.err(v.span(), format!("[python]: invalid max-layer-size: {m}")))?,
    };
    let sdist_builder = raw
        .sdist_builder
        .map(|v| sdist_builder(ctx, v, dir))
        .transpose()?;
    let project = raw
        .project
        .map(|v| super::project::project(ctx, v, dir, packages.as_ref(), sdist_builder.is_some()))
        .transpose()?;
    Ok(Python {
        source,
        archives,
        locks,
        version,
        version_at,
        packages,
        overlap,
        max_layer_size,
        sdist_builder,
        project,
    })
}

/// `[python] path` or `archive`: where the interpreter comes from (else the platform's
/// archive of `archives`, else found in the image).
fn python_source(
    ctx: &Ctx<'_>,
    path: Option<Spanned<String>>,
    raw_archive: Option<Spanned<RawPythonArchive>>,
    archives: &BTreeMap<Platform, PythonArchive>,
    dir: &Path,
    image: &super::Image,
) -> Result<PythonSource> {
    Ok(match (path, raw_archive) {
        (Some(_), Some(a)) => {
            return Err(ctx.err(
                a.span(),
                "[python]: `path` and `archive` exclude each other: the interpreter comes from \
                 one place",
            ))
        }
        (Some(p), None) => PythonSource::Path(normalize_abs(p.get_ref()).map_err(|m| {
            ctx.err(
                p.span(),
                format!("[python]: invalid path `{}`: {m}", p.get_ref()),
            )
        })?),
        (None, Some(a)) => PythonSource::Archive(archive(ctx, a, dir)?),
        // The platform built's archive; `Recipe::for_platform` picks another's.
        (None, None) => match archives.get(&image.platform) {
            Some(a) => PythonSource::Archive(a.clone()),
            None => PythonSource::Auto,
        },
    })
}

/// `[python] lock`, `requirements` and `index`, as written.
struct PackageKeys {
    lock: Option<Spanned<String>>,
    requirements: Option<Spanned<String>>,
    index: Option<Spanned<String>>,
}

/// The locked packages: `lock` (a pylock.toml or uv.lock, taking the uv keys out of
/// `raw_sel`), `requirements` from `index`, else `platform_lock` (the platform's of `locks`).
fn python_packages(
    ctx: &Ctx<'_>,
    keys: PackageKeys,
    raw_sel: &mut UvKeys,
    platform_lock: Option<&PythonPackages>,
    dir: &Path,
) -> Result<Option<PythonPackages>> {
    Ok(match (keys.lock, keys.requirements) {
        (Some(_), Some(r)) => {
            return Err(ctx.err(
                r.span(),
                "[python]: `lock` and `requirements` exclude each other: give one locked set of \
                 packages",
            ))
        }
        (Some(l), None) => {
            if let Some(i) = &keys.index {
                return Err(ctx.err(
                    i.span(),
                    "[python]: `index` goes with `requirements`; a pylock.toml names its own URLs",
                ));
            }
            let path = existing(ctx, &l, dir, "[python] lock")?;
            if path.file_name().is_some_and(|n| n == "uv.lock") {
                Some(PythonPackages::UvLock {
                    path,
                    written: l.into_inner(),
                    selection: uv_selection(ctx, raw_sel)?,
                })
            } else {
                Some(PythonPackages::Pylock {
                    path,
                    written: l.into_inner(),
                })
            }
        }
        (None, Some(r)) => {
            let index = requirements_index(ctx, keys.index)?;
            let path = existing(ctx, &r, dir, "[python] requirements")?;
            Some(PythonPackages::Requirements {
                path,
                written: r.into_inner(),
                index,
            })
        }
        (None, None) => {
            if let Some(i) = &keys.index {
                return Err(ctx.err(i.span(), "[python]: `index` without `requirements`"));
            }
            platform_lock.cloned()
        }
    })
}

/// `[python] index` of `requirements`: an http(s) simple repository root (PyPI's if not
/// given), without a trailing `/`.
fn requirements_index(ctx: &Ctx<'_>, index: Option<Spanned<String>>) -> Result<String> {
    Ok(match index {
        None => crate::defaults::PYPI_SIMPLE.to_string(),
        Some(i) => {
            let u = i.get_ref();
            if !(u.starts_with("https://") || u.starts_with("http://")) {
                return Err(ctx.err(
                    i.span(),
                    format!("[python]: invalid index `{u}`: expected an http(s) URL of a simple repository API root"),
                ));
            }
            crate::http::check_login(u)
                .map_err(|m| ctx.err(i.span(), format!("[python]: the index {m}")))?;
            i.into_inner().trim_end_matches('/').to_string()
        }
    })
}

/// `[python] overlap`: `error` (the default) or `last`.
fn python_overlap(ctx: &Ctx<'_>, overlap: Option<Spanned<String>>) -> Result<Overlap> {
    Ok(match overlap {
        None => Overlap::Error,
        Some(o) => match o.get_ref().as_str() {
            "error" => Overlap::Error,
            "last" => Overlap::Last,
            other => {
                return Err(ctx.err(
                    o.span(),
                    format!(
                        "[python]: invalid overlap `{other}`: expected {}",
                        backticked(&["error", "last"])
                    ),
                ))
            }
        },
    })
}

/// `[python] sdist-builder`: a registry image or `{ recipe = "FILE" }`.
fn sdist_builder(
    ctx: &Ctx<'_>,
    v: Spanned<toml::Value>,
    dir: &Path,
) -> Result<super::SdistBuilder> {
    let at = ctx.at(v.span());
    let refuse = |s: &Spanned<String>| -> Result<String> {
        Err(ctx.err(
            s.span(),
            "[python]: `sdist-builder` is a registry image or { recipe = \"FILE\" }, not a step",
        ))
    };
    super::step::step_image(ctx, "[python] sdist-builder", v, dir, &refuse)
        .map(|image| super::SdistBuilder { image, at })
}

/// `[python] extras`, `groups` and `no-dev`, as written.
struct UvKeys {
    extras: Option<Spanned<Vec<String>>>,
    groups: Option<Spanned<Vec<String>>>,
    no_dev: Option<Spanned<bool>>,
}

/// `extras`, `groups` and `no-dev` for a uv.lock, taken out of `raw` (what is left is an
/// error for the other kinds of lock).
fn uv_selection(ctx: &Ctx<'_>, raw: &mut UvKeys) -> Result<crate::python::uvlock::Selection> {
    let names = |v: Spanned<Vec<String>>, what: &str| -> Result<BTreeSet<String>> {
        let span = v.span();
        let mut out = BTreeSet::new();
        for n in v.into_inner() {
            let ok = !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
            if !ok {
                return Err(ctx.err(span.clone(), format!("[python]: invalid {what} name `{n}`")));
            }
            out.insert(n);
        }
        Ok(out)
    };
    Ok(crate::python::uvlock::Selection {
        extras: raw
            .extras
            .take()
            .map(|v| names(v, "extra"))
            .transpose()?
            .unwrap_or_default(),
        groups: raw.groups.take().map(|v| names(v, "group")).transpose()?,
        no_dev: raw.no_dev.take().is_some_and(toml::Spanned::into_inner),
    })
}

fn archive(ctx: &Ctx<'_>, raw: Spanned<RawPythonArchive>, dir: &Path) -> Result<PythonArchive> {
    let span = raw.span();
    let raw = raw.into_inner();
    let missing = |key: &str| {
        ctx.err(
            span.clone(),
            format!(
                "[python] archive: missing `{key}` (expected {})",
                backticked(&["url", "sha256", "prefix"])
            ),
        )
    };
    let written = raw.url.ok_or_else(|| missing("url"))?;
    crate::http::check_login(written.get_ref())
        .map_err(|m| ctx.err(written.span(), format!("[python] archive: the url {m}")))?;
    let written = written.into_inner();
    let url = if written.contains("://") {
        written.clone()
    } else {
        format!("file://{}", resolve(dir, &written).display())
    };
    let sha = raw.sha256.ok_or_else(|| missing("sha256"))?;
    let hex = sha
        .get_ref()
        .strip_prefix("sha256:")
        .unwrap_or(sha.get_ref());
    let sha256: Digest = format!("sha256:{hex}").parse().map_err(|_| {
        ctx.err(
            sha.span(),
            format!(
                "[python] archive: invalid sha256 `{}`: expected 64 hex digits",
                sha.get_ref()
            ),
        )
    })?;
    let prefix = raw.prefix.ok_or_else(|| missing("prefix"))?;
    let prefix_s = normalize_abs(prefix.get_ref()).map_err(|m| {
        ctx.err(
            prefix.span(),
            format!(
                "[python] archive: invalid prefix `{}`: {m}",
                prefix.get_ref()
            ),
        )
    })?;
    if prefix_s == "/" {
        return Err(ctx.err(
            prefix.span(),
            "[python] archive: prefix `/` is not allowed: pick a directory like \"/opt/python\"",
        ));
    }
    let strip = match raw.strip {
        None => 0,
        Some(s) => u32::try_from(*s.get_ref())
            .ok()
            .filter(|n| *n <= 16)
            .ok_or_else(|| ctx.err(s.span(), "[python] archive: `strip` must be 0..=16"))?,
    };
    Ok(PythonArchive {
        url,
        written,
        sha256,
        prefix: prefix_s,
        strip,
    })
}

/// `v` resolved against the recipe's directory, which must be a file.
fn existing(
    ctx: &Ctx<'_>,
    v: &Spanned<String>,
    dir: &Path,
    what: &str,
) -> Result<std::path::PathBuf> {
    let p = resolve(dir, v.get_ref());
    if !p.is_file() {
        return Err(ctx.err(
            v.span(),
            format!(
                "{what} `{}`: no such file (resolved to {})",
                v.get_ref(),
                p.display()
            ),
        ));
    }
    Ok(p)
}

/// A size in bytes: an integer, or a string with a decimal (`KB`, `MB`, `GB`) or binary
/// (`KiB`, `MiB`, `GiB`) unit. At least 1 MB, so a typo cannot split every wheel apart.
fn byte_size(v: &toml::Value) -> std::result::Result<u64, String> {
    let expected = "expected bytes as an integer or a string like \"5GB\" or \"512MiB\"";
    let n = match v {
        toml::Value::Integer(i) => u64::try_from(*i).map_err(|_| expected.to_string())?,
        toml::Value::String(s) => {
            let t = s.trim();
            let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let (num, unit) = t.split_at(split);
            let mult: u64 = match unit.trim() {
                "" | "B" => 1,
                "KB" => 1_000,
                "MB" => 1_000_000,
                "GB" => 1_000_000_000,
                "KiB" => 1 << 10,
                "MiB" => 1 << 20,
                "GiB" => 1 << 30,
                _ => return Err(format!("`{s}`: {expected}")),
            };
            num.parse::<u64>()
                .ok()
                .and_then(|n| n.checked_mul(mult))
                .ok_or_else(|| format!("`{s}`: {expected}"))?
        }
        _ => return Err(expected.to_string()),
    };
    if n < 1_000_000 {
        return Err(format!("{n} bytes is below the minimum of 1 MB"));
    }
    Ok(n)
}

/// A `[python.TABLE."PLATFORM"]` table (`archives`, `locks`): exactly one value for each
/// platform the recipe builds, each made by `value`; `missing` names what a platform lacks.
fn per_platform<R, T>(
    ctx: &Ctx<'_>,
    table: &str,
    missing: &str,
    raw: Spanned<BTreeMap<Spanned<String>, R>>,
    image: &super::Image,
    mut value: impl FnMut(R) -> Result<T>,
) -> Result<BTreeMap<Platform, T>> {
    let span = raw.span();
    let built = if image.platforms.is_empty() {
        vec![image.platform.clone()]
    } else {
        image.platforms.clone()
    };
    let mut out = BTreeMap::new();
    for (key, v) in raw.into_inner() {
        let p = Platform::parse(key.get_ref())
            .map_err(|m| ctx.err(key.span(), format!("{table}: `{}`: {m}", key.get_ref())))?;
        if !built.contains(&p) {
            return Err(ctx.err(
                key.span(),
                format!(
                    "{table}: `{}` is not a platform the recipe builds ([image] platform or \
                     platforms)",
                    key.get_ref()
                ),
            ));
        }
        if out.insert(p, value(v)?).is_some() {
            return Err(ctx.err(
                key.span(),
                format!("{table}: `{}` names a platform twice", key.get_ref()),
            ));
        }
    }
    if let Some(lacking) = built.iter().find(|p| !out.contains_key(*p)) {
        return Err(ctx.err(span, format!("{table}: no {missing} for {lacking}")));
    }
    Ok(out)
}
