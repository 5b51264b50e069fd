//! What a build did, as the `build --json` document (docs/json.md).
//!
//! One [`ManifestOutcome`] per platform, made from the [`Built`] the build returns: the same
//! keys whether the recipe has one platform or several. A one-platform build is an
//! [`ImageOutcome`], the manifest's keys at the top beside the image's name, output and push;
//! a multi-platform build is an [`IndexOutcome`], one manifest per platform under `manifests`
//! beside the index. [`BuildOutcome`] is either.
//!
//! The CLI prints these through a `serde_json::Value`, so the keys come out sorted, as the
//! documents always have.

use serde::Serialize;

use crate::build::Built;
use crate::cache_repo::CacheStats;
use crate::digest::Digest;
use crate::image::Descriptor;
use crate::push::{PushReport, ReferrersReport};
use crate::sign::SignReport;

/// The `build --json` document: one image, or an index of one image per platform.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum BuildOutcome {
    Image(Box<ImageOutcome>),
    Index(Box<IndexOutcome>),
}

/// A one-platform build: the image's manifest and what was done with it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageOutcome {
    /// `NAME:TAG`.
    pub image: String,
    /// The output with its absolute path (`oci:/abs/dir`); `None` with `--push-only`.
    pub output: Option<String>,
    #[serde(flatten)]
    pub manifest: ManifestOutcome,
    /// The push (`push --json`'s document), with `--push`.
    pub push: Option<PushReport>,
    /// The referrers' push, with `--attach` and `--push`.
    pub referrers_push: Option<ReferrersReport>,
    /// The signature, with `--sign-key` and `--push`.
    pub signature: Option<SignReport>,
    /// What the cache repository did; `None` when none is configured.
    pub cache_repo: Option<CacheStats>,
}

/// A multi-platform build: the image index and one manifest per platform.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexOutcome {
    /// `NAME:TAG`.
    pub image: String,
    /// The output with its absolute path; `None` with `--push-only`.
    pub output: Option<String>,
    pub index: Digest,
    pub index_size: u64,
    /// One per platform, in the recipe's order.
    pub manifests: Vec<PlatformManifest>,
    /// The index's push, with `--push`.
    pub push: Option<IndexPush>,
    /// Each platform's referrers' push, with `--attach` and `--push`.
    pub referrers_push: Vec<ReferrersReport>,
    /// The index's signature, then each platform manifest's, with `--sign-key` and `--push`.
    pub signatures: Vec<SignReport>,
    /// What the cache repository did; `None` when none is configured.
    pub cache_repo: Option<CacheStats>,
}

/// One platform's manifest in an [`IndexOutcome`].
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlatformManifest {
    /// `os/arch[/variant]`, from the manifest's descriptor.
    pub platform: Option<String>,
    #[serde(flatten)]
    pub manifest: ManifestOutcome,
}

/// What pushing an index did.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexPush {
    /// `registry/repository:tag@digest`.
    pub pushed: String,
    /// The bytes uploaded for every platform's blobs.
    pub uploaded_bytes: u64,
}

/// One image manifest as built: the same keys for one platform and for each of several.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestOutcome {
    /// The manifest's digest.
    pub manifest: Digest,
    pub manifest_size: u64,
    /// The config's digest.
    pub config: Digest,
    pub layers: Vec<LayerOutcome>,
    /// The target interpreter, with `[python]`.
    pub python: Option<PythonOutcome>,
    /// The SBOMs and provenance attached (`--attach`); empty without.
    pub referrers: Vec<ReferrerOutcome>,
    /// What maintainer scripts would have done and was emulated; `None`: no such step.
    pub rootfs: Option<crate::rootfs::Report>,
    /// `[apt] host-provides`: provided by the host at run time, not in the image.
    pub host_provides: Vec<HostProvidesOutcome>,
    /// The system step's warnings.
    pub warnings: Vec<String>,
    pub wheels: WheelsOutcome,
    /// Each `[[step]]`: cached or run (and for how long), its key and output layer digests.
    pub steps: Vec<crate::steps::StepReport>,
    /// Whether the image has `/bin/sh`, where ocibuild knows its files (on `scratch`, or with
    /// `[apt]`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell: Option<bool>,
    /// With `[image] cuda-archs`: the targets, and each CUDA library of the layers ocibuild
    /// built (the wheels') with the bytes pruning removed, or why it was left as it is;
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda: Option<crate::cuda::CudaReport>,
}

impl ManifestOutcome {
    /// The outcome of `built`, with the descriptors of the referrers attached to it.
    pub fn new<'a>(built: &Built, referrers: impl IntoIterator<Item = &'a Descriptor>) -> Self {
        let img = &built.image;
        let wheels = &built.wheels;
        ManifestOutcome {
            manifest: img.manifest.digest,
            manifest_size: img.manifest.size,
            config: img.config.digest,
            layers: img
                .layers
                .iter()
                .zip(&built.cached)
                .map(|(l, (name, cached))| LayerOutcome {
                    name: name.clone(),
                    media_type: l.descriptor.media_type.clone(),
                    digest: l.descriptor.digest,
                    size: l.descriptor.size,
                    diff_id: l.diff_id,
                    uncompressed_size: l.uncompressed_size,
                    cached: *cached,
                })
                .collect(),
            python: built.interpreter.as_ref().map(|i| PythonOutcome {
                version: i.version.to_string(),
                abi: i.abi(),
                executable: i.executable.clone(),
                machine: i.machine.clone(),
                glibc: i.glibc.map(|(a, b)| format!("{a}.{b}")),
                purelib: i.scheme.purelib.clone(),
                platlib: i.scheme.platlib.clone(),
                scripts: i.scheme.scripts.clone(),
            }),
            referrers: referrers
                .into_iter()
                .map(|d| ReferrerOutcome {
                    artifact_type: d.artifact_type.clone(),
                    digest: d.digest,
                    size: d.size,
                })
                .collect(),
            rootfs: built.rootfs.clone(),
            host_provides: built
                .host_provides
                .iter()
                .map(|h| HostProvidesOutcome {
                    name: h.name.clone(),
                    satisfies: h.satisfies.clone(),
                })
                .collect(),
            warnings: built.warnings.clone(),
            shell: built.shell,
            wheels: WheelsOutcome {
                shared_files: wheels
                    .shared
                    .iter()
                    .map(|(p, ws)| SharedFile {
                        path: p.clone(),
                        wheels: ws.clone(),
                    })
                    .collect(),
                replaced_files: wheels
                    .replaced
                    .iter()
                    .map(|(p, (w, others))| ReplacedFile {
                        path: p.clone(),
                        installed_by: w.clone(),
                        left_out_by: others.clone(),
                    })
                    .collect(),
                duplicate_libraries: wheels.duplicate_libraries.clone(),
            },
            steps: built.steps.clone(),
            cuda: wheels.cuda.clone(),
        }
    }
}

/// One layer of the manifest, in order.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerOutcome {
    pub name: String,
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
    pub diff_id: Digest,
    /// Known for the layers ocibuild built; `None` for base layers.
    pub uncompressed_size: Option<u64>,
    /// Taken from the layer cache.
    pub cached: bool,
}

/// The target interpreter.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PythonOutcome {
    pub version: String,
    pub abi: String,
    pub executable: String,
    pub machine: String,
    /// `MAJOR.MINOR`; `None` when the image has no glibc.
    pub glibc: Option<String>,
    pub purelib: String,
    pub platlib: String,
    pub scripts: String,
}

/// One referrer (an SBOM or the provenance) of the manifest.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReferrerOutcome {
    pub artifact_type: Option<String>,
    pub digest: Digest,
    pub size: u64,
}

/// One `[apt] host-provides` name and what it satisfied.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostProvidesOutcome {
    pub name: String,
    pub satisfies: Vec<String>,
}

/// What the wheel step found (reported; nothing is changed).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WheelsOutcome {
    pub shared_files: Vec<SharedFile>,
    pub replaced_files: Vec<ReplacedFile>,
    /// `None`: the base's layers were never downloaded (a shallow base).
    pub duplicate_libraries: Option<Vec<crate::system::wheelset::DuplicateLibrary>>,
}

/// A path several wheels install with the same bytes and mode.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SharedFile {
    pub path: String,
    pub wheels: Vec<String>,
}

/// A path whose content differed between wheels, settled by `overlap = "last"`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplacedFile {
    pub path: String,
    pub installed_by: String,
    pub left_out_by: Vec<String>,
}
