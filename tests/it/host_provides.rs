//! `[apt] host-provides`: libraries the host provides at run time (the NVIDIA driver's
//! `libcuda.so.1`), against an archive the test generates and serves on 127.0.0.1
//! (tests/it/aptfix): a dependency answered without installing anything, recorded in the lock
//! and the SBOM, the lock stale when the names change, the message for a dependency on the
//! driver without the key, and the warning for a name nothing depends on.

use crate::aptfix::{self, deb, fixture, Data, Deb, Fixture};
use crate::common::{ocibuild, run, run_ok, stdout, tar_listing, tempdir};

/// The build's warning for an image without `/bin/sh` (these archives' packages have none).
const NO_SHELL: &str = "the image has no /bin/sh: `podman run IMAGE /bin/sh …` and a [config.healthcheck] `CMD-SHELL` will fail; add `[apt] essential = true` (Debian's essential set) or a package or layer with a shell";

use fs_err as fs;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A CUDA-like runtime and a PyCUDA-like binding over a driver package, as Debian's
/// `libcudart12`, `python3-pycuda` and `libcuda1` (non-free) are related.
fn universe(with_driver: bool) -> Vec<Deb> {
    let mut v = vec![
        deb("fakert12", "12.4.131~12.4.1-1")
            .field("Depends", "libcuda1 (>= 550) | libcuda.so.1 (>= 550)")
            .data(Data::Dir("./usr/lib/"))
            .data(Data::File("./usr/lib/libfakert.so.12", "ELF cudart", 0o644)),
        deb("fakepycuda", "2025.1.1-1")
            .field(
                "Depends",
                "libcuda1 (>= 450.66) | libcuda.so.1 (>= 450.66), fakert12",
            )
            .data(Data::Dir("./usr/lib/"))
            .data(Data::File("./usr/lib/pycuda.so", "ELF pycuda", 0o644)),
        deb("needs-soname", "1").field("Depends", "libcuda.so.1 (>= 450)"),
        deb("plain", "1").data(Data::File("./usr/share/doc/plain", "plain\n", 0o644)),
    ];
    if with_driver {
        v.push(
            deb("libcuda1", "550.163.01-2")
                .field(
                    "Provides",
                    "libcuda.so.1 (= 550.163.01), libcuda-12.4-1, libcuda1-any",
                )
                .field("Depends", "libnvidia-ptxjitcompiler1 (= 550.163.01-2)")
                .data(Data::Dir("./usr/lib/"))
                .data(Data::File("./usr/lib/libcuda.so.1", "ELF driver", 0o644)),
        );
        v.push(
            deb("libnvidia-ptxjitcompiler1", "550.163.01-2")
                .data(Data::Dir("./usr/lib/"))
                .data(Data::File(
                    "./usr/lib/libnvidia-ptxjitcompiler.so.1",
                    "ELF ptxjit",
                    0o644,
                )),
        );
    }
    v
}

fn recipe(dir: &Path, f: &Fixture, packages: &[&str], host: &[&str]) -> PathBuf {
    let extra = if host.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = host.iter().map(|h| format!("\"{h}\"")).collect();
        format!("host-provides = [{}]\n", list.join(", "))
    };
    aptfix::apt_recipe(dir, f, &f.key, packages, &extra)
}

fn build_json(recipe: &Path, out: &Path, extra: &[&str]) -> Value {
    let o = run_ok(
        ocibuild()
            .args(["build", "--json", "-o"])
            .arg(out)
            .arg(recipe)
            .args(extra),
    );
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// The paths of the image's `apt` layer.
fn apt_layer_paths(layout: &Path, v: &Value) -> Vec<String> {
    let layers = v["layers"].as_array().unwrap();
    let apt = layers
        .iter()
        .find(|l| l["name"] == "apt")
        .expect("apt layer");
    let d = apt["digest"].as_str().unwrap();
    let blob = layout
        .join("blobs/sha256")
        .join(d.trim_start_matches("sha256:"));
    tar_listing(&blob)
        .into_iter()
        .map(|l| l.rsplit(' ').next().unwrap_or("").to_string())
        .collect()
}

fn lock_packages(lock: &str) -> Vec<String> {
    let v: toml::Value = toml::from_str(lock).unwrap();
    v["apt"]["package"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| p["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn host_provides_satisfies_without_installing_and_is_locked() {
    let f = fixture(&universe(true), false);
    let t = tempdir();
    let r = recipe(t.path(), &f, &["fakepycuda"], &["libcuda.so.1"]);
    let out = t.path().join("img");
    let v = build_json(&r, &out, &[]);

    // The driver is not installed: neither its package nor its files.
    let lock = fs::read_to_string(t.path().join("app.lock")).unwrap();
    assert_eq!(lock_packages(&lock), ["fakepycuda", "fakert12"], "{lock}");
    let paths = apt_layer_paths(&out, &v);
    assert!(
        paths.iter().any(|p| p.ends_with("usr/lib/libfakert.so.12")),
        "{paths:?}"
    );
    assert!(
        !paths
            .iter()
            .any(|p| p.contains("libcuda") || p.contains("libnvidia")),
        "{paths:?}"
    );

    // The lock records the name and each dependency it stood in for, as written.
    assert!(
        lock.contains(
            "[[apt.host-provides]]\nname = \"libcuda.so.1\"\nsatisfies = [\
             \"fakepycuda: libcuda1 (>= 450.66) | libcuda.so.1 (>= 450.66)\", \
             \"fakert12: libcuda1 (>= 550) | libcuda.so.1 (>= 550)\"]\n"
        ),
        "{lock}"
    );
    // build --json lists it, with no warning of its own (the archive's packages give no shell).
    assert_eq!(v["hostProvides"][0]["name"], "libcuda.so.1");
    assert_eq!(
        v["hostProvides"][0]["satisfies"].as_array().unwrap().len(),
        2
    );
    assert_eq!(v["warnings"], serde_json::json!([NO_SHELL]));

    // The SBOM lists it as provided by the host: no checksum, a runtime dependency.
    let sbom = |fmt: &str| -> Value {
        let o = run_ok(
            ocibuild()
                .args(["sbom", "--format", fmt])
                .arg(&r)
                .arg("--image")
                .arg(format!("oci:{}", out.display())),
        );
        serde_json::from_str(&stdout(&o)).unwrap()
    };
    let doc = sbom("spdx");
    let host = doc["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "libcuda.so.1")
        .expect("libcuda.so.1 in the SPDX document")
        .clone();
    assert_eq!(host["SPDXID"], "SPDXRef-host-libcuda.so.1");
    assert_eq!(host["filesAnalyzed"], false);
    assert!(host.get("checksums").is_none(), "{host}");
    assert!(
        host["comment"]
            .as_str()
            .unwrap()
            .starts_with("provided by the host at run time, not in the image"),
        "{host}"
    );
    let rels = doc["relationships"].as_array().unwrap();
    assert!(rels
        .iter()
        .any(|r| r["spdxElementId"] == "SPDXRef-host-libcuda.so.1"
            && r["relationshipType"] == "RUNTIME_DEPENDENCY_OF"
            && r["relatedSpdxElement"] == "SPDXRef-Image"));
    assert!(!rels
        .iter()
        .any(|r| r["relatedSpdxElement"] == "SPDXRef-host-libcuda.so.1"));
    let doc = sbom("cyclonedx");
    let c = doc["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "libcuda.so.1")
        .expect("libcuda.so.1 in the CycloneDX document")
        .clone();
    assert_eq!(c["bom-ref"], "ocibuild:host-provides:libcuda.so.1");
    assert!(c.get("hashes").is_none(), "{c}");

    // The text output says it.
    let o = run_ok(
        ocibuild()
            .args(["build", "--locked", "-o"])
            .arg(&out)
            .arg(&r),
    );
    assert!(
        stdout(&o).contains(
            "host provides libcuda.so.1 at run time (not in the image), for fakepycuda, fakert12"
        ),
        "{}",
        stdout(&o)
    );
}

#[test]
fn host_provides_change_makes_the_lock_stale_and_warns_when_unused() {
    let f = fixture(&universe(true), false);
    let t = tempdir();
    let r = recipe(t.path(), &f, &["fakert12"], &["libcuda.so.1"]);
    run_ok(ocibuild().arg("lock").arg(&r));
    let img = t.path().join("img");
    run_ok(
        ocibuild()
            .args(["build", "--locked", "-o"])
            .arg(&img)
            .arg(&r),
    );

    // A name added: --locked refuses, naming it; `lock` resolves again.
    recipe(
        t.path(),
        &f,
        &["fakert12"],
        &["libcuda.so.1", "libunused.so.2"],
    );
    let o = run(ocibuild()
        .args(["build", "--locked", "-o"])
        .arg(t.path().join("img"))
        .arg(&r));
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("host-provides `libunused.so.2` added"),
        "{err}"
    );
    let o = run_ok(ocibuild().arg("lock").arg(&r));
    let err = String::from_utf8_lossy(&o.stderr);
    // Nothing depends on it: a warning, not an error, and the lock records it unused.
    assert!(
        err.contains(
            "warning: [apt] host-provides `libunused.so.2`: no package the recipe installs \
             depends on it"
        ),
        "{err}"
    );
    assert!(!stdout(&o).contains("warning"), "{}", stdout(&o));
    let lock = fs::read_to_string(t.path().join("app.lock")).unwrap();
    assert!(
        lock.contains("[[apt.host-provides]]\nname = \"libunused.so.2\"\n\n"),
        "{lock}"
    );
    let v = build_json(&r, &t.path().join("img"), &["--locked"]);
    // The unused name's, and the image's lack of a shell.
    assert_eq!(v["warnings"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(v["warnings"][1], NO_SHELL);
    assert_eq!(v["hostProvides"][1]["satisfies"], serde_json::json!([]));

    // A name removed: stale again.
    recipe(t.path(), &f, &["fakert12"], &["libcuda.so.1"]);
    let o = run(ocibuild()
        .args(["build", "--locked", "-o"])
        .arg(&img)
        .arg(&r));
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("host-provides `libunused.so.2` removed"),
        "{err}"
    );
}

#[test]
fn a_dependency_on_the_driver_without_host_provides_says_so() {
    let f = fixture(&universe(true), false);
    let t = tempdir();
    let r = recipe(t.path(), &f, &["fakepycuda"], &[]);
    let o = run(ocibuild().arg("lock").arg(&r));
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "fakepycuda → libcuda1 (>= 450.66) | libcuda.so.1 (>= 450.66): it would install \
             libcuda1, which is the NVIDIA GPU driver's user-space part, which belongs to the \
             host, not the image"
        ),
        "{err}"
    );
    assert!(
        err.contains("add `host-provides = [\"libcuda.so.1\"]` to [apt]"),
        "{err}"
    );
    assert!(!err.contains("unknown package"), "{err}");

    // A source without the driver (non-free not listed): the same advice, not "unsatisfiable".
    let g = fixture(&universe(false), false);
    let t2 = tempdir();
    let r2 = recipe(t2.path(), &g, &["needs-soname"], &[]);
    let o = run(ocibuild().arg("lock").arg(&r2));
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "needs-soname → libcuda.so.1 (>= 450): `libcuda.so.1` is the NVIDIA GPU driver's \
             user-space part"
        ),
        "{err}"
    );
    assert!(err.contains("host-provides = [\"libcuda.so.1\"]"), "{err}");
    // With the key it resolves, without the driver in any source.
    recipe(t2.path(), &g, &["needs-soname"], &["libcuda.so.1"]);
    run_ok(ocibuild().arg("lock").arg(&r2));

    // Asked for by name, the driver is installed with what it depends on (the user's choice).
    let r = recipe(t.path(), &f, &["fakert12", "libcuda1"], &[]);
    run_ok(ocibuild().arg("lock").arg(&r));
    let lock = fs::read_to_string(t.path().join("app.lock")).unwrap();
    assert_eq!(
        lock_packages(&lock),
        ["fakert12", "libcuda1", "libnvidia-ptxjitcompiler1"],
        "{lock}"
    );
}

#[test]
fn host_provides_is_validated() {
    let f = fixture(&universe(true), false);
    let t = tempdir();
    for (bad, msg) in [
        ("LibCuda.so.1", "invalid name `LibCuda.so.1`"),
        (
            "libcuda.so.1 (>= 450)",
            "invalid name `libcuda.so.1 (>= 450)`",
        ),
        ("plain", "`plain` is also in `packages`"),
    ] {
        let r = recipe(t.path(), &f, &["plain"], &[bad]);
        let o = run(ocibuild().arg("lock").arg(&r));
        assert!(!o.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(msg), "{bad}: {err}");
        // The span points at the entry: the line of `host-provides`.
        assert!(err.contains("app.toml:"), "{err}");
    }
    // An unknown key in [apt] is still an error naming the keys expected.
    let r = aptfix::apt_recipe(
        t.path(),
        &f,
        &f.key,
        &["plain"],
        "host-provide = [\"x1\"]\n",
    );
    let o = run(ocibuild().arg("lock").arg(&r));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("host-provide") && err.contains("host-provides"),
        "{err}"
    );
}

/// Online (OCIBUILD_ONLINE=1): recipes/pycuda-trixie.toml against the Debian archive (trixie
/// main, contrib and non-free; indices only, no .deb): without `host-provides` the lock names
/// the driver and the key to add; with the recipe's two names it locks, each name recorded with
/// the real dependencies it answers, and neither driver package (`libcuda1`,
/// `libnvidia-ml1`) in the lock.
#[test]
fn online_pycuda_trixie_lock_leaves_the_driver_to_the_host() {
    if !crate::common::online("locks python3-pycuda from the Debian archive") {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    let t = tempdir();
    fs::create_dir(t.path().join("keys")).unwrap();
    fs::copy(
        repo.join("keys/debian-trixie.asc"),
        t.path().join("keys/debian-trixie.asc"),
    )
    .unwrap();
    let text = fs::read_to_string(repo.join("pycuda-trixie.toml")).unwrap();
    let line = "host-provides = [\"libcuda.so.1\", \"libnvidia-ml.so.1\"]\n";
    assert!(text.contains(line), "the recipe changed: update this test");
    let r = t.path().join("pycuda.toml");
    fs::write(&r, text.replace(line, "")).unwrap();
    let o = run(ocibuild().arg("lock").arg(&r));
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the NVIDIA GPU driver's"), "{err}");
    assert!(err.contains("host-provides = [\"libcuda.so.1\"]"), "{err}");
    assert!(!err.contains("unknown package"), "{err}");

    fs::write(&r, &text).unwrap();
    run_ok(ocibuild().arg("lock").arg(&r));
    let lock = fs::read_to_string(t.path().join("pycuda.lock")).unwrap();
    let v: toml::Value = toml::from_str(&lock).unwrap();
    let hp = v["apt"]["host-provides"].as_array().unwrap();
    let satisfies = |name: &str| -> Vec<String> {
        hp.iter()
            .find(|h| h["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("{name} not in the lock's host-provides: {lock}"))
            ["satisfies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        satisfies("libcuda.so.1")
            .iter()
            .any(|s| s.starts_with("python3-pycuda: ") && s.contains("libcuda.so.1")),
        "{lock}"
    );
    assert!(
        satisfies("libnvidia-ml.so.1")
            .iter()
            .any(|s| s.contains("libnvidia-ml.so.1")),
        "{lock}"
    );
    let packages = lock_packages(&lock);
    for driver in ["libcuda1", "libnvidia-ml1"] {
        assert!(
            !packages.iter().any(|p| p == driver),
            "{driver}: {packages:?}"
        );
    }
    for wanted in ["python3-pycuda", "nvidia-cuda-toolkit", "libcudart12"] {
        assert!(
            packages.iter().any(|p| p == wanted),
            "{wanted}: {packages:?}"
        );
    }
}
