//! A package no listed component has, found in another component of the suite: the Debian
//! archive's `contrib`, `non-free` and `non-free-firmware` are components a recipe lists or
//! not (`components = ["main", "non-free"]`), and "unknown package" alone does not say that
//! `unrar` is in `non-free`.
//!
//! Only on that failure: the other components the Release's `Components` field lists are
//! read then (their `binary-ARCH` indices, verified against the same Release as any index), so
//! a resolution that succeeds reads nothing more.

use super::index::load_indices;
pub use super::origin::Origin;
use super::spill::{SourceIndex, Spill};
use super::AptError;
use crate::http::Fetcher;

/// `err`, from resolving against `sources`, with the component to add when it is about a name
/// no source has and another component of a source's suite has it
/// ([`AptError::OtherComponent`]); otherwise `err` as it was. A component that cannot be read
/// (or does not verify) is passed over: the hint is never taken from an unverified index.
pub fn explain(fetcher: &dyn Fetcher, sources: &[SourceIndex], err: AptError) -> AptError {
    let (names, chain) = match &err {
        AptError::UnknownPackage { name, .. } => (vec![name.clone()], Vec::new()),
        AptError::Unsatisfiable { chain, unknown, .. } if !unknown.is_empty() => {
            (unknown.clone(), chain.clone())
        }
        _ => return err,
    };
    for origin in sources.iter().filter_map(|s| s.origin.as_deref()) {
        if let Ok(Some((name, component))) = find(fetcher, origin, &names) {
            return AptError::OtherComponent {
                name,
                chain: chain.into(),
                component,
                suite: origin.source.suite.clone(),
                url: origin.source.url.clone(),
            };
        }
    }
    err
}

/// The first of `names` (and the component) that a component of the Release which the source
/// does not list has, as a package or a `Provides`.
fn find(
    fetcher: &dyn Fetcher,
    origin: &Origin,
    names: &[String],
) -> Result<Option<(String, String)>, AptError> {
    let source = &origin.source;
    let others = origin
        .verified
        .release
        .components
        .iter()
        .filter(|c| !source.components.contains(c));
    for component in others {
        let spill = Spill::new(&source.archive_url(), &origin.spill_dir)?;
        let keys = load_indices(
            fetcher,
            source,
            &origin.verified,
            std::slice::from_ref(component),
            &spill,
        )?;
        let index = SourceIndex::new(spill, keys.names, keys.provides);
        for name in names {
            if !index.named(name)?.is_empty() || !index.providing(name)?.is_empty() {
                return Ok(Some((name.clone(), component.clone())));
            }
        }
    }
    Ok(None)
}
