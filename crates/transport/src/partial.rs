//! What a partial pull of a new layer would fetch, given the layers a puller already has
//! (`plan --against`): read from the layers' tables of contents (zstd:chunked and eStargz, see
//! docs/partial-pulls.md), never from their files.
//!
//! The estimate follows containers/storage: a regular file whose sha256 some layer already
//! has is copied locally; every other one is fetched as its compressed range, and the TOC
//! itself is fetched first. It is an upper bound: storage also reuses chunks of changed files
//! that other layers have, which this does not count.

use std::collections::HashSet;

use serde::Deserialize;

use crate::digest::Digest;
use crate::image::Descriptor;
use crate::layer::{estargz, zchunked};

/// Everything that can go wrong reading a TOC.
#[derive(Debug, thiserror::Error)]
pub enum PartialError {
    #[error(transparent)]
    Registry(#[from] Box<crate::registry::RegistryError>),
    #[error("reading layer {layer} from the store")]
    Store {
        layer: Digest,
        #[source]
        source: std::io::Error,
    },
    #[error("layer {layer}: its table of contents {problem}")]
    Toc { layer: Digest, problem: String },
}

/// The largest TOC read (containers/storage refuses over 50 MiB).
const TOC_MAX: u64 = 50 << 20;

/// A layer's table of contents, as far as a partial pull cares.
#[derive(Clone, Debug, Default)]
pub struct Toc {
    /// Each non-empty regular file: its sha256 and the compressed bytes that hold it.
    pub files: Vec<(String, u64)>,
    /// Each regular file: its name, size, sha256 and compressed range (start, end).
    pub named: Vec<(String, u64, String, u64, u64)>,
    /// Bytes fetched to read the TOC (and, for eStargz, the footer).
    pub toc_bytes: u64,
}

/// What a partial pull of one layer would fetch.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    /// The TOC plus the ranges of the files no layer had.
    pub fetch_bytes: u64,
    pub toc_bytes: u64,
    pub files_fetched: usize,
    pub files: usize,
}

#[derive(Deserialize)]
struct TocDoc {
    entries: Vec<TocItem>,
}

#[derive(Deserialize)]
struct TocItem {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    digest: String,
    #[serde(default)]
    offset: u64,
    #[serde(default, rename = "endOffset")]
    end_offset: u64,
    #[serde(default)]
    size: u64,
}

/// Whether the descriptor is of a layer with a TOC ocibuild can read.
pub fn has_toc(d: &Descriptor) -> bool {
    d.annotations.contains_key(zchunked::annotations::POSITION)
        || d.annotations
            .contains_key(zchunked::annotations::OLD_POSITION)
        || d.annotations.contains_key(estargz::annotations::TOC_DIGEST)
}

/// The TOC of the layer `d`, through `read(offset, len)` of its blob, checked against the
/// digest its annotations give; None for a layer without one.
pub fn read_toc(
    d: &Descriptor,
    read: &mut dyn FnMut(u64, u64) -> Result<Vec<u8>, PartialError>,
) -> Result<Option<Toc>, PartialError> {
    let bad = |problem: String| PartialError::Toc {
        layer: d.digest,
        problem,
    };
    let note = |keys: [&str; 2]| keys.iter().find_map(|k| d.annotations.get(*k));
    if let (Some(pos), Some(sum)) = (
        note([
            zchunked::annotations::POSITION,
            zchunked::annotations::OLD_POSITION,
        ]),
        note([
            zchunked::annotations::CHECKSUM,
            zchunked::annotations::OLD_CHECKSUM,
        ]),
    ) {
        let nums: Vec<u64> = pos.split(':').filter_map(|v| v.parse().ok()).collect();
        let [offset, len, _, _] = nums[..] else {
            return Err(bad(format!(
                "has a position `{pos}` that is not offset:length:size:type"
            )));
        };
        if len > TOC_MAX || offset.saturating_add(len) > d.size {
            return Err(bad(format!("has a position `{pos}` outside the blob")));
        }
        let z = read(offset, len)?;
        if Digest::of(&z).to_string() != *sum {
            return Err(bad(format!("does not have the annotated digest {sum}")));
        }
        let json = zstd::bulk::decompress(&z, TOC_MAX as usize)
            .map_err(|e| bad(format!("does not decompress: {e}")))?;
        let doc: TocDoc =
            serde_json::from_slice(&json).map_err(|e| bad(format!("is not JSON: {e}")))?;
        let files = doc
            .entries
            .iter()
            .filter(|e| e.kind == "reg" && e.size > 0 && !e.digest.is_empty())
            .map(|e| (e.digest.clone(), e.end_offset.saturating_sub(e.offset)))
            .collect();
        let named = doc
            .entries
            .iter()
            .filter(|e| e.kind == "reg")
            .map(|e| {
                (
                    e.name.clone(),
                    e.size,
                    e.digest.clone(),
                    e.offset,
                    e.end_offset,
                )
            })
            .collect();
        return Ok(Some(Toc {
            files,
            named,
            toc_bytes: len,
        }));
    }
    let Some(sum) = d.annotations.get(estargz::annotations::TOC_DIGEST) else {
        return Ok(None);
    };
    const FOOTER: u64 = 51;
    if d.size <= FOOTER {
        return Err(bad("has no room for its footer in the blob".into()));
    }
    let footer = read(d.size - FOOTER, FOOTER)?;
    let toc_offset = std::str::from_utf8(&footer[16..32])
        .ok()
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .filter(|&o| o < d.size - FOOTER && d.size - FOOTER - o <= TOC_MAX)
        .ok_or_else(|| bad("has a footer whose offset is not one".into()))?;
    let member = read(toc_offset, d.size - FOOTER - toc_offset)?;
    let mut tar = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(flate2::read::GzDecoder::new(&member[..]), TOC_MAX + 2048),
        &mut tar,
    )
    .map_err(|e| bad(format!("does not decompress: {e}")))?;
    let size = tar
        .get(124..135)
        .and_then(|f| std::str::from_utf8(f).ok())
        .and_then(|f| u64::from_str_radix(f.trim_matches(['\0', ' ']), 8).ok())
        .ok_or_else(|| bad("has a tar entry without a size".into()))? as usize;
    let json = tar
        .get(512..512 + size)
        .ok_or_else(|| bad("has its tar entry cut short".into()))?;
    if Digest::of(json).to_string() != *sum {
        return Err(bad(format!("does not have the annotated digest {sum}")));
    }
    let doc: TocDoc = serde_json::from_slice(json).map_err(|e| bad(format!("is not JSON: {e}")))?;
    // A file's bytes run from its offset to the next entry's that has one (its own chunks
    // included), the last up to the TOC.
    let mut files = Vec::new();
    let mut named = Vec::new();
    for (i, e) in doc.entries.iter().enumerate() {
        if e.kind != "reg" {
            continue;
        }
        let end = doc.entries[i + 1..]
            .iter()
            .filter(|n| n.kind != "chunk" && n.offset > 0)
            .map(|n| n.offset)
            .next()
            .unwrap_or(toc_offset);
        named.push((e.name.clone(), e.size, e.digest.clone(), e.offset, end));
        if e.size > 0 && !e.digest.is_empty() {
            files.push((e.digest.clone(), end.saturating_sub(e.offset)));
        }
    }
    Ok(Some(Toc {
        files,
        named,
        toc_bytes: FOOTER + (d.size - FOOTER - toc_offset),
    }))
}

/// A tar or TOC name as a path relative to the root (`./a/b`, `/a/b` and `a/b` are one).
fn normal(name: &str) -> String {
    name.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// Checks that the TOC of the layer `d`, whose blob is at `path`, tells the truth: the
/// regular files it lists are exactly the layer's, each with the size and sha256 the layer's
/// tar gives it, and each one's compressed range decodes to it. A puller that trusts a TOC
/// builds the files from it; one that lies would give other files than the layer's digest
/// stands for (podman 4.3.1, given a wrong file digest, at times left a file out). Ok for a layer
/// without a TOC.
pub fn check_toc(d: &Descriptor, path: &std::path::Path) -> Result<(), PartialError> {
    use std::collections::BTreeMap;
    use std::io::{Read, Seek, SeekFrom};
    let io = |source| PartialError::Store {
        layer: d.digest,
        source,
    };
    let bad = |problem: String| PartialError::Toc {
        layer: d.digest,
        problem,
    };
    let mut read = |offset: u64, len: u64| {
        let mut f = fs_err::File::open(path).map_err(io)?;
        f.seek(SeekFrom::Start(offset)).map_err(io)?;
        let mut buf = Vec::new();
        f.take(len).read_to_end(&mut buf).map_err(io)?;
        Ok(buf)
    };
    let Some(toc) = read_toc(d, &mut read)? else {
        return Ok(());
    };
    let mut listed: BTreeMap<String, (u64, String, u64, u64)> = BTreeMap::new();
    for (name, size, digest, start, end) in &toc.named {
        listed.insert(normal(name), (*size, digest.clone(), *start, *end));
    }
    // The layer's own regular files, from its whole stream.
    let file = std::io::BufReader::new(fs_err::File::open(path).map_err(io)?);
    let stream = crate::layer::decompressor(&d.media_type, file).map_err(io)?;
    let mut ar = tar::Archive::new(stream);
    for e in ar.entries().map_err(io)? {
        let mut e = e.map_err(io)?;
        if e.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let name = normal(&e.path().map_err(io)?.to_string_lossy());
        if name == estargz::TOC_NAME && d.annotations.contains_key(estargz::annotations::TOC_DIGEST)
        {
            continue;
        }
        let (digest, size) = hash(&mut e).map_err(io)?;
        let Some((toc_size, toc_digest, start, end)) = listed.remove(&name) else {
            return Err(bad(format!("does not list the file `{name}`")));
        };
        if toc_size != size || (size > 0 && toc_digest != digest.to_string()) {
            return Err(bad(format!(
                "gives `{name}` {toc_size} bytes of {toc_digest}; the layer has {size} bytes \
                 of {digest}"
            )));
        }
        if size == 0 {
            continue;
        }
        // What a puller that trusts the TOC would make of the file: its range, decoded.
        if start == 0 || end <= start || end > d.size {
            return Err(bad(format!(
                "places `{name}` at {start}..{end}, outside the blob"
            )));
        }
        let mut f = fs_err::File::open(path).map_err(io)?;
        f.seek(SeekFrom::Start(start)).map_err(io)?;
        let range = std::io::BufReader::new(f.take(end - start));
        let got = match crate::layer::decompressor(&d.media_type, range) {
            Ok(r) => hash(&mut r.take(size)),
            Err(e) => Err(e),
        };
        if !matches!(got, Ok((g, n)) if g == digest && n == size) {
            return Err(bad(format!(
                "places `{name}` at {start}..{end}, which does not decode to it"
            )));
        }
    }
    if let Some(name) = listed.keys().next() {
        return Err(bad(format!(
            "lists `{name}`, which is not a file of the layer"
        )));
    }
    Ok(())
}

/// The sha256 and length of what `r` reads.
fn hash(r: &mut dyn std::io::Read) -> std::io::Result<(Digest, u64)> {
    let mut h = crate::digest::Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(h.finish()),
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// What pulling `new` fetches when the files of `have` are there already.
pub fn estimate<'a>(new: &Toc, have: impl IntoIterator<Item = &'a Toc>) -> Estimate {
    let known: HashSet<&str> = have
        .into_iter()
        .flat_map(|t| t.files.iter().map(|(d, _)| d.as_str()))
        .collect();
    let missing: Vec<u64> = new
        .files
        .iter()
        .filter(|(d, _)| !known.contains(d.as_str()))
        .map(|(_, n)| *n)
        .collect();
    Estimate {
        fetch_bytes: new.toc_bytes + missing.iter().sum::<u64>(),
        toc_bytes: new.toc_bytes,
        files_fetched: missing.len(),
        files: new.files.len(),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::layer::TarWriter;

    /// `n` bytes that compress a little: xorshift from `seed`, with text-like runs.
    fn sample(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        let mut v = Vec::with_capacity(n + 8);
        while v.len() < n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(2) {
                v.extend_from_slice(b"a text-like run; ");
            } else {
                v.extend_from_slice(&x.to_le_bytes());
            }
        }
        v.truncate(n);
        v
    }

    /// A tar of `n` files of 100 kB (seeded; `changed` gets another seed).
    fn tar(n: usize, changed: Option<usize>) -> Vec<u8> {
        let mut t = TarWriter::new(Vec::new(), 0);
        for i in 0..n {
            let seed = if Some(i) == changed { 999 } else { i as u64 };
            let data = sample(100_000, seed);
            t.append_file(&format!("f{i}"), 0o644, 0, 0, 100_000, &mut &data[..])
                .unwrap();
        }
        t.append_file("empty", 0o644, 0, 0, 0, &mut &b""[..])
            .unwrap();
        t.finish().unwrap()
    }

    /// The blob and its descriptor, in the format `estargz` or not.
    fn layer(tar: &[u8], estargz: bool) -> (Vec<u8>, Descriptor) {
        let (blob, notes) = if estargz {
            let mut w = estargz::Estargz::new(Vec::new(), 6, 0);
            w.write_all(tar).unwrap();
            let done = w.finish().unwrap();
            (done.out, done.annotations)
        } else {
            let mut w = zchunked::Chunked::new(Vec::new(), 3).unwrap();
            w.write_all(tar).unwrap();
            w.finish().unwrap()
        };
        let c = if estargz {
            crate::layer::Compression::ESTARGZ
        } else {
            crate::layer::Compression::ZSTD_CHUNKED
        };
        let mut d = Descriptor::new(c.media_type(), Digest::of(&blob), blob.len() as u64);
        d.annotations = notes;
        (blob, d)
    }

    fn toc(blob: &[u8], d: &Descriptor) -> Result<Option<Toc>, PartialError> {
        let mut read = |o: u64, l: u64| Ok(blob[o as usize..(o + l) as usize].to_vec());
        read_toc(d, &mut read)
    }

    #[test]
    fn estimates_count_the_toc_and_the_changed_files_only() {
        for estargz in [false, true] {
            let (b1, d1) = layer(&tar(5, None), estargz);
            let (b2, d2) = layer(&tar(5, Some(3)), estargz);
            let (old, new) = (
                toc(&b1, &d1).unwrap().unwrap(),
                toc(&b2, &d2).unwrap().unwrap(),
            );
            assert_eq!(new.files.len(), 5, "empty files are not fetched");
            let nothing = estimate(&new, []);
            assert_eq!((nothing.files_fetched, nothing.files), (5, 5));
            assert!(nothing.fetch_bytes > new.toc_bytes && nothing.fetch_bytes < b2.len() as u64);
            let one = estimate(&new, [&old]);
            assert_eq!(one.files_fetched, 1, "estargz={estargz}");
            assert_eq!(one.fetch_bytes, new.toc_bytes + new.files[3].1);
            assert_eq!(estimate(&new, [&new]).fetch_bytes, new.toc_bytes);
        }
    }

    #[test]
    fn a_toc_that_is_not_the_annotated_one_is_refused() {
        for estargz in [false, true] {
            let (mut blob, d) = layer(&tar(2, None), estargz);
            // A byte inside the TOC: eStargz's member ends at the footer; zstd:chunked's frame
            // is where the position annotation says.
            let at = match d.annotations.get(zchunked::annotations::POSITION) {
                Some(p) => {
                    let v: Vec<usize> = p.split(':').map(|n| n.parse().unwrap()).collect();
                    v[0] + v[1] / 2
                }
                None => blob.len() - 60,
            };
            blob[at] ^= 1;
            assert!(toc(&blob, &d).is_err(), "estargz={estargz}");
        }
        let (blob, mut d) = layer(&tar(2, None), false);
        d.annotations.insert(
            zchunked::annotations::POSITION.into(),
            format!("{}:100:100:1", d.size),
        );
        assert!(matches!(toc(&blob, &d), Err(PartialError::Toc { .. })));
        d.annotations.clear();
        assert!(toc(&blob, &d).unwrap().is_none());
    }

    #[test]
    fn check_toc_passes_honest_layers_and_names_a_lie() {
        let dir = tempfile::tempdir().unwrap();
        for estargz in [false, true] {
            let (blob, d) = layer(&tar(4, None), estargz);
            let path = dir.path().join("blob");
            fs_err::write(&path, &blob).unwrap();
            check_toc(&d, &path).unwrap();
            // The same descriptor over another layer's blob: its TOC is not this layer's.
            let (other, _) = layer(&tar(4, Some(2)), estargz);
            fs_err::write(&path, &other).unwrap();
            let mut lying = d.clone();
            lying.size = other.len() as u64;
            assert!(check_toc(&lying, &path).is_err(), "estargz={estargz}");
        }
    }
}
