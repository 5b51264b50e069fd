//! What gets signed: the sigstore "simple signing" payload of an image (cosign's and
//! containers/image's format), and DSSE envelopes around in-toto Statement v1 documents.

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::key::{PrivateKey, PublicKey};
use crate::digest::Digest;
use crate::json::JsonError;

pub use crate::push::attach::SIMPLE_SIGNING;

/// The predicate type of a SLSA Verification Summary Attestation.
pub const VSA_V1: &str = "https://slsa.dev/verification_summary/v1";
/// The annotation holding the base64 signature of that layer's bytes.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// A DSSE envelope (also the artifact type of the referrers that carry one).
pub const DSSE_MEDIA_TYPE: &str = "application/vnd.dsse.envelope.v1+json";
/// The payload type of an envelope around an in-toto statement.
pub const IN_TOTO_PAYLOAD: &str = "application/vnd.in-toto+json";
pub const STATEMENT_V1: &str = "https://in-toto.io/Statement/v1";
/// The statement version cosign's `attest` still writes; read, never written.
pub const STATEMENT_V01: &str = "https://in-toto.io/Statement/v0.1";
/// The `type` of a simple-signing payload for an image.
pub const SIMPLE_SIGNING_TYPE: &str = "cosign container image signature";

/// The simple-signing payload for `digest` as `reference` (`registry/repository[:tag]`):
/// canonical JSON, so the same image and name sign to the same bytes.
pub fn simple_signing(reference: &str, digest: &Digest) -> Result<Vec<u8>, JsonError> {
    let doc = json!({
        "critical": {
            "identity": {"docker-reference": reference},
            "image": {"docker-manifest-digest": digest.to_string()},
            "type": SIMPLE_SIGNING_TYPE,
        },
        "optional": null,
    });
    crate::json::to_canonical_vec("simple-signing payload", &doc)
}

/// What a simple-signing payload says.
#[derive(Debug, Deserialize)]
pub struct SimpleSigning {
    pub critical: Critical,
}

#[derive(Debug, Deserialize)]
pub struct Critical {
    pub identity: Identity,
    pub image: ImageClaim,
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Deserialize)]
pub struct Identity {
    #[serde(rename = "docker-reference")]
    pub docker_reference: String,
}

#[derive(Debug, Deserialize)]
pub struct ImageClaim {
    #[serde(rename = "docker-manifest-digest")]
    pub docker_manifest_digest: String,
}

/// DSSE's pre-authentication encoding: `DSSEv1 SP len(type) SP type SP len(body) SP body`.
pub fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// A DSSE envelope.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub payload_type: String,
    /// base64 of the statement's bytes.
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    #[serde(default)]
    pub keyid: String,
    pub sig: String,
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

impl Envelope {
    /// `statement` (in-toto JSON bytes) signed with `key`.
    pub fn sign(statement: &[u8], key: &PrivateKey) -> Envelope {
        let sig = key.sign(&pae(IN_TOTO_PAYLOAD, statement));
        Envelope {
            payload_type: IN_TOTO_PAYLOAD.into(),
            payload: b64().encode(statement),
            signatures: vec![EnvelopeSignature {
                keyid: String::new(),
                sig: b64().encode(sig),
            }],
        }
    }

    /// The statement's bytes when the envelope carries an in-toto statement and one of its
    /// signatures verifies with `key`. (The payload type is signed too, but an envelope of
    /// another type is not an attestation, whoever signed it.)
    pub fn verified(&self, key: &PublicKey) -> Option<Vec<u8>> {
        if self.payload_type != IN_TOTO_PAYLOAD {
            return None;
        }
        let body = b64().decode(&self.payload).ok()?;
        let message = pae(&self.payload_type, &body);
        self.signatures
            .iter()
            .filter_map(|s| b64().decode(&s.sig).ok())
            .any(|sig| key.verifies(&message, &sig))
            .then_some(body)
    }

    /// Canonical JSON bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, JsonError> {
        crate::json::to_canonical_vec("DSSE envelope", self)
    }
}

/// An in-toto Statement v1 about the image `name@digest`, with `predicate` of `predicate_type`.
pub fn statement(
    name: &str,
    digest: &Digest,
    predicate_type: &str,
    predicate: serde_json::Value,
) -> Result<Vec<u8>, JsonError> {
    let doc = json!({
        "_type": STATEMENT_V1,
        "subject": [{"name": name, "digest": {"sha256": digest.hex()}}],
        "predicateType": predicate_type,
        "predicate": predicate,
    });
    crate::json::to_canonical_vec("in-toto statement", &doc)
}

/// The predicate type of the in-toto statement that a DSSE envelope carries, its signatures
/// not checked: to say what the envelope is, not to trust it.
pub fn envelope_predicate_type(bytes: &[u8]) -> Option<String> {
    let envelope: Envelope = serde_json::from_slice(bytes).ok()?;
    if envelope.payload_type != IN_TOTO_PAYLOAD {
        return None;
    }
    let body = b64().decode(&envelope.payload).ok()?;
    statement_claims(&body).map(|(_, t)| t)
}

/// The subject digests (`sha256` hex) and predicate type of a statement.
pub fn statement_claims(bytes: &[u8]) -> Option<(Vec<String>, String)> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if v["_type"] != STATEMENT_V1 && v["_type"] != STATEMENT_V01 {
        return None;
    }
    let subjects = v["subject"]
        .as_array()?
        .iter()
        .filter_map(|s| s["digest"]["sha256"].as_str().map(str::to_string))
        .collect();
    Some((subjects, v["predicateType"].as_str()?.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_is_the_specs() {
        // The DSSE spec's example: PAE("http://example.com/HelloWorld", "hello world").
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
    }

    #[test]
    fn the_payload_is_cosigns() {
        let d = Digest::of(b"x");
        let p = String::from_utf8(simple_signing("r.io/a/b", &d).unwrap()).unwrap();
        assert_eq!(
            p,
            format!(
                "{{\"critical\":{{\"identity\":{{\"docker-reference\":\"r.io/a/b\"}},\"image\":{{\"docker-manifest-digest\":\"{d}\"}},\"type\":\"cosign container image signature\"}},\"optional\":null}}"
            )
        );
    }
}
