//! Reading an OCI image layout enough for the test stage: the image's platform and Env, and
//! whether its filesystem has a glibc dynamic loader. The image is found by its tag as the
//! layout reader ([`Layout`]) finds it, and its layers are read through
//! [`ImageSource`] (a [`StoreImage`] over the layout's blobs), as `diff` reads them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::RunError;
use crate::digest::Digest;
use crate::image::read::ReadConfig;
use crate::image::source::{decompress, ImageSource, SourceError};
use crate::image::Platform;
use crate::output::Layout;
use crate::store::image::StoreImage;
use crate::store::Store;

/// What the test stage needs to know about an image in a layout.
#[derive(Debug, Clone)]
pub struct ImageInfo {
    /// OCI spelling: `amd64`, `arm64`, …
    pub architecture: String,
    /// The config's `Env`, `KEY=VALUE`.
    pub env: Vec<String>,
    /// The image manifest's digest (an index followed to the host's platform).
    manifest: Digest,
    /// Each layer blob's path, for messages.
    layers: Vec<PathBuf>,
}

impl ImageInfo {
    pub fn env_var(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find_map(|e| e.strip_prefix(key)?.strip_prefix('='))
    }
}

/// Reads `index.json` → (nested index →) manifest → config for `tag`. A multi-platform image
/// resolves to the host's platform.
pub fn image_info(layout: &Path, tag: &str) -> Result<ImageInfo, RunError> {
    let l = Layout::open(layout)?;
    let host = Platform::host();
    let (entry, manifest) = l.manifest(tag, &host)?;
    let digest = l.descriptor(&entry)?.digest;
    let config: ReadConfig = l.read_json(&manifest.config.digest)?;
    let layers = manifest
        .layers
        .iter()
        .map(|d| l.blob_path(&d.digest))
        .collect::<Result<Vec<_>, _>>()?;
    let architecture = if config.architecture.is_empty() {
        host.architecture
    } else {
        config.architecture
    };
    Ok(ImageInfo {
        architecture,
        env: config.config.and_then(|c| c.env).unwrap_or_default(),
        manifest: digest,
        layers,
    })
}

/// The glibc dynamic loader's path (relative to /) for an OCI architecture.
pub fn glibc_loader(oci_arch: &str) -> Option<&'static str> {
    Some(match oci_arch {
        "amd64" => "lib64/ld-linux-x86-64.so.2",
        "arm64" => "lib/ld-linux-aarch64.so.1",
        "386" => "lib/ld-linux.so.2",
        "arm" => "lib/ld-linux-armhf.so.3",
        "ppc64le" => "lib64/ld64.so.2",
        "s390x" => "lib/ld64.so.1",
        "riscv64" => "lib/ld-linux-riscv64-lp64d.so.1",
        _ => return None,
    })
}

/// Whether the image has glibc's dynamic loader for its architecture: the merged filesystem of
/// its layers (whiteouts applied) has the loader path, through symlinks, as a regular file.
pub fn image_has_glibc(layout: &Path, tag: &str) -> Result<bool, RunError> {
    let info = image_info(layout, tag)?;
    let Some(loader) = glibc_loader(&info.architecture) else {
        return Ok(false);
    };
    let image = StoreImage::open(tag, Store::view(layout), info.manifest, &Platform::host())?;
    let mut fs = TreeModel::default();
    for (i, blob) in info.layers.iter().enumerate() {
        fs.apply_layer(&image, i, blob)?;
    }
    Ok(fs.is_regular_file(loader))
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir,
    File,
    Symlink(String),
    /// A hard link to another path in the image (a file).
    Link(String),
    Other,
}

/// Paths of the merged image filesystem, without content.
#[derive(Debug, Default)]
struct TreeModel {
    nodes: BTreeMap<String, Node>,
}

fn clean(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    parts.join("/")
}

impl TreeModel {
    fn remove_tree(&mut self, path: &str) {
        self.nodes.remove(path);
        let prefix = format!("{path}/");
        let doomed: Vec<String> = self
            .nodes
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect();
        for k in doomed {
            self.nodes.remove(&k);
        }
    }

    /// Layer `i` of `image` (its blob at `blob`) applied.
    fn apply_layer(
        &mut self,
        image: &dyn ImageSource,
        i: usize,
        blob: &Path,
    ) -> Result<(), RunError> {
        let err = |detail: String| RunError::Layer {
            layer: blob.to_path_buf(),
            detail,
        };
        let raw = image.open_raw(i).map_err(|e| err(open_detail(&e, blob)))?;
        let stream = decompress(raw).map_err(|e| err(e.to_string()))?;
        let mut archive = crate::tarbound::archive(stream);
        // Opaque directories and whiteouts hide lower layers only: collect them, apply them, then
        // add this layer's entries.
        let mut added: Vec<(String, Node)> = Vec::new();
        let mut opaque: Vec<String> = Vec::new();
        let mut whiteouts: Vec<String> = Vec::new();
        for entry in archive.entries().map_err(|e| err(e.to_string()))? {
            let entry = entry.map_err(|e| err(e.to_string()))?;
            let raw = entry.path_bytes();
            let path = clean(&String::from_utf8_lossy(&raw));
            if path.is_empty() {
                continue;
            }
            let (parent, name) = match path.rsplit_once('/') {
                Some((p, n)) => (p.to_string(), n.to_string()),
                None => (String::new(), path.clone()),
            };
            if name == ".wh..wh..opq" {
                opaque.push(parent);
                continue;
            }
            if let Some(hidden) = name.strip_prefix(".wh.") {
                whiteouts.push(if parent.is_empty() {
                    hidden.to_string()
                } else {
                    format!("{parent}/{hidden}")
                });
                continue;
            }
            let link = || {
                entry
                    .link_name_bytes()
                    .map(|l| String::from_utf8_lossy(&l).into_owned())
                    .unwrap_or_default()
            };
            let node = match entry.header().entry_type() {
                tar::EntryType::Directory => Node::Dir,
                tar::EntryType::Regular
                | tar::EntryType::Continuous
                | tar::EntryType::GNUSparse => Node::File,
                tar::EntryType::Symlink => Node::Symlink(link()),
                tar::EntryType::Link => Node::Link(clean(&link())),
                _ => Node::Other,
            };
            added.push((path, node));
        }
        for dir in opaque {
            let prefix = if dir.is_empty() {
                String::new()
            } else {
                format!("{dir}/")
            };
            let doomed: Vec<String> = self
                .nodes
                .keys()
                .filter(|k| k.starts_with(&prefix) && **k != dir)
                .cloned()
                .collect();
            for k in doomed {
                self.nodes.remove(&k);
            }
        }
        for w in whiteouts {
            self.remove_tree(&w);
        }
        for (path, node) in added {
            if node != Node::Dir {
                // A non-directory replaces whatever was there, a directory's contents included.
                self.remove_tree(&path);
            }
            self.nodes.insert(path, node);
        }
        Ok(())
    }

    /// Resolves `path` (relative to /) through symlinks, as the kernel would inside the image.
    fn resolve(&self, path: &str) -> Option<(String, Node)> {
        let mut pending: Vec<String> = clean(path).split('/').rev().map(str::to_string).collect();
        let mut cur: Vec<String> = Vec::new();
        let mut hops = 0;
        while let Some(comp) = pending.pop() {
            match comp.as_str() {
                "" | "." => continue,
                ".." => {
                    cur.pop();
                    continue;
                }
                _ => {}
            }
            cur.push(comp);
            let joined = cur.join("/");
            let node = self.node_or_implicit_dir(&joined)?;
            if let Node::Symlink(target) = node {
                hops += 1;
                if hops > 40 {
                    return None;
                }
                cur.pop();
                if target.starts_with('/') {
                    cur.clear();
                }
                for c in target.split('/').rev() {
                    pending.push(c.to_string());
                }
            } else if !pending.is_empty() && *node != Node::Dir {
                return None;
            }
        }
        let joined = cur.join("/");
        let node = self.nodes.get(&joined)?.clone();
        Some((joined, node))
    }

    /// The node at `path`, or a directory when only entries below it were listed (tar layers
    /// need not list every parent).
    fn node_or_implicit_dir(&self, path: &str) -> Option<&Node> {
        if let Some(n) = self.nodes.get(path) {
            return Some(n);
        }
        let prefix = format!("{path}/");
        self.nodes
            .range(prefix.clone()..)
            .next()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|_| &Node::Dir)
    }

    fn is_regular_file(&self, path: &str) -> bool {
        match self.resolve(path) {
            Some((_, Node::File)) => true,
            Some((_, Node::Link(target))) => {
                matches!(self.nodes.get(&target), Some(Node::File))
            }
            _ => false,
        }
    }
}

/// Why layer blob `blob` did not open: the file's own error when it has one (a missing or
/// unreadable blob, named as the test stage always named it), else `e`'s.
fn open_detail(e: &SourceError, blob: &Path) -> String {
    match fs_err::File::open(blob) {
        Err(io) => io.to_string(),
        Ok(_) => e.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::digest::Digest;
    use crate::image::annotations::REF_NAME;
    use std::io::Write;

    /// A tar entry for a synthetic layer.
    pub(crate) enum E<'a> {
        Dir(&'a str),
        File(&'a str),
        Sym(&'a str, &'a str),
        Hard(&'a str, &'a str),
    }

    pub(crate) fn tar_bytes(entries: &[E]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for e in entries {
            let mut h = tar::Header::new_ustar();
            h.set_mode(0o755);
            h.set_size(0);
            match *e {
                E::Dir(p) => {
                    h.set_entry_type(tar::EntryType::Directory);
                    b.append_data(&mut h, p, std::io::empty()).unwrap();
                }
                E::File(p) => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(3);
                    b.append_data(&mut h, p, &b"elf"[..]).unwrap();
                }
                E::Sym(p, t) => {
                    h.set_entry_type(tar::EntryType::Symlink);
                    b.append_link(&mut h, p, t).unwrap();
                }
                E::Hard(p, t) => {
                    h.set_entry_type(tar::EntryType::Link);
                    b.append_link(&mut h, p, t).unwrap();
                }
            }
        }
        b.into_inner().unwrap()
    }

    fn put_blob(layout: &Path, data: &[u8]) -> String {
        let d = Digest::of(data);
        fs_err::create_dir_all(layout.join("blobs/sha256")).unwrap();
        fs_err::write(layout.join("blobs/sha256").join(d.hex()), data).unwrap();
        d.to_string()
    }

    /// Writes a layout with one image `tag` of the given (already compressed or not) layers.
    pub(crate) fn write_layout(layout: &Path, tag: &str, arch: &str, layers: &[Vec<u8>]) {
        let config = serde_json::json!({
            "architecture": arch, "os": "linux",
            "config": {"Env": ["PATH=/bin", "LD_LIBRARY_PATH=/opt/lib"]},
            "rootfs": {"type": "layers", "diff_ids": []}
        });
        let cfg = put_blob(layout, config.to_string().as_bytes());
        let layers: Vec<_> = layers
            .iter()
            .map(|l| serde_json::json!({"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": put_blob(layout, l), "size": l.len()}))
            .collect();
        let manifest = serde_json::json!({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": 1},
            "layers": layers
        });
        let m = put_blob(layout, manifest.to_string().as_bytes());
        let index = serde_json::json!({"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": m, "size": 1,
             "annotations": {REF_NAME: tag}}]});
        fs_err::write(layout.join("index.json"), index.to_string()).unwrap();
        fs_err::write(
            layout.join("oci-layout"),
            r#"{"imageLayoutVersion":"1.0.0"}"#,
        )
        .unwrap();
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn has(arch: &str, layers: &[Vec<u8>]) -> bool {
        let t = tempfile::tempdir().unwrap();
        write_layout(t.path(), "t", arch, layers);
        image_has_glibc(t.path(), "t").unwrap()
    }

    #[test]
    fn detects_the_loader_through_merged_usr_symlinks_in_any_compression() {
        // Debian 12 style: /lib64 -> usr/lib64, usr/lib64/ld… -> /lib/x86_64-linux-gnu/ld…,
        // /lib -> usr/lib.
        let debian = tar_bytes(&[
            E::Sym("lib", "usr/lib"),
            E::Sym("lib64", "usr/lib64"),
            E::Dir("usr/"),
            E::Dir("usr/lib/"),
            E::Dir("usr/lib/x86_64-linux-gnu/"),
            E::File("usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
            E::Dir("usr/lib64/"),
            E::Sym(
                "usr/lib64/ld-linux-x86-64.so.2",
                "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
            ),
        ]);
        assert!(has("amd64", std::slice::from_ref(&debian)));
        assert!(has("amd64", &[gz(&debian)]));
        assert!(has("amd64", &[zstd::encode_all(&debian[..], 3).unwrap()]));
        // the same tree is no glibc for arm64
        assert!(!has("arm64", std::slice::from_ref(&debian)));

        let arm = tar_bytes(&[
            E::Dir("lib/"),
            E::File("lib/aarch64-linux-gnu/ld-linux-aarch64.so.1"),
            E::Sym(
                "lib/ld-linux-aarch64.so.1",
                "aarch64-linux-gnu/ld-linux-aarch64.so.1",
            ),
        ]);
        assert!(has("arm64", &[arm]));

        let hard = tar_bytes(&[
            E::File("opt/ld.so"),
            E::Hard("lib64/ld-linux-x86-64.so.2", "opt/ld.so"),
        ]);
        assert!(has("amd64", &[hard]));
    }

    #[test]
    fn static_busybox_alpine_dangling_and_whiteouts_are_no_glibc() {
        assert!(!has(
            "amd64",
            &[tar_bytes(&[E::Dir("bin/"), E::File("bin/busybox")])]
        ));
        // musl's loader is not glibc's
        assert!(!has(
            "amd64",
            &[tar_bytes(&[E::File("lib/ld-musl-x86_64.so.1")])]
        ));
        // dangling symlink
        assert!(!has(
            "amd64",
            &[tar_bytes(&[E::Sym(
                "lib64/ld-linux-x86-64.so.2",
                "/lib/x86_64-linux-gnu/ld.so"
            )])]
        ));
        // symlink loop
        assert!(!has("amd64", &[tar_bytes(&[E::Sym("lib64", "lib64")])]));
        let base = tar_bytes(&[E::Dir("lib64/"), E::File("lib64/ld-linux-x86-64.so.2")]);
        assert!(has("amd64", std::slice::from_ref(&base)));
        // a whiteout in a later layer deletes it
        let wh = tar_bytes(&[E::Dir("lib64/"), E::File("lib64/.wh.ld-linux-x86-64.so.2")]);
        assert!(!has("amd64", &[base.clone(), wh]));
        // an opaque directory hides the lower layer's contents, but not its own
        let opq = tar_bytes(&[E::Dir("lib64/"), E::File("lib64/.wh..wh..opq")]);
        assert!(!has("amd64", &[base.clone(), opq]));
        let opq2 = tar_bytes(&[
            E::Dir("lib64/"),
            E::File("lib64/.wh..wh..opq"),
            E::File("lib64/ld-linux-x86-64.so.2"),
        ]);
        assert!(has("amd64", &[base.clone(), opq2]));
        // whiteout of the directory itself
        assert!(!has("amd64", &[base, tar_bytes(&[E::File(".wh.lib64")])]));
    }

    #[test]
    fn unknown_tag_lists_the_tags() {
        let t = tempfile::tempdir().unwrap();
        write_layout(t.path(), "v1", "amd64", &[tar_bytes(&[])]);
        let e = image_has_glibc(t.path(), "v2").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("v2") && msg.contains("v1"), "{msg}");
        let info = image_info(t.path(), "v1").unwrap();
        assert_eq!(info.env_var("LD_LIBRARY_PATH"), Some("/opt/lib"));
        assert_eq!(info.architecture, "amd64");
        assert!(image_has_glibc(&t.path().join("nope"), "v1").is_err());
    }
}
