//! Where a file of a source is looked for, and what each place gave.
//!
//! A source has one archive root (`url`, with its `snapshot`) and may list others
//! (`mirrors`): copies of the same archive. The Release is fetched from the first root that
//! answers with one ([`super::release::fetch_release`]), and is verified against the source's
//! key wherever it comes from. Every other file (a `Packages` index, a `.deb`) is then checked
//! against that verified Release (or the lock), never against a mirror's own Release: a
//! mirror can only serve the same bytes, or be refused.
//!
//! For an index, each root is tried at its `by-hash/SHA256/<sha256>` path first when the
//! Release says `Acquire-By-Hash: yes` (as apt: a file by its hash does not change while a
//! mirror syncs), then at the plain path; a 404 or a file that does not match goes on to the
//! next URL, so a mirror in the middle of a sync, or one that lost a file, is passed over.
//! The lock records the source's `url` whichever root served a file: where is not what.

use super::{AptError, Mismatch, Outcome, Tried};
use crate::digest::Digest;
use crate::http::join_url;

/// The URLs of an index (`main/binary-amd64/Packages.xz`, relative to `dists/SUITE/`) whose
/// sha256 is `digest`, in the order tried: at each archive root of `roots`, its by-hash path
/// (when `by_hash`), then its plain path.
pub fn index_urls(
    roots: &[String],
    suite: &str,
    name: &str,
    digest: &Digest,
    by_hash: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for root in roots {
        let dists = join_url(root, &format!("dists/{suite}"));
        if by_hash {
            let dir = name.rsplit_once('/').map_or("", |(d, _)| d);
            out.push(join_url(
                &dists,
                &format!("{dir}/by-hash/SHA256/{}", digest.hex()),
            ));
        }
        out.push(join_url(&dists, name));
    }
    out
}

/// Why none of the URLs gave the file.
#[derive(Debug)]
pub enum Missed {
    /// Every URL answered 404.
    NotFound(Vec<Tried>),
    /// One served another file: the first such, with every URL tried.
    Mismatch(Box<Mismatch>),
    /// Some could not be reached or read (the others answered 404). With one URL, its error
    /// as it was.
    Failed(Vec<Tried>, Option<AptError>),
}

/// Tries `urls` in order with `one` until one gives the file. `one` answers `Ok(None)` for a
/// 404, [`AptError::HashMismatch`] for another file, and a fetch or read error for a URL that
/// cannot be reached or read: those go on to the next URL. Any other error (offline, a file
/// too large, a verified file that does not parse) is returned as it is.
pub fn first_good<T>(
    urls: &[String],
    mut one: impl FnMut(&str) -> Result<Option<T>, AptError>,
) -> Result<Result<T, Missed>, AptError> {
    let mut tried = Vec::new();
    let mut mismatch: Option<Box<Mismatch>> = None;
    let mut failed = None;
    for url in urls {
        let outcome = match one(url) {
            Ok(Some(v)) => return Ok(Ok(v)),
            Ok(None) => Outcome::NotFound,
            Err(AptError::HashMismatch(m)) => {
                let o = Outcome::Mismatch {
                    found: m.found,
                    size: m.found_size,
                };
                mismatch.get_or_insert(m);
                o
            }
            Err(e @ (AptError::Fetch { .. } | AptError::Read { .. })) => {
                let why = match &e {
                    AptError::Fetch { reason, .. } => reason.clone(),
                    AptError::Read { source, .. } => {
                        format!("reading it failed: {}", crate::http::error_chain(source))
                    }
                    _ => String::new(),
                };
                failed.get_or_insert(e);
                Outcome::Failed(crate::bounded::clip_to(&why, 400).into_owned())
            }
            Err(e) => return Err(e),
        };
        tried.push(Tried {
            url: url.clone(),
            outcome,
        });
    }
    let several = tried.len() > 1;
    Ok(Err(if let Some(mut m) = mismatch {
        if several {
            m.tried = tried;
        }
        Missed::Mismatch(m)
    } else if failed.is_some() {
        Missed::Failed(tried, if several { None } else { failed })
    } else {
        Missed::NotFound(tried)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_hash_first_then_plain_at_each_root() {
        let d = Digest::of(b"x");
        let roots = ["http://a/debian".to_string(), "http://b/".to_string()];
        let urls = index_urls(&roots, "trixie", "main/binary-amd64/Packages.xz", &d, true);
        assert_eq!(
            urls,
            [
                format!(
                    "http://a/debian/dists/trixie/main/binary-amd64/by-hash/SHA256/{}",
                    d.hex()
                ),
                "http://a/debian/dists/trixie/main/binary-amd64/Packages.xz".to_string(),
                format!(
                    "http://b/dists/trixie/main/binary-amd64/by-hash/SHA256/{}",
                    d.hex()
                ),
                "http://b/dists/trixie/main/binary-amd64/Packages.xz".to_string(),
            ]
        );
        let plain = index_urls(&roots[..1], "s", "main/binary-all/Packages", &d, false);
        assert_eq!(plain, ["http://a/debian/dists/s/main/binary-all/Packages"]);
    }

    fn mismatch(url: &str, n: u64) -> AptError {
        AptError::HashMismatch(Box::new(Mismatch {
            what: "index x".into(),
            url: url.into(),
            expected: Digest::of(b"want"),
            found: Digest::of(url.as_bytes()),
            expected_size: 4,
            found_size: n,
            tried: Vec::new(),
            index: true,
        }))
    }

    #[test]
    fn misses_go_on_and_say_what_each_url_gave() {
        let urls: Vec<String> = ["u1", "u2", "u3"].map(String::from).to_vec();
        // 404, mismatch, good: the good one.
        let got = first_good(&urls, |u| match u {
            "u1" => Ok(None),
            "u2" => Err(mismatch(u, 3)),
            _ => Ok(Some(7)),
        })
        .unwrap();
        assert_eq!(got.unwrap(), 7);
        // None good: the first mismatch, with every URL.
        let got = first_good::<()>(&urls, |u| match u {
            "u1" => Ok(None),
            _ => Err(mismatch(u, 3)),
        })
        .unwrap();
        let Err(Missed::Mismatch(m)) = got else {
            panic!("{got:?}")
        };
        assert_eq!(m.url, "u2");
        assert_eq!(m.tried.len(), 3);
        assert_eq!(m.tried[0].outcome, Outcome::NotFound);
        let text = AptError::HashMismatch(m).to_string();
        assert!(text.contains("mirror sync in progress?"), "{text}");
        assert!(text.contains("(tried u1: not found; u2: sha256"), "{text}");
        // An unreachable URL goes on; alone, its own error comes back as it was.
        let unreachable = |u: &str| AptError::Fetch {
            url: u.into(),
            reason: "connection refused".into(),
        };
        let got = first_good::<()>(&urls[..1], |u| Err(unreachable(u))).unwrap();
        assert!(matches!(
            got,
            Err(Missed::Failed(_, Some(AptError::Fetch { .. })))
        ));
        let got = first_good(&urls, |u| match u {
            "u1" => Err(unreachable(u)),
            _ => Ok(Some(1)),
        })
        .unwrap();
        assert_eq!(got.unwrap(), 1);
        // Offline is never passed over.
        let got = first_good::<()>(&urls, |u| Err(AptError::Offline { url: u.into() }));
        assert!(matches!(got, Err(AptError::Offline { .. })));
    }
}
