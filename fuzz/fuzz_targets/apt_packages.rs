//! Packages indices, the way `ocibuild lock` reads them: `apt::load_source` over a fake
//! archive whose (unsigned) Release vouches for the fuzz input as
//! `main/binary-amd64/Packages[.gz|.xz|.zst]` (first byte: which), streamed, decompressed and
//! parsed into the spill; then every package read back and its dependencies parsed, and the
//! resolver run on the first few names.
#![no_main]

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use ocibuild::apt::release::Source;
use ocibuild::apt::{load_source, resolve, Installed, Request};
use ocibuild::digest::Digest;
use ocibuild::http::{Fetcher, HttpError};

struct Archive {
    release: Vec<u8>,
    index_url: String,
    index: Vec<u8>,
}

impl Fetcher for Archive {
    fn open(&self, url: &str) -> Result<Option<Box<dyn Read + Send>>, HttpError> {
        let body = if url == "http://fuzz/debian/dists/stable/Release" {
            &self.release
        } else if url == self.index_url {
            &self.index
        } else {
            return Ok(None);
        };
        Ok(Some(Box::new(Cursor::new(body.clone()))))
    }
}

fn spill_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("fuzz-apt-")
            .tempdir()
            .expect("tempdir")
            .keep()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, index)) = data.split_first() else {
        return;
    };
    let name = match which % 4 {
        0 => "main/binary-amd64/Packages",
        1 => "main/binary-amd64/Packages.gz",
        2 => "main/binary-amd64/Packages.xz",
        _ => "main/binary-amd64/Packages.zst",
    };
    let release = format!(
        "Suite: stable\nCodename: stable\nSHA256:\n {} {} {name}\n",
        Digest::of(index).hex(),
        index.len()
    );
    let archive = Archive {
        release: release.into_bytes(),
        index_url: format!("http://fuzz/debian/dists/stable/{name}"),
        index: index.to_vec(),
    };
    let source = Source {
        url: "http://fuzz/debian".into(),
        suite: "stable".into(),
        components: vec!["main".into()],
        architecture: "amd64".into(),
        snapshot: None,
        signed_by: None,
        allow_unsigned: true,
        check_valid_until: true,
    };
    let idx = match load_source(&archive, &source, spill_dir()) {
        Ok(idx) => idx,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let packages = idx.packages().expect("the spill reads back");
    let mut names = Vec::new();
    for p in &packages {
        assert!(
            p.architecture.as_ref() == "amd64" || p.architecture.as_ref() == "all",
            "package of another architecture kept: {p:?}"
        );
        // Checked when the index was read, so parses again.
        p.depends().expect("depends checked at read time");
        let back = idx.named(&p.name).expect("named reads back");
        assert!(
            back.iter().any(|q| q.version == p.version),
            "{} not found by name",
            p.name
        );
        if names.len() < 3 && !names.contains(&p.name.to_string()) {
            names.push(p.name.to_string());
        }
    }
    let requests: Vec<Request> = names
        .into_iter()
        .map(|name| Request {
            name,
            constraint: None,
        })
        .collect();
    if let Ok(locked) = resolve(
        std::slice::from_ref(&idx),
        "amd64",
        &requests,
        &Installed::new(),
    ) {
        for l in &locked {
            assert!(
                packages.iter().any(|p| *p.name == *l.name),
                "{} was not in the index",
                l.name
            );
        }
    }
});
