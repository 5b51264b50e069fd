//! Online (OCIBUILD_ONLINE=1): recipes/bookworm-python.toml and recipes/trixie-python.toml,
//! each made two-platform (amd64, arm64)
//! with numpy from one universal uv pylock, all from the Debian archive and PyPI. skopeo's
//! `--override-arch arm64` takes the arm64 image; unpacked with umoci, its python3 is an
//! aarch64 ELF and computes with numpy under qemu-aarch64-static in user mode (no binfmt, no
//! container); the amd64 image computes under podman. The arm64 manifest is the one a build of
//! linux/arm64 alone gives, and a cold build gives the same index.

use std::path::Path;
use std::process::Command;

use fs_err as fs;

use crate::common::{self, ocibuild, podman_run, run_ok, stdout, tempdir};
use crate::online_debian::{Release, BOOKWORM, TRIXIE};

const CHECK: &str = "import numpy, platform; a = numpy.arange(12).reshape(3, 4); \
                     print(platform.machine(), numpy.__version__, int((a @ a.T).trace()))";

fn index_digests(layout: &Path) -> (String, Vec<(String, String)>) {
    let top: serde_json::Value =
        serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
    let digest = top["manifests"][0]["digest"].as_str().unwrap().to_string();
    let ix: serde_json::Value =
        serde_json::from_slice(&fs::read(layout.join("blobs/sha256").join(&digest[7..])).unwrap())
            .unwrap();
    let per = ix["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["platform"]["architecture"].as_str().unwrap().to_string(),
                m["digest"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (digest, per)
}

#[test]
fn bookworm_numpy_for_amd64_and_arm64_from_one_lock() {
    numpy_for_amd64_and_arm64_from_one_lock(&BOOKWORM, "3.11.2");
}

#[test]
fn trixie_numpy_for_amd64_and_arm64_from_one_lock() {
    numpy_for_amd64_and_arm64_from_one_lock(&TRIXIE, "3.13.5");
}

/// `full`: the release's python3 version, for uv.
fn numpy_for_amd64_and_arm64_from_one_lock(rel: &Release, full: &str) {
    if !common::online(&format!(
        "{}'s amd64 and arm64 packages from the Debian archive and numpy from PyPI",
        rel.name
    )) || !common::require_tools_all(&["podman", "skopeo", "umoci", "qemu-aarch64-static"])
    {
        return;
    }
    if std::env::consts::ARCH != "x86_64" {
        eprintln!("SKIPPED: runs the amd64 image under podman; this host is not x86_64");
        return;
    }
    let t = tempdir();
    let uv = crate::online_wheels::uv(t.path());
    let dir = t.path().join("p");
    fs::create_dir(&dir).unwrap();
    let recipe = crate::online_wheels::python_recipe(&dir, rel);
    let py = rel.python;
    let tag = format!("tag = \"{py}\"\n");
    let text = fs::read_to_string(&recipe).unwrap().replace(
        &tag,
        &format!("{tag}platforms = [\"linux/amd64\", \"linux/arm64\"]\n"),
    );
    fs::write(&recipe, text).unwrap();
    fs::write(dir.join("req.in"), "numpy==2.2.6\n").unwrap();
    run_ok(Command::new(&uv).current_dir(&dir).args([
        "pip",
        "compile",
        "req.in",
        "--universal",
        "--format",
        "pylock.toml",
        "--python-version",
        full,
        "-o",
        "pylock.toml",
        "--quiet",
    ]));
    let cache = t.path().join("cache");
    let img = t.path().join("img");
    run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", &cache)
            .args(["build", "-o"])
            .arg(&img)
            .arg(&recipe),
    );
    let (index, per) = index_digests(&img);
    assert_eq!(per.len(), 2, "{per:?}");
    let arm64 = per.iter().find(|(a, _)| a == "arm64").unwrap().1.clone();

    // The arm64 image: skopeo picks it, umoci unpacks it, qemu runs its python3.
    let arm = t.path().join("arm");
    run_ok(
        Command::new("skopeo")
            .args(["--override-arch", "arm64", "copy", "--quiet"])
            .arg(format!("oci:{}:{py}", img.display()))
            .arg(format!("oci:{}:x", arm.display())),
    );
    let copied: serde_json::Value =
        serde_json::from_slice(&fs::read(arm.join("index.json")).unwrap()).unwrap();
    assert_eq!(copied["manifests"][0]["digest"], arm64.as_str());
    let unpacked = t.path().join("armroot");
    run_ok(
        Command::new("umoci")
            .args(["unpack", "--rootless", "--image"])
            .arg(format!("{}:x", arm.display()))
            .arg(&unpacked),
    );
    let rootfs = unpacked.join("rootfs");
    let python = rootfs.join(format!("usr/bin/python{py}"));
    let elf = fs::read(&python).unwrap();
    // e_machine (offset 18, little-endian): 183 is EM_AARCH64.
    assert!(
        elf.starts_with(b"\x7fELF") && elf[18] == 183 && elf[19] == 0,
        "not aarch64"
    );
    let o = run_ok(
        Command::new("qemu-aarch64-static")
            .arg("-L")
            .arg(&rootfs)
            .arg(&python)
            .args(["-c", CHECK]),
    );
    assert_eq!(stdout(&o).trim(), "aarch64 2.2.6 506");

    // The amd64 image under podman (it picks the host's platform from the index).
    let o = podman_run(&img, py, &["/usr/bin/python3", "-c", CHECK]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout(&o).trim(), "x86_64 2.2.6 506");

    // The test stage: the host's platform runs, the other is said to be skipped.
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", &cache)
            .args(["test", "-o"])
            .arg(&img)
            .arg(&recipe),
    );
    let out = stdout(&o);
    assert!(
        out.contains("skipped: linux/arm64/v8 is not this host's platform (linux/amd64)")
            && out.contains("test stdlib ... passed"),
        "{out}"
    );

    // linux/arm64 alone, from the same lock: the same manifest. A cold build: the same index.
    let single = t.path().join("single");
    run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", &cache)
            .args(["build", "--locked", "--platform", "linux/arm64", "-o"])
            .arg(&single)
            .arg(&recipe),
    );
    assert_eq!(index_digests(&single).1, vec![("arm64".to_string(), arm64)]);
    let again = t.path().join("again");
    run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", t.path().join("cold"))
            .args(["build", "--locked", "-o"])
            .arg(&again)
            .arg(&recipe),
    );
    assert_eq!(index_digests(&again).0, index);
}
