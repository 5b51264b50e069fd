//! The gzip splicer (`layer/splice.rs`, behind `layer::write_layer_with`): the fuzz input (after
//! one byte that picks how the raw stream is handed over, in small reads or whole) is a raw
//! deflate stream, written as one file's `Content::Deflated` into a gzip layer. Where the
//! stream is complete and valid (checked with flate2's own inflater), the layer must be
//! written, its file's bytes shown to `inspect` must be the inflated stream, and the layer
//! must decompress to the same tar (same diff_id, size) as the inflated bytes written as
//! `Content::Bytes` into an uncompressed layer. Streams of 16 KiB or more inflated are spliced.
#![no_main]

use std::io::{self, Read};

use flate2::{Decompress, FlushDecompress, Status};
use libfuzzer_sys::fuzz_target;
use ocibuild::digest::Digest;
use ocibuild::layer::{
    write_layer_with, Compression, Content, Entry, EntryKind, LayerOptions, StatKey,
};

/// Most inflated bytes looked at (a small input can inflate 1000-fold).
const MAX_OUT: usize = 1 << 20;

/// The inflated stream if it is a complete deflate stream; `None` if it is not (or is huge).
fn inflate(raw: &[u8]) -> Option<Vec<u8>> {
    let mut d = Decompress::new(false);
    let mut out = Vec::with_capacity(64 * 1024);
    loop {
        if out.len() == out.capacity() {
            if out.len() >= MAX_OUT {
                return None;
            }
            out.reserve(out.len());
        }
        let at = d.total_in() as usize;
        let before = (d.total_in(), d.total_out());
        let status = d
            .decompress_vec(&raw[at..], &mut out, FlushDecompress::Finish)
            .ok()?;
        match status {
            Status::StreamEnd => return Some(out),
            _ if (d.total_in(), d.total_out()) == before && out.len() < out.capacity() => {
                return None
            }
            _ => {}
        }
    }
}

/// Hands out at most `step` bytes per read.
struct Trickle<'a>(&'a [u8], usize);
impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.len().min(buf.len()).min(self.1);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fn entries(size: u64) -> Vec<Entry> {
    let file = |path: &str, size| Entry {
        path: path.into(),
        kind: EntryKind::File {
            src: "unused".into(),
            size,
        },
        mode: 0o644,
        uid: 0,
        gid: 0,
        stat: StatKey::default(),
    };
    // A small file before and after: the spliced blocks sit inside the gzip stream.
    vec![file("a", 3), file("b", size), file("c", 5)]
}

fn small(i: usize) -> &'static [u8] {
    if i == 0 {
        b"abc"
    } else {
        b"hello"
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, raw)) = data.split_first() else {
        return;
    };
    let step = match mode % 4 {
        0 => usize::MAX,
        1 => 1,
        2 => 7,
        _ => 4096,
    };
    let expected = inflate(raw);
    // Without a valid stream the size is a guess: the write must fail, not panic.
    let size = expected.as_ref().map_or(20_000, |e| e.len() as u64);
    let entries = entries(size);
    let opts = LayerOptions {
        epoch: 0,
        compression: Compression::Gzip(1),
        threads: 1,
    };
    let mut seen = Vec::new();
    let mut out = Vec::new();
    let result = write_layer_with(&entries, &opts, &mut out, &|_| {}, &mut |i, _e, sink| {
        if i == 1 {
            let mut src = Trickle(raw, step);
            sink(Content::Deflated {
                raw: &mut src,
                inspect: &mut |b: &[u8]| seen.extend_from_slice(b),
            })
        } else {
            sink(Content::Bytes(&mut &small(i)[..]))
        }
    });
    let Some(expected) = expected else {
        return;
    };
    let stats = result.unwrap_or_else(|e| panic!("a valid deflate stream is refused: {e}"));
    assert!(
        seen == expected,
        "inspect saw other bytes than the stream inflates to"
    );
    // The same tar, written from the inflated bytes.
    let mut plain = Vec::new();
    let opts_none = LayerOptions {
        compression: Compression::None,
        ..opts
    };
    let reference = write_layer_with(
        &entries,
        &opts_none,
        &mut plain,
        &|_| {},
        &mut |i, _e, sink| {
            let bytes: &[u8] = if i == 1 { &expected } else { small(i) };
            sink(Content::Bytes(&mut &bytes[..]))
        },
    )
    .expect("the uncompressed layer");
    assert_eq!(
        stats.diff_id, reference.diff_id,
        "the gzip layer's tar differs"
    );
    assert_eq!(stats.uncompressed_size, reference.uncompressed_size);
    assert_eq!(stats.digest, Digest::of(&out));
    let mut tar = Vec::new();
    flate2::read::MultiGzDecoder::new(&out[..])
        .read_to_end(&mut tar)
        .expect("the gzip layer decompresses");
    assert!(tar == plain, "the gzip layer decompresses to another tar");
});
