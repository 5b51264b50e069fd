//! `ocibuild diff A B`: what differs between two images, down to files.

use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::audit::{self, render, DiffOptions, OpenOptions, Outcome};
use crate::image::Platform;
use crate::imageref::{ImageRef, Role};
use crate::registry::Client;

pub(super) const AFTER_HELP: &str = "\
Images: DIR or oci:DIR[:TAG] (an OCI layout; TAG may be left out when it holds one image),
oci-archive:FILE, docker-archive:FILE, docker://REGISTRY/REPO[:TAG|@DIGEST].

Exit status: 0 identical (with --semantic: or equivalent), 1 different, 2 error.

Examples:
  ocibuild diff app.oci oci:/srv/released.oci:1.0
  ocibuild diff --semantic oci-archive:ci.tar docker-archive:local.tar
  ocibuild diff --json app.oci docker://registry.example/team/app:1.0 | jq '.layers[].files'
  ocibuild diff multi.oci docker://registry.example/team/app:1.0   (two indexes: per platform)

Output (one line per difference):
  config Env[GREETING]: hello → hi
  layer 1 (app): ~ srv/app/main.py: content sha256:2cf24dba5fb0… → sha256:486ea46224d1…, mode 0644 → 0755
  layer 1 (app): + srv/app/new.txt (file, 4 B, mode 0644)
  result: different";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(super) struct DiffArgs {
    /// The first image (a).
    pub a: String,
    /// The second image (b).
    pub b: String,
    /// Ignore timestamps (file mtimes, `created` fields), tar header encoding and entry order:
    /// images differing only in those are reported `equivalent` (exit 0).
    #[arg(long)]
    pub semantic: bool,
    /// Print the report as JSON (schema `ocibuild-diff/2`, see docs/commands.md).
    #[arg(long)]
    pub json: bool,
    /// The platform to pick from an image index: os/arch[/variant]. Default: when both images
    /// are indexes, every platform of either (one report each); otherwise this host's.
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
}

/// Parse `--platform`, or the host's platform.
pub(super) fn platform(value: Option<&str>) -> anyhow::Result<Platform> {
    Ok(match value {
        Some(v) => Platform::parse(v).map_err(|problem| audit::AuditError::Platform {
            value: v.to_string(),
            problem,
        })?,
        None => Platform::host(),
    })
}

/// A registry client when one of `specs` is `docker://`.
pub(super) fn client_for(cli: &Cli, specs: &[&ImageRef]) -> anyhow::Result<Option<Client>> {
    if specs.iter().any(|s| matches!(s, ImageRef::Registry(_))) {
        Ok(Some(super::push::client(cli)?))
    } else {
        Ok(None)
    }
}

/// Errors exit with 2, so that 1 means "different" only.
pub(super) fn exit_on_error(result: anyhow::Result<ExitCode>) -> anyhow::Result<ExitCode> {
    match result {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("error: {}", super::message(&e));
            Ok(ExitCode::from(2))
        }
    }
}

pub(super) fn run(cli: &Cli, args: &DiffArgs) -> anyhow::Result<ExitCode> {
    exit_on_error(diff(cli, args))
}

fn diff(cli: &Cli, args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let a = ImageRef::parse(&args.a, Role::Source { digest: false })?;
    let b = ImageRef::parse(&args.b, Role::Source { digest: false })?;
    let client = client_for(cli, &[&a, &b])?;
    let bars = cli.bars(args.json);
    let opts = OpenOptions {
        client: client.as_ref(),
        platform: None,
        reporter: &bars,
    };
    // Two image indexes and no --platform: every platform of either, compared in turn.
    if args.platform.is_none() {
        if let (Some(pa), Some(pb)) = (
            audit::source::index_platforms(&a, opts)?,
            audit::source::index_platforms(&b, opts)?,
        ) {
            let sides = [
                IndexSide {
                    spec: &a,
                    platforms: pa,
                },
                IndexSide {
                    spec: &b,
                    platforms: pb,
                },
            ];
            return diff_indexes(args, sides, opts);
        }
    }
    let platform = platform(args.platform.as_deref())?;
    let report = diff_one(args, &a, &b, &platform, opts)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render::diff_text(&report));
    }
    Ok(exit_code(report.result))
}

fn exit_code(result: Outcome) -> ExitCode {
    match result {
        Outcome::Identical | Outcome::Equivalent => ExitCode::SUCCESS,
        Outcome::Different => ExitCode::from(1),
    }
}

fn diff_one(
    args: &DiffArgs,
    a: &ImageRef,
    b: &ImageRef,
    platform: &Platform,
    opts: OpenOptions<'_>,
) -> anyhow::Result<audit::DiffReport> {
    let opts = OpenOptions {
        platform: Some(platform),
        ..opts
    };
    let ia = audit::open(a, opts)?;
    let ib = audit::open(b, opts)?;
    let mut report = audit::diff(
        &ia,
        &ib,
        DiffOptions {
            semantic: args.semantic,
        },
    )?;
    // The package summary, first in the report: only when some layer differs (the same
    // layers install the same packages).
    if report.layers.iter().any(|l| {
        !matches!(
            l.status,
            audit::diff::LayerStatus::Identical
                | audit::diff::LayerStatus::SameContent
                | audit::diff::LayerStatus::Equivalent
        )
    }) {
        report.packages = crate::report::against::package_diff(&ia, &ib)?;
    }
    Ok(report)
}

/// One side of an index comparison: the image and the platforms its index lists.
struct IndexSide<'a> {
    spec: &'a ImageRef,
    platforms: Vec<Platform>,
}

/// Two image indexes: each platform either has compared (a platform only one has makes them
/// different), one report per platform.
fn diff_indexes(
    args: &DiffArgs,
    [a, b]: [IndexSide<'_>; 2],
    opts: OpenOptions<'_>,
) -> anyhow::Result<ExitCode> {
    let (pa, pb) = (a.platforms, b.platforms);
    let (a, b) = (a.spec, b.spec);
    let mut all: Vec<Platform> = pa.clone();
    all.extend(pb.iter().filter(|p| !pa.contains(p)).cloned());
    let mut result = Outcome::Identical;
    let mut entries = Vec::new();
    let mut text = String::new();
    for p in &all {
        let only = match (pa.contains(p), pb.contains(p)) {
            (true, false) => Some("a"),
            (false, true) => Some("b"),
            _ => None,
        };
        if let Some(side) = only {
            result = Outcome::Different;
            text.push_str(&format!("platform {p}: only in {side}\n"));
            entries.push(serde_json::json!({"platform": p.to_string(), "onlyIn": side}));
            continue;
        }
        let report = diff_one(args, a, b, p, opts)?;
        result = match (result, report.result) {
            (Outcome::Different, _) | (_, Outcome::Different) => Outcome::Different,
            (Outcome::Equivalent, _) | (_, Outcome::Equivalent) => Outcome::Equivalent,
            _ => Outcome::Identical,
        };
        text.push_str(&format!("platform {p}:\n"));
        for line in render::diff_text(&report).lines() {
            text.push_str(&format!("  {line}\n"));
        }
        entries.push(serde_json::json!({"platform": p.to_string(), "report": report}));
    }
    if args.json {
        let doc = serde_json::json!({
            "schema": "ocibuild-diff-index/1",
            "semantic": args.semantic,
            "result": result,
            "a": a.to_string(),
            "b": b.to_string(),
            "platforms": entries,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{text}");
        let word = match result {
            Outcome::Identical => "identical",
            Outcome::Equivalent => "equivalent",
            Outcome::Different => "different",
        };
        println!("result: {word} ({} platforms)", all.len());
    }
    Ok(exit_code(result))
}
