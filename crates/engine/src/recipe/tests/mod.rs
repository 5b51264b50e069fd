use fs_err as fs;
use std::path::Path;

use tempfile::TempDir;

use super::*;
use crate::layer::ModePolicy;

mod errors;
mod keys;

/// A recipe directory: `app/` (with a .dockerignore), `plain/` (without), `one.txt`,
/// `extra.ignore`, `bad.ignore`.
fn fixture() -> TempDir {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir(d.path().join("app")).unwrap();
    fs::write(d.path().join("app/main.py"), "print('hi')\n").unwrap();
    fs::write(
        d.path().join("app/.dockerignore"),
        "\u{feff}# build output\n*.pyc  \n\n   \n!keep.pyc\n",
    )
    .unwrap();
    fs::create_dir(d.path().join("plain")).unwrap();
    fs::write(d.path().join("one.txt"), "1\n").unwrap();
    fs::write(d.path().join("k.asc"), "an OpenPGP key\n").unwrap();
    fs::write(d.path().join("extra.ignore"), "build/\n# c\n**/tmp\n").unwrap();
    fs::write(d.path().join("bad.ignore"), "ok\n\nfoo[a-\n").unwrap();
    d
}

fn parse_in(d: &TempDir, text: &str) -> Result<Recipe, RecipeError> {
    parse(text, Path::new("recipe.toml"), d.path())
}

/// The error's Display, with the fixture directory written as `{dir}`.
fn err(text: &str) -> String {
    let d = fixture();
    match parse_in(&d, text) {
        Ok(r) => panic!("expected an error, got {r:?}"),
        Err(e) => e
            .to_string()
            .replace(&d.path().display().to_string(), "{dir}"),
    }
}

const IMG: &str = "[image]\nname = \"hello\"\n";

fn with_img(rest: &str) -> String {
    format!("{IMG}{rest}")
}

const FULL: &str = r#"
# A complete recipe.
[image]
name = "example.com:5000/team/hello"
tag = "1.0"
compression = "zstd"
source-date-epoch = 1700000000
platform = "linux/aarch64"

[base]
image = "debian:bookworm-slim@sha256:0000000000000000000000000000000000000000000000000000000000000000"

[[layer]]
name = "app"
src = "./app/"
dest = "/srv//app/./"
ignore = ["*.log", "!keep.log"]
owner = "1000:1001"
mode = "preserve"

[[layer]]
name = "one.txt"
src = "one.txt"
dest = "/"

[[layer]]
name = "plain"
src = "plain"
dest = "/plain"
ignore-file = "extra.ignore"

[config]
env = { PYTHONUNBUFFERED = "1", "PATH" = "/usr/bin" }
entrypoint = ["/usr/bin/python3", "/srv/app/main.py"]
cmd = []
workdir = "/srv/app/"
user = "app:app"
labels = { "org.opencontainers.image.source" = "https://example.com/hello" }
exposed-ports = ["8080", 443, "53/UDP", "8080/tcp", "9000/sctp"]
annotations = { "org.example.team" = "ml" }
stop-signal = "SIGRTMIN+3"

[podman]
args = ["--runtime", "runc", "--network", "none"]

[[test]]
name = "version"
run = ["/usr/bin/python3", "--version"]
env = { A = "1" }
workdir = "/"
user = "0"
exit-code = 0
expect-output = "Python 3"
timeout = 30

[[test]]
name = "gpu"
check = "cuda-smoke"

[[test]]
name = "maybe gpu"
check = "cuda-smoke"
gpu = "optional"
exit-code = 3
network = true
"#;

#[test]
fn full_recipe() {
    let d = fixture();
    let r = parse_in(&d, FULL).unwrap();
    assert_eq!(r.path, Path::new("recipe.toml"));
    assert_eq!(r.dir, d.path());
    assert_eq!(
        r.image,
        Image {
            name: "example.com:5000/team/hello".into(),
            tag: "1.0".into(),
            compression: Compression::ZSTD,
            source_date_epoch: Some(1_700_000_000),
            epoch_from_git: false,
            platform: Platform {
                os: "linux".into(),
                architecture: "arm64".into(),
                variant: Some("v8".into()),
            },
            platforms: vec![],
            cuda: None,
            drop_unused_copies: false,
        }
    );
    assert_eq!(r.image.reference(), "example.com:5000/team/hello:1.0");
    assert_eq!(
        r.base,
        Base::Image {
            reference: "debian:bookworm-slim@sha256:0000000000000000000000000000000000000000000000000000000000000000".into()
        }
    );

    assert_eq!(r.layers.len(), 3);
    let app = &r.layers[0];
    assert_eq!(app.name, "app");
    assert_eq!(app.spec.src, d.path().join("app"));
    assert_eq!(app.spec.dest, "/srv/app");
    // The .dockerignore in src first (BOM, comment, blanks dropped, trailing space trimmed),
    // then the recipe's list.
    assert_eq!(
        app.spec.ignore,
        ["*.pyc", "!keep.pyc", "*.log", "!keep.log"]
    );
    assert_eq!((app.spec.uid, app.spec.gid), (1000, 1001));
    assert_eq!(app.spec.mode, ModePolicy::Preserve);
    let one = &r.layers[1];
    assert_eq!(one.spec.src, d.path().join("one.txt"));
    assert_eq!(one.spec.dest, "/");
    assert!(one.spec.ignore.is_empty());
    assert_eq!((one.spec.uid, one.spec.gid), (0, 0));
    assert_eq!(one.spec.mode, ModePolicy::Normalize);
    assert_eq!(r.layers[2].spec.ignore, ["build/", "**/tmp"]);

    let c = &r.config;
    assert_eq!(
        c.env.iter().collect::<Vec<_>>(),
        [
            (&"PATH".to_string(), &"/usr/bin".to_string()),
            (&"PYTHONUNBUFFERED".to_string(), &"1".to_string())
        ]
    );
    assert_eq!(
        c.entrypoint.as_deref(),
        Some(
            &[
                "/usr/bin/python3".to_string(),
                "/srv/app/main.py".to_string()
            ][..]
        )
    );
    assert_eq!(c.cmd, Some(vec![]));
    assert_eq!(c.workdir.as_deref(), Some("/srv/app"));
    assert_eq!(c.user.as_deref(), Some("app:app"));
    assert_eq!(
        c.labels
            .get("org.opencontainers.image.source")
            .map(String::as_str),
        Some("https://example.com/hello")
    );
    assert_eq!(
        c.exposed_ports,
        ["443/tcp", "53/udp", "8080/tcp", "9000/sctp"]
    );
    assert_eq!(
        c.annotations.get("org.example.team").map(String::as_str),
        Some("ml")
    );
    assert_eq!(c.stop_signal.as_deref(), Some("SIGRTMIN+3"));

    assert_eq!(r.podman.args, ["--runtime", "runc", "--network", "none"]);

    assert_eq!(
        r.tests[0],
        Test {
            name: "version".into(),
            run: TestRun::Command(vec!["/usr/bin/python3".into(), "--version".into()]),
            env: [("A".to_string(), "1".to_string())].into(),
            workdir: Some("/".into()),
            user: Some("0".into()),
            exit_code: 0,
            expect_output: Some("Python 3".into()),
            timeout_secs: 30,
            gpu: Gpu::Off,
            network: false,
        }
    );
    assert_eq!(r.tests[1].run, TestRun::Check("cuda-smoke".into()));
    assert_eq!(r.tests[1].gpu, Gpu::Required);
    assert_eq!(r.tests[1].timeout_secs, 300);
    assert_eq!(r.tests[2].name, "maybe gpu");
    assert_eq!(r.tests[2].gpu, Gpu::Optional);
    assert_eq!(r.tests[2].exit_code, 3);
    assert!(r.tests[2].network && !r.tests[1].network);
}

#[test]
fn minimal_recipe_defaults() {
    let d = fixture();
    let r = parse_in(&d, IMG).unwrap();
    assert_eq!(r.image.name, "hello");
    assert_eq!(r.image.tag, "latest");
    assert_eq!(r.image.compression, Compression::GZIP);
    for (toml, want) in [
        (
            "compression = \"zstd\"\ncompression-level = 1\n",
            Compression::Zstd(1),
        ),
        (
            "compression = \"zstd\"\ncompression-level = 19\n",
            Compression::Zstd(19),
        ),
        ("compression-level = 9\n", Compression::Gzip(9)),
        (
            "compression = \"gzip\"\ncompression-level = 1\n",
            Compression::Gzip(1),
        ),
    ] {
        let r = parse_in(&d, &format!("[image]\nname = \"hello\"\n{toml}")).unwrap();
        assert_eq!(r.image.compression, want, "{toml}");
    }
    assert_eq!(r.image.source_date_epoch, None);
    assert_eq!(r.image.platform, Platform::host());
    assert_eq!(r.base, Base::Scratch);
    assert!(r.layers.is_empty());
    assert_eq!(r.config, Config::default());
    assert!(r.tests.is_empty());
    assert_eq!(r.podman, Podman::default());

    let r = parse_in(
        &d,
        &with_img("[base]\nimage = \"scratch\"\n[config]\n[podman]\n"),
    )
    .unwrap();
    assert_eq!(r.base, Base::Scratch);
    assert_eq!(r.config.entrypoint, None);

    // Inline tables and arrays of inline tables are the same thing to TOML.
    let r = parse_in(
        &d,
        "image = { name = \"localhost/x\", platform = \"linux/amd64\" }\n\
         layer = [{ name = \"a\", src = \"one.txt\", dest = \"/a\" }]\n\
         test = [{ name = \"t\", run = [\"true\"], gpu = \"required\" }]\n",
    )
    .unwrap();
    assert_eq!(r.image.platform.to_string(), "linux/amd64");
    assert_eq!(r.layers[0].spec.dest, "/a");
    assert_eq!(r.tests[0].gpu, Gpu::Required);
}

#[test]
fn absolute_src_and_no_default_ignore_for_files() {
    let d = fixture();
    let abs = d.path().join("app");
    let r = parse_in(
        &d,
        &with_img(&format!(
            "[[layer]]\nname = \"a\"\nsrc = '{}'\ndest = \"/a\"\n",
            abs.display()
        )),
    )
    .unwrap();
    assert_eq!(r.layers[0].spec.src, abs);
    assert_eq!(r.layers[0].spec.ignore, ["*.pyc", "!keep.pyc"]);

    // An explicit ignore-file replaces the default <src>/.dockerignore.
    let r = parse_in(
        &d,
        &with_img(
            "[[layer]]\nname = \"a\"\nsrc = \"app\"\ndest = \"/a\"\nignore-file = \"extra.ignore\"\n",
        ),
    )
    .unwrap();
    assert_eq!(r.layers[0].spec.ignore, ["build/", "**/tmp"]);
}

#[test]
fn load_reads_and_resolves_against_the_recipe_dir() {
    let d = fixture();
    let path = d.path().join("recipe.toml");
    fs::write(
        &path,
        with_img("[[layer]]\nname = \"a\"\nsrc = \"one.txt\"\ndest = \"/a\"\n"),
    )
    .unwrap();
    let r = load(&path).unwrap();
    assert_eq!(r.path, path);
    assert_eq!(r.dir, d.path());
    assert_eq!(r.layers[0].spec.src, d.path().join("one.txt"));
}

#[test]
fn load_errors() {
    let d = fixture();
    let missing = d.path().join("nope.toml");
    let e = load(&missing).unwrap_err();
    assert!(matches!(e, RecipeError::Read { .. }));
    assert_eq!(e.location(), None);
    // The message says this level's context; the I/O error is its source.
    assert_eq!(
        e.to_string(),
        format!("{}: cannot read recipe", missing.display())
    );
    assert_eq!(
        crate::diag::chain(&e),
        format!(
            "{}: cannot read recipe: No such file or directory (os error 2)",
            missing.display()
        )
    );

    let bad = d.path().join("bad.toml");
    fs::write(&bad, b"[image]\nname = \"h\xc3llo\"\n").unwrap();
    let e = load(&bad).unwrap_err();
    assert!(matches!(e, RecipeError::Syntax { .. }));
    assert_eq!(e.location(), Some((2, 10)));
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2:10: invalid UTF-8: a recipe must be UTF-8 text",
            bad.display()
        )
    );
}

#[test]
fn error_accessors() {
    let d = fixture();
    let e = parse_in(&d, "[image]\nname = 1\n").unwrap_err();
    assert!(matches!(
        e,
        RecipeError::Invalid {
            line: 2,
            col: 8,
            ..
        }
    ));
    assert_eq!(e.path(), Path::new("recipe.toml"));
    assert_eq!(e.location(), Some((2, 8)));
    let e = parse_in(&d, "[image\n").unwrap_err();
    assert!(matches!(
        e,
        RecipeError::Syntax {
            line: 1,
            col: 7,
            ..
        }
    ));
}

#[test]
fn columns_count_characters() {
    // `é` is two bytes, one column; a tab is one column.
    assert_eq!(
        err("[image]\nname = \"hello\" # é\n\ttag = \"é\"\n"),
        "recipe.toml:3:8: invalid image tag `é`: expected 1 to 128 of `A-Z a-z 0-9 _ . -`, \
         not starting with `.` or `-`"
    );
    assert_eq!(line_col("ab\r\ncd", 4), (2, 1));
    assert_eq!(line_col("ab", 99), (1, 3));
}

/// Each recipe text and the Display of its error, one table per test, as an insta snapshot
/// (`crates/engine/src/recipe/tests/snapshots/`; `{dir}` stands for the recipe directory). After a
/// deliberate change of a message, `cargo insta review` (or `INSTA_UPDATE=always cargo
/// test`) rewrites the snapshot, and the diff shows every message that changed.
fn check_all(table: &str, cases: &[&str]) {
    let rendered: Vec<String> = cases
        .iter()
        .map(|text| format!("{}\n→ {}\n", text.trim_end(), err(text)))
        .collect();
    insta::assert_snapshot!(table, rendered.join("\n"));
}
