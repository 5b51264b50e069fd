//! `.dockerignore` semantics, implemented here so they cannot drift with a dependency.
//!
//! - A pattern is matched per path component with Go's `filepath.Match` rules: `*` (any run of
//!   characters), `?` (one character), `[...]` classes (ranges `a-z`, negation `[^...]`), `\`
//!   escapes. A component that is exactly `**` matches any number of components (zero or more;
//!   a trailing `**` matches one or more, so `dir/**` excludes what is inside `dir` but not
//!   `dir` itself, like docker). `**` inside a longer component acts as `*`.
//! - Patterns are trimmed, cleaned like Go's `filepath.Clean` (`./`, `//`, trailing `/` go),
//!   and a leading `/` is stripped: patterns are relative to the copy source.
//! - A pattern also matches everything beneath a directory it matches.
//! - `!` re-includes; the last matching pattern wins.
//! - Blank lines and `#` comments are skipped (the caller normally removes them already).

/// A malformed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    pub pattern: String,
    pub reason: &'static str,
}

/// A compiled list of ignore patterns.
#[derive(Debug, Clone, Default)]
pub struct IgnoreMatcher {
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone)]
struct Pattern {
    exclusion: bool,
    comps: Vec<Comp>,
}

#[derive(Debug, Clone)]
enum Comp {
    DoubleStar,
    Glob(Vec<Tok>),
}

#[derive(Debug, Clone)]
enum Tok {
    Lit(char),
    Any,
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl IgnoreMatcher {
    /// Compiles `patterns` in order.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, PatternError> {
        let mut out = Vec::new();
        for raw in patterns {
            let raw = raw.as_ref();
            let err = |reason| PatternError {
                pattern: raw.to_string(),
                reason,
            };
            let mut p = raw.trim();
            if p.is_empty() || p.starts_with('#') {
                continue;
            }
            let exclusion = p.starts_with('!');
            if exclusion {
                p = p[1..].trim();
                if p.is_empty() {
                    return Err(err("`!` without a pattern"));
                }
            }
            let comps = clean(p)
                .into_iter()
                .map(|c| {
                    if c == "**" {
                        Ok(Comp::DoubleStar)
                    } else {
                        parse_glob(c).map(Comp::Glob)
                    }
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(err)?;
            if comps.is_empty() {
                // "." or "/": the source itself, which is never excluded.
                continue;
            }
            out.push(Pattern { exclusion, comps });
        }
        Ok(IgnoreMatcher { patterns: out })
    }

    /// True when there are no patterns.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether `rel` (a "/"-separated path relative to the source, no leading or trailing "/")
    /// is excluded.
    pub fn excluded(&self, rel: &str) -> bool {
        let comps: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
        let mut matched = false;
        for p in &self.patterns {
            // Only a pattern that can change the outcome needs evaluating.
            if p.exclusion != matched {
                continue;
            }
            if (1..=comps.len()).any(|k| match_comps(&p.comps, &comps[..k])) {
                matched = !p.exclusion;
            }
        }
        matched
    }

    /// Whether some `!` pattern could re-include a path strictly beneath the directory `rel`.
    /// When false, an excluded directory can be pruned without reading it. Conservative: it may
    /// say true for a directory whose contents all stay excluded.
    pub fn may_reinclude_beneath(&self, rel: &str) -> bool {
        let comps: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
        self.patterns
            .iter()
            .any(|p| p.exclusion && could_match_below(&p.comps, &comps))
    }
}

/// Go `filepath.Clean` on a relative "/"-path, then split into components; a leading "/" is
/// dropped (patterns are relative to the source). Leading ".." components stay (and never match).
fn clean(p: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." if out.last().is_some_and(|l| *l != "..") => {
                out.pop();
            }
            _ => out.push(c),
        }
    }
    out
}

fn parse_glob(c: &str) -> Result<Vec<Tok>, &'static str> {
    let mut toks = Vec::new();
    let mut it = c.chars().peekable();
    while let Some(ch) = it.next() {
        match ch {
            '*' => {
                if !matches!(toks.last(), Some(Tok::Star)) {
                    toks.push(Tok::Star);
                }
            }
            '?' => toks.push(Tok::Any),
            '\\' => toks.push(Tok::Lit(it.next().ok_or("trailing `\\`")?)),
            '[' => {
                let negated = it.peek() == Some(&'^');
                if negated {
                    it.next();
                }
                let mut ranges = Vec::new();
                loop {
                    if it.peek() == Some(&']') && !ranges.is_empty() {
                        it.next();
                        break;
                    }
                    let lo = class_char(&mut it)?;
                    let hi = if it.peek() == Some(&'-') {
                        it.next();
                        class_char(&mut it)?
                    } else {
                        lo
                    };
                    ranges.push((lo, hi));
                }
                toks.push(Tok::Class { negated, ranges });
            }
            _ => toks.push(Tok::Lit(ch)),
        }
    }
    Ok(toks)
}

/// One (possibly escaped) character of a class, as Go's `getEsc`.
fn class_char(it: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<char, &'static str> {
    let bad = "malformed character class";
    let c = match it.next() {
        None | Some('-') | Some(']') => return Err(bad),
        Some('\\') => it.next().ok_or(bad)?,
        Some(c) => c,
    };
    if it.peek().is_none() {
        return Err(bad); // the class is never closed
    }
    Ok(c)
}

fn match_glob(toks: &[Tok], s: &[char]) -> bool {
    match toks.first() {
        None => s.is_empty(),
        Some(Tok::Star) => (0..=s.len()).any(|k| match_glob(&toks[1..], &s[k..])),
        Some(tok) => {
            let Some(&c) = s.first() else { return false };
            let ok = match tok {
                Tok::Lit(l) => *l == c,
                Tok::Any => true,
                Tok::Class { negated, ranges } => {
                    ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
                }
                Tok::Star => false, // handled above
            };
            ok && match_glob(&toks[1..], &s[1..])
        }
    }
}

fn match_comp(toks: &[Tok], comp: &str) -> bool {
    let chars: Vec<char> = comp.chars().collect();
    match_glob(toks, &chars)
}

fn match_comps(pat: &[Comp], path: &[&str]) -> bool {
    match pat.first() {
        None => path.is_empty(),
        // A trailing `**` needs at least one component; elsewhere zero or more.
        Some(Comp::DoubleStar) if pat.len() == 1 => !path.is_empty(),
        Some(Comp::DoubleStar) => (0..=path.len()).any(|k| match_comps(&pat[1..], &path[k..])),
        Some(Comp::Glob(toks)) => match path.first() {
            Some(c) => match_comp(toks, c) && match_comps(&pat[1..], &path[1..]),
            None => false,
        },
    }
}

/// Could `pat` match some path strictly beneath `dir` (or an ancestor of it, which then
/// matches everything beneath)?
fn could_match_below(pat: &[Comp], dir: &[&str]) -> bool {
    match (pat.first(), dir.first()) {
        (None, _) | (Some(Comp::DoubleStar), _) | (_, None) => true,
        (Some(Comp::Glob(toks)), Some(c)) => {
            match_comp(toks, c) && could_match_below(&pat[1..], &dir[1..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(patterns: &[&str]) -> IgnoreMatcher {
        IgnoreMatcher::new(patterns).unwrap()
    }

    #[test]
    fn docker_documented_examples() {
        // https://docs.docker.com/build/concepts/context/#dockerignore-files
        let i = m(&["# comment", "*/temp*", "*/*/temp*", "temp?"]);
        assert!(i.excluded("somedir/temporary.txt"));
        assert!(i.excluded("somedir/temp"));
        assert!(i.excluded("somedir/temp/inner/file")); // beneath a matched directory
        assert!(i.excluded("somedir/subdir/temporary.txt"));
        assert!(i.excluded("tempa"));
        assert!(i.excluded("tempb"));
        assert!(!i.excluded("temporary.txt")); // */temp* needs one directory level
        assert!(!i.excluded("temp"));
        assert!(!i.excluded("a/b/c/temp"));

        let i = m(&["**/*.go"]);
        assert!(i.excluded("main.go"));
        assert!(i.excluded("a/b/c/x.go"));
        assert!(!i.excluded("a/b/c/x.goo"));

        let i = m(&["*.md", "!README.md"]);
        assert!(i.excluded("CHANGES.md"));
        assert!(!i.excluded("README.md"));
        assert!(!i.excluded("docs/x.md")); // *.md is root-only

        let i = m(&["*.md", "!README*.md", "README-secret.md"]);
        assert!(i.excluded("README-secret.md"));
        assert!(!i.excluded("README-public.md"));
        assert!(i.excluded("other.md"));

        let i = m(&["*.md", "README-secret.md", "!README*.md"]);
        assert!(!i.excluded("README-secret.md"));
        assert!(!i.excluded("README.md"));
    }

    #[test]
    fn go_filepath_match_rules() {
        let cases: &[(&str, &str, bool)] = &[
            ("abc", "abc", true),
            ("*", "abc", true),
            ("*c", "abc", true),
            ("a*", "a", true),
            ("a*/b", "abc/b", true),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", true),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/f", true),
            ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", false),
            ("a*b?c*x", "abxbbxdbxebxczzx", true),
            ("a*b?c*x", "abxbbxdbxebxczzy", false),
            ("ab[c]", "abc", true),
            ("ab[b-d]", "abc", true),
            ("ab[e-g]", "abc", false),
            ("ab[^c]", "abc", false),
            ("ab[^b-d]", "abc", false),
            ("ab[^e-g]", "abc", true),
            ("a\\*b", "a*b", true),
            ("a\\*b", "ab", false),
            ("a?b", "a☺b", true),
            ("a[^a]b", "a☺b", true),
            ("a???b", "a☺b", false),
            ("[a-ζ]*", "α", true),
            ("*[a-ζ]", "A", false),
            ("a?b", "a/b", false),
            ("a*b", "a/b", false),
            ("[\\]a]", "]", true),
            ("[\\-]", "-", true),
            ("[x\\-]", "x", true),
            ("[x\\-]", "-", true),
            ("[x\\-]", "z", false),
            ("[\\-x]", "a", false),
            ("*x", "xxx", true),
        ];
        for &(pat, path, want) in cases {
            assert_eq!(m(&[pat]).excluded(path), want, "{pat:?} vs {path:?}");
        }
        for bad in [
            "[]a]", "[-]", "[x-]", "[a-b-c]", "[", "[^", "[^bc", "a[", "a\\", "[\\", "!",
        ] {
            assert!(
                IgnoreMatcher::new(&[bad]).is_err(),
                "{bad:?} should be malformed"
            );
        }
    }

    #[test]
    fn double_star_and_cleaning() {
        let i = m(&["a/**/b"]);
        assert!(i.excluded("a/b"));
        assert!(i.excluded("a/x/y/b"));
        assert!(i.excluded("a/x/b/c")); // beneath a matched dir
        assert!(!i.excluded("x/a/b"));
        let i = m(&["dir/**"]);
        assert!(!i.excluded("dir"));
        assert!(i.excluded("dir/f"));
        assert!(m(&["**"]).excluded("anything/at/all"));
        for p in [
            "/node_modules",
            "./node_modules",
            "node_modules/",
            "  node_modules  ",
            "x/../node_modules",
        ] {
            let i = m(&[p]);
            assert!(i.excluded("node_modules"), "{p:?}");
            assert!(i.excluded("node_modules/pkg/index.js"), "{p:?}");
            assert!(!i.excluded("src/node_modules"), "{p:?}");
        }
        assert!(m(&["", "   ", "# x", "/", "."]).is_empty());
    }

    #[test]
    fn reinclusion_and_pruning() {
        let i = m(&["build", "!build/keep.txt"]);
        assert!(i.excluded("build"));
        assert!(i.excluded("build/other"));
        assert!(!i.excluded("build/keep.txt"));
        assert!(i.may_reinclude_beneath("build"));
        assert!(!i.may_reinclude_beneath("src"));

        let i = m(&["target", ".git"]);
        assert!(!i.may_reinclude_beneath("target"));

        let i = m(&["*", "!**/*.rs"]);
        assert!(i.may_reinclude_beneath("deep/dir"));
        assert!(!i.excluded("deep/dir/x.rs"));
        assert!(i.excluded("deep/dir/x.c"));

        let i = m(&["docs", "!docs/*/keep"]);
        assert!(i.may_reinclude_beneath("docs"));
        assert!(i.may_reinclude_beneath("docs/a"));
        assert!(!i.may_reinclude_beneath("other"));
        assert!(!i.excluded("docs/a/keep"));
        // A re-included directory re-includes what is beneath it.
        let i = m(&["vendor", "!vendor/keep"]);
        assert!(!i.excluded("vendor/keep/deep/file"));
    }
}
