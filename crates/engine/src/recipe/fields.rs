//! Field checks the recipe's sections share: env maps, absolute paths, users, paths resolved
//! against the recipe's directory, and lists of accepted words.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use toml::Spanned;

use super::grammar::{is_user, normalize_abs};
use super::values::SpannedMap;
use super::{Ctx, RecipeError};

type Result<T> = std::result::Result<T, RecipeError>;

pub(super) fn env_map(
    ctx: &Ctx<'_>,
    what: &str,
    m: Option<SpannedMap>,
) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (k, v) in m.unwrap_or_default() {
        let key = k.get_ref();
        let problem = if key.is_empty() {
            Some("must not be empty")
        } else if key.contains('=') {
            Some("must not contain `=`")
        } else if key.contains('\0') {
            Some("must not contain NUL")
        } else {
            None
        };
        if let Some(p) = problem {
            return Err(ctx.err(k.span(), format!("{what}: invalid env name `{key}`: {p}")));
        }
        if v.get_ref().contains('\0') {
            return Err(ctx.err(
                v.span(),
                format!("{what}: env `{key}`: value must not contain NUL"),
            ));
        }
        out.insert(k.into_inner(), v.into_inner());
    }
    Ok(out)
}

pub(super) fn opt_abs(
    ctx: &Ctx<'_>,
    what: &str,
    key: &str,
    v: Option<Spanned<String>>,
) -> Result<Option<String>> {
    v.map(|v| {
        normalize_abs(v.get_ref()).map_err(|m| {
            ctx.err(
                v.span(),
                format!("{what}: invalid {key} `{}`: {m}", v.get_ref()),
            )
        })
    })
    .transpose()
}

pub(super) fn opt_user(
    ctx: &Ctx<'_>,
    what: &str,
    v: Option<Spanned<String>>,
) -> Result<Option<String>> {
    match v {
        None => Ok(None),
        Some(u) => {
            if !is_user(u.get_ref()) {
                return Err(ctx.err(
                    u.span(),
                    format!(
                        "{what}: invalid user `{}`: expected `name`, `uid`, `name:group` or `uid:gid`",
                        u.get_ref()
                    ),
                ));
            }
            Ok(Some(u.into_inner()))
        }
    }
}

pub(super) fn backticked(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `p` if absolute, else `dir/p`; `.` components and doubled slashes dropped (`..` kept:
/// symlinks make it meaningful on the host).
pub(super) fn resolve(dir: &Path, p: &str) -> PathBuf {
    let joined = dir.join(p);
    let mut out = PathBuf::new();
    for c in joined.components() {
        if c != Component::CurDir {
            out.push(c);
        }
    }
    out
}
