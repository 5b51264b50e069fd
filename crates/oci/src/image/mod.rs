//! OCI image documents: config, manifest, index, descriptors, and [`Platform`]. Serialized
//! through [`crate::json::to_canonical_vec`], so their digests depend only on their content.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::digest::Digest;

mod layer;
mod platform;
pub mod read;
pub mod source;

pub use self::layer::{CachedLayer, LayerRecord};
pub use self::platform::Platform;
pub use self::read::{AnyManifest, ManifestHead};

pub const MEDIA_TYPE_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const MEDIA_TYPE_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Docker's image index (a manifest list), read like an OCI index.
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
pub const MEDIA_TYPE_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// The empty descriptor's media type (OCI 1.1): the config of an artifact manifest.
pub const MEDIA_TYPE_EMPTY: &str = "application/vnd.oci.empty.v1+json";
/// The empty descriptor's content.
pub const EMPTY_JSON: &[u8] = b"{}";

/// Docker's default search path, which `docker run` assumes for an image whose config has none;
/// written into the config of every image built on `scratch` that sets no `PATH` (contract rule 20).
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Annotation keys ocibuild writes.
pub mod annotations {
    pub const REF_NAME: &str = "org.opencontainers.image.ref.name";
    pub const CONTAINERD_NAME: &str = "io.containerd.image.name";
    pub const CREATED: &str = "org.opencontainers.image.created";
    /// Version of the determinism contract the layers were written under.
    pub const CONTRACT: &str = "dev.ocibuild.contract";
    /// Identity of the layer compressor (backend, level, block size).
    pub const COMPRESSION: &str = "dev.ocibuild.compression";
    /// The base image's normalized reference and manifest digest.
    pub const BASE_NAME: &str = "org.opencontainers.image.base.name";
    pub const BASE_DIGEST: &str = "org.opencontainers.image.base.digest";
    /// Name of the recipe layer a layer descriptor came from.
    pub const LAYER_NAME: &str = "dev.ocibuild.layer";
    /// sha256 of the recipe file's bytes the image was built from.
    pub const RECIPE_DIGEST: &str = "dev.ocibuild.recipe.digest";
    /// sha256 of the lock file's bytes the image was built from (absent without a lock).
    pub const LOCK_DIGEST: &str = "dev.ocibuild.lock.digest";
}

/// The most layers an image may have, base included: 127 is the depth Docker's aufs and
/// overlay drivers enforced and that images keep to for containerd's overlay snapshotter, whose
/// mount options must fit in one page; podman has refused images with hundreds of layers.
pub const MAX_LAYERS: usize = 127;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
    /// OCI 1.1: the artifact type of the manifest described (a referrer in an index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
}

impl Descriptor {
    pub fn new(media_type: &str, digest: Digest, size: u64) -> Self {
        Descriptor {
            media_type: media_type.to_string(),
            digest,
            size,
            artifact_type: None,
            annotations: BTreeMap::new(),
            platform: None,
        }
    }
}

/// The runtime part of an image config (`config` in the OCI image config).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunConfig {
    #[serde(rename = "Env", default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    #[serde(
        rename = "Entrypoint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub entrypoint: Option<Vec<String>>,
    #[serde(rename = "Cmd", default, skip_serializing_if = "Option::is_none")]
    pub cmd: Option<Vec<String>>,
    #[serde(
        rename = "WorkingDir",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub working_dir: Option<String>,
    #[serde(rename = "User", default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(rename = "Labels", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(
        rename = "ExposedPorts",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub exposed_ports: BTreeMap<String, serde_json::Value>,
    #[serde(
        rename = "StopSignal",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_signal: Option<String>,
    /// `{"/data": {}}`.
    #[serde(
        rename = "Volumes",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub volumes: BTreeMap<String, serde_json::Value>,
    /// Docker's SHELL (not in the OCI spec; Docker-format readers take it).
    #[serde(rename = "Shell", default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<Vec<String>>,
    /// Docker's HEALTHCHECK: `Test`, durations in nanoseconds, `Retries`.
    #[serde(
        rename = "Healthcheck",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub healthcheck: Option<serde_json::Value>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootFs {
    #[serde(rename = "type")]
    pub kind: String,
    pub diff_ids: Vec<Digest>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub empty_layer: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    pub architecture: String,
    pub os: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    #[serde(default)]
    pub config: RunConfig,
    pub rootfs: RootFs,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<History>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: u32,
    pub media_type: String,
    /// OCI 1.1: set on artifact manifests (an SBOM, a provenance statement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    /// OCI 1.1: the manifest this one refers to (an artifact's image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Descriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Index {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    pub manifests: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Index {
    pub fn new(manifests: Vec<Descriptor>) -> Self {
        Index {
            schema_version: 2,
            media_type: Some(MEDIA_TYPE_INDEX.to_string()),
            manifests,
            annotations: BTreeMap::new(),
        }
    }
}

/// A built image whose blobs are all in a [`crate::store::Store`]: what the output writers need.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ImageRecord {
    /// Repository name, e.g. `example.com/team/app`.
    pub name: String,
    pub tag: String,
    /// The manifest descriptor, with the platform filled in.
    pub manifest: Descriptor,
    pub config: Descriptor,
    pub layers: Vec<LayerRecord>,
    /// SOURCE_DATE_EPOCH the image was built with; archive writers use it for their own entries.
    pub epoch: u64,
}

impl ImageRecord {
    /// `name:tag`, the form docker and containerd use.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.name, self.tag)
    }

    /// The manifest descriptor as an `index.json` entry: tagged with both the OCI ref name
    /// (the tag) and containerd's image name (`name:tag`).
    pub fn index_entry(&self) -> Descriptor {
        tagged(&self.manifest, &self.tag, self.full_name())
    }

    /// Every blob of the image (layers, config, manifest) with its size.
    pub fn blobs(&self) -> Vec<(Digest, u64)> {
        let mut v: Vec<(Digest, u64)> = self
            .layers
            .iter()
            .map(|l| (l.descriptor.digest, l.descriptor.size))
            .collect();
        v.push((self.config.digest, self.config.size));
        v.push((self.manifest.digest, self.manifest.size));
        v
    }
}

/// `d` as an `index.json` entry: the OCI ref name (`tag`) and containerd's image name.
fn tagged(d: &Descriptor, tag: &str, full_name: String) -> Descriptor {
    let mut entry = d.clone();
    entry
        .annotations
        .insert(annotations::REF_NAME.into(), tag.to_string());
    entry
        .annotations
        .insert(annotations::CONTAINERD_NAME.into(), full_name);
    entry
}

/// A multi-platform image: the index of its platforms' manifests (`index`, each entry with its
/// platform) and each platform's image.
#[derive(Clone, Debug)]
pub struct IndexRecord {
    pub name: String,
    pub tag: String,
    /// The image index's descriptor (its bytes in the store).
    pub index: Descriptor,
    pub images: Vec<ImageRecord>,
}

impl IndexRecord {
    /// `name:tag`.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.name, self.tag)
    }

    /// The index descriptor as an `index.json` entry (tagged as [`ImageRecord::index_entry`]).
    pub fn index_entry(&self) -> Descriptor {
        tagged(&self.index, &self.tag, self.full_name())
    }

    /// Every blob of every platform's image, then the index.
    pub fn blobs(&self) -> Vec<(Digest, u64)> {
        let mut v: Vec<(Digest, u64)> = self.images.iter().flat_map(ImageRecord::blobs).collect();
        v.sort();
        v.dedup();
        v.push((self.index.digest, self.index.size));
        v
    }

    /// The index of `images` (each manifest descriptor carries its platform) and its bytes,
    /// canonical JSON, which the caller stores (`Store::put_index`).
    pub fn new(images: Vec<ImageRecord>) -> Result<(IndexRecord, Vec<u8>), crate::json::JsonError> {
        let index = Index {
            schema_version: 2,
            media_type: Some(MEDIA_TYPE_INDEX.into()),
            manifests: images.iter().map(|i| i.manifest.clone()).collect(),
            annotations: BTreeMap::new(),
        };
        let bytes = crate::json::to_canonical_vec("image index", &index)?;
        let digest = Digest::of(&bytes);
        let first = images.first();
        let record = IndexRecord {
            name: first.map(|i| i.name.clone()).unwrap_or_default(),
            tag: first.map(|i| i.tag.clone()).unwrap_or_default(),
            index: Descriptor::new(MEDIA_TYPE_INDEX, digest, bytes.len() as u64),
            images,
        };
        Ok((record, bytes))
    }
}

/// Format seconds since the Unix epoch as RFC 3339 UTC (`1970-01-01T00:00:00Z`).
/// Pure arithmetic: never reads the clock or the time zone.
pub fn rfc3339(epoch: u64) -> String {
    let days = (epoch / 86_400) as i64;
    let secs = epoch % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs % 3600) / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_values() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn manifest_json_shape() {
        let d = Digest::of(b"x");
        let m = Manifest {
            schema_version: 2,
            media_type: MEDIA_TYPE_MANIFEST.into(),
            artifact_type: None,
            config: Descriptor::new(MEDIA_TYPE_CONFIG, d, 1),
            layers: vec![],
            subject: None,
            annotations: BTreeMap::new(),
        };
        let s = String::from_utf8(crate::json::to_canonical_vec("manifest", &m).unwrap()).unwrap();
        assert_eq!(
            s,
            format!(
                r#"{{"config":{{"digest":"{d}","mediaType":"{MEDIA_TYPE_CONFIG}","size":1}},"layers":[],"mediaType":"{MEDIA_TYPE_MANIFEST}","schemaVersion":2}}"#
            )
        );
    }
}
