//! Faults in what a registry holds for a signed image, each refused by ocibuild's
//! `verify-signature` and, for the signature, by skopeo's `sigstoreSigned` policy: a changed
//! signature, an unsigned image under the signed tag, a signature moved to another image, and
//! another image's attestations. Each test pushes the signed app to a repository of its own in
//! the registry signing.rs's tests share ([`signed`]), then makes its fault by hand (python3's
//! urllib).

use fs_err as fs;

use base64::Engine as _;

use crate::common::{run_ok, stdout, tempdir};
use crate::signing::{
    app, layout_digest, registry_manifest, row, signed, verified_by, Signed, IMAGE_INDEX,
    IMAGE_MANIFEST,
};

/// An image other than the app's (`signed`, its digest), unsigned, pushed as `ADDR/REPO:1`
/// (over what is there): its digest.
fn push_unsigned(s: &Signed, repo: &str, signed: &str) -> String {
    let dir = s.cx.join("unsigned").join(repo);
    fs::create_dir_all(&dir).unwrap();
    let recipe = app(&dir, "not signed\n");
    let layout = dir.join("img");
    run_ok(
        s.cx.ocibuild()
            .args(["build", "--push", &format!("{}/{repo}:1", s.addr()), "-o"])
            .arg(&layout)
            .arg(&recipe),
    );
    let digest = layout_digest(&layout);
    assert_ne!(digest, signed);
    digest
}

/// The tag of the signature of `digest`.
fn sig_tag(digest: &str) -> String {
    format!("sha256-{}.sig", &digest["sha256:".len()..])
}

#[test]
fn a_changed_signature_is_refused() {
    let Some(s) = signed() else {
        return;
    };
    let t = tempdir();
    let repo = "sig/changed";
    let (image, digest) = s.push_signed(repo);
    let b64 = base64::engine::general_purpose::STANDARD;
    let original = registry_manifest(s.addr(), repo, &sig_tag(&digest), None);
    let mut m: serde_json::Value = serde_json::from_slice(&original).unwrap();
    let sig = m["layers"][0]["annotations"]["dev.cosignproject.cosign/signature"]
        .as_str()
        .unwrap()
        .to_string();
    let mut raw = b64.decode(&sig).unwrap();
    let n = raw.len();
    raw[n - 3] ^= 0x10;
    m["layers"][0]["annotations"]["dev.cosignproject.cosign/signature"] = b64.encode(&raw).into();
    registry_manifest(
        s.addr(),
        repo,
        &sig_tag(&digest),
        Some((&serde_json::to_vec(&m).unwrap(), IMAGE_MANIFEST)),
    );
    let o = s.verify(&image, &[&s.public]);
    assert!(!o.status.success());
    assert!(
        stdout(&o).contains("layer 0: does not verify with this key"),
        "{}",
        stdout(&o)
    );
    let (ok, _) = s.skopeo_accepts(t.path(), &s.public, &image);
    assert!(!ok, "skopeo accepted a changed signature");
}

#[test]
fn an_unsigned_image_under_the_signed_tag_is_refused() {
    let Some(s) = signed() else {
        return;
    };
    let t = tempdir();
    let repo = "sig/unsigned";
    let (image, digest) = s.push_signed(repo);
    push_unsigned(s, repo, &digest);
    let o = s.verify(&image, &[&s.public]);
    assert!(!o.status.success());
    assert!(
        row(&stdout(&o), "signature", "-", "MISSING")
            .is_some_and(|r| r[4].starts_with("missing: no ")),
        "{}",
        stdout(&o)
    );
    let (ok, _) = s.skopeo_accepts(t.path(), &s.public, &image);
    assert!(!ok, "skopeo accepted an unsigned image");
}

/// The first image's signature put under the signature tag of an unsigned image pushed under
/// the signed tag: it signs another digest.
#[test]
fn a_signature_of_another_image_is_refused() {
    let Some(s) = signed() else {
        return;
    };
    let t = tempdir();
    let repo = "sig/moved";
    let (image, digest) = s.push_signed(repo);
    let digest2 = push_unsigned(s, repo, &digest);
    let original = registry_manifest(s.addr(), repo, &sig_tag(&digest), None);
    registry_manifest(
        s.addr(),
        repo,
        &sig_tag(&digest2),
        Some((&original, IMAGE_MANIFEST)),
    );
    let o = s.verify(&image, &[&s.public]);
    assert!(!o.status.success());
    assert!(
        stdout(&o).contains(&format!("layer 0: signs {digest}, not this image")),
        "{}",
        stdout(&o)
    );
    let (ok, _) = s.skopeo_accepts(t.path(), &s.public, &image);
    assert!(!ok, "skopeo accepted a signature of another image");
}

/// A second image signed, but with the first one's attestations (their referrers index
/// copied under its referrers tag): statements about another image.
#[test]
fn attestations_of_another_image_are_refused() {
    let Some(s) = signed() else {
        return;
    };
    let repo = "sig/borrowed";
    let (_, digest) = s.push_signed(repo);
    let digest2 = push_unsigned(s, repo, &digest);
    let second = format!("{}/{repo}@{digest2}", s.addr());
    run_ok(s.cx.ocibuild().args(["sign", &second, "--key"]).arg(&s.key));
    let first_referrers = format!("sha256-{}", &digest["sha256:".len()..]);
    let index_bytes = registry_manifest(s.addr(), repo, &first_referrers, None);
    let second_referrers = format!("sha256-{}", &digest2["sha256:".len()..]);
    registry_manifest(
        s.addr(),
        repo,
        &second_referrers,
        Some((&index_bytes, IMAGE_INDEX)),
    );
    let o = s.verify(&second, &[&s.public]);
    assert!(!o.status.success());
    assert!(
        verified_by(&stdout(&o), "signature", "-", "release.pub")
            && row(&stdout(&o), "SPDX SBOM", "-", "FAILED")
                .is_some_and(|r| r[4].ends_with(": a statement about another image")),
        "{}",
        stdout(&o)
    );
}
