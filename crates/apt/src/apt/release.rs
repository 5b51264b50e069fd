//! A source's metadata: the Release file (InRelease clearsigned, or Release + Release.gpg
//! detached), its signature checked against the source's key, and its SHA256 list, which
//! vouches for the `Packages` indices ([`super::index`] reads them, by sha256 AND size).
//!
//! `Date` and `Valid-Until` are read here and checked by [`super::fresh`] (an expired Release
//! is refused unless the source is a snapshot). Not checked (yet): key expiry/revocation.

use std::io::Read;
use std::path::Path;

use pgp::composed::{
    CleartextSignedMessage, Deserializable, DetachedSignature, SignedPublicKey, SignedPublicSubKey,
};
use pgp::packet::Signature;

pub use super::source::{parse_sha256, Release, Source, Verified};
use super::AptError;
use crate::http::{fetch_bytes, join_url, Fetcher};

/// Largest Release / InRelease / key file read.
const MAX_RELEASE: u64 = 64 << 20;

/// Loads the OpenPGP public keys in a key file (armored or binary; several keys allowed).
pub fn load_keys(path: &Path) -> Result<Vec<SignedPublicKey>, AptError> {
    let bad = |reason: String| AptError::Key {
        path: path.to_path_buf(),
        reason,
    };
    let data = crate::bounded::read_regular(path, crate::bounded::MAX_TEXT_FILE)?;
    let (keys, _) = SignedPublicKey::from_reader_many(&data[..]).map_err(|e| bad(e.to_string()))?;
    let keys: Vec<SignedPublicKey> = keys
        .collect::<Result<_, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if keys.is_empty() {
        return Err(bad("no public key in the file".into()));
    }
    Ok(keys)
}

/// A signature verifies if it uses a strong hash (as apt: no MD5, SHA-1 or RIPEMD-160) and
/// verifies against a primary key, or against a subkey whose binding signature by its primary
/// verifies.
fn verifies(sig: &Signature, data: &[u8], keys: &[SignedPublicKey]) -> bool {
    use pgp::crypto::hash::HashAlgorithm as H;
    let strong = matches!(
        sig.hash_alg(),
        Some(H::Sha224 | H::Sha256 | H::Sha384 | H::Sha512 | H::Sha3_256 | H::Sha3_512)
    );
    strong
        && keys.iter().any(|k| {
            sig.verify(&k.primary_key, data).is_ok()
                || k.public_subkeys.iter().any(|sk: &SignedPublicSubKey| {
                    sk.verify_bindings(&k.primary_key).is_ok() && sig.verify(&sk.key, data).is_ok()
                })
        })
}

/// Verifies a clearsigned InRelease against `keys`; returns the signed text (LF line ends).
/// Text before the armor or after the signature is refused, so nothing unsigned is parsed.
pub fn verify_clearsigned(
    text: &str,
    keys: Option<&[SignedPublicKey]>,
    url: &str,
) -> Result<String, AptError> {
    let bad = |reason: String| AptError::BadSignature {
        url: url.to_string(),
        reason,
    };
    let end = "-----END PGP SIGNATURE-----";
    let trailing_ok = text
        .find(end)
        .is_some_and(|i| text[i + end.len()..].trim().is_empty());
    if !trailing_ok {
        return Err(bad(
            "not a clearsigned message (or data after its signature)".into(),
        ));
    }
    let (msg, _) = CleartextSignedMessage::from_string(text).map_err(|e| bad(e.to_string()))?;
    if let Some(keys) = keys {
        let signed = msg.signed_text();
        if !msg
            .signatures()
            .iter()
            .any(|s| verifies(s, signed.as_bytes(), keys))
        {
            return Err(bad("no signature verifies against the source's key".into()));
        }
    }
    Ok(msg.signed_text().replace("\r\n", "\n"))
}

/// Verifies a detached signature (Release.gpg) over `data`.
pub fn verify_detached(
    data: &[u8],
    sig: &[u8],
    keys: &[SignedPublicKey],
    url: &str,
) -> Result<(), AptError> {
    let bad = |reason: String| AptError::BadSignature {
        url: url.to_string(),
        reason,
    };
    let (sigs, _) = DetachedSignature::from_reader_many(sig).map_err(|e| bad(e.to_string()))?;
    let sigs: Vec<DetachedSignature> = sigs
        .collect::<Result<_, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if sigs.iter().any(|s| verifies(&s.signature, data, keys)) {
        Ok(())
    } else {
        Err(bad("no signature verifies against the source's key".into()))
    }
}

/// Fetches and verifies the source's Release: InRelease if present, else Release (+ Release.gpg),
/// from its `url`, or, only when that cannot be reached or has neither, from the first of its
/// mirrors that has one. Wherever it comes from it is verified against the source's key and
/// must be for the source's suite; a bad one is an error, never passed over.
pub fn fetch_release(fetcher: &dyn Fetcher, source: &Source) -> Result<Verified, AptError> {
    let keys = match &source.signed_by {
        Some(p) => Some(load_keys(p)?),
        None if source.allow_unsigned => None,
        None => {
            return Err(AptError::Unsigned {
                url: source.url.clone(),
                suite: source.suite.clone(),
            })
        }
    };
    let roots = source.archive_urls();
    let mut tried = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        let dists = join_url(root, &format!("dists/{}", source.suite));
        let outcome = match release_at(fetcher, source, &dists, keys.as_deref()) {
            Ok(Some((release, url))) => {
                let mut order = vec![root.clone()];
                order.extend(
                    roots
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| *j != i)
                        .map(|(_, r)| r.clone()),
                );
                return Ok(Verified {
                    release,
                    roots: order,
                    url,
                });
            }
            Ok(None) => super::Outcome::NotFound,
            // Cannot be reached (or answers 5xx): the next root.
            Err(AptError::Fetch { reason, .. }) if roots.len() > 1 => {
                super::Outcome::Failed(crate::bounded::clip_to(&reason, 400).into_owned())
            }
            Err(e) => return Err(e),
        };
        tried.push(super::Tried {
            url: join_url(&dists, "InRelease"),
            outcome,
        });
    }
    if roots.len() == 1 {
        let dists = join_url(&roots[0], &format!("dists/{}", source.suite));
        return Err(AptError::NotFound {
            url: format!(
                "{} and {}",
                join_url(&dists, "InRelease"),
                join_url(&dists, "Release")
            ),
        });
    }
    Err(AptError::ReleaseUnavailable {
        url: source.url.clone(),
        suite: source.suite.clone(),
        tried,
    })
}

/// The verified Release under `dists` (`ROOT/dists/SUITE`) and the URL it came from; `None`
/// when neither InRelease nor Release is there.
fn release_at(
    fetcher: &dyn Fetcher,
    source: &Source,
    dists: &str,
    keys: Option<&[SignedPublicKey]>,
) -> Result<Option<(Release, String)>, AptError> {
    let in_url = join_url(dists, "InRelease");
    let (text, url) = if let Some(bytes) = fetch_bytes(fetcher, &in_url, MAX_RELEASE)? {
        let text = String::from_utf8(bytes).map_err(|_| AptError::Release {
            url: in_url.clone(),
            reason: "not UTF-8".into(),
        })?;
        (verify_clearsigned(&text, keys, &in_url)?, in_url)
    } else {
        let url = join_url(dists, "Release");
        let Some(bytes) = fetch_bytes(fetcher, &url, MAX_RELEASE)? else {
            return Ok(None);
        };
        if let Some(keys) = keys {
            let sig_url = join_url(dists, "Release.gpg");
            let sig = fetch_bytes(fetcher, &sig_url, MAX_RELEASE)?.ok_or_else(|| {
                AptError::BadSignature {
                    url: sig_url.clone(),
                    reason: "no InRelease and no Release.gpg, but a signing key is given".into(),
                }
            })?;
            verify_detached(&bytes, &sig, keys, &sig_url)?;
        }
        let text = String::from_utf8(bytes).map_err(|_| AptError::Release {
            url: url.clone(),
            reason: "not UTF-8".into(),
        })?;
        (text, url)
    };
    let release = Release::parse(&text, &url)?;
    let last = source.suite.rsplit('/').next().unwrap_or(&source.suite);
    let names = [release.suite.as_deref(), release.codename.as_deref()];
    if !names
        .iter()
        .flatten()
        .any(|n| *n == last || *n == source.suite)
    {
        return Err(AptError::Release {
            url,
            reason: format!(
                "it is for suite {:?} / codename {:?}, not `{}`",
                release.suite.as_deref().unwrap_or(""),
                release.codename.as_deref().unwrap_or(""),
                source.suite
            ),
        });
    }
    super::fresh::check_valid_until(&release, source, &url)?;
    Ok(Some((release, url)))
}

/// The most memory an xz stream may ask its decoder for. `xz -9e` needs 65 MiB; a header
/// may ask for 4 GiB (found by the `apt_packages` fuzz target), which is refused instead.
pub(crate) const XZ_MEMLIMIT: u64 = 256 << 20;

/// An xz decoder (concatenated streams) held to [`XZ_MEMLIMIT`].
pub fn xz_stream() -> Result<liblzma::stream::Stream, std::io::Error> {
    liblzma::stream::Stream::new_stream_decoder(XZ_MEMLIMIT, liblzma::stream::CONCATENATED)
        .map_err(std::io::Error::other)
}

/// A decompressing reader for a file name's extension (`.xz`, `.gz`, `.zst`, none).
pub(crate) fn decoder<'a>(
    name: &str,
    r: Box<dyn Read + 'a>,
) -> Result<Box<dyn Read + 'a>, std::io::Error> {
    Ok(if name.ends_with(".xz") {
        Box::new(liblzma::read::XzDecoder::new_stream(r, xz_stream()?))
    } else if name.ends_with(".gz") {
        Box::new(flate2::read::MultiGzDecoder::new(r))
    } else if name.ends_with(".zst") {
        Box::new(zstd::stream::read::Decoder::new(r)?)
    } else {
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_xz_header_asking_for_gigabytes_is_refused() {
        // An xz stream whose LZMA2 filter asks for a 4 GiB dictionary (what the fuzz target
        // found): an ordinary stream with its block header's dictionary byte set to 40, the
        // header's CRC32 made again.
        let mut xz = Vec::new();
        liblzma::read::XzEncoder::new(&b"Package: a\n"[..], 0)
            .read_to_end(&mut xz)
            .unwrap();
        let header = 12;
        let len = (xz[header] as usize + 1) * 4;
        // Flags, then the one filter: id 0x21 (LZMA2), properties size 1, the dictionary byte.
        assert_eq!(&xz[header + 2..header + 4], [0x21, 0x01]);
        xz[header + 4] = 40;
        let crc = crc32fast::hash(&xz[header..header + len - 4]);
        xz[header + len - 4..header + len].copy_from_slice(&crc.to_le_bytes());
        let mut out = Vec::new();
        let e = decoder("Packages.xz", Box::new(&xz[..]))
            .unwrap()
            .read_to_end(&mut out)
            .unwrap_err();
        assert!(e.to_string().to_lowercase().contains("memory"), "{e}");
        // An ordinary one reads.
        let mut small = Vec::new();
        liblzma::read::XzEncoder::new(&b"Package: a\n"[..], 6)
            .read_to_end(&mut small)
            .unwrap();
        let mut out = Vec::new();
        decoder("Packages.xz", Box::new(&small[..]))
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"Package: a\n");
    }

    #[test]
    fn snapshot_urls() {
        let mut s = Source {
            url: "https://snapshot.debian.org/archive/debian/".into(),
            suite: "bookworm".into(),
            components: vec!["main".into()],
            architecture: "amd64".into(),
            snapshot: None,
            signed_by: None,
            allow_unsigned: false,
            check_valid_until: true,
            mirrors: vec!["https://mirror.example/debian".into()],
        };
        assert_eq!(
            s.archive_url(),
            "https://snapshot.debian.org/archive/debian"
        );
        s.snapshot = Some("20240301T000000Z".into());
        assert_eq!(
            s.archive_url(),
            "https://snapshot.debian.org/archive/debian/20240301T000000Z"
        );
        assert_eq!(
            s.archive_urls(),
            [
                "https://snapshot.debian.org/archive/debian/20240301T000000Z",
                "https://mirror.example/debian/20240301T000000Z"
            ]
        );
    }

    #[test]
    fn release_sha256_section() {
        let h = "a".repeat(64);
        let text = format!(
            "Origin: Test\nSuite: stable\nCodename: bookworm\nSHA256:\n {h} 12 main/binary-amd64/Packages\n {h} 5 main/binary-amd64/Packages.xz\n"
        );
        let r = Release::parse(&text, "u").unwrap();
        assert_eq!(r.codename.as_deref(), Some("bookworm"));
        assert_eq!(r.sha256.len(), 2);
        assert_eq!(r.sha256["main/binary-amd64/Packages"].1, 12);
        assert_eq!((r.date, r.valid_until), (None, None));
        let dated = format!("Date: Sat, 10 Feb 2024 09:56:43 UTC\nValid-Until: Sat, 17 Feb 2024 09:56:43 UTC\n{text}");
        let r = Release::parse(&dated, "u").unwrap();
        assert_eq!(r.valid_until.unwrap() - r.date.unwrap(), 7 * 86_400);
        let e = Release::parse(&dated.replace("17 Feb", "17 Fbr"), "u").unwrap_err();
        assert!(
            e.to_string().contains("bad Valid-Until `Sat, 17 Fbr"),
            "{e}"
        );
        assert!(!r.acquire_by_hash && r.components.is_empty());
        let r = Release::parse(
            &format!("Acquire-By-Hash: yes\nComponents: main contrib non-free\n{text}"),
            "u",
        )
        .unwrap();
        assert!(r.acquire_by_hash);
        assert_eq!(r.components, ["main", "contrib", "non-free"]);
        assert!(Release::parse("Suite: x\n", "u").is_err());
        assert!(Release::parse("SHA256:\n zz 1 a\n", "u").is_err());
    }
}
