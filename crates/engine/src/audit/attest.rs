//! What SBOMs and provenance statements are made from, and how they are attached to an image.
//!
//! - [`Subject`]: the built image (its manifest, read back from a store or a layout).
//! - [`Inputs`]: the recipe and the lock it was built from (file names and byte digests).
//! - [`attach`]: the OCI 1.1 artifact manifests (`subject` = the image) holding the documents.
//!
//! Every document is a function of these alone: no clock, no host, no absolute path.

use std::collections::BTreeMap;
use std::path::Path;

use crate::digest::Digest;
use crate::image::{self, annotations, Descriptor, Manifest};
use crate::json as cjson;
use crate::lock::Lock;
use crate::store::Store;

pub(crate) use super::attest_types::purl_encode;
pub use super::attest_types::{
    AttestError, Document, Inputs, Subject, APT_LAYER, PYTHON_LAYER, TOOL_VERSION,
};
pub use super::naming::document_name;

/// sha256 of the recipe file's bytes.
pub fn recipe_digest(recipe: &Path) -> std::io::Result<Digest> {
    Ok(Digest::of(&fs_err::read(recipe)?))
}

/// The recipe's and lock's file names and digests, and the lock (parsed from the very bytes
/// that were hashed, read from disk or as the command holds them).
#[derive(Clone, Debug)]
pub struct LoadedInputs {
    pub recipe_file: String,
    pub recipe_digest: Digest,
    pub recipe_identity: Digest,
    pub recipe_layers: usize,
    pub lock: Option<Lock>,
    pub lock_file: String,
    pub lock_digest: Option<Digest>,
    pub lock_platform: Option<String>,
    pub licenses: super::license::Licenses,
}

impl LoadedInputs {
    pub fn load(
        recipe: &Path,
        parsed: &crate::recipe::Recipe,
    ) -> Result<LoadedInputs, AttestError> {
        let file = crate::lock::LockFile::load(&Lock::path_for(recipe))?;
        LoadedInputs::with_lock_file(recipe, parsed, &file)
    }

    /// As [`LoadedInputs::load`], with the lock as `file` holds it: a command's lock, which
    /// its platform loop may have changed in memory and not written yet (`build --attach`).
    pub fn with_lock_file(
        recipe: &Path,
        parsed: &crate::recipe::Recipe,
        file: &crate::lock::LockFile,
    ) -> Result<LoadedInputs, AttestError> {
        let recipe_layers = parsed.layers.len();
        let file_name = |p: &Path| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let lock_path = file.path();
        // A platform of a multi-platform recipe: its section, as a one-platform lock, and
        // that section's digest (what its manifest records).
        let platform = parsed.lock_view();
        let lock = file.view(platform.as_deref());
        let lock_digest = file.digest_view(platform.as_deref());
        Ok(LoadedInputs {
            recipe_file: file_name(recipe),
            recipe_digest: recipe_digest(recipe)?,
            recipe_identity: parsed.identity()?,
            recipe_layers,
            lock,
            lock_file: file_name(lock_path),
            lock_digest,
            lock_platform: platform,
            licenses: super::license::Licenses::default(),
        })
    }

    /// With the declared licences of the lock's .debs and wheels that `store` holds.
    pub fn with_licenses(mut self, store: &Store) -> Result<LoadedInputs, AttestError> {
        if let Some(lock) = &self.lock {
            self.licenses = super::license::for_lock(store, lock)?;
        }
        Ok(self)
    }

    pub fn inputs(&self) -> Inputs<'_> {
        Inputs {
            recipe_file: self.recipe_file.clone(),
            recipe_digest: self.recipe_digest,
            recipe_identity: self.recipe_identity,
            recipe_layers: self.recipe_layers,
            lock: self.lock.as_ref(),
            lock_file: self.lock_file.clone(),
            lock_digest: self.lock_digest,
            lock_platform: self.lock_platform.clone(),
            licenses: self.licenses.clone(),
        }
    }
}

/// The documents ocibuild attaches to an image: SPDX, CycloneDX, provenance (in that order).
pub fn documents(subject: &Subject, inputs: &Inputs<'_>) -> Result<Vec<Document>, AttestError> {
    use super::{provenance, sbom};
    Ok(vec![
        Document {
            artifact_type: sbom::SPDX_MEDIA_TYPE,
            bytes: sbom::spdx(subject, inputs)?,
        },
        Document {
            artifact_type: sbom::CYCLONEDX_MEDIA_TYPE,
            bytes: sbom::cyclonedx(subject, inputs)?,
        },
        Document {
            artifact_type: provenance::MEDIA_TYPE,
            bytes: provenance::statement(subject, inputs)?,
        },
    ])
}

/// Put each document into `store` as an OCI 1.1 artifact manifest whose `subject` is the image:
/// config = the empty descriptor, one layer = the document. Returns the artifact manifests'
/// descriptors as referrers are listed (artifactType and annotations set), sorted by digest.
pub fn attach(
    store: &Store,
    subject: &Subject,
    documents: &[Document],
) -> Result<Vec<Descriptor>, AttestError> {
    let empty = Descriptor::new(
        image::MEDIA_TYPE_EMPTY,
        store.put_bytes(image::EMPTY_JSON)?,
        image::EMPTY_JSON.len() as u64,
    );
    let mut out = Vec::with_capacity(documents.len());
    for doc in documents {
        let layer = Descriptor::new(
            doc.artifact_type,
            store.put_bytes(&doc.bytes)?,
            doc.bytes.len() as u64,
        );
        let notes: BTreeMap<String, String> =
            [(annotations::CREATED.to_string(), subject.created())].into();
        let manifest = Manifest {
            schema_version: 2,
            media_type: image::MEDIA_TYPE_MANIFEST.into(),
            artifact_type: Some(doc.artifact_type.into()),
            config: empty.clone(),
            layers: vec![layer],
            subject: Some(subject.descriptor.clone()),
            annotations: notes.clone(),
        };
        let bytes = cjson::to_canonical_vec("artifact manifest", &manifest)?;
        let mut d = Descriptor::new(
            image::MEDIA_TYPE_MANIFEST,
            store.put_bytes(&bytes)?,
            bytes.len() as u64,
        );
        d.artifact_type = Some(doc.artifact_type.into());
        d.annotations = notes;
        out.push(d);
    }
    out.sort_by_key(|d| d.digest);
    Ok(out)
}

/// The blobs of the artifact manifests `referrers` (the empty config, the documents, the
/// manifests themselves), read from `store`: what an output or a push must carry.
pub fn referrer_blobs(
    store: &Store,
    referrers: &[Descriptor],
) -> Result<Vec<(Digest, u64)>, AttestError> {
    let mut out = Vec::new();
    for r in referrers {
        let bytes = store.read_blob(&r.digest)?;
        let m: Manifest =
            serde_json::from_slice(&bytes).map_err(|source| AttestError::BadManifest {
                digest: r.digest,
                source,
            })?;
        out.push((m.config.digest, m.config.size));
        out.extend(m.layers.iter().map(|l| (l.digest, l.size)));
        out.push((r.digest, r.size));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::attest_types::{id_safe, oci_purl, uuid_from};

    #[test]
    fn purls_and_uuids() {
        let d = Digest::of(b"m");
        assert_eq!(
            oci_purl("docker.io/library/debian:bookworm", &d),
            format!("pkg:oci/debian@{d}?repository_url=docker.io/library/debian&tag=bookworm")
        );
        assert_eq!(
            oci_purl("localhost:5000/a/b", &d),
            format!("pkg:oci/b@{d}?repository_url=localhost:5000/a/b&tag=latest")
        );
        assert_eq!(purl_encode("libstdc++6", false), "libstdc%2B%2B6");
        assert_eq!(purl_encode("1:2.3+b1", true), "1:2.3%2Bb1");
        let u = uuid_from("x");
        assert_eq!(u, uuid_from("x"));
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "5");
        assert!("89ab".contains(&u[19..20]), "{u}");
        assert_eq!(id_safe("a_b+c.d"), "a-b-c.d");
    }

    #[test]
    fn documents_are_named() {
        use crate::sign::payload::{self, DSSE_MEDIA_TYPE};
        let name = |a: &str, p: Option<&str>| document_name(Some(a), p);
        assert_eq!(name(super::super::sbom::SPDX_MEDIA_TYPE, None), "SPDX SBOM");
        assert_eq!(
            name(super::super::sbom::CYCLONEDX_MEDIA_TYPE, None),
            "CycloneDX SBOM"
        );
        assert_eq!(
            name(super::super::provenance::MEDIA_TYPE, None),
            "SLSA provenance"
        );
        // A DSSE envelope is named by its statement's predicate type.
        use base64::Engine;
        let statement = payload::statement(
            "r/a",
            &Digest::of(b"m"),
            "https://cyclonedx.org/bom",
            serde_json::json!({}),
        )
        .unwrap();
        let env = payload::Envelope {
            payload_type: payload::IN_TOTO_PAYLOAD.into(),
            payload: base64::engine::general_purpose::STANDARD.encode(&statement),
            signatures: Vec::new(),
        }
        .to_bytes()
        .unwrap();
        let p = payload::envelope_predicate_type(&env);
        assert_eq!(
            name(DSSE_MEDIA_TYPE, p.as_deref()),
            "CycloneDX SBOM, signed attestation"
        );
        assert_eq!(
            name(DSSE_MEDIA_TYPE, Some(payload::VSA_V1)),
            "SLSA verification summary, signed attestation"
        );
        assert_eq!(name(DSSE_MEDIA_TYPE, None), "signed attestation");
        assert_eq!(name("x/y", None), "artifact type x/y");
        assert_eq!(payload::envelope_predicate_type(b"{}"), None);
    }
}
