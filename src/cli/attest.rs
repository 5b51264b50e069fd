//! `ocibuild sbom RECIPE` and `ocibuild provenance RECIPE`: the documents of a built image,
//! made from its lock; and `build --attach`: the same documents attached to the image.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::Cli;
use crate::audit::attest::{LoadedInputs, Subject};
use crate::audit::{provenance, sbom};

use crate::imageref::{ImageRef, Role};
use crate::recipe;

pub(super) const SBOM_AFTER_HELP: &str = "\
The SBOM is made from NAME.lock and the built image's manifest, not from a scan: the base image
(by manifest digest), every .deb, the interpreter archive and every wheel the lock pins, each
with its sha256, its download URL and the digest of the layer that holds it. The same image and
lock always give the same bytes. The image must have been built from this recipe and lock (its
dev.ocibuild.recipe.digest / dev.ocibuild.lock.digest annotations are checked).

Examples:
  ocibuild sbom app.toml > app.spdx.json
  ocibuild sbom app.toml --format cyclonedx -o app.cdx.json
  ocibuild sbom app.toml --image oci:release.oci:1.0
  ocibuild sbom multi.toml --platform linux/arm64   (one platform of [image] platforms)";

pub(super) const PROVENANCE_AFTER_HELP: &str = "\
An in-toto Statement v1 with a SLSA Provenance v1 predicate: the image (name, manifest sha256)
as subject; the recipe and lock (file name, sha256) as external parameters; every locked input
as a resolved dependency; the determinism contract and compressor; ocibuild and its version as
the builder. No timestamp: the same image and lock always give the same bytes.

Examples:
  ocibuild provenance app.toml -o app.intoto.json
  ocibuild provenance app.toml --image oci:release.oci:1.0
  ocibuild provenance multi.toml --platform linux/arm64";

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(super) enum SbomFormat {
    /// SPDX 2.3 JSON (application/spdx+json).
    Spdx,
    /// CycloneDX 1.6 JSON (application/vnd.cyclonedx+json).
    Cyclonedx,
}

#[derive(Args, Debug)]
pub(super) struct DocArgs {
    /// The recipe (TOML); its lock (NAME.lock) lists the inputs.
    pub recipe: PathBuf,
    /// The built image: DIR or oci:DIR[:TAG] (default: oci:./<recipe name>.oci:<recipe tag>).
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// Write the document to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// For a multi-platform recipe ([image] platforms): the platform whose image the document
    /// describes (its manifest in the image index, its section of the lock). Required there.
    #[arg(long, value_name = "OS/ARCH[/VARIANT]")]
    pub platform: Option<String>,
    /// The `--build-arg`s the image was built with (its recipe digest covers them).
    #[command(flatten)]
    pub recipe_args: super::recipe_args::RecipeArgs,
}

#[derive(Args, Debug)]
#[command(after_help = SBOM_AFTER_HELP)]
pub(super) struct SbomArgs {
    #[command(flatten)]
    pub doc: DocArgs,
    /// The SBOM format.
    #[arg(long, value_enum, default_value = "spdx")]
    pub format: SbomFormat,
}

#[derive(Args, Debug)]
#[command(after_help = PROVENANCE_AFTER_HELP)]
pub(super) struct ProvenanceArgs {
    #[command(flatten)]
    pub doc: DocArgs,
}

/// The built image for `args` (a layout), checked against the recipe and lock on disk.
fn open(args: &DocArgs) -> anyhow::Result<(Subject, LoadedInputs)> {
    let whole = args.recipe_args.load(&args.recipe)?;
    let recipe = match (&args.platform, whole.is_multi_platform()) {
        (Some(p), true) => {
            let p = super::diff::platform(Some(p))?;
            if !whole.platforms().contains(&p) {
                anyhow::bail!(
                    "--platform {p}: the recipe does not build it (its platforms: {})",
                    platform_list(&whole)
                );
            }
            whole.for_platform(&p)?
        }
        (None, true) => anyhow::bail!(
            "{} builds several platforms ({}): name the one to describe with --platform",
            args.recipe.display(),
            platform_list(&whole)
        ),
        // A one-platform recipe built with `build --platform`.
        (Some(p), false) => whole.for_platform(&super::diff::platform(Some(p))?)?,
        (None, false) => whole,
    };
    let (dir, tag) = match &args.image {
        None => (
            super::default_output(&args.recipe),
            recipe.image.tag.clone(),
        ),
        Some(s) => match ImageRef::parse(s, Role::Source { digest: false })? {
            ImageRef::Layout { dir, tag } => (dir, tag.unwrap_or_else(|| recipe.image.tag.clone())),
            other => anyhow::bail!(
                "--image {other}: only an OCI layout (DIR or oci:DIR[:TAG]) is supported here"
            ),
        },
    };
    let label = format!("oci:{}:{tag}", dir.display());
    let layout = crate::output::Layout::open(&dir).with_context(|| {
        format!(
            "no OCI layout at {}: build it first (`ocibuild build {}`)",
            dir.display(),
            args.recipe.display()
        )
    })?;
    let bytes = if recipe.is_multi_platform() {
        let (entry, _) = layout.manifest(&tag, &recipe.image.platform)?;
        layout.read_blob(&entry.digest)?
    } else {
        layout.read_blob(&layout.entry(&tag)?.digest)?
    };
    let subject = Subject::new(&recipe.image.name, &tag, &bytes)?;
    let inputs = LoadedInputs::load(&args.recipe, &recipe)?;
    inputs.inputs().check(&label, &subject)?;
    Ok((subject, inputs))
}

fn platform_list(recipe: &recipe::Recipe) -> String {
    let names: Vec<String> = recipe
        .platforms()
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    names.join(", ")
}

fn emit(output: Option<&Path>, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(p) = output {
        crate::output::write_document(p, bytes)?;
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        out.flush()?;
    }
    Ok(())
}

pub(super) fn run_sbom(cli: &Cli, args: &SbomArgs) -> anyhow::Result<ExitCode> {
    let (subject, inputs) = open(&args.doc)?;
    // The declared licences: from the lock's .debs and wheels, fetched (verified) into the
    // store when it lacks them, so that the document does not depend on the store's contents;
    // read once, then cached.
    let store = cli.store()?;
    if let Some(lock) = &inputs.lock {
        let recipe = args.doc.recipe_args.load(&args.doc.recipe)?;
        let fetcher = crate::session::fetcher(&recipe, false)?;
        let needed = |d: &crate::digest::Digest| !crate::audit::license::is_known(&store, d);
        crate::airgap::fetch_packages(lock, &store, &fetcher, &needed)
            .context("fetching the lock's packages (the SBOM reads their licences)")?;
    }
    let inputs = inputs.with_licenses(&store)?;
    let format = match args.format {
        SbomFormat::Spdx => sbom::Format::Spdx,
        SbomFormat::Cyclonedx => sbom::Format::CycloneDx,
    };
    emit(
        args.doc.output.as_deref(),
        &sbom::generate(format, &subject, &inputs.inputs())?,
    )?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_provenance(_cli: &Cli, args: &ProvenanceArgs) -> anyhow::Result<ExitCode> {
    let (subject, inputs) = open(&args.doc)?;
    emit(
        args.doc.output.as_deref(),
        &provenance::statement(&subject, &inputs.inputs())?,
    )?;
    Ok(ExitCode::SUCCESS)
}
