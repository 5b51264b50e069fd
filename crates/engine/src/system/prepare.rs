//! [`super::prepare`]'s steps after apt's: the rootfs layer, `[python]`'s interpreter and
//! wheels, and the wheel layers.

use super::{
    base_accounts, base_files, base_libraries, copies, layer_facts, project, python, rootfs,
    wheels, wheelset, Io, System, SystemError, SystemOptions,
};
use crate::base::BaseImage;
use crate::lock::{Lock, LockPolicy};
use crate::python::Interpreter;
use crate::recipe::Recipe;

/// What [`prepare_layers`]'s steps after apt's share: the recipe, the base, its scan.
pub(super) struct Prepare<'a> {
    pub(super) recipe: &'a Recipe,
    pub(super) base: Option<&'a BaseImage>,
    pub(super) io: Io<'a>,
    pub(super) opts: &'a SystemOptions,
    pub(super) scanned: &'a crate::apt::Base,
    pub(super) needs_base_scan: bool,
}

impl Prepare<'_> {
    /// The rootfs layer (accounts, paths, effects) over the base and the apt layer.
    pub(super) fn rootfs_layer(&self, sys: &mut System) -> Result<(), SystemError> {
        let store = self.io.store;
        let apt_layer = sys.layers.iter().find(|l| l.name == "apt");
        let accounts = if self.needs_base_scan {
            self.scanned.accounts.clone()
        } else {
            base_accounts(store, self.base)?
        };
        // The base's files, when its layers are here: what an account's shell is checked
        // against on a base as on scratch (a shallow base's are not: left unchecked there).
        // Only for declared users (what it is checked for): a second read of a big base's
        // layers is not paid by every build on it.
        let files = if self.recipe.accounts.users.is_empty() {
            None
        } else {
            base_files(store, self.base)?
        };
        let below = rootfs::BaseView {
            accounts: &accounts,
            files: files.as_ref(),
        };
        let (layer, report) = rootfs::layer(
            self.recipe,
            self.scanned,
            &below,
            &sys.apt_packages,
            apt_layer,
            &self.io,
            self.opts,
        )?;
        sys.layers.extend(layer);
        sys.rootfs = Some(report);
        Ok(())
    }

    /// `[python]`: the interpreter (and its layer), the locked wheels and the project's own,
    /// and (building layers) the wheel layers.
    pub(super) fn python_step(
        &self,
        py: &crate::recipe::Python,
        lock: &mut Lock,
        checking: &mut Option<std::thread::ScopedJoinHandle<'_, ()>>,
        sys: &mut System,
    ) -> Result<(), SystemError> {
        let (io, opts) = (&self.io, self.opts);
        let (interp, layer) = python::prepare(
            py,
            &self.recipe.image.platform,
            &sys.apt_packages,
            self.scanned,
            io,
            opts,
        )?;
        if let Some(l) = layer {
            sys.layers.push(l);
        }
        if let Some(pkgs) = &py.packages {
            let (wheels, resolved) =
                wheels::resolve_locked(pkgs, &interp, lock, io, opts.pin, &self.recipe.path)?;
            if resolved {
                sys.wheels_resolved = Some(wheels.len());
                sys.lock_changed = true;
            }
            // The project's own wheel, built now from its files, goes last, alone.
            let mut wheels: Vec<_> = wheels
                .into_iter()
                .filter(|w| !project::is_project_wheel(w))
                .collect();
            let own = match &py.project {
                Some(p) => {
                    let (w, changed) =
                        project::build(p, pkgs, &interp, lock, io.project, opts.pin)?;
                    sys.lock_changed |= changed;
                    Some(w)
                }
                None if !matches!(opts.pin, LockPolicy::Locked | LockPolicy::Frozen) => {
                    sys.lock_changed |= project::unpin_others(lock, None);
                    None
                }
                None => None,
            };
            let project_last = own.is_some();
            wheels.extend(own);
            if opts.build_layers {
                let wheel_set = PythonWheels {
                    py,
                    interp: &interp,
                    wheels: &wheels,
                    project_last,
                };
                self.wheel_layers(&wheel_set, checking, sys)?;
            }
            sys.wheels = wheels;
        }
        sys.interpreter = Some(interp);
        Ok(())
    }

    /// The wheels' layers: their analysis, the duplicate libraries below them (and the copies
    /// nothing loads, dropped on request), then the layers, once `checking` is done.
    fn wheel_layers(
        &self,
        w: &PythonWheels<'_>,
        checking: &mut Option<std::thread::ScopedJoinHandle<'_, ()>>,
        sys: &mut System,
    ) -> Result<(), SystemError> {
        let (recipe, base, io, opts) = (self.recipe, self.base, &self.io, self.opts);
        let Io {
            fetcher,
            store,
            reporter,
            ..
        } = self.io;
        let (py, interp, wheels) = (w.py, w.interp, w.wheels);
        let set = wheelset::analyze(
            wheels,
            interp,
            py.overlap,
            fetcher,
            store,
            opts.threads,
            opts.no_cache,
        )?;
        let base_libraries = if self.needs_base_scan || base.is_none() {
            Some(self.scanned.libraries.clone())
        } else if set.libraries.is_empty() {
            Some(Default::default()) // nothing to match: the base need not be read
        } else {
            base_libraries(store, base)?
        };
        let apt_facts = match sys.layers.iter().find(|l| l.name == "apt") {
            Some(apt) if !set.libraries.is_empty() => layer_facts(store, &apt.layer)?,
            _ => Default::default(),
        };
        let mut dups = base_libraries.map(|libs| {
            let earlier = [("base", &libs), ("apt", &apt_facts.libraries)];
            wheelset::duplicates(&set, wheels, &earlier)
        });
        // Which copy loads, and the wheels' copies nothing loads left out on request.
        let mut build_set = set.clone();
        if let Some(d) = dups.as_mut() {
            let env = copies::ld_library_path(&recipe.config.env, base.map(|b| &b.config));
            copies::explain(d, &set, wheels, interp, store, &env, opts.threads)?;
            if recipe.image.drop_unused_copies {
                for (x, drop) in build_set
                    .overlaps
                    .excluded
                    .iter_mut()
                    .zip(copies::wheel_drops(d, &set, wheels))
                {
                    x.extend(drop);
                }
                let how = copies::AptRebuild {
                    recipe,
                    base: self.scanned,
                    scratch: base.is_none(),
                    status: &apt_facts.status,
                    io,
                    opts,
                };
                copies::drop_from_apt(d, &how, sys)?;
            }
        }
        let layout = wheels::WheelLayout {
            overlap: py.overlap,
            max_layer_size: py.max_layer_size,
            other_layers: base.map_or(0, |b| b.layers.len())
                + sys.layers.len()
                + recipe.layers.len(),
            project_last: w.project_last,
            cuda: recipe.image.cuda.as_ref(),
            set: build_set,
        };
        if let Some(c) = checking.take() {
            // A panic there only leaves wheels unchecked: the analysis checks them.
            let _ = c.join();
        }
        let built = wheels::layers(wheels, interp, layout, fetcher, store, opts, reporter)?;
        sys.layers.extend(built.layers);
        sys.wheel_report = wheelset::WheelReport::new(&set, wheels, dups);
        sys.cuda_libraries.extend(built.cuda);
        Ok(())
    }
}

/// The wheels [`Prepare::wheel_layers`] lays out: `[python]`'s, for `interp`, the project's
/// own last when `project_last`.
struct PythonWheels<'a> {
    py: &'a crate::recipe::Python,
    interp: &'a Interpreter,
    wheels: &'a [crate::lock::LockedWheel],
    project_last: bool,
}
