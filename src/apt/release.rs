//! A source's metadata: the Release file (InRelease clearsigned, or Release + Release.gpg
//! detached), its signature checked against the source's key, its SHA256 list, and the
//! `Packages` indices it vouches for (each verified by sha256 AND size before it is parsed).
//!
//! Not checked (yet): `Valid-Until` (snapshots are long expired by design; a lock pins the
//! files by hash anyway) and key expiry/revocation.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use pgp::composed::{
    CleartextSignedMessage, Deserializable, DetachedSignature, SignedPublicKey, SignedPublicSubKey,
};
use pgp::packet::Signature;

use super::control::{self, parse_depends, parse_paragraphs, parse_provides, Alternatives, Dep};
use super::fetch::{fetch_bytes, join_url, Fetcher};
use super::version::Version;
use super::AptError;
use crate::digest::{Digest, HashingReader};

/// Largest Release / InRelease / key file read.
const MAX_RELEASE: u64 = 64 << 20;
/// Largest compressed or uncompressed Packages index read.
const MAX_INDEX: u64 = 1 << 30;

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
}

impl Source {
    /// The URL the archive's paths are relative to.
    pub fn archive_url(&self) -> String {
        match &self.snapshot {
            Some(ts) => join_url(&self.url, ts),
            None => self.url.trim_end_matches('/').to_string(),
        }
    }
}

/// `Multi-Arch` of a binary package.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiArch {
    No,
    Same,
    Foreign,
    Allowed,
}

/// One binary package of an index: what the resolver needs, and where to get it.
#[derive(Clone, Debug)]
pub struct Package {
    pub name: String,
    pub version: Version,
    pub architecture: String,
    pub multi_arch: MultiArch,
    /// Pre-Depends then Depends.
    pub depends: Vec<Alternatives>,
    pub provides: Vec<Dep>,
    /// Path relative to the archive root (`pool/main/…/x.deb`).
    pub filename: String,
    pub size: u64,
    pub sha256: Digest,
    /// The archive root it came from ([`Source::archive_url`]).
    pub source_url: String,
}

/// A loaded source: its packages, in index order.
#[derive(Clone, Debug)]
pub struct SourceIndex {
    pub source_url: String,
    pub packages: Vec<Package>,
}

/// A parsed Release file.
#[derive(Clone, Debug, Default)]
pub struct Release {
    pub suite: Option<String>,
    pub codename: Option<String>,
    /// Path (relative to `dists/SUITE/`) → (sha256, size).
    pub sha256: BTreeMap<String, (Digest, u64)>,
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
        Ok(Release {
            suite: p.get("Suite").map(str::to_string),
            codename: p.get("Codename").map(str::to_string),
            sha256,
        })
    }
}

/// A 64-hex-digit sha256 (either case) as a [`Digest`].
pub fn parse_sha256(hex: &str) -> Option<Digest> {
    format!("sha256:{}", hex.to_ascii_lowercase()).parse().ok()
}

/// Loads the OpenPGP public keys in a key file (armored or binary; several keys allowed).
pub fn load_keys(path: &Path) -> Result<Vec<SignedPublicKey>, AptError> {
    let bad = |reason: String| AptError::Key {
        path: path.to_path_buf(),
        reason,
    };
    let data = fs_err::read(path).map_err(|source| AptError::Io {
        path: path.to_path_buf(),
        source,
    })?;
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

/// Fetches and verifies the source's Release: InRelease if present, else Release (+ Release.gpg).
pub fn fetch_release(fetcher: &dyn Fetcher, source: &Source) -> Result<Release, AptError> {
    let dists = join_url(&source.archive_url(), &format!("dists/{}", source.suite));
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
    let in_url = join_url(&dists, "InRelease");
    let (text, url) = if let Some(bytes) = fetch_bytes(fetcher, &in_url, MAX_RELEASE)? {
        let text = String::from_utf8(bytes).map_err(|_| AptError::Release {
            url: in_url.clone(),
            reason: "not UTF-8".into(),
        })?;
        (verify_clearsigned(&text, keys.as_deref(), &in_url)?, in_url)
    } else {
        let url = join_url(&dists, "Release");
        let bytes = fetch_bytes(fetcher, &url, MAX_RELEASE)?.ok_or_else(|| AptError::NotFound {
            url: format!("{in_url} and {url}"),
        })?;
        if let Some(keys) = &keys {
            let sig_url = join_url(&dists, "Release.gpg");
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
    Ok(release)
}

/// A decompressing reader for a file name's extension (`.xz`, `.gz`, `.zst`, none).
pub(crate) fn decoder<'a>(
    name: &str,
    r: Box<dyn Read + 'a>,
) -> Result<Box<dyn Read + 'a>, std::io::Error> {
    Ok(if name.ends_with(".xz") {
        Box::new(liblzma::read::XzDecoder::new_multi_decoder(r))
    } else if name.ends_with(".gz") {
        Box::new(flate2::read::MultiGzDecoder::new(r))
    } else if name.ends_with(".zst") {
        Box::new(zstd::stream::read::Decoder::new(r)?)
    } else {
        r
    })
}

/// Fetches one file listed in the Release, verifying size and sha256 before returning it.
fn fetch_verified(
    fetcher: &dyn Fetcher,
    url: &str,
    what: &str,
    expected: Digest,
    size: u64,
) -> Result<Option<Vec<u8>>, AptError> {
    if size > MAX_INDEX {
        return Err(AptError::TooLarge {
            url: url.to_string(),
            limit: MAX_INDEX,
        });
    }
    let Some(r) = fetcher.open(url)? else {
        return Ok(None);
    };
    let read_err = |source| AptError::Read {
        url: url.to_string(),
        source,
    };
    let mut hr = HashingReader::new(r);
    let mut data = Vec::new();
    (&mut hr)
        .take(size)
        .read_to_end(&mut data)
        .map_err(read_err)?;
    // Bytes past the announced size count too (bounded), so the mismatch says how many.
    std::io::copy(&mut (&mut hr).take(1 << 30), &mut std::io::sink()).map_err(read_err)?;
    let (_, found, found_size) = hr.finish();
    if found != expected || found_size != size {
        return Err(AptError::HashMismatch(Box::new(super::Mismatch {
            what: what.to_string(),
            url: url.to_string(),
            expected,
            found,
            expected_size: size,
            found_size,
        })));
    }
    Ok(Some(data))
}

/// Loads a source: its verified Release, then for each component the `binary-ARCH` and (if
/// listed) `binary-all` Packages indices, preferring `.xz`, then `.gz`, then uncompressed.
pub fn load_source(fetcher: &dyn Fetcher, source: &Source) -> Result<SourceIndex, AptError> {
    let release = fetch_release(fetcher, source)?;
    let archive = source.archive_url();
    let dists = join_url(&archive, &format!("dists/{}", source.suite));
    let mut packages = Vec::new();
    let mut seen: HashSet<(String, String, String)> = HashSet::new();
    for comp in &source.components {
        for arch in [source.architecture.as_str(), "all"] {
            if arch == "all" && source.architecture == "all" {
                continue;
            }
            let base = format!("{comp}/binary-{arch}/Packages");
            let names = [format!("{base}.xz"), format!("{base}.gz"), base.clone()];
            let mut text = None;
            for name in names.iter().filter(|n| release.sha256.contains_key(*n)) {
                let (digest, size) = release.sha256[name];
                let url = join_url(&dists, name);
                let what = format!("index {name}");
                let Some(data) = fetch_verified(fetcher, &url, &what, digest, size)? else {
                    continue;
                };
                let mut out = Vec::new();
                decoder(name, Box::new(&data[..]))
                    .and_then(|d| d.take(MAX_INDEX).read_to_end(&mut out))
                    .map_err(|source| AptError::Decompress {
                        what: url.clone(),
                        source,
                    })?;
                let s = String::from_utf8(out).map_err(|_| AptError::Release {
                    url: url.clone(),
                    reason: "Packages index is not UTF-8".into(),
                })?;
                text = Some((s, url));
                break;
            }
            let Some((text, url)) = text else {
                if arch == "all" {
                    continue;
                }
                return Err(AptError::IndexMissing {
                    url: join_url(&dists, "InRelease"),
                    what: format!("Packages index for {comp}/binary-{arch}"),
                    tried: names.join(", "),
                });
            };
            for p in parse_packages(&text, &url, &archive)? {
                if p.architecture != source.architecture && p.architecture != "all" {
                    continue;
                }
                let key = (
                    p.name.clone(),
                    p.version.to_string(),
                    p.architecture.clone(),
                );
                if seen.insert(key) {
                    packages.push(p);
                }
            }
        }
    }
    Ok(SourceIndex {
        source_url: archive,
        packages,
    })
}

/// Parses a Packages index.
pub fn parse_packages(text: &str, what: &str, source_url: &str) -> Result<Vec<Package>, AptError> {
    let ps = parse_paragraphs(text).map_err(|source| AptError::Control {
        what: what.to_string(),
        source,
    })?;
    ps.iter().map(|p| package_of(p, what, source_url)).collect()
}

fn package_of(p: &control::Paragraph, what: &str, source_url: &str) -> Result<Package, AptError> {
    let name = p.get("Package").unwrap_or("").to_string();
    let bad = |reason: String| AptError::Field {
        what: what.to_string(),
        package: name.clone(),
        reason,
    };
    if name.is_empty() {
        return Err(bad("no Package field".into()));
    }
    let field = |f: &str| p.get(f).ok_or_else(|| bad(format!("no {f} field")));
    let version = Version::parse(field("Version")?).map_err(|e| bad(e.to_string()))?;
    let mut depends = Vec::new();
    for f in ["Pre-Depends", "Depends"] {
        if let Some(v) = p.get(f) {
            depends.extend(parse_depends(v).map_err(|e| bad(format!("{f}: {e}")))?);
        }
    }
    let provides = match p.get("Provides") {
        Some(v) => parse_provides(v).map_err(|e| bad(format!("Provides: {e}")))?,
        None => Vec::new(),
    };
    let multi_arch = match p.get("Multi-Arch").unwrap_or("no") {
        "same" => MultiArch::Same,
        "foreign" => MultiArch::Foreign,
        "allowed" => MultiArch::Allowed,
        _ => MultiArch::No,
    };
    let sha = field("SHA256")?;
    let size = field("Size")?;
    Ok(Package {
        version,
        architecture: field("Architecture")?.to_string(),
        multi_arch,
        depends,
        provides,
        filename: field("Filename")?.to_string(),
        size: size
            .parse()
            .map_err(|_| bad(format!("bad Size `{size}`")))?,
        sha256: parse_sha256(sha).ok_or_else(|| bad(format!("bad SHA256 `{sha}`")))?,
        source_url: source_url.to_string(),
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(Release::parse("Suite: x\n", "u").is_err());
        assert!(Release::parse("SHA256:\n zz 1 a\n", "u").is_err());
    }

    #[test]
    fn packages_entries() {
        let h = "b".repeat(64);
        let text = format!(
            "Package: a\nVersion: 1:2.0-1\nArchitecture: amd64\nPre-Depends: p\nDepends: b (>= 1) | c\nProvides: v (= 2)\nMulti-Arch: foreign\nFilename: pool/a.deb\nSize: 10\nSHA256: {h}\n\n\
             Package: b\nVersion: 1\nArchitecture: all\nFilename: pool/b.deb\nSize: 3\nSHA256: {h}\n"
        );
        let ps = parse_packages(&text, "idx", "http://x").unwrap();
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[0].depends.len(), 2);
        assert_eq!(ps[0].depends[0][0].name, "p");
        assert_eq!(ps[0].multi_arch, MultiArch::Foreign);
        assert_eq!(ps[0].provides[0].name, "v");
        let err = parse_packages("Package: x\nVersion: 1\n", "idx", "u").unwrap_err();
        assert!(err.to_string().contains("package `x`"), "{err}");
    }
}
