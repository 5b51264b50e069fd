//! Reading images from what the writers here write, through [`ImageSource`]: an OCI layout (a
//! [`StoreImage`] over its `blobs/sha256/`), an `oci-archive` tar or a `docker-archive` tar
//! ([`ArchiveImage`]). Nothing is extracted: archive members are read in place (their offsets
//! are indexed once).

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use fs_err as fs;
use serde::Deserialize;

use super::Layout;
use crate::digest::Digest;
use crate::image::read::{ReadDescriptor, ReadIndex};
use crate::image::source::{
    config_doc, diff_ids, parse_json, resolve, ConfigDoc, DocKind, Documents, ImageSource,
    LayerBlob, LayerInfo, ManifestDoc, SourceError, MAX_DOCUMENT,
};
use crate::image::Platform;
use crate::store::image::StoreImage;
use crate::store::Store;

/// One image of a docker-archive's `manifest.json`.
#[derive(Deserialize)]
pub struct DockerEntry {
    #[serde(rename = "Config")]
    pub config: String,
    #[serde(rename = "Layers")]
    pub layers: Vec<String>,
}

/// The image `tag` names in the layout at `dir` (or its only image), for `platform`.
pub fn open_layout(
    name: &str,
    dir: &Path,
    tag: Option<&str>,
    platform: &Platform,
) -> Result<StoreImage, SourceError> {
    let digest = layout_entry(name, dir, tag)?;
    StoreImage::open(name, Store::view(dir), digest, platform)
}

/// The digest of the index entry `tag` names in the layout at `dir` (or of its only image).
pub fn layout_entry(name: &str, dir: &Path, tag: Option<&str>) -> Result<Digest, SourceError> {
    let path = dir.join("index.json");
    if !path.is_file() {
        return Err(SourceError::Bad {
            source_name: name.to_string(),
            problem: format!("no OCI image layout there ({} is missing)", path.display()),
        });
    }
    let layout = Layout::open(dir).map_err(SourceError::transport)?;
    let entry = select_entry(name, layout.index(), tag)?;
    entry_digest(name, &entry)
}

/// The digest an index entry names, parsed before it is followed (it becomes a path).
pub fn entry_digest(name: &str, entry: &ReadDescriptor) -> Result<Digest, SourceError> {
    entry.digest.parse().map_err(|_| SourceError::Bad {
        source_name: name.to_string(),
        problem: format!("index.json names a bad digest `{}`", entry.digest),
    })
}

/// The index entry for `tag`, or the only image.
pub fn select_entry(
    name: &str,
    index: &ReadIndex,
    tag: Option<&str>,
) -> Result<ReadDescriptor, SourceError> {
    let tags = || match index.tags() {
        t if t.is_empty() => "none".to_string(),
        t => t.join(", "),
    };
    match tag {
        Some(t) => index
            .tagged(t)
            .cloned()
            .ok_or_else(|| SourceError::NoSuchTag {
                source_name: name.to_string(),
                tag: t.to_string(),
                tags: tags(),
            }),
        None => match index.images().as_slice() {
            [one] => Ok((*one).clone()),
            images => Err(SourceError::Ambiguous {
                source_name: name.to_string(),
                count: images.len(),
                tags: tags(),
            }),
        },
    }
}

/// A tar archive's regular members, indexed once: name → (data offset, size).
pub struct Archive {
    path: PathBuf,
    members: BTreeMap<String, (u64, u64)>,
}

fn normalize_member(name: &str) -> String {
    name.trim_start_matches("./")
        .trim_end_matches('/')
        .to_string()
}

impl Archive {
    /// Index every regular member of the tar at `path`.
    pub fn open(path: &Path) -> Result<Archive, SourceError> {
        let file = fs::File::open(path)?;
        let io_err = |source| SourceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut archive = crate::tarbound::archive(file);
        let mut members = BTreeMap::new();
        for entry in archive.entries_with_seek().map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let name = normalize_member(&String::from_utf8_lossy(&entry.path_bytes()));
            members.insert(name, (entry.raw_file_position(), entry.size()));
        }
        Ok(Archive {
            path: path.to_path_buf(),
            members,
        })
    }

    /// The members' names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.members.keys().cloned().collect()
    }

    fn member_size(&self, member: &str) -> Option<u64> {
        self.members.get(&normalize_member(member)).map(|m| m.1)
    }

    /// A member, as a bounded reader.
    pub fn open_member(&self, member: &str) -> Result<Box<dyn Read + Send>, SourceError> {
        let (offset, size) = *self.members.get(&normalize_member(member)).ok_or_else(|| {
            SourceError::MissingMember {
                archive: self.path.clone(),
                member: member.to_string(),
            }
        })?;
        let mut f = fs::File::open(&self.path)?;
        f.seek(SeekFrom::Start(offset))?;
        Ok(Box::new(f.take(size)))
    }

    /// A member's bytes, at most a JSON document's bound.
    pub fn read_member(&self, member: &str) -> Result<Vec<u8>, SourceError> {
        let mut r = self.open_member(member)?.take(MAX_DOCUMENT);
        let mut data = Vec::new();
        r.read_to_end(&mut data)?;
        Ok(data)
    }

    /// The digest of `index.json`'s one image (an oci-archive's).
    pub fn index_entry(&self, name: &str) -> Result<Digest, SourceError> {
        let index: ReadIndex = parse_json(name, "index.json", &self.read_member("index.json")?)?;
        let entry = select_entry(name, &index, None)?;
        entry_digest(name, &entry)
    }

    /// The archive's documents (an oci-archive's `blobs/sha256/`), as `name` calls it.
    pub fn documents<'a>(&'a self, name: &'a str) -> ArchiveDocuments<'a> {
        ArchiveDocuments {
            name,
            archive: self,
        }
    }
}

/// An oci-archive's blobs by digest, each checked against it.
pub struct ArchiveDocuments<'a> {
    name: &'a str,
    archive: &'a Archive,
}

impl Documents for ArchiveDocuments<'_> {
    fn document(&self, digest: &Digest, _kind: DocKind) -> Result<Vec<u8>, SourceError> {
        let data = self
            .archive
            .read_member(&format!("blobs/sha256/{}", digest.hex()))?;
        let found = Digest::of(&data);
        if found != *digest {
            return Err(SourceError::Bad {
                source_name: self.name.to_string(),
                problem: format!("blob {digest} has digest {found}"),
            });
        }
        Ok(data)
    }
}

/// An image in an `oci-archive` or `docker-archive` tar, opened.
pub struct ArchiveImage {
    name: String,
    manifest: Option<ManifestDoc>,
    config: ConfigDoc,
    layers: Vec<LayerInfo>,
    archive: Archive,
}

impl ArchiveImage {
    /// The oci-archive at `path`: its `index.json`'s one image, for `platform`.
    pub fn oci(name: &str, path: &Path, platform: &Platform) -> Result<ArchiveImage, SourceError> {
        let archive = Archive::open(path)?;
        let digest = archive.index_entry(name)?;
        let r = resolve(name, &archive.documents(name), digest, platform)?;
        Ok(ArchiveImage {
            name: name.to_string(),
            manifest: Some(r.manifest),
            config: r.config,
            layers: r.layers,
            archive,
        })
    }

    /// The docker-archive at `path` (one image; its layers stored decompressed, no manifest).
    pub fn docker(name: &str, path: &Path) -> Result<ArchiveImage, SourceError> {
        let archive = Archive::open(path)?;
        let bytes = archive.read_member("manifest.json")?;
        let entries: Vec<DockerEntry> = parse_json(name, "manifest.json", &bytes)?;
        let entry = match entries.as_slice() {
            [one] => one,
            other => {
                return Err(SourceError::Bad {
                    source_name: name.to_string(),
                    problem: format!(
                        "manifest.json lists {} images; only one-image archives are supported",
                        other.len()
                    ),
                })
            }
        };
        let config_bytes = archive.read_member(&entry.config)?;
        let config = config_doc(name, Digest::of(&config_bytes), config_bytes)?;
        let diff_ids = diff_ids(&config.json);
        let layers = entry
            .layers
            .iter()
            .enumerate()
            .map(|(i, m)| LayerInfo {
                digest: None,
                media_type: "application/vnd.docker.image.rootfs.diff.tar".into(),
                size: archive.member_size(m),
                diff_id: diff_ids.get(i).copied().flatten(),
                name: None,
                blob: LayerBlob::Member(normalize_member(m)),
            })
            .collect();
        Ok(ArchiveImage {
            name: name.to_string(),
            manifest: None,
            config,
            layers,
            archive,
        })
    }
}

impl ImageSource for ArchiveImage {
    fn name(&self) -> &str {
        &self.name
    }

    fn manifest(&self) -> Option<&ManifestDoc> {
        self.manifest.as_ref()
    }

    fn config(&self) -> &ConfigDoc {
        &self.config
    }

    fn layers(&self) -> &[LayerInfo] {
        &self.layers
    }

    fn open_raw(&self, i: usize) -> Result<Box<dyn Read + Send>, SourceError> {
        match &self.layers[i].blob {
            LayerBlob::Member(m) => self.archive.open_member(m),
            LayerBlob::Digest(d) => self
                .archive
                .open_member(&format!("blobs/sha256/{}", d.hex())),
        }
    }
}
