//! Fixtures for the apt tests: .debs built here (ar + control.tar.gz + data.tar.xz), Packages
//! (plain, .gz, .xz), Release with SHA256, InRelease clearsigned (or Release.gpg detached) with a
//! key made here by rPGP, served by a tiny HTTP server on 127.0.0.1.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use ocibuild::apt::{
    build_layer, download, load_source, AptError, DebInput, Installed, LayerRequest, Locked,
    Request, Source, SourceIndex, UsrMerge,
};
use ocibuild::digest::Digest;
use ocibuild::http::HttpFetcher;
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
pub enum Data {
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
    /// A regular file of any bytes (a library): path, content, mode.
    Binary(&'static str, &'static [u8], u32),
}

#[derive(Clone)]
pub struct Deb {
    pub name: &'static str,
    pub version: &'static str,
    pub arch: &'static str,
    pub fields: Vec<(&'static str, &'static str)>,
    pub data: Vec<Data>,
    /// `xz`, `gz` or `zst`: the data.tar compression.
    pub data_comp: &'static str,
    /// Maintainer scripts in control.tar: (name, body).
    pub scripts: Vec<(&'static str, &'static str)>,
}

pub fn deb(name: &'static str, version: &'static str) -> Deb {
    Deb {
        name,
        version,
        arch: "amd64",
        fields: Vec::new(),
        data_comp: "xz",
        scripts: Vec::new(),
        data: vec![
            Data::Dir("./"),
            Data::Dir("./usr/"),
            Data::Dir("./usr/share/"),
            Data::Dir("./usr/share/doc/"),
        ],
    }
}

impl Deb {
    pub fn field(mut self, k: &'static str, v: &'static str) -> Deb {
        self.fields.push((k, v));
        self
    }
    pub fn arch(mut self, a: &'static str) -> Deb {
        self.arch = a;
        self
    }
    pub fn comp(mut self, c: &'static str) -> Deb {
        self.data_comp = c;
        self
    }
    pub fn script(mut self, name: &'static str, body: &'static str) -> Deb {
        self.scripts.push((name, body));
        self
    }

    pub fn data(mut self, d: Data) -> Deb {
        self.data.push(d);
        self
    }
    pub fn control(&self) -> String {
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

pub fn tar_header(path: &[u8], size: u64, mode: u32, kind: tar::EntryType) -> tar::Header {
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

pub fn build_deb(d: &Deb, data_order_reversed: bool) -> Vec<u8> {
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
            Data::Binary(p, c, _) => Some(format!(
                "{}  {}\n",
                &Digest::of(c).hex()[..32],
                p.trim_start_matches("./")
            )),
            _ => None,
        })
        .collect::<String>();
    let scripts: Vec<(String, String)> = d
        .scripts
        .iter()
        .map(|(n, b)| (format!("./{n}"), b.to_string()))
        .collect();
    let fixed = [
        ("./control".to_string(), control.clone()),
        ("./md5sums".to_string(), md5sums.clone()),
    ];
    for (name, body) in fixed.iter().chain(&scripts) {
        let mode = if name.ends_with("control") || name.ends_with("md5sums") {
            0o644
        } else {
            0o755
        };
        let mut h = tar_header(
            name.as_bytes(),
            body.len() as u64,
            mode,
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
            Data::Binary(p, c, mode) => (
                tar_header(p.as_bytes(), c.len() as u64, *mode, tar::EntryType::Regular),
                c,
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

pub fn keygen(seed: u64) -> SignedSecretKey {
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
pub fn keygen_with_subkey(seed: u64) -> SignedSecretKey {
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

pub fn public_armor(k: &SignedSecretKey) -> String {
    SignedPublicKey::from(k.clone())
        .to_armored_string(ArmorOptions::default())
        .unwrap()
}

pub enum Signing<'a> {
    InRelease(&'a SignedSecretKey),
    /// InRelease signed by the key's first (signing) subkey.
    InReleaseSubkey(&'a SignedSecretKey),
    Detached(&'a SignedSecretKey),
    Unsigned,
}

pub struct Repo {
    pub root: PathBuf,
    pub url: String,
}

pub fn xz(data: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

pub fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Writes the repository under `root` and serves it.
pub fn make_repo(root: &Path, debs: &[Deb], signing: Signing<'_>, reversed: bool) -> Repo {
    let pool = root.join("pool/main");
    fs_err::create_dir_all(&pool).unwrap();
    // amd64's index (with `all`), and arm64's when a .deb is built for it.
    let mut packages = String::new();
    let mut arm64 = String::new();
    for d in debs {
        let bytes = build_deb(d, reversed);
        let file = format!("pool/main/{}_{}_{}.deb", d.name, d.version, d.arch);
        fs_err::write(root.join(&file), &bytes).unwrap();
        let entry = format!(
            "{}Filename: {file}\nSize: {}\nSHA256: {}\n\n",
            d.control(),
            bytes.len(),
            Digest::of(&bytes).hex()
        );
        if d.arch != "arm64" {
            packages.push_str(&entry);
        }
        if d.arch == "arm64" || d.arch == "all" {
            arm64.push_str(&entry);
        }
    }
    if debs.iter().any(|d| d.arch == "arm64") {
        write_dists_arches(root, &[("amd64", &packages), ("arm64", &arm64)], signing);
    } else {
        write_dists(root, &packages, signing);
    }
    Repo {
        root: root.to_path_buf(),
        url: serve(root.to_path_buf()),
    }
}

/// The .debs built into `root`'s `pool/main`, and their Packages entries (amd64 and `all`).
pub fn write_pool(root: &Path, debs: &[Deb]) -> String {
    fs_err::create_dir_all(root.join("pool/main")).unwrap();
    let mut packages = String::new();
    for d in debs {
        let bytes = build_deb(d, false);
        let file = format!("pool/main/{}_{}_{}.deb", d.name, d.version, d.arch);
        fs_err::write(root.join(&file), &bytes).unwrap();
        packages.push_str(&format!(
            "{}Filename: {file}\nSize: {}\nSHA256: {}\n\n",
            d.control(),
            bytes.len(),
            Digest::of(&bytes).hex()
        ));
    }
    packages
}

/// A repository of an index only (no .debs): `packages` as its main/binary-amd64 Packages
/// (plain, .gz and .xz), signed as `signing` says, and served.
pub fn make_index_repo(root: &Path, packages: &str, signing: Signing<'_>) -> Repo {
    write_dists(root, packages, signing);
    Repo {
        root: root.to_path_buf(),
        url: serve(root.to_path_buf()),
    }
}

/// Writes `dists/stable`: the Packages index in three compressions, and the Release over them.
pub fn write_dists(root: &Path, packages: &str, signing: Signing<'_>) {
    write_dists_arches(root, &[("amd64", packages)], signing);
}

/// [`write_dists`] with one Packages index per architecture.
pub fn write_dists_arches(root: &Path, arches: &[(&str, &str)], signing: Signing<'_>) {
    write_dists_dated(
        root,
        arches,
        signing,
        "Date: Thu, 01 Jan 1970 00:00:00 UTC\n",
    );
}

/// [`write_dists_arches`] with `dated` as the Release's date fields (`Date: …\nValid-Until:
/// …\n`, or nothing).
pub fn write_dists_dated(root: &Path, arches: &[(&str, &str)], signing: Signing<'_>, dated: &str) {
    let indices: Vec<(&str, &str, &str)> = arches.iter().map(|(a, p)| ("main", *a, *p)).collect();
    write_dists_with(root, &indices, signing, dated);
}

/// `dists/stable` with one Packages index (plain, .gz, .xz) per (component, architecture,
/// text) of `indices`, and `fields` (each `Name: value\n`) in the Release before its SHA256
/// list (`Acquire-By-Hash: yes\n`, `No-Support-for-Architecture-all: Packages\n`, dates).
/// `Architectures` and `Components` list those of `indices`, in order.
pub fn write_dists_with(
    root: &Path,
    indices: &[(&str, &str, &str)],
    signing: Signing<'_>,
    fields: &str,
) {
    let dists = root.join("dists/stable");
    let mut sums = String::new();
    let (mut names, mut comps): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for (comp, arch, packages) in indices {
        if !names.contains(arch) {
            names.push(arch);
        }
        if !comps.contains(comp) {
            comps.push(comp);
        }
        fs_err::create_dir_all(dists.join(format!("{comp}/binary-{arch}"))).unwrap();
        for (name, bytes) in [
            (
                format!("{comp}/binary-{arch}/Packages"),
                packages.as_bytes().to_vec(),
            ),
            (
                format!("{comp}/binary-{arch}/Packages.gz"),
                gz(packages.as_bytes()),
            ),
            (
                format!("{comp}/binary-{arch}/Packages.xz"),
                xz(packages.as_bytes()),
            ),
        ] {
            fs_err::write(dists.join(&name), &bytes).unwrap();
            sums.push_str(&format!(
                " {} {} {name}\n",
                Digest::of(&bytes).hex(),
                bytes.len()
            ));
        }
    }
    let release = format!(
        "Origin: Test\nLabel: Test\nSuite: stable\nCodename: testy\nArchitectures: {}\n\
         Components: {}\n{fields}SHA256:\n{sums}",
        names.join(" "),
        comps.join(" ")
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
            fs_err::write(dists.join("InRelease"), text).unwrap();
        }
        Signing::InReleaseSubkey(k) => {
            let sub = &k.secret_subkeys[0].key;
            let msg =
                CleartextSignedMessage::sign(&mut rng, &release, sub, &Password::empty()).unwrap();
            let text = msg.to_armored_string(ArmorOptions::default()).unwrap();
            fs_err::write(dists.join("InRelease"), text).unwrap();
        }
        Signing::Detached(k) => {
            fs_err::write(dists.join("Release"), &release).unwrap();
            let sig = DetachedSignature::sign_binary_data(
                &mut rng,
                &k.primary_key,
                &Password::empty(),
                HashAlgorithm::Sha256,
                release.as_bytes(),
            )
            .unwrap();
            let text = sig.to_armored_string(ArmorOptions::default()).unwrap();
            fs_err::write(dists.join("Release.gpg"), text).unwrap();
        }
        Signing::Unsigned => fs_err::write(dists.join("Release"), &release).unwrap(),
    }
}

/// Each Packages file under `root`'s `dists/stable/COMP/binary-ARCH/` copied to
/// `by-hash/SHA256/<its sha256>` beside it, as an archive with `Acquire-By-Hash: yes` has.
pub fn add_by_hash(root: &Path) {
    for comp in fs_err::read_dir(root.join("dists/stable")).unwrap() {
        let comp = comp.unwrap().path();
        if !comp.is_dir() {
            continue;
        }
        for bin in fs_err::read_dir(&comp).unwrap() {
            let bin = bin.unwrap().path();
            let by_hash = bin.join("by-hash/SHA256");
            fs_err::create_dir_all(&by_hash).unwrap();
            for f in fs_err::read_dir(&bin).unwrap() {
                let f = f.unwrap().path();
                if f.is_file() {
                    let bytes = fs_err::read(&f).unwrap();
                    fs_err::write(by_hash.join(Digest::of(&bytes).hex()), bytes).unwrap();
                }
            }
        }
    }
}

/// The paths a [`serve_logged`] server was asked for, in order.
pub type RequestLog = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A minimal HTTP/1.1 file server on 127.0.0.1 (one thread per connection, Connection: close).
pub fn serve(root: PathBuf) -> String {
    serve_logged(root).0
}

/// [`serve`], recording the path of each request.
pub fn serve_logged(root: PathBuf) -> (String, RequestLog) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let log = RequestLog::default();
    let log2 = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let root = root.clone();
            let log = log2.clone();
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
                log.lock().unwrap().push(path.to_string());
                let rel = path.trim_start_matches('/');
                let mut file = root.join(rel);
                // A directory serves its index.json (as a PEP 691 page) or index.html.
                let mut ctype = "application/octet-stream";
                if file.is_dir() {
                    if file.join("index.json").is_file() {
                        file = file.join("index.json");
                        ctype = "application/vnd.pypi.simple.v1+json";
                    } else {
                        file = file.join("index.html");
                        ctype = "text/html";
                    }
                }
                let body = if rel.split('/').any(|c| c == "..") {
                    None
                } else {
                    fs_err::read(&file).ok().filter(|_| file.is_file())
                };
                let _ = match body {
                    Some(b) => stream
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                b.len()
                            )
                            .as_bytes(),
                        )
                        .and_then(|()| stream.write_all(&b)),
                    None => stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    ),
                };
            });
        }
    });
    (format!("http://{addr}"), log)
}

pub fn source(repo: &Repo, key: Option<&Path>) -> Source {
    Source {
        url: repo.url.clone(),
        suite: "stable".into(),
        components: vec!["main".into()],
        architecture: "amd64".into(),
        snapshot: None,
        signed_by: key.map(Path::to_path_buf),
        allow_unsigned: false,
        check_valid_until: true,
        mirrors: Vec::new(),
    }
}

pub fn write_key(dir: &Path, name: &str, k: &SignedSecretKey) -> PathBuf {
    let p = dir.join(name);
    fs_err::write(&p, public_armor(k)).unwrap();
    p
}

pub fn req(s: &str) -> Request {
    Request::parse(s).unwrap()
}

pub fn names(locked: &[Locked]) -> Vec<String> {
    locked
        .iter()
        .map(|l| format!("{}={}", l.name, l.version))
        .collect()
}

/// The package universe most tests use.
pub fn universe() -> Vec<Deb> {
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

pub const BASE_STATUS: &str = "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\n\
Architecture: amd64\n\nPackage: oldpkg\nStatus: deinstall ok config-files\nVersion: 0.9\n\n";

pub struct Fixture {
    pub _dir: tempfile::TempDir,
    pub repo: Repo,
    pub key: PathBuf,
    pub other_key: PathBuf,
    pub store: Store,
}

pub fn fixture(debs: &[Deb], reversed: bool) -> Fixture {
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

pub fn load(f: &Fixture) -> Vec<SourceIndex> {
    let fetcher = HttpFetcher::new().unwrap();
    vec![load_source(
        &fetcher,
        &source(&f.repo, Some(&f.key)),
        &std::env::temp_dir(),
    )
    .unwrap()]
}

pub fn base() -> Installed {
    let mut i = Installed::new();
    i.add_status(BASE_STATUS, "base var/lib/dpkg/status")
        .unwrap();
    i
}

pub fn layer_opts() -> LayerRequest {
    LayerRequest {
        layer: LayerOptions {
            epoch: 0,
            compression: Compression::None,
            threads: 2,
        },
        usr_merge: UsrMerge::all(),
        scratch: false,
        dpkg_db: false,
        cuda: None,
        drop: Default::default(),
    }
}

pub fn build(
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
    build_layer(&f.store, &debs, req, &|_| {})
}

/// (path, type, mode, uid, link, content) of every entry of an uncompressed layer blob.
pub fn listing(store: &Store, digest: &Digest) -> BTreeMap<String, (char, u32, String, Vec<u8>)> {
    let mut a = tar::Archive::new(fs_err::File::open(store.blob_path(digest)).unwrap());
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

pub const CERT_A: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
pub const CERT_B: &str = "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----";

/// A small Debian: libc6 2.36, a fake python3.12, ca-certificates, and two packages for the
/// error cases.
pub fn python_universe() -> Vec<Deb> {
    vec![
        deb("libc6", "2.36-9+deb12u4")
            .field("Multi-Arch", "same")
            .data(Data::Dir("./usr/lib/"))
            .data(Data::File("./usr/lib/libc.so.6", "ELF libc", 0o755)),
        deb("python3.12-minimal", "3.12.1-1")
            .field("Depends", "libc6 (>= 2.34)")
            .data(Data::Dir("./usr/bin/"))
            .data(Data::File("./usr/bin/python3.12", "#!fake python\n", 0o755)),
        deb("python3", "3.12.1-1")
            .field("Depends", "python3.12-minimal (>= 3.12.1)")
            .data(Data::Dir("./usr/bin/"))
            .data(Data::Symlink("./usr/bin/python3", "python3.12")),
        deb("ca-certificates", "20230311")
            .arch("all")
            .data(Data::Dir("./usr/share/ca-certificates/"))
            .data(Data::Dir("./usr/share/ca-certificates/mozilla/"))
            .data(Data::File(
                "./usr/share/ca-certificates/mozilla/B.crt",
                CERT_B,
                0o644,
            ))
            .data(Data::File(
                "./usr/share/ca-certificates/mozilla/A.crt",
                CERT_A,
                0o644,
            )),
        deb("tool", "1.0").data(Data::File("./usr/share/doc/tool.txt", "tool\n", 0o644)),
        deb("needs-missing", "1.0").field("Depends", "tool (>= 2.0)"),
    ]
}

/// The recipe's `[[apt.source]]` table for the fixture's repository, signed with `key`.
/// `DIR/app.toml`: an image for linux/amd64 on scratch with the fixture's archive (verified
/// with `key`) as its one source, `[apt] packages`, then `extra` as it is.
pub fn apt_recipe(dir: &Path, f: &Fixture, key: &Path, packages: &[&str], extra: &str) -> PathBuf {
    let list: Vec<String> = packages.iter().map(|p| format!("\"{p}\"")).collect();
    let text = format!(
        "[image]\nname = \"example.com/apt\"\nplatform = \"linux/amd64\"\n\n{}\n[apt]\npackages = [{}]\n{extra}",
        source_toml(f, key),
        list.join(", ")
    );
    let p = dir.join("app.toml");
    fs_err::write(&p, text).unwrap();
    p
}

pub fn source_toml(f: &Fixture, key: &Path) -> String {
    format!(
        "[[apt.source]]\nurl = \"{}\"\nsuite = \"stable\"\ncomponents = [\"main\"]\nsigned-by = \"{}\"\n",
        f.repo.url,
        key.display()
    )
}
