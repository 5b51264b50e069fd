//! The base image: resolved through the lock file, fetched (verified) into the store, and
//! described as the layers and config the build starts from.
//!
//! Resolution: a base the lock pins (same normalized reference, same platform) is used by its
//! manifest digest; the tag is not asked again. Otherwise the reference is resolved (index →
//! platform manifest) and the lock records it. [`LockPolicy::Update`] re-resolves a locked tag and
//! reports when it moved. With the lock present and every blob in the store, nothing touches
//! the network.
//!
//! The base's layers go into the output byte for byte. Docker schema 2 media types are
//! rewritten to their OCI equivalents (the bytes are the same; this is what skopeo does when it
//! writes an OCI layout).

use serde::Deserialize;

use crate::digest::Digest;
use crate::image::{Descriptor, LayerRecord, ManifestHead};
use crate::lock::{Lock, LockPolicy, LockedBase};
use crate::progress::Reporter;
use crate::recipe::Platform;
use crate::registry::{Client, Reference, ReferenceError, RegistryError};
use crate::store::{Store, StoreError};

const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
const OCI_MANIFEST: &str = crate::image::MEDIA_TYPE_MANIFEST;

#[derive(Debug, thiserror::Error)]
pub enum BaseError {
    /// `reference` as [`crate::registry::reference::shown`] gives it; the source quotes it.
    #[error("base image")]
    Reference {
        reference: String,
        source: ReferenceError,
    },
    #[error(transparent)]
    Registry(Box<RegistryError>),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("base image {reference} ({digest}): {problem}")]
    Bad {
        reference: String,
        digest: Digest,
        problem: String,
    },
    #[error("base image {reference} ({manifest}): its manifest declares blob {digest} as {declared} bytes, but that blob is {actual} bytes: the manifest is wrong; push the base again with its real sizes, or build on another base")]
    Size {
        reference: String,
        manifest: Digest,
        digest: Digest,
        declared: u64,
        actual: u64,
    },
    #[error("base image {reference}: layer {layer}'s partial-pull table of contents (zstd:chunked or eStargz) does not describe the layer: it {problem}; a puller that trusts it (podman with partial pulls) would build other files than the layer holds. Build on another base, or have this one pushed again with an honest TOC (or as plain gzip or zstd)")]
    LyingToc {
        reference: String,
        layer: Digest,
        problem: String,
    },
    #[error("offline: base {reference} {what} is not in the store or the vendor directory")]
    Offline { reference: String, what: String },
    #[error("--frozen: the lock pins no base image, but the recipe builds on {reference}: run `ocibuild lock` (online)")]
    NotLocked { reference: String },
    #[error("base image {reference} is {found}, but the recipe builds for {wanted}: set [image] platform or pick a base for {wanted}")]
    Platform {
        reference: String,
        found: String,
        wanted: String,
    },
    #[error("base image {reference} for {platform}, through the index {index} that another platform of this build pinned (`ocibuild lock --update` resolves the tag again for every platform)")]
    ThroughIndex {
        reference: String,
        platform: String,
        index: Digest,
        source: Box<RegistryError>,
    },
}

impl From<RegistryError> for BaseError {
    fn from(e: RegistryError) -> Self {
        BaseError::Registry(Box::new(e))
    }
}

/// A base image ready to build on: every blob it names is in the store.
#[derive(Clone, Debug)]
pub struct BaseImage {
    /// Normalized reference as written into the lock and the `base.name` annotation.
    pub reference: String,
    pub manifest_digest: Digest,
    /// The base's image config, to inherit from.
    pub config: serde_json::Value,
    /// Its layers, in order, with OCI media types and the diff_ids from its config.
    pub layers: Vec<LayerRecord>,
}

/// What resolution changed in the lock, for the caller to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockChange {
    Unchanged,
    /// Newly pinned (no lock entry before, or the recipe's base changed).
    Pinned {
        digest: Digest,
    },
    /// `LockPolicy::Update` found the tag pointing elsewhere.
    Moved {
        from: Digest,
        to: Digest,
    },
}

#[derive(Deserialize)]
struct ConfigHead {
    architecture: Option<String>,
    os: Option<String>,
    #[serde(default)]
    variant: Option<String>,
    rootfs: RootFsHead,
}

#[derive(Deserialize)]
struct RootFsHead {
    diff_ids: Vec<Digest>,
}

/// Downloads the layers of `image` (resolved without them: a shallow base) that the store
/// lacks, verified.
pub fn fetch_layers(
    client: &Client,
    image: &BaseImage,
    store: &Store,
    reporter: &dyn Reporter,
) -> Result<(), BaseError> {
    let r: Reference = image
        .reference
        .parse()
        .map_err(|source| BaseError::Reference {
            reference: crate::registry::reference::shown(&image.reference),
            source,
        })?;
    let layers: Vec<_> = image.layers.iter().map(|l| l.descriptor.clone()).collect();
    if client.config().offline {
        if let Some(d) = layers.iter().find(|d| !store.has_blob(&d.digest)) {
            return Err(BaseError::Offline {
                reference: format!("{}@{}", image.reference, image.manifest_digest),
                what: format!("blob {}", d.digest),
            });
        }
    }
    client.pull_blobs(&r, &layers, store, reporter)?;
    check_sizes(&image.reference, &image.manifest_digest, &layers, store)?;
    check_tocs(&image.reference, &layers, store)
}

/// Checks the partial-pull TOC of each layer that has one and is in the store against the
/// layer itself ([`crate::partial::check_toc`]): ocibuild never reads a base's files through
/// its TOC, but an image built on it passes the TOC on to every puller.
fn check_tocs(reference: &str, layers: &[Descriptor], store: &Store) -> Result<(), BaseError> {
    for d in layers {
        if !crate::partial::has_toc(d) || !store.has_blob(&d.digest) {
            continue;
        }
        // Checked once per layer and TOC (it reads the whole layer): the fact is cached under
        // the hash of the layer's digest and annotations, which fix both.
        let key = Digest::of(
            format!(
                "toc-check/1\n{}\n{}",
                d.digest,
                serde_json::to_string(&d.annotations).unwrap_or_default()
            )
            .as_bytes(),
        );
        if store.meta(&key)?.is_some() {
            continue;
        }
        match crate::partial::check_toc(d, &store.blob_path(&d.digest)) {
            Ok(()) => store.put_meta(&key, b"{\"toc\":\"matches the layer\"}")?,
            Err(crate::partial::PartialError::Toc { layer, problem }) => {
                return Err(BaseError::LyingToc {
                    reference: reference.to_string(),
                    layer,
                    problem,
                })
            }
            Err(crate::partial::PartialError::Store { source, .. }) => {
                return Err(BaseError::Store(StoreError::Io(source)))
            }
            Err(crate::partial::PartialError::Registry(e)) => return Err(BaseError::Registry(e)),
        }
    }
    Ok(())
}

/// Every blob of `blobs` the store has is the size its descriptor declares: a manifest naming
/// a known digest with another size (2^62) is refused, not written into the image's manifest.
fn check_sizes(
    reference: &str,
    manifest: &Digest,
    blobs: &[Descriptor],
    store: &Store,
) -> Result<(), BaseError> {
    for d in blobs {
        let path = store.blob_path(&d.digest);
        let actual = match fs_err::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(StoreError::Io(e).into()),
        };
        if actual != d.size {
            return Err(BaseError::Size {
                reference: reference.to_string(),
                manifest: *manifest,
                digest: d.digest,
                declared: d.size,
                actual,
            });
        }
    }
    Ok(())
}

/// How [`resolve`] works: the lock policy, where it downloads from and to, whether the layers
/// are fetched (`layers`; false for a shallow base), the index another platform pinned
/// (`index`), and where downloads and retries are reported.
#[derive(Clone, Copy)]
pub struct Resolve<'a> {
    pub pin: LockPolicy,
    pub client: &'a Client,
    pub store: &'a Store,
    pub layers: bool,
    pub index: Option<Digest>,
    pub reporter: &'a dyn Reporter,
}

/// The base's layers as the image names them: OCI media types, its annotations, the diff_ids
/// from its config.
fn layer_records(manifest: &ManifestHead, diff_ids: Vec<Digest>) -> Vec<LayerRecord> {
    manifest
        .layers
        .iter()
        .zip(diff_ids)
        .map(|(d, diff_id)| LayerRecord {
            descriptor: Descriptor {
                media_type: oci_layer_media_type(&d.media_type).to_string(),
                digest: d.digest,
                size: d.size,
                artifact_type: None,
                annotations: d.annotations.clone(),
                platform: None,
            },
            diff_id,
            uncompressed_size: None,
        })
        .collect()
}

/// The base's manifest by digest, from the store, else from the registry (verified either
/// way): an image manifest whose layers ocibuild can read.
fn checked_manifest(
    r: &Reference,
    name: &str,
    manifest_digest: Digest,
    how: &Resolve<'_>,
) -> Result<ManifestHead, BaseError> {
    let Resolve { client, store, .. } = *how;
    let offline = client.config().offline;
    let manifest_bytes = if store.has_blob(&manifest_digest) {
        store.read_blob(&manifest_digest)?
    } else if offline {
        return Err(BaseError::Offline {
            reference: format!("{name}@{manifest_digest}"),
            what: format!("manifest {manifest_digest}"),
        });
    } else {
        let m = client.get_manifest(&r.with_digest(manifest_digest))?;
        store.put_bytes(&m.bytes)?;
        m.bytes
    };
    let bad = |problem: String| BaseError::Bad {
        reference: name.to_string(),
        digest: manifest_digest,
        problem,
    };
    let manifest: ManifestHead = serde_json::from_slice(&manifest_bytes).map_err(|e| {
        bad(format!(
            "is not an image manifest ({e}); an index must be resolved for a platform first"
        ))
    })?;
    if let Some(mt) = &manifest.media_type {
        if mt != OCI_MANIFEST && mt != DOCKER_MANIFEST {
            return Err(bad(format!("has unsupported media type {mt}")));
        }
    }
    // Before anything is downloaded: a layer ocibuild cannot read would be passed on into the
    // image unchecked (and a non-distributable one pushed where it may not go).
    for (i, d) in manifest.layers.iter().enumerate() {
        if let Err(why) = check_layer_media_type(&d.media_type) {
            return Err(bad(format!(
                "layer {} ({}) has media type `{}`: {why}; pick another base image",
                i + 1,
                d.digest,
                crate::bounded::clip(&d.media_type)
            )));
        }
    }
    Ok(manifest)
}

/// The tag of `r` resolved for `platform` (through the index another platform pinned, when
/// there is one), its documents stored, and pinned in `lock`: the manifest's digest and how the
/// lock changed.
fn resolve_tag(
    r: &Reference,
    name: &str,
    platform: &Platform,
    locked: Option<&LockedBase>,
    lock: &mut Lock,
    how: &Resolve<'_>,
) -> Result<(Digest, LockChange), BaseError> {
    let Resolve {
        client,
        store,
        index,
        reporter,
        ..
    } = *how;
    let platform_s = platform.to_string();
    // Through the index another platform pinned (unless the reference names a digest).
    let pinned_index = index.filter(|_| r.digest().is_none());
    let through = match pinned_index {
        Some(ix) => {
            reporter.detail(&format!(
                "base {name}: through the index {ix} another platform pinned"
            ));
            r.with_digest(ix)
        }
        None => r.clone(),
    };
    let (manifest, index) = client
        .get_image_manifest(&through, platform, reporter)
        .map_err(|source| match pinned_index {
            Some(ix) => BaseError::ThroughIndex {
                reference: name.to_string(),
                platform: platform_s.clone(),
                index: ix,
                source: Box::new(source),
            },
            None => source.into(),
        })?;
    store.put_bytes(&manifest.bytes)?;
    if let Some(ix) = &index {
        store.put_bytes(&ix.bytes)?;
    }
    let change = match &locked {
        Some(b) if b.manifest_digest == manifest.digest => LockChange::Unchanged,
        Some(b) => LockChange::Moved {
            from: b.manifest_digest,
            to: manifest.digest,
        },
        None => LockChange::Pinned {
            digest: manifest.digest,
        },
    };
    lock.base = Some(LockedBase {
        reference: name.to_string(),
        platform: platform_s.clone(),
        index_digest: index.map(|i| i.digest),
        manifest_digest: manifest.digest,
    });
    Ok((manifest.digest, change))
}

/// Resolve `reference` for `platform` through `lock`, fetch what the store lacks, and describe it.
/// With `layers` false the layer blobs are not fetched (a shallow base: the build only names
/// them, and a push to the base's registry mounts them); the manifest and config always are.
/// With `index`, a tag the lock does not pin is resolved through that image index (the one
/// another platform of the build pinned) instead of asking the registry for the tag again.
/// Downloads and retries go to `reporter`.
pub fn resolve(
    reference: &str,
    platform: &Platform,
    lock: &mut Lock,
    how: &Resolve<'_>,
) -> Result<(BaseImage, LockChange), BaseError> {
    let Resolve {
        pin,
        client,
        store,
        layers,
        reporter,
        ..
    } = *how;
    let r: Reference = reference.parse().map_err(|source| BaseError::Reference {
        reference: crate::registry::reference::shown(reference),
        source,
    })?;
    let mut name = r.to_string();
    let platform_s = platform.to_string();
    let locked = match pin {
        LockPolicy::Frozen => {
            let b = lock
                .base
                .clone()
                .ok_or_else(|| BaseError::NotLocked { reference: name })?;
            name = b.reference.clone();
            Some(b)
        }
        _ => lock
            .base
            .as_ref()
            .filter(|b| b.reference == name && b.platform == platform_s)
            .cloned(),
    };
    // Frozen: blobs come from where the lock says the base was resolved.
    let r: Reference = if pin == LockPolicy::Frozen {
        name.parse().map_err(|source| BaseError::Reference {
            reference: crate::registry::reference::shown(&name),
            source,
        })?
    } else {
        r
    };
    let offline = client.config().offline;

    let (manifest_digest, change) = match (&locked, pin, r.digest()) {
        (Some(b), LockPolicy::Resolve | LockPolicy::Locked | LockPolicy::Frozen, _) => {
            reporter.detail(&format!(
                "base {name}: the lock's {} for {platform_s}; its tag not resolved again",
                b.manifest_digest
            ));
            (b.manifest_digest, LockChange::Unchanged)
        }
        _ if offline => {
            return Err(BaseError::Offline {
                reference: name,
                what: "is not pinned by the lock (resolving its tag needs the network)".into(),
            })
        }
        _ => resolve_tag(&r, &name, platform, locked.as_ref(), lock, how)?,
    };

    let manifest = checked_manifest(&r, &name, manifest_digest, how)?;
    let bad = |problem: String| BaseError::Bad {
        reference: name.clone(),
        digest: manifest_digest,
        problem,
    };

    let mut blobs = vec![manifest.config.clone()];
    if layers {
        blobs.extend(manifest.layers.iter().cloned());
    } else {
        reporter.detail(&format!(
            "base {name}: its {} layers not downloaded (shallow: nothing is written locally, \
             and the push to the base's registry mounts them)",
            manifest.layers.len()
        ));
    }
    let present = blobs.iter().filter(|d| store.has_blob(&d.digest)).count();
    if present > 0 {
        reporter.detail(&format!(
            "base {name}: {present} of its {} blobs already in the store",
            blobs.len()
        ));
    }
    if offline {
        if let Some(d) = blobs.iter().find(|d| !store.has_blob(&d.digest)) {
            return Err(BaseError::Offline {
                reference: format!("{name}@{manifest_digest}"),
                what: format!("blob {}", d.digest),
            });
        }
    }
    client.pull_blobs(&r, &blobs, store, reporter)?;
    // The sizes of the blobs the store has (also a shallow base's layers it has): from a warm
    // store, no download checked them.
    let mut named = vec![manifest.config.clone()];
    named.extend(manifest.layers.iter().cloned());
    check_sizes(&name, &manifest_digest, &named, store)?;
    check_tocs(&name, &manifest.layers, store)?;

    let config_bytes = store.read_blob(&manifest.config.digest)?;
    let config: serde_json::Value = serde_json::from_slice(&config_bytes)
        .map_err(|e| bad(format!("config is not JSON ({e})")))?;
    let head: ConfigHead = serde_json::from_value(config.clone())
        .map_err(|e| bad(format!("config lacks rootfs.diff_ids ({e})")))?;
    if head.rootfs.diff_ids.len() != manifest.layers.len() {
        return Err(bad(format!(
            "config lists {} diff_ids for {} layers",
            head.rootfs.diff_ids.len(),
            manifest.layers.len()
        )));
    }
    let found = Platform {
        os: head.os.unwrap_or_default(),
        architecture: head.architecture.unwrap_or_default(),
        variant: head.variant,
    };
    if found.os != platform.os || found.architecture != platform.architecture {
        return Err(BaseError::Platform {
            reference: name,
            found: found.to_string(),
            wanted: platform_s,
        });
    }

    let layers = layer_records(&manifest, head.rootfs.diff_ids);
    Ok((
        BaseImage {
            reference: name,
            manifest_digest,
            config,
            layers,
        },
        change,
    ))
}

/// Whether a base's layer of `media_type` may be built on: a tar, plain or compressed with
/// gzip or zstd, as OCI or Docker name it. Refused: any other type (ocibuild could not read
/// it, so it would pass into the image unchecked, and what a client makes of it is unknown),
/// and non-distributable (foreign) layers: ocibuild pushes and mirrors its images' layers,
/// which is what such a layer forbids, and registries need not serve them.
pub fn check_layer_media_type(media_type: &str) -> Result<(), &'static str> {
    match media_type {
        "application/vnd.oci.image.layer.v1.tar"
        | "application/vnd.oci.image.layer.v1.tar+gzip"
        | "application/vnd.oci.image.layer.v1.tar+zstd"
        | "application/vnd.docker.image.rootfs.diff.tar"
        | "application/vnd.docker.image.rootfs.diff.tar.gzip"
        | "application/vnd.docker.image.rootfs.diff.tar.zstd" => Ok(()),
        "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd" => Err(
            "a non-distributable (foreign) layer may not be pushed or mirrored, which is what \
             ocibuild does with a base's layers",
        ),
        _ => Err("not a layer type ocibuild can read (tar, tar+gzip or tar+zstd, OCI or Docker)"),
    }
}

/// The OCI media type of a layer with the same bytes.
pub fn oci_layer_media_type(media_type: &str) -> &str {
    match media_type {
        "application/vnd.docker.image.rootfs.diff.tar.gzip" => {
            "application/vnd.oci.image.layer.v1.tar+gzip"
        }
        "application/vnd.docker.image.rootfs.diff.tar.zstd" => {
            "application/vnd.oci.image.layer.v1.tar+zstd"
        }
        "application/vnd.docker.image.rootfs.diff.tar" => "application/vnd.oci.image.layer.v1.tar",
        "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip" => {
            "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_readable_distributable_layer_types_are_built_on() {
        for ok in [
            "application/vnd.oci.image.layer.v1.tar",
            "application/vnd.oci.image.layer.v1.tar+gzip",
            "application/vnd.oci.image.layer.v1.tar+zstd",
            "application/vnd.docker.image.rootfs.diff.tar.gzip",
        ] {
            assert_eq!(check_layer_media_type(ok), Ok(()), "{ok}");
        }
        for bad in [
            "application/vnd.example.unknown",
            "application/vnd.oci.image.layer.v1.tar+bzip2",
            "application/vnd.oci.image.config.v1+json",
            "",
        ] {
            assert!(check_layer_media_type(bad)
                .unwrap_err()
                .contains("not a layer type"));
        }
        assert!(check_layer_media_type(
            "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
        )
        .unwrap_err()
        .contains("non-distributable"));
    }

    #[test]
    fn docker_layer_types_map_to_oci() {
        assert_eq!(
            oci_layer_media_type("application/vnd.docker.image.rootfs.diff.tar.gzip"),
            "application/vnd.oci.image.layer.v1.tar+gzip"
        );
        assert_eq!(
            oci_layer_media_type("application/vnd.oci.image.layer.v1.tar+zstd"),
            "application/vnd.oci.image.layer.v1.tar+zstd"
        );
    }
}
