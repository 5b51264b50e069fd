//! `[python] sdist-builder`: the session's [`SdistBuilder`], which runs each sdist's step
//! (`sdist:NAME`, [`crate::steps::sdist`]) in the builder, as a recipe's `[[step]]` runs: the
//! builder resolved (a registry image pinned in the step's lock entry, or another recipe built
//! first), the step's key, its cache, and its lock entry checked as the policy says.

use std::cell::RefCell;

use super::{Session, SessionError};
use crate::lock::{LockedBase, LockedStep};
use crate::recipe::{Recipe, SdistBuilder as Builder};
use crate::steps::{self, Container, StepContext, StepReport};
use crate::system::sdist::{BuiltWheel, Sdist, SdistBuilder};

/// Builds a recipe's sdists in its `sdist-builder`.
pub(super) struct SdistSteps<'s, 'a> {
    session: &'s Session<'a>,
    recipe: &'s Recipe,
    builder: &'s Builder,
    /// The builder, once resolved (every sdist of the recipe is built in it), with its pin.
    resolved: RefCell<Option<(Option<Container>, Option<LockedBase>)>>,
    /// What each sdist's step did, for `build --json` and `plan`.
    reports: RefCell<Vec<StepReport>>,
}

impl<'a> Session<'a> {
    /// The recipe's sdist builder, when `[python]` names one.
    pub(super) fn sdist_builder<'s>(&'s self, recipe: &'s Recipe) -> Option<SdistSteps<'s, 'a>> {
        let builder = recipe.python.as_ref()?.sdist_builder.as_ref()?;
        Some(SdistSteps {
            session: self,
            recipe,
            builder,
            resolved: RefCell::new(None),
            reports: RefCell::new(Vec::new()),
        })
    }
}

impl SdistSteps<'_, '_> {
    /// What the steps did, in the order they ran.
    pub(super) fn reports(&self) -> Vec<StepReport> {
        self.reports.take()
    }

    fn run(&self, sdist: &Sdist, locked: &mut Vec<LockedStep>) -> Result<BuiltWheel, SessionError> {
        let s = self.session;
        let step = steps::sdist::step(&self.builder.image, &self.builder.at, sdist);
        let (container, pin) = {
            let mut cached = self.resolved.borrow_mut();
            match &*cached {
                Some(r) => r.clone(),
                None => {
                    let mut pinned = Vec::new();
                    let c = s.builder(self.recipe, &step, locked, &mut pinned)?;
                    let r = (c, pinned.into_iter().next().and_then(|(_, b)| b));
                    *cached = Some(r.clone());
                    r
                }
            }
        };
        let lock_path = crate::lock::Lock::path_for(&self.recipe.path);
        let fetcher = s.fetcher(self.recipe)?;
        let ctx = StepContext {
            store: s.store,
            fetcher: &fetcher,
            reporter: s.reporter,
            policy: s.policy,
            locked_by: s.locked_by,
            epoch: s.epoch(self.recipe)?,
            compression: self.recipe.image.compression,
            threads: s.threads,
            no_cache: s.no_cache,
            platform: &self.recipe.image.platform,
            sandbox: &s.sandbox,
            allow_network: false,
            lock_path: &lock_path,
        };
        let (_, reports) =
            steps::run_steps(&ctx, std::slice::from_ref(&step), &[container], locked)
                .map_err(|e| SessionError::Step(Box::new(e)))?;
        if let Some(e) = locked.iter_mut().find(|l| l.name == step.name) {
            e.image = pin;
        }
        let Some(report) = reports.first() else {
            return Err(SessionError::Step(Box::new(steps::StepError::NoWheel {
                step: step.name.clone(),
                found: Vec::new(),
            })));
        };
        let built = steps::sdist::wheel(s.store, &step, &report.key)
            .map_err(|e| SessionError::Step(Box::new(e)))?;
        self.reports.borrow_mut().push(report.clone());
        s.reporter.detail(&format!(
            "{}: {} ({}) from {}",
            step.name, built.filename, built.sha256, sdist.filename
        ));
        Ok(built)
    }
}

impl SdistBuilder for SdistSteps<'_, '_> {
    fn build(
        &self,
        sdist: &Sdist,
        steps: &mut Vec<LockedStep>,
    ) -> Result<BuiltWheel, Box<dyn std::error::Error + Send + Sync>> {
        self.run(sdist, steps).map_err(|e| Box::new(e) as _)
    }
}
