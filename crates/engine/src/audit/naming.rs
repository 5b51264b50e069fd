//! What an attached document is called, for a person: from its artifact type and, for a
//! signed attestation, its statement's predicate type.

use super::{provenance, sbom};
use crate::sign::payload::{DSSE_MEDIA_TYPE, VSA_V1};

/// What an attached document is, for a person, from its artifact type and, for a signed
/// attestation (a DSSE envelope), its statement's predicate type: `SPDX SBOM`,
/// `CycloneDX SBOM`, `SLSA provenance`, `SPDX SBOM, signed attestation`,
/// `SLSA verification summary, signed attestation`; another type named as it is.
pub fn document_name(artifact_type: Option<&str>, predicate_type: Option<&str>) -> String {
    let dsse = DSSE_MEDIA_TYPE;
    let of_predicate = |p: &str| match p {
        "https://spdx.dev/Document" => Some("SPDX SBOM"),
        "https://cyclonedx.org/bom" => Some("CycloneDX SBOM"),
        p if p == provenance::PREDICATE_TYPE || p.starts_with("https://slsa.dev/provenance/") => {
            Some("SLSA provenance")
        }
        p if p == VSA_V1 => Some("SLSA verification summary"),
        _ => None,
    };
    match artifact_type {
        Some(t) if t == sbom::SPDX_MEDIA_TYPE => "SPDX SBOM".into(),
        Some(t) if t == sbom::CYCLONEDX_MEDIA_TYPE => "CycloneDX SBOM".into(),
        Some(t) if t == provenance::MEDIA_TYPE => "SLSA provenance".into(),
        Some(t) if t == dsse => match predicate_type {
            Some(p) => match of_predicate(p) {
                Some(name) => format!("{name}, signed attestation"),
                None => format!("signed attestation of {p}"),
            },
            None => "signed attestation".into(),
        },
        Some(t) => format!("artifact type {t}"),
        None => "no artifact type".into(),
    }
}
