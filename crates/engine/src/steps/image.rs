//! A step's image: its builder's layers and config with the step's input layers above them,
//! put into the store as an image and written to an OCI layout podman runs from.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::StepError;
use crate::digest::Digest;
use crate::image::{self, Descriptor, ImageRecord, LayerRecord, Manifest, Platform};
use crate::store::Store;

/// The image a step runs in, or that a later step takes as its builder: layers and config.
#[derive(Clone, Debug)]
pub struct Container {
    /// What the container is made from: the builder's manifest digest, or for an earlier
    /// step's container that step's key.
    pub id: Digest,
    pub config: Value,
    pub layers: Vec<LayerRecord>,
}

impl Container {
    /// This container with `layers` added on top (their diff_ids appended to the config).
    pub fn with_layers(&self, id: Digest, layers: &[LayerRecord]) -> Container {
        let mut config = self.config.clone();
        if let Some(ids) = config
            .get_mut("rootfs")
            .and_then(|r| r.get_mut("diff_ids"))
            .and_then(Value::as_array_mut)
        {
            ids.extend(layers.iter().map(|l| Value::String(l.diff_id.to_string())));
        }
        if let Some(h) = config.get_mut("history").and_then(Value::as_array_mut) {
            h.extend(
                layers
                    .iter()
                    .map(|_| serde_json::json!({"created_by": "ocibuild step input"})),
            );
        }
        let mut all = self.layers.clone();
        all.extend(layers.iter().cloned());
        Container {
            id,
            config,
            layers: all,
        }
    }

    /// The container as an image in `store` (config and manifest), named for the layout.
    pub fn record(&self, store: &Store, platform: &Platform) -> Result<ImageRecord, StepError> {
        let config_bytes = crate::json::to_canonical_vec("step image config", &self.config)?;
        let config = Descriptor::new(
            image::MEDIA_TYPE_CONFIG,
            store.put_bytes(&config_bytes)?,
            config_bytes.len() as u64,
        );
        let manifest = Manifest {
            schema_version: 2,
            media_type: image::MEDIA_TYPE_MANIFEST.into(),
            artifact_type: None,
            config: config.clone(),
            layers: self.layers.iter().map(|l| l.descriptor.clone()).collect(),
            subject: None,
            annotations: Default::default(),
        };
        let bytes = crate::json::to_canonical_vec("step image manifest", &manifest)?;
        let mut desc = Descriptor::new(
            image::MEDIA_TYPE_MANIFEST,
            store.put_bytes(&bytes)?,
            bytes.len() as u64,
        );
        desc.platform = Some(platform.clone());
        Ok(ImageRecord {
            name: "localhost/ocibuild-step".into(),
            tag: TAG.into(),
            manifest: desc,
            config,
            layers: self.layers.clone(),
            epoch: 0,
        })
    }
}

/// The tag a step's layout holds its image under.
pub(super) const TAG: &str = "step";

/// A directory for one step's run, at a path podman can name an image after, removed when
/// dropped: `layout/` (the step's image) and one `outN/` per output.
pub(super) struct RunDir {
    pub path: PathBuf,
}

impl RunDir {
    pub(super) fn new(step: &str) -> Result<RunDir, StepError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let base = [
            std::env::temp_dir(),
            PathBuf::from("/tmp"),
            PathBuf::from("/var/tmp"),
        ]
        .into_iter()
        .find(|b| crate::run::podman_safe_path(b) && b.is_dir())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
        let path = base.join(format!(
            "ocibuild-step-{}-{}-{nanos:x}",
            std::process::id(),
            step.replace(['_', ':'], "-")
        ));
        fs_err::create_dir_all(&path).map_err(|source| StepError::Io {
            step: step.to_string(),
            source,
        })?;
        Ok(RunDir { path })
    }

    pub(super) fn layout(&self) -> PathBuf {
        self.path.join("layout")
    }

    /// Output `i`'s host directory, made empty.
    pub(super) fn output(&self, step: &str, i: usize) -> Result<PathBuf, StepError> {
        let p = self.path.join(format!("out{i}"));
        fs_err::create_dir(&p).map_err(|source| StepError::Io {
            step: step.to_string(),
            source,
        })?;
        Ok(p)
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = remove_all(&self.path);
    }
}

/// Removes `dir`, first making every directory in it writable (a step may leave read-only
/// ones behind).
fn remove_all(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if fs_err::remove_dir_all(dir).is_ok() {
        return Ok(());
    }
    let mut dirs = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < dirs.len() {
        let _ = fs_err::set_permissions(&dirs[i], std::fs::Permissions::from_mode(0o700));
        if let Ok(rd) = fs_err::read_dir(&dirs[i]) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push(e.path());
                }
            }
        }
        i += 1;
    }
    fs_err::remove_dir_all(dir)
}
