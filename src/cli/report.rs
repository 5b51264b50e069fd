//! `ocibuild report REF|RECIPE [--json] [-o report.html] [--key PUB]… [--verify]`: what an
//! image is made of, who signed what, and whether it rebuilds.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use fs_err as fs;

use super::Cli;
use crate::audit::{self, OpenOptions};
use crate::imageref::{ImageRef, Role};
use crate::lock::Lock;
use crate::report::{self, Report};

pub(super) const AFTER_HELP: &str = "\
Images: DIR or oci:DIR[:TAG], oci-archive:FILE, docker-archive:FILE,
docker://REGISTRY/REPO[:TAG|@DIGEST], or a recipe (FILE.toml: the image `build` wrote to its
default output; its lock gives the packages' source URLs and sha256s).

The report: the layer stack (sizes, origin: base, packages, system, interpreter, wheels,
paths, app), the guardrails (127 layers, the wheel layers' size bound), each layer's files by
Debian package, wheel or directory, wasted bytes and the efficiency score (computed as dive
computes them), identical content at different paths (which dive cannot see), and the
installed packages (licences as SPDX: Debian copyright files, wheels' METADATA); the
provenance attached and the signature and attestation grid of `verify-signature`, checked with
--key (without one: listed, not verified; an unsigned document is never verified); with
--verify, the rebuild `verify` makes, compared. An image index: one report per platform.

Examples:
  ocibuild report app.toml -o report.html
  ocibuild report oci:app.oci:1.0 --json | jq '.images[0].efficiency'
  ocibuild report docker-archive:app.tar -o app.html
  ocibuild report docker://registry.example/team/app:1.0 --key release.pub -o app.html
  ocibuild report app.toml --verify -o report.html
  ocibuild report oci:app.oci:2.0 --against oci:app.oci:1.0 -o changes.html";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(super) struct ReportArgs {
    /// The image, or a recipe (FILE.toml).
    pub image: String,
    /// Print the report as JSON (schema `ocibuild-report/1`, see docs/commands.md).
    #[arg(long)]
    pub json: bool,
    /// Write the report as one self-contained HTML page.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Compare with an earlier image (any form IMAGE takes): packages added, removed and
    /// changed, the files that changed (small text files as unified diffs), and what a pull
    /// of this image fetches when that one is already there.
    #[arg(long, value_name = "IMAGE")]
    pub against: Option<String>,
    /// The platform to report on in an image index: os/arch[/variant]. Default: every one.
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// A public key to verify the signature and signed attestations with (PEM, or a cosign
    /// key); repeatable. Without one, what is attached is listed, not verified.
    #[arg(long = "key", value_name = "PUB")]
    pub keys: Vec<PathBuf>,
    /// The repository a registry image's signature must name, when it is not the one
    /// reported on (a mirror's images are signed as the repository first pushed to).
    #[arg(long, value_name = "REGISTRY/REPO")]
    pub signed_identity: Option<String>,
    /// With a recipe: rebuild it from its lock in an empty store and compare with the image,
    /// as `ocibuild verify RECIPE` does (the result on the page and in the JSON).
    #[arg(long)]
    pub verify: bool,
    #[command(flatten)]
    pub recipe_args: super::recipe_args::RecipeArgs,
}

/// The image a recipe builds (its default output and tag), its lock, its wheel layer bound.
struct FromRecipe {
    recipe: crate::recipe::Recipe,
    image: ImageRef,
    lock: Option<Lock>,
    max_wheel_layer_size: Option<u64>,
    steps: Vec<String>,
}

fn from_recipe(args: &ReportArgs, path: &Path) -> anyhow::Result<FromRecipe> {
    let recipe = args.recipe_args.load(path)?;
    let lock = Lock::load(&Lock::path_for(path))?;
    let dir = super::default_output(path);
    if !dir.join("index.json").is_file() {
        anyhow::bail!(
            "no OCI layout at {}: build it first (`ocibuild build {}`)",
            dir.display(),
            path.display()
        );
    }
    Ok(FromRecipe {
        recipe: recipe.clone(),
        image: ImageRef::Layout {
            dir,
            tag: Some(recipe.image.tag.clone()),
        },
        lock,
        max_wheel_layer_size: recipe.python.as_ref().map(|p| p.max_layer_size),
        steps: recipe.steps.iter().map(|s| s.name.clone()).collect(),
    })
}

pub(super) fn run(cli: &Cli, args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let as_path = Path::new(&args.image);
    let recipe = if args.image.ends_with(".toml") && as_path.is_file() {
        Some(from_recipe(args, as_path)?)
    } else {
        None
    };
    let spec = match &recipe {
        Some(r) => r.image.clone(),
        None => ImageRef::parse(&args.image, Role::Source { digest: false })?,
    };
    if args.verify && recipe.is_none() {
        anyhow::bail!("--verify rebuilds a recipe: give a recipe (FILE.toml), not an image");
    }
    if let Some(s) = &args.signed_identity {
        if s.parse::<crate::registry::Reference>().is_err() {
            anyhow::bail!("--signed-identity {s}: not a registry/repository reference");
        }
    }
    let keys = args
        .keys
        .iter()
        .map(|k| crate::sign::PublicKey::load(k))
        .collect::<Result<Vec<_>, _>>()?;
    let store = cli.store()?;
    let licences = match recipe.as_ref().and_then(|r| r.lock.as_ref()) {
        Some(l) => Some(crate::audit::license::for_lock(&store, l)?),
        None => None,
    };
    let against = args
        .against
        .as_deref()
        .map(|a| ImageRef::parse(a, Role::Source { digest: false }))
        .transpose()?;
    let specs: Vec<&ImageRef> = std::iter::once(&spec).chain(against.as_ref()).collect();
    let client = super::diff::client_for(cli, &specs)?;
    let bars = cli.bars(args.json);
    let opts = OpenOptions {
        client: client.as_ref(),
        platform: None,
        reporter: &bars,
    };
    let platforms = match &args.platform {
        Some(p) => vec![super::diff::platform(Some(p))?],
        None => audit::source::index_platforms(&spec, opts)?.unwrap_or_default(),
    };
    let ropts = report::Options {
        max_wheel_layer_size: recipe.as_ref().and_then(|r| r.max_wheel_layer_size),
        lock: recipe.as_ref().and_then(|r| r.lock.as_ref()),
        steps: recipe
            .as_ref()
            .map(|r| r.steps.as_slice())
            .unwrap_or_default(),
        licences: licences.as_ref(),
    };
    let mut images = Vec::new();
    let mut compared = Vec::new();
    if platforms.is_empty() {
        let image = audit::open(&spec, opts)?;
        images.push(report::analyze(&image, &ropts)?);
        if let (Some(old), Some(new)) = (&against, images.last()) {
            compared.push(report::against::compare_with(old, &image, new, opts)?);
        }
    }
    for p in &platforms {
        let image = audit::open(
            &spec,
            OpenOptions {
                platform: Some(p),
                ..opts
            },
        )?;
        // A multi-platform recipe's lock: the platform's section.
        let view = ropts
            .lock
            .filter(|l| !l.platforms.is_empty())
            .map(|l| l.view(&p.to_string()));
        let ropts = report::Options {
            lock: view.as_ref().or(ropts.lock),
            ..ropts
        };
        images.push(report::analyze(&image, &ropts)?);
        if let (Some(old), Some(new)) = (&against, images.last()) {
            let o = OpenOptions {
                platform: Some(p),
                ..opts
            };
            compared.push(report::against::compare_with(old, &image, new, o)?);
        }
    }
    let mut missing = Vec::new();
    let trust = trust_of(
        &spec,
        client.as_ref(),
        &store,
        &TrustKeys {
            keys: &keys,
            signed_identity: args.signed_identity.as_deref(),
        },
        &images,
    )?;
    if trust.is_none() {
        missing.push(format!(
            "signatures and attestations: {spec} is an archive, which carries none"
        ));
    }
    let verify = match (&recipe, args.verify) {
        (Some(r), true) => Some(super::report_verify::rebuild(cli, as_path, &r.recipe)?),
        _ => None,
    };
    let report = Report {
        schema: report::SCHEMA,
        source: args.image.clone(),
        images,
        missing,
        against: args.against.as_ref().map(|a| report::Against {
            source: a.clone(),
            images: compared,
        }),
        trust,
        verify,
    };
    if let Some(out) = &args.output {
        let page = report::html::render(&report);
        fs::write(out, page).with_context(|| format!("writing the report {}", out.display()))?;
    }
    if args.json {
        let mut bytes = report::to_json(&report)?;
        bytes.push(b'\n');
        std::io::Write::write_all(&mut std::io::stdout().lock(), &bytes)?;
    } else if args.output.is_none() {
        print!("{}", summary(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// What the signatures are checked against: the keys, and the identity they must name.
struct TrustKeys<'a> {
    keys: &'a [crate::sign::PublicKey],
    signed_identity: Option<&'a str>,
}

/// The signatures, attestations and provenance of a registry image or a layout's (an archive
/// carries none).
fn trust_of(
    spec: &ImageRef,
    client: Option<&crate::registry::Client>,
    store: &crate::store::Store,
    with: &TrustKeys<'_>,
    images: &[report::ImageReport],
) -> anyhow::Result<Option<report::trust::Trust>> {
    let keys = with.keys;
    let manifests: Vec<(crate::digest::Digest, String)> = images
        .iter()
        .filter_map(|i| {
            let d = i.manifest.as_ref()?.parse().ok()?;
            Some((d, i.platform.clone()))
        })
        .collect();
    Ok(match (spec, client) {
        (ImageRef::Registry(r), Some(c)) => {
            let digests: Vec<_> = manifests.iter().map(|(d, _)| *d).collect();
            let check = report::trust::Check {
                keys,
                signed_identity: with.signed_identity,
            };
            Some(report::trust::of_registry(c, store, r, &check, &digests))
        }
        (ImageRef::Layout { dir, .. }, _) => {
            let layout = crate::output::Layout::open(dir)?;
            Some(report::trust::of_layout(&layout, keys, &manifests))
        }
        _ => None,
    })
}

/// A few lines: what the page would show first.
fn summary(report: &Report) -> String {
    let mut out = String::new();
    for i in &report.images {
        out.push_str(&format!(
            "{}: {} layers (of {}), {} bytes uncompressed, {} files, {} packages\n  \
             wasted {} bytes, efficiency {:.4} (as dive computes them); \
             identical content at different paths: {} bytes in {} sets\n",
            i.platform,
            i.totals.layers,
            i.guardrails.max_layers,
            i.totals.uncompressed,
            i.totals.files,
            i.packages.len(),
            i.efficiency.wasted_bytes,
            i.efficiency.score,
            i.duplicates.extra_bytes,
            i.duplicates.sets,
        ));
        for m in &i.missing {
            out.push_str(&format!("  missing: {m}\n"));
        }
    }
    for m in &report.missing {
        out.push_str(&format!("missing: {m}\n"));
    }
    if let Some(t) = &report.trust {
        out.push_str(&super::report_verify::trust_lines(t));
    }
    if let Some(v) = &report.verify {
        out.push_str(&format!(
            "verify: {}\n",
            if v.reproduced {
                "reproduced (bit-identical)"
            } else {
                "NOT reproduced"
            }
        ));
    }
    if let Some(a) = &report.against {
        for i in &a.images {
            out.push_str(&format!(
                "against {} ({}): {} package changes, {} files changed; a pull with it present \
                 fetches {} bytes in {} layers (and {} of config), reuses {} layers\n",
                a.source,
                i.platform,
                i.packages.len(),
                i.files.len() + i.files_left_out,
                i.pull.bytes_fetched,
                i.pull.layers_fetched,
                i.pull.config_bytes,
                i.pull.layers_reused,
            ));
        }
    }
    out.push_str("(write the page with -o report.html, the document with --json)\n");
    out
}
