//! The documents as other tools wrote them, read leniently: unknown fields ignored, missing
//! ones empty where a reader can do without them. What this builder writes is in the parent
//! module (strict, canonical); what it reads from registries, layouts and archives is here.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Descriptor, Platform};

/// An image manifest as a registry or a layout hands it over, read leniently: what copying,
/// pushing and pulling an image need (its media type when it says one, the config, the
/// layers, the annotations), every other field ignored.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestHead {
    #[serde(default)]
    pub media_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// A manifest or an image index, read leniently, before it is known which it is: an index has
/// `manifests`, a manifest `config` and `layers`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnyManifest {
    #[serde(default)]
    pub media_type: Option<String>,
    #[serde(default)]
    pub config: Option<Descriptor>,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    #[serde(default)]
    pub manifests: Option<Vec<Descriptor>>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// An index (a layout's `index.json`, or a nested one), as read.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ReadIndex {
    #[serde(default)]
    pub manifests: Vec<ReadDescriptor>,
}

/// A descriptor of an index or a manifest, as read: the digest is checked when followed.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDescriptor {
    #[serde(default)]
    pub media_type: String,
    pub digest: String,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub platform: Option<Platform>,
}

/// An image manifest, as read: its config and layers.
#[derive(Clone, Debug, Deserialize)]
pub struct ReadManifest {
    pub config: ReadDescriptor,
    #[serde(default)]
    pub layers: Vec<ReadDescriptor>,
}
