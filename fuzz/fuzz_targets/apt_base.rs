//! A base image's layers as the apt stage reads them: `apt::scan_base` on the fuzz input as
//! an uncompressed tar layer (whiteouts, dpkg status and status.d records, merged-/usr
//! symlinks, Python executables, shared libraries), read once alone and once stacked twice.
#![no_main]

use std::io::Read;

use libfuzzer_sys::fuzz_target;
use ocibuild::apt::scan_base;

fuzz_target!(|data: &[u8]| {
    let one: Vec<(String, Box<dyn Read + '_>)> = vec![("layer".into(), Box::new(data))];
    let alone = scan_base(one);
    let two: Vec<(String, Box<dyn Read + '_>)> = vec![
        ("lower".into(), Box::new(data)),
        ("upper".into(), Box::new(data)),
    ];
    let stacked = scan_base(two);
    for base in [alone, stacked].into_iter().flatten() {
        for (soname, (path, _)) in &base.libraries {
            assert!(!soname.is_empty() && !path.is_empty());
        }
        let _ = base.usr_merge.rewrite("bin/sh");
    }
});
