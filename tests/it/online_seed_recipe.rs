//! Online (OCIBUILD_ONLINE=1; PyPI and the Debian archive): the seed image (issue 9),
//! recipes/python-cuda-images.toml, end to end as far as CI can go.
//!
//! CI cannot reach docker.io, so `nvidia/cuda:12.8.1-runtime-ubuntu24.04` is stood in for: a
//! "runtime" base made by ocibuild itself from Debian bookworm packages (libc6, libstdc++6, ...,
//! with their dpkg status.d records), pushed to a loopback docker-registry under that name, and
//! reached through a registries file whose `[[mirror]]` rule sends `docker.io/nvidia` there.
//! The recipe is the committed one with two substitutions: its Ubuntu noble `[[apt.source]]`
//! becomes Debian bookworm (python 3.11), and its pylock becomes a cp311 manylinux_2_36 lock of
//! numpy and pillow generated here by uv (cupy is left out: too big for CI; the app falls back
//! to the CPU). Its lock is this test's own (never a committed one).
//!
//! Then: the app's unit tests in the image (podman, and `ocibuild test --only`), the CLI on a
//! PNG and a JPEG, two cold builds to one manifest digest, `ocibuild verify`, the SBOM.

use crate::common;

use fs_err as fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::registry::{start_registry, PASS};
use common::{ocibuild, podman_run, podman_run_flags, require_tools_all, run_ok, stdout};

const CUDA_REPO: &str = "nvidia/cuda";
const CUDA_TAG: &str = "12.8.1-runtime-ubuntu24.04";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        let ty = e.file_type().unwrap();
        if ty.is_dir() {
            if e.file_name() != "__pycache__" {
                copy_dir(&e.path(), &dest);
            }
        } else if ty.is_file() {
            fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Replaces `old` (which must occur exactly once) by `new`: the substitutions into the
/// committed recipe fail loudly when the recipe changes under them.
fn replace_once(text: &str, old: &str, new: &str) -> String {
    assert_eq!(
        text.matches(old).count(),
        1,
        "recipes/python-cuda-images.toml no longer has exactly one `{old}`: update tests/it/online_seed_recipe.rs"
    );
    text.replacen(old, new, 1)
}

fn json(o: &Output) -> serde_json::Value {
    common::assert_success(o, "ocibuild");
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

/// The stand-in for nvidia/cuda's runtime image: Debian bookworm's C and C++ runtimes and CA
/// certificates, with the CUDA image's environment. Built by ocibuild into `dir/layout`.
fn standin_base(dir: &Path) -> PathBuf {
    fs::create_dir_all(dir.join("keys")).unwrap();
    fs::copy(
        repo().join("recipes/keys/debian-bookworm.asc"),
        dir.join("keys/debian-bookworm.asc"),
    )
    .unwrap();
    let recipe = dir.join("cuda-standin.toml");
    fs::write(
        &recipe,
        r#"[image]
name = "localhost/ocibuild/cuda-standin"
tag = "12.8.1-runtime"
platform = "linux/amd64"

[[apt.source]]
url = "https://deb.debian.org/debian"
suite = "bookworm"
components = ["main"]
signed-by = "keys/debian-bookworm.asc"

[apt]
packages = ["base-files", "libc6", "libstdc++6", "ca-certificates"]

[config]
env = { PATH = "/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", LD_LIBRARY_PATH = "/usr/local/nvidia/lib:/usr/local/nvidia/lib64", NVIDIA_VISIBLE_DEVICES = "all", NVIDIA_DRIVER_CAPABILITIES = "compute,utility", CUDA_VERSION = "12.8.1" }
"#,
    )
    .unwrap();
    let layout = dir.join("layout");
    run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", dir.join("cache"))
            .arg("build")
            .arg(&recipe)
            .arg("-o")
            .arg(&layout),
    );
    layout
}

/// A venv with uv, and a cp311 manylinux_2_36 pylock.toml of numpy and pillow at `out`.
fn pylock(dir: &Path, out: &Path) {
    run_ok(
        Command::new("python3")
            .args(["-m", "venv"])
            .arg(dir.join("venv")),
    );
    run_ok(Command::new(dir.join("venv/bin/pip")).args(["install", "--quiet", "uv"]));
    fs::write(dir.join("req.in"), "numpy\npillow\n").unwrap();
    run_ok(
        Command::new(dir.join("venv/bin/uv"))
            .current_dir(dir)
            .args(["pip", "compile", "req.in", "--format", "pylock.toml", "-o"])
            .arg(out)
            .args(["--python-version", "3.11"])
            .args(["--python-platform", "x86_64-manylinux_2_36", "--quiet"]),
    );
}

#[test]
fn python_cuda_images_on_a_standin_base() {
    if !common::online("builds the seed image from PyPI and the Debian archive")
        || !require_tools_all(&["podman", "skopeo", "docker-registry"])
    {
        return;
    }
    if common::host_arch() != "amd64" {
        // The recipe is linux/amd64 and the image is run here.
        common::notice("SKIPPED: python_cuda_images_on_a_standin_base needs an amd64 host");
        return;
    }
    let t = common::tempdir();
    let root = t.path();

    // 1. The stand-in base, pushed as nvidia/cuda:TAG to a loopback registry.
    let reg = start_registry(None);
    let base_layout = standin_base(&root.join("base"));
    common::registry::push_layout(
        &base_layout,
        "12.8.1-runtime",
        &reg.addr,
        &format!("{CUDA_REPO}:{CUDA_TAG}"),
    );
    let auth = common::registry::auth_file(root, &reg.addr, PASS);
    let registries = root.join("registries.toml");
    fs::write(
        &registries,
        format!(
            "[[registry]]\nname = \"{a}\"\ninsecure-http = true\n\n\
             [[mirror]]\nprefix = \"docker.io/nvidia\"\nlocations = [\"{a}/nvidia\"]\n",
            a = reg.addr
        ),
    )
    .unwrap();

    // 2. The seed recipe, its apt source and pylock substituted, beside a copy of the app.
    let proj = root.join("proj");
    let sub = proj.join("python-cuda-images");
    copy_dir(
        &repo().join("recipes/python-cuda-images/app"),
        &sub.join("app"),
    );
    assert!(
        sub.join("app/imgproc/__main__.py").is_file() && sub.join("app/tests").is_dir(),
        "recipes/python-cuda-images/app has no imgproc/__main__.py or tests/: merge wip-app"
    );
    pylock(root, &sub.join("pylock.toml"));
    fs::create_dir_all(proj.join("keys")).unwrap();
    fs::copy(
        repo().join("recipes/keys/debian-bookworm.asc"),
        proj.join("keys/debian-bookworm.asc"),
    )
    .unwrap();
    let text = fs::read_to_string(repo().join("recipes/python-cuda-images.toml")).unwrap();
    let text = replace_once(
        &text,
        "url = \"http://archive.ubuntu.com/ubuntu\"",
        "url = \"https://deb.debian.org/debian\"",
    );
    let text = replace_once(&text, "suite = \"noble\"", "suite = \"bookworm\"");
    let text = replace_once(
        &text,
        "signed-by = \"keys/ubuntu-archive.asc\"",
        "signed-by = \"keys/debian-bookworm.asc\"",
    );
    let text = replace_once(&text, "version = \"3.12\"", "version = \"3.11\"");
    assert!(text.contains("image = \"docker.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04\""));
    assert!(text.contains("lock = \"python-cuda-images/pylock.toml\""));
    let recipe = proj.join("python-cuda-images.toml");
    fs::write(&recipe, text).unwrap();
    let tag = "12.8.1-py3.12"; // the committed recipe's tag, unchanged

    let cmd = |cache: &Path| {
        let mut c = ocibuild();
        c.arg("--registries")
            .arg(&registries)
            .env("OCIBUILD_CACHE", cache)
            .env("REGISTRY_AUTH_FILE", &auth);
        c
    };

    // 3. Two cold builds (a fresh cache each): the first writes the lock, both give one image.
    let out_a = root.join("a");
    let a = json(&common::run(
        cmd(&root.join("cache-a"))
            .args(["build", "--json", "-o"])
            .arg(&out_a)
            .arg(&recipe),
    ));
    let lock = fs::read_to_string(proj.join("python-cuda-images.lock")).unwrap();
    assert!(
        lock.contains("reference = \"docker.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04\""),
        "{lock}"
    );
    for pkg in ["python3.11-minimal", "libpython3.11-stdlib"] {
        assert!(
            lock.contains(&format!("name = \"{pkg}\"")),
            "{pkg} not in the lock"
        );
    }
    // The base's dpkg status.d records are honoured: what it has is not installed again.
    for pkg in ["libc6", "libstdc++6"] {
        assert!(
            !lock.contains(&format!("name = \"{pkg}\"\n")),
            "{pkg} is in the base, yet the lock installs it again:\n{lock}"
        );
    }
    assert_eq!(a["python"]["version"], "3.11");
    let names: Vec<&str> = a["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap_or(""))
        .collect();
    for want in ["apt", "wheel-numpy", "app"] {
        assert!(names.contains(&want), "no layer {want}: {names:?}");
    }
    let out_b = root.join("b");
    let b = json(&common::run(
        cmd(&root.join("cache-b"))
            .args(["build", "--json", "--locked", "-o"])
            .arg(&out_b)
            .arg(&recipe),
    ));
    assert_eq!(
        a["manifest"], b["manifest"],
        "two cold builds of the seed recipe differ"
    );

    // 4. The app's unit tests in the image: by podman directly, and by the test stage.
    let o = podman_run_flags(
        &out_a,
        tag,
        &["--entrypoint=python3"],
        &["-m", "unittest", "discover", "-s", "/app/tests"],
    );
    let all = format!("{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "unit tests failed in the image:\n{all}");
    assert!(all.contains("OK"), "{all}");
    let o = common::run(
        cmd(&root.join("cache-a"))
            .args(["test", "--json", "--only", "unit-tests", "-o"])
            .arg(&out_a)
            .arg(&recipe),
    );
    let results = json(&o);
    assert!(
        results.to_string().contains("\"passed\""),
        "ocibuild test --only unit-tests: {results}"
    );

    // 5. The CLI (the image's entrypoint, python3 -m imgproc) on a PNG and a JPEG made in the
    //    container, then its outputs read back.
    const SCRIPT: &str = r#"
import os, subprocess, sys, tempfile
import numpy as np
from PIL import Image
d = tempfile.mkdtemp()
y, x = np.mgrid[0:48, 0:64]
rgb = np.stack([x * 4, y * 5, (x + y) * 2], axis=-1).astype(np.uint8)
Image.fromarray(rgb).save(os.path.join(d, "grad.png"))
Image.fromarray(rgb[::-1]).save(os.path.join(d, "photo.jpg"), quality=90)
r = subprocess.run([sys.executable, "-m", "imgproc", os.path.join(d, "grad.png"),
                    os.path.join(d, "photo.jpg"), "-o", os.path.join(d, "out"),
                    "--sigma", "1.5", "--scale", "0.5", "--device", "auto"],
                   capture_output=True, text=True)
print(r.stdout, end="")
print(r.stderr, end="", file=sys.stderr)
if r.returncode:
    sys.exit(r.returncode)
for name in ("grad.png", "photo.png"):
    im = Image.open(os.path.join(d, "out", name))
    a = np.asarray(im)
    print("OUT", name, im.format, im.mode, im.size, int(a.min()), int(a.max()))
"#;
    let o = podman_run_flags(&out_a, tag, &["--entrypoint=python3"], &["-c", SCRIPT]);
    let text = stdout(&o);
    assert!(
        o.status.success(),
        "the CLI failed in the image:\n{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for name in ["grad.png", "photo.png"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("OUT {name} ")))
            .unwrap_or_else(|| panic!("no output {name}:\n{text}"));
        assert!(line.contains("PNG L (32, 24)"), "{line}");
    }
    // And the entrypoint itself answers.
    let o = podman_run(&out_a, tag, &["--help"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // 6. verify: a rebuild from the lock in an empty store is bit-identical.
    let o = common::run(
        cmd(&root.join("cache-verify"))
            .args(["verify"])
            .arg(&recipe)
            .arg("--against")
            .arg(format!("oci:{}:{tag}", out_a.display())),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "ocibuild verify:\n{}{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );

    // 7. The SBOM names the base, the interpreter's packages and the wheels.
    let o = run_ok(
        cmd(&root.join("cache-a"))
            .args(["sbom", "--image"])
            .arg(format!("oci:{}:{tag}", out_a.display()))
            .arg(&recipe),
    );
    let sbom = stdout(&o);
    for purl in [
        "pkg:pypi/numpy@",
        "pkg:pypi/pillow@",
        "pkg:deb/debian/python3.11-minimal@",
    ] {
        assert!(sbom.contains(purl), "the SBOM lacks {purl}");
    }
    assert!(
        sbom.contains("nvidia/cuda"),
        "the SBOM does not name the base"
    );

    // 8. The seed Dockerfile itself, through `ocibuild import`, with the same stand-in changes
    //    (the Debian archive for Ubuntu's, its Python, the same pylock) and the same app: its
    //    image has the committed recipe's base, .debs and wheels byte for byte (the same
    //    layers), the same environment and working directory, and the Dockerfile's CMD where
    //    the committed recipe runs the app as a module on purpose (docs/from-dockerfile.md).
    let (_, dockerfile) = crate::import_corpus::CORPUS
        .iter()
        .find(|(n, _)| *n == "seed-cuda")
        .unwrap();
    let ctx = root.join("imported/ctx");
    copy_dir(&sub.join("app"), &ctx);
    fs::write(ctx.join("Dockerfile"), dockerfile).unwrap();
    let imp = root.join("imported/recipe");
    run_ok(
        ocibuild()
            .arg("import")
            .arg(ctx.join("Dockerfile"))
            .arg("--context")
            .arg(&ctx)
            .arg("-o")
            .arg(&imp),
    );
    let text = fs::read_to_string(imp.join("recipe.toml")).unwrap();
    let text = replace_once(
        &text,
        "url = \"http://archive.ubuntu.com/ubuntu\"",
        "url = \"https://deb.debian.org/debian\"",
    );
    let text = replace_once(&text, "suite = \"noble\"", "suite = \"bookworm\"");
    let text = replace_once(
        &text,
        "components = [\"main\", \"universe\"]",
        "components = [\"main\"]",
    );
    let text = replace_once(
        &text,
        "signed-by = \"keys/ubuntu-archive.asc\"",
        "signed-by = \"keys/debian-bookworm.asc\"",
    );
    let text = replace_once(&text, "version = \"3.12\"", "version = \"3.11\"");
    fs::write(imp.join("recipe.toml"), text).unwrap();
    fs::create_dir_all(imp.join("keys")).unwrap();
    fs::copy(
        repo().join("recipes/keys/debian-bookworm.asc"),
        imp.join("keys/debian-bookworm.asc"),
    )
    .unwrap();
    fs::copy(sub.join("pylock.toml"), imp.join("pylock.toml")).unwrap();
    let out_i = root.join("i");
    let i = json(&common::run(
        cmd(&root.join("cache-i"))
            .args(["build", "--json", "-o"])
            .arg(&out_i)
            .arg(imp.join("recipe.toml")),
    ));
    let layer_digests = |doc: &serde_json::Value, keep: &dyn Fn(&str) -> bool| {
        doc["layers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| keep(l["name"].as_str().unwrap_or("")))
            .map(|l| format!("{} {}", l["name"], l["digest"]))
            .collect::<Vec<_>>()
    };
    let shared = |n: &str| n.starts_with("base#") || n == "apt" || n.starts_with("wheel");
    assert_eq!(
        layer_digests(&i, &shared),
        layer_digests(&a, &shared),
        "the imported recipe's base, .debs and wheels differ from the seed recipe's"
    );
    let config = |layout: &Path, doc: &serde_json::Value| {
        let d = doc["config"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:");
        let c: serde_json::Value =
            serde_json::from_slice(&fs::read(layout.join("blobs/sha256").join(d)).unwrap())
                .unwrap();
        c["config"].clone()
    };
    let (ci, ca) = (config(&out_i, &i), config(&out_a, &a));
    assert_eq!(ci["Env"], ca["Env"]);
    assert_eq!(ci["WorkingDir"], ca["WorkingDir"]);
    assert_eq!(ci["Cmd"], serde_json::json!(["python3", "app.py"]));
    assert_eq!(
        ca["Entrypoint"],
        serde_json::json!(["python3", "-m", "imgproc"])
    );
}
