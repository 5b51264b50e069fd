//! The lock file: `Lock::parse`, and for a lock that parses, `to_toml` parses back to the same
//! lock and prints the same bytes again.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use ocibuild::lock::Lock;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz.lock");
    let lock = match Lock::parse(text, path) {
        Ok(l) => l,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let written = lock.to_toml();
    let back = Lock::parse(&written, path)
        .unwrap_or_else(|e| panic!("to_toml output does not parse: {e}\n{written}"));
    assert_eq!(back, lock, "to_toml does not round-trip:\n{written}");
    assert_eq!(back.to_toml(), written, "to_toml is not stable");
});
