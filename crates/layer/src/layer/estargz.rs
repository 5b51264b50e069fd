//! The eStargz layer writer (containerd/stargz-snapshotter's lazy-pull format, which
//! containers/storage also pulls partially), deterministic.
//!
//! A gzip stream of many members: each content chunk of a regular file (files cut every
//! [`CHUNK_SIZE`] bytes, as the reference writer does) starts a new member, and the tar
//! headers and padding that follow it stay in that member; the tar's end-of-archive blocks are
//! dropped and replaced by the TOC: a tar entry `stargz.index.json` (the JSON, tab-indented,
//! fields in stargz-snapshotter's order) followed by the end-of-archive blocks, in a member of
//! its own; then the 51-byte footer member whose gzip extra field holds the TOC's offset.
//!
//! The uncompressed stream is therefore not the tar the layer writer made: it has the TOC
//! entry, so the diff_id differs from a `gzip` layer's of the same files, and an ordinary
//! (not lazy, not partial) pull extracts `/stargz.index.json` into the image's filesystem, as
//! with every eStargz image.
//!
//! Members are plain deflate at the recipe's level from a fresh zlib-rs compressor each, with
//! the same fixed 10-byte header as the `gzip` writer. A wheel member of `SPLICE_MIN` bytes or
//! more keeps its own deflate blocks, as in a gzip layer: its file's member is those blocks and
//! an empty final block (one member for the whole file, not cut in chunks), and what follows
//! the file goes in a new member.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::tarscan::{TarEntry, TarScanner, TarSink};
use crate::digest::{Digest, Hasher};

/// Content bytes per chunk (stargz-snapshotter's default).
const CHUNK_SIZE: u64 = 4 << 20;
/// The TOC's entry name.
pub const TOC_NAME: &str = "stargz.index.json";
/// Fixed gzip member header: magic, CM=deflate, FLG=0, MTIME=0, XFL=0, OS=255 (unknown).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];

/// The descriptor annotation keys.
pub mod annotations {
    pub const TOC_DIGEST: &str = "containerd.io/snapshot/stargz/toc.digest";
    pub const UNCOMPRESSED_SIZE: &str = "io.containers.estargz.uncompressed-size";
}

/// The writer's identity: backend, level, chunk size.
pub(crate) fn description(level: u32) -> String {
    format!(
        "estargz;zlib-rs;level={level};chunk={CHUNK_SIZE};splice={}",
        super::SPLICE_MIN
    )
}

/// One TOC entry, in stargz-snapshotter's field order (`estargz.TOCEntry`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TocEntry {
    name: String,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "is_zero")]
    size: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    modtime: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    link_name: String,
    #[serde(skip_serializing_if = "is_zero")]
    mode: u64,
    #[serde(skip_serializing_if = "is_zero")]
    uid: u64,
    #[serde(skip_serializing_if = "is_zero")]
    gid: u64,
    #[serde(skip_serializing_if = "is_zero")]
    offset: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    digest: String,
    #[serde(skip_serializing_if = "is_zero")]
    chunk_offset: u64,
    #[serde(skip_serializing_if = "is_zero")]
    chunk_size: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    chunk_digest: String,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Serialize)]
struct Toc<'a> {
    version: u32,
    entries: &'a [TocEntry],
}

/// A writer that counts what it passes on.
struct Counted<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The gzip member being written.
struct Member<W: Write> {
    enc: flate2::write::DeflateEncoder<Counted<W>>,
    crc: crc32fast::Hasher,
    len: u64,
    /// Input not yet handed to the compressor: it gets whole [`PIECE`]s only, because
    /// zlib-rs's output depends on how its input is split, and the split must depend on the
    /// stream alone, never on how the tar stage happened to hand it over.
    pending: Vec<u8>,
}

/// Input handed to a member's compressor at a time.
const PIECE: usize = 64 * 1024;

/// The output: idle between members, or inside one, or inside a member of a file's own
/// deflate blocks (spliced).
enum Out<W: Write> {
    Idle(Counted<W>),
    Member(Member<W>),
    Spliced {
        w: Counted<W>,
        crc: crc32fast::Hasher,
        len: u64,
    },
    Gone,
}

/// The file whose content is passing: its entry's index in the TOC and its hashes.
struct File {
    index: usize,
    hash: Hasher,
    chunk_hash: Hasher,
    done: u64,
    size: u64,
}

struct Sink<W: Write> {
    out: Out<W>,
    level: u32,
    /// The uncompressed stream's hash (the diff_id).
    diff: Hasher,
    entries: Vec<TocEntry>,
    file: Option<File>,
    epoch: u64,
    /// Whether the bytes being scanned are covered by deflate blocks handed over separately.
    covered: bool,
}

impl<W: Write> Sink<W> {
    fn offset(&self) -> u64 {
        match &self.out {
            Out::Idle(w) => w.n,
            Out::Member(m) => m.enc.get_ref().n,
            Out::Spliced { w, .. } => w.n,
            Out::Gone => 0,
        }
    }

    fn open(&mut self) -> io::Result<()> {
        if let Out::Idle(_) = self.out {
            let Out::Idle(mut w) = std::mem::replace(&mut self.out, Out::Gone) else {
                return Err(gone());
            };
            w.write_all(&GZIP_HEADER)?;
            let enc = flate2::write::DeflateEncoder::new(w, flate2::Compression::new(self.level));
            self.out = Out::Member(Member {
                enc,
                crc: crc32fast::Hasher::new(),
                len: 0,
                pending: Vec::with_capacity(PIECE),
            });
        }
        Ok(())
    }

    fn close(&mut self) -> io::Result<()> {
        if let Out::Spliced { .. } = self.out {
            let Out::Spliced { mut w, crc, len } = std::mem::replace(&mut self.out, Out::Gone)
            else {
                return Err(gone());
            };
            // The blocks were not final: an empty final stored block ends the member.
            w.write_all(&[1, 0, 0, 0xff, 0xff])?;
            w.write_all(&crc.finalize().to_le_bytes())?;
            w.write_all(&(len as u32).to_le_bytes())?;
            self.out = Out::Idle(w);
        }
        if let Out::Member(_) = self.out {
            let Out::Member(mut m) = std::mem::replace(&mut self.out, Out::Gone) else {
                return Err(gone());
            };
            m.enc.write_all(&m.pending)?;
            let mut w = m.enc.finish()?;
            w.write_all(&m.crc.finalize().to_le_bytes())?;
            w.write_all(&(m.len as u32).to_le_bytes())?; // ISIZE: length mod 2^32
            self.out = Out::Idle(w);
        }
        Ok(())
    }

    /// Starts the current file's spliced member (its TOC offset is where it starts), once.
    fn start_splice(&mut self) -> io::Result<()> {
        if let Out::Spliced { .. } = self.out {
            return Ok(());
        }
        let Some(f) = &self.file else {
            return Err(io::Error::other("deflate blocks outside a regular file"));
        };
        let index = f.index;
        self.close()?;
        let Out::Idle(mut w) = std::mem::replace(&mut self.out, Out::Gone) else {
            return Err(gone());
        };
        self.entries[index].offset = w.n;
        w.write_all(&GZIP_HEADER)?;
        self.out = Out::Spliced {
            w,
            crc: crc32fast::Hasher::new(),
            len: 0,
        };
        Ok(())
    }

    /// Deflate blocks of the current file, copied into its member as they are.
    fn raw(&mut self, raw: &[u8]) -> io::Result<()> {
        self.start_splice()?;
        let Out::Spliced { w, .. } = &mut self.out else {
            return Err(gone());
        };
        w.write_all(raw)
    }

    /// Content the spliced blocks carry: counted and hashed, not compressed.
    fn covered_content(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.start_splice()?;
        let (Some(f), Out::Spliced { crc, len, .. }) = (&mut self.file, &mut self.out) else {
            return Err(gone());
        };
        f.hash.update(bytes);
        f.chunk_hash.update(bytes);
        f.done += bytes.len() as u64;
        crc.update(bytes);
        *len += bytes.len() as u64;
        self.diff.update(bytes);
        Ok(())
    }

    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        if let Out::Spliced { .. } = self.out {
            // What follows a spliced file (padding, headers) goes in a member of its own.
            self.close()?;
        }
        self.open()?;
        let Out::Member(m) = &mut self.out else {
            return Err(gone());
        };
        let mut rest = data;
        while !rest.is_empty() {
            let n = (PIECE - m.pending.len()).min(rest.len());
            m.pending.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if m.pending.len() == PIECE {
                m.enc.write_all(&m.pending)?;
                m.pending.clear();
            }
        }
        m.crc.update(data);
        m.len += data.len() as u64;
        self.diff.update(data);
        Ok(())
    }

    /// Ends the current content chunk: its digest into its TOC entry (the last one).
    fn end_chunk(&mut self) {
        if let Some(f) = &mut self.file {
            let digest = std::mem::take(&mut f.chunk_hash).finish().0;
            if let Some(e) = self.entries.last_mut() {
                e.chunk_digest = digest.to_string();
            }
        }
    }
}

fn gone() -> io::Error {
    io::Error::other("the eStargz writer's output is gone after an earlier error")
}

impl<W: Write> TarSink for Sink<W> {
    fn meta(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write(bytes)
    }

    fn entry(&mut self, e: &TarEntry) -> io::Result<()> {
        let kind = e.toc_type()?;
        let reg = kind == "reg";
        self.entries.push(TocEntry {
            name: e.name.clone(),
            kind,
            size: if reg { e.size } else { 0 },
            modtime: crate::image::rfc3339(e.mtime),
            link_name: e.linkname.clone(),
            mode: u64::from(e.mode),
            uid: e.uid,
            gid: e.gid,
            offset: 0,
            digest: String::new(),
            chunk_offset: 0,
            chunk_size: 0,
            chunk_digest: String::new(),
        });
        if reg {
            self.file = Some(File {
                index: self.entries.len() - 1,
                hash: Hasher::new(),
                chunk_hash: Hasher::new(),
                done: 0,
                size: e.size,
            });
        }
        Ok(())
    }

    fn content(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if self.covered {
            return self.covered_content(bytes);
        }
        while !bytes.is_empty() {
            let Some(f) = &self.file else {
                return Err(io::Error::other("file content outside a regular file"));
            };
            let (done, size, name) = (f.done, f.size, self.entries[f.index].name.clone());
            if done % CHUNK_SIZE == 0 {
                // A chunk starts: a member of its own.
                if done > 0 {
                    self.end_chunk();
                    self.entries.push(TocEntry {
                        name,
                        kind: "chunk",
                        size: 0,
                        modtime: String::new(),
                        link_name: String::new(),
                        mode: 0,
                        uid: 0,
                        gid: 0,
                        offset: 0,
                        digest: String::new(),
                        chunk_offset: done,
                        chunk_size: 0,
                        chunk_digest: String::new(),
                    });
                }
                self.close()?;
                let offset = self.offset();
                if let Some(e) = self.entries.last_mut() {
                    e.offset = offset;
                    // Full chunks say their size; the last, shorter one does not.
                    if size - done >= CHUNK_SIZE {
                        e.chunk_size = CHUNK_SIZE;
                    }
                }
            }
            let n = (CHUNK_SIZE - done % CHUNK_SIZE).min(bytes.len() as u64) as usize;
            let piece = &bytes[..n];
            if let Some(f) = &mut self.file {
                f.hash.update(piece);
                f.chunk_hash.update(piece);
                f.done += n as u64;
            }
            self.write(piece)?;
            bytes = &bytes[n..];
        }
        Ok(())
    }

    fn entry_end(&mut self) -> io::Result<()> {
        if self.file.as_ref().is_some_and(|f| f.done > 0) {
            self.end_chunk();
        }
        if let Some(f) = self.file.take() {
            // Every regular file has a digest, an empty one's too (as the reference writer).
            self.entries[f.index].digest = f.hash.finish().0.to_string();
        }
        Ok(())
    }

    fn trailer(&mut self, _bytes: &[u8]) -> io::Result<()> {
        // The TOC entry and its own end-of-archive blocks replace them.
        Ok(())
    }
}

/// A streaming eStargz writer: tar in, eStargz blob out.
pub struct Estargz<W: Write> {
    scanner: TarScanner,
    sink: Sink<W>,
}

/// What a finished eStargz stream adds: its annotations, and the uncompressed stream's digest
/// and size (the diff_id: the tar with the TOC entry).
pub struct EstargzDone<W> {
    pub out: W,
    pub annotations: BTreeMap<String, String>,
    pub diff_id: Digest,
    pub uncompressed_size: u64,
}

impl<W: Write> Estargz<W> {
    /// `epoch` is the mtime of the TOC entry, as of every other entry.
    pub fn new(out: W, level: u32, epoch: u64) -> Self {
        Estargz {
            scanner: TarScanner::new(),
            sink: Sink {
                out: Out::Idle(Counted { inner: out, n: 0 }),
                level,
                diff: Hasher::new(),
                entries: Vec::new(),
                file: None,
                epoch,
                covered: false,
            },
        }
    }

    pub fn finish(self) -> io::Result<EstargzDone<W>> {
        self.scanner.finish()?;
        let mut s = self.sink;
        s.close()?;
        let toc_offset = s.offset();
        let mut json = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b"\t");
        let mut ser = serde_json::Serializer::with_formatter(&mut json, fmt);
        Toc {
            version: 1,
            entries: &s.entries,
        }
        .serialize(&mut ser)
        .map_err(io::Error::other)?;
        let mut tar = super::TarWriter::new(Vec::new(), s.epoch);
        tar.append_file(TOC_NAME, 0o644, 0, 0, json.len() as u64, &mut &json[..])
            .map_err(io::Error::other)?;
        let tar = tar.finish().map_err(io::Error::other)?;
        s.write(&tar)?;
        s.close()?;
        let Out::Idle(mut w) = s.out else {
            return Err(gone());
        };
        w.write_all(&footer(toc_offset))?;
        let (diff_id, uncompressed_size) = s.diff.finish();
        let annotations = BTreeMap::from([
            (
                annotations::TOC_DIGEST.to_string(),
                Digest::of(&json).to_string(),
            ),
            (
                annotations::UNCOMPRESSED_SIZE.to_string(),
                uncompressed_size.to_string(),
            ),
        ]);
        Ok(EstargzDone {
            out: w.inner,
            annotations,
            diff_id,
            uncompressed_size,
        })
    }
}

impl<W: Write> Estargz<W> {
    /// Tar bytes (a file's content) that [`write_deflate`](Self::write_deflate) blocks carry.
    pub(crate) fn write_covered(&mut self, buf: &[u8]) -> io::Result<()> {
        self.sink.covered = true;
        let done = self.scanner.feed(buf, &mut self.sink);
        self.sink.covered = false;
        done
    }

    /// Deflate blocks (non-final, ending on a byte boundary) of the current file's content: its
    /// member is made of them, as the gzip writer splices a wheel's blocks.
    pub(crate) fn write_deflate(&mut self, raw: &[u8]) -> io::Result<()> {
        self.sink.raw(raw)
    }
}

impl<W: Write> Write for Estargz<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.scanner.feed(buf, &mut self.sink)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The 51-byte footer: an empty gzip member whose extra field (subfield `SG`) holds the TOC's
/// offset as 16 hex digits and `STARGZ`.
fn footer(toc_offset: u64) -> Vec<u8> {
    let subfield = format!("{toc_offset:016x}STARGZ");
    let mut f = vec![0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 255];
    f.extend_from_slice(&(4 + subfield.len() as u16).to_le_bytes());
    f.extend_from_slice(b"SG");
    f.extend_from_slice(&(subfield.len() as u16).to_le_bytes());
    f.extend_from_slice(subfield.as_bytes());
    // An empty final stored block, then CRC32 and ISIZE of nothing.
    f.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    f.extend_from_slice(&[0; 8]);
    f
}
