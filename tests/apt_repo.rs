//! apt/ end to end against an apt repository this test generates: .debs built here (ar +
//! control.tar.gz + data.tar.xz), Packages (plain, .gz, .xz), Release with SHA256, InRelease
//! clearsigned (or Release.gpg detached) with a key made here by rPGP, served by a tiny HTTP
//! server on 127.0.0.1. No other network.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use ocibuild::apt::{
    build_layer, download, load_source, resolve, AptError, DebInput, HttpFetcher, Installed,
    LayerRequest, Locked, Request, Source, SourceIndex, UsrMerge,
};
use ocibuild::digest::Digest;
use ocibuild::layer::{Compression, LayerOptions};
use ocibuild::store::Store;
use pgp::composed::{
    ArmorOptions, CleartextSignedMessage, DetachedSignature, EncryptionCaps, KeyType,
    SecretKeyParamsBuilder, SignedPublicKey, SignedSecretKey, SubkeyParamsBuilder,
};
use pgp::crypto::hash::HashAlgorithm;
use pgp::types::Password;
use rand::SeedableRng;

// ---------------------------------------------------------------------------------------------
// .deb construction

#[derive(Clone)]
enum Data {
    Dir(&'static str),
    File(&'static str, &'static str, u32),
    Symlink(&'static str, &'static str),
    Hardlink(&'static str, &'static str),
    /// A regular file whose tar name is written raw (bypassing the tar crate's checks).
    RawName(&'static str),
    /// A regular file with an owner: path, content, mode, uid, gid.
    Owned(&'static str, &'static str, u32, u64, u64),
    /// A character device node.
    Device(&'static str),
}

#[derive(Clone)]
struct Deb {
    name: &'static str,
    version: &'static str,
    arch: &'static str,
    fields: Vec<(&'static str, &'static str)>,
    data: Vec<Data>,
    /// `xz`, `gz` or `zst`: the data.tar compression.
    data_comp: &'static str,
}

fn deb(name: &'static str, version: &'static str) -> Deb {
    Deb {
        name,
        version,
        arch: "amd64",
        fields: Vec::new(),
        data_comp: "xz",
        data: vec![
            Data::Dir("./"),
            Data::Dir("./usr/"),
            Data::Dir("./usr/share/"),
            Data::Dir("./usr/share/doc/"),
        ],
    }
}

impl Deb {
    fn field(mut self, k: &'static str, v: &'static str) -> Deb {
        self.fields.push((k, v));
        self
    }
    fn arch(mut self, a: &'static str) -> Deb {
        self.arch = a;
        self
    }
    fn comp(mut self, c: &'static str) -> Deb {
        self.data_comp = c;
        self
    }
    fn data(mut self, d: Data) -> Deb {
        self.data.push(d);
        self
    }
    fn control(&self) -> String {
        let mut s = format!(
            "Package: {}\nVersion: {}\nArchitecture: {}\nMaintainer: Test <t@example.com>\n",
            self.name, self.version, self.arch
        );
        for (k, v) in &self.fields {
            s.push_str(&format!("{k}: {v}\n"));
        }
        s.push_str(&format!(
            "Description: test package {}\n A longer description.\n .\n Second paragraph.\n",
            self.name
        ));
        s
    }
}

fn tar_header(path: &[u8], size: u64, mode: u32, kind: tar::EntryType) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.as_old_mut().name[..path.len()].copy_from_slice(path);
    h.set_size(size);
    h.set_mode(mode);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(1_600_000_000);
    h.set_entry_type(kind);
    h
}

fn build_deb(d: &Deb, data_order_reversed: bool) -> Vec<u8> {
    // control.tar.gz
    let mut ctl = tar::Builder::new(Vec::new());
    let control = d.control();
    let md5sums = d
        .data
        .iter()
        .filter_map(|e| match e {
            Data::File(p, c, _) => Some(format!(
                "{}  {}\n",
                &Digest::of(c.as_bytes()).hex()[..32],
                p.trim_start_matches("./")
            )),
            _ => None,
        })
        .collect::<String>();
    for (name, body) in [("./control", &control), ("./md5sums", &md5sums)] {
        let mut h = tar_header(
            name.as_bytes(),
            body.len() as u64,
            0o644,
            tar::EntryType::Regular,
        );
        h.set_cksum();
        ctl.append(&h, body.as_bytes()).unwrap();
    }
    let ctl = ctl.into_inner().unwrap();
    let ctl_gz = gz(&ctl);

    // data.tar.xz
    let mut tb = tar::Builder::new(Vec::new());
    let mut entries = d.data.clone();
    if data_order_reversed {
        entries.reverse();
    }
    for e in &entries {
        let (mut h, body): (tar::Header, &[u8]) = match e {
            Data::Dir(p) => (
                tar_header(p.as_bytes(), 0, 0o755, tar::EntryType::Directory),
                b"",
            ),
            Data::File(p, c, mode) => (
                tar_header(p.as_bytes(), c.len() as u64, *mode, tar::EntryType::Regular),
                c.as_bytes(),
            ),
            Data::RawName(p) => (
                tar_header(p.as_bytes(), 1, 0o644, tar::EntryType::Regular),
                b"x",
            ),
            Data::Owned(p, c, mode, uid, gid) => {
                let mut h =
                    tar_header(p.as_bytes(), c.len() as u64, *mode, tar::EntryType::Regular);
                h.set_uid(*uid);
                h.set_gid(*gid);
                (h, c.as_bytes())
            }
            Data::Device(p) => {
                let mut h = tar_header(p.as_bytes(), 0, 0o600, tar::EntryType::Char);
                h.set_device_major(1).unwrap();
                h.set_device_minor(3).unwrap();
                (h, b"")
            }
            Data::Symlink(p, t) => {
                let mut h = tar_header(p.as_bytes(), 0, 0o777, tar::EntryType::Symlink);
                h.set_link_name(t).unwrap();
                (h, b"")
            }
            Data::Hardlink(p, t) => {
                let mut h = tar_header(p.as_bytes(), 0, 0o644, tar::EntryType::Link);
                h.set_link_name(t).unwrap();
                (h, b"")
            }
        };
        h.set_cksum();
        tb.append(&h, body).unwrap();
    }
    let data = tb.into_inner().unwrap();
    let data_name = format!("data.tar.{}", d.data_comp);
    let data_c = match d.data_comp {
        "xz" => xz(&data),
        "gz" => gz(&data),
        "zst" => zstd::encode_all(&data[..], 3).unwrap(),
        other => panic!("compression {other}"),
    };

    // ar
    let mut ar = b"!<arch>\n".to_vec();
    for (name, body) in [
        ("debian-binary", &b"2.0\n"[..]),
        ("control.tar.gz", &ctl_gz[..]),
        (data_name.as_str(), &data_c[..]),
    ] {
        ar.extend_from_slice(
            format!(
                "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                0,
                0,
                0,
                "100644",
                body.len()
            )
            .as_bytes(),
        );
        ar.extend_from_slice(body);
        if body.len() % 2 == 1 {
            ar.push(b'\n');
        }
    }
    ar
}

// ---------------------------------------------------------------------------------------------
// Repository, keys, server

fn keygen(seed: u64) -> SignedSecretKey {
    let mut params = SecretKeyParamsBuilder::default();
    params
        .key_type(KeyType::Ed25519Legacy)
        .can_certify(true)
        .can_sign(true)
        .can_encrypt(EncryptionCaps::None)
        .primary_user_id("Test Archive <archive@example.com>".into());
    params
        .build()
        .unwrap()
        .generate(rand::rngs::StdRng::seed_from_u64(seed))
        .unwrap()
}

/// A key whose primary only certifies, with a signing subkey (how many archive keys look).
fn keygen_with_subkey(seed: u64) -> SignedSecretKey {
    let mut sub = SubkeyParamsBuilder::default();
    sub.key_type(KeyType::Ed25519Legacy)
        .can_sign(true)
        .can_encrypt(EncryptionCaps::None)
        .can_authenticate(false);
    let mut params = SecretKeyParamsBuilder::default();
    params
        .key_type(KeyType::Ed25519Legacy)
        .can_certify(true)
        .can_sign(false)
        .can_encrypt(EncryptionCaps::None)
        .primary_user_id("Test Archive <archive@example.com>".into())
        .subkeys(vec![sub.build().unwrap()]);
    params
        .build()
        .unwrap()
        .generate(rand::rngs::StdRng::seed_from_u64(seed))
        .unwrap()
}

fn public_armor(k: &SignedSecretKey) -> String {
    SignedPublicKey::from(k.clone())
        .to_armored_string(ArmorOptions::default())
        .unwrap()
}

enum Signing<'a> {
    InRelease(&'a SignedSecretKey),
    /// InRelease signed by the key's first (signing) subkey.
    InReleaseSubkey(&'a SignedSecretKey),
    Detached(&'a SignedSecretKey),
    Unsigned,
}

struct Repo {
    root: PathBuf,
    url: String,
}

fn xz(data: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Writes the repository under `root` and serves it.
fn make_repo(root: &Path, debs: &[Deb], signing: Signing<'_>, reversed: bool) -> Repo {
    let pool = root.join("pool/main");
    let dists = root.join("dists/stable");
    std::fs::create_dir_all(&pool).unwrap();
    std::fs::create_dir_all(dists.join("main/binary-amd64")).unwrap();
    let mut packages = String::new();
    for d in debs {
        let bytes = build_deb(d, reversed);
        let file = format!("pool/main/{}_{}_{}.deb", d.name, d.version, d.arch);
        std::fs::write(root.join(&file), &bytes).unwrap();
        packages.push_str(&d.control());
        packages.push_str(&format!(
            "Filename: {file}\nSize: {}\nSHA256: {}\n\n",
            bytes.len(),
            Digest::of(&bytes).hex()
        ));
    }
    let mut sums = String::new();
    for (name, bytes) in [
        ("main/binary-amd64/Packages", packages.as_bytes().to_vec()),
        ("main/binary-amd64/Packages.gz", gz(packages.as_bytes())),
        ("main/binary-amd64/Packages.xz", xz(packages.as_bytes())),
    ] {
        std::fs::write(dists.join(name), &bytes).unwrap();
        sums.push_str(&format!(
            " {} {} {name}\n",
            Digest::of(&bytes).hex(),
            bytes.len()
        ));
    }
    let release = format!(
        "Origin: Test\nLabel: Test\nSuite: stable\nCodename: testy\nArchitectures: amd64\n\
         Components: main\nDate: Thu, 01 Jan 1970 00:00:00 UTC\nSHA256:\n{sums}"
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    match signing {
        Signing::InRelease(k) => {
            let msg = CleartextSignedMessage::sign(
                &mut rng,
                &release,
                &k.primary_key,
                &Password::empty(),
            )
            .unwrap();
            let text = msg.to_armored_string(ArmorOptions::default()).unwrap();
            std::fs::write(dists.join("InRelease"), text).unwrap();
        }
        Signing::InReleaseSubkey(k) => {
            let sub = &k.secret_subkeys[0].key;
            let msg =
                CleartextSignedMessage::sign(&mut rng, &release, sub, &Password::empty()).unwrap();
            let text = msg.to_armored_string(ArmorOptions::default()).unwrap();
            std::fs::write(dists.join("InRelease"), text).unwrap();
        }
        Signing::Detached(k) => {
            std::fs::write(dists.join("Release"), &release).unwrap();
            let sig = DetachedSignature::sign_binary_data(
                &mut rng,
                &k.primary_key,
                &Password::empty(),
                HashAlgorithm::Sha256,
                release.as_bytes(),
            )
            .unwrap();
            let text = sig.to_armored_string(ArmorOptions::default()).unwrap();
            std::fs::write(dists.join("Release.gpg"), text).unwrap();
        }
        Signing::Unsigned => std::fs::write(dists.join("Release"), &release).unwrap(),
    }
    Repo {
        root: root.to_path_buf(),
        url: serve(root.to_path_buf()),
    }
}

/// A minimal HTTP/1.1 file server on 127.0.0.1 (one thread per connection, Connection: close).
fn serve(root: PathBuf) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let root = root.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    return;
                }
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if line == "\r\n" || line == "\n" => break,
                        Ok(_) => {}
                    }
                }
                let path = first.split_whitespace().nth(1).unwrap_or("/");
                let rel = path.trim_start_matches('/');
                let file = root.join(rel);
                let body = if rel.split('/').any(|c| c == "..") {
                    None
                } else {
                    std::fs::read(&file).ok().filter(|_| file.is_file())
                };
                let _ = match body {
                    Some(b) => stream
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                b.len()
                            )
                            .as_bytes(),
                        )
                        .and_then(|_| stream.write_all(&b)),
                    None => stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    ),
                };
            });
        }
    });
    format!("http://{addr}")
}

fn source(repo: &Repo, key: Option<&Path>) -> Source {
    Source {
        url: repo.url.clone(),
        suite: "stable".into(),
        components: vec!["main".into()],
        architecture: "amd64".into(),
        snapshot: None,
        signed_by: key.map(Path::to_path_buf),
        allow_unsigned: false,
    }
}

fn write_key(dir: &Path, name: &str, k: &SignedSecretKey) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, public_armor(k)).unwrap();
    p
}

fn req(s: &str) -> Request {
    Request::parse(s).unwrap()
}

fn names(locked: &[Locked]) -> Vec<String> {
    locked
        .iter()
        .map(|l| format!("{}={}", l.name, l.version))
        .collect()
}

/// The package universe most tests use.
fn universe() -> Vec<Deb> {
    vec![
        deb("app", "1.0-1")
            .field("Pre-Depends", "libc6 (>= 2.30)")
            .field(
                "Depends",
                "libfoo (>= 2.0), libfoo (<< 3.0), nosuch | libalt, libfoo | libalt2, \
                 mail-transport-agent, libabi (>= 2), pyish:any, oldpkg, tool",
            )
            .data(Data::Dir("./usr/bin/"))
            .data(Data::File("./usr/bin/app", "#!/bin/sh\necho app\n", 0o755))
            .data(Data::File("./usr/share/doc/app.txt", "app docs\n", 0o644)),
        deb("libfoo", "1.0").data(Data::File("./usr/share/doc/libfoo", "1.0\n", 0o644)),
        deb("libfoo", "2.1").data(Data::File("./usr/share/doc/libfoo", "2.1\n", 0o644)),
        deb("libfoo", "3.0~rc1").data(Data::File("./usr/share/doc/libfoo", "3~rc1\n", 0o644)),
        deb("libfoo", "3.0").data(Data::File("./usr/share/doc/libfoo", "3.0\n", 0o644)),
        deb("libalt", "1"),
        deb("libalt2", "1"),
        deb("tinymta", "0.5")
            .field("Provides", "mail-transport-agent")
            .data(Data::Dir("./bin/"))
            .data(Data::Dir("./sbin/"))
            .data(Data::File("./bin/mta", "mta binary\n", 0o755))
            .data(Data::Hardlink("./sbin/sendmail", "./bin/mta"))
            .data(Data::Symlink("./sbin/mailq", "../bin/mta")),
        deb("bigmta", "9").field("Provides", "mail-transport-agent (= 9)"),
        deb("abi-old", "1").field("Provides", "libabi (= 1.5)"),
        deb("abi-new", "1").field("Provides", "libabi (= 2.5)"),
        deb("abi-unversioned", "1").field("Provides", "libabi"),
        deb("pyish", "3.11").field("Multi-Arch", "allowed"),
        deb("libc6", "2.37-1"),
        deb("oldpkg", "1"),
        deb("tool", "1.0")
            .arch("all")
            .data(Data::File("./usr/share/doc/z-second", "same\n", 0o644))
            .data(Data::Hardlink(
                "./usr/share/doc/a-first",
                "./usr/share/doc/z-second",
            )),
        deb("needy", "1").field("Depends", "middle (= 1.0)"),
        deb("middle", "1.0").field("Depends", "libfoo (>= 9)"),
    ]
}

const BASE_STATUS: &str = "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\n\
Architecture: amd64\n\nPackage: oldpkg\nStatus: deinstall ok config-files\nVersion: 0.9\n\n";

struct Fixture {
    _dir: tempfile::TempDir,
    repo: Repo,
    key: PathBuf,
    other_key: PathBuf,
    store: Store,
}

fn fixture(debs: &[Deb], reversed: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let k = keygen(1);
    let key = write_key(dir.path(), "archive.asc", &k);
    let other_key = write_key(dir.path(), "other.asc", &keygen(2));
    let repo = make_repo(
        &dir.path().join("repo"),
        debs,
        Signing::InRelease(&k),
        reversed,
    );
    let store = Store::open(dir.path().join("store")).unwrap();
    Fixture {
        _dir: dir,
        repo,
        key,
        other_key,
        store,
    }
}

fn load(f: &Fixture) -> Vec<SourceIndex> {
    let fetcher = HttpFetcher::new().unwrap();
    vec![load_source(&fetcher, &source(&f.repo, Some(&f.key))).unwrap()]
}

fn base() -> Installed {
    let mut i = Installed::new();
    i.add_status(BASE_STATUS, "base var/lib/dpkg/status")
        .unwrap();
    i
}

fn layer_opts() -> LayerRequest {
    LayerRequest {
        layer: LayerOptions {
            epoch: 0,
            compression: Compression::None,
            threads: 2,
        },
        usr_merge: UsrMerge::all(),
    }
}

fn build(
    f: &Fixture,
    locked: &[Locked],
    req: &LayerRequest,
) -> Result<ocibuild::apt::AptLayer, AptError> {
    let fetcher = HttpFetcher::new().unwrap();
    let debs: Vec<DebInput> = locked
        .iter()
        .map(|l| DebInput {
            locked: l.clone(),
            path: download(&fetcher, &f.store, l).unwrap(),
        })
        .collect();
    build_layer(&f.store, &debs, req)
}

/// (path, type, mode, uid, link, content) of every entry of an uncompressed layer blob.
fn listing(store: &Store, digest: &Digest) -> BTreeMap<String, (char, u32, String, Vec<u8>)> {
    let mut a = tar::Archive::new(std::fs::File::open(store.blob_path(digest)).unwrap());
    let mut out = BTreeMap::new();
    let mut order = Vec::new();
    for e in a.entries().unwrap() {
        let mut e = e.unwrap();
        let path = String::from_utf8(e.path_bytes().into_owned()).unwrap();
        let h = e.header().clone();
        assert_eq!(h.mtime().unwrap(), 0, "{path}");
        let link = e
            .link_name_bytes()
            .map(|b| String::from_utf8(b.into_owned()).unwrap())
            .unwrap_or_default();
        let mut body = Vec::new();
        e.read_to_end(&mut body).unwrap();
        order.push(path.clone());
        out.insert(
            path,
            (
                h.entry_type().as_byte() as char,
                h.mode().unwrap(),
                link,
                body,
            ),
        );
    }
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "entries sorted by path bytes");
    out
}

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn resolves_alternatives_provides_versions_arch_and_base() {
    let f = fixture(&universe(), false);
    let idx = load(&f);
    let locked = resolve(&idx, "amd64", &[req("app")], &base()).unwrap();
    assert_eq!(
        names(&locked),
        [
            "abi-new=1", // libabi (>= 2): the versioned provide that satisfies it
            "app=1.0-1",
            "bigmta=9",       // mail-transport-agent: providers by name, the first wins
            "libalt=1",       // nosuch | libalt: the first satisfiable alternative
            "libfoo=3.0~rc1", // >= 2.0 and << 3.0: the ~ rule
            "oldpkg=1",       // in the base status, but only config-files: installed
            "pyish=3.11",     // :any with Multi-Arch: allowed
            "tool=1.0",       // Architecture: all
        ]
    );
    // libc6 (>= 2.30) is satisfied by the base's 2.36: not installed again; libalt2 not
    // needed because libfoo satisfies `libfoo | libalt2`.
    assert!(!locked
        .iter()
        .any(|l| l.name == "libc6" || l.name == "libalt2"));
    let tool = locked.iter().find(|l| l.name == "tool").unwrap();
    assert_eq!(tool.architecture, "all");
    assert_eq!(
        tool.url(),
        format!("{}/pool/main/tool_1.0_all.deb", f.repo.url)
    );

    // A constraint on the request itself; and without a base, libc6 comes from the archive.
    let locked = resolve(&idx, "amd64", &[req("libfoo (<< 2.5)")], &Installed::new()).unwrap();
    assert_eq!(names(&locked), ["libfoo=2.1"]);
    let locked = resolve(&idx, "amd64", &[req("libfoo=1.0")], &Installed::new()).unwrap();
    assert_eq!(names(&locked), ["libfoo=1.0"]);
    let locked = resolve(&idx, "amd64", &[req("app")], &Installed::new()).unwrap();
    assert!(locked
        .iter()
        .any(|l| l.name == "libc6" && l.version == "2.37-1"));
    // A request the base satisfies is not installed again.
    assert!(resolve(&idx, "amd64", &[req("libc6")], &base())
        .unwrap()
        .is_empty());
    // The lock entry round-trips through JSON.
    let json = serde_json::to_string(&locked).unwrap();
    assert_eq!(serde_json::from_str::<Vec<Locked>>(&json).unwrap(), locked);
}

#[test]
fn unknown_package_and_unsatisfiable_chain() {
    let f = fixture(&universe(), false);
    let idx = load(&f);
    let err = resolve(&idx, "amd64", &[req("ap")], &base()).unwrap_err();
    assert!(matches!(err, AptError::UnknownPackage { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("`ap`") && msg.contains("app"), "{msg}");

    let err = resolve(&idx, "amd64", &[req("needy")], &base()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("needy → middle (= 1.0) → libfoo (>= 9): no version satisfies it"),
        "{msg}"
    );
    assert!(msg.contains("available: 3.0, 3.0~rc1, 2.1, 1.0"), "{msg}");

    let err = resolve(&idx, "amd64", &[req("libfoo (>> 3.0)")], &base()).unwrap_err();
    assert!(
        err.to_string()
            .contains("libfoo (>> 3.0): no version satisfies"),
        "{err}"
    );
}

#[test]
fn layer_merged_usr_status_records_hardlinks() {
    let f = fixture(&universe(), false);
    let idx = load(&f);
    let locked = resolve(&idx, "amd64", &[req("app"), req("tinymta")], &base()).unwrap();
    let layer = build(&f, &locked, &layer_opts()).unwrap();
    assert_eq!(layer.digest, layer.diff_id);
    let l = listing(&f.store, &layer.digest);
    // Merged /usr: bin/ and sbin/ are never directories of the layer.
    assert!(
        !l.keys()
            .any(|p| p.starts_with("bin") || p.starts_with("sbin")),
        "{:?}",
        l.keys()
    );
    assert_eq!(l["usr/bin/mta"].0, '0');
    assert_eq!(l["usr/bin/mta"].1, 0o755);
    assert_eq!(l["usr/sbin/sendmail"].0, '1');
    assert_eq!(l["usr/sbin/sendmail"].2, "usr/bin/mta");
    assert_eq!(l["usr/sbin/mailq"].0, '2');
    assert_eq!(l["usr/sbin/mailq"].2, "../bin/mta");
    // Hardlink group led by the first path in sorted order.
    assert_eq!(l["usr/share/doc/a-first"].0, '0');
    assert_eq!(l["usr/share/doc/a-first"].3, b"same\n");
    assert_eq!(l["usr/share/doc/z-second"].0, '1');
    assert_eq!(l["usr/share/doc/z-second"].2, "usr/share/doc/a-first");
    // status.d records.
    let rec = String::from_utf8(l["var/lib/dpkg/status.d/app"].3.clone()).unwrap();
    assert!(
        rec.starts_with("Package: app\nStatus: install ok installed\nVersion: 1.0-1\n"),
        "{rec}"
    );
    assert!(
        rec.contains("Description: test package app\n A longer description.\n"),
        "{rec}"
    );
    let md5 = String::from_utf8(l["var/lib/dpkg/status.d/tinymta.md5sums"].3.clone()).unwrap();
    assert!(md5.ends_with("  usr/bin/mta\n"), "{md5}");
    for p in [
        "var/",
        "var/lib/",
        "var/lib/dpkg/",
        "var/lib/dpkg/status.d/",
    ] {
        assert_eq!(l[p].0, '5', "{p}");
    }
    // The layer's status.d records read back as an installed set.
    let mut installed = Installed::new();
    for (p, (_, _, _, body)) in &l {
        if p.starts_with("var/lib/dpkg/status.d/") && !p.ends_with(".md5sums") && !p.ends_with('/')
        {
            installed
                .add_status(std::str::from_utf8(body).unwrap(), p)
                .unwrap();
        }
    }
    assert!(installed.contains("tinymta") && installed.contains("app"));

    // Without merged /usr, paths stay where the package put them.
    let mut plain = layer_opts();
    plain.usr_merge = UsrMerge::none();
    let layer = build(&f, &locked, &plain).unwrap();
    let l = listing(&f.store, &layer.digest);
    assert!(l.contains_key("bin/") && l.contains_key("bin/mta"));
}

#[test]
fn layer_is_deterministic_across_builds_and_data_tar_order() {
    let debs = universe();
    let a = fixture(&debs, false);
    let b = fixture(&debs, true);
    let mut ids = Vec::new();
    for f in [&a, &a, &b] {
        let idx = load(f);
        let locked = resolve(&idx, "amd64", &[req("app"), req("tinymta")], &base()).unwrap();
        let mut opts = layer_opts();
        opts.layer.compression = Compression::Gzip;
        let layer = build(f, &locked, &opts).unwrap();
        ids.push((layer.diff_id, layer.digest));
    }
    assert_eq!(ids[0], ids[1]);
    assert_eq!(
        ids[0], ids[2],
        "shuffled data tar order must not change the layer"
    );
}

#[test]
fn signatures_bad_key_tampered_detached_unsigned() {
    let dir = tempfile::tempdir().unwrap();
    let k = keygen(1);
    let key = write_key(dir.path(), "k.asc", &k);
    let other = write_key(dir.path(), "o.asc", &keygen(2));
    let fetcher = HttpFetcher::new().unwrap();
    let debs = vec![deb("a", "1")];

    // InRelease: the right key verifies, another key does not.
    let repo = make_repo(&dir.path().join("r1"), &debs, Signing::InRelease(&k), false);
    assert_eq!(
        load_source(&fetcher, &source(&repo, Some(&key)))
            .unwrap()
            .packages
            .len(),
        1
    );
    let err = load_source(&fetcher, &source(&repo, Some(&other))).unwrap_err();
    assert!(matches!(err, AptError::BadSignature { .. }), "{err}");
    assert!(err.to_string().contains("InRelease"), "{err}");
    // A tampered signed text fails.
    let p = repo.root.join("dists/stable/InRelease");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("Codename: testy", "Codename: tasty");
    std::fs::write(&p, text).unwrap();
    let err = load_source(&fetcher, &source(&repo, Some(&key))).unwrap_err();
    assert!(matches!(err, AptError::BadSignature { .. }), "{err}");

    // Signed by a signing subkey bound to the primary in the key file.
    let ks = keygen_with_subkey(4);
    let key_s = write_key(dir.path(), "ks.asc", &ks);
    let repo = make_repo(
        &dir.path().join("r4"),
        &debs,
        Signing::InReleaseSubkey(&ks),
        false,
    );
    assert_eq!(
        load_source(&fetcher, &source(&repo, Some(&key_s)))
            .unwrap()
            .packages
            .len(),
        1
    );
    let err = load_source(&fetcher, &source(&repo, Some(&key))).unwrap_err();
    assert!(matches!(err, AptError::BadSignature { .. }), "{err}");

    // Release + Release.gpg (no InRelease).
    let repo = make_repo(&dir.path().join("r2"), &debs, Signing::Detached(&k), false);
    assert_eq!(
        load_source(&fetcher, &source(&repo, Some(&key)))
            .unwrap()
            .packages
            .len(),
        1
    );
    let err = load_source(&fetcher, &source(&repo, Some(&other))).unwrap_err();
    assert!(matches!(err, AptError::BadSignature { .. }), "{err}");

    // Unsigned: refused without a key unless allowed; a key with no signature is refused.
    let repo = make_repo(&dir.path().join("r3"), &debs, Signing::Unsigned, false);
    let err = load_source(&fetcher, &source(&repo, None)).unwrap_err();
    assert!(matches!(err, AptError::Unsigned { .. }), "{err}");
    let mut s = source(&repo, None);
    s.allow_unsigned = true;
    assert_eq!(load_source(&fetcher, &s).unwrap().packages.len(), 1);
    let err = load_source(&fetcher, &source(&repo, Some(&key))).unwrap_err();
    assert!(matches!(err, AptError::BadSignature { .. }), "{err}");
}

#[test]
fn packages_hash_mismatch_and_fallback() {
    let f = fixture(&[deb("a", "1")], false);
    let fetcher = HttpFetcher::new().unwrap();
    let xz = f
        .repo
        .root
        .join("dists/stable/main/binary-amd64/Packages.xz");
    // Missing .xz (not found): falls back to .gz.
    let saved = std::fs::read(&xz).unwrap();
    std::fs::remove_file(&xz).unwrap();
    assert_eq!(
        load_source(&fetcher, &source(&f.repo, Some(&f.key)))
            .unwrap()
            .packages
            .len(),
        1
    );
    // A corrupted .xz is an error, never a fallback.
    let mut bad = saved.clone();
    let n = bad.len();
    bad[n / 2] ^= 1;
    std::fs::write(&xz, &bad).unwrap();
    let err = load_source(&fetcher, &source(&f.repo, Some(&f.key))).unwrap_err();
    assert!(matches!(err, AptError::HashMismatch(_)), "{err}");
    assert!(err.to_string().contains("Packages.xz"), "{err}");
    // Longer than the Release says: a mismatch naming both sizes.
    let mut long = saved.clone();
    long.extend_from_slice(b"trailing");
    std::fs::write(&xz, &long).unwrap();
    let err = load_source(&fetcher, &source(&f.repo, Some(&f.key))).unwrap_err();
    match &err {
        AptError::HashMismatch(m) => {
            assert_eq!(m.expected_size, saved.len() as u64);
            assert_eq!(m.found_size, saved.len() as u64 + 8);
        }
        other => panic!("{other}"),
    }
    let _ = f.other_key;
}

#[test]
fn deb_hash_mismatch_and_missing_file() {
    let f = fixture(
        &[deb("a", "1").data(Data::File("./usr/share/doc/a", "a\n", 0o644))],
        false,
    );
    let idx = load(&f);
    let locked = resolve(&idx, "amd64", &[req("a")], &Installed::new()).unwrap();
    let fetcher = HttpFetcher::new().unwrap();
    let file = f.repo.root.join(&locked[0].filename);
    let good = std::fs::read(&file).unwrap();

    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 10] ^= 0xff;
    std::fs::write(&file, &bad).unwrap();
    let err = download(&fetcher, &f.store, &locked[0]).unwrap_err();
    assert!(matches!(err, AptError::HashMismatch(_)), "{err}");
    assert!(err.to_string().contains("package a 1"), "{err}");
    assert!(!f.store.has_blob(&locked[0].sha256));
    assert_eq!(
        std::fs::read_dir(f.store.root().join("tmp"))
            .unwrap()
            .count(),
        0
    );
    // Truncated: a size mismatch.
    std::fs::write(&file, &good[..n - 1]).unwrap();
    let err = download(&fetcher, &f.store, &locked[0]).unwrap_err();
    assert!(
        matches!(err, AptError::HashMismatch(ref m) if m.found_size == n as u64 - 1),
        "{err}"
    );

    std::fs::remove_file(&file).unwrap();
    let err = download(&fetcher, &f.store, &locked[0]).unwrap_err();
    assert!(matches!(err, AptError::MissingDeb { .. }), "{err}");
    assert!(
        err.to_string().contains("package a 1") && err.to_string().contains("update the lock"),
        "{err}"
    );

    // A .deb on disk that is not what the lock says is refused by build_layer too.
    let p = f.store.root().join("not-the-deb");
    std::fs::write(&p, &bad).unwrap();
    let err = build_layer(
        &f.store,
        &[DebInput {
            locked: locked[0].clone(),
            path: p,
        }],
        &layer_opts(),
    )
    .unwrap_err();
    assert!(matches!(err, AptError::HashMismatch(_)), "{err}");
}

#[test]
fn unsafe_paths_in_data_tar_are_errors_and_nothing_is_written() {
    for (bad, what) in [
        (Data::RawName("./usr/../../etc/passwd"), ".."),
        (Data::RawName("/etc/passwd"), "absolute"),
        (Data::Hardlink("./usr/x", "../../etc/shadow"), ".."),
        (Data::Device("./dev/null"), "device"),
    ] {
        let f = fixture(
            &[
                deb("good", "1").data(Data::File("./usr/share/doc/g", "g\n", 0o644)),
                deb("evil", "1").data(bad),
            ],
            false,
        );
        let idx = load(&f);
        let locked = resolve(
            &idx,
            "amd64",
            &[req("good"), req("evil")],
            &Installed::new(),
        )
        .unwrap();
        let err = build(&f, &locked, &layer_opts()).unwrap_err();
        assert!(matches!(err, AptError::DebPath { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("package evil") && msg.contains(what), "{msg}");
        // The store holds the two downloaded .debs and no layer.
        let mut blobs: Vec<String> = std::fs::read_dir(f.store.root().join("blobs/sha256"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        blobs.sort();
        let mut debs: Vec<String> = locked.iter().map(|l| l.sha256.hex()).collect();
        debs.sort();
        assert_eq!(blobs, debs, "no layer blob");
        assert_eq!(
            std::fs::read_dir(f.store.root().join("tmp"))
                .unwrap()
                .count(),
            0
        );
    }
}

#[test]
fn conflicting_files_between_packages() {
    let f = fixture(
        &[
            deb("one", "1").data(Data::File("./usr/share/doc/same", "x\n", 0o644)),
            deb("two", "1").data(Data::File("./usr/share/doc/same", "x\n", 0o644)),
            deb("three", "1").data(Data::File("./usr/share/doc/same", "y\n", 0o644)),
        ],
        false,
    );
    let idx = load(&f);
    let ok = resolve(&idx, "amd64", &[req("one"), req("two")], &Installed::new()).unwrap();
    build(&f, &ok, &layer_opts()).unwrap();
    // A symlink in one package, a directory or a file beneath it in another.
    for writer in [
        deb("writer", "1")
            .data(Data::Dir("./usr/share/doc/dir/"))
            .data(Data::File("./usr/share/doc/dir/passwd", "x\n", 0o644)),
        deb("writer", "1").data(Data::File("./usr/share/doc/dir/passwd", "x\n", 0o644)),
    ] {
        let g = fixture(
            &[
                deb("linker", "1").data(Data::Symlink("./usr/share/doc/dir", "/etc")),
                writer,
            ],
            false,
        );
        let gl = resolve(
            &load(&g),
            "amd64",
            &[req("linker"), req("writer")],
            &Installed::new(),
        )
        .unwrap();
        let err = build(&g, &gl, &layer_opts()).unwrap_err();
        assert!(matches!(err, AptError::PathConflict { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("/usr/share/doc/dir`")
                && msg.contains("linker 1")
                && msg.contains("writer 1"),
            "{msg}"
        );
    }

    let bad = resolve(
        &idx,
        "amd64",
        &[req("one"), req("three")],
        &Installed::new(),
    )
    .unwrap();
    let err = build(&f, &bad, &layer_opts()).unwrap_err();
    assert!(matches!(err, AptError::PathConflict { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("usr/share/doc/same") && msg.contains("one 1") && msg.contains("three 1"),
        "{msg}"
    );
}

#[test]
fn file_url_source() {
    let dir = tempfile::tempdir().unwrap();
    let k = keygen(3);
    let key = write_key(dir.path(), "k.asc", &k);
    let repo = make_repo(
        &dir.path().join("r"),
        &[deb("a", "1")],
        Signing::InRelease(&k),
        false,
    );
    let mut s = source(&repo, Some(&key));
    s.url = format!("file://{}", repo.root.display());
    let idx = load_source(&HttpFetcher::new().unwrap(), &s).unwrap();
    assert_eq!(idx.packages[0].name, "a");
    assert!(idx.packages[0].source_url.starts_with("file://"));
}

#[test]
fn data_tar_compressions_owners_and_modes() {
    let f = fixture(
        &[
            deb("zpkg", "1")
                .comp("zst")
                .data(Data::Dir("./usr/games/"))
                .data(Data::Owned("./usr/games/score", "0\n", 0o664, 0, 60))
                .data(Data::Owned("./usr/games/su-ish", "x\n", 0o4755, 0, 0)),
            deb("gpkg", "1").comp("gz").data(Data::Owned(
                "./usr/share/doc/g",
                "g\n",
                0o640,
                1000,
                1000,
            )),
        ],
        false,
    );
    let idx = load(&f);
    let locked = resolve(
        &idx,
        "amd64",
        &[req("zpkg"), req("gpkg")],
        &Installed::new(),
    )
    .unwrap();
    let layer = build(&f, &locked, &layer_opts()).unwrap();
    let mut a = tar::Archive::new(std::fs::File::open(f.store.blob_path(&layer.digest)).unwrap());
    let mut seen = BTreeMap::new();
    for e in a.entries().unwrap() {
        let e = e.unwrap();
        let h = e.header();
        let p = String::from_utf8(e.path_bytes().into_owned()).unwrap();
        seen.insert(p, (h.mode().unwrap(), h.uid().unwrap(), h.gid().unwrap()));
    }
    assert_eq!(seen["usr/games/score"], (0o664, 0, 60));
    assert_eq!(seen["usr/games/su-ish"], (0o4755, 0, 0));
    assert_eq!(seen["usr/share/doc/g"], (0o640, 1000, 1000));
    assert_eq!(seen["usr/games/"], (0o755, 0, 0));
}
