//! What every attached document is made from, and the words they share: the [`Subject`] (the
//! built image), the [`Inputs`] (the recipe and lock it was built from), a [`Document`] to
//! attach, the tool's version, the error, and the identifier and purl spellings.

use crate::digest::Digest;
use crate::image::{self, annotations, Descriptor, Manifest};
use crate::json::JsonError;
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
                    n -= 1;
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

/// One document to attach: its artifact type (also its layer's media type) and bytes.
#[derive(Clone, Debug)]
pub struct Document {
    pub artifact_type: &'static str,
    pub bytes: Vec<u8>,
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
    let (repo, tag) = if let Ok(r) = reference.parse::<crate::registry::Reference>() {
        (
            format!("{}/{}", r.registry(), r.repository()),
            r.tag().map(str::to_string),
        )
    } else {
        let slash = reference.rfind('/').map(|i| i + 1).unwrap_or(0);
        match reference[slash..].rfind(':') {
            Some(i) => (
                reference[..slash + i].to_string(),
                Some(reference[slash + i + 1..].to_string()),
            ),
            None => (reference.to_string(), None),
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
