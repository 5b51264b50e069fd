//! sha256 digests, and writers/readers that hash what streams through them.

use std::fmt;
use std::io::{self, Read, Write};
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

/// A `sha256:<64 lowercase hex>` content digest.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest([u8; 32]);

#[derive(Debug, thiserror::Error)]
pub enum DigestError {
    #[error("invalid digest `{0}`: expected sha256:<64 lowercase hex digits>")]
    Invalid(String),
}

impl Digest {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Digest(bytes)
    }
    /// Digest of a byte slice.
    pub fn of(data: &[u8]) -> Self {
        Digest(Sha256::digest(data).into())
    }
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
    /// The 64 hex digits, without the algorithm prefix.
    pub fn hex(&self) -> String {
        hex(&self.0)
    }
}

/// Lowercase hex of a byte slice.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Digest {
    type Err = DigestError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || DigestError::Invalid(s.to_string());
        let h = s.strip_prefix("sha256:").ok_or_else(bad)?;
        if h.len() != 64 {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        for (i, chunk) in h.as_bytes().chunks(2).enumerate() {
            let nib = |c: u8| match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                _ => None,
            };
            out[i] = (nib(chunk[0]).ok_or_else(bad)? << 4) | nib(chunk[1]).ok_or_else(bad)?;
        }
        Ok(Digest(out))
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// An incremental sha256 that also counts bytes.
#[derive(Clone, Default)]
pub struct Hasher {
    inner: Sha256,
    len: u64,
}

impl Hasher {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn update(&mut self, data: &[u8]) {
        self.inner.update(data);
        self.len += data.len() as u64;
    }
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn finish(self) -> (Digest, u64) {
        (Digest(self.inner.finalize().into()), self.len)
    }
}

/// A writer that hashes and counts everything written through it.
pub struct HashingWriter<W> {
    inner: W,
    hasher: Hasher,
}

impl<W: Write> HashingWriter<W> {
    pub fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Hasher::new(),
        }
    }
    pub fn bytes_written(&self) -> u64 {
        self.hasher.len()
    }
    pub fn get_ref(&self) -> &W {
        &self.inner
    }
    /// The inner writer, the digest and the byte count.
    pub fn finish(self) -> (W, Digest, u64) {
        let (d, n) = self.hasher.finish();
        (self.inner, d, n)
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The sha256 and size of the file at `path`, read once in large pieces. The open error names
/// the path (fs-err); a read error is the bare io error, for the caller to place.
pub fn hash_file(path: &std::path::Path) -> io::Result<(Digest, u64)> {
    let f = fs_err::File::open(path)?;
    let mut r = HashingReader::new(io::BufReader::with_capacity(256 * 1024, f));
    io::copy(&mut r, &mut io::sink())?;
    let (_, d, n) = r.finish();
    Ok((d, n))
}

/// A reader that hashes and counts everything read through it.
pub struct HashingReader<R> {
    inner: R,
    hasher: Hasher,
}

impl<R: Read> HashingReader<R> {
    pub fn new(inner: R) -> Self {
        HashingReader {
            inner,
            hasher: Hasher::new(),
        }
    }
    pub fn finish(self) -> (R, Digest, u64) {
        let (d, n) = self.hasher.finish();
        (self.inner, d, n)
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_digest_and_roundtrip() {
        let d = Digest::of(b"");
        assert_eq!(
            d.to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(d.to_string().parse::<Digest>().unwrap(), d);
        assert!("sha256:E3B0".parse::<Digest>().is_err());
        assert!("md5:00".parse::<Digest>().is_err());
        let upper = d.to_string().to_uppercase().replace("SHA256", "sha256");
        assert!(upper.parse::<Digest>().is_err());
    }

    #[test]
    fn hashing_writer_matches_one_shot() {
        let mut w = HashingWriter::new(Vec::new());
        w.write_all(b"hello ").unwrap();
        w.write_all(b"world").unwrap();
        let (buf, d, n) = w.finish();
        assert_eq!(n, 11);
        assert_eq!(d, Digest::of(&buf));
    }
}
