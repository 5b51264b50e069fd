//! Just enough of the shell to read a `RUN` line: words (quotes and backslashes removed) and
//! its `&&` / `;` / newline-separated parts. Anything cleverer (pipes, subshells, `||`) stays
//! inside one part, which then goes to a `[[step]]` as written.

/// The words of `s` as `sh` would split them (no expansion): quotes removed, `\x` is `x`,
/// a backslash-newline joins lines.
pub(super) fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                cur.push(e);
                            }
                        }
                        _ => cur.push(d),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(e) => {
                    in_word = true;
                    cur.push(e);
                }
            },
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// The parts of a shell line separated by `&&`, `;` or a newline outside quotes (a
/// backslash-newline is a continuation, not a separator). Each part is trimmed; empty ones
/// are left out.
pub(super) fn parts(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    let mut quote: Option<char> = None;
    // Parentheses and braces keep a subshell or group whole.
    let mut depth = 0usize;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            cur.push(c);
            if c == '\\' && q == '"' {
                if let Some(e) = chars.next() {
                    cur.push(e);
                }
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                cur.push(c);
            }
            '\\' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                    cur.push(' ');
                } else {
                    cur.push(c);
                    if let Some(e) = chars.next() {
                        cur.push(e);
                    }
                }
            }
            '(' | '{' => {
                depth += 1;
                cur.push(c);
            }
            ')' | '}' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            '&' if depth == 0 && chars.peek() == Some(&'&') => {
                chars.next();
                push_part(&mut out, &mut cur);
            }
            ';' | '\n' if depth == 0 => push_part(&mut out, &mut cur),
            c => cur.push(c),
        }
    }
    push_part(&mut out, &mut cur);
    out
}

fn push_part(out: &mut Vec<String>, cur: &mut String) {
    let t = cur.split_whitespace().collect::<Vec<_>>().join(" ");
    if !t.is_empty() && !t.starts_with('#') {
        out.push(t);
    }
    cur.clear();
}

/// Whether a part is a plain command: no pipe, redirection, `||`, substitution or glob
/// that would make its words mean something other than what they say.
pub(super) fn is_plain(part: &str) -> bool {
    let mut quote: Option<char> = None;
    for c in part.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '|' | '>' | '<' | '`' | '(' | ')') => return false,
            (None, _) => {}
        }
    }
    !part.contains("$(")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_quotes() {
        assert_eq!(
            words(r#"pip install "numpy<2" 'a b' c\ d"#),
            ["pip", "install", "numpy<2", "a b", "c d"]
        );
    }

    #[test]
    fn parts_split_outside_quotes() {
        assert_eq!(
            parts("apt-get update && apt-get install -y \\\n  curl; echo 'a && b'\n(cd x && make)"),
            [
                "apt-get update",
                "apt-get install -y curl",
                "echo 'a && b'",
                "(cd x && make)"
            ]
        );
    }
}
