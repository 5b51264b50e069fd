//! `ocibuild verify RECIPE [--against IMAGE]`: rebuild from the lock in an empty store and check
//! the result is bit-identical to the image given.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::audit::{self, render, OpenOptions, Spec};
use crate::lock::LockPolicy;
use crate::recipe;
use crate::session::Session;
use crate::store::Store;

pub const AFTER_HELP: &str = "\
The rebuild uses a fresh, empty store in a temporary directory ($TMPDIR): no layer comes from
the cache, and the base image's blobs are fetched again (by the digests NAME.lock pins). It
writes no output. SOURCE_DATE_EPOCH applies as it does to `build`.

--against: DIR or oci:DIR[:TAG], oci-archive:FILE, docker-archive:FILE, docker://REF, or
sha256:DIGEST (a manifest digest: compared, not read). Default: oci:<recipe name>.oci:<tag>,
where `ocibuild build RECIPE` writes.

Exit status: 0 bit-identical, 1 different (what differs is listed, per layer and file), 2 error.

Examples:
  ocibuild verify app.toml
  ocibuild verify app.toml --against oci-archive:release/app.tar
  ocibuild verify app.toml --against docker://registry.example/team/app:1.0
  ocibuild verify app.toml --against sha256:a295b31b9414131493d31b2d0e5e57fbe8e280396d6b20fa8eb8f0a7505b7da4";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct VerifyArgs {
    /// The recipe (TOML); its lock (NAME.lock) pins the base.
    pub recipe: PathBuf,
    /// The image the rebuild must match (default: the recipe's default output layout).
    #[arg(long, value_name = "IMAGE")]
    pub against: Option<String>,
    /// Print the result as JSON (rebuilt and target digests, and the diff when they differ).
    #[arg(long)]
    pub json: bool,
}

pub fn run(cli: &Cli, args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    super::diff::exit_on_error(verify(cli, args))
}

fn verify(cli: &Cli, args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let recipe = recipe::load(&args.recipe)?;
    let target = match &args.against {
        Some(s) => Spec::parse(s, true)?,
        None => Spec::Layout {
            dir: super::default_output(&args.recipe),
            tag: Some(recipe.image.tag.clone()),
        },
    };
    let tmp = tempfile::Builder::new()
        .prefix("ocibuild-verify-")
        .tempdir()?;
    let store = Store::open(tmp.path())?;
    // The rebuild: the lock as it is (checked against the recipe), every layer built again.
    let bars = cli.bars(false);
    // The image compared against is left out of the layers, as `build` left its output out.
    let outputs = match &target {
        Spec::Layout { dir, .. } => vec![dir.clone()],
        Spec::OciArchive(p) | Spec::DockerArchive(p) => vec![p.clone()],
        Spec::Registry(_) | Spec::Digest(_) => Vec::new(),
    };
    let session = Session {
        policy: LockPolicy::Locked,
        no_cache: true,
        epoch_override: super::env_epoch()?,
        outputs,
        ..cli.session(&store, &bars)
    };
    let built = session.build(&args.recipe, &recipe)?;
    let platform = recipe.image.platform.clone();
    let client = super::diff::client_for(cli, &[&target])?;
    let opts = OpenOptions {
        client: client.as_ref(),
        platform: Some(&platform),
        reporter: &bars,
    };
    let report = audit::verify(&store, built.image.manifest.digest, &target, opts)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render::verify_text(&report));
    }
    Ok(if report.reproduced {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
