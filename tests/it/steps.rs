//! `[[step]]`: build steps under real podman, in a builder recipe made from Debian's static
//! busybox. A podman wrapper counts the containers run, so a cache hit is seen to run nothing.

use std::path::{Path, PathBuf};

use fs_err as fs;
use serde_json::Value;

use crate::common;

/// A scratch image with busybox: the builder every step here runs in.
fn builder(busybox: &Path) -> String {
    format!(
        "[image]\nname = \"localhost/ocibuild-test/builder\"\n\n[[layer]]\nname = \"busybox\"\n\
         src = \"{}\"\ndest = \"/bin/busybox\"\n\n[config]\nenv = {{ PATH = \"/bin\" }}\n",
        busybox.display()
    )
}

/// A project in `dir`: `builder.toml`, `app.toml` (with `steps`), and `a/x`, `c/y`.
fn project(dir: &Path, steps: &str) -> Option<PathBuf> {
    if !common::require_tool("podman") {
        return None;
    }
    let busybox = common::require_static_busybox()?;
    fs::create_dir_all(dir.join("a")).unwrap();
    fs::create_dir_all(dir.join("c")).unwrap();
    fs::write(dir.join("a/x"), "alpha\n").unwrap();
    fs::write(dir.join("c/y"), "gamma\n").unwrap();
    fs::write(dir.join("builder.toml"), builder(&busybox)).unwrap();
    let app = dir.join("app.toml");
    fs::write(
        &app,
        format!("[image]\nname = \"localhost/ocibuild-test/steps\"\n\n{steps}"),
    )
    .unwrap();
    Some(app)
}

/// A podman that appends a line to `dir/runs` for each container it starts.
fn counting_podman(dir: &Path) -> PathBuf {
    let real = common::which("podman").expect("podman on PATH");
    let script = dir.join("podman");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \" $* \" in *\" run \"*) echo run >> '{}';; esac\nexec '{}' \"$@\"\n",
            dir.join("runs").display(),
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn runs(dir: &Path) -> usize {
    fs::read_to_string(dir.join("runs"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// `build --json` of `recipe` into `dir/img` through the counting podman: the document.
fn build(dir: &Path, recipe: &Path, extra: &[&str]) -> std::process::Output {
    common::run(
        common::ocibuild()
            .env("OCIBUILD_PODMAN", counting_podman(dir))
            .arg("build")
            .arg(recipe)
            .arg("-o")
            .arg(dir.join("img"))
            .args(extra),
    )
}

fn json(out: &std::process::Output) -> Value {
    common::assert_success(out, "build");
    serde_json::from_str(&common::stdout(out)).expect("build --json")
}

fn step_cached(doc: &Value, name: &str) -> bool {
    doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name} in {doc:#}"))["cached"]
        .as_bool()
        .unwrap()
}

const THREE: &str = r#"
[[step]]
name = "a"
image = { recipe = "builder.toml" }
inputs = [{ src = "a", dest = "/in" }]
run = ["/bin/busybox", "sh", "-c", "/bin/busybox cp /in/x /out/x && echo made >> /out/x"]
outputs = [{ path = "/out", dest = "/opt/a", image = false }]

[[step]]
name = "b"
image = { step = "a" }
run = ["/bin/busybox", "sh", "-c", "/bin/busybox cat /opt/a/x > /out/b.txt"]
outputs = [{ path = "/out", dest = "/opt/b" }]

[[step]]
name = "c"
image = { recipe = "builder.toml" }
inputs = [{ src = "c", dest = "/in" }, { step = "b" }]
run = ["/bin/busybox", "sh", "-c", "/bin/busybox cat /in/y /opt/b/b.txt > /out/c.txt"]
outputs = [{ path = "/out", dest = "/opt/c" }]
"#;

/// Three steps (b in a's container, c taking b's output): the first build runs all three, a
/// rebuild none, and a changed input of `a` runs `a` and the steps after it that use it.
#[test]
fn a_cache_hit_runs_nothing_and_a_changed_input_reruns_the_steps_after_it() {
    let t = common::tempdir();
    let Some(app) = project(t.path(), THREE) else {
        return;
    };
    let doc = json(&build(t.path(), &app, &["--json"]));
    assert_eq!(runs(t.path()), 3, "{doc:#}");
    let names: Vec<&str> = doc["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    // `a`'s output is for later steps only.
    assert_eq!(names, ["b", "c"], "{doc:#}");
    let (_, blob) = common::layer_named(&t.path().join("img"), &doc, "c");
    let listing = common::tar_listing(&blob);
    assert!(
        listing.contains(&"f 0644 0:0 opt/c/c.txt".to_string()),
        "{listing:?}"
    );

    let again = json(&build(t.path(), &app, &["--json"]));
    assert_eq!(runs(t.path()), 3, "a rebuild runs no container");
    assert_eq!(again["manifest"], doc["manifest"]);
    assert!(["a", "b", "c"].iter().all(|s| step_cached(&again, s)));

    fs::write(t.path().join("a/x"), "alpha, changed\n").unwrap();
    let changed = json(&build(t.path(), &app, &["--json"]));
    assert_eq!(runs(t.path()), 6, "a, b and c ran again: {changed:#}");
    assert!(!step_cached(&changed, "a") && !step_cached(&changed, "b"));
    assert_ne!(changed["manifest"], doc["manifest"]);

    fs::write(t.path().join("c/y"), "gamma, changed\n").unwrap();
    let only_c = json(&build(t.path(), &app, &["--json"]));
    assert_eq!(runs(t.path()), 7, "only c ran: {only_c:#}");
    assert!(step_cached(&only_c, "a") && step_cached(&only_c, "b"));
    assert!(!step_cached(&only_c, "c"));
}

/// podman copies each layout a step runs into its storage, named after the layout's path
/// (`localhost/tmp/ocibuild-step-…/layout:latest` with podman 4.3). Four builds of the same steps
/// run at once against one podman storage (a private one, `--root`), so they copy images with the
/// same layers at the same moments. Removing a build's copy as soon as its step ended broke the
/// others' copies (`layer not known`, `image not known`): each build succeeds, and afterwards
/// none of those images is left in the storage.
#[test]
fn concurrent_builds_share_podmans_storage_and_leave_no_image_in_it() {
    let storage = common::tempdir();
    let (root, runroot) = (storage.path().join("root"), storage.path().join("run"));
    let podman_args = [
        format!("--root={}", root.display()),
        format!("--runroot={}", runroot.display()),
    ];
    let projects: Vec<_> = (0..4).map(|_| common::tempdir()).collect();
    let mut apps = Vec::new();
    for p in &projects {
        let Some(app) = project(p.path(), THREE) else {
            return;
        };
        apps.push(app);
    }
    // Each build with a store of its own (so no step is a cache hit) and a podman that counts
    // the containers it starts; the commands are made here, in the test's thread.
    let mut commands: Vec<std::process::Command> = projects
        .iter()
        .zip(&apps)
        .map(|(p, app)| {
            let mut c = common::ocibuild();
            c.env("OCIBUILD_CACHE", p.path().join("store"))
                .env("OCIBUILD_PODMAN", counting_podman(p.path()))
                .arg("build")
                .arg(app)
                .arg("-o")
                .arg(p.path().join("img"))
                .arg(format!("--podman-arg={}", podman_args[0]))
                .arg(format!("--podman-arg={}", podman_args[1]));
            c
        })
        .collect();
    let outs: Vec<std::process::Output> = std::thread::scope(|s| {
        let running: Vec<_> = commands
            .iter_mut()
            .map(|c| s.spawn(move || common::run(c)))
            .collect();
        running.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (out, p) in outs.iter().zip(&projects) {
        common::assert_success(out, "a build beside three others in one podman storage");
        assert_eq!(runs(p.path()), 3, "each build ran its three steps");
    }
    let podman = common::which("podman").unwrap();
    let images = common::run(
        std::process::Command::new(&podman)
            .args(&podman_args)
            .args(["images", "--format", "{{.Repository}}:{{.Tag}}"]),
    );
    common::assert_success(&images, "podman images");
    let left = common::stdout(&images);
    assert!(
        !left.contains("ocibuild-step"),
        "step images left in podman's storage:\n{left}"
    );
}

/// The same recipe built in two empty stores gives the same image, owners and times
/// normalized; `verify` reruns the steps in an empty store and finds it reproduced.
#[test]
fn steps_rebuild_bit_for_bit_and_verify_reruns_them() {
    let t = common::tempdir();
    let Some(app) = project(t.path(), THREE) else {
        return;
    };
    let first = json(&build(t.path(), &app, &["--json"]));
    let other_store = t.path().join("other-store");
    let second = json(&common::run(
        common::ocibuild()
            .env("OCIBUILD_CACHE", &other_store)
            .args(["build", "--json", "--locked", "-o"])
            .arg(t.path().join("img2"))
            .arg(&app),
    ));
    assert_eq!(first["manifest"], second["manifest"]);
    let before = runs(t.path());
    let out = common::run(
        common::ocibuild()
            .env("OCIBUILD_PODMAN", counting_podman(t.path()))
            .arg("verify")
            .arg(&app)
            .arg("--against")
            .arg(t.path().join("img")),
    );
    common::assert_success(&out, "verify");
    assert_eq!(runs(t.path()), before + 3, "verify ran every step again");
}

/// A step whose output is not a function of its inputs: `--locked` runs it again (no cache)
/// and fails naming the step and the file that differs.
#[test]
fn locked_says_which_step_is_not_reproducible_and_which_files_differ() {
    let t = common::tempdir();
    let Some(app) = project(
        t.path(),
        r#"[[step]]
name = "stamp"
image = { recipe = "builder.toml" }
run = ["/bin/busybox", "sh", "-c", "/bin/busybox cat /proc/sys/kernel/random/uuid > /out/id; echo same > /out/same"]
outputs = [{ path = "/out", dest = "/etc/stamp" }]
"#,
    ) else {
        return;
    };
    common::assert_success(&build(t.path(), &app, &[]), "first build");
    let lock = fs::read_to_string(t.path().join("app.lock")).unwrap();
    assert!(lock.contains("[[step]]\nname = \"stamp\""), "{lock}");
    let out = build(t.path(), &app, &["--locked", "--no-cache"]);
    let err = common::stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("step `stamp` is not reproducible")
            && err.contains("files that differ:")
            && err.contains("etc/stamp/id: content sha256:")
            && err.contains(", line 1: \""),
        "{err}"
    );
    assert!(!err.contains("etc/stamp/same"), "{err}");
    assert_eq!(
        fs::read_to_string(t.path().join("app.lock")).unwrap(),
        lock,
        "--locked leaves the lock as it was"
    );
}

fn one_step(body: &str) -> String {
    format!("[[step]]\nname = \"s\"\n{body}\n")
}

/// What a step cannot do, each refused with one message naming the step; a failed step
/// caches nothing (the next build runs it again).
#[test]
fn bad_steps_are_refused_naming_the_step() {
    let t = common::tempdir();
    let img = "image = { recipe = \"builder.toml\" }\n";
    let out = "outputs = [{ path = \"/out\", dest = \"/o\" }]";
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            one_step(&format!(
                "{img}run = [\"/bin/busybox\", \"sh\", \"-c\", \"echo going; exit 3\"]\n{out}"
            )),
            vec!["step `s` failed (exit code 3)", "| going"],
        ),
        (
            one_step(&format!("{img}run = [\"/bin/busybox\", \"true\"]\n{out}")),
            vec!["step `s` wrote nothing to its output /out"],
        ),
        (
            one_step(&format!(
                "{img}network = true\nrun = [\"/bin/busybox\", \"true\"]\n{out}"
            )),
            vec!["step `s` asks for the network", "--allow-network"],
        ),
        (
            one_step(&format!(
                "{img}run = [\"/bin/busybox\", \"wget\", \"-q\", \"-O\", \"/out/x\", \"http://example.com/\"]\n{out}"
            )),
            vec!["step `s` failed", "the step has no network"],
        ),
        (
            one_step(&format!("run = [\"/bin/busybox\", \"true\"]\n{out}")),
            vec!["app.toml:", "step `s`: missing required key `image`"],
        ),
        (
            one_step(&format!(
                "image = {{ step = \"s\" }}\nrun = [\"/bin/busybox\", \"true\"]\n{out}"
            )),
            vec!["step `s` uses itself"],
        ),
        (
            one_step(&format!(
                "image = {{ recipe = \"app.toml\" }}\nrun = [\"/bin/busybox\", \"true\"]\n{out}"
            )),
            vec!["its builder recipe builds itself", "app.toml → "],
        ),
        (
            one_step(&format!(
                "{img}args = [\"--privileged\"]\nrun = [\"/bin/busybox\", \"true\"]\n{out}"
            )),
            vec!["unknown field `args`"],
        ),
        (
            one_step(&format!(
                "{img}fetch = [{{ url = \"file:///etc/hostname\", sha256 = \"{}\", dest = \"/f\" }}]\nrun = [\"/bin/busybox\", \"true\"]\n{out}",
                "0".repeat(64)
            )),
            vec!["step `s`: fetching file:///etc/hostname"],
        ),
    ];
    for (i, (steps, wanted)) in cases.into_iter().enumerate() {
        let dir = t.path().join(format!("case{i}"));
        let Some(app) = project(&dir, &steps) else {
            return;
        };
        let before = runs(&dir);
        let o = build(&dir, &app, &[]);
        let err = common::stderr(&o);
        assert!(!o.status.success(), "{steps}\n{err}");
        for w in &wanted {
            assert!(err.contains(w), "`{w}` missing for\n{steps}\n{err}");
        }
        assert!(!dir.join("img").exists(), "nothing written for\n{steps}");
        if runs(&dir) > before {
            // It ran and failed: nothing cached, so it runs again.
            let o = build(&dir, &app, &[]);
            assert!(!o.status.success());
            assert_eq!(
                runs(&dir),
                before + 2,
                "a failed step is not cached\n{steps}"
            );
        }
    }
}

/// A step whose input is the recipe's whole directory does not take in the build's own files
/// (the lock it writes, the output, the store): the rebuild is a cache hit.
#[test]
fn a_step_input_of_the_recipes_directory_leaves_the_builds_own_files_out() {
    let t = common::tempdir();
    // The project in `p`, the podman counter (which writes on each run) outside it.
    let p = t.path().join("p");
    let Some(app) = project(
        &p,
        r#"[[step]]
name = "list"
image = { recipe = "builder.toml" }
inputs = [{ src = ".", dest = "/src" }]
run = ["/bin/busybox", "sh", "-c", "cd /src && /bin/busybox find . | /bin/busybox sort > /out/files"]
outputs = [{ path = "/out", dest = "/files" }]
"#,
    ) else {
        return;
    };
    let build_in_p = || {
        json(&common::run(
            common::ocibuild()
                .env("OCIBUILD_PODMAN", counting_podman(t.path()))
                .args(["build", "--json", "-o"])
                .arg(p.join("img"))
                .arg(&app),
        ))
    };
    let first = build_in_p();
    let again = build_in_p();
    assert!(step_cached(&again, "list"), "{again:#}");
    assert_eq!(first["manifest"], again["manifest"]);
    assert_eq!(runs(t.path()), 1);
}

/// A step's input follows `[[layer]]`'s ignore rules: the directory's `.dockerignore`, then
/// the input's `ignore` list; an ignored file changing reruns nothing.
#[test]
fn a_step_input_takes_its_ignore_rules_like_a_layer() {
    let t = common::tempdir();
    let p = t.path().join("p");
    let Some(app) = project(
        &p,
        r#"[[step]]
name = "list"
image = { recipe = "builder.toml" }
inputs = [{ src = "in", dest = "/src", ignore = ["*.log", "!keep.log"] }]
run = ["/bin/busybox", "sh", "-c", "cd /src && /bin/busybox find . | /bin/busybox sort > /out/files"]
outputs = [{ path = "/out", dest = "/files" }]
"#,
    ) else {
        return;
    };
    let input = p.join("in");
    fs::create_dir_all(input.join("build")).unwrap();
    for f in ["main.c", "debug.log", "keep.log", "build/obj.o"] {
        fs::write(input.join(f), f).unwrap();
    }
    fs::write(input.join(".dockerignore"), "build\n").unwrap();
    let build_in_p = || {
        json(&common::run(
            common::ocibuild()
                .env("OCIBUILD_PODMAN", counting_podman(t.path()))
                .args(["build", "--json", "-o"])
                .arg(p.join("img"))
                .arg(&app),
        ))
    };
    let first = build_in_p();
    let layer = first["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "list")
        .unwrap();
    let listing = common::tar_listing(
        &p.join("img/blobs/sha256").join(
            layer["digest"]
                .as_str()
                .unwrap()
                .trim_start_matches("sha256:"),
        ),
    );
    let files = listing.iter().find(|l| l.ends_with("files/files")).unwrap();
    assert!(files.starts_with("f "), "{listing:?}");
    // The file's content: the input as the step saw it.
    let o = common::run_ok(
        std::process::Command::new("tar")
            .arg("-xOf")
            .arg(
                p.join("img/blobs/sha256").join(
                    layer["digest"]
                        .as_str()
                        .unwrap()
                        .trim_start_matches("sha256:"),
                ),
            )
            .arg("files/files"),
    );
    assert_eq!(
        common::stdout(&o),
        ".\n./.dockerignore\n./keep.log\n./main.c\n"
    );
    fs::write(input.join("debug.log"), "more").unwrap();
    fs::write(input.join("build/obj.o"), "rebuilt").unwrap();
    let again = build_in_p();
    assert!(step_cached(&again, "list"), "{again:#}");
    assert_eq!(first["manifest"], again["manifest"]);
    assert_eq!(runs(t.path()), 1);
}

/// The shipped recipe that builds PyCUDA from its sdist (recipes/pycuda-sdist.toml; its
/// builder is ~2 GB of .debs, so it is built by scripts/gpu-pycuda-sdist.sh, not here): it and
/// its builder recipe still load, the step takes the sdist by sha256 with no network, and its
/// two outputs land where the image's python3 and GPU test look.
#[test]
fn shipped_pycuda_sdist_recipe_loads_with_its_builder() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    let recipe = ocibuild::recipe::load(&repo.join("pycuda-sdist.toml")).unwrap();
    ocibuild::recipe::load(&repo.join("pycuda-sdist/builder.toml")).unwrap();
    assert_eq!(recipe.steps.len(), 1);
    let s = &recipe.steps[0];
    assert!(
        matches!(&s.image, ocibuild::recipe::StepImage::Recipe { written, .. } if written == "pycuda-sdist/builder.toml"),
        "{:?}",
        s.image
    );
    assert!(!s.network);
    assert_eq!(s.fetch.len(), 1);
    assert!(s.fetch[0].url.ends_with("/pycuda-2025.1.3.tar.gz"));
    let dests: Vec<&str> = s.outputs.iter().map(|o| o.dest.as_str()).collect();
    assert_eq!(
        dests,
        [
            "/usr/local/lib/python3.13/dist-packages",
            "/opt/pycuda-sdist"
        ]
    );
    let gpu: Vec<(&str, ocibuild::recipe::Gpu)> = recipe
        .tests
        .iter()
        .map(|t| (t.name.as_str(), t.gpu))
        .collect();
    assert_eq!(
        gpu,
        [
            ("pycuda-links", ocibuild::recipe::Gpu::Off),
            ("pycuda-ptx-saxpy", ocibuild::recipe::Gpu::Required)
        ]
    );
}

/// A download given without its sha256 is fetched once and pinned in the lock: the next
/// build takes the pin (and refuses a file that changed under it), and `--locked` without the
/// pin says how to get one.
#[test]
fn a_fetch_without_sha256_is_pinned_in_the_lock() {
    let t = common::tempdir();
    let file = t.path().join("payload.txt");
    fs::write(&file, "first\n").unwrap();
    let Some(app) = project(
        &t.path().join("p"),
        &format!(
            r#"[[step]]
name = "get"
image = {{ recipe = "builder.toml" }}
fetch = [{{ url = "file://{}", dest = "/dl/payload.txt" }}]
run = ["/bin/busybox", "cp", "/dl/payload.txt", "/out/"]
outputs = [{{ path = "/out", dest = "/data" }}]
"#,
            file.display()
        ),
    ) else {
        return;
    };
    let lock_path = t.path().join("p/app.lock");
    let locked_build = |extra: &[&str]| build(t.path(), &app, extra);
    // --locked with nothing pinned: refused, naming the download.
    let o = locked_build(&["--locked"]);
    assert!(!o.status.success());
    assert!(
        common::stderr(&o).contains("has no sha256 in the recipe and none pinned"),
        "{}",
        common::stderr(&o)
    );
    common::assert_success(&locked_build(&[]), "first build");
    let lock = fs::read_to_string(&lock_path).unwrap();
    let want = common::sha256_bytes(b"first\n");
    assert!(
        lock.contains(&format!(
            "[[step.fetch]]\nurl = \"file://{}\"\nsha256 = \"{want}\"",
            file.display()
        )),
        "{lock}"
    );
    common::assert_success(&locked_build(&["--locked"]), "--locked with the pin");
    // The file changed under its pin: a store that has the pinned bytes builds from them; an
    // empty one fetches it again and refuses what it got, the pin kept.
    fs::write(&file, "second\n").unwrap();
    common::assert_success(
        &locked_build(&["--no-cache"]),
        "the pinned bytes, from the store",
    );
    let o = common::run(
        common::ocibuild()
            .env("OCIBUILD_CACHE", t.path().join("empty-store"))
            .arg("build")
            .arg(&app)
            .arg("-o")
            .arg(t.path().join("img2")),
    );
    let err = common::stderr(&o);
    assert!(!o.status.success() && err.contains(&want), "{err}");
    assert_eq!(fs::read_to_string(&lock_path).unwrap(), lock);
}

/// A hostile step's output: a symlink to a host secret and one climbing out are kept as links
/// (the host's files are never read), the set-uid bit and a mode-000 directory are normalized,
/// and a FIFO is refused with nothing written.
#[test]
fn a_hostile_output_is_normalized_and_never_followed() {
    let t = common::tempdir();
    let Some(app) = project(
        t.path(),
        r#"[[step]]
name = "evil"
image = { recipe = "builder.toml" }
run = ['/bin/busybox', 'sh', '-c', 'cd /out && /bin/busybox ln -s /etc/shadow abs && /bin/busybox ln -s ../../../../etc/passwd rel && echo x > f && /bin/busybox chmod 4755 f && /bin/busybox mkdir locked && echo s > locked/secret && /bin/busybox chmod 000 locked']
outputs = [{ path = "/out", dest = "/o" }]
"#,
    ) else {
        return;
    };
    let doc = json(&build(t.path(), &app, &["--json"]));
    let (_, blob) = common::layer_named(&t.path().join("img"), &doc, "evil");
    let listing = common::tar_listing(&blob);
    for want in [
        "l 0777 0:0 o/abs -> /etc/shadow",
        "l 0777 0:0 o/rel -> ../../../../etc/passwd",
        "f 0755 0:0 o/f",
        "d 0755 0:0 o/locked/",
        "f 0644 0:0 o/locked/secret",
    ] {
        assert!(
            listing.contains(&want.to_string()),
            "{want} not in {listing:?}"
        );
    }
    fs::write(
        &app,
        fs::read_to_string(&app)
            .unwrap()
            .replace("cd /out && ", "cd /out && /bin/busybox mkfifo pipe && "),
    )
    .unwrap();
    fs::remove_dir_all(t.path().join("img")).unwrap();
    let o = build(t.path(), &app, &[]);
    assert!(!o.status.success());
    assert!(!t.path().join("img").exists(), "nothing written");
    assert!(
        common::stderr(&o).contains("a FIFO cannot be put in a layer"),
        "{}",
        common::stderr(&o)
    );
}
