//! Online (OCIBUILD_ONLINE=1), issue 38: the app-change rebuild of a wheel-heavy image pulled
//! partially. Debian 13's python3 with numpy, pillow and opencv-python-headless from PyPI (a
//! uv pylock) and an app of 40 files, as zstd:chunked and as eStargz, pushed to Debian's
//! docker-registry and pulled by the podman here (4.3.1) with partial pulls on. The second
//! version (one app file changed) fetches none of the wheel layers and at most 5 % of the app
//! layer; the files podman assembled are the source's, and the image imports the three.

use std::path::Path;

use fs_err as fs;
use serde_json::Value;

use crate::common::registry::{auth_file, start_registry, PASS};
use crate::common::{self, ocibuild, run_ok, sha256_file, stdout, tempdir};
use crate::online_debian::TRIXIE;
use crate::online_wheels::{python_recipe, uv, uv_lock};
use crate::partial_pull::{build, manifest, served, tools, write_data, Podman};

const MIB: u64 = 1 << 20;

#[test]
fn a_wheel_heavy_app_change_pulls_only_the_changed_app_file() {
    if !common::online("numpy, pillow and opencv from PyPI, Debian 13's python3") || !tools() {
        return;
    }
    let t = tempdir();
    let uv = uv(t.path());
    uv_lock(
        &uv,
        t.path(),
        "numpy\npillow\nopencv-python-headless\n",
        &TRIXIE,
    );
    let base = fs::read_to_string(python_recipe(t.path(), &TRIXIE)).unwrap();
    let app = t.path().join("app");
    let reg = start_registry(None);
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let cache = t.path().join("cache");
    for (i, compression) in ["zstd:chunked", "estargz"].into_iter().enumerate() {
        let seed = 0x3900 + 100 * i as u64;
        write_data(&app, seed, seed + 17);
        let r = t.path().join("app.toml");
        let text = base.replacen(
            "[image]\n",
            &format!("[image]\ncompression = \"{compression}\"\n"),
            1,
        ) + "\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n";
        fs::write(&r, text).unwrap();
        let repo = format!("{}/pp/wheels-{}", reg.addr, compression.replace(':', "-"));
        let build_push = |out: &Path, tag: &str| -> Value {
            let doc = build(ocibuild().env("OCIBUILD_CACHE", &cache), &r, out);
            run_ok(
                ocibuild()
                    .env("REGISTRY_AUTH_FILE", &auth)
                    .args(["push", "-q"])
                    .arg(format!("{}:3.13", out.display()))
                    .arg(format!("{repo}:{tag}")),
            );
            doc
        };
        let v1 = t.path().join(format!("v1-{i}"));
        let doc1 = build_push(&v1, "1");
        let podman = Podman::new(&auth);
        podman.pull(&format!("{repo}:1"));

        write_data(&app, seed, seed + 1000);
        let v2 = t.path().join(format!("v2-{i}"));
        let doc2 = build_push(&v2, "2");
        let mark = reg.log_text().len();
        let log = podman.pull(&format!("{repo}:2"));
        let served_log = reg.log_text()[mark..].to_string();
        let layers = manifest(&v2)["layers"].as_array().unwrap().clone();
        let names: Vec<&str> = doc2["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["name"].as_str().unwrap())
            .collect();
        assert!(
            [
                "wheel-numpy",
                "wheel-opencv-python-headless",
                "wheel-pillow"
            ]
            .iter()
            .all(|n| names.contains(n)),
            "{names:?}"
        );
        let (mut image_bytes, mut fetched) = (0, 0);
        for (l, name) in layers.iter().zip(&names) {
            let digest = l["digest"].as_str().unwrap();
            let size = l["size"].as_u64().unwrap();
            let (bytes, _) = served(&served_log, digest);
            image_bytes += size;
            fetched += bytes;
            if *name == "app" {
                assert!(
                    bytes >= MIB,
                    "{compression}: the changed file was fetched: {bytes}"
                );
                assert!(
                    bytes * 20 <= size,
                    "{compression}: at most 5 % of {size}: {bytes}"
                );
                println!(
                    "{compression}: app layer: {bytes} of {size} bytes fetched ({:.2} %)",
                    bytes as f64 * 100.0 / size as f64
                );
            } else {
                assert_eq!(bytes, 0, "{compression}: layer {name} is v1's: not fetched");
                assert_eq!(
                    doc1["layers"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|x| x["name"] == *name)
                        .unwrap()["digest"],
                    digest,
                    "{compression}: {name} unchanged by an app change"
                );
            }
        }
        println!(
            "{compression}: v2 pull fetched {fetched} of the image's {image_bytes} layer bytes \
             ({:.3} %)",
            fetched as f64 * 100.0 / image_bytes as f64
        );
        let missing = format!("Missing {MIB} bytes out of {} (2.50 %)", 40 * MIB);
        assert!(log.contains(&missing), "no `{missing}` in:\n{log}");

        let image = format!("{repo}:2");
        let mounted = stdout(&run_ok(podman.cmd().args(["image", "mount", &image])));
        let root = Path::new(mounted.trim());
        for k in 0..40 {
            let name = format!("f{k:02}");
            assert_eq!(
                sha256_file(&root.join("app").join(&name)).unwrap(),
                sha256_file(&app.join(&name)).unwrap(),
                "{compression}: /app/{name}"
            );
        }
        run_ok(podman.cmd().args(["image", "unmount", &image]));
        let o = run_ok(
            podman
                .cmd()
                .arg("run")
                .arg("--rm")
                .args(common::podman_args())
                .arg(&image)
                .args([
                    "python3",
                    "-c",
                    "import numpy, PIL.Image, cv2; a = numpy.zeros((4, 6), numpy.uint8); \
                     print(cv2.resize(a, (3, 2)).shape, PIL.Image.fromarray(a).size)",
                ]),
        );
        assert_eq!(stdout(&o).trim(), "(2, 3) (6, 4)", "{compression}");
    }
}
