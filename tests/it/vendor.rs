//! `vendor --into` against vendor directories that are not what they seem (the hardening
//! issue, second round: case 9), offline: planted symlinks never counted nor written through,
//! a vendored blob that is not a regular file refused without blocking. The helpers are
//! store.rs's.

use std::path::Path;
use std::process::Command;

use fs_err as fs;
use serde_json::json;

use crate::common;
use crate::store::{base_project, blobs_intact, lying_registry, names, noise, refused, tree};

// ---------------------------------------------------------------------------------------------
// Case 9: `vendor --into` over planted symlinks

/// A vendor directory with one `url` entry, its blob `bytes`.
fn vendor_source(dir: &Path, bytes: &[u8]) -> String {
    let digest = common::sha256_bytes(bytes);
    let hex = digest.trim_start_matches("sha256:").to_string();
    fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
    fs::write(dir.join("blobs/sha256").join(&hex), bytes).unwrap();
    let index = json!({
        "schemaVersion": 1,
        "entries": [{"kind": "url", "url": "https://example.com/python.tar.gz",
                     "digest": digest, "size": bytes.len()}],
    });
    fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
    hex
}

#[test]
fn vendor_into_never_counts_or_writes_through_a_planted_symlink() {
    let d = common::test_dir("w");
    let bytes = noise(8192, 3);
    let src = d.join("src-vendor");
    let hex = vendor_source(&src, &bytes);
    let outside = d.join("outside");
    fs::create_dir_all(&outside).unwrap();
    // Same size as the blob, other bytes: a size check alone would take it.
    fs::write(outside.join("victim"), noise(8192, 4)).unwrap();
    let outside_before = tree(&outside);
    let merge = |into: &Path| {
        common::run(
            common::ocibuild()
                .args(["vendor", "--json", "--merge"])
                .arg(&src)
                .arg("--into")
                .arg(into),
        )
    };

    // A symlink at the blob's name, pointing outside: replaced by the blob, never followed.
    let a = d.join("a");
    fs::create_dir_all(a.join("blobs/sha256")).unwrap();
    fs::os::unix::fs::symlink(outside.join("victim"), a.join("blobs/sha256").join(&hex)).unwrap();
    let o = merge(&a);
    common::assert_success(&o, "vendor --merge over a symlinked blob");
    blobs_intact(&a);
    assert_eq!(tree(&outside), outside_before);
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(stats["replaced"], 1, "{stats}");
    assert_eq!(stats["present"], 0, "{stats}");

    // A same-size regular file with other bytes: replaced too. The blob itself: kept.
    let b = d.join("b");
    fs::create_dir_all(b.join("blobs/sha256")).unwrap();
    fs::write(b.join("blobs/sha256").join(&hex), noise(8192, 5)).unwrap();
    let o = merge(&b);
    common::assert_success(&o, "vendor --merge over a wrong blob");
    blobs_intact(&b);
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(stats["replaced"], 1, "{stats}");
    let o = merge(&b);
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (stats["present"].clone(), stats["replaced"].clone()),
        (json!(1), json!(0))
    );
    common::run_ok(common::ocibuild().args(["vendor", "--check"]).arg(&b));

    // A symlinked blobs/sha256 (or blobs, or the directory itself): refused, nothing written.
    for (name, link) in [("c", "blobs/sha256"), ("e", "blobs"), ("f", "")] {
        let dir = d.join(name);
        let at = if link.is_empty() {
            dir.clone()
        } else {
            dir.join(link)
        };
        fs::create_dir_all(at.parent().unwrap()).unwrap();
        fs::os::unix::fs::symlink(&outside, &at).unwrap();
        let o = merge(&dir);
        refused(&o, &[&at.display().to_string(), "is a symbolic link"]);
        assert_eq!(tree(&outside), outside_before, "{name}");
    }
}

#[test]
fn vendor_into_from_a_recipe_replaces_a_planted_symlink() {
    let d = common::test_dir("w");
    let (addr, layer) = lying_registry(&d);
    let cache = d.join("cache");
    let (recipe, registries) = base_project(&d.join("p"), &addr, "good");
    let ocibuild = || {
        let mut c = common::ocibuild();
        c.arg("--registries")
            .arg(&registries)
            .env("OCIBUILD_CACHE", &cache);
        c
    };
    common::run_ok(ocibuild().arg("lock").arg(&recipe));
    let outside = d.join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("victim"), noise(layer.len(), 6)).unwrap();
    let outside_before = tree(&outside);
    let v = d.join("vendor");
    fs::create_dir_all(v.join("blobs/sha256")).unwrap();
    let hex = common::sha256_bytes(&layer)["sha256:".len()..].to_string();
    fs::os::unix::fs::symlink(outside.join("victim"), v.join("blobs/sha256").join(&hex)).unwrap();
    let o = common::run_ok(
        ocibuild()
            .args(["vendor", "--json", "--into"])
            .arg(&v)
            .arg(&recipe),
    );
    blobs_intact(&v);
    assert_eq!(tree(&outside), outside_before);
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(stats["replaced"], 1, "{stats}");
    common::run_ok(common::ocibuild().args(["vendor", "--check"]).arg(&v));
}

#[test]
fn a_vendored_blob_that_is_not_a_regular_file_is_refused_without_blocking() {
    let d = common::test_dir("w");
    let (addr, layer) = lying_registry(&d);
    let (recipe, registries) = base_project(&d.join("p"), &addr, "good");
    let ocibuild = |cache: &Path| {
        let mut c = common::ocibuild();
        c.arg("--registries")
            .arg(&registries)
            .env("OCIBUILD_CACHE", cache);
        c
    };
    let v = d.join("vendor");
    common::run_ok(ocibuild(&d.join("cache")).arg("lock").arg(&recipe));
    common::run_ok(
        ocibuild(&d.join("cache"))
            .args(["vendor", "--into"])
            .arg(&v)
            .arg(&recipe),
    );
    let hex = common::sha256_bytes(&layer)["sha256:".len()..].to_string();
    let blob = v.join("blobs/sha256").join(&hex);
    let outside = d.join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("other"), noise(layer.len() * 3, 7)).unwrap();
    let sizes = format!(
        "is {} bytes, the index says {}",
        layer.len() * 3,
        layer.len()
    );
    let plants: [(&str, &dyn Fn()); 3] = [
        (&sizes, &|| {
            fs::write(&blob, noise(layer.len() * 3, 8)).unwrap();
        }),
        ("is a symbolic link, never followed here", &|| {
            fs::os::unix::fs::symlink(outside.join("other"), &blob).unwrap();
        }),
        ("is a FIFO, not a regular file", &|| {
            assert!(Command::new("mkfifo")
                .arg(&blob)
                .status()
                .unwrap()
                .success());
        }),
    ];
    for (i, (said, plant)) in plants.iter().enumerate() {
        let _ = fs::remove_file(&blob);
        plant();
        let cold = d.join(format!("cold-{i}"));
        let out = d.join(format!("out-{i}.oci"));
        // A bound on a hang, not a timing: the build returns at once.
        let o = common::run_timeout(
            ocibuild(&cold)
                .args(["build", "--offline", "--vendor"])
                .arg(&v)
                .arg(&recipe)
                .arg("-o")
                .arg(&out),
            std::time::Duration::from_secs(120),
        );
        refused(
            &o,
            &[
                &v.display().to_string(),
                &hex,
                said,
                "vendor the input again",
            ],
        );
        assert!(!out.exists());
        assert!(!cold.join("blobs/sha256").join(&hex).exists());
        assert_eq!(names(&cold.join("tmp")), Vec::<String>::new());
    }
}
