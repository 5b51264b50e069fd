//! A recipe's `[[step]]`s through the lock: each builder resolved (a registry image pinned as
//! a base is, another recipe built first with its own lock), then [`steps::run_steps`], the
//! lock's step entries saved when they changed and the policy allows.

use std::path::{Path, PathBuf};

use super::{Session, SessionError};
use crate::lock::{Lock, LockedStep};
use crate::recipe::{self, Recipe, StepImage};
use crate::steps::{self, Container, StepContext, StepReport};
use crate::system::Extra;

impl Session<'_> {
    /// Runs the recipe's steps (or takes them from the cache): the layers the image gets, and
    /// what each step did. Nothing without steps.
    pub(super) fn prepare_steps(
        &self,
        recipe: &Recipe,
        recipe_path: &Path,
        lock: &mut Lock,
        epoch: u64,
    ) -> Result<(Vec<Extra>, Vec<StepReport>), SessionError> {
        if recipe.steps.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let lock_path = Lock::path_for(recipe_path);
        let mut pinned = Vec::new();
        let mut builders = Vec::with_capacity(recipe.steps.len());
        for step in &recipe.steps {
            builders.push(self.builder(recipe, step, &lock.steps, &mut pinned)?);
        }
        let ctx = StepContext {
            store: self.store,
            fetcher: &self.fetcher(recipe)?,
            reporter: self.reporter,
            policy: self.policy,
            locked_by: self.locked_by,
            epoch,
            compression: recipe.image.compression,
            threads: self.threads,
            no_cache: self.no_cache,
            platform: &recipe.image.platform,
            sandbox: &self.sandbox,
            allow_network: self.allow_network,
            lock_path: &lock_path,
            cuda: recipe.image.cuda.as_ref(),
        };
        let (extras, reports) = steps::run_steps(&ctx, &recipe.steps, &builders, &mut lock.steps)
            .map_err(|e| SessionError::Step(Box::new(e)))?;
        // The lock's steps: the recipe's, in its order, each registry builder as pinned; then
        // those of the sdists built (`sdist:NAME`) and of the project (`project:NAME`), which the
        // wheels keep up to date.
        let mut ordered = Vec::with_capacity(lock.steps.len());
        for step in &recipe.steps {
            if let Some(mut e) = lock.steps.iter().find(|l| l.name == step.name).cloned() {
                e.image = pinned
                    .iter()
                    .find(|(n, _)| *n == step.name)
                    .and_then(|(_, b)| b.clone());
                ordered.push(e);
            }
        }
        ordered.extend(
            lock.steps
                .iter()
                .filter(|l| l.name.starts_with("sdist:") || l.name.starts_with("project:"))
                .cloned(),
        );
        lock.steps = ordered;
        Ok((extras, reports))
    }

    /// A step's builder: a registry image through its lock entry, or another recipe built
    /// first; `None` for an earlier step's container (the steps know it).
    pub(super) fn builder(
        &self,
        recipe: &Recipe,
        step: &recipe::Step,
        locked: &[LockedStep],
        pinned: &mut Vec<(String, Option<crate::lock::LockedBase>)>,
    ) -> Result<Option<Container>, SessionError> {
        match &step.image {
            StepImage::Step(_) => Ok(None),
            StepImage::Registry(reference) => {
                // The step's pin, as a one-base lock, resolved as a base is.
                let mut one = Lock::new();
                one.base = locked
                    .iter()
                    .find(|l| l.name == step.name)
                    .and_then(|l| l.image.clone());
                let how = crate::base::Resolve {
                    pin: self.policy,
                    client: self.client,
                    store: self.store,
                    layers: true,
                    index: None,
                    reporter: self.reporter,
                };
                let (image, _) =
                    crate::base::resolve(reference, &recipe.image.platform, &mut one, &how)
                        .map_err(|e| SessionError::StepBuilder {
                            step: step.name.clone(),
                            source: Box::new(e.into()),
                        })?;
                pinned.push((step.name.clone(), one.base));
                Ok(Some(Container {
                    id: image.manifest_digest,
                    config: image.config,
                    layers: image.layers,
                }))
            }
            StepImage::Recipe { path, .. } => {
                let abs = fs_err::canonicalize(path).map_err(|source| SessionError::Read {
                    path: path.clone(),
                    source,
                })?;
                // The recipes being built, outermost first, the one of this step last.
                let mut chain = if self.building.is_empty() {
                    fs_err::canonicalize(&recipe.path).into_iter().collect()
                } else {
                    self.building.clone()
                };
                let cycle = chain.contains(&abs);
                chain.push(abs);
                if cycle {
                    return Err(SessionError::BuilderCycle {
                        step: step.name.clone(),
                        chain,
                    });
                }
                let builder = recipe::load(path).map_err(|e| SessionError::StepBuilder {
                    step: step.name.clone(),
                    source: Box::new(SessionError::Recipe(Box::new(e))),
                })?;
                let built = self.nested(chain).build(path, &builder).map_err(|e| {
                    SessionError::StepBuilder {
                        step: step.name.clone(),
                        source: Box::new(e),
                    }
                })?;
                let bytes = self.store.read_blob(&built.image.config.digest)?;
                let config = serde_json::from_slice(&bytes).map_err(|source| {
                    SessionError::BuilderConfig {
                        step: step.name.clone(),
                        source,
                    }
                })?;
                Ok(Some(Container {
                    id: built.image.manifest.digest,
                    config,
                    layers: built.image.layers,
                }))
            }
        }
    }

    /// This session for a builder recipe at `path` (its own lock, no output of its own).
    fn nested(&self, building: Vec<PathBuf>) -> Session<'_> {
        Session {
            store: self.store,
            client: self.client,
            threads: self.threads,
            policy: self.policy,
            allow_downgrade: self.allow_downgrade,
            locked_by: self.locked_by,
            offline: self.offline,
            vendor: self.vendor.clone(),
            push_only_to: None,
            no_cache: self.no_cache,
            epoch_override: self.epoch_override,
            outputs: self.outputs.clone(),
            base_index: None,
            no_output: false,
            reporter: self.reporter,
            locks: self.locks.clone(),
            sandbox: self.sandbox.clone(),
            allow_network: self.allow_network,
            building,
        }
    }
}
