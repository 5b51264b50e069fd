//! The documents as other tools wrote them, read leniently: unknown fields ignored, missing
//! ones empty where a reader can do without them. What this builder writes is in the parent
//! module (strict, canonical); what it reads from registries, layouts and archives is here.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Descriptor, Platform};

/// An image manifest as a registry or a layout hands it over, read leniently: what copying,
/// pushing and pulling an image need (its media type when it says one, the config, the
/// layers, the annotations), every other field ignored.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestHead {
    #[serde(default)]
    pub media_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// A manifest or an image index, read leniently, before it is known which it is: an index has
/// `manifests`, a manifest `config` and `layers`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnyManifest {
    #[serde(default)]
    pub media_type: Option<String>,
    #[serde(default)]
    pub config: Option<Descriptor>,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    #[serde(default)]
    pub manifests: Option<Vec<Descriptor>>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// An index (a layout's `index.json`, or a nested one), as read.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ReadIndex {
    #[serde(default)]
    pub manifests: Vec<ReadDescriptor>,
}

impl ReadIndex {
    /// The images' tags (`org.opencontainers.image.ref.name`), in index order: the tags of
    /// signatures and attestations ([`is_attachment_tag`], entries with an `artifactType`) are
    /// not listed.
    pub fn tags(&self) -> Vec<String> {
        self.images()
            .into_iter()
            .filter_map(|m| m.annotations.get(super::annotations::REF_NAME).cloned())
            .collect()
    }

    /// The tags of the images named `name` (containerd's `io.containerd.image.name` is
    /// `name:TAG`, as `build` writes it), in index order: what builds of one recipe left here.
    pub fn tags_of(&self, name: &str) -> Vec<String> {
        self.images()
            .into_iter()
            .filter(|m| {
                m.annotations
                    .get(super::annotations::CONTAINERD_NAME)
                    .and_then(|n| n.strip_prefix(name)?.strip_prefix(':'))
                    .is_some()
            })
            .filter_map(|m| m.annotations.get(super::annotations::REF_NAME).cloned())
            .collect()
    }

    /// The entry tagged `tag`.
    pub fn tagged(&self, tag: &str) -> Option<&ReadDescriptor> {
        self.manifests.iter().find(|m| {
            m.annotations
                .get(super::annotations::REF_NAME)
                .map(String::as_str)
                == Some(tag)
        })
    }

    /// The entries that are images: referrers (SBOMs, provenance, signatures: entries with an
    /// `artifactType`) are not, nor entries under a signature's or the referrers fallback's
    /// tag ([`is_attachment_tag`]) that another tool wrote without one.
    pub fn images(&self) -> Vec<&ReadDescriptor> {
        self.manifests
            .iter()
            .filter(|m| {
                m.artifact_type.is_none()
                    && !m
                        .annotations
                        .get(super::annotations::REF_NAME)
                        .is_some_and(|t| is_attachment_tag(t))
            })
            .collect()
    }
}

/// Whether `tag` names what is attached to an image rather than an image: `sha256-<hex>` (the
/// OCI referrers tag fallback) or that with `.sig`, `.att` or `.sbom` (sigstore's signatures,
/// attestations and SBOMs).
pub fn is_attachment_tag(tag: &str) -> bool {
    let Some(rest) = tag.strip_prefix("sha256-") else {
        return false;
    };
    let hex = [".sig", ".att", ".sbom"]
        .iter()
        .find_map(|s| rest.strip_suffix(s))
        .unwrap_or(rest);
    hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A descriptor of an index or a manifest, as read: the digest is checked when followed.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDescriptor {
    #[serde(default)]
    pub media_type: String,
    pub digest: String,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub platform: Option<Platform>,
    /// Set on referrers (SBOMs, provenance, signatures): entries that are not images.
    #[serde(default)]
    pub artifact_type: Option<String>,
}

/// An image manifest, as read: its config and layers.
#[derive(Clone, Debug, Deserialize)]
pub struct ReadManifest {
    pub config: ReadDescriptor,
    #[serde(default)]
    pub layers: Vec<ReadDescriptor>,
}

/// An image config, as read: what running the image needs of it (the test stage), every
/// other field ignored; a missing field is empty.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ReadConfig {
    #[serde(default)]
    pub architecture: String,
    #[serde(default)]
    pub config: Option<ReadRunConfig>,
}

/// The `config` of a [`ReadConfig`].
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ReadRunConfig {
    #[serde(rename = "Env", default)]
    pub env: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_entries_other_tools_write() {
        // A referrer whose platform names only an os, an entry without size or media type, and
        // fields this reader does not know: all read; only the images count as images.
        let index: ReadIndex = serde_json::from_str(
            r#"{"schemaVersion":2,"x-vendor":{"a":1},"manifests":[
              {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:aa",
               "artifactType":"application/spdx+json","platform":{"os":"linux"}},
              {"digest":"sha256:bb","annotations":{"org.opencontainers.image.ref.name":"v1"}},
              {"digest":"sha256:cc","size":7,"annotations":{"org.opencontainers.image.ref.name":"v2"}}]}"#,
        )
        .unwrap();
        assert_eq!(
            index.manifests[0].platform.as_ref().unwrap().architecture,
            ""
        );
        assert_eq!(index.tags(), ["v1", "v2"]);
        let images: Vec<&str> = index.images().iter().map(|d| d.digest.as_str()).collect();
        assert_eq!(images, ["sha256:bb", "sha256:cc"]);
        assert_eq!(index.tagged("v2").unwrap().size, Some(7));
        assert!(index.tagged("v3").is_none());
    }

    #[test]
    fn signatures_and_attestations_are_not_images() {
        let hex = "ab".repeat(32);
        let index: ReadIndex = serde_json::from_str(&format!(
            r#"{{"manifests":[
              {{"digest":"sha256:aa","annotations":{{"org.opencontainers.image.ref.name":"v1"}}}},
              {{"digest":"sha256:bb","artifactType":"application/vnd.dev.cosign.simplesigning.v1+json",
                "annotations":{{"org.opencontainers.image.ref.name":"sha256-{hex}.sig"}}}},
              {{"digest":"sha256:cc","annotations":{{"org.opencontainers.image.ref.name":"sha256-{hex}"}}}},
              {{"digest":"sha256:dd","annotations":{{"org.opencontainers.image.ref.name":"sha256-{hex}.att"}}}},
              {{"digest":"sha256:ee","annotations":{{"org.opencontainers.image.ref.name":"sha256-latest"}}}}]}}"#
        ))
        .unwrap();
        assert_eq!(index.tags(), ["v1", "sha256-latest"]);
        let images: Vec<&str> = index.images().iter().map(|d| d.digest.as_str()).collect();
        assert_eq!(images, ["sha256:aa", "sha256:ee"]);
        // Asked for by its tag, a signature is still found.
        assert!(index.tagged(&format!("sha256-{hex}.sig")).is_some());
        assert!(is_attachment_tag(&format!("sha256-{hex}.sbom")));
        assert!(!is_attachment_tag(&format!("sha256-{}", "AB".repeat(32))));
    }
}
