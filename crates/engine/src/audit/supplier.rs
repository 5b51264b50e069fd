//! The supplier of a locked input, for the SBOMs (SPDX `supplier`, CycloneDX `supplier`), as
//! its own files name it: a .deb's `Maintainer:` (its control file), a wheel's METADATA
//! `Maintainer`/`Maintainer-email`, else `Author`/`Author-email`. The SPDX form is
//! `Person: NAME (EMAIL)` or, for a name that says it is a group (a team, the maintainers of a
//! package, a project, a foundation), `Organization: NAME (EMAIL)`. Nothing is looked up.

/// The SPDX supplier of a name and an optional e-mail address.
fn spdx(name: &str, email: Option<&str>) -> Option<String> {
    let clean = |s: &str| -> String {
        s.chars()
            .filter(|c| !c.is_control() && !matches!(c, '(' | ')' | '<' | '>' | '"'))
            .collect::<String>()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let name = clean(name);
    let email = email
        .map(clean)
        .filter(|e| e.contains('@') && !e.contains(' '));
    let name = match (name.is_empty(), &email) {
        (false, _) => name,
        (true, Some(e)) => e.clone(),
        (true, None) => return None,
    };
    let lower = name.to_ascii_lowercase();
    let group = [
        "team",
        "maintainers",
        "project",
        "foundation",
        "developers",
        "group",
        "community",
        "contributors",
    ]
    .iter()
    .any(|w| {
        lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|t| t == *w)
    });
    let kind = if group { "Organization" } else { "Person" };
    Some(match email {
        Some(e) if e != name => format!("{kind}: {name} ({e})"),
        _ => format!("{kind}: {name}"),
    })
}

/// `Name <mail>` (the first of a comma-separated list, as Debian and the core metadata write
/// them): the name and the address.
fn split_address(field: &str) -> (String, Option<String>) {
    let first = first_entry(field);
    match first.split_once('<') {
        Some((name, rest)) => (
            name.trim().to_string(),
            Some(rest.split('>').next().unwrap_or("").trim().to_string()),
        ),
        None if first.contains('@') => (String::new(), Some(first.trim().to_string())),
        None => (first.trim().to_string(), None),
    }
}

/// The first entry of a comma-separated list of addresses (a comma inside quotes or `<>`
/// does not split).
fn first_entry(field: &str) -> &str {
    let (mut quoted, mut angle) = (false, false);
    for (i, c) in field.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '<' => angle = true,
            '>' => angle = false,
            ',' if !quoted && !angle => return &field[..i],
            _ => {}
        }
    }
    field
}

/// The value of the first `key:` line among `headers` (case-insensitive key).
fn field<'a>(headers: &'a str, key: &str) -> Option<&'a str> {
    headers.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim().eq_ignore_ascii_case(key) && !v.trim().is_empty()).then(|| v.trim())
    })
}

/// The supplier a .deb's control file names (`Maintainer:`).
pub fn of_control(control: &str) -> Option<String> {
    let (name, email) = split_address(field(control, "Maintainer")?);
    spdx(&name, email.as_deref())
}

/// The supplier a wheel's METADATA names: its maintainer, else its author.
pub fn of_metadata(text: &str) -> Option<String> {
    let headers = text.split("\n\n").next().unwrap_or("");
    ["Maintainer", "Author"].iter().find_map(|who| {
        let email = field(headers, &format!("{who}-email")).map(split_address);
        let name = field(headers, who).map(|n| first_entry(n).trim().to_string());
        match (name, email) {
            (Some(n), e) => spdx(&n, e.and_then(|(_, m)| m).as_deref()),
            (None, Some((n, m))) => spdx(&n, m.as_deref()),
            (None, None) => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supplier_of_debian_maintainers() {
        assert_eq!(
            of_control("Package: libc6\nMaintainer: GNU Libc Maintainers <debian-glibc@lists.debian.org>\n").as_deref(),
            Some("Organization: GNU Libc Maintainers (debian-glibc@lists.debian.org)")
        );
        assert_eq!(
            of_control("Maintainer: Matthias Klose <doko@debian.org>\n").as_deref(),
            Some("Person: Matthias Klose (doko@debian.org)")
        );
        assert_eq!(
            of_control("Maintainer: Debian Python Team <team+python@tracker.debian.org>\n")
                .as_deref(),
            Some("Organization: Debian Python Team (team+python@tracker.debian.org)")
        );
        assert_eq!(of_control("Package: x\n"), None);
    }

    #[test]
    fn supplier_of_wheel_metadata() {
        // numpy 2.x: only Maintainer-email, with a quoted name.
        assert_eq!(
            of_metadata("Name: numpy\nMaintainer-email: NumPy Developers <numpy-discussion@python.org>\n\nbody").as_deref(),
            Some("Organization: NumPy Developers (numpy-discussion@python.org)")
        );
        // requests: Author and Author-email.
        assert_eq!(
            of_metadata("Author: Kenneth Reitz\nAuthor-email: me@kennethreitz.org\n").as_deref(),
            Some("Person: Kenneth Reitz (me@kennethreitz.org)")
        );
        // A list: the first; quotes and a comma inside them.
        assert_eq!(
            of_metadata("Author-email: \"Doe, Jane\" <jane@example.org>, Bob <b@example.org>\n")
                .as_deref(),
            Some("Person: Doe, Jane (jane@example.org)")
        );
        assert_eq!(
            of_metadata("Author-email: only@example.org\n").as_deref(),
            Some("Person: only@example.org")
        );
        // Hostile: parentheses and control characters cannot break the SPDX form.
        assert_eq!(
            of_metadata("Author: x) Organization: (y\u{1b}[31m\n").as_deref(),
            Some("Person: x Organization: y[31m")
        );
        assert_eq!(of_metadata("Name: x\n\nAuthor: in the body\n"), None);
    }
}
