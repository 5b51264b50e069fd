//! Debian/Ubuntu packages without running anything: the library behind the recipe's `[apt]`
//! section (driven through the lock by `system::apt`).
//!
//! - [`version`]: Debian versions and relations, compared exactly as dpkg does.
//! - [`control`]: deb822 paragraphs and dependency fields.
//! - [`release`]: InRelease / Release.gpg verification and the Release SHA256 list.
//! - [`index`]: the `Packages` indices, streamed and verified, as compact [`Package`]s.
//! - [`roots`]: where a file of a source is looked for: its `by-hash` path (`Acquire-By-Hash`),
//!   then the plain path, at the source's `url` then at each of its `mirrors`, and what each
//!   URL gave ([`Tried`]).
//! - [`components`]: on a package no listed component has, which other component of the
//!   Release has it (their indices are read only then).
//! - [`spill`]: a loaded source ([`SourceIndex`]): its packages on disk, read back by name.
//! - [`resolve`]: the dependency resolver; its output is the lock ([`Locked`]).
//! - [`base`]: the base image's installed packages and merged-/usr symlinks, from its layers.
//! - [`scripts`]: the maintainer scripts a .deb has, and its postinst's alternatives.
//! - [`usrmerge`]: merged /usr: the base's links, or on `scratch` what the packages need.
//! - [`dpkgdb`]: dpkg's database (`status`, `info/*.list`) for a base without one.
//! - [`download`]: downloading locked .debs (verified), at the source's mirrors too.
//! - [`deb`]: rewriting their data into one layer
//!   under the determinism contract, with merged-/usr rewriting and `status.d` records.
//!
//! Nothing here runs a maintainer script, and nothing prints.

pub mod base;
pub mod components;
pub mod control;
pub mod copyright;
pub mod date;
pub mod deb;
pub mod download;
pub mod dpkgdb;
pub mod driver;
pub mod fresh;
pub mod index;
pub mod origin;
pub mod package;
pub mod release;
pub mod resolve;
pub mod roots;
pub mod scripts;
pub mod source;
pub mod spill;
mod spool;
pub mod usrmerge;
pub mod version;

use std::io;
use std::path::PathBuf;

use crate::digest::Digest;
use crate::layer::LayerError;
use crate::store::StoreError;

pub use self::base::{scan_base, Base};
pub use self::deb::{
    build_layer, build_layer_reported, AptLayer, DebInput, LayerRequest, UsrMerge,
};
pub use self::download::{download, download_from};
pub use self::index::{load_source, MultiArch, Package};
pub use self::release::xz_stream;
pub use self::release::{Source, Verified};
pub use self::resolve::{resolve, resolve_with_host, Installed, Locked, Request, Resolution};
pub use self::spill::SourceIndex;
pub use self::version::{Constraint, Relation, Version};

/// Everything that can go wrong in `apt/`, with the context needed to act on it.
#[derive(Debug, thiserror::Error)]
pub enum AptError {
    #[error("fetching {url}: {reason}")]
    Fetch { url: String, reason: String },
    #[error("offline: {url} needs the network; it is not in the store or the vendor directory")]
    Offline { url: String },
    #[error("{url}: not found")]
    NotFound { url: String },
    #[error("reading {url}")]
    Read {
        url: String,
        #[source]
        source: io::Error,
    },
    #[error("{url} is larger than the limit of {limit} bytes")]
    TooLarge { url: String, limit: u64 },
    #[error("the source's signed-by key")]
    KeyFile(#[from] crate::bounded::Error),
    #[error("signing key {}: {reason}", path.display())]
    Key { path: PathBuf, reason: String },
    #[error("{url}: bad signature: {reason}")]
    BadSignature { url: String, reason: String },
    #[error(
        "source {url} suite {suite}: no signing key given; set allow_unsigned to accept an \
         unverified Release"
    )]
    Unsigned { url: String, suite: String },
    #[error(
        "{url}: the Release expired on {valid_until} (its Valid-Until): the mirror is stale or \
         serves an old Release again; use an up-to-date mirror, or for an archive frozen on \
         purpose set `snapshot` or `check-valid-until = false` on the source"
    )]
    Expired { url: String, valid_until: String },
    #[error(
        "source {url} suite {suite}: the Release is {date}, older than the {locked} the lock \
         recorded: the mirror is stale or serves an old Release again; the lock's [apt] section \
         was left as it was: use an up-to-date mirror"
    )]
    Replayed {
        url: String,
        suite: String,
        date: String,
        locked: String,
    },
    #[error(
        "the new resolution would downgrade {} the lock pins ({}): an archive that went back \
         (a stale mirror, an old Release served again) does this; the lock's [apt] section was \
         left as it was: check the sources, or accept it with `ocibuild lock --allow-downgrade` (with \
         `--update` to resolve everything again)",
        if .0.len() == 1 { "a package".to_string() } else { format!("{} packages", .0.len()) },
        .0.iter().map(std::string::ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    Downgrade(Vec<fresh::Downgrade>),
    #[error("{url}: invalid Release file: {reason}")]
    Release { url: String, reason: String },
    #[error("{url}: the Release file lists no {what} (looked for {tried})")]
    IndexMissing {
        url: String,
        what: String,
        tried: String,
    },
    #[error("{0}")]
    HashMismatch(Box<Mismatch>),
    #[error(
        "{what}: the Release lists it, but no URL serves it ({}): the mirror may be in the \
         middle of a sync (mirror sync in progress?): try again later, or list another archive \
         root of the source in its `mirrors`",
        tried_list(.tried)
    )]
    IndexUnavailable { what: String, tried: Vec<Tried> },
    #[error(
        "source {url} suite {suite}: no archive root serves its Release ({}): check the url \
         and suite",
        tried_list(.tried)
    )]
    ReleaseUnavailable {
        url: String,
        suite: String,
        tried: Vec<Tried>,
    },
    #[error(
        "`{}`{} is in `{component}` of {suite} ({url}), which this source does not list: add \
         it to the source's `components`",
        crate::bounded::clip(name),
        needed_by(.chain)
    )]
    OtherComponent {
        name: String,
        /// The dependency chain that needed it (empty for a requested package).
        chain: Box<[String]>,
        component: String,
        suite: String,
        url: String,
    },
    #[error("{what}: parse error")]
    Control {
        what: String,
        #[source]
        source: control::ControlError,
    },
    #[error("{what}: package `{package}`: {reason}")]
    Field {
        what: String,
        package: String,
        reason: String,
    },
    #[error("decompressing {what}")]
    Decompress {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("{url}: more than {limit} packages are named or provide `{name}`")]
    NameTooCommon {
        url: String,
        name: String,
        limit: usize,
    },
    #[error(
        "the resolver read more than {limit} packages of the sources' indices for one \
         resolution; no real archive needs that many"
    )]
    TooManyRead { limit: usize },
    #[error("unknown package `{}`{}", crate::bounded::clip(name), suggest(.suggestions))]
    UnknownPackage {
        name: String,
        suggestions: Vec<String>,
    },
    #[error("unsatisfiable dependency: {}: {reason}", .chain.join(" → "))]
    Unsatisfiable {
        chain: Vec<String>,
        reason: String,
        /// The names of the failing group that no source has at all (for
        /// [`components::explain`]).
        unknown: Vec<String>,
    },
    #[error(
        "{}: {} the NVIDIA GPU driver's user-space part, which belongs to the host, not the \
         image (the test stage binds the host's driver): add `host-provides = [\"{name}\"]` to \
         [apt]{}",
        .chain.join(" → "),
        match package {
            Some(p) => format!("it would install {p}, which is"),
            None => format!("`{name}` is"),
        },
        match package {
            Some(p) => format!(" (or list {p} in `packages` to install it in the image anyway)"),
            None => String::new(),
        }
    )]
    DriverDependency {
        chain: Vec<String>,
        /// The driver package the resolution would have installed (`None`: no source has one).
        package: Option<String>,
        /// The `host-provides` name that answers the dependency.
        name: String,
    },
    #[error(
        "package {package} {version} ({filename}) is missing from {url}{}; the lock may be out \
         of date: update the lock to pick up the archive's current versions",
        also_tried(.tried)
    )]
    MissingDeb {
        package: String,
        version: String,
        filename: String,
        url: String,
        /// Every URL tried, `url` first, when there was more than one (the source's mirrors).
        tried: Box<[Tried]>,
    },
    #[error("package {package}: invalid .deb: {reason}")]
    Deb { package: String, reason: String },
    #[error("package {package}: data.tar entry `{path}`: {reason}")]
    DebPath {
        package: String,
        path: String,
        reason: String,
    },
    #[error("`/{path}` is shipped with different content by {first} and {second}")]
    PathConflict {
        path: String,
        first: String,
        second: String,
    },
    #[error("I/O error on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Layer(#[from] LayerError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<crate::http::HttpError> for AptError {
    fn from(e: crate::http::HttpError) -> Self {
        use crate::http::HttpError;
        match e {
            HttpError::Fetch { url, reason } => AptError::Fetch { url, reason },
            HttpError::Offline { url } => AptError::Offline { url },
            HttpError::Read { url, source } => AptError::Read { url, source },
            HttpError::TooLarge { url, limit } => AptError::TooLarge { url, limit },
            HttpError::Unreachable { url, problem, hint } => AptError::Fetch {
                url,
                reason: format!("{problem}; {hint}"),
            },
            e @ HttpError::Client { .. } => AptError::Fetch {
                url: String::new(),
                reason: e.to_string(),
            },
        }
    }
}

/// The details of [`AptError::HashMismatch`] (boxed: it is the largest variant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// What was checked: `index main/binary-amd64/Packages.xz`, `package curl 7.88.1-10`.
    pub what: String,
    /// The first URL whose file did not match.
    pub url: String,
    pub expected: Digest,
    pub found: Digest,
    pub expected_size: u64,
    pub found_size: u64,
    /// Every URL tried for the file, in order (`url` among them), when there was more than one:
    /// its `by-hash` path, the plain path, the same at each of the source's mirrors.
    pub tried: Vec<Tried>,
    /// An index of a Release: a mismatch is what a mirror in the middle of a sync serves (a
    /// new Release over old indices, or the other way round).
    pub index: bool,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): expected sha256 {} and {} bytes, found {} and {} bytes",
            self.what, self.url, self.expected, self.expected_size, self.found, self.found_size
        )?;
        if self.index {
            f.write_str(
                ": the mirror may be in the middle of a sync (mirror sync in progress?): try \
                 again later, or list another archive root of the source in its `mirrors`",
            )?;
        }
        if self.tried.len() > 1 {
            write!(f, " (tried {})", tried_list(&self.tried))?;
        }
        Ok(())
    }
}

/// One URL tried for a file, and what it gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tried {
    pub url: String,
    pub outcome: Outcome,
}

/// What a URL tried for a file gave (when it was not the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// 404 or 410.
    NotFound,
    /// Another file: its sha256 and size.
    Mismatch { found: Digest, size: u64 },
    /// It could not be reached or read (the error, with its causes).
    Failed(String),
}

impl std::fmt::Display for Tried {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.outcome {
            Outcome::NotFound => write!(f, "{}: not found", self.url),
            Outcome::Mismatch { found, size } => {
                write!(f, "{}: sha256 {found}, {size} bytes", self.url)
            }
            Outcome::Failed(why) => write!(f, "{}: {why}", self.url),
        }
    }
}

fn tried_list(tried: &[Tried]) -> String {
    tried
        .iter()
        .map(Tried::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn also_tried(tried: &[Tried]) -> String {
    if tried.len() > 1 {
        format!(" (tried {})", tried_list(tried))
    } else {
        String::new()
    }
}

fn needed_by(chain: &[String]) -> String {
    if chain.len() > 1 {
        format!(" (needed by {})", chain[..chain.len() - 1].join(" → "))
    } else {
        String::new()
    }
}

fn suggest(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", s.join(", "))
    }
}
