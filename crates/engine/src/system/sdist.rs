//! Packages with only an sdist (or no wheel that fits the image): built into wheels by the
//! recipe's `[python] sdist-builder`, one step each (`sdist:NAME` in the lock), through an
//! [`SdistBuilder`] that the session gives (it runs steps). The wheel built is checked against
//! the package and the image's interpreter, pinned in the lock (`built-from`), and installed
//! like any other.

use super::SystemError;
use crate::digest::Digest;
use crate::lock::{BuiltFrom, LockPolicy, LockedStep, LockedWheel};
use crate::python::markers::Version;
use crate::python::tags::{self, normalize_name, WheelFile};
use crate::python::Interpreter;

/// An sdist to build into a wheel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sdist {
    /// The normalized project name.
    pub package: String,
    pub version: String,
    pub filename: String,
    /// Where it is (`https://…`, or `file://` for a lock's local path).
    pub url: String,
    pub sha256: Digest,
}

impl Sdist {
    /// The lock's step that builds it.
    pub fn step_name(&self) -> String {
        step_name(&self.package)
    }
}

/// `sdist:NAME`: a name no recipe step can have (a recipe's step names have no `:`).
pub fn step_name(package: &str) -> String {
    format!("sdist:{}", normalize_name(package))
}

/// A wheel built from an sdist, in the store (the blob `sha256`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuiltWheel {
    pub filename: String,
    pub sha256: Digest,
    pub size: u64,
}

/// Builds an sdist into a wheel (or takes it from the step cache), recording the step in
/// `steps` (the lock's) as the policy allows.
pub trait SdistBuilder {
    fn build(
        &self,
        sdist: &Sdist,
        steps: &mut Vec<LockedStep>,
    ) -> Result<BuiltWheel, Box<dyn std::error::Error + Send + Sync>>;
}

/// Builds `sdist` with `builder` and checks the wheel: its name and version are the
/// package's, and the image's interpreter can load it (its Python and ABI tags are the
/// interpreter's; its platform one the interpreter accepts, or `linux_MACHINE`, since it was
/// built for this image). The lock's wheel entry.
pub fn build(
    builder: Option<&dyn SdistBuilder>,
    sdist: &Sdist,
    interp: &Interpreter,
    steps: &mut Vec<LockedStep>,
) -> Result<LockedWheel, SystemError> {
    let Some(builder) = builder else {
        return Err(SystemError::NoSdistBuilder {
            package: sdist.package.clone(),
        });
    };
    let built = builder
        .build(sdist, steps)
        .map_err(|source| SystemError::Sdist {
            package: sdist.package.clone(),
            source,
        })?;
    let bad = |reason: String| SystemError::BuiltWheel {
        package: sdist.package.clone(),
        wheel: built.filename.clone(),
        reason,
    };
    let file = WheelFile::parse(&built.filename).map_err(|e| bad(e.to_string()))?;
    if normalize_name(&file.name) != sdist.package {
        return Err(bad(format!("it is a wheel of {}", file.name)));
    }
    let same = match (
        Version::parse(&file.version),
        Version::parse(&sdist.version),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => file.version == sdist.version,
    };
    if !same {
        return Err(bad(format!(
            "it is version {}, the lock says {}",
            file.version, sdist.version
        )));
    }
    fits(&file, interp).map_err(bad)?;
    Ok(LockedWheel {
        name: sdist.package.clone(),
        version: sdist.version.clone(),
        filename: built.filename,
        url: sdist.url.clone(),
        size: built.size,
        sha256: built.sha256,
        built_from: Some(BuiltFrom {
            sha256: sdist.sha256,
            step: sdist.step_name(),
        }),
    })
}

/// Whether the interpreter loads a wheel built for it: a Python and ABI tag pair it supports,
/// and a platform it supports or the builder's own `linux_MACHINE`.
pub(super) fn fits(file: &WheelFile, interp: &Interpreter) -> Result<(), String> {
    let supported = tags::supported_tags(interp);
    let own = format!("linux_{}", interp.machine);
    let ok = file.tags().any(|t| {
        supported.iter().any(|s| {
            s.interpreter == t.interpreter
                && s.abi == t.abi
                && (s.platform == t.platform || t.platform == own)
        })
    });
    if ok {
        return Ok(());
    }
    Err(format!(
        "the image's Python ({}) cannot load it: the builder's Python must be the image's (its \
         wheel tags are {})",
        tags::describe(interp),
        file.tags()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The lock's wheels built from sdists, built again (a step cache hit runs nothing) so that
/// the store has them; a wheel that comes out with other bytes than the lock pins is pinned
/// again, except under `--locked`/`--frozen` (an error: the step that built it says which
/// files differ when its output changed). Returns whether the lock changed.
pub fn ensure_built(
    builder: Option<&dyn SdistBuilder>,
    wheels: &mut [LockedWheel],
    interp: &Interpreter,
    steps: &mut Vec<LockedStep>,
    pin: LockPolicy,
) -> Result<bool, SystemError> {
    let mut changed = false;
    for w in wheels.iter_mut() {
        let Some(from) = w
            .built_from
            .as_ref()
            .filter(|b| b.step.starts_with("sdist:"))
        else {
            continue;
        };
        let sdist = Sdist {
            package: w.name.clone(),
            version: w.version.clone(),
            filename: url_file(&w.url),
            url: w.url.clone(),
            sha256: from.sha256,
        };
        let built = build(builder, &sdist, interp, steps)?;
        if built.sha256 != w.sha256 || built.filename != w.filename {
            if matches!(pin, LockPolicy::Locked | LockPolicy::Frozen) {
                return Err(SystemError::BuiltWheelChanged {
                    package: w.name.clone(),
                    expected: format!("{} {}", w.filename, w.sha256),
                    found: format!("{} {}", built.filename, built.sha256),
                });
            }
            *w = built;
            changed = true;
        }
    }
    Ok(changed)
}

/// The last segment of a URL.
fn url_file(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url[..end].rsplit('/').next().unwrap_or("").to_string()
}

/// Drops the lock's `sdist:` steps that no wheel of `wheels` is built by.
pub fn prune_steps(steps: &mut Vec<LockedStep>, wheels: &[LockedWheel]) {
    steps.retain(|s| {
        !s.name.starts_with("sdist:")
            || wheels
                .iter()
                .any(|w| w.built_from.as_ref().is_some_and(|b| b.step == s.name))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::interpreter::{PyVersion, Scheme};

    fn interp() -> Interpreter {
        let v = PyVersion {
            major: 3,
            minor: 13,
        };
        Interpreter {
            version: v,
            executable: "/usr/bin/python3.13".into(),
            machine: "x86_64".into(),
            glibc: Some((2, 41)),
            scheme: Scheme::debian_local(v),
            full_version: None,
        }
    }

    fn file(name: &str) -> WheelFile {
        WheelFile::parse(name).unwrap()
    }

    #[test]
    fn a_wheel_built_for_the_image_fits_and_one_for_another_python_does_not() {
        let i = interp();
        assert!(fits(&file("pycuda-2025.1.3-cp313-cp313-linux_x86_64.whl"), &i).is_ok());
        assert!(fits(&file("x-1-py3-none-any.whl"), &i).is_ok());
        assert!(fits(&file("x-1-cp313-cp313-manylinux_2_17_x86_64.whl"), &i).is_ok());
        let e = fits(&file("x-1-cp311-cp311-linux_x86_64.whl"), &i).unwrap_err();
        assert!(
            e.contains("the builder's Python must be the image's"),
            "{e}"
        );
        assert!(e.contains("cp311-cp311-linux_x86_64"), "{e}");
        assert!(fits(&file("x-1-cp313-cp313-linux_aarch64.whl"), &i).is_err());
    }

    #[test]
    fn the_steps_of_sdists_no_longer_built_are_pruned() {
        let step = |name: &str| LockedStep {
            name: name.into(),
            image: None,
            key: Digest::of(b"k"),
            outputs: Vec::new(),
            fetch: Vec::new(),
        };
        let mut steps = vec![step("ext"), step("sdist:a"), step("sdist:b")];
        let w = LockedWheel {
            name: "b".into(),
            version: "1".into(),
            filename: "b-1-py3-none-any.whl".into(),
            url: "https://x/b-1.tar.gz".into(),
            size: 1,
            sha256: Digest::of(b"w"),
            built_from: Some(BuiltFrom {
                sha256: Digest::of(b"s"),
                step: "sdist:b".into(),
            }),
        };
        prune_steps(&mut steps, &[w]);
        let names: Vec<_> = steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ext", "sdist:b"]);
        assert_eq!(step_name("Foo_Bar"), "sdist:foo-bar");
    }
}
