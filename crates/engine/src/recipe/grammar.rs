//! Value grammars: pure checks of single values (names, tags, paths, ports, signals, ignore
//! patterns). Errors are messages without context; `validate` adds which key and where.

use super::values::PortValue;

/// The longest file name a Linux file system takes (NAME_MAX).
pub(super) const MAX_NAME: usize = 255;
/// A path must be shorter than this (PATH_MAX, with its NUL).
pub(super) const MAX_PATH: usize = 4096;

/// Normalizes an absolute path in the image: no `.` components, no empty components, no trailing
/// `/` (except the root itself). `..` is an error.
pub(super) fn normalize_abs(p: &str) -> std::result::Result<String, String> {
    if !p.starts_with('/') {
        return Err("expected an absolute path in the image (starting with `/`)".into());
    }
    if p.contains('\0') {
        return Err("must not contain NUL".into());
    }
    let mut parts = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => return Err("must not contain `..`".into()),
            c if c.starts_with(".wh.") => {
                return Err(format!(
                    "`{c}` is a whiteout name (a layer entry that deletes what the layers below                      have), not a path"
                ))
            }
            c if c.len() > MAX_NAME => {
                return Err(format!("a component is longer than {MAX_NAME} bytes"))
            }
            c => parts.push(c),
        }
    }
    let path = format!("/{}", parts.join("/"));
    if path.len() >= MAX_PATH {
        return Err(format!("longer than {} bytes", MAX_PATH - 1));
    }
    Ok(path)
}

/// `[a-z0-9][a-z0-9._-]*`
pub(super) fn is_layer_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`
pub(super) fn check_tag(s: &str) -> std::result::Result<(), String> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut chars = s.chars();
    let ok = matches!(chars.next(), Some(c) if word(c))
        && chars.all(|c| word(c) || c == '.' || c == '-')
        && s.len() <= 128;
    if ok {
        Ok(())
    } else {
        Err("expected 1 to 128 of `A-Z a-z 0-9 _ . -`, not starting with `.` or `-`".into())
    }
}

/// An OCI distribution repository name: `[host[:port]/]path`, path components lowercase
/// alphanumerics joined by `.`, `_`, `__` or runs of `-`.
pub(super) fn check_repository(s: &str) -> std::result::Result<(), String> {
    const EXPECTED: &str = "expected a repository like `app` or `example.com/team/app`";
    if s.is_empty() {
        return Err(format!("must not be empty; {EXPECTED}"));
    }
    if s.len() > 255 {
        return Err("longer than 255 characters".into());
    }
    if s.contains('@') {
        return Err(format!("must not contain a digest; {EXPECTED}"));
    }
    let (domain, path) = match s.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (Some(first), rest)
        }
        _ => (None, s),
    };
    if path.contains(':') {
        return Err("must not contain a tag; put it in `tag = \"...\"`".into());
    }
    if let Some(d) = domain {
        check_domain(d).map_err(|m| format!("invalid registry host `{d}`: {m}"))?;
    }
    for comp in path.split('/') {
        if comp.chars().any(|c| c.is_ascii_uppercase()) {
            return Err(format!("must be lowercase; {EXPECTED}"));
        }
        if !is_path_component(comp) {
            return Err(format!(
                "invalid path component `{comp}`: expected lowercase letters and digits, \
                 separated by `.`, `_`, `__` or `-`; {EXPECTED}"
            ));
        }
    }
    Ok(())
}

/// `alnum+ (sep alnum+)*` with sep = `.` | `_` | `__` | `-`+.
pub(super) fn is_path_component(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if s.is_empty() || !s.starts_with(alnum) || !s.ends_with(alnum) {
        return false;
    }
    let mut sep = String::new();
    for c in s.chars() {
        if alnum(c) {
            if !(sep.is_empty()
                || sep == "."
                || sep == "_"
                || sep == "__"
                || sep.chars().all(|c| c == '-'))
            {
                return false;
            }
            sep.clear();
        } else {
            sep.push(c);
        }
    }
    true
}

/// `host[:port]`, host being domain components or a bracketed IPv6 address.
pub(super) fn check_domain(d: &str) -> std::result::Result<(), String> {
    let (host, port) = if let Some(rest) = d.strip_prefix('[') {
        let (ip, after) = rest
            .split_once(']')
            .ok_or_else(|| "unclosed `[`".to_string())?;
        if ip.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("`{ip}` is not an IPv6 address"));
        }
        match after {
            "" => return Ok(()),
            a => match a.strip_prefix(':') {
                Some(p) => (None, Some(p)),
                None => return Err("expected `:port` after `]`".into()),
            },
        }
    } else {
        match d.rsplit_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(d), None),
        }
    };
    if let Some(h) = host {
        let comp_ok = |c: &str| {
            !c.is_empty()
                && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
                && !c.starts_with('-')
                && !c.ends_with('-')
        };
        if !h.split('.').all(comp_ok) {
            return Err("expected a host name like `example.com` or `localhost`".into());
        }
    }
    if let Some(p) = port {
        if !matches!(p.parse::<u32>(), Ok(1..=65535)) || !p.chars().all(|c| c.is_ascii_digit()) {
            return Err(format!("invalid port `{p}`, expected 1 to 65535"));
        }
    }
    Ok(())
}

/// `uid:gid`, both decimal, below 4294967295 (`(uid_t)-1` means "no change" to chown: an
/// extractor would leave the entry its own owner).
pub(super) fn parse_owner(s: &str) -> Option<(u32, u32)> {
    let (u, g) = s.split_once(':')?;
    let num = |x: &str| {
        if x.is_empty() || !x.chars().all(|c| c.is_ascii_digit()) {
            None
        } else {
            x.parse::<u32>().ok().filter(|n| *n != u32::MAX)
        }
    };
    Some((num(u)?, num(g)?))
}

/// `name`, `uid`, `name:group`, `uid:gid`: one or two non-empty parts, no whitespace.
pub(super) fn is_user(s: &str) -> bool {
    let part_ok =
        |p: &str| !p.is_empty() && !p.chars().any(|c| c.is_whitespace() || c.is_control());
    match s.split_once(':') {
        None => part_ok(s),
        Some((u, g)) => part_ok(u) && part_ok(g) && !g.contains(':'),
    }
}

/// `8080`, `"8080"`, `"53/udp"` → `"8080/tcp"`, `"53/udp"`. The message names the value.
pub(super) fn parse_port(v: &PortValue) -> std::result::Result<String, String> {
    const EXPECTED: &str =
        "expected `port[/tcp|udp|sctp]` with port 1 to 65535, like `8080` or `53/udp`";
    let (text, port, proto) = match v {
        PortValue::Int(n) => (n.to_string(), n.to_string(), "tcp".to_string()),
        PortValue::Str(s) => match s.split_once('/') {
            None => (s.clone(), s.clone(), "tcp".to_string()),
            Some((p, proto)) => (s.clone(), p.to_string(), proto.to_ascii_lowercase()),
        },
    };
    let n = if !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()) {
        port.parse::<u32>().ok().filter(|n| (1..=65535).contains(n))
    } else {
        None
    };
    match (n, proto.as_str()) {
        (Some(n), "tcp" | "udp" | "sctp") => Ok(format!("{n}/{proto}")),
        _ => Err(format!("invalid exposed port `{text}`: {EXPECTED}")),
    }
}

const SIGNALS: &[&str] = &[
    "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "IOT", "BUS", "FPE", "KILL", "USR1", "SEGV",
    "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU",
    "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "POLL", "PWR", "SYS", "RTMIN", "RTMAX",
];

/// A Linux signal: `SIGTERM`, `TERM`, `SIGRTMIN+3`, `RTMAX-1` or a number 1 to 64.
pub(super) fn check_signal(s: &str) -> std::result::Result<(), String> {
    const EXPECTED: &str =
        "expected a signal name like `SIGTERM` or `SIGRTMIN+3`, or a number 1 to 64";
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
        return match s.parse::<u32>() {
            Ok(1..=64) => Ok(()),
            _ => Err(EXPECTED.into()),
        };
    }
    let name = s.strip_prefix("SIG").unwrap_or(s);
    let (base, offset) = match name.find(['+', '-']) {
        Some(i) => (&name[..i], Some(&name[i..])),
        None => (name, None),
    };
    let ok = match offset {
        None => SIGNALS.contains(&base),
        Some(off) => {
            let n = &off[1..];
            let plus = off.starts_with('+');
            ((base == "RTMIN" && plus) || (base == "RTMAX" && !plus))
                && !n.is_empty()
                && n.chars().all(|c| c.is_ascii_digit())
                && matches!(n.parse::<u32>(), Ok(1..=30))
        }
    };
    if ok {
        Ok(())
    } else {
        Err(EXPECTED.into())
    }
}

/// Checks a .dockerignore pattern the way Go's `filepath.Match` would reject it: an optional
/// leading `!`, then a non-empty pattern with closed, non-empty `[...]` classes and no dangling
/// `\`.
pub(super) fn check_pattern(p: &str) -> std::result::Result<(), String> {
    let body = p.strip_prefix('!').unwrap_or(p);
    if body.trim().is_empty() {
        return Err(if p.starts_with('!') {
            "`!` must be followed by a pattern".into()
        } else {
            "empty pattern".into()
        });
    }
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                if i + 1 >= chars.len() {
                    return Err("ends with an unescaped `\\`".into());
                }
                i += 2;
            }
            '[' => {
                i += 1;
                if chars.get(i) == Some(&'^') {
                    i += 1;
                }
                let mut ranges = 0;
                loop {
                    match chars.get(i) {
                        None => return Err("unclosed `[`".into()),
                        Some(']') if ranges > 0 => {
                            i += 1;
                            break;
                        }
                        Some(_) => {
                            i = class_char(&chars, i)?;
                            if chars.get(i) == Some(&'-') {
                                i = class_char(&chars, i + 1)?;
                            }
                            ranges += 1;
                        }
                    }
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// One (possibly escaped) character of a `[...]` class; returns the index after it.
pub(super) fn class_char(chars: &[char], mut i: usize) -> std::result::Result<usize, String> {
    match chars.get(i) {
        None => return Err("unclosed `[`".into()),
        Some('-' | ']') => {
            return Err("`-` or `]` out of place in `[...]` (escape it with `\\`)".into())
        }
        Some('\\') => i += 1,
        Some(_) => {}
    }
    if i >= chars.len() {
        return Err("unclosed `[`".into());
    }
    i += 1;
    if i >= chars.len() {
        return Err("unclosed `[`".into());
    }
    Ok(i)
}
