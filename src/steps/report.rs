//! What a step did, for `build --json` and the text, and the files a non-reproducible step's
//! two outputs differ in.

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
}

/// The most differing files listed.
const MAX_LISTED: usize = 20;

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
    let mut out: Vec<String> = diffs
        .iter()
        .take(MAX_LISTED)
        .map(|d| {
            let what: Vec<String> = d
                .attributes
                .iter()
                .map(|a| format!("{} {} → {}", a.attribute, a.a, a.b))
                .collect();
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
