//! `verify`: compare a rebuild (an image in a store, made by the caller from the recipe and its
//! lock in an empty store) with a target image, by manifest digest, and explain a difference.

use std::collections::BTreeMap;

use serde::Serialize;

use super::diff::{self, DiffOptions, DiffReport, Outcome};
use super::source::{self, OpenOptions};
use super::AuditError;
use crate::digest::Digest;
use crate::image::annotations;
use crate::imageref::ImageRef;
use crate::store::Store;

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// The rebuild's manifest digest.
    pub rebuilt: Digest,
    /// The target as written (`oci:DIR:TAG`, `sha256:…`, …).
    pub target: String,
    /// The target's manifest digest; `None` for a docker-archive (it has no manifest).
    pub target_manifest: Option<Digest>,
    /// Bit-identical: the same manifest digest (a docker-archive: the same config and layers).
    pub reproduced: bool,
    /// The recipe / lock digests the target records (`dev.ocibuild.recipe.digest`,
    /// `dev.ocibuild.lock.digest`) that are not the rebuild's: the target was built from another
    /// recipe or lock. Empty when they agree, or the target records none (a digest alone, a
    /// docker-archive, an image from elsewhere).
    pub inputs: Vec<InputMismatch>,
    /// What differs (a = target, b = rebuild), when it differs and the target can be read.
    pub diff: Option<DiffReport>,
}

/// A recipe or lock digest the target image records, against the rebuild's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InputMismatch {
    /// `recipe` or `lock`.
    pub input: &'static str,
    /// The annotation's value in the target (`None`: absent, e.g. built without a lock).
    pub target: Option<String>,
    pub rebuild: Option<String>,
}

/// Compare the recipe / lock digest annotations of the target with the rebuild's.
pub fn input_mismatches(
    target: &BTreeMap<String, String>,
    rebuild: &BTreeMap<String, String>,
) -> Vec<InputMismatch> {
    if !target.contains_key(annotations::RECIPE_DIGEST) {
        return Vec::new();
    }
    [
        ("recipe", annotations::RECIPE_DIGEST),
        ("lock", annotations::LOCK_DIGEST),
    ]
    .into_iter()
    .filter(|(_, k)| target.get(*k) != rebuild.get(*k))
    .map(|(input, k)| InputMismatch {
        input,
        target: target.get(k).cloned(),
        rebuild: rebuild.get(k).cloned(),
    })
    .collect()
}

/// Compare the image `rebuilt` (a manifest digest in `store`) with `target`.
pub fn verify(
    store: &Store,
    rebuilt: Digest,
    target: &ImageRef,
    opts: OpenOptions<'_>,
) -> Result<VerifyReport, AuditError> {
    let name = target.to_string();
    if let ImageRef::Digest(d) = target {
        return Ok(VerifyReport {
            rebuilt,
            target: name,
            target_manifest: Some(*d),
            reproduced: *d == rebuilt,
            inputs: Vec::new(),
            diff: None,
        });
    }
    let t = source::open(target, opts)?;
    let target_manifest = t.manifest().map(|m| m.digest);
    if target_manifest == Some(rebuilt) {
        return Ok(VerifyReport {
            rebuilt,
            target: name,
            target_manifest,
            reproduced: true,
            inputs: Vec::new(),
            diff: None,
        });
    }
    let r = source::open_store("rebuild", store, rebuilt)?;
    let inputs = match (t.manifest(), r.manifest()) {
        (Some(a), Some(b)) => input_mismatches(&a.annotations, &b.annotations),
        _ => Vec::new(),
    };
    let d = diff::diff(&t, &r, DiffOptions { semantic: false })?;
    let reproduced = d.result == Outcome::Identical;
    Ok(VerifyReport {
        rebuilt,
        target: name,
        target_manifest,
        reproduced,
        inputs,
        diff: if reproduced { None } else { Some(d) },
    })
}
