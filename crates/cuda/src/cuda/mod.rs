//! CUDA code for other GPUs taken out of the shared libraries ocibuild writes into layers
//! (`[image] cuda-archs`, `cuda-ptx`; issue 39).
//!
//! # The fatbin format
//!
//! NVIDIA documents no format; this reading comes from public sources, checked against
//! `cuobjdump` (CUDA 11.8, Debian's `nvidia-cuda-toolkit`) on libraries nvcc built here and on
//! PyPI's CUDA wheels: the CUDA toolkit's `fatbinary_section.h` (the `__fatBinC_Wrapper_t`
//! with magic 0x466243B1 in `.nvFatBinSegment`, whose `data` points into `.nv_fatbin`),
//! ZLUDA's `FatbinFileHeader` (zluda_dark_api), gpuocelot's `cudaFatBinary.h` and the
//! reverse-engineered specification of nvopen-tools (`fatbin/FORMAT_SPECIFICATION.md`).
//!
//! A library's `.nv_fatbin` section holds fatbin containers back to back (libcublasLt: about
//! 2,800), each 8-byte aligned, zero bytes between them. A container is a 16-byte header —
//! magic 0xBA55ED50 (u32), version 1 (u16), header size 16 (u16), fat size (u64, the bytes of
//! entries after the header) — and its entries, each an entry header followed by its payload:
//! kind (u16 at 0: 1 PTX, 2 ELF, i.e. SASS in a cubin), version (u16 at 2), header size (u32
//! at 4: 64, or 80 and 112 for newer entries that carry more), payload size (u64 at 8, padded
//! to 8), compressed size (u32 at 16), the PTX ISA version (u16 minor, u16 major at 24), the
//! architecture (u32 at 28: 90 for sm_90 or compute_90), a name's offset and length, flags (u64
//! at 40: 64-bit 0x1, Linux 0x10, compression by LZ4 0x2000 or zstd 0x8000, and, as read here
//! against cuobjdump 13.5's listing of cuDNN 9.28, 0x100000 for code of exactly one GPU
//! (`sm_90a`) and 0x200000 for a family's PTX (`compute_120f`)) and the uncompressed size (u64
//! at 56). The next entry starts right after the payload; the container ends at the
//! fat size. Nothing here needs a payload's contents, so compressed entries are pruned as they
//! are, never decompressed.
//!
//! # The transform
//!
//! Each container is rewritten in place ([`fatbin::rewrite`]): its kept entries move, in
//! order, to right after its header, its fat size becomes theirs, and the freed bytes up to its
//! old end are zeroed. Nothing outside the container moves, so every ELF offset and address
//! (the wrappers' pointers in `.nvFatBinSegment`, their relocations, the program headers) stays
//! valid, the file keeps its size (a wheel's RECORD size, a tar header's size), and the zeroed
//! tail compresses to almost nothing in the layer. Shrinking the section instead would move
//! every later section and need the relocations and dynamic tables rewritten: more to get
//! wrong for no smaller compressed layer. The walk skips zero bytes between containers, so a
//! pruned library prunes again to the same bytes.
//!
//! What is kept per container ([`fatbin::select`]): for each target GPU, the SASS the driver
//! would load there (same major version, the highest minor not above the target's); PTX as
//! `cuda-ptx` says (`newest`, the default: the newest PTX, which the driver compiles for GPUs
//! newer than every SASS; `none`; `all`); for a target with no SASS in the container, the
//! newest PTX it can compile whatever `cuda-ptx` says, so no kernel that ran on a target before
//! stops running; entries of unknown kinds. A container whose code runs on none of the targets
//! keeps its smallest entry as a placeholder (so no container is ever empty); a library none of
//! whose code runs on any target is refused ([`CudaError::NoCode`]) and left.
//!
//! Only `.nv_fatbin` is pruned: the fatbins cuBLASLt and cuDNN keep in `.cask_resource` (117 MB
//! of libcublasLt.so.12's 749 MB) are loaded by the library's own code, which may record their
//! sizes elsewhere, so they are left as they are.

pub mod dynamic;
mod elf;
mod fatbin;
pub mod fixture;
pub mod loads;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

pub use elf::is_elf;

/// The architectures `cuda-archs` accepts (CUDA 13's list, and what CUDA 12 had before).
pub const KNOWN_ARCHS: &[&str] = &[
    "sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80",
    "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100", "sm_101", "sm_103", "sm_110", "sm_120",
    "sm_121",
];

/// The values `cuda-ptx` accepts.
pub const PTX_POLICIES: &[&str] = &["newest", "none", "all"];

/// Why a library is left as it is.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum CudaError {
    #[error("not an ELF file")]
    NotElf,
    #[error(
        "an ELF file of class {class} and byte order {data} (only 64-bit little-endian is read)"
    )]
    UnsupportedElf { class: u8, data: u8 },
    #[error("malformed ELF: {reason}")]
    MalformedElf { reason: &'static str },
    #[error("malformed fatbin at offset {offset} of .nv_fatbin: {reason}")]
    MalformedFatbin { offset: u64, reason: &'static str },
    #[error(
        "none of its GPU code runs on {targets} (it has {found}): pruning would remove it all"
    )]
    NoCode { targets: String, found: String },
}

/// Which PTX entries stay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PtxPolicy {
    /// Per container, the PTX of the newest architecture (forward compatibility).
    #[default]
    Newest,
    None,
    All,
}

impl PtxPolicy {
    pub fn parse(s: &str) -> Option<PtxPolicy> {
        match s {
            "newest" => Some(PtxPolicy::Newest),
            "none" => Some(PtxPolicy::None),
            "all" => Some(PtxPolicy::All),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PtxPolicy::Newest => "newest",
            PtxPolicy::None => "none",
            PtxPolicy::All => "all",
        }
    }
}

/// The GPUs an image is for: `cuda-archs` as numbers (sm_90 → 90) and `cuda-ptx`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Targets {
    pub archs: BTreeSet<u32>,
    pub ptx: PtxPolicy,
}

impl Targets {
    /// The names, as written in the recipe (`sm_80, sm_90`).
    pub fn names(&self) -> Vec<String> {
        self.archs.iter().map(|a| format!("sm_{a}")).collect()
    }

    /// What a cache key or the recipe identity records.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"archs": self.names(), "ptx": self.ptx.as_str()})
    }
}

/// `sm_90` → 90, for a name in [`KNOWN_ARCHS`].
pub fn parse_arch(name: &str) -> Option<u32> {
    if !KNOWN_ARCHS.contains(&name) {
        return None;
    }
    name.strip_prefix("sm_")?.parse().ok()
}

/// What pruning did to one library.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pruned {
    /// Bytes of fatbin entries removed (zeroed in place).
    pub bytes_removed: u64,
    pub entries_removed: u64,
    /// The architectures of what is left (`sm_90`, `compute_120`), sorted.
    pub kept: Vec<String>,
    /// The architectures of what was removed (and is in no kept entry), sorted.
    pub removed: Vec<String>,
}

/// Prunes the library `bytes` (a whole file) to `t`, in place. `Ok(None)`: an ELF file with no
/// fatbin, left as it is. An error leaves `bytes` unchanged.
pub fn prune(bytes: &mut [u8], t: &Targets) -> Result<Option<Pruned>, CudaError> {
    let ranges = elf::sections_named(bytes, b".nv_fatbin")?;
    if ranges.is_empty() {
        return Ok(None);
    }
    let mut plans = Vec::new();
    let mut any = false;
    let mut found = BTreeSet::new();
    for r in &ranges {
        let cs = fatbin::containers(&bytes[r.clone()])?;
        any |= fatbin::any_runs(&cs, t);
        for c in &cs {
            found.extend(c.entries.iter().map(fatbin::Entry::name));
        }
        plans.push((r.clone(), cs));
    }
    if plans.iter().all(|(_, cs)| cs.is_empty()) {
        return Ok(None);
    }
    if !any {
        return Err(CudaError::NoCode {
            targets: t.names().join(", "),
            found: found.into_iter().collect::<Vec<_>>().join(", "),
        });
    }
    let mut out = Pruned::default();
    let (mut kept, mut removed) = (BTreeSet::new(), BTreeSet::new());
    for (r, cs) in plans {
        let sec = &mut bytes[r];
        for c in &cs {
            let keep = fatbin::select(c, t);
            let Some(n) = fatbin::rewrite(sec, c, &keep) else {
                kept.extend(c.entries.iter().map(fatbin::Entry::name));
                continue;
            };
            out.bytes_removed += n;
            for (i, e) in c.entries.iter().enumerate() {
                let name = e.name();
                if keep.contains(&i) {
                    kept.insert(name);
                } else {
                    out.entries_removed += 1;
                    removed.insert(name);
                }
            }
        }
    }
    out.removed = removed.difference(&kept).cloned().collect();
    out.kept = kept.into_iter().collect();
    Ok(Some(out))
}

/// Whether `b` is a GNU ld script (text that names the libraries to link instead).
fn is_linker_script(b: &[u8]) -> bool {
    let b = b.trim_ascii_start();
    ["/* GNU ld script", "INPUT(", "GROUP(", "OUTPUT_FORMAT("]
        .iter()
        .any(|p| b.starts_with(p.as_bytes()))
}

/// Whether a file's name says it is a shared library (`libx.so`, `libx.so.12`, `x.cpython-312-
/// x86_64-linux-gnu.so`): the files pruning reads.
pub fn is_library_name(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".so") || name.contains(".so.")
}

/// One library a layer holds and what pruning did to it, for `build --json` and the text
/// output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LibraryReport {
    /// The path in the image, absolute.
    pub path: String,
    /// Where it comes from (a wheel's file name).
    pub from: String,
    pub size: u64,
    /// What was removed; `None` when it was left as it is (`reason` says why).
    pub pruned: Option<Pruned>,
    pub reason: Option<String>,
}

/// What pruning did to an image's CUDA libraries: the targets and each library.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CudaReport {
    pub archs: Vec<String>,
    pub ptx: String,
    /// In path order.
    pub libraries: Vec<LibraryReport>,
}

impl CudaReport {
    /// The bytes removed from every library.
    pub fn bytes_removed(&self) -> u64 {
        self.libraries
            .iter()
            .filter_map(|l| l.pruned.as_ref())
            .map(|p| p.bytes_removed)
            .sum()
    }
}

/// Prunes `bytes` (the file at `path`, from `from`) to `t`: `None` when it is not a CUDA
/// library (an ELF file without a fatbin); else the report, `bytes` rewritten when it says
/// so.
pub fn prune_reported(
    bytes: &mut [u8],
    t: &Targets,
    path: &str,
    from: &str,
) -> Option<LibraryReport> {
    let size = bytes.len() as u64;
    let report = |pruned, reason| LibraryReport {
        path: format!("/{}", path.trim_start_matches('/')),
        from: from.to_string(),
        size,
        pruned,
        reason,
    };
    match prune(bytes, t) {
        Ok(None) => None,
        // A GNU ld script (`libc.so` in libc6-dev) names libraries; it is none.
        Err(CudaError::NotElf) if is_linker_script(bytes) => None,
        Ok(Some(p)) => Some(report(Some(p), None)),
        Err(e) => Some(report(None, Some(crate::diag::chain(&e)))),
    }
}

#[cfg(test)]
mod tests;
