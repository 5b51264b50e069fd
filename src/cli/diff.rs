//! `ocibuild diff A B`: what differs between two images, down to files.

use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::audit::{self, render, DiffOptions, OpenOptions, Outcome, Spec};
use crate::image::Platform;
use crate::registry::Client;

pub const AFTER_HELP: &str = "\
Images: DIR or oci:DIR[:TAG] (an OCI layout; TAG may be left out when it holds one image),
oci-archive:FILE, docker-archive:FILE, docker://REGISTRY/REPO[:TAG|@DIGEST].

Exit status: 0 identical (with --semantic: or equivalent), 1 different, 2 error.

Examples:
  ocibuild diff app.oci oci:/srv/released.oci:1.0
  ocibuild diff --semantic oci-archive:ci.tar docker-archive:local.tar
  ocibuild diff --json app.oci docker://registry.example/team/app:1.0 | jq '.layers[].files'

Output (one line per difference):
  config Env[GREETING]: hello → hi
  layer 1 (app): ~ srv/app/main.py: content sha256:2cf24dba5fb0… → sha256:486ea46224d1…, mode 0644 → 0755
  layer 1 (app): + srv/app/new.txt (file, 4 bytes, mode 0644)
  result: different";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct DiffArgs {
    /// The first image (a).
    pub a: String,
    /// The second image (b).
    pub b: String,
    /// Ignore timestamps (file mtimes, `created` fields), tar header encoding and entry order:
    /// images differing only in those are reported `equivalent` (exit 0).
    #[arg(long)]
    pub semantic: bool,
    /// Print the report as JSON (schema `ocibuild-diff/1`, see README.md).
    #[arg(long)]
    pub json: bool,
    /// The platform to pick from an image index: os/arch[/variant] (default: this host's).
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
}

/// Parse `--platform`, or the host's platform.
pub fn platform(value: Option<&str>) -> anyhow::Result<Platform> {
    Ok(match value {
        Some(v) => Platform::parse(v).map_err(|problem| audit::AuditError::Platform {
            value: v.to_string(),
            problem,
        })?,
        None => Platform::host(),
    })
}

/// A registry client when one of `specs` is `docker://`.
pub fn client_for(cli: &Cli, specs: &[&Spec]) -> anyhow::Result<Option<Client>> {
    if specs.iter().any(|s| matches!(s, Spec::Registry(_))) {
        Ok(Some(super::push::client(cli)?))
    } else {
        Ok(None)
    }
}

/// Errors exit with 2, so that 1 means "different" only.
pub fn exit_on_error(result: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    match result {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("error: {}", super::message(&e));
            Ok(ExitCode::from(2))
        }
    }
}

pub fn run(cli: &Cli, args: &DiffArgs) -> anyhow::Result<ExitCode> {
    exit_on_error(diff(cli, args))
}

fn diff(cli: &Cli, args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let a = Spec::parse(&args.a, false)?;
    let b = Spec::parse(&args.b, false)?;
    let platform = platform(args.platform.as_deref())?;
    let client = client_for(cli, &[&a, &b])?;
    let bars = cli.bars(args.json);
    let opts = OpenOptions {
        client: client.as_ref(),
        platform: Some(&platform),
        reporter: &bars,
    };
    let ia = audit::open(&a, opts)?;
    let ib = audit::open(&b, opts)?;
    let report = audit::diff(
        &ia,
        &ib,
        DiffOptions {
            semantic: args.semantic,
        },
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render::diff_text(&report));
    }
    Ok(match report.result {
        Outcome::Identical | Outcome::Equivalent => ExitCode::SUCCESS,
        Outcome::Different => ExitCode::from(1),
    })
}
