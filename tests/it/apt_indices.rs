//! Indices as apt fetches them, and components: `Acquire-By-Hash` (the `by-hash/SHA256/…` path
//! first, the plain path when it is 404), a mismatch that says the mirror may be syncing,
//! `mirrors` (other archive roots of a source, for indices and .debs, never trusted for the
//! hashes), `No-Support-for-Architecture-all`, and a package that is in a component the source
//! does not list. Against archives the tests build and serve on 127.0.0.1 (tests/aptfix).

use crate::aptfix;
use crate::common;

use fs_err as fs;
use std::path::{Path, PathBuf};

use aptfix::{
    add_by_hash, deb, keygen, names, req, serve_logged, source, write_dists_with, write_key,
    write_pool, xz, Data, Deb, Repo, RequestLog, Signing,
};
use common::{ocibuild, run, run_ok, stdout, tempdir};
use ocibuild::apt::{
    components, download_from, load_source, resolve, AptError, Installed, Outcome, Source,
};
use ocibuild::digest::Digest;
use ocibuild::http::HttpFetcher;
use ocibuild::store::Store;
use serde_json::Value;

const XZ: &str = "dists/stable/main/binary-amd64/Packages.xz";

fn universe() -> Vec<Deb> {
    vec![
        deb("app", "1.0")
            .field("Depends", "libfoo (>= 1)")
            .data(Data::File("./usr/share/doc/app", "app\n", 0o644)),
        deb("libfoo", "1.2").data(Data::File("./usr/share/doc/libfoo", "libfoo\n", 0o644)),
    ]
}

/// An archive served on 127.0.0.1: its URL and the paths it was asked for.
struct Served {
    url: String,
    log: RequestLog,
}

impl Served {
    fn new(root: &Path) -> Served {
        let (url, log) = serve_logged(root.to_path_buf());
        Served { url, log }
    }

    fn asked(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

/// `root`: the universe's pool and a main/binary-amd64 index, the Release with `fields`,
/// signed by `k`. Returns the index text.
fn write_archive(root: &Path, k: &pgp::composed::SignedSecretKey, fields: &str) -> String {
    let packages = write_pool(root, &universe());
    write_dists_with(
        root,
        &[("main", "amd64", &packages)],
        Signing::InRelease(k),
        fields,
    );
    packages
}

/// The index a mirror in the middle of a sync serves: valid, but not what the Release says
/// (the archive's packages before `libfoo` came in).
fn stale_xz(packages: &str) -> Vec<u8> {
    let old: String = packages
        .split("\n\n")
        .filter(|p| p.starts_with("Package: app"))
        .map(|p| format!("{p}\n\n"))
        .collect();
    xz(old.as_bytes())
}

fn src(url: &str, key: &Path, mirrors: &[&str]) -> Source {
    let mut s = source(
        &Repo {
            root: PathBuf::new(),
            url: url.to_string(),
        },
        Some(key),
    );
    s.mirrors = mirrors
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    s
}

fn lock_names(s: &Source) -> Result<Vec<String>, AptError> {
    let fetcher = HttpFetcher::new().unwrap();
    let idx = load_source(&fetcher, s, &std::env::temp_dir())?;
    let locked = resolve(&[idx], "amd64", &[req("app")], &Installed::new())?;
    Ok(names(&locked))
}

#[test]
fn by_hash_is_fetched_first_and_a_stale_plain_index_is_passed_over() {
    let t = tempdir();
    let k = keygen(1);
    let key = write_key(t.path(), "k.asc", &k);
    let root = t.path().join("a");
    let packages = write_archive(&root, &k, "Acquire-By-Hash: yes\n");
    add_by_hash(&root);
    let good = fs::read(root.join(XZ)).unwrap();
    fs::write(root.join(XZ), stale_xz(&packages)).unwrap();
    let a = Served::new(&root);

    let got = lock_names(&src(&a.url, &key, &[])).unwrap();
    assert_eq!(got, ["app=1.0", "libfoo=1.2"]);
    let by_hash = format!(
        "/dists/stable/main/binary-amd64/by-hash/SHA256/{}",
        Digest::of(&good).hex()
    );
    let asked = a.asked();
    assert!(asked.contains(&by_hash), "{asked:?}");
    assert!(!asked.contains(&format!("/{XZ}")), "{asked:?}");

    // Through the CLI: `ocibuild lock` succeeds on the same archive.
    let r = recipe(t.path(), "r1", &a.url, &[], &key, &["main"], &["app"]);
    run_ok(ocibuild().arg("lock").arg(&r));
    let lock = fs::read_to_string(r.with_extension("lock")).unwrap();
    assert!(lock.contains("name = \"libfoo\""), "{lock}");
}

#[test]
fn without_acquire_by_hash_only_the_plain_path_is_fetched() {
    let t = tempdir();
    let k = keygen(1);
    let key = write_key(t.path(), "k.asc", &k);
    let root = t.path().join("a");
    write_archive(&root, &k, "");
    // The files are there, but the Release does not say so: apt does not ask for them.
    add_by_hash(&root);
    let a = Served::new(&root);
    assert_eq!(
        lock_names(&src(&a.url, &key, &[])).unwrap(),
        ["app=1.0", "libfoo=1.2"]
    );
    let asked = a.asked();
    assert!(asked.contains(&format!("/{XZ}")), "{asked:?}");
    assert!(!asked.iter().any(|p| p.contains("by-hash")), "{asked:?}");
}

#[test]
fn a_stale_index_without_a_by_hash_copy_says_the_mirror_may_be_syncing() {
    let t = tempdir();
    let k = keygen(1);
    let key = write_key(t.path(), "k.asc", &k);
    let root = t.path().join("a");
    let packages = write_archive(&root, &k, "Acquire-By-Hash: yes\n");
    let good = fs::read(root.join(XZ)).unwrap();
    let stale = stale_xz(&packages);
    fs::write(root.join(XZ), &stale).unwrap();
    let a = Served::new(&root);

    let err = lock_names(&src(&a.url, &key, &[])).unwrap_err();
    let text = err.to_string();
    let AptError::HashMismatch(m) = err else {
        panic!("{text}")
    };
    assert!(m.index);
    assert_eq!(
        (m.expected, m.expected_size),
        (Digest::of(&good), good.len() as u64)
    );
    assert_eq!(
        (m.found, m.found_size),
        (Digest::of(&stale), stale.len() as u64)
    );
    assert_eq!(m.url, format!("{}/{XZ}", a.url));
    // Both URLs, the by-hash one first (404), then the stale plain one.
    assert_eq!(m.tried.len(), 2, "{text}");
    assert!(m.tried[0].url.contains("/by-hash/SHA256/"), "{text}");
    assert_eq!(m.tried[0].outcome, Outcome::NotFound);
    for want in [
        "mirror sync in progress?".to_string(),
        Digest::of(&good).to_string(),
        Digest::of(&stale).to_string(),
        format!("{} bytes", good.len()),
        format!("{} bytes", stale.len()),
        m.tried[0].url.clone(),
        "`mirrors`".to_string(),
    ] {
        assert!(text.contains(&want), "{want} not in {text}");
    }
}

/// `DIR/NAME.toml`: the archive at `url` (with `mirrors`) as the one source.
fn recipe(
    dir: &Path,
    name: &str,
    url: &str,
    mirrors: &[&str],
    key: &Path,
    components: &[&str],
    packages: &[&str],
) -> PathBuf {
    let quote = |v: &[&str]| {
        v.iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mirrors = if mirrors.is_empty() {
        String::new()
    } else {
        format!("mirrors = [{}]\n", quote(mirrors))
    };
    let text = format!(
        "[image]\nname = \"example.com/mirrors\"\nplatform = \"linux/amd64\"\n\n\
         [[apt.source]]\nurl = \"{url}\"\n{mirrors}suite = \"stable\"\ncomponents = [{}]\n\
         signed-by = \"{}\"\n\n[apt]\npackages = [{}]\n",
        quote(components),
        key.display(),
        quote(packages)
    );
    let p = dir.join(format!("{name}.toml"));
    fs::write(&p, text).unwrap();
    p
}

fn build(recipe: &Path, out: &Path, cache: &Path, extra: &[&str]) -> Value {
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", cache)
            .args(["build", "--json", "-o"])
            .arg(out)
            .arg(recipe)
            .args(extra),
    );
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    run_ok(std::process::Command::new("cp").arg("-a").arg(from).arg(to));
}

#[test]
fn a_mirror_serves_what_the_primary_lacks_and_the_image_is_the_same() {
    let t = tempdir();
    let k = keygen(1);
    let key = write_key(t.path(), "k.asc", &k);
    let root = t.path().join("primary");
    let packages = write_archive(&root, &k, "");
    let primary = Served::new(&root);

    // A build from the good primary, without mirrors.
    let a = recipe(t.path(), "a", &primary.url, &[], &key, &["main"], &["app"]);
    let first = build(&a, &t.path().join("img-a"), &t.path().join("cache-a"), &[]);
    let lock_a = fs::read_to_string(a.with_extension("lock")).unwrap();

    // A mirror: the same archive. Then the primary goes mid-sync (a stale index) and loses a
    // .deb.
    let mroot = t.path().join("mirror");
    copy_dir(&root, &mroot);
    let mirror = Served::new(&mroot);
    fs::write(root.join(XZ), stale_xz(&packages)).unwrap();
    let libfoo = "pool/main/libfoo_1.2_amd64.deb";
    fs::remove_file(root.join(libfoo)).unwrap();

    // Mirrors are where, not what: adding them leaves the lock answering the recipe.
    let with = |name: &str| {
        recipe(
            t.path(),
            name,
            &primary.url,
            &[&mirror.url],
            &key,
            &["main"],
            &["app"],
        )
    };
    let a_again = with("a");
    assert_eq!(a_again, a);
    let o = run_ok(ocibuild().arg("lock").arg(&a));
    assert!(stdout(&o).contains("(unchanged)"), "{}", stdout(&o));

    // Without mirrors the stale primary is an error…
    let plain = recipe(
        t.path(),
        "plain",
        &primary.url,
        &[],
        &key,
        &["main"],
        &["app"],
    );
    let o = run(ocibuild().arg("lock").arg(&plain));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("mirror sync in progress?"), "{err}");

    // …with the mirror the lock succeeds, the index from the mirror, and records what the
    // good primary's lock recorded.
    let b = with("b");
    run_ok(
        ocibuild()
            .env("OCIBUILD_CACHE", t.path().join("cache-b"))
            .arg("lock")
            .arg(&b),
    );
    let lock_b = fs::read_to_string(b.with_extension("lock")).unwrap();
    assert_eq!(lock_b, lock_a);
    assert!(mirror.asked().contains(&format!("/{XZ}")));
    assert!(lock_b.contains(&primary.url) && !lock_b.contains(&mirror.url));

    // The build from that lock takes the .deb the primary lost from the mirror: the same
    // image as from the good primary.
    let second = build(
        &b,
        &t.path().join("img-b"),
        &t.path().join("cache-b"),
        &["--locked"],
    );
    assert!(mirror.asked().contains(&format!("/{libfoo}")));
    assert_eq!(second["manifest"], first["manifest"]);

    // Without mirrors the same build fails, naming the .deb's URL.
    fs::copy(a.with_extension("lock"), plain.with_extension("lock")).unwrap();
    let o = run(ocibuild()
        .env("OCIBUILD_CACHE", t.path().join("cache-c"))
        .args(["build", "--locked", "-o"])
        .arg(t.path().join("img-c"))
        .arg(&plain));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("libfoo") && err.contains(&format!("{}/{libfoo}", primary.url)),
        "{err}"
    );
}

#[test]
fn a_hostile_mirror_is_refused_the_sources_release_decides() {
    let t = tempdir();
    let k = keygen(1);
    let key = write_key(t.path(), "k.asc", &k);
    let root = t.path().join("primary");
    let packages = write_archive(&root, &k, "");
    let good = fs::read(root.join(XZ)).unwrap();
    // The mirror's own archive, signed with the same key, lists an index with another
    // libfoo: a Release of its own that vouches for it is not what is checked.
    let mroot = t.path().join("mirror");
    let evil = packages.replace("Version: 1.2", "Version: 9.9");
    write_pool(&mroot, &universe());
    write_dists_with(
        &mroot,
        &[("main", "amd64", &evil)],
        Signing::InRelease(&k),
        "",
    );
    let evil_xz = fs::read(mroot.join(XZ)).unwrap();
    fs::write(root.join(XZ), stale_xz(&packages)).unwrap();
    let primary = Served::new(&root);
    let mirror = Served::new(&mroot);

    let err = lock_names(&src(&primary.url, &key, &[&mirror.url])).unwrap_err();
    let text = err.to_string();
    let AptError::HashMismatch(m) = err else {
        panic!("{text}")
    };
    assert_eq!(m.expected, Digest::of(&good), "{text}");
    assert_eq!(m.url, format!("{}/{XZ}", primary.url));
    assert_eq!(m.tried.len(), 2, "{text}");
    assert_eq!(m.tried[1].url, format!("{}/{XZ}", mirror.url));
    assert_eq!(
        m.tried[1].outcome,
        Outcome::Mismatch {
            found: Digest::of(&evil_xz),
            size: evil_xz.len() as u64
        }
    );
    assert!(
        text.contains(&mirror.url) && text.contains(&primary.url),
        "{text}"
    );

    // A .deb the primary lacks and the mirror serves changed: refused against the lock.
    fs::write(root.join(XZ), &good).unwrap();
    let fetcher = HttpFetcher::new().unwrap();
    let idx = load_source(
        &fetcher,
        &src(&primary.url, &key, &[]),
        &std::env::temp_dir(),
    )
    .unwrap();
    let locked = resolve(&[idx], "amd64", &[req("libfoo")], &Installed::new()).unwrap();
    let file = &locked[0].filename;
    fs::remove_file(root.join(file)).unwrap();
    fs::write(mroot.join(file), b"not the .deb").unwrap();
    let store = Store::open(t.path().join("store")).unwrap();
    let mirrors = [mirror.url.clone()];
    let err = download_from(&fetcher, &store, &locked[0], &mirrors).unwrap_err();
    let text = err.to_string();
    let AptError::HashMismatch(m) = err else {
        panic!("{text}")
    };
    assert_eq!(m.expected, locked[0].sha256);
    assert!(!m.index);
    assert_eq!(m.tried[0].outcome, Outcome::NotFound, "{text}");
    assert!(!store.has_blob(&locked[0].sha256));
    // Missing everywhere: every URL named.
    fs::remove_file(mroot.join(file)).unwrap();
    let err = download_from(&fetcher, &store, &locked[0], &mirrors).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, AptError::MissingDeb { .. }), "{text}");
    assert!(
        text.contains(&format!("{}/{file}: not found", primary.url))
            && text.contains(&format!("{}/{file}: not found", mirror.url)),
        "{text}"
    );
}

#[test]
fn the_release_comes_from_a_mirror_only_when_the_primary_has_none_and_is_verified() {
    let t = tempdir();
    let k = keygen(1);
    let key = write_key(t.path(), "k.asc", &k);
    let mroot = t.path().join("mirror");
    write_archive(&mroot, &k, "");
    let mirror = Served::new(&mroot);
    // A primary with no Release at all (an empty directory served).
    let empty = t.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let primary = Served::new(&empty);

    let fetcher = HttpFetcher::new().unwrap();
    let s = src(&primary.url, &key, &[&mirror.url]);
    let idx = load_source(&fetcher, &s, &std::env::temp_dir()).unwrap();
    // The lock records the source's url, not the mirror's.
    assert_eq!(idx.source_url, primary.url);
    let locked = resolve(&[idx], "amd64", &[req("app")], &Installed::new()).unwrap();
    assert!(locked.iter().all(|l| l.source_url == primary.url));
    // The primary was asked first, for its Release and for each index.
    assert!(primary
        .asked()
        .contains(&"/dists/stable/InRelease".to_string()));

    // The mirror's Release is verified like the primary's: another key is an error, not a
    // Release to pass over.
    let other = write_key(t.path(), "other.asc", &keygen(2));
    let err = load_source(
        &fetcher,
        &src(&primary.url, &other, &[&mirror.url]),
        &std::env::temp_dir(),
    )
    .unwrap_err();
    assert!(matches!(err, AptError::BadSignature { .. }), "{err}");
    // None has one: every root named.
    let also_empty = Served::new(&empty);
    let err = load_source(
        &fetcher,
        &src(&primary.url, &key, &[&also_empty.url]),
        &std::env::temp_dir(),
    )
    .unwrap_err();
    assert!(matches!(err, AptError::ReleaseUnavailable { .. }), "{err}");
    assert!(
        err.to_string().contains(&primary.url) && err.to_string().contains(&also_empty.url),
        "{err}"
    );
}

#[test]
fn a_package_in_a_component_the_source_does_not_list_names_it() {
    let t = tempdir();
    let k = keygen(1);
    let key = write_key(t.path(), "k.asc", &k);
    let root = t.path().join("a");
    let main = write_pool(
        &root,
        &[
            deb("app", "1.0").field("Depends", "b43-fwcutter"),
            deb("tool", "1.0"),
        ],
    );
    let contrib = write_pool(&root, &[deb("b43-fwcutter", "1:019-14")]);
    let non_free = write_pool(&root, &[deb("unrar", "1:7.0.9-1")]);
    write_dists_with(
        &root,
        &[
            ("main", "amd64", &main),
            ("contrib", "amd64", &contrib),
            ("non-free", "amd64", &non_free),
        ],
        Signing::InRelease(&k),
        "",
    );
    let a = Served::new(&root);
    let fetcher = HttpFetcher::new().unwrap();
    let resolve_in = |comps: &[&str], pkgs: &[&str]| {
        let mut s = src(&a.url, &key, &[]);
        s.components = comps.iter().map(std::string::ToString::to_string).collect();
        let idx = vec![load_source(&fetcher, &s, &std::env::temp_dir()).unwrap()];
        let reqs: Vec<_> = pkgs.iter().map(|p| req(p)).collect();
        resolve(&idx, "amd64", &reqs, &Installed::new())
            .map(|l| names(&l))
            .map_err(|e| components::explain(&fetcher, &idx, e))
    };

    // A resolution that succeeds reads no other component.
    assert_eq!(resolve_in(&["main"], &["tool"]).unwrap(), ["tool=1.0"]);
    assert!(
        !a.asked()
            .iter()
            .any(|p| p.contains("contrib") || p.contains("non-free")),
        "{:?}",
        a.asked()
    );

    let err = resolve_in(&["main"], &["unrar"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "`unrar` is in `non-free` of stable ({}), which this source does not list: add it \
             to the source's `components`",
            a.url
        )
    );
    let err = resolve_in(&["main"], &["app"]).unwrap_err();
    assert!(
        matches!(&err, AptError::OtherComponent { name, component, chain, .. }
            if name == "b43-fwcutter" && component == "contrib" && chain.len() == 2),
        "{err}"
    );
    assert!(err.to_string().contains("(needed by app)"), "{err}");
    // A name no component has is still an unknown package.
    let err = resolve_in(&["main"], &["nosuch"]).unwrap_err();
    assert!(matches!(err, AptError::UnknownPackage { .. }), "{err}");
    // Listed, they resolve.
    assert_eq!(
        resolve_in(&["main", "contrib", "non-free"], &["app", "unrar"]).unwrap(),
        ["app=1.0", "b43-fwcutter=1:019-14", "unrar=1:7.0.9-1"]
    );

    // Through the CLI: the message names the component.
    let r = recipe(t.path(), "r", &a.url, &[], &key, &["main"], &["unrar"]);
    let o = run(ocibuild().arg("lock").arg(&r));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("`unrar` is in `non-free` of stable"), "{err}");
}

#[test]
fn no_support_for_architecture_all_skips_a_stale_binary_all() {
    let t = tempdir();
    let k = keygen(1);
    let key = write_key(t.path(), "k.asc", &k);
    let write = |root: &Path, fields: &str| {
        let amd64 = write_pool(root, &universe());
        // The `all` packages are in binary-amd64; binary-all's copy goes stale.
        write_dists_with(
            root,
            &[("main", "amd64", &amd64), ("main", "all", "")],
            Signing::InRelease(&k),
            fields,
        );
        let all = root.join("dists/stable/main/binary-all");
        for f in ["Packages", "Packages.gz", "Packages.xz"] {
            fs::write(all.join(f), b"stale").unwrap();
        }
    };
    let root = t.path().join("nosupport");
    write(&root, "No-Support-for-Architecture-all: Packages\n");
    let a = Served::new(&root);
    assert_eq!(
        lock_names(&src(&a.url, &key, &[])).unwrap(),
        ["app=1.0", "libfoo=1.2"]
    );
    assert!(!a.asked().iter().any(|p| p.contains("binary-all")));

    let root = t.path().join("plain");
    write(&root, "");
    let b = Served::new(&root);
    let err = lock_names(&src(&b.url, &key, &[])).unwrap_err();
    assert!(
        matches!(&err, AptError::HashMismatch(m) if m.what.contains("binary-all")),
        "{err}"
    );
}

#[test]
fn mirrors_are_checked_as_urls() {
    let t = tempdir();
    let k = keygen(1);
    let key = write_key(t.path(), "k.asc", &k);
    for (mirrors, want) in [
        (
            "[\"ftp://mirror.example/debian\"]",
            "invalid mirror `ftp://mirror.example/debian`: expected an https://, http:// or file:// URL",
        ),
        (
            "[\"http://127.0.0.1:9/debian\", \"http://127.0.0.1:9/debian/\"]",
            "`mirrors` lists `http://127.0.0.1:9/debian` twice",
        ),
        ("\"http://127.0.0.1:9/debian\"", "expected an array"),
    ] {
        let text = format!(
            "[image]\nname = \"example.com/m\"\nplatform = \"linux/amd64\"\n\n[[apt.source]]\n\
             url = \"http://127.0.0.1:9/x\"\nmirrors = {mirrors}\nsuite = \"stable\"\n\
             components = [\"main\"]\nsigned-by = \"{}\"\n\n[apt]\npackages = [\"app\"]\n",
            key.display()
        );
        let r = t.path().join("m.toml");
        fs::write(&r, text).unwrap();
        let o = run(ocibuild().arg("lock").arg(&r));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(err.contains(want), "{want}: {err}");
        // The line of the `mirrors` key.
        assert!(err.contains("m.toml:7:"), "{err}");
    }
}

/// A fetcher that records each URL it is asked for and whether it was there.
struct Logged {
    inner: HttpFetcher<'static>,
    log: std::sync::Mutex<Vec<(String, bool)>>,
}

impl ocibuild::http::Fetcher for Logged {
    fn open(
        &self,
        url: &str,
    ) -> Result<Option<ocibuild::http::Body<'_>>, ocibuild::http::HttpError> {
        let r = self.inner.open(url)?;
        self.log
            .lock()
            .unwrap()
            .push((url.to_string(), r.is_some()));
        Ok(r)
    }
}

/// Online (OCIBUILD_ONLINE=1): trixie from the Debian archive, as apt fetches it: the
/// `by-hash` indices (its Release says `Acquire-By-Hash: yes`), binary-all not fetched
/// (`No-Support-for-Architecture-all`), contrib and non-free packages, and the component
/// hint for a non-free package with only `main` listed, and the same for non-free-firmware.
#[test]
fn online_trixie_indices_by_hash_and_components() {
    if !common::online("reads trixie's indices from the Debian archive") {
        return;
    }
    let key = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes/keys/debian-trixie.asc");
    let fetcher = Logged {
        inner: HttpFetcher::new().unwrap(),
        log: Default::default(),
    };
    let trixie = |comps: &[&str]| Source {
        url: "https://deb.debian.org/debian".into(),
        suite: "trixie".into(),
        components: comps.iter().map(std::string::ToString::to_string).collect(),
        architecture: "amd64".into(),
        snapshot: None,
        signed_by: Some(key.clone()),
        allow_unsigned: false,
        check_valid_until: true,
        mirrors: Vec::new(),
    };
    let started = std::time::Instant::now();
    let idx = vec![load_source(&fetcher, &trixie(&["main"]), &std::env::temp_dir()).unwrap()];
    let locked = resolve(
        &idx,
        "amd64",
        &[req("python3"), req("ca-certificates"), req("libstdc++6")],
        &Installed::new(),
    )
    .unwrap();
    let asked = fetcher.log.lock().unwrap().clone();
    common::notice(&format!(
        "trixie main: {} packages locked in {:.1}s; fetched: {asked:?}",
        locked.len(),
        started.elapsed().as_secs_f64()
    ));
    assert!(locked.iter().any(|l| l.name.starts_with("python3.13")));
    assert!(
        asked
            .iter()
            .any(|(u, found)| *found && u.contains("main/binary-amd64/by-hash/SHA256/")),
        "{asked:?}"
    );
    assert!(
        !asked.iter().any(|(u, _)| u.contains("binary-all")),
        "{asked:?}"
    );

    // Only main listed: `unrar` is in non-free, and the message says so.
    let err = resolve(&idx, "amd64", &[req("unrar")], &Installed::new()).unwrap_err();
    let err = components::explain(&fetcher, &idx, err);
    common::notice(&format!("unrar with main only: {err}"));
    assert!(
        matches!(&err, AptError::OtherComponent { component, .. } if component == "non-free"),
        "{err}"
    );

    // main, contrib and non-free: they resolve.
    let started = std::time::Instant::now();
    let idx = vec![load_source(
        &fetcher,
        &trixie(&["main", "contrib", "non-free"]),
        &std::env::temp_dir(),
    )
    .unwrap()];
    let locked = resolve(
        &idx,
        "amd64",
        &[req("unrar"), req("b43-fwcutter")],
        &Installed::new(),
    )
    .unwrap();
    common::notice(&format!(
        "trixie main+contrib+non-free: {} in {:.1}s",
        names(&locked).join(" "),
        started.elapsed().as_secs_f64()
    ));
    assert!(locked.iter().any(|l| l.filename.contains("pool/non-free/")));
    assert!(locked.iter().any(|l| l.filename.contains("pool/contrib/")));

    // non-free-firmware: not listed, the hint names it; listed, its packages resolve.
    let err = resolve(&idx, "amd64", &[req("amd64-microcode")], &Installed::new()).unwrap_err();
    let err = components::explain(&fetcher, &idx, err);
    common::notice(&format!("amd64-microcode without non-free-firmware: {err}"));
    assert!(
        matches!(&err, AptError::OtherComponent { component, .. } if component == "non-free-firmware"),
        "{err}"
    );
    let idx = vec![load_source(
        &fetcher,
        &trixie(&["main", "non-free-firmware"]),
        &std::env::temp_dir(),
    )
    .unwrap()];
    let locked = resolve(&idx, "amd64", &[req("amd64-microcode")], &Installed::new()).unwrap();
    assert!(
        locked
            .iter()
            .any(|l| l.filename.contains("pool/non-free-firmware/")),
        "{}",
        names(&locked).join(" ")
    );
}
