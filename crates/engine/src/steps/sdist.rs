//! The step that builds one sdist into one wheel (`[python] sdist-builder`): the sdist a
//! download checked against its sha256, ocibuild's PEP 517 frontend (`pep517.py`, in the
//! step's argv, so a change to it is a change of every such step's key) run by the builder's
//! `python3` with no network, and the one wheel it writes read back from the step's output
//! into the store.

use std::io::{self, Read};

use super::{output_key, StepError};
use crate::recipe::{Fetch, Step, StepImage, StepInput, StepOutput};
use crate::store::Store;
use crate::system::sdist::{BuiltWheel, Sdist};

/// The frontend the step runs.
pub(super) const FRONTEND: &str = include_str!("pep517.py");

/// Where the step finds the sdist and writes the wheel.
const SDIST_DIR: &str = "/ocibuild/sdist";
pub(super) const WHEEL_DIR: &str = "/ocibuild/wheel";

/// How long an sdist build may take (compiling a large extension).
pub(super) const TIMEOUT_SECS: u64 = 3 * 3600;

/// The environment a wheel is built in (an sdist's, a project's).
pub(super) const ENV: [(&str, &str); 3] = [
    ("HOME", "/tmp"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PIP_NO_INDEX", "1"),
];

/// The step that builds `sdist` in `image`; `at` is where the builder is named.
pub fn step(image: &StepImage, at: &str, sdist: &Sdist) -> Step {
    let file = format!("{SDIST_DIR}/{}", sanitized(&sdist.filename));
    let fetch = vec![Fetch {
        url: sdist.url.clone(),
        sha256: Some(sdist.sha256),
        dest: file.clone(),
    }];
    WheelStep {
        name: sdist.step_name(),
        image,
        at,
        inputs: Vec::new(),
        fetch,
        frontend: FRONTEND.into(),
        source: file,
    }
    .step()
}

/// A step that builds one wheel (an sdist's, a project's): `python3 -c FRONTEND SOURCE
/// WHEEL_DIR` in the builder, with [`ENV`], no network and the wheel directory its one output.
pub(super) struct WheelStep<'a> {
    pub(super) name: String,
    pub(super) image: &'a StepImage,
    pub(super) at: &'a str,
    pub(super) inputs: Vec<StepInput>,
    pub(super) fetch: Vec<Fetch>,
    pub(super) frontend: String,
    /// The sdist file or project directory in the container.
    pub(super) source: String,
}

impl WheelStep<'_> {
    pub(super) fn step(self) -> Step {
        Step {
            name: self.name,
            image: self.image.clone(),
            inputs: self.inputs,
            fetch: self.fetch,
            run: vec![
                "python3".into(),
                "-c".into(),
                self.frontend,
                self.source,
                WHEEL_DIR.into(),
            ],
            env: ENV
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            workdir: Some("/tmp".into()),
            user: None,
            outputs: vec![StepOutput {
                path: WHEEL_DIR.into(),
                dest: WHEEL_DIR.into(),
                in_image: false,
            }],
            network: false,
            timeout_secs: TIMEOUT_SECS,
            at: self.at.to_string(),
        }
    }
}

/// A file name safe as one path segment in the step's container.
fn sanitized(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("sdist{s}")
    } else {
        s
    }
}

/// The wheel the step whose key is `key` wrote (its one output), copied out of the output
/// layer into the store.
pub fn wheel(
    store: &Store,
    step: &Step,
    key: &crate::digest::Digest,
) -> Result<BuiltWheel, StepError> {
    let io_err = |source: io::Error| StepError::Io {
        step: step.name.clone(),
        source,
    };
    let Some(layer) = store.cached_layer(&output_key(key, 0))? else {
        return Err(StepError::NoWheel {
            step: step.name.clone(),
            found: Vec::new(),
        });
    };
    let f = fs_err::File::open(store.blob_path(&layer.digest)).map_err(io_err)?;
    let r = crate::layer::decompressor(&layer.media_type, io::BufReader::new(f)).map_err(io_err)?;
    let mut ar = crate::tarbound::archive(r);
    let prefix = format!("{}/", WHEEL_DIR.trim_start_matches('/'));
    let mut found: Vec<String> = Vec::new();
    let mut built = None;
    for e in ar.entries().map_err(io_err)? {
        let mut e = e.map_err(io_err)?;
        let path = e.path().map_err(io_err)?.to_string_lossy().into_owned();
        let Some(rel) = path.strip_prefix(&prefix) else {
            continue;
        };
        if rel.is_empty() || !e.header().entry_type().is_file() {
            continue;
        }
        found.push(rel.to_string());
        if rel.contains('/') || !rel.ends_with(".whl") || built.is_some() {
            continue;
        }
        let mut w = store.blob_writer()?;
        let size = io::copy(&mut (&mut e).take(u64::MAX), &mut w).map_err(io_err)?;
        let sha256 = w.commit(None)?;
        built = Some(BuiltWheel {
            filename: rel.to_string(),
            sha256,
            size,
        });
    }
    match built {
        Some(b) if found.len() == 1 => Ok(b),
        _ => Err(StepError::NoWheel {
            step: step.name.clone(),
            found,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdist_step_runs_the_frontend_without_network_and_keeps_the_wheel_out_of_the_image() {
        let s = Sdist {
            package: "pycuda".into(),
            version: "2025.1.3".into(),
            filename: "pycuda-2025.1.3.tar.gz".into(),
            url: "https://x/pycuda-2025.1.3.tar.gz".into(),
            sha256: crate::digest::Digest::of(b"sdist"),
        };
        let st = step(
            &StepImage::Registry("debian:trixie".into()),
            "r.toml:3:1",
            &s,
        );
        assert_eq!(st.name, "sdist:pycuda");
        assert!(!st.network);
        assert_eq!(st.run[0], "python3");
        assert!(st.run[2].contains("build_wheel"));
        assert_eq!(st.run[3], "/ocibuild/sdist/pycuda-2025.1.3.tar.gz");
        assert_eq!(st.fetch[0].sha256, Some(s.sha256));
        assert!(!st.outputs[0].in_image);
        assert_eq!(sanitized("../evil name.tar.gz"), "sdist.._evil_name.tar.gz");
        assert_eq!(sanitized(""), "sdist");
    }
}
