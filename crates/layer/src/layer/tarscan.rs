//! A streaming reader of the tar stream the layer writer produces, for the compressors that
//! must know where entries and file contents sit (zstd:chunked and eStargz put each regular
//! file's content in its own frame or gzip member, and index the files in a table of contents).
//!
//! It parses the stream as it passes rather than being told by the tar stage: the tar stage and
//! its pipe stay exactly as they are for gzip and zstd, and the index describes the very bytes
//! that were compressed. Only what [`super::TarWriter`] writes is expected (USTAR headers, PAX
//! `x` headers with `path`, `linkpath`, `size`, `uid`, `gid`, `mtime`); anything else is an
//! error, never a guess.

use std::io;

const BLOCK: usize = 512;

/// One entry's metadata, as tar readers (Go's archive/tar, which containers/storage uses)
/// report it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TarEntry {
    /// The full name (USTAR prefix joined, or the PAX `path`); a directory keeps its `/`.
    pub name: String,
    pub typeflag: u8,
    pub linkname: String,
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
    pub size: u64,
    pub mtime: u64,
}

impl TarEntry {
    /// The TOC type name both formats use (containers/storage's and eStargz's).
    pub(super) fn toc_type(&self) -> io::Result<&'static str> {
        Ok(match self.typeflag {
            b'0' | 0 => "reg",
            b'1' => "hardlink",
            b'2' => "symlink",
            b'3' => "char",
            b'4' => "block",
            b'5' => "dir",
            b'6' => "fifo",
            other => {
                return Err(invalid(format!(
                    "tar entry `{}` has type {other:#x}, which no TOC can describe",
                    self.name
                )))
            }
        })
    }

    /// Whether the entry's data is file content (a regular file's).
    fn has_content(&self) -> bool {
        matches!(self.typeflag, b'0' | 0)
    }
}

/// What the scanner reports, in stream order. Every byte of the stream is handed over exactly
/// once, by `meta`, `content` or `trailer`.
pub(crate) trait TarSink {
    /// Header bytes (PAX headers and records included), padding after content.
    fn meta(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// An entry whose header bytes have all gone to `meta`; its content follows.
    fn entry(&mut self, e: &TarEntry) -> io::Result<()>;
    /// Bytes of the current regular file's content.
    fn content(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// The current entry's content is complete (called for every entry, content or not).
    fn entry_end(&mut self) -> io::Result<()>;
    /// The end-of-archive blocks and anything after them.
    fn trailer(&mut self, bytes: &[u8]) -> io::Result<()>;
}

enum State {
    /// Collecting a 512-byte header block.
    Header,
    /// Collecting PAX records (`left` bytes, padding included; `len` of them are records).
    Pax { left: u64, len: usize },
    /// Inside an entry's data: `left` bytes of content, then `pad` bytes of padding.
    Data { left: u64, pad: u64, content: bool },
    /// After the first zero block.
    Trailer,
}

/// Feeds a tar stream, in pieces of any size, to a [`TarSink`].
pub(crate) struct TarScanner {
    state: State,
    block: Vec<u8>,
    pax_buf: Vec<u8>,
    pax: Vec<(String, String)>,
}

impl TarScanner {
    pub(super) fn new() -> Self {
        TarScanner {
            state: State::Header,
            block: Vec::with_capacity(BLOCK),
            pax_buf: Vec::new(),
            pax: Vec::new(),
        }
    }

    /// Scans `buf`, reporting to `sink`.
    pub(super) fn feed(&mut self, mut buf: &[u8], sink: &mut dyn TarSink) -> io::Result<()> {
        while !buf.is_empty() {
            match &mut self.state {
                State::Trailer => {
                    sink.trailer(buf)?;
                    return Ok(());
                }
                State::Data { left, pad, content } => {
                    if *left > 0 {
                        let n = (*left).min(buf.len() as u64) as usize;
                        if *content {
                            sink.content(&buf[..n])?;
                        } else {
                            sink.meta(&buf[..n])?;
                        }
                        *left -= n as u64;
                        buf = &buf[n..];
                        if *left == 0 {
                            sink.entry_end()?;
                        }
                    } else {
                        let n = (*pad).min(buf.len() as u64) as usize;
                        sink.meta(&buf[..n])?;
                        *pad -= n as u64;
                        buf = &buf[n..];
                    }
                    if let State::Data {
                        left: 0, pad: 0, ..
                    } = self.state
                    {
                        self.state = State::Header;
                    }
                }
                State::Pax { left, len } => {
                    let n = (*left).min(buf.len() as u64) as usize;
                    sink.meta(&buf[..n])?;
                    let want = len.saturating_sub(self.pax_buf.len()).min(n);
                    self.pax_buf.extend_from_slice(&buf[..want]);
                    *left -= n as u64;
                    buf = &buf[n..];
                    if *left == 0 {
                        self.pax = parse_pax(&std::mem::take(&mut self.pax_buf))?;
                        self.state = State::Header;
                    }
                }
                State::Header => {
                    let n = (BLOCK - self.block.len()).min(buf.len());
                    self.block.extend_from_slice(&buf[..n]);
                    buf = &buf[n..];
                    if self.block.len() == BLOCK {
                        let block = std::mem::replace(&mut self.block, Vec::with_capacity(BLOCK));
                        self.header(&block, sink)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks the stream ended where a tar stream may end (after its end-of-archive blocks).
    pub(super) fn finish(&self) -> io::Result<()> {
        match self.state {
            State::Trailer => Ok(()),
            _ => Err(invalid("the tar stream ended inside an entry".into())),
        }
    }

    fn header(&mut self, block: &[u8], sink: &mut dyn TarSink) -> io::Result<()> {
        if block.iter().all(|&b| b == 0) {
            if !self.pax.is_empty() {
                return Err(invalid(
                    "a PAX header is followed by the archive's end".into(),
                ));
            }
            self.state = State::Trailer;
            return sink.trailer(block);
        }
        sink.meta(block)?;
        let typeflag = block[156];
        let size = octal(&block[124..136])?;
        if typeflag == b'x' {
            let len = usize::try_from(size)
                .ok()
                .filter(|&l| l <= 1 << 20)
                .ok_or_else(|| invalid(format!("a PAX header of {size} bytes")))?;
            self.state = State::Pax {
                left: padded(size),
                len,
            };
            return Ok(());
        }
        let mut e = TarEntry {
            name: ustar_name(block)?,
            typeflag,
            linkname: cstr(&block[157..257])?,
            mode: u32::try_from(octal(&block[100..108])?).map_err(|_| invalid("mode".into()))?,
            uid: octal(&block[108..116])?,
            gid: octal(&block[116..124])?,
            size,
            mtime: octal(&block[136..148])?,
        };
        for (k, v) in std::mem::take(&mut self.pax) {
            let num = || {
                v.parse::<u64>()
                    .map_err(|_| invalid(format!("PAX {k}={v} is not a number")))
            };
            match k.as_str() {
                "path" => e.name = v,
                "linkpath" => e.linkname = v,
                "size" => e.size = num()?,
                "uid" => e.uid = num()?,
                "gid" => e.gid = num()?,
                "mtime" => e.mtime = num()?,
                other => return Err(invalid(format!("unexpected PAX record `{other}`"))),
            }
        }
        e.toc_type()?;
        sink.entry(&e)?;
        if e.size == 0 {
            sink.entry_end()?;
            self.state = State::Header;
        } else {
            self.state = State::Data {
                left: e.size,
                pad: padded(e.size) - e.size,
                content: e.has_content(),
            };
        }
        Ok(())
    }
}

/// `n` rounded up to whole blocks.
fn padded(n: u64) -> u64 {
    n.div_ceil(BLOCK as u64) * BLOCK as u64
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// A NUL-terminated (or full-width) header string field.
fn cstr(field: &[u8]) -> io::Result<String> {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8(field[..end].to_vec()).map_err(|_| invalid("a non-UTF-8 tar name".into()))
}

/// A header's octal number field (spaces and NULs around the digits).
fn octal(field: &[u8]) -> io::Result<u64> {
    let s = std::str::from_utf8(field).map_err(|_| invalid("a non-ASCII number field".into()))?;
    let s = s.trim_matches(|c| c == ' ' || c == '\0');
    if s.is_empty() {
        return Ok(0);
    }
    u64::from_str_radix(s, 8).map_err(|_| invalid(format!("the number field `{s}`")))
}

/// The USTAR name: `prefix/name` when the prefix is set.
fn ustar_name(block: &[u8]) -> io::Result<String> {
    let name = cstr(&block[..100])?;
    let prefix = if &block[257..263] == b"ustar\0" {
        cstr(&block[345..500])?
    } else {
        String::new()
    };
    Ok(if prefix.is_empty() {
        name
    } else {
        format!("{prefix}/{name}")
    })
}

/// PAX records `"<len> <key>=<value>\n"`.
fn parse_pax(mut data: &[u8]) -> io::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let sp = data
            .iter()
            .position(|&b| b == b' ')
            .ok_or_else(|| invalid("a PAX record without a length".into()))?;
        let len: usize = std::str::from_utf8(&data[..sp])
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|&l| l > sp + 1 && l <= data.len())
            .ok_or_else(|| invalid("a PAX record's length".into()))?;
        let record = &data[sp + 1..len - 1];
        let eq = record
            .iter()
            .position(|&b| b == b'=')
            .ok_or_else(|| invalid("a PAX record without `=`".into()))?;
        let text = |b: &[u8]| {
            String::from_utf8(b.to_vec()).map_err(|_| invalid("a non-UTF-8 PAX record".into()))
        };
        out.push((text(&record[..eq])?, text(&record[eq + 1..])?));
        data = &data[len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::TarWriter;

    #[derive(Default)]
    struct Log {
        meta: Vec<u8>,
        content: Vec<u8>,
        trailer: Vec<u8>,
        events: Vec<String>,
    }

    impl TarSink for Log {
        fn meta(&mut self, b: &[u8]) -> io::Result<()> {
            self.meta.extend_from_slice(b);
            Ok(())
        }
        fn entry(&mut self, e: &TarEntry) -> io::Result<()> {
            self.events.push(format!(
                "{} {} {} {:o} {} {}",
                e.toc_type()?,
                e.name,
                e.linkname,
                e.mode,
                e.uid,
                e.size
            ));
            Ok(())
        }
        fn content(&mut self, b: &[u8]) -> io::Result<()> {
            self.content.extend_from_slice(b);
            Ok(())
        }
        fn entry_end(&mut self) -> io::Result<()> {
            self.events.push("end".into());
            Ok(())
        }
        fn trailer(&mut self, b: &[u8]) -> io::Result<()> {
            self.trailer.extend_from_slice(b);
            Ok(())
        }
    }

    #[test]
    fn reports_what_the_tar_writer_wrote_in_any_piece_size() {
        let long = format!("{}/{}", "d".repeat(150), "f".repeat(120));
        let mut t = TarWriter::new(Vec::new(), 7);
        t.append_dir("a", 0o755, 0, 0).unwrap();
        t.append_file("a/x", 0o644, 3_000_000, 5, 3, &mut &b"abc"[..])
            .unwrap();
        t.append_file("a/e", 0o600, 0, 0, 0, &mut &b""[..]).unwrap();
        t.append_symlink("a/l", &"t".repeat(120), 0, 0).unwrap();
        t.append_hardlink("a/h", "a/x", 0o644, 0, 0).unwrap();
        t.append_file(&long, 0o755, 0, 0, 600, &mut &[7u8; 600][..])
            .unwrap();
        let tar = t.finish().unwrap();
        let mut want = None;
        for piece in [1, 7, 512, 513, 100_000] {
            let mut s = TarScanner::new();
            let mut log = Log::default();
            for p in tar.chunks(piece) {
                s.feed(p, &mut log).unwrap();
            }
            s.finish().unwrap();
            assert_eq!(log.trailer, vec![0u8; 1024]);
            assert_eq!(log.content.len(), 603);
            assert_eq!(log.meta.len() + 603 + 1024, tar.len());
            match &want {
                None => want = Some(log.events),
                Some(w) => assert_eq!(&log.events, w, "piece {piece}"),
            }
        }
        let events = want.unwrap();
        assert_eq!(events[0], "dir a/  755 0 0");
        assert_eq!(events[2], "reg a/x  644 3000000 3");
        assert_eq!(
            events[6],
            format!("symlink a/l {} 777 0 0", "t".repeat(120))
        );
        assert_eq!(events[8], "hardlink a/h a/x 644 0 0");
        assert_eq!(events[10], format!("reg {long}  755 0 600"));
        assert_eq!(events.len(), 12);
    }

    #[test]
    fn a_truncated_stream_is_an_error() {
        let mut t = TarWriter::new(Vec::new(), 0);
        t.append_file("f", 0o644, 0, 0, 3, &mut &b"abc"[..])
            .unwrap();
        let tar = t.finish().unwrap();
        let mut s = TarScanner::new();
        s.feed(&tar[..600], &mut Log::default()).unwrap();
        assert!(s.finish().is_err());
    }
}
