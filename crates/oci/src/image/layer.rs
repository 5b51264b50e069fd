//! The one record of a built layer ([`CachedLayer`]: what the layer writer made, what the
//! layer cache keeps, what the apt, python and step builders hand back), and its place in an
//! image ([`LayerRecord`]: its descriptor, named after its recipe layer, or a base layer's).
//! A layer as read back from any transport is [`super::source::LayerInfo`]: its digest and
//! diff_id may be unknown there (a docker-archive stores no compressed blob).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{annotations, Descriptor};
use crate::digest::Digest;

/// A built layer: enough to put it in a manifest without reading it. Made by the layer writer
/// (`crate::layer::LayerStats::cached`); kept as JSON in the layer cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedLayer {
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
    pub diff_id: Digest,
    pub uncompressed_size: u64,
    /// The descriptor annotations the layer needs (a zstd:chunked or eStargz table of
    /// contents' position and digest); absent, as in entries from before them, when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl CachedLayer {
    /// The layer's descriptor: its media type, digest, size and own annotations.
    pub fn descriptor(&self) -> Descriptor {
        let mut d = Descriptor::new(&self.media_type, self.digest, self.size);
        d.annotations = self.annotations.clone();
        d
    }
}

/// A layer of an image being assembled: a base layer as its manifest lists it, or one built.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LayerRecord {
    pub descriptor: Descriptor,
    pub diff_id: Digest,
    /// Known for layers ocibuild built; `None` for base layers until someone decompresses them.
    pub uncompressed_size: Option<u64>,
}

impl LayerRecord {
    /// The built layer `layer` as the image's layer `name` (its descriptor annotated with the
    /// recipe layer's name).
    pub fn named(name: &str, layer: &CachedLayer) -> LayerRecord {
        let mut descriptor = layer.descriptor();
        descriptor
            .annotations
            .insert(annotations::LAYER_NAME.into(), name.into());
        LayerRecord {
            descriptor,
            diff_id: layer.diff_id,
            uncompressed_size: Some(layer.uncompressed_size),
        }
    }
}
