//! Debian package versions (`[epoch:]upstream[-revision]`) and their ordering, exactly as dpkg
//! compares them (`lib/dpkg/version.c`: `dpkg_version_compare` / `verrevcmp`), and the version
//! relations of dependency fields (`<<`, `<=`, `=`, `>=`, `>>`).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Why a version string is not a Debian version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Debian version `{version}`: {reason}")]
pub struct VersionError {
    pub version: String,
    pub reason: &'static str,
}

/// A parsed Debian version. Equality and ordering follow dpkg, so `1.0` == `0:1.0` == `1.0-0`;
/// [`Display`](fmt::Display) prints the string as it was given.
///
/// The upstream part and the revision are kept as offsets into the string as given, not as
/// strings of their own: an index loads one `Version` per package (tens of thousands), and one
/// allocation each instead of three is most of what a package costs in memory.
#[derive(Clone, Debug)]
pub struct Version {
    original: Box<str>,
    epoch: u32,
    /// `original[upstream_start..upstream_end]` is the upstream part; the revision, when there
    /// is one, is everything after the `-` at `upstream_end`.
    upstream_start: u32,
    upstream_end: u32,
}

impl Version {
    /// Parses like dpkg's `parseversion`: the epoch is before the first `:`, the revision after
    /// the last `-`. The upstream part must be non-empty; characters are limited to
    /// alphanumerics and `.+-~:` (upstream) or `.+~` (revision).
    pub fn parse(s: &str) -> Result<Version, VersionError> {
        let err = |reason| VersionError {
            version: s.to_string(),
            reason,
        };
        let t = s.trim();
        if t.is_empty() {
            return Err(err("empty version"));
        }
        if t.chars().any(char::is_whitespace) {
            return Err(err("version contains whitespace"));
        }
        let (epoch, rest) = match t.split_once(':') {
            Some((e, rest)) => {
                if e.is_empty() || !e.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err("epoch is not a number"));
                }
                let epoch: u32 = e.parse().map_err(|_| err("epoch is too large"))?;
                if rest.is_empty() {
                    return Err(err("nothing after the epoch colon"));
                }
                (epoch, rest)
            }
            None => (0, t),
        };
        let (upstream, revision) = match rest.rsplit_once('-') {
            Some((u, r)) => {
                if r.is_empty() {
                    return Err(err("empty revision after `-`"));
                }
                (u, r)
            }
            None => (rest, ""),
        };
        if upstream.is_empty() {
            return Err(err("empty upstream version"));
        }
        let ok_up = |c: char| c.is_ascii_alphanumeric() || ".+-~:".contains(c);
        if !upstream.chars().all(ok_up) {
            return Err(err("invalid character in the upstream version"));
        }
        let ok_rev = |c: char| c.is_ascii_alphanumeric() || ".+~".contains(c);
        if !revision.chars().all(ok_rev) {
            return Err(err("invalid character in the revision"));
        }
        // `rest` is a suffix of `t`, and `upstream` a prefix of `rest`.
        let start = t.len() - rest.len();
        let end = start + upstream.len();
        let (Ok(upstream_start), Ok(upstream_end)) = (u32::try_from(start), u32::try_from(end))
        else {
            return Err(err("version is too long"));
        };
        Ok(Version {
            original: t.into(),
            epoch,
            upstream_start,
            upstream_end,
        })
    }

    pub fn epoch(&self) -> u32 {
        self.epoch
    }
    pub fn upstream(&self) -> &str {
        &self.original[self.upstream_start as usize..self.upstream_end as usize]
    }
    /// The Debian revision; empty when the version has none.
    pub fn revision(&self) -> &str {
        self.original
            .get(self.upstream_end as usize + 1..)
            .unwrap_or("")
    }
    /// The version as written.
    pub fn as_str(&self) -> &str {
        &self.original
    }
}

impl FromStr for Version {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Version::parse(s)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.original)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.epoch
            .cmp(&other.epoch)
            .then_with(|| verrevcmp(self.upstream(), other.upstream()))
            .then_with(|| verrevcmp(self.revision(), other.revision()))
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

/// dpkg's character weight: digits 0 (never reached inside the non-digit run), letters their
/// ASCII value, `~` below everything (even the end of the string), other characters after
/// letters, the end of the string 0.
fn order(c: Option<u8>) -> i32 {
    match c {
        None => 0,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => i32::from(c),
        Some(b'~') => -1,
        Some(c) => i32::from(c) + 256,
    }
}

/// dpkg's `verrevcmp`: alternating non-digit runs (compared by [`order`]) and digit runs
/// (compared numerically, leading zeros ignored).
fn verrevcmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0usize, 0usize);
    let at = |s: &[u8], k: usize| s.get(k).copied();
    let digit = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_digit());
    while i < a.len() || j < b.len() {
        while (at(a, i).is_some() && !digit(at(a, i))) || (at(b, j).is_some() && !digit(at(b, j))) {
            let (ac, bc) = (order(at(a, i)), order(at(b, j)));
            if ac != bc {
                return ac.cmp(&bc);
            }
            i += 1;
            j += 1;
        }
        while at(a, i) == Some(b'0') {
            i += 1;
        }
        while at(b, j) == Some(b'0') {
            j += 1;
        }
        let mut first_diff = Ordering::Equal;
        while digit(at(a, i)) && digit(at(b, j)) {
            if first_diff == Ordering::Equal {
                first_diff = a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
        if digit(at(a, i)) {
            return Ordering::Greater;
        }
        if digit(at(b, j)) {
            return Ordering::Less;
        }
        if first_diff != Ordering::Equal {
            return first_diff;
        }
    }
    Ordering::Equal
}

/// A version relation of a dependency field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Relation {
    /// `<<`
    Lt,
    /// `<=` (also the obsolete `<`)
    Le,
    /// `=`
    Eq,
    /// `>=` (also the obsolete `>`)
    Ge,
    /// `>>`
    Gt,
}

impl Relation {
    /// Parses an operator; the obsolete `<` and `>` mean `<=` and `>=`, as in dpkg.
    pub fn parse(s: &str) -> Option<Relation> {
        Some(match s {
            "<<" => Relation::Lt,
            "<=" | "<" => Relation::Le,
            "=" => Relation::Eq,
            ">=" | ">" => Relation::Ge,
            ">>" => Relation::Gt,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Lt => "<<",
            Relation::Le => "<=",
            Relation::Eq => "=",
            Relation::Ge => ">=",
            Relation::Gt => ">>",
        }
    }

    /// Whether `candidate REL bound` holds.
    pub fn holds(self, candidate: &Version, bound: &Version) -> bool {
        let o = candidate.cmp(bound);
        match self {
            Relation::Lt => o == Ordering::Less,
            Relation::Le => o != Ordering::Greater,
            Relation::Eq => o == Ordering::Equal,
            Relation::Ge => o != Ordering::Less,
            Relation::Gt => o == Ordering::Greater,
        }
    }
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A relation with its version: `(>= 1.2)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    pub relation: Relation,
    pub version: Version,
}

impl Constraint {
    pub fn matches(&self, v: &Version) -> bool {
        self.relation.holds(v, &self.version)
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.relation, self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn cmp(a: &str, b: &str) -> Ordering {
        v(a).cmp(&v(b))
    }

    #[test]
    fn parse_parts() {
        let x = v("1:2.30-1ubuntu3");
        assert_eq!(
            (x.epoch(), x.upstream(), x.revision()),
            (1, "2.30", "1ubuntu3")
        );
        // The revision is after the LAST hyphen; the epoch before the FIRST colon.
        let x = v("2:1.0-rc1-2");
        assert_eq!((x.epoch(), x.upstream(), x.revision()), (2, "1.0-rc1", "2"));
        let x = v("1:2:3");
        assert_eq!((x.epoch(), x.upstream(), x.revision()), (1, "2:3", ""));
        let x = v("3.11.2");
        assert_eq!((x.epoch(), x.upstream(), x.revision()), (0, "3.11.2", ""));
        assert_eq!(x.to_string(), "3.11.2");
    }

    #[test]
    fn parse_errors() {
        for bad in [
            "",
            " ",
            "a:1",
            ":1",
            "1:",
            "1.0-",
            "-1",
            "1 0",
            "1.0_1",
            "1.0-a_b",
            "99999999999:1",
        ] {
            assert!(Version::parse(bad).is_err(), "{bad:?}");
        }
    }

    /// The examples of the Debian Policy (§5.6.12) and dpkg's own test suite (t-version.c).
    #[test]
    fn dpkg_ordering() {
        use Ordering::*;
        let cases = [
            // Policy: `~` sorts before everything, even the end of the part.
            ("1.0~rc1", "1.0", Less),
            ("1.0~~", "1.0~~a", Less),
            ("1.0~~a", "1.0~", Less),
            ("1.0~", "1.0", Less),
            ("1.0", "1.0a", Less),
            // Epochs dominate.
            ("1:0.1", "2.0", Greater),
            ("0:1.0", "1.0", Equal),
            ("1:1.0", "1.0", Greater),
            ("2:0", "1:999", Greater),
            // Revisions; an absent revision equals "0".
            ("1.0-1", "1.0-2", Less),
            ("1.0", "1.0-0", Equal),
            ("1.0-1", "1.0", Greater),
            ("1.0-1~bpo1", "1.0-1", Less),
            // Numeric parts compare as numbers, leading zeros ignored.
            ("1.10", "1.9", Greater),
            ("1.001", "1.1", Equal),
            ("1.0010", "1.9", Greater),
            ("0.0.0", "0.0.00", Equal),
            ("10", "9", Greater),
            // Letters sort before non-letters.
            ("1.0a", "1.0+", Less),
            ("1.0+", "1.0.", Less),
            ("1.0--1", "1.0.-1", Less), // non-letters by ASCII: `-` < `.`
            ("1a", "1A", Greater),
            ("1.2.3", "1.2.3", Equal),
            ("1.2.3", "1.2.4", Less),
            ("2.30-1ubuntu3", "2.30-1ubuntu10", Less),
            ("3.11.2-6", "3.11.2-6+deb12u1", Less),
            ("1.2+dfsg-1", "1.2-1", Greater),
            ("0:1.2.3-1", "1.2.3-1", Equal),
            ("1.0-1", "1.0-1.1", Less),
            ("7.88.1-10+deb12u5", "7.88.1-10+deb12u12", Less),
            // dpkg t-version.c
            ("0:0-0", "0:0-0", Equal),
            ("0:0-0", "0:0", Equal),
            ("0:0.0-0", "0:0-0", Greater),
            ("0:0-00", "0:0-0", Equal),
            ("0:0.0-00", "0:0-0", Greater),
            ("1:0-0", "0:0-0", Greater),
            ("2:0-0", "1:0-0", Greater),
            ("0:1-0", "0:0-0", Greater),
            ("0:10-0", "0:9-0", Greater),
            ("0:0-1", "0:0-0", Greater),
            ("0:0-10", "0:0-9", Greater),
            ("0:1-1", "0:0-0", Greater),
            ("0:0a", "0:0", Greater),
            ("0:0~", "0:0", Less),
            ("0:0a~", "0:0a", Less),
            ("0:0a~", "0:0~", Greater),
            ("0:0~a", "0:0~", Greater),
        ];
        for (a, b, want) in cases {
            assert_eq!(cmp(a, b), want, "{a} vs {b}");
            assert_eq!(cmp(b, a), want.reverse(), "{b} vs {a}");
        }
    }

    #[test]
    fn verrevcmp_raw_parts() {
        // The empty-string cases of the policy example, on the raw comparator.
        assert_eq!(verrevcmp("~", ""), Ordering::Less);
        assert_eq!(verrevcmp("", "a"), Ordering::Less);
        assert_eq!(verrevcmp("~~", "~~a"), Ordering::Less);
        assert_eq!(verrevcmp("~~a", "~"), Ordering::Less);
        assert_eq!(verrevcmp("", ""), Ordering::Equal);
    }

    #[test]
    fn relations() {
        let (lo, hi) = (v("1.0"), v("1.1"));
        assert!(Relation::Lt.holds(&lo, &hi));
        assert!(!Relation::Lt.holds(&lo, &lo));
        assert!(Relation::Le.holds(&lo, &lo));
        assert!(Relation::Eq.holds(&v("1.0-0"), &lo));
        assert!(Relation::Ge.holds(&hi, &lo));
        assert!(Relation::Gt.holds(&hi, &lo));
        assert!(!Relation::Gt.holds(&lo, &lo));
        assert_eq!(Relation::parse("<"), Some(Relation::Le));
        assert_eq!(Relation::parse(">"), Some(Relation::Ge));
        assert_eq!(Relation::parse("=="), None);
        let c = Constraint {
            relation: Relation::Ge,
            version: v("2:1.0~rc1"),
        };
        assert!(c.matches(&v("2:1.0")));
        assert!(!c.matches(&v("1:9")));
        assert_eq!(c.to_string(), ">= 2:1.0~rc1");
    }
}
