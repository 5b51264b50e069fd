//! Ignore rules of a source (a `[[layer]]`'s, a step input's): its ignore file (`ignore-file`,
//! else the directory's own `.dockerignore`, read without following a swapped-in symlink),
//! then the recipe's list, each pattern checked.

use std::io;
use std::ops::Range;
use std::path::{Component, Path};

use toml::Spanned;

use super::fields::resolve;
use super::grammar::check_pattern;
use super::{Ctx, RecipeError};
use crate::bounded::{clip, clip_path};

type Result<T> = std::result::Result<T, RecipeError>;

/// A source whose ignore patterns are read: the resolved path, whether it is a directory, and
/// where `src` is written.
pub(super) struct IgnoreSource<'a> {
    pub path: &'a Path,
    pub is_dir: bool,
    pub span: Range<usize>,
}

/// A source's ignore patterns, `[[layer]]`'s rules (a step's input's too): the ignore file's
/// first (`ignore-file`, else the directory's own `.dockerignore`), then the recipe's list.
pub(super) fn ignore_patterns(
    ctx: &Ctx<'_>,
    what: &str,
    dir: &Path,
    src: IgnoreSource<'_>,
    ignore_file: Option<&Spanned<String>>,
    listed: Vec<Spanned<String>>,
) -> Result<Vec<String>> {
    let IgnoreSource {
        path: src_path,
        is_dir,
        span: src_span,
    } = src;
    let mut ignore = Vec::new();
    match ignore_file {
        Some(f) => {
            let path = resolve(dir, f.get_ref());
            let lines = read_ignore_file(dir, &path).map_err(|e| {
                let (shown, resolved) = (clip(f.get_ref()), clip_path(&path));
                let m = if e.kind() == io::ErrorKind::NotFound {
                    format!("{what}: ignore file `{shown}` does not exist (resolved to {resolved})")
                } else {
                    format!(
                        "{what}: cannot read ignore file `{shown}` (resolved to {resolved}): {e}"
                    )
                };
                ctx.err(f.span(), m)
            })?;
            push_file_patterns(ctx, what, f.span(), &path, lines, &mut ignore)?;
        }
        None if is_dir => {
            let path = src_path.join(".dockerignore");
            if path.is_file() {
                let lines = read_ignore_file(src_path, &path).map_err(|e| {
                    ctx.err(
                        src_span.clone(),
                        format!("{what}: cannot read ignore file {}: {e}", path.display()),
                    )
                })?;
                push_file_patterns(ctx, what, src_span.clone(), &path, lines, &mut ignore)?;
            }
        }
        None => {}
    }
    for p in listed {
        check_pattern(p.get_ref()).map_err(|m| {
            ctx.err(
                p.span(),
                format!("{what}: invalid ignore pattern `{}`: {m}", p.get_ref()),
            )
        })?;
        ignore.push(p.into_inner());
    }
    Ok(ignore)
}

fn push_file_patterns(
    ctx: &Ctx<'_>,
    what: &str,
    span: Range<usize>,
    path: &Path,
    lines: Vec<(usize, String)>,
    out: &mut Vec<String>,
) -> Result<()> {
    for (n, p) in lines {
        check_pattern(&p).map_err(|m| {
            ctx.err(
                span.clone(),
                format!(
                    "{what}: invalid ignore pattern `{p}` at {}:{n}: {m}",
                    path.display()
                ),
            )
        })?;
        out.push(p);
    }
    Ok(())
}

/// Reads an ignore file: lines with trailing whitespace stripped; blank lines and lines starting
/// with `#` skipped; a UTF-8 byte order mark dropped. Returns (1-based line number, pattern).
///
/// Below `base` (the recipe's directory, or the source for its `.dockerignore`) no component is
/// followed ([`crate::fsat`]): an ignore file, or a directory on its way, swapped for a symlink
/// to another file is refused, so no other file's lines reach a pattern (or an error message).
/// A path outside `base` (absolute, or with `..`) is the user's own and is opened as given.
fn read_ignore_file(base: &Path, path: &Path) -> io::Result<Vec<(usize, String)>> {
    use std::io::Read;
    let beneath: Option<Vec<&str>> = path.strip_prefix(base).ok().and_then(|rel| {
        rel.components()
            .map(|c| match c {
                Component::Normal(n) => n.to_str(),
                _ => None,
            })
            .collect()
    });
    let file = match beneath {
        Some(names) if !names.is_empty() => crate::fsat::open_regular_beneath(base, &names)?,
        _ => {
            let file = crate::fsat::open_file(path, true)?;
            let m = crate::fsat::meta(&file)?;
            if !m.is_file() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "it is {}, not a regular file",
                        crate::fsat::kind_name(m.file_type())
                    ),
                ));
            }
            file
        }
    };
    // The caller's message names the path already.
    let mut bytes = Vec::new();
    file.take(crate::bounded::MAX_TEXT_FILE + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > crate::bounded::MAX_TEXT_FILE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} bytes", crate::bounded::MAX_TEXT_FILE),
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    Ok(text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(i, l)| (i, l.to_string()))
        .collect())
}
