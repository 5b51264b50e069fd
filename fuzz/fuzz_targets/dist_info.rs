//! A wheel's `.dist-info` text formats, each on the whole input: RECORD (`parse_record`; rows
//! written back with `csv_field` / `record_hash` parse to the same rows), `entry_points.txt`
//! (`entry_points`; entries written back parse the same, and their launchers are written), the
//! WHEEL file's `Key: Value` lines (`wheel_field`); and on the first line: shebangs, wheel file
//! names (`WheelFile::parse`, tags, `dist_prefix`) and name normalization.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocibuild::python::dist_info::{
    csv_field, entry_points, launcher, parse_record, record_hash, shebang, wheel_field,
};
use ocibuild::python::tags::{escape_name, normalize_name, WheelFile};

const WHEEL: &str = "fuzz-1.0-py3-none-any.whl";

fn record(text: &str) {
    let Ok(rows) = parse_record(text, WHEEL) else {
        return;
    };
    let mut written = String::new();
    for (path, row) in &rows {
        let hash = row.sha256.as_ref().map(record_hash).unwrap_or_default();
        let size = row.size.map(|s| s.to_string()).unwrap_or_default();
        written.push_str(&format!("{},{},{}\n", csv_field(path), hash, size));
    }
    let back = parse_record(&written, WHEEL)
        .unwrap_or_else(|e| panic!("written RECORD does not parse: {e}\n{written}"));
    assert_eq!(back.len(), rows.len(), "RECORD rows differ:\n{written}");
    for ((p1, r1), (p2, r2)) in rows.iter().zip(&back) {
        assert_eq!(p1, p2);
        assert_eq!(r1.sha256, r2.sha256);
        assert_eq!(r1.size, r2.size);
    }
}

fn entries(text: &str) {
    let Ok(eps) = entry_points(text, WHEEL) else {
        return;
    };
    let mut written = String::from("[console_scripts]\n");
    for (name, module, attr) in &eps {
        let l = launcher("/usr/bin/python3", module, attr);
        assert!(l.starts_with("#!/usr/bin/python3\n"));
        written.push_str(&format!("{name} = {module}:{attr}\n"));
    }
    let back = entry_points(&written, WHEEL)
        .unwrap_or_else(|e| panic!("written entry points do not parse: {e}\n{written}"));
    assert_eq!(back, eps, "entry points do not round-trip:\n{written}");
}

fn names(line: &str) {
    let s = shebang(line);
    assert!(s.starts_with("#!"));
    let n = normalize_name(line);
    assert_eq!(normalize_name(&n), n, "normalize_name is not idempotent");
    let e = escape_name(line);
    assert_eq!(escape_name(&e), e, "escape_name is not idempotent");
    if let Ok(w) = WheelFile::parse(line) {
        assert!(w.tags().count() >= 1);
        let _ = w.dist_prefix();
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    record(text);
    entries(text);
    for key in ["Wheel-Version", "Root-Is-Purelib", "Tag"] {
        let _ = wheel_field(text, key);
    }
    names(text.lines().next().unwrap_or(""));
});
