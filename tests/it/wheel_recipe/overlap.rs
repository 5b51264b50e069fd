//! Paths that several wheels install, through the recipe (issue 16): the nvidia-*-cu12 case of
//! one identical `nvidia/__init__.py` in three wheels, each big enough for a layer of its own;
//! different content (refused, naming both wheels and sha256s); `overlap = "last"`; the layer
//! size bound; and a shared library the base image already has.

use fs_err as fs;
use std::path::{Path, PathBuf};

use super::aptfix::{self, fixture, python_universe, Data, Fixture};
use super::common::{self, ocibuild, run, run_ok, stdout, tar_listing, tempdir};
use super::no_tweak;
use super::wheelfix::make_wheel;
use serde_json::Value;

const SITE: &str = "usr/local/lib/python3.12/dist-packages";

/// Incompressible bytes: a 9 MiB library makes its wheel "big" (a layer of its own).
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Three nvidia-* wheels, each with `nvidia/__init__.py` (the third's is `third_init`) and a
/// 9 MiB `nvidia/<x>/lib/lib<x>.so.12`. Returns the pylock's path.
fn project(dir: &Path, third_init: &[u8]) -> PathBuf {
    let wd = dir.join("wheels");
    fs::create_dir_all(&wd).unwrap();
    let mut text = String::from(
        "lock-version = \"1.0\"\ncreated-by = \"test\"\nrequires-python = \">=3.11\"\n",
    );
    for (i, x) in ["cudart", "nvrtc", "cufile"].iter().enumerate() {
        let init: &[u8] = if i == 2 { third_init } else { b"" };
        let lib = format!("nvidia/{x}/lib/lib{x}.so.12");
        let body = noise(9 << 20, i as u64 + 7);
        let w = make_wheel(
            &wd,
            &format!("nvidia_{x}-12.0-py3-none-any.whl"),
            &[
                ("nvidia/__init__.py", init, 0o644),
                (lib.as_str(), &body, 0o755),
                (
                    &format!("nvidia_{x}-12.0.dist-info/METADATA"),
                    format!("Name: nvidia-{x}\nVersion: 12.0\n").as_bytes(),
                    0o644,
                ),
            ],
            true,
            &no_tweak,
        );
        let f = &w.file.filename;
        let size = fs::metadata(&w.path).unwrap().len();
        text.push_str(&format!(
            "\n[[packages]]\nname = \"nvidia-{x}\"\nversion = \"12.0\"\nwheels = [{{ name = \"{f}\", path = \"wheels/{f}\", size = {size}, hashes = {{ sha256 = \"{}\" }} }}]\n",
            w.sha256.hex()
        ));
    }
    let p = dir.join("pylock.toml");
    fs::write(&p, text).unwrap();
    p
}

fn recipe(dir: &Path, f: &Fixture, base: Option<&str>, python_extra: &str) -> PathBuf {
    let base = base
        .map(|b| format!("[base]\nimage = \"{b}\"\n"))
        .unwrap_or_default();
    let text = format!(
        "[image]\nname = \"example.com/nv\"\nplatform = \"linux/amd64\"\n{base}\n{}\n[apt]\npackages = [\"python3\"]\n\n[python]\nlock = \"pylock.toml\"\n{python_extra}\n",
        aptfix::source_toml(f, &f.key),
    );
    let p = dir.join("app.toml");
    fs::write(&p, text).unwrap();
    p
}

fn layer_listing(out: &Path, v: &Value, name: &str) -> Vec<String> {
    tar_listing(&super::layer(out, v, name).1)
}

fn build(recipe: &Path, out: &Path, cache: &Path) -> std::process::Output {
    run(ocibuild()
        .env("OCIBUILD_CACHE", cache)
        .args(["build", "--json", "-o"])
        .arg(out)
        .arg(recipe))
}

#[test]
fn one_namespace_file_from_three_wheels_in_separate_layers() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    project(t.path(), b"");
    let r = recipe(t.path(), &f, None, "");
    let out = t.path().join("img");
    let o = build(&r, &out, &t.path().join("cache"));
    common::assert_success(&o, "build");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let init = format!("f 0644 0:0 {SITE}/nvidia/__init__.py");
    for x in ["cudart", "nvrtc", "cufile"] {
        // Each wheel layer is a complete install of its wheel, the shared file included.
        let listing = layer_listing(&out, &v, &format!("wheel-nvidia-{x}"));
        assert!(listing.contains(&init), "{x}: {listing:?}");
    }
    let shared = &v["wheels"]["sharedFiles"];
    assert_eq!(
        shared,
        &serde_json::json!([{
            "path": format!("/{SITE}/nvidia/__init__.py"),
            "wheels": ["nvidia-cudart", "nvidia-cufile", "nvidia-nvrtc"],
        }]),
        "{v:#}"
    );
    // Every wheel's RECORD lists the shared file, as after pip.
    let unpacked = t.path().join("unpacked");
    fs::create_dir(&unpacked).unwrap();
    for l in v["layers"].as_array().unwrap() {
        let d = l["digest"].as_str().unwrap().trim_start_matches("sha256:");
        run_ok(
            std::process::Command::new("tar")
                .arg("-xzf")
                .arg(out.join("blobs/sha256").join(d))
                .arg("-C")
                .arg(&unpacked),
        );
    }
    for x in ["cudart", "nvrtc", "cufile"] {
        let record =
            fs::read_to_string(unpacked.join(format!("{SITE}/nvidia_{x}-12.0.dist-info/RECORD")))
                .unwrap();
        assert!(
            record.contains(
                "nvidia/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n"
            ),
            "{x}: {record}"
        );
    }
    // --no-cache (the analysis read again too) gives the same image.
    let o3 = run(ocibuild()
        .env("OCIBUILD_CACHE", t.path().join("cache"))
        .args(["build", "--json", "--no-cache", "-o"])
        .arg(t.path().join("img4"))
        .arg(&r));
    common::assert_success(&o3, "--no-cache build");
    let n: Value = serde_json::from_str(&stdout(&o3)).unwrap();
    assert_eq!(n["manifest"], v["manifest"]);
    // A second build is all cache hits and reports the same.
    let again = build(&r, &t.path().join("img2"), &t.path().join("cache"));
    let w: Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!(w["manifest"], v["manifest"]);
    assert_eq!(w["wheels"], v["wheels"]);
    assert!(w["layers"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["cached"] == true));
}

#[test]
fn different_content_is_refused_unless_overlap_last() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    project(t.path(), b"# the cufile wheel's own\n");
    let r = recipe(t.path(), &f, None, "");
    let out = t.path().join("img");
    let o = build(&r, &out, &t.path().join("cache"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    let cufile = ocibuild::digest::Digest::of(b"# the cufile wheel's own\n").hex();
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        errors,
        [format!(
            "error: [python] wheels: `/{SITE}/nvidia/__init__.py` is installed with different \
             content by nvidia_cudart-12.0-py3-none-any.whl (sha256 \
             e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855, mode 644) and by \
             nvidia_cufile-12.0-py3-none-any.whl (sha256 {cufile}, mode 644): set `[python] \
             overlap = \"last\"` to install the file of the wheel later in lock order"
        )],
        "one line, the cause said once: {err}"
    );
    assert!(!out.exists(), "nothing written");

    // Opted in: the last wheel in lock order (nvidia-nvrtc, by name) wins over the others.
    let r = recipe(t.path(), &f, None, "overlap = \"last\"");
    let o = build(&r, &out, &t.path().join("cache"));
    common::assert_success(&o, "build with overlap = last");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["wheels"]["replacedFiles"],
        serde_json::json!([{
            "path": format!("/{SITE}/nvidia/__init__.py"),
            "installedBy": "nvidia-nvrtc",
            "leftOutBy": ["nvidia-cudart", "nvidia-cufile"],
        }])
    );
    let init = format!("f 0644 0:0 {SITE}/nvidia/__init__.py");
    assert!(layer_listing(&out, &v, "wheel-nvidia-nvrtc").contains(&init));
    for x in ["cudart", "cufile"] {
        assert!(!layer_listing(&out, &v, &format!("wheel-nvidia-{x}")).contains(&init));
    }
}

#[test]
fn a_wheel_over_the_layer_size_bound_is_refused() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    project(t.path(), b"");
    let r = recipe(t.path(), &f, None, "max-layer-size = \"5MB\"");
    let out = t.path().join("img");
    let o = build(&r, &out, &t.path().join("cache"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("[python] wheels: wheel `nvidia-cudart` is ")
            && err.contains("bytes, over the wheel layer size bound of 5000000 bytes (`[python] max-layer-size`)"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");
    let r = recipe(t.path(), &f, None, "max-layer-size = \"5 parsecs\"");
    let o = run(ocibuild().args(["build", "-o"]).arg(&out).arg(&r));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("[python]: invalid max-layer-size: `5 parsecs`"),
        "{err}"
    );
}

/// A base image (pushed to docker-registry) that ships `libcudart.so.12` under
/// /usr/local/cuda, and a wheel that ships it again: reported, nothing changed.
#[test]
fn a_library_the_base_already_ships_is_reported() {
    if !(common::require_tool("docker-registry") && common::require_tool("skopeo")) {
        return;
    }
    let reg = common::registry::start_registry(None);
    let addr = reg.addr.clone();
    let t = tempdir();
    // The base: one layer with the library (a real file) and its soname link.
    let bdir = t.path().join("base");
    fs::create_dir_all(bdir.join("root/usr/local/cuda/lib64")).unwrap();
    fs::write(
        bdir.join("root/usr/local/cuda/lib64/libcudart.so.12.8.90"),
        noise(4096, 3),
    )
    .unwrap();
    fs_err::os::unix::fs::symlink(
        "libcudart.so.12.8.90",
        bdir.join("root/usr/local/cuda/lib64/libcudart.so.12"),
    )
    .unwrap();
    fs::write(
        bdir.join("base.toml"),
        "[image]\nname = \"localhost/cudabase\"\ntag = \"b\"\n[[layer]]\nname = \"cuda\"\nsrc = \"root\"\ndest = \"/\"\n",
    )
    .unwrap();
    let layout = bdir.join("layout");
    run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", t.path().join("cache"))
            .arg("build")
            .arg(bdir.join("base.toml"))
            .arg("-o")
            .arg(&layout),
    );
    run_ok(
        std::process::Command::new("skopeo")
            .args(["copy", "--quiet", "--dest-tls-verify=false", "--dest-creds"])
            .arg(format!(
                "{}:{}",
                common::registry::USER,
                common::registry::PASS
            ))
            .arg(format!("oci:{}:b", layout.display()))
            .arg(format!("docker://{addr}/cudabase:b")),
    );
    let registries = t.path().join("registries.toml");
    fs::write(
        &registries,
        format!("[[registry]]\nname = \"{addr}\"\ninsecure-http = true\n"),
    )
    .unwrap();
    let auth = common::registry::auth_file(t.path(), &addr, common::registry::PASS);

    let f = fixture(&python_universe(), false);
    project(t.path(), b"");
    let r = recipe(t.path(), &f, Some(&format!("{addr}/cudabase:b")), "");
    let out = t.path().join("img");
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", t.path().join("cache"))
        .env("REGISTRY_AUTH_FILE", &auth)
        .arg("--registries")
        .arg(&registries)
        .args(["build", "--json", "-o"])
        .arg(&out)
        .arg(&r));
    common::assert_success(&o, "build on the CUDA-like base");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let dups = v["wheels"]["duplicateLibraries"].as_array().unwrap();
    assert_eq!(dups.len(), 1, "{v:#}");
    assert_eq!(dups[0]["soname"], "libcudart.so.12");
    assert_eq!(dups[0]["origin"], "base");
    assert_eq!(
        dups[0]["basePath"],
        "/usr/local/cuda/lib64/libcudart.so.12.8.90"
    );
    assert_eq!(dups[0]["baseSize"], 4096);
    assert_eq!(dups[0]["wheel"], "nvidia-cudart");
    assert_eq!(
        dups[0]["wheelPath"],
        format!("/{SITE}/nvidia/cudart/lib/libcudart.so.12")
    );
    assert_eq!(dups[0]["wastedBytes"], 9 << 20);
    // Without --json, a note says the same on stderr.
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", t.path().join("cache"))
        .env("REGISTRY_AUTH_FILE", &auth)
        .arg("--registries")
        .arg(&registries)
        .args(["build", "-o"])
        .arg(&out)
        .arg(&r));
    common::assert_success(&o, "second build");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("note: libcudart.so.12 is in the base at /usr/local/cuda/lib64/libcudart.so.12.8.90 and installed again by wheel nvidia-cudart at /{SITE}/nvidia/cudart/lib/libcudart.so.12 (9.44 MB twice)")),
        "{err}"
    );
}

/// Debian's CUDA packages and the nvidia-* wheels in one image (Debian's libcudart12 beside
/// nvidia-cuda-runtime-cu12): the same library twice, reported as the base's copy is, with the
/// apt layer as its origin; `--json` names the origin, the text says "apt layer".
#[test]
fn a_library_a_debian_package_ships_is_reported() {
    let t = tempdir();
    let mut universe = python_universe();
    universe.push(
        aptfix::deb("libcudart12", "12.4.127-2")
            .data(Data::Dir("./usr/lib/"))
            .data(Data::Dir("./usr/lib/x86_64-linux-gnu/"))
            .data(Data::File(
                "./usr/lib/x86_64-linux-gnu/libcudart.so.12.4.127",
                "ELF Debian's libcudart\n",
                0o644,
            ))
            .data(Data::Symlink(
                "./usr/lib/x86_64-linux-gnu/libcudart.so.12",
                "libcudart.so.12.4.127",
            )),
    );
    let f = fixture(&universe, false);
    project(t.path(), b"");
    let text = format!(
        "[image]\nname = \"example.com/nv\"\nplatform = \"linux/amd64\"\n\n{}\n[apt]\npackages = [\"python3\", \"libcudart12\"]\n\n[python]\nlock = \"pylock.toml\"\n",
        aptfix::source_toml(&f, &f.key),
    );
    let r = t.path().join("app.toml");
    fs::write(&r, text).unwrap();
    let out = t.path().join("img");
    let cache = t.path().join("cache");
    let o = build(&r, &out, &cache);
    common::assert_success(&o, "build with libcudart12 and nvidia-cudart");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let dups = v["wheels"]["duplicateLibraries"].as_array().unwrap();
    assert_eq!(dups.len(), 1, "{v:#}");
    assert_eq!(dups[0]["soname"], "libcudart.so.12");
    assert_eq!(dups[0]["origin"], "apt");
    assert_eq!(
        dups[0]["basePath"],
        "/usr/lib/x86_64-linux-gnu/libcudart.so.12.4.127"
    );
    assert_eq!(dups[0]["wheel"], "nvidia-cudart");
    assert_eq!(dups[0]["wastedBytes"], 9 << 20);
    // A second build takes the apt layer from the cache and its libraries from the store's
    // record of them: the same note on stderr.
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", &cache)
        .args(["build", "-o"])
        .arg(&out)
        .arg(&r));
    common::assert_success(&o, "second build");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("note: libcudart.so.12 is in the apt layer at /usr/lib/x86_64-linux-gnu/libcudart.so.12.4.127 and installed again by wheel nvidia-cudart at /{SITE}/nvidia/cudart/lib/libcudart.so.12 (9.44 MB twice)")),
        "{err}"
    );
}

/// `n` one-file [[layer]]s (124: with the apt and rootfs layers, room for one wheel layer under
/// the bound of 127).
fn many_layers(dir: &Path, recipe: &Path, n: usize) {
    let mut text = fs::read_to_string(recipe).unwrap();
    for i in 0..n {
        let d = dir.join(format!("l{i:03}"));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("f"), format!("{i}\n")).unwrap();
        text.push_str(&format!(
            "\n[[layer]]\nname = \"l{i:03}\"\nsrc = \"l{i:03}\"\ndest = \"/l/{i:03}\"\n"
        ));
    }
    fs::write(recipe, text).unwrap();
}

#[test]
fn the_image_layer_bound_merges_wheel_layers_or_says_why_it_cannot() {
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    project(t.path(), b"");
    let r = recipe(t.path(), &f, None, "");
    many_layers(t.path(), &r, 124);
    let out = t.path().join("img");
    let o = build(&r, &out, &t.path().join("cache"));
    common::assert_success(&o, "build with room for one wheel layer");
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let layers = v["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 127);
    let wheel_layers: Vec<&str> = layers
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .filter(|n| n.starts_with("wheel"))
        .collect();
    assert_eq!(wheel_layers, ["wheels-nvidia-cudart-and-2-more"]);
    // The merged layer still has the shared file once.
    let init = format!("f 0644 0:0 {SITE}/nvidia/__init__.py");
    let listing = layer_listing(&out, &v, "wheels-nvidia-cudart-and-2-more");
    assert_eq!(listing.iter().filter(|l| **l == init).count(), 1);

    // Two 9 MiB wheels fit in 20 MB, three do not: the count cannot be met.
    let text = fs::read_to_string(&r)
        .unwrap()
        .replace("[python]\n", "[python]\nmax-layer-size = \"20MB\"\n");
    fs::write(&r, text).unwrap();
    let out2 = t.path().join("img2");
    let o = build(&r, &out2, &t.path().join("cache"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("[python] wheels: the wheels need 2 layers, and merging any two more would pass the wheel layer size bound of 20000000 bytes (`[python] max-layer-size`); the image may have 1 wheel layers (at most 127 layers in all, base included)"),
        "{err}"
    );
    assert!(!out2.exists());

    // Without wheels, more than 127 layers is refused too.
    let t = tempdir();
    let r = t.path().join("plain.toml");
    fs::write(&r, "[image]\nname = \"example.com/many\"\n").unwrap();
    many_layers(t.path(), &r, 128);
    let out = t.path().join("img");
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", t.path().join("cache"))
        .args(["build", "-o"])
        .arg(&out)
        .arg(&r));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("the image would have 128 layers (0 from the base), more than the 127 an image may have"),
        "{err}"
    );
    assert!(!out.exists());
}
