//! The report's trust part: the provenance attached to the image (builder, inputs, lock
//! digest) and the grid of signatures and attestations per platform (item × platform × result
//! × key), as `verify-signature` checks them ([`crate::sign::verify_image`]).
//!
//! Nothing here fails the report: a registry that does not answer for an image's signature or
//! referrers, a document that cannot be read, are said in [`Trust::problems`]. An unsigned
//! document is never shown as verified, and without a key nothing is.

use serde::Serialize;
use serde_json::Value;

use crate::digest::Digest;
use crate::image::read::ReadDescriptor;
use crate::output::Layout;
use crate::progress::Silent;
use crate::registry::{Client, Reference};
use crate::sign::payload::DSSE_MEDIA_TYPE;
use crate::sign::verify::{envelope_finding, Status};
use crate::sign::{signature_tag, Finding, PublicKey};
use crate::store::Store;
use base64::Engine as _;

/// An artifact manifest as read: its layers and its subject.
#[derive(serde::Deserialize)]
struct ReadManifest {
    #[serde(default)]
    layers: Vec<ReadDescriptor>,
    #[serde(default)]
    subject: Option<ReadDescriptor>,
}

/// A provenance document larger than this is not read.
const MAX_PROVENANCE: u64 = 16 << 20;

/// Signatures, attestations and provenance of the image reported on.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trust {
    /// Where they were looked for: `registry` or `layout`.
    pub looked_in: String,
    /// The public keys given (`--key`): file and id.
    pub keys: Vec<KeyInfo>,
    /// A signature of the image named verified with one of the keys, and nothing failed.
    pub verified: bool,
    /// One row per item and platform.
    pub grid: Vec<GridRow>,
    /// The provenance attached to each image (platform) that has one.
    pub provenance: Vec<Provenance>,
    /// What could not be looked at (a registry that did not answer, …), in words.
    pub problems: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyInfo {
    pub file: String,
    pub id: String,
}

/// What the grid says of an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Result {
    /// Verified with one of the keys given.
    Verified,
    /// There, and does not verify with the keys given, or says something wrong.
    Failed,
    /// Attached, but no key was given: not verified.
    AttachedNotVerified,
    /// Attached without a signature: never verified.
    Unsigned,
    /// Not there.
    Missing,
    /// A note (no signed attestation, the index's signature only, cosign's layout …).
    Note,
    /// The registry did not answer.
    Unavailable,
}

impl Result {
    pub fn word(self) -> &'static str {
        match self {
            Result::Verified => "verified",
            Result::Failed => "FAILED",
            Result::AttachedNotVerified => "attached, not verified",
            Result::Unsigned => "unsigned (not verified)",
            Result::Missing => "missing",
            Result::Note => "note",
            Result::Unavailable => "unavailable",
        }
    }

    /// The `data-status` of the page.
    pub fn id(self) -> &'static str {
        match self {
            Result::Verified => "verified",
            Result::Failed => "failed",
            Result::AttachedNotVerified => "attached-not-verified",
            Result::Unsigned => "unsigned",
            Result::Missing => "missing",
            Result::Note => "note",
            Result::Unavailable => "unavailable",
        }
    }
}

/// One row of the grid.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GridRow {
    /// `signature`, `SPDX SBOM`, `CycloneDX SBOM`, `SLSA provenance`,
    /// `SLSA verification summary`, `attestations`, `cosign .att`, another type as it is.
    pub item: String,
    /// Whether the row is about a signed attestation (rather than an unsigned document).
    pub signed: bool,
    /// The platform (`null`: the image named, or an index itself).
    pub platform: Option<String>,
    pub result: Result,
    /// `verify-signature`'s status word, when the row is one of its findings.
    pub status: Option<String>,
    /// The key that verified it (file as given) and its id.
    pub key: Option<String>,
    pub key_id: Option<String>,
    pub detail: String,
}

/// A SLSA provenance statement attached to an image, as read (not verified: the grid says
/// whether a signed copy verified).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    /// The manifest it is about.
    pub subject: String,
    /// The referrer it was read from.
    pub referrer: String,
    pub builder: Option<String>,
    pub build_type: Option<String>,
    pub recipe: Option<String>,
    pub recipe_digest: Option<String>,
    pub lock: Option<String>,
    pub lock_digest: Option<String>,
    /// Every resolved dependency: kind (`base`, `deb`, `wheel`, …), uri, sha256.
    pub inputs: Vec<Input>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Input {
    pub kind: Option<String>,
    pub uri: Option<String>,
    pub name: Option<String>,
    pub sha256: Option<String>,
}

fn key_infos(keys: &[PublicKey]) -> Vec<KeyInfo> {
    keys.iter()
        .map(|k| KeyInfo {
            file: k.name().to_string(),
            id: k.id(),
        })
        .collect()
}

/// A finding of `verify-signature` as a row; without keys, what is there is "attached, not
/// verified" (nothing can verify), never verified.
fn row_of(f: &crate::sign::Finding, no_keys: bool) -> GridRow {
    let result = match f.status {
        Status::Verified if no_keys => Result::AttachedNotVerified,
        Status::Verified => Result::Verified,
        Status::Failed if no_keys => Result::AttachedNotVerified,
        Status::Failed => Result::Failed,
        Status::Missing => Result::Missing,
        Status::Unsigned => Result::Unsigned,
        Status::None | Status::ByIndex | Status::Present | Status::Absent => Result::Note,
    };
    let detail = if result == Result::AttachedNotVerified {
        "attached, not verified (no key given)".to_string()
    } else {
        f.detail.clone()
    };
    GridRow {
        item: f.item.clone(),
        signed: f.status != Status::Unsigned,
        platform: f.platform.clone(),
        result,
        status: Some(f.status.word().to_string()),
        key: f.key.clone().filter(|_| result == Result::Verified),
        key_id: f.key_id.clone().filter(|_| result == Result::Verified),
        detail,
    }
}

/// What `verify-signature` checks signatures against.
#[derive(Clone, Copy, Debug)]
pub struct Check<'a> {
    pub keys: &'a [PublicKey],
    /// The repository the signature must name, when not the image's (a mirror).
    pub signed_identity: Option<&'a str>,
}

/// What a registry image has attached: `verify-signature`'s check of `reference`, and the
/// provenance attached to each of `manifests` (the images reported on).
pub fn of_registry(
    client: &Client,
    store: &Store,
    reference: &Reference,
    check: &Check<'_>,
    manifests: &[Digest],
) -> Trust {
    let keys = check.keys;
    let mut trust = Trust {
        looked_in: "registry".into(),
        keys: key_infos(keys),
        ..Trust::default()
    };
    match crate::sign::verify_image(client, store, reference, keys, check.signed_identity) {
        Ok(report) => {
            trust.verified = !keys.is_empty() && report.ok();
            trust.grid = report
                .findings
                .iter()
                .map(|f| row_of(f, keys.is_empty()))
                .collect();
        }
        Err(e) => {
            let why = crate::diag::chain(&e);
            trust.problems.push(format!(
                "the registry did not answer for the signature and referrers of {reference}: \
                 {why}"
            ));
            trust.grid = ["signature", "attestations"]
                .into_iter()
                .map(|item| GridRow {
                    item: item.into(),
                    signed: true,
                    platform: None,
                    result: Result::Unavailable,
                    status: None,
                    key: None,
                    key_id: None,
                    detail: "the registry did not answer (see the problems)".into(),
                })
                .collect();
        }
    }
    for m in manifests {
        match registry_provenance(client, store, reference, m) {
            Ok(Some(p)) => trust.provenance.push(p),
            Ok(None) => {}
            Err(why) => trust.problems.push(format!("the provenance of {m}: {why}")),
        }
    }
    trust
}

fn registry_provenance(
    client: &Client,
    store: &Store,
    reference: &Reference,
    digest: &Digest,
) -> std::result::Result<Option<Provenance>, String> {
    let chain = |e: &dyn std::error::Error| crate::diag::chain(e);
    let at = reference
        .with_tag(&crate::push::referrers_tag(digest))
        .map_err(|e| e.to_string())?;
    let index = match client.get_manifest(&at) {
        Ok(m) => m,
        Err(e) if crate::push::is_manifest_unknown(&e) => return Ok(None),
        Err(e) => return Err(chain(&e)),
    };
    let index: crate::image::read::ReadIndex =
        serde_json::from_slice(&index.bytes).map_err(|e| format!("the referrers tag: {e}"))?;
    let Some(entry) = index
        .manifests
        .iter()
        .find(|r| r.artifact_type.as_deref() == Some(crate::audit::provenance::MEDIA_TYPE))
    else {
        return Ok(None);
    };
    let d: Digest = entry
        .digest
        .parse()
        .map_err(|_| "a bad digest".to_string())?;
    let m = client
        .get_manifest(&reference.with_digest(d))
        .map_err(|e| chain(&e))?;
    let m: ReadManifest = serde_json::from_slice(&m.bytes).map_err(|e| e.to_string())?;
    let layer = m.layers.first().ok_or("an artifact without a layer")?;
    let ld: Digest = layer
        .digest
        .parse()
        .map_err(|_| "a bad digest".to_string())?;
    let size = layer.size.unwrap_or(0);
    if size > MAX_PROVENANCE {
        return Err(format!("{ld} claims {size} bytes"));
    }
    client
        .pull_blob(reference, &ld, layer.size, store, &Silent)
        .map_err(|e| chain(&e))?;
    let bytes = store.read_blob(&ld).map_err(|e| chain(&e))?;
    Ok(parse_provenance(digest, &d, &bytes))
}

/// The statement's facts (None when it is not an in-toto statement).
pub fn parse_provenance(subject: &Digest, referrer: &Digest, bytes: &[u8]) -> Option<Provenance> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let p = v.get("predicate")?;
    let s = |v: &Value| v.as_str().map(str::to_string);
    let def = &p["buildDefinition"];
    let ext = &def["externalParameters"];
    let sha = |v: &Value| s(&v["digest"]["sha256"]).map(|h| format!("sha256:{h}"));
    let inputs = def["resolvedDependencies"]
        .as_array()
        .map(|deps| {
            deps.iter()
                .map(|d| Input {
                    kind: s(&d["annotations"]["ocibuild:input"]),
                    uri: s(&d["uri"]),
                    name: s(&d["name"]),
                    sha256: sha(d),
                })
                .collect()
        })
        .unwrap_or_default();
    Some(Provenance {
        subject: subject.to_string(),
        referrer: referrer.to_string(),
        builder: s(&p["runDetails"]["builder"]["id"]),
        build_type: s(&def["buildType"]),
        recipe: s(&ext["recipe"]["path"]),
        recipe_digest: sha(&ext["recipe"]),
        lock: s(&ext["lock"]["path"]),
        lock_digest: sha(&ext["lock"]),
        inputs,
    })
}

/// What an OCI layout holds for the images `manifests` (each with its platform), checked with
/// `verify-signature`'s code: the signature entries (`sha256-<hex>.sig`, written when the
/// build also pushed; the identity signed is named, as a layout has no repository to compare
/// it with), the signed attestations, and the unsigned documents (never verified).
pub fn of_layout(layout: &Layout, keys: &[PublicKey], manifests: &[(Digest, String)]) -> Trust {
    let mut trust = Trust {
        looked_in: "layout".into(),
        keys: key_infos(keys),
        ..Trust::default()
    };
    let no_keys = keys.is_empty();
    let many = manifests.len() > 1;
    let mut all_verified = !no_keys && !manifests.is_empty();
    for (digest, platform) in manifests {
        let mut findings = Vec::new();
        let sig_tag = signature_tag(digest);
        match layout.index().tagged(&sig_tag) {
            Some(e) => findings.push(layout_signature(layout, e, digest, keys)),
            None => findings.push(Finding::new(
                "signature",
                "signature",
                Status::Missing,
                format!("missing: no {sig_tag} in the layout (a build signs when it pushes)"),
            )),
        }
        let mut signed = 0;
        for r in referrers_in(layout, digest) {
            let at = r.artifact_type.as_deref();
            let Ok(d) = r.digest.parse::<Digest>() else {
                continue;
            };
            if at == Some(DSSE_MEDIA_TYPE) {
                signed += 1;
                findings.push(match artifact_layer(layout, &d) {
                    Some((env, layer)) => envelope_finding(&env, &d, digest, keys, layer),
                    None => Finding::new(
                        "attestation",
                        "attestation",
                        Status::Failed,
                        format!("{d}: its envelope is not in the layout"),
                    ),
                });
            } else {
                findings.push(Finding::new(
                    at.unwrap_or("referrer"),
                    &crate::audit::attest::document_name(at, None),
                    Status::Unsigned,
                    format!("{d} attached unsigned: not checked, not verified"),
                ));
                if at == Some(crate::audit::provenance::MEDIA_TYPE) {
                    if let Some(p) = layout_provenance(layout, digest, &d) {
                        trust.provenance.push(p);
                    }
                }
            }
        }
        if signed == 0 {
            findings.push(Finding::new(
                "attestations",
                "attestations",
                Status::None,
                "no signed attestation attached".into(),
            ));
        }
        let verified: Vec<Digest> = findings.iter().filter_map(Finding::envelope).collect();
        if !verified.is_empty() {
            findings.push(layout_cosign(layout, digest, &verified));
        }
        all_verified &= findings
            .iter()
            .any(|f| f.what == "signature" && f.status == Status::Verified)
            && !findings.iter().any(|f| f.status.fails());
        for f in &findings {
            let mut row = row_of(f, no_keys);
            row.platform = many.then(|| platform.clone());
            trust.grid.push(row);
        }
    }
    trust.verified = all_verified;
    trust
}

/// Whether the signed attestations that verified (their envelopes) are also under cosign's
/// `sha256-<hex>.att` in the layout, as `verify-signature` checks a registry's: a note.
fn layout_cosign(layout: &Layout, digest: &Digest, verified: &[Digest]) -> Finding {
    let tag = crate::sign::cosign::attestation_tag(digest);
    let note = |status, detail| Finding::new("cosign", "cosign .att", status, detail);
    let Some(m) = layout
        .index()
        .tagged(&tag)
        .and_then(|e| e.digest.parse::<Digest>().ok())
        .and_then(|d| layout_blob(layout, &d))
        .and_then(|b| serde_json::from_slice::<ReadManifest>(&b).ok())
    else {
        return note(
            Status::Absent,
            format!("no {tag} in the layout: cosign finds none of the signed attestations"),
        );
    };
    let lacking = verified
        .iter()
        .filter(|d| {
            !m.layers.iter().any(|l| {
                l.digest == d.to_string()
                    && l.media_type == DSSE_MEDIA_TYPE
                    && l.annotations
                        .contains_key(crate::sign::payload::SIGNATURE_ANNOTATION)
            })
        })
        .count();
    if lacking == 0 {
        note(
            Status::Present,
            format!(
                "the {} signed attestations also under {tag}, as cosign reads them",
                verified.len()
            ),
        )
    } else {
        note(Status::Absent, format!("{tag} lacks {lacking} of them"))
    }
}

/// The layout's signature entry `entry` of `digest`: its first layer that verifies, or every
/// layer's problem.
fn layout_signature(
    layout: &Layout,
    entry: &ReadDescriptor,
    digest: &Digest,
    keys: &[PublicKey],
) -> Finding {
    let failed = |detail: String| Finding::new("signature", "signature", Status::Failed, detail);
    let Some(m) = entry
        .digest
        .parse::<Digest>()
        .ok()
        .and_then(|d| layout_blob(layout, &d))
        .and_then(|b| serde_json::from_slice::<ReadManifest>(&b).ok())
    else {
        return failed(format!("{}: not a manifest in the layout", entry.digest));
    };
    let mut problems = Vec::new();
    for (i, l) in m.layers.iter().enumerate() {
        if l.media_type != crate::sign::SIMPLE_SIGNING {
            continue;
        }
        let sig = l
            .annotations
            .get(crate::sign::payload::SIGNATURE_ANNOTATION)
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok());
        let payload = l
            .digest
            .parse::<Digest>()
            .ok()
            .and_then(|d| layout_blob(layout, &d));
        let (Some(sig), Some(payload)) = (sig, payload) else {
            problems.push(format!("layer {i}: no signature or payload"));
            continue;
        };
        match crate::sign::verify::layout_signature_finding(&payload, &sig, digest, keys) {
            Ok(f) => return f,
            Err(p) => problems.push(format!("layer {i}: {p}")),
        }
    }
    if problems.is_empty() {
        problems.push("no signature layers".into());
    }
    failed(problems.join("; "))
}

/// A small blob of the layout (None when it is missing, too large, or unreadable).
fn layout_blob(layout: &Layout, digest: &Digest) -> Option<Vec<u8>> {
    let path = layout.blob_path(&digest.to_string()).ok()?;
    crate::bounded::read_regular(&path, MAX_PROVENANCE).ok()
}

/// The layout's referrers of `digest`: index entries with an artifact type whose manifest's
/// subject is `digest`.
fn referrers_in<'l>(layout: &'l Layout, digest: &Digest) -> Vec<&'l ReadDescriptor> {
    layout
        .index()
        .manifests
        .iter()
        .filter(|e| e.artifact_type.is_some())
        .filter(|e| {
            let Some(bytes) = e
                .digest
                .parse::<Digest>()
                .ok()
                .and_then(|d| layout_blob(layout, &d))
            else {
                return false;
            };
            serde_json::from_slice::<ReadManifest>(&bytes)
                .ok()
                .and_then(|m| m.subject)
                .is_some_and(|s| s.digest == digest.to_string())
        })
        .collect()
}

/// The first layer of the artifact manifest `referrer`, and its digest.
fn artifact_layer(layout: &Layout, referrer: &Digest) -> Option<(Vec<u8>, Digest)> {
    let m: ReadManifest = serde_json::from_slice(&layout_blob(layout, referrer)?).ok()?;
    let d: Digest = m.layers.first()?.digest.parse().ok()?;
    Some((layout_blob(layout, &d)?, d))
}

fn layout_provenance(layout: &Layout, subject: &Digest, referrer: &Digest) -> Option<Provenance> {
    parse_provenance(subject, referrer, &artifact_layer(layout, referrer)?.0)
}

/// The most lines of a rebuild's differences kept.
pub const MAX_DIFFERENCES: usize = 200;

/// `report RECIPE --verify`: the recipe rebuilt from its lock in an empty store and compared
/// with the image, as `ocibuild verify RECIPE` does.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rebuild {
    /// Every platform bit-identical.
    pub reproduced: bool,
    pub platforms: Vec<RebuildPlatform>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RebuildPlatform {
    pub platform: String,
    pub rebuilt: String,
    pub target: String,
    pub target_manifest: Option<String>,
    pub reproduced: bool,
    /// The recipe or lock digests the image records that are not the rebuild's.
    pub inputs: Vec<crate::audit::verify::InputMismatch>,
    /// What differs, as `verify` prints it (at most [`MAX_DIFFERENCES`] lines).
    pub differences: Vec<String>,
    pub differences_left_out: usize,
}

impl RebuildPlatform {
    pub fn of(platform: String, r: &crate::audit::verify::VerifyReport) -> RebuildPlatform {
        let lines: Vec<String> = if r.reproduced {
            Vec::new()
        } else {
            crate::audit::render::verify_text(r)
                .lines()
                .map(str::to_string)
                .collect()
        };
        let left_out = lines.len().saturating_sub(MAX_DIFFERENCES);
        RebuildPlatform {
            platform,
            rebuilt: r.rebuilt.to_string(),
            target: r.target.clone(),
            target_manifest: r.target_manifest.map(|d| d.to_string()),
            reproduced: r.reproduced,
            inputs: r.inputs.clone(),
            differences: lines.into_iter().take(MAX_DIFFERENCES).collect(),
            differences_left_out: left_out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_keys_nothing_is_verified() {
        let f = Finding::new("signature", "signature", Status::Verified, "x".into());
        assert_eq!(row_of(&f, false).result, Result::Verified);
        let r = row_of(&f, true);
        assert_eq!(r.result, Result::AttachedNotVerified);
        assert_eq!(r.key, None);
        assert_eq!(r.detail, "attached, not verified (no key given)");
    }

    #[test]
    fn provenance_facts() {
        let doc = serde_json::json!({
            "predicate": {
                "buildDefinition": {
                    "buildType": "https://ocibuild.dev/build/v1",
                    "externalParameters": {
                        "recipe": {"path": "app.toml", "digest": {"sha256": "ab"}},
                        "lock": {"path": "app.lock", "digest": {"sha256": "cd"}},
                    },
                    "resolvedDependencies": [
                        {"uri": "https://x/a.deb", "digest": {"sha256": "ef"},
                         "annotations": {"ocibuild:input": "deb"}},
                    ],
                },
                "runDetails": {"builder": {"id": "https://ocibuild.dev/builder/ocibuild@1"}},
            }
        });
        let d = Digest::of(b"x");
        let p = parse_provenance(&d, &d, doc.to_string().as_bytes()).unwrap();
        assert_eq!(p.lock_digest.as_deref(), Some("sha256:cd"));
        assert_eq!(p.recipe.as_deref(), Some("app.toml"));
        assert_eq!(p.inputs[0].kind.as_deref(), Some("deb"));
        assert!(parse_provenance(&d, &d, b"{}").is_none());
    }
}
