//! `ocibuild import`: every corpus Dockerfile parses and every instruction gets a row; the apt
//! and pip package sets equal an independent scan; bad inputs are placed and named; the seed
//! Dockerfile imports to the committed seed recipe; scratch imports build.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::{ocibuild, run, stderr, stdout, tempdir};
use crate::import_corpus::{context_files, CORPUS};

/// A corpus Dockerfile and its context written into `dir/NAME`.
pub fn write_case(dir: &Path, name: &str, text: &str) -> PathBuf {
    let ctx = dir.join(name);
    fs_err::create_dir_all(&ctx).unwrap();
    fs_err::write(ctx.join("Dockerfile"), text).unwrap();
    for (f, body) in context_files(name) {
        let p = ctx.join(f);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, body).unwrap();
    }
    ctx
}

pub fn import_json(ctx: &Path, extra: &[&str]) -> serde_json::Value {
    let out = run(ocibuild()
        .arg("import")
        .arg(ctx.join("Dockerfile"))
        .arg("--json")
        .args(extra));
    assert!(
        out.status.success(),
        "import {}: {}",
        ctx.display(),
        stderr(&out)
    );
    serde_json::from_str(&stdout(&out)).expect("import --json is JSON")
}

/// Instructions counted without the parser: logical lines (continuations joined, heredoc
/// bodies and comments skipped) whose first word is an instruction keyword.
fn count_instructions(text: &str) -> usize {
    const KEYWORDS: &[&str] = &[
        "FROM",
        "RUN",
        "CMD",
        "LABEL",
        "MAINTAINER",
        "EXPOSE",
        "ENV",
        "ADD",
        "COPY",
        "ENTRYPOINT",
        "VOLUME",
        "USER",
        "WORKDIR",
        "ARG",
        "ONBUILD",
        "STOPSIGNAL",
        "HEALTHCHECK",
        "SHELL",
    ];
    let mut n = 0;
    let mut continued = false;
    let mut heredoc: Option<String> = None;
    for line in text.lines() {
        if let Some(end) = &heredoc {
            if line.trim() == end {
                heredoc = None;
            }
            continue;
        }
        let t = line.trim();
        if t.starts_with('#') || t.is_empty() {
            continue;
        }
        if !continued {
            let first = t
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_uppercase();
            if KEYWORDS.contains(&first.as_str()) {
                n += 1;
            }
        }
        if let Some(i) = t.find("<<") {
            let d: String = t[i + 2..]
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            heredoc = Some(d);
        }
        continued = t.ends_with('\\');
    }
    n
}

/// The target stage's lines: from its FROM (through the stages it is built FROM) to the end.
fn target_lines(text: &str) -> Vec<String> {
    // Comment lines go first (also inside a continued instruction), then continuations.
    let uncommented: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    let joined = uncommented.join("\n").replace("\\\n", " ");
    let lines: Vec<String> = joined.lines().map(str::to_string).collect();
    let froms: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            lines[i]
                .trim_start()
                .to_ascii_uppercase()
                .starts_with("FROM ")
        })
        .collect();
    let mut out = Vec::new();
    let mut k = froms.len() - 1;
    loop {
        let end = froms.get(k + 1).copied().unwrap_or(lines.len());
        let mut block: Vec<String> = lines[froms[k]..end].to_vec();
        block.append(&mut out);
        out = block;
        let image = out[0]
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_ascii_lowercase();
        let parent = froms[..k].iter().position(|&f| {
            let w: Vec<String> = lines[f]
                .split_whitespace()
                .map(str::to_ascii_lowercase)
                .collect();
            w.len() >= 4 && w[2] == "as" && w[3] == image
        });
        match parent {
            Some(p) => k = p,
            None => return out,
        }
    }
}

/// apt-get install packages and pip install requirements, by a word scan of the target
/// stage: `(apt, pip)`.
fn scan_packages(text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut apt = BTreeSet::new();
    let mut pip = BTreeSet::new();
    // ARG defaults, as `${NAME}` in package names.
    let args: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("ARG "))
        .filter_map(|a| a.split_once('='))
        .map(|(k, v)| (format!("${{{k}}}"), v.to_string()))
        .collect();
    for mut line in target_lines(text) {
        for (k, v) in &args {
            line = line.replace(k, v);
        }
        let line = line.replace(" && ", " ; ");
        for chunk in line.split(';') {
            let words: Vec<String> = chunk
                .split_whitespace()
                .map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string())
                .collect();
            if let Some(i) = words
                .windows(2)
                .position(|w| w[0].ends_with("apt-get") && w[1] == "install")
            {
                apt.extend(
                    words[i + 2..]
                        .iter()
                        .filter(|w| !w.starts_with('-'))
                        .cloned(),
                );
            }
            let Some(i) = words.windows(2).position(|w| {
                (w[0] == "pip" || w[0] == "pip3" || w[0].ends_with("/pip")) && w[1] == "install"
            }) else {
                continue;
            };
            let rest = &words[i + 2..];
            let local = rest
                .iter()
                .any(|w| w == "." || w == "-e" || w.starts_with('/') || w.ends_with(".whl"));
            if local {
                continue;
            }
            let mut skip = false;
            for w in rest {
                if skip {
                    skip = false;
                } else if ["-r", "-i", "--index-url", "--extra-index-url", "-c", "-f"]
                    .contains(&w.as_str())
                {
                    skip = true;
                } else if !w.starts_with('-')
                    && !["pip", "setuptools", "wheel"].contains(&w.as_str())
                {
                    pip.insert(w.clone());
                }
            }
        }
    }
    (apt, pip)
}

fn recipe_packages(dir: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let text = fs_err::read_to_string(dir.join("recipe.toml")).unwrap();
    let v: toml::Value =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", dir.display()));
    let apt = v
        .get("apt")
        .and_then(|a| a.get("packages"))
        .and_then(|p| p.as_array())
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    let pip = fs_err::read_to_string(dir.join("requirements.in"))
        .map(|t| {
            t.lines()
                .map(|l| l.split("    #").next().unwrap().trim().to_string())
                .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('-'))
                .collect()
        })
        .unwrap_or_default();
    (apt, pip)
}

#[test]
fn corpus_every_instruction_classified_and_packages_match_a_scan() {
    assert!(CORPUS.len() >= 30, "the corpus has {} files", CORPUS.len());
    let dir = tempdir();
    let mut failures = Vec::new();
    for (name, text) in CORPUS {
        let ctx = write_case(dir.path(), name, text);
        let doc = import_json(&ctx, &["--build-arg", "PORT=9000"]);
        let rows = doc["rows"].as_array().unwrap();
        let want = count_instructions(text);
        if rows.len() != want {
            failures.push(format!(
                "{name}: {} rows for {want} instructions",
                rows.len()
            ));
        }
        for r in rows {
            let class = r["class"].as_str().unwrap();
            assert!(
                ["mapped", "step", "approximated", "not-translated"].contains(&class),
                "{name}: {r}"
            );
            assert!(
                !r["note"].as_str().unwrap().is_empty(),
                "{name}: a row without a note: {r}"
            );
        }
        let files: Vec<&str> = doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert!(
            files.iter().any(|f| f.ends_with("recipe.toml")),
            "{name}: {files:?}"
        );
        // The recipe reads, its [args] substituted into the strings that refer to them, up to
        // the files the corpus's contexts do not have (keys, pylock.toml, sources).
        if let Err(e) = ocibuild::recipe::load(&ctx.join("recipe.toml")) {
            let e = e.to_string();
            if !(e.contains("does not exist") || e.contains("no such file")) {
                failures.push(format!("{name}: the recipe does not read: {e}"));
            }
        }
        let (mut apt, pip) = scan_packages(text);
        let (got_apt, got_pip) = recipe_packages(&ctx);
        // What import adds or leaves out on purpose, said in its notes: pip itself, and the
        // interpreter and C++ runtime requirements need on a distribution base.
        if !got_pip.is_empty() && !text.contains("FROM python:") && got_apt.contains("python3") {
            apt.insert("python3".into());
            apt.insert("libstdc++6".into());
        }
        if !got_pip.is_empty() {
            apt.remove("python3-pip");
        }
        if apt != got_apt {
            failures.push(format!("{name}: apt {got_apt:?}, the scan {apt:?}"));
        }
        if pip != got_pip {
            failures.push(format!("{name}: pip {got_pip:?}, the scan {pip:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn corpus_covers_what_the_issue_lists() {
    let all: String = CORPUS.iter().map(|(_, t)| *t).collect();
    for needle in [
        "COPY --from=",
        "ARG ",
        ":-",
        "<<EOF",
        "type=cache",
        "type=secret",
        "apt-get install",
        "pip install",
        "uv pip",
        "conda ",
        "curl ",
        "make ",
        "useradd",
        "USER ",
        "HEALTHCHECK",
        "VOLUME",
        "SHELL",
        "STOPSIGNAL",
        "ENTRYPOINT [",
        "CMD [",
        "CMD python",
        "ADD https://",
        "nvidia/cuda:",
    ] {
        assert!(all.contains(needle), "no corpus file has {needle:?}");
    }
    assert!(CORPUS
        .iter()
        .any(|(n, _)| context_files(n).iter().any(|(f, _)| *f == ".dockerignore")));
}

#[test]
fn run_parts_are_shown_and_classified() {
    let dir = tempdir();
    let (name, text) = CORPUS.iter().find(|(n, _)| *n == "jupyter-like").unwrap();
    let ctx = write_case(dir.path(), name, text);
    let doc = import_json(&ctx, &[]);
    let run = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["line"] == 7)
        .unwrap();
    let parts: Vec<(&str, &str)> = run["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["text"].as_str().unwrap(), p["class"].as_str().unwrap()))
        .collect();
    assert_eq!(
        parts,
        [
            ("useradd -m -s /bin/bash -u 1000 jovyan", "mapped"),
            ("mkdir -p /home/jovyan/work", "mapped"),
            ("chown 1000:1000 /home/jovyan/work", "mapped"),
        ]
    );
    let recipe = fs_err::read_to_string(ctx.join("recipe.toml")).unwrap();
    assert!(
        recipe.contains("[[accounts.user]]\nname = \"jovyan\"\nuid = 1000"),
        "{recipe}"
    );
    assert!(
        recipe.contains("[[path]]\npath = \"/home/jovyan/work\"\nowner = \"1000:1000\""),
        "{recipe}"
    );
    assert!(recipe.contains("# Dockerfile:7 RUN useradd"), "{recipe}");
    assert!(recipe.contains("[config.labels]"), "{recipe}");
}

#[test]
fn steps_mounts_and_stages() {
    let dir = tempdir();
    let get = |name: &str| {
        let (_, text) = CORPUS.iter().find(|(n, _)| *n == name).unwrap();
        let ctx = write_case(dir.path(), name, text);
        let doc = import_json(&ctx, &["--build-arg", "PORT=9000", "--force"]);
        let recipe = fs_err::read_to_string(ctx.join("recipe.toml")).unwrap();
        (doc, recipe)
    };
    // A builder stage is one step; the image's COPY --from is its output.
    let (doc, recipe) = get("source-build-make");
    assert!(
        recipe.contains("[[step]]\nname = \"builder\"\nimage = \"debian:bookworm\""),
        "{recipe}"
    );
    assert!(
        recipe.contains("outputs = [{ path = \"/opt/lz4\", dest = \"/opt/lz4\" }]"),
        "{recipe}"
    );
    assert!(recipe.contains("network = true"), "{recipe}");
    let copy = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["line"] == 7)
        .unwrap();
    assert_eq!(copy["class"], "mapped", "{copy}");
    // Secret mounts are not translated; cache mounts are dropped.
    let (doc, _) = get("secret-mount");
    let run = &doc["rows"][1];
    assert_eq!(run["class"], "not-translated", "{run}");
    assert_eq!(run["parts"][1]["class"], "mapped", "{run}");
    let (doc, _) = get("cache-mounts");
    assert_eq!(doc["rows"][1]["parts"][0]["class"], "mapped");
    // A RUN whose outputs cannot be told: a placeholder, flagged.
    let (doc, recipe) = get("rapids-like");
    assert!(recipe.contains("# TODO: declare the outputs"), "{recipe}");
    assert!(doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["class"] == "approximated"
            && r["parts"].as_array().is_some_and(|p| p
                .iter()
                .any(|p| p["note"].as_str().unwrap().contains("declare the outputs")))));
    // --target picks the stage; the others are rows too.
    let (_, text) = CORPUS.iter().find(|(n, _)| *n == "target-stages").unwrap();
    let ctx = write_case(dir.path(), "target-stages-test", text);
    let doc = import_json(&ctx, &["--target", "test"]);
    assert_eq!(doc["target"], "test");
    let prod: Vec<&serde_json::Value> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["stage"] == "prod")
        .collect();
    assert!(!prod.is_empty() && prod.iter().all(|r| r["class"] == "not-translated"));
    // `COPY requirements.txt .` puts the file into the WORKDIR; `-r` finds it there.
    let (_, recipe) = get("flask-slim");
    assert!(
        recipe.contains("src = \"requirements.txt\"\ndest = \"/srv/requirements.txt\""),
        "{recipe}"
    );
    let req = fs_err::read_to_string(dir.path().join("flask-slim/requirements.in")).unwrap();
    assert!(
        req.lines().any(|l| l.starts_with("-r requirements.txt ")),
        "{req}"
    );
    // A stage built FROM a builder starts in its WORKDIR.
    let (_, recipe) = get("vllm-like");
    assert!(
        recipe.contains(
            "{ src = \"requirements-build.txt\", dest = \"/workspace/requirements-build.txt\" }"
        ),
        "{recipe}"
    );
    // $PATH of the base is not known: Docker's default, and the row says so.
    let (doc, recipe) = get("source-build-make");
    assert!(
        recipe.contains(
            "PATH = \"/opt/lz4/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\""
        ),
        "{recipe}"
    );
    let env = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["instruction"] == "ENV")
        .unwrap();
    assert_eq!(env["class"], "approximated", "{env}");
    // Comments inside a continued RUN are dropped; an `if` stays one part; quotes around
    // --chown are the shell's.
    let (doc, recipe) = get("comments-and-ifs");
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(
        rows[2]["parts"][1]["note"], "[apt] packages python3 ca-certificates",
        "{}",
        rows[2]
    );
    assert_eq!(rows[3]["parts"].as_array().unwrap().len(), 1, "{}", rows[3]);
    assert_eq!(rows[5]["class"], "mapped", "{}", rows[5]);
    assert!(recipe.contains("owner = \"1000:1000\""), "{recipe}");
    // The config keys the issue names.
    let (_, recipe) = get("healthcheck-volume");
    for want in [
        "stop-signal = \"SIGQUIT\"",
        "volumes = [",
        "[config.healthcheck]\ntest = [\"CMD\", \"celery\", \"-A\", \"worker\", \"inspect\", \"ping\"]\ninterval = \"1m\"\ntimeout = \"10s\"",
    ] {
        assert!(recipe.contains(want), "{want}\n{recipe}");
    }
    let (_, recipe) = get("shell-bash");
    assert!(
        recipe.contains("shell = [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\"]"),
        "{recipe}"
    );
    assert!(
        recipe.contains("entrypoint = [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\", \"mycli\"]"),
        "{recipe}"
    );
    let (_, recipe) = get("args-defaults");
    assert!(
        recipe.contains("[base]\nimage = \"python:3.11-slim\""),
        "{recipe}"
    );
    assert!(recipe.contains("PORT = \"9000\""), "{recipe}");
    assert!(recipe.contains("dest = \"/opt/app/src\""), "{recipe}");
}

fn import_err(text: &str, extra: &[&str]) -> (i32, String) {
    let dir = tempdir();
    let ctx = write_case(dir.path(), "bad", text);
    let out = run(ocibuild()
        .arg("import")
        .arg(ctx.join("Dockerfile"))
        .args(extra));
    (out.status.code().unwrap_or(-1), stderr(&out))
}

#[test]
fn bad_inputs_are_placed_and_named() {
    // The parser's own error, at its line and column.
    let (code, e) = import_err("FROM debian:trixie\nRUN echo hi\nFLY away\n", &[]);
    assert_eq!(code, 1, "{e}");
    assert!(
        e.contains("Dockerfile:3:1: unknown instruction 'FLY'"),
        "{e}"
    );
    let (_, e) = import_err("FROM debian:trixie\nCOPY app.py\n", &[]);
    assert!(
        e.contains("Dockerfile:2:1: COPY instruction requires at least two arguments"),
        "{e}"
    );
    let (_, e) = import_err("FROM debian:trixie\nRUN <<EOF\necho hi\n", &[]);
    assert!(
        e.contains("Dockerfile:4:1: expected end of here-document (EOF), but reached eof"),
        "{e}"
    );
    // A heredoc after other words: the parser reads its body as instructions.
    let (code, e) = import_err(
        "FROM debian:trixie\nRUN cat <<EOF >> /etc/app.conf\nthreads=4\nEOF\n",
        &[],
    );
    assert_eq!(code, 1);
    assert!(e.contains("Dockerfile:2:9: `<<EOF >> /etc/app.conf` after other words: expected the heredoc first"), "{e}");
    // ARG without a value: named; a usage error.
    let (code, e) = import_err("FROM python:3.12\nARG MODEL_ID\nENV M=$MODEL_ID\n", &[]);
    assert_eq!(code, 2, "{e}");
    assert!(
        e.contains("Dockerfile:2: ARG MODEL_ID has no value: give --build-arg MODEL_ID=VALUE"),
        "{e}"
    );
    let (code, e) = import_err("FROM python:3.12\n", &["--build-arg", "NOEQUALS"]);
    assert_eq!(code, 2);
    assert!(e.contains("--build-arg `NOEQUALS`: not NAME=VALUE"), "{e}");
    // --target and --from of a missing stage: named, with the stages there are.
    let two = "FROM python:3.12 AS build\nRUN true\nFROM python:3.12-slim AS run\nCOPY --from=biuld /x /x\n";
    let (code, e) = import_err(two, &[]);
    assert_eq!(code, 1, "{e}");
    assert!(
        e.contains(
            "Dockerfile:4: --from=biuld: no such stage before this line; the stages are build"
        ),
        "{e}"
    );
    let (code, e) = import_err(two, &["--target", "prod"]);
    assert_eq!(code, 2, "{e}");
    assert!(
        e.contains("--target prod: no such stage; the stages are build, run"),
        "{e}"
    );
    let (code, e) = import_err("FROM python:3.12\n", &["--platform", "linux"]);
    assert_eq!(code, 2, "{e}");
    assert!(e.contains("--platform `linux`: "), "{e}");
    // A flag clap rejects.
    let (code, _) = import_err("FROM python:3.12\n", &["--no-such-flag"]);
    assert_eq!(code, 2);
}

#[test]
fn heredocs_quoted_and_fed_to_a_command() {
    let dir = tempdir();
    let text = "FROM debian:trixie\nRUN <<\"EOF\"\napt-get install -y python3\nmkdir -p /data\nEOF\nRUN <<EOF python3\nprint('hi')\nEOF\n";
    let ctx = write_case(dir.path(), "heredocs", text);
    let doc = import_json(&ctx, &[]);
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let parts: Vec<&str> = rows[1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(parts, ["apt-get install -y python3", "mkdir -p /data"]);
    let recipe = fs_err::read_to_string(ctx.join("recipe.toml")).unwrap();
    assert!(recipe.contains("run = [\"/bin/sh\", \"-c\", \"python3 <<'IMPORTED_HEREDOC'\\nprint('hi')\\nIMPORTED_HEREDOC\"]"), "{recipe}");
}

#[test]
fn an_existing_recipe_is_kept_without_force() {
    let dir = tempdir();
    let ctx = write_case(dir.path(), "keep", "FROM python:3.12\nCMD [\"python\"]\n");
    fs_err::write(ctx.join("recipe.toml"), "# mine\n").unwrap();
    let out = run(ocibuild().arg("import").arg(ctx.join("Dockerfile")));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("recipe.toml exists: give --force to overwrite it"));
    assert_eq!(
        fs_err::read_to_string(ctx.join("recipe.toml")).unwrap(),
        "# mine\n"
    );
    let out = run(ocibuild()
        .arg("import")
        .arg(ctx.join("Dockerfile"))
        .arg("--force"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("2 instructions: 2 mapped"),
        "{}",
        stdout(&out)
    );
}

/// The seed Dockerfile (recipes/python-cuda-images.toml's header) imports to a recipe with
/// that recipe's base, packages, python and config; both loaded by the recipe loader.
#[test]
fn seed_dockerfile_imports_to_the_seed_recipe() {
    let dir = tempdir();
    let (_, text) = CORPUS.iter().find(|(n, _)| *n == "seed-cuda").unwrap();
    let ctx = write_case(dir.path(), "seed", text);
    let doc = import_json(&ctx, &[]);
    assert!(doc["pylockCommand"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a == "--python-version"));
    let req = fs_err::read_to_string(ctx.join("requirements.in")).unwrap();
    let committed_req =
        fs_err::read_to_string(repo().join("recipes/python-cuda-images/requirements.in")).unwrap();
    let names = |t: &str| -> BTreeSet<String> {
        t.lines()
            .map(|l| l.split('#').next().unwrap().trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    assert_eq!(names(&req), names(&committed_req));
    // The loader checks the files the recipe names.
    fs_err::create_dir_all(ctx.join("keys")).unwrap();
    fs_err::copy(
        repo().join("recipes/keys/ubuntu-archive.asc"),
        ctx.join("keys/ubuntu-archive.asc"),
    )
    .unwrap();
    fs_err::copy(
        repo().join("recipes/python-cuda-images/pylock.toml"),
        ctx.join("pylock.toml"),
    )
    .unwrap();
    let imported = ocibuild::recipe::load(&ctx.join("recipe.toml"))
        .unwrap_or_else(|e| panic!("{}", ocibuild::diag::chain(&e)));
    let seed = ocibuild::recipe::load(&repo().join("recipes/python-cuda-images.toml")).unwrap();
    let base = |b: &ocibuild::recipe::Base| match b {
        ocibuild::recipe::Base::Image { reference } => {
            reference.trim_start_matches("docker.io/").to_string()
        }
        ocibuild::recipe::Base::Scratch => "scratch".into(),
    };
    assert_eq!(base(&imported.base), base(&seed.base));
    let apt = |r: &ocibuild::recipe::Recipe| {
        r.apt
            .as_ref()
            .unwrap()
            .packages
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(apt(&imported), apt(&seed));
    let sa = &imported.apt.as_ref().unwrap().sources[0];
    let sb = &seed.apt.as_ref().unwrap().sources[0];
    assert_eq!((&sa.url, &sa.suite), (&sb.url, &sb.suite));
    assert_eq!(
        imported.python.as_ref().unwrap().version,
        seed.python.as_ref().unwrap().version
    );
    assert_eq!(imported.config.env, seed.config.env);
    assert_eq!(imported.config.workdir, seed.config.workdir);
    assert_eq!(imported.layers.len(), 1);
    assert_eq!(imported.layers[0].spec.dest, seed.layers[0].spec.dest);
    // The one difference, on purpose: the seed recipe runs the app as a module
    // (docs/from-dockerfile.md); the Dockerfile's CMD is kept as it was.
    assert_eq!(
        imported.config.cmd,
        Some(vec!["python3".to_string(), "app.py".to_string()])
    );
    assert_eq!(
        seed.config.entrypoint,
        Some(vec![
            "python3".to_string(),
            "-m".to_string(),
            "imgproc".to_string()
        ])
    );
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}
