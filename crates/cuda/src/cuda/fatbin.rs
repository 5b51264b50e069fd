//! The fatbin containers of one `.nv_fatbin` section: read ([`containers`]), chosen from
//! ([`select`]) and rewritten in place ([`rewrite`]). The format is in the module doc of
//! [`super`].

use std::collections::BTreeSet;
use std::ops::Range;

use super::elf::{u16_at, u32_at, u64_at};
use super::{CudaError, PtxPolicy, Targets};

pub(super) const MAGIC: u32 = 0xBA55_ED50;
/// The container header: magic (u32), version (u16), header size (u16), fat size (u64).
const HEADER: usize = 16;
/// The fixed part of an entry's header (longer headers carry more after it).
const ENTRY_MIN: usize = 64;
pub(super) const KIND_PTX: u16 = 1;
pub(super) const KIND_ELF: u16 = 2;
/// Entry flags: code for exactly one GPU (`sm_90a`), and for one family (`compute_120f`; read
/// on cuDNN 9.28's entries against what cuobjdump 13.5 lists).
const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
const FLAG_FAMILY: u64 = 0x20_0000;

/// One entry: its kind, its architecture number (`90` for sm_90 / compute_90), and where its
/// header and payload lie in the section.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) kind: u16,
    pub(super) arch: u32,
    pub(super) flags: u64,
    pub(super) bytes: Range<usize>,
}

impl Entry {
    /// Whether a GPU of `target` runs it: SASS of the same major version and a minor no higher
    /// (CUDA's binary compatibility), PTX of its architecture or an older one (the driver
    /// compiles it), within the family for family PTX; either for exactly its GPU when it is
    /// architecture-specific (`sm_90a` runs on 9.0 only).
    fn runs_on(&self, target: u32) -> bool {
        let same_major = self.arch / 10 == target / 10 && self.arch <= target;
        if self.flags & FLAG_ARCH_SPECIFIC != 0 {
            return self.arch == target && matches!(self.kind, KIND_ELF | KIND_PTX);
        }
        match self.kind {
            KIND_ELF => same_major,
            KIND_PTX if self.flags & FLAG_FAMILY != 0 => same_major,
            KIND_PTX => self.arch <= target,
            _ => false,
        }
    }

    /// The name cuobjdump gives its architecture: `sm_90`, `sm_90a`, `compute_120f`.
    pub(super) fn name(&self) -> String {
        let specific = if self.flags & FLAG_ARCH_SPECIFIC != 0 {
            "a"
        } else {
            ""
        };
        match self.kind {
            KIND_PTX => {
                let family = if self.flags & FLAG_FAMILY != 0 && specific.is_empty() {
                    "f"
                } else {
                    ""
                };
                format!("compute_{}{specific}{family}", self.arch)
            }
            KIND_ELF => format!("sm_{}{specific}", self.arch),
            k => format!("kind{k}_{}", self.arch),
        }
    }
}

/// One container: its header's range and its entries, in order.
#[derive(Clone, Debug)]
pub(super) struct Container {
    pub(super) start: usize,
    pub(super) header: usize,
    /// Where the container's entries end (header + fat size).
    pub(super) end: usize,
    pub(super) entries: Vec<Entry>,
}

/// Every container of `sec` (a `.nv_fatbin` section's bytes). Zero bytes between containers
/// (alignment, or a tail an earlier pruning freed) are skipped; anything else that is not a
/// container header is [`CudaError::MalformedFatbin`].
pub(super) fn containers(sec: &[u8]) -> Result<Vec<Container>, CudaError> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while let Some(skip) = sec.get(pos..).and_then(|r| r.iter().position(|&b| b != 0)) {
        pos += skip;
        let c = container(sec, pos)?;
        pos = c.end;
        out.push(c);
    }
    Ok(out)
}

fn container(sec: &[u8], start: usize) -> Result<Container, CudaError> {
    let bad = |at: usize, reason| CudaError::MalformedFatbin {
        offset: at as u64,
        reason,
    };
    if u32_at(sec, start) != Some(MAGIC) {
        return Err(bad(start, "not a fatbin header (magic 0xBA55ED50)"));
    }
    let version = u16_at(sec, start + 4).ok_or(bad(start, "the header is cut short"))?;
    let header = u16_at(sec, start + 6).ok_or(bad(start, "the header is cut short"))?;
    let fat = u64_at(sec, start + 8).ok_or(bad(start, "the header is cut short"))?;
    if version != 1 {
        return Err(bad(start, "an unknown fatbin version (not 1)"));
    }
    let header = usize::from(header);
    if header < HEADER {
        return Err(bad(start, "a header shorter than 16 bytes"));
    }
    let end = usize::try_from(fat)
        .ok()
        .and_then(|f| f.checked_add(start + header))
        .filter(|&e| e <= sec.len())
        .ok_or(bad(start, "the container runs past the section"))?;
    let mut entries = Vec::new();
    let mut p = start + header;
    while p < end {
        if end - p < ENTRY_MIN {
            return Err(bad(p, "an entry header is cut short"));
        }
        let kind = u16_at(sec, p).ok_or(bad(p, "an entry header is cut short"))?;
        let hsize = u32_at(sec, p + 4).ok_or(bad(p, "an entry header is cut short"))?;
        let payload = u64_at(sec, p + 8).ok_or(bad(p, "an entry header is cut short"))?;
        let arch = u32_at(sec, p + 28).ok_or(bad(p, "an entry header is cut short"))?;
        let flags = u64_at(sec, p + 40).ok_or(bad(p, "an entry header is cut short"))?;
        let hsize = usize::try_from(hsize).unwrap_or(usize::MAX);
        if hsize < ENTRY_MIN {
            return Err(bad(p, "an entry header shorter than 64 bytes"));
        }
        let next = usize::try_from(payload)
            .ok()
            .and_then(|n| n.checked_add(hsize))
            .and_then(|n| n.checked_add(p))
            .filter(|&n| n <= end)
            .ok_or(bad(p, "an entry runs past its container"))?;
        entries.push(Entry {
            kind,
            arch,
            flags,
            bytes: p..next,
        });
        p = next;
    }
    Ok(Container {
        start,
        header,
        end,
        entries,
    })
}

/// The entries of `kind` in `es` that run on `target` and have the highest architecture of
/// those (the driver's choice: sm_90 and sm_90a both, for 9.0).
fn best(es: &[Entry], kind: u16, target: u32) -> impl Iterator<Item = usize> + '_ {
    let runs = move |e: &Entry| e.kind == kind && e.runs_on(target);
    let top = es.iter().filter(|e| runs(e)).map(|e| e.arch).max();
    (0..es.len()).filter(move |&i| runs(&es[i]) && Some(es[i].arch) == top)
}

/// The indices of `c`'s entries to keep for `t`:
/// - for each target, the SASS the driver would pick (same major, highest minor not above the
///   target's; every entry of that number, so sm_90 and sm_90a both stay);
/// - PTX as `t.ptx` says (the newest, none or all);
/// - for a target with no SASS here, the newest PTX it can compile, whatever `t.ptx` says: a
///   kernel that ran on the target before pruning still does;
/// - entries of any other kind, always.
///
/// A container that would be left with none of its PTX or SASS entries (its code runs on none
/// of the targets) keeps its smallest one, first of equals: a placeholder, so it stays a fatbin
/// with an image (for another GPU) as before, never an empty one, whose handling by the CUDA
/// runtime nothing documents.
pub(super) fn select(c: &Container, t: &Targets) -> BTreeSet<usize> {
    let mut keep = BTreeSet::new();
    let es = &c.entries;
    for &target in &t.archs {
        let sass: Vec<usize> = best(es, KIND_ELF, target).collect();
        if sass.is_empty() {
            keep.extend(best(es, KIND_PTX, target));
        } else {
            keep.extend(sass);
        }
    }
    let newest = es
        .iter()
        .filter(|e| e.kind == KIND_PTX)
        .map(|e| e.arch)
        .max();
    for (i, e) in es.iter().enumerate() {
        let ptx_kept = match t.ptx {
            PtxPolicy::All => true,
            PtxPolicy::None => false,
            PtxPolicy::Newest => Some(e.arch) == newest,
        };
        if (e.kind == KIND_PTX && ptx_kept) || (e.kind != KIND_PTX && e.kind != KIND_ELF) {
            keep.insert(i);
        }
    }
    let code = |i: &usize| matches!(es[*i].kind, KIND_PTX | KIND_ELF);
    if !keep.iter().any(code) {
        let smallest = (0..es.len())
            .filter(code)
            .min_by_key(|&i| (es[i].bytes.len(), i));
        keep.extend(smallest);
    }
    keep
}

/// Whether any of the targets can run anything in `cs`.
pub(super) fn any_runs(cs: &[Container], t: &Targets) -> bool {
    cs.iter().any(|c| {
        t.archs
            .iter()
            .any(|&a| c.entries.iter().any(|e| e.runs_on(a)))
    })
}

/// Rewrites container `c` of `sec` to hold only the entries in `keep`: they move, in order, to
/// right after the header, the fat size becomes their total, and the freed bytes up to the old
/// end are zeroed. The container's start and its end in the section do not move. Returns the
/// bytes freed, or `None` when a kept entry would move by other than a multiple of 8 bytes (the
/// alignment entries are written with; such a container is left as it is).
pub(super) fn rewrite(sec: &mut [u8], c: &Container, keep: &BTreeSet<usize>) -> Option<u64> {
    if keep.len() == c.entries.len() {
        return Some(0);
    }
    let mut at = c.start + c.header;
    let mut moves = Vec::new();
    for (i, e) in c.entries.iter().enumerate() {
        if keep.contains(&i) {
            if !(e.bytes.start - at).is_multiple_of(8) {
                return None;
            }
            moves.push((e.bytes.clone(), at));
            at += e.bytes.len();
        }
    }
    for (from, to) in moves {
        // Kept entries only move down (towards the header), in order: no copy overwrites a
        // kept entry not yet moved.
        sec.copy_within(from, to);
    }
    let fat = (at - c.start - c.header) as u64;
    sec.get_mut(c.start + 8..c.start + 16)?
        .copy_from_slice(&fat.to_le_bytes());
    sec.get_mut(at..c.end)?.fill(0);
    Some((c.end - at) as u64)
}
