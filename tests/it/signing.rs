//! Signatures and signed attestations, checked by tools that are not ocibuild: skopeo's
//! `sigstoreSigned` policy (containers/image, as podman and CRI-O use it) against a real
//! docker-registry, and openssl over DSSE's pre-authentication encoding. Keys come from
//! openssl; the faults (a changed signature, a signature moved to another image, a wrong key,
//! an unsigned image under the signed tag, keys ocibuild does not take) are made by the test.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use fs_err as fs;

use crate::common::registry::{auth_file, start_registry, PASS, USER};
use crate::common::{ocibuild, run, run_ok, stdout, tempdir};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// An ECDSA P-256 key pair from openssl: (private PKCS#8 PEM, public SPKI PEM).
pub(crate) fn keypair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let private = dir.join(format!("{name}.pem"));
    let public = dir.join(format!("{name}.pub"));
    run_ok(
        Command::new("openssl")
            .args(["genpkey", "-algorithm", "EC", "-pkeyopt"])
            .args(["ec_paramgen_curve:P-256", "-out"])
            .arg(&private),
    );
    run_ok(
        Command::new("openssl")
            .arg("pkey")
            .arg("-in")
            .arg(&private)
            .arg("-pubout")
            .arg("-out")
            .arg(&public),
    );
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    (private, public)
}

/// A small app recipe; `text` makes images that differ.
pub(crate) fn app(dir: &Path, text: &str) -> PathBuf {
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/hello.txt"), text).unwrap();
    let r = dir.join("app.toml");
    fs::write(
        &r,
        "[image]\nname = \"example.com/signed\"\n\n[[layer]]\nname = \"app\"\nsrc = \"src\"\ndest = \"/app\"\n",
    )
    .unwrap();
    r
}

/// `skopeo copy` of `image` under a policy that wants it signed by `public` (with
/// sigstore attachments on for `registry`): whether the policy let it through, and why not.
pub(crate) fn skopeo_accepts(
    dir: &Path,
    registry: &str,
    scope: &str,
    public: &Path,
    image: &str,
) -> (bool, String) {
    let rule = serde_json::json!({"type": "matchRepository"});
    skopeo_policy_accepts(dir, &[registry], &[(scope, rule)], public, image)
}

/// [`skopeo_accepts`] with one policy for several scopes, each with its `signedIdentity`.
fn skopeo_policy_accepts(
    dir: &Path,
    registries: &[&str],
    scopes: &[(&str, serde_json::Value)],
    public: &Path,
    image: &str,
) -> (bool, String) {
    let policy = dir.join("policy.json");
    let docker: serde_json::Map<String, serde_json::Value> = scopes
        .iter()
        .map(|(scope, identity)| {
            let rule = serde_json::json!([{
                "type": "sigstoreSigned",
                "keyPath": public,
                "signedIdentity": identity,
            }]);
            (scope.to_string(), rule)
        })
        .collect();
    fs::write(
        &policy,
        serde_json::to_vec(&serde_json::json!({
            "default": [{"type": "reject"}],
            "transports": {"docker": docker},
        }))
        .unwrap(),
    )
    .unwrap();
    let rd = dir.join("registries.d");
    fs::create_dir_all(&rd).unwrap();
    let mut yaml = String::from("docker:\n");
    for r in registries {
        yaml.push_str(&format!("  {r}:\n    use-sigstore-attachments: true\n"));
    }
    fs::write(rd.join("local.yaml"), yaml).unwrap();
    let out = dir.join("copied");
    let _ = fs::remove_dir_all(&out);
    let o = run(Command::new("skopeo-sigstore")
        .arg("--policy")
        .arg(&policy)
        .arg("--registries.d")
        .arg(&rd)
        .args([
            "copy",
            "--remove-signatures",
            "--src-tls-verify=false",
            "--src-creds",
        ])
        .arg(format!("{USER}:{PASS}"))
        .arg(format!("docker://{image}"))
        .arg(format!("oci:{}:x", out.display())));
    (o.status.success(), stderr(&o))
}

/// The rows of `verify-signature`'s grid (ITEM, PLATFORM, RESULT, KEY, DETAIL; the header
/// left out): its aligned columns split where two spaces or more separate them.
pub(crate) fn grid(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .filter(|cells| cells.len() == 5 && cells[0] != "ITEM")
        .collect()
}

/// The grid's row for `item` on `platform` (`-`: the image named) with `result`, if any.
pub(crate) fn row(out: &str, item: &str, platform: &str, result: &str) -> Option<Vec<String>> {
    grid(out)
        .into_iter()
        .find(|r| r[0] == item && r[1] == platform && r[2] == result)
}

/// A verified row, its key cell naming `key_file`; never one whose key cell is empty.
pub(crate) fn verified_by(out: &str, item: &str, platform: &str, key_file: &str) -> bool {
    let all_keyed = grid(out)
        .iter()
        .filter(|r| r[2] == "verified")
        .all(|r| r[3] != "-");
    all_keyed
        && row(out, item, platform, "verified")
            .is_some_and(|r| r[3].starts_with(&format!("{key_file} (")))
}

const IMAGE_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const IMAGE_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// A manifest GET (`put` None) or PUT of `(bytes, media type)` on the test registry (python3's
/// urllib, Basic auth): the faults a test makes by hand. Returns what a GET read.
pub(crate) fn registry_manifest(
    addr: &str,
    repo: &str,
    reference: &str,
    put: Option<(&[u8], &str)>,
) -> Vec<u8> {
    let script = r#"
import base64, sys, urllib.request
addr, repo, ref, user, pw, mode = sys.argv[1:7]
url = f"http://{addr}/v2/{repo}/manifests/{ref}"
auth = "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()
if mode != "get":
    req = urllib.request.Request(url, data=sys.stdin.buffer.read(), method="PUT", headers={"Authorization": auth, "Content-Type": mode})
else:
    req = urllib.request.Request(url, headers={"Authorization": auth, "Accept": "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json"})
sys.stdout.buffer.write(urllib.request.urlopen(req).read())
"#;
    let mut child = Command::new("python3")
        .args(["-c", script, addr, repo, reference, USER, PASS])
        .arg(put.map_or("get", |(_, media_type)| media_type))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(put.map_or(&[][..], |(b, _)| b)).unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{reference}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

#[test]
fn signatures_verify_with_skopeo_and_openssl() {
    if !crate::common::require_tools_all(&["docker-registry", "openssl", "python3"])
        || !crate::common::require_sigstore_tools(&["skopeo-sigstore", "cosign"])
    {
        return;
    }
    let t = tempdir();
    let (key, public) = keypair(t.path(), "release");
    let (_, other_public) = keypair(t.path(), "other");
    let reg = start_registry(None);
    let auth = auth_file(t.path(), &reg.addr, PASS);
    let cache = t.path().join("cache");
    let with_env = |c: &mut Command| {
        c.env("OCIBUILD_CACHE", &cache)
            .env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"));
    };
    let image = format!("{}/sig/app:1", reg.addr);
    let layout = t.path().join("img");
    let r = app(&t.path().join("a"), "signed\n");
    let mut build = ocibuild();
    with_env(&mut build);
    build.args(["build", "--attach", "--sign-key"]).arg(&key);
    build.args(["--push", &image, "-o"]).arg(&layout).arg(&r);
    let o = run_ok(&mut build);
    let out = stdout(&o);
    assert!(out.contains(&format!("as {image} (")), "{out}");

    // 1. skopeo's policy accepts it with the key, refuses it with another.
    let scope = format!("{}/sig", reg.addr);
    let (ok, why) = skopeo_accepts(t.path(), &reg.addr, &scope, &public, &image);
    assert!(ok, "refused with the signing key: {why}");
    let (ok, why) = skopeo_accepts(t.path(), &reg.addr, &scope, &other_public, &image);
    assert!(!ok, "accepted with another key");
    assert!(why.contains("signature"), "{why}");

    // cosign, the format's reference implementation, agrees (no transparency log: a key).
    let docker_config = t.path().join("docker");
    fs::create_dir_all(&docker_config).unwrap();
    fs::copy(&auth, docker_config.join("config.json")).unwrap();
    let cosign = |public: &Path| {
        run(Command::new("cosign")
            .env("DOCKER_CONFIG", &docker_config)
            .args([
                "verify",
                "--insecure-ignore-tlog=true",
                "--allow-http-registry=true",
            ])
            .arg("--key")
            .arg(public)
            .arg(&image))
    };
    let o = cosign(&public);
    assert!(o.status.success(), "cosign: {}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(&format!("\"docker-reference\":\"{image}\"")),
        "{}",
        stdout(&o)
    );
    assert!(
        !cosign(&other_public).status.success(),
        "cosign accepted another key"
    );

    // ocibuild's own check: the signature and the three attestations.
    let verify = |image: &str, public: &Path| {
        let mut c = ocibuild();
        with_env(&mut c);
        c.args(["verify-signature", image, "--key"]).arg(public);
        run(&mut c)
    };
    let o = verify(&image, &public);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    // The grid: each item verified by the release key; the same documents attached
    // unsigned are shown as such, never as verified.
    for item in [
        "signature",
        "SPDX SBOM",
        "CycloneDX SBOM",
        "SLSA provenance",
    ] {
        assert!(verified_by(&out, item, "-", "release.pub"), "{item}: {out}");
    }
    for item in ["SPDX SBOM", "CycloneDX SBOM", "SLSA provenance"] {
        let r = row(&out, item, "-", "unsigned").unwrap_or_else(|| panic!("{item}: {out}"));
        assert_eq!(r[3], "-", "{out}");
        assert!(r[4].contains("not verified"), "{out}");
    }
    let o = verify(&image, &other_public);
    assert!(!o.status.success());
    let out = stdout(&o);
    assert!(
        row(&out, "signature", "-", "FAILED")
            .is_some_and(|r| r[4] == "layer 0: does not verify with this key")
            && row(&out, "SPDX SBOM", "-", "FAILED").is_some_and(|r| r[3] == "-"
                && r[4].ends_with("the envelope's signature does not verify with this key")),
        "{out}"
    );
    // --json: the same grid, structured.
    let mut c = ocibuild();
    with_env(&mut c);
    c.args(["verify-signature", "--json", &image, "--key"])
        .arg(&public);
    let v: serde_json::Value = serde_json::from_slice(&run(&mut c).stdout).unwrap();
    assert_eq!(v["verified"], true, "{v:#}");
    let findings = v["findings"].as_array().unwrap();
    let spdx = findings
        .iter()
        .find(|f| f["item"] == "SPDX SBOM" && f["status"] == "verified")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert!(
        spdx["key"].as_str().unwrap().ends_with("release.pub"),
        "{spdx:#}"
    );
    // The key's id is the sha256 of its SPKI DER, as openssl writes it.
    let der = run_ok(
        Command::new("openssl")
            .args(["pkey", "-pubin", "-outform", "DER", "-in"])
            .arg(&public),
    )
    .stdout;
    let sha = {
        use sha2::Digest as _;
        format!("sha256:{:x}", sha2::Sha256::digest(&der))
    };
    assert_eq!(spdx["keyId"], sha, "{spdx:#}");
    assert_eq!(spdx["what"], "https://spdx.dev/Document");
    assert!(findings
        .iter()
        .filter(|f| f["status"] == "unsigned")
        .all(|f| f["ok"] == false && f["key"].is_null()));

    // The auditor's signature on the reproducibility: a bit-identical rebuild attaches a
    // signed SLSA verification summary, which verify-signature then checks with the rest.
    // The auditor has a key of their own; verifying with the release key alone names the
    // summary as not verifying, with both keys everything verifies.
    let (auditor, auditor_public) = keypair(t.path(), "auditor");
    let mut audit = ocibuild();
    with_env(&mut audit);
    audit
        .arg("verify")
        .arg(&r)
        .args([
            "--against",
            &format!("docker://{image}"),
            "--attest",
            "--sign-key",
        ])
        .arg(&auditor);
    let o = run_ok(&mut audit);
    assert!(
        stdout(&o).contains("(SLSA verification summary, signed)"),
        "{}",
        stdout(&o)
    );
    let o = verify(&image, &public);
    assert!(
        !o.status.success()
            && row(&stdout(&o), "SLSA verification summary", "-", "FAILED")
                .is_some_and(|r| r[4].contains("the envelope's signature does not verify")),
        "{}",
        stdout(&o)
    );
    let mut both = ocibuild();
    with_env(&mut both);
    both.args(["verify-signature", &image, "--key"])
        .arg(&public)
        .arg("--key")
        .arg(&auditor_public);
    let o = run(&mut both);
    assert!(
        o.status.success()
            && verified_by(&stdout(&o), "SLSA verification summary", "-", "auditor.pub")
            && verified_by(&stdout(&o), "SPDX SBOM", "-", "release.pub"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );

    // Signing again gives the same bytes: the signature is there already.
    let mut sign = ocibuild();
    with_env(&mut sign);
    sign.args(["sign", &image, "--key"]).arg(&key);
    let o = run_ok(&mut sign);
    assert!(stdout(&o).contains(", already there)"), "{}", stdout(&o));

    // 2. The DSSE envelopes verify with openssl over the PAE; a changed payload byte fails.
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
    let blob = |d: &str| fs::read(layout.join("blobs/sha256").join(&d["sha256:".len()..])).unwrap();
    let envelopes: Vec<serde_json::Value> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["artifactType"] == "application/vnd.dsse.envelope.v1+json")
        .map(|m| {
            let manifest: serde_json::Value =
                serde_json::from_slice(&blob(m["digest"].as_str().unwrap())).unwrap();
            serde_json::from_slice(&blob(manifest["layers"][0]["digest"].as_str().unwrap()))
                .unwrap()
        })
        .collect();
    assert_eq!(envelopes.len(), 3, "{index:#}");
    let b64 = base64::engine::general_purpose::STANDARD;
    for (i, e) in envelopes.iter().enumerate() {
        let body = b64.decode(e["payload"].as_str().unwrap()).unwrap();
        let kind = e["payloadType"].as_str().unwrap();
        let sig = b64
            .decode(e["signatures"][0]["sig"].as_str().unwrap())
            .unwrap();
        let sig_file = t.path().join(format!("sig{i}.der"));
        fs::write(&sig_file, &sig).unwrap();
        let openssl_verifies = |body: &[u8]| {
            let pae = t.path().join(format!("pae{i}"));
            let mut bytes = format!("DSSEv1 {} {kind} {} ", kind.len(), body.len()).into_bytes();
            bytes.extend_from_slice(body);
            fs::write(&pae, bytes).unwrap();
            run(Command::new("openssl")
                .args(["dgst", "-sha256", "-verify"])
                .arg(&public)
                .arg("-signature")
                .arg(&sig_file)
                .arg(&pae))
            .status
            .success()
        };
        assert!(
            openssl_verifies(&body),
            "envelope {i} does not verify with openssl"
        );
        let mut changed = body.clone();
        changed[body.len() / 2] ^= 1;
        assert!(
            !openssl_verifies(&changed),
            "a changed payload still verifies"
        );
    }

    // 4. Faults. A signature whose bytes changed:
    let digest = index["manifests"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let sig_tag = format!("sha256-{}.sig", &digest["sha256:".len()..]);
    let original = registry_manifest(&reg.addr, "sig/app", &sig_tag, None);
    let mut m: serde_json::Value = serde_json::from_slice(&original).unwrap();
    let s = m["layers"][0]["annotations"]["dev.cosignproject.cosign/signature"]
        .as_str()
        .unwrap()
        .to_string();
    let mut raw = b64.decode(&s).unwrap();
    let n = raw.len();
    raw[n - 3] ^= 0x10;
    m["layers"][0]["annotations"]["dev.cosignproject.cosign/signature"] = b64.encode(&raw).into();
    registry_manifest(
        &reg.addr,
        "sig/app",
        &sig_tag,
        Some((&serde_json::to_vec(&m).unwrap(), IMAGE_MANIFEST)),
    );
    let o = verify(&image, &public);
    assert!(!o.status.success());
    assert!(
        stdout(&o).contains("layer 0: does not verify with this key"),
        "{}",
        stdout(&o)
    );
    let (ok, _) = skopeo_accepts(t.path(), &reg.addr, &scope, &public, &image);
    assert!(!ok, "skopeo accepted a changed signature");
    registry_manifest(
        &reg.addr,
        "sig/app",
        &sig_tag,
        Some((&original, IMAGE_MANIFEST)),
    );

    // An unsigned image pushed under the signed tag: refused by both.
    let r2 = app(&t.path().join("b"), "not signed\n");
    let mut push = ocibuild();
    with_env(&mut push);
    push.args(["build", "--push", &image, "-o"])
        .arg(t.path().join("img2"))
        .arg(&r2);
    run_ok(&mut push);
    let o = verify(&image, &public);
    assert!(!o.status.success());
    assert!(
        row(&stdout(&o), "signature", "-", "MISSING")
            .is_some_and(|r| r[4].starts_with("missing: no ")),
        "{}",
        stdout(&o)
    );
    let (ok, _) = skopeo_accepts(t.path(), &reg.addr, &scope, &public, &image);
    assert!(!ok, "skopeo accepted an unsigned image");

    // The first image's signature put under the second's tag: it signs another digest.
    let index2: serde_json::Value =
        serde_json::from_slice(&fs::read(t.path().join("img2/index.json")).unwrap()).unwrap();
    let digest2 = index2["manifests"][0]["digest"].as_str().unwrap();
    let tag2 = format!("sha256-{}.sig", &digest2["sha256:".len()..]);
    registry_manifest(
        &reg.addr,
        "sig/app",
        &tag2,
        Some((&original, IMAGE_MANIFEST)),
    );
    let o = verify(&image, &public);
    assert!(!o.status.success());
    assert!(
        stdout(&o).contains(&format!("layer 0: signs {digest}, not this image")),
        "{}",
        stdout(&o)
    );
    let (ok, _) = skopeo_accepts(t.path(), &reg.addr, &scope, &public, &image);
    assert!(!ok, "skopeo accepted a signature of another image");

    // The second image signed, but with the first one's attestations (their referrers index
    // copied under its referrers tag): statements about another image.
    let mut sign = ocibuild();
    with_env(&mut sign);
    sign.args(["sign", &format!("{}/sig/app@{digest2}", reg.addr), "--key"])
        .arg(&key);
    run_ok(&mut sign);
    let first_referrers = format!("sha256-{}", &digest["sha256:".len()..]);
    let index_bytes = registry_manifest(&reg.addr, "sig/app", &first_referrers, None);
    let second_referrers = format!("sha256-{}", &digest2["sha256:".len()..]);
    registry_manifest(
        &reg.addr,
        "sig/app",
        &second_referrers,
        Some((&index_bytes, IMAGE_INDEX)),
    );
    let o = verify(&format!("{}/sig/app@{digest2}", reg.addr), &public);
    assert!(!o.status.success());
    assert!(
        verified_by(&stdout(&o), "signature", "-", "release.pub")
            && row(&stdout(&o), "SPDX SBOM", "-", "FAILED")
                .is_some_and(|r| r[4].ends_with(": a statement about another image")),
        "{}",
        stdout(&o)
    );
}

/// Keys ocibuild does not sign with are refused by name, before anything is built; a key
/// file others can read is a warning.
#[test]
fn unsupported_keys_are_refused_and_open_keys_warned_about() {
    if !crate::common::require_tool("openssl") {
        return;
    }
    let t = tempdir();
    let r = app(&t.path().join("a"), "x\n");
    let try_key = |key: &Path| {
        run(ocibuild()
            .env("OCIBUILD_CACHE", t.path().join("cache"))
            .args(["build", "--push", "127.0.0.1:1/x/y:1", "--sign-key"])
            .arg(key)
            .arg("-o")
            .arg(t.path().join("img"))
            .arg(&r))
    };
    let ed = t.path().join("ed25519.pem");
    run_ok(
        Command::new("openssl")
            .args(["genpkey", "-algorithm", "ed25519", "-out"])
            .arg(&ed),
    );
    let o = try_key(&ed);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("is an Ed25519 key (1.3.101.112), not ECDSA P-256"),
        "{}",
        stderr(&o)
    );
    let p384 = t.path().join("p384.pem");
    run_ok(
        Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-384",
                "-out",
            ])
            .arg(&p384),
    );
    let o = try_key(&p384);
    assert!(
        stderr(&o).contains("is an EC key, but not on the P-256 curve"),
        "{}",
        stderr(&o)
    );
    let (_, public) = keypair(t.path(), "k");
    let o = try_key(&public);
    assert!(
        stderr(&o).contains("is a public key; signing needs the private key"),
        "{}",
        stderr(&o)
    );
    assert!(
        !t.path().join("img").exists(),
        "built with a key it cannot use"
    );

    // `openssl ecparam -genkey` writes EC PARAMETERS before the SEC1 key: taken (the build
    // then fails at the push: nothing listens on port 1).
    let sec1 = t.path().join("sec1.pem");
    run_ok(
        Command::new("openssl")
            .args(["ecparam", "-name", "prime256v1", "-genkey", "-out"])
            .arg(&sec1),
    );
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&sec1, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = try_key(&sec1);
    assert!(!stderr(&o).contains("key file"), "{}", stderr(&o));
    assert!(stderr(&o).contains("127.0.0.1:1"), "{}", stderr(&o));

    // A readable key: a warning (then the push fails: nothing listens on port 1).
    let (open, _) = keypair(t.path(), "open");
    fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = try_key(&open);
    assert!(
        stderr(&o).contains("is readable by others (mode 644): `chmod 600` it"),
        "{}",
        stderr(&o)
    );
}

/// A key cosign made (its encrypted format, opened with the passphrase from a file) signs; the
/// layout carries the signature and the attestations, and after `mirror` into a second
/// registry the same policy file (the mirror's scope remapped to the signed name, as an
/// air-gapped site writes it) accepts the image there, and `verify-signature` checks it all.
#[test]
fn a_cosign_key_signs_and_the_signature_survives_a_mirror() {
    if !crate::common::require_tool("docker-registry")
        || !crate::common::require_sigstore_tools(&["skopeo-sigstore", "cosign"])
    {
        return;
    }
    let t = tempdir();
    run_ok(
        Command::new("cosign")
            .current_dir(t.path())
            .env("COSIGN_PASSWORD", "correct horse")
            .args(["generate-key-pair", "--output-key-prefix", "team"]),
    );
    let (key, public) = (t.path().join("team.key"), t.path().join("team.pub"));
    assert!(fs::read_to_string(&key)
        .unwrap()
        .contains("ENCRYPTED SIGSTORE PRIVATE KEY"));
    let pass = t.path().join("pass.txt");
    fs::write(&pass, "correct horse\n").unwrap();
    let (a, b) = (start_registry(None), start_registry(None));
    let auth = crate::common::registry::auth_file_for(t.path(), &[&a.addr, &b.addr], PASS);
    let cmd = || {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", t.path().join("cache"))
            .env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env_remove("OCIBUILD_KEY_PASSPHRASE")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"));
        c
    };
    let r = app(&t.path().join("a"), "mirrored\n");
    let layout = t.path().join("img");
    let image = format!("{}/team/app:1", a.addr);

    // Without the passphrase, or with a wrong one: refused before anything is built.
    let o = run(cmd()
        .args(["build", "--push", &image, "--sign-key"])
        .arg(&key)
        .arg(&r));
    assert!(
        stderr(&o).contains("is a cosign key, encrypted: give its passphrase"),
        "{}",
        stderr(&o)
    );
    let o = run(cmd()
        .env("OCIBUILD_KEY_PASSPHRASE", "wrong")
        .args(["build", "--push", &image, "--sign-key"])
        .arg(&key)
        .arg(&r));
    assert!(
        stderr(&o).contains("does not open with this passphrase"),
        "{}",
        stderr(&o)
    );

    run_ok(
        cmd()
            .args(["build", "--attach", "--push", &image, "--sign-key"])
            .arg(&key)
            .arg("--passphrase-file")
            .arg(&pass)
            .arg("-o")
            .arg(&layout)
            .arg(&r),
    );
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
    let digest = index["manifests"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let tags: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["annotations"]["org.opencontainers.image.ref.name"].as_str())
        .collect();
    assert!(
        tags.contains(&format!("sha256-{}.sig", &digest[7..]).as_str()),
        "{index:#}"
    );

    // Into the second registry, which never saw the push.
    let o = run_ok(
        cmd()
            .args(["mirror"])
            .arg(&layout)
            .args(["--to", &format!("{}/air", b.addr)]),
    );
    let out = stdout(&o);
    assert!(
        out.contains("  signature ") && out.contains("  referrers tag sha256-"),
        "{out}"
    );
    let mirrored = format!("{}/air/signed@{digest}", b.addr);
    let policy = [
        (
            format!("{}/team", a.addr),
            serde_json::json!({"type": "matchRepository"}),
        ),
        (
            format!("{}/air", b.addr),
            serde_json::json!({
                "type": "remapIdentity",
                "prefix": format!("{}/air/signed", b.addr),
                "signedPrefix": format!("{}/team/app", a.addr),
            }),
        ),
    ];
    let scopes: Vec<(&str, serde_json::Value)> = policy
        .iter()
        .map(|(s, v)| (s.as_str(), v.clone()))
        .collect();
    let registries = [a.addr.as_str(), b.addr.as_str()];
    for img in [image.as_str(), mirrored.as_str()] {
        let (ok, why) = skopeo_policy_accepts(t.path(), &registries, &scopes, &public, img);
        assert!(ok, "{img}: {why}");
    }
    let o = run(cmd()
        .args(["verify-signature", &mirrored, "--key"])
        .arg(&public));
    // Signed as the first registry's repository: named, unless that is what is expected.
    assert!(!o.status.success());
    assert!(
        stdout(&o).contains(&format!("signed as {image}, not as {}/air/signed", b.addr)),
        "{}",
        stdout(&o)
    );
    let o = run(cmd()
        .args(["verify-signature", &mirrored, "--key"])
        .arg(&public)
        .args(["--signed-identity", &format!("{}/team/app", a.addr)]));
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        row(&out, "signature", "-", "verified").is_some_and(|r| r[4].starts_with("signed as "))
            && row(&out, "SPDX SBOM", "-", "verified").is_some(),
        "{out}"
    );
}
