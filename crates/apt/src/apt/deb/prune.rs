//! `[image] cuda-archs` on a `.deb`'s libraries: each read back from the spool, pruned in place
//! ([`crate::cuda`]) and appended again, its md5sums line given the new file's MD5.

use std::collections::HashMap;

use super::{DebRead, Kind};
use crate::apt::spool::Spool;
use crate::apt::AptError;

/// Largest library read back from the spool to be pruned; a larger one is left and listed.
const MAX_PRUNED: u64 = 4 << 30;

/// Prunes the CUDA libraries of one read .deb (`package`, as `name version`) to `t`: each one's
/// bytes read back from the spool, pruned in place and appended again (the old span is left
/// unused), its md5sums line given the new file's MD5, so dpkg's record matches the file.
pub(super) fn prune_read(
    read: &mut DebRead,
    spool: &mut Spool,
    t: &crate::cuda::Targets,
    package: &str,
) -> Result<Vec<crate::cuda::LibraryReport>, AptError> {
    use md5::Digest as _;
    let mut reports = Vec::new();
    let mut new_md5: HashMap<String, String> = HashMap::new();
    for (path, item) in &mut read.own {
        let Kind::File(span, _) = item.kind else {
            continue;
        };
        if !crate::cuda::is_library_name(path) {
            continue;
        }
        if span.size > MAX_PRUNED {
            reports.push(crate::cuda::LibraryReport {
                path: format!("/{path}"),
                from: package.to_string(),
                size: span.size,
                pruned: None,
                reason: Some(format!(
                    "larger than {MAX_PRUNED} bytes, not read to be pruned"
                )),
            });
            continue;
        }
        let mut bytes = spool.read(span)?;
        let Some(report) = crate::cuda::prune_reported(&mut bytes, t, path, package) else {
            continue;
        };
        if report.pruned.as_ref().is_some_and(|p| p.bytes_removed > 0) {
            let (span, digest) = spool.append_bytes(&bytes)?;
            item.kind = Kind::File(span, digest);
            let md5 = md5::Md5::digest(&bytes);
            new_md5.insert(
                path.clone(),
                md5.iter().map(|b| format!("{b:02x}")).collect(),
            );
        }
        reports.push(report);
    }
    if let Some(text) = &read.md5sums {
        if !new_md5.is_empty() {
            read.md5sums = Some(md5sums_with(text, &new_md5));
        }
    }
    Ok(reports)
}

/// md5sums `text` (`MD5  PATH` lines) with the sums of `new` (by path) in place of its own.
fn md5sums_with(text: &str, new: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        match body
            .split_once("  ")
            .and_then(|(_, p)| new.get(p).map(|m| (m, p)))
        {
            Some((m, p)) => {
                out.push_str(&format!("{m}  {p}"));
                out.push_str(&line[body.len()..]);
            }
            None => out.push_str(line),
        }
    }
    out
}
