//! The command line as a new user meets it (one test per item of the CLI issue): outputs with
//! an unknown transport, a mistyped subcommand, a layer over the recipe's own directory, a
//! closed pipe, and the shipped recipes' ignore rules.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use fs_err as fs;

use crate::common::{ocibuild, run, run_ok, stdout, tempdir};

fn app(dir: &Path) -> std::path::PathBuf {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("hello.txt"), "hello\n").unwrap();
    let r = dir.join("app.toml");
    fs::write(
        &r,
        "[image]\nname = \"example.com/ux\"\n\n[[layer]]\nname = \"app\"\nsrc = \".\"\ndest = \"/app\"\n",
    )
    .unwrap();
    r
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Item 1: `-o` with a transport ocibuild does not write is refused, and nothing is created.
#[test]
fn unknown_output_transports_are_refused() {
    let t = tempdir();
    let r = app(&t.path().join("p"));
    for (out, transport) in [
        ("tar:x", "tar"),
        ("oci-archiv:y.tar", "oci-archiv"),
        ("docker://127.0.0.1:5055/ux/x:1", "docker"),
        ("containers-storage:x", "containers-storage"),
    ] {
        let o = run(ocibuild()
            .current_dir(t.path())
            .args(["build", "-o", out])
            .arg(&r));
        let err = stderr(&o);
        assert!(!o.status.success(), "{out}: built");
        assert!(
            err.starts_with(&format!(
                "error: unknown output transport `{transport}:` in `{out}`: expected DIR, oci:DIR, oci-archive:FILE or docker-archive:FILE"
            )),
            "{err}"
        );
    }
    let left: Vec<_> = fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["p"], "nothing created");
    // A directory whose name has a colon is still reachable.
    run_ok(
        ocibuild()
            .current_dir(t.path())
            .args(["build", "-o", "./a:b"])
            .arg(&r),
    );
    assert!(t.path().join("a:b/index.json").is_file());
}

/// Item 2: A mistyped subcommand gets clap's suggestion instead of "cannot read recipe".
#[test]
fn a_mistyped_subcommand_is_suggested() {
    let t = tempdir();
    let r = app(&t.path().join("p"));
    let o = run(ocibuild().arg("buidl").arg(&r));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("unrecognized subcommand 'buidl'")
            && err.contains("similar subcommand exists: 'build'"),
        "{err}"
    );
    let o = run(ocibuild().arg("version"));
    assert!(
        stderr(&o).contains("unrecognized subcommand 'version'"),
        "{}",
        stderr(&o)
    );
    // The shorthand still takes a recipe.
    let o = run_ok(ocibuild().current_dir(t.path().join("p")).arg("app.toml"));
    assert!(
        stdout(&o).contains("example.com/ux:latest"),
        "{}",
        stdout(&o)
    );
}

/// Item 3: `src = "."` beside the default output and the lock: the next build has the same digest.
#[test]
fn the_recipes_own_output_and_lock_stay_out_of_its_layers() {
    let t = tempdir();
    let p = t.path().join("p");
    let r = app(&p);
    let digest = |o: &std::process::Output| {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        // The layer: the manifest also carries the lock's digest, which `lock` just wrote.
        v["layers"][0]["digest"].as_str().unwrap().to_string()
    };
    let first = run_ok(ocibuild().current_dir(&p).args(["build", "--json"]).arg(&r));
    run_ok(ocibuild().current_dir(&p).arg("lock").arg(&r));
    assert!(p.join("app.oci/index.json").is_file() && p.join("app.lock").is_file());
    let second = run_ok(ocibuild().current_dir(&p).args(["build", "--json"]).arg(&r));
    assert_eq!(digest(&first), digest(&second));
    // An explicit output inside the source too.
    let third = run_ok(
        ocibuild()
            .current_dir(&p)
            .args(["build", "--json", "-o", "out/img"])
            .arg(&r),
    );
    let fourth = run_ok(
        ocibuild()
            .current_dir(&p)
            .args(["build", "--json", "-o", "out/img"])
            .arg(&r),
    );
    assert_eq!(digest(&third), digest(&fourth));
    assert_eq!(digest(&first), digest(&third));
}

/// Item 11: `ocibuild … | head -1` ends quietly when the reader goes away.
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    let t = tempdir();
    let r = app(&t.path().join("p"));
    let a = t.path().join("a");
    run_ok(ocibuild().args(["build", "-o"]).arg(&a).arg(&r));
    fs::write(t.path().join("p/hello.txt"), "other\n".repeat(1000)).unwrap();
    for i in 0..3000 {
        fs::write(t.path().join(format!("p/f{i}")), "x").unwrap();
    }
    let b = t.path().join("b");
    run_ok(ocibuild().args(["build", "-o"]).arg(&b).arg(&r));
    let mut child = ocibuild()
        .args(["diff", "--semantic"])
        .arg(&a)
        .arg(&b)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read one byte, then close the pipe.
    let mut first = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
}

/// Item 15: The shipped recipes leave out `__pycache__` and `*.pyc` at any depth.
#[test]
fn shipped_recipes_ignore_bytecode_at_any_depth() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
    let mut checked = 0;
    for e in fs::read_dir(&repo).unwrap() {
        let p = e.unwrap().path();
        let text = fs::read_to_string(&p).unwrap_or_default();
        if p.extension().is_none_or(|x| x != "toml") || !text.contains("__pycache__") {
            continue;
        }
        let Ok(recipe) = ocibuild::recipe::load(&p) else {
            continue;
        };
        for l in recipe
            .layers
            .iter()
            .filter(|l| l.spec.ignore.iter().any(|i| i.contains("__pycache__")))
        {
            let m = ocibuild::layer::ignore::IgnoreMatcher::new(&l.spec.ignore).unwrap();
            for path in [
                "pkg/sub/__pycache__/m.cpython-311.pyc",
                "__pycache__/x.pyc",
                "a/b/c.pyc",
            ] {
                assert!(
                    m.excluded(path),
                    "{}: layer {} keeps {path}",
                    p.display(),
                    l.name
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 3, "the recipes that ignore bytecode: {checked}");
}

/// Item 5: A registry on 127.0.0.1 that speaks plain HTTP is reached without a registries file, as
/// crane and skopeo reach it; `--tls-verify=false` is accepted as skopeo spells it.
#[test]
fn a_loopback_registry_speaks_http_without_settings() {
    use crate::common::registry::{auth_file, start_registry, PASS};
    if !crate::common::require_tool("docker-registry") || !crate::common::require_tool("skopeo") {
        return;
    }
    let t = tempdir();
    let r = app(&t.path().join("p"));
    let layout = t.path().join("img");
    run_ok(ocibuild().args(["build", "-o"]).arg(&layout).arg(&r));
    let reg = start_registry(None);
    crate::common::registry::push_layout(&layout, "latest", &reg.addr, "ux/app:1");
    let auth = auth_file(t.path(), &reg.addr, PASS);
    for extra in [&[][..], &["--tls-verify=false"]] {
        let o = run(ocibuild()
            .env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"))
            .args(extra)
            .arg("diff")
            .arg(format!("docker://{}/ux/app:1", reg.addr))
            .arg(format!("oci:{}", layout.display())));
        assert!(
            o.status.success(),
            "{extra:?}: {}{}",
            stdout(&o),
            stderr(&o)
        );
    }

    // Item 10: push takes `docker://` too, and refuses a digest that is not the image's.
    let push = |dest: String| {
        run(ocibuild()
            .env("REGISTRY_AUTH_FILE", &auth)
            .env_remove("OCIBUILD_REGISTRIES")
            .env("XDG_CONFIG_HOME", t.path().join("no-config"))
            .arg("push")
            .arg(&layout)
            .arg(dest))
    };
    let o = push(format!("docker://{}/ux/app:2", reg.addr));
    assert!(o.status.success(), "{}", stderr(&o));
    let other = format!("sha256:{}", "0".repeat(64));
    let o = push(format!("{}/ux/app@{other}", reg.addr));
    let err = stderr(&o);
    assert!(!o.status.success(), "pushed to another digest");
    assert!(
        err.contains(&format!(
            "names digest {other}, but the image pushed is sha256:"
        )) && err.contains("push to a tag, or to the digest of this image"),
        "{err}"
    );
}

/// Item 4: the test stage runs without `--ulimit` flags on a host that refuses podman's
/// default limits (ocibuild passes its own, then small ones).
#[test]
fn the_test_stage_needs_no_ulimit_flags() {
    if !crate::common::require_tool("podman") {
        return;
    }
    let Some(busybox) = crate::common::require_static_busybox() else {
        return;
    };
    let t = tempdir();
    let r = t.path().join("bb.toml");
    fs::write(
        &r,
        format!(
            "[image]\nname = \"example.com/bb\"\n\n[[layer]]\nname = \"busybox\"\nsrc = \"{}\"\ndest = \"/bin/busybox\"\n\n[[test]]\nname = \"echo\"\nrun = [\"/bin/busybox\", \"echo\", \"hi from the test\"]\nexpect-output = \"hi from the test\"\n",
            busybox.display()
        ),
    )
    .unwrap();
    // The harness's own flags, less its ulimits.
    let flags = crate::common::podman_args();
    let mut kept = Vec::new();
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        if f == "--ulimit" {
            it.next();
        } else if !f.starts_with("--ulimit=") {
            kept.push(f.clone());
        }
    }
    let o = run(ocibuild()
        .env("OCIBUILD_PODMAN_ARGS", kept.join(" "))
        .args(["build", "--test", "-o"])
        .arg(t.path().join("img"))
        .arg(&r));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("test echo ... passed"),
        "{}",
        stdout(&o)
    );
    // Item 16 (part): `-q --test` prints only the reference; a pass says nothing more.
    let o = run_ok(
        ocibuild()
            .env("OCIBUILD_PODMAN_ARGS", kept.join(" "))
            .args(["-q", "build", "--test", "-o"])
            .arg(t.path().join("img"))
            .arg(&r),
    );
    let lines: Vec<String> = stdout(&o).lines().map(String::from).collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with("example.com/bb:latest@sha256:"),
        "{lines:?}"
    );

    // Item 14: no image named after the layout is left in podman's storage...
    let images = run_ok(std::process::Command::new("podman").args([
        "images",
        "--format",
        "{{.Repository}}",
    ]));
    let img = t.path().join("img");
    assert!(
        !stdout(&images).contains(&img.display().to_string()),
        "{}",
        stdout(&images)
    );
    // ...and `test` refuses an image the recipe no longer builds.
    let text = fs::read_to_string(&r).unwrap();
    fs::write(
        &r,
        text.replace("[[test]]", "[config]\nenv = { X = \"1\" }\n\n[[test]]"),
    )
    .unwrap();
    let o = run(ocibuild()
        .env("OCIBUILD_PODMAN_ARGS", kept.join(" "))
        .args(["test", "-o"])
        .arg(&img)
        .arg(&r));
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("was built from another version of")
            && err.contains("--test`"),
        "{err}"
    );
}

/// Item 6: a lock whose `requires-python` the image's interpreter misses says the interpreter's
/// real version and the `uv pip compile` line that locks for this image.
#[test]
fn a_lock_for_another_python_says_how_to_lock_for_this_one() {
    use crate::aptfix::{apt_recipe, fixture, python_universe};
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    fs::write(
        t.path().join("pylock.toml"),
        "lock-version = \"1.0\"\ncreated-by = \"uv\"\nrequires-python = \">=3.12.5\"\n",
    )
    .unwrap();
    let r = apt_recipe(
        t.path(),
        &f,
        &f.key,
        &["python3"],
        "
[python]
lock = \"pylock.toml\"
",
    );
    let o = run(ocibuild()
        .args(["build", "-o"])
        .arg(t.path().join("img"))
        .arg(&r));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("requires-python >=3.12.5 does not hold for Python 3.12.1")
            && err.contains("lock for this image (3.12.1): uv pip compile requirements.in --format pylock.toml -o pylock.toml --python-version 3.12.1 --python-platform x86_64-manylinux_2_36"),
        "{err}"
    );
}

/// Item 6: a pylock error about one package names the file and the package's line and column
/// (its `name`): an sdist-only package, and one from a VCS checkout.
#[test]
fn a_pylock_package_error_is_placed_at_the_package() {
    use crate::aptfix::{apt_recipe, fixture, python_universe};
    let f = fixture(&python_universe(), false);
    let h = "0".repeat(64);
    let cases = [
        (
            format!("lock-version = \"1.0\"\n\n[[packages]]\nname = \"only-sdist\"\nsdist = {{ url = \"https://x/only-sdist-1.tar.gz\", hashes = {{ sha256 = \"{h}\" }} }}\n"),
            "pylock.toml:4:8: only-sdist: only an sdist, and [python] names no `sdist-builder` to build it in: add `sdist-builder = { recipe = \"builder.toml\" }`",
        ),
        (
            "lock-version = \"1.0\"\n[[packages]]\nname = \"from-git\"\nvcs = { type = \"git\", url = \"u\" }\n".to_string(),
            "pylock.toml:3:8: package from-git comes from a VCS checkout",
        ),
    ];
    for (lock, want) in cases {
        let t = tempdir();
        fs::write(t.path().join("pylock.toml"), lock).unwrap();
        let r = apt_recipe(
            t.path(),
            &f,
            &f.key,
            &["python3"],
            "\n[python]\nlock = \"pylock.toml\"\n",
        );
        let o = run(ocibuild()
            .args(["build", "-o"])
            .arg(t.path().join("img"))
            .arg(&r));
        let err = stderr(&o);
        assert!(!o.status.success());
        assert!(err.contains(want), "want {want:?}: {err}");
    }
}

/// Item 9: a `signed-by` key that is missing is a recipe error even with a lock, and the key's
/// sha256 is pinned in the lock: another key makes `--locked` refuse.
#[test]
fn the_archive_key_must_exist_and_is_pinned() {
    use crate::aptfix::{apt_recipe, fixture, python_universe};
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    let key = t.path().join("archive.asc");
    fs::copy(&f.key, &key).unwrap();
    let r = apt_recipe(t.path(), &f, &key, &["tool"], "");
    run_ok(
        ocibuild()
            .args(["build", "-o"])
            .arg(t.path().join("img"))
            .arg(&r),
    );
    let lock = fs::read_to_string(t.path().join("app.lock")).unwrap();
    let pinned = crate::common::sha256_file(&key).unwrap();
    assert!(lock.contains(&format!("key = \"{pinned}\"")), "{lock}");

    fs::copy(&f.other_key, &key).unwrap();
    let o = run(ocibuild()
        .args(["build", "--locked", "-o"])
        .arg(t.path().join("img2"))
        .arg(&r));
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("a source's signed-by key changed"),
        "{err}"
    );

    fs::remove_file(&key).unwrap();
    let o = run(ocibuild()
        .args(["build", "--locked", "-o"])
        .arg(t.path().join("img3"))
        .arg(&r));
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("app.toml:")
            && err.contains(&format!("signed-by `{}`: no such file", key.display())),
        "{err}"
    );
}

/// Item 16 (part): `-q` prints only the result; `--tag` and `--platform` override the recipe.
#[test]
fn quiet_prints_the_reference_and_overrides_apply() {
    let t = tempdir();
    let r = app(&t.path().join("p"));
    let out = t.path().join("img");
    let o = run_ok(
        ocibuild()
            .args([
                "-q",
                "build",
                "--tag",
                "v9",
                "--platform",
                "linux/arm64",
                "-o",
            ])
            .arg(&out)
            .arg(&r),
    );
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].starts_with("example.com/ux:v9@sha256:"), "{text}");
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("index.json")).unwrap()).unwrap();
    let m = &index["manifests"][0];
    assert_eq!(m["platform"]["architecture"], "arm64", "{index:#}");
    assert_eq!(m["annotations"]["org.opencontainers.image.ref.name"], "v9");
    let o = run(ocibuild()
        .args(["build", "--tag=b@d", "-o"])
        .arg(&out)
        .arg(&r));
    assert!(stderr(&o).contains("--tag `b@d`"), "{}", stderr(&o));
}

/// Item 16 (part): shell completions and a man page, from the command definition.
#[test]
fn completions_and_the_man_page() {
    let t = tempdir();
    let o = run_ok(ocibuild().args(["completions", "bash"]));
    let script = stdout(&o);
    assert!(
        script.contains("_ocibuild()") && script.contains("--tls-verify"),
        "{script}"
    );
    let f = t.path().join("ocibuild.bash");
    fs::write(&f, &script).unwrap();
    run_ok(std::process::Command::new("bash").arg("-n").arg(&f));
    for shell in ["zsh", "fish"] {
        let o = run_ok(ocibuild().args(["completions", shell]));
        assert!(stdout(&o).contains("build"), "{shell}");
    }
    let o = run_ok(ocibuild().arg("man"));
    let page = stdout(&o);
    assert!(
        page.contains(".TH ocibuild 1") && page.contains("build"),
        "{page}"
    );
}

/// Item 8: a comment, a changed `[[test]]` or `[podman]` leave the image as it is; a changed
/// value of the image does not.
#[test]
fn the_manifest_follows_what_defines_the_image_not_the_recipes_bytes() {
    let t = tempdir();
    let p = t.path().join("p");
    fs::create_dir_all(p.join("app")).unwrap();
    fs::write(p.join("app/hello.txt"), "hello\n").unwrap();
    let r = p.join("app.toml");
    fs::write(
        &r,
        "[image]\nname = \"example.com/ux\"\n\n[[layer]]\nname = \"app\"\nsrc = \"app\"\ndest = \"/app\"\n",
    )
    .unwrap();
    let manifest = |out: &str| {
        let o = run_ok(
            ocibuild()
                .args(["build", "--json", "-o"])
                .arg(p.join(out))
                .arg(&r),
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["manifest"].as_str().unwrap().to_string()
    };
    let first = manifest("a");
    let text = fs::read_to_string(&r).unwrap();
    fs::write(
        &r,
        format!("# a comment\n{text}\n[podman]\nargs = [\"--network\", \"none\"]\n\n[[test]]\nname = \"t\"\nrun = [\"/bin/true\"]\n"),
    )
    .unwrap();
    assert_eq!(manifest("b"), first);
    let o = run(ocibuild()
        .args(["diff", "--semantic"])
        .arg(p.join("a"))
        .arg(p.join("b")));
    assert!(
        o.status.success() && stdout(&o).contains("result: identical"),
        "{}",
        stdout(&o)
    );
    fs::write(
        &r,
        text.replace("name = \"example.com/ux\"", "name = \"example.com/ux2\""),
    )
    .unwrap();
    assert_ne!(manifest("c"), first);
}

/// Item 12: a message says its cause once; item 16 (part): the output is said in full.
#[test]
fn messages_say_each_cause_once_and_outputs_are_said_in_full() {
    use crate::aptfix::{apt_recipe, fixture, python_universe};
    let f = fixture(&python_universe(), false);
    let t = tempdir();
    let r = apt_recipe(t.path(), &f, &f.key, &["pyhton3"], "");
    let o = run(ocibuild()
        .args(["build", "-o"])
        .arg(t.path().join("img"))
        .arg(&r));
    let err = stderr(&o);
    // Where the request is written, then what is wrong with it, each once.
    assert_eq!(
        err.trim(),
        format!(
            "error: {}:12:13: [apt]: unknown package `pyhton3` (did you mean python3?)",
            r.display()
        )
    );
    let p = app(&t.path().join("p"));
    let o = run_ok(
        ocibuild()
            .current_dir(t.path())
            .args(["build", "--json", "-o", "rel/img"])
            .arg(&p),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["output"],
        format!("oci:{}", t.path().join("rel/img").display())
    );
}

/// Item 16 (part): every `--json` document has camelCase keys (docs/json.md).
#[test]
fn json_keys_are_camel_case() {
    fn snake(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    if k.contains('_') {
                        out.push(format!("{path}.{k}"));
                    }
                    snake(x, &format!("{path}.{k}"), out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| snake(x, path, out)),
            _ => {}
        }
    }
    let t = tempdir();
    let r = app(&t.path().join("p"));
    let cache = t.path().join("cache");
    let json = |args: &[&str]| -> serde_json::Value {
        let o = run(ocibuild().env("OCIBUILD_CACHE", &cache).args(args));
        serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{args:?}: {}", stdout(&o)))
    };
    let img = t.path().join("img").display().to_string();
    let img2 = t.path().join("img2").display().to_string();
    let recipe = r.display().to_string();
    let docs = [
        json(&["build", "--json", "-o", &img, &recipe]),
        json(&["build", "--json", "--no-cache", "-o", &img2, &recipe]),
        json(&["diff", "--json", &img, &img2]),
        json(&[
            "verify",
            "--json",
            &recipe,
            "--against",
            &format!("oci:{img}"),
        ]),
        json(&["cache", "verify", "--json"]),
        json(&["cache", "prune", "--json"]),
    ];
    let mut bad = Vec::new();
    for d in &docs {
        snake(d, "", &mut bad);
    }
    assert!(bad.is_empty(), "snake_case keys: {bad:?}");
}
