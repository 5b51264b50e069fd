//! An apt source as the recipe gives it, and its Release as read and verified: the types
//! [`super::release`] fetches and [`super::fresh`] checks.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::control::parse_paragraphs;
use super::date::parse_release_date;
use super::AptError;
use crate::digest::Digest;
use crate::http::join_url;

/// One `[apt]` source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The archive root, e.g. `https://deb.debian.org/debian` (or, with `snapshot`,
    /// `https://snapshot.debian.org/archive/debian`).
    pub url: String,
    /// e.g. `bookworm`.
    pub suite: String,
    /// e.g. `["main"]`.
    pub components: Vec<String>,
    /// The target (native) architecture, e.g. `amd64`; `all` packages are included too.
    pub architecture: String,
    /// A snapshot timestamp (`20240301T000000Z`), appended to `url` as a path component: the
    /// URL scheme of both snapshot.debian.org and snapshot.ubuntu.com.
    pub snapshot: Option<String>,
    /// The armored (or binary) OpenPGP public key file(s) the Release must be signed with.
    pub signed_by: Option<PathBuf>,
    /// Accept an unsigned, unverified Release when no key is given. Never bypasses a key.
    pub allow_unsigned: bool,
    /// Refuse a Release whose `Valid-Until` has passed (`check-valid-until`, default on;
    /// snapshot sources are excepted whatever it says: [`super::fresh::exempt`]).
    pub check_valid_until: bool,
    /// Other archive roots of the same archive (`snapshot` is appended to each as to `url`),
    /// tried in order after `url` for a file it lacks or serves stale ([`super::roots`]).
    /// Where, not what: the lock and the recipe's identity never see them.
    pub mirrors: Vec<String>,
}

impl Source {
    /// The URL the archive's paths are relative to.
    pub fn archive_url(&self) -> String {
        self.root_of(&self.url)
    }

    /// Every archive root: [`Source::archive_url`], then the mirrors' (in order).
    pub fn archive_urls(&self) -> Vec<String> {
        std::iter::once(&self.url)
            .chain(&self.mirrors)
            .map(|u| self.root_of(u))
            .collect()
    }

    fn root_of(&self, url: &str) -> String {
        match &self.snapshot {
            Some(ts) => join_url(url, ts),
            None => url.trim_end_matches('/').to_string(),
        }
    }
}

/// A source's verified Release, and its archive roots in the order its files are looked for:
/// the one that served the Release, then the others in the source's order.
#[derive(Clone, Debug)]
pub struct Verified {
    pub release: Release,
    pub roots: Vec<String>,
    /// The URL the Release was read from.
    pub url: String,
}

/// A parsed Release file.
#[derive(Clone, Debug, Default)]
pub struct Release {
    pub suite: Option<String>,
    pub codename: Option<String>,
    /// `Date`, in seconds since the epoch.
    pub date: Option<i64>,
    /// `Valid-Until`, in seconds since the epoch.
    pub valid_until: Option<i64>,
    /// Path (relative to `dists/SUITE/`) → (sha256, size).
    pub sha256: BTreeMap<String, (Digest, u64)>,
    /// `No-Support-for-Architecture-all: Packages`: the `all` packages are listed in each
    /// `binary-ARCH` index, and `binary-all/Packages` is not for apt (trixie's archive says
    /// so; apt never fetches it, and mirrors may serve a copy that no longer matches).
    pub no_all_packages: bool,
    /// `Acquire-By-Hash: yes`: each index is also at `by-hash/SHA256/<its sha256>` beside it,
    /// which does not change while a mirror syncs (apt fetches that path first).
    pub acquire_by_hash: bool,
    /// `Components`: every component of the suite (`main contrib non-free-firmware non-free`).
    pub components: Vec<String>,
}

impl Release {
    pub fn parse(text: &str, url: &str) -> Result<Release, AptError> {
        let bad = |reason: String| AptError::Release {
            url: url.to_string(),
            reason,
        };
        let ps = parse_paragraphs(text).map_err(|source| AptError::Control {
            what: url.to_string(),
            source,
        })?;
        let p = ps.first().ok_or_else(|| bad("empty Release file".into()))?;
        let mut sha256 = BTreeMap::new();
        let list = p
            .get("SHA256")
            .ok_or_else(|| bad("no SHA256 field".into()))?;
        for line in list.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let mut it = line.split_whitespace();
            let (Some(hex), Some(size), Some(path), None) =
                (it.next(), it.next(), it.next(), it.next())
            else {
                return Err(bad(format!("bad SHA256 line `{line}`")));
            };
            let digest = parse_sha256(hex).ok_or_else(|| bad(format!("bad sha256 `{hex}`")))?;
            let size: u64 = size
                .parse()
                .map_err(|_| bad(format!("bad size in SHA256 line `{line}`")))?;
            sha256.insert(path.to_string(), (digest, size));
        }
        let date = |field: &str| {
            p.get(field)
                .map(|v| {
                    parse_release_date(v).ok_or_else(|| {
                        bad(format!(
                            "bad {field} `{}`: expected a date like `Sat, 10 Feb 2024 09:56:43 UTC`",
                            crate::bounded::clip(v)
                        ))
                    })
                })
                .transpose()
        };
        Ok(Release {
            suite: p.get("Suite").map(str::to_string),
            codename: p.get("Codename").map(str::to_string),
            date: date("Date")?,
            valid_until: date("Valid-Until")?,
            sha256,
            no_all_packages: p
                .get("No-Support-for-Architecture-all")
                .is_some_and(|v| v.split_whitespace().any(|w| w == "Packages")),
            acquire_by_hash: p
                .get("Acquire-By-Hash")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("yes")),
            components: p
                .get("Components")
                .map(|v| v.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
        })
    }
}

/// A 64-hex-digit sha256 (either case) as a [`Digest`].
pub fn parse_sha256(hex: &str) -> Option<Digest> {
    format!("sha256:{}", hex.to_ascii_lowercase()).parse().ok()
}
