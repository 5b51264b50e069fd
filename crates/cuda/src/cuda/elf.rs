//! The few ELF facts pruning needs: where each `.nv_fatbin` section's bytes are in the file.
//!
//! A bounded reader of the section header table, not a general ELF parser (no crate: `object`
//! or `goblin` would bring far more than the 60 lines this is). Only ELF64 little-endian
//! (x86-64 and aarch64, the platforms CUDA wheels exist for) is read; any other class or byte
//! order is [`CudaError::UnsupportedElf`]. The input is untrusted: every offset and count is
//! checked against the buffer before it is used, nothing panics.
//!
//! Layout (System V gABI, ELF-64 Object File Format 1.5): the file header holds `e_shoff` (u64
//! at 0x28), `e_shentsize` (u16 at 0x3A), `e_shnum` (u16 at 0x3C) and `e_shstrndx` (u16 at
//! 0x3E); with more than 0xFF00 sections `e_shnum` is 0 and section 0's `sh_size` holds the
//! count, and `e_shstrndx` is `SHN_XINDEX` (0xFFFF) with the index in section 0's `sh_link`.
//! A section header (64 bytes) holds `sh_name` (u32 at 0, an offset into the section name
//! table), `sh_type` (u32 at 4), `sh_link` (u32 at 40), `sh_offset` (u64 at 24) and `sh_size`
//! (u64 at 32).

use super::CudaError;

const SHT_NOBITS: u32 = 8;
const SHN_XINDEX: u16 = 0xFFFF;
/// More sections than any real library has (libcublasLt: about 40); a count above it is read
/// as a malformed file rather than walked.
const MAX_SECTIONS: u64 = 1 << 16;

pub(super) fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

pub(super) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

pub(super) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// Whether `b` starts like an ELF file.
pub fn is_elf(b: &[u8]) -> bool {
    b.starts_with(b"\x7fELF")
}

/// One section header's facts.
struct Section {
    name: u32,
    kind: u32,
    link: u32,
    offset: u64,
    size: u64,
}

fn section(b: &[u8], shoff: usize, entsize: usize, i: u64) -> Result<Section, CudaError> {
    let bad = |reason| CudaError::MalformedElf { reason };
    let at = usize::try_from(i)
        .ok()
        .and_then(|i| i.checked_mul(entsize))
        .and_then(|o| o.checked_add(shoff))
        .ok_or(bad("a section header lies outside the file"))?;
    let field = |o: usize| {
        at.checked_add(o)
            .ok_or(bad("section header offset overflows"))
    };
    let get32 = |o| u32_at(b, field(o)?).ok_or(bad("a section header lies outside the file"));
    let get64 = |o| u64_at(b, field(o)?).ok_or(bad("a section header lies outside the file"));
    Ok(Section {
        name: get32(0)?,
        kind: get32(4)?,
        link: get32(40)?,
        offset: get64(24)?,
        size: get64(32)?,
    })
}

/// The file ranges of the sections named `name` (with bytes in the file), in header order.
pub(super) fn sections_named(
    b: &[u8],
    name: &[u8],
) -> Result<Vec<std::ops::Range<usize>>, CudaError> {
    if !is_elf(b) {
        return Err(CudaError::NotElf);
    }
    let (class, data) = (b.get(4).copied(), b.get(5).copied());
    if class != Some(2) || data != Some(1) {
        return Err(CudaError::UnsupportedElf {
            class: class.unwrap_or(0),
            data: data.unwrap_or(0),
        });
    }
    let bad = |reason| CudaError::MalformedElf { reason };
    let shoff = u64_at(b, 0x28).ok_or(bad("the ELF header is cut short"))?;
    let entsize = u16_at(b, 0x3A).ok_or(bad("the ELF header is cut short"))?;
    let shnum = u16_at(b, 0x3C).ok_or(bad("the ELF header is cut short"))?;
    let shstrndx = u16_at(b, 0x3E).ok_or(bad("the ELF header is cut short"))?;
    if shoff == 0 {
        return Ok(Vec::new()); // no section headers (stripped of them): nothing to find
    }
    if entsize < 64 {
        return Err(bad("section headers shorter than 64 bytes"));
    }
    let shoff = usize::try_from(shoff).map_err(|_| bad("section headers outside the file"))?;
    let entsize = usize::from(entsize);
    let first = section(b, shoff, entsize, 0)?;
    let count = if shnum == 0 {
        first.size
    } else {
        u64::from(shnum)
    };
    if count > MAX_SECTIONS {
        return Err(bad("more sections than a library has"));
    }
    let strndx = if shstrndx == SHN_XINDEX {
        u64::from(first.link)
    } else {
        u64::from(shstrndx)
    };
    if strndx >= count {
        return Err(bad("the section name table's index is out of range"));
    }
    let names = range(b, &section(b, shoff, entsize, strndx)?)?;
    let names = &b[names];
    let mut out = Vec::new();
    for i in 0..count {
        let s = section(b, shoff, entsize, i)?;
        let start = usize::try_from(s.name).map_err(|_| bad("a section name is out of range"))?;
        let rest = names
            .get(start..)
            .ok_or(bad("a section name is out of range"))?;
        let end = rest
            .iter()
            .position(|&c| c == 0)
            .ok_or(bad("a section name is not terminated"))?;
        if &rest[..end] == name && s.kind != SHT_NOBITS {
            out.push(range(b, &s)?);
        }
    }
    Ok(out)
}

fn range(b: &[u8], s: &Section) -> Result<std::ops::Range<usize>, CudaError> {
    let bad = CudaError::MalformedElf {
        reason: "a section lies outside the file",
    };
    let start = usize::try_from(s.offset).map_err(|_| bad.clone())?;
    let len = usize::try_from(s.size).map_err(|_| bad.clone())?;
    let end = start.checked_add(len).ok_or(bad.clone())?;
    if end > b.len() {
        return Err(bad);
    }
    Ok(start..end)
}
