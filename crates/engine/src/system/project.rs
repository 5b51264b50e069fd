//! `[python] project`: the uv project's own package, built into a wheel by its PEP 517 backend
//! in the `sdist-builder` (one step, `project:NAME` in the lock, whose input is the project's
//! files), checked against uv.lock's project entry and the image's interpreter, pinned in the
//! lock as a `[[wheel]]` `built-from` that step (its `sha256` the digest of the project's
//! files as the step's input layer), and installed in a layer of its own after the
//! dependencies' wheels.
//!
//! The project's files are the checkout's, as a `[[layer]]`'s are: with the files the lock
//! pins, the wheel must come out as pinned (`--locked`, `verify`); with other files, `build`
//! and `lock` pin the new wheel, and `--locked`/`--frozen` build it without pinning it.

use std::path::Path;

use super::sdist::{fits, BuiltWheel};
use super::SystemError;
use crate::digest::Digest;
use crate::lock::{BuiltFrom, Lock, LockPolicy, LockedStep, LockedWheel};
use crate::python::markers::Version;
use crate::python::tags::{normalize_name, WheelFile};
use crate::python::{uvlock, Interpreter};
use crate::recipe::{PythonPackages, PythonProject};

/// The project to build: its name and version as uv.lock has them, and the recipe's key.
#[derive(Clone, Debug)]
pub struct Project<'a> {
    /// The normalized name.
    pub package: String,
    pub version: Option<String>,
    pub recipe: &'a PythonProject,
}

impl Project<'_> {
    pub fn step_name(&self) -> String {
        step_name(&self.package)
    }
}

/// `project:NAME`: a name no recipe step can have.
pub fn step_name(package: &str) -> String {
    format!("project:{}", normalize_name(package))
}

/// What the builder gave: the wheel, the digest of the project's files it was built from, and
/// whether its step was pinned in the lock's steps (not under `--locked` with other files).
#[derive(Clone, Debug)]
pub struct Built {
    pub wheel: BuiltWheel,
    pub files: Digest,
    pub pinned: bool,
}

/// Builds the project into a wheel (or takes it from the step cache), recording the step in
/// `steps` as the policy allows; `locked_files`: the files digest the lock's wheel was built
/// from.
pub trait ProjectBuilder {
    fn build_project(
        &self,
        project: &Project<'_>,
        steps: &mut Vec<LockedStep>,
        locked_files: Option<Digest>,
    ) -> Result<Built, Box<dyn std::error::Error + Send + Sync>>;
}

/// Whether the lock's wheel `w` is a `[python] project`'s.
pub fn is_project_wheel(w: &LockedWheel) -> bool {
    w.built_from
        .as_ref()
        .is_some_and(|b| b.step.starts_with("project:"))
}

/// The project's `[project] name` in its pyproject.toml.
fn project_name(dir: &Path, at: &str) -> Result<String, SystemError> {
    let problem = |what: String| SystemError::Project {
        at: at.to_string(),
        problem: what,
    };
    let path = dir.join("pyproject.toml");
    let text = fs_err::read_to_string(&path).map_err(|e| problem(e.to_string()))?;
    let doc: toml::Table = toml::from_str(&text).map_err(|e| {
        problem(format!(
            "{} is not valid TOML: {}",
            path.display(),
            e.message()
        ))
    })?;
    doc.get("project")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_string)
        .ok_or_else(|| {
            problem(format!(
                "{} has no [project] name: a project uv builds has one",
                path.display()
            ))
        })
}

/// Builds the project of `[python] project` and pins its wheel in `lock` as the policy allows:
/// the wheel, and whether the lock changed.
pub fn build(
    project: &PythonProject,
    pkgs: &PythonPackages,
    interp: &Interpreter,
    lock: &mut Lock,
    builder: Option<&dyn ProjectBuilder>,
    pin: LockPolicy,
) -> Result<(LockedWheel, bool), SystemError> {
    let at = project.at.as_str();
    let name = project_name(&project.spec.src, at)?;
    let text = fs_err::read_to_string(pkgs.path()).map_err(|e| SystemError::Project {
        at: at.to_string(),
        problem: e.to_string(),
    })?;
    let entry = uvlock::project(&text, &name).map_err(|e| SystemError::Project {
        at: at.to_string(),
        problem: format!("{}: {}", pkgs.written(), crate::diag::chain(&e)),
    })?;
    let package = normalize_name(&entry.name);
    if entry.is_virtual {
        return Err(SystemError::VirtualProject {
            at: at.to_string(),
            project: package,
        });
    }
    if !entry.members.is_empty() {
        return Err(SystemError::Project {
            at: at.to_string(),
            problem: format!(
                "`{package}` depends on the workspace member(s) {}, which `uv sync` builds and \
                 ocibuild does not (it builds the one project named): publish them to an index \
                 and depend on that, or build them with a [[step]]",
                entry.members.join(", ")
            ),
        });
    }
    let p = Project {
        package: package.clone(),
        version: entry.version.clone(),
        recipe: project,
    };
    let Some(builder) = builder else {
        return Err(SystemError::Project {
            at: at.to_string(),
            problem: "no `sdist-builder` to build it in".into(),
        });
    };
    let may_pin = !matches!(pin, LockPolicy::Locked | LockPolicy::Frozen);
    // Another project's wheel and step, from before the recipe named this one.
    let dropped = may_pin && unpin_others(lock, Some(&package));
    let locked = lock
        .wheels
        .iter()
        .find(|w| is_project_wheel(w) && w.name == package)
        .cloned();
    let built = builder
        .build_project(
            &p,
            &mut lock.steps,
            locked
                .as_ref()
                .and_then(|w| w.built_from.as_ref().map(|b| b.sha256)),
        )
        .map_err(|source| SystemError::ProjectBuild {
            project: package.clone(),
            source,
        })?;
    let wheel = check(&p, &built.wheel, interp)?;
    let wheel = LockedWheel {
        url: project.written.clone(),
        built_from: Some(BuiltFrom {
            sha256: built.files,
            step: p.step_name(),
        }),
        ..wheel
    };
    if !built.pinned {
        return Ok((wheel, dropped));
    }
    if let Some(l) = &locked {
        let same_files = l.built_from == wheel.built_from;
        if same_files && l.sha256 != wheel.sha256 && !may_pin {
            return Err(SystemError::ProjectWheelChanged {
                project: package,
                expected: format!("{} {}", l.filename, l.sha256),
                found: format!("{} {}", wheel.filename, wheel.sha256),
            });
        }
    }
    if locked.as_ref() == Some(&wheel) || !may_pin {
        return Ok((wheel, dropped));
    }
    lock.wheels
        .retain(|w| !(is_project_wheel(w) && w.name == package));
    lock.wheels.push(wheel.clone());
    lock.wheels.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((wheel, true))
}

/// The wheel built checked: a wheel of the project, of uv.lock's version, that the image's
/// interpreter loads. The lock's entry (its `url` and `built-from` set by the caller).
fn check(
    p: &Project<'_>,
    built: &BuiltWheel,
    interp: &Interpreter,
) -> Result<LockedWheel, SystemError> {
    let bad = |reason: String| SystemError::ProjectWheel {
        project: p.package.clone(),
        wheel: built.filename.clone(),
        reason,
    };
    let file = WheelFile::parse(&built.filename).map_err(|e| bad(e.to_string()))?;
    if normalize_name(&file.name) != p.package {
        return Err(bad(format!(
            "it is a wheel of {}, uv.lock's project is {}",
            file.name, p.package
        )));
    }
    if let Some(v) = &p.version {
        let same = match (Version::parse(&file.version), Version::parse(v)) {
            (Ok(a), Ok(b)) => a == b,
            _ => &file.version == v,
        };
        if !same {
            return Err(bad(format!(
                "it is version {}, uv.lock's project entry says {v} (run `uv lock` after \
                 changing the version)",
                file.version
            )));
        }
    }
    fits(&file, interp).map_err(bad)?;
    Ok(LockedWheel {
        name: p.package.clone(),
        version: p.version.clone().unwrap_or_else(|| file.version.clone()),
        filename: built.filename.clone(),
        url: String::new(),
        size: built.size,
        sha256: built.sha256,
        built_from: None,
    })
}

/// Drops a project's wheel and step from `lock` when the recipe has no `[python] project` (or
/// another one): whether the lock changed.
pub fn unpin_others(lock: &mut Lock, keep: Option<&str>) -> bool {
    let before = (lock.wheels.len(), lock.steps.len());
    let keep = keep.map(step_name);
    lock.wheels.retain(|w| {
        !is_project_wheel(w) || w.built_from.as_ref().map(|b| &b.step) == keep.as_ref()
    });
    lock.steps
        .retain(|s| !s.name.starts_with("project:") || Some(&s.name) == keep.as_ref());
    before != (lock.wheels.len(), lock.steps.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel(name: &str, step: Option<&str>) -> LockedWheel {
        LockedWheel {
            name: name.into(),
            version: "1".into(),
            filename: format!("{name}-1-py3-none-any.whl"),
            url: ".".into(),
            size: 1,
            sha256: Digest::of(name.as_bytes()),
            built_from: step.map(|s| BuiltFrom {
                sha256: Digest::of(b"files"),
                step: s.into(),
            }),
        }
    }

    fn step(name: &str) -> LockedStep {
        LockedStep {
            name: name.into(),
            image: None,
            key: Digest::of(b"k"),
            outputs: Vec::new(),
            fetch: Vec::new(),
        }
    }

    #[test]
    fn another_projects_wheel_and_step_are_unpinned_and_the_others_kept() {
        let mut lock = Lock::new();
        lock.wheels = vec![
            wheel("app", Some("project:app")),
            wheel("click", None),
            wheel("old", Some("project:old")),
            wheel("pycuda", Some("sdist:pycuda")),
        ];
        lock.steps = vec![
            step("ext"),
            step("project:app"),
            step("project:old"),
            step("sdist:pycuda"),
        ];
        assert!(unpin_others(&mut lock, Some("App")));
        let names: Vec<_> = lock.wheels.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["app", "click", "pycuda"]);
        let steps: Vec<_> = lock.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(steps, ["ext", "project:app", "sdist:pycuda"]);
        assert!(
            !unpin_others(&mut lock, Some("app")),
            "nothing else to drop"
        );
        assert!(unpin_others(&mut lock, None));
        assert!(!lock.wheels.iter().any(is_project_wheel));
        assert_eq!(step_name("My_App"), "project:my-app");
    }
}
