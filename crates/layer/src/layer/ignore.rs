//! `.dockerignore` semantics, implemented here so they cannot drift with a dependency.
//!
//! - A pattern is matched per path component with Go's `filepath.Match` rules: `*` (any run of
//!   characters), `?` (one character), `[...]` classes (ranges `a-z`, negation `[^...]`), `\`
//!   escapes. A component that is exactly `**` matches any number of components (zero or more;
//!   a trailing `**` matches one or more, so `dir/**` excludes what is inside `dir` but not
//!   `dir` itself, like docker). `**` inside a longer component acts as `*`.
//! - Paths are matched as bytes, so a name that is not UTF-8 can be matched (and excluded): a
//!   literal character of a pattern matches its UTF-8 bytes, and `?` and a class each take one
//!   character, where a byte that does not begin a valid UTF-8 sequence counts as one character
//!   of its own, U+FFFD to a class (as Go decodes it). So `bad*`, `bad?` and `*` all match the
//!   name `bad\xff`; `[^a]` matches `\xff` too.
//! - Patterns are trimmed, cleaned like Go's `filepath.Clean` (`./`, `//`, trailing `/` go),
//!   and a leading `/` is stripped: patterns are relative to the copy source.
//! - A pattern also matches everything beneath a directory it matches.
//! - `!` re-includes; the last matching pattern wins.
//! - Blank lines and `#` comments are skipped (the caller normally removes them already).
//!
//! Matching never backtracks exponentially. Across components, a pattern is a small automaton
//! whose states are positions in its component list; the matcher carries the set of live
//! positions from a directory to its children ([`IgnoreState`]), so each path component is
//! consumed once per pattern: O(pattern components) glob matches per component. Within a
//! component, `*` is matched greedily with a single resumption point (each other token takes
//! exactly one character), which is O(pattern tokens × name length) at worst.

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

/// Where matching stands after the components of one path (a directory, usually), for each
/// pattern: what [`IgnoreMatcher::child`] advances by one more component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoreState {
    pats: Vec<PatState>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PatState {
    /// The pattern matched the path or one of its ancestors: it matches everything beneath.
    Matched,
    /// The positions in the pattern's components that the path's components can reach, sorted;
    /// empty when the pattern can match nothing at or beneath the path.
    Live(Vec<usize>),
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

    /// Whether `rel` (a "/"-separated path relative to the source, no leading or trailing "/";
    /// any bytes, UTF-8 or not) is excluded.
    pub fn excluded<P: AsRef<[u8]>>(&self, rel: P) -> bool {
        self.excluded_at(&self.state_of(rel.as_ref(), &mut 0))
    }

    /// Whether some `!` pattern could re-include a path strictly beneath the directory `rel`.
    /// When false, an excluded directory can be pruned without reading it. Conservative: it may
    /// say true for a directory whose contents all stay excluded.
    pub fn may_reinclude_beneath<P: AsRef<[u8]>>(&self, rel: P) -> bool {
        self.may_reinclude_beneath_at(&self.state_of(rel.as_ref(), &mut 0))
    }

    /// [`excluded`](Self::excluded), also returning how many elementary steps matching took
    /// (automaton positions visited plus glob-matching iterations): a deterministic measure of
    /// the matcher's cost, bounded by a polynomial in the sizes of the patterns and the path.
    pub fn excluded_counting_steps<P: AsRef<[u8]>>(&self, rel: P) -> (bool, u64) {
        let mut steps = 0;
        let state = self.state_of(rel.as_ref(), &mut steps);
        (self.excluded_at(&state), steps)
    }

    /// The state of the source itself (no components), where a walk starts.
    pub fn root(&self) -> IgnoreState {
        let pats = self
            .patterns
            .iter()
            .map(|p| {
                let mut live = vec![false; p.comps.len() + 1];
                live[0] = true;
                close(&p.comps, &mut live);
                PatState::Live(positions(&live))
            })
            .collect();
        IgnoreState { pats }
    }

    /// The state of the entry `name` (one component, any bytes) inside the directory `dir`.
    pub fn child(&self, dir: &IgnoreState, name: &[u8]) -> IgnoreState {
        self.child_counting(dir, name, &mut 0)
    }

    /// Whether the path whose state is `state` is excluded: the last pattern that matches it
    /// (or an ancestor) decides.
    pub fn excluded_at(&self, state: &IgnoreState) -> bool {
        self.patterns
            .iter()
            .zip(&state.pats)
            .rev()
            .find(|(_, s)| **s == PatState::Matched)
            .is_some_and(|(p, _)| !p.exclusion)
    }

    /// [`may_reinclude_beneath`](Self::may_reinclude_beneath) for the directory whose state is
    /// `state`: some `!` pattern matched it already or can still match below it.
    pub fn may_reinclude_beneath_at(&self, state: &IgnoreState) -> bool {
        self.patterns.iter().zip(&state.pats).any(|(p, s)| {
            p.exclusion
                && match s {
                    PatState::Matched => true,
                    PatState::Live(live) => !live.is_empty(),
                }
        })
    }

    fn state_of(&self, rel: &[u8], steps: &mut u64) -> IgnoreState {
        rel.split(|&b| b == b'/')
            .filter(|c| !c.is_empty())
            .fold(self.root(), |s, c| self.child_counting(&s, c, steps))
    }

    fn child_counting(&self, dir: &IgnoreState, name: &[u8], steps: &mut u64) -> IgnoreState {
        let pats = self
            .patterns
            .iter()
            .zip(&dir.pats)
            .map(|(p, s)| match s {
                PatState::Matched => PatState::Matched,
                PatState::Live(live) => advance(&p.comps, live, name, steps),
            })
            .collect();
        IgnoreState { pats }
    }
}

/// Consumes one path component from the positions `live` of a pattern.
///
/// Position `i` means "the components so far matched `comps[..i]`"; `comps.len()` is a match.
/// A glob at `i` leads to `i + 1` when it matches the component. A `**` at `i` consumes any
/// component and stays at `i`; when it is not the last component it may also match none (`i`
/// leads to `i + 1` without consuming, see [`close`]); a trailing `**` needs one component
/// and then leads to the match.
fn advance(comps: &[Comp], live: &[usize], name: &[u8], steps: &mut u64) -> PatState {
    if live.is_empty() {
        return PatState::Live(Vec::new());
    }
    let n = comps.len();
    let mut next = vec![false; n + 1];
    for &i in live {
        *steps += 1;
        match comps.get(i) {
            Some(Comp::DoubleStar) => {
                next[i] = true;
                if i + 1 == n {
                    next[n] = true;
                }
            }
            Some(Comp::Glob(toks)) if match_glob(toks, name, steps) => next[i + 1] = true,
            // A glob that does not match; or the end, which is `PatState::Matched` rather than
            // a live position.
            _ => {}
        }
    }
    if next[n] {
        return PatState::Matched;
    }
    close(comps, &mut next);
    PatState::Live(positions(&next))
}

/// Adds the positions reachable without consuming a component: past each `**` that is not the
/// last component. Those moves only go forward, so one forward pass reaches all of them.
fn close(comps: &[Comp], live: &mut [bool]) {
    for i in 0..comps.len().saturating_sub(1) {
        if live[i] && matches!(comps[i], Comp::DoubleStar) {
            live[i + 1] = true;
        }
    }
}

fn positions(live: &[bool]) -> Vec<usize> {
    live.iter()
        .enumerate()
        .filter_map(|(i, &l)| l.then_some(i))
        .collect()
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
        None | Some('-' | ']') => return Err(bad),
        Some('\\') => it.next().ok_or(bad)?,
        Some(c) => c,
    };
    if it.peek().is_none() {
        return Err(bad); // the class is never closed
    }
    Ok(c)
}

/// The character at the start of `s` (not empty) and its length in bytes. A byte that does not
/// begin a valid UTF-8 sequence is one character of its own, U+FFFD, as Go's
/// `utf8.DecodeRune` has it.
fn decode(s: &[u8]) -> (char, usize) {
    let width = match s.first() {
        Some(&b) if b < 0x80 => return (char::from(b), 1),
        Some(0xc2..=0xdf) => 2,
        Some(0xe0..=0xef) => 3,
        Some(0xf0..=0xf4) => 4,
        _ => 0,
    };
    if let Some(Ok(st)) = s.get(..width).map(std::str::from_utf8) {
        if let Some(c) = st.chars().next() {
            return (c, width);
        }
    }
    (char::REPLACEMENT_CHARACTER, 1)
}

/// How many bytes at the start of `s` (not empty) the single-character token `tok` matches.
fn match_one(tok: &Tok, s: &[u8]) -> Option<usize> {
    match tok {
        Tok::Lit(l) => {
            let mut buf = [0; 4];
            let l = l.encode_utf8(&mut buf).as_bytes();
            s.starts_with(l).then_some(l.len())
        }
        Tok::Any => Some(decode(s).1),
        Tok::Class { negated, ranges } => {
            let (c, width) = decode(s);
            (ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated).then_some(width)
        }
        Tok::Star => None, // handled by the caller
    }
}

/// Whether the glob `toks` matches all of `s`. Every token but `*` takes exactly one character,
/// so the classic greedy algorithm is exact: on a mismatch, only the latest `*` takes one more
/// character and matching resumes after it (an earlier `*` could only do worse). Each resumption
/// point is tried once: at most (tokens + 1) × (characters + 1) iterations.
fn match_glob(toks: &[Tok], s: &[u8], steps: &mut u64) -> bool {
    let (mut ti, mut si) = (0, 0);
    // After the latest `*`: the token index to resume at and where in `s` the `*` ends.
    let mut resume: Option<(usize, usize)> = None;
    loop {
        *steps += 1;
        match toks.get(ti) {
            Some(Tok::Star) => {
                ti += 1;
                resume = Some((ti, si));
                continue;
            }
            Some(tok) if si < s.len() => {
                if let Some(w) = match_one(tok, &s[si..]) {
                    ti += 1;
                    si += w;
                    continue;
                }
            }
            Some(_) => {}
            None if si == s.len() => return true,
            None => {}
        }
        match resume {
            Some((rt, rs)) if rs < s.len() => {
                let rs = rs + decode(&s[rs..]).1;
                resume = Some((rt, rs));
                ti = rt;
                si = rs;
            }
            _ => return false,
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

    #[test]
    fn names_that_are_not_utf8_match_as_bytes() {
        let bad: &[u8] = b"bad\xff";
        for (pat, want) in [
            ("bad*", true),
            ("bad?", true),
            ("*", true),
            ("b*\\xff", false), // `\x` is the character `x`, not a byte escape
            ("bad", false),
            ("bad??", false),  // one invalid byte is one character
            ("bad[^a]", true), // U+FFFD is not `a`
            ("bad[a-z]", false),
            ("bad[\u{FFFD}]", true), // ... and is U+FFFD to a class
            ("bad\u{FFFD}", false),  // but a literal U+FFFD is its own three bytes
            ("**/bad?", true),
        ] {
            assert_eq!(m(&[pat]).excluded(bad), want, "{pat:?}");
        }
        // Beneath a directory: the directory's bytes, then the name's.
        let i = m(&["d?r/*", "!d?r/keep"]);
        assert!(i.excluded(b"d\xfer/x\x80y"));
        assert!(!i.excluded(b"d\xfer/keep"));
        assert!(i.may_reinclude_beneath(b"d\xfer"));
        assert!(!i.may_reinclude_beneath(b"e\xfer"));
        // A truncated or overlong sequence is one character per byte; a valid one is one.
        assert!(m(&["a??b"]).excluded(b"a\xe2\x82b"));
        assert!(m(&["a??b"]).excluded(b"a\xc0\xafb"));
        assert!(m(&["a?b"]).excluded("a€b"));
        assert!(!m(&["a??b"]).excluded("a€b"));
        // `*` steps over whole characters: never half of a valid one.
        assert!(!m(&["*[^é]"]).excluded("é"));
        assert!(m(&["*[^é]"]).excluded(b"\xe9"));
    }

    #[test]
    fn decode_is_gos() {
        assert_eq!(decode(b"a"), ('a', 1));
        assert_eq!(decode("é!".as_bytes()), ('é', 2));
        assert_eq!(decode("€".as_bytes()), ('€', 3));
        assert_eq!(decode("😀".as_bytes()), ('😀', 4));
        for bad in [
            &b"\xff"[..],
            b"\x80",
            b"\xc3",
            b"\xe2\x82",
            b"\xc0\xaf",         // overlong
            b"\xed\xa0\x80",     // a surrogate
            b"\xf4\x90\x80\x80", // beyond U+10FFFF
        ] {
            assert_eq!(decode(bad), (char::REPLACEMENT_CHARACTER, 1), "{bad:?}");
        }
    }

    #[test]
    fn incremental_states_agree_with_whole_paths() {
        let i = m(&["**/a/**/b", "!**/a/**/b/keep", "x/**", "*.o"]);
        let mut s = i.root();
        let mut rel = String::new();
        for c in ["x", "a", "q", "b", "keep", "deep"] {
            s = i.child(&s, c.as_bytes());
            if !rel.is_empty() {
                rel.push('/');
            }
            rel.push_str(c);
            assert_eq!(i.excluded_at(&s), i.excluded(&rel), "{rel}");
            assert_eq!(
                i.may_reinclude_beneath_at(&s),
                i.may_reinclude_beneath(&rel),
                "{rel}"
            );
        }
        assert!(!i.excluded("x"));
        assert!(i.excluded("x/a/q/b"));
        assert!(i.excluded("x/a/q/b/keep")); // `x/**` comes later and wins
        assert!(!i.excluded("y/a/q/b/keep"));
        assert!(i.excluded("y/a/q/b/other"));
    }

    /// The pathological case that took minutes with backtracking: ten `**/a/` before `*c` on a
    /// path of 25 components (24 `a`s and a name that ends otherwise), and the same for a name
    /// that matches. Matching costs O(pattern components × path components × glob size); the
    /// backtracking matcher tried every way to share the `a`s among the `**`s (C(24, 10) ≈ 2·10⁶
    /// for the whole path alone, for each of its 25 prefixes).
    #[test]
    fn pathological_double_stars_take_polynomial_steps() {
        let pat = format!("{}*c", "**/a/".repeat(10));
        let i = m(&[pat.as_str()]);
        let dirs = vec!["a"; 24].join("/");
        let (hit, miss) = (format!("{dirs}/xc"), format!("{dirs}/xd"));
        let (excluded, hit_steps) = i.excluded_counting_steps(&hit);
        assert!(excluded);
        let (excluded, miss_steps) = i.excluded_counting_steps(&miss);
        assert!(!excluded);
        // 21 pattern components (22 positions), 25 path components, globs of at most 2 tokens
        // against names of at most 2 bytes: (2 + 1) × (2 + 1) iterations each, plus one step
        // per position visited.
        let bound = 22 * 25 * (1 + 3 * 3);
        for steps in [hit_steps, miss_steps] {
            assert!(steps <= bound, "{steps} steps > {bound}");
        }
        // Directories in between: all 24 `a/…` prefixes are matched too.
        assert!(!i.excluded(&dirs));
        assert!(i.excluded(format!("{dirs}/c")));
        let nine = format!("{}c", "a/".repeat(9));
        assert!(!i.excluded(nine)); // needs ten `a`s
        assert!(i.excluded(format!("{}c", "a/".repeat(10))));
    }

    #[test]
    fn glob_steps_are_quadratic_at_worst() {
        // `a*a*a*…b` against `aaaa…`: backtracking into every `*` is exponential.
        let toks = parse_glob(&format!("{}b", "a*".repeat(30))).unwrap();
        let name = vec![b'a'; 100];
        let mut steps = 0;
        assert!(!match_glob(&toks, &name, &mut steps));
        assert!(steps <= (toks.len() as u64 + 1) * (name.len() as u64 + 1));
        let mut steps = 0;
        let mut hit = name.clone();
        hit.push(b'b');
        assert!(match_glob(&toks, &hit, &mut steps));
    }
}
