//! What a step did, for `build --json` and the text, and the files a non-reproducible step's
//! two outputs differ in.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use serde::Serialize;

use crate::audit::tarmeta::{self, LayerIndex};
use crate::digest::Digest;
use crate::store::{CachedLayer, Store};

/// One step in a build: cached or run (and how long), and its outputs' layer digests.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepReport {
    pub name: String,
    pub key: Digest,
    pub cached: bool,
    /// Seconds the container ran; `None` when cached.
    pub duration_secs: Option<f64>,
    pub outputs: Vec<Digest>,
    /// With `[image] cuda-archs`: what pruning did to the libraries of its outputs that go
    /// into the image (reported with the image's other CUDA libraries, under `cuda`).
    #[serde(skip)]
    pub cuda: Vec<crate::cuda::LibraryReport>,
}

/// The most differing files listed.
const MAX_LISTED: usize = 20;

/// Files up to this size get their first difference shown.
const MAX_SHOWN: u64 = 64 * 1024;

/// The characters of a line shown on each side.
const LINE_SHOWN: usize = 60;

/// The files in which the locked output layer `expected` (when this store has it) and the
/// layer `found` differ, one line each (`path: size 10 → 12`, `path: added`); empty when the
/// locked layer is not here.
pub fn differing_files(store: &Store, expected: &Digest, found: &CachedLayer) -> Vec<String> {
    let (Some(a), Some(b)) = (
        index(store, expected, &found.media_type),
        index(store, &found.digest, &found.media_type),
    ) else {
        return Vec::new();
    };
    let diffs = crate::audit::diff::file_diffs(&a, &b, false);
    // The small files whose content differs: where, from both layers' bytes.
    let small: BTreeSet<String> = diffs
        .iter()
        .take(MAX_LISTED)
        .filter(|d| d.attributes.iter().any(|a| a.attribute == "content"))
        .filter(|d| {
            [&a, &b]
                .iter()
                .all(|i| i.files.get(&d.path).is_some_and(|m| m.size <= MAX_SHOWN))
        })
        .map(|d| d.path.clone())
        .collect();
    let (old, new) = (
        contents(store, expected, &found.media_type, &small),
        contents(store, &found.digest, &found.media_type, &small),
    );
    let mut out: Vec<String> = diffs
        .iter()
        .take(MAX_LISTED)
        .map(|d| {
            let mut what: Vec<String> = d
                .attributes
                .iter()
                .map(|a| format!("{} {} → {}", a.attribute, a.a, a.b))
                .collect();
            if let (Some(x), Some(y)) = (old.get(&d.path), new.get(&d.path)) {
                what.push(first_difference(x, y));
            }
            match d.change {
                crate::audit::diff::Change::Changed => format!("{}: {}", d.path, what.join(", ")),
                crate::audit::diff::Change::Added => format!("{}: only in this run", d.path),
                crate::audit::diff::Change::Removed => {
                    format!("{}: only in the locked output", d.path)
                }
            }
        })
        .collect();
    if diffs.len() > MAX_LISTED {
        out.push(format!("… and {} more", diffs.len() - MAX_LISTED));
    }
    out
}

fn index(store: &Store, digest: &Digest, media_type: &str) -> Option<LayerIndex> {
    if !store.has_blob(digest) {
        return None;
    }
    let f = fs_err::File::open(store.blob_path(digest)).ok()?;
    let r = crate::layer::decompressor(media_type, std::io::BufReader::new(f)).ok()?;
    tarmeta::index_layer(r).ok()
}

/// The content of each of `paths` (regular files, at most [`MAX_SHOWN`] bytes) in the layer
/// `digest` of this store; what cannot be read is left out.
fn contents(
    store: &Store,
    digest: &Digest,
    media_type: &str,
    paths: &BTreeSet<String>,
) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if paths.is_empty() {
        return out;
    }
    let Ok(f) = fs_err::File::open(store.blob_path(digest)) else {
        return out;
    };
    let Ok(r) = crate::layer::decompressor(media_type, std::io::BufReader::new(f)) else {
        return out;
    };
    let mut ar = crate::tarbound::archive(r);
    let Ok(entries) = ar.entries() else {
        return out;
    };
    for e in entries.flatten() {
        let Ok(path) = e.path().map(|p| p.to_string_lossy().into_owned()) else {
            continue;
        };
        if paths.contains(&path) && e.header().entry_type().is_file() {
            let mut bytes = Vec::new();
            if e.take(MAX_SHOWN).read_to_end(&mut bytes).is_ok() {
                out.insert(path, bytes);
            }
        }
    }
    out
}

/// Where two contents first differ: for text, the first differing line on each side
/// (`line 3: "a" → "b"`); else the first differing byte's offset and values.
fn first_difference(a: &[u8], b: &[u8]) -> String {
    fn text(x: &[u8]) -> Option<&str> {
        std::str::from_utf8(x).ok().filter(|s| !s.contains('\0'))
    }
    if let (Some(x), Some(y)) = (text(a), text(b)) {
        let (mut xl, mut yl) = (x.lines(), y.lines());
        for n in 1.. {
            match (xl.next(), yl.next()) {
                (Some(p), Some(q)) if p == q => continue,
                (None, None) => break,
                (p, q) => {
                    let show = |l: Option<&str>| match l {
                        Some(l) => format!("{:?}", crate::bounded::clip_to(l, LINE_SHOWN)),
                        None => "(no line)".to_string(),
                    };
                    return format!("line {n}: {} → {}", show(p), show(q));
                }
            }
        }
    }
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!(
            "first difference at byte {i}: 0x{:02x} → 0x{:02x}",
            a[i], b[i]
        ),
        None => format!(
            "one is a prefix of the other ({} and {} bytes)",
            a.len(),
            b.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::first_difference;

    #[test]
    fn the_first_difference_of_text_is_a_line_and_of_binary_a_byte() {
        assert_eq!(
            first_difference(b"same\nbuilt at 1\n", b"same\nbuilt at 2\n"),
            r#"line 2: "built at 1" → "built at 2""#
        );
        assert_eq!(
            first_difference(b"one\n", b"one\ntwo\n"),
            r#"line 2: (no line) → "two""#
        );
        assert_eq!(
            first_difference(&[0, 1, 2], &[0, 1, 3]),
            "first difference at byte 2: 0x02 → 0x03"
        );
    }
}
