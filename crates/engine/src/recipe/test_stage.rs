//! The recipe's test stage: `[[test]]` entries and `[podman]`.

use std::collections::BTreeMap;

/// One `[[test]]`, run against the built image by the test stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Test {
    pub name: String,
    pub run: TestRun,
    pub env: BTreeMap<String, String>,
    pub workdir: Option<String>,
    pub user: Option<String>,
    pub exit_code: i32,
    /// A substring that stdout + stderr must contain.
    pub expect_output: Option<String>,
    pub timeout_secs: u64,
    pub gpu: Gpu,
    /// `network = true`: the test's container gets podman's default network; otherwise it
    /// runs with `--network=none` (unless the podman flags name a network themselves).
    pub network: bool,
}

/// What a test runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TestRun {
    /// `run = [...]`: an argv, not empty.
    Command(Vec<String>),
    /// `check = "..."`: a built-in check, one of [`super::KNOWN_CHECKS`].
    Check(String),
}

/// Whether a test gets the host's GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gpu {
    /// Pass GPUs; fail the test when there are none.
    Required,
    /// Pass GPUs when the host has any; run without otherwise.
    Optional,
    /// Never pass GPUs.
    Off,
}

/// `[podman]`: settings for the test stage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Podman {
    /// Extra flags for `podman run`, placed before the image.
    pub args: Vec<String>,
}
