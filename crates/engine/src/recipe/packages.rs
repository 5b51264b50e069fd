//! `[apt]`: system packages.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use toml::Spanned;

use super::fields::resolve;
use super::raw::{RawApt, RawAptSource};
use super::{Apt, AptSource, Ctx, Platform, RecipeError};

type Result<T> = std::result::Result<T, RecipeError>;

/// The Debian architecture name of an OCI platform, when Debian has one.
pub fn debian_arch(p: &Platform) -> Option<&'static str> {
    Some(match (p.architecture.as_str(), p.variant.as_deref()) {
        ("amd64", _) => "amd64",
        ("arm64", _) => "arm64",
        ("arm", Some("v7") | None) => "armhf",
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
