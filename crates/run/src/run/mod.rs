//! The test stage: `[[test]]` entries run with podman straight from the OCI layout (`oci:`
//! transport: no daemon, no push), GPU access (CDI, or device nodes and driver libraries), and the
//! built-in `cuda-smoke` check ([`smoke`]).
//!
//! The library returns data and never prints: [`run_tests`] hands each podman command to a
//! reporter as it starts and each [`TestResult`] as it finishes ([`TestEvent`]); the CLI prints
//! them (or JSON: [`TestResult`] is `Serialize`).

mod args;
mod capture;
mod gpu;
mod image;
mod janitor;
mod podman;
mod sandbox;
mod show;
pub mod smoke;
mod trust;

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

pub use args::split_global_args;
pub use capture::{Matcher, OutputCapture, MAX_LINE_BYTES, TAIL_LINES};
pub use gpu::{
    container_lib_dir, discover_gpu, discover_gpu_for, discover_gpu_with, find_cdi_spec,
    find_library, nvidia_device_nodes, parse_ldconfig, GpuAccess, HostProbe, LdEntry, CDI_DEVICE,
    CDI_DIRS, EXTRA_LIBRARIES, LIBCUDA,
};
pub use image::{glibc_loader, image_has_glibc, image_info, ImageInfo};
pub use janitor::LayoutCopies;
pub use podman::exit_reason;
pub use sandbox::{run_sandboxed, SandboxOptions, SandboxOutcome, SandboxRun};
pub use show::{command_line, masked, secret_name, shell_quote};
pub use trust::{check_recipe_args, HostLimits, Refusal};

/// Where the ocibuild binary is bind-mounted for `cuda-smoke`.
pub const SELF_MOUNT: &str = "/.ocibuild/ocibuild";
/// The hidden subcommand that runs [`smoke::run`].
pub const SMOKE_SUBCOMMAND: &str = "cuda-smoke";
/// Names accepted for `check = "…"`.
pub const CHECKS: &[&str] = &[SMOKE_SUBCOMMAND];
/// How to get podman where it is missing.
pub const INSTALL_PODMAN: &str = "apt-get install podman runc";

/// One `[[test]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestSpec {
    pub name: String,
    pub run: TestCommand,
    pub env: BTreeMap<String, String>,
    pub workdir: Option<String>,
    pub user: Option<String>,
    pub exit_code: i32,
    /// A substring of stdout or of stderr.
    pub expect_output: Option<String>,
    pub timeout: Duration,
    pub gpu: GpuPolicy,
    /// The container gets podman's default network; otherwise `--network=none`, unless the
    /// podman flags name a network ([`args::names_network`]).
    pub network: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestCommand {
    /// Runs as the container's whole command: `argv[0]` replaces the image's entrypoint, the
    /// rest its cmd. Empty: the image's own entrypoint and cmd.
    Argv(Vec<String>),
    /// The built-in check, see [`smoke`].
    CudaSmoke,
}

impl TestCommand {
    /// A `check = "NAME"` from the recipe.
    pub fn check(name: &str) -> Result<TestCommand, RunError> {
        match name {
            SMOKE_SUBCOMMAND => Ok(TestCommand::CudaSmoke),
            _ => Err(RunError::UnknownCheck {
                name: name.to_string(),
                known: CHECKS
                    .iter()
                    .map(std::string::ToString::to_string)
                    .collect(),
            }),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuPolicy {
    /// The test gets the GPU; without one it fails.
    Required,
    /// The test gets the GPU; without one it is skipped ("no GPU").
    Optional,
    /// No GPU access.
    Off,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// podman: a path, or a bare name looked up on PATH.
    pub podman: PathBuf,
    /// Extra podman arguments (recipe + CLI + `OCIBUILD_PODMAN_ARGS`, merged by the caller).
    /// podman's global options among them (`--runtime`, `--root`, `--storage-driver`, …) are
    /// put before `run`, and reused for cleanup; the rest go to `run`.
    pub podman_args: Vec<String>,
    /// The ocibuild binary, bind-mounted read-only for `cuda-smoke`.
    pub self_exe: PathBuf,
    /// Treat the GPU as present even if discovery finds none (to test failure paths).
    pub force_gpu: bool,
    /// The recipe's `[apt] host-provides` sonames (`libcuda.so.1`): a GPU test binds each from
    /// the host, and fails naming one the host lacks ([`gpu::discover_gpu_for`]).
    pub host_libraries: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed { reason: String },
    Skipped { reason: String },
}

/// One test's result; `test --json` prints them with camelCase keys, as every command does.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TestResult {
    pub name: String,
    #[serde(flatten)]
    pub outcome: Outcome,
    pub exit_code: Option<i32>,
    #[serde(rename = "durationSecs", serialize_with = "secs")]
    pub duration: Duration,
    /// The last [`TAIL_LINES`] lines of stdout and stderr, interleaved as they arrived.
    pub output_tail: Vec<String>,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0).round() / 1000.0)
}

impl TestResult {
    fn new(name: &str, outcome: Outcome) -> Self {
        TestResult {
            name: name.to_string(),
            outcome,
            exit_code: None,
            duration: Duration::ZERO,
            output_tail: Vec::new(),
        }
    }
    pub fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Failed { .. })
    }
}

/// What [`run_tests`] reports as it goes.
#[derive(Debug, Clone, Copy)]
pub enum TestEvent<'a> {
    /// A test's podman command, about to run (a second one when podman is run again with
    /// smaller limits): `line` is shell-quoted, credentials masked ([`command_line`]).
    Command { test: &'a str, line: &'a str },
    /// A test's result.
    Finished(&'a TestResult),
}

/// Counts, for the closing line and `--json`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Summary {
    pub fn of(results: &[TestResult]) -> Self {
        let mut s = Summary::default();
        for r in results {
            match r.outcome {
                Outcome::Passed => s.passed += 1,
                Outcome::Failed { .. } => s.failed += 1,
                Outcome::Skipped { .. } => s.skipped += 1,
            }
        }
        s
    }
    /// The command should exit non-zero.
    pub fn any_failed(&self) -> bool {
        self.failed > 0
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(
        "{}: the recipe's [podman] args hold {refusal}",
        crate::bounded::clip_path(recipe)
    )]
    RecipePodmanArg { recipe: PathBuf, refusal: Refusal },
    #[error(
        "podman not found (`{}`{}); install it with `{INSTALL_PODMAN}`, or give its path",
        podman.display(),
        if podman.components().count() > 1 { "" } else { " on PATH" }
    )]
    PodmanMissing { podman: PathBuf },
    #[error("cannot run {}", program.display())]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("OCI layout {}: {detail}", layout.display())]
    Layout { layout: PathBuf, detail: String },
    #[error(transparent)]
    Read(#[from] crate::output::ReadError),
    #[error("reading layer {}: {detail}", layer.display())]
    Layer { layer: PathBuf, detail: String },
    /// The layout's image, read through [`crate::image::source::ImageSource`].
    #[error(transparent)]
    Image(#[from] crate::image::source::SourceError),
    #[error("copying the layout {} to {} (podman needs a plain path)", from.display(), to.display())]
    Stage {
        from: PathBuf,
        to: PathBuf,
        source: std::io::Error,
    },
    #[error("the ocibuild binary {} for cuda-smoke is not there", path.display())]
    SelfExe {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("unknown test `{name}` (tests: {})", if known.is_empty() { "none".to_string() } else { known.join(", ") })]
    UnknownTest { name: String, known: Vec<String> },
    #[error("unknown check `{name}` (checks: {})", known.join(", "))]
    UnknownCheck { name: String, known: Vec<String> },
    #[error(
        "none of the recipe's platforms is this host's ({host}): nothing to test without emulation"
    )]
    NoHostPlatform { host: crate::image::Platform },
}

/// The tests named in `names`, in recipe order (all of them when `names` is empty); an unknown
/// name is an error that lists the known ones.
pub fn select_tests<'a>(
    tests: &'a [TestSpec],
    names: &[String],
) -> Result<Vec<&'a TestSpec>, RunError> {
    for n in names {
        if !tests.iter().any(|t| &t.name == n) {
            return Err(RunError::UnknownTest {
                name: n.clone(),
                known: tests.iter().map(|t| t.name.clone()).collect(),
            });
        }
    }
    Ok(tests
        .iter()
        .filter(|t| names.is_empty() || names.contains(&t.name))
        .collect())
}

/// Whether podman can take `path` in `oci:PATH:TAG`: it derives an image name from the path, so
/// each component must be a valid reference path component (lowercase letters and digits, single
/// separators `.`, `_`, `__` or dashes between them; no leading dot).
pub fn podman_safe_path(path: &Path) -> bool {
    if !path.is_absolute() || path.as_os_str().len() > 200 {
        return false;
    }
    path.components().all(|c| match c {
        Component::RootDir => true,
        Component::Normal(s) => s
            .to_str()
            .is_some_and(crate::registry::reference::component_ok),
        _ => false,
    })
}

/// A copy of the layout at a podman-safe path, removed when dropped.
struct StagedLayout {
    path: PathBuf,
    cleanup: Option<PathBuf>,
}

impl Drop for StagedLayout {
    fn drop(&mut self) {
        if let Some(dir) = &self.cleanup {
            let _ = fs_err::remove_dir_all(dir);
        }
    }
}

fn stage_layout(layout: &Path) -> Result<StagedLayout, RunError> {
    let abs = fs_err::canonicalize(layout).map_err(|e| RunError::Layout {
        layout: layout.to_path_buf(),
        detail: e.to_string(),
    })?;
    if podman_safe_path(&abs) {
        return Ok(StagedLayout {
            path: abs,
            cleanup: None,
        });
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let name = format!("ocibuild-run-{}-{nanos:x}", std::process::id());
    let base = [
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
    ]
    .into_iter()
    .find(|b| podman_safe_path(b) && b.is_dir())
    .unwrap_or_else(|| PathBuf::from("/tmp"));
    let dir = base.join(name);
    let dest = dir.join("layout");
    let staged = StagedLayout {
        path: dest.clone(),
        cleanup: Some(dir),
    };
    copy_tree(&abs, &dest).map_err(|e| RunError::Stage {
        from: abs.clone(),
        to: dest.clone(),
        source: e,
    })?;
    Ok(staged)
}

/// Copies a directory tree, hard-linking files where it can (blobs are immutable).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs_err::create_dir_all(to)?;
    for entry in fs_err::read_dir(from)? {
        let entry = entry?;
        let ty = entry.file_type()?;
        let dst = to.join(entry.file_name());
        if ty.is_dir() {
            copy_tree(&entry.path(), &dst)?;
        } else if ty.is_symlink() {
            let target = fs_err::read_link(entry.path())?;
            fs_err::os::unix::fs::symlink(target, &dst)?;
        } else if fs_err::hard_link(entry.path(), &dst).is_err() {
            fs_err::copy(entry.path(), &dst)?;
        }
    }
    Ok(())
}

/// Runs the tests in order against the image `tag` of the OCI layout, reporting each podman
/// command as it starts and each result as it is known. Errors are for what stops the whole stage (podman missing, bad layout, unknown
/// tag); a test that cannot run is a failed (or skipped) result.
pub fn run_tests(
    layout: &Path,
    tag: &str,
    tests: &[TestSpec],
    opts: &RunOptions,
    reporter: &dyn Fn(TestEvent<'_>),
) -> Result<Vec<TestResult>, RunError> {
    let podman = podman::find_executable(&opts.podman, std::env::var_os("PATH"))?;
    let info = image_info(layout, tag)?;
    let staged = stage_layout(layout)?;
    let image_ref = format!("oci:{}:{tag}", staged.path.display());
    let (global, user_run) = split_global_args(&opts.podman_args);
    // podman copies the layout into its storage: that copy goes once no run needs its layers.
    let janitor = janitor::Janitor::new(&podman, &global);
    let running = janitor.running();
    janitor.record(&running, &janitor::layout_image_names(&staged.path, tag));
    let gpu: OnceCell<GpuAccess> = OnceCell::new();
    let glibc: OnceCell<Result<bool, String>> = OnceCell::new();
    let self_exe: OnceCell<Result<PathBuf, String>> = OnceCell::new();

    let mut results = Vec::with_capacity(tests.len());
    let mut run_all = || -> Result<(), RunError> {
        for t in tests {
            let ctx = TestContext {
                podman: &podman,
                global: &global,
                user_run: &user_run,
                image_ref: &image_ref,
                info: &info,
                opts,
                reporter,
            };
            let result = run_one(
                t,
                &ctx,
                || gpu.get_or_init(|| discover_gpu_for(&HostProbe::system(), &opts.host_libraries)),
                || {
                    glibc.get_or_init(|| {
                        image_has_glibc(layout, tag).map_err(|e| crate::diag::chain(&e))
                    })
                },
                || {
                    self_exe.get_or_init(|| {
                        fs_err::canonicalize(&opts.self_exe).map_err(|e| {
                            RunError::SelfExe {
                                path: opts.self_exe.clone(),
                                source: e,
                            }
                            .to_string()
                        })
                    })
                },
            )?;
            reporter(TestEvent::Finished(&result));
            results.push(result);
        }
        Ok(())
    };
    let ran = run_all();
    // podman named its copy after the (staged) layout's path: removed once no run needs its
    // layers, so such names (`localhost/tmp/…`, one per layout) do not pile up.
    janitor.release(running);
    drop(staged);
    ran.map(|()| results)
}

struct TestContext<'a> {
    podman: &'a Path,
    global: &'a [String],
    user_run: &'a [String],
    image_ref: &'a str,
    info: &'a ImageInfo,
    opts: &'a RunOptions,
    reporter: &'a dyn Fn(TestEvent<'_>),
}

impl TestContext<'_> {
    fn report_command(&self, test: &str, inv: &podman::Invocation) {
        let line = command_line(&inv.podman, &inv.argv());
        (self.reporter)(TestEvent::Command { test, line: &line });
    }
}

fn run_one<'g>(
    t: &TestSpec,
    ctx: &TestContext<'_>,
    gpu: impl FnOnce() -> &'g GpuAccess,
    glibc: impl FnOnce() -> &'g Result<bool, String>,
    self_exe: impl FnOnce() -> &'g Result<PathBuf, String>,
) -> Result<TestResult, RunError> {
    let failed = |reason: String| Ok(TestResult::new(&t.name, Outcome::Failed { reason }));
    let is_smoke = t.run == TestCommand::CudaSmoke;

    // Preconditions that need no container.
    let mut self_path = None;
    if is_smoke {
        match glibc() {
            Ok(true) => {}
            Ok(false) => {
                return failed(format!(
                    "cuda-smoke needs glibc in the image (the check is the ocibuild binary, \
                     dynamically linked); this {} image has no dynamic loader ({})",
                    ctx.info.architecture,
                    glibc_loader(&ctx.info.architecture).unwrap_or("unknown for this architecture")
                ))
            }
            Err(e) => return failed(format!("cannot inspect the image for glibc: {e}")),
        }
        match self_exe() {
            Ok(p) => self_path = Some(p.clone()),
            Err(e) => return failed(e.clone()),
        }
    }
    let mut gpu_flags: Vec<String> = Vec::new();
    if t.gpu != GpuPolicy::Off {
        let access = gpu();
        if let GpuAccess::None { why } = access {
            if !ctx.opts.force_gpu {
                return Ok(match t.gpu {
                    GpuPolicy::Optional => TestResult::new(
                        &t.name,
                        Outcome::Skipped {
                            reason: "no GPU".into(),
                        },
                    ),
                    _ => TestResult::new(
                        &t.name,
                        Outcome::Failed {
                            reason: format!("no NVIDIA GPU/driver found: {why}"),
                        },
                    ),
                });
            }
        }
        gpu_flags = access.podman_flags();
        if let Some(dir) = access.library_dir() {
            if !t.env.contains_key("LD_LIBRARY_PATH") {
                let mut v = dir.display().to_string();
                if let Some(old) = ctx
                    .info
                    .env_var("LD_LIBRARY_PATH")
                    .filter(|s| !s.is_empty())
                {
                    v.push(':');
                    v.push_str(old);
                }
                gpu_flags.push("-e".into());
                gpu_flags.push(format!("LD_LIBRARY_PATH={v}"));
            }
        }
    }

    let name = podman::container_name();
    let mut run_args: Vec<String> = vec![
        "--rm".into(),
        "--quiet".into(),
        "--name".into(),
        name.clone(),
    ];
    // No network unless the test asks for one (podman's default then), or the podman flags
    // (the recipe's, the command line's) name one.
    if !t.network && !args::names_network(ctx.user_run) {
        run_args.push("--network=none".into());
    }
    run_args.extend(podman::ulimit_flags(ctx.user_run));
    run_args.extend(ctx.user_run.iter().cloned());
    run_args.extend(gpu_flags);
    for (k, v) in &t.env {
        run_args.push("-e".into());
        run_args.push(format!("{k}={v}"));
    }
    if let Some(w) = &t.workdir {
        run_args.push("-w".into());
        run_args.push(w.clone());
    }
    if let Some(u) = &t.user {
        run_args.push("-u".into());
        run_args.push(u.clone());
    }
    let args = match (&t.run, self_path) {
        (TestCommand::CudaSmoke, Some(p)) => {
            run_args.push("-v".into());
            run_args.push(format!("{}:{SELF_MOUNT}:ro", p.display()));
            run_args.push(format!("--entrypoint={SELF_MOUNT}"));
            vec![SMOKE_SUBCOMMAND.to_string()]
        }
        (TestCommand::Argv(argv), _) if !argv.is_empty() => {
            // JSON form: podman takes `--entrypoint=[...]` as an exec array, so spaces are safe.
            let ep = serde_json::to_string(&argv[..1]).unwrap_or_default();
            run_args.push(format!("--entrypoint={ep}"));
            argv[1..].to_vec()
        }
        _ => Vec::new(),
    };
    let inv = podman::Invocation {
        podman: ctx.podman.to_path_buf(),
        global: ctx.global.to_vec(),
        run_args,
        image: ctx.image_ref.to_string(),
        args,
        name,
        timeout: t.timeout,
        expect_output: t.expect_output.clone(),
    };
    ctx.report_command(&t.name, &inv);
    let mut out = podman::execute(&inv)?;
    let ours = podman::ulimit_flags(ctx.user_run);
    if !ours.is_empty() && podman::rlimit_refused(out.exit_code, &out.tail) {
        // Some sandboxes refuse even this process's own limits inside the container's user
        // namespace: once more with small ones, which they allow.
        let name = podman::container_name();
        let run_args = inv
            .run_args
            .iter()
            .map(|a| match (a.as_str(), ours.contains(a)) {
                (_, true) if a.starts_with("--ulimit=nofile=") => podman::SMALL_NOFILE.to_string(),
                (_, true) => podman::SMALL_NPROC.to_string(),
                ("--name", _) | (_, false) => a.clone(),
            })
            .collect::<Vec<_>>();
        let run_args = rename(run_args, &inv.name, &name);
        let again = podman::Invocation {
            run_args,
            name,
            ..inv
        };
        ctx.report_command(&t.name, &again);
        out = podman::execute(&again)?;
    }
    Ok(judge(t, out))
}

/// `run_args` with the container name `old` replaced by `new`.
fn rename(mut run_args: Vec<String>, old: &str, new: &str) -> Vec<String> {
    for a in run_args.iter_mut().filter(|a| a.as_str() == old) {
        *a = new.to_string();
    }
    run_args
}

fn last_line(tail: &[String]) -> &str {
    tail.iter()
        .rev()
        .map(|s| s.trim())
        .find(|s| !s.is_empty())
        .unwrap_or("")
}

fn judge(t: &TestSpec, out: podman::RunOutcome) -> TestResult {
    let last = last_line(&out.tail);
    let hint = podman::rlimit_refused(out.exit_code, &out.tail)
        .then(|| podman::rlimit_hint(&out.tail))
        .flatten();
    let with_last = |s: String| {
        let s = if last.is_empty() {
            s
        } else {
            format!("{s}: {last}")
        };
        match hint {
            Some(h) => format!("{s}; {h}"),
            None => s,
        }
    };
    let outcome = if out.timed_out {
        Outcome::Failed {
            reason: format!("timed out after {:?}; the container was killed", t.timeout),
        }
    } else {
        match out.exit_code {
            None => Outcome::Failed {
                reason: with_last(format!(
                    "podman was killed by signal {}",
                    out.signal.map_or("?".to_string(), |s| s.to_string())
                )),
            },
            Some(c) if c != t.exit_code => Outcome::Failed {
                reason: match podman::exit_reason(Some(c), &out.tail, "image") {
                    // podman's own line is the text: the last line would repeat it.
                    Some((s, true)) => match hint {
                        Some(h) => format!("{s}; {h}"),
                        None => s,
                    },
                    Some((s, false)) => with_last(s),
                    None => with_last(format!("exit code {c}, expected {}", t.exit_code)),
                },
            },
            Some(_) if !out.matched => Outcome::Failed {
                reason: format!(
                    "the output did not contain {:?}",
                    t.expect_output.as_deref().unwrap_or_default()
                ),
            },
            Some(_) => Outcome::Passed,
        }
    };
    TestResult {
        name: t.name.clone(),
        outcome,
        exit_code: out.exit_code,
        duration: out.duration,
        output_tail: out.tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn podman_safe_paths() {
        assert!(podman_safe_path(Path::new("/tmp/exp/lay")));
        assert!(podman_safe_path(Path::new("/work/wt-run/target/x_y.z__w")));
        assert!(!podman_safe_path(Path::new("/tmp/.dot/lay")));
        assert!(!podman_safe_path(Path::new("/tmp/My/lay")));
        assert!(!podman_safe_path(Path::new("/tmp/a b")));
        assert!(!podman_safe_path(Path::new("/tmp/a..b")));
        assert!(!podman_safe_path(Path::new("/tmp/a-")));
        assert!(!podman_safe_path(Path::new("rel/path")));
    }

    #[test]
    fn unknown_test_and_check_names_are_clear_errors() {
        let spec = |n: &str| TestSpec {
            name: n.into(),
            run: TestCommand::Argv(vec!["true".into()]),
            env: BTreeMap::new(),
            workdir: None,
            user: None,
            exit_code: 0,
            expect_output: None,
            timeout: Duration::from_secs(1),
            gpu: GpuPolicy::Off,
            network: false,
        };
        let tests = vec![spec("a"), spec("b")];
        assert_eq!(select_tests(&tests, &[]).unwrap().len(), 2);
        assert_eq!(select_tests(&tests, &["b".into()]).unwrap()[0].name, "b");
        let e = select_tests(&tests, &["c".into()]).unwrap_err().to_string();
        assert_eq!(e, "unknown test `c` (tests: a, b)");
        let e = TestCommand::check("cuda-smok").unwrap_err().to_string();
        assert_eq!(e, "unknown check `cuda-smok` (checks: cuda-smoke)");
        assert_eq!(
            TestCommand::check("cuda-smoke").unwrap(),
            TestCommand::CudaSmoke
        );
    }

    #[test]
    fn result_json_shape() {
        let r = TestResult {
            name: "t".into(),
            outcome: Outcome::Failed {
                reason: "exit code 1, expected 0".into(),
            },
            exit_code: Some(1),
            duration: Duration::from_millis(1500),
            output_tail: vec!["x".into()],
        };
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(
            j,
            serde_json::json!({"name": "t", "status": "failed", "reason": "exit code 1, expected 0",
                "exitCode": 1, "durationSecs": 1.5, "outputTail": ["x"]})
        );
        let s = Summary::of(&[
            r.clone(),
            TestResult::new(
                "s",
                Outcome::Skipped {
                    reason: "no GPU".into(),
                },
            ),
        ]);
        assert_eq!(s.to_string(), "0 passed, 1 failed, 1 skipped");
        assert!(s.any_failed());
    }
}
