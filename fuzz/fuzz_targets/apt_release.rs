//! Release files: `Release::parse`, and an InRelease through `verify_clearsigned` without a key
//! (the armor and clearsign framing are still parsed), its signed text then parsed as a Release.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocibuild::apt::release::{parse_sha256, verify_clearsigned, Release};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let url = "http://fuzz/dists/stable/Release";
    if let Ok(r) = Release::parse(text, url) {
        for (path, (digest, _size)) in &r.sha256 {
            assert!(!path.is_empty());
            // What was parsed prints back as a 64-hex-digit sha256 that parses again.
            assert_eq!(parse_sha256(&digest.hex()), Some(*digest));
        }
    }
    if let Ok(signed) = verify_clearsigned(text, None, "http://fuzz/dists/stable/InRelease") {
        let _ = Release::parse(&signed, url);
    }
});
