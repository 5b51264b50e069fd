//! The step that builds `[python] project` into one wheel: the project's files as the step's
//! input (a layer, as a `[[step]]`'s file input), and ocibuild's PEP 517 frontend for a
//! directory (`pep517_project.py`'s head, which copies the project to a writable path, then
//! `pep517.py`'s build half) run by the builder's `python3` with no network. The wheel is read
//! back by [`super::sdist::wheel`]. Only `pep517.py`'s build half is shared: its head (the
//! sdist unpacked, the epoch clamped to 1980) is in each step's key, so the project's head is
//! its own and a change to one head leaves the other kind of step's keys (and locks) as they are.

use super::sdist::WheelStep;
use crate::layer::CopySpec;
use crate::recipe::{Layer, Step, StepImage, StepInput};

/// The head that takes a directory in place of an sdist.
const HEAD: &str = include_str!("pep517_project.py");

/// Where pep517.py's build half starts: after the sdist is unpacked under `work`.
const BUILD_HALF: &str = "\ntop = os.listdir(work)\n";

/// Where the project's files are in the step's container: `/ocibuild/project/NAME`.
const PROJECT_DIR: &str = "/ocibuild/project";

/// The frontend the step runs: the head, then pep517.py's build half.
pub fn frontend() -> String {
    let full = super::sdist::FRONTEND;
    let tail = full.find(BUILD_HALF).map_or(full, |i| &full[i..]);
    format!("{HEAD}{tail}")
}

/// The step that builds the project `package` (its files `spec`, written `src` in the recipe)
/// in `image`; `at` is where the builder is named.
pub fn step(image: &StepImage, at: &str, package: &str, src: &str, spec: &CopySpec) -> Step {
    let dir = format!("{PROJECT_DIR}/{package}");
    WheelStep {
        name: crate::system::project::step_name(package),
        image,
        at,
        inputs: vec![StepInput::Files(Layer {
            name: crate::recipe::input_name(&crate::system::project::step_name(package), 0),
            src: src.to_string(),
            spec: CopySpec {
                dest: dir.clone(),
                ..spec.clone()
            },
        })],
        fetch: Vec::new(),
        frontend: frontend(),
        source: dir,
    }
    .step()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::ModePolicy;

    #[test]
    fn the_project_step_copies_the_directory_then_builds_as_pep517_does() {
        let f = frontend();
        assert!(f.starts_with("# ocibuild's PEP 517 frontend for `[python] project`"));
        assert!(
            f.contains(BUILD_HALF) && f.contains("hooks.build_wheel(out)"),
            "pep517.py's build half follows the head"
        );
        assert!(!f.contains("def unpack()"), "no sdist is unpacked");
        let spec = CopySpec {
            src: "/src/app".into(),
            dest: "/x".into(),
            ignore: vec!["/.venv".into()],
            uid: 0,
            gid: 0,
            mode: ModePolicy::Normalize,
        };
        let st = step(
            &StepImage::Registry("debian:trixie".into()),
            "r.toml:3:1",
            "app",
            ".",
            &spec,
        );
        assert_eq!(st.name, "project:app");
        assert!(!st.network && st.fetch.is_empty());
        assert_eq!(st.run[3], "/ocibuild/project/app");
        let StepInput::Files(l) = &st.inputs[0] else {
            panic!("a files input")
        };
        let s = &l.spec;
        assert_eq!(s.dest, "/ocibuild/project/app");
        assert_eq!(s.ignore, ["/.venv"]);
        assert!(!st.outputs[0].in_image);
    }
}
