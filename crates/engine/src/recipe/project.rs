//! `[python] project`: the uv project whose own package the image gets, built into a wheel (as
//! `uv sync --no-editable` installs it). Read here: the directory (holding pyproject.toml),
//! its files as a step's input under `[[layer]]`'s ignore rules, and what it needs: a uv.lock
//! (its project entry gives the name and version) and an `sdist-builder` (the backend runs
//! there). An editable install is refused: an image has no source tree to point into.

use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use super::fields::resolve;
use super::ignore::{ignore_patterns, IgnoreSource};
use super::{Ctx, PythonPackages, RecipeError};
use crate::layer::{CopySpec, ModePolicy};

type Result<T> = std::result::Result<T, RecipeError>;

/// `[python] project`: a directory holding pyproject.toml, with a `lock = "uv.lock"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonProject {
    /// The directory as written.
    pub written: String,
    /// Its files as the step's input, `[[layer]]`'s rules (the directory's `.dockerignore`,
    /// the build's own files left out); the step sets `dest`.
    pub spec: CopySpec,
    /// `recipe.toml:LINE:COL` of the key, for messages given at build time.
    pub at: String,
}

const WHAT: &str = "[python] project";

/// Where the project's files are in the step's container (the step puts them under a name of
/// their own; this is only the spec's placeholder).
const DEST: &str = "/ocibuild/project";

/// `project = "DIR"` or `project = { path = "DIR", editable = false }`, checked against the
/// rest of `[python]`: `packages` (a uv.lock) and whether an `sdist-builder` is named.
pub(super) fn project(
    ctx: &Ctx<'_>,
    raw: Spanned<toml::Value>,
    dir: &Path,
    packages: Option<&PythonPackages>,
    has_builder: bool,
) -> Result<PythonProject> {
    let span = raw.span();
    let at = ctx.at(span.clone());
    let written = match raw.into_inner() {
        toml::Value::String(s) => s,
        toml::Value::Table(t) => table(ctx, t, span.clone())?,
        _ => {
            return Err(ctx.err(
                span,
                format!("{WHAT}: expected a directory (`project = \".\"`) or `{{ path = \".\" }}`"),
            ))
        }
    };
    if !matches!(packages, Some(PythonPackages::UvLock { .. })) {
        return Err(ctx.err(
            span,
            format!(
                "{WHAT} needs `lock = \"uv.lock\"`: the project's name and version come from \
                 uv.lock's project entry (a pylock.toml or requirements.txt has none; install \
                 the project's files with a [[layer]] there)"
            ),
        ));
    }
    if !has_builder {
        return Err(ctx.err(
            span,
            format!(
                "{WHAT}: the project is built into a wheel by its PEP 517 backend in the \
                 `sdist-builder`, which [python] does not name: add `sdist-builder = {{ recipe \
                 = \"builder.toml\" }}` (a builder with python3 and the project's build backend)"
            ),
        ));
    }
    let path = resolve(dir, &written);
    if !path.join("pyproject.toml").is_file() {
        return Err(ctx.err(
            span,
            format!(
                "{WHAT} `{written}`: no pyproject.toml in it (resolved to {})",
                path.display()
            ),
        ));
    }
    let ignore = ignore_patterns(
        ctx,
        WHAT,
        dir,
        IgnoreSource {
            path: &path,
            is_dir: true,
            span: span.clone(),
        },
        None,
        Vec::new(),
    )?;
    Ok(PythonProject {
        written,
        spec: CopySpec {
            src: path,
            dest: DEST.to_string(),
            ignore,
            uid: 0,
            gid: 0,
            mode: ModePolicy::Normalize,
        },
        at,
    })
}

/// The table form: `path`, and `editable` (only `false`).
fn table(ctx: &Ctx<'_>, t: toml::Table, span: Range<usize>) -> Result<String> {
    let mut path = None;
    for (k, v) in t {
        match (k.as_str(), v) {
            ("path", toml::Value::String(s)) => path = Some(s),
            ("editable", toml::Value::Boolean(false)) => {}
            ("editable", toml::Value::Boolean(true)) => {
                return Err(ctx.err(
                    span,
                    format!(
                        "{WHAT}: an editable install is refused: it points into a source tree \
                         the image does not have. The image gets the project built into a \
                         wheel and installed, as `uv sync --no-editable` does: leave \
                         `editable` out"
                    ),
                ))
            }
            ("path" | "editable", other) => {
                return Err(ctx.err(
                    span,
                    format!(
                        "{WHAT}: `{k}` is a {}, expected a {}",
                        other.type_str(),
                        if k == "path" { "string" } else { "boolean" }
                    ),
                ))
            }
            (other, _) => {
                return Err(ctx.err(
                    span,
                    format!("{WHAT}: unknown key `{other}` (it has `path` and `editable`)"),
                ))
            }
        }
    }
    path.ok_or_else(|| ctx.err(span, format!("{WHAT}: the table needs `path`")))
}
