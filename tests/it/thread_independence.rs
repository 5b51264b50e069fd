//! "OCIBUILD_JOBS never changes the output", on a large layer. Regression test for a gzip bug
//! where a deflate compressor reused (reset) across blocks made the bytes depend on which worker
//! had compressed which blocks before: threads=1 and threads=2 differed by one byte ~171 MB into
//! a 300 MB layer, and small inputs never showed it.
// getrusage(2) for the children's peak RSS.
#![allow(unsafe_code)]

use crate::common;

use fs_err as fs;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

/// About 200 MB in seven files, sorted into the tar as named: incompressible and text-like
/// data alternating, so deflate sees long runs of both, stored and compressed blocks, and the
/// window crossing from one kind to the other.
fn make_tree(dir: &Path) -> u64 {
    fs::create_dir_all(dir).unwrap();
    let mb = 1u64 << 20;
    let files: [(&str, bool, u64); 7] = [
        ("00-random.bin", true, 30 * mb),
        ("01-text.py", false, 28 * mb),
        ("02-random.bin", true, 30 * mb),
        ("03-text.log", false, 28 * mb),
        ("04-random.bin", true, 30 * mb),
        ("05-text.py", false, 28 * mb),
        ("06-random.bin", true, 26 * mb),
    ];
    let mut total = 0;
    for (i, (name, random, len)) in files.iter().enumerate() {
        let path = dir.join(name);
        if *random {
            common::write_pseudo_random(&path, 1000 + i as u64, *len);
        } else {
            common::write_text_like(&path, 2000 + i as u64, *len);
        }
        total += fs::metadata(&path).unwrap().len();
    }
    total
}

fn recipe_text(compression: &str) -> String {
    format!(
        r#"[image]
name = "example.com/ocibuild/threads"
tag = "{compression}"
compression = "{compression}"

[[layer]]
name = "big"
src = "tree"
dest = "/big"
"#
    )
}

/// CPU time (user + system) of this process's waited-for children so far: wall times on a
/// shared machine say little, so the report shows both.
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the zeroed struct we pass; RUSAGE_CHILDREN is a valid `who`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &raw mut ru) };
    assert_eq!(rc, 0, "getrusage");
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// A cold build (fresh cache, removed afterwards) with `OCIBUILD_JOBS=jobs`; its --json output.
fn build(dir: &Path, compression: &str, jobs: usize) -> Value {
    let recipe = dir.join(format!("{compression}.toml"));
    fs::write(&recipe, recipe_text(compression)).unwrap();
    let cache = dir.join(format!("cache-{compression}-{jobs}"));
    let out_dir = dir.join(format!("out-{compression}-{jobs}"));
    let (t, cpu) = (Instant::now(), children_cpu());
    let out = common::run_ok(
        common::ocibuild()
            .arg("--quiet")
            .arg("build")
            .arg(&recipe)
            .arg("--output")
            .arg(format!("oci-archive:{}", out_dir.display()))
            .arg("--json")
            .env("OCIBUILD_CACHE", &cache)
            .env("OCIBUILD_JOBS", jobs.to_string()),
    );
    let (secs, cpu) = (t.elapsed(), children_cpu().checked_sub(cpu).unwrap());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["layers"][0]["cached"], false, "{v:#}");
    common::notice(&format!(
        "  {compression} jobs={jobs}: {secs:.2?} wall, {cpu:.2?} CPU, layer {} ({} bytes)",
        v["layers"][0]["digest"].as_str().unwrap_or("?"),
        v["layers"][0]["size"]
    ));
    fs::remove_dir_all(&cache).unwrap();
    let _ = fs::remove_file(&out_dir);
    v
}

fn assert_same(a: &Value, b: &Value, what: &str) {
    for key in ["digest", "size", "diffId", "uncompressedSize"] {
        assert_eq!(
            a["layers"][0][key], b["layers"][0][key],
            "{what}: layer {key} depends on the thread count:\n{a:#}\n{b:#}"
        );
    }
    assert_eq!(a["manifest"], b["manifest"], "{what}: manifest");
}

#[test]
fn large_layer_digests_do_not_depend_on_the_thread_count() {
    let start = Instant::now();
    let tmp = common::tempdir();
    let dir = tmp.path();
    let total = make_tree(&dir.join("tree"));
    common::notice(&format!(
        "{}: {} MB generated in {:.2?}",
        common::test_name(),
        total >> 20,
        start.elapsed()
    ));
    assert!(total > 190 << 20, "{total}");

    let g1 = build(dir, "gzip", 1);
    let g2 = build(dir, "gzip", 2);
    assert_same(&g1, &g2, "gzip, OCIBUILD_JOBS 1 vs 2");
    let z1 = build(dir, "zstd", 1);
    let z3 = build(dir, "zstd", 3);
    assert_same(&z1, &z3, "zstd, OCIBUILD_JOBS 1 vs 3");
    // Same tar under both compressions.
    assert_eq!(g1["layers"][0]["diffId"], z1["layers"][0]["diffId"]);
    common::notice(&format!(
        "{}: total {:.2?}",
        common::test_name(),
        start.elapsed()
    ));
}
