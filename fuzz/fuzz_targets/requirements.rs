//! Hashed requirements files: `python::requirements::parse`, then each requirement's marker
//! evaluated for CPython 3.11 on Linux.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ocibuild::python::interpreter::{Interpreter, PyVersion, Scheme};
use ocibuild::python::markers::MarkerEnv;
use ocibuild::python::requirements::parse;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(reqs) = parse(text) else {
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
    let env = MarkerEnv::for_interpreter(&interp);
    for r in &reqs {
        assert!(!r.hashes.is_empty(), "{} has no hash", r.name);
        assert!(!r.normalized_name().is_empty());
        let _ = r.applies(&env);
    }
});
