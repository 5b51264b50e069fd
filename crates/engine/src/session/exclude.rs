//! The build's own files are never part of a layer: a `[[layer]]` whose `src` holds the
//! recipe's lock, the output being written, the previous default output (`NAME.oci`) or the
//! store gets patterns that leave them out, after the recipe's own (so no `!` brings them
//! back). Without this, `src = "."` next to the default output takes in the last build's
//! layout, and every build has a new digest.

use std::path::{Path, PathBuf};

use crate::recipe::Recipe;

/// `recipe` with every layer's (every step's file input's, `[python] project`'s) `ignore` extended to leave
/// `paths` (absolute) out, each with the directories above it (below the layer's source) that
/// hold nothing else: `-o out/img` makes `out/`, which the next build would otherwise take in.
pub(super) fn without_own_files(recipe: &Recipe, paths: &[PathBuf]) -> Recipe {
    let mut out = recipe.clone();
    let step_inputs = out.steps.iter_mut().flat_map(|s| &mut s.inputs);
    let project = out
        .python
        .as_mut()
        .and_then(|p| p.project.as_mut())
        .map(|p| &mut p.spec);
    let specs = out
        .layers
        .iter_mut()
        .map(|l| &mut l.spec)
        .chain(step_inputs.filter_map(|i| match i {
            crate::recipe::StepInput::Files(l) => Some(&mut l.spec),
            crate::recipe::StepInput::Step(_) => None,
        }))
        .chain(project);
    for spec in specs {
        let src = lexical(&spec.src);
        for p in paths {
            let p = lexical(p);
            if let Some(pattern) = pattern_for(&src, &only_holder(&src, &p)) {
                spec.ignore.push(pattern);
            }
        }
    }
    out
}

/// The highest directory between `src` (excluded) and `path` that holds only the way down to
/// `path` (which must exist), else `path`.
fn only_holder(src: &Path, path: &Path) -> PathBuf {
    let mut cur = path.to_path_buf();
    while let Some(parent) = cur.parent() {
        if parent == src || !parent.starts_with(src) || fs_err::symlink_metadata(&cur).is_err() {
            break;
        }
        let entries: Vec<_> = match fs_err::read_dir(parent) {
            Ok(e) => e
                .take(2)
                .filter_map(std::result::Result::ok)
                .map(|e| e.file_name())
                .collect(),
            Err(_) => break,
        };
        if entries.len() != 1 || Some(entries[0].as_os_str()) != cur.file_name() {
            break;
        }
        cur = parent.to_path_buf();
    }
    cur
}

/// `p` with `.` and `..` components resolved by the text alone (as the layer's `src` is
/// given: `deploy/..` is the recipe's parent).
fn lexical(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// An anchored pattern matching exactly `path` beneath `src`, when it is beneath it.
fn pattern_for(src: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(src).ok()?;
    if rel.as_os_str().is_empty() {
        return None;
    }
    let rel = rel.to_str()?;
    let mut pattern = String::from("/");
    for c in rel.chars() {
        if matches!(c, '\\' | '*' | '?' | '[' | ']') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    Some(pattern)
}

/// `p` made absolute against the current directory (without resolving symlinks), as layer
/// sources are.
pub(super) fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::ignore::IgnoreMatcher;

    #[test]
    fn patterns_match_exactly_the_path() {
        let src = Path::new("/p");
        let p = pattern_for(src, Path::new("/p/out/a[1]*.oci")).unwrap();
        assert_eq!(p, "/out/a\\[1\\]\\*.oci");
        let m = IgnoreMatcher::new(&["!*", p.as_str()]).unwrap();
        assert!(m.excluded("out/a[1]*.oci") && m.excluded("out/a[1]*.oci/index.json"));
        assert!(!m.excluded("out/a1x.oci"));
        let hash = pattern_for(src, Path::new("/p/#x")).unwrap();
        assert!(IgnoreMatcher::new(&[hash]).unwrap().excluded("#x"));
        assert_eq!(pattern_for(src, Path::new("/q/x")), None);
        assert_eq!(pattern_for(src, src), None);
        assert_eq!(
            lexical(Path::new("/p/deploy/../app.lock")),
            Path::new("/p/app.lock")
        );
    }

    #[test]
    fn only_the_way_down_to_an_existing_output_is_climbed() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path();
        fs_err::create_dir_all(src.join("dist")).unwrap();
        fs_err::write(src.join("dist/app.whl"), "w").unwrap();
        // The output does not exist yet: `dist/` holds something else, and stays.
        let out = src.join("dist/app.oci");
        assert_eq!(only_holder(src, &out), out);
        fs_err::remove_file(src.join("dist/app.whl")).unwrap();
        fs_err::create_dir_all(&out).unwrap();
        assert_eq!(only_holder(src, &out), src.join("dist"));
    }
}
