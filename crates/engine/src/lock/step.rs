//! `[[step]]` in the lock: each step's builder pinned (a registry image, as the base is), the
//! key of everything the step ran with, and the digests its outputs came to.

use serde::{Deserialize, Serialize};

use super::LockedBase;
use crate::digest::Digest;

/// One step as its last resolution ran it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LockedStep {
    pub name: String,
    /// A registry builder, pinned as a base is; `None` for a recipe's or a step's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<LockedBase>,
    /// The step's key: its builder, inputs, downloads, command, env, workdir, user, outputs
    /// and the contract. Another key: the step is run again and pinned anew.
    pub key: Digest,
    /// Each output's layer digest, in the recipe's order: what a run with this key must give
    /// again (`--locked`, `verify`).
    pub outputs: Vec<Digest>,
    /// The downloads the recipe gives without a sha256, as first fetched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fetch: Vec<LockedFetch>,
}

/// A step's download whose recipe entry gives no sha256: pinned at its first resolution.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LockedFetch {
    pub url: String,
    pub sha256: Digest,
}
