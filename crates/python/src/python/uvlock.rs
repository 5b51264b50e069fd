//! uv's lock file (`uv.lock`, `version = 1`), read as it is: the packages `uv sync --frozen
//! --no-install-project` installs for the image's interpreter, each with its candidate wheels
//! and its sdist, in the shape [`super::pylock::parse`] gives, so that the same wheel choice
//! (and sdist build) follows.
//!
//! uv's lock is universal: one resolution for every platform and Python, split by
//! `resolution-markers` where versions differ. The packages to install are found as uv finds
//! them: from the project (the package whose `source` is `editable = "."` or `virtual = "."`,
//! the workspace's root; else, in a virtual workspace, every `editable` or `virtual` member),
//! through `dependencies` whose `marker` holds for the image, the
//! `optional-dependencies` of the extras asked for (the project's `extras`, and a
//! dependency's `extra = [...]`), and the project's `dev-dependencies` of the groups asked for
//! (uv's default groups unless told: `[tool.uv] default-groups` of pyproject.toml, else
//! `dev`). A dependency that names one of several versions of a package carries its `version`
//! (and `source`), as uv writes it. The project itself is not among them: `[python] project`
//! builds it ([`project`] gives its entry), else it is not installed (uv's
//! `--no-install-project`).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::interpreter::Interpreter;
use super::markers::{Marker, MarkerEnv, SpecifierSet, Version};
use super::pylock::{url_filename, LockedPackage, LockedSdist, LockedWheel, Place};
use super::tags::{normalize_name, WheelFile};
use crate::digest::Digest;

/// The `version` of uv.lock this module reads.
pub const VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum UvLockError {
    #[error("{line}:{col}: uv.lock is not valid TOML for uv's lock format: {message}")]
    Toml {
        line: usize,
        col: usize,
        message: String,
    },
    #[error("uv.lock version {found} is not one ocibuild reads (it reads version {VERSION}); lock again with a uv that writes it, or `uv export --format pylock.toml`")]
    Version { found: u32 },
    #[error("requires-python {spec} does not hold for Python {python}")]
    RequiresPython { spec: String, python: String },
    #[error(
        "uv.lock has no project (no package whose source is `editable` or `virtual`) to start from"
    )]
    NoProject,
    #[error("{at}package {package}: {what}")]
    Invalid {
        at: Place,
        package: String,
        what: String,
    },
    #[error("{at}package {package} comes from {kind}: ocibuild installs registry packages only (wheels, or sdists built by `sdist-builder`)")]
    Unsupported {
        at: Place,
        package: String,
        kind: String,
    },
    #[error("uv.lock has no project `{name}` (its projects, sources `editable` or `virtual`: {known}): run `uv lock` in the project")]
    NoSuchProject { name: String, known: String },
    #[error("the project has no extra `{extra}` (it has: {known})")]
    UnknownExtra { extra: String, known: String },
    #[error("the project has no dependency group `{group}` (it has: {known})")]
    UnknownGroup { group: String, known: String },
}

/// What to install besides the project's dependencies, as `uv sync` takes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// The project's extras (`--extra`).
    pub extras: BTreeSet<String>,
    /// The dependency groups (`--group`); `None`: uv's default groups.
    pub groups: Option<BTreeSet<String>>,
    /// `--no-dev`: without the `dev` group.
    pub no_dev: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawLock {
    version: u32,
    #[serde(default)]
    requires_python: Option<String>,
    #[serde(default)]
    package: Vec<RawPackage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawPackage {
    name: toml::Spanned<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    source: BTreeMap<String, toml::Value>,
    #[serde(default)]
    resolution_markers: Vec<String>,
    #[serde(default)]
    dependencies: Vec<RawDep>,
    #[serde(default)]
    optional_dependencies: BTreeMap<String, Vec<RawDep>>,
    #[serde(default)]
    dev_dependencies: BTreeMap<String, Vec<RawDep>>,
    #[serde(default)]
    sdist: Option<RawFile>,
    #[serde(default)]
    wheels: Vec<RawFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawDep {
    name: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    marker: Option<String>,
    #[serde(default)]
    extra: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RawFile {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    hash: Option<String>,
    #[serde(default)]
    size: Option<u64>,
}

/// The source kinds uv writes, and whether a package from it is the project.
fn source_kind(p: &RawPackage) -> &str {
    [
        "registry",
        "editable",
        "virtual",
        "git",
        "url",
        "path",
        "directory",
    ]
    .into_iter()
    .find(|k| p.source.contains_key(*k))
    .unwrap_or("registry")
}

fn is_project(p: &RawPackage) -> bool {
    matches!(source_kind(p), "editable" | "virtual")
}

/// Whether a project is the workspace's root (`source = { editable = "." }` or `virtual =
/// "."`): the one `uv sync` run beside uv.lock installs, where other members are installed only
/// as its dependencies.
fn is_workspace_root(p: &RawPackage) -> bool {
    ["editable", "virtual"]
        .iter()
        .any(|k| p.source.get(*k).and_then(|v| v.as_str()) == Some("."))
}

/// `sha256:HEX` as uv writes it.
fn sha256(hash: Option<&str>) -> Option<Digest> {
    let hex = hash?.strip_prefix("sha256:")?;
    format!("sha256:{}", hex.to_ascii_lowercase()).parse().ok()
}

/// uv's default groups from pyproject.toml's `[tool.uv] default-groups` (a list, or `"all"`:
/// every group of the project); `dev` without one.
pub fn default_groups(pyproject: Option<&str>, all: &BTreeSet<String>) -> BTreeSet<String> {
    let doc = pyproject.and_then(|t| toml::from_str::<toml::Table>(t).ok());
    let set = doc
        .as_ref()
        .and_then(|d| d.get("tool")?.get("uv")?.get("default-groups").cloned());
    match set {
        Some(toml::Value::String(s)) if s == "all" => all.clone(),
        Some(toml::Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str())
            .map(normalize_name)
            .collect(),
        _ => BTreeSet::from(["dev".to_string()]),
    }
}

/// The packages `uv sync --frozen --no-install-project` installs for `interp` with `sel`,
/// sorted by name. `pyproject`: the project's pyproject.toml, for its default groups.
pub fn parse(
    text: &str,
    interp: &Interpreter,
    sel: &Selection,
    pyproject: Option<&str>,
) -> Result<Vec<LockedPackage>, UvLockError> {
    let raw = read(text)?;
    let env = MarkerEnv::for_interpreter(interp);
    check_requires_python(&raw, &env)?;
    let lock = Lock {
        text,
        env: &env,
        raw: &raw,
    };
    let roots = lock.roots()?;
    let groups = lock.groups(&roots, sel, pyproject)?;
    let install = lock.install(&roots, sel, &groups)?;
    let mut out = Vec::with_capacity(install.len());
    for i in install {
        out.push(package(&raw.package[i], lock.place(&raw.package[i]))?);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The lock's `requires-python`, held against the image's Python.
fn check_requires_python(raw: &RawLock, env: &MarkerEnv) -> Result<(), UvLockError> {
    if let (Some(rp), Ok(python)) = (
        &raw.requires_python,
        Version::parse(&env.python_full_version),
    ) {
        let holds = SpecifierSet::parse(rp).is_ok_and(|s| s.contains(&python));
        if !holds {
            return Err(UvLockError::RequiresPython {
                spec: rp.clone(),
                python: env.python_full_version.clone(),
            });
        }
    }
    Ok(())
}

/// A package to visit: the package's index, and an extra of it (`""`: the package itself).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Visit {
    package: usize,
    extra: String,
}

/// The lock read, with the image's marker environment: what the walk from the project asks.
struct Lock<'a> {
    text: &'a str,
    env: &'a MarkerEnv,
    raw: &'a RawLock,
}

impl Lock<'_> {
    /// Where `p` stands in the lock's text.
    fn place(&self, p: &RawPackage) -> Place {
        let (line, col) = crate::diag::line_col(self.text, p.name.span().start);
        Place(Some((line, col)))
    }

    /// Whether the marker `m` (none: always) holds for the image.
    fn holds(&self, m: Option<&str>, package: &RawPackage) -> Result<bool, UvLockError> {
        match m {
            None => Ok(true),
            Some(s) => {
                Marker::parse(s)
                    .map(|m| m.evaluate(self.env))
                    .map_err(|e| UvLockError::Invalid {
                        at: self.place(package),
                        package: package.name.get_ref().clone(),
                        what: e.to_string(),
                    })
            }
        }
    }

    /// The workspace root when uv.lock has one (a virtual root without `[project]` has none:
    /// then every member, as `uv sync` there installs them all).
    fn roots(&self) -> Result<Vec<usize>, UvLockError> {
        let packages = &self.raw.package;
        let mut roots: Vec<usize> = (0..packages.len())
            .filter(|&i| is_project(&packages[i]) && is_workspace_root(&packages[i]))
            .collect();
        if roots.is_empty() {
            roots = (0..packages.len())
                .filter(|&i| is_project(&packages[i]))
                .collect();
        }
        if roots.is_empty() {
            return Err(UvLockError::NoProject);
        }
        Ok(roots)
    }

    /// The groups to install; the groups and extras asked for, checked against the project's.
    fn groups(
        &self,
        roots: &[usize],
        sel: &Selection,
        pyproject: Option<&str>,
    ) -> Result<BTreeSet<String>, UvLockError> {
        let mut all_groups = BTreeSet::new();
        let mut all_extras = BTreeSet::new();
        for &r in roots {
            let p = &self.raw.package[r];
            all_groups.extend(p.dev_dependencies.keys().map(|g| normalize_name(g)));
            all_extras.extend(p.optional_dependencies.keys().map(|e| normalize_name(e)));
        }
        let known = |s: &BTreeSet<String>| {
            if s.is_empty() {
                "none".to_string()
            } else {
                s.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        };
        for e in &sel.extras {
            if !all_extras.contains(&normalize_name(e)) {
                return Err(UvLockError::UnknownExtra {
                    extra: e.clone(),
                    known: known(&all_extras),
                });
            }
        }
        let mut groups = match &sel.groups {
            Some(g) => {
                for group in g {
                    if !all_groups.contains(&normalize_name(group)) {
                        return Err(UvLockError::UnknownGroup {
                            group: group.clone(),
                            known: known(&all_groups),
                        });
                    }
                }
                g.iter().map(|g| normalize_name(g)).collect()
            }
            None => default_groups(pyproject, &all_groups),
        };
        if sel.no_dev {
            groups.remove("dev");
        }
        Ok(groups)
    }

    /// The package a dependency names: by name, then by version, then the one whose
    /// resolution markers hold (a fork's).
    fn by_name(&self, d: &RawDep) -> Result<usize, UvLockError> {
        let packages = &self.raw.package;
        let name = normalize_name(&d.name);
        let mut c: Vec<usize> = (0..packages.len())
            .filter(|&i| normalize_name(packages[i].name.get_ref()) == name)
            .collect();
        if c.len() > 1 {
            if let Some(v) = &d.version {
                c.retain(|&i| packages[i].version.as_deref() == Some(v.as_str()));
            }
        }
        if c.len() > 1 {
            let mut fork = Vec::new();
            for &i in &c {
                let p = &packages[i];
                let mut any = p.resolution_markers.is_empty();
                for m in &p.resolution_markers {
                    any |= self.holds(Some(m.as_str()), p)?;
                }
                if any {
                    fork.push(i);
                }
            }
            c = fork;
        }
        match c.as_slice() {
            [i] => Ok(*i),
            _ => Err(UvLockError::Invalid {
                at: Place::default(),
                package: d.name.clone(),
                what: format!(
                    "a dependency the lock has {} packages for (a lock uv did not write?)",
                    c.len()
                ),
            }),
        }
    }

    /// Queues the package `d` names (and its extras) when its marker holds.
    fn follow(
        &self,
        d: &RawDep,
        of: &RawPackage,
        todo: &mut Vec<Visit>,
    ) -> Result<(), UvLockError> {
        if !self.holds(d.marker.as_deref(), of)? {
            return Ok(());
        }
        let i = self.by_name(d)?;
        todo.push(Visit {
            package: i,
            extra: String::new(),
        });
        todo.extend(d.extra.iter().map(|e| Visit {
            package: i,
            extra: normalize_name(e),
        }));
        Ok(())
    }

    /// The packages to install: the walk from the roots' dependencies, extras and groups.
    fn install(
        &self,
        roots: &[usize],
        sel: &Selection,
        groups: &BTreeSet<String>,
    ) -> Result<BTreeSet<usize>, UvLockError> {
        let mut todo: Vec<Visit> = Vec::new();
        for &r in roots {
            let p = &self.raw.package[r];
            for d in &p.dependencies {
                self.follow(d, p, &mut todo)?;
            }
            for (extra, deps) in &p.optional_dependencies {
                if sel
                    .extras
                    .iter()
                    .any(|e| normalize_name(e) == normalize_name(extra))
                {
                    for d in deps {
                        self.follow(d, p, &mut todo)?;
                    }
                }
            }
            for (group, deps) in &p.dev_dependencies {
                if groups.contains(&normalize_name(group)) {
                    for d in deps {
                        self.follow(d, p, &mut todo)?;
                    }
                }
            }
        }
        let mut seen: BTreeSet<Visit> = BTreeSet::new();
        let mut install: BTreeSet<usize> = BTreeSet::new();
        while let Some(visit) = todo.pop() {
            if !seen.insert(visit.clone()) {
                continue;
            }
            let p = &self.raw.package[visit.package];
            // A workspace member the project depends on is not installed (a local source;
            // `[python] project` refuses it), but what it depends on is, as `uv sync` installs it.
            if !is_project(p) {
                install.insert(visit.package);
            }
            let deps = if visit.extra.is_empty() {
                &p.dependencies
            } else {
                match p
                    .optional_dependencies
                    .iter()
                    .find(|(e, _)| normalize_name(e) == normalize_name(&visit.extra))
                {
                    Some((_, d)) => d,
                    None => continue,
                }
            };
            for d in deps {
                self.follow(d, p, &mut todo)?;
            }
        }
        Ok(install)
    }
}

/// The lock read, of the version this module reads.
fn read(text: &str) -> Result<RawLock, UvLockError> {
    let raw: RawLock = toml::from_str(text).map_err(|e| {
        let super::TomlError { line, col, message } = super::TomlError::of(text, &e);
        UvLockError::Toml { line, col, message }
    })?;
    if raw.version != VERSION {
        return Err(UvLockError::Version { found: raw.version });
    }
    Ok(raw)
}

/// The project `[python] project` builds, as uv.lock records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectEntry {
    /// The name as the lock writes it.
    pub name: String,
    /// `None` for a project whose version is dynamic (uv writes none).
    pub version: Option<String>,
    /// uv's `virtual` source (`[tool.uv] package = false`, or no build system): nothing to
    /// build.
    pub is_virtual: bool,
    /// The workspace members (other `editable` or `virtual` packages) its dependencies, extras
    /// or groups name: `uv sync` builds them too, ocibuild does not.
    pub members: Vec<String>,
}

/// The project entry (source `editable` or `virtual`) of uv.lock named `name`.
pub fn project(text: &str, name: &str) -> Result<ProjectEntry, UvLockError> {
    let raw = read(text)?;
    let want = normalize_name(name);
    let projects: Vec<&RawPackage> = raw.package.iter().filter(|p| is_project(p)).collect();
    let Some(p) = projects
        .iter()
        .find(|p| normalize_name(p.name.get_ref()) == want)
    else {
        let known: Vec<String> = projects.iter().map(|p| p.name.get_ref().clone()).collect();
        return Err(UvLockError::NoSuchProject {
            name: name.to_string(),
            known: if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            },
        });
    };
    let named = p
        .dependencies
        .iter()
        .chain(p.optional_dependencies.values().flatten())
        .chain(p.dev_dependencies.values().flatten())
        .map(|d| normalize_name(&d.name));
    let members: BTreeSet<String> = named
        .filter(|n| {
            *n != want
                && projects
                    .iter()
                    .any(|q| normalize_name(q.name.get_ref()) == *n)
        })
        .collect();
    Ok(ProjectEntry {
        name: p.name.get_ref().clone(),
        version: p.version.clone(),
        is_virtual: source_kind(p) == "virtual",
        members: members.into_iter().collect(),
    })
}

/// One package to install, in pylock's shape.
fn package(p: &RawPackage, at: Place) -> Result<LockedPackage, UvLockError> {
    let name = p.name.get_ref().clone();
    let kind = source_kind(p);
    if kind != "registry" {
        return Err(UvLockError::Unsupported {
            at,
            package: name,
            kind: match kind {
                "git" => "a git checkout".to_string(),
                other => format!("a {other} source"),
            },
        });
    }
    let invalid = |what: String| UvLockError::Invalid {
        at,
        package: name.clone(),
        what,
    };
    let mut wheels = Vec::with_capacity(p.wheels.len());
    for w in &p.wheels {
        let filename = w
            .filename
            .clone()
            .or_else(|| w.url.as_deref().map(url_filename))
            .or_else(|| w.path.as_deref().map(url_filename))
            .unwrap_or_default();
        let file = WheelFile::parse(&filename).map_err(|e| invalid(format!("wheel: {e}")))?;
        if normalize_name(&file.name) != normalize_name(&name) {
            return Err(invalid(format!("{filename} is not a wheel of {name}")));
        }
        let sha256 = sha256(w.hash.as_deref())
            .ok_or_else(|| invalid(format!("wheel {filename}: no sha256 hash")))?;
        wheels.push(LockedWheel {
            file,
            url: w.url.as_deref().map(crate::http::redact),
            path: w.path.clone(),
            size: w.size,
            sha256,
        });
    }
    let sdist = p.sdist.as_ref().and_then(|s| {
        let filename = s
            .filename
            .clone()
            .or_else(|| s.url.as_deref().map(url_filename))
            .or_else(|| s.path.as_deref().map(url_filename))?;
        Some(LockedSdist {
            filename,
            url: s.url.as_deref().map(crate::http::redact),
            path: s.path.clone(),
            size: s.size,
            sha256: sha256(s.hash.as_deref())?,
        })
    });
    Ok(LockedPackage {
        at,
        name,
        version: p.version.clone(),
        wheels,
        has_sdist: p.sdist.is_some(),
        sdist,
    })
}

/// One requirement as uv's `--locked` check compares it: the name, the specifier's parts,
/// the extras, and where it is asked for (`""`, `extra:NAME`, `group:NAME`). Markers other
/// than `extra == …` are not compared (uv rewrites them).
type Req = (String, BTreeSet<String>, BTreeSet<String>, String);

/// A PEP 508 requirement string as a [`Req`] asked for at `at`.
fn pep508(s: &str, at: &str) -> Option<Req> {
    let (body, _marker) = s.split_once(';').unwrap_or((s, ""));
    let body = body.trim();
    let end = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)))
        .unwrap_or(body.len());
    let name = normalize_name(&body[..end]);
    if name.is_empty() {
        return None;
    }
    let mut rest = body[end..].trim();
    let mut extras = BTreeSet::new();
    if let Some(r) = rest.strip_prefix('[') {
        let (list, after) = r.split_once(']')?;
        extras = list
            .split(',')
            .map(|e| normalize_name(e.trim()))
            .filter(|e| !e.is_empty())
            .collect();
        rest = after.trim();
    }
    let spec = rest.trim_start_matches('(').trim_end_matches(')');
    Some((name, spec_parts(spec), extras, at.to_string()))
}

fn spec_parts(spec: &str) -> BTreeSet<String> {
    spec.split(',')
        .map(|p| p.chars().filter(|c| !c.is_whitespace()).collect::<String>())
        .filter(|p| !p.is_empty())
        .collect()
}

/// A `{ name, specifier, marker, extras }` table of uv's `requires-dist` as a [`Req`].
fn lock_req(t: &toml::Value, group: Option<&str>) -> Option<Req> {
    let name = normalize_name(t.get("name")?.as_str()?);
    let spec = t.get("specifier").and_then(|v| v.as_str()).unwrap_or("");
    let extras = t
        .get("extras")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|e| e.as_str())
                .map(normalize_name)
                .collect()
        })
        .unwrap_or_default();
    let at = if let Some(g) = group {
        format!("group:{}", normalize_name(g))
    } else {
        let marker = t.get("marker").and_then(|v| v.as_str()).unwrap_or("");
        match marker.split_once("extra == '") {
            Some((_, e)) => format!("extra:{}", normalize_name(e.split('\'').next()?)),
            None => String::new(),
        }
    };
    Some((name, spec_parts(spec), extras, at))
}

/// What uv's `--locked` check would find: why `lock` (uv.lock's text) no longer answers
/// `pyproject` (the project's pyproject.toml), naming up to three requirements that differ;
/// `None` when they agree, or when either has no project metadata to compare.
pub fn stale(lock: &str, pyproject: &str) -> Option<String> {
    let lock: toml::Table = toml::from_str(lock).ok()?;
    let project: toml::Table = toml::from_str(pyproject).ok()?;
    let name = normalize_name(project.get("project")?.get("name")?.as_str()?);
    let root = lock.get("package")?.as_array()?.iter().find(|p| {
        p.get("name")
            .and_then(|n| n.as_str())
            .map(normalize_name)
            .as_deref()
            == Some(&name)
            && p.get("source")
                .and_then(|s| s.as_table())
                .is_some_and(|s| s.contains_key("editable") || s.contains_key("virtual"))
    })?;
    let meta = root.get("metadata")?;
    let mut locked: BTreeSet<Req> = BTreeSet::new();
    for t in meta
        .get("requires-dist")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        locked.extend(lock_req(t, None));
    }
    if let Some(groups) = meta.get("requires-dev").and_then(|v| v.as_table()) {
        for (g, list) in groups {
            for t in list.as_array().into_iter().flatten() {
                locked.extend(lock_req(t, Some(g)));
            }
        }
    }
    let p = project.get("project")?;
    let mut wanted: BTreeSet<Req> = BTreeSet::new();
    let strings = |v: Option<&toml::Value>| -> Vec<String> {
        v.and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    for r in strings(p.get("dependencies")) {
        wanted.extend(pep508(&r, ""));
    }
    if let Some(opt) = p.get("optional-dependencies").and_then(|v| v.as_table()) {
        for (e, list) in opt {
            for r in strings(Some(list)) {
                wanted.extend(pep508(&r, &format!("extra:{}", normalize_name(e))));
            }
        }
    }
    if let Some(groups) = project.get("dependency-groups").and_then(|v| v.as_table()) {
        for (g, list) in groups {
            // `{ include-group = … }` entries are tables: uv expands them; not compared.
            for r in strings(Some(list)) {
                wanted.extend(pep508(&r, &format!("group:{}", normalize_name(g))));
            }
        }
    }
    if locked == wanted {
        return None;
    }
    let show = |r: &Req| {
        let spec = r.1.iter().cloned().collect::<Vec<_>>().join(",");
        let at = if r.3.is_empty() {
            String::new()
        } else {
            format!(" ({})", r.3)
        };
        format!("{}{spec}{at}", r.0)
    };
    let mut diffs: Vec<String> = wanted
        .difference(&locked)
        .map(|r| format!("pyproject.toml has {}", show(r)))
        .chain(
            locked
                .difference(&wanted)
                .map(|r| format!("uv.lock has {}", show(r))),
        )
        .collect();
    let more = diffs.len().saturating_sub(3);
    diffs.truncate(3);
    if more > 0 {
        diffs.push(format!("{more} more"));
    }
    Some(diffs.join("; "))
}

#[cfg(test)]
mod tests;
