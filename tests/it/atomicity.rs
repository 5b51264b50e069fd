//! "A crash or Ctrl-C never leaves a layout that names a blob it lacks": builds into an existing
//! layout killed (SIGKILL, and once SIGINT) at many points, the layout checked after each kill.
//!
//! Stray `.ocibuild-tmp-*` files in the layout (a blob or index.json being written when the
//! process died) are expected and allowed: nothing ever names them, and the next build into the
//! layout ignores them. The test reports how many it saw.
// kill(2) to stop a build at a chosen point.
#![allow(unsafe_code)]

use crate::common;

use fs_err as fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The big layer: pseudo-random, so gzip cannot shrink it and every phase takes a while.
const BIG: u64 = 150 << 20;
/// Blobs up to this size are checked by sha256 after each kill; larger ones by size only.
const HASH_LIMIT: u64 = 1 << 20;

fn recipe_text(tag: &str, src: &str) -> String {
    format!(
        r#"[image]
name = "example.com/ocibuild/atomic"
tag = "{tag}"
compression = "gzip"

[[layer]]
name = "data"
src = "{src}"
dest = "/data"
"#
    )
}

fn build_cmd(recipe: &Path, layout: &Path, cache: &Path) -> Command {
    let mut c = common::ocibuild();
    c.arg("--quiet")
        .arg("build")
        .arg(recipe)
        .arg("--output")
        .arg(layout)
        .env("OCIBUILD_CACHE", cache)
        .env("OCIBUILD_JOBS", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// When to signal the build.
#[derive(Clone, Debug)]
enum When {
    /// This long after the start.
    After(Duration),
    /// As soon as a `.ocibuild-tmp-*` file shows in the layout (a blob being copied in).
    TempFileInLayout,
    /// As soon as the layout holds this blob (hex digest).
    BlobInLayout(&'static str, String),
}

fn signal(child: &Child, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on our own child's pid; it has not been waited for, so the pid is its.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}

/// Runs one build of tag b, signalled `sig` at `when`; checks the layout afterwards and returns
/// a line for the report.
fn killed_build(
    recipe: &Path,
    layout: &Path,
    cache: &Path,
    when: &When,
    sig: libc::c_int,
    digest_a: &str,
) -> String {
    let t = Instant::now();
    let mut child = build_cmd(recipe, layout, cache).spawn().unwrap();
    let mut fired = false;
    while child.try_wait().unwrap().is_none() {
        let now = match when {
            When::After(d) => t.elapsed() >= *d,
            When::TempFileInLayout => !common::layout_temp_files(layout).is_empty(),
            When::BlobInLayout(_, hex) => layout.join("blobs/sha256").join(hex).exists(),
        };
        if now {
            signal(&child, sig);
            fired = true;
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
        assert!(t.elapsed() < Duration::from_secs(300), "build hangs");
    }
    let at = t.elapsed();
    let status = child.wait().unwrap();

    let tags = common::check_layout(layout, HASH_LIMIT).unwrap_or_else(|e| {
        panic!("after {when:?} (signal {sig}, {status}) the layout is broken:\n{e}")
    });
    assert_eq!(
        tags.get("a").map(String::as_str),
        Some(digest_a),
        "tag a lost or changed after {when:?}: {tags:?}"
    );
    let when = match when {
        When::BlobInLayout(what, _) => format!("BlobInLayout({what})"),
        other => format!("{other:?}"),
    };
    format!(
        "  {when} sig {sig} at {at:.2?}: {}, b tagged: {}, stray temp files: {}",
        if fired {
            status.to_string()
        } else {
            format!("finished first ({status})")
        },
        tags.contains_key("b"),
        common::layout_temp_files(layout).len(),
    )
}

/// Builds into a layout holding tag a, killed at staggered delays (each from a fresh cache, so
/// it really hashes, compresses and writes: these land in the store phase) and at the layout
/// phase's own steps (a warm cache, so the kill comes at the blob copy, between blob renames,
/// and right before the index.json rename). After each kill the layout must satisfy
/// [`common::check_layout`] and still name tag a, unchanged.
#[test]
fn killed_builds_never_leave_a_layout_naming_a_missing_blob() {
    let start = Instant::now();
    let tmp = common::tempdir();
    let dir = tmp.path();
    let data = dir.join("data");
    fs::create_dir_all(&data).unwrap();
    common::write_pseudo_random(&data.join("big.bin"), 42, BIG);
    let generated = start.elapsed();
    // Tag a: a small image (every blob of it is sha256-checked after each kill).
    fs::create_dir_all(dir.join("small")).unwrap();
    common::write_pseudo_random(&dir.join("small/a.bin"), 7, 256 << 10);

    let layout = dir.join("layout");
    let recipe_a = dir.join("a.toml");
    let recipe_b = dir.join("b.toml");
    fs::write(&recipe_a, recipe_text("a", "small")).unwrap();
    fs::write(&recipe_b, recipe_text("b", "data")).unwrap();
    let out = common::run(&mut build_cmd(&recipe_a, &layout, &dir.join("cache-a")));
    common::assert_success(&out, "build a");
    let tags = common::check_layout(&layout, u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    let digest_a = tags["a"].clone();

    let mut report = Vec::new();
    // Timed kills, each of other content (variant.txt) and from a fresh cache.
    let ms = Duration::from_millis;
    let timed = [
        (5, libc::SIGKILL),
        (20, libc::SIGKILL),
        (60, libc::SIGKILL),
        (150, libc::SIGKILL),
        (400, libc::SIGINT),
        (800, libc::SIGKILL),
        (1400, libc::SIGKILL),
        (2000, libc::SIGKILL),
    ];
    for (i, (delay, sig)) in timed.into_iter().enumerate() {
        fs::write(data.join("variant.txt"), format!("b{i}\n")).unwrap();
        let cache = dir.join(format!("cache-{i}"));
        let when = When::After(ms(delay));
        report.push(killed_build(
            &recipe_b, &layout, &cache, &when, sig, &digest_a,
        ));
        if cache.exists() {
            fs::remove_dir_all(&cache).unwrap();
        }
    }

    // The layout phase: one more variant, built once into a scratch output to fill a cache;
    // then builds from that cache into the layout, killed at the copy of the layer blob (its
    // temporary file showing), right after the layer blob's rename, and right after the
    // manifest blob's rename (the index.json update is next). Each kill leaves the layout
    // further along; a kill may also come too late (the build finished): the invariant holds.
    fs::write(data.join("variant.txt"), "layout phase\n").unwrap();
    let warm = dir.join("cache-warm");
    let t = Instant::now();
    let out = common::run_ok(
        build_cmd(&recipe_b, &dir.join("scratch"), &warm)
            .arg("--json")
            .stdout(Stdio::piped()),
    );
    let full_build = t.elapsed();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hex = |d: &serde_json::Value| d.as_str().unwrap()["sha256:".len()..].to_string();
    let (layer, manifest) = (hex(&v["layers"][0]["digest"]), hex(&v["manifest"]));
    for when in [
        When::TempFileInLayout,
        When::BlobInLayout("layer", layer),
        When::BlobInLayout("manifest", manifest),
    ] {
        report.push(killed_build(
            &recipe_b,
            &layout,
            &warm,
            &when,
            libc::SIGKILL,
            &digest_a,
        ));
    }

    // Afterwards a complete build of b into the same layout works (no stale lock, stray
    // temporary files ignored) and the layout then holds both tags, fully verified.
    let out = common::run(&mut build_cmd(&recipe_b, &layout, &warm));
    common::assert_success(&out, "final build b");
    let tags = common::check_layout(&layout, u64::MAX).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tags.keys().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(tags["a"], digest_a);
    assert_eq!(tags["b"], v["manifest"].as_str().unwrap());

    common::notice(&format!(
        "{}: {} MB generated in {generated:.2?}, one full cold build {full_build:.2?}, \
         total {:.2?}\n{}",
        common::test_name(),
        BIG >> 20,
        start.elapsed(),
        report.join("\n")
    ));
}
