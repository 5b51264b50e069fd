use std::io::{Cursor, Read};

use super::*;

/// A header block of `kind` declaring `size`, GNU or ustar, checksummed.
fn header(kind: tar::EntryType, name: &str, size: u64, gnu: bool) -> tar::Header {
    let mut h = if gnu {
        tar::Header::new_gnu()
    } else {
        tar::Header::new_ustar()
    };
    h.set_entry_type(kind);
    h.set_path(name).unwrap();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_cksum();
    h
}

fn pad(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(512) {
        out.push(0);
    }
}

fn member(out: &mut Vec<u8>, h: &tar::Header, data: &[u8]) {
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    pad(out);
}

fn end(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0; 1024]);
}

/// A PAX record `key=value` with its length prefix.
fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut n = body.len() + 1;
    while format!("{n}{body}").len() != n {
        n += 1;
    }
    format!("{n}{body}").into_bytes()
}

/// (path, link, size, content) of every member, as tar-rs gives them.
type Listing = Vec<(String, Option<String>, u64, Vec<u8>)>;

fn list<R: Read>(mut ar: tar::Archive<R>) -> io::Result<Listing> {
    let mut out = Vec::new();
    for e in ar.entries()? {
        let mut e = e?;
        let path = String::from_utf8_lossy(&e.path_bytes()).into_owned();
        let link = e
            .link_name_bytes()
            .map(|l| String::from_utf8_lossy(&l).into_owned());
        let size = e.size();
        let mut data = Vec::new();
        e.read_to_end(&mut data)?;
        out.push((path, link, size, data));
    }
    Ok(out)
}

fn bounded_err(tar: &[u8]) -> Error {
    let e = list(archive(tar)).unwrap_err();
    as_bound_error(&e)
        .unwrap_or_else(|| panic!("not a bound error: {e}"))
        .clone()
}

#[test]
fn ordinary_archives_read_the_same_through_the_bound() {
    let long = "d/".repeat(120) + "file";
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(5);
    h.set_mode(0o644);
    b.append_data(&mut h, &long, &b"hello"[..]).unwrap();
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_size(0);
    b.append_link(&mut h, "link", "t/".repeat(90) + "x")
        .unwrap();
    b.append_pax_extensions([("path", &b"pax/name"[..]), ("mtime", b"1.5")])
        .unwrap();
    let mut h = tar::Header::new_ustar();
    h.set_size(3);
    h.set_mode(0o600);
    b.append_data(&mut h, "short", &b"abc"[..]).unwrap();
    let tar = b.into_inner().unwrap();
    let plain = list(tar::Archive::new(&tar[..])).unwrap();
    assert_eq!(plain.len(), 3);
    assert_eq!(plain[0].0, long);
    assert_eq!(plain[2].0, "pax/name");
    assert_eq!(list(archive(&tar[..])).unwrap(), plain);
    // Read one byte at a time, and with seeks over the data.
    struct Dribble<'a>(&'a [u8]);
    impl Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    assert_eq!(list(archive(Dribble(&tar))).unwrap(), plain);
    let mut seek = tar::Archive::new(Bounded::new(Cursor::new(&tar), MAX_RECORD));
    let names: Vec<_> = seek
        .entries_with_seek()
        .unwrap()
        .map(|e| String::from_utf8_lossy(&e.unwrap().path_bytes()).into_owned())
        .collect();
    assert_eq!(names, [long.as_str(), "link", "pax/name"]);
}

#[test]
fn a_record_declaring_more_than_the_bound_is_refused_before_it_is_read() {
    for (kind, name) in [
        (tar::EntryType::XHeader, "PAX extended header"),
        (tar::EntryType::XGlobalHeader, "PAX global header"),
        (tar::EntryType::GNULongName, "GNU long name record"),
        (tar::EntryType::GNULongLink, "GNU long link record"),
    ] {
        let mut tar = Vec::new();
        member(
            &mut tar,
            &header(tar::EntryType::Regular, "a", 3, true),
            b"abc",
        );
        // 1.5 GB declared, 4 KiB present.
        let h = header(kind, "././@LongLink", 1_500_000_000, true);
        tar.extend_from_slice(h.as_bytes());
        tar.extend_from_slice(&[b'x'; 4096]);
        assert_eq!(
            bounded_err(&tar).to_string(),
            format!(
                "the tar member at offset 1024 is a {name} that declares 1500000000 bytes \
                 (at most 1048576 are accepted): the archive is corrupt or hostile"
            )
        );
    }
    // At the bound it is read.
    let mut tar = Vec::new();
    let rec = pax_record("comment", &"c".repeat(1000));
    member(
        &mut tar,
        &header(tar::EntryType::XHeader, "p", rec.len() as u64, false),
        &rec,
    );
    member(
        &mut tar,
        &header(tar::EntryType::Regular, "a", 1, false),
        b"1",
    );
    end(&mut tar);
    let mut small = tar::Archive::new(Bounded::new(&tar[..], rec.len() as u64));
    assert_eq!(list(small).unwrap().len(), 1);
    small = tar::Archive::new(Bounded::new(&tar[..], rec.len() as u64 - 1));
    let e = list(small).unwrap_err();
    assert!(matches!(
        as_bound_error(&e),
        Some(Error::RecordTooLarge { offset: 0, .. })
    ));
}

#[test]
fn a_pax_size_moves_the_next_header_as_tar_rs_does() {
    // Go's writer: the real size in the PAX record, 0 in the header. The record after the
    // 2000-byte member is found only if the PAX size is followed.
    let mut tar = Vec::new();
    let rec = pax_record("size", "2000");
    member(
        &mut tar,
        &header(tar::EntryType::XHeader, "p", rec.len() as u64, false),
        &rec,
    );
    member(
        &mut tar,
        &header(tar::EntryType::Regular, "big", 0, false),
        &[7; 2000],
    );
    let mut ok = tar.clone();
    member(
        &mut ok,
        &header(tar::EntryType::Regular, "b", 1, false),
        b"b",
    );
    end(&mut ok);
    let plain = list(tar::Archive::new(&ok[..])).unwrap();
    assert_eq!(plain[0].2, 2000);
    assert_eq!(list(archive(&ok[..])).unwrap(), plain);
    let mut bad = tar;
    bad.extend_from_slice(header(tar::EntryType::GNULongName, "L", 1 << 40, true).as_bytes());
    assert!(matches!(
        bounded_err(&bad),
        Error::RecordTooLarge { offset: 3584, size, .. } if size == 1 << 40
    ));
}

/// Octal field of `len` bytes.
fn octal(field: &mut [u8], v: u64) {
    let s = format!("{v:0w$o}\0", w = field.len() - 1);
    field.copy_from_slice(s.as_bytes());
}

#[test]
fn gnu_sparse_extension_blocks_are_followed() {
    // A sparse member whose map continues in one extension block: two data chunks of 512.
    let mut h = header(tar::EntryType::GNUSparse, "sparse", 1024, true);
    {
        let g = h.as_gnu_mut().unwrap();
        octal(&mut g.sparse[0].offset, 0);
        octal(&mut g.sparse[0].numbytes, 512);
        octal(&mut g.realsize, 4096);
        g.isextended[0] = 1;
    }
    h.set_cksum();
    let mut tar = Vec::new();
    tar.extend_from_slice(h.as_bytes());
    let mut ext = [0u8; 512];
    octal(&mut ext[0..12], 3584);
    octal(&mut ext[12..24], 512);
    tar.extend_from_slice(&ext);
    tar.extend_from_slice(&[1; 512]);
    tar.extend_from_slice(&[2; 512]);
    let mut ok = tar.clone();
    member(
        &mut ok,
        &header(tar::EntryType::Regular, "b", 1, true),
        b"b",
    );
    end(&mut ok);
    let plain = list(tar::Archive::new(&ok[..])).unwrap();
    assert_eq!(plain.len(), 2, "{plain:?}");
    assert_eq!(plain[0].2, 4096);
    assert_eq!(list(archive(&ok[..])).unwrap(), plain);
    let mut bad = tar;
    bad.extend_from_slice(header(tar::EntryType::XHeader, "x", 1 << 30, true).as_bytes());
    assert!(matches!(
        bounded_err(&bad),
        Error::RecordTooLarge { offset: 2048, .. }
    ));
}

#[test]
fn past_the_end_nothing_is_checked() {
    let mut tar = Vec::new();
    member(
        &mut tar,
        &header(tar::EntryType::Regular, "a", 1, true),
        b"a",
    );
    end(&mut tar);
    tar.extend_from_slice(header(tar::EntryType::XHeader, "x", 1 << 30, true).as_bytes());
    let mut r = Bounded::new(&tar[..], MAX_RECORD);
    let mut all = Vec::new();
    r.read_to_end(&mut all).unwrap();
    assert_eq!(all, tar);
}
