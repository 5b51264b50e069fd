//! Helpers for messages about TOML input files (recipes, locks, pylock.toml): where in the file
//! a problem is (1-based line and column), and which known name a misspelt one was meant to be;
//! and [`chain`], an error with its causes as one line.

use std::ops::Range;

/// An error and each of its causes once, joined by ": " (each level's message says only its own
/// context, so the whole chain is what a report or a JSON document needs).
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// 1-based line and column (counted in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

/// Where a TOML syntax error is, as a person reads it: the line and column of `span`'s start,
/// except where the parser points past the problem.
/// - "expected `,`" (an array or inline table not closed, a missing comma): the parser points
///   at the next token, which may be lines further down after blank and comment lines; the
///   problem is right after the last value written, so that place is given.
/// - A multi-line string never closed: the parser points at the end of the file; the place
///   given is where the string opens.
pub fn syntax_place(text: &str, span: Option<Range<usize>>, message: &str) -> (usize, usize) {
    let Some(span) = span else {
        return (1, 1);
    };
    let start = span.start.min(text.len());
    if message.starts_with("invalid multi-line") {
        let before = text.get(..start).unwrap_or(text);
        let opener = ["'''", "\"\"\""]
            .iter()
            .filter_map(|d| before.rfind(d))
            .max();
        if let Some(o) = opener {
            return line_col(text, o);
        }
    }
    if message.contains("expected") {
        if let Some(end) = end_of_previous_content(text, start) {
            return line_col(text, end);
        }
    }
    line_col(text, start)
}

/// When only white space, line breaks and comment lines stand between the start of a line and
/// `offset`, and at least one line break: the byte offset just after the last content before
/// them (a comment at its line's end left out). `None` otherwise.
fn end_of_previous_content(text: &str, offset: usize) -> Option<usize> {
    let before = text.get(..offset)?;
    let line_start = before.rfind('\n')? + 1;
    if !before[line_start..].trim().is_empty() {
        return None;
    }
    let mut end = line_start - 1;
    loop {
        let start = text[..end].rfind('\n').map_or(0, |i| i + 1);
        let line = &text[start..end];
        let content = without_comment(line).trim_end();
        if !content.trim_start().is_empty() {
            return Some(start + content.len());
        }
        if start == 0 {
            return None;
        }
        end = start - 1;
    }
}

/// A line without its `# comment`: the first `#` outside a quoted string.
fn without_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return &line[..i],
            None => {}
        }
    }
    line
}

/// Joins a multi-line message (from the TOML parser) into one line.
pub fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The candidate closest to `word` by edit distance (Levenshtein), when it is close enough to
/// be a misspelling: fewer edits than half the longer name's length (so `ab` does not suggest
/// `cd`), and at most 2 edits or a third of that length (`sorce` suggests `src`, `pakages`
/// `packages`). Ties go to the earlier candidate.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c == word {
            continue;
        }
        let d = strsim::levenshtein(word, c);
        let longer = word.chars().count().max(c.chars().count());
        if d * 2 < longer && (d <= 2 || d * 3 <= longer) && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_suggested_far_ones_not() {
        assert_eq!(closest("sorce", ["name", "src", "dest"]), Some("src"));
        assert_eq!(closest("pakages", ["source", "packages"]), Some("packages"));
        assert_eq!(closest("apx", ["root", "app"]), Some("app"));
        assert_eq!(closest("ab", ["cd"]), None);
        assert_eq!(closest("zzzzzz", ["name", "src"]), None);
    }

    #[test]
    fn a_missing_comma_is_placed_after_the_last_value() {
        let text = "a = 1\nb = [\"x\"  # note\n\n# more\nc = 2\n";
        let next = text.find("c =").unwrap();
        assert_eq!(
            syntax_place(text, Some(next..next + 1), "missing comma, expected `,`"),
            (2, 9)
        );
        assert_eq!(
            syntax_place(text, Some(next..next + 1), "duplicate key"),
            (5, 1)
        );
        let text = "a = 1\nb = '''x\nc = 2\n";
        assert_eq!(
            syntax_place(
                text,
                Some(text.len()..text.len()),
                "invalid multi-line literal string"
            ),
            (2, 5)
        );
    }
}
