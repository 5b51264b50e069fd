//! deb822 control paragraphs (Packages, Release, dpkg status, a .deb's `control`) and the
//! dependency fields (`Depends`, `Pre-Depends`, `Provides`).

use std::fmt;

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
    #[error("dependency `{text}`: {reason}")]
    Dependency { text: String, reason: &'static str },
    #[error("dependency `{text}`: {source}")]
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
/// with `#` are comments.
pub fn parse_paragraphs(text: &str) -> Result<Vec<Paragraph>, ControlError> {
    let mut out = Vec::new();
    let mut cur = Paragraph::default();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim().is_empty() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        if line.starts_with(' ') || line.starts_with('\t') {
            let Some((_, v)) = cur.fields.last_mut() else {
                return Err(ControlError::Continuation { line: line_no });
            };
            v.push('\n');
            v.push_str(line.trim_end());
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(ControlError::NotAField {
                line: line_no,
                text: line.to_string(),
            });
        };
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(ControlError::NotAField {
                line: line_no,
                text: line.to_string(),
            });
        }
        if cur.get(name).is_some() {
            return Err(ControlError::Duplicate {
                line: line_no,
                field: name.to_string(),
            });
        }
        cur.fields
            .push((name.to_string(), value.trim().to_string()));
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    Ok(out)
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
