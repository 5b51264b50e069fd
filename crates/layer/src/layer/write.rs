//! Writing a layer: one streaming pass from entries to the compressed blob, hashed on the way
//! (the diff_id of the tar, the digest of the blob), with the ordering half of the contract
//! checked on the entries handed in.

use std::io::{self, Read, Write};

use super::pipe::{apply, LayerCompressor, Piece, SharedSender, SpliceReader, PIPE_DEPTH};
use super::{compress, splice};
use super::{Compression, Entry, EntryKind, LayerError, TarWriter};
use crate::digest::{Digest, Hasher, HashingWriter};

/// How to write a layer.
#[derive(Clone, Copy, Debug)]
pub struct LayerOptions {
    /// The mtime of every entry (SOURCE_DATE_EPOCH), decided by the caller.
    pub epoch: u64,
    pub compression: Compression,
    /// Compression worker threads (0 counts as 1). Never changes the output bytes.
    pub threads: usize,
}

/// What [`write_layer`] produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerStats {
    /// sha256 of the uncompressed tar (for eStargz: of the uncompressed stream, the tar with
    /// its TOC entry).
    pub diff_id: Digest,
    /// sha256 of the bytes written to `out`.
    pub digest: Digest,
    /// Bytes written to `out`.
    pub size: u64,
    /// Bytes of the uncompressed tar (for eStargz: of the uncompressed stream).
    pub uncompressed_size: u64,
    /// Annotations the layer's descriptor carries: where a zstd:chunked or eStargz layer's
    /// table of contents is, and its digest (empty for the other compressions).
    pub annotations: std::collections::BTreeMap<String, String>,
}

impl LayerStats {
    /// The layer just written with `compression`, as a built-layer record.
    pub fn cached(&self, compression: Compression) -> crate::image::CachedLayer {
        crate::image::CachedLayer {
            media_type: compression.media_type().to_string(),
            digest: self.digest,
            size: self.size,
            diff_id: self.diff_id,
            uncompressed_size: self.uncompressed_size,
            annotations: self.annotations.clone(),
        }
    }
}

/// Counts file content bytes for the progress callback.
struct ProgressReader<'a, R> {
    inner: R,
    progress: &'a dyn Fn(u64),
}

impl<R: Read> Read for ProgressReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            (self.progress)(n as u64);
        }
        Ok(n)
    }
}

/// One streaming pass: tar → sha256 (diff_id) → compress → sha256 (digest) → `out`. Memory
/// bounded (about threads × block size) whatever the layer size. `progress(n)` is called with
/// file-content byte deltas.
///
/// Each file is opened by its path `EntryKind::File::src`: for files ocibuild wrote itself (the
/// .deb spool). Files [`scan`] listed in a tree others can change go through
/// [`write_layer_with`] and [`host_content`] instead (opened as the scan listed them).
///
/// `entries` must already follow the contract (as [`scan`] returns them): strictly ascending
/// path bytes, every parent directory before its children, hardlinks pointing at an earlier
/// regular file. A violation is a [`LayerError::Contract`] error, never a silently different tar.
pub fn write_layer(
    entries: &[Entry],
    opts: &LayerOptions,
    out: &mut (dyn Write + Send),
    progress: &dyn Fn(u64),
) -> Result<LayerStats, LayerError> {
    write_layer_with(entries, opts, out, progress, &mut host_file_content)
}

/// A regular file's content, as a content source hands it to [`write_layer_with`].
pub enum Content<'a> {
    /// A reader of exactly the entry's `size` bytes.
    Bytes(&'a mut dyn Read),
    /// A raw deflate stream (RFC 1951) of the entry's bytes, such as a zip member's data. The
    /// writer inflates it and shows every inflated byte, in order, to `inspect`. A gzip layer
    /// copies the compressed blocks of a file of [`SPLICE_MIN`] bytes or more instead of
    /// compressing it again (see [`CONTRACT_VERSION`]); the tar stream is the same either way.
    Deflated {
        raw: &'a mut dyn Read,
        inspect: &'a mut dyn FnMut(&[u8]),
    },
}

/// Hands a regular file's content to the tar writer: called once; returns what writing the
/// entry returned.
pub type ContentSink<'a> = dyn FnMut(Content<'_>) -> Result<(), LayerError> + 'a;

/// Smallest file whose deflate stream a gzip layer reuses (part of the contract, version 3).
/// Smaller files compress better together, with the window of what came before.
pub const SPLICE_MIN: u64 = 16 * 1024;

/// [`write_layer`] with the content of regular files coming from `content` instead of the
/// host file `EntryKind::File::src`: for every `File` entry it is called with the entry's
/// index in `entries`, the entry, and a sink it must call exactly once with the [`Content`]
/// (a reader that borrows from the source, e.g. one member of an open zip archive, or that
/// member's raw deflate stream, so nothing is extracted to disk first). Its error, or the
/// sink's, fails the layer. The tar stream is the same as [`write_layer`]'s for the same
/// entries and content; so are the zstd and uncompressed layers, while a gzip layer keeps the
/// deflate blocks of [`Content::Deflated`] files of [`SPLICE_MIN`] bytes or more.
pub fn write_layer_with(
    entries: &[Entry],
    opts: &LayerOptions,
    out: &mut (dyn Write + Send),
    progress: &dyn Fn(u64),
    content: &mut dyn FnMut(usize, &Entry, &mut ContentSink<'_>) -> Result<(), LayerError>,
) -> Result<LayerStats, LayerError> {
    check_order(entries)?;
    let compressed = HashingWriter::new(out);
    let compressor =
        compress::Compressor::new_at(opts.compression, opts.threads, opts.epoch, compressed)
            .map_err(|source| LayerError::Compressor {
                what: opts.compression.describe(),
                source,
            })?;
    let finish = |compressor: LayerCompressor<'_>| {
        let (compressed, done) =
            compressor
                .finish_layer()
                .map_err(|source| LayerError::Compress {
                    what: opts.compression.describe(),
                    source,
                })?;
        let (_, digest, size) = compressed.finish();
        Ok::<_, LayerError>((digest, size, done))
    };
    if matches!(opts.compression, Compression::Zstd(_)) {
        // One stage: libzstd's workers already compress while this thread reads and hashes,
        // and a second stage only costs copies (measured: more CPU and wall time with it).
        let sender = SharedSender::direct(compressor);
        produce(entries, opts, sender.clone(), progress, content)?;
        let (compressor, tar) = sender.into_direct().ok_or_else(|| LayerError::Contract {
            entry: String::new(),
            reason: "the compressor is still in use after the tar stage",
        })?;
        let (diff_id, uncompressed_size) = tar.finish();
        let (digest, size, _) = finish(compressor)?;
        return Ok(LayerStats {
            diff_id,
            digest,
            size,
            uncompressed_size,
            annotations: Default::default(),
        });
    }
    // Two stages, so reading, tar framing and the diff_id hash overlap with compression and
    // output: the tar stream goes in 1 MiB chunks over a bounded channel (memory stays bounded)
    // to a thread that owns the compressor. The byte stream is the same either way. That thread
    // also hashes the tar stream (the diff_id): the tar stage, which inflates a wheel's members
    // and checks them against RECORD, had three quarters of a wheel layer's work with it
    // (bench/torch.sh), so a layer took about as long as its tar stage alone.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Piece>(PIPE_DEPTH);
    std::thread::scope(|scope| {
        let consumer = scope.spawn(move || -> Result<_, LayerError> {
            let mut compressor = compressor;
            let mut tar = Hasher::new();
            for piece in rx {
                if let Piece::Plain(b) | Piece::Covered(b) = &piece {
                    tar.update(b);
                }
                apply(&mut compressor, piece).map_err(|source| LayerError::Write {
                    entry: String::new(),
                    source,
                })?;
            }
            let (digest, size, done) = finish(compressor)?;
            Ok((tar, digest, size, done))
        });
        let sender = SharedSender::channel(tx);
        let produced = produce(entries, opts, sender, progress, content);
        let consumed = consumer.join().unwrap_or_else(|_| {
            Err(LayerError::Write {
                entry: String::new(),
                source: std::io::Error::other("the compression thread panicked"),
            })
        });
        // A failed consumer closes the channel, so the producer fails too; its error says why.
        let (tar, digest, size, done) = consumed?;
        produced?;
        // eStargz's stream is the tar plus its TOC entry: its own digest is the diff_id.
        let (diff_id, uncompressed_size) = done.uncompressed.unwrap_or_else(|| tar.finish());
        Ok(LayerStats {
            diff_id,
            digest,
            size,
            uncompressed_size,
            annotations: done.annotations,
        })
    })
}

/// The content of an entry's host file `src` (what [`write_layer`] streams).
fn host_file_content(_: usize, e: &Entry, sink: &mut ContentSink<'_>) -> Result<(), LayerError> {
    let EntryKind::File { src, .. } = &e.kind else {
        return Ok(());
    };
    let mut file = fs_err::File::open(src).map_err(|source| LayerError::Io {
        path: src.clone(),
        source,
    })?;
    sink(Content::Bytes(&mut file)).map_err(|err| host_file_error(src, err))
}

/// The content of a scanned host file, opened through `reader` (the inode the scan listed,
/// never reached through a symlink below its source): a content source for
/// [`write_layer_with`].
pub fn host_content(
    reader: &mut super::HostReader<'_>,
    e: &Entry,
    sink: &mut ContentSink<'_>,
) -> Result<(), LayerError> {
    let (EntryKind::File { src, .. }, Some(mut file)) = (&e.kind, reader.open(e)?) else {
        return Ok(());
    };
    sink(Content::Bytes(&mut file)).map_err(|err| host_file_error(src, err))
}

/// A content sink's error for an entry streamed from the host file `src`, said in terms of
/// that file: a size that moved is the file changing while it was read.
pub fn host_file_error(src: &std::path::Path, err: LayerError) -> LayerError {
    match err {
        LayerError::SizeMismatch {
            expected, found, ..
        } => LayerError::Changed {
            path: src.to_path_buf(),
            expected,
            found,
        },
        LayerError::ReadContent { source, .. } => LayerError::Io {
            path: src.to_path_buf(),
            source,
        },
        other => other,
    }
}

/// The tar stage: entries → tar stream → chunks (hashed where they go: the diff_id).
fn produce(
    entries: &[Entry],
    opts: &LayerOptions,
    sender: SharedSender<'_>,
    progress: &dyn Fn(u64),
    content: &mut dyn FnMut(usize, &Entry, &mut ContentSink<'_>) -> Result<(), LayerError>,
) -> Result<(), LayerError> {
    let mut tar = TarWriter::new(sender.clone(), opts.epoch);
    // A hard link's header carries its target's mode and owner: extractors (containers/storage,
    // GNU tar) apply the link header's metadata to the shared inode, so anything else would
    // change the target file (an executable losing its x bits). check_order guarantees the
    // target came first.
    let mut file_meta: std::collections::HashMap<&str, (u32, u32, u32)> = Default::default();
    for (i, e) in entries.iter().enumerate() {
        match &e.kind {
            EntryKind::Dir => tar.append_dir(&e.path, e.mode, e.uid, e.gid)?,
            EntryKind::Symlink { target } => tar.append_symlink(&e.path, target, e.uid, e.gid)?,
            EntryKind::Hardlink { target } => {
                let (mode, uid, gid) = file_meta
                    .get(target.as_str())
                    .copied()
                    .unwrap_or((e.mode, e.uid, e.gid));
                tar.append_hardlink(&e.path, target, mode, uid, gid)?;
            }
            EntryKind::File { size, .. } => {
                file_meta.insert(e.path.as_str(), (e.mode, e.uid, e.gid));
                let mut written = false;
                let tar = &mut tar;
                content(i, e, &mut |c: Content<'_>| {
                    if written {
                        return Err(LayerError::Contract {
                            entry: e.path.clone(),
                            reason: "its content source provided content twice",
                        });
                    }
                    written = true;
                    let io_err = |source| LayerError::ReadContent {
                        entry: e.path.clone(),
                        source,
                    };
                    match c {
                        Content::Bytes(r) => {
                            let mut reader = ProgressReader { inner: r, progress };
                            tar.append_file(&e.path, e.mode, e.uid, e.gid, *size, &mut reader)
                        }
                        Content::Deflated { raw, inspect } => {
                            let splice = matches!(
                                opts.compression,
                                Compression::Gzip(_) | Compression::Estargz(_)
                            ) && *size >= SPLICE_MIN;
                            let splicer = splice::Splicer::new(raw, splice).map_err(io_err)?;
                            let mut reader = SpliceReader::new(
                                splicer,
                                inspect,
                                progress,
                                splice.then(|| sender.clone()),
                            );
                            tar.append_file(&e.path, e.mode, e.uid, e.gid, *size, &mut reader)
                        }
                    }
                })?;
                if !written {
                    return Err(LayerError::Contract {
                        entry: e.path.clone(),
                        reason: "its content source provided no content",
                    });
                }
            }
        }
    }
    // finish flushes: the last chunk goes on.
    tar.finish()?;
    Ok(())
}

/// Checks the ordering half of the contract on entries handed to [`write_layer`].
pub(super) fn check_order(entries: &[Entry]) -> Result<(), LayerError> {
    use std::collections::HashSet;
    let mut dirs: HashSet<&str> = HashSet::new();
    let mut files: HashSet<&str> = HashSet::new();
    let mut prev: Option<&str> = None;
    for e in entries {
        let err = |reason| {
            Err(LayerError::Contract {
                entry: e.path.clone(),
                reason,
            })
        };
        if let Some(p) = prev {
            if p.as_bytes() >= e.path.as_bytes() {
                return err("entries are not in strictly ascending path order");
            }
        }
        prev = Some(&e.path);
        let is_dir = matches!(e.kind, EntryKind::Dir);
        if is_dir != e.path.ends_with('/') {
            return err("directory paths (and only they) end with `/`");
        }
        let trimmed = e.path.strip_suffix('/').unwrap_or(&e.path);
        if let Some(i) = trimmed.rfind('/') {
            if !dirs.contains(&trimmed[..=i]) {
                return err("its parent directory is not an earlier entry");
            }
        }
        match &e.kind {
            EntryKind::Dir => {
                dirs.insert(&e.path);
            }
            EntryKind::File { .. } => {
                files.insert(&e.path);
            }
            EntryKind::Hardlink { target } if !files.contains(target.as_str()) => {
                return err("a hardlink must point at an earlier regular file");
            }
            _ => {}
        }
    }
    Ok(())
}
