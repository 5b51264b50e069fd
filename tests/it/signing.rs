//! Signatures and signed attestations, checked by tools that are not ocibuild: skopeo's
//! `sigstoreSigned` policy (containers/image, as podman and CRI-O use it) and cosign against a
//! real docker-registry, openssl over DSSE's pre-authentication encoding, and ocibuild's own
//! `verify-signature` (with the release key, another key, an auditor's key). Keys come from
//! openssl. One registry and one signed push ([`signed`]) serve the tests here and the faults
//! in signing_faults.rs; keys ocibuild does not take are refused before anything is built.
//! The helpers (keys, the app, skopeo's policy, the grid's rows) serve the other signing files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use base64::Engine as _;
use fs_err as fs;

use crate::common::context::TestContext;
use crate::common::registry::{PASS, USER};
use crate::common::{ocibuild, run, run_ok, stdout, tempdir};

fn stderr(o: &Output) -> String {
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
pub(crate) fn skopeo_policy_accepts(
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

pub(crate) const IMAGE_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub(crate) const IMAGE_INDEX: &str = "application/vnd.oci.image.index.v1+json";

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

/// The shared set-up of this file's registry tests and of signing_faults.rs: one
/// docker-registry, the release, other and auditor keys and the small app's recipe; then,
/// each made once by the first test that asks, the app built with `--attach --sign-key` and
/// pushed as `sig/app:1` ([`Signed::pushed`]: the image the tests read and never change), and
/// pushed again as `sig/audited:1`, to which an auditor's `verify --attest` attached a signed
/// verification summary ([`Signed::audited`]). A test that changes what the registry holds
/// pushes a repository of its own ([`Signed::push_signed`]).
pub(crate) struct Signed {
    pub cx: TestContext,
    pub key: PathBuf,
    pub public: PathBuf,
    pub other_public: PathBuf,
    auditor: PathBuf,
    auditor_public: PathBuf,
    /// The app's recipe (`signed\n` in its file).
    recipe: PathBuf,
    /// A DOCKER_CONFIG directory with the registry's login, for cosign.
    docker_config: PathBuf,
    pushed: OnceLock<Pushed>,
    audited: OnceLock<Audited>,
}

/// The app, signed and pushed as `ADDR/sig/app:1`.
struct Pushed {
    image: String,
    /// The OCI layout the build wrote, and what the build printed.
    layout: PathBuf,
    build_out: String,
}

/// The app, signed and pushed as `ADDR/sig/audited:1`, then audited.
struct Audited {
    image: String,
    /// What the auditor's `verify --attest` printed.
    out: String,
}

/// docker-registry, openssl, python3, skopeo-sigstore and cosign: whether this machine has
/// them (a test without prints SKIPPED).
pub(crate) fn signing_tools() -> bool {
    crate::common::require_tools_all(&["docker-registry", "openssl", "python3"])
        && crate::common::require_sigstore_tools(&["skopeo-sigstore", "cosign"])
}

/// [`Signed`], made once; `None` (the test says SKIPPED) without [`signing_tools`].
pub(crate) fn signed() -> Option<&'static Signed> {
    static SIGNED: OnceLock<Signed> = OnceLock::new();
    signing_tools().then(|| SIGNED.get_or_init(make_signed))
}

fn make_signed() -> Signed {
    let cx = TestContext::with_registry().shared();
    let (key, public) = keypair(cx.path(), "release");
    let (_, other_public) = keypair(cx.path(), "other");
    let (auditor, auditor_public) = keypair(cx.path(), "auditor");
    let docker_config = cx.join("docker");
    fs::create_dir_all(&docker_config).unwrap();
    fs::copy(cx.auth_file(), docker_config.join("config.json")).unwrap();
    Signed {
        recipe: app(&cx.join("a"), "signed\n"),
        cx,
        key,
        public,
        other_public,
        auditor,
        auditor_public,
        docker_config,
        pushed: OnceLock::new(),
        audited: OnceLock::new(),
    }
}

/// The digest of the first image an OCI layout lists.
pub(crate) fn layout_digest(layout: &Path) -> String {
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
    index["manifests"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string()
}

impl Signed {
    /// `127.0.0.1:PORT` of the registry.
    pub fn addr(&self) -> &str {
        self.cx.registry_addr()
    }

    /// `ADDR/sig/app:1`, pushed once.
    fn pushed(&self) -> &Pushed {
        self.pushed.get_or_init(|| {
            let image = format!("{}/sig/app:1", self.addr());
            let layout = self.cx.join("img");
            let (o, _) = self.build_signed(&image, &layout);
            Pushed {
                image,
                layout,
                build_out: stdout(&o),
            }
        })
    }

    /// `ADDR/sig/audited:1`, pushed and audited once. The auditor's signature on the
    /// reproducibility: a bit-identical rebuild attaches a signed SLSA verification summary,
    /// with a key of the auditor's own.
    fn audited(&self) -> &Audited {
        self.audited.get_or_init(|| {
            let (image, _) = self.push_signed("sig/audited");
            let o = run_ok(
                self.cx
                    .ocibuild()
                    .arg("verify")
                    .arg(&self.recipe)
                    .args([
                        "--against",
                        &format!("docker://{image}"),
                        "--attest",
                        "--sign-key",
                    ])
                    .arg(&self.auditor),
            );
            Audited {
                image,
                out: stdout(&o),
            }
        })
    }

    /// `build --attach --sign-key` (the release key) of the app, pushed as `image`, written
    /// to `layout`: what it printed, and the image's digest.
    fn build_signed(&self, image: &str, layout: &Path) -> (Output, String) {
        let o = run_ok(
            self.cx
                .ocibuild()
                .args(["build", "--attach", "--sign-key"])
                .arg(&self.key)
                .args(["--push", image, "-o"])
                .arg(layout)
                .arg(&self.recipe),
        );
        (o, layout_digest(layout))
    }

    /// The app signed and pushed as `ADDR/REPO:1`, its layout under `out/REPO`: a repository
    /// a test may change. Returns the image's name and digest.
    pub fn push_signed(&self, repo: &str) -> (String, String) {
        let image = format!("{}/{repo}:1", self.addr());
        let (_, digest) = self.build_signed(&image, &self.cx.join("out").join(repo));
        (image, digest)
    }

    /// `ocibuild verify-signature IMAGE` with a `--key` for each of `keys`.
    pub fn verify(&self, image: &str, keys: &[&Path]) -> Output {
        let mut c = self.cx.ocibuild();
        c.args(["verify-signature", image]);
        for k in keys {
            c.arg("--key").arg(k);
        }
        run(&mut c)
    }

    /// `cosign verify --key PUBLIC IMAGE` (no transparency log: a key).
    fn cosign_verify(&self, public: &Path, image: &str) -> Output {
        run(Command::new("cosign")
            .env("DOCKER_CONFIG", &self.docker_config)
            .args([
                "verify",
                "--insecure-ignore-tlog=true",
                "--allow-http-registry=true",
            ])
            .arg("--key")
            .arg(public)
            .arg(image))
    }

    /// [`skopeo_accepts`] for `image` (a repository under `ADDR/sig`, the policy's scope)
    /// with `public`; its files in `dir`.
    pub fn skopeo_accepts(&self, dir: &Path, public: &Path, image: &str) -> (bool, String) {
        let scope = format!("{}/sig", self.addr());
        skopeo_accepts(dir, self.addr(), &scope, public, image)
    }
}

#[test]
fn a_signed_push_names_the_image_it_pushed() {
    let Some(s) = signed() else {
        return;
    };
    assert!(
        s.pushed()
            .build_out
            .contains(&format!("as {} (", s.pushed().image)),
        "{}",
        s.pushed().build_out
    );
}

#[test]
fn skopeo_accepts_the_signature_with_the_signing_key_only() {
    let Some(s) = signed() else {
        return;
    };
    let t = tempdir();
    let (ok, why) = s.skopeo_accepts(t.path(), &s.public, &s.pushed().image);
    assert!(ok, "refused with the signing key: {why}");
    let (ok, why) = s.skopeo_accepts(t.path(), &s.other_public, &s.pushed().image);
    assert!(!ok, "accepted with another key");
    assert!(why.contains("signature"), "{why}");
}

/// cosign, the format's reference implementation, agrees with skopeo.
#[test]
fn cosign_verifies_the_signature_with_the_signing_key_only() {
    let Some(s) = signed() else {
        return;
    };
    let o = s.cosign_verify(&s.public, &s.pushed().image);
    assert!(o.status.success(), "cosign: {}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(&format!("\"docker-reference\":\"{}\"", s.pushed().image)),
        "{}",
        stdout(&o)
    );
    assert!(
        !s.cosign_verify(&s.other_public, &s.pushed().image)
            .status
            .success(),
        "cosign accepted another key"
    );
}

/// ocibuild's own check: the signature and the three attestations each verified by the
/// release key; the same documents attached unsigned are shown as such, never as verified.
#[test]
fn verify_signature_verifies_the_signature_and_attestations_by_the_key() {
    let Some(s) = signed() else {
        return;
    };
    let o = s.verify(&s.pushed().image, &[&s.public]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
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
}

#[test]
fn verify_signature_with_another_key_fails_the_signature_and_the_attestations() {
    let Some(s) = signed() else {
        return;
    };
    let o = s.verify(&s.pushed().image, &[&s.other_public]);
    assert!(!o.status.success());
    let out = stdout(&o);
    assert!(
        row(&out, "signature", "-", "FAILED")
            .is_some_and(|r| r[4] == "layer 0: does not verify with this key")
            && row(&out, "SPDX SBOM", "-", "FAILED").is_some_and(|r| r[3] == "-"
                && r[4].ends_with("the envelope's signature does not verify with this key")),
        "{out}"
    );
}

/// `--json`: the same grid, structured; the key's id is the sha256 of its SPKI DER, as
/// openssl writes it.
#[test]
fn verify_signature_json_names_the_key_by_its_spki_digest() {
    let Some(s) = signed() else {
        return;
    };
    let v: serde_json::Value = serde_json::from_slice(
        &run(s
            .cx
            .ocibuild()
            .args(["verify-signature", "--json", &s.pushed().image, "--key"])
            .arg(&s.public))
        .stdout,
    )
    .unwrap();
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
    let der = run_ok(
        Command::new("openssl")
            .args(["pkey", "-pubin", "-outform", "DER", "-in"])
            .arg(&s.public),
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
}

#[test]
fn verify_attest_with_a_key_attaches_a_signed_verification_summary() {
    let Some(s) = signed() else {
        return;
    };
    assert!(
        s.audited()
            .out
            .contains("(SLSA verification summary, signed)"),
        "{}",
        s.audited().out
    );
}

/// The auditor has a key of their own: verifying with the release key alone names the
/// summary as not verifying.
#[test]
fn an_auditors_summary_does_not_verify_with_the_release_key() {
    let Some(s) = signed() else {
        return;
    };
    let o = s.verify(&s.audited().image, &[&s.public]);
    assert!(
        !o.status.success()
            && row(&stdout(&o), "SLSA verification summary", "-", "FAILED")
                .is_some_and(|r| r[4].contains("the envelope's signature does not verify")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn with_the_release_and_the_auditors_keys_everything_verifies() {
    let Some(s) = signed() else {
        return;
    };
    let o = s.verify(&s.audited().image, &[&s.public, &s.auditor_public]);
    assert!(
        o.status.success()
            && verified_by(&stdout(&o), "SLSA verification summary", "-", "auditor.pub")
            && verified_by(&stdout(&o), "SPDX SBOM", "-", "release.pub"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
}

/// Signing again gives the same bytes: the signature is there already.
#[test]
fn signing_a_signed_image_again_finds_the_signature_there() {
    let Some(s) = signed() else {
        return;
    };
    let o = run_ok(
        s.cx.ocibuild()
            .args(["sign", &s.pushed().image, "--key"])
            .arg(&s.key),
    );
    assert!(stdout(&o).contains(", already there)"), "{}", stdout(&o));
}

/// The DSSE envelopes verify with openssl over the PAE; a changed payload byte fails.
#[test]
fn the_dsse_envelopes_verify_with_openssl_over_the_pae() {
    let Some(s) = signed() else {
        return;
    };
    let t = tempdir();
    let layout = &s.pushed().layout;
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
                .arg(&s.public)
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
