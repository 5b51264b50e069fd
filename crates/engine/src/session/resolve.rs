//! The recipe's inputs through its lock: the base, the system inputs (`[apt]`, `[python]`) and
//! the steps, each resolved into one lock value in memory; the lock file read once per command
//! ([`LockFiles`]), changed in memory, and written once when the command's platform loop ends
//! ([`Session::write_locks`]), when the resolution changed it and the policy allows.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{Locked, Session, SessionError};
use crate::base::{self, BaseImage, LockChange};
use crate::digest::Digest;
use crate::lock::{Lock, LockFile};
use crate::recipe::{self, Recipe};
use crate::steps::StepReport;
use crate::system::{self, Extra, System, SystemError, SystemOptions};

/// The lock files a command has read, by path: each read once, and held as last written.
#[derive(Debug, Default)]
pub struct LockFiles(Mutex<BTreeMap<PathBuf, LockFile>>);

/// What [`Session::resolve`] resolved.
pub(super) struct Resolved {
    pub base: Option<(BaseImage, LockChange)>,
    pub system: System,
    pub step_layers: Vec<Extra>,
    pub steps: Vec<StepReport>,
    /// The digest the image records of the lock as this command leaves it.
    pub lock_digest: Option<Digest>,
    /// The epoch, resolved once for everything this resolution built and the image
    /// ([`Session::epoch`]).
    pub epoch: u64,
}

impl Session<'_> {
    /// The lock file at `path`, read the first time this command asks for it.
    pub(super) fn lock_file(&self, path: &Path) -> Result<LockFile, SessionError> {
        let mut files = self
            .locks
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(f) = files.get(path) {
            return Ok(f.clone());
        }
        let f = LockFile::load(path)?;
        files.insert(path.to_path_buf(), f.clone());
        Ok(f)
    }

    /// Writes each lock file this command changed, once ([`LockFile::write`]): what the
    /// platform loop does when it ends (`ops::for_each`), whether it succeeded or not, so a
    /// failed platform keeps what the others pinned.
    pub fn write_locks(&self) -> Result<(), SessionError> {
        let mut files = self
            .locks
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for file in files.values_mut() {
            file.write()?;
        }
        Ok(())
    }

    /// `lock`: the sections of platforms the recipe at `recipe_path` no longer builds dropped
    /// from its lock, in memory (written with the rest by [`Session::write_locks`]); whether
    /// there were any.
    pub fn retain_lock_platforms(
        &self,
        recipe_path: &Path,
        platforms: &[String],
    ) -> Result<bool, SessionError> {
        let mut file = self.lock_file(&Lock::path_for(recipe_path))?;
        let removed = file.retain_platforms(platforms);
        if removed {
            self.keep_lock_file(file);
        }
        Ok(removed)
    }

    /// The lock of the recipe at `recipe_path` as this command holds it: read once, with
    /// what the command changed in memory ([`Session::write_locks`] writes it).
    pub fn held_lock(&self, recipe_path: &Path) -> Result<LockFile, SessionError> {
        self.lock_file(&Lock::path_for(recipe_path))
    }

    /// Holds `file` as the lock this command has set.
    fn keep_lock_file(&self, file: LockFile) {
        let mut files = self
            .locks
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        files.insert(file.path().to_path_buf(), file);
    }

    /// Resolves the base, the system inputs and the steps through the lock (building the
    /// system layers when `build_layers`), then writes the lock once if they changed it and
    /// the policy allows. A recipe refused for its accounts leaves the lock as it was, though
    /// the base had to be resolved (and pinned) to find the collision.
    pub(super) fn resolve(
        &self,
        recipe: &Recipe,
        recipe_path: &Path,
        build_layers: bool,
    ) -> Result<Resolved, SessionError> {
        let lock_path = Lock::path_for(recipe_path);
        let view = recipe.lock_view();
        let mut file = self.lock_file(&lock_path)?;
        let mut lock = file.view(view.as_deref()).unwrap_or_else(Lock::new);
        let before = lock.clone();
        // The lock as the last step that succeeded left it: what a failed resolution keeps
        // (a failed step's half-resolved pins are not written).
        let mut done = lock.clone();
        let result = self.resolve_into(recipe, recipe_path, build_layers, &mut lock, &mut done);
        let refused = matches!(
            &result,
            Err(SessionError::System(e)) if matches!(**e, SystemError::Rootfs(_))
        );
        let lock = if result.is_ok() { lock } else { done };
        if !refused && (lock != before || lock.had_logins) && self.writes_lock() {
            file.set_view(&lock, view.as_deref());
            self.note_logins_removed(&lock, &lock_path);
        }
        let mut r = result?;
        if let (Some(n), true) = (r.system.apt_resolved, build_layers) {
            self.reporter.message(&format!(
                "resolved [apt]: {n} packages to install, pinned in {}",
                lock_path.display()
            ));
        }
        r.lock_digest = file.digest_view(view.as_deref());
        self.keep_lock_file(file);
        Ok(r)
    }

    /// Each step of the resolution into `lock`; `done` follows it after each one that succeeds.
    fn resolve_into(
        &self,
        recipe: &Recipe,
        recipe_path: &Path,
        build_layers: bool,
        lock: &mut Lock,
        done: &mut Lock,
    ) -> Result<Resolved, SessionError> {
        let lock_path = Lock::path_for(recipe_path);
        let base = self.resolve_base(recipe, lock, &lock_path)?;
        done.clone_from(lock);
        // The epoch, resolved once here for the system layers, the sdists, the steps and the
        // image; only where something is built with it (`lock` of a bare base never asks).
        let epoch = if build_layers || system::needs_rootfs(recipe) || !recipe.steps.is_empty() {
            self.epoch(recipe)?
        } else {
            0
        };
        let b = base.as_ref().map(|(b, _)| b);
        let (system, mut steps) = self.prepare_system(recipe, b, build_layers, lock, epoch)?;
        done.clone_from(lock);
        let (step_layers, recipe_steps) = self.prepare_steps(recipe, recipe_path, lock, epoch)?;
        steps.extend(recipe_steps);
        Ok(Resolved {
            base,
            system,
            step_layers,
            steps,
            lock_digest: None,
            epoch,
        })
    }

    /// Resolves the recipe's base through `lock` and fetches what the store lacks. `None` for
    /// a scratch base.
    fn resolve_base(
        &self,
        recipe: &Recipe,
        lock: &mut Lock,
        lock_path: &Path,
    ) -> Result<Option<(BaseImage, LockChange)>, SessionError> {
        let recipe::Base::Image { reference } = &recipe.base else {
            return Ok(None);
        };
        let shallow = self.shallow_base(recipe);
        let how = base::Resolve {
            pin: self.policy,
            client: self.client,
            store: self.store,
            layers: !shallow,
            index: self.base_index,
            reporter: self.reporter,
        };
        let (image, change) = base::resolve(reference, &recipe.image.platform, lock, &how)?;
        // A shallow base that a step reads: its cached facts do, else its layers are needed.
        if shallow && Self::reads_base(recipe) {
            if system::base_facts_known(self.store, &image)? {
                self.reporter.detail(&format!(
                    "base {}: its facts cached (dpkg status, merged /usr, accounts); its layers \
                     not downloaded",
                    image.reference
                ));
            } else {
                base::fetch_layers(self.client, &image, self.store, self.reporter)?;
            }
        }
        if self.writes_lock() {
            let path = lock_path.display();
            match &change {
                LockChange::Pinned { digest } => self.reporter.message(&format!(
                    "pinned base {} to {digest} in {path}",
                    image.reference
                )),
                LockChange::Moved { from, to } => self.reporter.message(&format!(
                    "base {} moved: {from} -> {to} (updated {path})",
                    image.reference
                )),
                LockChange::Unchanged => {}
            }
        }
        Ok(Some((image, change)))
    }

    /// Resolves the system inputs (`[apt]`, `[python]`) through `lock`, building their layers
    /// when `build_layers`; with what the steps that built sdists into wheels did.
    fn prepare_system(
        &self,
        recipe: &Recipe,
        base: Option<&BaseImage>,
        build_layers: bool,
        lock: &mut Lock,
        epoch: u64,
    ) -> Result<(System, Vec<StepReport>), SessionError> {
        if !system::needs_rootfs(recipe) {
            return Ok((System::default(), Vec::new()));
        }
        let opts = SystemOptions {
            epoch,
            compression: recipe.image.compression,
            threads: self.threads,
            no_cache: self.no_cache,
            pin: self.policy,
            allow_downgrade: self.allow_downgrade,
            build_layers,
        };
        let fetcher = self.fetcher(recipe)?;
        let sdists = self.sdist_builder(recipe, epoch);
        let io = system::Io {
            fetcher: &fetcher,
            store: self.store,
            reporter: self.reporter,
            sdists: sdists
                .as_ref()
                .map(|b| b as &dyn system::sdist::SdistBuilder),
            project: sdists
                .as_ref()
                .map(|b| b as &dyn system::project::ProjectBuilder),
        };
        let system = system::prepare(recipe, base, lock, io, &opts)?;
        Ok((system, sdists.map(|s| s.reports()).unwrap_or_default()))
    }

    /// The base index that the lock at `recipe_path` pins for the recipe's base in the first of
    /// `platforms`' sections that pins one (a multi-platform recipe), to resolve the other
    /// platforms through ([`Session::base_index`]).
    pub fn base_index_of(
        &self,
        recipe: &Recipe,
        recipe_path: &Path,
        platforms: &[crate::image::Platform],
    ) -> Result<Option<Digest>, SessionError> {
        let recipe::Base::Image { reference } = &recipe.base else {
            return Ok(None);
        };
        let (true, Ok(name)) = (
            recipe.is_multi_platform(),
            reference.parse::<crate::registry::Reference>(),
        ) else {
            return Ok(None);
        };
        let file = self.lock_file(&Lock::path_for(recipe_path))?;
        let Some(lock) = file.whole() else {
            return Ok(None);
        };
        Ok(platforms.iter().find_map(|p| {
            let b = lock.view(&p.to_string()).base?;
            (b.reference == name.to_string()).then_some(b.index_digest)?
        }))
    }

    /// `ocibuild lock`: pins the base, the system inputs and the steps (by running them: their
    /// outputs' digests are what the lock records) into the lock, building no image.
    pub fn lock(&self, recipe: &Recipe, recipe_path: &Path) -> Result<Locked, SessionError> {
        let lock_path = Lock::path_for(recipe_path);
        let r = self.resolve(recipe, recipe_path, false)?;
        let system = (recipe.apt.is_some() || recipe.python.is_some()).then_some(r.system);
        let mut file = self.lock_file(&lock_path)?;
        if r.base.is_none() && !file.exists() {
            file.set_view(&Lock::new(), None);
            self.keep_lock_file(file);
        }
        Ok(Locked {
            base: r.base,
            system,
            lock_path,
        })
    }
}
