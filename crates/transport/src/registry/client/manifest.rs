//! Manifests: fetching (mirrors, size limit, digest verification), media types, and platform
//! selection in an image index.

use std::io::Read;

use reqwest::{Method, StatusCode};

use super::{header_str, Client, Endpoint, Reporter, Request, Silent};
use super::{Digests, RegistryError};
use crate::digest::Digest;
use crate::image::{Descriptor, Platform, MEDIA_TYPE_INDEX, MEDIA_TYPE_MANIFEST};
use crate::registry::auth::Scopes;
use crate::registry::reference::Reference;

pub const MEDIA_TYPE_DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const MEDIA_TYPE_DOCKER_LIST: &str = crate::image::DOCKER_LIST;
/// The manifest media types ocibuild reads, all sent in `Accept`.
pub const MANIFEST_MEDIA_TYPES: [&str; 4] = [
    MEDIA_TYPE_INDEX,
    MEDIA_TYPE_MANIFEST,
    MEDIA_TYPE_DOCKER_LIST,
    MEDIA_TYPE_DOCKER_MANIFEST,
];

/// A manifest (or index) as the registry served it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchedManifest {
    pub bytes: Vec<u8>,
    pub media_type: String,
    pub digest: Digest,
}

impl FetchedManifest {
    pub fn is_index(&self) -> bool {
        self.media_type == MEDIA_TYPE_INDEX || self.media_type == MEDIA_TYPE_DOCKER_LIST
    }
}

impl Client {
    /// Fetch the manifest or index `reference` names, trying mirrors first. Verified against the
    /// reference's digest (if any) and the registry's `Docker-Content-Digest` (if sent).
    pub fn get_manifest(&self, reference: &Reference) -> Result<FetchedManifest, RegistryError> {
        self.get_manifest_with(reference, &Silent)
    }

    pub fn get_manifest_with(
        &self,
        reference: &Reference,
        progress: &dyn Reporter,
    ) -> Result<FetchedManifest, RegistryError> {
        self.try_endpoints(reference, progress, |ep| {
            self.get_manifest_from(ep, reference, progress)
        })
    }

    fn get_manifest_from(
        &self,
        ep: &Endpoint,
        reference: &Reference,
        progress: &dyn Reporter,
    ) -> Result<FetchedManifest, RegistryError> {
        let mref = reference.manifest_reference();
        let action = format!("GET manifest {mref}");
        let req = Request::new(
            Method::GET,
            ep.url(&format!("manifests/{mref}")),
            action.clone(),
            Scopes::repository(&ep.repository, &["pull"]),
        )
        .header("Accept", MANIFEST_MEDIA_TYPES.join(", "));
        let resp = self.send(ep, &req, progress)?;
        let status = resp.status();
        if status == StatusCode::NOT_FOUND {
            return Err(RegistryError::ManifestUnknown {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                reference: mref,
                status: status.as_u16(),
                detail: self.read_error_detail(ep, resp),
            });
        }
        if !status.is_success() {
            return Err(self.status_error(ep, &action, resp));
        }
        let limit = self.config.max_manifest_bytes;
        let too_large = |size| RegistryError::ManifestTooLarge {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            reference: mref.clone(),
            limit,
            size,
        };
        if let Some(len) = resp.content_length().filter(|l| *l > limit) {
            return Err(too_large(Some(len)));
        }
        let content_type = header_str(resp.headers(), "content-type")
            .map(|s| s.split(';').next().unwrap_or("").trim().to_string());
        let claimed = header_str(resp.headers(), "docker-content-digest");
        let mut bytes = Vec::new();
        resp.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| RegistryError::Transport {
                registry: ep.registry.clone(),
                repository: ep.repository.clone(),
                action: action.clone(),
                attempts: 1,
                message: e.to_string(),
                hint: self.transport_hint(ep, crate::http::peers::classify(&e)),
            })?;
        if bytes.len() as u64 > limit {
            return Err(too_large(None));
        }
        let digest = Digest::of(&bytes);
        let mismatch = |expected| RegistryError::DigestMismatch {
            registry: ep.registry.clone(),
            repository: ep.repository.clone(),
            what: format!("manifest `{mref}`"),
            digests: Box::new(Digests {
                expected,
                found: digest,
            }),
        };
        if let Some(expected) = reference.digest() {
            if expected != digest {
                return Err(mismatch(expected));
            }
        } else if let Some(claimed) = claimed.and_then(|c| c.parse::<Digest>().ok()) {
            if claimed != digest {
                return Err(mismatch(claimed));
            }
        }
        let media_type =
            manifest_media_type(content_type.as_deref(), &bytes).map_err(|problem| {
                RegistryError::BadManifest {
                    registry: ep.registry.clone(),
                    repository: ep.repository.clone(),
                    reference: mref.clone(),
                    problem,
                }
            })?;
        Ok(FetchedManifest {
            bytes,
            media_type,
            digest,
        })
    }

    /// The image manifest of `reference` for `platform`: the manifest itself when the reference
    /// names one, else the index's entry for the platform (fetched by digest and verified).
    /// Returns the index too, when there was one.
    pub fn get_image_manifest(
        &self,
        reference: &Reference,
        platform: &Platform,
        progress: &dyn Reporter,
    ) -> Result<(FetchedManifest, Option<FetchedManifest>), RegistryError> {
        let top = self.get_manifest_with(reference, progress)?;
        if !top.is_index() {
            return Ok((top, None));
        }
        let desc = select_platform(reference, &top.bytes, platform)?;
        let child = self.get_manifest_with(&reference.with_digest(desc.digest), progress)?;
        if child.bytes.len() as u64 != desc.size {
            return Err(RegistryError::BadManifest {
                registry: reference.registry().to_string(),
                repository: reference.repository().to_string(),
                reference: desc.digest.to_string(),
                problem: format!(
                    "is {} bytes, the index says {}",
                    child.bytes.len(),
                    desc.size
                ),
            });
        }
        Ok((child, Some(top)))
    }
}

// ---------------------------------------------------------------------------------------------
// Platform selection

fn platform_string(p: &Platform) -> String {
    match &p.variant {
        Some(v) => format!("{}/{}/{v}", p.os, p.architecture),
        None => format!("{}/{}", p.os, p.architecture),
    }
}

/// The descriptor in an image index (OCI index or Docker manifest list) for `platform`
/// (os, architecture, variant; `arm64` = `arm64/v8`, `arm` = `arm/v7`). Attestation entries
/// (`unknown/unknown`, or annotated as attestation manifests) are skipped.
pub fn select_platform(
    reference: &Reference,
    index: &[u8],
    platform: &Platform,
) -> Result<Descriptor, RegistryError> {
    #[derive(serde::Deserialize)]
    struct AnyIndex {
        #[serde(default)]
        manifests: Option<Vec<Descriptor>>,
    }
    let bad = |problem: String| RegistryError::BadManifest {
        registry: reference.registry().to_string(),
        repository: reference.repository().to_string(),
        reference: reference.manifest_reference(),
        problem,
    };
    let parsed: AnyIndex = serde_json::from_slice(index)
        .map_err(|e| bad(format!("is not a valid image index ({e})")))?;
    let manifests = parsed
        .manifests
        .ok_or_else(|| bad("is not an image index (no `manifests`)".into()))?;
    let mut available = Vec::new();
    for d in manifests {
        let Some(p) = &d.platform else { continue };
        let attestation = p.is_unknown()
            || d.annotations
                .get("vnd.docker.reference.type")
                .map(String::as_str)
                == Some("attestation-manifest");
        if attestation {
            continue;
        }
        if p.matches(platform) {
            return Ok(d);
        }
        available.push(platform_string(p));
    }
    Err(RegistryError::NoPlatform {
        registry: reference.registry().to_string(),
        repository: reference.repository().to_string(),
        reference: reference.manifest_reference(),
        wanted: platform_string(platform),
        available: if available.is_empty() {
            "no platforms".into()
        } else {
            available.join(", ")
        },
    })
}

fn manifest_media_type(content_type: Option<&str>, bytes: &[u8]) -> Result<String, String> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default, rename = "mediaType")]
        media_type: Option<String>,
        #[serde(default, rename = "schemaVersion")]
        schema_version: Option<u32>,
        #[serde(default)]
        manifests: Option<serde_json::Value>,
    }
    let probe: Probe = serde_json::from_slice(bytes)
        .map_err(|e| format!("is not JSON ({e}); the registry served something else"))?;
    if probe.schema_version == Some(1) {
        return Err("is a Docker schema 1 manifest, which ocibuild does not read; use an image pushed in the v2 or OCI format".into());
    }
    let from_header = content_type.filter(|c| MANIFEST_MEDIA_TYPES.contains(c));
    let mt = match (from_header, probe.media_type) {
        (Some(h), _) => h.to_string(),
        (None, Some(m)) if MANIFEST_MEDIA_TYPES.contains(&m.as_str()) => m,
        (None, Some(m)) => return Err(format!("has the unsupported media type `{m}`")),
        (None, None) if probe.manifests.is_some() => MEDIA_TYPE_INDEX.to_string(),
        (None, None) => MEDIA_TYPE_MANIFEST.to_string(),
    };
    Ok(mt)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Reference {
        Reference::parse(s).unwrap()
    }

    fn plat(os: &str, arch: &str, variant: Option<&str>) -> Platform {
        Platform {
            os: os.into(),
            architecture: arch.into(),
            variant: variant.map(String::from),
        }
    }

    fn index_json() -> Vec<u8> {
        let d = |s: &str| Digest::of(s.as_bytes()).to_string();
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MEDIA_TYPE_INDEX,
            "manifests": [
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("att"), "size": 1,
                 "platform": {"os": "unknown", "architecture": "unknown"},
                 "annotations": {"vnd.docker.reference.type": "attestation-manifest"}},
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("amd64"), "size": 2,
                 "platform": {"os": "linux", "architecture": "amd64"}},
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("arm64"), "size": 3,
                 "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("armv6"), "size": 4,
                 "platform": {"os": "linux", "architecture": "arm", "variant": "v6"}},
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("armv7"), "size": 5,
                 "platform": {"os": "linux", "architecture": "arm", "variant": "v7"}},
                {"mediaType": MEDIA_TYPE_MANIFEST, "digest": d("win"), "size": 6,
                 "platform": {"os": "windows", "architecture": "amd64", "os.version": "10.0"}},
            ]
        }))
        .unwrap()
    }

    #[test]
    fn platform_selection() {
        let idx = index_json();
        let rf = r("docker.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04");
        let pick = |p: Platform| select_platform(&rf, &idx, &p).map(|d| d.size);
        assert_eq!(pick(plat("linux", "amd64", None)).unwrap(), 2);
        assert_eq!(pick(plat("linux", "arm64", None)).unwrap(), 3);
        assert_eq!(pick(plat("linux", "arm64", Some("v8"))).unwrap(), 3);
        assert_eq!(pick(plat("linux", "arm", None)).unwrap(), 5);
        assert_eq!(pick(plat("linux", "arm", Some("v6"))).unwrap(), 4);
        assert_eq!(pick(plat("windows", "amd64", None)).unwrap(), 6);
        let e = pick(plat("linux", "ppc64le", None))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("docker.io/nvidia/cuda")
                && e.contains("linux/ppc64le")
                && e.contains(
                    "linux/amd64, linux/arm64/v8, linux/arm/v6, linux/arm/v7, windows/amd64"
                )
                && !e.contains("unknown"),
            "{e}"
        );
        let e = select_platform(&rf, b"{}", &plat("linux", "amd64", None))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not an image index"), "{e}");
        let e = select_platform(&rf, b"nope", &plat("linux", "amd64", None))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a valid image index"), "{e}");
    }

    #[test]
    fn media_types() {
        let mt = |ct: Option<&str>, body: &str| manifest_media_type(ct, body.as_bytes());
        assert_eq!(mt(Some(MEDIA_TYPE_INDEX), "{}").unwrap(), MEDIA_TYPE_INDEX);
        assert_eq!(
            mt(
                Some("application/json"),
                &format!(r#"{{"mediaType":"{MEDIA_TYPE_DOCKER_LIST}"}}"#)
            )
            .unwrap(),
            MEDIA_TYPE_DOCKER_LIST
        );
        assert_eq!(mt(None, r#"{"manifests":[]}"#).unwrap(), MEDIA_TYPE_INDEX);
        assert_eq!(mt(None, r#"{"layers":[]}"#).unwrap(), MEDIA_TYPE_MANIFEST);
        assert!(mt(None, r#"{"schemaVersion":1}"#)
            .unwrap_err()
            .contains("schema 1"));
        assert!(mt(None, r#"{"mediaType":"x/y"}"#)
            .unwrap_err()
            .contains("x/y"));
        assert!(mt(None, "<html>").unwrap_err().contains("not JSON"));
    }
}
