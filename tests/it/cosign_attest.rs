//! ocibuild's signed attestations as cosign finds them: `build --attach --sign-key --push`
//! to Debian's docker-registry, then Debian 13's cosign (`cosign verify-attestation --key`,
//! `cosign tree`), the tool other people's pipelines check with. Its verdict with the signing
//! key and with another key, for each SBOM, the provenance and an auditor's verification
//! summary; the `.att` manifest the same bytes in the layout, in the registry, after a second
//! push and after a mirror.

use std::path::Path;
use std::process::{Command, Output};

use base64::Engine as _;
use fs_err as fs;

use crate::common::registry::{auth_file, start_registry, PASS};
use crate::common::{ocibuild, run, run_ok, stdout, tempdir};
use crate::signing::{app, keypair, registry_manifest};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The predicate types of the attestations `cosign verify-attestation` printed (one DSSE
/// envelope per line).
fn printed_predicates(o: &Output) -> Vec<String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    stdout(o)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let envelope: serde_json::Value = serde_json::from_str(l).unwrap();
            let body = b64.decode(envelope["payload"].as_str().unwrap()).unwrap();
            let statement: serde_json::Value = serde_json::from_slice(&body).unwrap();
            statement["predicateType"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn cosign_verifies_the_attestations_and_lists_them() {
    if !crate::common::require_tools_all(&["docker-registry", "openssl", "python3"])
        || !crate::common::require_sigstore_tools(&["cosign"])
    {
        return;
    }
    let t = tempdir();
    let (key, public) = keypair(t.path(), "release");
    let (_, other_public) = keypair(t.path(), "other");
    let (auditor, auditor_public) = keypair(t.path(), "auditor");
    let reg = start_registry(None);
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let cache = t.path().join("cache");
    let docker_config = t.path().join("docker");
    fs::create_dir_all(&docker_config).unwrap();
    fs::copy(&auth, docker_config.join("config.json")).unwrap();
    let cmd = || {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", &cache)
            .env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"));
        c
    };
    let cosign = |args: &[&str], public: Option<&Path>, image: &str| {
        let mut c = Command::new("cosign");
        c.env("DOCKER_CONFIG", &docker_config).args(args);
        if let Some(p) = public {
            c.args([
                "--insecure-ignore-tlog=true",
                "--allow-http-registry=true",
                "--key",
            ])
            .arg(p);
        } else {
            c.arg("--allow-http-registry=true");
        }
        run(c.arg(image))
    };
    let image = format!("{}/att/app:1", reg.addr);
    let layout = t.path().join("img");
    let r = app(&t.path().join("a"), "attested\n");
    let build = |layout: &Path| {
        let o = run_ok(
            cmd()
                .args(["build", "--json", "--attach", "--sign-key"])
                .arg(&key)
                .args(["--push", &image, "-o"])
                .arg(layout)
                .arg(&r),
        );
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        doc["referrersPush"]["attestationTag"]
            .as_str()
            .unwrap_or_else(|| panic!("no attestationTag: {doc:#}"))
            .to_string()
    };
    let att_tag = build(&layout);

    // 1. Each SBOM and the provenance: accepted with the signing key (and only that document
    // printed for its --type), refused with another key; --experimental-oci11 changes nothing.
    let types = [
        ("spdxjson", "https://spdx.dev/Document"),
        ("cyclonedx", "https://cyclonedx.org/bom"),
        ("slsaprovenance1", "https://slsa.dev/provenance/v1"),
    ];
    for (kind, predicate) in types {
        for extra in [&[][..], &["--experimental-oci11"][..]] {
            let mut args = vec!["verify-attestation", "--type", kind];
            args.extend_from_slice(extra);
            let o = cosign(&args, Some(&public), &image);
            assert!(
                o.status.success(),
                "{kind} {extra:?}: {}{}",
                stdout(&o),
                stderr(&o)
            );
            assert_eq!(
                printed_predicates(&o),
                [predicate],
                "{kind}: {}",
                stdout(&o)
            );
            let o = cosign(&args, Some(&other_public), &image);
            assert!(!o.status.success(), "{kind}: accepted with another key");
            assert!(
                stderr(&o).contains("no matching attestations"),
                "{}",
                stderr(&o)
            );
        }
    }

    // 2. cosign tree: the signature and the three attestations, by their envelopes' digests.
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
    let entries = index["manifests"].as_array().unwrap();
    let digest = entries[0]["digest"].as_str().unwrap().to_string();
    let hex = &digest["sha256:".len()..];
    let att = entries
        .iter()
        .find(|m| {
            m["annotations"]["org.opencontainers.image.ref.name"] == format!("sha256-{hex}.att")
        })
        .unwrap_or_else(|| panic!("no .att entry in the layout: {index:#}"));
    assert_eq!(
        att["artifactType"], "application/vnd.dev.cosign.artifact.att.v1+json",
        "{att:#}"
    );
    let blob = |d: &str| fs::read(layout.join("blobs/sha256").join(&d["sha256:".len()..])).unwrap();
    let att_bytes = blob(att["digest"].as_str().unwrap());
    let manifest: serde_json::Value = serde_json::from_slice(&att_bytes).unwrap();
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 3, "{manifest:#}");
    for l in layers {
        assert_eq!(l["mediaType"], "application/vnd.dsse.envelope.v1+json");
        assert_eq!(l["annotations"]["dev.cosignproject.cosign/signature"], "");
        let p = l["annotations"]["predicateType"].as_str().unwrap();
        assert!(types.iter().any(|(_, t)| *t == p), "{p}");
    }
    // The layout's `.att` manifest is the one pushed, byte for byte.
    let pushed = registry_manifest(&reg.addr, "att/app", &format!("sha256-{hex}.att"), None);
    assert_eq!(pushed, att_bytes);
    assert!(att_tag.ends_with(&format!("@{}", att["digest"].as_str().unwrap())));
    let o = cosign(&["tree"], None, &image);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains(&format!(
            "Signatures for an image tag: {}/att/app:sha256-{hex}.sig",
            reg.addr
        )) && out.contains(&format!(
            "Attestations for an image tag: {}/att/app:sha256-{hex}.att",
            reg.addr
        )),
        "{out}"
    );
    for l in layers {
        assert!(out.contains(l["digest"].as_str().unwrap()), "{out}");
    }

    // 3. The same build pushed again: the same `.att` manifest (nothing added, no time in it).
    assert_eq!(build(&t.path().join("img2")), att_tag);

    // ocibuild's own check names the `.att` layout: present; with its layers gone (the tag
    // overwritten by a manifest without them), absent, a note (the referrers verify), and
    // cosign finds nothing.
    let verify_signature = || {
        let o = run(cmd()
            .args(["verify-signature", &image, "--key"])
            .arg(&public));
        (o.status.success(), stdout(&o))
    };
    let (ok, out) = verify_signature();
    let present = crate::signing::row(&out, "cosign .att", "-", "present");
    assert!(
        ok && present.is_some_and(|r| r[4].starts_with("the 3 signed attestations")),
        "{out}"
    );
    let att_name = format!("sha256-{hex}.att");
    let mut emptied = manifest.clone();
    emptied["layers"] = serde_json::json!([]);
    let emptied = serde_json::to_vec(&emptied).unwrap();
    let oci_manifest = "application/vnd.oci.image.manifest.v1+json";
    registry_manifest(
        &reg.addr,
        "att/app",
        &att_name,
        Some((&emptied, oci_manifest)),
    );
    let (ok, out) = verify_signature();
    let absent = crate::signing::row(&out, "cosign .att", "-", "absent");
    assert!(
        ok && absent.is_some_and(|r| r[4].contains("lacks 3 of them")),
        "{out}"
    );
    let o = cosign(
        &["verify-attestation", "--type", "spdxjson"],
        Some(&public),
        &image,
    );
    assert!(
        !o.status.success(),
        "cosign verified without the .att layers"
    );
    registry_manifest(
        &reg.addr,
        "att/app",
        &att_name,
        Some((&att_bytes, oci_manifest)),
    );

    // 4. An auditor's verification summary joins the `.att` layers: cosign finds it with the
    // auditor's key, and not with the release key (whose attestations still verify).
    run_ok(
        cmd()
            .arg("verify")
            .arg(&r)
            .args([
                "--against",
                &format!("docker://{image}"),
                "--attest",
                "--sign-key",
            ])
            .arg(&auditor),
    );
    let vsa = [
        "verify-attestation",
        "--type",
        "https://slsa.dev/verification_summary/v1",
    ];
    let o = cosign(&vsa, Some(&auditor_public), &image);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        printed_predicates(&o),
        ["https://slsa.dev/verification_summary/v1"]
    );
    let o = cosign(&vsa, Some(&public), &image);
    assert!(
        !o.status.success(),
        "the summary verified with the release key"
    );
    let o = cosign(
        &["verify-attestation", "--type", "spdxjson"],
        Some(&public),
        &image,
    );
    assert!(o.status.success(), "{}", stderr(&o));

    // 5. Mirrored from the layout to another repository: cosign finds them there too.
    run_ok(
        cmd()
            .arg("mirror")
            .arg(&layout)
            .args(["--to", &format!("{}/copy", reg.addr)]),
    );
    let mirrored = format!("{}/copy/signed@{digest}", reg.addr);
    let o = cosign(
        &["verify-attestation", "--type", "cyclonedx"],
        Some(&public),
        &mirrored,
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(printed_predicates(&o), ["https://cyclonedx.org/bom"]);
}
