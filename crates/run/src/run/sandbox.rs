//! A build step's container: podman runs the step's image from an OCI layout with no network
//! (unless the command line allowed it), a read-only root filesystem, a tmpfs `/tmp`, and one
//! writable directory per output, bind-mounted from the host, where the step's result is read
//! from afterwards. Nothing of the host is mounted but those empty directories, and a recipe
//! adds no podman flag: only the command line's (`OCIBUILD_PODMAN_ARGS`, `--podman-arg`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::janitor::{layout_image_names, Janitor, LayoutCopies};
use super::podman::{self, Invocation};
use super::{command_line, split_global_args, RunError};

/// One step's container.
pub struct SandboxRun<'a> {
    /// The step's name, for messages.
    pub step: &'a str,
    /// The OCI layout holding the step's image (builder and inputs), at a podman-safe path.
    pub layout: &'a Path,
    pub tag: &'a str,
    pub argv: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    pub workdir: Option<&'a str>,
    pub user: Option<&'a str>,
    /// Each output: the (empty) host directory and where the step sees it.
    pub outputs: &'a [(PathBuf, String)],
    /// Whether the container gets a network (the command line allowed the step's request).
    pub network: bool,
    pub timeout: Duration,
    /// `SOURCE_DATE_EPOCH` in the container.
    pub epoch: u64,
}

/// The podman to run and the flags the command line gave it.
#[derive(Clone, Debug, Default)]
pub struct SandboxOptions {
    pub podman: PathBuf,
    pub podman_args: Vec<String>,
    /// The copies podman makes of the steps' layouts, removed when the last clone of these
    /// options is dropped (the command's end) and no other run is in progress.
    pub copies: std::sync::Arc<LayoutCopies>,
}

/// How a step's container ended.
#[derive(Clone, Debug)]
pub struct SandboxOutcome {
    /// `None`: killed by a signal, or timed out.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration: Duration,
    /// The last lines of its output (stdout and stderr, interleaved).
    pub tail: Vec<String>,
}

/// Runs the step's container to its end; `report` gets the podman command line (credentials
/// masked) before it starts.
pub fn run_sandboxed(
    run: &SandboxRun<'_>,
    opts: &SandboxOptions,
    report: &dyn Fn(&str),
) -> Result<SandboxOutcome, RunError> {
    let podman = podman::find_executable(&opts.podman, std::env::var_os("PATH"))?;
    let (global, user_run) = split_global_args(&opts.podman_args);
    let name = podman::container_name();
    let mut run_args: Vec<String> = vec![
        "--rm".into(),
        "--quiet".into(),
        "--name".into(),
        name.clone(),
        "--read-only".into(),
        "--tmpfs".into(),
        "/tmp".into(),
        "-e".into(),
        format!("SOURCE_DATE_EPOCH={}", run.epoch),
    ];
    // No network unless allowed (then podman's default), or the command line's own flag.
    if !run.network && !super::args::names_network(&user_run) {
        run_args.push("--network=none".into());
    }
    run_args.extend(podman::ulimit_flags(&user_run));
    run_args.extend(user_run.iter().cloned());
    for (host, inside) in run.outputs {
        run_args.push("--mount".into());
        run_args.push(format!(
            "type=bind,src={},dst={inside},rw=true",
            host.display()
        ));
    }
    for (k, v) in run.env {
        run_args.push("-e".into());
        run_args.push(format!("{k}={v}"));
    }
    if let Some(w) = run.workdir {
        run_args.push("-w".into());
        run_args.push(w.to_string());
    }
    if let Some(u) = run.user {
        run_args.push("-u".into());
        run_args.push(u.to_string());
    }
    // JSON form: podman takes `--entrypoint=[...]` as an exec array, so spaces are safe.
    let entrypoint = serde_json::to_string(&run.argv[..1.min(run.argv.len())]).unwrap_or_default();
    run_args.push(format!("--entrypoint={entrypoint}"));
    let inv = Invocation {
        podman,
        global,
        run_args,
        image: format!("oci:{}:{}", run.layout.display(), run.tag),
        args: run.argv.iter().skip(1).cloned().collect(),
        name,
        timeout: run.timeout,
        expect_output: None,
    };
    report(&command_line(&inv.podman, &inv.argv()));
    // podman copies the layout into its storage: that copy goes once no run needs its layers
    // (after the command's last step, see `janitor`).
    let names = layout_image_names(run.layout, run.tag);
    let out = if opts.copies.record(&inv.podman, &inv.global, &names) {
        execute_retrying(&inv, &user_run, report)?
    } else {
        let janitor = Janitor::new(&inv.podman, &inv.global);
        let running = janitor.running();
        janitor.record(&running, &names);
        let result = execute_retrying(&inv, &user_run, report);
        janitor.release(running);
        result?
    };
    Ok(SandboxOutcome {
        exit_code: out.exit_code,
        timed_out: out.timed_out,
        duration: out.duration,
        tail: out.tail,
    })
}

/// Runs `inv`; once more with small limits when the sandbox refuses even this process's own.
fn execute_retrying(
    inv: &Invocation,
    user_run: &[String],
    report: &dyn Fn(&str),
) -> Result<podman::RunOutcome, RunError> {
    let mut out = podman::execute(inv)?;
    let ours = podman::ulimit_flags(user_run);
    if !ours.is_empty() && podman::rlimit_refused(out.exit_code, &out.tail) {
        // A sandbox that refuses even this process's own limits in the container's user
        // namespace: once more with small ones, as the test stage does.
        let name = podman::container_name();
        let run_args = inv
            .run_args
            .iter()
            .map(|a| match (a == &inv.name, ours.contains(a)) {
                (true, _) => name.clone(),
                (_, true) if a.starts_with("--ulimit=nofile=") => podman::SMALL_NOFILE.into(),
                (_, true) => podman::SMALL_NPROC.into(),
                _ => a.clone(),
            })
            .collect();
        let again = Invocation {
            run_args,
            name,
            ..inv.clone()
        };
        report(&command_line(&again.podman, &again.argv()));
        out = podman::execute(&again)?;
    }
    Ok(out)
}
