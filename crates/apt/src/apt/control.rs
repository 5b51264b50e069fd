//! deb822 control paragraphs (Packages, Release, dpkg status, a .deb's `control`) and the
//! dependency fields (`Depends`, `Pre-Depends`, `Provides`).

use std::fmt;
use std::io::{self, BufRead, Read};

use super::version::{Constraint, Relation, Version, VersionError};

/// Why a control file or a dependency field does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    #[error("line {line}: continuation line before any field")]
    Continuation { line: usize },
    #[error("line {line}: expected `Field: value`, found `{text}`")]
    NotAField { line: usize, text: String },
    #[error("line {line}: field `{field}` appears twice in one paragraph")]
    Duplicate { line: usize, field: String },
    /// Only from a [`ParagraphReader`] ([`MAX_LINE`]).
    #[error("line {line} is longer than {limit} bytes")]
    LineTooLong { line: usize, limit: usize },
    #[error("dependency `{text}`: {reason}")]
    Dependency { text: String, reason: &'static str },
    #[error("dependency `{text}`")]
    Version {
        text: String,
        #[source]
        source: VersionError,
    },
}

/// One deb822 paragraph: fields in file order. Names compare case-insensitively; a value
/// keeps its continuation lines (joined with `\n`, each with its leading whitespace) so the
/// paragraph can be written back as it was.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Paragraph {
    fields: Vec<(String, String)>,
}

impl Paragraph {
    /// The value of a field (case-insensitive name), trimmed of surrounding whitespace on its
    /// first line.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Fields in file order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Sets a field: replaces its value in place, or appends it.
    pub fn set(&mut self, name: &str, value: &str) {
        match self
            .fields
            .iter_mut()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
        {
            Some((_, v)) => *v = value.to_string(),
            None => self.fields.push((name.to_string(), value.to_string())),
        }
    }

    /// Removes a field if present.
    pub fn remove(&mut self, name: &str) {
        self.fields.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The paragraph in deb822 form, ending with a newline (no blank line after it).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (k, v) in &self.fields {
            out.push_str(k);
            out.push(':');
            if !v.is_empty() && !v.starts_with('\n') {
                out.push(' ');
            }
            out.push_str(v);
            out.push('\n');
        }
        out
    }
}

/// Parses a deb822 file into its paragraphs. Blank (or whitespace-only) lines separate
/// paragraphs; lines starting with a space or tab continue the previous field; lines starting
/// with `#` are comments. A `\r` before the line end is dropped.
pub fn parse_paragraphs(text: &str) -> Result<Vec<Paragraph>, ControlError> {
    let mut parser = Parser::new(Keep::All);
    let mut out = Vec::new();
    for raw in text.lines() {
        if let Some(p) = parser.line(raw.strip_suffix('\r').unwrap_or(raw))? {
            out.push(p);
        }
    }
    out.extend(parser.finish());
    Ok(out)
}

/// Which fields a paragraph keeps. Every field is still checked (syntax, duplicates), so
/// what parses with [`Keep::All`] parses with [`Keep::Only`] and the other way round.
#[derive(Clone, Copy, Debug)]
pub enum Keep {
    All,
    /// Only these (case-insensitive): a Packages index is read for a few fields of each
    /// paragraph, and its descriptions are most of its size.
    Only(&'static [&'static str]),
}

impl Keep {
    fn keeps(self, name: &str) -> bool {
        match self {
            Keep::All => true,
            Keep::Only(names) => names.iter().any(|n| n.eq_ignore_ascii_case(name)),
        }
    }
}

/// The paragraph grammar, fed one line at a time (line end and its `\r` already removed):
/// the one implementation behind [`parse_paragraphs`] and [`ParagraphReader`].
struct Parser {
    keep: Keep,
    cur: Paragraph,
    /// Every field name of the current paragraph, kept or not (the duplicate check):
    /// `names[name_ends[i - 1]..name_ends[i]]`, one buffer so no paragraph allocates per field.
    names: String,
    name_ends: Vec<usize>,
    /// Whether the last field was kept, i.e. where a continuation line goes.
    last_kept: bool,
    line_no: usize,
}

impl Parser {
    fn new(keep: Keep) -> Parser {
        Parser {
            keep,
            cur: Paragraph::default(),
            names: String::new(),
            name_ends: Vec::new(),
            last_kept: false,
            line_no: 0,
        }
    }

    /// Whether the current paragraph has a field (kept or not): a paragraph of dropped fields
    /// only is still a paragraph (a Packages entry without `Package` is an error, not nothing).
    fn open(&self) -> bool {
        !self.name_ends.is_empty()
    }

    fn has_name(&self, name: &str) -> bool {
        let mut start = 0;
        self.name_ends.iter().any(|&end| {
            let seen = &self.names[start..end];
            start = end;
            seen.eq_ignore_ascii_case(name)
        })
    }

    fn take(&mut self) -> Paragraph {
        self.names.clear();
        self.name_ends.clear();
        self.last_kept = false;
        std::mem::take(&mut self.cur)
    }

    /// One line; returns the paragraph this line ends, if any.
    fn line(&mut self, line: &str) -> Result<Option<Paragraph>, ControlError> {
        self.line_no += 1;
        let line_no = self.line_no;
        if line.trim().is_empty() {
            return Ok(self.open().then(|| self.take()));
        }
        if line.starts_with('#') {
            return Ok(None);
        }
        if line.starts_with(' ') || line.starts_with('\t') {
            if !self.open() {
                return Err(ControlError::Continuation { line: line_no });
            }
            if self.last_kept {
                if let Some((_, v)) = self.cur.fields.last_mut() {
                    v.push('\n');
                    v.push_str(line.trim_end());
                }
            }
            return Ok(None);
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(ControlError::NotAField {
                line: line_no,
                text: line.to_string(),
            });
        };
        // deb822: a field name is printable US-ASCII other than `:`, and starts with neither
        // `#` (a comment) nor `-`. (Anything else, a `\r` or control byte before a `#` say,
        // would parse as a field here and be read back as a comment once written out.)
        let name = name.trim_end();
        if name.is_empty()
            || !name.bytes().all(|b| (0x21..=0x7e).contains(&b))
            || name.starts_with('#')
            || name.starts_with('-')
        {
            return Err(ControlError::NotAField {
                line: line_no,
                text: line.to_string(),
            });
        }
        if self.has_name(name) {
            return Err(ControlError::Duplicate {
                line: line_no,
                field: name.to_string(),
            });
        }
        self.names.push_str(name);
        self.name_ends.push(self.names.len());
        self.last_kept = self.keep.keeps(name);
        if self.last_kept {
            self.cur
                .fields
                .push((name.to_string(), value.trim().to_string()));
        }
        Ok(None)
    }

    /// The end of the input: the last paragraph, if it had no blank line after it.
    fn finish(&mut self) -> Option<Paragraph> {
        self.open().then(|| self.take())
    }
}

/// Longest line a [`ParagraphReader`] reads, line end included: what bounds the memory one
/// paragraph can take, whatever the size of the file. The longest lines of the Debian archive's
/// indices (the `Provides` of some Rust library packages) are a few hundred kilobytes.
pub const MAX_LINE: usize = 16 << 20;

/// Why a [`ParagraphReader`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Control(#[from] ControlError),
    #[error("line {line} is not UTF-8")]
    NotUtf8 { line: usize },
    /// From the reader: for a decompressed stream, a decompression error.
    #[error("reading line {line}")]
    Io {
        line: usize,
        #[source]
        source: io::Error,
    },
}

/// Reads deb822 paragraphs one at a time from a stream, so that a large file (a Packages
/// index) is never in memory whole: what it holds at a time is one line and one paragraph's
/// kept fields. The same grammar as [`parse_paragraphs`]; the whole input must be UTF-8 (as a
/// `&str` is), which line by line is the same check, `\n` never being part of a multi-byte
/// character.
pub struct ParagraphReader<R> {
    input: R,
    parser: Parser,
    line: Vec<u8>,
}

impl<R: BufRead> ParagraphReader<R> {
    pub fn new(input: R, keep: Keep) -> ParagraphReader<R> {
        ParagraphReader {
            input,
            parser: Parser::new(keep),
            line: Vec::new(),
        }
    }

    /// The number of lines read so far.
    pub fn line_no(&self) -> usize {
        self.parser.line_no
    }

    /// Reads the next line into `self.line` (line end and `\r` removed, as `str::lines` and
    /// [`parse_paragraphs`] remove them); `false` at the end of the input.
    fn read_line(&mut self) -> Result<bool, ReadError> {
        self.line.clear();
        let line = self.parser.line_no + 1;
        let n = (&mut self.input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.line)
            .map_err(|source| ReadError::Io { line, source })?;
        if n == 0 {
            return Ok(false);
        }
        if self.line.len() > MAX_LINE {
            return Err(ReadError::Control(ControlError::LineTooLong {
                line,
                limit: MAX_LINE,
            }));
        }
        // `str::lines` drops `\n` and then a `\r` before it; `parse_paragraphs` drops one more
        // `\r`. The same here, so both read a file alike.
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
            if self.line.last() == Some(&b'\r') {
                self.line.pop();
            }
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        Ok(true)
    }

    /// The next paragraph, or `None` at the end of the input.
    pub fn next_paragraph(&mut self) -> Result<Option<Paragraph>, ReadError> {
        while self.read_line()? {
            let line = std::str::from_utf8(&self.line).map_err(|_| ReadError::NotUtf8 {
                line: self.parser.line_no + 1,
            })?;
            if let Some(p) = self.parser.line(line)? {
                return Ok(Some(p));
            }
        }
        Ok(self.parser.finish())
    }

    /// Reads the rest of the input checking only that it is UTF-8 (and readable), parsing
    /// nothing: after a syntax error, whether a later line would have made the whole input
    /// refused for another reason (as reading it whole first would have said).
    pub fn check_rest(&mut self) -> Result<(), ReadError> {
        while self.read_line()? {
            self.parser.line_no += 1;
            if std::str::from_utf8(&self.line).is_err() {
                return Err(ReadError::NotUtf8 {
                    line: self.parser.line_no,
                });
            }
        }
        Ok(())
    }

    /// The underlying reader (to drain the rest of it).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.input
    }
}

/// One alternative of a dependency: `name[:arch] [(REL version)] [[archs]] [<profiles>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dep {
    pub name: String,
    /// The architecture qualifier after `:` (`any`, `native` or an architecture name).
    pub arch: Option<String>,
    pub constraint: Option<Constraint>,
}

impl fmt::Display for Dep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(a) = &self.arch {
            write!(f, ":{a}")?;
        }
        if let Some(c) = &self.constraint {
            write!(f, " ({c})")?;
        }
        Ok(())
    }
}

/// A list of alternatives (`a | b`): any one satisfies it.
pub type Alternatives = Vec<Dep>;

/// Parses a relationship field (`Depends`, `Pre-Depends`): comma-separated groups of
/// `|`-separated alternatives. Architecture restrictions (`[amd64]`) and build profiles
/// (`<!nocheck>`) are accepted and ignored: they have no meaning in binary packages.
pub fn parse_depends(text: &str) -> Result<Vec<Alternatives>, ControlError> {
    let mut out = Vec::new();
    for group in text.split(',') {
        if group.trim().is_empty() {
            // dpkg tolerates a trailing comma (and empty fields).
            continue;
        }
        let mut alts = Vec::new();
        for alt in group.split('|') {
            alts.push(parse_dep(alt)?);
        }
        out.push(alts);
    }
    Ok(out)
}

/// Parses a `Provides` field: comma-separated `name [(= version)]` (only `=` is allowed).
pub fn parse_provides(text: &str) -> Result<Vec<Dep>, ControlError> {
    let mut out = Vec::new();
    for item in text.split(',') {
        if item.trim().is_empty() {
            continue;
        }
        let d = parse_dep(item)?;
        if let Some(c) = &d.constraint {
            if c.relation != Relation::Eq {
                return Err(ControlError::Dependency {
                    text: item.trim().to_string(),
                    reason: "a Provides version must use `=`",
                });
            }
        }
        out.push(d);
    }
    Ok(out)
}

fn parse_dep(text: &str) -> Result<Dep, ControlError> {
    let orig = text.trim();
    let err = |reason| ControlError::Dependency {
        text: orig.to_string(),
        reason,
    };
    // Drop `[...]` arch restrictions and `<...>` build profiles.
    let mut s = String::with_capacity(orig.len());
    let (mut in_paren, mut sq, mut ang) = (false, 0i32, 0i32);
    for c in orig.chars() {
        if in_paren {
            s.push(c);
            in_paren = c != ')';
            continue;
        }
        match c {
            '(' if sq == 0 && ang == 0 => {
                in_paren = true;
                s.push(c);
            }
            '[' => sq += 1,
            ']' => sq -= 1,
            '<' => ang += 1,
            '>' => ang -= 1,
            _ if sq > 0 || ang > 0 => {}
            _ => s.push(c),
        }
        if sq < 0 || ang < 0 {
            return Err(err("unbalanced `]` or `>`"));
        }
    }
    if sq != 0 || ang != 0 {
        return Err(err("unbalanced `[` or `<`"));
    }
    let s = s.trim();
    let (head, constraint) = match s.split_once('(') {
        Some((head, rest)) => {
            let inner = rest
                .strip_suffix(')')
                .ok_or_else(|| err("expected `)` at the end"))?
                .trim();
            let op_len = inner
                .find(|c: char| !"<>=".contains(c))
                .ok_or_else(|| err("no version after the relation"))?;
            let relation =
                Relation::parse(&inner[..op_len]).ok_or_else(|| err("unknown relation"))?;
            let version =
                Version::parse(inner[op_len..].trim()).map_err(|source| ControlError::Version {
                    text: orig.to_string(),
                    source,
                })?;
            (head.trim(), Some(Constraint { relation, version }))
        }
        None => (s, None),
    };
    let (name, arch) = match head.split_once(':') {
        Some((n, a)) => (n, Some(a.to_string())),
        None => (head, None),
    };
    if name.is_empty() {
        return Err(err("empty package name"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c))
    {
        return Err(err("invalid package name"));
    }
    if arch
        .as_deref()
        .is_some_and(|a| a.is_empty() || !a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    {
        return Err(err("invalid architecture qualifier"));
    }
    Ok(Dep {
        name: name.to_string(),
        arch,
        constraint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_are_deb822s() {
        // Found by the `apt_control` fuzz target: a `\r` before `#` made a field named `#…`,
        // which its own to_text wrote back as a comment.
        for bad in [
            "\r#x: 1\n",
            "\x0b#: =\n",
            "-x: 1\n",
            "a\u{e9}: 1\n",
            "A: 1\n\r#k: 2\n",
        ] {
            assert!(
                matches!(parse_paragraphs(bad), Err(ControlError::NotAField { .. })),
                "{bad:?}"
            );
        }
        let p = parse_paragraphs("Package: a\nX-Original_Field.1 : v\n").unwrap();
        assert_eq!(p[0].fields[1].0, "X-Original_Field.1");
        let back = parse_paragraphs(&p[0].to_text()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn paragraphs_and_continuations() {
        let text = "Package: a\nVersion: 1.0\nDescription: short\n long line\n .\n more\n\n\n\
                    # comment\nPackage: b\r\nDepends: x,\n y\n";
        let ps = parse_paragraphs(text).unwrap();
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[0].get("package"), Some("a"));
        assert_eq!(
            ps[0].get("Description"),
            Some("short\n long line\n .\n more")
        );
        assert_eq!(ps[1].get("Package"), Some("b"));
        assert_eq!(ps[1].get("depends"), Some("x,\n y"));
        assert_eq!(
            parse_depends(ps[1].get("depends").unwrap()).unwrap().len(),
            2
        );
        assert_eq!(
            ps[0].to_text(),
            "Package: a\nVersion: 1.0\nDescription: short\n long line\n .\n more\n"
        );
        // SHA256 style: empty first line.
        let ps = parse_paragraphs("SHA256:\n abc 1 main/Packages\n").unwrap();
        assert_eq!(ps[0].get("SHA256"), Some("\n abc 1 main/Packages"));
        assert_eq!(ps[0].to_text(), "SHA256:\n abc 1 main/Packages\n");
    }

    #[test]
    fn paragraph_errors() {
        assert!(matches!(
            parse_paragraphs(" x\n"),
            Err(ControlError::Continuation { line: 1 })
        ));
        assert!(matches!(
            parse_paragraphs("A: 1\nnot a field\n"),
            Err(ControlError::NotAField { line: 2, .. })
        ));
        assert!(matches!(
            parse_paragraphs("A: 1\na: 2\n"),
            Err(ControlError::Duplicate { line: 2, .. })
        ));
    }

    /// Every paragraph of `text` through a [`ParagraphReader`] reading `chunk` bytes at a time.
    fn stream(text: &[u8], keep: Keep, chunk: usize) -> Result<Vec<Paragraph>, ReadError> {
        let mut r = ParagraphReader::new(io::BufReader::with_capacity(chunk, text), keep);
        let mut out = Vec::new();
        while let Some(p) = r.next_paragraph()? {
            out.push(p);
        }
        Ok(out)
    }

    /// Paragraph boundaries as Debian policy 5.1 and deb822(5) give them: paragraphs are
    /// separated by empty lines (whitespace-only lines accepted, as the policy lets parsers
    /// do), continuation lines start with a space or a tab. CRLF is not in the policy; it is
    /// accepted as LF, as it always was here. The reader and `parse_paragraphs` agree on all
    /// of it, whatever the read size (1 byte splits every line and every CRLF).
    #[test]
    fn reader_boundaries_match_parse_paragraphs() {
        let cases: &[(&str, usize)] = &[
            ("A: 1\nB: 2\n\nA: 3\n", 2),
            // No newline at the end of the last line.
            ("A: 1\n\nA: 2\n continued", 2),
            ("A: 1", 1),
            // Several blank lines between paragraphs, and before the first and after the last.
            ("\n\nA: 1\n\n\n\nA: 2\n\n\n", 2),
            // Whitespace-only separators.
            ("A: 1\n \t \nA: 2\n\t\nA: 3\n", 3),
            // Continuation lines, space and tab, and the ` .` empty line of a description.
            ("A: 1\nD: short\n long\n .\n\tlast \nB: 2\n", 1),
            // CRLF throughout, a CRLF blank line, and a lone CR at the very end.
            ("A: 1\r\nD: x\r\n y\r\n\r\nA: 2\r", 2),
            // Two CRs before LF: `lines` takes one, the parser the other.
            ("A: 1\r\r\nB: 2\n", 1),
            // Comments, between and inside paragraphs.
            ("# c\nA: 1\n# c\n x\n\nA: 2\n", 2),
            ("", 0),
            ("\n \n", 0),
        ];
        for (text, n) in cases {
            let whole = parse_paragraphs(text).unwrap();
            assert_eq!(whole.len(), *n, "{text:?}");
            for chunk in [1, 2, 3, 7, 1 << 16] {
                let streamed = stream(text.as_bytes(), Keep::All, chunk).unwrap();
                assert_eq!(streamed, whole, "{text:?} read {chunk} bytes at a time");
            }
        }
        let ps = parse_paragraphs("A: 1\n\nA: 2\n continued").unwrap();
        assert_eq!(ps[1].get("A"), Some("2\n continued"));
        let ps = parse_paragraphs("A: 1\nD: short\n long\n .\n\tlast \nB: 2\n").unwrap();
        assert_eq!(ps[0].get("D"), Some("short\n long\n .\n\tlast"));
        let ps = parse_paragraphs("A: 1\r\nD: x\r\n y\r\n\r\nA: 2\r").unwrap();
        assert_eq!((ps[0].get("D"), ps[1].get("A")), (Some("x\n y"), Some("2")));
        // The errors, and their line numbers, are the same too.
        for bad in [
            " x\n",
            "A: 1\nnot a field\n",
            "A: 1\r\n\r\n x\r\n",
            "A: 1\na: 2\n",
        ] {
            let whole = parse_paragraphs(bad).unwrap_err();
            for chunk in [1, 1 << 16] {
                match stream(bad.as_bytes(), Keep::All, chunk) {
                    Err(ReadError::Control(e)) => assert_eq!(e, whole, "{bad:?}"),
                    other => panic!("{bad:?}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn reader_keeps_only_some_fields_but_checks_all() {
        let only = Keep::Only(&["Package", "depends"]);
        let text = "Package: a\nDescription: d\n more\nDepends: x,\n y\nTag: t\n\n\
                    Description: only dropped fields\n\nPackage: b\n";
        let ps = stream(text.as_bytes(), only, 4).unwrap();
        assert_eq!(ps.len(), 3);
        assert_eq!(
            ps[0].fields().collect::<Vec<_>>(),
            [("Package", "a"), ("Depends", "x,\n y")]
        );
        // A paragraph of dropped fields only is still one (not skipped, not merged).
        assert!(ps[1].is_empty());
        assert_eq!(ps[2].get("Package"), Some("b"));
        // A dropped field's continuation lines do not land on a kept field.
        let ps = stream(b"Package: a\nDescription: d\n more\n", only, 4).unwrap();
        assert_eq!(ps[0].get("Package"), Some("a"));
        // Duplicates among dropped fields are still errors.
        let err = stream(b"Package: a\nTag: 1\ntag: 2\n", only, 4).unwrap_err();
        assert!(
            matches!(
                err,
                ReadError::Control(ControlError::Duplicate { line: 3, .. })
            ),
            "{err}"
        );
    }

    #[test]
    fn reader_refuses_non_utf8_and_overlong_lines() {
        let err = stream(b"A: 1\n\nB: \xff\n", Keep::All, 2).unwrap_err();
        assert!(matches!(err, ReadError::NotUtf8 { line: 3 }), "{err}");
        // The line after a syntax error is still checked.
        let mut r = ParagraphReader::new(&b"A: 1\nbad\nC: \xff\n"[..], Keep::All);
        assert!(matches!(r.next_paragraph(), Err(ReadError::Control(_))));
        assert!(matches!(
            r.check_rest(),
            Err(ReadError::NotUtf8 { line: 3 })
        ));
        let mut long = b"A: ".to_vec();
        long.resize(MAX_LINE, b'x');
        long.push(b'\n');
        let err = stream(&long, Keep::All, 1 << 16).unwrap_err();
        assert!(
            matches!(
                err,
                ReadError::Control(ControlError::LineTooLong { line: 1, .. })
            ),
            "{err}"
        );
        long.truncate(MAX_LINE - 1);
        long.push(b'\n');
        assert_eq!(stream(&long, Keep::All, 1 << 16).unwrap().len(), 1);
    }

    #[test]
    fn depends_fields() {
        let d = parse_depends(
            "a (>= 1.0) | b:any, c [amd64], libc6 (>> 2.36~), d:native (<< 2:3) <!nocheck>, e (= 1-1),",
        )
        .unwrap();
        assert_eq!(d.len(), 5);
        assert_eq!(d[0].len(), 2);
        assert_eq!(d[0][0].name, "a");
        let c = d[0][0].constraint.as_ref().unwrap();
        assert_eq!((c.relation, c.version.as_str()), (Relation::Ge, "1.0"));
        assert_eq!(d[0][1].arch.as_deref(), Some("any"));
        assert_eq!(d[1][0].name, "c");
        assert!(d[1][0].constraint.is_none());
        assert_eq!(d[2][0].constraint.as_ref().unwrap().relation, Relation::Gt);
        assert_eq!(d[3][0].arch.as_deref(), Some("native"));
        assert_eq!(d[3][0].constraint.as_ref().unwrap().relation, Relation::Lt);
        assert_eq!(d[4][0].to_string(), "e (= 1-1)");
        assert_eq!(d[0][1].to_string(), "b:any");
        // Spacing variants.
        let d = parse_depends("x(>=1)|y ( << 2 )").unwrap();
        assert_eq!(d[0][0].constraint.as_ref().unwrap().version.as_str(), "1");
        assert_eq!(d[0][1].constraint.as_ref().unwrap().relation, Relation::Lt);
        assert!(parse_depends("").unwrap().is_empty());
    }

    #[test]
    fn depends_errors() {
        for bad in [
            "a (>= )",
            "a (~ 1)",
            "A",
            "a (>= 1",
            "a:",
            " | b",
            "a [amd64",
            "a (>= 1.0_x)",
        ] {
            assert!(parse_depends(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn provides_field() {
        let p = parse_provides("mail-transport-agent, libfoo-abi (= 2), x").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[1].constraint.as_ref().unwrap().version.as_str(), "2");
        assert!(parse_provides("a (>= 1)").is_err());
    }
}
