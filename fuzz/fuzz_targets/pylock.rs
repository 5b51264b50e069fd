//! PEP 751 lock files: `python::pylock::parse` for CPython 3.11 on x86_64 Linux (glibc 2.36),
//! then the wheel each package would install (`select_wheel`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocibuild::python::interpreter::{Interpreter, PyVersion, Scheme};
use ocibuild::python::pylock::parse;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let version = PyVersion {
        major: 3,
        minor: 11,
    };
    let interp = Interpreter {
        version,
        executable: "/usr/bin/python3.11".into(),
        machine: "x86_64".into(),
        glibc: Some((2, 36)),
        scheme: Scheme::debian_local(version),
    };
    let Ok(packages) = parse(text, &interp) else {
        return;
    };
    for p in &packages {
        if let Ok(w) = p.select_wheel(&interp) {
            assert!(p.wheels.contains(w));
        }
    }
});
