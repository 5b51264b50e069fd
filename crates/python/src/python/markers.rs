//! PEP 508 environment markers and the part of PEP 440 (versions, specifiers) they need.
//!
//! Comparisons with a version variable (`python_version`, `python_full_version`,
//! `implementation_version`) on either side use PEP 440 semantics when both sides are valid
//! versions; everything else compares strings. `in` / `not in` are substring tests, or
//! membership for the set variables `extras` and `dependency_groups` (PEP 751). `extra` and
//! the set members compare by normalized name.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt;

use super::interpreter::Interpreter;
use super::tags::normalize_name;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MarkerError {
    #[error("invalid marker `{marker}` at offset {offset}: {reason}")]
    Syntax {
        marker: String,
        offset: usize,
        reason: String,
    },
    #[error("invalid version `{0}`")]
    Version(String),
    #[error("invalid version specifier `{spec}`: {reason}")]
    Specifier { spec: String, reason: &'static str },
}

// ---------------------------------------------------------------------------------------------
// PEP 440 versions

/// A PEP 440 version (normalized on parse: `1.0RC1` = `1.0rc1`, `1.0-1` = `1.0.post1`).
#[derive(Clone, Debug)]
pub struct Version {
    pub epoch: u64,
    pub release: Vec<u64>,
    /// (0 = a, 1 = b, 2 = rc, number).
    pub pre: Option<(u8, u64)>,
    pub post: Option<u64>,
    pub dev: Option<u64>,
    pub local: Vec<String>,
}

impl Version {
    pub fn parse(s: &str) -> Result<Version, MarkerError> {
        let bad = || MarkerError::Version(s.to_string());
        let t = s.trim().to_ascii_lowercase();
        let mut rest = t.strip_prefix('v').unwrap_or(&t);
        let (main, local) = match rest.split_once('+') {
            Some((m, l)) => (m, Some(l)),
            None => (rest, None),
        };
        rest = main;
        let mut epoch = 0;
        if let Some((e, r)) = rest.split_once('!') {
            epoch = e.parse().map_err(|_| bad())?;
            rest = r;
        }
        let digits = |r: &str| r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        let mut release = Vec::new();
        loop {
            let n = digits(rest);
            if n == 0 {
                return Err(bad());
            }
            release.push(rest[..n].parse().map_err(|_| bad())?);
            rest = &rest[n..];
            match rest.strip_prefix('.') {
                Some(r) if r.starts_with(|c: char| c.is_ascii_digit()) => rest = r,
                _ => break,
            }
        }
        let sep = |r: &str| r.strip_prefix(['.', '-', '_']).unwrap_or(r).to_string();
        let number = |r: &mut String| -> Result<u64, MarkerError> {
            let stripped = sep(r);
            let n = digits(&stripped);
            let v = if n == 0 {
                0
            } else {
                stripped[..n].parse().map_err(|_| bad())?
            };
            *r = stripped[n..].to_string();
            Ok(v)
        };
        let mut r = rest.to_string();
        let mut pre = None;
        let after = sep(&r);
        for (word, kind) in [
            ("alpha", 0),
            ("beta", 1),
            ("preview", 2),
            ("pre", 2),
            ("rc", 2),
            ("a", 0),
            ("b", 1),
            ("c", 2),
        ] {
            if let Some(x) = after.strip_prefix(word) {
                r = x.to_string();
                pre = Some((kind, number(&mut r)?));
                break;
            }
        }
        let mut post = None;
        let after = sep(&r);
        if r.starts_with('-') && r[1..].starts_with(|c: char| c.is_ascii_digit()) {
            r = r[1..].to_string();
            post = Some(number(&mut r)?);
        } else {
            for word in ["post", "rev", "r"] {
                if let Some(x) = after.strip_prefix(word) {
                    r = x.to_string();
                    post = Some(number(&mut r)?);
                    break;
                }
            }
        }
        let mut dev = None;
        if let Some(x) = sep(&r).strip_prefix("dev") {
            r = x.to_string();
            dev = Some(number(&mut r)?);
        }
        if !r.is_empty() {
            return Err(bad());
        }
        let local = match local {
            None => Vec::new(),
            Some("") => return Err(bad()),
            Some(l) => l.split(['.', '-', '_']).map(str::to_string).collect(),
        };
        if local
            .iter()
            .any(|p| p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric()))
        {
            return Err(bad());
        }
        Ok(Version {
            epoch,
            release,
            pre,
            post,
            dev,
            local,
        })
    }

    pub fn is_prerelease(&self) -> bool {
        self.pre.is_some() || self.dev.is_some()
    }

    fn trimmed_release(&self) -> &[u64] {
        let n = self
            .release
            .iter()
            .rposition(|&x| x != 0)
            .map_or(0, |i| i + 1);
        &self.release[..n]
    }

    /// The version without its local part.
    fn public(&self) -> Version {
        Version {
            local: Vec::new(),
            ..self.clone()
        }
    }

    /// The ordering key, as `packaging.version` builds it (i64::MIN/MAX for ±infinity).
    fn key(&self) -> (u64, &[u64], (i64, i64), i64, i64) {
        let pre = match (self.pre, self.post, self.dev) {
            (None, None, Some(_)) => (i64::MIN, 0),
            (None, _, _) => (i64::MAX, 0),
            (Some((k, n)), _, _) => (i64::from(k), n as i64),
        };
        let post = self.post.map_or(i64::MIN, |p| p as i64);
        let dev = self.dev.map_or(i64::MAX, |d| d as i64);
        (self.epoch, self.trimmed_release(), pre, post, dev)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.epoch != 0 {
            write!(f, "{}!", self.epoch)?;
        }
        let rel: Vec<String> = self.release.iter().map(u64::to_string).collect();
        write!(f, "{}", rel.join("."))?;
        if let Some((k, n)) = self.pre {
            write!(f, "{}{n}", ["a", "b", "rc"][k as usize])?;
        }
        if let Some(p) = self.post {
            write!(f, ".post{p}")?;
        }
        if let Some(d) = self.dev {
            write!(f, ".dev{d}")?;
        }
        if !self.local.is_empty() {
            write!(f, "+{}", self.local.join("."))?;
        }
        Ok(())
    }
}

fn cmp_local(a: &[String], b: &[String]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(i), Ok(j)) => i.cmp(&j),
            (Ok(_), Err(_)) => Ordering::Greater,
            (Err(_), Ok(_)) => Ordering::Less,
            (Err(_), Err(_)) => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key()
            .cmp(&other.key())
            .then_with(|| cmp_local(&self.local, &other.local))
    }
}
impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Version {}

/// One specifier: `>=3.9`, `==3.11.*`, `~=2.2`.
#[derive(Clone, Debug)]
pub struct Specifier {
    pub op: String,
    pub version: String,
}

impl Specifier {
    pub fn parse(s: &str) -> Result<Specifier, MarkerError> {
        let s = s.trim();
        let op_len = ["===", "~=", "==", "!=", "<=", ">=", "<", ">"]
            .iter()
            .find(|op| s.starts_with(**op))
            .map(|op| op.len())
            .ok_or(MarkerError::Specifier {
                spec: s.to_string(),
                reason: "no operator",
            })?;
        let spec = Specifier {
            op: s[..op_len].to_string(),
            version: s[op_len..].trim().to_string(),
        };
        if spec.op != "===" {
            let v = spec.version.strip_suffix(".*").unwrap_or(&spec.version);
            if spec.version.ends_with(".*") && !matches!(spec.op.as_str(), "==" | "!=") {
                return Err(MarkerError::Specifier {
                    spec: s.to_string(),
                    reason: "`.*` only goes with == and !=",
                });
            }
            Version::parse(v).map_err(|_| MarkerError::Specifier {
                spec: s.to_string(),
                reason: "not a PEP 440 version",
            })?;
        }
        Ok(spec)
    }

    /// Whether `v` satisfies it (pre-releases included).
    pub fn contains(&self, v: &Version) -> bool {
        if self.op == "===" {
            return v.to_string() == self.version;
        }
        if let Some(prefix) = self.version.strip_suffix(".*") {
            let Ok(p) = Version::parse(prefix) else {
                return false;
            };
            let matched = v.epoch == p.epoch && {
                let mut rel = v.release.clone();
                rel.resize(rel.len().max(p.release.len()), 0);
                rel[..p.release.len()] == p.release[..]
            };
            return matched == (self.op == "==");
        }
        let Ok(s) = Version::parse(&self.version) else {
            return false;
        };
        // Without a local part in the specifier, the candidate's local part is ignored.
        let vv = if s.local.is_empty() {
            v.public()
        } else {
            v.clone()
        };
        match self.op.as_str() {
            "==" => vv == s,
            "!=" => vv != s,
            "<=" => vv <= s,
            ">=" => vv >= s,
            "<" => vv < s && !(!s.is_prerelease() && vv.is_prerelease() && same_release(&vv, &s)),
            ">" => {
                vv > s
                    && !(s.post.is_none() && vv.post.is_some() && same_release(&vv, &s))
                    && (v.local.is_empty() || v.public() != s)
            }
            "~=" => {
                let mut prefix = s.release.clone();
                if prefix.len() < 2 {
                    return false;
                }
                prefix.pop();
                vv >= s
                    && Specifier {
                        op: "==".into(),
                        version: format!(
                            "{}.*",
                            prefix
                                .iter()
                                .map(u64::to_string)
                                .collect::<Vec<_>>()
                                .join(".")
                        ),
                    }
                    .contains(&vv)
            }
            _ => false,
        }
    }
}

fn same_release(a: &Version, b: &Version) -> bool {
    a.epoch == b.epoch && a.trimmed_release() == b.trimmed_release()
}

/// A comma-separated set of specifiers (all must hold); empty holds for everything.
#[derive(Clone, Debug, Default)]
pub struct SpecifierSet(pub Vec<Specifier>);

impl SpecifierSet {
    pub fn parse(s: &str) -> Result<SpecifierSet, MarkerError> {
        let parts = s.split(',').map(str::trim).filter(|p| !p.is_empty());
        Ok(SpecifierSet(
            parts.map(Specifier::parse).collect::<Result<_, _>>()?,
        ))
    }
    pub fn contains(&self, v: &Version) -> bool {
        self.0.iter().all(|s| s.contains(v))
    }
}

// ---------------------------------------------------------------------------------------------
// Markers

/// The values marker variables take in the image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkerEnv {
    pub os_name: String,
    pub sys_platform: String,
    pub platform_machine: String,
    pub platform_python_implementation: String,
    pub platform_release: String,
    pub platform_system: String,
    pub platform_version: String,
    pub python_version: String,
    pub python_full_version: String,
    pub implementation_name: String,
    pub implementation_version: String,
    /// `extra` (requirements' extras being evaluated); compared normalized.
    pub extra: Option<String>,
    /// PEP 751 `extras` and `dependency_groups` (normalized names).
    pub extras: BTreeSet<String>,
    pub dependency_groups: BTreeSet<String>,
}

impl MarkerEnv {
    /// The environment of CPython `interp` on Linux; the patch level is `.0` (unknown).
    pub fn for_interpreter(interp: &Interpreter) -> MarkerEnv {
        let full = interp.full_version();
        MarkerEnv {
            os_name: "posix".into(),
            sys_platform: "linux".into(),
            platform_machine: interp.machine.clone(),
            platform_python_implementation: "CPython".into(),
            platform_release: String::new(),
            platform_system: "Linux".into(),
            platform_version: String::new(),
            python_version: interp.version.to_string(),
            python_full_version: full.clone(),
            implementation_name: "cpython".into(),
            implementation_version: full,
            extra: None,
            extras: BTreeSet::new(),
            dependency_groups: BTreeSet::new(),
        }
    }

    fn get(&self, var: &str) -> Option<&str> {
        Some(match var {
            "os_name" => &self.os_name,
            "sys_platform" => &self.sys_platform,
            "platform_machine" => &self.platform_machine,
            "platform_python_implementation" => &self.platform_python_implementation,
            "platform_release" => &self.platform_release,
            "platform_system" => &self.platform_system,
            "platform_version" => &self.platform_version,
            "python_version" => &self.python_version,
            "python_full_version" => &self.python_full_version,
            "implementation_name" => &self.implementation_name,
            "implementation_version" => &self.implementation_version,
            "extra" => self.extra.as_deref().unwrap_or(""),
            _ => return None,
        })
    }
}

const VARIABLES: [&str; 16] = [
    "os_name",
    "sys_platform",
    "platform_machine",
    "platform_python_implementation",
    "platform_release",
    "platform_system",
    "platform_version",
    "python_version",
    "python_full_version",
    "implementation_name",
    "implementation_version",
    "extra",
    "extras",
    "dependency_groups",
    // Legacy spellings PEP 508 still accepts (as packaging does).
    "os.name",
    "sys.platform",
];

const VERSION_VARS: [&str; 3] = [
    "python_version",
    "python_full_version",
    "implementation_version",
];

/// One side of a comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Var(String),
    Str(String),
}

/// A parsed marker expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Marker {
    Compare { lhs: Value, op: String, rhs: Value },
    And(Box<Marker>, Box<Marker>),
    Or(Box<Marker>, Box<Marker>),
}

impl Marker {
    pub fn parse(s: &str) -> Result<Marker, MarkerError> {
        let mut p = Parser {
            s,
            pos: 0,
            depth: 0,
            comparisons: 0,
        };
        let m = p.or()?;
        p.ws();
        if p.pos != s.len() {
            return Err(p.err("unexpected text after the marker"));
        }
        Ok(m)
    }

    pub fn evaluate(&self, env: &MarkerEnv) -> bool {
        match self {
            Marker::And(a, b) => a.evaluate(env) && b.evaluate(env),
            Marker::Or(a, b) => a.evaluate(env) || b.evaluate(env),
            Marker::Compare { lhs, op, rhs } => compare(lhs, op, rhs, env),
        }
    }
}

fn compare(lhs: &Value, op: &str, rhs: &Value, env: &MarkerEnv) -> bool {
    let var_name = |v: &Value| match v {
        Value::Var(n) => Some(n.clone()),
        Value::Str(_) => None,
    };
    // Set variables: `"name" in extras`.
    if let Value::Var(set) = rhs {
        let members = match set.as_str() {
            "extras" => Some(&env.extras),
            "dependency_groups" => Some(&env.dependency_groups),
            _ => None,
        };
        if let (Some(members), Value::Str(s)) = (members, lhs) {
            let has = members.contains(&normalize_name(s));
            return match op {
                "in" => has,
                "not in" => !has,
                _ => false,
            };
        }
    }
    let value = |v: &Value| -> String {
        match v {
            Value::Str(s) => s.clone(),
            Value::Var(n) => {
                let n = n.replace('.', "_");
                env.get(&n).unwrap_or("").to_string()
            }
        }
    };
    let (mut l, mut r) = (value(lhs), value(rhs));
    let names = [var_name(lhs), var_name(rhs)];
    if names.iter().flatten().any(|n| n == "extra") {
        l = normalize_name(&l);
        r = normalize_name(&r);
    }
    let versioned = names
        .iter()
        .flatten()
        .any(|n| VERSION_VARS.contains(&n.as_str()));
    if versioned && !matches!(op, "in" | "not in") {
        if let (Ok(lv), Ok(spec)) = (Version::parse(&l), Specifier::parse(&format!("{op}{r}"))) {
            return spec.contains(&lv);
        }
    }
    match op {
        "==" | "===" => l == r,
        "!=" => l != r,
        "<" => l < r,
        "<=" => l <= r,
        ">" => l > r,
        ">=" => l >= r,
        "in" => r.contains(&l),
        "not in" => !r.contains(&l),
        _ => false,
    }
}

/// Deepest `(` nesting a marker may have: the parser recurses once per level.
const MAX_NESTING: usize = 64;
/// Most comparisons in one marker: `evaluate` (and dropping the marker) recurse as deep as
/// the tree, which a chain of `and` / `or` makes as deep as it is long.
const MAX_COMPARISONS: usize = 1000;

struct Parser<'a> {
    s: &'a str,
    pos: usize,
    /// Open `(` around the current position.
    depth: usize,
    /// Comparisons parsed so far.
    comparisons: usize,
}

impl Parser<'_> {
    fn err(&self, reason: &str) -> MarkerError {
        MarkerError::Syntax {
            marker: self.s.to_string(),
            offset: self.pos,
            reason: reason.to_string(),
        }
    }
    fn rest(&self) -> &str {
        &self.s[self.pos..]
    }
    fn ws(&mut self) {
        let r = self.rest();
        self.pos += r.len() - r.trim_start().len();
    }
    /// Consumes keyword `kw` if it is next, as a whole word.
    fn keyword(&mut self, kw: &str) -> bool {
        self.ws();
        let r = self.rest();
        if r.starts_with(kw)
            && !r[kw.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            self.pos += kw.len();
            return true;
        }
        false
    }
    fn or(&mut self) -> Result<Marker, MarkerError> {
        let mut m = self.and()?;
        while self.keyword("or") {
            m = Marker::Or(Box::new(m), Box::new(self.and()?));
        }
        Ok(m)
    }
    fn and(&mut self) -> Result<Marker, MarkerError> {
        let mut m = self.atom()?;
        while self.keyword("and") {
            m = Marker::And(Box::new(m), Box::new(self.atom()?));
        }
        Ok(m)
    }
    fn atom(&mut self) -> Result<Marker, MarkerError> {
        self.ws();
        if self.rest().starts_with('(') {
            if self.depth == MAX_NESTING {
                return Err(self.err("parentheses nested too deeply"));
            }
            self.depth += 1;
            self.pos += 1;
            let m = self.or()?;
            self.ws();
            if !self.rest().starts_with(')') {
                return Err(self.err("expected `)`"));
            }
            self.pos += 1;
            self.depth -= 1;
            return Ok(m);
        }
        if self.comparisons == MAX_COMPARISONS {
            return Err(self.err("too many comparisons in one marker"));
        }
        self.comparisons += 1;
        let lhs = self.value()?;
        let op = self.op()?;
        let rhs = self.value()?;
        Ok(Marker::Compare { lhs, op, rhs })
    }
    fn value(&mut self) -> Result<Value, MarkerError> {
        self.ws();
        let r = self.rest();
        if let Some(q) = r.chars().next().filter(|c| *c == '"' || *c == '\'') {
            let end = r[1..]
                .find(q)
                .ok_or_else(|| self.err("unterminated string"))?;
            let v = r[1..=end].to_string();
            self.pos += end + 2;
            return Ok(Value::Str(v));
        }
        let n = r
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(r.len());
        let name = r[..n].to_string();
        if VARIABLES.contains(&name.as_str()) {
            self.pos += n;
            return Ok(Value::Var(name));
        }
        Err(self.err("expected a marker variable or a quoted string"))
    }
    fn op(&mut self) -> Result<String, MarkerError> {
        self.ws();
        for op in ["===", "==", "!=", "<=", ">=", "~=", "<", ">"] {
            if self.rest().starts_with(op) {
                self.pos += op.len();
                return Ok(op.to_string());
            }
        }
        if self.keyword("in") {
            return Ok("in".into());
        }
        if self.keyword("not") {
            if self.keyword("in") {
                return Ok("not in".into());
            }
            return Err(self.err("expected `in` after `not`"));
        }
        Err(self.err("expected a comparison operator"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::interpreter::{PyVersion, Scheme};

    fn env() -> MarkerEnv {
        let version = PyVersion {
            major: 3,
            minor: 11,
        };
        MarkerEnv::for_interpreter(&Interpreter {
            version,
            executable: "/usr/bin/python3.11".into(),
            machine: "x86_64".into(),
            glibc: Some((2, 36)),
            scheme: Scheme::debian_local(version),
            full_version: None,
        })
    }

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn deep_or_long_markers_are_errors_not_stack_overflows() {
        // Found with the markers fuzz target on a hand-made input: the parser recursed per `(`,
        // and a long `or` chain built a tree as deep as it is long, which `evaluate` and drop
        // then recursed through: either overflowed the stack.
        let deep = "(".repeat(100_000);
        assert!(Marker::parse(&deep).is_err());
        let long = "os_name == 'posix' or ".repeat(100_000) + "os_name == 'posix'";
        assert!(Marker::parse(&long).is_err());
        // Within the limits: parses and evaluates.
        let nested = format!("{}os_name == 'posix'{}", "(".repeat(64), ")".repeat(64));
        assert!(Marker::parse(&nested).unwrap().evaluate(&env()));
        let many = "os_name == 'nt' or ".repeat(999) + "os_name == 'posix'";
        assert!(Marker::parse(&many).unwrap().evaluate(&env()));
    }

    #[test]
    fn version_ordering() {
        let order = [
            "1.0.dev0",
            "1.0a1.dev1",
            "1.0a1",
            "1.0b2",
            "1.0rc1",
            "1.0",
            "1.0+local",
            "1.0.post1.dev1",
            "1.0.post1",
            "1.1",
            "1!0.1",
        ];
        for w in order.windows(2) {
            assert!(v(w[0]) < v(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(v("1.0"), v("1.0.0"));
        assert_eq!(v("1.0RC1"), v("1.0rc1"));
        assert_eq!(v("1.0-1"), v("1.0.post1"));
        assert_eq!(v("v1.0.alpha.2"), v("1.0a2"));
        assert_eq!(v("1.0c1").to_string(), "1.0rc1");
        assert!(Version::parse("1.0x").is_err() && Version::parse("").is_err());
    }

    #[test]
    fn specifiers() {
        let c = |spec: &str, ver: &str| SpecifierSet::parse(spec).unwrap().contains(&v(ver));
        assert!(c(">=3.9", "3.11"));
        assert!(!c(">=3.9,<3.11", "3.11"));
        assert!(c("==3.11.*", "3.11.0"));
        assert!(!c("==3.1.*", "3.11.0"));
        assert!(c("!=3.10.*", "3.11"));
        assert!(c("~=2.2", "2.9") && !c("~=2.2", "3.0"));
        assert!(c("~=1.4.5", "1.4.9") && !c("~=1.4.5", "1.5.0"));
        assert!(!c("<3.11", "3.11.0rc1"));
        assert!(!c(">3.11", "3.11.post1") && c(">3.11", "3.12"));
        assert!(c("==1.0", "1.0+abc") && !c("==1.0+abc", "1.0+abd"));
        assert!(c("", "1"));
        assert!(SpecifierSet::parse(">=x").is_err() && SpecifierSet::parse("3.0").is_err());
    }

    #[test]
    fn markers() {
        let e = env();
        let t = |m: &str| Marker::parse(m).unwrap().evaluate(&e);
        assert!(t("python_version >= '3.8'"));
        assert!(
            t("python_version > '3.9'"),
            "versions, not strings: 3.11 > 3.9"
        );
        assert!(!t("python_version < '3.9'"));
        assert!(t("python_full_version == '3.11.0'"));
        assert!(t("python_version == '3.11.*'"));
        assert!(t(
            "sys_platform == 'linux' and platform_machine == \"x86_64\""
        ));
        assert!(t(
            "sys_platform == 'win32' or (os_name == 'posix' and implementation_name == 'cpython')"
        ));
        assert!(!t(
            "sys_platform == 'win32' or os_name == 'nt' and platform_system == 'Linux'"
        ));
        assert!(t("'linux' in sys_platform and 'x86' in platform_machine"));
        assert!(t("platform_machine not in 'aarch64 arm64'"));
        assert!(t("platform_python_implementation != 'PyPy'"));
        assert!(!t("extra == 'test'"));
        assert!(!t("'dev' in extras"));
        assert!(t("'dev' not in dependency_groups"));
        let mut e2 = e.clone();
        e2.extra = Some("Socks_Proxy".into());
        e2.extras.insert("dev".into());
        assert!(Marker::parse("extra == 'socks-proxy'")
            .unwrap()
            .evaluate(&e2));
        assert!(Marker::parse("'Dev' in extras").unwrap().evaluate(&e2));
        for bad in [
            "python_version >=",
            "foo == '1'",
            "(python_version == '3'",
            "python_version = '3'",
            "'a' == 'b' junk",
        ] {
            let err = Marker::parse(bad).unwrap_err();
            assert!(matches!(err, MarkerError::Syntax { .. }), "{bad}: {err}");
        }
    }
}
