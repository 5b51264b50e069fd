use super::fixture::{container, elf_with_section, library, ptx, sass};
use super::*;

fn targets(archs: &[u32], ptx: PtxPolicy) -> Targets {
    Targets {
        archs: archs.iter().copied().collect(),
        ptx,
    }
}

/// The (kind, arch) of every entry left, per container.
fn listing(b: &[u8]) -> Vec<Vec<(u16, u32)>> {
    let r = elf::sections_named(b, b".nv_fatbin").unwrap().remove(0);
    fatbin::containers(&b[r])
        .unwrap()
        .iter()
        .map(|c| c.entries.iter().map(|e| (e.kind, e.arch)).collect())
        .collect()
}

#[test]
fn keeps_the_targets_sass_and_the_newest_ptx_in_place() {
    let lib = library(&[
        &[
            sass(80, 1000),
            sass(90, 1200),
            sass(120, 900),
            ptx(120, 500),
        ],
        &[sass(80, 300), sass(90, 333), ptx(90, 77)],
    ]);
    let mut b = lib.clone();
    let p = prune(&mut b, &targets(&[90], PtxPolicy::Newest))
        .unwrap()
        .unwrap();
    assert_eq!(b.len(), lib.len(), "the file keeps its size");
    assert_eq!(
        listing(&b),
        vec![vec![(2, 90), (1, 120)], vec![(2, 90), (1, 90)]]
    );
    assert_eq!(p.kept, ["compute_120", "compute_90", "sm_90"]);
    assert_eq!(p.removed, ["sm_120", "sm_80"]);
    assert_eq!(p.entries_removed, 3);
    // Entry headers are 64 bytes, payloads padded to 8.
    assert_eq!(p.bytes_removed, (64 + 1000) + (64 + 904) + (64 + 304));
    // Everything before and after the section is untouched; the freed bytes are zero.
    assert_eq!(b[..100], lib[..100]);
    let tail = 200;
    assert_eq!(b[b.len() - tail..], lib[lib.len() - tail..]);
    let zeros = b.iter().filter(|&&x| x == 0).count() - lib.iter().filter(|&&x| x == 0).count();
    assert!(zeros as u64 >= p.bytes_removed - 64 * 3);
}

#[test]
fn pruning_twice_gives_the_same_bytes() {
    let lib = library(&[
        &[sass(75, 100), sass(80, 100), sass(90, 100), ptx(90, 40)],
        &[sass(80, 64), ptx(80, 64)],
    ]);
    let t = targets(&[90], PtxPolicy::Newest);
    let mut once = lib.clone();
    prune(&mut once, &t).unwrap();
    let mut twice = once.clone();
    let p = prune(&mut twice, &t).unwrap().unwrap();
    assert_eq!(once, twice);
    assert_eq!(p.bytes_removed, 0);
}

#[test]
fn the_driver_s_choice_of_sass_is_kept() {
    // sm_86 runs sm_80 SASS (same major, lower minor); the highest such is kept.
    let lib = library(&[&[sass(75, 80), sass(80, 80), sass(86, 80), sass(90, 80)]]);
    let mut b = lib.clone();
    prune(&mut b, &targets(&[89], PtxPolicy::None)).unwrap();
    assert_eq!(listing(&b), vec![vec![(2, 86)]]);
    let mut b = lib.clone();
    prune(&mut b, &targets(&[80, 90], PtxPolicy::None)).unwrap();
    assert_eq!(listing(&b), vec![vec![(2, 80), (2, 90)]]);
}

#[test]
fn a_target_without_sass_keeps_ptx_it_can_compile() {
    // No sm_90 SASS: compute_80 is what an sm_90 GPU ran; it stays even with `none`.
    let lib = library(&[&[sass(75, 80), sass(80, 80), ptx(75, 40), ptx(80, 40)]]);
    let mut b = lib.clone();
    prune(&mut b, &targets(&[90], PtxPolicy::None)).unwrap();
    assert_eq!(listing(&b), vec![vec![(1, 80)]]);
}

#[test]
fn ptx_policies() {
    let lib = library(&[&[sass(90, 80), ptx(80, 40), ptx(90, 40)]]);
    let got = |p| {
        let mut b = lib.clone();
        prune(&mut b, &targets(&[90], p)).unwrap();
        listing(&b)
    };
    assert_eq!(got(PtxPolicy::None), vec![vec![(2, 90)]]);
    assert_eq!(got(PtxPolicy::Newest), vec![vec![(2, 90), (1, 90)]]);
    assert_eq!(got(PtxPolicy::All), vec![vec![(2, 90), (1, 80), (1, 90)]]);
}

#[test]
fn a_container_with_no_code_for_the_targets_keeps_its_smallest_entry() {
    let lib = library(&[
        &[sass(90, 80), sass(100, 80)],
        &[sass(100, 64), sass(103, 64)],
        &[sass(50, 900), sass(61, 200), sass(70, 300)],
    ]);
    let mut b = lib.clone();
    let p = prune(&mut b, &targets(&[90], PtxPolicy::None))
        .unwrap()
        .unwrap();
    assert_eq!(
        listing(&b),
        vec![vec![(2, 90)], vec![(2, 100)], vec![(2, 61)]]
    );
    assert_eq!(p.kept, ["sm_100", "sm_61", "sm_90"]);
    // And again: nothing changes.
    let mut again = b.clone();
    prune(&mut again, &targets(&[90], PtxPolicy::None)).unwrap();
    assert_eq!(again, b);
}

#[test]
fn a_library_with_no_code_for_the_targets_is_refused_unchanged() {
    let lib = library(&[&[sass(80, 80), sass(86, 80)]]);
    let mut b = lib.clone();
    let e = prune(&mut b, &targets(&[90, 100], PtxPolicy::Newest)).unwrap_err();
    assert_eq!(
        e,
        CudaError::NoCode {
            targets: "sm_90, sm_100".into(),
            found: "sm_80, sm_86".into()
        }
    );
    assert_eq!(b, lib);
    assert!(e
        .to_string()
        .contains("none of its GPU code runs on sm_90, sm_100"));
}

#[test]
fn files_that_are_not_cuda_libraries() {
    let t = targets(&[90], PtxPolicy::Newest);
    assert_eq!(
        prune(&mut b"#!/bin/sh\n".to_vec(), &t),
        Err(CudaError::NotElf)
    );
    let mut no_fatbin = elf_with_section(".text", b"code");
    assert_eq!(prune(&mut no_fatbin, &t), Ok(None));
    let script = b"/* GNU ld script\n */\nGROUP ( /lib/libc.so.6 )\n";
    assert_eq!(
        prune_reported(&mut script.to_vec(), &t, "usr/lib/libc.so", "libc6-dev"),
        None
    );
    let text = prune_reported(&mut b"hello".to_vec(), &t, "usr/lib/libx.so", "x").unwrap();
    assert_eq!(text.reason.as_deref(), Some("not an ELF file"));
    let mut elf32 = library(&[&[sass(90, 8)]]);
    elf32[4] = 1;
    assert!(matches!(
        prune(&mut elf32, &t),
        Err(CudaError::UnsupportedElf { class: 1, data: 1 })
    ));
}

#[test]
fn malformed_fatbins_are_left_as_they_are() {
    let t = targets(&[90], PtxPolicy::Newest);
    let good = container(&[sass(80, 64), sass(90, 64)]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            {
                let mut c = good.clone();
                c[0] = 0x51;
                c
            },
            "not a fatbin header",
        ),
        (
            {
                let mut c = good.clone();
                c[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
                c
            },
            "runs past the section",
        ),
        (
            {
                let mut c = good.clone();
                // The first entry's payload size, past the container.
                c[16 + 8..16 + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
                c
            },
            "runs past its container",
        ),
        (
            {
                let mut c = good.clone();
                c[16 + 4..16 + 8].copy_from_slice(&8u32.to_le_bytes());
                c
            },
            "shorter than 64 bytes",
        ),
        (good[..good.len() - 70].to_vec(), "runs past the section"),
    ];
    for (sec, want) in cases {
        let lib = elf_with_section(".nv_fatbin", &sec);
        let mut b = lib.clone();
        let e = prune(&mut b, &t).unwrap_err();
        assert!(e.to_string().contains(want), "{e} lacks {want}");
        assert_eq!(b, lib);
    }
    // A section header table past the end of the file.
    let mut lib = library(&[&[sass(90, 8)]]);
    lib[0x28..0x30].copy_from_slice(&(1u64 << 50).to_le_bytes());
    assert!(matches!(
        prune(&mut lib, &t),
        Err(CudaError::MalformedElf { .. })
    ));
}

#[test]
fn every_truncation_is_an_error_or_nothing_never_a_panic() {
    let lib = library(&[&[sass(80, 40), sass(90, 40), ptx(90, 24)]]);
    let t = targets(&[90], PtxPolicy::Newest);
    for n in 0..lib.len() {
        let _ = prune(&mut lib[..n].to_vec(), &t);
    }
    // Every single byte flipped, too.
    for i in 0..lib.len() {
        let mut b = lib.clone();
        b[i] ^= 0xA5;
        let _ = prune(&mut b, &t);
    }
}

#[test]
fn arch_names() {
    assert_eq!(parse_arch("sm_90"), Some(90));
    assert_eq!(parse_arch("sm_121"), Some(121));
    assert_eq!(parse_arch("sm_91"), None);
    assert_eq!(parse_arch("compute_90"), None);
    assert!(is_library_name("nvidia/cublas/lib/libcublas.so.12"));
    assert!(is_library_name("torch/lib/libtorch_cuda.so"));
    assert!(!is_library_name("nvidia/cublas/include/cublas.h"));
}

#[test]
fn arch_specific_sass_runs_on_its_gpu_only() {
    use super::fixture::sass_a;
    // sm_90a stays for sm_90 with sm_90; sm_100a is no SASS for sm_103, so its PTX stays.
    let lib = library(&[
        &[sass(80, 64), sass(90, 64), sass_a(90, 64)],
        &[sass_a(100, 64), ptx(100, 64), sass(120, 64)],
    ]);
    let mut b = lib.clone();
    let p = prune(&mut b, &targets(&[90, 103], PtxPolicy::None))
        .unwrap()
        .unwrap();
    assert_eq!(listing(&b), vec![vec![(2, 90), (2, 90)], vec![(1, 100)]]);
    assert_eq!(p.kept, ["compute_100", "sm_90", "sm_90a"]);
    assert_eq!(p.removed, ["sm_100a", "sm_120", "sm_80"]);
}
