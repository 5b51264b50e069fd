//! `ocibuild report --against` and `diff`'s package summary, v1 → v2 of an image with apt
//! packages, wheels and an app (tests/it/report.rs's image; v2 adds a .deb and changes a text
//! file of the app), and both pages rendered by headless Chromium (Debian's `chromium`): the
//! numbers in the rendered DOM equal the `--json` document's, and a screenshot is taken.

use crate::common::{self, ocibuild, run_ok, stdout};
use crate::report::{app_image, attr};

use fs_err as fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Chromium, headless, on `page`: the DOM after it loaded (its script run), and a screenshot
/// into `shot`.
fn chromium(page: &Path, shot: &Path, profile: &Path) -> String {
    let base = |c: &mut Command| {
        c.args(["--headless=new", "--no-sandbox", "--disable-gpu"])
            .arg(format!("--user-data-dir={}", profile.display()))
            // No network is needed: the page refers to nothing outside itself.
            .arg("--proxy-server=127.0.0.1:9")
            .env("HOME", profile);
    };
    let mut dump = Command::new("chromium");
    base(&mut dump);
    dump.arg("--dump-dom")
        .arg(format!("file://{}", page.display()));
    let dom = stdout(&run_ok(&mut dump));
    let mut shoot = Command::new("chromium");
    base(&mut shoot);
    shoot
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,2400")
        .arg(format!("file://{}", page.display()));
    run_ok(&mut shoot);
    let png = fs::read(shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "no screenshot");
    assert!(
        png.len() > 10_000,
        "an empty screenshot: {} bytes",
        png.len()
    );
    dom
}

fn report_json(args: &[&str]) -> Value {
    let o = run_ok(ocibuild().arg("report").args(args).arg("--json"));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// v2 of the image in `dir`: `tool` added to `[apt] packages`, the app's main.py changed, a
/// tag `v2`; built into `v2.oci`.
fn build_v2(dir: &Path, recipe: &Path) -> PathBuf {
    let text = fs::read_to_string(recipe)
        .unwrap()
        .replace(
            "packages = [\"python3\"]",
            "packages = [\"python3\", \"tool\"]",
        )
        .replace("tag = \"v1\"", "tag = \"v2\"");
    fs::write(recipe, text).unwrap();
    fs::write(
        dir.join("app/main.py"),
        "print('hello')\nprint('version 2')\n",
    )
    .unwrap();
    let out = dir.join("v2.oci");
    run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", dir.join("cache"))
            .args(["build", "-o"])
            .arg(&out)
            .arg(recipe),
    );
    out
}

#[test]
fn report_against_v1_json_page_and_chromium_agree() {
    if !common::require_tool("chromium") {
        return;
    }
    let dir = common::test_dir("page");
    let v1 = app_image(&dir);
    let v1_ref = format!("oci:{}:v1", v1.out.display());
    let v2 = build_v2(&dir, &v1.recipe);
    let v2_ref = format!("oci:{}:v2", v2.display());

    // The JSON: packages, files, the pull.
    let doc = report_json(&[&v2_ref, "--against", &v1_ref]);
    let against = &doc["against"];
    assert_eq!(against["source"], v1_ref.as_str());
    let a = &against["images"][0];
    assert_eq!(a["result"], "different");
    let packages = a["packages"].as_array().unwrap();
    assert_eq!(packages.len(), 1, "{packages:?}");
    assert_eq!(packages[0]["name"], "tool");
    assert_eq!(packages[0]["change"], "added");
    assert_eq!(packages[0]["kind"], "deb");
    assert!(packages[0]["old"].is_null());
    let files = a["files"].as_array().unwrap();
    let main = files
        .iter()
        .find(|f| f["path"] == "srv/app/main.py" && f["change"] == "changed")
        .unwrap_or_else(|| panic!("main.py not among {files:?}"));
    let text = main["text"].as_str().unwrap();
    assert!(text.contains("+print('version 2')"), "{text}");
    assert!(files
        .iter()
        .any(|f| f["path"] == "usr/share/doc/tool.txt" && f["change"] == "added"));
    // The pull: exactly the v2 layers whose blobs v1 lacks, and the config.
    let layers = |d: &Value| -> Vec<(String, u64)> {
        d["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["digest"].as_str().unwrap().to_string(),
                    l["compressed"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let old = layers(&report_json(&[&v1_ref])["images"][0]);
    let new = layers(&doc["images"][0]);
    let (fetched, reused): (Vec<_>, Vec<_>) = new
        .iter()
        .partition(|(d, _)| !old.iter().any(|(o, _)| o == d));
    let pull = &a["pull"];
    assert_eq!(pull["layersFetched"], fetched.len());
    assert_eq!(
        pull["bytesFetched"],
        fetched.iter().map(|(_, s)| s).sum::<u64>()
    );
    assert_eq!(pull["layersReused"], reused.len());
    assert!(
        !fetched.is_empty() && !reused.is_empty(),
        "{new:?} vs {old:?}"
    );
    assert!(pull["configBytes"].as_u64().unwrap() > 0);

    // `diff`: the package summary first, then the files, main.py as a unified diff.
    let o = common::run(ocibuild().args(["diff", &v1_ref, &v2_ref]));
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[2].starts_with("package deb tool: added 1.0"),
        "{text}"
    );
    assert!(text.contains("    +print('version 2')\n"), "{text}");

    // The pages, rendered: the numbers in the DOM are the JSON's.
    let page = dir.join("v2.html");
    run_ok(
        ocibuild()
            .args(["report", &v2_ref, "--against", &v1_ref, "-o"])
            .arg(&page),
    );
    let v1_page = dir.join("v1.html");
    run_ok(ocibuild().args(["report", &v1_ref, "-o"]).arg(&v1_page));
    let profile = dir.join("chromium");
    for (html, json) in [(&page, doc.clone()), (&v1_page, report_json(&[&v1_ref]))] {
        let shot = html.with_extension("png");
        let dom = chromium(html, &shot, &profile);
        let image = &json["images"][0];
        let t = &image["totals"];
        assert_eq!(
            attr(&dom, "total-size-0", "data-bytes"),
            t["uncompressed"].to_string()
        );
        assert_eq!(
            attr(&dom, "total-compressed-0", "data-bytes"),
            t["compressed"].to_string()
        );
        assert_eq!(
            attr(&dom, "layer-count-0", "data-count"),
            t["layers"].to_string()
        );
        assert_eq!(
            attr(&dom, "wasted-bytes-0", "data-bytes"),
            image["efficiency"]["wastedBytes"].to_string()
        );
        assert_eq!(
            attr(&dom, "package-count-0", "data-count"),
            image["packages"].as_array().unwrap().len().to_string()
        );
        for l in image["layers"].as_array().unwrap() {
            let id = format!("layer-0-{}", l["position"]);
            assert_eq!(
                attr(&dom, &id, "data-uncompressed"),
                l["uncompressed"].to_string()
            );
            assert_eq!(
                attr(&dom, &id, "data-compressed"),
                l["compressed"].to_string()
            );
        }
        // The search box, hidden without script, shown once the page's script ran.
        assert!(dom.contains("pkg-search"), "no package search box");
    }
    let dom = chromium(&page, &dir.join("v2-again.png"), &profile);
    assert_eq!(
        attr(&dom, "pull-bytes-0", "data-bytes"),
        pull["bytesFetched"].to_string()
    );
    assert_eq!(
        attr(&dom, "pull-layers-0", "data-count"),
        pull["layersFetched"].to_string()
    );
    assert_eq!(attr(&dom, "package-changes-0", "data-count"), "1");
    assert_eq!(
        attr(&dom, "file-changes-0", "data-count"),
        files.len().to_string()
    );
    assert!(dom.contains("+print('version 2')"));
}
