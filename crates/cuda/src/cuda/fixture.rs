//! Synthetic CUDA libraries for tests: a minimal ELF64 file whose `.nv_fatbin` section holds
//! the containers asked for (no nvcc needed). Its layout follows the format in [`super`]; the
//! payloads are pseudo-random filler (seeded by the entry), so each entry's bytes differ and
//! compress about as SASS does.

/// One entry to write: kind (1 PTX, 2 SASS), architecture number, payload length.
#[derive(Clone, Copy, Debug)]
pub struct FixtureEntry {
    pub kind: u16,
    pub arch: u32,
    pub len: usize,
    /// Added to the entry's flags (64-bit, Linux): 0x100000 for `sm_90a`.
    pub flags: u64,
}

pub fn sass(arch: u32, len: usize) -> FixtureEntry {
    FixtureEntry {
        kind: 2,
        arch,
        len,
        flags: 0,
    }
}

/// Architecture-specific SASS (`sm_90a`).
pub fn sass_a(arch: u32, len: usize) -> FixtureEntry {
    FixtureEntry {
        flags: 0x10_0000,
        ..sass(arch, len)
    }
}

pub fn ptx(arch: u32, len: usize) -> FixtureEntry {
    FixtureEntry {
        kind: 1,
        arch,
        len,
        flags: 0,
    }
}

/// One fatbin container's bytes (8-byte aligned, as nvcc writes them).
pub fn container(entries: &[FixtureEntry]) -> Vec<u8> {
    let mut body = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let padded = e.len.div_ceil(8) * 8;
        let mut h = [0u8; 64];
        h[0..2].copy_from_slice(&e.kind.to_le_bytes());
        h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        h[4..8].copy_from_slice(&64u32.to_le_bytes());
        h[8..16].copy_from_slice(&(padded as u64).to_le_bytes());
        h[16..20].copy_from_slice(&(e.len as u32).to_le_bytes());
        h[28..32].copy_from_slice(&e.arch.to_le_bytes());
        h[40..48].copy_from_slice(&(0x11u64 | e.flags).to_le_bytes()); // 64-bit, Linux
        body.extend_from_slice(&h);
        // Filler that does not compress (as SASS hardly does), never zero, seeded per entry.
        let mut x =
            (e.arch << 8 | u32::from(e.kind) << 4 | i as u32).wrapping_mul(2_654_435_761) | 1;
        body.extend((0..e.len).map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8 | 1
        }));
        body.resize(body.len() + padded - e.len, 0);
    }
    let mut out = Vec::with_capacity(16 + body.len());
    out.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// An ELF64 little-endian shared object whose `.nv_fatbin` is `section` (e.g. containers
/// joined), between some text before it and a section header table after it.
pub fn elf_with_section(name: &str, section: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[0..4].copy_from_slice(b"\x7fELF");
    f[4] = 2; // ELFCLASS64
    f[5] = 1; // little-endian
    f[6] = 1; // EV_CURRENT
    f[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    f[18..20].copy_from_slice(&62u16.to_le_bytes()); // x86-64
    f.extend_from_slice(b"some host code before the fatbin\0\0\0\0\0\0\0\0");
    f.resize(f.len().div_ceil(8) * 8, 0);
    let sec_off = f.len();
    f.extend_from_slice(section);
    f.resize(f.len().div_ceil(8) * 8, 0);
    let names = format!("\0{name}\0.shstrtab\0");
    let names_off = f.len();
    f.extend_from_slice(names.as_bytes());
    f.resize(f.len().div_ceil(8) * 8, 0);
    let shoff = f.len();
    let mut sh = |name: u32, kind: u32, off: usize, size: usize| {
        let mut h = [0u8; 64];
        h[0..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&kind.to_le_bytes());
        h[24..32].copy_from_slice(&(off as u64).to_le_bytes());
        h[32..40].copy_from_slice(&(size as u64).to_le_bytes());
        h[48..56].copy_from_slice(&8u64.to_le_bytes());
        f.extend_from_slice(&h);
    };
    sh(0, 0, 0, 0);
    sh(1, 1, sec_off, section.len());
    sh(2 + name.len() as u32, 3, names_off, names.len());
    f[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
    f[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
    f[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes());
    f[0x3E..0x40].copy_from_slice(&2u16.to_le_bytes());
    f
}

/// A library of `containers`, each a list of entries, 8-byte aligned back to back.
pub fn library(containers: &[&[FixtureEntry]]) -> Vec<u8> {
    let mut sec = Vec::new();
    for c in containers {
        sec.extend_from_slice(&container(c));
        sec.resize(sec.len().div_ceil(8) * 8, 0);
    }
    elf_with_section(".nv_fatbin", &sec)
}
