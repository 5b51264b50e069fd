//! `ocibuild test RECIPE` and the hidden `ocibuild cuda-smoke`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::default_output;
use super::Cli;
use crate::image::Platform;
use crate::ops::{run_stage, StageOptions, TestedPlatform};
use crate::output::Target;
use crate::recipe;
use crate::run::{self, Outcome, Summary, TestEvent, TestResult};

#[derive(Args, Debug, Clone, Default)]
pub(super) struct TestOptions {
    /// Run only these tests (repeatable; default: all of the recipe's).
    #[arg(long = "only", value_name = "NAME")]
    pub only: Vec<String>,
    /// The podman to use.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "podman",
        env = "OCIBUILD_PODMAN"
    )]
    pub podman: PathBuf,
    /// An extra `podman run` flag (repeatable).
    #[arg(long = "podman-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub podman_args: Vec<String>,
    /// Run GPU tests even where no GPU is found.
    #[arg(long)]
    pub force_gpu: bool,
    /// Take the recipe's [podman] args even where they reach the host.
    #[arg(long)]
    pub allow_recipe_podman_args: bool,
}

#[derive(Args, Debug)]
pub(super) struct TestArgs {
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
    #[command(flatten)]
    pub recipe_args: super::recipe_args::RecipeArgs,
}

impl TestOptions {
    /// The stage's options: podman's flags after the recipe's are `OCIBUILD_PODMAN_ARGS`
    /// (whitespace-separated), then the `--podman-arg`s.
    pub(super) fn stage(&self) -> StageOptions {
        let mut podman_args: Vec<String> = std::env::var("OCIBUILD_PODMAN_ARGS")
            .map(|env| env.split_whitespace().map(String::from).collect())
            .unwrap_or_default();
        podman_args.extend(self.podman_args.iter().cloned());
        StageOptions {
            only: self.only.clone(),
            podman: self.podman.clone(),
            podman_args,
            force_gpu: self.force_gpu,
            allow_recipe_podman_args: self.allow_recipe_podman_args,
        }
    }
}

/// How the test stage's events are printed: each result (with `quiet` only the failures, on
/// stderr, so that stdout holds only the build's result), each podman command on stderr with
/// `show_commands`; nothing but the commands with `json` (the document comes at the end).
pub(super) struct Printer {
    pub show_commands: bool,
    pub json: bool,
    pub quiet: bool,
}

impl Printer {
    pub(super) fn event(&self, event: TestEvent<'_>) {
        let r = match event {
            TestEvent::Command { test, line } => {
                // On stderr, so that stdout holds the results (or --json's document) alone.
                if self.show_commands {
                    eprintln!("test {test}: {line}");
                }
                return;
            }
            TestEvent::Finished(r) => r,
        };
        if self.json {
            return;
        }
        let secs = r.duration.as_secs_f64();
        match &r.outcome {
            _ if self.quiet && !matches!(r.outcome, Outcome::Failed { .. }) => {}
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
                    if self.quiet {
                        eprintln!("{line}");
                    } else {
                        println!("{line}");
                    }
                }
            }
        }
    }

    /// The closing counts (or `--json`'s document).
    pub(super) fn summary(&self, results: &[TestResult]) -> anyhow::Result<()> {
        let summary = Summary::of(results);
        if self.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&json!({"summary": summary, "tests": results}))?
            );
        } else if !self.quiet {
            println!("{summary}");
        }
        Ok(())
    }
}

/// A platform of the recipe that the test stage does not run, said on stdout (stderr with
/// `-q`).
pub(super) fn print_untested(platform: &Platform, host: &Platform, quiet: bool) {
    let line =
        format!("skipped: {platform} is not this host's platform ({host}); nothing is emulated");
    if quiet {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

pub(super) fn run(cli: &Cli, args: &TestArgs) -> anyhow::Result<ExitCode> {
    let layout = match &args.output {
        Some(o) => match o.parse::<Target>()? {
            Target::Layout(dir) => dir,
            other => anyhow::bail!(
                "`ocibuild test` runs images from an OCI layout directory, not {other}"
            ),
        },
        None => default_output(&args.recipe),
    };
    let recipe = args.recipe_args.load(&args.recipe)?;
    let stage = args.opts.stage();
    crate::ops::check_podman_args(&recipe, &stage)?;
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
        let tested = TestedPlatform::of(&recipe);
        for p in &tested.untested {
            print_untested(p, &tested.host, cli.quiet || args.json);
        }
        recipe.for_platform(tested.require()?)?
    } else {
        recipe
    };
    check_fresh(&recipe, &args.recipe, &layout)?;
    let printer = Printer {
        show_commands: cli.verbose,
        json: args.json,
        quiet: cli.quiet,
    };
    let results = run_stage(&recipe, &layout, &stage, &|e| printer.event(e))?;
    printer.summary(&results)?;
    Ok(if Summary::of(&results).any_failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
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
            m.platform.as_ref().map(std::string::ToString::to_string)
                == Some(recipe.image.platform.to_string())
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
pub(super) struct SmokeArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The built-in GPU check, run inside the container under test (hidden subcommand).
pub(super) fn smoke(args: &SmokeArgs) -> ExitCode {
    let r = run::smoke::run();
    match &r {
        Ok(rep) if args.json => {
            println!("{}", serde_json::to_string_pretty(rep).unwrap_or_default());
        }
        Ok(rep) => println!("{rep}"),
        Err(e) => eprintln!("cuda-smoke: {}", crate::diag::chain(e)),
    }
    ExitCode::from(run::smoke::exit_code(&r))
}
