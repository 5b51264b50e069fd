//! Deterministic layers: the determinism contract (version [`CONTRACT_VERSION`]) lives here.
//!
//! A layer is a pure function of its entries, the epoch and the compressor:
//!
//! - Entries are sorted by path bytes; every parent directory comes before its children
//!   (ancestors of a copy destination are synthesized with mode 0755, uid/gid 0); no duplicates.
//! - Every header carries mtime = the caller's epoch (`SOURCE_DATE_EPOCH`), uid/gid from the
//!   owner policy, empty uname/gname, zero devmajor/devminor, no atime/ctime, no xattrs.
//! - Modes follow [`ModePolicy`]: `Normalize` (dirs 0755, files 0755 if any execute bit is set
//!   on the host else 0644, symlinks 0777) or `Preserve` (host bits & 0o7777).
//! - Symlinks are kept verbatim and never followed; regular files sharing an inode within the
//!   layer become hardlinks pointing back to the first one in sorted order, their headers
//!   carrying the target's mode and owner (contract 2; contract 1 wrote mode 0644).
//! - A file handed over as a raw deflate stream ([`Content::Deflated`], a wheel's zip member)
//!   of [`SPLICE_MIN`] bytes or more keeps its deflate blocks in a gzip layer (contract 3; the
//!   tar stream is unchanged, see `compress` and `splice`).
//! - Contracts 4 and 5 change no rule here: 4 adds the `rootfs` layer (`crate::rootfs`) to
//!   images with `[apt]`, `[python]` or `[accounts]`; 5 makes the manifest's recipe digest the
//!   recipe's identity (`crate::recipe::Recipe::identity`).
//! - USTAR headers; a PAX extended header (`././@PaxHeader`, keys in sorted order) only when a
//!   field does not fit. The archive ends with two zero blocks and no record padding.
//! - Compression is pinned (see [`Compression::describe`]) and never depends on the thread count.
//!
//! Nothing of the host leaks into the bytes: not its uid/gid, umask, timestamps, `read_dir`
//! order, locale or time zone. Changing any of this is a contract change: bump
//! [`CONTRACT_VERSION`] and the golden digests in `tests/it/layer_contract.rs`.

mod compress;
mod entry;
mod error;
pub mod estargz;
mod host;
pub mod ignore;
mod key;
mod pipe;
mod splice;
mod tar;
mod tarscan;
mod walk;
mod write;
pub mod zchunked;

use std::io::{self, Read};

pub use self::entry::{CopySpec, Entry, EntryKind, ModePolicy, StatKey};
pub use self::error::LayerError;
pub use self::host::HostReader;
pub use self::key::cache_key;
pub use self::tar::TarWriter;
pub use self::walk::scan;
pub use self::write::{
    host_content, host_file_error, write_layer, write_layer_with, Content, ContentSink,
    LayerOptions, LayerStats, SPLICE_MIN,
};

/// The latest epoch an image can carry: 9999-12-31T23:59:59Z. The config's `created` is an
/// RFC 3339 timestamp, whose year has four digits; later epochs are refused, not written.
pub const MAX_EPOCH: u64 = 253_402_300_799;

/// Version of the determinism contract; recorded in an image annotation.
pub const CONTRACT_VERSION: u32 = 6;

/// The layer compression, with a pinned compressor and its level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// gzip at a zlib level, 1 to 9.
    Gzip(u32),
    /// zstd at a libzstd level, 1 to 19.
    Zstd(i32),
    /// zstd:chunked (containers/storage's partial-pull format, see `zchunked`) at a libzstd
    /// level, 1 to 19.
    ZstdChunked(i32),
    /// eStargz (stargz-snapshotter's lazy-pull format, see `estargz`) at a zlib level, 1 to 9.
    Estargz(u32),
    None,
}

/// The layer media types ocibuild writes ([`Compression::media_type`]).
pub const LAYER_MEDIA_TYPES: [&str; 3] = [
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.oci.image.layer.v1.tar+zstd",
    "application/vnd.oci.image.layer.v1.tar",
];

impl Compression {
    /// The default: gzip at level 6, as gzip(1) and pigz.
    pub const GZIP: Compression = Compression::Gzip(compress::GZIP_DEFAULT_LEVEL);
    /// zstd at level 3, as zstd(1), buildkit and containers/image.
    pub const ZSTD: Compression = Compression::Zstd(compress::ZSTD_DEFAULT_LEVEL);
    /// zstd:chunked at level 3 (see [`zchunked::DEFAULT_LEVEL`] for why not 10).
    pub const ZSTD_CHUNKED: Compression = Compression::ZstdChunked(zchunked::DEFAULT_LEVEL);
    /// eStargz at level 6, as gzip.
    pub const ESTARGZ: Compression = Compression::Estargz(compress::GZIP_DEFAULT_LEVEL);

    /// The compression a recipe names (`gzip`, `zstd`, `zstd:chunked`, `estargz` or `none`),
    /// at `level` or the default level; the message says what is wrong.
    pub fn from_name(name: &str, level: Option<i64>) -> Result<Compression, String> {
        // A level from 1 to max, else the message naming the range.
        let level_in = |l: i64, max: i64| {
            if (1..=max).contains(&l) {
                Ok(l)
            } else {
                Err(format!(
                    "compression-level {l} is out of range for {name} (expected 1 to {max})"
                ))
            }
        };
        let (gzip_max, zstd_max) = (compress::GZIP_MAX_LEVEL, compress::ZSTD_MAX_LEVEL);
        // Both ranges fit u32 and i32, so the casts are exact.
        match (name, level) {
            ("gzip", None) => Ok(Compression::GZIP),
            ("gzip", Some(l)) => level_in(l, gzip_max.into()).map(|l| Compression::Gzip(l as u32)),
            ("zstd", None) => Ok(Compression::ZSTD),
            ("zstd", Some(l)) => level_in(l, zstd_max.into()).map(|l| Compression::Zstd(l as i32)),
            ("zstd:chunked", None) => Ok(Compression::ZSTD_CHUNKED),
            ("zstd:chunked", Some(l)) => {
                level_in(l, zstd_max.into()).map(|l| Compression::ZstdChunked(l as i32))
            }
            ("estargz", None) => Ok(Compression::ESTARGZ),
            ("estargz", Some(l)) => {
                level_in(l, gzip_max.into()).map(|l| Compression::Estargz(l as u32))
            }
            ("none", None) => Ok(Compression::None),
            ("none", Some(_)) => Err(
                "compression-level needs compression `gzip`, `zstd`, `zstd:chunked` or `estargz`, \
                 not `none`"
                    .into(),
            ),
            (other, _) => Err(format!(
                "unknown compression `{other}`, expected `gzip`, `zstd`, `zstd:chunked`, \
                 `estargz` or `none`"
            )),
        }
    }

    /// Whether the level is one [`from_name`](Self::from_name) accepts.
    pub fn level_in_range(self) -> bool {
        match self {
            Compression::Gzip(l) => (1..=compress::GZIP_MAX_LEVEL).contains(&l),
            Compression::Zstd(l) | Compression::ZstdChunked(l) => {
                (1..=compress::ZSTD_MAX_LEVEL).contains(&l)
            }
            Compression::Estargz(l) => (1..=compress::GZIP_MAX_LEVEL).contains(&l),
            Compression::None => true,
        }
    }

    /// The OCI layer media type.
    pub fn media_type(self) -> &'static str {
        match self {
            Compression::Gzip(_) | Compression::Estargz(_) => {
                "application/vnd.oci.image.layer.v1.tar+gzip"
            }
            Compression::Zstd(_) | Compression::ZstdChunked(_) => {
                "application/vnd.oci.image.layer.v1.tar+zstd"
            }
            Compression::None => "application/vnd.oci.image.layer.v1.tar",
        }
    }

    /// Stable identity of the compressor and its level, recorded in an image annotation and in
    /// every layer cache key. Changing it (or the pinned backend versions in Cargo.lock) is a
    /// contract change: the compressed digest moves.
    pub fn describe(self) -> String {
        match self {
            Compression::Gzip(level) => compress::gzip_description(level),
            Compression::Zstd(level) => compress::zstd_description(level),
            Compression::ZstdChunked(level) => zchunked::description(level),
            Compression::Estargz(level) => estargz::description(level),
            Compression::None => "none".into(),
        }
    }
}

/// `gzip`, `zstd`, `zstd:chunked`, `estargz` or `none`, optionally with `:LEVEL` (`zstd:1`,
/// `zstd:chunked:5`), as the benchmarks take it.
impl std::str::FromStr for Compression {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "zstd:chunked" {
            return Compression::from_name(s, None);
        }
        match s.rsplit_once(':') {
            Some((name, level)) => {
                let level = level
                    .parse()
                    .map_err(|_| format!("invalid compression level `{level}`"))?;
                Compression::from_name(name, Some(level))
            }
            None => Compression::from_name(s, None),
        }
    }
}

/// A layer blob's uncompressed tar stream, by its media type (OCI or Docker; gzip, zstd or none).
pub fn decompressor<'a, R: io::BufRead + 'a>(
    media_type: &str,
    r: R,
) -> io::Result<Box<dyn Read + 'a>> {
    if media_type.ends_with("gzip") || media_type.ends_with(".tar.gzip") {
        Ok(Box::new(flate2::bufread::MultiGzDecoder::new(r)))
    } else if media_type.ends_with("zstd") {
        Ok(Box::new(zstd::stream::read::Decoder::with_buffer(r)?))
    } else if media_type.ends_with(".tar") || media_type.ends_with("layer.v1.tar") {
        Ok(Box::new(r))
    } else {
        Err(io::Error::other(format!(
            "unsupported layer media type `{media_type}`"
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::testdata::{system_gunzip, test_sample};
    use super::*;
    use crate::digest::Digest;

    fn dir(path: &str) -> Entry {
        Entry {
            path: path.into(),
            kind: EntryKind::Dir,
            mode: 0o755,
            uid: 0,
            gid: 0,
            stat: StatKey::default(),
        }
    }

    fn opts(compression: Compression) -> LayerOptions {
        LayerOptions {
            epoch: 0,
            compression,
            threads: 2,
        }
    }

    #[test]
    fn media_types_and_descriptions() {
        assert_eq!(
            Compression::None.media_type(),
            "application/vnd.oci.image.layer.v1.tar"
        );
        assert!(Compression::GZIP.media_type().ends_with("+gzip"));
        assert!(Compression::ZSTD.media_type().ends_with("+zstd"));
        assert_eq!(
            Compression::GZIP.describe(),
            "gzip;zlib-rs;level=6;block=1048576"
        );
        assert_eq!(Compression::ZSTD.describe(), "zstd;libzstd;level=3;mt");
        assert_eq!(
            Compression::Gzip(1).describe(),
            "gzip;zlib-rs;level=1;block=1048576"
        );
        assert_eq!(Compression::Zstd(19).describe(), "zstd;libzstd;level=19;mt");
    }

    #[test]
    fn compression_names_and_levels() {
        let ok = |name, level| Compression::from_name(name, level).unwrap();
        assert_eq!(ok("gzip", None), Compression::Gzip(6));
        assert_eq!(ok("zstd", None), Compression::Zstd(3));
        assert_eq!(ok("none", None), Compression::None);
        assert_eq!(ok("gzip", Some(1)), Compression::Gzip(1));
        assert_eq!(ok("gzip", Some(9)), Compression::Gzip(9));
        assert_eq!(ok("zstd", Some(1)), Compression::Zstd(1));
        assert_eq!(ok("zstd", Some(19)), Compression::Zstd(19));
        let err = |name, level| Compression::from_name(name, level).unwrap_err();
        for (name, level, range) in [
            ("gzip", 0, "1 to 9"),
            ("gzip", 10, "1 to 9"),
            ("gzip", -1, "1 to 9"),
            ("zstd", 0, "1 to 19"),
            ("zstd", 20, "1 to 19"),
            ("zstd", i64::MAX, "1 to 19"),
        ] {
            assert_eq!(
                err(name, Some(level)),
                format!("compression-level {level} is out of range for {name} (expected {range})")
            );
        }
        assert_eq!(
            err("none", Some(3)),
            "compression-level needs compression `gzip`, `zstd`, `zstd:chunked` or `estargz`, \
             not `none`"
        );
        assert_eq!("zstd:1".parse(), Ok(Compression::Zstd(1)));
        assert_eq!("gzip".parse(), Ok(Compression::GZIP));
        assert!("zstd:fast".parse::<Compression>().is_err());
        assert!("none:1".parse::<Compression>().is_err());
        assert_eq!(
            err("xz", Some(3)),
            "unknown compression `xz`, expected `gzip`, `zstd`, `zstd:chunked`, `estargz` or \
             `none`"
        );
        assert_eq!(ok("zstd:chunked", None), Compression::ZstdChunked(3));
        assert_eq!(ok("zstd:chunked", Some(19)), Compression::ZstdChunked(19));
        assert_eq!(ok("estargz", None), Compression::Estargz(6));
        assert_eq!(ok("estargz", Some(9)), Compression::Estargz(9));
        assert!(err("estargz", Some(10)).contains("expected 1 to 9"));
        assert!(err("zstd:chunked", Some(20)).contains("expected 1 to 19"));
        assert_eq!("zstd:chunked".parse(), Ok(Compression::ZSTD_CHUNKED));
        assert_eq!("zstd:chunked:7".parse(), Ok(Compression::ZstdChunked(7)));
        assert_eq!("estargz:2".parse(), Ok(Compression::Estargz(2)));
        assert!(Compression::ZSTD_CHUNKED.media_type().ends_with("+zstd"));
        assert!(Compression::ESTARGZ.media_type().ends_with("+gzip"));
        assert_eq!(
            Compression::ZSTD_CHUNKED.describe(),
            "zstd:chunked;libzstd;level=3;rollsum=16;toc=1;tar-split"
        );
        assert_eq!(
            Compression::ESTARGZ.describe(),
            "estargz;zlib-rs;level=6;chunk=4194304;splice=16384"
        );
    }

    #[test]
    fn uncompressed_digest_equals_diff_id() {
        let mut out = Vec::new();
        let s = write_layer(&[dir("a/")], &opts(Compression::None), &mut out, &|_| {}).unwrap();
        assert_eq!(s.digest, s.diff_id);
        assert_eq!(s.size, out.len() as u64);
        assert_eq!(s.uncompressed_size, 512 * 3);
        assert_eq!(s.diff_id, Digest::of(&out));
    }

    #[test]
    fn hardlink_headers_carry_the_targets_mode_and_owner() {
        let dirpath = tempfile::tempdir().unwrap();
        let exe = dirpath.path().join("exe");
        fs_err::write(&exe, b"#!/bin/sh\n").unwrap();
        let file = Entry {
            path: "a".into(),
            kind: EntryKind::File { src: exe, size: 10 },
            mode: 0o755,
            uid: 7,
            gid: 8,
            stat: StatKey::default(),
        };
        // The link entry's own mode/owner are ignored: extractors would apply them to the
        // shared inode.
        let link = Entry {
            path: "b".into(),
            kind: EntryKind::Hardlink { target: "a".into() },
            mode: 0o644,
            uid: 0,
            gid: 0,
            stat: StatKey::default(),
        };
        let mut out = Vec::new();
        write_layer(&[file, link], &opts(Compression::None), &mut out, &|_| {}).unwrap();
        let mut ar = ::tar::Archive::new(&out[..]);
        let heads: Vec<(String, u32, u64, u64)> = ar
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    String::from_utf8(e.path_bytes().into_owned()).unwrap(),
                    h.mode().unwrap(),
                    h.uid().unwrap(),
                    h.gid().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            heads,
            [("a".into(), 0o755, 7, 8), ("b".into(), 0o755, 7, 8)]
        );
    }

    #[test]
    fn contract_violations_are_errors() {
        let none = opts(Compression::None);
        let mut sink = Vec::new();
        let unsorted = [dir("b/"), dir("a/")];
        let missing_parent = [dir("a/b/")];
        let dup = [dir("a/"), dir("a/")];
        let no_slash = [dir("a")];
        let link = Entry {
            path: "l".into(),
            kind: EntryKind::Hardlink { target: "x".into() },
            ..dir("l")
        };
        for bad in [&unsorted[..], &missing_parent, &dup, &no_slash, &[link]] {
            let err = write_layer(bad, &none, &mut sink, &|_| {}).unwrap_err();
            assert!(matches!(err, LayerError::Contract { .. }), "{err}");
        }
    }

    /// Files of many sizes around SPLICE_MIN, each also as a raw deflate stream.
    fn deflated_files() -> Vec<(Entry, Vec<u8>, Vec<u8>)> {
        use std::io::Write as _;
        [0u64, 5, 1000, SPLICE_MIN - 1, SPLICE_MIN, 100_000, 3 << 20]
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let data = test_sample(n as usize, 77 + i as u64);
                let level = [0, 1, 6, 9][i % 4];
                let mut e =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(level));
                e.write_all(&data).unwrap();
                let raw = e.finish().unwrap();
                let entry = Entry {
                    path: format!("f{i}"),
                    kind: EntryKind::File {
                        src: PathBuf::new(),
                        size: n,
                    },
                    mode: 0o644,
                    uid: 0,
                    gid: 0,
                    stat: StatKey::default(),
                };
                (entry, data, raw)
            })
            .collect()
    }

    fn layer_of(
        files: &[(Entry, Vec<u8>, Vec<u8>)],
        opts: &LayerOptions,
        deflated: bool,
    ) -> (Vec<u8>, LayerStats) {
        let entries: Vec<Entry> = files.iter().map(|f| f.0.clone()).collect();
        let mut out = Vec::new();
        let mut seen = vec![Vec::new(); files.len()];
        let stats = write_layer_with(&entries, opts, &mut out, &|_| {}, &mut |i, _, sink| {
            if deflated {
                let mut raw = &files[i].2[..];
                let seen = &mut seen[i];
                sink(Content::Deflated {
                    raw: &mut raw,
                    inspect: &mut |b: &[u8]| seen.extend_from_slice(b),
                })
            } else {
                sink(Content::Bytes(&mut &files[i].1[..]))
            }
        })
        .unwrap();
        if deflated {
            for (f, s) in files.iter().zip(&seen) {
                assert!(f.1 == *s, "inspect saw the inflated bytes of {}", f.0.path);
            }
        }
        (out, stats)
    }

    #[test]
    fn the_level_changes_the_bytes_not_the_tar() {
        let files = deflated_files();
        let at = |c, deflated| layer_of(&files, &opts(c), deflated);
        let (g6_bytes, g6) = at(Compression::GZIP, false);
        let (g1_bytes, g1) = at(Compression::Gzip(1), false);
        let (z3_bytes, z3) = at(Compression::ZSTD, false);
        let (z19_bytes, z19) = at(Compression::Zstd(19), false);
        for s in [&g1, &z3, &z19] {
            assert_eq!(s.diff_id, g6.diff_id, "one tar");
        }
        assert!(g1_bytes.len() > g6_bytes.len(), "level 1 compresses less");
        assert!(z19_bytes.len() < z3_bytes.len(), "level 19 compresses more");
        assert_eq!(Digest::of(&system_gunzip(&g1_bytes)), g1.diff_id);
        let back = zstd::decode_all(&z19_bytes[..]).unwrap();
        assert_eq!(Digest::of(&back), z19.diff_id);
        // A wheel member's deflate blocks are reused whatever the level; the rest of the layer
        // is compressed at the level.
        let (spliced1, s1) = at(Compression::Gzip(1), true);
        let (spliced6, _) = at(Compression::GZIP, true);
        assert_ne!(spliced1, g1_bytes);
        assert_ne!(spliced1, spliced6);
        assert_eq!(Digest::of(&system_gunzip(&spliced1)), s1.diff_id);
        assert_eq!(s1.diff_id, g6.diff_id);
    }

    #[test]
    fn deflated_content_gives_the_same_tar_and_a_valid_spliced_gzip() {
        let files = deflated_files();
        let (tar, plain) = layer_of(&files, &opts(Compression::None), false);
        // Not gzip: the bytes are exactly those of the same content handed over as bytes.
        for c in [Compression::None, Compression::ZSTD] {
            let a = layer_of(&files, &opts(c), false).1;
            let b = layer_of(&files, &opts(c), true).1;
            assert_eq!(a, b, "{c:?}");
        }
        let (gz, spliced) = layer_of(&files, &opts(Compression::GZIP), true);
        assert_eq!(spliced.diff_id, plain.diff_id);
        assert_eq!(spliced.uncompressed_size, plain.uncompressed_size);
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut back)
            .unwrap();
        assert!(back == tar, "the spliced gzip decodes to the tar");
        // The spliced stream differs from compressing the same tar (the files of SPLICE_MIN
        // bytes or more keep their own blocks) and does not depend on the thread count.
        let (recompressed, _) = layer_of(&files, &opts(Compression::GZIP), false);
        assert!(gz != recompressed);
        for threads in [1, 5] {
            let o = LayerOptions {
                threads,
                ..opts(Compression::GZIP)
            };
            assert!(layer_of(&files, &o, true).0 == gz, "threads={threads}");
        }
        assert!(
            system_gunzip(&gz) == tar,
            "gzip(1) decodes the spliced layer"
        );
    }

    #[test]
    fn estargz_keeps_a_wheels_deflate_blocks_and_its_toc_finds_each_file() {
        let files = deflated_files();
        let (plain_gz, plain) = layer_of(&files, &opts(Compression::ESTARGZ), false);
        let (gz, spliced) = layer_of(&files, &opts(Compression::ESTARGZ), true);
        assert!(
            gz != plain_gz,
            "the large members are the wheel's own blocks"
        );
        // The same tar entries; the TOC entry after them differs (its offsets do).
        let (tar, _) = layer_of(&files, &opts(Compression::None), false);
        let entries = tar.len() - 1024;
        assert!(system_gunzip(&plain_gz)[..entries] == tar[..entries]);
        assert!(system_gunzip(&gz)[..entries] == tar[..entries]);
        assert_ne!(spliced.diff_id, plain.diff_id);
        for threads in [1, 5] {
            let o = LayerOptions {
                threads,
                ..opts(Compression::ESTARGZ)
            };
            assert!(layer_of(&files, &o, true).0 == gz, "threads={threads}");
        }
        let all = system_gunzip(&gz);
        assert_eq!(Digest::of(&all), spliced.diff_id);
        // The TOC is the stream's last entry; each file's member starts with its content, and
        // a spliced file's member is exactly its content (gzip's CRC and size checked).
        let mut ar = ::tar::Archive::new(&all[..]);
        let mut toc = Vec::new();
        for e in ar.entries().unwrap() {
            let mut e = e.unwrap();
            if e.path().unwrap().to_str() == Some(estargz::TOC_NAME) {
                e.read_to_end(&mut toc).unwrap();
            }
        }
        let toc: serde_json::Value = serde_json::from_slice(&toc).unwrap();
        for (entry, data, _) in &files {
            let e = toc["entries"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == entry.path.as_str())
                .unwrap();
            assert_eq!(e["digest"], Digest::of(data).to_string());
            let Some(offset) = e["offset"].as_u64() else {
                assert!(data.is_empty());
                continue;
            };
            let mut member = Vec::new();
            flate2::read::GzDecoder::new(&gz[offset as usize..])
                .read_to_end(&mut member)
                .unwrap();
            let n = data.len().min(4 << 20);
            assert!(member[..n] == data[..n], "{}", entry.path);
            if data.len() as u64 >= SPLICE_MIN {
                assert_eq!(
                    member.len(),
                    data.len(),
                    "{}: a member of its own",
                    entry.path
                );
            }
        }
    }

    #[test]
    fn corrupt_deflated_content_fails_the_layer() {
        let mut files = deflated_files();
        let last = files.len() - 1;
        let raw = &mut files[last].2;
        raw.truncate(raw.len() / 2);
        let entries: Vec<Entry> = files.iter().map(|f| f.0.clone()).collect();
        for c in [Compression::GZIP, Compression::None] {
            let err = write_layer_with(
                &entries,
                &opts(c),
                &mut Vec::new(),
                &|_| {},
                &mut |i, _, sink| {
                    let mut raw = &files[i].2[..];
                    sink(Content::Deflated {
                        raw: &mut raw,
                        inspect: &mut |_: &[u8]| {},
                    })
                },
            )
            .unwrap_err();
            assert!(
                matches!(&err, LayerError::ReadContent { entry, .. } if entry == "f6"),
                "{err}"
            );
        }
    }
}

/// Test helpers shared by the layer modules' tests.
#[cfg(test)]
pub(crate) mod testdata {
    /// What the system's `gzip -dc` makes of `gz` (it must succeed): a reader other than ours.
    pub(crate) fn system_gunzip(gz: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.gz");
        fs_err::write(&path, gz).unwrap();
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "gzip -dc: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// Test data for the layer modules: deterministic pseudo-random bytes (xorshift from `seed`)
    /// mixed with text-like runs, so deflate and zstd have something to find.
    pub(crate) fn test_sample(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 3 {
                0 => v.extend_from_slice(b"the quick brown fox jumps over the lazy dog; "),
                1 => v.extend_from_slice(&x.to_le_bytes()[..(x >> 20) as usize % 8]),
                _ => v.extend_from_slice(&x.to_le_bytes()),
            }
        }
        v.truncate(n);
        v
    }
}
