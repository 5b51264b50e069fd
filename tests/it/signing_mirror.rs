//! A key cosign made (its encrypted format, opened with the passphrase from a file) signs; the
//! layout carries the signature and the attestations, and after `mirror` into a second
//! registry the same policy file (the mirror's scope remapped to the signed name, as an
//! air-gapped site writes it) accepts the image there, and `verify-signature` checks it all.
//! One set-up ([`team`]: the key, two docker-registries, the signed push, the mirror) serves
//! the tests.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

use fs_err as fs;

use crate::common::context::{clean_up_after_exit, TestContext};
use crate::common::registry::{auth_file_for, start_registry, Registry, PASS};
use crate::common::{run, run_ok, stderr, stdout};
use crate::signing::{app, layout_digest, row, skopeo_policy_accepts};

struct Team {
    /// Registry A, where the image is pushed and signed.
    cx: TestContext,
    /// Registry B, the air-gapped one the layout is mirrored into.
    b: Registry,
    /// The cosign key pair (`team.key`, encrypted; `team.pub`) and its passphrase's file.
    key: PathBuf,
    public: PathBuf,
    pass: PathBuf,
    /// The login for both registries.
    auth: PathBuf,
    recipe: PathBuf,
    /// `A/team/app:1`, its layout and the image's digest.
    image: String,
    layout: PathBuf,
    digest: String,
    /// What `mirror LAYOUT --to B/air` printed, and `B/air/signed@DIGEST`.
    mirror_out: String,
    mirrored: String,
}

/// [`Team`], made once; `None` (the test says SKIPPED) without docker-registry, skopeo-sigstore
/// or cosign.
fn team() -> Option<&'static Team> {
    static TEAM: OnceLock<Team> = OnceLock::new();
    let ready = crate::common::require_tool("docker-registry")
        && crate::common::require_sigstore_tools(&["skopeo-sigstore", "cosign"]);
    ready.then(|| TEAM.get_or_init(make_team))
}

fn make_team() -> Team {
    let cx = TestContext::with_registry().shared();
    let b = start_registry(None);
    clean_up_after_exit(&[b.pid().to_string()], &[b.dir().to_path_buf()]);
    run_ok(
        Command::new("cosign")
            .current_dir(cx.path())
            .env("COSIGN_PASSWORD", "correct horse")
            .args(["generate-key-pair", "--output-key-prefix", "team"]),
    );
    let pass = cx.join("pass.txt");
    fs::write(&pass, "correct horse\n").unwrap();
    let auth = auth_file_for(cx.path(), &[cx.registry_addr(), &b.addr], PASS);
    let mut t = Team {
        key: cx.join("team.key"),
        public: cx.join("team.pub"),
        pass,
        auth,
        recipe: app(&cx.join("a"), "mirrored\n"),
        image: format!("{}/team/app:1", cx.registry_addr()),
        layout: cx.join("img"),
        digest: String::new(),
        mirror_out: String::new(),
        mirrored: String::new(),
        cx,
        b,
    };
    run_ok(
        t.cmd()
            .args(["build", "--attach", "--push", &t.image, "--sign-key"])
            .arg(&t.key)
            .arg("--passphrase-file")
            .arg(&t.pass)
            .arg("-o")
            .arg(&t.layout)
            .arg(&t.recipe),
    );
    t.digest = layout_digest(&t.layout);
    // Into the second registry, which never saw the push.
    let o = run_ok(
        t.cmd()
            .args(["mirror"])
            .arg(&t.layout)
            .args(["--to", &format!("{}/air", t.b.addr)]),
    );
    t.mirror_out = stdout(&o);
    t.mirrored = format!("{}/air/signed@{}", t.b.addr, t.digest);
    t
}

impl Team {
    /// `127.0.0.1:PORT` of registry A.
    fn a(&self) -> &str {
        self.cx.registry_addr()
    }

    /// `ocibuild` with the login for both registries and no passphrase in the environment.
    fn cmd(&self) -> Command {
        let mut c = self.cx.ocibuild();
        c.env("REGISTRY_AUTH_FILE", &self.auth)
            .env_remove("OCIBUILD_KEY_PASSPHRASE");
        c
    }

    /// `build --push --sign-key` with the cosign key, `passphrase` in the environment.
    fn build_with_passphrase(&self, passphrase: Option<&str>) -> Output {
        let mut c = self.cmd();
        if let Some(p) = passphrase {
            c.env("OCIBUILD_KEY_PASSPHRASE", p);
        }
        run(c
            .args(["build", "--push", &self.image, "--sign-key"])
            .arg(&self.key)
            .arg(&self.recipe))
    }
}

/// Without the passphrase: refused before anything is built.
#[test]
fn a_cosign_key_without_its_passphrase_is_refused() {
    let Some(t) = team() else {
        return;
    };
    assert!(fs::read_to_string(&t.key)
        .unwrap()
        .contains("ENCRYPTED SIGSTORE PRIVATE KEY"));
    let o = t.build_with_passphrase(None);
    assert!(
        stderr(&o).contains("is a cosign key, encrypted: give its passphrase"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_cosign_key_with_a_wrong_passphrase_is_refused() {
    let Some(t) = team() else {
        return;
    };
    let o = t.build_with_passphrase(Some("wrong"));
    assert!(
        stderr(&o).contains("does not open with this passphrase"),
        "{}",
        stderr(&o)
    );
}

/// With `--passphrase-file`: the layout carries the image's signature under its tag.
#[test]
fn a_cosign_key_with_its_passphrase_file_signs() {
    let Some(t) = team() else {
        return;
    };
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(t.layout.join("index.json")).unwrap()).unwrap();
    let tags: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["annotations"]["org.opencontainers.image.ref.name"].as_str())
        .collect();
    assert!(
        tags.contains(&format!("sha256-{}.sig", &t.digest[7..]).as_str()),
        "{index:#}"
    );
}

#[test]
fn mirror_copies_the_signature_and_the_referrers_tag() {
    let Some(t) = team() else {
        return;
    };
    let out = &t.mirror_out;
    assert!(
        out.contains("  signature ") && out.contains("  referrers tag sha256-"),
        "{out}"
    );
}

/// One policy for both registries, the mirror's scope remapped to the signed name.
#[test]
fn skopeo_accepts_the_image_and_its_mirror_under_one_policy() {
    let Some(t) = team() else {
        return;
    };
    let dir = crate::common::tempdir();
    let policy = [
        (
            format!("{}/team", t.a()),
            serde_json::json!({"type": "matchRepository"}),
        ),
        (
            format!("{}/air", t.b.addr),
            serde_json::json!({
                "type": "remapIdentity",
                "prefix": format!("{}/air/signed", t.b.addr),
                "signedPrefix": format!("{}/team/app", t.a()),
            }),
        ),
    ];
    let scopes: Vec<(&str, serde_json::Value)> = policy
        .iter()
        .map(|(s, v)| (s.as_str(), v.clone()))
        .collect();
    let registries = [t.a(), t.b.addr.as_str()];
    for img in [t.image.as_str(), t.mirrored.as_str()] {
        let (ok, why) = skopeo_policy_accepts(dir.path(), &registries, &scopes, &t.public, img);
        assert!(ok, "{img}: {why}");
    }
}

/// Signed as the first registry's repository: named, unless that is what is expected.
#[test]
fn verify_signature_names_the_identity_a_mirror_was_signed_as() {
    let Some(t) = team() else {
        return;
    };
    let o = run(t
        .cmd()
        .args(["verify-signature", &t.mirrored, "--key"])
        .arg(&t.public));
    assert!(!o.status.success());
    assert!(
        stdout(&o).contains(&format!(
            "signed as {}, not as {}/air/signed",
            t.image, t.b.addr
        )),
        "{}",
        stdout(&o)
    );
}

#[test]
fn verify_signature_verifies_a_mirror_under_its_signed_identity() {
    let Some(t) = team() else {
        return;
    };
    let o = run(t
        .cmd()
        .args(["verify-signature", &t.mirrored, "--key"])
        .arg(&t.public)
        .args(["--signed-identity", &format!("{}/team/app", t.a())]));
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        row(&out, "signature", "-", "verified").is_some_and(|r| r[4].starts_with("signed as "))
            && row(&out, "SPDX SBOM", "-", "verified").is_some(),
        "{out}"
    );
}
