//! Registry-facing text: image references (`Reference::parse`: its canonical form parses back
//! to the same reference; `with_tag`, `name`, `manifest_reference`), `WWW-Authenticate`
//! challenges (`parse_challenges`), token scopes (`Scopes::parse`, `to_params`), `Retry-After`
//! values (`http::retry_after`), URL redaction and joining. Each on every line of the input.
#![no_main]

use std::time::{Duration, SystemTime};

use libfuzzer_sys::fuzz_target;
use ocibuild::http::{join_url, redact, retry_after};
use ocibuild::registry::auth::{parse_challenges, Scopes};
use ocibuild::registry::Reference;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for line in text.lines().take(8) {
        if let Ok(r) = Reference::parse(line) {
            let canonical = r.to_string();
            let back = Reference::parse(&canonical)
                .unwrap_or_else(|e| panic!("`{line}` printed as `{canonical}`: {e}"));
            assert_eq!(back, r, "`{line}` printed as `{canonical}`");
            let _ = (r.name(), r.manifest_reference(), r.api_host());
            let _ = r.with_tag("latest");
        }
        let _ = parse_challenges(line);
        let s = Scopes::parse(line);
        let _ = s.to_params();
        assert!(s.covers(&s));
        let _ = retry_after(line, now);
        let _ = redact(line);
        let _ = join_url(line, "dists/stable/Release");
    }
});
