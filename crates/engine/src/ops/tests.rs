//! The engine's middle floor through a context of its own ([`Session::new`]): a store in a
//! temporary directory, a registry client that is never asked (the recipes' base is
//! `scratch`), nothing printed. What `build`, `lock` and `verify` share, without the CLI.

use std::path::{Path, PathBuf};

use super::{for_each, BaseIndex, OpsError};
use crate::image::{rfc3339, ImageConfig};
use crate::lock::Lock;
use crate::progress::Silent;
use crate::recipe;
use crate::registry::{Client, ClientConfig};
use crate::session::Session;
use crate::store::Store;

/// A recipe directory with `app/hello.txt` and `app.toml` holding `image` (the `[image]`
/// table's keys) and one `[[layer]]` of `app`.
fn recipe_dir(image: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    fs_err::create_dir_all(d.path().join("app")).unwrap();
    fs_err::write(d.path().join("app/hello.txt"), "hello\n").unwrap();
    let path = d.path().join("app.toml");
    fs_err::write(
        &path,
        format!(
            "[image]\nname = \"t\"\n{image}\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n"
        ),
    )
    .unwrap();
    (d, path)
}

fn config_of(store: &Store, built: &crate::build::Built) -> ImageConfig {
    let bytes = store.read_blob(&built.image.config.digest).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn the_platform_loop_builds_each_platform_as_its_own_recipe() {
    let (_d, path) = recipe_dir("platforms = [\"linux/amd64\", \"linux/arm64\"]");
    let recipe = recipe::load(&path).unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = Store::open(store_dir.path()).unwrap();
    let client = Client::new(ClientConfig::default());
    let mut s = Session::new(&store, &client, &Silent);
    let built = for_each(&mut s, &path, &recipe, BaseIndex::Shared, |s, p, rp| {
        Ok((p.clone(), rp.image.platform.clone(), s.build(&path, rp)?))
    })
    .unwrap();
    let platforms: Vec<_> = built.iter().map(|(p, ..)| p.clone()).collect();
    assert_eq!(platforms, recipe.platforms(), "in the recipe's order");
    assert_eq!(platforms[1].architecture, "arm64");
    for (p, recipe_platform, b) in &built {
        assert_eq!(p, recipe_platform, "each platform's own recipe");
        assert_eq!(b.image.manifest.platform.as_ref(), Some(p));
        let config = config_of(&store, b);
        assert_eq!(
            (config.os.as_str(), config.architecture.as_str()),
            (p.os.as_str(), p.architecture.as_str())
        );
    }
    // The same files make the same layer on both platforms; the configs differ.
    assert_eq!(built[0].2.image.layers, built[1].2.image.layers);
    assert_ne!(built[0].2.image.config, built[1].2.image.config);
}

#[test]
fn the_epoch_is_resolved_in_one_place_environment_then_recipe_then_zero() {
    let store_dir = tempfile::tempdir().unwrap();
    let store = Store::open(store_dir.path()).unwrap();
    let client = Client::new(ClientConfig::default());
    let (_a, plain) = recipe_dir("");
    let (_b, pinned) = recipe_dir("source-date-epoch = 7");
    let (plain, pinned) = (
        recipe::load(&plain).unwrap(),
        recipe::load(&pinned).unwrap(),
    );
    let mut s = Session::new(&store, &client, &Silent);
    assert_eq!(s.epoch(&plain).unwrap(), 0);
    assert_eq!(s.epoch(&pinned).unwrap(), 7);
    s.epoch_override = Some(5);
    assert_eq!(s.epoch(&plain).unwrap(), 5);
    assert_eq!(s.epoch(&pinned).unwrap(), 5, "the environment's wins");
    // And it is what the bytes carry: the config's `created`.
    let built = s.build(&pinned.path, &pinned).unwrap();
    assert_eq!(
        config_of(&store, &built).created.as_deref(),
        Some(&*rfc3339(5))
    );
}

#[test]
fn the_loop_writes_the_lock_once_and_also_after_a_failed_platform() {
    let (_d, path) = recipe_dir("platforms = [\"linux/amd64\", \"linux/arm64\"]");
    let recipe = recipe::load(&path).unwrap();
    let lock_path = Lock::path_for(&path);
    let store_dir = tempfile::tempdir().unwrap();
    let store = Store::open(store_dir.path()).unwrap();
    let client = Client::new(ClientConfig::default());
    let mut s = Session::new(&store, &client, &Silent);
    let seen = |p: &Path| p.exists();
    // The first platform locks (a scratch recipe's lock is an empty one); the second fails.
    // Nothing is written while the loop runs; what the first set is written when it ends.
    let err = for_each(&mut s, &path, &recipe, BaseIndex::Shared, |s, p, rp| {
        if p.architecture == "arm64" {
            assert!(!seen(&lock_path), "written before the loop ended");
            return Err(OpsError::Request("arm64 failed".into()));
        }
        s.lock(rp, &path)?;
        Ok(())
    })
    .unwrap_err();
    assert!(err.to_string().contains("linux/arm64"), "{err}");
    assert!(seen(&lock_path), "the first platform's lock kept");
    assert!(Lock::load(&lock_path).unwrap().is_some());
}
