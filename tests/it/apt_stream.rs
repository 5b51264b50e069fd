//! The streamed Packages index (crates/apt/src/apt/index.rs) against a signed repository this test
//! generates: an index of many paragraphs in every shape the format allows reads as written,
//! in each compression; an index that is not the one the signed Release vouches for is
//! refused, whatever its content, and nothing of it is used.

use crate::aptfix;
use aptfix::*;

use ocibuild::apt::{load_source, resolve, AptError, Installed, Package};
use ocibuild::http::HttpFetcher;

/// Paragraphs in the index.
const N: usize = 5_000;

fn sha(i: usize) -> String {
    format!("{i:064x}")
}

/// An index of `N` packages (and `N / 10` of another architecture, to be dropped), with long
/// descriptions, continuation lines (space and tab), CRLF paragraphs, several blank lines and
/// whitespace-only lines between paragraphs, and no newline at its very end.
fn big_index() -> String {
    let mut s = String::new();
    for i in 0..N {
        let sep = match i % 5 {
            0 => "\n\n\n",
            1 => "\n \t\n",
            _ => "\n",
        };
        let eol = if i % 7 == 3 { "\r\n" } else { "\n" };
        let mut p = format!("Package: pkg{i}\nVersion: 1:{i}.0-1\nArchitecture: amd64\n");
        if i + 1 < N {
            // The next one, across a continuation line, with a dropped alternative.
            p.push_str(&format!(
                "Depends: nosuch{i} |\n pkg{} (>= 1:{}.0),\n\tbase\n",
                i + 1,
                i + 1
            ));
        }
        if i % 3 == 0 {
            p.push_str(&format!("Provides: virt{}, virt-v (= {i})\n", i % 100));
        }
        p.push_str(&format!(
            "Filename: pool/main/p/pkg{i}/pkg{i}_{i}.0-1_amd64.deb\nSize: {}\nSHA256: {}\n\
             Maintainer: Someone <someone@example.com>\nTag: role::program, x::y\n\
             Description: package {i}\n {}\n .\n second paragraph\n",
            1000 + i,
            sha(i),
            "a long description line ".repeat(8)
        ));
        s.push_str(&p.replace('\n', eol));
        s.push_str(sep);
        if i % 10 == 0 {
            s.push_str(&format!(
                "Package: pkg{i}\nVersion: 9\nArchitecture: arm64\nFilename: x\nSize: 1\n\
                 SHA256: {}\n\n",
                sha(i)
            ));
        }
    }
    s.push_str(&format!(
        "Package: base\nVersion: 1\nArchitecture: all\nFilename: pool/main/b/base.deb\n\
         Size: 1\nSHA256: {}",
        sha(N)
    ));
    s
}

fn summary(p: &Package) -> String {
    format!(
        "{} {} {} {} {} {} {} {:?}",
        p.name,
        p.version,
        p.architecture,
        p.filename,
        p.size,
        p.sha256,
        p.depends,
        p.provides
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    )
}

#[test]
fn many_paragraphs_read_as_written_in_every_compression() {
    let dir = tempfile::tempdir().unwrap();
    let k = keygen(11);
    let key = write_key(dir.path(), "k.asc", &k);
    let repo = make_index_repo(&dir.path().join("r"), &big_index(), Signing::InRelease(&k));
    let fetcher = HttpFetcher::new().unwrap();
    let src = source(&repo, Some(&key));

    let idx = load_source(&fetcher, &src, &std::env::temp_dir()).unwrap();
    assert_eq!(
        idx.packages().unwrap().len(),
        N + 1,
        "arm64 entries dropped"
    );
    for (i, p) in idx.packages().unwrap().iter().take(N).enumerate() {
        assert_eq!(&*p.name, format!("pkg{i}"));
        assert_eq!(p.version.as_str(), format!("1:{i}.0-1"));
        assert_eq!(&*p.architecture, "amd64");
        assert_eq!(p.size, 1000 + i as u64);
        assert_eq!(p.sha256.hex(), sha(i));
        assert_eq!(
            &*p.filename,
            format!("pool/main/p/pkg{i}/pkg{i}_{i}.0-1_amd64.deb")
        );
        assert_eq!(p.provides.len(), if i % 3 == 0 { 2 } else { 0 });
        let deps = p.depends().unwrap();
        if i + 1 < N {
            let names: Vec<Vec<&str>> = deps
                .iter()
                .map(|g| g.iter().map(|d| d.name.as_str()).collect())
                .collect();
            let next = format!("pkg{}", i + 1);
            assert_eq!(
                names,
                [vec![format!("nosuch{i}").as_str(), &next], vec!["base"]]
            );
        } else {
            assert!(deps.is_empty());
        }
    }
    let last = &idx.packages().unwrap()[N];
    assert_eq!((&*last.name, &*last.architecture), ("base", "all"));
    assert_eq!(last.sha256.hex(), sha(N), "the last line, with no newline");

    // The resolver walks the chain from the middle to the end.
    let locked = resolve(
        std::slice::from_ref(&idx),
        "amd64",
        &[req(&format!("pkg{}", N - 50))],
        &Installed::new(),
    )
    .unwrap();
    assert_eq!(locked.len(), 51);
    assert!(locked.iter().any(|l| l.name == "base"));

    // The same packages from the .gz and from the uncompressed index.
    let want: Vec<String> = idx.packages().unwrap().iter().map(summary).collect();
    let main = repo.root.join("dists/stable/main/binary-amd64");
    for drop in ["Packages.xz", "Packages.gz"] {
        fs_err::remove_file(main.join(drop)).unwrap();
        let got = load_source(&fetcher, &src, &std::env::temp_dir()).unwrap();
        let got: Vec<String> = got.packages().unwrap().iter().map(summary).collect();
        assert!(got == want, "without {drop}: the packages differ");
    }
}

#[test]
fn an_index_the_release_does_not_vouch_for_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let k = keygen(12);
    let key = write_key(dir.path(), "k.asc", &k);
    let text = big_index();
    let repo = make_index_repo(&dir.path().join("r"), &text, Signing::InRelease(&k));
    let fetcher = HttpFetcher::new().unwrap();
    let src = source(&repo, Some(&key));
    let xz_path = repo.root.join("dists/stable/main/binary-amd64/Packages.xz");
    let good = fs_err::read(&xz_path).unwrap();
    assert_eq!(
        load_source(&fetcher, &src, &std::env::temp_dir())
            .unwrap()
            .packages()
            .unwrap()
            .len(),
        N + 1
    );

    let refused = |bytes: &[u8], why: &str| {
        fs_err::write(&xz_path, bytes).unwrap();
        match load_source(&fetcher, &src, &std::env::temp_dir()) {
            Err(AptError::HashMismatch(m)) => {
                assert!(m.what.contains("Packages.xz"), "{why}: {}", m.what);
                assert_eq!(m.expected_size, good.len() as u64, "{why}");
                m.found_size
            }
            Err(other) => panic!("{why}: {other}"),
            Ok(_) => panic!("{why}: accepted"),
        }
    };
    // A well-formed index with one package's hash changed (what an attacker would serve):
    // it parses to the end, and is dropped.
    let evil = text.replacen(&sha(7), &"e".repeat(64), 1);
    refused(&xz(evil.as_bytes()), "another valid index");
    // Valid compression, broken content: the hash is the error, not the syntax.
    refused(
        &xz(format!("{text}\nnot a field\n").as_bytes()),
        "broken content",
    );
    // Bytes flipped in the middle: the decompressor fails first, the hash is still the error.
    let mut flipped = good.clone();
    let n = flipped.len();
    flipped[n / 2] ^= 0x10;
    refused(&flipped, "flipped bytes");
    // Cut short, and too long.
    assert_eq!(refused(&good[..n - 100], "truncated"), n as u64 - 100);
    let mut long = good.clone();
    long.extend_from_slice(&good);
    assert_eq!(refused(&long, "too long"), 2 * n as u64);

    // A broken .xz is never a reason to fall back to the .gz; the good one reads again.
    fs_err::write(&xz_path, &good).unwrap();
    assert_eq!(
        load_source(&fetcher, &src, &std::env::temp_dir())
            .unwrap()
            .packages()
            .unwrap()
            .len(),
        N + 1
    );
}
