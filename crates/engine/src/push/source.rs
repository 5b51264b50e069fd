//! What `ocibuild push SRC` pushes, opened through the image model: an OCI layout's image
//! (`[oci:]DIR[:TAG]`; its blobs read in place, as a store through [`Store::view`]) or an
//! archive's (`oci-archive:`, `docker-archive:`), copied into a temporary store first.

use std::path::Path;

use crate::audit::import::{import_archive, Imported};
use crate::audit::AuditError;
use crate::image::source::SourceError;
use crate::image::MEDIA_TYPE_INDEX;
use crate::imageref::ImageRef;
use crate::output::{Layout, ReadError};
use crate::store::image::{StoreImage, StoreIndex};
use crate::store::Store;

/// Why `push`'s source could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum PushSourceError {
    #[error(transparent)]
    Layout(#[from] ReadError),
    #[error(transparent)]
    Import(Box<AuditError>),
    #[error(transparent)]
    Image(#[from] SourceError),
}

impl From<AuditError> for PushSourceError {
    fn from(e: AuditError) -> Self {
        PushSourceError::Import(Box::new(e))
    }
}

/// One image, or a multi-platform image (an image index).
pub enum Pushable {
    Image(StoreImage),
    Index(StoreIndex),
}

/// `push`'s source, opened; an archive's temporary store lives as long as this.
pub struct PushSource {
    pub pushable: Pushable,
    _imported: Option<Imported>,
}

/// Opens `source` (a layout or an archive; a registry or a vendor directory is refused where
/// it is parsed); an archive is copied into a temporary store under `tmp` (the system's
/// temporary directory when `None`).
pub fn open(source: &ImageRef, tmp: Option<&Path>) -> Result<PushSource, PushSourceError> {
    let name = source.to_string();
    let (store, descriptor, imported) = match source {
        ImageRef::Layout { dir, tag } => {
            let layout = Layout::open(dir)?;
            let descriptor = layout.descriptor(layout.image(tag.as_deref())?)?;
            (Store::view(dir), descriptor, None)
        }
        archive => {
            let imported = import_archive(archive, tmp)?;
            let store = Store::view(imported.store.root());
            (store, imported.image.clone(), Some(imported))
        }
    };
    let pushable = if descriptor.media_type == MEDIA_TYPE_INDEX {
        Pushable::Index(StoreIndex::open(&name, store, descriptor.digest)?)
    } else {
        Pushable::Image(StoreImage::manifest(&name, store, descriptor.digest)?)
    };
    Ok(PushSource {
        pushable,
        _imported: imported,
    })
}
