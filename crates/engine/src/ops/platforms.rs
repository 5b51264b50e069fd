//! The one platform loop: a recipe with `[image] platforms` is built (locked, verified) as the
//! recipe for each platform alone ([`Recipe::for_platform`], its own section of the lock),
//! natively; a recipe without is its own one platform.

use std::path::Path;

use super::OpsError;
use crate::image::Platform;
use crate::recipe::Recipe;
use crate::session::Session;

/// How the loop pins a multi-platform recipe's base tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseIndex {
    /// Through the index the lock already pins for a platform, else the one the first
    /// platform pins: every platform takes its manifest from one index, even if the tag moves
    /// meanwhile ([`Session::base_index`]).
    Shared,
    /// The tag resolved again for the first platform (`lock --update`), the others through
    /// the index it gives.
    Fresh,
}

/// Runs `each` for every platform `recipe` builds, in the recipe's order, with the recipe for
/// that platform alone; returns what each gave. For a multi-platform recipe, an error names
/// the platform.
///
/// The lock files the platforms changed are written once, when the loop ends, also after an
/// error ([`Session::write_locks`]): what the platforms before it pinned is kept.
pub fn for_each<T>(
    session: &mut Session<'_>,
    recipe_path: &Path,
    recipe: &Recipe,
    base_index: BaseIndex,
    each: impl FnMut(&Session<'_>, &Platform, &Recipe) -> Result<T, OpsError>,
) -> Result<Vec<T>, OpsError> {
    let result = each_platform(session, recipe_path, recipe, base_index, each);
    let written = session.write_locks();
    let out = result?;
    written?;
    Ok(out)
}

fn each_platform<T>(
    session: &mut Session<'_>,
    recipe_path: &Path,
    recipe: &Recipe,
    base_index: BaseIndex,
    mut each: impl FnMut(&Session<'_>, &Platform, &Recipe) -> Result<T, OpsError>,
) -> Result<Vec<T>, OpsError> {
    if !recipe.is_multi_platform() {
        return Ok(vec![each(session, &recipe.image.platform, recipe)?]);
    }
    let platforms = recipe.platforms();
    session.base_index = match base_index {
        BaseIndex::Shared => session.base_index_of(recipe, recipe_path, &platforms)?,
        BaseIndex::Fresh => None,
    };
    let mut out = Vec::with_capacity(platforms.len());
    for p in &platforms {
        let in_platform = |source: OpsError| OpsError::Platform {
            platform: p.clone(),
            source: Box::new(source),
        };
        let rp = recipe.for_platform(p).map_err(|e| in_platform(e.into()))?;
        out.push(each(session, p, &rp).map_err(in_platform)?);
        // The other platforms' base tag through the index this one pinned.
        if session.base_index.is_none() {
            session.base_index =
                session.base_index_of(recipe, recipe_path, std::slice::from_ref(p))?;
        }
    }
    Ok(out)
}
