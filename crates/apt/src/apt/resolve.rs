//! The resolver: requested packages → the closure of their `Pre-Depends` and `Depends` over
//! the packages of all sources, minus what the base image already has.
//!
//! Deterministic by construction: requests are processed in order, dependencies breadth-first
//! in field order, and every choice is "the first alternative that can be satisfied, by the
//! highest version" (real packages before providers; providers by name, then highest version;
//! equal versions: the earlier source). There is no backtracking: when a package already
//! chosen does not satisfy a later versioned dependency, that is an error showing both chains.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::control::{parse_paragraphs, parse_provides, Dep};
use super::index::{MultiArch, Package};
use super::spill::SourceIndex;
use super::version::{Constraint, Version};
use super::AptError;
use crate::digest::Digest;
use crate::http::join_url;

/// One requested package: a name and an optional version constraint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub name: String,
    pub constraint: Option<Constraint>,
}

impl Request {
    /// Parses `name`, `name (>= 1.0)` or `name=1.0` (apt-get's exact-version form).
    pub fn parse(s: &str) -> Result<Request, AptError> {
        let text = match s.split_once('=') {
            Some((n, v)) if !n.contains('(') => format!("{} (= {})", n.trim(), v.trim()),
            _ => s.to_string(),
        };
        let deps = super::control::parse_depends(&text).map_err(|source| AptError::Control {
            what: format!("package request `{s}`"),
            source,
        })?;
        match deps.as_slice() {
            [alts] if alts.len() == 1 && alts[0].arch.is_none() => Ok(Request {
                name: alts[0].name.clone(),
                constraint: alts[0].constraint.clone(),
            }),
            _ => Err(AptError::Field {
                what: "package request".into(),
                package: s.to_string(),
                reason: "expected one package name with an optional version constraint".into(),
            }),
        }
    }
}

/// A resolved package, as it goes into the lock.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Locked {
    pub name: String,
    pub version: String,
    pub architecture: String,
    /// Relative to `source_url`.
    pub filename: String,
    pub size: u64,
    pub sha256: Digest,
    /// The archive root (snapshot included).
    pub source_url: String,
}

impl Locked {
    pub fn url(&self) -> String {
        join_url(&self.source_url, &self.filename)
    }
}

/// An installed package of the base image.
#[derive(Clone, Debug)]
struct InstalledPkg {
    version: Version,
    provides: Vec<Dep>,
}

/// What the base image has installed: its dpkg `status` file and `status.d/*` records.
#[derive(Clone, Debug, Default)]
pub struct Installed {
    pkgs: BTreeMap<String, InstalledPkg>,
}

impl Installed {
    pub fn new() -> Installed {
        Installed::default()
    }

    /// The sha256 of the packages and versions installed (`name version` lines, by name): what
    /// a resolution against this base depends on.
    pub fn digest(&self) -> crate::digest::Digest {
        let mut text = String::new();
        for (name, p) in &self.pkgs {
            text.push_str(&format!("{name} {}\n", p.version));
        }
        crate::digest::Digest::of(text.as_bytes())
    }

    /// Adds the packages of a dpkg status file (`var/lib/dpkg/status`: only those whose
    /// `Status` ends in `installed`) or a `status.d/NAME` record (no `Status` field: installed).
    pub fn add_status(&mut self, text: &str, what: &str) -> Result<(), AptError> {
        let ps = parse_paragraphs(text).map_err(|source| AptError::Control {
            what: what.to_string(),
            source,
        })?;
        for p in ps {
            let name = p.get("Package").unwrap_or("").to_string();
            let bad = |reason: String| AptError::Field {
                what: what.to_string(),
                package: name.clone(),
                reason,
            };
            if name.is_empty() {
                return Err(bad("no Package field".into()));
            }
            if let Some(st) = p.get("Status") {
                if st.split_whitespace().last() != Some("installed") {
                    continue;
                }
            }
            let version =
                Version::parse(p.get("Version").unwrap_or("")).map_err(|e| bad(e.to_string()))?;
            let provides = match p.get("Provides") {
                Some(v) => parse_provides(v).map_err(|e| bad(crate::diag::chain(&e)))?,
                None => Vec::new(),
            };
            self.pkgs.insert(name, InstalledPkg { version, provides });
        }
        Ok(())
    }

    /// The installed version of a package.
    pub fn version(&self, name: &str) -> Option<&Version> {
        self.pkgs.get(name).map(|p| &p.version)
    }

    /// Whether the package is installed (any version).
    pub fn contains(&self, name: &str) -> bool {
        self.pkgs.contains_key(name)
    }

    pub fn len(&self) -> usize {
        self.pkgs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pkgs.is_empty()
    }

    fn satisfies(&self, dep: &Dep) -> bool {
        if let Some(p) = self.pkgs.get(&dep.name) {
            if dep
                .constraint
                .as_ref()
                .is_none_or(|c| c.matches(&p.version))
            {
                return true;
            }
        }
        self.pkgs
            .values()
            .any(|p| p.provides.iter().any(|pr| provide_matches(pr, dep)))
    }
}

/// Whether a `Provides` entry satisfies a dependency: unversioned provides satisfy only
/// unversioned dependencies; versioned ones satisfy a constraint their version meets.
fn provide_matches(pr: &Dep, dep: &Dep) -> bool {
    if pr.name != dep.name {
        return false;
    }
    match (&dep.constraint, &pr.constraint) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(c), Some(pv)) => c.matches(&pv.version),
    }
}

/// The packages providing a name, each with its provide entry.
type Providers = Rc<[(Rc<Package>, Dep)]>;

/// The packages of all sources for one architecture, read from the sources' spills name by
/// name as the resolver asks (each name once).
struct Index<'a> {
    arch: &'a str,
    sources: &'a [SourceIndex],
    /// Real packages by name, highest version first (ties: source order).
    by_name: RefCell<HashMap<String, Rc<[Rc<Package>]>>>,
    /// Virtual name → providing packages with their provide entry.
    providers: RefCell<HashMap<String, Providers>>,
    /// Packages read so far, and the most that may be.
    read: Cell<usize>,
    max_read: usize,
}

/// Most packages one resolution reads back from the sources (about 0.7 KB each in memory).
/// Resolving recipes/bookworm-python.toml reads 45.
pub const MAX_READ: usize = 1 << 16;

impl<'a> Index<'a> {
    fn new(sources: &'a [SourceIndex], arch: &'a str, max_read: usize) -> Index<'a> {
        Index {
            arch,
            sources,
            by_name: RefCell::default(),
            providers: RefCell::default(),
            read: Cell::new(0),
            max_read,
        }
    }

    /// Counts `n` packages read, refusing past the bound.
    fn count(&self, n: usize) -> Result<(), AptError> {
        self.read.set(self.read.get() + n);
        if self.read.get() > self.max_read {
            return Err(AptError::TooManyRead {
                limit: self.max_read,
            });
        }
        Ok(())
    }

    fn of_arch(&self, p: &Package) -> bool {
        *p.architecture == *self.arch || &*p.architecture == "all"
    }

    /// The real packages named `name`.
    fn real(&self, name: &str) -> Result<Rc<[Rc<Package>]>, AptError> {
        if let Some(v) = self.by_name.borrow().get(name) {
            return Ok(Rc::clone(v));
        }
        let mut v = Vec::new();
        for s in self.sources {
            let named = s.named(name)?;
            self.count(named.len())?;
            v.extend(named.into_iter().filter(|p| self.of_arch(p)).map(Rc::new));
        }
        // Stable: equal versions keep source order.
        v.sort_by(|a, b| b.version.cmp(&a.version));
        let v: Rc<[Rc<Package>]> = v.into();
        self.by_name
            .borrow_mut()
            .insert(name.to_string(), Rc::clone(&v));
        Ok(v)
    }

    /// The packages that provide `name`, with their provide entry.
    fn provided(&self, name: &str) -> Result<Providers, AptError> {
        if let Some(v) = self.providers.borrow().get(name) {
            return Ok(Rc::clone(v));
        }
        let mut v = Vec::new();
        for s in self.sources {
            let providing = s.providing(name)?;
            self.count(providing.len())?;
            for p in providing {
                if !self.of_arch(&p) {
                    continue;
                }
                let p = Rc::new(p);
                for pr in p.provides.iter().filter(|pr| pr.name == name) {
                    v.push((Rc::clone(&p), pr.clone()));
                }
            }
        }
        v.sort_by(|(a, _), (b, _)| a.name.cmp(&b.name).then(b.version.cmp(&a.version)));
        let v: Providers = v.into();
        self.providers
            .borrow_mut()
            .insert(name.to_string(), Rc::clone(&v));
        Ok(v)
    }

    /// Whether a real package satisfies the dependency's architecture qualifier.
    fn arch_ok(&self, p: &Package, dep: &Dep) -> bool {
        match dep.arch.as_deref() {
            None | Some("native") => true,
            Some("any") => p.multi_arch == MultiArch::Allowed,
            Some(a) => a == self.arch || (a == "all" && &*p.architecture == "all"),
        }
    }

    fn real_matches(&self, p: &Package, dep: &Dep) -> bool {
        *p.name == *dep.name
            && self.arch_ok(p, dep)
            && dep
                .constraint
                .as_ref()
                .is_none_or(|c| c.matches(&p.version))
    }

    /// Candidates for a dependency, best first: real packages (highest version), then providers.
    fn candidates(&self, dep: &Dep) -> Result<Vec<Rc<Package>>, AptError> {
        let mut out: Vec<Rc<Package>> = self
            .real(&dep.name)?
            .iter()
            .filter(|p| self.real_matches(p, dep))
            .cloned()
            .collect();
        // Provides satisfy `:any` only from Multi-Arch: foreign/allowed providers; in a
        // single-architecture resolution, unqualified deps take any provider.
        if dep.arch.as_deref() != Some("any") {
            out.extend(
                self.provided(&dep.name)?
                    .iter()
                    .filter(|(_, pr)| provide_matches(pr, dep))
                    .map(|(p, _)| Rc::clone(p)),
            );
        }
        Ok(out)
    }

    fn known(&self, name: &str) -> Result<bool, AptError> {
        Ok(!self.real(name)?.is_empty() || !self.provided(name)?.is_empty())
    }

    /// "available: 1.0, 2.0" for an error message.
    fn available(&self, name: &str) -> Result<String, AptError> {
        let mut vs: Vec<String> = self
            .real(name)?
            .iter()
            .map(|p| p.version.to_string())
            .collect();
        vs.extend(
            self.provided(name)?
                .iter()
                .map(|(p, pr)| match &pr.constraint {
                    Some(c) => format!("{} provided by {} {}", c.version, p.name, p.version),
                    None => format!("unversioned, provided by {} {}", p.name, p.version),
                }),
        );
        Ok(if vs.is_empty() {
            format!("no package `{name}` in any source")
        } else {
            format!("available: {}", vs.join(", "))
        })
    }

    /// Up to three known names close to `name`, closest first (reads every package: for the
    /// error only, keeping no more than the three).
    fn suggestions(&self, name: &str) -> Result<Vec<String>, AptError> {
        // No package is named anything that long (and the edit distance of a value of
        // megabytes to every name would take hours).
        if name.len() > crate::bounded::MESSAGE_VALUE {
            return Ok(Vec::new());
        }
        let mut best: Vec<(usize, String)> = Vec::new();
        for s in self.sources {
            s.each_name(self.arch, |k| {
                let d = edit_distance(name, k);
                if !(d <= 2.max(name.len() / 4) || k.contains(name)) {
                    return;
                }
                let at = best.partition_point(|(bd, bk)| (*bd, bk.as_str()) < (d, k));
                if at < 3 && best.get(at).is_none_or(|(_, bk)| bk != k) {
                    best.insert(at, (d, k.to_string()));
                    best.truncate(3);
                }
            })?;
        }
        Ok(best.into_iter().map(|(_, k)| k).collect())
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Resolves `requests` against the packages of `sources` for the native architecture `arch`.
/// Packages whose dependencies the base (`installed`) satisfies are not added again.
/// The result is sorted by name.
pub fn resolve(
    sources: &[SourceIndex],
    arch: &str,
    requests: &[Request],
    installed: &Installed,
) -> Result<Vec<Locked>, AptError> {
    resolve_reading(sources, arch, requests, installed, &[], MAX_READ).map(|r| r.packages)
}

/// What a resolution chose.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolution {
    /// The packages to install, sorted by name.
    pub packages: Vec<Locked>,
    /// Each `host-provides` name given, with the dependencies it satisfied (`PACKAGE:
    /// DEPENDENCY` as the package wrote the group; sorted): empty when nothing depends on it.
    pub host: BTreeMap<String, Vec<String>>,
}

/// [`resolve`] with names the host provides at run time (`[apt] host-provides`): a dependency
/// group with an alternative naming one is satisfied by it, whatever its version constraint,
/// and nothing is installed for it (preferred over installing another alternative; a group
/// the base or an already chosen package satisfies stays theirs).
///
/// A dependency the resolution would answer with the NVIDIA driver's user-space part
/// ([`super::driver`]), or one on the driver that no source answers, is an error naming the
/// `host-provides` entry to add, unless the driver was asked for (a request, or what a
/// requested driver package depends on).
pub fn resolve_with_host(
    sources: &[SourceIndex],
    arch: &str,
    requests: &[Request],
    installed: &Installed,
    host: &[String],
) -> Result<Resolution, AptError> {
    resolve_reading(sources, arch, requests, installed, host, MAX_READ)
}

/// [`resolve_with_host`], reading at most `max_read` packages.
fn resolve_reading(
    sources: &[SourceIndex],
    arch: &str,
    requests: &[Request],
    installed: &Installed,
    host: &[String],
    max_read: usize,
) -> Result<Resolution, AptError> {
    let index = Index::new(sources, arch, max_read);
    // name → (package, the chain that brought it in)
    let mut chosen: Chosen = BTreeMap::new();
    let mut queue: VecDeque<Rc<Package>> = VecDeque::new();
    let mut host_used: BTreeMap<String, std::collections::BTreeSet<String>> = host
        .iter()
        .map(|h| (h.clone(), Default::default()))
        .collect();
    // Packages installed because the driver was asked for: a requested driver package, and
    // what those depend on.
    let mut wanted_driver: std::collections::HashSet<Arc<str>> = Default::default();

    for r in requests {
        let dep = Dep {
            name: r.name.clone(),
            arch: None,
            constraint: r.constraint.clone(),
        };
        let chain = vec![dep.to_string()];
        if !index.known(&r.name)? {
            if installed.satisfies(&dep) {
                continue;
            }
            return Err(AptError::UnknownPackage {
                name: r.name.clone(),
                suggestions: index.suggestions(&r.name)?,
            });
        }
        if installed.satisfies(&dep) || satisfied_by_chosen(&chosen, &dep, &index) {
            continue;
        }
        let Some(p) = index.candidates(&dep)?.into_iter().next() else {
            return Err(AptError::Unsatisfiable {
                chain,
                reason: format!("no version satisfies it ({})", index.available(&r.name)?),
                unknown: Vec::new(),
            });
        };
        check_clash(&chosen, &p, &chain)?;
        if super::driver::is_driver(&p) {
            wanted_driver.insert(Arc::clone(&p.name));
        }
        chosen.insert(Arc::clone(&p.name), (Rc::clone(&p), chain));
        queue.push_back(p);
    }

    while let Some(p) = queue.pop_front() {
        let parent_chain = chosen
            .get(&*p.name)
            .map(|(_, c)| c.clone())
            .unwrap_or_default();
        // Checked when the index was read, so this does not fail in practice.
        let depends = p.depends().map_err(|e| AptError::Field {
            what: format!("index of {}", p.source_url),
            package: p.name.to_string(),
            reason: format!("Depends: {}", crate::diag::chain(&e)),
        })?;
        for group in &depends {
            if group
                .iter()
                .any(|d| installed.satisfies(d) || satisfied_by_chosen(&chosen, d, &index))
            {
                continue;
            }
            if let Some(h) = group.iter().find(|d| host_used.contains_key(&d.name)) {
                let text: Vec<String> = group.iter().map(Dep::to_string).collect();
                if let Some(used) = host_used.get_mut(&h.name) {
                    used.insert(format!("{}: {}", p.name, text.join(" | ")));
                }
                continue;
            }
            let under_driver = wanted_driver.contains(&p.name);
            // A candidate must also meet the package's other single-alternative constraints
            // on the same name (`libfoo (>= 2), libfoo (<< 3)`), as there is no backtracking.
            let mut pick = None;
            for d in group {
                let found = index
                    .candidates(d)?
                    .into_iter()
                    .find(|c| compatible(&index, c, &depends));
                if let Some(c) = found {
                    pick = Some((d, c));
                    break;
                }
            }
            let Some((dep, cand)) = pick else {
                return Err(unsatisfiable(&index, group, &parent_chain, under_driver)?);
            };
            let mut chain = parent_chain.clone();
            chain.push(dep.to_string());
            if super::driver::is_driver(&cand) && !under_driver {
                let text: Vec<String> = group.iter().map(Dep::to_string).collect();
                chain.pop();
                chain.push(text.join(" | "));
                return Err(AptError::DriverDependency {
                    chain,
                    package: Some(cand.name.to_string()),
                    name: super::driver::suggested_name(group),
                });
            }
            check_clash(&chosen, &cand, &chain)?;
            if under_driver {
                wanted_driver.insert(Arc::clone(&cand.name));
            }
            chosen.insert(Arc::clone(&cand.name), (Rc::clone(&cand), chain));
            queue.push_back(cand);
        }
    }

    let mut out: Vec<Locked> = chosen
        .values()
        .map(|(p, _)| Locked {
            name: p.name.to_string(),
            version: p.version.to_string(),
            architecture: p.architecture.to_string(),
            filename: p.filename.to_string(),
            size: p.size,
            sha256: p.sha256,
            source_url: p.source_url.to_string(),
        })
        .collect();
    out.sort();
    Ok(Resolution {
        packages: out,
        host: host_used
            .into_iter()
            .map(|(h, used)| (h, used.into_iter().collect()))
            .collect(),
    })
}

/// Why no alternative of `group` (a dependency of the package `chain` ends with) can be
/// installed: a driver the recipe did not ask for, or no version of any alternative.
fn unsatisfiable(
    index: &Index<'_>,
    group: &[Dep],
    parent_chain: &[String],
    under_driver: bool,
) -> Result<AptError, AptError> {
    let mut chain = parent_chain.to_vec();
    let text: Vec<String> = group.iter().map(Dep::to_string).collect();
    chain.push(text.join(" | "));
    if !under_driver && group.iter().any(|d| super::driver::is_driver_name(&d.name)) {
        return Ok(AptError::DriverDependency {
            chain,
            package: None,
            name: super::driver::suggested_name(group),
        });
    }
    let avail = group
        .iter()
        .map(|d| index.available(&d.name))
        .collect::<Result<Vec<_>, _>>()?;
    let mut unknown = Vec::new();
    for d in group {
        if !index.known(&d.name)? {
            unknown.push(d.name.clone());
        }
    }
    Ok(AptError::Unsatisfiable {
        chain,
        reason: format!("no version satisfies it ({})", avail.join("; ")),
        unknown,
    })
}

/// Whether `cand` meets every single-alternative dependency of `depends` naming it.
fn compatible(index: &Index<'_>, cand: &Package, depends: &[super::control::Alternatives]) -> bool {
    depends.iter().all(|g| match g.as_slice() {
        [d] if *d.name == *cand.name => index.real_matches(cand, d),
        _ => true,
    })
}

/// The packages chosen so far by name, with the chain that brought each in.
type Chosen = BTreeMap<Arc<str>, (Rc<Package>, Vec<String>)>;

fn satisfied_by_chosen(chosen: &Chosen, dep: &Dep, index: &Index<'_>) -> bool {
    if let Some((p, _)) = chosen.get(dep.name.as_str()) {
        if index.real_matches(p, dep) {
            return true;
        }
    }
    dep.arch.as_deref() != Some("any")
        && chosen
            .values()
            .any(|(p, _)| p.provides.iter().any(|pr| provide_matches(pr, dep)))
}

/// A second, different version of a package already chosen: no backtracking, so an error.
fn check_clash(chosen: &Chosen, cand: &Package, chain: &[String]) -> Result<(), AptError> {
    if let Some((other, other_chain)) = chosen.get(&*cand.name) {
        return Err(AptError::Unsatisfiable {
            unknown: Vec::new(),
            chain: chain.to_vec(),
            reason: format!(
                "needs {} {}, but {} {} was already chosen for {}",
                cand.name,
                cand.version,
                other.name,
                other.version,
                other_chain.join(" → ")
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
