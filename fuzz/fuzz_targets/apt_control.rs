//! deb822 control text (`Packages`, `Release`, dpkg `status`, a .deb's `control`):
//! - `parse_paragraphs` and the streaming `ParagraphReader` agree (paragraphs and errors);
//! - every paragraph written back with `to_text` parses to itself;
//! - `Depends` / `Pre-Depends` / `Provides` parse, print and parse back to the same relations;
//! - dpkg status through `Installed::add_status`, package requests through `Request::parse`;
//! - Debian versions (the first lines): parse, print as given, and order consistently.
#![no_main]

use std::cmp::Ordering;

use libfuzzer_sys::fuzz_target;
use ocibuild::apt::control::{
    parse_depends, parse_paragraphs, parse_provides, Keep, Paragraph, ParagraphReader, ReadError,
};
use ocibuild::apt::{Installed, Request, Version};

fn streamed(text: &str) -> Result<Vec<Paragraph>, ReadError> {
    let mut r = ParagraphReader::new(text.as_bytes(), Keep::All);
    let mut out = Vec::new();
    while let Some(p) = r.next_paragraph()? {
        out.push(p);
    }
    Ok(out)
}

fn versions(text: &str) {
    let vs: Vec<Version> = text
        .lines()
        .take(3)
        .filter_map(|l| Version::parse(l).ok())
        .collect();
    for v in &vs {
        assert_eq!(v.to_string(), v.as_str());
        let again = Version::parse(v.as_str()).expect("a parsed version parses again");
        assert_eq!(again.cmp(v), Ordering::Equal);
        assert!(!v.upstream().is_empty());
    }
    for a in &vs {
        for b in &vs {
            assert_eq!(a.cmp(b), b.cmp(a).reverse(), "{a} vs {b}");
            for c in &vs {
                if a <= b && b <= c {
                    assert!(a <= c, "{a} <= {b} <= {c} but not {a} <= {c}");
                }
            }
        }
    }
}

fn relations(field: &str, value: &str) {
    if field.eq_ignore_ascii_case("Provides") {
        if let Ok(deps) = parse_provides(value) {
            let printed: Vec<String> = deps.iter().map(ToString::to_string).collect();
            let printed = printed.join(", ");
            let back = parse_provides(&printed).expect("printed Provides parses");
            assert_eq!(back, deps, "Provides `{value}` printed as `{printed}`");
        }
        return;
    }
    if let Ok(groups) = parse_depends(value) {
        let printed: Vec<String> = groups
            .iter()
            .map(|alts| {
                alts.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
            .collect();
        let printed = printed.join(", ");
        let back = parse_depends(&printed).expect("printed Depends parses");
        assert_eq!(back, groups, "Depends `{value}` printed as `{printed}`");
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    versions(text);
    if let Some(first) = text.lines().next() {
        let _ = Request::parse(first);
    }
    let whole = parse_paragraphs(text);
    match (&whole, streamed(text)) {
        (Ok(a), Ok(b)) => assert_eq!(*a, b, "parse_paragraphs and ParagraphReader differ"),
        (Err(a), Err(ReadError::Control(b))) => assert_eq!(*a, b),
        (a, b) => panic!("parse_paragraphs: {a:?}, ParagraphReader: {b:?}"),
    }
    let Ok(paragraphs) = whole else {
        return;
    };
    for p in &paragraphs {
        let written = p.to_text();
        let back = parse_paragraphs(&written).expect("to_text output parses");
        assert_eq!(
            back.len(),
            1,
            "to_text gave {} paragraphs:\n{written}",
            back.len()
        );
        assert_eq!(back[0], *p, "to_text does not round-trip:\n{written}");
        for (k, v) in p.fields() {
            if [
                "Depends",
                "Pre-Depends",
                "Provides",
                "Breaks",
                "Conflicts",
                "Recommends",
            ]
            .iter()
            .any(|f| f.eq_ignore_ascii_case(k))
            {
                relations(k, v);
            }
        }
    }
    let mut installed = Installed::new();
    let _ = installed.add_status(text, "fuzz status");
});
