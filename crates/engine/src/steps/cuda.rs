//! `[image] cuda-archs` applied to what a step writes into the image: every shared library in
//! an output that goes into the image (`image = true`) is pruned in place ([`crate::cuda`])
//! before the output becomes a layer, so the layer, the step's cached outputs and any later
//! step that takes them see the pruned files. Outputs that stay results (a wheel an sdist step
//! built) are left: what installs them prunes them.
//!
//! The output directory is the container's work: it is walked through directory handles that
//! never follow a symlink ([`crate::fsat`]), and only regular files are read and rewritten.
//! Pruning keeps a file's size, so a library is rewritten where it is, through the handle it
//! was read from.

use std::ffi::OsStr;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::cuda::{LibraryReport, Targets};
use crate::digest::Digest;
use crate::fsat::Dir;
use crate::store::Store;

/// Largest library read to be pruned; a larger one is left and listed (as the apt layer does).
const MAX_PRUNED: u64 = 4 << 30;

/// Prunes every shared library below `root` (the host side of output `dest`) to `t`, in path
/// order; the reports name each library by its path in the image (`dest` + its path below
/// `root`) and come `from` the step.
pub(super) fn prune_output(
    root: &Path,
    dest: &str,
    t: &Targets,
    from: &str,
) -> std::io::Result<Vec<LibraryReport>> {
    let mut reports = Vec::new();
    let dir = Dir::open_root(root, false)?;
    walk(&dir, dest.trim_end_matches('/'), t, from, &mut reports)?;
    Ok(reports)
}

fn walk(
    dir: &Dir,
    at: &str,
    t: &Targets,
    from: &str,
    reports: &mut Vec<LibraryReport>,
) -> std::io::Result<()> {
    let mut names = dir.names()?;
    names.sort();
    for name in names {
        let Some(text) = name.to_str() else {
            continue; // no library name is anything but UTF-8
        };
        let path = format!("{at}/{text}");
        let meta = dir.stat(&name)?;
        if meta.is_dir() {
            walk(&dir.open_dir(&name)?, &path, t, from, reports)?;
        } else if meta.is_file() && crate::cuda::is_library_name(text) {
            reports.extend(prune_file(dir, &name, &path, meta.size, t, from)?);
        }
    }
    Ok(())
}

fn prune_file(
    dir: &Dir,
    name: &OsStr,
    path: &str,
    size: u64,
    t: &Targets,
    from: &str,
) -> std::io::Result<Option<LibraryReport>> {
    if size > MAX_PRUNED {
        return Ok(Some(LibraryReport {
            path: path.to_string(),
            from: from.to_string(),
            size,
            pruned: None,
            reason: Some(format!(
                "larger than {MAX_PRUNED} bytes, not read to be pruned"
            )),
        }));
    }
    let mut file = dir.open_file_rw(name)?;
    // Swapped for something else since the listing: left alone.
    if !crate::fsat::meta(&file)?.is_file() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    (&mut file).take(MAX_PRUNED + 1).read_to_end(&mut bytes)?;
    let Some(report) = crate::cuda::prune_reported(&mut bytes, t, path, from) else {
        return Ok(None);
    };
    if report.pruned.as_ref().is_some_and(|p| p.bytes_removed > 0) {
        // The same length as read: pruning moves nothing and keeps the size.
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&bytes)?;
        file.flush()?;
    }
    Ok(Some(report))
}

/// Where the reports of a step's pruned outputs are kept beside its cached outputs, so a cache
/// hit reports them too.
fn report_key(key: &Digest) -> Digest {
    Digest::of(format!("ocibuild step cuda report {key}").as_bytes())
}

pub(super) fn save_reports(
    store: &Store,
    step: &str,
    key: &Digest,
    reports: &[LibraryReport],
) -> Result<(), super::StepError> {
    let bytes = serde_json::to_vec(reports).map_err(|e| super::StepError::Io {
        step: step.to_string(),
        source: std::io::Error::other(e),
    })?;
    Ok(store.put_meta(&report_key(key), &bytes)?)
}

/// The reports saved with a cached run; `None` when they are gone or cannot be read.
pub(super) fn cached_reports(store: &Store, key: &Digest) -> Option<Vec<LibraryReport>> {
    store
        .meta(&report_key(key))
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
}
