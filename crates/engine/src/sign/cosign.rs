//! Signed attestations where cosign looks for them, in addition to the OCI 1.1 referrers:
//! under the tag `sha256-<hex>.att` of the image's digest, an OCI manifest (no subject, the
//! config of a signature manifest) whose layers are the DSSE envelopes themselves, each with
//! the annotations cosign reads: `predicateType` (the statement's, so that `cosign tree` and
//! policies can tell them apart) and `dev.cosignproject.cosign/signature` set to "" (the
//! signature is inside the envelope; cosign refuses a layer without the annotation).
//! `cosign verify-attestation --key` reads this tag only (cosign 2.5, also with
//! `--experimental-oci11`), and checks each envelope's signature over DSSE's PAE and that the
//! statement's subject digest is the image's.
//!
//! The layers are made from the signed referrers alone (their envelope blobs, in the order of
//! the referrers, sorted by digest): the same referrers give the same `.att` manifest, byte for
//! byte, in a layout and in a registry.

use crate::digest::Digest;
use crate::image::{self, Descriptor, MEDIA_TYPE_MANIFEST};
use crate::push::error::PushError;
use crate::registry::{Client, Reference};
use crate::store::{Store, StoreError};

use super::payload::{envelope_predicate_type, DSSE_MEDIA_TYPE, SIGNATURE_ANNOTATION};

/// The annotation naming an attestation layer's predicate type (cosign's key).
pub const PREDICATE_TYPE_ANNOTATION: &str = "predicateType";
/// The artifact type of the `.att` manifest's entry in an OCI layout's index (cosign's name
/// for attestations as artifacts), so that it is not taken for an image or for a referrer.
/// The manifest itself has none, as cosign writes it.
pub const LAYOUT_ARTIFACT_TYPE: &str = "application/vnd.dev.cosign.artifact.att.v1+json";

/// Largest envelope read to learn its predicate type.
const MAX_ENVELOPE: u64 = 16 << 20;

/// The tag of an image's attestations in cosign's layout: `sha256-<hex>.att`.
pub fn attestation_tag(subject: &Digest) -> String {
    format!("sha256-{}.att", subject.hex())
}

/// The `.att` layers for the signed attestations among the artifact manifests `referrers`
/// (all in `blobs`): each DSSE envelope whose in-toto statement names a predicate type, in the
/// referrers' order. Unsigned documents have no place there.
pub fn layers_of(blobs: &Store, referrers: &[Descriptor]) -> Result<Vec<Descriptor>, PushError> {
    let mut out = Vec::new();
    for r in referrers {
        let (_, head) = crate::push::artifact_head(blobs, &r.digest)?;
        for l in &head.layers {
            if l.media_type != DSSE_MEDIA_TYPE || l.size > MAX_ENVELOPE {
                continue;
            }
            let Some(predicate) = envelope_predicate_type(&blobs.read_blob(&l.digest)?) else {
                continue;
            };
            let mut layer = Descriptor::new(DSSE_MEDIA_TYPE, l.digest, l.size);
            layer
                .annotations
                .insert(PREDICATE_TYPE_ANNOTATION.into(), predicate);
            layer
                .annotations
                .insert(SIGNATURE_ANNOTATION.into(), String::new());
            if !out.contains(&layer) {
                out.push(layer);
            }
        }
    }
    Ok(out)
}

/// Pushes the `.att` manifest of `subject` for the signed attestations among `referrers`
/// (already pushed, their blobs in `blobs`) to `target`'s repository, joining the layers
/// already there (cosign's own `attest` and another signer's stay). Returns
/// `registry/repository:sha256-<hex>.att@digest`, or `None` when no referrer is a signed
/// attestation.
pub fn push_attestations(
    client: &Client,
    blobs: &Store,
    subject: &Digest,
    referrers: &[Descriptor],
    target: &Reference,
) -> Result<Option<String>, PushError> {
    let layers = layers_of(blobs, referrers)?;
    if layers.is_empty() {
        return Ok(None);
    }
    // The manifest's config is written here: `blobs` may be a layout read as a store.
    let scratch_dir = tempfile::Builder::new()
        .prefix("ocibuild-att-")
        .tempdir()
        .map_err(StoreError::from)?;
    let scratch = Store::open(scratch_dir.path())?;
    let tag = attestation_tag(subject);
    let (digest, _) =
        crate::push::attach::push_attachment(client, target, &tag, &layers, blobs, &scratch)?;
    Ok(Some(format!(
        "{}/{}:{tag}@{digest}",
        target.registry(),
        target.repository()
    )))
}

/// An OCI layout's index entry and the blobs it needs.
pub type LayoutEntry = (Descriptor, Vec<(Digest, u64)>);

/// The `.att` manifest of `subject` for an OCI layout: its index entry (tagged
/// `sha256-<hex>.att`, with [`LAYOUT_ARTIFACT_TYPE`]) and the blobs it needs, all in `store`;
/// `None` when no referrer is a signed attestation.
pub fn layout_attestations(
    store: &Store,
    subject: &Digest,
    referrers: &[Descriptor],
) -> Result<Option<LayoutEntry>, PushError> {
    let layers = layers_of(store, referrers)?;
    if layers.is_empty() {
        return Ok(None);
    }
    let (bytes, manifest) = crate::push::attach::signature_manifest(store, layers)?;
    store.put_bytes(&bytes)?;
    let mut entry = Descriptor::new(MEDIA_TYPE_MANIFEST, Digest::of(&bytes), bytes.len() as u64);
    entry.artifact_type = Some(LAYOUT_ARTIFACT_TYPE.into());
    entry.annotations.insert(
        image::annotations::REF_NAME.into(),
        attestation_tag(subject),
    );
    let mut blobs: Vec<(Digest, u64)> = std::iter::once(&manifest.config)
        .chain(&manifest.layers)
        .map(|d| (d.digest, d.size))
        .collect();
    blobs.push((entry.digest, entry.size));
    Ok(Some((entry, blobs)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::attest::{self, Document};
    use crate::sign::payload::{self, Envelope};

    #[test]
    fn only_signed_attestations_become_att_layers_the_same_each_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (subject, _) = crate::audit::sbom::tests::sample();
        let key = crate::sign::PrivateKey::from_test_bytes(&[3u8; 32]);
        let statement = payload::statement(
            "r/a",
            &subject.digest(),
            "https://spdx.dev/Document",
            serde_json::json!({}),
        )
        .unwrap();
        let docs = [
            Document {
                artifact_type: crate::audit::sbom::SPDX_MEDIA_TYPE,
                bytes: b"{}".to_vec(),
            },
            Document {
                artifact_type: DSSE_MEDIA_TYPE,
                bytes: Envelope::sign(&statement, &key).to_bytes().unwrap(),
            },
        ];
        let referrers = attest::attach(&store, &subject, &docs).unwrap();
        let layers = layers_of(&store, &referrers).unwrap();
        assert_eq!(layers.len(), 1, "{layers:?}");
        let l = &layers[0];
        assert_eq!(l.media_type, DSSE_MEDIA_TYPE);
        assert_eq!(l.digest, Digest::of(&docs[1].bytes));
        assert_eq!(
            l.annotations[PREDICATE_TYPE_ANNOTATION],
            "https://spdx.dev/Document"
        );
        assert_eq!(l.annotations[SIGNATURE_ANNOTATION], "");
        let digest = subject.digest();
        let (a, _) = layout_attestations(&store, &digest, &referrers)
            .unwrap()
            .unwrap();
        let (b, _) = layout_attestations(&store, &digest, &referrers)
            .unwrap()
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(
            a.annotations[image::annotations::REF_NAME],
            format!("sha256-{}.att", digest.hex())
        );
        assert_eq!(a.artifact_type.as_deref(), Some(LAYOUT_ARTIFACT_TYPE));
        // No signed attestation: no `.att`.
        let unsigned = attest::attach(&store, &subject, &docs[..1]).unwrap();
        assert!(layout_attestations(&store, &digest, &unsigned)
            .unwrap()
            .is_none());
    }
}
