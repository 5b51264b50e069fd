//! `ocibuild import` end to end: imported recipes that build (a scratch image with the
//! Dockerfile's config, `--scratch`, an output inside the context, a local tar's ADD as a
//! step), a pylock without uv, and a hostile Dockerfile that must read nothing outside its
//! context.

use std::path::Path;

use crate::common::{ocibuild, run, stderr, tempdir};
use crate::import::{import_json, write_case};
use crate::import_corpus::CORPUS;

/// Three scratch corpus files build offline, and their image configs are the Dockerfile's.
#[test]
fn scratch_imports_build_with_the_dockerfile_config() {
    let dir = tempdir();
    for (name, cmd, workdir, ports, env) in [
        (
            "scratch-static",
            vec!["/bin/server", "--listen", ":8080"],
            "/srv",
            vec!["8080/tcp", "9090/udp"],
            "APP_MODE=production",
        ),
        (
            "scratch-data",
            vec!["--check", "/data"],
            "/data",
            vec![],
            "DATA_DIR=/data",
        ),
        (
            "scratch-two-stage",
            vec!["/var/www/serve", "--port", "8081"],
            "/var/www",
            vec!["8081/tcp"],
            "PORT=8081",
        ),
    ] {
        let (_, text) = CORPUS.iter().find(|(n, _)| *n == name).unwrap();
        let ctx = write_case(dir.path(), name, text);
        import_json(&ctx, &[]);
        let layout = ctx.join("out");
        let out = run(ocibuild()
            .arg("build")
            .arg(ctx.join("recipe.toml"))
            .arg("-o")
            .arg(&layout)
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .env("SOURCE_DATE_EPOCH", "0"));
        assert!(
            out.status.success(),
            "{name}: {}\n{}",
            stderr(&out),
            fs_err::read_to_string(ctx.join("recipe.toml")).unwrap()
        );
        let config = layout_config(&layout);
        let c = &config["config"];
        let strs = |v: &serde_json::Value| {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .map(|x| x.as_str().unwrap().to_string())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        };
        assert_eq!(strs(&c["Cmd"]), cmd, "{name}: {c}");
        assert_eq!(c["WorkingDir"], workdir, "{name}");
        assert!(strs(&c["Env"]).iter().any(|e| e == env), "{name}: {c}");
        let got: Vec<String> = c["ExposedPorts"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        assert_eq!(got, ports, "{name}");
    }
}

fn layout_config(layout: &Path) -> serde_json::Value {
    let blob = |d: &str| {
        let hex = d.trim_start_matches("sha256:");
        serde_json::from_slice::<serde_json::Value>(
            &fs_err::read(layout.join("blobs/sha256").join(hex)).unwrap(),
        )
        .unwrap()
    };
    let index: serde_json::Value =
        serde_json::from_slice(&fs_err::read(layout.join("index.json")).unwrap()).unwrap();
    let manifest = blob(index["manifests"][0]["digest"].as_str().unwrap());
    blob(manifest["config"]["digest"].as_str().unwrap())
}

/// `--scratch`: the Ubuntu FROM becomes scratch + `[apt] essential = true`, the packages and
/// the archive kept; the table says what differs.
#[test]
fn scratch_flag_replaces_a_distribution_base() {
    let dir = tempdir();
    let (_, text) = CORPUS.iter().find(|(n, _)| *n == "seed-cuda").unwrap();
    let ctx = write_case(dir.path(), "seed-scratch", text);
    let doc = import_json(&ctx, &["--scratch"]);
    assert_eq!(
        doc["rows"][0]["class"], "approximated",
        "{}",
        doc["rows"][0]
    );
    let recipe = fs_err::read_to_string(ctx.join("recipe.toml")).unwrap();
    let v: toml::Value = toml::from_str(&recipe).unwrap();
    assert!(v.get("base").is_none(), "{recipe}");
    assert_eq!(v["apt"]["essential"].as_bool(), Some(true), "{recipe}");
    assert_eq!(v["apt"]["source"][0]["suite"].as_str(), Some("noble"));
    assert!(v["apt"]["packages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p.as_str() == Some("python3")));
}

/// `-o DIR` inside the context: layer sources are relative to DIR, and a layer of the whole
/// context leaves DIR (the recipe) out.
#[test]
fn output_dir_inside_the_context() {
    let dir = tempdir();
    let ctx = write_case(
        dir.path(),
        "sub",
        "FROM python:3.12-slim\nCOPY . /app\nCOPY requirements.txt /tmp/\n",
    );
    let out = run(ocibuild()
        .arg("import")
        .arg(ctx.join("Dockerfile"))
        .arg("-o")
        .arg(ctx.join("ocibuild")));
    assert!(out.status.success(), "{}", stderr(&out));
    let recipe = fs_err::read_to_string(ctx.join("ocibuild/recipe.toml")).unwrap();
    assert!(
        recipe.contains("src = \"..\"\ndest = \"/app\"\nignore = [\"ocibuild\"]"),
        "{recipe}"
    );
    assert!(
        recipe.contains("src = \"../requirements.txt\"\ndest = \"/tmp/requirements.txt\""),
        "{recipe}"
    );
}

/// `--pylock` without uv on PATH: the files are written, then the error names uv (exit 1).
#[test]
fn pylock_without_uv_names_it() {
    let dir = tempdir();
    let ctx = write_case(
        dir.path(),
        "nouv",
        "FROM python:3.12-slim\nRUN pip install rich\n",
    );
    let empty = dir.path().join("empty-path");
    fs_err::create_dir_all(&empty).unwrap();
    let out = run(ocibuild()
        .arg("import")
        .arg(ctx.join("Dockerfile"))
        .arg("--pylock")
        .env("PATH", &empty));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("running uv (for pylock.toml)"),
        "{}",
        stderr(&out)
    );
    let req = fs_err::read_to_string(ctx.join("requirements.in")).unwrap();
    assert!(req.contains("uv pip compile requirements.in --format pylock.toml -o pylock.toml --python-version 3.12 --python-platform x86_64-manylinux_2_41"), "{req}");
    assert!(req.lines().any(|l| l.starts_with("rich ")), "{req}");
}

/// `ADD archive.tar.gz /opt/` is the archive's contents: a step in the stage's image unpacks
/// the context's archive (an input) into its output, a layer at `/opt`; it loads as a recipe.
#[test]
fn add_of_a_local_tar_is_unpacked_by_a_step() {
    let dir = tempdir();
    let ctx = write_case(
        dir.path(),
        "add-tar",
        "FROM debian:trixie\nADD vendor/rootfs.tar.gz /opt/\n",
    );
    fs_err::create_dir_all(ctx.join("vendor")).unwrap();
    fs_err::write(ctx.join("vendor/rootfs.tar.gz"), "").unwrap();
    let doc = import_json(&ctx, &[]);
    let row = &doc["rows"][1];
    assert_eq!(row["class"], "step", "{doc:#}");
    let recipe = fs_err::read_to_string(ctx.join("recipe.toml")).unwrap();
    for want in [
        "image = \"debian:trixie\"",
        "inputs = [{ src = \"vendor/rootfs.tar.gz\", dest = \"/in/rootfs.tar.gz\" }]",
        "run = [\"/bin/sh\", \"-c\", \"tar -xf /in/rootfs.tar.gz -C /out\"]",
        "outputs = [{ path = \"/out\", dest = \"/opt\" }]",
    ] {
        assert!(recipe.contains(want), "no {want} in:\n{recipe}");
    }
    assert!(!recipe.contains("TODO: declare the outputs"), "{recipe}");
    ocibuild::recipe::load(&ctx.join("recipe.toml"))
        .unwrap_or_else(|e| panic!("{}", ocibuild::diag::chain(&e)));
}

/// A hostile Dockerfile: sources that climb out of the context (Docker refuses them) are not
/// copied, in the image's stage and in a builder's; quotes, brackets and newlines in values
/// stay values (the recipe has no table the Dockerfile did not ask for) and the recipe loads.
#[test]
fn a_hostile_dockerfile_reads_nothing_outside_its_context_and_injects_no_keys() {
    let dir = tempdir();
    let ctx = write_case(
        dir.path(),
        "hostile",
        "FROM debian:trixie AS build\n\
         COPY ../../../etc/shadow /src/shadow\n\
         RUN cp /src/shadow /out/x\n\
         FROM debian:trixie\n\
         ENV A=\"x\\\"\\n[podman]\\nargs = [\\\"--privileged\\\"]\"\n\
         COPY ../../etc/passwd /p\n\
         COPY --from=build /out/x /x\n\
         CMD [\"sh\", \"-c\", \"echo \\\"]\\n[image]\"]\n",
    );
    let doc = import_json(&ctx, &[]);
    let rows = doc["rows"].as_array().unwrap();
    let copy = rows
        .iter()
        .find(|r| {
            r["text"]
                .as_str()
                .unwrap_or("")
                .starts_with("COPY ../../etc/passwd")
        })
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(copy["class"], "not-translated", "{copy:#}");
    let recipe = fs_err::read_to_string(ctx.join("recipe.toml")).unwrap();
    assert!(
        !recipe.contains("etc/passwd\"") && !recipe.contains("etc/shadow\""),
        "{recipe}"
    );
    let r = ocibuild::recipe::load(&ctx.join("recipe.toml"))
        .unwrap_or_else(|e| panic!("{}\n{recipe}", ocibuild::diag::chain(&e)));
    assert!(r.podman.args.is_empty(), "{recipe}");
    assert!(r.config.env["A"].contains("[podman]"), "{:?}", r.config.env);
    assert!(
        r.layers.iter().all(|l| l.spec.src.starts_with(&ctx)),
        "{:?}",
        r.layers
    );
}
