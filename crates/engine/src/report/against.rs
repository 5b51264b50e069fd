//! `report --against OLD` and the package summary of `diff`: what changed from an earlier
//! image, in the order a reviewer reads it: packages added, removed and changed (with their
//! versions), then the files that changed (small text files as unified diffs, from
//! [`crate::audit::diff`]), then what a pull of the new image fetches when the old one is
//! already there (the layers whose blobs it does not have, and the config).

use std::collections::BTreeSet;

use serde::Serialize;

use super::model::{GroupKind, ImageReport, Package};
use super::ReportError;
use crate::audit::diff::{self, Change, DiffOptions, DiffReport};
use crate::audit::packages::{package_changes, InstalledPackage, PackageChange};
use crate::audit::{AuditError, Image};

/// The most changed files listed per image; the rest are counted.
pub const MAX_FILE_CHANGES: usize = 200;

/// A comparison with an earlier image, per platform of the new one.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Against {
    /// The earlier image, as named.
    pub source: String,
    pub images: Vec<AgainstImage>,
}

/// One platform of the new image against the same platform of the old.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgainstImage {
    pub platform: String,
    /// The old image's manifest digest (none for a docker-archive).
    pub old_manifest: Option<String>,
    /// `identical`, `equivalent` or `different` (as `diff` says).
    pub result: diff::Outcome,
    pub packages: Vec<PackageChange>,
    /// Added, removed and changed files by layer position, at most [`MAX_FILE_CHANGES`].
    pub files: Vec<FileChange>,
    pub files_left_out: usize,
    pub pull: Pull,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// The layer position (1-based) the change is in.
    pub layer: usize,
    pub path: String,
    pub change: Change,
    /// Size in the new image's layer (added, changed) or the old one's (removed).
    pub size: Option<u64>,
    /// What differs, `attribute a → b` (changed files).
    pub attributes: Vec<String>,
    /// A small text file's change as a unified diff.
    pub text: Option<String>,
}

/// What a pull of the new image fetches with the old one already present.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pull {
    /// Layers whose blobs the old image lacks, and their compressed bytes.
    pub layers_fetched: usize,
    pub bytes_fetched: u64,
    /// Layers the old image already has (same blob digest), and their bytes.
    pub layers_reused: usize,
    pub bytes_reused: u64,
    /// The new config's bytes (always fetched unless it is the same config).
    pub config_bytes: u64,
    /// A layer whose compressed size the source does not say (a docker-archive).
    pub sizes_unknown: bool,
}

/// The packages of a report, as the comparison takes them.
pub fn installed(packages: &[Package]) -> Vec<InstalledPackage> {
    packages
        .iter()
        .filter_map(|p| {
            Some(InstalledPackage {
                kind: match p.kind {
                    GroupKind::Deb => "deb",
                    GroupKind::Wheel => "wheel",
                    GroupKind::Dir => return None,
                },
                name: p.name.clone(),
                version: p.version.clone(),
                architecture: p.architecture.clone(),
            })
        })
        .collect()
}

/// The files that changed, layer by layer, from a `diff` report: at most `max`, and how many
/// were left out.
pub fn file_changes(report: &DiffReport, max: usize) -> (Vec<FileChange>, usize) {
    let mut out = Vec::new();
    let mut left_out = 0;
    for l in &report.layers {
        for f in &l.files {
            if out.len() >= max {
                left_out += 1;
                continue;
            }
            out.push(FileChange {
                layer: l.index,
                path: f.path.clone(),
                change: f.change,
                size: f.entry.as_ref().map(|e| e.size),
                attributes: f
                    .attributes
                    .iter()
                    .map(|a| format!("{} {} → {}", a.attribute, a.a, a.b))
                    .collect(),
                text: f.text.clone(),
            });
        }
    }
    (out, left_out)
}

/// What a pull of `new` fetches when `old`'s blobs are present: the layers by blob digest.
pub fn pull_cost(old: &ImageReport, new: &ImageReport, new_config_bytes: u64) -> Pull {
    let have: BTreeSet<&str> = old
        .layers
        .iter()
        .filter_map(|l| l.digest.as_deref())
        .collect();
    let mut pull = Pull {
        config_bytes: if old.config == new.config {
            0
        } else {
            new_config_bytes
        },
        ..Pull::default()
    };
    for l in &new.layers {
        let size = l.compressed.unwrap_or_else(|| {
            pull.sizes_unknown = true;
            l.uncompressed
        });
        match l.digest.as_deref() {
            Some(d) if have.contains(d) => {
                pull.layers_reused += 1;
                pull.bytes_reused += size;
            }
            _ => {
                pull.layers_fetched += 1;
                pull.bytes_fetched += size;
            }
        }
    }
    pull
}

/// `new` (with its report) against the image `old` names, at the same platform when `new` is
/// one platform of an index (`opts.platform`): the old image opened, reported on and compared.
pub fn compare_with(
    old: &crate::imageref::ImageRef,
    new: &Image<'_>,
    new_report: &ImageReport,
    opts: crate::audit::OpenOptions<'_>,
) -> Result<AgainstImage, ReportError> {
    let old_image = crate::audit::open(old, opts).map_err(|e| ReportError::Compare(Box::new(e)))?;
    let old_report = super::analyze(&old_image, &super::Options::default())?;
    compare(&Pair {
        old: &old_image,
        old_report: &old_report,
        new,
        new_report,
    })
}

/// The packages added, removed and changed from image `a` to image `b` (every layer of both
/// read for their dpkg status and dist-info METADATA): `diff`'s summary.
pub fn package_diff(a: &Image<'_>, b: &Image<'_>) -> Result<Vec<PackageChange>, ReportError> {
    let (pa, pb) = (super::packages_of(a)?, super::packages_of(b)?);
    Ok(package_changes(&installed(&pa), &installed(&pb)))
}

/// The images compared: the new one and its report, the old one and its report.
pub struct Pair<'a, 'c> {
    pub old: &'a Image<'c>,
    pub old_report: &'a ImageReport,
    pub new: &'a Image<'c>,
    pub new_report: &'a ImageReport,
}

/// The comparison of one platform: packages from the two reports, files from `diff`.
pub fn compare(pair: &Pair<'_, '_>) -> Result<AgainstImage, ReportError> {
    let report = diff::diff(pair.old, pair.new, DiffOptions::default())
        .map_err(|e: AuditError| ReportError::Compare(Box::new(e)))?;
    let (files, files_left_out) = file_changes(&report, MAX_FILE_CHANGES);
    Ok(AgainstImage {
        platform: pair.new_report.platform.clone(),
        old_manifest: pair.old_report.manifest.clone(),
        result: report.result,
        packages: package_changes(
            &installed(&pair.old_report.packages),
            &installed(&pair.new_report.packages),
        ),
        files,
        files_left_out,
        pull: pull_cost(
            pair.old_report,
            pair.new_report,
            pair.new.config().bytes.len() as u64,
        ),
    })
}
