//! `[image] drop-unused-copies` on the apt layer: a package's copy of a shared library that
//! nothing loads (the wheels bring their own, [`crate::system::copies`]) left out, with the
//! symlinks to it, and its lines in the packages' md5sums and dpkg `.list` files, so dpkg's
//! records describe the files there are (`dpkg --verify` finds nothing missing).

use std::collections::{BTreeMap, BTreeSet};

use super::{Item, Kind};
use crate::apt::spool::Spool;
use crate::apt::AptError;

/// `link`'s target (`target`, as written) as a layer path, `.` and `..` taken out.
fn resolve(link: &str, target: &str) -> String {
    let mut parts: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        link.split('/').collect()
    };
    if !target.starts_with('/') {
        parts.pop(); // the link's own name
    }
    for c in target.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    parts.join("/")
}

/// Leaves the regular files `drop` names (layer paths) out of `items`, and what points at them.
pub(super) fn drop_paths(
    items: &mut BTreeMap<String, Item>,
    drop: &BTreeSet<String>,
    spool: &mut Spool,
) -> Result<(), AptError> {
    if drop.is_empty() {
        return Ok(());
    }
    let mut gone: BTreeSet<String> = drop
        .iter()
        .filter(|p| matches!(items.get(*p).map(|i| &i.kind), Some(Kind::File(..))))
        .cloned()
        .collect();
    let links: Vec<String> = items
        .iter()
        .filter_map(|(p, it)| match &it.kind {
            Kind::Symlink(t) if gone.contains(&resolve(p, t)) => Some(p.clone()),
            Kind::Hardlink(t) if gone.contains(t) => Some(p.clone()),
            _ => None,
        })
        .collect();
    gone.extend(links);
    for p in &gone {
        items.remove(p);
    }
    let records: Vec<String> = items
        .keys()
        .filter(|p| p.starts_with("var/lib/dpkg/"))
        .filter(|p| p.ends_with(".md5sums") || p.ends_with(".list"))
        .cloned()
        .collect();
    for p in records {
        let Some(Item {
            kind: Kind::File(span, _),
            ..
        }) = items.get(&p)
        else {
            continue;
        };
        let text = String::from_utf8_lossy(&spool.read(*span)?).into_owned();
        let kept: String = text
            .split_inclusive('\n')
            .filter(|line| {
                let line = line.trim_end_matches('\n');
                // md5sums: `MD5  path`; .list: `/path`.
                let path = line.split_once("  ").map_or(line, |(_, p)| p);
                !gone.contains(path.trim_start_matches('/'))
            })
            .collect();
        if kept.len() != text.len() {
            let (span, digest) = spool.append_bytes(kept.as_bytes())?;
            if let Some(it) = items.get_mut(&p) {
                it.kind = Kind::File(span, digest);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn link_targets_resolve_as_layer_paths() {
        use super::resolve;
        assert_eq!(
            resolve("usr/lib/x/libf.so.1", "libf.so.1.2"),
            "usr/lib/x/libf.so.1.2"
        );
        assert_eq!(
            resolve("usr/lib/libf.so", "../lib/x/libf.so.1"),
            "usr/lib/x/libf.so.1"
        );
        assert_eq!(
            resolve("usr/lib/libf.so", "/usr/lib/x/libf.so.1"),
            "usr/lib/x/libf.so.1"
        );
    }
}
