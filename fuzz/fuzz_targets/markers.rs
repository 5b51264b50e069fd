//! PEP 508 markers and the PEP 440 parts they use, on each line of the input:
//! `Marker::parse` then `evaluate` in a CPython 3.11 Linux environment; `Version::parse`
//! (printed and parsed back: the same version; ordering consistent across the lines);
//! `Specifier::parse` / `SpecifierSet::parse` and `contains` on the lines' versions.
#![no_main]

use std::cmp::Ordering;
use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use ocibuild::python::markers::{Marker, MarkerEnv, Specifier, SpecifierSet, Version};

fn env() -> MarkerEnv {
    MarkerEnv {
        os_name: "posix".into(),
        sys_platform: "linux".into(),
        platform_machine: "x86_64".into(),
        platform_python_implementation: "CPython".into(),
        platform_release: String::new(),
        platform_system: "Linux".into(),
        platform_version: String::new(),
        python_version: "3.11".into(),
        python_full_version: "3.11.0".into(),
        implementation_name: "cpython".into(),
        implementation_version: "3.11.0".into(),
        extra: Some("gpu".into()),
        extras: BTreeSet::from(["gpu".to_string()]),
        dependency_groups: BTreeSet::from(["dev".to_string()]),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let env = env();
    let mut versions = Vec::new();
    for line in text.lines().take(8) {
        if let Ok(m) = Marker::parse(line) {
            let _ = m.evaluate(&env);
        }
        if let Ok(v) = Version::parse(line) {
            let printed = v.to_string();
            let back = Version::parse(&printed)
                .unwrap_or_else(|e| panic!("`{line}` printed as `{printed}`: {e}"));
            assert_eq!(
                back.cmp(&v),
                Ordering::Equal,
                "`{line}` printed as `{printed}`"
            );
            assert_eq!(
                back.to_string(),
                printed,
                "printing is not stable for `{line}`"
            );
            versions.push(v);
        }
        if let Ok(s) = Specifier::parse(line) {
            for v in &versions {
                let _ = s.contains(v);
            }
        }
        if let Ok(set) = SpecifierSet::parse(line) {
            for v in &versions {
                let _ = set.contains(v);
            }
        }
    }
    for a in &versions {
        for b in &versions {
            assert_eq!(a.cmp(b), b.cmp(a).reverse(), "{a} vs {b}");
            for c in &versions {
                if a <= b && b <= c {
                    assert!(a <= c, "{a} <= {b} <= {c} but not {a} <= {c}");
                }
            }
        }
    }
});
