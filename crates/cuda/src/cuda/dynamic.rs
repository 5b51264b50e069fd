//! What the dynamic loader reads of a shared object to find its dependencies: `DT_NEEDED`,
//! `DT_RPATH` and `DT_RUNPATH` (System V gABI, "Dynamic Section"), read from a stream (a wheel's
//! zip member) with bounded memory, for [`super::loads`].
//!
//! The file header gives the program headers (`e_phoff` u64 at 0x20, `e_phentsize` u16 at
//! 0x36, `e_phnum` u16 at 0x38; each 56 bytes: `p_type` u32 at 0, `p_offset` u64 at 8,
//! `p_vaddr` u64 at 16, `p_filesz` u64 at 32). `PT_DYNAMIC` (2) is the dynamic array, 16-byte
//! entries (`d_tag` i64, `d_val` u64) up to `DT_NULL`; `DT_STRTAB` (5) is the address of the
//! string table the `DT_NEEDED` (1), `DT_RPATH` (15) and `DT_RUNPATH` (29) values are offsets
//! into, mapped to a file offset through the `PT_LOAD` (1) segment that holds it. The string
//! table usually lies before the dynamic array (in the first, read-only segment), so a stream
//! is read twice: once to the dynamic array, once to the strings it names. Only the bytes of
//! those two places are kept.
//!
//! The input is untrusted: every size is bounded and checked, nothing panics.

use std::io::{self, Read};

use super::elf::{u16_at, u32_at, u64_at};
use super::CudaError;

/// What the file header and program headers must fit in.
const HEAD: u64 = 64 * 1024;
/// A dynamic array larger than any real one (libtorch_cuda: under 1 KiB).
const MAX_DYNAMIC: u64 = 1 << 20;
/// The longest name or search path read.
const MAX_STRING: u64 = 4096;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;
const DT_RPATH: u64 = 15;
const DT_RUNPATH: u64 = 29;

/// A shared object's dependencies and search paths, as written (`$ORIGIN` unexpanded).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Dynamic {
    /// `DT_NEEDED` sonames, in order.
    pub needed: Vec<String>,
    /// `DT_RPATH`'s directories (`:`-separated in the file).
    pub rpath: Vec<String>,
    /// `DT_RUNPATH`'s directories.
    pub runpath: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DynamicError {
    #[error("reading it")]
    Io(#[from] io::Error),
    #[error(transparent)]
    Elf(#[from] CudaError),
}

fn bad(reason: &'static str) -> DynamicError {
    DynamicError::Elf(CudaError::MalformedElf { reason })
}

/// The `n` bytes at `offset` of `r` (fewer where it ends first), what was before skipped: how a
/// caller of [`read_dynamic`] reads a stream it can only open from the start.
pub fn read_at(mut r: impl Read, offset: u64, n: u64) -> io::Result<Vec<u8>> {
    let skipped = io::copy(&mut (&mut r).take(offset), &mut io::sink())?;
    let mut out = Vec::new();
    if skipped == offset {
        r.take(n).read_to_end(&mut out)?;
    }
    Ok(out)
}

/// The dependencies of an ELF file; `None` when it is not one. `read(offset, n)` gives the file's
/// `n` bytes at `offset` (fewer where it ends): it is called up to three times, for the headers,
/// the dynamic array and its strings ([`read_at`] over a fresh stream does it for a stream).
pub fn read_dynamic(
    mut read: impl FnMut(u64, u64) -> io::Result<Vec<u8>>,
) -> Result<Option<Dynamic>, DynamicError> {
    let head = read(0, HEAD)?;
    if !super::elf::is_elf(&head) {
        return Ok(None);
    }
    let (class, data) = (head.get(4).copied(), head.get(5).copied());
    if class != Some(2) || data != Some(1) {
        return Err(CudaError::UnsupportedElf {
            class: class.unwrap_or(0),
            data: data.unwrap_or(0),
        }
        .into());
    }
    let cut = || bad("the ELF header is cut short");
    let phoff = u64_at(&head, 0x20).ok_or_else(cut)?;
    let phentsize = u64::from(u16_at(&head, 0x36).ok_or_else(cut)?);
    let phnum = u64::from(u16_at(&head, 0x38).ok_or_else(cut)?);
    if phentsize < 56 && phnum > 0 {
        return Err(bad("program headers shorter than 56 bytes"));
    }
    let (mut dynamic, mut loads) = (None, Vec::new());
    for i in 0..phnum {
        let at = i
            .checked_mul(phentsize)
            .and_then(|o| o.checked_add(phoff))
            .and_then(|o| usize::try_from(o).ok())
            .ok_or_else(|| bad("a program header lies outside the first 64 KiB"))?;
        let outside = || bad("a program header lies outside the first 64 KiB");
        let get64 = |o: usize| at.checked_add(o).and_then(|a| u64_at(&head, a));
        let kind = u32_at(&head, at).ok_or_else(outside)?;
        let (Some(offset), Some(vaddr), Some(filesz)) = (get64(8), get64(16), get64(32)) else {
            return Err(outside());
        };
        match kind {
            PT_DYNAMIC => dynamic = Some((offset, filesz)),
            PT_LOAD => loads.push((vaddr, offset, filesz)),
            _ => {}
        }
    }
    let Some((offset, size)) = dynamic else {
        return Ok(Some(Dynamic::default())); // linked statically: it needs nothing
    };
    if size > MAX_DYNAMIC {
        return Err(bad("a dynamic section larger than any library has"));
    }
    let array = read(offset, size)?;
    if (array.len() as u64) < size {
        return Err(bad("the dynamic section lies past the end of the file"));
    }
    let (mut strtab, mut wanted) = (None, Vec::new());
    for e in array.chunks_exact(16) {
        let (Some(tag), Some(val)) = (u64_at(e, 0), u64_at(e, 8)) else {
            break;
        };
        match tag {
            DT_NULL => break,
            DT_STRTAB => strtab = Some(val),
            DT_NEEDED | DT_RPATH | DT_RUNPATH => wanted.push((tag, val)),
            _ => {}
        }
    }
    if wanted.is_empty() {
        return Ok(Some(Dynamic::default()));
    }
    let strtab = strtab.ok_or_else(|| bad("a dynamic section without a string table"))?;
    let file_offset = loads
        .iter()
        .find(|(vaddr, _, filesz)| strtab >= *vaddr && strtab - vaddr < *filesz)
        .map(|(vaddr, offset, _)| offset + (strtab - vaddr))
        .ok_or_else(|| bad("the string table lies in no loaded segment"))?;
    let (lo, hi) = wanted
        .iter()
        .fold((u64::MAX, 0), |(lo, hi), (_, v)| (lo.min(*v), hi.max(*v)));
    let start = file_offset
        .checked_add(lo)
        .ok_or_else(|| bad("a string lies past the end of the file"))?;
    let strings = read(start, hi - lo + MAX_STRING)?;
    let mut out = Dynamic::default();
    for (tag, v) in wanted {
        let rest = usize::try_from(v - lo)
            .ok()
            .and_then(|at| strings.get(at..))
            .ok_or_else(|| bad("a string lies past the end of the file"))?;
        let end = rest
            .iter()
            .position(|&c| c == 0)
            .ok_or_else(|| bad("a string is not terminated within 4 KiB"))?;
        let text = String::from_utf8_lossy(&rest[..end]).into_owned();
        match tag {
            DT_NEEDED => out.needed.push(text),
            DT_RPATH => out.rpath.extend(split_path(&text)),
            _ => out.runpath.extend(split_path(&text)),
        }
    }
    Ok(Some(out))
}

fn split_path(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(':')
        .filter(|d| !d.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF64 LE header with `phnum` program headers at 64, then `phdrs` (type, offset,
    /// vaddr, filesz), then `rest` at offset 64 + 56 * phnum.
    fn elf(phdrs: &[(u32, u64, u64, u64)], rest: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3A].copy_from_slice(&(phdrs.len() as u16).to_le_bytes());
        for &(kind, offset, vaddr, filesz) in phdrs {
            let mut p = vec![0u8; 56];
            p[..4].copy_from_slice(&kind.to_le_bytes());
            p[8..16].copy_from_slice(&offset.to_le_bytes());
            p[16..24].copy_from_slice(&vaddr.to_le_bytes());
            p[32..40].copy_from_slice(&filesz.to_le_bytes());
            b.extend(p);
        }
        b.extend_from_slice(rest);
        b
    }

    fn dynarray(entries: &[(u64, u64)]) -> Vec<u8> {
        entries
            .iter()
            .flat_map(|(t, v)| t.to_le_bytes().into_iter().chain(v.to_le_bytes()))
            .collect()
    }

    fn read(b: &[u8]) -> Result<Option<Dynamic>, DynamicError> {
        read_dynamic(|offset, n| read_at(b, offset, n))
    }

    fn malformed(r: Result<Option<Dynamic>, DynamicError>) -> &'static str {
        match r {
            Err(DynamicError::Elf(CudaError::MalformedElf { reason })) => reason,
            other => panic!("not malformed: {other:?}"),
        }
    }

    #[test]
    fn needed_rpath_and_runpath_are_read() {
        // Strings at 200, the dynamic array at 300; one PT_LOAD maps vaddr 0x1000 to offset 0.
        let strings = b"\0libfoo.so.1\0$ORIGIN/../lib:/opt/x\0libc.so.6\0";
        let head = 64 + 56 * 2;
        let mut rest = vec![0u8; 200 - head];
        rest.extend_from_slice(strings);
        rest.resize(300 - head, 0);
        rest.extend(dynarray(&[
            (1, 1),
            (1, 35),
            (29, 13),
            (5, 0x1000 + 200),
            (0, 0),
        ]));
        let b = elf(&[(1, 0, 0x1000, 4096), (2, 300, 0x1000 + 300, 80)], &rest);
        let d = read(&b).unwrap().unwrap();
        assert_eq!(d.needed, ["libfoo.so.1", "libc.so.6"]);
        assert_eq!(d.runpath, ["$ORIGIN/../lib", "/opt/x"]);
        assert!(d.rpath.is_empty());
        // Not an ELF file: nothing; no dynamic segment: nothing needed.
        assert_eq!(read(b"#!/bin/sh\n").unwrap(), None);
        assert_eq!(
            read(&elf(&[(1, 0, 0, 10)], &[])).unwrap(),
            Some(Dynamic::default())
        );
    }

    #[test]
    fn hostile_files_are_refused_not_followed() {
        // Cut short before its program headers.
        let mut cut = elf(&[(2, 200, 200, 32)], &[]);
        cut.truncate(80);
        assert!(malformed(read(&cut)).contains("program header"));
        // A dynamic section of 1 GiB is not read.
        let huge = elf(&[(2, 200, 200, 1 << 30)], &[]);
        assert!(malformed(read(&huge)).contains("larger than"));
        // A dynamic array past the end of the file.
        let past = elf(&[(2, 10_000, 10_000, 32)], &[]);
        assert!(malformed(read(&past)).contains("past the end"));
        // A string table in no loaded segment.
        let head = 64 + 56;
        let mut rest = vec![0u8; 300 - head];
        rest.extend(dynarray(&[(1, 1), (5, 0xdead_0000), (0, 0)]));
        let nowhere = elf(&[(2, 300, 300, 48)], &rest);
        assert!(malformed(read(&nowhere)).contains("no loaded segment"));
        // A string that never ends within 4 KiB.
        let head = 64 + 56 * 2;
        let mut rest = vec![0u8; 300 - head];
        rest.extend(dynarray(&[(1, 0), (5, 0x1000 + 400), (0, 0)]));
        rest.resize(400 - head, 0);
        rest.extend(std::iter::repeat_n(b'a', 5000));
        let endless = elf(&[(1, 0, 0x1000, 8192), (2, 300, 300, 48)], &rest);
        assert!(malformed(read(&endless)).contains("not terminated"));
        // A 32-bit or big-endian file is named, not misread.
        let mut be = elf(&[], &[]);
        be[5] = 2;
        assert!(matches!(
            read(&be),
            Err(DynamicError::Elf(CudaError::UnsupportedElf {
                class: 2,
                data: 2
            }))
        ));
    }
}
