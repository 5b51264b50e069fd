//! `build --attach`: the SBOMs and provenance of a built image as OCI 1.1 artifacts in the
//! store, each also a signed DSSE attestation when a key is given.

use std::path::Path;

use super::OpsError;
use crate::audit::attest::{self, LoadedInputs, Subject};
use crate::digest::Digest;
use crate::image::{Descriptor, ImageRecord};
use crate::lock::LockFile;
use crate::recipe::Recipe;
use crate::store::Store;

/// A built image's referrers: each artifact manifest's descriptor and the blobs it needs.
pub type Referrers = Vec<(Descriptor, Vec<(Digest, u64)>)>;

/// The SBOMs and provenance of `image` (just built from `recipe_path` into `store`, through
/// `lock` as the command holds it) as artifact manifests in the store; with `key`, also each
/// as a signed DSSE attestation.
pub fn attach_built(
    store: &Store,
    recipe_path: &Path,
    recipe: &Recipe,
    image: &ImageRecord,
    lock: &LockFile,
    key: Option<&crate::sign::PrivateKey>,
) -> Result<Referrers, OpsError> {
    let subject = Subject::from_store(store, image)?;
    let inputs = LoadedInputs::with_lock_file(recipe_path, recipe, lock)?.with_licenses(store)?;
    let mut docs = attest::documents(&subject, &inputs.inputs())?;
    if let Some(k) = key {
        let signed = crate::sign::attestations(&docs, &image.name, &subject.digest(), k)?;
        docs.extend(signed);
    }
    let referrers = attest::attach(store, &subject, &docs)?;
    referrers
        .into_iter()
        .map(|r| {
            let blobs = attest::referrer_blobs(store, std::slice::from_ref(&r))?;
            Ok((r, blobs))
        })
        .collect()
}
