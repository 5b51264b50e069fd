//! The recipe as written: serde types that mirror the TOML one to one, with spans on every value
//! that a semantic check may need to point at. `deny_unknown_fields` everywhere, so a typo is an
//! error with the list of keys that were expected.
//!
//! Required keys are `Option`s here: `validate` reports them missing with context (which layer,
//! which test) instead of serde's bare "missing field".

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

pub(super) use super::values::{Argv, PortValue, SpannedMap};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRecipe {
    pub image: Option<Spanned<RawImage>>,
    pub base: Option<RawBase>,
    #[serde(default)]
    pub layer: Vec<Spanned<RawLayer>>,
    pub config: Option<RawConfig>,
    pub podman: Option<RawPodman>,
    #[serde(default)]
    pub test: Vec<Spanned<RawTest>>,
    pub apt: Option<Spanned<RawApt>>,
    pub python: Option<Spanned<RawPython>>,
    pub accounts: Option<RawAccounts>,
    #[serde(default)]
    pub step: Vec<Spanned<super::step::RawStep>>,
    #[serde(default)]
    pub path: Vec<Spanned<super::paths::RawPath>>,
    pub args: Option<Spanned<SpannedMap>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAccounts {
    #[serde(default)]
    pub group: Vec<Spanned<RawGroup>>,
    #[serde(default)]
    pub user: Vec<Spanned<RawUser>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGroup {
    pub name: Option<Spanned<String>>,
    pub gid: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawUser {
    pub name: Option<Spanned<String>>,
    pub uid: Option<Spanned<i64>>,
    pub gid: Option<Spanned<i64>>,
    pub home: Option<Spanned<String>>,
    pub shell: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawApt {
    #[serde(default)]
    pub source: Vec<Spanned<RawAptSource>>,
    pub packages: Option<Vec<Spanned<String>>>,
    pub host_provides: Option<Vec<Spanned<String>>>,
    pub essential: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawAptSource {
    pub url: Option<Spanned<String>>,
    pub mirrors: Option<Vec<Spanned<String>>>,
    pub suite: Option<Spanned<String>>,
    pub components: Option<Vec<Spanned<String>>>,
    pub architecture: Option<Spanned<String>>,
    pub snapshot: Option<Spanned<String>>,
    pub signed_by: Option<Spanned<String>>,
    pub allow_unsigned: Option<bool>,
    pub check_valid_until: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawPython {
    pub path: Option<Spanned<String>>,
    pub archive: Option<Spanned<RawPythonArchive>>,
    /// `[python.archives."linux/arm64"]`: one interpreter archive per platform.
    pub archives: Option<Spanned<BTreeMap<Spanned<String>, Spanned<RawPythonArchive>>>>,
    pub version: Option<Spanned<String>>,
    pub lock: Option<Spanned<String>>,
    /// `[python.locks] "linux/arm64" = "pylock.arm64.toml"`: one pylock.toml per platform.
    pub locks: Option<Spanned<BTreeMap<Spanned<String>, Spanned<String>>>>,
    pub requirements: Option<Spanned<String>>,
    pub index: Option<Spanned<String>>,
    pub overlap: Option<Spanned<String>>,
    pub max_layer_size: Option<Spanned<toml::Value>>,
    /// `sdist-builder = { recipe = "builder.toml" }` or a registry image: where packages that
    /// have only an sdist are built into wheels.
    pub sdist_builder: Option<Spanned<toml::Value>>,
    /// `project = "."` or `{ path = ".", editable = false }`: the uv project whose own package
    /// is built into a wheel.
    pub project: Option<Spanned<toml::Value>>,
    /// With `lock = "uv.lock"`: the project's extras, dependency groups, and `--no-dev`.
    pub extras: Option<Spanned<Vec<String>>>,
    pub groups: Option<Spanned<Vec<String>>>,
    pub no_dev: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawPythonArchive {
    pub url: Option<Spanned<String>>,
    pub sha256: Option<Spanned<String>>,
    pub prefix: Option<Spanned<String>>,
    pub strip: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawImage {
    pub name: Option<Spanned<String>>,
    pub tag: Option<Spanned<String>>,
    pub compression: Option<Spanned<String>>,
    pub compression_level: Option<Spanned<i64>>,
    /// Seconds, or `"git"`: the last commit's time.
    pub source_date_epoch: Option<Spanned<toml::Value>>,
    pub platform: Option<Spanned<String>>,
    pub platforms: Option<Spanned<Vec<Spanned<String>>>>,
    /// The GPUs the image is for (`["sm_90"]`): fatbins pruned to them (issue 39).
    pub cuda_archs: Option<Spanned<Vec<Spanned<String>>>>,
    /// Which PTX stays: `newest` (the default), `none`, `all`.
    pub cuda_ptx: Option<Spanned<String>>,
    /// Leave out a wheel's copy of a library the base or the apt layer ships when nothing
    /// loads it (issue 39).
    pub drop_unused_copies: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBase {
    pub image: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawLayer {
    pub name: Option<Spanned<String>>,
    pub src: Option<Spanned<String>>,
    pub dest: Option<Spanned<String>>,
    pub ignore: Option<Vec<Spanned<String>>>,
    pub ignore_file: Option<Spanned<String>>,
    pub owner: Option<Spanned<String>>,
    pub mode: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawConfig {
    pub env: Option<SpannedMap>,
    pub entrypoint: Option<Spanned<Argv>>,
    pub cmd: Option<Spanned<Argv>>,
    pub workdir: Option<Spanned<String>>,
    pub user: Option<Spanned<String>>,
    pub labels: Option<SpannedMap>,
    pub exposed_ports: Option<Vec<Spanned<PortValue>>>,
    pub annotations: Option<SpannedMap>,
    pub stop_signal: Option<Spanned<String>>,
    pub volumes: Option<Vec<Spanned<String>>>,
    pub shell: Option<Spanned<Vec<Spanned<String>>>>,
    pub healthcheck: Option<Spanned<RawHealthcheck>>,
}

/// `[config.healthcheck]`: Docker's HEALTHCHECK.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawHealthcheck {
    pub test: Option<Spanned<Vec<Spanned<String>>>>,
    pub interval: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
    pub start_period: Option<Spanned<String>>,
    pub start_interval: Option<Spanned<String>>,
    pub retries: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPodman {
    pub args: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawTest {
    pub name: Option<Spanned<String>>,
    pub run: Option<Spanned<Argv>>,
    pub check: Option<Spanned<String>>,
    pub env: Option<SpannedMap>,
    pub workdir: Option<Spanned<String>>,
    pub user: Option<Spanned<String>>,
    pub exit_code: Option<Spanned<i64>>,
    pub expect_output: Option<String>,
    pub timeout: Option<Spanned<i64>>,
    pub gpu: Option<Spanned<String>>,
    pub network: Option<bool>,
}
