//! Debian/Ubuntu packages without running anything: the library behind the recipe's `[apt]`
//! section (driven through the lock by `system::apt`).
//!
//! - [`version`]: Debian versions and relations, compared exactly as dpkg does.
//! - [`control`]: deb822 paragraphs and dependency fields.
//! - [`release`]: InRelease / Release.gpg verification and the Release SHA256 list.
//! - [`index`]: the `Packages` indices, streamed and verified, as compact [`Package`]s.
//! - [`spill`]: a loaded source ([`SourceIndex`]): its packages on disk, read back by name.
//! - [`resolve`]: the dependency resolver; its output is the lock ([`Locked`]).
//! - [`base`]: the base image's installed packages and merged-/usr symlinks, from its layers.
//! - [`scripts`]: the maintainer scripts a .deb has, and its postinst's alternatives.
//! - [`deb`]: downloading locked .debs (verified) and rewriting their data into one layer
//!   under the determinism contract, with merged-/usr rewriting and `status.d` records.
//!
//! Nothing here runs a maintainer script, and nothing prints.

pub mod base;
pub mod control;
pub mod deb;
pub mod driver;
pub mod fresh;
pub mod index;
pub mod release;
pub mod resolve;
pub mod scripts;
pub mod spill;
pub mod version;

use std::io;
use std::path::PathBuf;

use crate::digest::Digest;
use crate::layer::LayerError;
use crate::store::StoreError;

pub use self::base::{scan_base, Base};
pub use self::deb::{build_layer, download, AptLayer, DebInput, LayerRequest, UsrMerge};
pub use self::index::{load_source, MultiArch, Package};
pub(crate) use self::release::xz_stream;
pub use self::release::Source;
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
        .0.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
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
    #[error(
        "{} ({}): expected sha256 {} and {} bytes, found {} and {} bytes",
        .0.what, .0.url, .0.expected, .0.expected_size, .0.found, .0.found_size
    )]
    HashMismatch(Box<Mismatch>),
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
    Unsatisfiable { chain: Vec<String>, reason: String },
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
        "package {package} {version} ({filename}) is missing from {url}; the lock may be out of \
         date: update the lock to pick up the archive's current versions"
    )]
    MissingDeb {
        package: String,
        version: String,
        filename: String,
        url: String,
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
    pub url: String,
    pub expected: Digest,
    pub found: Digest,
    pub expected_size: u64,
    pub found_size: u64,
}

fn suggest(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", s.join(", "))
    }
}
