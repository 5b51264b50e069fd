//! `ocibuild build` as a new user meets it (items of the CLI issue): outputs with an unknown
//! transport, a layer over the recipe's own directory, a closed pipe, the shipped recipes'
//! ignore rules, `-q` and overrides, what the manifest follows, messages and `--json` keys.
//! (The other items: a mistyped subcommand and completions in cli_reference.rs, the
//! loopback registry in cli_registry_flags.rs, the test stage's ulimits in test_stage_cli.rs,
//! the lock's and pylock's errors in recipe_errors.rs.)

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use fs_err as fs;

use crate::common::{ocibuild, run, run_ok, stdout, tempdir};

pub(crate) fn app(dir: &Path) -> std::path::PathBuf {
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
