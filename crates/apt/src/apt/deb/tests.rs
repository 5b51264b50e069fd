//! Unit tests of the .deb reader.

use super::*;

#[test]
fn path_normalization() {
    assert_eq!(
        normalize("./usr/bin/", "p").unwrap().as_deref(),
        Some("usr/bin")
    );
    assert_eq!(normalize("./", "p").unwrap(), None);
    assert_eq!(normalize("a/./b", "p").unwrap().as_deref(), Some("a/b"));
    assert!(normalize("/etc/passwd", "p").is_err());
    let e = normalize("./usr/../../etc", "p").unwrap_err();
    assert!(
        e.to_string().contains("package p") && e.to_string().contains(".."),
        "{e}"
    );
}

#[test]
fn status_record_and_md5sums() {
    let ps =
        parse_paragraphs("Package: a\nStatus: junk\nVersion: 1\nDescription: x\n y\n").unwrap();
    assert_eq!(
        status_record(&ps[0]),
        "Package: a\nStatus: install ok installed\nVersion: 1\nDescription: x\n y\n"
    );
    assert_eq!(
        rewrite_md5sums("abc  bin/ls\ndef  usr/share/x\n", &UsrMerge::all()),
        "abc  usr/bin/ls\ndef  usr/share/x\n"
    );
}
