//! `verify`: compare a rebuild (an image in a store, made by the caller from the recipe and its
//! lock in an empty store) with a target image, by manifest digest, and explain a difference.

use serde::Serialize;

use super::diff::{self, DiffOptions, DiffReport, Outcome};
use super::source::{self, OpenOptions, Spec};
use super::AuditError;
use crate::digest::Digest;
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
    /// What differs (a = target, b = rebuild), when it differs and the target can be read.
    pub diff: Option<DiffReport>,
}

/// Compare the image `rebuilt` (a manifest digest in `store`) with `target`.
pub fn verify(
    store: &Store,
    rebuilt: Digest,
    target: &Spec,
    opts: OpenOptions<'_>,
) -> Result<VerifyReport, AuditError> {
    let name = target.to_string();
    if let Spec::Digest(d) = target {
        return Ok(VerifyReport {
            rebuilt,
            target: name,
            target_manifest: Some(*d),
            reproduced: *d == rebuilt,
            diff: None,
        });
    }
    let t = source::open(target, opts)?;
    let target_manifest = t.manifest.as_ref().map(|m| m.digest);
    if target_manifest == Some(rebuilt) {
        return Ok(VerifyReport {
            rebuilt,
            target: name,
            target_manifest,
            reproduced: true,
            diff: None,
        });
    }
    let r = source::open_store("rebuild", store, rebuilt)?;
    let d = diff::diff(&t, &r, DiffOptions { semantic: false })?;
    let reproduced = d.result == Outcome::Identical;
    Ok(VerifyReport {
        rebuilt,
        target: name,
        target_manifest,
        reproduced,
        diff: if reproduced { None } else { Some(d) },
    })
}
