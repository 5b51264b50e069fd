//! Several `ocibuild build` processes at once: into one output layout (the layout lock on
//! index.json), and from one cold cache (the store's per-layer lock).

use crate::common;

use fs_err as fs;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn recipe_text(tag: &str) -> String {
    format!(
        r#"[image]
name = "example.com/ocibuild/concurrent"
tag = "{tag}"
compression = "gzip"

[[layer]]
name = "app"
src = "app"
dest = "/app"
"#
    )
}

/// A project with a small tree (a few MB: enough that a cold build takes a moment).
fn project(dir: &Path, random_mb: u64) {
    let app = dir.join("app");
    fs::create_dir_all(app.join("sub")).unwrap();
    fs::write(app.join("hello.txt"), "hello\n").unwrap();
    common::write_text_like(&app.join("sub/notes.txt"), 7, 200_000);
    common::write_pseudo_random(&app.join("data.bin"), 11, random_mb << 20);
}

fn build_cmd(recipe: &Path, out: &Path, cache: &Path) -> Command {
    let mut c = common::ocibuild();
    c.arg("--quiet")
        .arg("build")
        .arg(recipe)
        .arg("--output")
        .arg(out)
        .arg("--json")
        .env("OCIBUILD_CACHE", cache)
        .env("OCIBUILD_JOBS", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn spawn(mut cmd: Command) -> Child {
    cmd.spawn()
        .unwrap_or_else(|e| panic!("cannot start `{}`: {e}", common::describe(&cmd)))
}

/// Waits for a build child (at most a minute) and parses its --json output.
fn finish(child: Child, what: &str) -> Value {
    let out: Output = wait_timeout(child, Duration::from_secs(60), what);
    common::assert_success(&out, what);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: bad --json output ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn wait_timeout(mut child: Child, timeout: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > timeout {
            let _ = child.kill();
            panic!("{what}: still running after {timeout:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

/// 6 builds at once into one (new) layout, sharing one cache: four distinct tags and two
/// builds of a fifth tag. Every tag must survive (no lost read-modify-write of index.json),
/// no build may fail (e.g. a writer finding another's half-made layout "not a layout"), and the
/// layout must be complete and readable by skopeo. Several rounds, fresh layout each, the first
/// one with a cold cache (builds queue on the layer lock, then write the layout together), the
/// others warm (all six reach the layout within milliseconds).
#[test]
fn concurrent_builds_into_one_layout_keep_every_tag() {
    let tmp = common::tempdir();
    let dir = tmp.path();
    project(dir, 2);
    let cache = dir.join("cache");
    let tags = ["t1", "t2", "t3", "t4", "dup", "dup"];
    let mut recipes = Vec::new();
    for (i, tag) in tags.iter().enumerate() {
        let r = dir.join(format!("recipe{i}.toml"));
        fs::write(&r, recipe_text(tag)).unwrap();
        recipes.push(r);
    }
    let expected: BTreeSet<String> = tags.iter().map(std::string::ToString::to_string).collect();

    let start = Instant::now();
    let rounds = 4;
    let mut last_layout = PathBuf::new();
    let mut manifests: std::collections::BTreeMap<String, Value> = Default::default();
    for round in 0..rounds {
        let layout = dir.join(format!("layout{round}"));
        let children: Vec<Child> = recipes
            .iter()
            .map(|r| spawn(build_cmd(r, &layout, &cache)))
            .collect();
        let results: Vec<Value> = children
            .into_iter()
            .enumerate()
            .map(|(i, c)| finish(c, &format!("round {round}: build {i} ({})", tags[i])))
            .collect();
        // Recipes differ only in tag: one config and the same layers for all. Manifests differ
        // (each records its recipe file's digest), except the two builds of one text (`dup`).
        for v in &results {
            assert_eq!(v["config"], results[0]["config"], "round {round}");
            assert_eq!(v["layers"][0]["digest"], results[0]["layers"][0]["digest"]);
        }
        assert_eq!(
            results[4]["manifest"], results[5]["manifest"],
            "round {round}: dup"
        );
        let by_tag: std::collections::BTreeMap<String, Value> = tags
            .iter()
            .zip(&results)
            .map(|(t, v)| (t.to_string(), v["manifest"].clone()))
            .collect();

        let found = common::check_layout(&layout, u64::MAX)
            .unwrap_or_else(|e| panic!("round {round}: layout invariant broken:\n{e}"));
        let found_tags: BTreeSet<String> = found.keys().cloned().collect();
        let index = fs::read_to_string(layout.join("index.json")).unwrap();
        assert_eq!(
            found_tags, expected,
            "round {round}: index.json lost a tag:\n{index}"
        );
        for (tag, digest) in &found {
            assert_eq!(Some(digest.as_str()), by_tag[tag].as_str(), "{tag}");
        }
        assert_eq!(
            fs::read_to_string(layout.join("oci-layout")).unwrap(),
            r#"{"imageLayoutVersion":"1.0.0"}"#
        );
        last_layout = layout;
        manifests = by_tag;
    }
    let elapsed = start.elapsed();

    if common::require_tool("skopeo") {
        for tag in &expected {
            let v = common::skopeo_inspect(&format!("oci:{}:{tag}", last_layout.display()));
            assert_eq!(v["Digest"], manifests[tag], "skopeo inspect of {tag}: {v}");
        }
    }
    common::notice(&format!(
        "{}: {rounds} rounds of 6 concurrent builds in {elapsed:.2?}",
        common::test_name()
    ));
}

/// Two builds of one recipe at once with one cold cache: both succeed with the same digests,
/// and the layer is built once (the second waits on the store's per-layer lock and then finds
/// it in the cache). The builds are checked to have overlapped in time.
#[test]
fn same_recipe_twice_at_once_with_a_cold_cache_builds_the_layer_once() {
    let tmp = common::tempdir();
    let dir = tmp.path();
    project(dir, 24);
    let recipe = dir.join("recipe.toml");
    fs::write(&recipe, recipe_text("same")).unwrap();
    let cache = dir.join("cache");

    let start = Instant::now();
    let mut a = spawn(build_cmd(&recipe, &dir.join("out-a"), &cache));
    let b = spawn(build_cmd(&recipe, &dir.join("out-b"), &cache));
    // Had A ended before B started, this test would prove nothing.
    let a_status = a.try_wait().unwrap();
    let (a, b) = (finish(a, "build A"), finish(b, "build B"));
    assert!(
        a_status.is_none(),
        "A had already exited ({a_status:?}) when B started: the builds did not overlap"
    );

    for key in ["manifest", "config"] {
        assert_eq!(a[key], b[key], "{key} differs:\nA: {a:#}\nB: {b:#}");
    }
    assert_eq!(a["layers"][0]["digest"], b["layers"][0]["digest"]);
    assert_eq!(a["layers"][0]["diffId"], b["layers"][0]["diffId"]);
    let built: Vec<bool> = [&a, &b]
        .iter()
        .map(|v| v["layers"][0]["cached"] == false)
        .collect();
    assert_eq!(
        built.iter().filter(|b| **b).count(),
        1,
        "exactly one build should have built the layer, the other taken it from the cache \
         after waiting on the layer lock:\nA: {a:#}\nB: {b:#}"
    );

    // The store holds the layer once, correct, and no leftovers in its tmp/.
    let layer = a["layers"][0]["digest"].as_str().unwrap();
    let blob = cache.join("blobs/sha256").join(&layer["sha256:".len()..]);
    assert_eq!(common::sha256_file(&blob).unwrap(), layer);
    assert_eq!(fs::read_dir(cache.join("tmp")).unwrap().count(), 0);
    for out in ["out-a", "out-b"] {
        let tags =
            common::check_layout(&dir.join(out), u64::MAX).unwrap_or_else(|e| panic!("{out}: {e}"));
        assert_eq!(tags.keys().collect::<Vec<_>>(), ["same"]);
    }
    common::notice(&format!(
        "{}: two concurrent cold builds of a 24 MB layer in {:.2?}",
        common::test_name(),
        start.elapsed()
    ));
}
