//! ocibuild's signed attestations as cosign finds them: `build --attach --sign-key --push`
//! to Debian's docker-registry, then Debian 13's cosign (`cosign verify-attestation --key`,
//! `cosign tree`), the tool other people's pipelines check with. Its verdict with the signing
//! key and with another key, for each SBOM, the provenance and an auditor's verification
//! summary; the `.att` manifest the same bytes in the layout, in the registry, after a second
//! push and after a mirror; an `.att` tag without its layers. One set-up ([`attested`]: the
//! registry and the keys, then each made once when first asked for: the push, the second push,
//! the audit, the mirror) serves the tests; the one that changes the `.att` tag pushes a
//! repository of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use base64::Engine as _;
use fs_err as fs;

use crate::common::context::TestContext;
use crate::common::{run, run_ok, stderr, stdout};
use crate::signing::{app, keypair, layout_digest, registry_manifest, row, IMAGE_MANIFEST};

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

/// `cosign verify-attestation --type` of each SBOM and the provenance, and the predicate type
/// it prints.
const TYPES: [(&str, &str); 3] = [
    ("spdxjson", "https://spdx.dev/Document"),
    ("cyclonedx", "https://cyclonedx.org/bom"),
    ("slsaprovenance1", "https://slsa.dev/provenance/v1"),
];

const VSA: &str = "https://slsa.dev/verification_summary/v1";

struct Attested {
    cx: TestContext,
    key: PathBuf,
    public: PathBuf,
    other_public: PathBuf,
    auditor: PathBuf,
    auditor_public: PathBuf,
    recipe: PathBuf,
    /// A DOCKER_CONFIG directory with the registry's login, for cosign.
    docker_config: PathBuf,
    /// Each made once, by the first test that asks: see their methods.
    pushed: OnceLock<Pushed>,
    again: OnceLock<String>,
    audited: OnceLock<String>,
    mirrored: OnceLock<String>,
}

/// `ADDR/att/app:1`, pushed by [`Attested::build`] into `layout`; never changed after.
struct Pushed {
    image: String,
    layout: PathBuf,
    digest: String,
    /// The `referrersPush.attestationTag` the build reported.
    att_tag: String,
}

/// [`Attested`], made once; `None` (the test says SKIPPED) without docker-registry, openssl,
/// python3 or cosign.
fn attested() -> Option<&'static Attested> {
    static ATTESTED: OnceLock<Attested> = OnceLock::new();
    let ready = crate::common::require_tools_all(&["docker-registry", "openssl", "python3"])
        && crate::common::require_sigstore_tools(&["cosign"]);
    ready.then(|| ATTESTED.get_or_init(make_attested))
}

fn make_attested() -> Attested {
    let cx = TestContext::with_registry().shared();
    let (key, public) = keypair(cx.path(), "release");
    let (_, other_public) = keypair(cx.path(), "other");
    let (auditor, auditor_public) = keypair(cx.path(), "auditor");
    let docker_config = cx.join("docker");
    fs::create_dir_all(&docker_config).unwrap();
    fs::copy(cx.auth_file(), docker_config.join("config.json")).unwrap();
    Attested {
        recipe: app(&cx.join("a"), "attested\n"),
        cx,
        key,
        public,
        other_public,
        auditor,
        auditor_public,
        docker_config,
        pushed: OnceLock::new(),
        again: OnceLock::new(),
        audited: OnceLock::new(),
        mirrored: OnceLock::new(),
    }
}

impl Attested {
    /// `127.0.0.1:PORT` of the registry.
    fn addr(&self) -> &str {
        self.cx.registry_addr()
    }

    /// `ADDR/att/app:1`, pushed once.
    fn pushed(&self) -> &Pushed {
        self.pushed.get_or_init(|| {
            let image = format!("{}/att/app:1", self.addr());
            let layout = self.cx.join("img");
            let (att_tag, digest) = self.build(&image, &layout);
            Pushed {
                image,
                layout,
                digest,
                att_tag,
            }
        })
    }

    /// The `referrersPush.attestationTag` of the same build pushed again, after
    /// [`Attested::pushed`].
    fn again(&self) -> &str {
        self.again.get_or_init(|| {
            let image = &self.pushed().image;
            self.build(image, &self.cx.join("img2")).0
        })
    }

    /// `ADDR/att/audited:1`: the same build, to which an auditor's `verify --attest` attached
    /// a signed verification summary (it joins the `.att` layers).
    fn audited(&self) -> &str {
        self.audited.get_or_init(|| {
            let image = format!("{}/att/audited:1", self.addr());
            self.build(&image, &self.cx.join("audited"));
            run_ok(
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
            image
        })
    }

    /// `ADDR/copy/signed@DIGEST`: [`Attested::pushed`]'s layout mirrored to another repository.
    fn mirrored(&self) -> &str {
        self.mirrored.get_or_init(|| {
            let p = self.pushed();
            run_ok(
                self.cx
                    .ocibuild()
                    .arg("mirror")
                    .arg(&p.layout)
                    .args(["--to", &format!("{}/copy", self.addr())]),
            );
            format!("{}/copy/signed@{}", self.addr(), p.digest)
        })
    }

    /// `build --json --attach --sign-key --push IMAGE -o LAYOUT` of the app: the
    /// `referrersPush.attestationTag` it reports, and the image's digest.
    fn build(&self, image: &str, layout: &Path) -> (String, String) {
        let o = run_ok(
            self.cx
                .ocibuild()
                .args(["build", "--json", "--attach", "--sign-key"])
                .arg(&self.key)
                .args(["--push", image, "-o"])
                .arg(layout)
                .arg(&self.recipe),
        );
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let att_tag = doc["referrersPush"]["attestationTag"]
            .as_str()
            .unwrap_or_else(|| panic!("no attestationTag: {doc:#}"))
            .to_string();
        (att_tag, layout_digest(layout))
    }

    /// `cosign ARGS IMAGE`, with `--key PUBLIC` (and no transparency log) if given.
    fn cosign(&self, args: &[&str], public: Option<&Path>, image: &str) -> Output {
        let mut c = Command::new("cosign");
        c.env("DOCKER_CONFIG", &self.docker_config).args(args);
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
    }

    /// `cosign verify-attestation --type KIND` of `image` with `public`.
    fn verify_attestation(&self, kind: &str, public: &Path, image: &str) -> Output {
        self.cosign(&["verify-attestation", "--type", kind], Some(public), image)
    }

    /// `ocibuild verify-signature IMAGE --key` the release key: whether it passed, its grid.
    fn verify_signature(&self, image: &str) -> (bool, String) {
        let o = run(self
            .cx
            .ocibuild()
            .args(["verify-signature", image, "--key"])
            .arg(&self.public));
        (o.status.success(), stdout(&o))
    }

    /// The hex of [`Attested::pushed`]'s digest, as its `sha256-HEX.sig` and `.att` tags
    /// have it.
    fn hex(&self) -> &str {
        &self.pushed().digest["sha256:".len()..]
    }

    /// [`Attested::pushed`]'s layout's `.att` entry, and the manifest it names (bytes, parsed).
    fn layout_att(&self) -> (serde_json::Value, Vec<u8>, serde_json::Value) {
        let layout = &self.pushed().layout;
        let index: serde_json::Value =
            serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
        let att = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| {
                m["annotations"]["org.opencontainers.image.ref.name"]
                    == format!("sha256-{}.att", self.hex())
            })
            .unwrap_or_else(|| panic!("no .att entry in the layout: {index:#}"))
            .clone();
        let d = att["digest"].as_str().unwrap();
        let bytes = fs::read(layout.join("blobs/sha256").join(&d["sha256:".len()..])).unwrap();
        let manifest = serde_json::from_slice(&bytes).unwrap();
        (att, bytes, manifest)
    }
}

/// Each SBOM and the provenance: accepted with the signing key, and only that document printed
/// for its `--type`; `--experimental-oci11` changes nothing.
#[test]
fn cosign_verifies_each_attestation_with_the_signing_key() {
    let Some(s) = attested() else {
        return;
    };
    for (kind, predicate) in TYPES {
        for extra in [&[][..], &["--experimental-oci11"][..]] {
            let mut args = vec!["verify-attestation", "--type", kind];
            args.extend_from_slice(extra);
            let o = s.cosign(&args, Some(&s.public), &s.pushed().image);
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
        }
    }
}

/// Each SBOM and the provenance: refused with another key, with `--experimental-oci11` too.
#[test]
fn cosign_refuses_each_attestation_with_another_key() {
    let Some(s) = attested() else {
        return;
    };
    for (kind, _) in TYPES {
        for extra in [&[][..], &["--experimental-oci11"][..]] {
            let mut args = vec!["verify-attestation", "--type", kind];
            args.extend_from_slice(extra);
            let o = s.cosign(&args, Some(&s.other_public), &s.pushed().image);
            assert!(!o.status.success(), "{kind}: accepted with another key");
            assert!(
                stderr(&o).contains("no matching attestations"),
                "{}",
                stderr(&o)
            );
        }
    }
}

/// The layout's `.att` manifest: cosign's artifact type, one DSSE envelope layer for each
/// attestation, their signatures inside the envelopes.
#[test]
fn the_att_manifest_holds_the_three_envelopes() {
    let Some(s) = attested() else {
        return;
    };
    let (att, _, manifest) = s.layout_att();
    assert_eq!(
        att["artifactType"], "application/vnd.dev.cosign.artifact.att.v1+json",
        "{att:#}"
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 3, "{manifest:#}");
    for l in layers {
        assert_eq!(l["mediaType"], "application/vnd.dsse.envelope.v1+json");
        assert_eq!(l["annotations"]["dev.cosignproject.cosign/signature"], "");
        let p = l["annotations"]["predicateType"].as_str().unwrap();
        assert!(TYPES.iter().any(|(_, t)| *t == p), "{p}");
    }
}

/// The layout's `.att` manifest is the one pushed, byte for byte, and the one the build named.
#[test]
fn the_pushed_att_manifest_is_the_layouts() {
    let Some(s) = attested() else {
        return;
    };
    let (att, att_bytes, _) = s.layout_att();
    let pushed = registry_manifest(
        s.addr(),
        "att/app",
        &format!("sha256-{}.att", s.hex()),
        None,
    );
    assert_eq!(pushed, att_bytes);
    assert!(s
        .pushed()
        .att_tag
        .ends_with(&format!("@{}", att["digest"].as_str().unwrap())));
}

/// cosign tree: the signature and the three attestations, by their envelopes' digests.
#[test]
fn cosign_tree_lists_the_signature_and_the_attestations() {
    let Some(s) = attested() else {
        return;
    };
    let (_, _, manifest) = s.layout_att();
    let o = s.cosign(&["tree"], None, &s.pushed().image);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let hex = s.hex();
    assert!(
        out.contains(&format!(
            "Signatures for an image tag: {}/att/app:sha256-{hex}.sig",
            s.addr()
        )) && out.contains(&format!(
            "Attestations for an image tag: {}/att/app:sha256-{hex}.att",
            s.addr()
        )),
        "{out}"
    );
    for l in manifest["layers"].as_array().unwrap() {
        assert!(out.contains(l["digest"].as_str().unwrap()), "{out}");
    }
}

/// The same build pushed again: the same `.att` manifest (nothing added, no time in it).
#[test]
fn pushing_the_same_build_again_gives_the_same_att_manifest() {
    let Some(s) = attested() else {
        return;
    };
    assert_eq!(s.again(), s.pushed().att_tag);
}

/// ocibuild's own check names the `.att` layers: present.
#[test]
fn verify_signature_finds_the_att_layers_present() {
    let Some(s) = attested() else {
        return;
    };
    let (ok, out) = s.verify_signature(&s.pushed().image);
    let present = row(&out, "cosign .att", "-", "present");
    assert!(
        ok && present.is_some_and(|r| r[4].starts_with("the 3 signed attestations")),
        "{out}"
    );
}

/// With the `.att` layers gone (the tag overwritten by a manifest without them): absent, a
/// note for ocibuild (the referrers verify), and cosign finds nothing.
#[test]
fn an_att_tag_without_its_layers_is_absent_for_ocibuild_and_cosign() {
    let Some(s) = attested() else {
        return;
    };
    let repo = "att/emptied";
    let image = format!("{}/{repo}:1", s.addr());
    let (_, digest) = s.build(&image, &s.cx.join("emptied"));
    let att_name = format!("sha256-{}.att", &digest["sha256:".len()..]);
    let mut emptied: serde_json::Value =
        serde_json::from_slice(&registry_manifest(s.addr(), repo, &att_name, None)).unwrap();
    emptied["layers"] = serde_json::json!([]);
    let emptied = serde_json::to_vec(&emptied).unwrap();
    registry_manifest(s.addr(), repo, &att_name, Some((&emptied, IMAGE_MANIFEST)));
    let (ok, out) = s.verify_signature(&image);
    let absent = row(&out, "cosign .att", "-", "absent");
    assert!(
        ok && absent.is_some_and(|r| r[4].contains("lacks 3 of them")),
        "{out}"
    );
    let o = s.verify_attestation("spdxjson", &s.public, &image);
    assert!(
        !o.status.success(),
        "cosign verified without the .att layers"
    );
}

/// An auditor's verification summary joins the `.att` layers: cosign finds it with the
/// auditor's key, and not with the release key.
#[test]
fn cosign_verifies_an_auditors_summary_with_the_auditors_key_only() {
    let Some(s) = attested() else {
        return;
    };
    let o = s.verify_attestation(VSA, &s.auditor_public, s.audited());
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(printed_predicates(&o), [VSA]);
    let o = s.verify_attestation(VSA, &s.public, s.audited());
    assert!(
        !o.status.success(),
        "the summary verified with the release key"
    );
}

/// Beside an auditor's summary, the release key's attestations still verify.
#[test]
fn cosign_verifies_the_release_attestations_beside_an_auditors_summary() {
    let Some(s) = attested() else {
        return;
    };
    let o = s.verify_attestation("spdxjson", &s.public, s.audited());
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Mirrored from the layout to another repository: cosign finds them there too.
#[test]
fn cosign_verifies_the_attestations_after_a_mirror() {
    let Some(s) = attested() else {
        return;
    };
    let o = s.verify_attestation("cyclonedx", &s.public, s.mirrored());
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(printed_predicates(&o), ["https://cyclonedx.org/bom"]);
}
