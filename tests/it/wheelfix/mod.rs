//! Wheels built by the tests (the `zip` crate as the writer): no downloaded binaries.
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;

use ocibuild::digest::Digest;
use ocibuild::python::tags::WheelFile;
use ocibuild::python::wheel::{record_hash, WheelInput};

/// Writes a wheel: `files` (name, content, unix mode) plus WHEEL (unless given) and a RECORD
/// listing everything, which `tweak` may edit before it is written.
pub fn make_wheel(
    dir: &Path,
    filename: &str,
    files: &[(&str, &[u8], u32)],
    purelib: bool,
    tweak: &dyn Fn(&mut Vec<String>),
) -> WheelInput {
    let file = WheelFile::parse(filename).unwrap();
    let di = format!("{}.dist-info", file.dist_prefix());
    let mut all: Vec<(String, Vec<u8>, u32)> = files
        .iter()
        .map(|(n, c, m)| (n.to_string(), c.to_vec(), *m))
        .collect();
    if !files
        .iter()
        .any(|(n, _, _)| n.ends_with(".dist-info/WHEEL"))
    {
        let wheel = format!(
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: {purelib}\nTag: py3-none-any\n"
        );
        all.push((format!("{di}/WHEEL"), wheel.into_bytes(), 0o644));
    }
    let mut record: Vec<String> = all
        .iter()
        .map(|(n, c, _)| format!("{n},{},{}", record_hash(&Digest::of(c)), c.len()))
        .collect();
    record.push(format!("{di}/RECORD,,"));
    tweak(&mut record);
    all.push((
        format!("{di}/RECORD"),
        (record.join("\n") + "\n").into_bytes(),
        0o644,
    ));
    let path = dir.join(filename);
    let mut zw = zip::ZipWriter::new(fs_err::File::create(&path).unwrap());
    for (n, c, mode) in &all {
        let o = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(*mode);
        zw.start_file(n.as_str(), o).unwrap();
        zw.write_all(c).unwrap();
    }
    zw.finish().unwrap();
    let sha256 = Digest::of(&fs_err::read(&path).unwrap());
    WheelInput {
        path,
        file,
        sha256,
        exclude: Default::default(),
    }
}

/// Text-like bytes that deflate well but not trivially (several deflate blocks).
pub fn big_text(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x2545f4914f6cdd1d;
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(
            format!("def f_{}(a, b):\n    return a * {} + b\n", x % 9973, x % 97).as_bytes(),
        );
    }
    v.truncate(n);
    v
}
