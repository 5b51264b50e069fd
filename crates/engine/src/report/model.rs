//! What `ocibuild report` says about an image: the document `--json` prints (schema
//! `ocibuild-report/1`) and the HTML page is drawn from. Every number of the page is one of
//! these fields. Lists that grow with the image (files, groups, duplicate sets) are capped, and
//! what is left out is summarised, so that the document stays small for a 4 GB image.

use serde::Serialize;

pub use super::against::Against;

/// The schema name written in every report.
pub const SCHEMA: &str = "ocibuild-report/1";

/// The most groups listed per layer; the rest are summarised.
pub const MAX_GROUPS: usize = 50;
/// The most files listed per layer (the largest); the rest are summarised.
pub const MAX_FILES: usize = 50;
/// The most paths listed for dive's inefficiencies and for duplicate content.
pub const MAX_LISTED: usize = 100;

/// A report: one entry per image (one per platform of an index).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema: &'static str,
    /// The image as named on the command line.
    pub source: String,
    pub images: Vec<ImageReport>,
    /// What the report could not look at, in words (no lock, no signatures examined, …).
    pub missing: Vec<String>,
    /// A comparison with an earlier image (`--against`), when asked for.
    pub against: Option<Against>,
    /// Provenance, signatures and attestations ([`super::trust`]).
    pub trust: Option<super::trust::Trust>,
    /// `--verify`: the rebuild compared with the image ([`super::trust::Rebuild`]).
    pub verify: Option<super::trust::Rebuild>,
}

/// One image (one platform).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageReport {
    /// `os/arch[/variant]` from the config.
    pub platform: String,
    /// The manifest's digest (none for a docker-archive).
    pub manifest: Option<String>,
    pub config: String,
    pub totals: Totals,
    pub guardrails: Guardrails,
    /// Bottom layer first.
    pub layers: Vec<LayerReport>,
    /// Computed exactly as dive computes it.
    pub efficiency: Efficiency,
    /// The same bytes at different paths (which dive cannot see).
    pub duplicates: Duplicates,
    pub packages: Vec<Package>,
    /// What is missing from this image (no dpkg status, no ocibuild annotations, …).
    pub missing: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub layers: usize,
    /// The layer blobs' sizes (as stored; none when a source does not say).
    pub compressed: Option<u64>,
    /// The layers' tar streams, in bytes.
    pub uncompressed: u64,
    /// Regular files of the image as run (after whiteouts), and their bytes.
    pub files: u64,
    pub file_bytes: u64,
}

/// The limits an image is built under.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Guardrails {
    pub layer_count: usize,
    /// The most layers an image may have (127).
    pub max_layers: usize,
    /// The largest a wheel layer may be, in compressed bytes, and where the bound comes from
    /// (`recipe` or `default`).
    pub max_wheel_layer_size: u64,
    pub max_wheel_layer_size_from: String,
    /// Positions (1-based) of the wheel layers over that bound.
    pub layers_over_cap: Vec<usize>,
}

/// Where a layer comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The base image's.
    Base,
    /// `[apt]` packages.
    Packages,
    /// Accounts and the files the system sections write (`rootfs`).
    System,
    /// The Python interpreter.
    Interpreter,
    Wheels,
    /// `[paths]`.
    Paths,
    /// A `[[step]]`'s outputs (known from the recipe: step layers take the step's name).
    Steps,
    /// The recipe's `[[layer]]`s.
    App,
    /// No ocibuild annotation tells.
    Unknown,
}

impl Origin {
    pub fn word(self) -> &'static str {
        match self {
            Origin::Base => "base",
            Origin::Packages => "packages",
            Origin::System => "system",
            Origin::Interpreter => "interpreter",
            Origin::Wheels => "wheels",
            Origin::Paths => "paths",
            Origin::Steps => "steps",
            Origin::App => "app",
            Origin::Unknown => "unknown",
        }
    }

    pub const ALL: [Origin; 9] = [
        Origin::Base,
        Origin::Packages,
        Origin::System,
        Origin::Interpreter,
        Origin::Wheels,
        Origin::Paths,
        Origin::Steps,
        Origin::App,
        Origin::Unknown,
    ];
}

/// One layer.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerReport {
    /// 1 = the bottom layer.
    pub position: usize,
    pub digest: Option<String>,
    pub diff_id: Option<String>,
    /// The `dev.ocibuild.layer` annotation.
    pub name: Option<String>,
    pub origin: Origin,
    pub compressed: Option<u64>,
    /// The tar stream's bytes.
    pub uncompressed: u64,
    /// Entries of the tar, regular files among them, and their bytes.
    pub entries: u64,
    pub files: u64,
    pub file_bytes: u64,
    /// Whiteouts (files and directories this layer removes).
    pub whiteouts: u64,
    /// Regular-file bytes of this layer that a later layer replaces or removes.
    pub shadowed_bytes: u64,
    /// By package, wheel or directory; largest first, at most [`MAX_GROUPS`].
    pub groups: Vec<Group>,
    pub groups_left_out: LeftOut,
    /// The largest regular files, at most [`MAX_FILES`].
    pub largest_files: Vec<FileEntry>,
    pub files_left_out: LeftOut,
}

/// What owns a set of files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupKind {
    /// A Debian package (its `/var/lib/dpkg/info/NAME.list`).
    Deb,
    /// A wheel (its `*.dist-info/RECORD`).
    Wheel,
    /// Neither: the top directories of the path.
    Dir,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    pub kind: GroupKind,
    pub name: String,
    pub files: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    pub path: String,
    pub size: u64,
}

/// Items left out of a capped list.
#[derive(Clone, Copy, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftOut {
    pub count: u64,
    pub bytes: u64,
}

/// dive's efficiency score and wasted bytes: every path seen in more than one layer costs the
/// bytes of all its copies (a removed file: its size), the score is the sum over paths of the
/// smallest copy over the sum of all copies.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Efficiency {
    pub score: f64,
    pub wasted_bytes: u64,
    /// Paths found in more than one layer, the largest first (at most [`MAX_LISTED`]).
    pub inefficient: Vec<Inefficiency>,
    pub inefficient_left_out: LeftOut,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inefficiency {
    pub path: String,
    /// How many layers hold (or remove) it.
    pub count: u64,
    pub bytes: u64,
}

/// Regular files of the same content (sha256) at two or more paths, in any layers.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Duplicates {
    /// What the copies beyond the first cost: (paths − 1) × size, summed over the sets.
    pub extra_bytes: u64,
    pub sets: u64,
    /// The costliest sets first, at most [`MAX_LISTED`].
    pub listed: Vec<DuplicateSet>,
    pub left_out: LeftOut,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateSet {
    pub sha256: String,
    pub size: u64,
    pub extra_bytes: u64,
    /// `LAYER:PATH` (layer 1-based), sorted.
    pub paths: Vec<DuplicatePath>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DuplicatePath {
    pub layer: usize,
    pub path: String,
}

/// An installed package.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    /// `deb` or `wheel`.
    pub kind: GroupKind,
    pub name: String,
    pub version: Option<String>,
    pub architecture: Option<String>,
    /// As the package states it (verbatim), when it does.
    pub licence: Option<String>,
    /// The licence as an SPDX expression, when one is known: a deb's DEP-5
    /// `/usr/share/doc/PKG/copyright` in the image, a wheel's METADATA (`License-Expression`,
    /// OSI classifiers, a known licence name), or the SBOM's facts for a locked package.
    pub licence_spdx: Option<String>,
    /// The layer (1-based) holding its record (dpkg status or dist-info).
    pub layer: Option<usize>,
    pub source_url: Option<String>,
    pub sha256: Option<String>,
    pub purl: Option<String>,
    /// Where the entry was read: `image` (dpkg status, dist-info METADATA) or `lock`.
    pub from: &'static str,
}
