//! `ocibuild verify RECIPE [--against IMAGE]`: rebuild from the lock in an empty store and check
//! the result is bit-identical to the image given.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::audit::{self, render, OpenOptions};
use crate::imageref::{ImageRef, Role};
use crate::lock::LockPolicy;
use crate::ops;
use crate::recipe;
use crate::session::Session;
use crate::store::Store;

pub(super) const AFTER_HELP: &str = "\
The rebuild uses a fresh, empty store in a temporary directory ($TMPDIR): no layer comes from
the cache, and the base image's blobs are fetched again (by the digests NAME.lock pins). It
writes no output. SOURCE_DATE_EPOCH applies as it does to `build`.

--against: DIR or oci:DIR[:TAG], oci-archive:FILE, docker-archive:FILE, docker://REF, or
sha256:DIGEST (a manifest digest: compared, not read). Default: oci:<recipe name>.oci, where
`ocibuild build RECIPE` writes.

--tag: the tag to compare with, as `build --tag` gave it: of the default layout, of
--against DIR / oci:DIR, or of --against docker://REPO (with no tag of its own). Default: the
recipe's [image] tag, or where the layout holds no such tag, the layout's one image of the
recipe's [image] name (so `build --tag v2` then `verify` compares with v2); several of them
and none with the recipe's tag is an error that lists them.

Exit status: 0 bit-identical, 1 different (what differs is listed, per layer and file), 2 error.

Examples:
  ocibuild verify app.toml
  ocibuild verify app.toml --tag v2
  ocibuild verify app.toml --against oci-archive:release/app.tar
  ocibuild verify app.toml --against docker://registry.example/team/app:1.0
  ocibuild verify app.toml --against sha256:a295b31b9414131493d31b2d0e5e57fbe8e280396d6b20fa8eb8f0a7505b7da4";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(super) struct VerifyArgs {
    /// The recipe (TOML); its lock (NAME.lock) pins the base.
    pub recipe: PathBuf,
    /// The image the rebuild must match (default: the recipe's default output layout).
    #[arg(long, value_name = "IMAGE")]
    pub against: Option<String>,
    /// The tag to compare with, as `build --tag` gave it (default: the recipe's, or the
    /// layout's only tag for the recipe's image name).
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,
    /// Print the result as JSON (rebuilt and target digests, and the diff when they differ).
    #[arg(long)]
    pub json: bool,
    /// After a bit-identical rebuild of a registry image (--against docker://REF), attach a
    /// SLSA Verification Summary Attestation saying so, signed with --sign-key (a DSSE
    /// envelope, as a referrer of the image).
    #[arg(long, requires = "sign_key")]
    pub attest: bool,
    /// The auditor's private key for --attest (PKCS#8 or SEC1 PEM, or a cosign key).
    #[arg(long, value_name = "FILE", requires = "attest")]
    pub sign_key: Option<PathBuf>,
    #[command(flatten)]
    pub passphrase: super::sign::PassphraseArgs,
    #[command(flatten)]
    pub recipe_args: super::recipe_args::RecipeArgs,
}

pub(super) fn run(cli: &Cli, args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    super::diff::exit_on_error(verify(cli, args))
}

fn verify(cli: &Cli, args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let recipe = args.recipe_args.load(&args.recipe)?;
    // --tag checked as build's is (the rebuild's bits do not depend on the tag).
    let recipe = match &args.tag {
        Some(t) => recipe.with_overrides(Some(t), None)?,
        None => recipe,
    };
    let (target, chosen) = target(args, &recipe)?;
    if let (Some(c), false) = (&chosen, cli.quiet || args.json) {
        eprintln!("comparing with {target} ({})", c.why);
    }
    let key = match &args.sign_key {
        Some(p) => Some(super::sign::load_key(cli, p, &args.passphrase)?),
        None => None,
    };
    if args.attest && !matches!(target, ImageRef::Registry(_)) {
        anyhow::bail!(
            "--attest attaches to a registry image: give --against docker://REGISTRY/REPO[:TAG]"
        );
    }
    let tmp = tempfile::Builder::new()
        .prefix("ocibuild-verify-")
        .tempdir()?;
    let store = Store::open(tmp.path())?;
    // The rebuild: the lock as it is (checked against the recipe), every layer built again.
    let bars = cli.bars(false);
    // The image compared against is left out of the layers, as `build` left its output out.
    let outputs = match &target {
        ImageRef::Layout { dir, .. } => vec![dir.clone()],
        ImageRef::OciArchive(p) | ImageRef::DockerArchive(p) | ImageRef::Vendor(p) => {
            vec![p.clone()]
        }
        ImageRef::Registry(_) | ImageRef::Digest(_) => Vec::new(),
    };
    let client = super::push::client(cli)?;
    let mut session = Session {
        policy: LockPolicy::Locked,
        no_cache: true,
        epoch_override: super::env_epoch()?,
        outputs,
        ..cli.session(&store, &client, &bars)
    };
    let registry = matches!(target, ImageRef::Registry(_)).then_some(&client);
    // Each platform rebuilt as built, and compared with the target (for a multi-platform
    // recipe, with that platform's manifest of the target's index).
    let reports = ops::for_each(
        &mut session,
        &args.recipe,
        &recipe,
        ops::BaseIndex::Shared,
        |s, p, rp| {
            let built = s.build(&args.recipe, rp)?;
            let opts = OpenOptions {
                client: registry,
                platform: Some(p),
                reporter: &bars,
            };
            let report = audit::verify(&store, built.image.manifest.digest, &target, opts)?;
            Ok((p.clone(), rp.clone(), report))
        },
    )?;
    let reproduced = reports.iter().all(|(_, _, r)| r.reproduced);
    // --attest: a signed VSA on each platform's manifest, once all of them reproduced.
    let mut attested = Vec::new();
    for (_, rp, r) in &reports {
        let (Some(k), ImageRef::Registry(at), true) = (&key, &target, reproduced) else {
            break;
        };
        let a = attest_reproduced(&client, &store, &args.recipe, rp, at, &r.rebuilt, k)?;
        attested.push(a);
    }
    let attested_lines = |i: usize| {
        for pushed in attested.get(i).map(|a| &a.pushed[..]).unwrap_or_default() {
            println!("attested {pushed} (SLSA verification summary, signed)");
        }
        if let Some(att) = attested.get(i).and_then(|a| a.attestation_tag.as_ref()) {
            println!("attestations for cosign {att}");
        }
    };
    if recipe.is_multi_platform() {
        if args.json {
            let mut platforms = Vec::new();
            for (i, (p, _, r)) in reports.iter().enumerate() {
                let mut v = serde_json::to_value(r)?;
                v["platform"] = serde_json::json!(p.to_string());
                v["attestation"] = serde_json::to_value(attested.get(i))?;
                platforms.push(v);
            }
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({
                    "reproduced": reproduced,
                    "platforms": platforms,
                }))?
            );
        } else {
            for (i, (p, _, r)) in reports.iter().enumerate() {
                println!("platform {p}:");
                print!("{}", render::verify_text(r));
                attested_lines(i);
            }
            if !reproduced {
                print_tag_hint(args, &recipe, &target, chosen.as_ref());
            }
        }
    } else {
        let (_, _, report) = &reports[0];
        if args.json {
            let mut doc = serde_json::to_value(report)?;
            doc["attestation"] = serde_json::to_value(attested.first())?;
            println!("{}", serde_json::to_string_pretty(&doc)?);
        } else {
            print!("{}", render::verify_text(report));
            if !report.reproduced {
                print_tag_hint(args, &recipe, &target, chosen.as_ref());
            }
            attested_lines(0);
        }
    }
    Ok(if reproduced {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// How the tag compared with was chosen, when no flag named it.
struct Chosen {
    why: String,
}

/// The image to compare with: --against and --tag, or the default layout at the tag
/// [`default_tag`] picks (then also why it was picked).
fn target(
    args: &VerifyArgs,
    recipe: &recipe::Recipe,
) -> anyhow::Result<(ImageRef, Option<Chosen>)> {
    let Some(s) = &args.against else {
        let dir = super::default_output(&args.recipe);
        let (tag, chosen) = match &args.tag {
            Some(t) => (t.clone(), None),
            None => default_tag(&dir, recipe)?,
        };
        return Ok((
            ImageRef::Layout {
                dir,
                tag: Some(tag),
            },
            chosen,
        ));
    };
    let parsed = ImageRef::parse(s, Role::Source { digest: true })?;
    let Some(t) = &args.tag else {
        return Ok((parsed, None));
    };
    // A registry reference without a tag reads as `:latest`: whether the input gave one.
    let last = s.rsplit('/').next().unwrap_or(s);
    let names_one = last.contains(':') || last.contains('@');
    Ok((
        match parsed {
            ImageRef::Layout { dir, tag: None } => ImageRef::Layout {
                dir,
                tag: Some(t.clone()),
            },
            ImageRef::Registry(r) if !names_one => ImageRef::Registry(r.with_tag(t)?),
            other => anyhow::bail!(
                "--tag {t}: --against {other} already names one image (give the tag there, or \
                 give a layout DIR or docker://REPO without one)"
            ),
        },
        None,
    ))
}

/// The tag of the default layout `dir` to compare with: the recipe's `[image] tag` where the
/// layout holds it (or holds no index yet: opening it then says so); else the layout's only
/// image of the recipe's `[image] name`, which `build --tag` wrote.
fn default_tag(
    dir: &std::path::Path,
    recipe: &recipe::Recipe,
) -> anyhow::Result<(String, Option<Chosen>)> {
    let own = recipe.image.tag.clone();
    let Ok(layout) = crate::output::Layout::open(dir) else {
        return Ok((own, None));
    };
    if layout.tags().contains(&own) {
        return Ok((own, None));
    }
    let name = &recipe.image.name;
    match layout.index().tags_of(name).as_slice() {
        [] => Ok((own, None)),
        [one] => Ok((
            one.clone(),
            Some(Chosen {
                why: format!(
                    "the layout has no tag `{own}`, the recipe's; `{one}` is its only image of {name}"
                ),
            }),
        )),
        many => anyhow::bail!(
            "{} has no image tagged `{own}` (the recipe's [image] tag) but {} of {name}: {}; \
             give one with --tag TAG",
            dir.display(),
            many.len(),
            many.join(", ")
        ),
    }
}

/// After NOT reproduced against a layout: which tag was compared, and the layout's other
/// tags of the recipe's image, for `--tag`.
fn print_tag_hint(
    args: &VerifyArgs,
    recipe: &recipe::Recipe,
    target: &ImageRef,
    chosen: Option<&Chosen>,
) {
    let ImageRef::Layout { dir, tag } = target else {
        return;
    };
    let Some(tag) = tag else {
        return;
    };
    let why = match (chosen, &args.tag) {
        (Some(c), _) => c.why.clone(),
        (None, Some(_)) => "--tag".to_string(),
        (None, None) if args.against.is_some() => "--against".to_string(),
        (None, None) => "the recipe's [image] tag".to_string(),
    };
    let others: Vec<String> = crate::output::Layout::open(dir)
        .map(|l| l.index().tags_of(&recipe.image.name))
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t != tag)
        .collect();
    println!("compared with tag `{tag}` of {} ({why})", dir.display());
    if !others.is_empty() {
        println!(
            "the layout also holds {} at {}: `ocibuild verify {} --tag TAG` compares with one of them",
            recipe.image.name,
            others.join(", "),
            args.recipe.display()
        );
    }
}

/// `--attest`: the signed VSA for the image `reference` (its manifest `digest`, just rebuilt
/// bit-identically), attached as a referrer in its repository.
fn attest_reproduced(
    client: &crate::registry::Client,
    store: &Store,
    recipe_path: &std::path::Path,
    recipe: &recipe::Recipe,
    target: &crate::registry::Reference,
    digest: &crate::digest::Digest,
    key: &crate::sign::PrivateKey,
) -> anyhow::Result<crate::push::ReferrersReport> {
    let fetched = client.get_manifest(&target.with_digest(*digest))?;
    let name = format!("{}/{}", target.registry(), target.repository());
    // The lock as the manifest records it (a multi-platform lock: this platform's section).
    let lock = crate::lock::Lock::digest_view(
        &crate::lock::Lock::path_for(recipe_path),
        recipe.lock_view().as_deref(),
    )?;
    let statement = crate::sign::vsa_statement(&name, digest, &recipe.identity()?, lock.as_ref())?;
    let envelope = crate::sign::payload::Envelope::sign(&statement, key);
    let subject = crate::audit::attest::Subject::new(&name, "", &fetched.bytes)?;
    let docs = [crate::audit::attest::Document {
        artifact_type: crate::sign::payload::DSSE_MEDIA_TYPE,
        bytes: envelope.to_bytes()?,
    }];
    let referrers = crate::audit::attest::attach(store, &subject, &docs)?;
    Ok(crate::push::push_referrers(
        client, store, digest, &referrers, target,
    )?)
}
