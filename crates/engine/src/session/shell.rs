//! Whether the finished image has a shell (`/bin/sh`), said only where ocibuild knows the
//! image's files without fetching anything: an image on `scratch`, or one with `[apt]` (whose
//! base's layers the store holds). The layers are read through [`crate::system::listing`]
//! (each once per digest, then cached), except those that cannot hold `/bin/sh`: the
//! interpreter archive and wheel layers are left out, and a `[[layer]]` or step output placed
//! outside `/`, `/bin`, `/usr` and `/usr/bin` is not read (a path under it counts as there).

use crate::build::Built;
use crate::recipe::{Base, Recipe};
use crate::store::Store;
use crate::system::listing;
use crate::system::SystemError;

/// The path a shell must be at.
pub(super) const SHELL: &str = "/bin/sh";

/// `Some(has /bin/sh)` for an image whose files ocibuild knows, `None` otherwise.
pub(super) fn image_has_shell(
    store: &Store,
    recipe: &Recipe,
    built: &Built,
) -> Result<Option<bool>, SystemError> {
    if !matches!(recipe.base, Base::Scratch) && recipe.apt.is_none() {
        return Ok(None);
    }
    let mut read = Vec::new();
    let mut assumed = Vec::new();
    for (record, (name, _)) in built.image.layers.iter().zip(&built.cached) {
        let dests = dests_of(recipe, name);
        if name == "python" || name.starts_with("wheel-") || name.starts_with("wheels-") {
            continue;
        }
        if !dests.is_empty() && !dests.iter().any(|d| may_hold_shell(d)) {
            assumed.extend(dests);
            continue;
        }
        read.push((
            record.descriptor.digest,
            record.descriptor.media_type.clone(),
        ));
    }
    let Some(mut l) = listing::image_listing(store, &read)? else {
        return Ok(None);
    };
    for d in &assumed {
        l.assume(d);
    }
    Ok(Some(l.resolves(SHELL)))
}

/// Whether the recipe looks like it needs a shell, so that an image without one is worth a
/// warning: a system (`[apt]`, `[python]`), a `CMD-SHELL` health check, `[config] shell`, or an
/// entrypoint (or cmd) or test run through `/bin/sh`. An image of a static program on
/// `scratch` has none on purpose: its report says so (`shell: false`) without a warning.
pub(super) fn expects_shell(recipe: &Recipe) -> bool {
    let c = &recipe.config;
    let via_sh = |argv: &[String]| argv.first().is_some_and(|a| a == SHELL);
    recipe.apt.is_some()
        || recipe.python.is_some()
        || c.shell.is_some()
        || c.healthcheck
            .as_ref()
            .is_some_and(|h| h.test.first().is_some_and(|t| t == "CMD-SHELL"))
        || c.entrypoint.as_deref().is_some_and(via_sh)
        || (c.entrypoint.is_none() && c.cmd.as_deref().is_some_and(via_sh))
        || recipe.tests.iter().any(|t| match &t.run {
            crate::recipe::TestRun::Command(argv) => via_sh(argv),
            crate::recipe::TestRun::Check(_) => false,
        })
}

/// Where a recipe's own layer (a `[[layer]]`, or a step's output `NAME` / `NAME.N`) goes;
/// empty for the others (the base's, the system's).
fn dests_of(recipe: &Recipe, name: &str) -> Vec<String> {
    if let Some(l) = recipe.layers.iter().find(|l| l.name == name) {
        return vec![l.spec.dest.clone()];
    }
    let step = name.split_once('.').map_or(name, |(s, _)| s);
    recipe
        .steps
        .iter()
        .find(|s| s.name == step)
        .map(|s| {
            s.outputs
                .iter()
                .filter(|o| o.in_image)
                .map(|o| o.dest.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a layer at `dest` can put something at `/bin/sh` (or the merged-/usr `/usr/bin/sh`).
fn may_hold_shell(dest: &str) -> bool {
    matches!(dest, "/" | "/bin" | "/usr" | "/usr/bin")
        || dest.starts_with("/bin/")
        || dest.starts_with("/usr/bin/")
}

#[cfg(test)]
mod tests {
    use super::may_hold_shell;

    #[test]
    fn which_destinations_are_read() {
        for d in [
            "/",
            "/bin",
            "/usr",
            "/usr/bin",
            "/bin/sh",
            "/usr/bin/busybox",
        ] {
            assert!(may_hold_shell(d), "{d}");
        }
        for d in ["/app", "/usr/local", "/usr/lib", "/binaries", "/etc"] {
            assert!(!may_hold_shell(d), "{d}");
        }
    }
}
