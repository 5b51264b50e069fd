//! Where a source's index was loaded from: what [`super::components`] reads the suite's other
//! components with.

use std::path::PathBuf;

use super::source::{Source, Verified};

/// Where a [`SourceIndex`] was loaded from: what the other components are read with.
#[derive(Clone, Debug)]
pub struct Origin {
    pub source: Source,
    pub verified: Verified,
    /// The spill directory the source's packages went to (the store's `tmp/`).
    pub spill_dir: PathBuf,
}
