//! The low-level deterministic tar writer: USTAR headers, PAX records only where a field does
//! not fit, fixed mtime, empty uname/gname, no atime/ctime/xattrs, no record padding.

use std::io::{self, Read, Write};

use super::LayerError;

const BLOCK: usize = 512;
/// Largest value of an 8-byte octal field (7 digits + NUL): uid, gid, mode.
const MAX_OCTAL_7: u64 = 0o7777777;
/// Largest value of a 12-byte octal field (11 digits + NUL): size, mtime. 8 GiB - 1.
const MAX_OCTAL_11: u64 = 0o77777777777;
/// Name of every PAX extended header.
const PAX_NAME: &str = "././@PaxHeader";
/// Copy buffer for file content.
const COPY_BUF: usize = 256 * 1024;

/// Writes a deterministic tar stream. The caller decides the order of entries (for layers:
/// sorted, parents first; [`super::write_layer`] checks that); this writer decides the bytes.
pub struct TarWriter<W: Write> {
    inner: W,
    mtime: u64,
    buf: Vec<u8>,
}

/// The fields of one header.
struct Fields<'a> {
    path: &'a str,
    mode: u32,
    uid: u32,
    gid: u32,
    size: u64,
    typeflag: u8,
    linkname: &'a str,
}

impl<W: Write> TarWriter<W> {
    /// A writer whose entries all carry `mtime` (seconds since the epoch).
    pub fn new(inner: W, mtime: u64) -> Self {
        TarWriter {
            inner,
            mtime,
            buf: Vec::new(),
        }
    }

    /// A directory; a missing trailing "/" is added.
    pub fn append_dir(
        &mut self,
        path: &str,
        mode: u32,
        uid: u32,
        gid: u32,
    ) -> Result<(), LayerError> {
        let path = if path.ends_with('/') {
            path.to_string()
        } else {
            format!("{path}/")
        };
        check_path(&path)?;
        self.header(&Fields {
            path: &path,
            mode,
            uid,
            gid,
            size: 0,
            typeflag: b'5',
            linkname: "",
        })
    }

    /// A regular file of exactly `size` bytes read from `content`; an error if it yields fewer
    /// or more bytes.
    pub fn append_file(
        &mut self,
        path: &str,
        mode: u32,
        uid: u32,
        gid: u32,
        size: u64,
        content: &mut dyn Read,
    ) -> Result<(), LayerError> {
        check_path(path)?;
        if path.ends_with('/') {
            return Err(invalid(path, "a file path cannot end with `/`"));
        }
        self.header(&Fields {
            path,
            mode,
            uid,
            gid,
            size,
            typeflag: b'0',
            linkname: "",
        })?;
        if self.buf.len() < COPY_BUF {
            self.buf.resize(COPY_BUF, 0);
        }
        let read_err = |source| LayerError::ReadContent {
            entry: path.to_string(),
            source,
        };
        let mut done: u64 = 0;
        while done < size {
            let want = (size - done).min(COPY_BUF as u64) as usize;
            let n = read_some(content, &mut self.buf[..want]).map_err(read_err)?;
            if n == 0 {
                return Err(LayerError::SizeMismatch {
                    entry: path.into(),
                    expected: size,
                    found: done,
                });
            }
            self.inner
                .write_all(&self.buf[..n])
                .map_err(|e| write_err(path, e))?;
            done += n as u64;
        }
        // The content must end here: probe for more, and count it (bounded) for the message.
        let extra = read_some(content, &mut self.buf[..1]).map_err(read_err)?;
        if extra > 0 {
            let rest = io::copy(&mut content.take(1 << 30), &mut io::sink()).map_err(read_err)?;
            return Err(LayerError::SizeMismatch {
                entry: path.into(),
                expected: size,
                found: size + 1 + rest,
            });
        }
        self.pad(size, path)
    }

    /// A symlink (mode 0777); the target is written verbatim.
    pub fn append_symlink(
        &mut self,
        path: &str,
        target: &str,
        uid: u32,
        gid: u32,
    ) -> Result<(), LayerError> {
        check_path(path)?;
        check_link(path, target)?;
        self.header(&Fields {
            path,
            mode: 0o777,
            uid,
            gid,
            size: 0,
            typeflag: b'2',
            linkname: target,
        })
    }

    /// A hardlink to the earlier entry `target` (a tar path). The caller passes the target's
    /// mode and owner: extractors apply the link header's metadata to the shared inode.
    pub fn append_hardlink(
        &mut self,
        path: &str,
        target: &str,
        mode: u32,
        uid: u32,
        gid: u32,
    ) -> Result<(), LayerError> {
        check_path(path)?;
        check_path(target)?;
        check_link(path, target)?;
        self.header(&Fields {
            path,
            mode,
            uid,
            gid,
            size: 0,
            typeflag: b'1',
            linkname: target,
        })
    }

    /// Two zero blocks (no record padding); returns the inner writer, flushed.
    pub fn finish(mut self) -> Result<W, LayerError> {
        let end = "(end of archive)";
        self.inner
            .write_all(&[0u8; 2 * BLOCK])
            .map_err(|e| write_err(end, e))?;
        self.inner.flush().map_err(|e| write_err(end, e))?;
        Ok(self.inner)
    }

    fn pad(&mut self, size: u64, path: &str) -> Result<(), LayerError> {
        let rem = (size % BLOCK as u64) as usize;
        if rem != 0 {
            self.inner
                .write_all(&[0u8; BLOCK][..BLOCK - rem])
                .map_err(|e| write_err(path, e))?;
        }
        Ok(())
    }

    /// Writes the header of one entry, preceded by a PAX header if some field does not fit.
    fn header(&mut self, f: &Fields<'_>) -> Result<(), LayerError> {
        let mut pax: Vec<(&'static str, String)> = Vec::new();
        let (prefix, name) = if let Some(split) = split_ustar_path(f.path) {
            split
        } else {
            pax.push(("path", f.path.to_string()));
            ("", truncate(f.path, 100))
        };
        let linkname = if f.linkname.len() > 100 {
            pax.push(("linkpath", f.linkname.to_string()));
            truncate(f.linkname, 100)
        } else {
            f.linkname
        };
        let mut fit = |key: &'static str, v: u64, max: u64| {
            if v > max {
                pax.push((key, v.to_string()));
                0
            } else {
                v
            }
        };
        let size = fit("size", f.size, MAX_OCTAL_11);
        let uid = fit("uid", u64::from(f.uid), MAX_OCTAL_7);
        let gid = fit("gid", u64::from(f.gid), MAX_OCTAL_7);
        let mtime = fit("mtime", self.mtime, MAX_OCTAL_11);
        let mode = u64::from(f.mode & 0o7777);

        if !pax.is_empty() {
            pax.sort();
            let records = pax_records(&pax);
            let ext = ustar_header(&Header {
                name: PAX_NAME,
                prefix: "",
                mode: 0o644,
                uid: 0,
                gid: 0,
                size: records.len() as u64,
                mtime,
                typeflag: b'x',
                linkname: "",
            });
            let w = &mut self.inner;
            w.write_all(&ext).map_err(|e| write_err(f.path, e))?;
            w.write_all(&records).map_err(|e| write_err(f.path, e))?;
            self.pad(records.len() as u64, f.path)?;
        }
        let h = ustar_header(&Header {
            name,
            prefix,
            mode,
            uid,
            gid,
            size,
            mtime,
            typeflag: f.typeflag,
            linkname,
        });
        self.inner.write_all(&h).map_err(|e| write_err(f.path, e))
    }
}

fn write_err(path: &str, source: io::Error) -> LayerError {
    LayerError::Write {
        entry: path.to_string(),
        source,
    }
}

fn invalid(path: &str, reason: &'static str) -> LayerError {
    LayerError::InvalidPath {
        entry: path.to_string(),
        reason,
    }
}

/// Reads once, retrying on `Interrupted`.
fn read_some(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Tar paths are relative, without "./", "." or ".." components or empty components (except
/// a directory's trailing "/"), and without NUL.
fn check_path(path: &str) -> Result<(), LayerError> {
    if path.is_empty() || path == "/" {
        return Err(invalid(path, "empty path"));
    }
    if path.starts_with('/') {
        return Err(invalid(path, "tar paths are relative (no leading `/`)"));
    }
    if path.contains('\0') {
        return Err(invalid(path, "NUL byte in path"));
    }
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    if trimmed
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(invalid(path, "empty, `.` or `..` path component"));
    }
    Ok(())
}

fn check_link(path: &str, target: &str) -> Result<(), LayerError> {
    if target.is_empty() {
        return Err(invalid(path, "empty link target"));
    }
    if target.contains('\0') {
        return Err(invalid(path, "NUL byte in link target"));
    }
    Ok(())
}

/// The first `n` bytes (a field overridden by a PAX record; readers ignore it).
fn truncate(s: &str, n: usize) -> &str {
    let mut end = s.len().min(n);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Splits a path into USTAR (prefix, name): the whole path as name when it fits in 100 bytes,
/// else the longest prefix (≤ 155 bytes) ending before a "/" that leaves a non-empty name of
/// ≤ 100 bytes. None when no split fits (then a PAX `path` record carries it).
pub(crate) fn split_ustar_path(path: &str) -> Option<(&str, &str)> {
    if path.len() <= 100 {
        return Some(("", path));
    }
    // The name part may keep a directory's trailing "/", so never split at that last byte.
    let search_end = (path.len() - 1).min(155 + 1);
    let bytes = &path.as_bytes()[..search_end];
    let i = bytes.iter().rposition(|&b| b == b'/')?;
    let (prefix, name) = (&path[..i], &path[i + 1..]);
    if i == 0 || prefix.len() > 155 || name.is_empty() || name.len() > 100 {
        return None;
    }
    Some((prefix, name))
}

/// PAX records `"<len> <key>=<value>\n"`, where `<len>` counts the whole record, itself included.
fn pax_records(records: &[(&'static str, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (key, value) in records {
        let body = key.len() + value.len() + 3; // ' ', '=', '\n'
        let mut len = body + 1;
        while len != body + len.to_string().len() {
            len = body + len.to_string().len();
        }
        out.extend_from_slice(format!("{len} {key}={value}\n").as_bytes());
    }
    out
}

/// Writes `v` as zero-padded octal filling all but the last byte of `field`, then NUL.
fn octal(field: &mut [u8], v: u64) {
    let digits = field.len() - 1;
    let s = format!("{v:0digits$o}");
    field[..digits].copy_from_slice(&s.as_bytes()[s.len() - digits..]);
    field[digits] = 0;
}

/// What a USTAR header holds. Numeric fields must already fit their fields, and the strings
/// theirs (name 100, prefix 155, linkname 100 bytes).
struct Header<'a> {
    name: &'a str,
    prefix: &'a str,
    mode: u64,
    uid: u64,
    gid: u64,
    size: u64,
    mtime: u64,
    typeflag: u8,
    linkname: &'a str,
}

/// One 512-byte USTAR header.
fn ustar_header(f: &Header<'_>) -> [u8; BLOCK] {
    let Header {
        name,
        prefix,
        mode,
        uid,
        gid,
        size,
        mtime,
        typeflag,
        linkname,
    } = *f;
    let mut h = [0u8; BLOCK];
    h[..name.len()].copy_from_slice(name.as_bytes());
    octal(&mut h[100..108], mode);
    octal(&mut h[108..116], uid);
    octal(&mut h[116..124], gid);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], mtime);
    h[156] = typeflag;
    h[157..157 + linkname.len()].copy_from_slice(linkname.as_bytes());
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    // uname, gname: empty (all NUL).
    octal(&mut h[329..337], 0);
    octal(&mut h[337..345], 0);
    h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    // Checksum: the unsigned byte sum with the field itself as eight spaces; written as six
    // octal digits, NUL, space.
    h[148..156].copy_from_slice(b"        ");
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    octal(&mut h[148..155], sum);
    h[155] = b' ';
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(h: &[u8], r: std::ops::Range<usize>) -> &str {
        let f = &h[r];
        let end = f.iter().position(|&b| b == 0).unwrap_or(f.len());
        std::str::from_utf8(&f[..end]).unwrap()
    }

    #[test]
    fn pax_lengths_include_themselves() {
        // 9 + len("1") = 10 would make the prefix "10" (2 digits): 11.
        assert_eq!(pax_records(&[("a", "bcde".into())]), b"9 a=bcde\n");
        assert_eq!(pax_records(&[("a", "bcdef".into())]), b"11 a=bcdef\n");
        for n in 0..300 {
            let rec = pax_records(&[("path", "x".repeat(n))]);
            let len: usize = std::str::from_utf8(&rec)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(len, rec.len(), "value length {n}");
        }
    }

    #[test]
    fn header_fields_and_checksum() {
        let h = ustar_header(&Header {
            name: "a/b",
            prefix: "",
            mode: 0o755,
            uid: 1000,
            gid: 1000,
            size: 5,
            mtime: 1_700_000_000,
            typeflag: b'0',
            linkname: "",
        });
        assert_eq!(field(&h, 0..100), "a/b");
        assert_eq!(&h[100..108], b"0000755\0");
        assert_eq!(&h[108..116], b"0001750\0");
        assert_eq!(&h[124..136], b"00000000005\0");
        assert_eq!(&h[136..148], b"14524770400\0");
        assert_eq!(&h[257..265], b"ustar\x0000");
        assert_eq!(&h[329..345], b"0000000\x000000000\0");
        let mut copy = h;
        copy[148..156].copy_from_slice(b"        ");
        let sum: u32 = copy.iter().map(|&b| u32::from(b)).sum();
        assert_eq!(field(&h, 148..155), format!("{sum:06o}"));
        assert_eq!(h[155], b' ');
    }

    #[test]
    fn ustar_split() {
        assert_eq!(split_ustar_path("short"), Some(("", "short")));
        let long = format!("{}/{}", "d".repeat(120), "f".repeat(50));
        assert_eq!(split_ustar_path(&long), Some((&long[..120], &long[121..])));
        // A name part over 100 bytes cannot be split.
        assert_eq!(split_ustar_path(&format!("d/{}", "f".repeat(101))), None);
        // A directory's trailing slash stays in the name.
        let dir = format!("{}/{}/", "d".repeat(120), "e".repeat(10));
        assert_eq!(split_ustar_path(&dir), Some((&dir[..120], &dir[121..])));
        // Prefix at most 155 bytes: the last slash that keeps it so (the shortest name).
        let deep = format!(
            "{}/{}/{}/{}",
            "a".repeat(60),
            "b".repeat(60),
            "c".repeat(60),
            "d".repeat(10)
        );
        assert_eq!(split_ustar_path(&deep), Some((&deep[..121], &deep[122..])));
        // No split leaves both parts within bounds.
        let deep = format!("{}/{}/{}", "a".repeat(100), "b".repeat(100), "c".repeat(10));
        assert_eq!(split_ustar_path(&deep), None);
    }

    #[test]
    fn pax_only_when_needed() {
        let mut t = TarWriter::new(Vec::new(), 0);
        t.append_dir("a", 0o755, 0, 0).unwrap();
        assert_eq!(t.inner.len(), 512);
        assert_eq!(field(&t.inner, 0..100), "a/");
        let long = "x".repeat(120);
        t.append_symlink("l", &long, 0, 0).unwrap();
        let pax_h = &t.inner[512..1024];
        assert_eq!(field(pax_h, 0..100), PAX_NAME);
        assert_eq!(pax_h[156], b'x');
        assert_eq!(&pax_h[100..108], b"0000644\0");
        let rec = format!("134 linkpath={long}\n");
        assert_eq!(&t.inner[1024..1024 + rec.len()], rec.as_bytes());
        let mut t = TarWriter::new(Vec::new(), 0);
        t.append_dir("big", 0o755, 0o10000000, 7).unwrap();
        assert_eq!(&t.inner[512..512 + 16], b"15 uid=2097152\n\0");
    }

    #[test]
    fn content_size_is_enforced() {
        let mut t = TarWriter::new(Vec::new(), 0);
        let err = t
            .append_file("f", 0o644, 0, 0, 5, &mut &b"abc"[..])
            .unwrap_err();
        assert!(
            matches!(
                err,
                LayerError::SizeMismatch {
                    expected: 5,
                    found: 3,
                    ..
                }
            ),
            "{err}"
        );
        let mut t = TarWriter::new(Vec::new(), 0);
        let err = t
            .append_file("f", 0o644, 0, 0, 2, &mut &b"abcd"[..])
            .unwrap_err();
        assert!(
            matches!(
                err,
                LayerError::SizeMismatch {
                    expected: 2,
                    found: 4,
                    ..
                }
            ),
            "{err}"
        );
        let mut t = TarWriter::new(Vec::new(), 0);
        t.append_file("f", 0o644, 0, 0, 3, &mut &b"abc"[..])
            .unwrap();
        let out = t.finish().unwrap();
        assert_eq!(out.len(), 512 * 4);
        assert_eq!(&out[512..515], b"abc");
    }

    #[test]
    fn bad_paths_are_rejected() {
        let mut t = TarWriter::new(Vec::new(), 0);
        for p in ["", "/abs", "a//b", "./a", "a/../b", "a\0b"] {
            assert!(t.append_dir(p, 0o755, 0, 0).is_err(), "{p:?}");
        }
        assert!(t.append_symlink("l", "", 0, 0).is_err());
    }
}
