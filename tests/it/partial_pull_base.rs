//! Partial-pull bases (issue 38): a zstd:chunked base whose TOC lies is refused (and what
//! podman 4.3.1 does with it), and a base podman itself wrote as zstd:chunked is built on. The
//! helpers are partial_pull.rs's.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::registry::{auth_file, start_registry, PASS};
use crate::common::{self, ocibuild, run, run_ok, sha256_file, stderr, stdout, tempdir};
use crate::partial_pull::{blob_path, build, manifest, mixed_data, recipe, tools, Podman};

/// A zstd:chunked layer whose TOC lies (`Some(false)`: a file's digest that is not its
/// content's; `Some(true)`: another file's offsets past the end of the blob; `None`: no lie),
/// with annotations that match the lying TOC: the
/// blob is still a valid zstd stream of the right tar (skippable frames are skipped), so its
/// digest and diff_id are consistent. Returns the layout and the lying layer's digest.
fn lying_base(t: &Path, name: &str, lie: Option<bool>) -> (PathBuf, String) {
    use std::io::Write as _;
    let data = t.join("base-data");
    fs_err::create_dir_all(&data).unwrap();
    for i in 0..3 {
        common::write_pseudo_random(&data.join(format!("f{i}")), 50 + i, 200_000);
    }
    let r = recipe(t, "zstd:chunked", &data);
    let out = t.join(name);
    build(&mut ocibuild(), &r, &out);
    let m = manifest(&out);
    let layer = &m["layers"][0];
    let blob = fs_err::read(blob_path(&out, layer["digest"].as_str().unwrap())).unwrap();
    let Some(offsets) = lie else {
        // The honest layer, as built.
        return (out, layer["digest"].as_str().unwrap().to_string());
    };
    let notes = layer["annotations"].as_object().unwrap();
    let pos: Vec<usize> = notes["io.containers.zstd-chunked.manifest-position"]
        .as_str()
        .unwrap()
        .split(':')
        .map(|v| v.parse().unwrap())
        .collect();
    let mut toc: Value =
        serde_json::from_slice(&zstd::decode_all(&blob[pos[0]..pos[0] + pos[1]]).unwrap()).unwrap();
    let end = blob.len() as u64;
    for e in toc["entries"].as_array_mut().unwrap() {
        if !offsets && e["name"] == "data/f0" {
            e["digest"] = Value::from(common::sha256_bytes(b"not f0"));
        }
        if offsets && e["name"] == "data/f1" {
            e["offset"] = Value::from(end + 4096);
            e["endOffset"] = Value::from(end + 8192);
        }
    }
    let json = serde_json::to_vec(&toc).unwrap();
    let toc_z = zstd::encode_all(&json[..], 3).unwrap();
    let mut liar = blob[..pos[0] - 8].to_vec();
    liar.extend_from_slice(&[0x50, 0x2a, 0x4d, 0x18]);
    liar.extend_from_slice(&(toc_z.len() as u32).to_le_bytes());
    liar.extend_from_slice(&toc_z);
    liar.extend_from_slice(&blob[pos[0] + pos[1]..]);
    assert!(zstd::decode_all(&liar[..]).unwrap() == zstd::decode_all(&blob[..]).unwrap());
    let digest = common::sha256_bytes(&liar);
    fs_err::File::create(blob_path(&out, &digest))
        .unwrap()
        .write_all(&liar)
        .unwrap();
    let checksum = common::sha256_bytes(&toc_z);
    let position = format!("{}:{}:{}:1", pos[0], toc_z.len(), json.len());
    let mut m2 = m.clone();
    let l = &mut m2["layers"][0];
    l["digest"] = Value::from(digest.clone());
    l["size"] = Value::from(liar.len());
    for prefix in ["io.containers", "io.github.containers"] {
        l["annotations"][format!("{prefix}.zstd-chunked.manifest-checksum")] =
            Value::from(checksum.clone());
        l["annotations"][format!("{prefix}.zstd-chunked.manifest-position")] =
            Value::from(position.clone());
    }
    let bytes = serde_json::to_vec(&m2).unwrap();
    let mdigest = common::sha256_bytes(&bytes);
    fs_err::write(blob_path(&out, &mdigest), &bytes).unwrap();
    let mut index: Value =
        serde_json::from_slice(&fs_err::read(out.join("index.json")).unwrap()).unwrap();
    index["manifests"][0]["digest"] = Value::from(mdigest);
    index["manifests"][0]["size"] = Value::from(bytes.len());
    fs_err::write(out.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
    (out, digest)
}

/// Bad input (issue 38): a zstd:chunked base whose TOC lies. ocibuild never reads a base's
/// files through its TOC: it downloads the whole blob and checks its digest (a registry serving
/// other bytes under that digest fails the build), and it checks the TOC against the layer
/// before passing it on, refusing a base whose TOC would make a trusting puller build other
/// files; an honest one is taken byte for byte, annotations included. What podman 4.3.1 makes
/// of the lying TOCs is printed (informative: podman's behaviour, not ours).
#[test]
fn a_base_whose_toc_lies_is_refused_and_blobs_are_checked_by_their_digest() {
    if !common::require_tools_all(&["docker-registry"]) {
        return;
    }
    let reg = start_registry(None);
    let t = tempdir();
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let push = |name: &str, lie: Option<bool>| {
        let (layout, layer) = lying_base(t.path(), name, lie);
        let base = format!("{}/base/{name}:1", reg.addr);
        let pushed = run_ok(
            ocibuild()
                .env("REGISTRY_AUTH_FILE", &auth)
                .args(["push", "--json"])
                .arg(format!("{}:v", layout.display()))
                .arg(&base),
        );
        let pushed: Value = serde_json::from_slice(&pushed.stdout).unwrap();
        let pinned = format!("{base}@{}", pushed["digest"].as_str().unwrap());
        (base, pinned, layer)
    };
    let (_, honest_pinned, honest_layer) = push("honest", None);
    let (offsets, offsets_pinned, _) = push("offsets", Some(true));
    let (digest, digest_pinned, _) = push("digest", Some(false));

    let registries = t.path().join("registries.toml");
    let registry = format!(
        "[[registry]]\nname = \"{}\"\ninsecure-http = true\n",
        reg.addr
    );
    fs_err::write(&registries, registry).unwrap();
    fs_err::create_dir_all(t.path().join("app")).unwrap();
    fs_err::write(t.path().join("app/x"), "x\n").unwrap();
    let app_build = |base: &str, cache: &str, out: &str| {
        let app = t.path().join(format!("{out}.toml"));
        fs_err::write(
            &app,
            format!(
                "[image]\nname = \"app\"\ntag = \"v\"\ncompression = \"zstd:chunked\"\n\n\
                 [base]\nimage = \"{base}\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\n\
                 dest = \"/app\"\n"
            ),
        )
        .unwrap();
        run(ocibuild()
            .env("REGISTRY_AUTH_FILE", &auth)
            .env("OCIBUILD_CACHE", t.path().join(cache))
            .arg("--registries")
            .arg(&registries)
            .args(["build", "--json", "-o"])
            .arg(t.path().join(out))
            .arg(&app))
    };
    let o = app_build(&honest_pinned, "cache-ok", "app-ok");
    common::assert_success(&o, "build on the honest zstd:chunked base");
    let built = manifest(&t.path().join("app-ok"));
    let base_layer = &manifest(&t.path().join("honest"))["layers"][0];
    assert_eq!(built["layers"][0]["digest"], honest_layer.as_str());
    assert_eq!(
        built["layers"][0]["annotations"], base_layer["annotations"],
        "the base's layer descriptor as the base has it"
    );
    let copied = fs_err::read(blob_path(&t.path().join("app-ok"), &honest_layer)).unwrap();
    assert_eq!(common::sha256_bytes(&copied), honest_layer);

    for (pinned, says) in [
        (&offsets_pinned, "places `data/f1` at"),
        (&digest_pinned, "gives `data/f0` 200000 bytes of sha256:"),
    ] {
        let o = app_build(pinned, "cache-liar", "app-liar");
        assert!(!o.status.success(), "{}", stdout(&o));
        let err = stderr(&o);
        assert!(
            err.contains("partial-pull table of contents") && err.contains(says),
            "{err}"
        );
        println!("ocibuild on {pinned}: {}", err.trim());
    }

    if common::which("podman").is_some() {
        for image in [&offsets, &digest] {
            // A storage each: both images have the same config, so the same image ID.
            let podman = Podman::new(&auth);
            let o = run(podman
                .cmd()
                .args(["--log-level", "debug", "pull", "--tls-verify=false"])
                .arg("--authfile")
                .arg(&auth)
                .arg(image));
            let text = stderr(&o);
            let words = ["Missing", "partial", "checksum", "Error", "level=warn"];
            let said: Vec<&str> = text
                .lines()
                .filter(|l| words.iter().any(|w| l.contains(w)) && !l.contains("Ping"))
                .collect();
            let outcome = if o.status.success() {
                "succeeded"
            } else {
                "failed"
            };
            println!(
                "podman pull of {image}: {outcome}; it said:\n{}",
                said.join("\n")
            );
            if o.status.success() {
                let mounted = stdout(&run_ok(podman.cmd().args(["image", "mount", image])));
                let root = Path::new(mounted.trim());
                let files: Vec<String> = (0..3)
                    .map(|i| {
                        let f = format!("f{i}");
                        let want = sha256_file(&t.path().join("base-data").join(&f)).unwrap();
                        match sha256_file(&root.join("data").join(&f)) {
                            Ok(got) if got == want => format!("{f} ok"),
                            Ok(_) => format!("{f} DIFFERS"),
                            Err(_) => format!("{f} MISSING"),
                        }
                    })
                    .collect();
                println!("podman's image of {image}: {}", files.join(", "));
                run_ok(podman.cmd().args(["image", "unmount", image]));
            }
        }
    }

    // The registry now serves other bytes under the honest layer's digest: one byte of a
    // file's frame flipped. A fresh store downloads the blob, and its digest check stops the
    // build.
    let hex = honest_layer.trim_start_matches("sha256:");
    let on_disk = reg
        .data_dir()
        .join("docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data");
    let mut bytes = fs_err::read(&on_disk).unwrap();
    bytes[600] ^= 0xff;
    fs_err::write(&on_disk, &bytes).unwrap();
    let o = app_build(&honest_pinned, "cache-fresh", "app-bad");
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("has digest sha256:") && stderr(&o).contains(hex),
        "{}",
        stderr(&o)
    );
    println!("ocibuild on the tampered blob: {}", stderr(&o).trim());
}

/// The base TOC check against the reference writer: an image podman 4.3.1 pushes as
/// zstd:chunked (containers/storage 1.43's writer: its TOC, the old annotation names) is built
/// on, the TOC checked and found to describe the layer.
#[test]
fn a_zstd_chunked_base_that_podman_wrote_is_built_on() {
    if !tools() {
        return;
    }
    let reg = start_registry(None);
    let t = tempdir();
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let data = t.path().join("data");
    mixed_data(&data);
    let r = recipe(t.path(), "gzip", &data);
    let out = t.path().join("gz");
    build(&mut ocibuild(), &r, &out);
    let podman = Podman::new(&auth);
    let alias = common::podman_alias(&out);
    let local = stdout(&run_ok(podman.cmd().args([
        "pull",
        "-q",
        &alias.image_ref("v"),
    ])));
    let base = format!("{}/base/podman:1", reg.addr);
    run_ok(
        podman
            .cmd()
            .args(["push", "--compression-format", "zstd:chunked"])
            .args(["--tls-verify=false", "--authfile"])
            .arg(&auth)
            .arg(local.trim())
            .arg(&base),
    );
    let inspected = run_ok(
        Command::new("skopeo")
            .args(["inspect", "--raw", "--tls-verify=false", "--authfile"])
            .arg(&auth)
            .arg(format!("docker://{base}")),
    );
    let m: Value = serde_json::from_slice(&inspected.stdout).unwrap();
    let layer = &m["layers"][0];
    assert!(
        layer["annotations"]["io.containers.zstd-chunked.manifest-checksum"].is_string(),
        "{m:#}"
    );
    let pinned = format!("{base}@{}", common::sha256_bytes(&inspected.stdout));

    let registries = t.path().join("registries.toml");
    let registry = format!(
        "[[registry]]\nname = \"{}\"\ninsecure-http = true\n",
        reg.addr
    );
    fs_err::write(&registries, registry).unwrap();
    fs_err::create_dir_all(t.path().join("app")).unwrap();
    fs_err::write(t.path().join("app/x"), "x\n").unwrap();
    let app = t.path().join("app.toml");
    fs_err::write(
        &app,
        format!(
            "[image]\nname = \"app\"\ntag = \"v\"\n\n[base]\nimage = \"{pinned}\"\n\n\
             [[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n"
        ),
    )
    .unwrap();
    let cache = t.path().join("cache");
    let o = run(ocibuild()
        .env("REGISTRY_AUTH_FILE", &auth)
        .env("OCIBUILD_CACHE", &cache)
        .arg("--registries")
        .arg(&registries)
        .args(["build", "-o"])
        .arg(t.path().join("app-out"))
        .arg(&app));
    common::assert_success(&o, "build on podman's zstd:chunked base");
    let built = manifest(&t.path().join("app-out"));
    assert_eq!(built["layers"][0]["digest"], layer["digest"]);
    // The check ran (and is remembered): its fact is in the store.
    let facts: Vec<String> = fs_err::read_dir(cache.join("meta"))
        .unwrap()
        .map(|e| fs_err::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(
        facts.iter().any(|f| f.contains("matches the layer")),
        "{facts:?}"
    );
}
