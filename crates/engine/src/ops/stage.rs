//! A recipe's test stage: its `[[test]]` entries in the test stage's terms, its `[podman]` args
//! checked, and the platform that runs. What `ocibuild test` and `build --test` both call.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::image::Platform;
use crate::recipe::{Gpu, Recipe, TestRun};
use crate::run::{
    check_recipe_args, run_tests, select_tests, GpuPolicy, HostLimits, RunError, RunOptions,
    TestCommand, TestEvent, TestResult, TestSpec,
};

/// How the stage runs, from the command line (the recipe says the rest).
#[derive(Debug, Clone, Default)]
pub struct StageOptions {
    /// `--only NAME`: these tests; empty: all of the recipe's.
    pub only: Vec<String>,
    /// podman: a path, or a name looked up on PATH.
    pub podman: PathBuf,
    /// podman flags after the recipe's: `OCIBUILD_PODMAN_ARGS`, then `--podman-arg`s.
    pub podman_args: Vec<String>,
    /// `--force-gpu`.
    pub force_gpu: bool,
    /// `--allow-recipe-podman-args`: a recipe's flags that reach the host are taken too.
    pub allow_recipe_podman_args: bool,
}

/// The recipe's tests in the test stage's terms.
fn specs(recipe: &Recipe) -> Result<Vec<TestSpec>, RunError> {
    recipe
        .tests
        .iter()
        .map(|t| {
            Ok(TestSpec {
                name: t.name.clone(),
                run: match &t.run {
                    TestRun::Command(argv) => TestCommand::Argv(argv.clone()),
                    TestRun::Check(name) => TestCommand::check(name)?,
                },
                env: t.env.clone(),
                workdir: t.workdir.clone(),
                user: t.user.clone(),
                exit_code: t.exit_code,
                expect_output: t.expect_output.clone(),
                timeout: Duration::from_secs(t.timeout_secs),
                gpu: match t.gpu {
                    Gpu::Required => GpuPolicy::Required,
                    Gpu::Optional => GpuPolicy::Optional,
                    Gpu::Off => GpuPolicy::Off,
                },
                network: t.network,
            })
        })
        .collect()
}

/// The recipe's `[podman] args` as the test stage may take them ([`check_recipe_args`]):
/// checked before anything runs, and before `build --test` builds.
pub fn check_podman_args(recipe: &Recipe, opts: &StageOptions) -> Result<(), RunError> {
    check_recipe_args(
        &recipe.podman.args,
        opts.allow_recipe_podman_args,
        &HostLimits::current(),
    )
    .map_err(|refusal| RunError::RecipePodmanArg {
        recipe: recipe.path.clone(),
        refusal,
    })
}

/// Runs `recipe`'s tests (those `opts` selects) against the image tagged `recipe.image.tag`
/// in `layout`, each podman command and result to `report` as it comes.
pub fn run_stage(
    recipe: &Recipe,
    layout: &Path,
    opts: &StageOptions,
    report: &dyn Fn(TestEvent<'_>),
) -> Result<Vec<TestResult>, RunError> {
    let all = specs(recipe)?;
    let selected: Vec<TestSpec> = select_tests(&all, &opts.only)?
        .into_iter()
        .cloned()
        .collect();
    check_podman_args(recipe, opts)?;
    let mut podman_args = recipe.podman.args.clone();
    podman_args.extend(opts.podman_args.iter().cloned());
    let self_exe = std::env::current_exe().map_err(|source| RunError::SelfExe {
        path: PathBuf::from("/proc/self/exe"),
        source,
    })?;
    let run_opts = RunOptions {
        podman: opts.podman.clone(),
        podman_args,
        self_exe,
        force_gpu: opts.force_gpu,
        host_libraries: recipe
            .apt
            .iter()
            .flat_map(|a| &a.host_provides)
            .filter(|h| crate::apt::driver::is_soname(h))
            .cloned()
            .collect(),
    };
    run_tests(layout, &recipe.image.tag, &selected, &run_opts, report)
}

/// The platform a test stage of a recipe runs: the host's, which must be among the recipe's
/// (nothing is emulated).
#[derive(Debug, Clone)]
pub struct TestedPlatform {
    pub host: Platform,
    /// The recipe's other platforms, not tested.
    pub untested: Vec<Platform>,
    /// Whether the recipe builds the host's platform.
    pub built: bool,
}

impl TestedPlatform {
    pub fn of(recipe: &Recipe) -> Self {
        let host = Platform::host();
        let platforms = recipe.platforms();
        TestedPlatform {
            untested: platforms.iter().filter(|p| **p != host).cloned().collect(),
            built: platforms.contains(&host),
            host,
        }
    }

    /// The host's platform; an error when the recipe does not build it.
    pub fn require(&self) -> Result<&Platform, RunError> {
        if self.built {
            Ok(&self.host)
        } else {
            Err(RunError::NoHostPlatform {
                host: self.host.clone(),
            })
        }
    }
}
