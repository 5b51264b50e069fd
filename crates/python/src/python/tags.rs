//! Wheel file names (PEP 427) and their compatibility with the image's interpreter.
//!
//! [`supported_tags`] lists the tags the target interpreter accepts, most preferred first, in
//! the order `packaging.tags.sys_tags()` gives for CPython on Linux: `cpXY-cpXY-PLAT`,
//! `cpXY-abi3-PLAT`, `cpXY-none-PLAT`, `cp3W-abi3-PLAT` for W < Y down to 2, then `pyXY`, `py3`,
//! `py3W` with `none-PLAT`, then `cpXY-none-any` and `pyXY`/`py3`/`py3W-none-any`. Platforms
//! are `manylinux_2_N_<machine>` for every glibc 2.N up to the image's, newest first, each
//! legacy alias (`manylinux2014` = 2.17, `manylinux2010` = 2.12, `manylinux1` = 2.5) right
//! after its version. Deliberately missing: `linux_<machine>` (a wheel built for one machine,
//! not portable) and `musllinux_*` (the images have glibc).

use std::collections::HashMap;
use std::fmt;

use super::interpreter::Interpreter;

/// Everything that can go wrong naming or choosing wheels.
#[derive(Debug, thiserror::Error)]
pub enum TagError {
    #[error("`{filename}` is not a wheel file name ({reason}); expected NAME-VERSION(-BUILD)?-PYTHON-ABI-PLATFORM.whl")]
    BadFilename {
        filename: String,
        reason: &'static str,
    },
    #[error("{package}: no wheel in the lock")]
    NoCandidates { package: String },
    #[error("{package}: only an sdist, and [python] names no `sdist-builder` to build it in: add `sdist-builder = {{ recipe = \"builder.toml\" }}` (a recipe with the image's Python and the build requirements) or a registry image, or lock a wheel for this platform")]
    OnlySdist { package: String },
    #[error("{package}: no wheel fits the image ({interpreter}):{}", refusals.iter().map(|r| format!("\n  {} {}", r.filename, r.reason)).collect::<String>())]
    NoneCompatible {
        package: String,
        interpreter: String,
        refusals: Vec<Refusal>,
    },
}

/// Why one candidate wheel was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub filename: String,
    /// Reads after the file name: "needs glibc 2.39, the image has glibc 2.35".
    pub reason: String,
}

/// One compatibility tag.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag {
    pub interpreter: String,
    pub abi: String,
    pub platform: String,
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.interpreter, self.abi, self.platform)
    }
}

/// A parsed wheel file name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelFile {
    pub filename: String,
    /// The distribution name as in the file name (`typing_extensions`).
    pub name: String,
    pub version: String,
    /// The optional build tag (`1`, `2b`).
    pub build: Option<String>,
    pub python_tags: Vec<String>,
    pub abi_tags: Vec<String>,
    pub platform_tags: Vec<String>,
}

impl WheelFile {
    /// Parses `name-version(-build)?-pytag-abitag-plattag.whl`; each tag part may be a
    /// compressed set (`py2.py3`).
    pub fn parse(filename: &str) -> Result<WheelFile, TagError> {
        let bad = |reason| TagError::BadFilename {
            filename: filename.to_string(),
            reason,
        };
        let stem = filename
            .strip_suffix(".whl")
            .ok_or_else(|| bad("it does not end with .whl"))?;
        if stem.contains('/') {
            return Err(bad("it contains `/`"));
        }
        let parts: Vec<&str> = stem.split('-').collect();
        let (name, version, build, tags) = match parts.as_slice() {
            [n, v, p, a, pl] => (*n, *v, None, [*p, *a, *pl]),
            [n, v, b, p, a, pl] => (*n, *v, Some(*b), [*p, *a, *pl]),
            _ => return Err(bad("it does not have 5 or 6 `-`-separated parts")),
        };
        if name.is_empty() || version.is_empty() || tags.iter().any(|t| t.is_empty()) {
            return Err(bad("an empty part"));
        }
        if let Some(b) = build {
            if !b.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(bad("the build tag does not start with a digit"));
            }
        }
        let split = |s: &str| s.split('.').map(str::to_string).collect::<Vec<_>>();
        Ok(WheelFile {
            filename: filename.to_string(),
            name: name.to_string(),
            version: version.to_string(),
            build: build.map(str::to_string),
            python_tags: split(tags[0]),
            abi_tags: split(tags[1]),
            platform_tags: split(tags[2]),
        })
    }

    /// Every tag of the (expanded) tag sets.
    pub fn tags(&self) -> impl Iterator<Item = Tag> + '_ {
        self.python_tags.iter().flat_map(move |p| {
            self.abi_tags.iter().flat_map(move |a| {
                self.platform_tags.iter().map(move |pl| Tag {
                    interpreter: p.clone(),
                    abi: a.clone(),
                    platform: pl.clone(),
                })
            })
        })
    }

    /// `name-version` with the name normalized as in `.dist-info` directory names (PEP 427
    /// escaping: runs of `-_.` → `_`, lowercase), for matching the archive's directories.
    pub fn dist_prefix(&self) -> String {
        format!("{}-{}", escape_name(&self.name), self.version)
    }
}

/// PEP 503 normalization: lowercase, runs of `-`, `_`, `.` become one `-`.
pub fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
        } else {
            if sep && !out.is_empty() {
                out.push('-');
            }
            sep = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The file-name escaping of a distribution name: normalized, with `_` for `-`.
pub fn escape_name(name: &str) -> String {
    normalize_name(name).replace('-', "_")
}

/// The smallest glibc minor a manylinux tag exists for on this machine (packaging's rule).
fn min_glibc_minor(machine: &str) -> u32 {
    if matches!(machine, "x86_64" | "i686") {
        5
    } else {
        17
    }
}

/// Legacy manylinux aliases: (name, glibc minor, machines it was defined for).
const LEGACY: [(&str, u32, &[&str]); 3] = [
    (
        "manylinux2014",
        17,
        &[
            "x86_64", "i686", "aarch64", "armv7l", "ppc64", "ppc64le", "s390x",
        ],
    ),
    ("manylinux2010", 12, &["x86_64", "i686"]),
    ("manylinux1", 5, &["x86_64", "i686"]),
];

/// The platform tags the image accepts, most preferred first.
pub fn platforms(interp: &Interpreter) -> Vec<String> {
    let m = interp.machine.as_str();
    let mut out = Vec::new();
    if let Some((2, max)) = interp.glibc {
        let min = min_glibc_minor(m);
        for minor in (min..=max).rev() {
            out.push(format!("manylinux_2_{minor}_{m}"));
            for (alias, at, machines) in LEGACY {
                if at == minor && machines.contains(&m) {
                    out.push(format!("{alias}_{m}"));
                }
            }
        }
    }
    out
}

/// The tags the interpreter accepts, most preferred first (see the module docs).
pub fn supported_tags(interp: &Interpreter) -> Vec<Tag> {
    let v = interp.version;
    let cp = v.cp_tag();
    let plats = platforms(interp);
    let mut out = Vec::new();
    let mut push = |i: &str, a: &str, p: &str| {
        out.push(Tag {
            interpreter: i.to_string(),
            abi: a.to_string(),
            platform: p.to_string(),
        });
    };
    let abi3 = v.major == 3 && v.minor >= 2;
    for p in &plats {
        push(&cp, &interp.abi(), p);
    }
    if abi3 {
        for p in &plats {
            push(&cp, "abi3", p);
        }
    }
    for p in &plats {
        push(&cp, "none", p);
    }
    if abi3 {
        for minor in (2..v.minor).rev() {
            for p in &plats {
                push(&format!("cp{}{minor}", v.major), "abi3", p);
            }
        }
    }
    let mut py = vec![
        format!("py{}{}", v.major, v.minor),
        format!("py{}", v.major),
    ];
    py.extend((0..v.minor).rev().map(|m| format!("py{}{m}", v.major)));
    for i in &py {
        for p in &plats {
            push(i, "none", p);
        }
    }
    push(&cp, "none", "any");
    for i in &py {
        push(i, "none", "any");
    }
    out
}

/// The tags an interpreter accepts, with their preference rank (0 = best).
pub struct TagRanks {
    ranks: HashMap<Tag, usize>,
}

impl TagRanks {
    pub fn new(interp: &Interpreter) -> TagRanks {
        let mut ranks = HashMap::new();
        for (i, t) in supported_tags(interp).into_iter().enumerate() {
            ranks.entry(t).or_insert(i);
        }
        TagRanks { ranks }
    }

    /// The best rank of any of the wheel's tags; `None` if it is not compatible.
    pub fn rank(&self, w: &WheelFile) -> Option<usize> {
        w.tags().filter_map(|t| self.ranks.get(&t).copied()).min()
    }
}

/// Describes the interpreter for messages: "CPython 3.11, x86_64, glibc 2.35".
pub fn describe(interp: &Interpreter) -> String {
    let libc = match interp.glibc {
        Some((a, b)) => format!("glibc {a}.{b}"),
        None => "no glibc".to_string(),
    };
    format!("CPython {}, {}, {libc}", interp.version, interp.machine)
}

/// Picks the most preferred compatible wheel (ties: the higher build tag, then the file name).
pub fn select<'a>(
    candidates: &'a [WheelFile],
    interp: &Interpreter,
) -> Result<&'a WheelFile, TagError> {
    let package = candidates
        .first()
        .map(|w| normalize_name(&w.name))
        .unwrap_or_default();
    if candidates.is_empty() {
        return Err(TagError::NoCandidates { package });
    }
    let ranks = TagRanks::new(interp);
    let best = candidates
        .iter()
        .filter_map(|w| ranks.rank(w).map(|r| (r, w)))
        .min_by(|(ra, a), (rb, b)| {
            ra.cmp(rb)
                .then_with(|| build_key(b).cmp(&build_key(a)))
                .then_with(|| a.filename.cmp(&b.filename))
        });
    match best {
        Some((_, w)) => Ok(w),
        None => Err(TagError::NoneCompatible {
            package,
            interpreter: describe(interp),
            refusals: candidates
                .iter()
                .map(|w| Refusal {
                    filename: w.filename.clone(),
                    reason: refusal(w, interp),
                })
                .collect(),
        }),
    }
}

/// The build tag as (number, rest) for ordering; no build tag sorts first.
fn build_key(w: &WheelFile) -> (Option<u64>, String) {
    match &w.build {
        None => (None, String::new()),
        Some(b) => {
            let digits: String = b.chars().take_while(char::is_ascii_digit).collect();
            (digits.parse().ok(), b[digits.len()..].to_string())
        }
    }
}

/// A parsed manylinux tag: (glibc major, minor, machine).
fn manylinux(tag: &str) -> Option<(u32, u32, &str)> {
    if let Some(rest) = tag.strip_prefix("manylinux_") {
        let mut it = rest.splitn(3, '_');
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        return Some((major, minor, it.next()?));
    }
    for (alias, minor, _) in LEGACY {
        if let Some(m) = tag.strip_prefix(alias).and_then(|r| r.strip_prefix('_')) {
            return Some((2, minor, m));
        }
    }
    None
}

/// Why a platform tag does not fit; `None` when it does.
fn platform_refusal(tag: &str, interp: &Interpreter) -> Option<String> {
    let m = interp.machine.as_str();
    if tag == "any" || platforms(interp).iter().any(|p| p == tag) {
        return None;
    }
    if let Some((major, minor, machine)) = manylinux(tag) {
        if machine != m {
            return Some(format!("is for {machine}, the image is {m}"));
        }
        return Some(match interp.glibc {
            None => format!("needs glibc {major}.{minor}, the image has no glibc"),
            Some((a, b)) => format!("needs glibc {major}.{minor}, the image has glibc {a}.{b}"),
        });
    }
    if tag.starts_with("musllinux_") {
        return Some("is for musl libc (musllinux), the image uses glibc".to_string());
    }
    if let Some(machine) = tag.strip_prefix("linux_") {
        return Some(format!(
            "is a `linux_{machine}` wheel: built for one machine, not portable; only manylinux wheels are used"
        ));
    }
    if tag.starts_with("macosx_") {
        return Some("is for macOS".to_string());
    }
    if tag.starts_with("win") {
        return Some("is for Windows".to_string());
    }
    Some(format!(
        "has platform tag `{tag}`, which the image ({m}, Linux) does not accept"
    ))
}

/// Why a wheel does not fit (its platform first, then its Python and ABI tags).
fn refusal(w: &WheelFile, interp: &Interpreter) -> String {
    let plat: Vec<String> = w
        .platform_tags
        .iter()
        .filter_map(|p| platform_refusal(p, interp))
        .collect();
    if plat.len() == w.platform_tags.len() {
        if let Some(first) = plat.into_iter().next() {
            return first;
        }
    }
    let tags: Vec<String> = w
        .python_tags
        .iter()
        .flat_map(|p| w.abi_tags.iter().map(move |a| format!("{p}-{a}")))
        .collect();
    format!(
        "is for {} (Python-ABI), the image's interpreter is CPython {} (ABI {})",
        tags.join(", "),
        interp.version,
        interp.abi()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::interpreter::{PyVersion, Scheme};

    pub(crate) fn interp(minor: u32, machine: &str, glibc: Option<(u32, u32)>) -> Interpreter {
        let version = PyVersion { major: 3, minor };
        Interpreter {
            version,
            executable: format!("/usr/bin/python3.{minor}"),
            machine: machine.into(),
            glibc,
            scheme: Scheme::debian_local(version),
            full_version: None,
        }
    }

    fn wf(names: &[&str]) -> Vec<WheelFile> {
        names.iter().map(|n| WheelFile::parse(n).unwrap()).collect()
    }

    #[test]
    fn parses_file_names() {
        let w = WheelFile::parse("typing_extensions-4.12.2-1-py2.py3-none-any.whl").unwrap();
        assert_eq!(w.name, "typing_extensions");
        assert_eq!(w.version, "4.12.2");
        assert_eq!(w.build.as_deref(), Some("1"));
        assert_eq!(w.python_tags, ["py2", "py3"]);
        assert_eq!(w.tags().count(), 2);
        assert_eq!(w.dist_prefix(), "typing_extensions-4.12.2");
        for bad in [
            "a-1-py3-none.whl",
            "a-1-py3-none-any.zip",
            "a-1-x-py3-none-any.whl",
            "a-1--none-any.whl",
        ] {
            assert!(WheelFile::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(normalize_name("Foo.Bar__baz"), "foo-bar-baz");
        assert_eq!(escape_name("Foo.Bar-baz"), "foo_bar_baz");
    }

    #[test]
    fn tag_order_follows_packaging() {
        let i = interp(11, "x86_64", Some((2, 17)));
        let tags: Vec<String> = supported_tags(&i)
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(tags[0], "cp311-cp311-manylinux_2_17_x86_64");
        assert_eq!(tags[1], "cp311-cp311-manylinux2014_x86_64");
        assert_eq!(tags[2], "cp311-cp311-manylinux_2_16_x86_64");
        let pos = |t: &str| tags.iter().position(|x| x == t).unwrap();
        assert!(pos("cp311-cp311-manylinux_2_5_x86_64") < pos("cp311-cp311-manylinux1_x86_64"));
        assert!(pos("cp311-cp311-manylinux1_x86_64") < pos("cp311-abi3-manylinux_2_17_x86_64"));
        assert!(pos("cp311-abi3-manylinux1_x86_64") < pos("cp311-none-manylinux_2_17_x86_64"));
        assert!(pos("cp311-none-manylinux1_x86_64") < pos("cp310-abi3-manylinux_2_17_x86_64"));
        assert!(pos("cp32-abi3-manylinux1_x86_64") < pos("py311-none-manylinux_2_17_x86_64"));
        assert!(pos("py3-none-manylinux1_x86_64") < pos("py310-none-manylinux_2_17_x86_64"));
        assert!(pos("py30-none-manylinux1_x86_64") < pos("cp311-none-any"));
        assert_eq!(
            &tags[tags.len() - 14..tags.len() - 12],
            ["cp311-none-any", "py311-none-any"]
        );
        assert_eq!(tags.last().unwrap(), "py30-none-any");
        assert!(!tags
            .iter()
            .any(|t| t.contains("linux_x86_64") && !t.contains("manylinux")));
        assert!(!tags.iter().any(|t| t.contains("cp31-")));
        // aarch64: no manylinux1/2010, nothing below 2.17.
        let a = interp(12, "aarch64", Some((2, 17)));
        let plats = platforms(&a);
        assert_eq!(plats, ["manylinux_2_17_aarch64", "manylinux2014_aarch64"]);
        assert!(platforms(&interp(12, "x86_64", None)).is_empty());
    }

    #[test]
    fn selects_the_most_preferred() {
        let i = interp(11, "x86_64", Some((2, 35)));
        let c = wf(&[
            "numpy-2.1.0-cp311-cp311-manylinux_2_39_x86_64.whl",
            "numpy-2.1.0-cp311-cp311-musllinux_1_2_x86_64.whl",
            "numpy-2.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            "numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.whl",
            "numpy-2.1.0-cp311-abi3-manylinux_2_28_x86_64.whl",
            "numpy-2.1.0-py3-none-any.whl",
        ]);
        assert_eq!(select(&c, &i).unwrap().filename, c[2].filename);
        assert_eq!(select(&c[3..], &i).unwrap().filename, c[4].filename);
        assert_eq!(select(&c[5..], &i).unwrap().filename, c[5].filename);
        let b = wf(&[
            "a-1-py3-none-any.whl",
            "a-1-2-py3-none-any.whl",
            "a-1-10-py3-none-any.whl",
        ]);
        assert_eq!(select(&b, &i).unwrap().filename, "a-1-10-py3-none-any.whl");
    }

    /// trixie's python3: CPython 3.13 on glibc 2.41 takes numpy's and pillow's cp313
    /// manylinux_2_28 wheels (and a 2_41 one first), refuses a 2_42 one and a cp312 one.
    #[test]
    fn trixie_cp313_on_glibc_2_41() {
        let i = interp(13, "x86_64", Some((2, 41)));
        let tags: Vec<String> = supported_tags(&i)
            .iter()
            .map(std::string::ToString::to_string)
            .collect();
        assert_eq!(tags[0], "cp313-cp313-manylinux_2_41_x86_64");
        assert!(tags.contains(&"cp313-abi3-manylinux_2_28_x86_64".to_string()));
        assert!(tags.contains(&"cp313-cp313-manylinux2014_x86_64".to_string()));
        assert!(!tags.iter().any(|t| t.contains("manylinux_2_42")));
        let c = wf(&[
            "numpy-2.3.5-cp313-cp313-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
            "numpy-2.3.5-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
            "numpy-2.3.5-cp313-cp313t-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        ]);
        assert_eq!(select(&c, &i).unwrap().filename, c[0].filename);
        let p = wf(&[
            "pillow-12.0.0-cp313-cp313-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
            "pillow-12.0.0-cp313-cp313-manylinux_2_41_x86_64.whl",
            "pillow-12.0.0-cp313-cp313-manylinux_2_42_x86_64.whl",
        ]);
        assert_eq!(select(&p, &i).unwrap().filename, p[1].filename);
        let msg = select(&p[2..], &i).unwrap_err().to_string();
        assert!(
            msg.contains("needs glibc 2.42, the image has glibc 2.41"),
            "{msg}"
        );
    }

    #[test]
    fn refusals_say_why() {
        let i = interp(11, "x86_64", Some((2, 35)));
        let c = wf(&[
            "numpy-2.1-cp311-cp311-manylinux_2_39_x86_64.whl",
            "numpy-2.1-cp311-cp311-musllinux_1_2_x86_64.whl",
            "numpy-2.1-cp311-cp311-linux_x86_64.whl",
            "numpy-2.1-cp311-cp311-manylinux_2_17_aarch64.whl",
            "numpy-2.1-cp312-cp312-manylinux_2_17_x86_64.whl",
            "numpy-2.1-cp311-cp311-win_amd64.whl",
        ]);
        let msg = select(&c, &i).unwrap_err().to_string();
        for want in [
            "numpy: no wheel fits the image (CPython 3.11, x86_64, glibc 2.35)",
            "numpy-2.1-cp311-cp311-manylinux_2_39_x86_64.whl needs glibc 2.39, the image has glibc 2.35",
            "musllinux_1_2_x86_64.whl is for musl libc",
            "linux_x86_64.whl is a `linux_x86_64` wheel: built for one machine, not portable",
            "aarch64.whl is for aarch64, the image is x86_64",
            "cp312-cp312-manylinux_2_17_x86_64.whl is for cp312-cp312 (Python-ABI), the image's interpreter is CPython 3.11 (ABI cp311)",
            "win_amd64.whl is for Windows",
        ] {
            assert!(msg.contains(want), "{want:?} not in:\n{msg}");
        }
        let none = interp(11, "x86_64", None);
        let msg = select(&c[..1], &none).unwrap_err().to_string();
        assert!(
            msg.contains("needs glibc 2.39, the image has no glibc"),
            "{msg}"
        );
        assert!(matches!(
            select(&[], &i),
            Err(TagError::NoCandidates { .. })
        ));
    }
}
