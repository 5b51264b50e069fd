//! `verify-signature`: an image's sigstore signature and every attestation attached to it,
//! checked against public keys. Nothing found wrong aborts the check: each problem is a
//! finding that names what is missing or wrong, and the report fails when any does.

use base64::Engine;
use serde::Serialize;

use super::payload::{self, Envelope, DSSE_MEDIA_TYPE, SIGNATURE_ANNOTATION, SIMPLE_SIGNING};
use super::{signature_tag, PublicKey, SignError};
use crate::digest::Digest;
use crate::image::{Descriptor, Index, Manifest, DOCKER_LIST, MEDIA_TYPE_INDEX};
use crate::progress::Silent;
use crate::registry::{Client, Reference, RegistryError};
use crate::store::Store;

/// A signature payload or an envelope is a small document; a layer claiming more is refused
/// before it is downloaded.
const MAX_DOCUMENT: u64 = 16 << 20;

/// What a finding says about its item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// A signature or a signed attestation that verified with one of the keys.
    Verified,
    /// One that is there but does not verify, or says something wrong (another image).
    Failed,
    /// The image's signature is not there.
    Missing,
    /// A document attached without a signature: not checked, so never counted as verified
    /// (nor as a failure: ocibuild attaches each document unsigned too).
    Unsigned,
    /// No signed attestation attached: a note.
    None,
    /// A platform manifest without a signature of its own: the index's signature covers a
    /// pull by the index, not a pull by this digest. A note.
    ByIndex,
    /// The signed attestations are also in cosign's `.att` layout. A note.
    Present,
    /// They are not (all) there: cosign does not find them. A note, not a failure.
    Absent,
}

impl Status {
    /// Whether it fails the check.
    pub fn fails(self) -> bool {
        matches!(self, Status::Failed | Status::Missing)
    }

    /// The word the grid shows.
    pub fn word(self) -> &'static str {
        match self {
            Status::Verified => "verified",
            Status::Failed => "FAILED",
            Status::Missing => "MISSING",
            Status::Unsigned => "unsigned",
            Status::None => "none",
            Status::ByIndex => "index's only",
            Status::Present => "present",
            Status::Absent => "absent",
        }
    }
}

/// One finding of [`verify_image`]: a row of the grid item × platform × result × key.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// `signature`, the attestation's predicate type (`attestation` when it cannot be read or
    /// does not verify), an unsigned document's artifact type, `attestations`, or `cosign`
    /// (the signed attestations in cosign's `.att` layout).
    pub what: String,
    /// What it is, for a person: `signature`, `SPDX SBOM`, `CycloneDX SBOM`,
    /// `SLSA provenance`, `SLSA verification summary`, `attestations`; another predicate or
    /// artifact type as it is.
    pub item: String,
    /// For an image index: the platform of the manifest this finding is about (`null`: the
    /// image named, the index itself).
    pub platform: Option<String>,
    /// Verified, or a note (`none`, `by-index`); false for a failure and for an unsigned
    /// document (which is not verified, but does not fail the check).
    pub ok: bool,
    pub status: Status,
    /// The key file that verified it, as given (`null` when none did).
    pub key: Option<String>,
    /// That key's id: `sha256:` + the sha256 of its SPKI DER.
    pub key_id: Option<String>,
    pub detail: String,
    /// A signed attestation's envelope blob (to find it in cosign's `.att` layout).
    #[serde(skip)]
    envelope: Option<Digest>,
}

impl Finding {
    pub(crate) fn new(what: &str, item: &str, status: Status, detail: String) -> Finding {
        Finding {
            what: what.to_string(),
            item: item.to_string(),
            platform: None,
            ok: matches!(
                status,
                Status::Verified | Status::None | Status::ByIndex | Status::Present
            ),
            status,
            key: None,
            key_id: None,
            detail,
            envelope: None,
        }
    }

    /// A signed attestation's envelope blob, when it verified.
    pub fn envelope(&self) -> Option<Digest> {
        self.envelope
    }

    /// Verified with `key`.
    fn by(mut self, key: &PublicKey) -> Finding {
        self.key = Some(key.name().to_string());
        self.key_id = Some(key.id());
        self
    }
}

/// What [`verify_image`] found.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    pub image: String,
    pub digest: Digest,
    /// [`VerifyReport::ok`].
    pub verified: bool,
    pub findings: Vec<Finding>,
}

impl VerifyReport {
    /// A signature of the image named verified, and nothing fails (an unsigned document is
    /// not verified, and does not fail it).
    pub fn ok(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.what == "signature" && f.platform.is_none() && f.status == Status::Verified)
            && !self.findings.iter().any(|f| f.status.fails())
    }
}

/// The grid's name for a predicate type.
fn item_of_predicate(predicate: &str) -> String {
    let name = crate::audit::attest::document_name(Some(DSSE_MEDIA_TYPE), Some(predicate));
    match name.strip_suffix(", signed attestation") {
        Some(n) => n.to_string(),
        None => predicate.to_string(),
    }
}

/// The grid's order within a platform: the signature, the SBOMs, the provenance, the
/// verification summary, anything else, the note on attestations.
fn rank(f: &Finding) -> (u8, Status) {
    let r = match f.item.as_str() {
        "signature" => 0,
        "SPDX SBOM" => 1,
        "CycloneDX SBOM" => 2,
        "SLSA provenance" => 3,
        "SLSA verification summary" => 4,
        "cosign .att" => 6,
        "attestations" => 7,
        _ => 5,
    };
    (r, f.status)
}

/// `registry/repository` of a reference as written in a signature or on the command line.
fn repository_of(reference: &str) -> Option<(String, Option<String>)> {
    let r: Reference = reference.parse().ok()?;
    Some((
        format!("{}/{}", r.registry(), r.repository()),
        r.tag().map(str::to_string),
    ))
}

/// Checks the image `reference` names: its sigstore signature (a layer of `sha256-<hex>.sig`
/// must verify with one of `keys`, be an image signature of this digest, and name the image's
/// repository, or `signed_identity` when given: a mirror's images are signed under the name
/// they were pushed by; with a tag in `reference`, a signed tag must be that one), and every
/// attestation attached as a referrer (a DSSE envelope of an in-toto statement, verifying with
/// one of `keys`, about this digest); unsigned documents attached are named as such.
pub fn verify_image(
    client: &Client,
    store: &Store,
    reference: &Reference,
    keys: &[PublicKey],
    signed_identity: Option<&str>,
) -> Result<VerifyReport, SignError> {
    let fetched = client.get_manifest(reference)?;
    let digest = fetched.digest;
    let repo = format!("{}/{}", reference.registry(), reference.repository());
    let expected = match signed_identity {
        Some(s) => repository_of(s)
            .map(|(r, _)| r)
            .ok_or_else(|| SignError::Bad {
                reference: s.to_string(),
                problem: "is not a registry/repository reference".into(),
            })?,
        None => repo.clone(),
    };
    let wanted_tag = reference.tag().filter(|_| signed_identity.is_none());
    let want = Wanted {
        digest: &digest,
        repository: &expected,
        tag: wanted_tag,
        keys,
    };
    let mut findings = check_digest(client, store, reference, &want, false)?;
    // An image index (several platforms): each platform's manifest too, as signed by
    // `build --sign-key` (and `cosign sign --recursive`), with its own attestations. A
    // platform manifest without a signature of its own is not a failure (the index's covers
    // a pull by tag; `cosign sign` without --recursive signs the index alone); a bad one is.
    if fetched.media_type == MEDIA_TYPE_INDEX || fetched.media_type == DOCKER_LIST {
        let index: Index = serde_json::from_slice(&fetched.bytes).map_err(|e| SignError::Bad {
            reference: reference.to_string(),
            problem: format!("is not an image index: {e}"),
        })?;
        let images = index.manifests.iter().filter(|m| {
            m.artifact_type.is_none()
                && !m
                    .platform
                    .as_ref()
                    .is_some_and(ocibuild_apt::image::Platform::is_unknown)
        });
        for m in images {
            let platform = m
                .platform
                .as_ref()
                .map(std::string::ToString::to_string)
                .unwrap_or_else(|| m.digest.to_string());
            let want = Wanted {
                digest: &m.digest,
                ..want
            };
            let at = reference.with_digest(m.digest);
            for mut f in check_digest(client, store, &at, &want, true)? {
                f.platform = Some(platform.clone());
                findings.push(f);
            }
        }
    }
    let mut report = VerifyReport {
        image: format!("{repo}@{digest}"),
        digest,
        verified: false,
        findings,
    };
    report.verified = report.ok();
    Ok(report)
}

/// The signature and attestations of the manifest `want.digest` in `reference`'s repository;
/// with `in_index`, a missing signature is a note (the index's signature is checked).
fn check_digest(
    client: &Client,
    store: &Store,
    reference: &Reference,
    want: &Wanted<'_>,
    in_index: bool,
) -> Result<Vec<Finding>, SignError> {
    let digest = *want.digest;
    let repo = format!("{}/{}", reference.registry(), reference.repository());
    let keys = want.keys;
    let mut findings = Vec::new();
    let sig_ref = reference
        .with_tag(&signature_tag(&digest))
        .map_err(RegistryError::from)?;
    match client.get_manifest(&sig_ref) {
        Err(e) if crate::push::is_manifest_unknown(&e) && in_index => findings.push(Finding::new(
            "signature",
            "signature",
            Status::ByIndex,
            format!(
                "none of its own (no {repo}:{}): the index's signature covers a pull by the \
                 index, not a pull by this digest",
                signature_tag(&digest)
            ),
        )),
        Err(e) if crate::push::is_manifest_unknown(&e) => findings.push(Finding::new(
            "signature",
            "signature",
            Status::Missing,
            format!("missing: no {repo}:{}", signature_tag(&digest)),
        )),
        Err(e) => return Err(e.into()),
        Ok(m) => findings.push(check_signatures(client, store, &sig_ref, &m.bytes, want)),
    }
    let ix_tag = crate::push::referrers_tag(&digest);
    let ix_ref = reference.with_tag(&ix_tag).map_err(RegistryError::from)?;
    let referrers = match client.get_manifest(&ix_ref) {
        Ok(m) => match serde_json::from_slice::<Index>(&m.bytes) {
            Ok(i) if m.media_type == MEDIA_TYPE_INDEX => i.manifests,
            _ => {
                findings.push(Finding::new(
                    "attestations",
                    "attestations",
                    Status::Failed,
                    format!(
                        "{repo}:{ix_tag} (the referrers tag) is not an image index ({})",
                        m.media_type
                    ),
                ));
                Vec::new()
            }
        },
        Err(e) if crate::push::is_manifest_unknown(&e) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut verified_envelopes = Vec::new();
    for r in &referrers {
        match r.artifact_type.as_deref() {
            Some(DSSE_MEDIA_TYPE) => {
                let f = check_attestation(client, store, &ix_ref, r, &digest, keys);
                if let (Status::Verified, Some(e)) = (f.status, &f.envelope) {
                    verified_envelopes.push(*e);
                }
                findings.push(f);
            }
            other => findings.push(Finding::new(
                other.unwrap_or("referrer"),
                &crate::audit::attest::document_name(other, None),
                Status::Unsigned,
                format!("{} attached unsigned: not checked, not verified", r.digest),
            )),
        }
    }
    if !referrers
        .iter()
        .any(|r| r.artifact_type.as_deref() == Some(DSSE_MEDIA_TYPE))
    {
        findings.push(Finding::new(
            "attestations",
            "attestations",
            Status::None,
            "no signed attestation attached".into(),
        ));
    }
    if !verified_envelopes.is_empty() {
        findings.push(check_cosign_layout(
            client,
            reference,
            &digest,
            &verified_envelopes,
        ));
    }
    findings.sort_by_key(rank);
    Ok(findings)
}

/// What a signature must say.
#[derive(Clone, Copy)]
struct Wanted<'a> {
    digest: &'a Digest,
    repository: &'a str,
    tag: Option<&'a str>,
    keys: &'a [PublicKey],
}

/// A small blob of `at`'s repository, through `store` (verified by digest on the way).
fn fetch_document(
    client: &Client,
    store: &Store,
    at: &Reference,
    d: &Descriptor,
) -> Result<Vec<u8>, String> {
    if d.size > MAX_DOCUMENT {
        return Err(format!("{} claims {} bytes", d.digest, d.size));
    }
    client
        .pull_blob(at, &d.digest, Some(d.size), store, &Silent)
        .map_err(|e| crate::diag::chain(&e))?;
    store
        .read_blob(&d.digest)
        .map_err(|e| crate::diag::chain(&e))
}

fn check_signatures(
    client: &Client,
    store: &Store,
    sig_ref: &Reference,
    bytes: &[u8],
    want: &Wanted<'_>,
) -> Finding {
    let Ok(m) = serde_json::from_slice::<Manifest>(bytes) else {
        return Finding::new(
            "signature",
            "signature",
            Status::Failed,
            format!("{sig_ref} is not a manifest"),
        );
    };
    let mut problems = Vec::new();
    for (i, l) in m.layers.iter().enumerate() {
        if l.media_type != SIMPLE_SIGNING {
            continue;
        }
        let Some(sig) = l
            .annotations
            .get(SIGNATURE_ANNOTATION)
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        else {
            problems.push(format!("layer {i}: no signature annotation"));
            continue;
        };
        let payload = match fetch_document(client, store, sig_ref, l) {
            Ok(p) => p,
            Err(e) => {
                problems.push(format!("layer {i}: {e}"));
                continue;
            }
        };
        match signature_finding(&payload, &sig, want) {
            Ok(f) => return f,
            Err(p) => problems.push(format!("layer {i}: {p}")),
        }
    }
    if problems.is_empty() {
        problems.push("no signature layers".into());
    }
    Finding::new(
        "signature",
        "signature",
        Status::Failed,
        problems.join("; "),
    )
}

/// A simple-signing payload and its signature against `want`: the verified finding, or what is
/// wrong with it.
fn signature_finding(payload: &[u8], sig: &[u8], want: &Wanted<'_>) -> Result<Finding, String> {
    let Some(key) = want.keys.iter().find(|k| k.verifies(payload, sig)) else {
        return Err("does not verify with this key".into());
    };
    let Ok(claims) = serde_json::from_slice::<payload::SimpleSigning>(payload) else {
        return Err("not a simple-signing payload".into());
    };
    let c = &claims.critical;
    let signed_as = &c.identity.docker_reference;
    if c.kind != payload::SIMPLE_SIGNING_TYPE {
        return Err(format!("a `{}`, not an image signature", c.kind));
    }
    if c.image.docker_manifest_digest != want.digest.to_string() {
        return Err(format!(
            "signs {}, not this image",
            c.image.docker_manifest_digest
        ));
    }
    match repository_of(signed_as) {
        Some((r, _)) if r != want.repository => Err(format!(
            "signed as {signed_as}, not as {} (a mirror: --signed-identity)",
            want.repository
        )),
        Some((_, Some(t))) if want.tag.is_some_and(|w| w != t) => Err(format!(
            "signed as {signed_as}, not with the tag {}",
            want.tag.unwrap_or_default()
        )),
        Some(_) => Ok(Finding::new(
            "signature",
            "signature",
            Status::Verified,
            format!("signed as {signed_as}"),
        )
        .by(key)),
        None => Err(format!(
            "signed as `{signed_as}`, which is not an image reference"
        )),
    }
}

/// A signature layer of an OCI layout (its payload and the decoded signature annotation) of
/// the manifest `digest`: checked as a registry's is, the identity it was signed as taken as
/// it is (a layout has no repository to compare it with; the finding names it).
pub fn layout_signature_finding(
    payload: &[u8],
    sig: &[u8],
    digest: &Digest,
    keys: &[PublicKey],
) -> Result<Finding, String> {
    let identity = serde_json::from_slice::<payload::SimpleSigning>(payload)
        .ok()
        .and_then(|c| repository_of(&c.critical.identity.docker_reference))
        .map(|(r, _)| r)
        .unwrap_or_default();
    let want = Wanted {
        digest,
        repository: &identity,
        tag: None,
        keys,
    };
    signature_finding(payload, sig, &want)
}

fn check_attestation(
    client: &Client,
    store: &Store,
    at: &Reference,
    r: &Descriptor,
    digest: &Digest,
    keys: &[PublicKey],
) -> Finding {
    // Until it verifies, the row is named by what the envelope claims to be (if anything).
    let claimed = "attestation";
    let bad = |claimed: &str, detail: String| {
        Finding::new(
            "attestation",
            claimed,
            Status::Failed,
            format!("{}: {detail}", r.digest),
        )
    };
    // A manifest, by digest: through the manifests endpoint (verified against the digest).
    let bytes = match client.get_manifest(&at.with_digest(r.digest)) {
        Ok(m) => m.bytes,
        Err(e) if crate::push::is_manifest_unknown(&e) => {
            return bad(
                claimed,
                "listed in the referrers tag, but not in the registry".into(),
            )
        }
        Err(e) => return bad(claimed, crate::diag::chain(&e)),
    };
    let Ok(m) = serde_json::from_slice::<Manifest>(&bytes) else {
        return bad(claimed, "not a manifest".into());
    };
    let Some(layer) = m.layers.first() else {
        return bad(claimed, "has no layer".into());
    };
    let env_bytes = match fetch_document(client, store, at, layer) {
        Ok(b) => b,
        Err(e) => return bad(claimed, e),
    };
    envelope_finding(&env_bytes, &r.digest, digest, keys, layer.digest)
}

/// A DSSE envelope (the layer `layer` of the referrer `referrer`) of an attestation about the
/// manifest `digest`, checked against `keys`.
pub fn envelope_finding(
    env_bytes: &[u8],
    referrer: &Digest,
    digest: &Digest,
    keys: &[PublicKey],
    layer: Digest,
) -> Finding {
    let mut claimed = "attestation".to_string();
    let bad = |claimed: &str, detail: String| {
        Finding::new(
            "attestation",
            claimed,
            Status::Failed,
            format!("{referrer}: {detail}"),
        )
    };
    if let Some(p) = payload::envelope_predicate_type(env_bytes) {
        claimed = item_of_predicate(&p);
    }
    let Ok(envelope) = serde_json::from_slice::<Envelope>(env_bytes) else {
        return bad(&claimed, "not a DSSE envelope".into());
    };
    if envelope.payload_type != payload::IN_TOTO_PAYLOAD {
        return bad(
            &claimed,
            format!(
                "payload type `{}`, not an in-toto statement",
                envelope.payload_type
            ),
        );
    }
    let Some((key, statement)) = keys
        .iter()
        .find_map(|k| envelope.verified(k).map(|s| (k, s)))
    else {
        return bad(
            &claimed,
            "the envelope's signature does not verify with this key".into(),
        );
    };
    let Some((subjects, predicate)) = payload::statement_claims(&statement) else {
        return bad(&claimed, "not an in-toto statement".into());
    };
    let item = item_of_predicate(&predicate);
    if !subjects.iter().any(|s| *s == digest.hex()) {
        return Finding::new(
            &predicate,
            &item,
            Status::Failed,
            format!("{referrer}: a statement about another image"),
        )
        .by(key);
    }
    let mut f = Finding::new(
        &predicate,
        &item,
        Status::Verified,
        format!("{referrer} signed attestation"),
    )
    .by(key);
    f.envelope = Some(layer);
    f
}

/// Whether the signed attestations that verified (their envelopes `verified`) are also in
/// cosign's layout, under `sha256-<hex>.att`, as layers cosign reads (a DSSE envelope with
/// the signature annotation): the same blobs, so they verify there too. A note either way:
/// an image pushed before ocibuild wrote that tag has none, and its referrers are what counts.
fn check_cosign_layout(
    client: &Client,
    reference: &Reference,
    digest: &Digest,
    verified: &[Digest],
) -> Finding {
    let tag = super::cosign::attestation_tag(digest);
    let shown = format!("{}/{}:{tag}", reference.registry(), reference.repository());
    let note = |status, detail| Finding::new("cosign", "cosign .att", status, detail);
    let got = match reference.with_tag(&tag) {
        Ok(r) => Ok(client.get_manifest(&r)),
        Err(e) => Err(e),
    };
    let layers = match got {
        Ok(Ok(m)) => match serde_json::from_slice::<Manifest>(&m.bytes) {
            Ok(m) => m.layers,
            Err(_) => return note(Status::Absent, format!("{shown} is not a manifest")),
        },
        Ok(Err(e)) if crate::push::is_manifest_unknown(&e) => {
            return note(
                Status::Absent,
                format!(
                    "no {shown}: `cosign verify-attestation` finds none of the {} signed \
                     attestations (push them again with --attach --sign-key)",
                    verified.len()
                ),
            )
        }
        Ok(Err(e)) => return note(Status::Absent, crate::diag::chain(&e)),
        Err(e) => return note(Status::Absent, e.to_string()),
    };
    let readable = |d: &Digest| {
        layers.iter().any(|l| {
            l.digest == *d
                && l.media_type == DSSE_MEDIA_TYPE
                && l.annotations.contains_key(SIGNATURE_ANNOTATION)
        })
    };
    let lacking: Vec<String> = verified
        .iter()
        .filter(|d| !readable(d))
        .map(std::string::ToString::to_string)
        .collect();
    if lacking.is_empty() {
        note(
            Status::Present,
            format!(
                "the {} signed attestations also under {shown}, as cosign reads them",
                verified.len()
            ),
        )
    } else {
        note(
            Status::Absent,
            format!(
                "{shown} lacks {} of them: {}",
                lacking.len(),
                lacking.join(", ")
            ),
        )
    }
}
