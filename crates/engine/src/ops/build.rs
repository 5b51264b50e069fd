//! `build`: every platform of the recipe built through the session (one platform gives an
//! image manifest, several an image index of their manifests), then attach, write, test,
//! push, referrers and signatures, in that order, for one platform and several alike.

use std::path::Path;

use super::platforms::{self, BaseIndex};
use super::stage::{run_stage, StageOptions, TestedPlatform};
use super::{attach_built, OpsError, Referrers};
use crate::build::Built;
use crate::cache_repo::RepoCache;
use crate::digest::Digest;
use crate::image::{ImageRecord, IndexRecord, Platform};
use crate::outcome::{
    BuildOutcome, ImageOutcome, IndexOutcome, IndexPush, ManifestOutcome, PlatformManifest,
};
use crate::output::{self, Tagged, Target};
use crate::recipe::Recipe;
use crate::registry::{Client, Reference};
use crate::run::{self, TestEvent, TestResult};
use crate::session::Session;
use crate::sign::PrivateKey;
use crate::store::image::{StoreImage, StoreIndex};

/// What to build and what to do with it: the command line's flags, parsed.
pub struct BuildRequest<'a> {
    pub recipe_path: &'a Path,
    /// The whole recipe, with `--tag` and `--platform` applied.
    pub recipe: &'a Recipe,
    /// Where the image goes (also with `--push-only`, as the path no layer may take in).
    pub output: Target,
    /// `--push-only`: nothing is written locally.
    pub push_only: bool,
    /// `--push REF`.
    pub push: Option<Reference>,
    /// `--attach`: SBOMs and provenance as referrers, in the layout and pushed.
    pub attach: bool,
    /// `--sign-key`: the pushed image (and with `--attach` its documents) signed.
    pub key: Option<&'a PrivateKey>,
    /// `--test`: the test stage, after writing and before pushing.
    pub test: Option<StageOptions>,
}

/// What happens as the build goes, for a person to see; every method has a default that
/// ignores it.
pub trait BuildEvents {
    /// The image is built and written (its tests and push still to come): the outcome so far.
    fn built(&self, _outcome: &BuildOutcome) {}
    /// A platform of the recipe that the test stage does not run (not the host's).
    fn untested(&self, _platform: &Platform, _host: &Platform) {}
    /// A test's podman command or result.
    fn test(&self, _event: TestEvent<'_>) {}
    /// The test stage is over.
    fn tested(&self, _results: &[TestResult]) {}
}

/// A build's end: the `--json` document, and the test stage's results when it ran (a failed
/// test ends the build before the push).
pub struct BuildRun {
    pub outcome: BuildOutcome,
    pub tests: Option<Vec<TestResult>>,
}

impl BuildRun {
    /// Whether a test failed.
    pub fn failed(&self) -> bool {
        self.tests
            .as_ref()
            .is_some_and(|t| run::Summary::of(t).any_failed())
    }
}

/// One platform as built: the image and its referrers.
struct PlatformBuilt {
    built: Built,
    referrers: Referrers,
}

/// The image as it is written and pushed: one manifest, or an index of several.
enum Assembled {
    Image(ImageRecord),
    Index(IndexRecord),
}

impl Assembled {
    fn tagged(&self) -> &dyn Tagged {
        match self {
            Assembled::Image(i) => i,
            Assembled::Index(i) => i,
        }
    }

    /// The digests a signature covers: the image; or the index (what a pull by tag checks)
    /// and each platform's manifest (what a pull by that digest checks), as `cosign sign
    /// --recursive` does.
    fn signed(&self) -> Vec<Digest> {
        match self {
            Assembled::Image(i) => vec![i.manifest.digest],
            Assembled::Index(ix) => std::iter::once(ix.index.digest)
                .chain(ix.images.iter().map(|i| i.manifest.digest))
                .collect(),
        }
    }
}

impl BuildRequest<'_> {
    /// What the output cannot take, refused before anything is built.
    fn check(&self) -> Result<(), OpsError> {
        let layout = matches!(self.output, Target::Layout(_));
        let target = &self.output;
        if self.recipe.is_multi_platform() && !self.push_only && !layout {
            return Err(OpsError::Request(format!(
                "a multi-platform image is an index: write it to an OCI layout (DIR or oci:DIR) \
                 or push it, not to {target}"
            )));
        }
        if self.test.is_some() && !layout {
            return Err(OpsError::Request(format!(
                "--test needs an OCI layout output (DIR or oci:DIR), not {target}"
            )));
        }
        if self.attach && self.push.is_none() && !layout {
            return Err(OpsError::Request(format!(
                "--attach needs an OCI layout output (DIR or oci:DIR) or --push, not {target}"
            )));
        }
        Ok(())
    }

    /// The recipe the test stage runs: the host's platform of a multi-platform recipe (the
    /// others said to `events`), refused before anything is built when it builds none.
    fn tested_recipe(&self, events: &dyn BuildEvents) -> Result<Option<Recipe>, OpsError> {
        if self.test.is_none() {
            return Ok(None);
        }
        if !self.recipe.is_multi_platform() {
            return Ok(Some(self.recipe.clone()));
        }
        let tested = TestedPlatform::of(self.recipe);
        for p in &tested.untested {
            events.untested(p, &tested.host);
        }
        Ok(Some(self.recipe.for_platform(tested.require()?)?))
    }
}

/// Builds `req.recipe` through `session` (its store, lock policy and reporter) and does what
/// `req` asks with the image, pushing through `client`. `cache`: the cache repository behind
/// the session's store, whose counts the outcome reports.
pub fn build(
    session: &mut Session<'_>,
    client: &Client,
    cache: Option<&RepoCache>,
    req: &BuildRequest<'_>,
    events: &dyn BuildEvents,
) -> Result<BuildRun, OpsError> {
    req.check()?;
    let tested = req.tested_recipe(events)?;
    if let (Some(r), Some(opts)) = (&tested, &req.test) {
        // A recipe's [podman] args that the test stage would refuse stop the build first.
        super::check_podman_args(r, opts)?;
    }
    session.outputs = vec![req.output.path().to_path_buf()];
    let store = session.store;
    let mut built = platforms::for_each(
        session,
        req.recipe_path,
        req.recipe,
        BaseIndex::Shared,
        |s, _, rp| {
            let built = s.build(req.recipe_path, rp)?;
            let referrers = if req.attach {
                attach_built(
                    store,
                    req.recipe_path,
                    rp,
                    &built.image,
                    &s.held_lock(req.recipe_path)?,
                    req.key,
                )?
            } else {
                Vec::new()
            };
            Ok(PlatformBuilt { built, referrers })
        },
    )?;
    if let Some(w) = healthcheck_warning(req) {
        for b in &mut built {
            b.built.warnings.push(w.clone());
        }
    }
    let assembled = if req.recipe.is_multi_platform() {
        let images = built.iter().map(|b| b.built.image.clone()).collect();
        Assembled::Index(store.put_index(images)?)
    } else {
        Assembled::Image(built[0].built.image.clone())
    };
    if !req.push_only {
        write(req, store, &assembled, &built)?;
    }
    let mut outcome = outcome(req, &assembled, &built);
    events.built(&outcome);
    let mut tests = None;
    if let (Some(recipe), Some(opts), Target::Layout(dir)) = (&tested, &req.test, &req.output) {
        let results = run_stage(recipe, dir, opts, &|e| events.test(e))?;
        events.tested(&results);
        let failed = run::Summary::of(&results).any_failed();
        tests = Some(results);
        if failed {
            return Ok(BuildRun { outcome, tests });
        }
    }
    if let Some(dest) = &req.push {
        push(req, client, session, dest, &assembled, &built, &mut outcome)?;
    }
    let stats = cache.map(super::super::cache_repo::RepoCache::stats);
    match &mut outcome {
        BuildOutcome::Image(o) => o.cache_repo = stats,
        BuildOutcome::Index(o) => o.cache_repo = stats,
    }
    Ok(BuildRun { outcome, tests })
}

/// The warning for a `[config.healthcheck]` that podman will not see: it reads a health check
/// only from an image whose manifest is Docker's (schema 2), which of ocibuild's outputs only
/// `docker-archive` gives (`podman load`); an OCI layout, an oci-archive and a pushed image
/// have OCI manifests.
fn healthcheck_warning(req: &BuildRequest<'_>) -> Option<String> {
    req.recipe.config.healthcheck.as_ref()?;
    let docker = matches!(req.output, Target::DockerArchive(_)) && !req.push_only;
    let other = match (docker, &req.push) {
        (true, None) => return None,
        (true, Some(_)) => "the pushed image (an OCI manifest)",
        (false, _) => "an OCI layout, an oci-archive or a pushed image (OCI manifests)",
    };
    Some(format!(
        "[config.healthcheck] is in the image config, but podman runs a health check only for \
         a Docker-format image, not {other}: build with `-o docker-archive:FILE` and `podman \
         load` it to have podman run it"
    ))
}

/// Writes the image to the output: a layout gets the referrers and, with a key and a push,
/// the signatures the push will carry (the same bytes: signing is deterministic), so that
/// `mirror` takes them along to a registry that never saw the push.
fn write(
    req: &BuildRequest<'_>,
    store: &crate::store::Store,
    assembled: &Assembled,
    built: &[PlatformBuilt],
) -> Result<(), OpsError> {
    let Target::Layout(dir) = &req.output else {
        if let Assembled::Image(img) = assembled {
            output::write(&req.output, store, img)?;
        }
        return Ok(());
    };
    let mut in_layout: Referrers = built.iter().flat_map(|b| b.referrers.clone()).collect();
    // The signed attestations also in cosign's layout (`sha256-<hex>.att`), as pushed.
    for b in built {
        let descriptors: Vec<_> = b.referrers.iter().map(|(d, _)| d.clone()).collect();
        let subject = &b.built.image.manifest.digest;
        if let Some(att) = crate::sign::cosign::layout_attestations(store, subject, &descriptors)? {
            in_layout.push(att);
        }
    }
    if let (Some(k), Some(dest)) = (req.key, &req.push) {
        let identity = crate::sign::identity_of(dest);
        for d in assembled.signed() {
            in_layout.push(crate::sign::layout_signature(store, &identity, &d, k)?);
        }
    }
    output::write_layout_with(dir, store, assembled.tagged(), &in_layout)?;
    Ok(())
}

/// The `--json` document of what was built and written (the push's parts still empty).
fn outcome(req: &BuildRequest<'_>, assembled: &Assembled, built: &[PlatformBuilt]) -> BuildOutcome {
    // Where it went: outputs resolve against the current directory (not the recipe's, as
    // inputs do), so the path is said in full.
    let output = (!req.push_only).then(|| req.output.absolute().to_string());
    let manifest =
        |b: &PlatformBuilt| ManifestOutcome::new(&b.built, b.referrers.iter().map(|(d, _)| d));
    match assembled {
        Assembled::Image(img) => BuildOutcome::Image(Box::new(ImageOutcome {
            image: img.full_name(),
            output,
            manifest: manifest(&built[0]),
            push: None,
            referrers_push: None,
            signature: None,
            cache_repo: None,
        })),
        Assembled::Index(ix) => BuildOutcome::Index(Box::new(IndexOutcome {
            image: ix.full_name(),
            output,
            index: ix.index.digest,
            index_size: ix.index.size,
            manifests: built
                .iter()
                .map(|b| PlatformManifest {
                    platform: b
                        .built
                        .image
                        .manifest
                        .platform
                        .as_ref()
                        .map(std::string::ToString::to_string),
                    manifest: manifest(b),
                })
                .collect(),
            push: None,
            referrers_push: Vec::new(),
            signatures: Vec::new(),
            cache_repo: None,
        })),
    }
}

/// Pushes the image, then each platform's referrers, then the signatures, into `outcome`.
fn push(
    req: &BuildRequest<'_>,
    client: &Client,
    session: &Session<'_>,
    dest: &Reference,
    assembled: &Assembled,
    built: &[PlatformBuilt],
    outcome: &mut BuildOutcome,
) -> Result<(), OpsError> {
    let store = session.store;
    // The image as pushed: read back from the store through the image model.
    let name = req.recipe_path.display().to_string();
    match (assembled, &mut *outcome) {
        (Assembled::Image(img), BuildOutcome::Image(o)) => {
            let image = StoreImage::manifest(&name, store.clone(), img.manifest.digest)
                .map_err(crate::push::PushError::from)?;
            o.push = Some(crate::push::push(client, &image, dest, session.reporter)?);
        }
        (Assembled::Index(ix), BuildOutcome::Index(o)) => {
            let index = StoreIndex::open(&name, store.clone(), ix.index.digest)
                .map_err(crate::push::PushError::from)?;
            let r = crate::push::push_index(client, &index, dest, session.reporter)?;
            o.push = Some(IndexPush {
                pushed: r.pushed,
                uploaded_bytes: r.uploaded_bytes,
            });
        }
        _ => {}
    }
    for b in built.iter().filter(|b| !b.referrers.is_empty()) {
        let descriptors: Vec<_> = b.referrers.iter().map(|(d, _)| d.clone()).collect();
        let subject = &b.built.image.manifest.digest;
        let r = crate::push::push_referrers(client, store, subject, &descriptors, dest)?;
        match outcome {
            BuildOutcome::Image(o) => o.referrers_push = Some(r),
            BuildOutcome::Index(o) => o.referrers_push.push(r),
        }
    }
    if let Some(k) = req.key {
        let identity = crate::sign::identity_of(dest);
        for d in assembled.signed() {
            let r = crate::sign::sign_image(client, store, dest, &d, &identity, k)?;
            match outcome {
                BuildOutcome::Image(o) => o.signature = Some(r),
                BuildOutcome::Index(o) => o.signatures.push(r),
            }
        }
    }
    Ok(())
}
