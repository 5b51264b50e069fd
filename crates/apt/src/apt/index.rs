//! A source's `Packages` indices, streamed: each is downloaded, hashed, decompressed and parsed
//! in one pass, one paragraph at a time, keeping of each package only what the resolver and
//! the lock read ([`Package`]); descriptions and the other fields are checked and dropped.
//!
//! Nothing parsed from an index is used before the whole file has matched the sha256 and size
//! that the signed Release gives: its packages are a candidate, handed on only after the check,
//! and dropped on a mismatch, which is then the error whatever else was wrong with the content.
//!
//! Memory: one line, one paragraph, and a 24-byte key per package kept: the packages
//! themselves go to the source's [`Spill`] on disk as they are parsed, and are read back by
//! name ([`SourceIndex::named`], [`SourceIndex::providing`]) for the few the resolver looks
//! at. The index text is never whole in memory; reading each index whole first (50 MB for the
//! Debian archive's bookworm `main` amd64, 22 MB for its `all`) and then every paragraph in
//! full is what made `ocibuild lock` take 470 MB, and keeping every package in memory
//! (0.7 KB each) made it grow by 45 MB per bookworm `main` (BENCHMARKS.md).

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use super::control::{
    parse_depends, parse_provides, ControlError, Keep, Paragraph, ParagraphReader, ReadError,
};
pub use super::package::{MultiArch, Package};
use super::release::{decoder, fetch_release, parse_sha256, Source, Verified};
use super::roots::{first_good, index_urls, Missed};
use super::spill::{Keys, SourceIndex, Spill};
use super::version::Version;
use super::{AptError, Mismatch};
use crate::digest::{Digest, HashingReader};
use crate::http::Fetcher;

/// Largest Packages index read, compressed or not.
const MAX_INDEX: u64 = 1 << 30;

/// The fields of a Packages paragraph that are kept: those [`package_of`] reads.
const FIELDS: &[&str] = &[
    "Package",
    "Version",
    "Architecture",
    "Multi-Arch",
    "Pre-Depends",
    "Depends",
    "Provides",
    "Filename",
    "Size",
    "SHA256",
    "Essential",
];

/// The strings every package of a source shares.
struct Shared {
    source_url: Arc<str>,
    native: Arc<str>,
    all: Arc<str>,
}

impl Shared {
    fn new(source_url: &str, architecture: &str) -> Shared {
        Shared {
            source_url: Arc::from(source_url),
            native: Arc::from(architecture),
            all: Arc::from("all"),
        }
    }
}

/// What the signed Release says an index is.
struct Expected {
    /// `index main/binary-amd64/Packages.xz`, for messages.
    what: String,
    digest: Digest,
    size: u64,
}

/// Loads a source: its verified Release, then for each component the `binary-ARCH` and (if
/// listed, and the Release does not say `No-Support-for-Architecture-all: Packages`)
/// `binary-all` Packages indices, preferring `.xz`, then `.gz`, then uncompressed, each looked
/// for where [`super::roots`] says. The packages go to a spill file in `spill_dir` (the store's
/// `tmp/`).
pub fn load_source(
    fetcher: &dyn Fetcher,
    source: &Source,
    spill_dir: &Path,
) -> Result<SourceIndex, AptError> {
    let verified = fetch_release(fetcher, source)?;
    let archive = source.archive_url();
    let spill = Spill::new(&archive, spill_dir)?;
    let kept = load_indices(fetcher, source, &verified, &source.components, &spill)?;
    let mut index = SourceIndex::new(spill, kept.names, kept.provides);
    index.set_essential(kept.essential);
    index.release_date = verified.release.date;
    index.origin = Some(Arc::new(super::origin::Origin {
        source: source.clone(),
        verified,
        spill_dir: spill_dir.to_path_buf(),
    }));
    Ok(index)
}

/// The keys of the packages of `components`' indices (of the source's architecture and `all`),
/// each index verified against `verified`'s Release, written to `spill`.
pub(crate) fn load_indices(
    fetcher: &dyn Fetcher,
    source: &Source,
    verified: &Verified,
    components: &[String],
    spill: &Spill,
) -> Result<Keys, AptError> {
    let release = &verified.release;
    // The lock records the source's own archive root, whichever root served an index.
    let shared = Shared::new(&source.archive_url(), &source.architecture);
    let mut kept = Keys::default();
    for comp in components {
        for arch in [source.architecture.as_str(), "all"] {
            if arch == "all" && (source.architecture == "all" || release.no_all_packages) {
                continue;
            }
            let base = format!("{comp}/binary-{arch}/Packages");
            let names = [format!("{base}.xz"), format!("{base}.gz"), base.clone()];
            let mut verified_keys = None;
            let mut tried = Vec::new();
            for name in &names {
                let Some(&(digest, size)) = release.sha256.get(name) else {
                    continue;
                };
                let urls = index_urls(
                    &verified.roots,
                    &source.suite,
                    name,
                    &digest,
                    release.acquire_by_hash,
                );
                let expected = Expected {
                    what: format!("index {name}"),
                    digest,
                    size,
                };
                let to = Dest {
                    shared: &shared,
                    spill,
                };
                let got = first_good(&urls, |url| read_index(fetcher, url, name, &expected, &to))?;
                match got {
                    Ok(keys) => {
                        verified_keys = Some(keys);
                        break;
                    }
                    // Not there: the next compression, as apt.
                    Err(Missed::NotFound(t)) => tried.extend(t),
                    // Another file: an error, never a fallback to another compression.
                    Err(Missed::Mismatch(m)) => return Err(AptError::HashMismatch(m)),
                    Err(Missed::Failed(_, Some(e))) => return Err(e),
                    Err(Missed::Failed(t, None)) => {
                        tried.extend(t);
                        return Err(AptError::IndexUnavailable {
                            what: format!("index {name}"),
                            tried,
                        });
                    }
                }
            }
            let Some(keys) = verified_keys else {
                if arch == "all" {
                    continue;
                }
                if tried.is_empty() {
                    return Err(AptError::IndexMissing {
                        url: verified.url.clone(),
                        what: format!("Packages index for {comp}/binary-{arch}"),
                        tried: names.join(", "),
                    });
                }
                return Err(AptError::IndexUnavailable {
                    what: format!("the Packages index for {comp}/binary-{arch}"),
                    tried,
                });
            };
            kept.append(keys);
        }
    }
    Ok(kept)
}

/// Why a package's `Filename` is refused, if it is: it must be a path relative to the archive
/// root without `..` (joined to the archive's URL, a `file://` archive would read outside its
/// root), not absolute, not a URL, with nothing a URL would read as a query or fragment.
pub fn bad_filename(f: &str) -> Option<&'static str> {
    let scheme = f.split_once(':').is_some_and(|(s, _)| {
        s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    if f.is_empty() {
        Some("it is empty")
    } else if f.starts_with('/') {
        Some("it is an absolute path")
    } else if scheme {
        Some("it is a URL")
    } else if f.split('/').any(|c| c == "..") {
        Some("it has a `..` component")
    } else if ["%2e", "%2f"]
        .iter()
        .any(|p| f.to_ascii_lowercase().contains(p))
    {
        // A URL's `%2e%2e` is `..` once resolved (`%3a` for an epoch's colon is fine).
        Some("it has a percent-encoded `.` or `/`")
    } else if f.contains(['?', '#', '\\']) || f.chars().any(char::is_control) {
        Some("it has a `?`, `#`, `\\` or a control character")
    } else {
        None
    }
}

/// Where an index's packages go.
struct Dest<'a> {
    shared: &'a Shared,
    spill: &'a Spill,
}

/// Streams one index: `Ok(None)` when it is not there; the keys of its packages (of the
/// source's architecture and `all`) only once the file matched `expected`.
fn read_index(
    fetcher: &dyn Fetcher,
    url: &str,
    name: &str,
    expected: &Expected,
    to: &Dest<'_>,
) -> Result<Option<Keys>, AptError> {
    if expected.size > MAX_INDEX {
        return Err(AptError::TooLarge {
            url: url.to_string(),
            limit: MAX_INDEX,
        });
    }
    let Some(r) = fetcher.open(url)? else {
        return Ok(None);
    };
    let mut hashed = HashingReader::new(Trap::new(r));
    let over = Cell::new(false);
    let mut file = (&mut hashed).take(expected.size);
    let candidate = parse_stream(name, &mut file, url, to, &over);
    // Whatever the parse left (all of it after an early error), and bytes past the announced
    // size (bounded), go through the hash too, so the mismatch says how many there were.
    let rest = file.limit() + (1 << 30);
    let drained = io::copy(&mut (&mut hashed).take(rest), &mut io::sink());
    let (trap, found, found_size) = hashed.finish();
    let read_err = |source| AptError::Read {
        url: url.to_string(),
        source,
    };
    if let Some(source) = trap.error {
        return Err(read_err(source));
    }
    drained.map_err(read_err)?;
    if found != expected.digest || found_size != expected.size {
        return Err(AptError::HashMismatch(Box::new(Mismatch {
            what: expected.what.clone(),
            url: url.to_string(),
            expected: expected.digest,
            found,
            expected_size: expected.size,
            found_size,
            tried: Vec::new(),
            index: true,
        })));
    }
    if over.get() {
        return Err(AptError::TooLarge {
            url: format!("{url} (decompressed)"),
            limit: MAX_INDEX,
        });
    }
    candidate.map(Some)
}

/// Decompresses and parses an index as it is read. The result is unverified: see
/// [`read_index`].
fn parse_stream(
    name: &str,
    file: &mut dyn Read,
    url: &str,
    to: &Dest<'_>,
    over: &Cell<bool>,
) -> Result<Keys, AptError> {
    let decompress_err = |source| AptError::Decompress {
        what: url.to_string(),
        source,
    };
    let dec = decoder(name, Box::new(file)).map_err(decompress_err)?;
    let text = BufReader::with_capacity(
        1 << 16,
        Capped {
            inner: dec,
            left: MAX_INDEX,
            over,
        },
    );
    read_packages(text, url, to).map_err(|e| e.into_error(url))
}

/// Why [`read_packages`] failed: the text, or one paragraph's fields.
#[derive(Debug)]
enum Failure {
    Read(ReadError),
    Package(AptError),
}

impl Failure {
    /// The error for the index at `url`; a read error is the decompressor's (the download's
    /// own errors are told apart by [`Trap`]).
    fn into_error(self, url: &str) -> AptError {
        match self {
            Failure::Read(ReadError::Io { source, .. }) => AptError::Decompress {
                what: url.to_string(),
                source,
            },
            Failure::Read(ReadError::NotUtf8 { .. }) => AptError::Release {
                url: url.to_string(),
                reason: "Packages index is not UTF-8".into(),
            },
            Failure::Read(ReadError::Control(source)) => AptError::Control {
                what: url.to_string(),
                source,
            },
            Failure::Package(e) => e,
        }
    }
}

/// Parses a Packages index from a stream into the spill, keeping the keys of the packages of
/// the source's architecture and `all`.
///
/// Which error wins when there are several is as when the text was read whole before being
/// parsed: a read (decompression) error anywhere, then text that is not UTF-8 anywhere, then
/// the first syntax error, then the first paragraph with a bad field. So after an error this
/// reads on, as far as a higher-ranked one could still come.
fn read_packages<R: BufRead>(text: R, what: &str, to: &Dest<'_>) -> Result<Keys, Failure> {
    let mut reader = ParagraphReader::new(text, Keep::Only(FIELDS));
    let mut keys = Keys::default();
    let mut bad_field = None;
    loop {
        let p = match reader.next_paragraph() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => return Err(Failure::Read(settle(&mut reader, e))),
        };
        if bad_field.is_some() {
            continue;
        }
        let essential = p.get("Essential") == Some("yes");
        match package_of(&p, what, to.shared) {
            Ok(Some(p)) => {
                keys.push(to.spill, &p).map_err(Failure::Package)?;
                if essential {
                    keys.essential.push(Arc::clone(&p.name));
                }
            }
            Ok(None) => {}
            Err(e) => {
                bad_field = Some(e);
                keys = Keys::default();
            }
        }
    }
    match bad_field {
        Some(e) => Err(Failure::Package(e)),
        None => Ok(keys),
    }
}

/// After `err`, the error that reading the rest of the input makes the one to report
/// (the order of [`read_packages`]).
fn settle<R: BufRead>(reader: &mut ParagraphReader<R>, err: ReadError) -> ReadError {
    let drain = |reader: &mut ParagraphReader<R>| {
        let line = reader.line_no();
        io::copy(reader.get_mut(), &mut io::sink())
            .err()
            .map(|source| ReadError::Io { line, source })
    };
    let later = match &err {
        // An over-long line cannot be split into lines to check for UTF-8; a read error
        // further on still comes first.
        ReadError::Control(ControlError::LineTooLong { .. }) | ReadError::NotUtf8 { .. } => {
            drain(reader)
        }
        ReadError::Control(_) => match reader.check_rest() {
            Ok(()) => None,
            Err(ReadError::Control(ControlError::LineTooLong { .. })) => drain(reader),
            Err(e @ ReadError::NotUtf8 { .. }) => Some(drain(reader).unwrap_or(e)),
            Err(e) => Some(e),
        },
        ReadError::Io { .. } => None,
    };
    later.unwrap_or(err)
}

/// A package from its paragraph; `None` when it is for another architecture (checked all the
/// same: an index with a bad entry is refused, whatever its architecture).
fn package_of(p: &Paragraph, what: &str, shared: &Shared) -> Result<Option<Package>, AptError> {
    let name = p.get("Package").unwrap_or("");
    let bad = |reason: String| AptError::Field {
        what: what.to_string(),
        package: name.to_string(),
        reason,
    };
    if name.is_empty() {
        return Err(bad("no Package field".into()));
    }
    let field = |f: &str| p.get(f).ok_or_else(|| bad(format!("no {f} field")));
    // The checks run in the order they always have, so an entry with several faults is
    // reported by the same one.
    let version = Version::parse(field("Version")?).map_err(|e| bad(e.to_string()))?;
    let mut depends = String::new();
    for f in ["Pre-Depends", "Depends"] {
        if let Some(v) = p.get(f) {
            parse_depends(v).map_err(|e| bad(format!("{f}: {}", crate::diag::chain(&e))))?;
            if !depends.is_empty() {
                depends.push(',');
            }
            depends.push_str(v);
        }
    }
    let provides = match p.get("Provides") {
        Some(v) => {
            parse_provides(v).map_err(|e| bad(format!("Provides: {}", crate::diag::chain(&e))))?
        }
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
    let architecture = field("Architecture")?;
    let filename = field("Filename")?;
    if let Some(why) = bad_filename(filename) {
        return Err(bad(format!(
            "Filename `{}`: {why}; a Filename must be a path relative to the archive root \
             without `..`: the archive is broken or hostile, report it to its maintainers",
            crate::bounded::clip(filename)
        )));
    }
    let size = size
        .parse()
        .map_err(|_| bad(format!("bad Size `{size}`")))?;
    let sha256 = parse_sha256(sha).ok_or_else(|| bad(format!("bad SHA256 `{sha}`")))?;
    let architecture = if architecture == &*shared.native {
        Arc::clone(&shared.native)
    } else if architecture == "all" {
        Arc::clone(&shared.all)
    } else {
        return Ok(None);
    };
    Ok(Some(Package {
        name: Arc::from(name),
        version,
        architecture,
        multi_arch,
        depends: depends.into_boxed_str(),
        provides: provides.into_boxed_slice(),
        filename: filename.into(),
        size,
        sha256,
        source_url: Arc::clone(&shared.source_url),
    }))
}

/// The download under the hash: keeps its first error, so that one can be told from a
/// decompression error when it comes back out of the decoder.
struct Trap<R> {
    inner: R,
    error: Option<io::Error>,
}

impl<R> Trap<R> {
    fn new(inner: R) -> Trap<R> {
        Trap { inner, error: None }
    }
}

impl<R: Read> Read for Trap<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => {
                let kind = e.kind();
                self.error.get_or_insert(e);
                Err(io::Error::new(kind, "reading the index failed"))
            }
            other => other,
        }
    }
}

/// The decompressed text, refused past `left` bytes (`over` says so): a small file must not
/// decompress into an endless one.
struct Capped<'a, R> {
    inner: R,
    left: u64,
    over: &'a Cell<bool>,
}

impl<R: Read> Read for Capped<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.over.set(true);
            return Err(io::Error::other(format!(
                "more than {MAX_INDEX} bytes decompressed"
            )));
        }
        let max = usize::try_from(self.left)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The packages of `architecture` and `all` in an index held in memory, each once.
    fn parse_packages(
        text: &str,
        what: &str,
        source_url: &str,
        architecture: &str,
    ) -> Result<Vec<Package>, AptError> {
        let dir = tempfile::tempdir().unwrap();
        let shared = Shared::new(source_url, architecture);
        let spill = Spill::new(source_url, dir.path()).unwrap();
        let to = Dest {
            shared: &shared,
            spill: &spill,
        };
        let keys = read_packages(text.as_bytes(), what, &to).map_err(|e| e.into_error(what))?;
        SourceIndex::new(spill, keys.names, keys.provides).packages()
    }

    fn entry(name: &str, version: &str, arch: &str, extra: &str) -> String {
        format!(
            "Package: {name}\nVersion: {version}\nArchitecture: {arch}\n{extra}\
             Filename: pool/{name}_{version}_{arch}.deb\nSize: 10\nSHA256: {}\n\
             Description: {name}\n a long description\n .\n that is dropped\n\n",
            "b".repeat(64)
        )
    }

    #[test]
    fn packages_entries() {
        let text = [
            entry(
                "a",
                "1:2.0-1",
                "amd64",
                "Pre-Depends: p\nDepends: b (>= 1) | c,\n d\nProvides: v (= 2)\nMulti-Arch: foreign\n",
            ),
            entry("b", "1", "all", ""),
            entry("other", "1", "arm64", ""),
            // The same (name, version, architecture) twice: the first is kept.
            entry("b", "1", "all", "Depends: nothing-kept\n"),
            entry("b", "1.0", "all", ""),
        ]
        .concat();
        let ps = parse_packages(&text, "idx", "http://x", "amd64").unwrap();
        let names: Vec<String> = ps
            .iter()
            .map(|p| format!("{}={}:{}", p.name, p.version, p.architecture))
            .collect();
        assert_eq!(names, ["a=1:2.0-1:amd64", "b=1:all", "b=1.0:all"]);
        let a = &ps[0];
        // Pre-Depends then Depends, as groups.
        let deps = a.depends().unwrap();
        let groups: Vec<Vec<&str>> = deps
            .iter()
            .map(|g| g.iter().map(|d| d.name.as_str()).collect())
            .collect();
        assert_eq!(groups, [vec!["p"], vec!["b", "c"], vec!["d"]]);
        assert_eq!(a.multi_arch, MultiArch::Foreign);
        assert_eq!(a.provides[0].name, "v");
        assert_eq!(&*a.filename, "pool/a_1:2.0-1_amd64.deb");
        assert_eq!(&*a.source_url, "http://x");
        assert!(ps[1].depends().unwrap().is_empty());
        assert!(Arc::ptr_eq(&ps[0].source_url, &ps[1].source_url));

        let err = parse_packages("Package: x\nVersion: 1\n", "idx", "u", "amd64").unwrap_err();
        assert!(err.to_string().contains("package `x`"), "{err}");
        let err = parse_packages(
            &entry("x", "1", "amd64", "Depends: (\n"),
            "idx",
            "u",
            "amd64",
        )
        .unwrap_err();
        assert!(err.to_string().contains("Depends: dependency"), "{err}");
        // Entries of other architectures are checked all the same.
        let err = parse_packages(
            &entry("x", "1", "arm64", "Depends: A\n"),
            "idx",
            "u",
            "amd64",
        )
        .unwrap_err();
        assert!(matches!(err, AptError::Field { .. }), "{err}");
    }

    /// Reading the text whole first reported a decompression error, then non-UTF-8 text, then
    /// the first syntax error, then the first bad entry, wherever each was: so does the stream.
    #[test]
    fn filenames_outside_the_archive_are_refused() {
        for ok in [
            "pool/main/a/a_1:2.0-1_amd64.deb",
            "a.deb",
            "./pool/x%3a1.deb",
            "pool/a..b/c",
        ] {
            assert_eq!(bad_filename(ok), None, "{ok}");
        }
        for (bad, why) in [
            ("../../etc/passwd", "`..`"),
            ("pool/../../x.deb", "`..`"),
            ("pool/..", "`..`"),
            ("/etc/passwd", "absolute"),
            ("http://evil.example/x.deb", "URL"),
            ("file:/etc/passwd", "URL"),
            ("pool/x.deb?y", "`?`"),
            ("pool/%2e%2e/%2E%2E/x.deb", "percent-encoded"),
            ("pool%2f..%2fx.deb", "percent-encoded"),
            ("", "empty"),
        ] {
            assert!(bad_filename(bad).is_some_and(|w| w.contains(why)), "{bad}");
        }
        let text = entry("a", "1", "amd64", "").replace("Filename: pool/", "Filename: ../../");
        let e = parse_packages(
            &text,
            "http://x/dists/s/main/binary-amd64/Packages.xz",
            "u",
            "amd64",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "http://x/dists/s/main/binary-amd64/Packages.xz: package `a`: Filename \
             `../../a_1_amd64.deb`: it has a `..` component; a Filename must be a path relative \
             to the archive root without `..`: the archive is broken or hostile, report it to \
             its maintainers"
        );
    }

    #[test]
    fn error_precedence_is_as_reading_whole() {
        let bad_entry = "Package: x\nVersion: 1\n\n";
        let bad_syntax = "Package: y\nnot a field\n\n";
        let text = format!("{bad_entry}{}{bad_syntax}", entry("a", "1", "amd64", ""));
        let err = parse_packages(&text, "idx", "u", "amd64").unwrap_err();
        assert!(
            matches!(err, AptError::Control { ref source, .. }
                if matches!(source, ControlError::NotAField { line: 16, .. })),
            "{err}"
        );
        let bytes = [text.as_bytes(), b"Package: \xff\n"].concat();
        let shared = Shared::new("u", "amd64");
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new("u", dir.path()).unwrap();
        let to = Dest {
            shared: &shared,
            spill: &spill,
        };
        let err = read_packages(&bytes[..], "idx", &to)
            .unwrap_err()
            .into_error("idx");
        assert!(err.to_string().contains("not UTF-8"), "{err}");
        // Only bad entries: the first one.
        let text = format!("{}{bad_entry}Package: z\n\n", entry("a", "1", "amd64", ""));
        let err = parse_packages(&text, "idx", "u", "amd64").unwrap_err();
        assert!(err.to_string().contains("package `x`: no SHA256"), "{err}");
    }

    #[test]
    fn decompressed_size_is_capped() {
        let over = Cell::new(false);
        let mut capped = Capped {
            inner: &b"0123456789"[..],
            left: 10,
            over: &over,
        };
        let mut out = Vec::new();
        capped.read_to_end(&mut out).unwrap();
        assert_eq!((out.len(), over.get()), (10, false));
        let mut capped = Capped {
            inner: &b"0123456789!"[..],
            left: 10,
            over: &over,
        };
        assert!(capped.read_to_end(&mut Vec::new()).is_err());
        assert!(over.get());
    }

    /// Files in memory; `cut` makes a file's reader fail after that many bytes.
    struct Mem {
        files: HashMap<String, Vec<u8>>,
        cut: Option<usize>,
    }

    impl Fetcher for Mem {
        fn open(&self, url: &str) -> Result<Option<crate::http::Body<'_>>, crate::http::HttpError> {
            let Some(data) = self.files.get(url).cloned() else {
                return Ok(None);
            };
            Ok(Some(match self.cut {
                Some(n) => Box::new(std::io::Cursor::new(data[..n].to_vec()).chain(Failing)),
                None => Box::new(std::io::Cursor::new(data)),
            }))
        }
    }

    struct Failing;

    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
        }
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn read_index_checks_the_hash_before_anything_is_used() {
        let good = gz(entry("a", "1", "amd64", "").as_bytes());
        let url = "mem://dists/s/main/binary-amd64/Packages.gz";
        let name = "main/binary-amd64/Packages.gz";
        let expected = Expected {
            what: format!("index {name}"),
            digest: Digest::of(&good),
            size: good.len() as u64,
        };
        let shared = Shared::new("mem://", "amd64");
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new("mem://", dir.path()).unwrap();
        let to = Dest {
            shared: &shared,
            spill: &spill,
        };
        let read = |data: Vec<u8>, cut: Option<usize>| {
            let f = Mem {
                files: HashMap::from([(url.to_string(), data)]),
                cut,
            };
            read_index(&f, url, name, &expected, &to)
        };
        let keys = read(good.clone(), None).unwrap().unwrap();
        assert_eq!((keys.names.len(), keys.provides.len()), (1, 0));
        // Another index that parses well, but not the one the Release vouches for.
        let other = gz(entry("evil", "1", "amd64", "").as_bytes());
        let err = read(other, None).unwrap_err();
        assert!(matches!(err, AptError::HashMismatch(_)), "{err}");
        // Broken content and a wrong hash: the hash is what is reported.
        let broken = gz(b"Package: a\nnot a field\n");
        let err = read(broken.clone(), None).unwrap_err();
        assert!(matches!(err, AptError::HashMismatch(_)), "{err}");
        let mut corrupt = good.clone();
        corrupt[good.len() / 2] ^= 0x55;
        let err = read(corrupt, None).unwrap_err();
        assert!(matches!(err, AptError::HashMismatch(_)), "{err}");
        // Broken content with the right hash: the content's error.
        let expected_broken = Expected {
            what: expected.what.clone(),
            digest: Digest::of(&broken),
            size: broken.len() as u64,
        };
        let f = Mem {
            files: HashMap::from([(url.to_string(), broken)]),
            cut: None,
        };
        let err = read_index(&f, url, name, &expected_broken, &to).unwrap_err();
        assert!(matches!(err, AptError::Control { .. }), "{err}");
        // A download failing half-way is a read error, not a decompression error.
        let err = read(good.clone(), Some(good.len() / 2)).unwrap_err();
        assert!(
            matches!(err, AptError::Read { ref source, .. }
                if source.kind() == io::ErrorKind::ConnectionReset),
            "{err}"
        );
        assert!(read(good, None).is_ok());
        let f = Mem {
            files: HashMap::new(),
            cut: None,
        };
        assert!(read_index(&f, url, name, &expected, &to).unwrap().is_none());
    }
}
