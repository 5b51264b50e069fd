//! The recipe, format v1: a TOML file that says what goes into the image. This module parses it
//! and validates it; every error carries the recipe path and the 1-based line and column of the
//! offending key or value. The format reference is `docs/recipe.md`.
//!
//! - [`raw`]: serde types that mirror the TOML, with spans.
//! - [`validate`]: the checks, turning raw types into [`Recipe`].
//! - [`grammar`]: pure checks of single values (names, tags, paths, ports, patterns).

mod accounts;
mod args;
mod docker;
mod fields;
mod grammar;
mod identity;
mod ignore;
mod packages;
mod paths;
mod project;
mod python;
mod raw;
mod step;
mod test_stage;
mod validate;
mod values;

pub use self::test_stage::{Gpu, Podman, Test, TestRun};

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use self::args::ArgOverride;
pub use self::packages::debian_arch;
pub use self::paths::{PathEntry, PathKind, PATHS_LAYER};
pub use self::project::PythonProject;
pub use self::step::{input_name, Fetch, Step, StepImage, StepInput, StepOutput};
pub use crate::image::Platform;

use crate::diag::{line_col, one_line};
use crate::layer::{Compression, CopySpec};

/// Built-in test checks, usable as `check = "<name>"` in a `[[test]]`.
pub const KNOWN_CHECKS: &[&str] = &["cuda-smoke"];

/// A parsed and validated recipe.
#[derive(Clone, Debug)]
pub struct Recipe {
    /// The recipe path as given (for messages).
    pub path: PathBuf,
    /// Absolute directory containing the recipe; relative paths in it resolve against this.
    pub dir: PathBuf,
    pub image: Image,
    pub base: Base,
    /// In recipe order, which is layer order (first = lowest).
    pub layers: Vec<Layer>,
    pub config: Config,
    /// In recipe order.
    pub tests: Vec<Test>,
    pub podman: Podman,
    /// `[apt]`: system packages, installed as one layer above the base.
    pub apt: Option<Apt>,
    /// `[python]`: where the image's interpreter comes from.
    pub python: Option<Python>,
    /// `[accounts]`: groups and users the image gets (on top of the base's, or of root and
    /// nobody).
    pub accounts: Accounts,
    /// `[[step]]`, in recipe order: commands run at build time in a sandbox, their outputs
    /// layers above the system layers and below the recipe's own.
    pub steps: Vec<Step>,
    /// `[[path]]`, in recipe order: directories and symlinks, one layer (`paths`) above the
    /// recipe's `[[layer]]`s.
    pub paths: Vec<PathEntry>,
    /// `[args]` with the `--build-arg`s over the defaults (`None` without `[args]`): already
    /// substituted into the recipe's strings, and in every step's environment. Part of the
    /// identity when present.
    pub args: Option<BTreeMap<String, String>>,
    /// The logins taken out of the recipe's URLs (`https://user:password@host/…`): every URL
    /// above is without them.
    pub credentials: crate::http::Credentials,
}

impl Recipe {
    /// The recipe with `[image] tag` and `platform` replaced from the command line
    /// (`build --tag`, `--platform`); the `[apt]` architecture follows the platform.
    pub fn with_overrides(
        mut self,
        tag: Option<&str>,
        platform: Option<&str>,
    ) -> Result<Recipe, RecipeError> {
        let bad = |flag: &'static str, value: &str, message: String| RecipeError::Override {
            path: self.path.clone(),
            flag,
            value: crate::bounded::clip(value).into_owned(),
            message: clip_values(&message),
        };
        if let Some(t) = tag {
            grammar::check_tag(t).map_err(|m| bad("--tag", t, m))?;
            self.image.tag = t.to_string();
        }
        if let (Some(list), true) = (platform, self.is_multi_platform()) {
            // A subset of `platforms`, in the recipe's order.
            let mut wanted = Vec::new();
            for p in list.split(',').map(str::trim) {
                let parsed = Platform::parse(p).map_err(|m| bad("--platform", p, m))?;
                if !self.image.platforms.contains(&parsed) {
                    let known: Vec<String> = self
                        .image
                        .platforms
                        .iter()
                        .map(std::string::ToString::to_string)
                        .collect();
                    return Err(bad(
                        "--platform",
                        p,
                        format!("not one of the recipe's platforms ({})", known.join(", ")),
                    ));
                }
                wanted.push(parsed);
            }
            self.image.platforms.retain(|p| wanted.contains(p));
            let first = self.image.platforms[0].clone();
            return self.for_platform(&first);
        }
        if let Some(p) = platform {
            let parsed = Platform::parse(p).map_err(|m| bad("--platform", p, m))?;
            // The `[apt]` architecture, a `[python.archives]` interpreter and a
            // `[python.locks]` pylock follow it.
            return self.for_platform(&parsed);
        }
        Ok(self)
    }

    /// Whether this recipe builds several platforms (`[image] platforms`): an image index,
    /// and a lock with a section per platform.
    pub fn is_multi_platform(&self) -> bool {
        !self.image.platforms.is_empty()
    }

    /// The section of the lock this recipe reads and writes: its platform's, for a
    /// multi-platform recipe (`None`: the whole lock).
    pub fn lock_view(&self) -> Option<String> {
        self.is_multi_platform()
            .then(|| self.image.platform.to_string())
    }

    /// The platforms to build: `platforms`, or the one `platform`.
    pub fn platforms(&self) -> Vec<Platform> {
        if self.image.platforms.is_empty() {
            vec![self.image.platform.clone()]
        } else {
            self.image.platforms.clone()
        }
    }

    /// The recipe for one of its platforms: `platform` set to it (the `[apt]` architecture
    /// following), as a one-platform recipe naming it would be; `platforms` is kept, so the
    /// lock is still read and written per platform. Its identity is that one-platform recipe's.
    pub fn for_platform(&self, platform: &Platform) -> Result<Recipe, RecipeError> {
        let mut r = self.clone();
        if let Some(apt) = &mut r.apt {
            apt.architecture = debian_arch(platform)
                .ok_or_else(|| RecipeError::Override {
                    path: self.path.clone(),
                    flag: "--platform",
                    value: platform.to_string(),
                    message: "Debian has no architecture for it, and the recipe has [apt]".into(),
                })?
                .to_string();
        }
        if let Some(py) = &mut r.python {
            if !py.archives.is_empty() {
                let a = py
                    .archives
                    .get(platform)
                    .ok_or_else(|| RecipeError::Override {
                        path: self.path.clone(),
                        flag: "--platform",
                        value: platform.to_string(),
                        message: "[python.archives] has no interpreter archive for it".into(),
                    })?;
                py.source = PythonSource::Archive(a.clone());
            }
            if !py.locks.is_empty() {
                let l = py
                    .locks
                    .get(platform)
                    .ok_or_else(|| RecipeError::Override {
                        path: self.path.clone(),
                        flag: "--platform",
                        value: platform.to_string(),
                        message: "[python.locks] has no pylock.toml for it".into(),
                    })?;
                py.packages = Some(l.clone());
            }
        }
        r.image.platform = platform.clone();
        Ok(r)
    }

    /// Whether the image gets the `rootfs` layer step: a system (`[apt]`, `[python]`),
    /// declared accounts, or a named `[config] user` on `scratch` (which must then name an
    /// account).
    pub fn has_rootfs_step(&self) -> bool {
        let named_user = self
            .config
            .user
            .as_deref()
            .is_some_and(|u| !u.split(':').all(|p| p.bytes().all(|b| b.is_ascii_digit())));
        self.apt.is_some()
            || self.python.is_some()
            || !self.accounts.is_empty()
            || (named_user && matches!(self.base, Base::Scratch))
    }

    /// The names of the layers ocibuild may add to this recipe's image (besides wheel layers,
    /// whose names are `wheel-…` and `wheels-…`).
    pub fn system_layer_names(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.apt.is_some() {
            out.push("apt");
        }
        if self.has_rootfs_step() {
            out.push("rootfs");
        }
        if let Some(p) = &self.python {
            if matches!(p.source, PythonSource::Archive(_)) {
                out.push("python");
            }
        }
        if !self.paths.is_empty() {
            out.push(PATHS_LAYER);
        }
        out
    }
}

/// `[apt]`: Debian/Ubuntu archives and the packages to install from them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Apt {
    /// In recipe order (earlier sources win ties between equal versions).
    pub sources: Vec<AptSource>,
    /// As written: `name`, `name (>= 1.2)` or `name=1.2-3`; sorted, deduplicated.
    pub packages: Vec<String>,
    /// Where each of `packages` is written (`recipe.toml:LINE:COL`), for the resolver's
    /// errors about a request. Where, not what: not part of the image's identity.
    pub package_at: BTreeMap<String, String>,
    /// The Debian architecture (`amd64`, `arm64`), from `[image] platform`.
    pub architecture: String,
    /// `host-provides`: package or virtual names (`libcuda.so.1`) the host provides at run
    /// time. A dependency alternative naming one is satisfied whatever its version constraint,
    /// and nothing is installed for it; sorted, deduplicated.
    pub host_provides: Vec<String>,
    /// `essential = true`: Debian's essential set (every package of the sources marked
    /// `Essential: yes`, with their dependencies) is installed too.
    pub essential: bool,
}

/// One `[[apt.source]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AptSource {
    /// Archive root without a trailing `/`, e.g. `https://deb.debian.org/debian`.
    pub url: String,
    /// Other archive roots of the same archive (no trailing `/`), tried in order for an index
    /// or a .deb that `url` lacks or serves stale, and for the Release when `url` cannot be
    /// reached. Where, not what: not part of the image's identity, and the lock does not see
    /// them (it records `url`).
    pub mirrors: Vec<String>,
    pub suite: String,
    pub components: Vec<String>,
    /// A snapshot timestamp like `20241101T000000Z`, appended to `url`.
    pub snapshot: Option<String>,
    /// The OpenPGP key file (armored or binary), resolved against the recipe's directory.
    pub signed_by: Option<PathBuf>,
    pub allow_unsigned: bool,
    /// Refuse an expired Release (`Valid-Until` passed); `false` for an archive frozen on
    /// purpose. Snapshot sources are never checked. Not part of the image's identity.
    pub check_valid_until: bool,
}

/// `[accounts]`: `[[accounts.group]]` and `[[accounts.user]]`, in recipe order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Accounts {
    pub groups: Vec<Group>,
    /// Each user's group is in `groups` (declared, or implied: the user's name with gid = uid).
    pub users: Vec<User>,
}

impl Accounts {
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty() && self.users.is_empty()
    }
}

/// One `[[accounts.group]]` (or the group a user implies).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub gid: u32,
    /// `recipe.toml:LINE:COL`, for messages found at build time.
    pub at: String,
}

/// One `[[accounts.user]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// Absolute and normalized; created with the user as owner, mode 0700.
    pub home: String,
    /// As declared; `None`: `/bin/sh` when the image has it, else `/usr/sbin/nologin`
    /// (decided by the rootfs step, which knows the image's files).
    pub shell: Option<String>,
    pub at: String,
}

/// `[python]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Python {
    /// Where the interpreter of the platform built comes from (with `archives`, that
    /// platform's archive).
    pub source: PythonSource,
    /// `[python.archives]`: the interpreter archive of each platform (normalized platform →
    /// archive); empty otherwise. [`Recipe::for_platform`] picks the platform's into `source`.
    pub archives: BTreeMap<Platform, PythonArchive>,
    /// `[python.locks]`: the pylock.toml of each platform (normalized platform → packages);
    /// empty otherwise. [`Recipe::for_platform`] picks the platform's into `packages`.
    pub locks: BTreeMap<Platform, PythonPackages>,
    /// An expected `major.minor`: the build fails when the interpreter found is another.
    pub version: Option<String>,
    /// Where `version` is written (`recipe.toml:LINE:COL`), for the interpreter check.
    pub version_at: Option<String>,
    /// The packages to install as wheels, when any.
    pub packages: Option<PythonPackages>,
    /// What to do when two wheels install one path with different content.
    pub overlap: Overlap,
    /// The largest a wheel layer may be, in bytes of wheels (`max-layer-size`).
    pub max_layer_size: u64,
    /// `sdist-builder`: the builder that packages with only an sdist (or no wheel that fits)
    /// are built into wheels in, each by a step (`sdist:NAME` in the lock); `None` refuses
    /// them.
    pub sdist_builder: Option<SdistBuilder>,
    /// `project`: the uv project whose own package is built into a wheel by its PEP 517
    /// backend in the `sdist-builder` and installed in a layer of its own (`project:NAME` in
    /// the lock); `None`: the project is not installed (uv's `--no-install-project`).
    pub project: Option<PythonProject>,
}

/// `[python] sdist-builder`: a registry image (pinned in the lock) or another recipe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SdistBuilder {
    pub image: StepImage,
    /// `recipe.toml:LINE:COL`, for messages given at build time.
    pub at: String,
}

pub use crate::python::overlap::Overlap;
pub use crate::python::plan::DEFAULT_MAX_LAYER_SIZE;

/// Where the locked set of Python packages comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PythonPackages {
    /// `lock = "pylock.toml"` (PEP 751): the file as written, and resolved.
    Pylock { written: String, path: PathBuf },
    /// `lock = "uv.lock"`: uv's lock, read as it is, with what `uv sync` would be told.
    UvLock {
        written: String,
        path: PathBuf,
        selection: crate::python::uvlock::Selection,
    },
    /// `requirements = "requirements.txt"` with `--hash` pins, looked up on `index`.
    Requirements {
        written: String,
        path: PathBuf,
        /// The simple API root (default PyPI's).
        index: String,
    },
}

impl PythonPackages {
    /// The file as written in the recipe.
    pub fn written(&self) -> &str {
        match self {
            PythonPackages::Pylock { written, .. }
            | PythonPackages::UvLock { written, .. }
            | PythonPackages::Requirements { written, .. } => written,
        }
    }

    /// The file on disk.
    pub fn path(&self) -> &Path {
        match self {
            PythonPackages::Pylock { path, .. }
            | PythonPackages::UvLock { path, .. }
            | PythonPackages::Requirements { path, .. } => path,
        }
    }
}

/// Where the interpreter comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PythonSource {
    /// The `[apt]` packages (a `python3.X` package), else the base image.
    Auto,
    /// An absolute path already in the base image (or installed by `[apt]`).
    Path(String),
    /// A relocatable interpreter archive (python-build-standalone layout).
    Archive(PythonArchive),
}

/// `[python] archive = { url, sha256, prefix, strip }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonArchive {
    /// What to fetch: `https://…`, `http://…` or `file://…` (a relative path in the recipe
    /// becomes a `file://` URL here).
    pub url: String,
    /// The URL or path as written in the recipe (what the lock records: no host paths).
    pub written: String,
    pub sha256: crate::digest::Digest,
    /// Where it goes in the image, e.g. `/opt/python`.
    pub prefix: String,
    /// Leading path components removed from every entry (`python/` in python-build-standalone's
    /// `install_only` archives: 1).
    pub strip: u32,
}

/// `[image]`: what the result is called and how it is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Repository name, e.g. `example.com/team/hello` (no tag, no digest).
    pub name: String,
    pub tag: String,
    pub compression: Compression,
    /// From the recipe only; `SOURCE_DATE_EPOCH` in the environment wins (decided by `build`).
    pub source_date_epoch: Option<u64>,
    /// `source-date-epoch = "git"`: the time of the last commit of the recipe's directory
    /// (`git log -1 --format=%ct`), resolved at build time.
    pub epoch_from_git: bool,
    /// The platform built: `[image] platform`, or the one of `platforms` being built.
    pub platform: Platform,
    /// `[image] platforms`: every platform of a multi-platform recipe, in order (empty for a
    /// recipe with one `platform`). Its image is an index of one manifest per platform, each
    /// built as [`Recipe::for_platform`] says; its lock has a section per platform.
    pub platforms: Vec<Platform>,
    /// `cuda-archs` and `cuda-ptx`: the GPUs whose code the CUDA libraries of the layers
    /// ocibuild builds keep ([`crate::cuda`]); `None`: nothing is pruned.
    pub cuda: Option<crate::cuda::Targets>,
    /// `drop-unused-copies`: the unused copy of a library twice in the image left out
    /// ([`crate::system::copies`]).
    pub drop_unused_copies: bool,
}

impl Image {
    /// `name:tag`.
    pub fn reference(&self) -> String {
        format!("{}:{}", self.name, self.tag)
    }
}

/// `[base]`: what the image starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Base {
    Scratch,
    /// An image reference, kept verbatim as written.
    Image {
        reference: String,
    },
}

/// One `[[layer]]`: a file or directory copied into the image.
#[derive(Clone, Debug)]
pub struct Layer {
    pub name: String,
    /// `src` as written in the recipe (relative to it, or absolute): what the recipe's identity
    /// records, never the host path.
    pub src: String,
    /// `src` resolved to an absolute path; `dest` normalized; `ignore` = ignore-file patterns
    /// first, then the recipe's `ignore` list.
    pub spec: CopySpec,
}

/// `[config]`: the image config. `None` / empty means "inherit from the base".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    pub env: BTreeMap<String, String>,
    /// `Some(vec![])` clears the base's value.
    pub entrypoint: Option<Vec<String>>,
    /// `Some(vec![])` clears the base's value.
    pub cmd: Option<Vec<String>>,
    pub workdir: Option<String>,
    pub user: Option<String>,
    /// Where `user` is written (`recipe.toml:LINE:COL`), for the build's account check.
    pub user_at: Option<String>,
    pub labels: BTreeMap<String, String>,
    /// Normalized `"80/tcp"`, sorted (as strings), deduplicated.
    pub exposed_ports: Vec<String>,
    /// Manifest annotations.
    pub annotations: BTreeMap<String, String>,
    pub stop_signal: Option<String>,
    /// `volumes`: absolute, normalized, sorted, deduplicated; merged over the base's.
    pub volumes: Vec<String>,
    /// `shell`: Docker's SHELL (Docker-format configs; the OCI spec has no such key).
    pub shell: Option<Vec<String>>,
    /// `[config.healthcheck]`: Docker's HEALTHCHECK, replacing the base's.
    pub healthcheck: Option<Healthcheck>,
}

/// `[config.healthcheck]`, as Docker writes it into a config (`Healthcheck`): durations in
/// nanoseconds, each only when given (the runtime's defaults apply otherwise).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Healthcheck {
    /// `["CMD", argv…]`, `["CMD-SHELL", "line"]` or `["NONE"]` (disables the base's).
    pub test: Vec<String>,
    pub interval_ns: Option<u64>,
    pub timeout_ns: Option<u64>,
    pub start_period_ns: Option<u64>,
    pub start_interval_ns: Option<u64>,
    pub retries: Option<u32>,
}

/// Why a recipe could not be loaded. Display is one line: `path:line:col: message`.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    /// The recipe file could not be read.
    #[error("{}: cannot read recipe", crate::bounded::clip_path(path))]
    Read { path: PathBuf, source: io::Error },
    /// The recipe path names something other than a small regular file (a FIFO, a device).
    #[error("{}: cannot read recipe: {reason}", path.display())]
    NotAFile { path: PathBuf, reason: String },
    /// Not valid TOML (or not UTF-8).
    #[error("{}:{line}:{col}: {message}", crate::bounded::clip_path(path))]
    Syntax {
        path: PathBuf,
        line: usize,
        col: usize,
        message: String,
    },
    /// Valid TOML, but not a valid recipe: unknown key, wrong type, bad value, missing source.
    #[error("{}:{line}:{col}: {message}", crate::bounded::clip_path(path))]
    Invalid {
        path: PathBuf,
        line: usize,
        col: usize,
        message: String,
    },
    /// A command-line override of a recipe value (`--tag`, `--platform`) that is not valid.
    #[error("{flag} `{value}`: {message}")]
    Override {
        path: PathBuf,
        flag: &'static str,
        value: String,
        message: String,
    },
}

impl RecipeError {
    /// The recipe path, as given.
    pub fn path(&self) -> &Path {
        match self {
            RecipeError::Read { path, .. }
            | RecipeError::NotAFile { path, .. }
            | RecipeError::Syntax { path, .. }
            | RecipeError::Invalid { path, .. }
            | RecipeError::Override { path, .. } => path,
        }
    }

    /// 1-based line and column (in characters), where there is one.
    pub fn location(&self) -> Option<(usize, usize)> {
        match self {
            RecipeError::Read { .. }
            | RecipeError::NotAFile { .. }
            | RecipeError::Override { .. } => None,
            RecipeError::Syntax { line, col, .. } | RecipeError::Invalid { line, col, .. } => {
                Some((*line, *col))
            }
        }
    }
}

/// Reads and validates the recipe at `path`. Relative paths in it resolve against its directory
/// (made absolute against the current directory, symlinks not resolved).
pub fn load(path: &Path) -> Result<Recipe, RecipeError> {
    load_with(path, &[])
}

/// [`load`] with `--build-arg`s over the `[args]` defaults.
pub fn load_with(path: &Path, overrides: &[ArgOverride]) -> Result<Recipe, RecipeError> {
    let read_err = |source| RecipeError::Read {
        path: path.to_path_buf(),
        source,
    };
    // Bounded, regular files only: a FIFO named as the recipe must not hang, /dev/zero must
    // not fill memory.
    let bytes = crate::bounded::read_regular(path, crate::bounded::MAX_TEXT_FILE).map_err(|e| {
        let not_a_file = |reason: String| RecipeError::NotAFile {
            path: path.to_path_buf(),
            reason,
        };
        match e {
            crate::bounded::Error::Io { source, .. } => read_err(source),
            crate::bounded::Error::NotRegular { kind, .. } => not_a_file(format!(
                "it is {kind}, not a regular file: give the path of the recipe file itself"
            )),
            crate::bounded::Error::TooLarge { limit, .. } => not_a_file(format!(
                "it is larger than {limit} bytes, too large for a recipe"
            )),
            crate::bounded::Error::NotUtf8 { .. } => {
                not_a_file("it is not UTF-8: a recipe must be UTF-8 text".into())
            }
        }
    })?;
    let abs = std::path::absolute(path).map_err(read_err)?;
    let dir = abs.parent().unwrap_or(Path::new("/")).to_path_buf();
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let prefix = String::from_utf8_lossy(&e.as_bytes()[..valid]);
            let (line, col) = line_col(&prefix, valid);
            return Err(RecipeError::Syntax {
                path: path.to_path_buf(),
                line,
                col,
                message: "invalid UTF-8: a recipe must be UTF-8 text".into(),
            });
        }
    };
    parse_with(&text, path, &dir, overrides)
}

/// Parses and validates recipe text. `path` is only used in messages; `dir` is the directory that
/// relative paths resolve against. The only filesystem access: checking that layer sources exist
/// and reading ignore files.
pub fn parse(text: &str, path: &Path, dir: &Path) -> Result<Recipe, RecipeError> {
    parse_with(text, path, dir, &[])
}

/// [`parse`] with `--build-arg`s over the `[args]` defaults.
pub fn parse_with(
    text: &str,
    path: &Path,
    dir: &Path,
    overrides: &[ArgOverride],
) -> Result<Recipe, RecipeError> {
    let ctx = Ctx { path, text };
    let root = toml::de::DeTable::parse(text).map_err(|e| {
        let (line, col) = crate::diag::syntax_place(text, e.span(), e.message());
        RecipeError::Syntax {
            path: path.to_path_buf(),
            line,
            col,
            message: clip_values(&one_line(&crate::http::redact_urls(e.message()))),
        }
    })?;
    check_shape(&ctx, root.get_ref())?;
    let mut raw = raw::RawRecipe::deserialize(toml::Deserializer::from(root))
        .map_err(|e| ctx.err_at(e.span(), toml_words(e.message())))?;
    let args = args::resolve(&ctx, raw.args.take(), overrides)?;
    if let Some(a) = &args {
        args::apply(&ctx, &mut raw, a)?;
    }
    let mut recipe = validate::recipe(&ctx, raw, dir)?;
    if let Some(a) = &args {
        // As a Dockerfile's ARGs are to RUN: in the environment, under the step's own env.
        for step in &mut recipe.steps {
            for (k, v) in a {
                step.env.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    recipe.args = args;
    Ok(recipe)
}

/// What errors need to say where they are.
pub(crate) struct Ctx<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    fn start_of(&self, span: Option<Range<usize>>) -> (usize, usize) {
        match span {
            Some(s) => line_col(self.text, s.start),
            None => (1, 1),
        }
    }

    fn err_at(&self, span: Option<Range<usize>>, message: impl Into<String>) -> RecipeError {
        let (line, col) = self.start_of(span);
        RecipeError::Invalid {
            path: self.path.to_path_buf(),
            line,
            col,
            message: escape_controls(&clip_values(&crate::http::redact_urls(&message.into()))),
        }
    }

    /// An [`RecipeError::Invalid`] pointing at `span`.
    fn err(&self, span: Range<usize>, message: impl Into<String>) -> RecipeError {
        self.err_at(Some(span), message)
    }

    /// `recipe.toml:LINE:COL` of a span, for messages given later (at build time).
    fn at(&self, span: Range<usize>) -> String {
        let (line, col) = self.start_of(Some(span));
        format!("{}:{line}:{col}", self.path.display())
    }

    /// 1-based line of a byte offset (for "first defined at line N").
    fn line_of(&self, offset: usize) -> usize {
        line_col(self.text, offset).0
    }
}

/// Keeps a message on one line, and free of terminal control characters: values from the recipe
/// are quoted in messages, and TOML strings may hold newlines, tabs or NUL.
fn escape_controls(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for c in message.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// `message` with each long value in it cut ([`crate::bounded::clip`]): what is quoted in
/// backticks, and any run without white space (a value or a path quoted bare). A recipe value
/// of megabytes, or a path of kilobytes, is named by its start and its length.
fn clip_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(4096));
    for (i, part) in message.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            out.push_str(&crate::bounded::clip(part));
            continue;
        }
        for word in part.split_inclusive(char::is_whitespace) {
            let bare = word.trim_end_matches(char::is_whitespace);
            out.push_str(&crate::bounded::clip(bare));
            out.push_str(&word[bare.len()..]);
        }
    }
    out
}

/// serde speaks of Rust types; a recipe's author thinks in TOML's.
/// Also explains a top-level key that TOML put into the table above it.
fn toml_words(message: &str) -> String {
    const TOP: &[&str] = &["image", "base", "layer", "config", "podman", "test", "args"];
    let unknown = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once('`'));
    let nested_top = unknown.is_some_and(|(key, _)| TOP.contains(&key));
    // serde lists the expected fields: "…, expected one of `a`, `b`" or "`a` or `b`".
    let suggestion = unknown.and_then(|(key, rest)| {
        let expected = rest.strip_prefix(", expected ")?;
        let names = expected.split('`').skip(1).step_by(2);
        crate::diag::closest(key, names)
            .map(|s| format!("unknown field `{key}`, did you mean `{s}`?"))
    });
    let message = suggestion.as_deref().unwrap_or(message);
    let hint = if nested_top {
        "; keys after a `[table]` header belong to that table: move top-level keys above the \
         first header"
    } else {
        ""
    };
    let message = message
        .replace("invalid type: sequence", "invalid type: array")
        .replace("invalid type: map", "invalid type: table")
        .replace("expected a sequence", "expected an array")
        .replace("expected a map", "expected a table")
        .replace("expected i64", "expected an integer");
    format!("{message}{hint}")
}

/// Checks that the top-level tables are tables and the arrays of tables are arrays of tables,
/// before serde sees them: serde would otherwise accept a struct written as an array (by position)
/// and report the mix-up in terms of Rust types. The first problem in document order wins.
fn check_shape(ctx: &Ctx<'_>, root: &toml::de::DeTable<'_>) -> Result<(), RecipeError> {
    let mut problems: Vec<(Range<usize>, String)> = Vec::new();
    for (key, value) in root {
        let key = key.get_ref().as_ref();
        let v = value.get_ref();
        match key {
            "image" | "base" | "config" | "podman" | "accounts" | "args" => match v {
                toml::de::DeValue::Table(_) => {}
                toml::de::DeValue::Array(_) => problems.push((
                    value.span(),
                    format!("`{key}` is a single table, not an array of tables: write `[{key}]`"),
                )),
                other => problems.push((
                    value.span(),
                    format!(
                        "invalid type: {}, expected a table: write `[{key}]`",
                        other.type_str()
                    ),
                )),
            },
            "layer" | "test" | "path" => match v {
                toml::de::DeValue::Array(items) => {
                    for item in items {
                        if !item.get_ref().is_table() {
                            problems.push((
                                item.span(),
                                format!(
                                    "invalid type: {}, expected a table: write `[[{key}]]` \
                                     for each entry",
                                    item.get_ref().type_str()
                                ),
                            ));
                        }
                    }
                }
                toml::de::DeValue::Table(_) => problems.push((
                    value.span(),
                    format!(
                        "`{key}` is an array of tables: write `[[{key}]]` (double brackets) \
                         for each entry"
                    ),
                )),
                other => problems.push((
                    value.span(),
                    format!(
                        "invalid type: {}, expected an array of tables: write `[[{key}]]` for \
                         each entry",
                        other.type_str()
                    ),
                )),
            },
            // Unknown keys are reported by serde, with the list of known ones.
            _ => {}
        }
    }
    match problems.into_iter().min_by_key(|(span, _)| span.start) {
        Some((span, message)) => Err(ctx.err(span, message)),
        None => Ok(()),
    }
}
