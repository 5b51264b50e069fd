//! `ocibuild import`: a Dockerfile read into a recipe. Every instruction gets a row in the
//! table with its class (`mapped`, `step`, `approximated`, `not translated`) and a note; the
//! recipe has a comment above each part naming the Dockerfile line it came from. Pip
//! installs become `requirements.in` (and `[python] lock = "pylock.toml"`, which
//! `uv pip compile` writes). Nothing is printed here: the CLI prints the table.

mod base;
mod builder;
mod classify;
mod copy;
mod draft;
mod error;
mod map;
mod parse;
mod run;
mod shell;
mod stages;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use error::ImportError;

/// What the command line asked for.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The Dockerfile.
    pub dockerfile: PathBuf,
    /// The build context (`COPY` sources are relative to it).
    pub context: PathBuf,
    /// The directory the recipe is written into (layer sources are written relative to it).
    pub out_dir: PathBuf,
    /// `--target`: the stage that is the image (default: the last).
    pub target: Option<String>,
    /// `--build-arg NAME=VALUE`, in order.
    pub build_args: Vec<String>,
    /// `--scratch`: a Debian/Ubuntu `FROM` becomes scratch + `[apt] essential = true`.
    pub scratch: bool,
    /// `[image] platform` (and the `uv pip compile` platform).
    pub platform: String,
}

/// How an instruction (or a part of a `RUN` line) was translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// A recipe key does the same.
    Mapped,
    /// Became (part of) a `[[step]]`.
    Step,
    /// A recipe key does nearly the same: the note says what differs.
    Approximated,
    /// No counterpart: the note says why and what to do.
    NotTranslated,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Mapped => "mapped",
            Class::Step => "step",
            Class::Approximated => "approximated",
            Class::NotTranslated => "not translated",
        }
    }
}

/// A part of a `RUN` line, as the table shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    pub text: String,
    pub class: Class,
    pub note: String,
}

/// One instruction of the Dockerfile, as the table shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub line: usize,
    pub instruction: String,
    /// The instruction's text, on one line, clipped.
    pub text: String,
    pub class: Class,
    pub note: String,
    /// The stage the instruction is in (its name, or its index).
    pub stage: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
}

/// The result: the table and the files to write.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Imported {
    pub rows: Vec<Row>,
    /// The stage that is the image.
    pub target: String,
    pub stages: Vec<String>,
    #[serde(skip)]
    pub recipe: String,
    #[serde(skip)]
    pub requirements: Option<String>,
    /// The `uv pip compile …` command that writes pylock.toml from requirements.in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pylock_command: Option<Vec<String>>,
    /// What applies to the whole recipe (pin at `ocibuild lock`, keys to provide).
    pub notes: Vec<String>,
}

impl Imported {
    /// How many rows of each class.
    pub fn counts(&self) -> BTreeMap<Class, usize> {
        let mut m = BTreeMap::new();
        for r in &self.rows {
            *m.entry(r.class).or_insert(0) += 1;
        }
        m
    }
}

/// Reads and translates the Dockerfile; writes nothing.
pub fn import(opts: &ImportOptions) -> Result<Imported, ImportError> {
    let text = fs_err::read_to_string(&opts.dockerfile).map_err(|source| ImportError::Read {
        path: opts.dockerfile.clone(),
        source,
    })?;
    import_text(&text, opts)
}

/// [`import`] of a Dockerfile's text (`opts.dockerfile` names it in messages).
pub fn import_text(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    crate::image::Platform::parse(&opts.platform).map_err(|message| ImportError::Platform {
        value: crate::bounded::clip(&opts.platform).into_owned(),
        message,
    })?;
    let mut build_args = BTreeMap::new();
    for a in &opts.build_args {
        let Some((k, v)) = a.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            return Err(ImportError::BuildArgSyntax { arg: a.clone() });
        };
        build_args.insert(k.to_string(), v.to_string());
    }
    let text = parse::empty_exec_forms(text);
    let df = parse::parse(&text, &opts.dockerfile)?;
    map::translate(&text, &df, opts, &build_args)
}

/// The files [`Imported`] writes into `dir`: `recipe.toml`, and `requirements.in` when there
/// are Python requirements. An existing `recipe.toml` is an error unless `force`.
pub fn write(imported: &Imported, dir: &Path, force: bool) -> Result<Vec<PathBuf>, ImportError> {
    let recipe = dir.join("recipe.toml");
    if recipe.exists() && !force {
        return Err(ImportError::Exists { path: recipe });
    }
    let werr = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ImportError::Write { path, source }
    };
    fs_err::create_dir_all(dir).map_err(werr(dir))?;
    let mut written = Vec::new();
    let mut files = vec![(recipe, imported.recipe.as_str())];
    if let Some(r) = &imported.requirements {
        files.push((dir.join("requirements.in"), r.as_str()));
    }
    for (path, text) in files {
        fs_err::write(&path, text).map_err(werr(&path))?;
        written.push(path);
    }
    Ok(written)
}

/// Runs the [`Imported::pylock_command`] in `dir` (uv must be on PATH): pylock.toml.
pub fn compile_pylock(imported: &Imported, dir: &Path) -> Result<Option<PathBuf>, ImportError> {
    let Some(cmd) = &imported.pylock_command else {
        return Ok(None);
    };
    let out = std::process::Command::new(&cmd[0])
        .args(&cmd[1..])
        .current_dir(dir)
        .output()
        .map_err(|source| ImportError::UvSpawn { source })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(10).collect();
        return Err(ImportError::UvFailed {
            command: cmd.join(" "),
            status: out.status.to_string(),
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        });
    }
    Ok(Some(dir.join("pylock.toml")))
}

/// `src` relative to `from` (both absolute or both relative to the same directory), with
/// `..` where needed.
pub(crate) fn relative(src: &Path, from: &Path) -> PathBuf {
    let a: Vec<_> = src.components().collect();
    let b: Vec<_> = from.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &a[common..] {
        out.push(c);
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}
