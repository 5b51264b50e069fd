//! `--build-arg NAME[=VALUE]`: the recipe-loading flag of every command that reads a recipe to
//! build it or to check what it builds (`build`, `lock`, `plan`, `verify`, `test`, `sbom`,
//! `provenance`).

use std::path::Path;

use clap::Args;

use crate::recipe::{self, ArgOverride, Recipe, RecipeError};

#[derive(Args, Debug, Default)]
pub(super) struct RecipeArgs {
    /// Set an [args] value: NAME=VALUE, or NAME (the environment's value).
    #[arg(long = "build-arg", value_name = "ARG", help_heading = "Inputs")]
    pub build_args: Vec<String>,
}

impl RecipeArgs {
    /// The `--build-arg`s, a bare `NAME` taking the environment's value (unset: the default
    /// stays, as `docker build` does).
    pub(super) fn overrides(&self) -> Vec<ArgOverride> {
        self.build_args
            .iter()
            .map(|a| ArgOverride::parse(a, |name| std::env::var(name).ok()))
            .collect()
    }

    /// The recipe at `path` with these `--build-arg`s.
    pub(super) fn load(&self, path: &Path) -> Result<Recipe, RecipeError> {
        recipe::load_with(path, &self.overrides())
    }
}
