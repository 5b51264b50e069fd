//! The tar stage's output: plain tar bytes to compress, and (for a gzip layer that reuses a
//! member's deflate blocks) covered content plus the blocks themselves, in stream order; either
//! down a bounded channel to the compression stage or straight into the compressor.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::rc::Rc;

use super::{compress, splice};
use crate::digest::{Hasher, HashingWriter};

/// Chunks in flight between the tar stage and the compression stage.
pub(super) const PIPE_DEPTH: usize = 4;
const CHUNK: usize = 1 << 20;

/// The compressor the tar stage feeds: it writes the compressed bytes, hashed, to the output.
pub(super) type LayerCompressor<'o> =
    compress::Compressor<HashingWriter<&'o mut (dyn Write + Send)>>;

/// Hands one piece of the tar stream to the compressor.
pub(super) fn apply(c: &mut LayerCompressor<'_>, piece: Piece) -> io::Result<()> {
    match piece {
        Piece::Plain(chunk) => c.write_all(&chunk),
        Piece::Covered(chunk) => c.write_covered(&chunk),
        Piece::Deflate(raw) => c.write_deflate(raw),
    }
}

/// What goes from the tar stage to the compression stage, in stream order.
pub(super) enum Piece {
    /// Tar bytes to compress.
    Plain(Vec<u8>),
    /// Tar bytes (a file's content) that [`Piece::Deflate`] pieces already carry compressed:
    /// counted and checksummed, not compressed again.
    Covered(Vec<u8>),
    /// Deflate blocks to copy into a gzip stream as they are (see [`splice`]).
    Deflate(Vec<u8>),
}

/// A deflated file's content for the tar writer: inflates it, shows it to `inspect`, and, when
/// splicing, marks the content as covered and sends the compressed blocks along.
pub(super) struct SpliceReader<'a, 'r, 'o> {
    splicer: splice::Splicer<'r>,
    inspect: &'a mut dyn FnMut(&[u8]),
    progress: &'a dyn Fn(u64),
    /// Set when splicing.
    sender: Option<SharedSender<'o>>,
    begun: bool,
}

impl<'a, 'r, 'o> SpliceReader<'a, 'r, 'o> {
    /// `sender` is given when splicing (a gzip layer), else the content is only inflated.
    pub(super) fn new(
        splicer: splice::Splicer<'r>,
        inspect: &'a mut dyn FnMut(&[u8]),
        progress: &'a dyn Fn(u64),
        sender: Option<SharedSender<'o>>,
    ) -> Self {
        SpliceReader {
            splicer,
            inspect,
            progress,
            sender,
            begun: false,
        }
    }
}

impl Read for SpliceReader<'_, '_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(sender) = &self.sender {
            if !self.begun {
                // Everything before the content (its header) is plain.
                self.begun = true;
                sender.0.borrow_mut().set_mode(Mode::Covered)?;
            }
        }
        let n = self.splicer.read(buf)?;
        if n > 0 {
            (self.inspect)(&buf[..n]);
            (self.progress)(n as u64);
        }
        if let Some(sender) = &self.sender {
            let end = n == 0 && !buf.is_empty();
            let mut s = sender.0.borrow_mut();
            // The blocks go on in pieces of about CHUNK bytes, not one per read (a read ends at
            // every deflate block: bench/torch.sh sent 140k pieces, 700k futex calls). The
            // rest goes with the read that ends the stream, before the tar writer passes on its
            // bytes: as before, every block comes before the content's last byte (a writer that
            // closes the file's part there, as eStargz's member, has them all).
            let last = self.splicer.is_done() || end;
            if self.splicer.raw_len() >= CHUNK || (last && self.splicer.raw_len() > 0) {
                s.send_deflate(self.splicer.take_raw())?;
            }
            if end {
                // The end of the content: what the tar writer writes next (padding) is plain.
                s.set_mode(Mode::Plain)?;
            }
        }
        Ok(n)
    }
}

/// Whether bytes written to a [`ChunkSender`] are to be compressed or are covered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Plain,
    Covered,
}

/// Where a [`ChunkSender`]'s pieces go.
enum Target<'o> {
    /// Down the channel to the compression stage.
    Channel(std::sync::mpsc::SyncSender<Piece>),
    /// Straight into the compressor (one stage), the tar stream hashed on the way (the
    /// diff_id; with a channel the compression stage hashes it).
    Direct(Box<LayerCompressor<'o>>, Hasher),
}

/// Collects writes into [`CHUNK`]-sized buffers and sends each full one on, as
/// [`Piece::Plain`] or [`Piece::Covered`] by the mode; `flush` sends what is left. A closed
/// channel (the consumer failed) is a broken pipe. With a direct target nothing is buffered.
struct ChunkSender<'o> {
    target: Target<'o>,
    buf: Vec<u8>,
    mode: Mode,
}

impl<'o> ChunkSender<'o> {
    fn new(tx: std::sync::mpsc::SyncSender<Piece>) -> Self {
        ChunkSender {
            target: Target::Channel(tx),
            buf: Vec::with_capacity(CHUNK),
            mode: Mode::Plain,
        }
    }
    fn direct(c: LayerCompressor<'o>) -> Self {
        ChunkSender {
            target: Target::Direct(Box::new(c), Hasher::new()),
            buf: Vec::new(),
            mode: Mode::Plain,
        }
    }
    fn into_direct(self) -> Option<(LayerCompressor<'o>, Hasher)> {
        match self.target {
            Target::Direct(c, tar) => Some((*c, tar)),
            Target::Channel(_) => None,
        }
    }
    fn send_piece(&mut self, piece: Piece) -> io::Result<()> {
        match &mut self.target {
            Target::Channel(tx) => tx.send(piece).map_err(|_| {
                io::Error::new(io::ErrorKind::BrokenPipe, "the compression stage stopped")
            }),
            Target::Direct(c, _) => apply(c, piece),
        }
    }
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let full = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK));
        let piece = match self.mode {
            Mode::Plain => Piece::Plain(full),
            Mode::Covered => Piece::Covered(full),
        };
        self.send_piece(piece)
    }
    fn set_mode(&mut self, mode: Mode) -> io::Result<()> {
        if mode != self.mode {
            self.send()?;
            self.mode = mode;
        }
        Ok(())
    }
    fn send_deflate(&mut self, raw: Vec<u8>) -> io::Result<()> {
        self.send_piece(Piece::Deflate(raw))
    }
}

impl Write for ChunkSender<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if let Target::Direct(c, tar) = &mut self.target {
            let n = match self.mode {
                Mode::Plain => c.write(data)?,
                Mode::Covered => c.write_covered(data).map(|()| data.len())?,
            };
            tar.update(&data[..n]);
            return Ok(n);
        }
        let n = data.len().min(CHUNK - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == CHUNK {
            self.send()?;
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

/// The tar stage's one [`ChunkSender`], shared by the tar writer and a [`SpliceReader`] (both
/// on the tar stage's thread, never borrowing it at the same time).
#[derive(Clone)]
pub(super) struct SharedSender<'o>(Rc<RefCell<ChunkSender<'o>>>);

impl<'o> SharedSender<'o> {
    /// Pieces go down `tx` to the compression stage.
    pub(super) fn channel(tx: std::sync::mpsc::SyncSender<Piece>) -> Self {
        SharedSender(Rc::new(RefCell::new(ChunkSender::new(tx))))
    }
    /// Pieces go straight into `c` (one stage).
    pub(super) fn direct(c: LayerCompressor<'o>) -> Self {
        SharedSender(Rc::new(RefCell::new(ChunkSender::direct(c))))
    }
    /// The compressor of a direct sender and the hash of the tar stream it took, once it is the
    /// last handle (the tar stage is done).
    pub(super) fn into_direct(self) -> Option<(LayerCompressor<'o>, Hasher)> {
        Rc::try_unwrap(self.0)
            .ok()
            .and_then(|c| c.into_inner().into_direct())
    }
}

impl Write for SharedSender<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().write(data)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.borrow_mut().flush()
    }
}
