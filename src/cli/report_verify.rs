//! `report RECIPE --verify`: the rebuild `ocibuild verify RECIPE` makes (from the lock, in an
//! empty store, every layer built again), compared with the recipe's default output by
//! [`crate::audit::verify`]; and the trust part's lines of the text summary.

use std::path::Path;

use super::Cli;
use crate::audit::{self, OpenOptions};
use crate::imageref::ImageRef;
use crate::lock::LockPolicy;
use crate::ops;
use crate::recipe::Recipe;
use crate::report::trust::{Rebuild, RebuildPlatform, Trust};
use crate::session::Session;
use crate::store::Store;

/// Rebuild `recipe` and compare each platform with its image in the default output (the
/// recipe's tag), as `verify` does without --against.
pub(super) fn rebuild(cli: &Cli, path: &Path, recipe: &Recipe) -> anyhow::Result<Rebuild> {
    let dir = super::default_output(path);
    let target = ImageRef::Layout {
        dir: dir.clone(),
        tag: Some(recipe.image.tag.clone()),
    };
    let tmp = tempfile::Builder::new()
        .prefix("ocibuild-verify-")
        .tempdir()?;
    let store = Store::open(tmp.path())?;
    let bars = cli.bars(true);
    let client = super::push::client(cli)?;
    let mut session = Session {
        policy: LockPolicy::Locked,
        no_cache: true,
        epoch_override: super::env_epoch()?,
        outputs: vec![dir],
        ..cli.session(&store, &client, &bars)
    };
    let platforms = ops::for_each(
        &mut session,
        path,
        recipe,
        ops::BaseIndex::Shared,
        |s, p, rp| {
            let built = s.build(path, rp)?;
            let opts = OpenOptions {
                client: None,
                platform: Some(p),
                reporter: &bars,
            };
            let report = audit::verify(&store, built.image.manifest.digest, &target, opts)?;
            Ok(RebuildPlatform::of(p.to_string(), &report))
        },
    )?;
    Ok(Rebuild {
        reproduced: platforms.iter().all(|p| p.reproduced),
        platforms,
    })
}

/// The grid and the provenance, a line each, for the text summary.
pub(super) fn trust_lines(t: &Trust) -> String {
    let mut out = String::new();
    for r in &t.grid {
        out.push_str(&format!(
            "  {}{}: {}{}\n",
            r.item,
            r.platform
                .as_deref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default(),
            r.result.word(),
            r.key
                .as_deref()
                .map(|k| format!(" (key {k})"))
                .unwrap_or_default()
        ));
    }
    for p in &t.provenance {
        out.push_str(&format!(
            "  provenance of {}: builder {}, lock {}, {} inputs\n",
            p.subject,
            p.builder.as_deref().unwrap_or("not stated"),
            p.lock_digest.as_deref().unwrap_or("none"),
            p.inputs.len()
        ));
    }
    for p in &t.problems {
        out.push_str(&format!("  problem: {p}\n"));
    }
    out
}
