//! A registry image read through [`ImageSource`]: its manifest and config fetched when it is
//! opened, each layer blob only when it is opened (verified, into a temporary store that goes
//! with the image).

use std::io::Read;

use crate::digest::Digest;
use crate::image::source::{
    resolve, ConfigDoc, DocKind, Documents, ImageSource, LayerBlob, LayerInfo, ManifestDoc,
    SourceError,
};
use crate::image::Platform;
use crate::progress::Reporter;
use crate::registry::{Client, Reference};
use crate::store::image::StoreDocuments;
use crate::store::Store;

/// An image in a registry, opened.
pub struct RegistryImage<'c> {
    name: String,
    manifest: ManifestDoc,
    config: ConfigDoc,
    layers: Vec<LayerInfo>,
    blobs: Fetched<'c>,
    _tmp: tempfile::TempDir,
}

/// The temporary store, and where what is missing from it comes from.
struct Fetched<'c> {
    name: String,
    store: Store,
    reference: Reference,
    client: &'c Client,
    reporter: &'c dyn Reporter,
}

impl Documents for Fetched<'_> {
    fn document(&self, digest: &Digest, kind: DocKind) -> Result<Vec<u8>, SourceError> {
        match kind {
            DocKind::Manifest if !self.store.has_blob(digest) => {
                let m = self
                    .client
                    .get_manifest_with(&self.reference.with_digest(*digest), self.reporter)
                    .map_err(SourceError::transport)?;
                self.store
                    .put_bytes(&m.bytes)
                    .map_err(SourceError::transport)?;
            }
            DocKind::Manifest => {}
            DocKind::Config { size } => self
                .client
                .pull_blob(
                    &self.reference,
                    digest,
                    Some(size),
                    &self.store,
                    self.reporter,
                )
                .map_err(SourceError::transport)?,
        }
        StoreDocuments {
            name: &self.name,
            store: &self.store,
        }
        .document(digest, kind)
    }
}

impl<'c> RegistryImage<'c> {
    /// The image `reference` names (an index followed to `platform`'s image); `name` is how
    /// messages call it; downloads and retries go to `reporter`.
    pub fn open(
        name: &str,
        client: &'c Client,
        reference: &Reference,
        platform: &Platform,
        reporter: &'c dyn Reporter,
    ) -> Result<RegistryImage<'c>, SourceError> {
        let (manifest, _index) = client
            .get_image_manifest(reference, platform, reporter)
            .map_err(SourceError::transport)?;
        let tmp = tempfile::Builder::new()
            .prefix("ocibuild-audit-")
            .tempdir()?;
        let store = Store::open(tmp.path()).map_err(SourceError::transport)?;
        store
            .put_bytes(&manifest.bytes)
            .map_err(SourceError::transport)?;
        let blobs = Fetched {
            name: name.to_string(),
            store,
            reference: reference.clone(),
            client,
            reporter,
        };
        let r = resolve(name, &blobs, manifest.digest, platform)?;
        Ok(RegistryImage {
            name: name.to_string(),
            manifest: r.manifest,
            config: r.config,
            layers: r.layers,
            blobs,
            _tmp: tmp,
        })
    }
}

impl ImageSource for RegistryImage<'_> {
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
        let layer = &self.layers[i];
        let d = match &layer.blob {
            LayerBlob::Digest(d) => d,
            LayerBlob::Member(m) => {
                return Err(SourceError::MissingMember {
                    archive: self.blobs.store.root().to_path_buf(),
                    member: m.clone(),
                })
            }
        };
        let b = &self.blobs;
        b.client
            .pull_blob(&b.reference, d, layer.size, &b.store, b.reporter)
            .map_err(SourceError::transport)?;
        Ok(Box::new(
            b.store.open_blob(d).map_err(SourceError::transport)?,
        ))
    }
}
