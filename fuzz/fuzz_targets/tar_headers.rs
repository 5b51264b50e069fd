//! Tar headers with PAX and GNU records, through every tar reader of ours the library exposes:
//! the bounded reader (`tarbound`) against tar-rs alone, the base scan (`apt::scan_base`), the
//! layer indexer of `diff` / `verify` (`audit::tarmeta::index_layer`) and the interpreter
//! archive unpacker (`unpack::unpack_tar`, into a scratch directory).
//!
//! Checks: no panic; under a small bound (the first byte picks it), no member comes back with
//! a long name, long link or PAX record larger than the bound; and the bounded reader sees what
//! tar-rs sees (same members, same bytes, same error), up to the record it refuses: it follows
//! the archive's framing exactly.
#![no_main]

use std::io::{self, Read};

use libfuzzer_sys::fuzz_target;
use ocibuild::tarbound::{self, Bounded};

/// What a reader gives: per member (path, link, size, first bytes of content, PAX bytes), then
/// the error it stopped on.
type Listing = (Vec<(Vec<u8>, Option<Vec<u8>>, u64, Vec<u8>, usize)>, Option<io::Error>);

fn list<R: Read>(mut ar: tar::Archive<R>) -> Listing {
    let mut out = Vec::new();
    let entries = match ar.entries() {
        Ok(e) => e,
        Err(e) => return (out, Some(e)),
    };
    for e in entries {
        let mut e = match e {
            Ok(e) => e,
            Err(e) => return (out, Some(e)),
        };
        let path = e.path_bytes().into_owned();
        let link = e.link_name_bytes().map(|l| l.into_owned());
        let pax = match e.pax_extensions() {
            Ok(Some(p)) => p.map(|x| x.map(|x| x.key_bytes().len() + x.value_bytes().len()))
                .filter_map(Result::ok)
                .sum(),
            _ => 0,
        };
        let size = e.size();
        // A sparse member can claim far more than the input holds: read a little of each.
        let mut head = Vec::new();
        if let Err(err) = (&mut e).take(4096).read_to_end(&mut head) {
            return (out, Some(err));
        }
        out.push((path, link, size, head, pax));
    }
    (out, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, tar)) = data.split_first() else {
        return;
    };
    let limit = match pick % 4 {
        0 => 64,
        1 => 512,
        2 => 4096,
        _ => tarbound::MAX_RECORD,
    };
    let (plain, plain_err) = list(tar::Archive::new(tar));
    let (bounded, bounded_err) = list(tar::Archive::new(Bounded::new(tar, limit)));
    for (path, link, _, _, pax) in &bounded {
        // A long name or link is its L/K or PAX record's data (within the bound), else the
        // header's own fields (at most 256 bytes with the ustar prefix).
        assert!(path.len() as u64 <= limit.max(256), "path of {} bytes", path.len());
        if let Some(l) = link {
            assert!(l.len() as u64 <= limit.max(256), "link of {} bytes", l.len());
        }
        assert!(*pax as u64 <= limit, "PAX record of {pax} bytes");
    }
    match bounded_err.as_ref().and_then(tarbound::as_bound_error) {
        // Refused: what came before is what tar-rs gave.
        Some(_) => {
            assert!(bounded.len() <= plain.len(), "more members than tar-rs");
            assert!(bounded[..] == plain[..bounded.len()], "members differ from tar-rs");
        }
        None => {
            assert!(bounded == plain, "members differ from tar-rs");
            assert_eq!(
                bounded_err.map(|e| e.to_string()),
                plain_err.map(|e| e.to_string()),
                "another error than tar-rs's"
            );
        }
    }
    let one: Vec<(String, Box<dyn Read + '_>)> = vec![("layer".into(), Box::new(tar))];
    let _ = ocibuild::apt::scan_base(one);
    let _ = ocibuild::audit::tarmeta::index_layer(tar);
    if pick & 0x80 != 0 {
        if let Ok(dir) = tempfile::tempdir() {
            let _ = ocibuild::unpack::unpack_tar(tar, (pick as usize >> 2) & 1, dir.path());
        }
    }
});
