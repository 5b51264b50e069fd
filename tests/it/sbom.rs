//! SBOMs (SPDX, CycloneDX), provenance and `build --attach`, through the real binary: byte
//! identity across stores, directories and time zones; every locked .deb with its checksum and
//! its layer (an `[apt]` recipe against the generated repository of tests/aptfix); attachments
//! in the layout and, through a loopback Distribution 2.8, the `sha256-<hex>` referrers tag.
//! The validators (pyspdxtools, the CycloneDX 1.6 JSON schema) need PyPI: OCIBUILD_ONLINE=1.

use crate::aptfix;
use crate::common;

use fs_err as fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use aptfix::{deb, fixture, Data, Deb, Fixture};
use common::{ocibuild, run, run_ok, stdout, tempdir};
use ocibuild::digest::Digest;
use serde_json::Value;

/// libc6's copyright file: machine-readable (DEP-5), three licences, one without an SPDX
/// identifier.
const LIBC6_COPYRIGHT: &str =
    "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: libc-fixture

Files: *
Copyright: 2024 The fixture authors
License: LGPL-2.1+

Files: debian/*
Copyright: 2024 The fixture packagers
License: GPL-2+

Files: timezone/*
License: public-domain

License: LGPL-2.1+
 The GNU Lesser General Public License, version 2.1 or later.
";

fn universe() -> Vec<Deb> {
    vec![
        deb("libc6", "2.36-9+deb12u4")
            .field("Multi-Arch", "same")
            .data(Data::Dir("./usr/lib/"))
            .data(Data::File("./usr/lib/libc.so.6", "ELF libc", 0o755))
            .data(Data::Dir("./usr/share/doc/libc6/"))
            .data(Data::File(
                "./usr/share/doc/libc6/copyright",
                LIBC6_COPYRIGHT,
                0o644,
            )),
        deb("libstdc++6", "12.2.0-14")
            .field("Depends", "libc6")
            .data(Data::Dir("./usr/lib/"))
            .data(Data::File("./usr/lib/libstdc++.so.6", "ELF c++", 0o644)),
        deb("tool", "1:1.0+b1")
            .field("Depends", "libstdc++6")
            .data(Data::File("./usr/share/doc/tool.txt", "tool\n", 0o644))
            .data(Data::Dir("./usr/share/doc/tool/"))
            .data(Data::File(
                "./usr/share/doc/tool/copyright",
                "This is free software, under the GPL.\n",
                0o644,
            )),
    ]
}

/// An `[apt]` recipe plus one layer of its own, in `dir`.
fn recipe(dir: &Path, f: &Fixture) -> PathBuf {
    let app = dir.join("app");
    fs::create_dir_all(&app).unwrap();
    fs::write(app.join("main.txt"), "hello\n").unwrap();
    let text = format!(
        r#"[image]
name = "example.com/sbom-test"
tag = "v1"
platform = "linux/amd64"

[[apt.source]]
url = "{url}"
suite = "stable"
components = ["main"]
signed-by = "{key}"

[apt]
packages = ["tool"]

[[layer]]
name = "app"
src = "app"
dest = "/srv/app"
"#,
        url = f.repo.url,
        key = f.key.display(),
    );
    let p = dir.join("app.toml");
    fs::write(&p, text).unwrap();
    p
}

fn build(recipe: &Path, cwd: &Path, out: &Path, cache: &Path, tz: &str, extra: &[&str]) -> Value {
    let o = run_ok(
        ocibuild()
            .current_dir(cwd)
            .env("TZ", tz)
            .arg("--cache-dir")
            .arg(cache)
            .args(["build", "--json", "--attach", "-o"])
            .arg(out)
            .arg(recipe)
            .args(extra),
    );
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// `ocibuild sbom|provenance RECIPE --image oci:OUT [ARGS]`: stdout bytes.
fn doc(cmd: &str, recipe: &Path, out: &Path, args: &[&str]) -> Vec<u8> {
    run_ok(
        ocibuild()
            .arg(cmd)
            .arg(recipe)
            .arg("--image")
            .arg(format!("oci:{}", out.display()))
            .args(args),
    )
    .stdout
}

fn blob(layout: &Path, digest: &str) -> Vec<u8> {
    fs::read(
        layout
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:")),
    )
    .unwrap()
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

/// The referrers listed in a layout's index.json, by artifactType → the document's bytes.
fn attached(layout: &Path, manifest: &str) -> Vec<(String, Vec<u8>)> {
    let index = json(&fs::read(layout.join("index.json")).unwrap());
    let mut out = Vec::new();
    for d in index["manifests"].as_array().unwrap() {
        let Some(t) = d["artifactType"].as_str() else {
            continue;
        };
        let m = json(&blob(layout, d["digest"].as_str().unwrap()));
        assert_eq!(m["subject"]["digest"], manifest);
        assert_eq!(m["artifactType"], t);
        assert_eq!(
            m["config"]["mediaType"],
            "application/vnd.oci.empty.v1+json"
        );
        assert_eq!(blob(layout, m["config"]["digest"].as_str().unwrap()), b"{}");
        assert_eq!(m["layers"][0]["mediaType"], t);
        assert!(d["annotations"]["org.opencontainers.image.ref.name"].is_null());
        out.push((
            t.to_string(),
            blob(layout, m["layers"][0]["digest"].as_str().unwrap()),
        ));
    }
    out.sort();
    out
}

#[test]
fn sbom_and_provenance_are_byte_identical_across_stores_dirs_and_tz() {
    let f = fixture(&universe(), false);
    let t = tempdir();
    let r = recipe(t.path(), &f);
    let (o1, o2) = (t.path().join("one.oci"), t.path().join("two.oci"));
    let cwd2 = t.path().join("elsewhere");
    fs::create_dir_all(&cwd2).unwrap();
    let a = build(&r, t.path(), &o1, &t.path().join("c1"), "UTC", &[]);
    let b = build(&r, &cwd2, &o2, &t.path().join("c2"), "Asia/Tokyo", &[]);
    assert_eq!(a["manifest"], b["manifest"]);
    assert_eq!(a["referrers"], b["referrers"]);
    assert_eq!(a["referrers"].as_array().unwrap().len(), 3);
    let manifest = a["manifest"].as_str().unwrap();

    // The image records the recipe's and the lock's digests.
    let m = json(&blob(&o1, manifest));
    let lock_bytes = fs::read(t.path().join("app.lock")).unwrap();
    assert_eq!(
        m["annotations"]["dev.ocibuild.recipe.digest"],
        ocibuild::recipe::load(&r)
            .unwrap()
            .identity()
            .unwrap()
            .to_string()
    );
    assert_eq!(
        m["annotations"]["dev.ocibuild.lock.digest"],
        Digest::of(&lock_bytes).to_string()
    );

    // The documents: the same bytes from either build, attached or printed.
    let docs1 = attached(&o1, manifest);
    assert_eq!(docs1, attached(&o2, manifest));
    let types: Vec<&str> = docs1.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        types,
        [
            "application/spdx+json",
            "application/vnd.cyclonedx+json",
            "application/vnd.in-toto+json"
        ]
    );
    // The SBOMs read the declared licences from the lock's .debs: a store that lacks them
    // (an empty one, the shared test store) fetches them first, so the bytes are the same.
    let empty = t.path().join("empty-store");
    for (fmt, i) in [("spdx", 0), ("cyclonedx", 1)] {
        let one = doc_in(&empty, &r, &o1, &["--format", fmt]);
        let two = doc("sbom", &r, &o2, &["--format", fmt]);
        assert_eq!(one, two, "{fmt}");
        assert_eq!(one, docs1[i].1, "{fmt}: printed = attached");
    }
    let spdx = json(&docs1[0].1);
    let libc = spdx["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "libc6")
        .unwrap()
        .clone();
    assert_ne!(libc["licenseDeclared"], "NOASSERTION");
    let p1 = doc("provenance", &r, &o1, &[]);
    assert_eq!(p1, doc("provenance", &r, &o2, &[]));
    assert_eq!(p1, docs1[2].1);
    // -o FILE writes the same bytes.
    let file = t.path().join("x.json");
    run_ok(
        ocibuild()
            .args(["sbom", "--format", "spdx", "-o"])
            .arg(&file)
            .arg("--image")
            .arg(&o1)
            .arg(&r),
    );
    assert_eq!(fs::read(&file).unwrap(), docs1[0].1);

    // The image tag still names only the image.
    if common::require_tool("skopeo") {
        let v = common::skopeo_inspect_raw(&format!("oci:{}:v1", o1.display()));
        assert_eq!(
            v["config"]["mediaType"],
            "application/vnd.oci.image.config.v1+json"
        );
    }
    // Rebuilding without --attach drops nothing of the image and keeps one tag.
    run_ok(
        ocibuild()
            .arg("--cache-dir")
            .arg(t.path().join("c1"))
            .args(["build", "-o"])
            .arg(&o1)
            .arg(&r),
    );
    let index = json(&fs::read(o1.join("index.json")).unwrap());
    let tagged: Vec<_> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["annotations"]["org.opencontainers.image.ref.name"] == "v1")
        .collect();
    assert_eq!(tagged.len(), 1);
}

#[test]
fn sbom_lists_every_deb_with_checksum_and_layer_and_provenance_every_input() {
    let f = fixture(&universe(), false);
    let t = tempdir();
    let r = recipe(t.path(), &f);
    let out = t.path().join("img.oci");
    let v = build(&r, t.path(), &out, &t.path().join("cache"), "UTC", &[]);
    let apt_layer = v["layers"][0]["digest"].as_str().unwrap().to_string();
    assert_eq!(v["layers"][0]["name"], "apt");
    let lock = ocibuild::lock::Lock::load(&t.path().join("app.lock"))
        .unwrap()
        .unwrap();
    let debs = &lock.apt.as_ref().unwrap().packages;
    assert_eq!(debs.len(), 3);

    let spdx = json(&doc("sbom", &r, &out, &[]));
    assert_eq!(spdx["spdxVersion"], "SPDX-2.3");
    assert_eq!(spdx["creationInfo"]["created"], "1970-01-01T00:00:00Z");
    assert!(spdx["creationInfo"]["creators"][0]
        .as_str()
        .unwrap()
        .starts_with("Tool: ocibuild-"));
    let pkgs = spdx["packages"].as_array().unwrap();
    let rels = spdx["relationships"].as_array().unwrap();
    let layer_pkg = pkgs
        .iter()
        .find(|p| p["checksums"][0]["checksumValue"] == apt_layer[7..])
        .expect("the apt layer as a package");
    for d in debs {
        let p = pkgs
            .iter()
            .find(|p| p["name"] == d.name.as_str())
            .unwrap_or_else(|| panic!("{} missing", d.name));
        assert_eq!(p["versionInfo"], d.version.as_str());
        assert_eq!(p["checksums"][0]["algorithm"], "SHA256");
        assert_eq!(p["checksums"][0]["checksumValue"], d.sha256.hex());
        // A loopback URL is no SPDX downloadLocation: kept in sourceInfo instead.
        assert_eq!(p["downloadLocation"], "NOASSERTION");
        assert_eq!(
            p["sourceInfo"],
            format!(
                "downloaded from {}/{}",
                d.source_url.trim_end_matches('/'),
                d.filename
            )
        );
        let purl = p["externalRefs"][0]["referenceLocator"].as_str().unwrap();
        assert!(purl.starts_with("pkg:deb/debian/"), "{purl}");
        assert!(
            purl.ends_with(&format!("?arch={}", d.architecture)),
            "{purl}"
        );
        assert!(
            rels.iter()
                .any(|r| r["spdxElementId"] == layer_pkg["SPDXID"]
                    && r["relationshipType"] == "CONTAINS"
                    && r["relatedSpdxElement"] == p["SPDXID"]),
            "{} not in the apt layer",
            d.name
        );
    }
    assert!(pkgs.iter().any(|p| p["externalRefs"][0]["referenceLocator"]
        == "pkg:deb/debian/libstdc%2B%2B6@12.2.0-14?arch=amd64"));

    let cdx = json(&doc("sbom", &r, &out, &["--format", "cyclonedx"]));
    assert_eq!(cdx["specVersion"], "1.6");
    assert_eq!(
        cdx["metadata"]["component"]["hashes"][0]["content"],
        v["manifest"].as_str().unwrap()[7..]
    );
    let comps = cdx["components"].as_array().unwrap();
    for d in debs {
        let c = comps.iter().find(|c| c["name"] == d.name.as_str()).unwrap();
        assert_eq!(c["hashes"][0]["content"], d.sha256.hex());
        assert!(c["properties"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "ocibuild:layer" && p["value"] == apt_layer.as_str()));
    }

    let prov = json(&doc("provenance", &r, &out, &[]));
    assert_eq!(prov["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(prov["predicateType"], "https://slsa.dev/provenance/v1");
    assert_eq!(prov["subject"][0]["name"], "example.com/sbom-test");
    assert_eq!(
        prov["subject"][0]["digest"]["sha256"],
        v["manifest"].as_str().unwrap()[7..]
    );
    let bd = &prov["predicate"]["buildDefinition"];
    assert_eq!(bd["externalParameters"]["recipe"]["path"], "app.toml");
    assert_eq!(bd["externalParameters"]["lock"]["path"], "app.lock");
    let deps = bd["resolvedDependencies"].as_array().unwrap();
    assert_eq!(deps.len(), debs.len());
    for d in debs {
        assert!(deps.iter().any(|x| x["digest"]["sha256"] == d.sha256.hex()));
    }
    assert!(prov["predicate"]["runDetails"]["builder"]["id"]
        .as_str()
        .unwrap()
        .contains("ocibuild@"));

    // A comment added after the build changes nothing the image is; a changed destination
    // does: the documents would describe another image.
    let text = fs::read_to_string(&r).unwrap();
    fs::write(&r, text.replace("tag = \"v1\"", "tag = \"v1\"\n# edited")).unwrap();
    let o = run(ocibuild().args(["sbom"]).arg(&r).arg("--image").arg(&out));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    fs::write(
        &r,
        text.replace("dest = \"/srv/app\"", "dest = \"/srv/app2\""),
    )
    .unwrap();
    let o = run(ocibuild().args(["sbom"]).arg(&r).arg("--image").arg(&out));
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("was built from another recipe (app.toml)"),
        "{err}"
    );
}

#[test]
fn attach_needs_a_layout_or_push() {
    let t = tempdir();
    fs::create_dir_all(t.path().join("app")).unwrap();
    fs::write(t.path().join("app/x"), "x").unwrap();
    let r = t.path().join("s.toml");
    fs::write(
        &r,
        "[image]\nname = \"t\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n",
    )
    .unwrap();
    let o = run(ocibuild()
        .arg("--cache-dir")
        .arg(t.path().join("c"))
        .args(["build", "--attach", "-o"])
        .arg(format!("oci-archive:{}", t.path().join("x.tar").display()))
        .arg(&r));
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--attach needs an OCI layout output"));
    // Without a lock: only the image and its layers; no lock digest recorded.
    let out = t.path().join("s.oci");
    run_ok(
        ocibuild()
            .arg("--cache-dir")
            .arg(t.path().join("c"))
            .args(["build", "--attach", "-o"])
            .arg(&out)
            .arg(&r),
    );
    let spdx = json(&doc("sbom", &r, &out, &[]));
    assert_eq!(spdx["packages"].as_array().unwrap().len(), 2);
    let prov = json(&doc("provenance", &r, &out, &[]));
    assert!(prov["predicate"]["buildDefinition"]["externalParameters"]["lock"].is_null());
    // `diff` and `push` still pick the one image of the layout without a tag.
    let o = run_ok(ocibuild().arg("diff").arg(&out).arg(&out));
    assert!(stdout(&o).ends_with("result: identical\n"));
}

#[test]
fn pushed_attachments_are_found_through_the_referrers_tag() {
    if !common::require_tools_all(&["docker-registry", "skopeo"]) {
        return;
    }
    use common::registry::{auth_file, start_registry, PASS, USER};
    let reg = start_registry(None);
    let f = fixture(&universe(), false);
    let t = tempdir();
    let r = recipe(t.path(), &f);
    let registries = t.path().join("registries.toml");
    fs::write(
        &registries,
        format!(
            "[[registry]]\nname = \"{}\"\ninsecure-http = true\n",
            reg.addr
        ),
    )
    .unwrap();
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let remote = format!("{}/sbom/app:v1", reg.addr);
    let out = t.path().join("img.oci");
    let o = run_ok(
        ocibuild()
            .env("REGISTRY_AUTH_FILE", &auth)
            .arg("--registries")
            .arg(&registries)
            .arg("--cache-dir")
            .arg(t.path().join("cache"))
            .args(["build", "--attach", "-o"])
            .arg(&out)
            .arg(&r)
            .args(["--push", &remote]),
    );
    let text = stdout(&o);
    let manifest = text
        .lines()
        .find_map(|l| l.strip_prefix("manifest "))
        .unwrap()
        .to_string();
    let tag = format!("sha256-{}", &manifest[7..]);
    assert!(text.contains(&format!("referrers tag {tag}")), "{text}");
    let skopeo = |what: &str| {
        let o = run_ok(Command::new("skopeo").args([
            "inspect",
            "--raw",
            "--tls-verify=false",
            "--creds",
            &format!("{USER}:{PASS}"),
            &format!("docker://{}/sbom/app{what}", reg.addr),
        ]));
        json(&o.stdout)
    };
    let index = skopeo(&format!(":{tag}"));
    assert_eq!(
        index["mediaType"],
        "application/vnd.oci.image.index.v1+json"
    );
    let list = index["manifests"].as_array().unwrap();
    assert_eq!(list.len(), 3);
    let local = attached(&out, &manifest);
    for d in list {
        let m = skopeo(&format!("@{}", d["digest"].as_str().unwrap()));
        assert_eq!(m["subject"]["digest"], manifest.as_str());
        assert_eq!(m["artifactType"], d["artifactType"]);
        let t = d["artifactType"].as_str().unwrap();
        let doc = &local.iter().find(|(x, _)| x == t).unwrap().1;
        assert_eq!(m["layers"][0]["digest"], Digest::of(doc).to_string());
    }
    // Pushing again merges (nothing doubled).
    run_ok(
        ocibuild()
            .env("REGISTRY_AUTH_FILE", &auth)
            .arg("--registries")
            .arg(&registries)
            .arg("--cache-dir")
            .arg(t.path().join("cache"))
            .args(["build", "--attach", "-o"])
            .arg(&out)
            .arg(&r)
            .args(["--push", &remote]),
    );
    assert_eq!(
        skopeo(&format!(":{tag}"))["manifests"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

/// A venv under `dir` with `packages` installed; None (with a notice) when pip fails.
fn venv(dir: &Path, packages: &[&str]) -> PathBuf {
    let v = dir.join("venv");
    run_ok(Command::new("python3").args(["-m", "venv"]).arg(&v));
    run_ok(
        Command::new(v.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(packages),
    );
    v
}

#[test]
fn online_spdx_and_cyclonedx_validate() {
    if !common::online("installs spdx-tools and cyclonedx-python-lib from PyPI") {
        return;
    }
    let f = fixture(&universe(), false);
    let t = tempdir();
    let r = recipe(t.path(), &f);
    let out = t.path().join("img.oci");
    let cache = t.path().join("cache");
    build(&r, t.path(), &out, &cache, "UTC", &[]);
    // From the build's store: with libc6's declared licence (and its LicenseRef).
    let spdx = t.path().join("sbom.spdx.json");
    let bytes = doc_in(&cache, &r, &out, &[]);
    assert!(json(&bytes)["hasExtractedLicensingInfos"].is_array());
    fs::write(&spdx, bytes).unwrap();
    let cdx = t.path().join("sbom.cdx.json");
    fs::write(&cdx, doc_in(&cache, &r, &out, &["--format", "cyclonedx"])).unwrap();
    let v = venv(
        t.path(),
        &["spdx-tools", "cyclonedx-python-lib[validation]"],
    );
    run_ok(Command::new(v.join("bin/pyspdxtools")).arg("-i").arg(&spdx));
    // The CycloneDX library bundles the 1.6 JSON schema (no URL fetched).
    let script = "import sys\n\
from cyclonedx.validation.json import JsonStrictValidator\n\
from cyclonedx.schema import SchemaVersion\n\
e = JsonStrictValidator(SchemaVersion.V1_6).validate_str(open(sys.argv[1]).read())\n\
sys.exit(f'invalid: {e}' if e else 0)\n";
    run_ok(
        Command::new(v.join("bin/python"))
            .args(["-c", script])
            .arg(&cdx),
    );
}

/// `ocibuild --cache-dir CACHE sbom RECIPE --image oci:OUT [ARGS]`: stdout bytes.
fn doc_in(cache: &Path, recipe: &Path, out: &Path, args: &[&str]) -> Vec<u8> {
    run_ok(
        ocibuild()
            .arg("--cache-dir")
            .arg(cache)
            .arg("sbom")
            .arg(recipe)
            .arg("--image")
            .arg(format!("oci:{}", out.display()))
            .args(args),
    )
    .stdout
}

fn sbom_with(cache: &Path, recipe: &Path, out: &Path, args: &[&str]) -> Value {
    json(&doc_in(cache, recipe, out, args))
}

#[test]
fn sbom_declares_the_licence_of_a_dep5_copyright_file() {
    let f = fixture(&universe(), false);
    let t = tempdir();
    let r = recipe(t.path(), &f);
    let out = t.path().join("img.oci");
    let cache = t.path().join("cache");
    let v = build(&r, t.path(), &out, &cache, "UTC", &[]);
    let want = "GPL-2.0-or-later AND LGPL-2.1-or-later AND LicenseRef-public-domain";
    let check_spdx = |spdx: &Value| {
        let pkgs = spdx["packages"].as_array().unwrap();
        let pkg = |n: &str| pkgs.iter().find(|p| p["name"] == n).unwrap().clone();
        assert_eq!(pkg("libc6")["licenseDeclared"], want);
        assert_eq!(pkg("libc6")["licenseConcluded"], "NOASSERTION");
        // Not DEP-5, or no copyright file at all: nothing declared.
        assert_eq!(pkg("tool")["licenseDeclared"], "NOASSERTION");
        assert_eq!(pkg("libstdc++6")["licenseDeclared"], "NOASSERTION");
        let extracted = spdx["hasExtractedLicensingInfos"].as_array().unwrap();
        assert_eq!(extracted.len(), 1);
        assert_eq!(extracted[0]["licenseId"], "LicenseRef-public-domain");
        assert!(extracted[0]["extractedText"].as_str().unwrap().len() > 10);
    };
    let spdx = sbom_with(&cache, &r, &out, &[]);
    check_spdx(&spdx);
    let cdx = sbom_with(&cache, &r, &out, &["--format", "cyclonedx"]);
    let comps = cdx["components"].as_array().unwrap();
    let libc = comps.iter().find(|c| c["name"] == "libc6").unwrap();
    assert_eq!(libc["licenses"], serde_json::json!([{"expression": want}]));
    let tool = comps.iter().find(|c| c["name"] == "tool").unwrap();
    assert!(tool.get("licenses").is_none(), "{tool}");
    // The attached SPDX document (build --attach, from the build's store) says the same.
    let manifest = v["manifest"].as_str().unwrap();
    let attached = attached(&out, manifest);
    let (_, bytes) = attached
        .iter()
        .find(|(t, _)| t == "application/spdx+json")
        .unwrap();
    check_spdx(&json(bytes));
    assert_eq!(json(bytes), spdx);
    // Cached in the store's meta: with the .debs gone from the store, the same document.
    let lock = ocibuild::lock::Lock::load(&t.path().join("app.lock"))
        .unwrap()
        .unwrap();
    for d in &lock.apt.as_ref().unwrap().packages {
        fs::remove_file(cache.join("blobs/sha256").join(d.sha256.hex())).unwrap();
    }
    assert_eq!(sbom_with(&cache, &r, &out, &[]), spdx);
    // Another store, without the .debs: they are fetched (verified), the same document.
    let other_store = t.path().join("other");
    assert_eq!(sbom_with(&other_store, &r, &out, &[]), spdx);
    for d in &lock.apt.as_ref().unwrap().packages {
        assert!(other_store
            .join("blobs/sha256")
            .join(d.sha256.hex())
            .is_file());
    }
    // A .deb that can no longer be fetched and is not in the store: the command fails, naming
    // it, rather than print a document that says less.
    fs::remove_dir_all(&other_store).unwrap();
    let libc6 = &lock.apt.as_ref().unwrap().packages[0];
    let served = f.repo.root.join(&libc6.filename);
    fs::remove_file(&served).unwrap();
    let o = run(ocibuild()
        .arg("--cache-dir")
        .arg(&other_store)
        .arg("sbom")
        .arg(&r)
        .arg("--image")
        .arg(format!("oci:{}", out.display())));
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&libc6.name), "{err}");
}
