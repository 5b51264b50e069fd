//! How fresh a source is: the Release's `Date` and `Valid-Until`, and what a relock may not do
//! against the lock it replaces.
//!
//! - `Valid-Until` is enforced against the real current time (freshness is about now; the time
//!   is only compared, never written anywhere): an expired Release is a stale mirror or a
//!   replay. Snapshot sources are excepted (their Releases are long expired by design): a
//!   source with `snapshot`, a snapshot.debian.org / snapshot.ubuntu.com URL, or one with
//!   `check-valid-until = false` (an archive frozen on purpose, e.g. an air-gapped mirror).
//! - The lock records each source's Release `Date`; a relock refuses a Release older than that
//!   (a replayed, validly signed, older Release), and names every package whose version would
//!   go down (refused unless the user accepts it).

use std::time::{SystemTime, UNIX_EPOCH};

pub use super::date::{format_date, parse_lock_date, parse_release_date};
use super::source::{Release, Source};
use super::version::Version;
use super::AptError;

/// Whether `Valid-Until` is not enforced for `source`: a snapshot (by its `snapshot`
/// timestamp or its URL's host), or `check-valid-until = false`.
pub fn exempt(source: &Source) -> bool {
    let host = source
        .url
        .split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(&source.url);
    let host = host.split('/').next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    let host = host.split(':').next().unwrap_or(host).to_ascii_lowercase();
    source.snapshot.is_some()
        || !source.check_valid_until
        || matches!(
            host.as_str(),
            "snapshot.debian.org" | "snapshot-cloudflare.debian.org" | "snapshot.ubuntu.com"
        )
}

/// Seconds since the epoch now (a clock before 1970 reads as 0).
fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Refuses a Release whose `Valid-Until` has passed (unless the source is [`exempt`]).
pub fn check_valid_until(release: &Release, source: &Source, url: &str) -> Result<(), AptError> {
    check_valid_until_at(release, source, url, now())
}

fn check_valid_until_at(
    release: &Release,
    source: &Source,
    url: &str,
    now: i64,
) -> Result<(), AptError> {
    match release.valid_until {
        Some(until) if until < now && !exempt(source) => Err(AptError::Expired {
            url: url.to_string(),
            valid_until: format_date(until),
        }),
        _ => Ok(()),
    }
}

/// A relock's Release against the date the lock recorded for the same source: an older one
/// (or one with no date where the lock has one) is refused.
pub fn check_not_older(
    url: &str,
    suite: &str,
    date: Option<i64>,
    locked: Option<&str>,
) -> Result<(), AptError> {
    let Some(locked) = locked.and_then(parse_lock_date) else {
        return Ok(());
    };
    match date {
        Some(d) if d >= locked => Ok(()),
        _ => Err(AptError::Replayed {
            url: url.to_string(),
            suite: suite.to_string(),
            date: date.map_or_else(
                || "not dated".to_string(),
                |d| format!("dated {}", format_date(d)),
            ),
            locked: format_date(locked),
        }),
    }
}

/// One package whose version goes down between the lock and a new resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Downgrade {
    pub package: String,
    pub old: String,
    pub new: String,
}

impl std::fmt::Display for Downgrade {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} → {}", self.package, self.old, self.new)
    }
}

/// The packages (by name and architecture) whose version in `new` is lower than in `old`.
/// Versions that do not parse are not compared.
pub fn downgrades<'a>(
    old: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
    new: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
) -> Vec<Downgrade> {
    let old: std::collections::HashMap<(&str, &str), &str> =
        old.into_iter().map(|(n, a, v)| ((n, a), v)).collect();
    let mut out = Vec::new();
    for (name, arch, version) in new {
        let Some(&was) = old.get(&(name, arch)) else {
            continue;
        };
        if let (Ok(a), Ok(b)) = (Version::parse(was), Version::parse(version)) {
            if b < a {
                out.push(Downgrade {
                    package: name.to_string(),
                    old: was.to_string(),
                    new: version.to_string(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(url: &str) -> Source {
        Source {
            url: url.into(),
            suite: "stable".into(),
            components: vec!["main".into()],
            architecture: "amd64".into(),
            snapshot: None,
            signed_by: None,
            allow_unsigned: true,
            check_valid_until: true,
            mirrors: Vec::new(),
        }
    }

    #[test]
    fn release_dates() {
        assert_eq!(parse_release_date("Thu, 01 Jan 1970 00:00:00 UTC"), Some(0));
        let t = parse_release_date("Sat, 10 Feb 2024 09:56:43 UTC").unwrap();
        assert_eq!(format_date(t), "2024-02-10T09:56:43Z");
        assert_eq!(parse_lock_date("2024-02-10T09:56:43Z"), Some(t));
        assert_eq!(parse_release_date("10 Feb 2024 10:56:43 +0100"), Some(t));
        assert_eq!(
            parse_release_date("Sat, 10 Feb 2024 04:56:43 -0500"),
            Some(t)
        );
        assert_eq!(
            parse_release_date("Sat, 29 Feb 2024 00:00:00 GMT")
                .map(format_date)
                .as_deref(),
            Some("2024-02-29T00:00:00Z")
        );
        for bad in [
            "",
            "yesterday",
            "Sat, 30 Feb 2024 00:00:00 UTC",
            "Sat, 10 Foo 2024 00:00:00 UTC",
            "Sat, 10 Feb 2024 24:00:00 UTC",
            "Sat, 10 Feb 2024 09:56:43 CET",
            "Sat, 10 Feb 2024 09:56 UTC",
        ] {
            assert_eq!(parse_release_date(bad), None, "{bad}");
        }
        assert_eq!(parse_lock_date("2024-02-10 09:56:43Z"), None);
        assert_eq!(parse_lock_date("2024-13-10T09:56:43Z"), None);
        assert_eq!(format_date(-1), "1969-12-31T23:59:59Z");
        assert_eq!(format_date(253_402_300_799), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn valid_until_is_enforced_except_for_snapshots() {
        let release = Release {
            valid_until: Some(1000),
            ..Release::default()
        };
        let s = source("https://deb.example/debian");
        assert!(check_valid_until_at(&release, &s, "u", 999).is_ok());
        assert!(check_valid_until_at(&release, &s, "u", 1000).is_ok());
        let e = check_valid_until_at(
            &release,
            &s,
            "https://deb.example/debian/dists/stable/InRelease",
            1001,
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with(
                "https://deb.example/debian/dists/stable/InRelease: the Release expired on"
            ),
            "{e}"
        );
        assert!(e.to_string().contains("1970-01-01T00:16:40Z"), "{e}");
        for exempt in [
            Source {
                snapshot: Some("20240101T000000Z".into()),
                ..s.clone()
            },
            Source {
                check_valid_until: false,
                ..s.clone()
            },
            source("https://snapshot.debian.org/archive/debian/20240101T000000Z"),
            source("http://u:p@SNAPSHOT.ubuntu.com:80/ubuntu"),
        ] {
            assert!(
                check_valid_until_at(&release, &exempt, "u", 1001).is_ok(),
                "{exempt:?}"
            );
        }
        assert!(check_valid_until_at(&Release::default(), &s, "u", i64::MAX).is_ok());
    }

    #[test]
    fn older_releases_and_downgrades() {
        assert!(check_not_older("u", "s", Some(5), None).is_ok());
        assert!(check_not_older("u", "s", None, None).is_ok());
        let locked = format_date(100);
        assert!(check_not_older("u", "s", Some(100), Some(&locked)).is_ok());
        assert!(check_not_older("u", "s", Some(101), Some(&locked)).is_ok());
        let e = check_not_older("u", "s", Some(99), Some(&locked)).unwrap_err();
        assert!(matches!(e, AptError::Replayed { .. }), "{e}");
        assert!(check_not_older("u", "s", None, Some(&locked)).is_err());
        let old = [
            ("a", "amd64", "2.0"),
            ("b", "all", "1:1"),
            ("c", "amd64", "1"),
        ];
        let new = [
            ("a", "amd64", "2.0~rc1"),
            ("b", "all", "1:2"),
            ("c", "arm64", "0"),
            ("d", "amd64", "0"),
        ];
        assert_eq!(
            downgrades(old, new),
            [Downgrade {
                package: "a".into(),
                old: "2.0".into(),
                new: "2.0~rc1".into()
            }]
        );
        assert_eq!(downgrades(old, old), []);
        assert_eq!(
            downgrades([("b", "all", "1:1")], [("b", "all", "2")])[0].to_string(),
            "b 1:1 → 2"
        );
    }
}
