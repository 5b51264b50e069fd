//! Reading an OCI image layout, next to its writer (as ocidir-rs reads and writes): the index,
//! the blobs by digest, and an image by its tag, through nested indexes to one platform's
//! manifest. A layout is input like any other, and other tools write it: every document is
//! bounded in size and read leniently (unknown fields ignored, missing ones empty, so one odd
//! entry does not make the others unreadable); a digest is parsed when it is followed, before
//! it becomes a path, so a crafted `index.json` cannot name a file outside `blobs/sha256/`.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::digest::Digest;
use crate::image::read::{ReadDescriptor as Entry, ReadIndex as Index, ReadManifest as Manifest};
use crate::image::{Descriptor, Platform, DOCKER_LIST, MEDIA_TYPE_INDEX};

/// Largest JSON document (index, manifest, config) read from a layout.
const MAX_DOCUMENT: u64 = 16 << 20;

/// Indexes within indexes followed before giving up.
const MAX_DEPTH: usize = 4;

/// Why a layout could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("OCI layout {}: {detail}", dir.display())]
    Bad { dir: PathBuf, detail: String },
    #[error(
        "OCI layout {} has no image tagged `{tag}` (tags: {})",
        dir.display(),
        if tags.is_empty() { "none".to_string() } else { tags.join(", ") }
    )]
    NoTag {
        dir: PathBuf,
        tag: String,
        tags: Vec<String>,
    },
    #[error(
        "OCI layout {dir} holds {count} images: say which, as {dir}:TAG (tags: {})",
        if tags.is_empty() { "none".to_string() } else { tags.join(", ") },
        dir = dir.display()
    )]
    Ambiguous {
        dir: PathBuf,
        count: usize,
        tags: Vec<String>,
    },
}

/// An OCI image layout opened for reading.
#[derive(Clone, Debug)]
pub struct Layout {
    dir: PathBuf,
    index: Index,
}

impl Layout {
    /// Opens the layout at `dir`: reads and parses its `index.json`.
    pub fn open(dir: &Path) -> Result<Layout, ReadError> {
        let index = read_json(dir, &dir.join("index.json"))?;
        Ok(Layout {
            dir: dir.to_path_buf(),
            index,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The path of the blob a descriptor names (which may be missing); an error for a digest
    /// that is not `sha256:` and 64 hex digits.
    pub fn blob_path(&self, digest: &str) -> Result<PathBuf, ReadError> {
        let d: Digest = digest
            .parse()
            .map_err(|_| self.bad(format!("bad digest `{digest}`")))?;
        Ok(self.dir.join("blobs").join("sha256").join(d.hex()))
    }

    /// The tags of the index's entries (`org.opencontainers.image.ref.name`), in index order.
    pub fn tags(&self) -> Vec<String> {
        self.index.tags()
    }

    /// The index entry tagged `tag`.
    pub fn entry(&self, tag: &str) -> Result<&Entry, ReadError> {
        self.index.tagged(tag).ok_or_else(|| ReadError::NoTag {
            dir: self.dir.clone(),
            tag: tag.to_string(),
            tags: self.tags(),
        })
    }

    /// The image tagged `tag`, or without a tag the layout's only image.
    pub fn image(&self, tag: Option<&str>) -> Result<&Entry, ReadError> {
        if let Some(t) = tag {
            return self.entry(t);
        }
        match self.index.images().as_slice() {
            [one] => Ok(one),
            images => Err(ReadError::Ambiguous {
                dir: self.dir.clone(),
                count: images.len(),
                tags: self.tags(),
            }),
        }
    }

    /// An entry as a descriptor to copy or push by: its digest checked, its size the index's or
    /// else the blob's.
    pub fn descriptor(&self, entry: &Entry) -> Result<Descriptor, ReadError> {
        let path = self.blob_path(&entry.digest)?;
        let size = match entry.size {
            Some(s) => s,
            None => fs_err::metadata(&path)
                .map_err(|e| self.bad(e.to_string()))?
                .len(),
        };
        Ok(Descriptor {
            media_type: entry.media_type.clone(),
            digest: entry
                .digest
                .parse()
                .map_err(|_| self.bad(format!("bad digest `{}`", entry.digest)))?,
            size,
            annotations: entry.annotations.clone(),
            platform: entry.platform.clone(),
            artifact_type: entry.artifact_type.clone(),
        })
    }

    /// A blob's bytes, at most a JSON document's bound.
    pub fn read_blob(&self, digest: &str) -> Result<Vec<u8>, ReadError> {
        let path = self.blob_path(digest)?;
        read_bounded(&self.dir, &path)
    }

    /// A JSON blob, parsed.
    pub fn read_json<T: DeserializeOwned>(&self, digest: &str) -> Result<T, ReadError> {
        read_json(&self.dir, &self.blob_path(digest)?)
    }

    /// The image manifest tagged `tag`: the entry itself, or for an index (an image of several
    /// platforms) its entry for `platform`'s os and architecture, nested indexes followed.
    pub fn manifest(&self, tag: &str, platform: &Platform) -> Result<(Entry, Manifest), ReadError> {
        let mut desc = self.entry(tag)?.clone();
        let mut depth = 0;
        while desc.media_type == MEDIA_TYPE_INDEX || desc.media_type == DOCKER_LIST {
            depth += 1;
            if depth > MAX_DEPTH {
                return Err(self.bad("image indexes nested too deep".into()));
            }
            let nested: Index = self.read_json(&desc.digest)?;
            // The platform with its variant; else the only entry of its os and architecture.
            let same_arch: Vec<&Entry> = nested
                .manifests
                .iter()
                .filter(|m| {
                    m.platform.as_ref().is_some_and(|p| {
                        p.os == platform.os && p.architecture == platform.architecture
                    })
                })
                .collect();
            let exact = same_arch
                .iter()
                .find(|m| m.platform.as_ref().is_some_and(|p| p.matches(platform)));
            desc = exact
                .or(if same_arch.len() == 1 {
                    same_arch.first()
                } else {
                    None
                })
                .map(|m| (*m).clone())
                .ok_or_else(|| {
                    self.bad(format!(
                        "image `{tag}` has no {}/{} manifest",
                        platform.os, platform.architecture
                    ))
                })?;
        }
        let manifest = self.read_json(&desc.digest)?;
        Ok((desc, manifest))
    }

    fn bad(&self, detail: String) -> ReadError {
        ReadError::Bad {
            dir: self.dir.clone(),
            detail,
        }
    }
}

fn read_json<T: DeserializeOwned>(dir: &Path, path: &Path) -> Result<T, ReadError> {
    let bytes = read_bounded(dir, path)?;
    serde_json::from_slice(&bytes).map_err(|e| ReadError::Bad {
        dir: dir.to_path_buf(),
        detail: format!("{}: {e}", path.display()),
    })
}

fn read_bounded(dir: &Path, path: &Path) -> Result<Vec<u8>, ReadError> {
    let bad = |detail: String| ReadError::Bad {
        dir: dir.to_path_buf(),
        detail,
    };
    // Below the layout's directory nothing is followed: a symlinked `index.json`, blob or
    // `blobs/sha256` is refused, naming it ([`crate::fsat`]). `path` is `dir` joined with
    // plain names (`index.json`, `blobs/sha256/HEX`).
    let mut names = Vec::new();
    for c in path.strip_prefix(dir).unwrap_or(path).components() {
        match c.as_os_str().to_str() {
            Some(n) if matches!(c, std::path::Component::Normal(_)) => names.push(n),
            _ => return Err(bad(format!("{} is not a layout file", path.display()))),
        }
    }
    let file = crate::fsat::open_regular_beneath(dir, &names).map_err(|e| bad(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_DOCUMENT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(e.to_string()))?;
    if bytes.len() as u64 > MAX_DOCUMENT {
        return Err(bad(format!(
            "{} is larger than {MAX_DOCUMENT} bytes",
            path.display()
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::MEDIA_TYPE_MANIFEST;

    fn put(dir: &Path, bytes: &[u8]) -> Digest {
        let d = Digest::of(bytes);
        fs_err::create_dir_all(dir.join("blobs/sha256")).unwrap();
        fs_err::write(dir.join("blobs/sha256").join(d.hex()), bytes).unwrap();
        d
    }

    #[test]
    fn tags_platforms_and_hostile_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let config = put(d, b"{}");
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"{MEDIA_TYPE_MANIFEST}","config":{{"mediaType":"c","digest":"{config}","size":2}},"layers":[],"unknown":1}}"#
        );
        let m = put(d, manifest.as_bytes());
        let nested = format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"{MEDIA_TYPE_MANIFEST}","digest":"{m}","size":{},"platform":{{"os":"linux","architecture":"arm64","variant":"v8"}}}}]}}"#,
            manifest.len()
        );
        let n = put(d, nested.as_bytes());
        let index = format!(
            r#"{{"schemaVersion":2,"manifests":[
              {{"mediaType":"{MEDIA_TYPE_MANIFEST}","digest":"{m}","size":1,"annotations":{{"org.opencontainers.image.ref.name":"one"}}}},
              {{"mediaType":"{MEDIA_TYPE_INDEX}","digest":"{n}","size":1,"annotations":{{"org.opencontainers.image.ref.name":"multi"}}}}]}}"#
        );
        fs_err::write(d.join("index.json"), index).unwrap();
        let l = Layout::open(d).unwrap();
        assert_eq!(l.tags(), ["one", "multi"]);
        let e = l.image(None).unwrap_err().to_string();
        assert!(e.contains("holds 2 images: say which"), "{e}");
        assert_eq!(l.image(Some("one")).unwrap().digest, m.to_string());
        let arm = Platform::parse("linux/arm64").unwrap();
        let amd = Platform::parse("linux/amd64").unwrap();
        assert_eq!(
            l.manifest("one", &amd).unwrap().1.config.digest,
            config.to_string()
        );
        assert_eq!(l.manifest("multi", &arm).unwrap().0.digest, m.to_string());
        let e = l.manifest("multi", &amd).unwrap_err().to_string();
        assert!(e.contains("no linux/amd64 manifest"), "{e}");
        let e = l.manifest("nope", &amd).unwrap_err().to_string();
        assert!(
            e.ends_with("no image tagged `nope` (tags: one, multi)"),
            "{e}"
        );
        // A digest that is a path is refused when it is followed, and spoils only its entry;
        // an index without `schemaVersion` (or sizes) is read all the same.
        fs_err::write(
            d.join("index.json"),
            format!(
                r#"{{"manifests":[
                  {{"mediaType":"x","digest":"sha256:../../etc/passwd","annotations":{{"org.opencontainers.image.ref.name":"evil"}}}},
                  {{"digest":"{m}","annotations":{{"org.opencontainers.image.ref.name":"one"}}}}]}}"#
            ),
        )
        .unwrap();
        let l = Layout::open(d).unwrap();
        let e = l.manifest("evil", &amd).unwrap_err().to_string();
        assert!(e.contains("bad digest `sha256:../../etc/passwd`"), "{e}");
        assert_eq!(
            l.manifest("one", &amd).unwrap().1.config.digest,
            config.to_string()
        );
        // Without a size in the index, a descriptor takes the blob's.
        let one = l.descriptor(l.entry("one").unwrap()).unwrap();
        assert_eq!((one.digest, one.size), (m, manifest.len() as u64));
        assert!(l.descriptor(l.entry("evil").unwrap()).is_err());
    }
}
