//! `[apt]` and `[python]`: system packages and the interpreter.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use toml::Spanned;

use super::grammar::normalize_abs;
use super::raw::{RawApt, RawAptSource, RawPython, RawPythonArchive};
use super::validate::{backticked, resolve};
use super::{
    Apt, AptSource, Ctx, Overlap, Platform, Python, PythonArchive, PythonPackages, PythonSource,
    RecipeError, DEFAULT_MAX_LAYER_SIZE,
};
use crate::digest::Digest;

type Result<T> = std::result::Result<T, RecipeError>;

/// The Debian architecture name of an OCI platform, when Debian has one.
pub fn debian_arch(p: &Platform) -> Option<&'static str> {
    Some(match (p.architecture.as_str(), p.variant.as_deref()) {
        ("amd64", _) => "amd64",
        ("arm64", _) => "arm64",
        ("arm", Some("v7")) | ("arm", None) => "armhf",
        ("arm", Some("v5")) => "armel",
        ("386", _) => "i386",
        ("ppc64le", _) => "ppc64el",
        ("s390x", _) => "s390x",
        ("riscv64", _) => "riscv64",
        ("mips64le", _) => "mips64el",
        ("loong64", _) => "loong64",
        _ => return None,
    })
}

/// `several`: the recipe has several `platforms` (a source's `architecture` would pin one).
pub(super) fn apt(
    ctx: &Ctx<'_>,
    raw: Spanned<RawApt>,
    platform: &Platform,
    several: bool,
    dir: &Path,
) -> Result<Apt> {
    let span = raw.span();
    let raw = raw.into_inner();
    let Some(architecture) = debian_arch(platform) else {
        return Err(ctx.err(
            span,
            format!("[apt]: the platform {platform} has no Debian architecture"),
        ));
    };
    if raw.source.is_empty() {
        return Err(ctx.err(
            span,
            "[apt]: no sources: add at least one `[[apt.source]]` with `url`, `suite`, \
             `components` and `signed-by`",
        ));
    }
    let mut sources = Vec::with_capacity(raw.source.len());
    for (i, s) in raw.source.into_iter().enumerate() {
        sources.push(source(ctx, s, i, architecture, several, dir)?);
    }
    let essential = raw.essential.unwrap_or(false);
    let list = match raw.packages {
        Some(list) => list,
        None if essential => Vec::new(),
        None => {
            return Err(ctx.err(
                span,
                "[apt]: missing `packages`, the list of packages to install (like \
                 [\"python3\"]), or `essential = true`",
            ))
        }
    };
    let mut packages = BTreeSet::new();
    let mut package_at = BTreeMap::new();
    for p in list {
        check_package(p.get_ref()).map_err(|m| {
            ctx.err(
                p.span(),
                format!("[apt] packages: invalid package `{}`: {m}", p.get_ref()),
            )
        })?;
        let at = ctx.at(p.span());
        let text = p.into_inner().trim().to_string();
        package_at.entry(text.clone()).or_insert(at);
        packages.insert(text);
    }
    if packages.is_empty() && !essential {
        return Err(ctx.err(
            span,
            "[apt]: `packages` is empty (with `essential = true` it may be)",
        ));
    }
    let host_provides = host_provides(ctx, raw.host_provides.unwrap_or_default(), &packages)?;
    Ok(Apt {
        sources,
        packages: packages.into_iter().collect(),
        package_at,
        architecture: architecture.to_string(),
        host_provides,
        essential,
    })
}

/// `[apt] host-provides`: bare Debian package names (real or virtual, like `libcuda.so.1`),
/// none of them also requested in `packages`.
fn host_provides(
    ctx: &Ctx<'_>,
    list: Vec<Spanned<String>>,
    packages: &BTreeSet<String>,
) -> Result<Vec<String>> {
    let mut out = BTreeSet::new();
    for h in list {
        let name = h.get_ref();
        if let Some(m) = check_name(name) {
            return Err(ctx.err(
                h.span(),
                format!(
                    "[apt] host-provides: invalid name `{}`: {m}",
                    crate::bounded::clip(name)
                ),
            ));
        }
        let requested = packages.iter().any(|p| {
            p.split(['(', '=', ' '])
                .next()
                .is_some_and(|n| n.trim() == name)
        });
        if requested {
            return Err(ctx.err(
                h.span(),
                format!(
                    "[apt] host-provides: `{name}` is also in `packages`: it is either installed \
                     in the image or provided by the host at run time, not both"
                ),
            ));
        }
        out.insert(h.into_inner());
    }
    Ok(out.into_iter().collect())
}

/// Why `s` is not a bare Debian package name (real or virtual), if it is not.
fn check_name(s: &str) -> Option<&'static str> {
    let ok = s.len() >= 2
        && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c));
    (!ok).then_some(
        "expected a Debian package or virtual name (lower-case letters, digits, `+`, `-`, `.`; \
         no version), like \"libcuda.so.1\"",
    )
}

fn source(
    ctx: &Ctx<'_>,
    raw: Spanned<RawAptSource>,
    i: usize,
    arch: &str,
    several: bool,
    dir: &Path,
) -> Result<AptSource> {
    let span = raw.span();
    let raw = raw.into_inner();
    let what = format!("[[apt.source]] #{}", i + 1);
    let missing =
        |key: &str, hint: &str| ctx.err(span.clone(), format!("{what}: missing `{key}` ({hint})"));
    let url = raw.url.ok_or_else(|| {
        missing(
            "url",
            "the archive root, like \"https://deb.debian.org/debian\"",
        )
    })?;
    check_archive_url(ctx, &url, &what, "url")?;
    let mut mirrors = Vec::new();
    for m in raw.mirrors.unwrap_or_default() {
        check_archive_url(ctx, &m, &what, "mirrors")?;
        let at = m.span();
        let m = m.into_inner().trim_end_matches('/').to_string();
        if m == url.get_ref().trim_end_matches('/') || mirrors.contains(&m) {
            return Err(ctx.err(
                at,
                format!(
                    "{what}: `mirrors` lists `{}` twice (or the source's own `url`)",
                    crate::http::redact(&m)
                ),
            ));
        }
        mirrors.push(m);
    }
    let suite = raw
        .suite
        .ok_or_else(|| missing("suite", "like \"bookworm\" or \"noble\""))?;
    check_word(suite.get_ref(), true)
        .map_err(|m| ctx.err(suite.span(), format!("{what}: invalid suite: {m}")))?;
    let components = raw
        .components
        .ok_or_else(|| missing("components", "like [\"main\"]"))?;
    if components.is_empty() {
        return Err(missing("components", "like [\"main\"]"));
    }
    let mut comps = Vec::new();
    for c in components {
        check_word(c.get_ref(), true)
            .map_err(|m| ctx.err(c.span(), format!("{what}: invalid component: {m}")))?;
        comps.push(c.into_inner());
    }
    if let Some(a) = &raw.architecture {
        if several {
            return Err(ctx.err(
                a.span(),
                format!(
                    "{what}: `architecture` pins one architecture; with several `platforms` \
                     leave it out (each platform reads its own)"
                ),
            ));
        }
        if a.get_ref() != arch {
            return Err(ctx.err(
                a.span(),
                format!(
                    "{what}: architecture `{}` differs from the image's ({arch}, from [image] \
                     platform); cross-architecture sources are not supported",
                    a.get_ref()
                ),
            ));
        }
    }
    let snapshot = match raw.snapshot {
        None => None,
        Some(s) => {
            if !is_snapshot(s.get_ref()) {
                return Err(ctx.err(
                    s.span(),
                    format!(
                        "{what}: invalid snapshot `{}`: expected a timestamp like \
                         \"20241101T000000Z\"",
                        s.get_ref()
                    ),
                ));
            }
            Some(s.into_inner())
        }
    };
    let allow_unsigned = raw.allow_unsigned.unwrap_or(false);
    let signed_by = match raw.signed_by {
        None => None,
        Some(k) => {
            let p = resolve(dir, k.get_ref());
            // Checked here, not when the archive is read: a build from the lock never reads it.
            if !p.is_file() {
                return Err(ctx.err(
                    k.span(),
                    format!(
                        "{what}: signed-by `{}`: no such file (resolved to {})",
                        k.get_ref(),
                        p.display()
                    ),
                ));
            }
            Some(p)
        }
    };
    if signed_by.is_none() && !allow_unsigned {
        return Err(missing(
            "signed-by",
            "the archive's OpenPGP key file; set `allow-unsigned = true` to accept an \
             unverified archive",
        ));
    }
    Ok(AptSource {
        url: url.into_inner().trim_end_matches('/').to_string(),
        mirrors,
        suite: suite.into_inner(),
        components: comps,
        snapshot,
        signed_by,
        allow_unsigned,
        check_valid_until: raw.check_valid_until.unwrap_or(true),
    })
}

/// An archive root as `key` (`url`, or an entry of `mirrors`) must be: an https://, http:// or
/// file:// URL, with a login that parses.
fn check_archive_url(ctx: &Ctx<'_>, u: &Spanned<String>, what: &str, key: &str) -> Result<()> {
    let v = u.get_ref();
    if !(v.starts_with("https://") || v.starts_with("http://") || v.starts_with("file://")) {
        let shown = if key == "url" { "url" } else { "mirror" };
        return Err(ctx.err(
            u.span(),
            format!("{what}: invalid {shown} `{v}`: expected an https://, http:// or file:// URL"),
        ));
    }
    crate::http::check_login(v).map_err(|m| {
        let shown = if key == "url" { "url" } else { "mirror" };
        ctx.err(u.span(), format!("{what}: the {shown} {m}"))
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
    let span = raw.span();
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
            let other = raw.archive.as_ref().map(|x| x.span());
            archives(
                ctx,
                a,
                other.or(raw.path.as_ref().map(|x| x.span())),
                dir,
                image,
            )?
        }
        None => BTreeMap::new(),
    };
    let version_at = raw.version.as_ref().map(|v| ctx.at(v.span()));
    let version = raw.version.map(|v| python_version(ctx, v)).transpose()?;
    let source =
        match (raw.path, raw.archive) {
            (Some(_), Some(a)) => return Err(ctx.err(
                a.span(),
                "[python]: `path` and `archive` exclude each other: the interpreter comes from \
                 one place",
            )),
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
        };
    let locks = match raw.locks {
        Some(l) => {
            let other = raw
                .lock
                .as_ref()
                .map(|x| x.span())
                .or(raw.requirements.as_ref().map(|x| x.span()))
                .or(raw.index.as_ref().map(|x| x.span()));
            locks(ctx, l, other, dir, image)?
        }
        None => BTreeMap::new(),
    };
    let mut raw_sel = UvKeys {
        extras: raw.extras,
        groups: raw.groups,
        no_dev: raw.no_dev,
    };
    let packages = match (raw.lock, raw.requirements) {
        (Some(_), Some(r)) => {
            return Err(ctx.err(
                r.span(),
                "[python]: `lock` and `requirements` exclude each other: give one locked set of \
                 packages",
            ))
        }
        (Some(l), None) => {
            if let Some(i) = &raw.index {
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
                    selection: uv_selection(ctx, &mut raw_sel)?,
                })
            } else {
                Some(PythonPackages::Pylock {
                    path,
                    written: l.into_inner(),
                })
            }
        }
        (None, Some(r)) => {
            let index = match raw.index {
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
            };
            let path = existing(ctx, &r, dir, "[python] requirements")?;
            Some(PythonPackages::Requirements {
                path,
                written: r.into_inner(),
                index,
            })
        }
        (None, None) => {
            if let Some(i) = &raw.index {
                return Err(ctx.err(i.span(), "[python]: `index` without `requirements`"));
            }
            // The platform built's lock; `Recipe::for_platform` picks another's.
            locks.get(&image.platform).cloned()
        }
    };
    let _ = span;
    // `extras`, `groups` and `no-dev` are uv's: left over without a uv.lock.
    if let Some(s) = raw_sel
        .extras
        .as_ref()
        .map(|v| v.span())
        .or(raw_sel.groups.as_ref().map(|v| v.span()))
        .or(raw_sel.no_dev.as_ref().map(|v| v.span()))
    {
        return Err(ctx.err(
            s,
            "[python]: `extras`, `groups` and `no-dev` choose from a uv.lock (`lock = \"uv.lock\"`), as `uv sync` does; a pylock.toml or requirements.txt is one set already",
        ));
    }
    let overlap = match raw.overlap {
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
    };
    let max_layer_size = match raw.max_layer_size {
        None => DEFAULT_MAX_LAYER_SIZE,
        Some(v) => byte_size(v.get_ref())
            .map_err(|m| ctx.err(v.span(), format!("[python]: invalid max-layer-size: {m}")))?,
    };
    let sdist_builder = raw
        .sdist_builder
        .map(|v| {
            let at = ctx.at(v.span());
            let refuse = |s: &Spanned<String>| -> Result<String> {
                Err(ctx.err(
                    s.span(),
                    "[python]: `sdist-builder` is a registry image or { recipe = \"FILE\" }, not a step",
                ))
            };
            super::step::step_image(ctx, "[python] sdist-builder", v, dir, &refuse)
                .map(|image| super::SdistBuilder { image, at })
        })
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
        no_dev: raw.no_dev.take().is_some_and(|v| v.into_inner()),
    })
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

/// A package request: `name`, `name (op version)` or `name=version`.
fn check_package(s: &str) -> std::result::Result<(), String> {
    let s = s.trim();
    let (name, rest) = match s.find(['(', '=', ' ']) {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (s, ""),
    };
    let name_ok = name.len() >= 2
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c));
    if !name_ok {
        return Err("expected a Debian package name (lower-case letters, digits, `+`, `-`, `.`) with an optional version like `(>= 3.11)` or `=3.11.2-6`".into());
    }
    if rest.is_empty() {
        return Ok(());
    }
    if let Some(v) = rest.strip_prefix('=') {
        if v.trim().is_empty() || v.contains(char::is_whitespace) {
            return Err("expected a version after `=`".into());
        }
        return Ok(());
    }
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or("expected a version constraint in parentheses, like `(>= 3.11)`")?
        .trim();
    let op_end = inner
        .find(|c: char| !"<>=".contains(c))
        .ok_or("expected an operator and a version")?;
    let (op, ver) = inner.split_at(op_end);
    if !["<<", "<=", "=", ">=", ">>"].contains(&op) {
        return Err(format!(
            "unknown relation `{op}`: expected <<, <=, =, >= or >>"
        ));
    }
    if ver.trim().is_empty() || ver.trim().contains(char::is_whitespace) {
        return Err("expected one version after the operator".into());
    }
    Ok(())
}

fn check_word(s: &str, slash: bool) -> std::result::Result<(), String> {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+~".contains(c) || (slash && c == '/'))
        && !s.starts_with('/')
        && !s.split('/').any(|p| p == ".." || p.is_empty())
    {
        Ok(())
    } else {
        Err(format!("`{s}` is not a valid archive path segment"))
    }
}

fn is_snapshot(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 16
        && b[8] == b'T'
        && b[15] == b'Z'
        && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_requests() {
        for ok in [
            "python3",
            "libssl3 (>= 3.0)",
            "python3.11=3.11.2-6",
            "g++",
            "libc6 (<< 3)",
        ] {
            assert!(check_package(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "Python3", "a", "x (~ 1)", "x (>= )", "x (>= 1", "x= ", "py thon",
        ] {
            assert!(check_package(bad).is_err(), "{bad}");
        }
        assert!(is_snapshot("20241101T000000Z"));
        assert!(!is_snapshot("2024-11-01"));
        assert!(check_word("bookworm-updates", true).is_ok());
        assert!(check_word("../x", true).is_err());
    }
}
