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
use crate::json::{self as cjson, JsonError};
use crate::lock::Lock;
use crate::store::{Store, StoreError};

/// The version ocibuild writes into documents as the creator tool.
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The layer names ocibuild gives its system layers (`[apt]`, `[python]`, wheels).
pub const APT_LAYER: &str = "apt";
pub const PYTHON_LAYER: &str = "python";

#[derive(Debug, thiserror::Error)]
pub enum AttestError {
    #[error("manifest {digest} is not an image manifest")]
    BadManifest {
        digest: Digest,
        source: serde_json::Error,
    },
    #[error("{image} was built from another {what} ({file}): the image records {recorded}, the file now has {current}; rebuild it (`ocibuild build`) before describing it")]
    Stale {
        image: String,
        what: &'static str,
        file: String,
        recorded: String,
        current: String,
    },
    #[error(transparent)]
    Json(#[from] JsonError),
    #[error(transparent)]
    Lock(#[from] crate::lock::LockError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An fs-err error: its message already names the path.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// sha256 of the recipe file's bytes.
pub fn recipe_digest(recipe: &Path) -> std::io::Result<Digest> {
    Ok(Digest::of(&fs_err::read(recipe)?))
}

/// The image a document describes.
#[derive(Clone, Debug)]
pub struct Subject {
    /// Repository name (`example.com/team/app`) and tag.
    pub name: String,
    pub tag: String,
    /// The manifest's descriptor: media type, digest, size (nothing else).
    pub descriptor: Descriptor,
    pub manifest: Manifest,
}

impl Subject {
    /// From the manifest's bytes.
    pub fn new(name: &str, tag: &str, manifest_bytes: &[u8]) -> Result<Subject, AttestError> {
        let digest = Digest::of(manifest_bytes);
        let manifest: Manifest = serde_json::from_slice(manifest_bytes)
            .map_err(|source| AttestError::BadManifest { digest, source })?;
        Ok(Subject {
            name: name.to_string(),
            tag: tag.to_string(),
            descriptor: Descriptor::new(
                image::MEDIA_TYPE_MANIFEST,
                digest,
                manifest_bytes.len() as u64,
            ),
            manifest,
        })
    }

    /// The image `record` as built into `store`.
    pub fn from_store(store: &Store, record: &image::ImageRecord) -> Result<Subject, AttestError> {
        Self::new(
            &record.name,
            &record.tag,
            &store.read_blob(&record.manifest.digest)?,
        )
    }

    pub fn digest(&self) -> Digest {
        self.descriptor.digest
    }

    /// The image's `created` (SOURCE_DATE_EPOCH), as the manifest records it.
    pub fn created(&self) -> String {
        self.manifest
            .annotations
            .get(annotations::CREATED)
            .cloned()
            .unwrap_or_else(|| image::rfc3339(0))
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.manifest.annotations.get(key).map(String::as_str)
    }

    /// How many of the layers, from the bottom, are the base image's: those below the system
    /// layers (`apt`, `rootfs`, `python`, `wheels`) that sit below the recipe's `recipe_layers` own.
    pub fn base_layer_count(&self, recipe_layers: usize) -> usize {
        let layers = &self.manifest.layers;
        let mut n = layers.len().saturating_sub(recipe_layers);
        while n > 0 {
            match layers[n - 1].annotations.get(annotations::LAYER_NAME) {
                Some(name)
                    if [APT_LAYER, PYTHON_LAYER, crate::rootfs::LAYER_NAME]
                        .contains(&name.as_str())
                        || crate::python::plan::is_wheel_layer(name) =>
                {
                    n -= 1
                }
                _ => break,
            }
        }
        n
    }

    /// The first non-base layer named `name`: (1-based position, descriptor).
    pub fn layer_named(&self, name: &str, base_layers: usize) -> Option<(usize, &Descriptor)> {
        self.manifest
            .layers
            .iter()
            .enumerate()
            .skip(base_layers)
            .find(|(_, d)| {
                d.annotations
                    .get(annotations::LAYER_NAME)
                    .map(String::as_str)
                    == Some(name)
            })
            .map(|(i, d)| (i + 1, d))
    }
}

/// The recipe and lock an image was built from.
#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    /// The recipe's file name (relative to its directory: never an absolute path).
    pub recipe_file: String,
    /// The sha256 of the recipe file's bytes.
    pub recipe_digest: Digest,
    /// What defines the image ([`crate::recipe::Recipe::identity`]), as the manifest records
    /// it in `dev.ocibuild.recipe.digest`.
    pub recipe_identity: Digest,
    /// How many `[[layer]]`s the recipe has (to tell the base's layers from ours).
    pub recipe_layers: usize,
    pub lock: Option<&'a Lock>,
    pub lock_file: String,
    /// The sha256 of the lock file's bytes; for a platform of a multi-platform recipe, of its
    /// section written as a one-platform lock ([`Lock::view`]).
    pub lock_digest: Option<Digest>,
    /// The platform whose section of a multi-platform lock `lock` is.
    pub lock_platform: Option<String>,
    /// The declared licences of the lock's inputs ([`super::license::for_lock`]).
    pub licenses: super::license::Licenses,
}

impl Inputs<'_> {
    /// Check the image records these inputs' digests (`dev.ocibuild.recipe.digest`,
    /// `dev.ocibuild.lock.digest`): a document made from another lock would describe another
    /// image.
    pub fn check(&self, image: &str, subject: &Subject) -> Result<(), AttestError> {
        let recorded = |key| {
            subject
                .annotation(key)
                .map(str::to_string)
                .unwrap_or_else(|| "none".into())
        };
        let show = |d: Option<Digest>| d.map(|d| d.to_string()).unwrap_or_else(|| "none".into());
        for (what, file, key, current) in [
            (
                "recipe",
                &self.recipe_file,
                annotations::RECIPE_DIGEST,
                Some(self.recipe_identity),
            ),
            (
                "lock",
                &self.lock_file,
                annotations::LOCK_DIGEST,
                self.lock_digest,
            ),
        ] {
            let (recorded, current) = (recorded(key), show(current));
            if recorded != current {
                return Err(AttestError::Stale {
                    image: image.to_string(),
                    what,
                    file: file.clone(),
                    recorded,
                    current,
                });
            }
        }
        Ok(())
    }
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

/// What an attached document is, for a person, from its artifact type and, for a signed
/// attestation (a DSSE envelope), its statement's predicate type: `SPDX SBOM`,
/// `CycloneDX SBOM`, `SLSA provenance`, `SPDX SBOM, signed attestation`,
/// `SLSA verification summary, signed attestation`; another type named as it is.
pub fn document_name(artifact_type: Option<&str>, predicate_type: Option<&str>) -> String {
    use super::{provenance, sbom};
    let dsse = crate::sign::payload::DSSE_MEDIA_TYPE;
    let of_predicate = |p: &str| match p {
        "https://spdx.dev/Document" => Some("SPDX SBOM"),
        "https://cyclonedx.org/bom" => Some("CycloneDX SBOM"),
        p if p == provenance::PREDICATE_TYPE || p.starts_with("https://slsa.dev/provenance/") => {
            Some("SLSA provenance")
        }
        p if p == crate::sign::VSA_V1 => Some("SLSA verification summary"),
        _ => None,
    };
    match artifact_type {
        Some(t) if t == sbom::SPDX_MEDIA_TYPE => "SPDX SBOM".into(),
        Some(t) if t == sbom::CYCLONEDX_MEDIA_TYPE => "CycloneDX SBOM".into(),
        Some(t) if t == provenance::MEDIA_TYPE => "SLSA provenance".into(),
        Some(t) if t == dsse => match predicate_type {
            Some(p) => match of_predicate(p) {
                Some(name) => format!("{name}, signed attestation"),
                None => format!("signed attestation of {p}"),
            },
            None => "signed attestation".into(),
        },
        Some(t) => format!("artifact type {t}"),
        None => "no artifact type".into(),
    }
}

/// One document to attach: its artifact type (also its layer's media type) and bytes.
#[derive(Clone, Debug)]
pub struct Document {
    pub artifact_type: &'static str,
    pub bytes: Vec<u8>,
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

/// A name fit for an SPDX id or a URI path segment: ASCII letters, digits, `.` and `-`.
pub(crate) fn id_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Percent-encode a purl component: everything but ASCII letters, digits, `.-_~` (and `:`,
/// which the purl spec leaves unencoded, when `colon` is set).
pub(crate) fn purl_encode(s: &str, colon: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"._-~".contains(&b) || (colon && b == b':') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `pkg:oci/NAME@sha256:HEX?repository_url=REPO[&tag=TAG]` for an image reference
/// (`registry/repository[:tag]`, already normalized or not).
pub(crate) fn oci_purl(reference: &str, digest: &Digest) -> String {
    let (repo, tag) = match reference.parse::<crate::registry::Reference>() {
        Ok(r) => (
            format!("{}/{}", r.registry(), r.repository()),
            r.tag().map(str::to_string),
        ),
        Err(_) => {
            let slash = reference.rfind('/').map(|i| i + 1).unwrap_or(0);
            match reference[slash..].rfind(':') {
                Some(i) => (
                    reference[..slash + i].to_string(),
                    Some(reference[slash + i + 1..].to_string()),
                ),
                None => (reference.to_string(), None),
            }
        }
    };
    let repo = repo.split('@').next().unwrap_or(&repo).to_string();
    let name = repo
        .rsplit('/')
        .next()
        .unwrap_or(&repo)
        .to_ascii_lowercase();
    let mut purl = format!(
        "pkg:oci/{}@{}?repository_url={}",
        purl_encode(&name, false),
        digest,
        repo.split('/')
            .map(|s| purl_encode(s, true))
            .collect::<Vec<_>>()
            .join("/")
    );
    if let Some(t) = tag {
        purl.push_str("&tag=");
        purl.push_str(&purl_encode(&t, false));
    }
    purl
}

/// A UUID (RFC 4122 layout, version 5 bits) made from the sha256 of `seed`: the same seed,
/// the same UUID.
pub(crate) fn uuid_from(seed: &str) -> String {
    let d = Digest::of(seed.as_bytes());
    let mut b = [0u8; 16];
    let hex = d.hex();
    for (i, byte) in b.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0);
    }
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
            name(DSSE_MEDIA_TYPE, Some(crate::sign::VSA_V1)),
            "SLSA verification summary, signed attestation"
        );
        assert_eq!(name(DSSE_MEDIA_TYPE, None), "signed attestation");
        assert_eq!(name("x/y", None), "artifact type x/y");
        assert_eq!(payload::envelope_predicate_type(b"{}"), None);
    }
}
