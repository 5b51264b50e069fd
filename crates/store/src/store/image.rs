//! An image whose blobs are files by digest (a content store, or an OCI layout's
//! `blobs/sha256/`), read through [`ImageSource`]: the rebuild `verify` made, or a layout
//! `crate::output` opened.

use std::io::Read;

use super::Store;
use crate::digest::Digest;
use crate::image::source::{
    parse_json, resolve, ConfigDoc, DocKind, Documents, ImageSource, LayerBlob, LayerInfo,
    ManifestDoc, SourceError,
};
use crate::image::{AnyManifest, Descriptor, Platform, MEDIA_TYPE_INDEX};

/// An image in a store (or any directory with `blobs/sha256/`).
pub struct StoreImage {
    name: String,
    manifest: ManifestDoc,
    config: ConfigDoc,
    layers: Vec<LayerInfo>,
    store: Store,
}

/// A store's blobs as [`Documents`]: a missing one is named as missing from `name`.
pub struct StoreDocuments<'a> {
    pub name: &'a str,
    pub store: &'a Store,
}

impl Documents for StoreDocuments<'_> {
    fn document(&self, digest: &Digest, _kind: DocKind) -> Result<Vec<u8>, SourceError> {
        if !self.store.has_blob(digest) {
            return Err(SourceError::MissingBlob {
                source_name: self.name.to_string(),
                digest: *digest,
            });
        }
        self.store.read_blob(digest).map_err(SourceError::transport)
    }
}

impl StoreImage {
    /// The image whose manifest (or image index, followed to `platform`'s image) is `digest`
    /// in `store`; `name` is how messages call it.
    pub fn open(
        name: &str,
        store: Store,
        digest: Digest,
        platform: &Platform,
    ) -> Result<StoreImage, SourceError> {
        let docs = StoreDocuments {
            name,
            store: &store,
        };
        let r = resolve(name, &docs, digest, platform)?;
        Ok(StoreImage {
            name: name.to_string(),
            manifest: r.manifest,
            config: r.config,
            layers: r.layers,
            store,
        })
    }
}

impl StoreImage {
    /// The image whose manifest is `digest` (an image index is refused: [`StoreIndex`] reads
    /// one), as a push or a mirror copies it.
    pub fn manifest(name: &str, store: Store, digest: Digest) -> Result<StoreImage, SourceError> {
        let image = StoreImage::open(name, store, digest, &Platform::host())?;
        if image.manifest.digest != digest {
            return Err(SourceError::Bad {
                source_name: name.to_string(),
                problem: format!("{digest} is an image index, not an image manifest"),
            });
        }
        Ok(image)
    }

    /// The manifest as stored ([`ImageSource::manifest`], which a store image always has).
    pub fn stored_manifest(&self) -> &ManifestDoc {
        &self.manifest
    }

    /// The store the blobs are in.
    pub fn store(&self) -> &Store {
        &self.store
    }
}

/// An image index in a store: a multi-platform image, read as a push copies it (its bytes as
/// stored, then each manifest it lists as a [`StoreImage`]).
pub struct StoreIndex {
    name: String,
    digest: Digest,
    bytes: Vec<u8>,
    media_type: String,
    manifests: Vec<Descriptor>,
    store: Store,
}

impl StoreIndex {
    /// The image index `digest` in `store`; `name` is how messages call it.
    pub fn open(name: &str, store: Store, digest: Digest) -> Result<StoreIndex, SourceError> {
        let docs = StoreDocuments {
            name,
            store: &store,
        };
        let bytes = docs.document(&digest, DocKind::Manifest)?;
        let doc: AnyManifest = parse_json(name, "image index", &bytes)?;
        let manifests = doc.manifests.ok_or_else(|| SourceError::Bad {
            source_name: name.to_string(),
            problem: format!("{digest} is an image manifest, not an image index"),
        })?;
        Ok(StoreIndex {
            name: name.to_string(),
            digest,
            bytes,
            media_type: doc
                .media_type
                .unwrap_or_else(|| MEDIA_TYPE_INDEX.to_string()),
            manifests,
            store,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// The index as stored.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Its media type: as the document says (OCI's image index when it says none).
    pub fn media_type(&self) -> &str {
        &self.media_type
    }

    /// The manifests it lists, as listed.
    pub fn manifests(&self) -> &[Descriptor] {
        &self.manifests
    }

    /// The image of one of [`StoreIndex::manifests`].
    pub fn image(&self, manifest: &Descriptor) -> Result<StoreImage, SourceError> {
        StoreImage::manifest(&self.name, self.store.clone(), manifest.digest)
    }
}

impl ImageSource for StoreImage {
    fn name(&self) -> &str {
        &self.name
    }

    fn manifest(&self) -> Option<&ManifestDoc> {
        Some(&self.manifest)
    }

    fn config(&self) -> &ConfigDoc {
        &self.config
    }

    fn layers(&self) -> &[LayerInfo] {
        &self.layers
    }

    fn open_raw(&self, i: usize) -> Result<Box<dyn Read + Send>, SourceError> {
        let d = match &self.layers[i].blob {
            LayerBlob::Digest(d) => d,
            LayerBlob::Member(m) => {
                return Err(SourceError::MissingMember {
                    archive: self.store.root().to_path_buf(),
                    member: m.clone(),
                })
            }
        };
        if !self.store.has_blob(d) {
            return Err(SourceError::MissingBlob {
                source_name: self.name.clone(),
                digest: *d,
            });
        }
        let file = self.store.open_blob(d).map_err(SourceError::transport)?;
        Ok(Box::new(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::MEDIA_TYPE_MANIFEST;

    /// A manifest of one layer over `config` (of `config_type`), without a `mediaType` field.
    fn put_image(store: &Store, config: &[u8], config_type: &str) -> (Digest, Digest, Digest) {
        let layer = store.put_bytes(b"layer bytes").unwrap();
        let cfg = store.put_bytes(config).unwrap();
        let manifest = format!(
            r#"{{"schemaVersion":2,"config":{{"mediaType":"{config_type}","digest":"{cfg}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"{layer}","size":11}}]}}"#,
            config.len()
        );
        (store.put_bytes(manifest.as_bytes()).unwrap(), cfg, layer)
    }

    #[test]
    fn a_store_image_lists_its_blobs_layers_then_config_and_infers_its_media_type() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let config =
            br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
        let (m, cfg, layer) = put_image(&store, config, crate::image::MEDIA_TYPE_CONFIG);
        let image = StoreImage::manifest("t", store.clone(), m).unwrap();
        let blobs: Vec<_> = image.blobs().iter().map(|b| (b.digest, b.size)).collect();
        assert_eq!(blobs, [(layer, 11), (cfg, config.len() as u64)]);
        assert_eq!(image.stored_manifest().bytes, store.read_blob(&m).unwrap());
        assert_eq!(
            image.stored_manifest().media_type.as_deref(),
            Some(MEDIA_TYPE_MANIFEST)
        );
        // Docker's config: Docker's manifest type.
        let (m, _, _) = put_image(
            &store,
            config,
            "application/vnd.docker.container.image.v1+json",
        );
        let image = StoreImage::manifest("t", store.clone(), m).unwrap();
        assert_eq!(
            image.stored_manifest().media_type.as_deref(),
            Some("application/vnd.docker.distribution.manifest.v2+json")
        );
    }

    #[test]
    fn an_artifact_config_need_not_be_json_but_an_image_config_must() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (m, _, _) = put_image(&store, b"\x00binary", "application/octet-stream");
        let image = StoreImage::manifest("t", store.clone(), m).unwrap();
        assert_eq!(image.config().json, serde_json::Value::Null);
        let (m, _, _) = put_image(&store, b"\x00binary", crate::image::MEDIA_TYPE_CONFIG);
        let err = StoreImage::manifest("t", store, m).err().unwrap();
        assert!(err.to_string().contains("invalid image config"), "{err}");
    }

    #[test]
    fn an_index_and_a_manifest_are_each_refused_where_the_other_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let config = br#"{"architecture":"amd64","os":"linux"}"#;
        let (m, _, _) = put_image(&store, config, crate::image::MEDIA_TYPE_CONFIG);
        let size = store.read_blob(&m).unwrap().len();
        let index = format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"{MEDIA_TYPE_MANIFEST}","digest":"{m}","size":{size},"platform":{{"architecture":"amd64","os":"linux"}}}}]}}"#
        );
        let ix = store.put_bytes(index.as_bytes()).unwrap();
        let err = StoreImage::manifest("t", store.clone(), ix).err().unwrap();
        assert_eq!(
            err.to_string(),
            format!("t: {ix} is an image index, not an image manifest")
        );
        let err = StoreIndex::open("t", store.clone(), m).err().unwrap();
        assert_eq!(
            err.to_string(),
            format!("t: {m} is an image manifest, not an image index")
        );
        let index = StoreIndex::open("t", store, ix).unwrap();
        assert_eq!(index.media_type(), MEDIA_TYPE_INDEX);
        let images: Vec<_> = index
            .manifests()
            .iter()
            .map(|d| index.image(d).unwrap().stored_manifest().digest)
            .collect();
        assert_eq!(images, [m]);
    }
}
