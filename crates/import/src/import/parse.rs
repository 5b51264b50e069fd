//! The Dockerfile as the `parse-dockerfile` crate reads it, its errors placed at
//! `Dockerfile:LINE:COL`, and `$VAR` / `${VAR}` / `${VAR:-default}` substitution.

use std::collections::BTreeMap;
use std::path::Path;

use super::ImportError;

/// Byte offsets of line starts, for a span's line number.
pub(super) struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    pub(super) fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    /// The 1-based line of a byte offset.
    pub(super) fn line(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }
}

/// Parses `text`; an error names the line and column the parser stopped at and what it
/// expected there.
pub(super) fn parse<'a>(
    text: &'a str,
    path: &Path,
) -> Result<parse_dockerfile::Dockerfile<'a>, ImportError> {
    let err = |line, column, message| ImportError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message,
    };
    let heredocs = heredocs(text);
    parse_dockerfile::parse(text).map_err(|e| {
        // `{:#}`: the message without the crate's own " at line L column C".
        let message = format!("{e:#}");
        let (line, column) = match (e.line(), e.column()) {
            // NoStage has no position: the end of the file.
            (0, _) => (text.lines().count().max(1), 1),
            (l, c) => (l, char_column(text, l, c)),
        };
        // A heredoc after other words (`cat <<EOF >> f`) is not one to the parser: its body
        // is read as instructions. Name the heredoc, not the body's line.
        match heredocs.iter().rev().find(|h| h.line < line && !h.leading) {
            Some(h) => err(
                h.line,
                h.column,
                format!(
                    "`{}` after other words: expected the heredoc first (RUN <<{} with the command inside it); the parser read its body as instructions ({message} at {line}:{column})",
                    h.token, h.delim
                ),
            ),
            None => err(line, column, message),
        }
    })
}

/// A `<<WORD` on a RUN, COPY or ADD line.
struct Heredoc {
    line: usize,
    column: usize,
    token: String,
    delim: String,
    /// The first word of the instruction's arguments (`RUN <<EOF`).
    leading: bool,
}

fn heredocs(text: &str) -> Vec<Heredoc> {
    let mut out = Vec::new();
    for (n, l) in text.lines().enumerate() {
        let t = l.trim_start();
        let upper = t.get(..5).unwrap_or("").to_ascii_uppercase();
        if !(upper.starts_with("RUN ") || upper.starts_with("COPY ") || upper.starts_with("ADD ")) {
            continue;
        }
        let Some(pos) = t.find("<<").filter(|p| !t[*p..].starts_with("<<<")) else {
            continue;
        };
        let rest = &t[pos + 2..];
        let rest = rest.trim_start_matches('-');
        let delim: String = rest
            .trim_matches(|c| c == '"' || c == '\'')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // Only the keyword and its flags before it: `RUN --mount=… <<EOF`.
        let leading = t[..pos]
            .split_whitespace()
            .enumerate()
            .all(|(k, w)| k == 0 || w.starts_with("--"));
        out.push(Heredoc {
            line: n + 1,
            column: l.len() - t.len() + t[..pos].chars().count() + 1,
            token: t[pos..].trim_end().chars().take(40).collect::<String>(),
            delim,
            leading,
        });
    }
    out
}

/// `CMD []` and `ENTRYPOINT []` (which clear the base's) as `[""]`: the parser wants at
/// least one argument; [`is_empty_exec`] reads them back.
pub(super) fn empty_exec_forms(text: &str) -> std::borrow::Cow<'_, str> {
    let empty = |l: &str| {
        let mut w = l.split_whitespace();
        let k = w.next().unwrap_or("").to_ascii_uppercase();
        (k == "CMD" || k == "ENTRYPOINT") && w.collect::<String>() == "[]"
    };
    if !text.lines().any(empty) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for l in text.split_inclusive('\n') {
        if empty(l) {
            out.push_str(&l.replacen("[]", "[\"\"]", 1));
        } else {
            out.push_str(l);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// An exec form of one empty string: `[]` as [`empty_exec_forms`] wrote it.
pub(super) fn is_empty_exec(argv: &[String]) -> bool {
    argv.len() == 1 && argv[0].is_empty()
}

/// The crate counts columns in bytes; a message counts characters.
fn char_column(text: &str, line: usize, byte_column: usize) -> usize {
    let Some(l) = text.split('\n').nth(line - 1) else {
        return byte_column;
    };
    let end = byte_column.saturating_sub(1).min(l.len());
    match l.get(..end) {
        Some(prefix) => prefix.chars().count() + 1,
        None => byte_column,
    }
}

/// Variables in scope: ARGs and ENVs, in the order Docker gives them precedence (a later
/// insert wins).
pub(super) type Vars = BTreeMap<String, String>;

/// `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:+alt}`, `${NAME+alt}`
/// replaced from `vars` (an unset name gives the empty string, as in Docker); `\$` is a
/// literal `$`.
pub(super) fn expand(s: &str, vars: &Vars) -> String {
    expand_as(s, vars, None)
}

/// [`expand`] written as a recipe string that takes `[args]`: a name of `forms` as its form
/// there (`${NAME}` for an argument, an ENV's value as this wrote it), `${ARG:-default}` kept
/// (the default's value; the recipe takes no other form of an argument: `${ARG-d}`,
/// `${ARG:+alt}` are their value), any other name's value with its `$`s doubled, and a
/// literal `$` as `$$` (the recipe's `$`). `vars` decides the conditional forms.
pub(super) fn recipe_form(s: &str, vars: &Vars, forms: &Vars) -> String {
    expand_as(s, vars, Some(forms))
}

/// `s` with every `$` doubled: a value as a recipe string that takes `[args]` writes it.
pub(super) fn dollars_doubled(s: &str) -> String {
    s.replace('$', "$$")
}

/// `s` written so that a recipe declaring the arguments `names` reads it back unchanged: a `$`
/// the recipe would read (before `$`, `NAME` or `{NAME` of one of them) doubled. What Docker
/// does not substitute (RUN, CMD, ENTRYPOINT: their shell does) is written so.
pub(super) fn verbatim(s: &str, names: &[&str]) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.char_indices() {
        out.push(c);
        if c != '$' {
            continue;
        }
        let after = &s[i + 1..];
        let name_at = |t: &str| {
            let n = t
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(t.len());
            names.contains(&&t[..n])
        };
        let read = after.starts_with('$')
            || name_at(after)
            || after.strip_prefix('{').is_some_and(name_at);
        if read {
            out.push('$');
        }
    }
    out
}

/// The form of `name` ([`recipe_form`]) or its value ([`expand`]).
fn form_of(name: &str, vars: &Vars, forms: Option<&Vars>) -> String {
    match forms {
        None => vars.get(name).cloned().unwrap_or_default(),
        Some(f) => match f.get(name) {
            Some(v) => v.clone(),
            None => dollars_doubled(vars.get(name).map(String::as_str).unwrap_or("")),
        },
    }
}

fn expand_as(s: &str, vars: &Vars, forms: Option<&Vars>) -> String {
    let dollar = if forms.is_some() { "$$" } else { "$" };
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && chars.get(i + 1) == Some(&'$') {
            out.push_str(dollar);
            i += 2;
            continue;
        }
        if c != '$' {
            out.push(c);
            i += 1;
            continue;
        }
        match chars.get(i + 1) {
            Some('{') => {
                let Some(close) = chars[i + 2..].iter().position(|&c| c == '}') else {
                    let rest: String = chars[i..].iter().collect();
                    out.push_str(&rest.replace('$', dollar));
                    break;
                };
                let inner: String = chars[i + 2..i + 2 + close].iter().collect();
                out.push_str(&braced(&inner, vars, forms));
                i += close + 3;
            }
            Some(&n) if n.is_ascii_alphabetic() || n == '_' => {
                let len = chars[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                    .count();
                let name: String = chars[i + 1..i + 1 + len].iter().collect();
                out.push_str(&form_of(&name, vars, forms));
                i += len + 1;
            }
            _ => {
                out.push_str(dollar);
                i += 1;
            }
        }
    }
    out
}

/// The names `s` refers to as `$NAME` or `${NAME…}`.
pub(super) fn referenced(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        let after = &rest[i + 1..];
        let after = after.strip_prefix('{').unwrap_or(after);
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && !out.contains(&name)
        {
            out.push(name);
        }
        rest = &rest[i + 1..];
    }
    out
}

fn braced(inner: &str, vars: &Vars, forms: Option<&Vars>) -> String {
    let name_len = inner
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .count();
    let (name, rest) = inner.split_at(name_len);
    let value = vars.get(name).map(String::as_str);
    let set_non_empty = value.is_some_and(|v| !v.is_empty());
    let this = || form_of(name, vars, forms);
    let branch = |b: &str| expand_as(b, vars, forms);
    if let Some(default) = rest.strip_prefix(":-") {
        let argument = forms.is_some_and(|f| f.get(name) == Some(&format!("${{{name}}}")));
        let d = expand(default, vars);
        if argument && !d.contains('}') {
            return format!("${{{name}:-{d}}}");
        }
        return if set_non_empty {
            this()
        } else {
            branch(default)
        };
    }
    if let Some(default) = rest.strip_prefix('-') {
        return if value.is_some() {
            this()
        } else {
            branch(default)
        };
    }
    if let Some(alt) = rest.strip_prefix(":+") {
        return if set_non_empty {
            branch(alt)
        } else {
            String::new()
        };
    }
    if let Some(alt) = rest.strip_prefix('+') {
        return if value.is_some() {
            branch(alt)
        } else {
            String::new()
        };
    }
    this()
}

/// `KEY=VALUE KEY2="VALUE 2"` (ENV, LABEL, ARG) or the legacy `ENV KEY VALUE`: the pairs, quotes
/// removed; a bare `NAME` (ARG) has no value.
pub(super) fn pairs(s: &str) -> Vec<(String, Option<String>)> {
    let words = super::shell::words(s);
    let legacy = words.first().is_some_and(|w| !w.contains('=')) && words.len() > 1;
    if legacy {
        // ENV KEY VALUE...: everything after the first word is the value.
        let first = &words[0];
        let rest = s.trim_start()[first.len()..].trim().to_string();
        return vec![(first.clone(), Some(unquote(&rest)))];
    }
    words
        .into_iter()
        .map(|w| match w.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (w, None),
        })
        .collect()
}

fn unquote(s: &str) -> String {
    let t = s.trim();
    for q in ['"', '\''] {
        if t.len() >= 2 && t.starts_with(q) && t.ends_with(q) {
            return t[1..t.len() - 1].to_string();
        }
    }
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_the_forms_docker_takes() {
        let mut v = Vars::new();
        v.insert("A".into(), "1".into());
        v.insert("E".into(), String::new());
        assert_eq!(expand("x$A-${A}", &v), "x1-1");
        assert_eq!(expand("${B:-two}/${A:-no}", &v), "two/1");
        assert_eq!(expand("${E:-d}|${E-d}", &v), "d|");
        assert_eq!(expand("${A:+yes}${B:+no}", &v), "yes");
        assert_eq!(expand("\\$A $ 5$", &v), "$A $ 5$");
        assert_eq!(expand("$UNSET.", &v), ".");
    }

    #[test]
    fn recipe_forms_keep_the_arguments() {
        let mut v = Vars::new();
        let mut f = Vars::new();
        for (k, x) in [("VERSION", "1.0"), ("E", "")] {
            v.insert(k.into(), x.into());
            f.insert(k.into(), format!("${{{k}}}"));
        }
        v.insert("HOME_DIR".into(), "/home/$x".into());
        f.insert("HOME_DIR".into(), "/home/$$x".into());
        v.insert("PLAIN".into(), "a$b".into());
        let r = |s: &str| recipe_form(s, &v, &f);
        assert_eq!(r("v$VERSION-${VERSION}"), "v${VERSION}-${VERSION}");
        assert_eq!(r("${VERSION:-0.1}|${E:-d}"), "${VERSION:-0.1}|${E:-d}");
        assert_eq!(r("${VERSION:+yes}${E:+no}${E-d}"), "yes${E}");
        assert_eq!(r("$HOME_DIR/$PLAIN"), "/home/$$x/a$$b");
        assert_eq!(
            r("\\$VERSION costs $ 5 ${UNSET:-u}$UNSET."),
            "$$VERSION costs $$ 5 u."
        );
        assert_eq!(expand("${VERSION:-0.1}", &v), "1.0");
        let names = ["VERSION", "V"];
        assert_eq!(
            verbatim("echo $$ $VERSION ${V:+x} $VERSIONS $HOME '$V'", &names),
            "echo $$$ $$VERSION $${V:+x} $VERSIONS $HOME '$$V'"
        );
    }

    #[test]
    fn pairs_of_both_env_forms() {
        assert_eq!(
            pairs(r#"A=1 B="two words" C"#),
            vec![
                ("A".to_string(), Some("1".to_string())),
                ("B".to_string(), Some("two words".to_string())),
                ("C".to_string(), None)
            ]
        );
        assert_eq!(
            pairs("PATH /opt/bin:$PATH"),
            vec![("PATH".to_string(), Some("/opt/bin:$PATH".to_string()))]
        );
    }
}
