//! A maintainer script's text read as lines, never run: each line is shell structure (tests,
//! `case` patterns, assignments, messages, calls of the script's own functions), one or more
//! recognized actions (the commands debhelper's snippets and Debian's packages call:
//! `ldconfig`, `deb-systemd-helper`, `fc-cache`, `mkdir`…), or unrecognized. Heredoc bodies
//! belong to the line that opens them. [`scan`] groups the lines by action, in the order each
//! action first appears; unrecognized lines are kept as written, never dropped.

use std::collections::{BTreeMap, BTreeSet};

/// The action of lines ocibuild does not recognize.
pub(super) const UNRECOGNIZED: &str = "unrecognized";

/// One action of a script and the lines (trimmed, continuations joined) that perform it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Found {
    pub action: &'static str,
    pub lines: Vec<String>,
    /// The literal absolute paths the lines name as targets (for `mkdir` and file writes),
    /// with the script's literal variables (`catdir=/var/cache/man`) expanded.
    pub paths: Vec<String>,
}

/// Commands that compute, test or print and change nothing on disk (unless redirected).
const STRUCTURAL: &[&str] = &[
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "case",
    "esac",
    "for",
    "while",
    "until",
    "do",
    "done",
    "in",
    "{",
    "}",
    "(",
    ")",
    ";;",
    "exit",
    "return",
    "set",
    "local",
    "shift",
    "true",
    "false",
    ":",
    "break",
    "continue",
    "[",
    "[[",
    "]",
    "]]",
    "test",
    "echo",
    "printf",
    "which",
    "command",
    "type",
    "export",
    "unset",
    "trap",
    "read",
    "wait",
    "basename",
    "dirname",
    "sed",
    "grep",
    "egrep",
    "fgrep",
    "awk",
    "mawk",
    "cut",
    "tr",
    "head",
    "tail",
    "sort",
    "uniq",
    "find",
    "ls",
    "cat",
    "expr",
    "readlink",
    "realpath",
    "stat",
    "getent",
    "id",
    "whoami",
    "dpkg",
    "dpkg-query",
    "dpkg-architecture",
    "uname",
    "seq",
    "sleep",
    "wc",
    "printenv",
    "umask",
    "ischroot",
    "date",
    "ucfq",
    "xargs",
    "warning",
    "error",
    "setup_colors",
    "cd",
    "pwd",
    "let",
    "declare",
    "readonly",
    "getopts",
    "env",
    "cmp",
    "diff",
    "[ ",
    "]",
];

/// Commands that run the command they are given.
const WRAPPERS: &[&str] = &[
    "setpriv", "runuser", "su", "nice", "ionice", "exec", "chroot", "timeout", "nohup", "env",
];

/// The action of a command word (its basename), given its arguments.
fn action_of(cmd: &str, args: &[String]) -> Option<&'static str> {
    let has = |w: &str| args.iter().any(|a| a == w);
    let a = match cmd {
        "update-alternatives" => "update-alternatives",
        "ldconfig" | "ldconfig.real" => "ldconfig",
        "deb-systemd-helper" | "deb-systemd-invoke" | "systemctl" | "update-rc.d"
        | "invoke-rc.d" | "service" | "start-stop-daemon" | "initctl" => "services",
        "systemd-tmpfiles" => "systemd-tmpfiles",
        "adduser" | "useradd" | "addgroup" | "groupadd" | "usermod" | "groupmod"
        | "systemd-sysusers" | "gpasswd" | "chage" | "chpasswd" => "accounts",
        "dpkg-trigger" => "dpkg-trigger",
        "py3compile" | "pycompile" | "py3clean" | "pyclean" | "pypy3compile" | "pypy3clean" => {
            "python-bytecompile"
        }
        "update-mime-database" => "update-mime-database",
        "fc-cache" => "fc-cache",
        "glib-compile-schemas" => "glib-compile-schemas",
        "gio-querymodules" => "gio-querymodules",
        "update-ca-certificates" => "update-ca-certificates",
        "dpkg-maintscript-helper" => "dpkg-maintscript-helper",
        "ucf" | "ucfr" => "ucf",
        "." | "source" if args.iter().any(|a| a.contains("debconf")) => "debconf",
        // dpkg's shell library: functions only (`warning`, `error`, `setup_colors`).
        "." | "source" if args.iter().any(|a| a.starts_with("/usr/share/dpkg/sh/")) => "",
        "dpkg-divert" if has("--list") || has("--truename") || has("--listpackage") => "",
        "dpkg-divert" => "dpkg-divert",
        "dpkg-statoverride" if has("--list") => "",
        "dpkg-statoverride" => "dpkg-statoverride",
        "mandb" => "mandb",
        "apparmor_parser" | "aa-enabled" | "aa-status" | "update-binfmts" | "depmod"
        | "udevadm" | "update-initramfs" | "update-grub" | "modprobe" | "sysctl" => "host-only",
        "update-catalog" | "update-xmlcatalog" | "install-docs" => "update-catalog",
        "install-info" => "install-info",
        "gtk-update-icon-cache" | "update-icon-caches" => "gtk-update-icon-cache",
        "update-desktop-database" => "update-desktop-database",
        "setcap" => "setcap",
        "locale-gen" | "update-locale" | "localedef" => "locale-gen",
        "pam-auth-update" => "pam-auth-update",
        "update-mime" => "update-mime",
        "update-fonts-dir" | "update-fonts-scale" | "update-fonts-alias" | "mkfontdir"
        | "mkfontscale" => "update-fonts-dir",
        "mkdir" => "mkdir",
        "install" if has("-d") || has("--directory") => "mkdir",
        "rm" | "rmdir" | "unlink" => "remove",
        "chown" | "chmod" | "chgrp" | "restorecon" | "chcon" => "owner-mode",
        "ln" | "cp" | "mv" | "touch" | "install" | "tee" | "mktemp" => "files",
        "sed" if args.iter().any(|a| a.starts_with("-i")) => "files",
        _ if cmd.starts_with("gdk-pixbuf-query-loaders") => "gdk-pixbuf-query-loaders",
        _ if cmd.starts_with("db_") => "debconf",
        _ if cmd.starts_with("python")
            && args
                .iter()
                .any(|a| a.contains("py_compile") || a.contains("compileall")) =>
        {
            "python-bytecompile"
        }
        _ if STRUCTURAL.contains(&cmd) => "",
        _ => return None,
    };
    Some(a)
}

/// Splits a line into commands at `;`, `&&`, `||`, `|`, `$(` and backticks outside quotes
/// (a substitution inside double quotes stays with its command: `[ -x "$(command -v x)" ]`).
fn segments(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let split = match (quote, c, next) {
            (Some(q), _, _) => {
                if c == q {
                    quote = None;
                }
                false
            }
            (None, '\\', Some(n)) => {
                chars.next();
                if let Some(last) = out.last_mut() {
                    last.push(c);
                    last.push(n);
                }
                continue;
            }
            (None, '"' | '\'', _) => {
                quote = Some(c);
                false
            }
            (None, '&', Some('&')) | (None, '|', Some('|')) | (None, '$', Some('(')) => {
                chars.next();
                true
            }
            (None, ';' | '|' | '`', _) => true,
            _ => false,
        };
        if split {
            out.push(String::new());
        } else if let Some(last) = out.last_mut() {
            last.push(c);
        }
    }
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// A command's words: split at whitespace outside quotes, the quotes removed.
fn words(seg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in seg.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                started = true;
            }
            None if c.is_whitespace() => {
                if started || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                started = false;
            }
            None => cur.push(c),
        }
    }
    if started || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A `case` pattern opening a line (`configure)`, `abort-upgrade|abort-remove)`, `Y*|y*)`),
/// removed; the line's remaining text.
fn strip_pattern(line: &str) -> &str {
    let Some(end) = line.find(')') else {
        return line;
    };
    let pat = line[..end].strip_prefix('(').unwrap_or(&line[..end]);
    let ok = !pat.is_empty()
        && !pat.contains(['(', ' ', '\t', '='])
        && !line[end + 1..].starts_with(['(', ')']);
    if ok {
        line[end + 1..].trim_start()
    } else {
        line
    }
}

fn unquote(w: &str) -> String {
    w.trim_matches(|c| c == '"' || c == '\'').to_string()
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// What one command (a segment) is: `Some("")` structure, `Some(action)`, `None` unknown.
fn classify(seg: &str, functions: &BTreeSet<String>) -> Option<&'static str> {
    let mut words: Vec<String> = words(seg);
    if words
        .first()
        .is_some_and(|f| f.contains("()") || (words.get(1).is_some_and(|w| w.starts_with("()"))))
    {
        return Some("");
    }
    let redirect = writes_file(&words).is_some();
    let mut stripped = false;
    loop {
        let Some(first) = words.first() else {
            return Some(if redirect { "files" } else { "" });
        };
        let f = first.as_str();
        let keyword = matches!(
            f,
            "if" | "elif" | "while" | "until" | "then" | "do" | "else" | "!" | "{" | "(" | "time"
        );
        // A `case` pattern (`configure)`, `*)`, `abort-upgrade|abort-remove)`).
        let pattern = f.ends_with(')') && !f.contains('(');
        // A redirection left of a split (`cmd $(find …) > FILE`): its command is classified.
        // (`done < IN > OUT` writes OUT.)
        if f.starts_with(['>', '<']) || f.starts_with("2>") || f.starts_with("1>") {
            return Some(if redirect && stripped { "files" } else { "" });
        }
        if keyword || pattern || is_assignment(f) {
            stripped = true;
            words.remove(0);
            continue;
        }
        if f.starts_with('(') && f.len() > 1 {
            words[0] = f.trim_start_matches('(').to_string();
            continue;
        }
        break;
    }
    let cmd_word = words[0].trim_end_matches(')').to_string();
    let cmd = cmd_word.rsplit('/').next().unwrap_or(&cmd_word).to_string();
    let args = &words[1..];
    let hook = seg.contains("rtupdate") || seg.contains("rtinstall") || seg.contains("rtremove");
    if hook && cmd != "for" && !STRUCTURAL.contains(&cmd.as_str()) {
        return Some("python-rtupdate");
    }
    if functions.contains(&cmd) {
        return Some("");
    }
    if let Some(name) = cmd.strip_suffix("()") {
        if !name.is_empty() {
            return Some("");
        }
    }
    if args.first().is_some_and(|a| a == "()" || a == "(){") {
        return Some("");
    }
    if WRAPPERS.contains(&cmd.as_str()) {
        for (i, w) in args.iter().enumerate() {
            let base = w.rsplit('/').next().unwrap_or(w);
            if let Some(a) = action_of(base, &args[i + 1..]).filter(|a| !a.is_empty()) {
                return Some(a);
            }
        }
    }
    let action = action_of(&cmd, args)?;
    if action.is_empty() && writes_file(&words).is_some() {
        return Some("files");
    }
    Some(action)
}

/// The file a command's output is redirected to (not `/dev/…`, not a descriptor).
fn writes_file(words: &[String]) -> Option<String> {
    for (i, w) in words.iter().enumerate() {
        let w = w.trim_start_matches(|c: char| c.is_ascii_digit());
        let Some(rest) = w.strip_prefix('>') else {
            continue;
        };
        let rest = rest.trim_start_matches('>');
        let target = if rest.is_empty() {
            words.get(i + 1).cloned().unwrap_or_default()
        } else {
            rest.to_string()
        };
        if !target.starts_with('&') && !target.starts_with("/dev/") && !target.is_empty() {
            return Some(target);
        }
    }
    None
}

/// The heredoc terminator a line opens (`<<EOF`, `<<-EOF`, `<< 'EOF'`), if any.
fn heredoc(line: &str) -> Option<String> {
    let i = line.find("<<")?;
    let rest = &line[i + 2..];
    if rest.starts_with('<') {
        return None;
    }
    let rest = rest.trim_start_matches('-').trim_start();
    let word: String = rest
        .split_whitespace()
        .next()?
        .trim_matches(|c| c == '\'' || c == '"' || c == '\\')
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// Expands `$NAME` and `${NAME}` from the script's literal assignments; `None` when a variable
/// is left.
fn expand(word: &str, vars: &BTreeMap<String, String>) -> Option<String> {
    let mut w = word.to_string();
    for (k, v) in vars {
        w = w
            .replace(&format!("${{{k}}}"), v)
            .replace(&format!("${k}"), v);
    }
    (!w.contains(['$', '`', '*', '?'])).then_some(w)
}

/// The script's lines grouped by action (see the module's documentation).
pub(super) fn scan(script: &str) -> Vec<Found> {
    let joined = script.replace("\\\r\n", " ").replace("\\\n", " ");
    let lines: Vec<&str> = joined.lines().collect();
    let mut functions = BTreeSet::new();
    // dpkg runs the scripts with DPKG_ROOT empty (the root being configured is `/`).
    let mut vars = BTreeMap::from([("DPKG_ROOT".to_string(), String::new())]);
    for l in &lines {
        let l = l.trim();
        if let Some((name, _)) = l.split_once("()").or_else(|| {
            l.strip_prefix("function ")
                .map(|r| (r.split_whitespace().next().unwrap_or(""), ""))
        }) {
            let name = name.trim();
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                functions.insert(name.to_string());
            }
        }
        if let Some((k, v)) = l.split_once('=') {
            let v = unquote(v);
            if is_assignment(l)
                && !k.contains(' ')
                && !v.contains(['$', '`', '(', ' ', ';'])
                && v.starts_with('/')
            {
                vars.insert(k.to_string(), v);
            }
        }
    }
    let mut out: Vec<Found> = Vec::new();
    let mut push = |action: &'static str, line: &str, paths: Vec<String>| {
        if let Some(f) = out.iter_mut().find(|f| f.action == action) {
            if !f.lines.iter().any(|l| l == line) {
                f.lines.push(line.to_string());
            }
            for p in paths {
                if !f.paths.contains(&p) {
                    f.paths.push(p);
                }
            }
        } else {
            out.push(Found {
                action,
                lines: vec![line.to_string()],
                paths,
            });
        }
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        i += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(end) = heredoc(line) {
            while i < lines.len() && lines[i].trim() != end {
                i += 1;
            }
            i += 1;
        }
        let mut actions: Vec<&'static str> = Vec::new();
        let mut unknown = false;
        for seg in segments(strip_pattern(line)) {
            match classify(&seg, &functions) {
                Some("") => {}
                Some(a) => {
                    if !actions.contains(&a) {
                        actions.push(a);
                    }
                }
                None => unknown = true,
            }
        }
        // A tool's own output (`gdk-pixbuf-query-loaders … > loaders.cache`) is the tool's
        // effect, not a separate file write.
        let tool = actions
            .iter()
            .any(|a| !matches!(*a, "files" | "mkdir" | "remove" | "owner-mode" | "debconf"));
        if tool {
            actions.retain(|a| *a != "files");
        }
        for a in &actions {
            let paths = match *a {
                "mkdir" | "files" => targets(line, a, &vars),
                _ => Vec::new(),
            };
            push(a, line, paths);
        }
        if unknown {
            push(UNRECOGNIZED, line, Vec::new());
        }
    }
    out
}

/// The literal absolute paths a `mkdir`/`install -d` line makes, or that a file-writing line
/// writes (its last absolute argument or its redirection target).
fn targets(line: &str, action: &str, vars: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for seg in segments(line) {
        let words: Vec<String> = words(&seg);
        let Some(pos) = words.iter().position(|w| {
            let base = w.rsplit('/').next().unwrap_or(w);
            if action == "mkdir" {
                base == "mkdir" || base == "install"
            } else {
                action_of(base, &[]) == Some("files") || writes_file(&words).is_some()
            }
        }) else {
            continue;
        };
        let args = &words[pos + 1..];
        let opt_arg = ["-m", "--mode", "-o", "--owner", "-g", "--group"];
        let mut picked = Vec::new();
        let mut skip = false;
        for a in args {
            if skip {
                skip = false;
                continue;
            }
            if opt_arg.contains(&a.as_str()) {
                skip = true;
                continue;
            }
            if matches!(a.as_str(), ">" | ">>" | "2>" | "1>" | "&>" | "2>>") {
                skip = true;
                if action != "mkdir" {
                    break;
                }
                continue;
            }
            if a.starts_with('-') || a.starts_with('>') || a.starts_with("2>") || a == "1>" {
                if action != "mkdir" && a.starts_with('>') {
                    break;
                }
                continue;
            }
            match expand(a, vars) {
                Some(p) if p.starts_with('/') => picked.push(p),
                Some(_) => {}
                // A path computed when the script runs.
                None => picked.push(String::new()),
            }
        }
        if action == "mkdir" && picked.is_empty() {
            picked.push(String::new());
        }
        if action == "files" {
            if let Some(t) = writes_file(&words) {
                picked = vec![expand(&t, vars).unwrap_or_default()];
            } else {
                picked = picked.last().cloned().into_iter().collect();
            }
        }
        out.extend(picked);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actions(script: &str) -> Vec<(&'static str, Vec<String>)> {
        scan(script)
            .into_iter()
            .map(|f| (f.action, f.lines))
            .collect()
    }

    #[test]
    fn debhelper_style_postinst() {
        // Written for this test in the shape of debhelper's autoscripts (systemd, tmpfiles,
        // python3, usrlocal), not copied from a package.
        let script = r#"#!/bin/sh
set -e
catdir=/var/cache/demo
make_conf() {
    cat > /etc/demo.conf <<-EOF
	answer = 42
	rm -rf /
	EOF
}
case "$1" in
    configure|abort-upgrade)
        [ -d $catdir ] || install -d -o root -g root -m 0755 $catdir
        [ -f /etc/demo.conf ] || make_conf
        if [ -x "$(command -v systemd-tmpfiles)" ]; then
            systemd-tmpfiles ${DPKG_ROOT:+--root="$DPKG_ROOT"} --create demo.conf || true
        fi
        deb-systemd-helper unmask 'demo.service' >/dev/null || true
        if deb-systemd-helper --quiet was-enabled 'demo.service'; then
            deb-systemd-helper enable 'demo.service' >/dev/null || true
        fi
        if which py3compile >/dev/null 2>&1; then
            py3compile -p python3-demo
        fi
        echo "configured; all good | done"
        frobnicate --all /etc/demo
    ;;
    abort-remove|abort-deconfigure)
    ;;
    *)
        echo "postinst called with unknown argument \`$1'" >&2
        exit 1
    ;;
esac
#DEBHELPER#
exit 0
"#;
        let found = scan(script);
        let names: Vec<&str> = found.iter().map(|f| f.action).collect();
        assert_eq!(
            names,
            [
                "files",
                "mkdir",
                "systemd-tmpfiles",
                "services",
                "python-bytecompile",
                UNRECOGNIZED
            ],
            "{found:#?}"
        );
        // The heredoc's body is the `cat >` line's, not a removal; its target is literal.
        assert_eq!(found[0].paths, ["/etc/demo.conf"]);
        // `install -d`'s options are skipped and `$catdir` expanded.
        assert_eq!(found[1].paths, ["/var/cache/demo"]);
        assert_eq!(found[3].lines.len(), 3);
        // The one command ocibuild does not know is kept as written; the messages with `;`
        // and `|` in their quotes, the case patterns and the function call are structure.
        assert_eq!(found[5].lines, ["frobnicate --all /etc/demo"]);
    }

    #[test]
    fn tools_wrappers_and_redirections() {
        let got = actions(
            "LOADERS=/usr/lib/x86_64-linux-gnu/gdk-pixbuf-2.0/2.10.0/loaders\n\
             /usr/lib/x86_64-linux-gnu/gdk-pixbuf-2.0/gdk-pixbuf-query-loaders $(find $LOADERS -name *.so | LC_ALL=C sort) > $LOADERS.cache || true\n\
             setpriv --reuid man -- /usr/bin/mandb -pq || true\n\
             \"/usr/lib/x86_64-linux-gnu/glib-2.0/glib-compile-schemas\" /usr/share/glib-2.0/schemas || true\n\
             /usr/bin/python3.13 -E -S /usr/lib/python3.13/py_compile.py $files\n\
             done < /etc/a.conf > /etc/a.conf.new\n\
             . /usr/share/debconf/confmodule\n\
             db_get demo/question\n\
             dpkg-maintscript-helper rm_conffile /etc/old.conf 1.0~ -- \"$@\"\n\
             dpkg-statoverride --list /usr/bin/x >/dev/null || chmod 4755 /usr/bin/x\n",
        );
        let names: Vec<&str> = got.iter().map(|g| g.0).collect();
        assert_eq!(
            names,
            [
                "gdk-pixbuf-query-loaders",
                "mandb",
                "glib-compile-schemas",
                "python-bytecompile",
                "files",
                "debconf",
                "dpkg-maintscript-helper",
                "owner-mode"
            ],
            "{got:#?}"
        );
    }

    #[test]
    fn computed_paths_and_structure_only() {
        let f = scan("mkdir -p \"$DIR/sub\" 2>/dev/null\nmkdir -p \"$DPKG_ROOT/usr/lib64\"\n");
        assert_eq!(f[0].paths, ["", "/usr/lib64"], "{f:?}");
        assert!(
            scan("#!/bin/sh\nset -e\nif [ \"$1\" = configure ]; then\n  :\nfi\nexit 0\n")
                .is_empty()
        );
    }
}
