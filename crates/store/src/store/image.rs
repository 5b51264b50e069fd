//! An image whose blobs are files by digest (a content store, or an OCI layout's
//! `blobs/sha256/`), read through [`ImageSource`]: the rebuild `verify` made, or a layout
//! `crate::output` opened.

use std::io::Read;

use super::Store;
use crate::digest::Digest;
use crate::image::source::{
    resolve, ConfigDoc, DocKind, Documents, ImageSource, LayerBlob, LayerInfo, ManifestDoc,
    SourceError,
};
use crate::image::Platform;

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
