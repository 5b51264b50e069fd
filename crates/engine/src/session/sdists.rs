//! `[python] sdist-builder`: the session's [`SdistBuilder`] and [`ProjectBuilder`], which run
//! each sdist's step (`sdist:NAME`, [`crate::steps::sdist`]) and `[python] project`'s
//! (`project:NAME`, [`crate::steps::project`]) in the builder, as a recipe's `[[step]]` runs: the
//! builder resolved (a registry image pinned in the step's lock entry, or another recipe built
//! first), the step's key, its cache, and its lock entry checked as the policy says.

use std::cell::RefCell;

use super::{Session, SessionError};
use crate::digest::Digest;
use crate::lock::{LockPolicy, LockedBase, LockedStep};
use crate::recipe::{Recipe, SdistBuilder as Builder, Step};
use crate::steps::{self, Container, StepContext, StepReport};
use crate::system::project::{Built, Project, ProjectBuilder};
use crate::system::sdist::{BuiltWheel, Sdist, SdistBuilder};

/// Builds a recipe's sdists in its `sdist-builder`.
pub(super) struct SdistSteps<'s, 'a> {
    session: &'s Session<'a>,
    recipe: &'s Recipe,
    builder: &'s Builder,
    /// The epoch the session resolved for this recipe.
    epoch: u64,
    /// The builder, once resolved (every sdist of the recipe is built in it), with its pin.
    resolved: RefCell<Option<(Option<Container>, Option<LockedBase>)>>,
    /// What each sdist's step did, for `build --json` and `plan`.
    reports: RefCell<Vec<StepReport>>,
}

impl<'a> Session<'a> {
    /// The recipe's sdist builder, when `[python]` names one.
    pub(super) fn sdist_builder<'s>(
        &'s self,
        recipe: &'s Recipe,
        epoch: u64,
    ) -> Option<SdistSteps<'s, 'a>> {
        let builder = recipe.python.as_ref()?.sdist_builder.as_ref()?;
        Some(SdistSteps {
            session: self,
            recipe,
            builder,
            epoch,
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
        let step = steps::sdist::step(&self.builder.image, &self.builder.at, sdist);
        let (built, _) = self.run_step(&step, locked, None)?;
        self.session.reporter.detail(&format!(
            "{}: {} ({}) from {}",
            step.name, built.filename, built.sha256, sdist.filename
        ));
        Ok(built)
    }

    /// Runs `step` (an sdist's or the project's) in the builder, resolved once, and reads its
    /// wheel back. `project`: for the project's step, the files digest its lock's wheel was
    /// built from; its input's digest is returned, and when the lock is not to move
    /// (`--locked`, `--frozen`) and the files are others, the step runs without its lock
    /// entry (nothing pinned: the files are the checkout's, as a `[[layer]]`'s) and the
    /// second value is `false`.
    fn run_step(
        &self,
        step: &Step,
        locked: &mut Vec<LockedStep>,
        project: Option<Option<Digest>>,
    ) -> Result<(BuiltWheel, Option<(Digest, bool)>), SessionError> {
        let s = self.session;
        let (container, pin) = {
            let mut cached = self.resolved.borrow_mut();
            if let Some(r) = &*cached {
                r.clone()
            } else {
                let mut pinned = Vec::new();
                let c = s.builder(self.recipe, step, locked, &mut pinned)?;
                let r = (c, pinned.into_iter().next().and_then(|(_, b)| b));
                *cached = Some(r.clone());
                r
            }
        };
        let lock_path = crate::lock::Lock::path_for(&self.recipe.path);
        let fetcher = s.fetcher(self.recipe)?;
        let mut ctx = StepContext {
            store: s.store,
            fetcher: &fetcher,
            reporter: s.reporter,
            policy: s.policy,
            locked_by: s.locked_by,
            epoch: self.epoch,
            compression: self.recipe.image.compression,
            threads: s.threads,
            no_cache: s.no_cache,
            platform: &self.recipe.image.platform,
            sandbox: &s.sandbox,
            allow_network: false,
            lock_path: &lock_path,
            // The wheel it builds is a result, pruned where it is installed.
            cuda: None,
        };
        let step_err = |e| SessionError::Step(Box::new(e));
        let mut scratch: Vec<LockedStep>;
        let mut files = None;
        let mut into = &mut *locked;
        if let Some(pinned_files) = project {
            let digest = steps::files_digest(&ctx, step, 0).map_err(step_err)?;
            let keep = matches!(s.policy, LockPolicy::Locked | LockPolicy::Frozen);
            let other = keep && pinned_files != Some(digest);
            if other {
                s.reporter.message(&format!(
                    "note: [python] project: its files are not those {} pins a wheel of \
                     (changed since `ocibuild lock`): its wheel is built from them, not \
                     checked against the lock, and not pinned ({})",
                    lock_path.display(),
                    s.locked_by
                ));
                ctx.policy = LockPolicy::Resolve;
                scratch = into.clone();
                into = &mut scratch;
            }
            files = Some((digest, !other));
        }
        let (_, reports) = steps::run_steps(&ctx, std::slice::from_ref(step), &[container], into)
            .map_err(step_err)?;
        if let Some(e) = into.iter_mut().find(|l| l.name == step.name) {
            e.image = pin;
        }
        let Some(report) = reports.first() else {
            return Err(step_err(steps::StepError::NoWheel {
                step: step.name.clone(),
                found: Vec::new(),
            }));
        };
        let built = steps::sdist::wheel(s.store, step, &report.key).map_err(step_err)?;
        self.reports.borrow_mut().push(report.clone());
        Ok((built, files))
    }
}

impl ProjectBuilder for SdistSteps<'_, '_> {
    fn build_project(
        &self,
        project: &Project<'_>,
        steps: &mut Vec<LockedStep>,
        locked_files: Option<Digest>,
    ) -> Result<Built, Box<dyn std::error::Error + Send + Sync>> {
        let p = project.recipe;
        let step = steps::project::step(
            &self.builder.image,
            &self.builder.at,
            &project.package,
            &p.written,
            &p.spec,
        );
        let (wheel, files) = self
            .run_step(&step, steps, Some(locked_files))
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
        let (files, pinned) = files.ok_or_else(|| {
            Box::new(SessionError::Step(Box::new(steps::StepError::NoWheel {
                step: step.name.clone(),
                found: Vec::new(),
            }))) as Box<dyn std::error::Error + Send + Sync>
        })?;
        self.session.reporter.detail(&format!(
            "{}: {} ({}) from the files {files}",
            step.name, wheel.filename, wheel.sha256
        ));
        Ok(Built {
            wheel,
            files,
            pinned,
        })
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
