//! The zstd:chunked layer writer (containers/storage's partial-pull format), deterministic.
//!
//! The uncompressed stream is exactly the tar the layer writer produced (same diff_id as a
//! `zstd` or `gzip` layer). It is cut into zstd frames so that a reader holding the table of
//! contents can fetch one file's content with a range request:
//!
//! - Each non-empty regular file's content starts a frame and ends one; large files are cut
//!   further into chunks where a rolling checksum says so (the bup rollsum, 64-byte window,
//!   split where the low 16 bits of s2 are all ones, fresh for every file: the same cut points
//!   as containers/storage's writer, except that runs of zeros are not made "holes"). Headers,
//!   padding and the end-of-archive blocks go in frames of their own, cut every
//!   [`META_FRAME_MAX`] bytes so memory stays bounded.
//! - Then three skippable frames (magic 0x184D2A50): the zstd-compressed TOC (JSON, fields in
//!   containers/storage's order, `tarSplitDigest` included), the zstd-compressed tar-split (JSON
//!   lines of vbatts/tar-split: readers from storage 1.48 need it to rebuild the tar), and the
//!   64-byte footer (offsets and lengths of both, manifest type 1, magic `GNUlInUx`).
//!
//! Readers find the TOC through the layer descriptor's annotations ([`annotations`]): podman
//! 4.3.1 (containers/storage 1.43) reads `io.containers.zstd-chunked.*` and never the footer
//! when they are there; storage 1.44 and later read `io.github.containers.zstd-chunked.*`.
//! Both sets are written, with the same values.
//!
//! One libzstd context at the recipe's level, no workers: frames are small and independent, so
//! the output depends only on the tar, the level and the libzstd version (pinned in Cargo.lock).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;
use zstd::stream::raw::{CParameter, Encoder, InBuffer, Operation, OutBuffer};

use super::tarscan::{TarEntry, TarScanner, TarSink};
use crate::digest::{Digest, Hasher};

/// The zstd level when the recipe names none (the same as `zstd`'s; containers/storage's
/// writer uses 10, slower for about 3% smaller layers on mixed content).
pub(crate) const DEFAULT_LEVEL: i32 = 3;
/// Largest frame of tar headers and padding.
const META_FRAME_MAX: u64 = 1 << 20;
/// The rolling checksum splits where the low this many bits of s2 are all ones (64 KiB on
/// average), as containers/storage's `RollsumBits`.
const ROLLSUM_BITS: u32 = 16;
const SKIPPABLE_MAGIC: [u8; 4] = [0x50, 0x2a, 0x4d, 0x18];
const FOOTER_MAGIC: &[u8; 8] = b"GNUlInUx";
/// containers/storage's "CRFS" manifest type, the only one there is.
const MANIFEST_TYPE: u64 = 1;

/// The descriptor annotation keys.
pub mod annotations {
    pub const CHECKSUM: &str = "io.github.containers.zstd-chunked.manifest-checksum";
    pub const POSITION: &str = "io.github.containers.zstd-chunked.manifest-position";
    pub const TARSPLIT_POSITION: &str = "io.github.containers.zstd-chunked.tarsplit-position";
    /// The names containers/storage 1.43 (podman 4.3.1) reads.
    pub const OLD_CHECKSUM: &str = "io.containers.zstd-chunked.manifest-checksum";
    pub const OLD_POSITION: &str = "io.containers.zstd-chunked.manifest-position";
}

/// The writer's identity: level, chunking rule, TOC version.
pub(crate) fn description(level: i32) -> String {
    format!("zstd:chunked;libzstd;level={level};rollsum={ROLLSUM_BITS};toc=1;tar-split")
}

/// One TOC entry, in containers/storage's field order (`minimal.FileMetadata`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TocEntry {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    link_name: String,
    #[serde(skip_serializing_if = "is_zero")]
    mode: u64,
    #[serde(skip_serializing_if = "is_zero")]
    size: u64,
    #[serde(skip_serializing_if = "is_zero")]
    uid: u64,
    #[serde(skip_serializing_if = "is_zero")]
    gid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    modtime: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    digest: String,
    #[serde(skip_serializing_if = "is_zero")]
    offset: u64,
    #[serde(skip_serializing_if = "is_zero")]
    end_offset: u64,
    #[serde(skip_serializing_if = "is_zero")]
    chunk_size: u64,
    #[serde(skip_serializing_if = "is_zero")]
    chunk_offset: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    chunk_digest: String,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Toc<'a> {
    version: u32,
    entries: &'a [TocEntry],
    tar_split_digest: String,
}

/// One tar-split record (vbatts/tar-split `storage.Entry`): type 1 a file, 2 raw bytes.
#[derive(Serialize)]
struct SplitEntry<'a> {
    #[serde(rename = "type")]
    kind: u8,
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'a str,
    #[serde(skip_serializing_if = "is_zero")]
    size: u64,
    payload: Option<String>,
    position: u64,
}

/// zstd frames over a writer, with one reused context.
struct Frames<W: Write> {
    out: W,
    /// Bytes written to `out`.
    offset: u64,
    enc: Encoder<'static>,
    buf: Vec<u8>,
    /// Uncompressed bytes in the open frame.
    open: u64,
}

impl<W: Write> Frames<W> {
    fn new(out: W, level: i32) -> io::Result<Self> {
        let mut enc = Encoder::new(level)?;
        // Pinned rather than left to defaults: a checksum per frame lets readers of a single
        // range check what they decoded.
        enc.set_parameter(CParameter::ChecksumFlag(true))?;
        enc.set_parameter(CParameter::ContentSizeFlag(false))?;
        enc.set_parameter(CParameter::DictIdFlag(false))?;
        Ok(Frames {
            out,
            offset: 0,
            enc,
            buf: vec![0; 128 * 1024],
            open: 0,
        })
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        let mut input = InBuffer::around(data);
        while input.pos() < data.len() {
            let mut output = OutBuffer::around(&mut self.buf[..]);
            self.enc.run(&mut input, &mut output)?;
            let n = output.pos();
            self.out.write_all(&self.buf[..n])?;
            self.offset += n as u64;
        }
        self.open += data.len() as u64;
        Ok(())
    }

    /// Ends the open frame, if any bytes went into it.
    fn end(&mut self) -> io::Result<()> {
        if self.open == 0 {
            return Ok(());
        }
        loop {
            let mut output = OutBuffer::around(&mut self.buf[..]);
            let left = self.enc.finish(&mut output, false)?;
            let n = output.pos();
            self.out.write_all(&self.buf[..n])?;
            self.offset += n as u64;
            if left == 0 {
                break;
            }
        }
        self.enc.reinit()?;
        self.open = 0;
        Ok(())
    }

    /// A skippable frame holding `data`.
    fn skippable(&mut self, data: &[u8]) -> io::Result<()> {
        let len = u32::try_from(data.len())
            .map_err(|_| io::Error::other("a skippable frame over 4 GiB"))?;
        self.out.write_all(&SKIPPABLE_MAGIC)?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(data)?;
        self.offset += 8 + data.len() as u64;
        Ok(())
    }
}

/// The bup rolling checksum (64-byte window, character offset 31), as containers/storage and
/// perkeep use it to cut chunks.
struct RollSum {
    s1: u32,
    s2: u32,
    window: [u8; 64],
    pos: usize,
}

impl RollSum {
    fn new() -> Self {
        RollSum {
            s1: 64 * 31,
            s2: 64 * 63 * 31,
            window: [0; 64],
            pos: 0,
        }
    }

    /// Rolls `ch` in; whether a chunk ends after it.
    fn roll(&mut self, ch: u8) -> bool {
        let drop = u32::from(self.window[self.pos]);
        let add = u32::from(ch);
        self.s1 = self.s1.wrapping_add(add).wrapping_sub(drop);
        self.s2 = self
            .s2
            .wrapping_add(self.s1)
            .wrapping_sub(64u32.wrapping_mul(drop + 31));
        self.window[self.pos] = ch;
        self.pos = (self.pos + 1) & 63;
        let mask = (1u32 << ROLLSUM_BITS) - 1;
        self.s2 & mask == mask
    }
}

/// CRC-64 with the ISO polynomial as Go's `hash/crc64` computes it (tar-split's file checksum).
pub(crate) struct Crc64 {
    table: [u64; 256],
    crc: u64,
}

impl Crc64 {
    pub(crate) fn new() -> Self {
        let mut table = [0u64; 256];
        for (i, t) in table.iter_mut().enumerate() {
            let mut c = i as u64;
            for _ in 0..8 {
                c = if c & 1 == 1 {
                    (c >> 1) ^ 0xD800_0000_0000_0000
                } else {
                    c >> 1
                };
            }
            *t = c;
        }
        Crc64 { table, crc: 0 }
    }

    pub(crate) fn update(&mut self, data: &[u8]) {
        let mut c = !self.crc;
        for &b in data {
            c = self.table[((c as u8) ^ b) as usize] ^ (c >> 8);
        }
        self.crc = !c;
    }

    pub(crate) fn sum(&self) -> [u8; 8] {
        self.crc.to_be_bytes()
    }
}

/// The regular file whose content is passing.
struct File {
    hash: Hasher,
    crc: Crc64,
    roll: RollSum,
    /// Where its first frame starts (0: no content yet).
    start: u64,
    /// The chunk being written: its start in the content and in the blob, its hash.
    chunk_at: u64,
    chunk_offset: u64,
    chunk_hash: Hasher,
    /// Content bytes so far.
    done: u64,
    chunks: Vec<(u64, u64, u64, Digest)>,
}

/// Everything but the tar scanner (so the scanner can report to it).
struct Sink<W: Write> {
    frames: Frames<W>,
    entries: Vec<TocEntry>,
    /// The entry being read, and its file state when it is a regular file.
    current: Option<TarEntry>,
    file: Option<File>,
    /// tar-split: raw bytes since the last file record, and the records so far.
    segment: Vec<u8>,
    split: zstd::stream::write::Encoder<'static, Vec<u8>>,
    split_len: u64,
    position: u64,
}

impl<W: Write> Sink<W> {
    fn split_record(&mut self, e: &SplitEntry<'_>) -> io::Result<()> {
        let mut line = serde_json::to_vec(e).map_err(io::Error::other)?;
        line.push(b'\n');
        self.split.write_all(&line)?;
        self.split_len += line.len() as u64;
        self.position += 1;
        Ok(())
    }

    fn flush_segment(&mut self) -> io::Result<()> {
        if self.segment.is_empty() {
            return Ok(());
        }
        let payload = base64_std(&std::mem::take(&mut self.segment));
        let position = self.position;
        self.split_record(&SplitEntry {
            kind: 2,
            name: "",
            size: 0,
            payload: Some(payload),
            position,
        })
    }

    /// Ends the chunk being written (its frame too).
    fn end_chunk(&mut self) -> io::Result<()> {
        self.frames.end()?;
        if let Some(f) = &mut self.file {
            let size = f.done - f.chunk_at;
            if size > 0 {
                let hash = std::mem::take(&mut f.chunk_hash);
                f.chunks
                    .push((f.chunk_at, f.chunk_offset, size, hash.finish().0));
            }
            f.chunk_at = f.done;
            f.chunk_offset = self.frames.offset;
        }
        Ok(())
    }
}

impl<W: Write> TarSink for Sink<W> {
    fn meta(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.frames.open >= META_FRAME_MAX {
            self.frames.end()?;
        }
        self.segment.extend_from_slice(bytes);
        self.frames.write(bytes)
    }

    fn entry(&mut self, e: &TarEntry) -> io::Result<()> {
        self.flush_segment()?;
        if e.toc_type()? == "reg" && e.size > 0 {
            self.file = Some(File {
                hash: Hasher::new(),
                crc: Crc64::new(),
                roll: RollSum::new(),
                start: 0,
                chunk_at: 0,
                chunk_offset: 0,
                chunk_hash: Hasher::new(),
                done: 0,
                chunks: Vec::new(),
            });
        }
        self.current = Some(e.clone());
        Ok(())
    }

    fn content(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        let Some(f) = &mut self.file else {
            return Err(io::Error::other("file content outside a regular file"));
        };
        if f.start == 0 {
            // The content starts a frame of its own.
            self.frames.end()?;
            f.start = self.frames.offset;
            f.chunk_offset = f.start;
        }
        while !bytes.is_empty() {
            let Some(f) = &mut self.file else {
                return Err(io::Error::other("file content outside a regular file"));
            };
            let cut = bytes.iter().position(|&b| f.roll.roll(b));
            let n = cut.map_or(bytes.len(), |i| i + 1);
            let piece = &bytes[..n];
            f.hash.update(piece);
            f.chunk_hash.update(piece);
            f.crc.update(piece);
            f.done += n as u64;
            self.frames.write(piece)?;
            if cut.is_some() {
                self.end_chunk()?;
            }
            bytes = &bytes[n..];
        }
        Ok(())
    }

    fn entry_end(&mut self) -> io::Result<()> {
        let Some(e) = self.current.take() else {
            return Err(io::Error::other("an entry ended that never began"));
        };
        let mut main = TocEntry {
            kind: e.toc_type()?,
            name: e.name.clone(),
            link_name: e.linkname.clone(),
            mode: u64::from(e.mode),
            size: e.size,
            uid: e.uid,
            gid: e.gid,
            modtime: Some(crate::image::rfc3339(e.mtime)),
            digest: String::new(),
            offset: 0,
            end_offset: 0,
            chunk_size: 0,
            chunk_offset: 0,
            chunk_digest: String::new(),
        };
        let mut crc = None;
        let mut rest = Vec::new();
        if self.file.is_some() {
            self.end_chunk()?;
        }
        if let Some(f) = self.file.take() {
            main.digest = f.hash.finish().0.to_string();
            main.offset = f.start;
            main.end_offset = self.frames.offset;
            crc = Some(f.crc.sum());
            // As containers/storage's writer: chunk fields only when there are several chunks;
            // the first chunk's on the file's own entry, the others on `chunk` entries.
            if f.chunks.len() > 1 {
                for (i, (at, offset, size, digest)) in f.chunks.into_iter().enumerate() {
                    let mut c = TocEntry {
                        kind: "chunk",
                        name: e.name.clone(),
                        link_name: String::new(),
                        mode: 0,
                        size: 0,
                        uid: 0,
                        gid: 0,
                        modtime: None,
                        digest: String::new(),
                        offset,
                        end_offset: 0,
                        chunk_size: size,
                        chunk_offset: at,
                        chunk_digest: digest.to_string(),
                    };
                    if i == 0 {
                        main.chunk_size = c.chunk_size;
                        main.offset = c.offset;
                        main.chunk_digest = std::mem::take(&mut c.chunk_digest);
                    } else {
                        rest.push(c);
                    }
                }
            }
        }
        self.entries.push(main);
        self.entries.extend(rest);
        let position = self.position;
        self.split_record(&SplitEntry {
            kind: 1,
            name: &e.name,
            size: e.size,
            payload: crc.map(|c| base64_std(&c)),
            position,
        })
    }

    fn trailer(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.meta(bytes)
    }
}

/// A streaming zstd:chunked writer: tar in, zstd:chunked blob out; [`Chunked::finish`] gives
/// the descriptor annotations.
pub struct Chunked<W: Write> {
    scanner: TarScanner,
    sink: Sink<W>,
    level: i32,
}

impl<W: Write> Chunked<W> {
    pub fn new(out: W, level: i32) -> io::Result<Self> {
        let mut split = zstd::stream::write::Encoder::new(Vec::new(), level)?;
        split.include_checksum(false)?;
        split.include_contentsize(false)?;
        Ok(Chunked {
            scanner: TarScanner::new(),
            sink: Sink {
                frames: Frames::new(out, level)?,
                entries: Vec::new(),
                current: None,
                file: None,
                segment: Vec::new(),
                split,
                split_len: 0,
                position: 0,
            },
            level,
        })
    }

    /// Ends the stream: the last frame, the TOC, the tar-split and the footer. Returns the
    /// writer and the descriptor annotations.
    pub fn finish(self) -> io::Result<(W, BTreeMap<String, String>)> {
        self.scanner.finish()?;
        let mut s = self.sink;
        s.frames.end()?;
        s.flush_segment()?;
        let split = s.split.finish()?;
        let split_digest = Digest::of(&split);
        let toc = serde_json::to_vec(&Toc {
            version: 1,
            entries: &s.entries,
            tar_split_digest: split_digest.to_string(),
        })
        .map_err(io::Error::other)?;
        let toc_z = zstd_all(&toc, self.level)?;
        let toc_offset = s.frames.offset + 8;
        s.frames.skippable(&toc_z)?;
        let split_offset = s.frames.offset + 8;
        s.frames.skippable(&split)?;
        let mut footer = Vec::with_capacity(64);
        for v in [
            toc_offset,
            toc_z.len() as u64,
            toc.len() as u64,
            MANIFEST_TYPE,
            split_offset,
            split.len() as u64,
            s.split_len,
        ] {
            footer.extend_from_slice(&v.to_le_bytes());
        }
        footer.extend_from_slice(FOOTER_MAGIC);
        s.frames.skippable(&footer)?;
        let checksum = Digest::of(&toc_z).to_string();
        let position = format!("{toc_offset}:{}:{}:{MANIFEST_TYPE}", toc_z.len(), toc.len());
        let notes = BTreeMap::from([
            (annotations::CHECKSUM.to_string(), checksum.clone()),
            (annotations::POSITION.to_string(), position.clone()),
            (
                annotations::TARSPLIT_POSITION.to_string(),
                format!("{split_offset}:{}:{}", split.len(), s.split_len),
            ),
            (annotations::OLD_CHECKSUM.to_string(), checksum),
            (annotations::OLD_POSITION.to_string(), position),
        ]);
        Ok((s.frames.out, notes))
    }
}

impl<W: Write> Write for Chunked<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.scanner.feed(buf, &mut self.sink)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `data` as one zstd frame at `level`.
fn zstd_all(data: &[u8], level: i32) -> io::Result<Vec<u8>> {
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), level)?;
    e.include_checksum(false)?;
    e.include_contentsize(true)?;
    e.write_all(data)?;
    e.finish()
}

fn base64_std(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

#[cfg(test)]
#[path = "zchunked_tests.rs"]
mod tests;
