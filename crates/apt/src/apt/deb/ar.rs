//! The `ar` container of a .deb (`!<arch>\n`, then 60-byte headers, data padded to even):
//! parsed here, the format is three fixed fields and a padding rule.

use std::io::{Read, Seek, SeekFrom};

use super::io_err;
use crate::apt::AptError;

/// One member of an ar archive: name, data offset, size.
pub(in crate::apt) struct Member {
    pub(in crate::apt) name: String,
    pub(in crate::apt) offset: u64,
    pub(in crate::apt) size: u64,
}

/// Lists the members of an ar archive (`!<arch>\n`, then 60-byte headers, data padded to even).
pub(in crate::apt) fn ar_members(
    f: &mut fs_err::File,
    package: &str,
) -> Result<Vec<Member>, AptError> {
    let bad = |reason: String| AptError::Deb {
        package: package.to_string(),
        reason,
    };
    let path = f.path().to_path_buf();
    let len = f.metadata().map_err(io_err(&path))?.len();
    let mut magic = [0u8; 8];
    f.read_exact(&mut magic)
        .map_err(|_| bad("not an ar archive (too short)".into()))?;
    if &magic != b"!<arch>\n" {
        return Err(bad("not an ar archive (bad magic)".into()));
    }
    let mut pos = 8u64;
    let mut out = Vec::new();
    while pos < len {
        f.seek(SeekFrom::Start(pos)).map_err(io_err(&path))?;
        let mut h = [0u8; 60];
        f.read_exact(&mut h)
            .map_err(|_| bad(format!("truncated ar header at offset {pos}")))?;
        if &h[58..60] != b"`\n" {
            return Err(bad(format!("bad ar header at offset {pos}")));
        }
        let name = String::from_utf8_lossy(&h[..16])
            .trim_end()
            .trim_end_matches('/')
            .to_string();
        let size: u64 = std::str::from_utf8(&h[48..58])
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| bad(format!("bad ar member size at offset {pos}")))?;
        let offset = pos + 60;
        if offset + size > len {
            return Err(bad(format!(
                "ar member `{name}` runs past the end of the file"
            )));
        }
        out.push(Member { name, offset, size });
        pos = offset + size + (size & 1);
    }
    Ok(out)
}
