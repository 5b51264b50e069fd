//! One binary package of an index, as the resolver reads it back from a source's spill.

use std::sync::Arc;

use super::control::{parse_depends, Alternatives, ControlError, Dep};
use super::version::Version;
use crate::digest::Digest;

/// `Multi-Arch` of a binary package.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiArch {
    No,
    Same,
    Foreign,
    Allowed,
}

/// One binary package of an index: what the resolver needs, and where to get it. Read back
/// from the source's [`super::spill::Spill`] for the names the resolver looks up.
#[derive(Clone, Debug)]
pub struct Package {
    pub name: Arc<str>,
    pub version: Version,
    /// The source's architecture or `all` (one string per source, shared).
    pub architecture: Arc<str>,
    pub multi_arch: MultiArch,
    /// `Pre-Depends` then `Depends` as written, joined by `,` (which splits groups, so this
    /// parses as the two fields one after the other). Checked when the index is read; parsed
    /// again by [`Package::depends`] only for the few packages the resolver walks, as parsed
    /// relations take several times the text's memory.
    pub depends: Box<str>,
    pub provides: Box<[Dep]>,
    /// Path relative to the archive root (`pool/main/…/x.deb`).
    pub filename: Box<str>,
    pub size: u64,
    pub sha256: Digest,
    /// The archive root it came from ([`super::source::Source::archive_url`]; shared).
    pub source_url: Arc<str>,
}

impl Package {
    /// The dependency groups: `Pre-Depends`, then `Depends`.
    pub fn depends(&self) -> Result<Vec<Alternatives>, ControlError> {
        parse_depends(&self.depends)
    }
}
