//! `ocibuild report`: what an image is made of, as a document (`--json`) and a self-contained
//! HTML page.
//!
//! - [`model`]: the report (schema `ocibuild-report/1`), capped lists and all;
//! - [`scan`]: one pass over a layer tar (entries, content digests, the records it reads);
//! - [`dive`]: wasted bytes and the efficiency score, exactly as dive computes them;
//! - [`analysis`]: origins, the filesystem as run, groups by package / wheel / directory,
//!   identical content at different paths, installed packages;
//! - [`trust`]: provenance and the signature and attestation grid (as `verify-signature`);
//! - [`html`]: the page;
//! - [`against`]: the comparison with an earlier image (`--against`), and `diff`'s package
//!   summary.
//!
//! Nothing here prints. Images are opened by [`crate::audit::source`].

pub mod against;
pub mod analysis;
pub mod dive;
pub mod html;
pub mod html_against;
pub mod html_text;
pub mod html_trust;
pub mod model;
pub mod scan;
pub mod trust;

use crate::audit::{AuditError, Image};
use crate::lock::Lock;

pub use model::{Against, ImageReport, Report, SCHEMA};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{source_name}: cannot open layer {layer} ({digest})")]
    Open {
        source_name: String,
        layer: usize,
        digest: String,
        source: Box<AuditError>,
    },
    #[error("{source_name}: cannot read layer {layer} ({digest})")]
    Read {
        source_name: String,
        layer: usize,
        digest: String,
        source: std::io::Error,
    },
    #[error("comparing with the earlier image")]
    Compare(#[source] Box<AuditError>),
    #[error(transparent)]
    Json(#[from] crate::json::JsonError),
}

/// What the report may know besides the image.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options<'a> {
    /// The recipe's `[python] max-layer-size`, when the report was asked of a recipe.
    pub max_wheel_layer_size: Option<u64>,
    /// The recipe's lock: packages get their source URL and sha256 from it.
    pub lock: Option<&'a Lock>,
    /// The recipe's `[[step]]` names: their layers' origin is `steps`.
    pub steps: &'a [String],
    /// The SBOM's facts for the lock's .debs and wheels (by sha256), when a lock is given.
    pub licences: Option<&'a crate::audit::license::Licenses>,
}

fn platform_of(config: &serde_json::Value) -> String {
    let s = |k: &str| config.get(k).and_then(|v| v.as_str()).unwrap_or("");
    let mut p = format!("{}/{}", s("os"), s("architecture"));
    if !s("variant").is_empty() {
        p.push('/');
        p.push_str(s("variant"));
    }
    p
}

/// One scan per layer of `image`, bottom first.
fn scan_all(image: &Image<'_>) -> Result<Vec<scan::LayerScan>, ReportError> {
    let mut scans = Vec::with_capacity(image.layers().len());
    for i in 0..image.layers().len() {
        let reader = image.open_layer(i).map_err(|source| ReportError::Open {
            source_name: image.name().to_string(),
            layer: i + 1,
            digest: image.layer_label(i),
            source: Box::new(source.into()),
        })?;
        let scan = scan::scan_layer(reader).map_err(|source| ReportError::Read {
            source_name: image.name().to_string(),
            layer: i + 1,
            digest: image.layer_label(i),
            source,
        })?;
        scans.push(scan);
    }
    Ok(scans)
}

/// The packages installed in `image` as run (dpkg status, dist-info METADATA): what `diff`
/// compares first.
pub fn packages_of(image: &Image<'_>) -> Result<Vec<model::Package>, ReportError> {
    let scans = scan_all(image)?;
    Ok(analysis::packages(&scans, &analysis::merge(&scans)).0)
}

/// Read every layer of `image` and describe it.
pub fn analyze(image: &Image<'_>, opts: &Options<'_>) -> Result<ImageReport, ReportError> {
    let scans = scan_all(image)?;
    let merged = analysis::merge(&scans);
    let owners = analysis::owners(&scans, &merged);
    let first_named = image.layers().iter().position(|l| l.name.is_some());
    let mut missing = Vec::new();
    if first_named.is_none() {
        missing.push(
            "ocibuild annotations: no layer has a dev.ocibuild.layer annotation (origins unknown)"
                .to_string(),
        );
    }
    let layers: Vec<model::LayerReport> = image
        .layers()
        .iter()
        .zip(&scans)
        .enumerate()
        .map(|(i, (l, scan))| {
            let facts = analysis::LayerFacts {
                position: i + 1,
                digest: l.digest.map(|d| d.to_string()),
                diff_id: l.diff_id.map(|d| d.to_string()),
                name: l.name.clone(),
                origin: analysis::origin_of(
                    l.name.as_deref(),
                    first_named.is_some_and(|f| i < f),
                    opts.steps,
                ),
                compressed: l.size,
                shadowed_bytes: merged.shadowed[i],
            };
            analysis::layer_report(facts, scan, &owners)
        })
        .collect();
    let not_kept: u64 = scans.iter().map(|s| s.not_kept).sum();
    if not_kept > 0 {
        missing.push(format!(
            "records: {not_kept} dpkg or dist-info files too large to read (their packages and \
             files are not attributed)"
        ));
    }
    let (mut packages, dpkg) = analysis::packages(&scans, &merged);
    if !dpkg {
        missing.push("dpkg status: none in the image (no Debian packages listed)".to_string());
    }
    match opts.lock {
        Some(lock) => enrich(&mut packages, lock, opts.licences),
        None => missing.push(
            "lock: none given (packages read from the image: no source URL or sha256)".to_string(),
        ),
    }
    let regular = merged.files.values().filter(|p| p.kind == scan::Kind::File);
    let totals = model::Totals {
        layers: layers.len(),
        compressed: layers.iter().map(|l| l.compressed).sum(),
        uncompressed: layers.iter().map(|l| l.uncompressed).sum(),
        files: regular.clone().count() as u64,
        file_bytes: regular.map(|p| p.size).sum(),
    };
    let cap = opts
        .max_wheel_layer_size
        .unwrap_or(crate::recipe::DEFAULT_MAX_LAYER_SIZE);
    let guardrails = model::Guardrails {
        layer_count: layers.len(),
        max_layers: crate::image::MAX_LAYERS,
        max_wheel_layer_size: cap,
        max_wheel_layer_size_from: if opts.max_wheel_layer_size.is_some() {
            "recipe"
        } else {
            "default"
        }
        .to_string(),
        layers_over_cap: layers
            .iter()
            .filter(|l| l.origin == model::Origin::Wheels && l.compressed.is_some_and(|c| c > cap))
            .map(|l| l.position)
            .collect(),
    };
    Ok(ImageReport {
        platform: platform_of(&image.config().json),
        manifest: image.manifest().map(|m| m.digest.to_string()),
        config: image.config().digest.to_string(),
        totals,
        guardrails,
        layers,
        efficiency: dive::efficiency(&scans),
        duplicates: analysis::duplicates(&scans),
        packages,
        missing,
    })
}

/// Source URLs and sha256s from the lock, for the packages it locked.
fn enrich(
    packages: &mut [model::Package],
    lock: &Lock,
    licences: Option<&crate::audit::license::Licenses>,
) {
    for p in packages.iter_mut() {
        match p.kind {
            model::GroupKind::Wheel => {
                if let Some(w) = lock
                    .wheels
                    .iter()
                    .find(|w| w.name == p.name && Some(&w.version) == p.version.as_ref())
                {
                    p.source_url = Some(w.url.clone());
                    p.sha256 = Some(w.sha256.to_string());
                    p.from = "image+lock";
                    sbom_licence(p, licences, &w.sha256);
                }
            }
            model::GroupKind::Deb => {
                let Some(apt) = &lock.apt else { continue };
                if let Some(d) = apt.packages.iter().find(|d| {
                    d.name == p.name
                        && Some(&d.version) == p.version.as_ref()
                        && Some(&d.architecture) == p.architecture.as_ref()
                }) {
                    p.source_url = Some(format!(
                        "{}/{}",
                        d.source_url.trim_end_matches('/'),
                        d.filename.trim_start_matches('/')
                    ));
                    p.sha256 = Some(d.sha256.to_string());
                    p.from = "image+lock";
                    sbom_licence(p, licences, &d.sha256);
                }
            }
            model::GroupKind::Dir => {}
        }
    }
}

/// A locked package's licence as the SBOM states it (the archive's own files), when known.
fn sbom_licence(
    p: &mut model::Package,
    licences: Option<&crate::audit::license::Licenses>,
    sha256: &crate::digest::Digest,
) {
    if let Some(l) = licences.and_then(|l| l.get(sha256)) {
        p.licence_spdx = Some(l.to_string());
    }
}

/// The report as canonical JSON.
pub fn to_json(report: &Report) -> Result<Vec<u8>, ReportError> {
    Ok(crate::json::to_canonical_vec("report", report)?)
}
