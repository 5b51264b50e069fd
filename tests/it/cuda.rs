//! `[image] cuda-archs` (src/cuda) on wheel layers: a wheel whose libraries carry fatbins
//! (synthetic, `ocibuild::cuda::fixture`: no nvcc needed) installed pruned; RECORD lists the
//! pruned bytes; the layer is smaller, the same twice, and keyed apart from the unpruned one.
//! Online (OCIBUILD_ONLINE=1): the nvidia-curand-cu12 wheel from PyPI, whose listing was
//! checked with cuobjdump.

use crate::common;
use crate::wheelfix::make_wheel;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::Command;

use ocibuild::cuda::fixture::{library, ptx, sass};
use ocibuild::cuda::{LibraryReport, PtxPolicy, Targets};
use ocibuild::digest::Digest;
use ocibuild::layer::{Compression, LayerOptions};
use ocibuild::python::interpreter::PyVersion;
use ocibuild::python::wheel::{build_wheel_layer_with, layer_key, record_hash, WheelInput};
use ocibuild::python::{Interpreter, Scheme};
use ocibuild::store::{CachedLayer, Store};

const SITE: &str = "usr/local/lib/python3.11/dist-packages";

fn interp() -> Interpreter {
    let version = PyVersion {
        major: 3,
        minor: 11,
    };
    Interpreter {
        version,
        executable: "/usr/bin/python3.11".into(),
        machine: "x86_64".into(),
        glibc: Some((2, 36)),
        scheme: Scheme::debian_local(version),
        full_version: None,
    }
}

fn opts() -> LayerOptions {
    LayerOptions {
        epoch: 1_700_000_000,
        compression: Compression::GZIP,
        threads: 2,
    }
}

fn sm90() -> Targets {
    Targets {
        archs: [90].into_iter().collect(),
        ptx: PtxPolicy::Newest,
    }
}

/// path → content of every file of the (gzip) layer.
fn files(store: &Store, layer: &CachedLayer) -> BTreeMap<String, Vec<u8>> {
    gzip_layer_files(store.open_blob(&layer.digest).unwrap())
}

/// path → content of every entry of a gzip layer blob, read with the tar and flate2 crates.
pub(crate) fn gzip_layer_files(blob: impl Read) -> BTreeMap<String, Vec<u8>> {
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(blob));
    let mut out = BTreeMap::new();
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let p = String::from_utf8(e.path_bytes().into_owned()).unwrap();
        let mut c = Vec::new();
        e.read_to_end(&mut c).unwrap();
        out.insert(p, c);
    }
    out
}

/// A CUDA wheel: two fatbin libraries, one whose fatbin is malformed, one `.so` that is not
/// an ELF file, and an ELF library without a fatbin.
fn cuda_wheel(dir: &Path) -> (WheelInput, Vec<u8>) {
    let big = library(&[
        &[
            sass(75, 40_000),
            sass(80, 50_000),
            sass(90, 60_000),
            sass(120, 70_000),
            ptx(120, 30_000),
        ],
        &[sass(80, 20_000), sass(90, 20_000), ptx(90, 9_000)],
    ]);
    let mut broken = library(&[&[sass(80, 1000), sass(90, 1000)]]);
    let at = broken
        .windows(4)
        .position(|w| w == 0xBA55_ED50u32.to_le_bytes())
        .unwrap();
    broken[at + 8] = 0xFF; // a fat size past the section
    let plain = ocibuild::cuda::fixture::elf_with_section(".text", b"host code");
    let w = make_wheel(
        dir,
        "nvidia_fake_cu12-1.0-py3-none-manylinux2014_x86_64.whl",
        &[
            ("nvidia/fake/lib/libfake.so.12", &big, 0o755),
            ("nvidia/fake/lib/libbroken.so.12", &broken, 0o755),
            ("nvidia/fake/lib/libscript.so", b"not a library\n", 0o644),
            ("nvidia/fake/lib/libplain.so", &plain, 0o755),
            ("nvidia/fake/__init__.py", b"", 0o644),
        ],
        false,
        &|_| {},
    );
    (w, big)
}

#[test]
fn a_wheel_layer_is_pruned_in_place_and_recorded() {
    let tmp = common::tempdir();
    let (w, big) = cuda_wheel(tmp.path());
    let store = Store::open(tmp.path().join("store")).unwrap();
    let ws = std::slice::from_ref(&w);
    let (plain, none) =
        build_wheel_layer_with(&store, ws, &interp(), &opts(), None, &|_| {}).unwrap();
    assert!(none.is_empty());
    let (pruned, report) =
        build_wheel_layer_with(&store, ws, &interp(), &opts(), Some(&sm90()), &|_| {}).unwrap();
    let (again, _) =
        build_wheel_layer_with(&store, ws, &interp(), &opts(), Some(&sm90()), &|_| {}).unwrap();
    assert_eq!(pruned.digest, again.digest, "pruning is deterministic");
    assert_ne!(pruned.digest, plain.digest);
    assert_eq!(
        pruned.uncompressed_size, plain.uncompressed_size,
        "in place: every file keeps its size"
    );
    let removed = (64 + 40_000) + (64 + 50_000) + (64 + 70_000) + (64 + 20_000);
    assert!(
        plain.size - pruned.size > removed as u64 * 8 / 10,
        "the compressed layer is smaller by about what was removed (7 random bits a byte): {} → {}",
        plain.size,
        pruned.size
    );
    let by_path: BTreeMap<&str, &LibraryReport> =
        report.iter().map(|r| (r.path.as_str(), r)).collect();
    let lib = |n: &str| format!("/{SITE}/nvidia/fake/lib/{n}");
    let fake = by_path[lib("libfake.so.12").as_str()]
        .pruned
        .clone()
        .unwrap();
    assert_eq!(fake.bytes_removed, removed as u64);
    assert_eq!(fake.kept, ["compute_120", "compute_90", "sm_90"]);
    assert_eq!(fake.removed, ["sm_120", "sm_75", "sm_80"]);
    let broken = by_path[lib("libbroken.so.12").as_str()];
    assert!(broken.pruned.is_none());
    assert!(
        broken
            .reason
            .as_deref()
            .unwrap()
            .contains("malformed fatbin"),
        "{broken:?}"
    );
    let script = by_path[lib("libscript.so").as_str()];
    assert_eq!(script.reason.as_deref(), Some("not an ELF file"));
    assert!(
        !by_path.contains_key(lib("libplain.so").as_str()),
        "no fatbin: not listed"
    );
    assert_eq!(report.len(), 3);

    // The layer holds the pruned library, RECORD its sha256; the rest as the wheel has them.
    let fs = files(&store, &pruned);
    let installed = &fs[&format!("{SITE}/nvidia/fake/lib/libfake.so.12")];
    let mut want = big.clone();
    ocibuild::cuda::prune(&mut want, &sm90()).unwrap();
    assert_eq!(installed, &want);
    assert_eq!(installed.len(), big.len());
    let record =
        String::from_utf8(fs[&format!("{SITE}/nvidia_fake_cu12-1.0.dist-info/RECORD")].clone())
            .unwrap();
    let row = format!(
        "nvidia/fake/lib/libfake.so.12,{},{}",
        record_hash(&Digest::of(installed)),
        big.len()
    );
    assert!(record.contains(&row), "{record}");
    let plain_fs = files(&store, &plain);
    for n in ["libbroken.so.12", "libscript.so", "libplain.so"] {
        let p = format!("{SITE}/nvidia/fake/lib/{n}");
        assert_eq!(fs[&p], plain_fs[&p], "{n} is left as it is");
    }

    // The targets are part of the layer's key; without them the key is what it was.
    let k = |c: Option<&Targets>| layer_key(ws, &interp(), &opts(), c).unwrap();
    assert_ne!(k(None), k(Some(&sm90())));
    let none = Targets {
        ptx: PtxPolicy::None,
        ..sm90()
    };
    assert_ne!(k(Some(&none)), k(Some(&sm90())));
}

/// nvidia-curand-cu12 10.3.7.77 (PyPI, 56 MB): `libcurand.so.10` (96,472,496 bytes) has 11
/// fatbin containers; `cuobjdump --list-elf` (CUDA 11.8's and 13.5's) lists 11 cubins each for
/// sm_50, 60, 70, 75, 80, 86, 89 and 90, `--list-ptx` 10 PTX for sm_90. Pruned to sm_90 here,
/// cuobjdump lists 11 sm_90 cubins and the 10 sm_90 PTX, and the file still loads
/// (`ctypes.CDLL`).
const CURAND: &str = "nvidia_curand_cu12-10.3.7.77-py3-none-manylinux2014_x86_64.whl";
const CURAND_SHA256: &str = "99f1a32f1ac2bd134897fc7a203f779303261268a65762a623bf30cc9fe79117";

#[test]
fn online_curand_pruned_to_sm_90() {
    if !common::online("downloads the nvidia-curand-cu12 wheel from PyPI") {
        return;
    }
    let tmp = common::tempdir();
    common::run_ok(
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "--platform",
                "manylinux2014_x86_64",
                "--python-version",
                "3.11",
                "nvidia-curand-cu12==10.3.7.77",
                "-d",
            ])
            .arg(tmp.path()),
    );
    let path = tmp.path().join(CURAND);
    let sha256 = ocibuild::digest::hash_file(&path).unwrap().0;
    assert_eq!(sha256.hex(), CURAND_SHA256);
    let w = WheelInput {
        path,
        file: ocibuild::python::tags::WheelFile::parse(CURAND).unwrap(),
        sha256,
        exclude: Default::default(),
    };
    let store = Store::open(tmp.path().join("store")).unwrap();
    let ws = std::slice::from_ref(&w);
    let (plain, _) = build_wheel_layer_with(&store, ws, &interp(), &opts(), None, &|_| {}).unwrap();
    let (pruned, report) =
        build_wheel_layer_with(&store, ws, &interp(), &opts(), Some(&sm90()), &|_| {}).unwrap();
    assert_eq!(report.len(), 1, "{report:?}");
    let p = report[0].pruned.clone().unwrap();
    assert_eq!(report[0].size, 96_472_496);
    assert_eq!(p.kept, ["compute_90", "sm_90"]);
    assert_eq!(
        p.removed,
        ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89"]
    );
    assert_eq!(p.entries_removed, 77);
    eprintln!(
        "curand: {} bytes removed; layer {} → {} bytes compressed",
        p.bytes_removed, plain.size, pruned.size
    );
    // Measured here: 42,856,456 bytes of SASS removed (44% of the file); the gzip layer
    // 56,270,228 → 43,766,231 bytes (SASS compresses about 3.4 times, so the layer loses less
    // than the file).
    assert_eq!(p.bytes_removed, 42_856_456);
    assert!(plain.size - pruned.size > 12_000_000);
}

/// A recipe with `cuda-archs`: `build --json` lists each library (also when the layer comes
/// from the cache), the text output says what was removed, a rebuild gives the same manifest,
/// and `verify` reproduces the image.
#[test]
fn a_recipe_with_cuda_archs_prunes_reports_and_verifies() {
    use crate::aptfix;
    use common::{ocibuild, run, run_ok, stdout};
    use fs_err as fs;
    let f = aptfix::fixture(&aptfix::python_universe(), false);
    let t = common::tempdir();
    let wd = t.path().join("wheels");
    fs::create_dir_all(&wd).unwrap();
    let (w, _) = cuda_wheel(&wd);
    let name = &w.file.filename;
    let size = fs::metadata(&w.path).unwrap().len();
    fs::write(
        t.path().join("pylock.toml"),
        format!(
            "lock-version = \"1.0\"\ncreated-by = \"test\"\nrequires-python = \">=3.11\"\n\n\
             [[packages]]\nname = \"nvidia-fake-cu12\"\nversion = \"1.0\"\nwheels = [\n  \
             {{ name = \"{name}\", path = \"wheels/{name}\", size = {size}, hashes = {{ sha256 = \
             \"{}\" }} }}\n]\n",
            w.sha256.hex()
        ),
    )
    .unwrap();
    let r = crate::wheel_recipe::recipe(t.path(), &f, "lock = \"pylock.toml\"");
    let text = fs::read_to_string(&r).unwrap().replace(
        "platform = \"linux/amd64\"\n",
        "platform = \"linux/amd64\"\ncuda-archs = [\"sm_90\"]\n",
    );
    fs::write(&r, text).unwrap();
    let out = t.path().join("img");
    let cache = t.path().join("cache");
    let build = |json: bool| {
        let mut c = ocibuild();
        c.env("OCIBUILD_CACHE", &cache).arg("build");
        if json {
            c.arg("--json");
        }
        stdout(&run_ok(c.arg("-o").arg(&out).arg(&r)))
    };
    let v: serde_json::Value = serde_json::from_str(&build(true)).unwrap();
    let cuda = &v["cuda"];
    assert_eq!(cuda["archs"], serde_json::json!(["sm_90"]));
    assert_eq!(cuda["ptx"], "newest");
    let libs = cuda["libraries"].as_array().unwrap();
    // The wheel's three, and the apt fixture's libc6 `libc.so.6` (8 bytes of text).
    assert_eq!(libs.len(), 4, "{cuda}");
    assert_eq!(libs[0]["path"], "/usr/lib/libc.so.6");
    assert_eq!(libs[0]["reason"], "not an ELF file");
    let fake = libs
        .iter()
        .find(|l| l["path"].as_str().unwrap().ends_with("/libfake.so.12"))
        .unwrap();
    assert_eq!(fake["from"], name.as_str());
    let removed = (64 + 40_000) + (64 + 50_000) + (64 + 70_000) + (64 + 20_000);
    assert_eq!(fake["pruned"]["bytesRemoved"], removed);
    assert_eq!(
        fake["pruned"]["removed"],
        serde_json::json!(["sm_120", "sm_75", "sm_80"])
    );
    assert!(fake["reason"].is_null());

    // Again, from the cache: the same report and manifest; the text says what was removed.
    let again = build(false);
    assert!(
        again.contains(
            "cuda: pruned to sm_90 (PTX: newest): 180 kB removed from 1 of 4 CUDA libraries"
        ),
        "{again}"
    );
    assert!(
        again.contains("libbroken.so.12: left as it is: malformed fatbin"),
        "{again}"
    );
    assert!(
        again.contains(&v["manifest"].as_str().unwrap()[..20]),
        "{again}"
    );
    let v2: serde_json::Value = serde_json::from_str(&build(true)).unwrap();
    assert_eq!(v2["cuda"], v["cuda"]);
    assert_eq!(v2["manifest"], v["manifest"]);

    // `verify` rebuilds it in an empty store, pruned the same.
    let ok = run(ocibuild()
        .env("OCIBUILD_CACHE", &cache)
        .arg("verify")
        .arg(&r)
        .arg("--against")
        .arg(format!("oci:{}", out.display())));
    assert!(
        ok.status.success(),
        "{}{}",
        String::from_utf8_lossy(&ok.stdout),
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// A .deb's CUDA library is pruned in the apt layer (read back from the spool, appended
/// pruned), and dpkg's md5sums for it is the MD5 of the file installed.
#[test]
fn an_apt_layer_prunes_its_cuda_libraries_and_their_md5sums() {
    use crate::aptfix::{self, deb, Data};
    use ocibuild::apt::{build_layer_reported, download, resolve, DebInput};
    let lib = library(&[&[sass(80, 30_000), sass(90, 30_000), ptx(90, 5_000)]]);
    let leaked: &'static [u8] = Box::leak(lib.clone().into_boxed_slice());
    let d = deb("libfake12", "1.0")
        .data(Data::Dir("./usr/lib/"))
        .data(Data::Binary("./usr/lib/libfake.so.12", leaked, 0o644))
        .data(Data::File("./usr/lib/libnot.so", "not a library\n", 0o644))
        .data(Data::File(
            "./usr/lib/libscript.so",
            "/* GNU ld script */\nINPUT(-lfake)\n",
            0o644,
        ));
    let f = aptfix::fixture(&[d], false);
    let idx = aptfix::load(&f);
    let locked = resolve(&idx, "amd64", &[aptfix::req("libfake12")], &aptfix::base()).unwrap();
    let fetcher = ocibuild::http::HttpFetcher::new().unwrap();
    let debs: Vec<DebInput> = locked
        .iter()
        .map(|l| DebInput {
            locked: l.clone(),
            path: download(&fetcher, &f.store, l).unwrap(),
        })
        .collect();
    let mut req = aptfix::layer_opts();
    req.dpkg_db = true;
    let (plain, none) = build_layer_reported(&f.store, &debs, &req, &|_| {}).unwrap();
    assert!(none.is_empty());
    req.cuda = Some(sm90());
    let (pruned, report) = build_layer_reported(&f.store, &debs, &req, &|_| {}).unwrap();
    let (again, _) = build_layer_reported(&f.store, &debs, &req, &|_| {}).unwrap();
    assert_eq!(pruned.digest, again.digest);
    assert_ne!(pruned.digest, plain.digest);
    assert_eq!(pruned.uncompressed_size, plain.uncompressed_size);
    assert_eq!(report.len(), 2, "{report:?}");
    assert_eq!(report[0].path, "/usr/lib/libfake.so.12");
    assert_eq!(report[0].from, "libfake12 1.0");
    let p = report[0].pruned.clone().unwrap();
    assert_eq!((p.bytes_removed, p.entries_removed), (64 + 30_000, 1));
    assert_eq!(report[1].reason.as_deref(), Some("not an ELF file"));

    let l = aptfix::listing(&f.store, &pruned.digest);
    let mut want = lib.clone();
    ocibuild::cuda::prune(&mut want, &sm90()).unwrap();
    assert_eq!(l["usr/lib/libfake.so.12"].3, want);
    let md5s = String::from_utf8(
        l.iter()
            .find(|(k, _)| k.ends_with("libfake12.md5sums"))
            .unwrap()
            .1
             .3
            .clone(),
    )
    .unwrap();
    let sum: String = {
        use md5::Digest as _;
        md5::Md5::digest(&want)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    assert!(
        md5s.contains(&format!("{sum}  usr/lib/libfake.so.12\n")),
        "{md5s}"
    );
    assert!(md5s.contains("  usr/lib/libnot.so\n"), "{md5s}");
    assert!(
        !report.iter().any(|r| r.path.ends_with("libscript.so")),
        "a linker script is no library: {report:?}"
    );
}
