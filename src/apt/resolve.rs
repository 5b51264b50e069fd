//! The resolver: requested packages → the closure of their `Pre-Depends` and `Depends` over
//! the packages of all sources, minus what the base image already has.
//!
//! Deterministic by construction: requests are processed in order, dependencies breadth-first
//! in field order, and every choice is "the first alternative that can be satisfied, by the
//! highest version" (real packages before providers; providers by name, then highest version;
//! equal versions: the earlier source). There is no backtracking: when a package already
//! chosen does not satisfy a later versioned dependency, that is an error showing both chains.

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::control::{parse_paragraphs, parse_provides, Dep};
use super::fetch::join_url;
use super::index::{MultiArch, Package, SourceIndex};
use super::version::{Constraint, Version};
use super::AptError;
use crate::digest::Digest;

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
                Some(v) => parse_provides(v).map_err(|e| bad(e.to_string()))?,
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

struct Index<'a> {
    arch: &'a str,
    /// Real packages by name, highest version first (ties: source order).
    by_name: HashMap<&'a str, Vec<&'a Package>>,
    /// Virtual name → providing packages with their provide entry.
    providers: HashMap<&'a str, Vec<(&'a Package, &'a Dep)>>,
}

impl<'a> Index<'a> {
    fn new(sources: &'a [SourceIndex], arch: &'a str) -> Index<'a> {
        let mut by_name: HashMap<&str, Vec<&Package>> = HashMap::new();
        let mut providers: HashMap<&str, Vec<(&Package, &Dep)>> = HashMap::new();
        for p in sources.iter().flat_map(|s| &s.packages) {
            if &*p.architecture != arch && &*p.architecture != "all" {
                continue;
            }
            by_name.entry(&p.name).or_default().push(p);
            for pr in &p.provides {
                providers.entry(&pr.name).or_default().push((p, pr));
            }
        }
        for v in by_name.values_mut() {
            // Stable: equal versions keep source order.
            v.sort_by(|a, b| b.version.cmp(&a.version));
        }
        for v in providers.values_mut() {
            v.sort_by(|(a, _), (b, _)| a.name.cmp(&b.name).then(b.version.cmp(&a.version)));
        }
        Index {
            arch,
            by_name,
            providers,
        }
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
    fn candidates(&self, dep: &Dep) -> Vec<&'a Package> {
        let mut out: Vec<&Package> = self
            .by_name
            .get(dep.name.as_str())
            .into_iter()
            .flatten()
            .copied()
            .filter(|p| self.real_matches(p, dep))
            .collect();
        // Provides satisfy `:any` only from Multi-Arch: foreign/allowed providers; in a
        // single-architecture resolution, unqualified deps take any provider.
        if dep.arch.as_deref() != Some("any") {
            out.extend(
                self.providers
                    .get(dep.name.as_str())
                    .into_iter()
                    .flatten()
                    .filter(|(_, pr)| provide_matches(pr, dep))
                    .map(|(p, _)| *p),
            );
        }
        out
    }

    fn known(&self, name: &str) -> bool {
        self.by_name.contains_key(name) || self.providers.contains_key(name)
    }

    /// "available: 1.0, 2.0" for an error message.
    fn available(&self, name: &str) -> String {
        let mut vs: Vec<String> = self
            .by_name
            .get(name)
            .into_iter()
            .flatten()
            .map(|p| p.version.to_string())
            .collect();
        vs.extend(self.providers.get(name).into_iter().flatten().map(
            |(p, pr)| match &pr.constraint {
                Some(c) => format!("{} provided by {} {}", c.version, p.name, p.version),
                None => format!("unversioned, provided by {} {}", p.name, p.version),
            },
        ));
        if vs.is_empty() {
            format!("no package `{name}` in any source")
        } else {
            format!("available: {}", vs.join(", "))
        }
    }

    /// Up to three known names close to `name`.
    fn suggestions(&self, name: &str) -> Vec<String> {
        let mut scored: Vec<(usize, &str)> = self
            .by_name
            .keys()
            .chain(self.providers.keys())
            .map(|k| (edit_distance(name, k), *k))
            .filter(|(d, k)| *d <= 2.max(name.len() / 4) || k.contains(name))
            .collect();
        scored.sort();
        scored.dedup();
        scored
            .into_iter()
            .take(3)
            .map(|(_, k)| k.to_string())
            .collect()
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
    let index = Index::new(sources, arch);
    // name → (package, the chain that brought it in)
    let mut chosen: BTreeMap<&str, (&Package, Vec<String>)> = BTreeMap::new();
    let mut queue: VecDeque<&Package> = VecDeque::new();

    for r in requests {
        let dep = Dep {
            name: r.name.clone(),
            arch: None,
            constraint: r.constraint.clone(),
        };
        let chain = vec![dep.to_string()];
        if !index.known(&r.name) {
            if installed.satisfies(&dep) {
                continue;
            }
            return Err(AptError::UnknownPackage {
                name: r.name.clone(),
                suggestions: index.suggestions(&r.name),
            });
        }
        if installed.satisfies(&dep) || satisfied_by_chosen(&chosen, &dep, &index) {
            continue;
        }
        let Some(p) = index.candidates(&dep).first().copied() else {
            return Err(AptError::Unsatisfiable {
                chain,
                reason: format!("no version satisfies it ({})", index.available(&r.name)),
            });
        };
        check_clash(&chosen, p, &chain)?;
        chosen.insert(&p.name, (p, chain));
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
            reason: format!("Depends: {e}"),
        })?;
        for group in &depends {
            if group
                .iter()
                .any(|d| installed.satisfies(d) || satisfied_by_chosen(&chosen, d, &index))
            {
                continue;
            }
            // A candidate must also meet the package's other single-alternative constraints
            // on the same name (`libfoo (>= 2), libfoo (<< 3)`), as there is no backtracking.
            let pick = group.iter().find_map(|d| {
                index
                    .candidates(d)
                    .into_iter()
                    .find(|c| compatible(&index, c, &depends))
                    .map(|c| (d, c))
            });
            let Some((dep, cand)) = pick else {
                let mut chain = parent_chain.clone();
                let text: Vec<String> = group.iter().map(Dep::to_string).collect();
                chain.push(text.join(" | "));
                let avail: Vec<String> = group.iter().map(|d| index.available(&d.name)).collect();
                return Err(AptError::Unsatisfiable {
                    chain,
                    reason: format!("no version satisfies it ({})", avail.join("; ")),
                });
            };
            let mut chain = parent_chain.clone();
            chain.push(dep.to_string());
            check_clash(&chosen, cand, &chain)?;
            chosen.insert(&cand.name, (cand, chain));
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
    Ok(out)
}

/// Whether `cand` meets every single-alternative dependency of `depends` naming it.
fn compatible(index: &Index<'_>, cand: &Package, depends: &[super::control::Alternatives]) -> bool {
    depends.iter().all(|g| match g.as_slice() {
        [d] if *d.name == *cand.name => index.real_matches(cand, d),
        _ => true,
    })
}

fn satisfied_by_chosen(
    chosen: &BTreeMap<&str, (&Package, Vec<String>)>,
    dep: &Dep,
    index: &Index<'_>,
) -> bool {
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
fn check_clash(
    chosen: &BTreeMap<&str, (&Package, Vec<String>)>,
    cand: &Package,
    chain: &[String],
) -> Result<(), AptError> {
    if let Some((other, other_chain)) = chosen.get(&*cand.name) {
        return Err(AptError::Unsatisfiable {
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
mod tests {
    use super::*;
    fn pkg(
        name: &str,
        version: &str,
        arch: &str,
        ma: MultiArch,
        deps: &str,
        prov: &str,
    ) -> Package {
        Package {
            name: name.into(),
            version: Version::parse(version).unwrap(),
            architecture: arch.into(),
            multi_arch: ma,
            depends: deps.into(),
            provides: parse_provides(prov).unwrap().into(),
            filename: format!("pool/{name}_{version}_{arch}.deb").into(),
            size: 1,
            sha256: Digest::of(name.as_bytes()),
            source_url: "http://x".into(),
        }
    }

    fn universe(pkgs: Vec<Package>) -> Vec<SourceIndex> {
        vec![SourceIndex {
            source_url: "http://x".into(),
            packages: pkgs,
        }]
    }

    fn names(l: &[Locked]) -> Vec<String> {
        l.iter()
            .map(|l| format!("{}={}", l.name, l.version))
            .collect()
    }

    #[test]
    fn requests_parse() {
        let r = Request::parse("curl").unwrap();
        assert_eq!((r.name.as_str(), r.constraint), ("curl", None));
        let r = Request::parse("curl=7.88.1-10").unwrap();
        assert_eq!(r.constraint.unwrap().to_string(), "= 7.88.1-10");
        let r = Request::parse("curl (>= 7)").unwrap();
        assert_eq!(r.constraint.unwrap().relation, crate::apt::Relation::Ge);
        for bad in ["a | b", "a, b", "a:amd64", "", "A"] {
            assert!(Request::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn any_qualifier_needs_multi_arch_allowed() {
        use MultiArch::*;
        let idx = universe(vec![
            pkg("app", "1", "amd64", No, "py:any", ""),
            pkg("py", "3", "amd64", No, "", ""),
        ]);
        let req = [Request::parse("app").unwrap()];
        let err = resolve(&idx, "amd64", &req, &Installed::new()).unwrap_err();
        assert!(err.to_string().contains("app → py:any"), "{err}");
        let idx = universe(vec![
            pkg("app", "1", "amd64", No, "py:any", ""),
            pkg("py", "3", "amd64", Allowed, "", ""),
            pkg("other-arch", "1", "arm64", No, "", ""),
        ]);
        let l = resolve(&idx, "amd64", &req, &Installed::new()).unwrap();
        assert_eq!(names(&l), ["app=1", "py=3"]);
        // Packages of another architecture are invisible.
        let err = resolve(
            &idx,
            "amd64",
            &[Request::parse("other-arch").unwrap()],
            &Installed::new(),
        )
        .unwrap_err();
        assert!(matches!(err, AptError::UnknownPackage { .. }), "{err}");
    }

    #[test]
    fn output_is_sorted_and_independent_of_source_order() {
        use MultiArch::*;
        let a = vec![
            pkg("z", "1", "amd64", No, "m, a", ""),
            pkg("m", "1", "all", No, "", ""),
            pkg("a", "2", "amd64", No, "", ""),
            pkg("a", "1", "amd64", No, "", ""),
        ];
        let mut b = a.clone();
        b.reverse();
        let req = [Request::parse("z").unwrap()];
        let la = resolve(&universe(a), "amd64", &req, &Installed::new()).unwrap();
        let lb = resolve(&universe(b), "amd64", &req, &Installed::new()).unwrap();
        assert_eq!(la, lb);
        assert_eq!(names(&la), ["a=2", "m=1", "z=1"]);
    }

    #[test]
    fn clash_without_backtracking_names_both_chains() {
        use MultiArch::*;
        let idx = universe(vec![
            pkg("top", "1", "amd64", No, "x, y", ""),
            pkg("x", "1", "amd64", No, "lib (>= 2)", ""),
            pkg("y", "1", "amd64", No, "lib (<< 2)", ""),
            pkg("lib", "1", "amd64", No, "", ""),
            pkg("lib", "2", "amd64", No, "", ""),
        ]);
        let err = resolve(
            &idx,
            "amd64",
            &[Request::parse("top").unwrap()],
            &Installed::new(),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("top → y → lib (<< 2)"), "{msg}");
        assert!(
            msg.contains("lib 2 was already chosen for top → x → lib (>= 2)"),
            "{msg}"
        );
    }

    #[test]
    fn suggestions_are_close_names() {
        use MultiArch::*;
        let idx = universe(vec![
            pkg("python3", "3", "amd64", No, "", ""),
            pkg("python3-pip", "1", "all", No, "", ""),
            pkg("zsh", "1", "amd64", No, "", ""),
        ]);
        let err = resolve(
            &idx,
            "amd64",
            &[Request::parse("pyhton3").unwrap()],
            &Installed::new(),
        )
        .unwrap_err();
        match err {
            AptError::UnknownPackage { suggestions, .. } => assert_eq!(suggestions[0], "python3"),
            other => panic!("{other}"),
        }
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
