//! `ocibuild test RECIPE` and the hidden `ocibuild cuda-smoke`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::default_output;
use super::Cli;
use crate::output::Target;
use crate::recipe::{self, Gpu, Recipe, TestRun};
use crate::run::{self, GpuPolicy, Outcome, RunOptions, Summary, TestCommand, TestEvent, TestSpec};

#[derive(Args, Debug, Clone, Default)]
pub struct TestOptions {
    /// Run only these tests (repeatable); default: all of the recipe's [[test]] entries.
    #[arg(long = "only", value_name = "NAME")]
    pub only: Vec<String>,
    /// The podman to use (a path, or a name looked up on PATH).
    #[arg(
        long,
        value_name = "PATH",
        default_value = "podman",
        env = "OCIBUILD_PODMAN"
    )]
    pub podman: PathBuf,
    /// An extra `podman run` flag (repeatable), after the recipe's [podman] args and
    /// OCIBUILD_PODMAN_ARGS (whitespace-separated).
    #[arg(long = "podman-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub podman_args: Vec<String>,
    /// Run GPU tests even where no GPU is found (to see how the check fails there).
    #[arg(long)]
    pub force_gpu: bool,
    /// Take the recipe's [podman] args even where they can reach the host (mounts, devices,
    /// privileges, host namespaces); by default only flags that act inside the container are.
    /// podman's global options (`--hooks-dir`, `--conmon`, `--root`, …) never come from a recipe.
    #[arg(long)]
    pub allow_recipe_podman_args: bool,
    /// Print each test's podman command on stderr (`ocibuild test -v`, the global --verbose).
    #[arg(skip)]
    pub show_commands: bool,
}

#[derive(Args, Debug)]
pub struct TestArgs {
    /// The recipe whose image (already built) is tested.
    pub recipe: PathBuf,
    /// The OCI layout the image was built into (DIR or oci:DIR). Default: ./<recipe name>.oci
    #[arg(short, long, value_name = "TARGET")]
    pub output: Option<String>,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub opts: TestOptions,
}

/// The recipe's tests in the test stage's terms.
fn specs(recipe: &Recipe) -> Result<Vec<TestSpec>, run::RunError> {
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
            })
        })
        .collect()
}

/// The recipe's `[podman] args` as the test stage may take them (see `run::check_recipe_args`):
/// checked before anything runs, and before `build --test` builds.
pub fn check_recipe_podman_args(recipe: &Recipe, opts: &TestOptions) -> Result<(), run::RunError> {
    run::check_recipe_args(
        &recipe.podman.args,
        opts.allow_recipe_podman_args,
        &run::HostLimits::current(),
    )
    .map_err(|refusal| run::RunError::RecipePodmanArg {
        recipe: recipe.path.clone(),
        refusal,
    })
}

/// Run `recipe`'s tests against the image tagged `recipe.image.tag` in `layout`; prints each
/// result and the closing counts, or with `quiet` only the failures (on stderr), so stdout
/// holds only the build's result. Returns the exit code.
pub fn run_stage(
    recipe: &Recipe,
    layout: &std::path::Path,
    opts: &TestOptions,
    json_out: bool,
    quiet: bool,
) -> anyhow::Result<ExitCode> {
    let all = specs(recipe)?;
    let selected: Vec<TestSpec> = run::select_tests(&all, &opts.only)?
        .into_iter()
        .cloned()
        .collect();
    check_recipe_podman_args(recipe, opts)?;
    let mut podman_args = recipe.podman.args.clone();
    if let Ok(env) = std::env::var("OCIBUILD_PODMAN_ARGS") {
        podman_args.extend(env.split_whitespace().map(String::from));
    }
    podman_args.extend(opts.podman_args.iter().cloned());
    let run_opts = RunOptions {
        podman: opts.podman.clone(),
        podman_args,
        self_exe: std::env::current_exe()?,
        force_gpu: opts.force_gpu,
        host_libraries: recipe
            .apt
            .iter()
            .flat_map(|a| &a.host_provides)
            .filter(|h| crate::apt::driver::is_soname(h))
            .cloned()
            .collect(),
    };
    let report = |event: TestEvent<'_>| {
        let r = match event {
            TestEvent::Command { test, line } => {
                // On stderr, so that stdout holds the results (or --json's document) alone.
                if opts.show_commands {
                    eprintln!("test {test}: {line}");
                }
                return;
            }
            TestEvent::Finished(r) => r,
        };
        if json_out {
            return;
        }
        let secs = r.duration.as_secs_f64();
        match &r.outcome {
            _ if quiet && !matches!(r.outcome, Outcome::Failed { .. }) => {}
            Outcome::Passed => println!("test {} ... passed ({secs:.1}s)", r.name),
            Outcome::Skipped { reason } => println!("test {} ... skipped: {reason}", r.name),
            Outcome::Failed { reason } => {
                let code = r
                    .exit_code
                    .map(|c| format!(", exit code {c}"))
                    .unwrap_or_default();
                let text = format!("test {} ... FAILED ({secs:.1}s{code}): {reason}", r.name);
                let tail = r.output_tail.iter().map(|l| format!("    | {l}"));
                for line in std::iter::once(text).chain(tail) {
                    if quiet {
                        eprintln!("{line}");
                    } else {
                        println!("{line}");
                    }
                }
            }
        }
    };
    let results = run::run_tests(layout, &recipe.image.tag, &selected, &run_opts, &report)?;
    let summary = Summary::of(&results);
    if json_out {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"summary": summary, "tests": results}))?
        );
    } else if !quiet {
        println!("{summary}");
    }
    Ok(if summary.any_failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub fn run(cli: &Cli, args: &TestArgs) -> anyhow::Result<ExitCode> {
    let layout = match &args.output {
        Some(o) => match o.parse::<Target>()? {
            Target::Layout(dir) => dir,
            other => anyhow::bail!(
                "`ocibuild test` runs images from an OCI layout directory, not {other}"
            ),
        },
        None => default_output(&args.recipe),
    };
    let recipe = recipe::load(&args.recipe)?;
    check_recipe_podman_args(&recipe, &args.opts)?;
    if !layout.join("index.json").is_file() {
        anyhow::bail!(
            "no OCI layout at {}: build it first with `ocibuild build {} --output {}`",
            layout.display(),
            args.recipe.display(),
            layout.display()
        );
    }
    // A multi-platform image: the host's platform runs (podman picks it from the index);
    // nothing is emulated.
    let recipe = if recipe.is_multi_platform() {
        let host = super::multi::host_platform(&recipe, cli.quiet || args.json)?;
        recipe.for_platform(&host)?
    } else {
        recipe
    };
    check_fresh(&recipe, &args.recipe, &layout)?;
    let opts = TestOptions {
        show_commands: cli.verbose,
        ..args.opts.clone()
    };
    run_stage(&recipe, &layout, &opts, args.json, cli.quiet)
}

/// The image in `layout` (at the recipe's tag) must be the one this recipe builds now: a test
/// of a stale image would pass or fail for another recipe.
fn check_fresh(
    recipe: &recipe::Recipe,
    recipe_path: &std::path::Path,
    layout: &std::path::Path,
) -> anyhow::Result<()> {
    let l = crate::output::Layout::open(layout)?;
    let entry = l.entry(&recipe.image.tag)?;
    let mut bytes = l.read_blob(&entry.digest)?;
    if entry.media_type == crate::image::MEDIA_TYPE_INDEX {
        // A multi-platform image: the manifest of the platform that runs.
        let ix: crate::image::Index = serde_json::from_slice(&bytes)?;
        let Some(m) = ix.manifests.iter().find(|m| {
            m.platform.as_ref().map(|p| p.to_string()) == Some(recipe.image.platform.to_string())
        }) else {
            anyhow::bail!(
                "the image at {} has no manifest for {}: build it again",
                layout.display(),
                recipe.image.platform
            );
        };
        bytes = l.read_blob(&m.digest.to_string())?;
    }
    let subject =
        crate::audit::attest::Subject::new(&recipe.image.name, &recipe.image.tag, &bytes)?;
    let recorded = subject.annotation(crate::image::annotations::RECIPE_DIGEST);
    let current = recipe.identity()?.to_string();
    if recorded.is_some_and(|r| r != current) {
        anyhow::bail!(
            "the image at {} was built from another version of {} (it records recipe {}, the recipe is now {current}): build it again, or use `ocibuild build {} --test`",
            layout.display(),
            recipe_path.display(),
            recorded.unwrap_or_default(),
            recipe_path.display()
        );
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct SmokeArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The built-in GPU check, run inside the container under test (hidden subcommand).
pub fn smoke(args: &SmokeArgs) -> ExitCode {
    let r = run::smoke::run();
    match &r {
        Ok(rep) if args.json => {
            println!("{}", serde_json::to_string_pretty(rep).unwrap_or_default())
        }
        Ok(rep) => println!("{rep}"),
        Err(e) => eprintln!("cuda-smoke: {}", crate::diag::chain(e)),
    }
    ExitCode::from(run::smoke::exit_code(&r))
}
