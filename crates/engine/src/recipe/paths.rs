//! `[[path]]`: directories and symlinks the recipe declares, with their mode and owner (what a
//! Dockerfile's `mkdir -p`, `ln -s`, and `chmod`/`chown` of one directory do). They become one
//! layer, `paths`, above the recipe's `[[layer]]`s, so a directory declared here also sets the
//! mode and owner of a directory an earlier layer made (its contents stay).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::grammar::{normalize_abs, parse_owner, MAX_PATH};
use super::{Ctx, RecipeError};

type Result<T> = std::result::Result<T, RecipeError>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPath {
    pub path: Option<Spanned<String>>,
    pub symlink: Option<Spanned<String>>,
    pub mode: Option<Spanned<String>>,
    pub owner: Option<Spanned<String>>,
}

/// One `[[path]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathEntry {
    /// Absolute, normalized, not `/`.
    pub path: String,
    pub kind: PathKind,
    /// Permission bits (`0o7777` at most); 0o777 for a symlink.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// Where `path` is written (`recipe.toml:LINE:COL`), for the build's checks against the
    /// layers below. Not part of the identity.
    pub at: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathKind {
    Dir,
    /// The target, kept verbatim (never resolved at build time).
    Symlink {
        target: String,
    },
}

/// The name of the layer the `[[path]]` entries become.
pub const PATHS_LAYER: &str = "paths";

/// Mode of a declared directory without `mode`: as the layer writer's policy gives directories.
const DEFAULT_DIR_MODE: u32 = 0o755;

pub(super) fn paths(ctx: &Ctx<'_>, raw: Vec<Spanned<RawPath>>) -> Result<Vec<PathEntry>> {
    let mut out: Vec<PathEntry> = Vec::new();
    // Where each entry's `path` is written, in order.
    let mut spans = Vec::new();
    // Each path, where it was declared: a second declaration names the first.
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for r in raw {
        let span = r.span();
        let r = r.into_inner();
        let Some(p) = r.path else {
            return Err(ctx.err(span, "[[path]]: missing `path`"));
        };
        let path = normalize_abs(p.get_ref())
            .map_err(|m| ctx.err(p.span(), format!("[[path]] path: {m}")))?;
        if path == "/" {
            return Err(ctx.err(p.span(), "[[path]] path: `/` cannot be declared"));
        }
        if let Some(first) = seen.get(&path) {
            return Err(ctx.err(
                p.span(),
                format!("[[path]] `{path}` is declared twice (first at {first})"),
            ));
        }
        let kind = match &r.symlink {
            None => PathKind::Dir,
            Some(t)
                if t.get_ref().is_empty()
                    || t.get_ref().contains('\0')
                    || t.get_ref().len() >= MAX_PATH =>
            {
                return Err(ctx.err(
                    t.span(),
                    format!(
                        "[[path]] symlink: expected a non-empty target without NUL, shorter \
                         than {MAX_PATH} bytes"
                    ),
                ))
            }
            Some(t) => PathKind::Symlink {
                target: t.get_ref().clone(),
            },
        };
        let mode = match (&r.mode, &kind) {
            (Some(m), PathKind::Symlink { .. }) => {
                return Err(ctx.err(
                    m.span(),
                    "[[path]] mode: a symlink has no mode of its own (it is 0777)",
                ))
            }
            (Some(m), PathKind::Dir) => parse_mode(m.get_ref())
                .map_err(|e| ctx.err(m.span(), format!("[[path]] mode: {e}")))?,
            (None, PathKind::Dir) => DEFAULT_DIR_MODE,
            (None, PathKind::Symlink { .. }) => 0o777,
        };
        let (uid, gid) = match &r.owner {
            None => (0, 0),
            Some(o) => parse_owner(o.get_ref()).ok_or_else(|| {
                ctx.err(
                    o.span(),
                    format!(
                        "[[path]] owner: invalid `{}`: expected numeric `uid:gid` like \"1000:1000\"",
                        o.get_ref()
                    ),
                )
            })?,
        };
        let at = ctx.at(p.span());
        seen.insert(path.clone(), at.clone());
        spans.push(p.span());
        out.push(PathEntry {
            path,
            kind,
            mode,
            uid,
            gid,
            at,
        });
    }
    // Nothing declared beneath a declared symlink: the layer would put a directory where the
    // link is, or the runtime would follow the link.
    for e in &out {
        if let PathKind::Symlink { .. } = e.kind {
            let prefix = format!("{}/", e.path);
            if let Some(i) = out.iter().position(|o| o.path.starts_with(&prefix)) {
                return Err(ctx.err(
                    spans[i].clone(),
                    format!(
                        "[[path]] `{}` is beneath `{}`, which is declared a symlink (at {})",
                        out[i].path, e.path, seen[&e.path]
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// An octal mode, `"0755"`, `"755"`, `"1777"`: at most `0o7777`.
fn parse_mode(s: &str) -> std::result::Result<u32, String> {
    let digits = s;
    if digits.is_empty() || digits.len() > 5 || !digits.chars().all(|c| ('0'..='7').contains(&c)) {
        return Err(format!(
            "invalid `{s}`: expected octal permission bits like \"0755\" or \"1777\""
        ));
    }
    let m = u32::from_str_radix(digits, 8).map_err(|e| format!("invalid `{s}`: {e}"))?;
    if m > 0o7777 {
        return Err(format!("invalid `{s}`: at most 7777"));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::parse_mode;

    #[test]
    fn modes() {
        assert_eq!(parse_mode("0755"), Ok(0o755));
        assert_eq!(parse_mode("1777"), Ok(0o1777));
        assert!(parse_mode("0o700").is_err());
        assert!(parse_mode("0855").is_err());
        assert!(parse_mode("17777").is_err());
        assert!(parse_mode("").is_err());
        assert!(parse_mode("rwx").is_err());
    }
}
