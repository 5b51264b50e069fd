//! A .deb's maintainer scripts, read and never run: which ones it has, the
//! `update-alternatives --install` calls in its postinst (read statically, as
//! `dh_installalternatives` writes them), and base-passwd's master files (what its postinst
//! copies to `/etc/passwd` and `/etc/group`). `rootfs` turns these into files.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::deb::{ar_members, io_err, member_files, Member};
use super::AptError;

/// The most bytes of a member's decompressed tar read: control archives are kilobytes, and
/// base-passwd's data archive is too.
const MAX_READ: u64 = 64 << 20;

/// The control-archive members dpkg runs (or reads, for `triggers`).
pub const SCRIPT_NAMES: [&str; 6] = [
    "preinst", "postinst", "prerm", "postrm", "config", "triggers",
];

/// What one package's scripts would have done, as far as ocibuild reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DebScripts {
    pub package: String,
    /// The scripts it has, of [`SCRIPT_NAMES`], in that order.
    pub scripts: Vec<String>,
    /// Its postinst's `update-alternatives --install` calls.
    pub alternatives: Vec<Alternative>,
    /// `update-alternatives` calls that cannot be read without running the script (shell
    /// variables, command substitution) or that do more than install (`--set`), as written.
    pub unread: Vec<String>,
    /// Its `triggers` file's directives (`activate-noawait ldconfig`), comments left out.
    #[serde(default)]
    pub triggers: Vec<String>,
    /// Each script's text (of [`SCRIPT_NAMES`] but `triggers`), read, never run, for the
    /// report of what it would have done.
    #[serde(default)]
    pub texts: std::collections::BTreeMap<String, String>,
    /// base-passwd's `usr/share/base-passwd/passwd.master` and `group.master`.
    pub passwd_master: Option<String>,
    pub group_master: Option<String>,
}

/// One `update-alternatives --install LINK NAME PATH PRIORITY [--slave LINK NAME PATH]...`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alternative {
    pub link: String,
    pub name: String,
    pub path: String,
    pub priority: i64,
    pub slaves: Vec<Slave>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slave {
    pub link: String,
    pub name: String,
    pub path: String,
}

/// Reads `package`'s .deb at `path` (already verified against the lock).
pub fn read(path: &Path, package: &str) -> Result<DebScripts, AptError> {
    let mut f = fs_err::File::open(path).map_err(io_err(path))?;
    let members = ar_members(&mut f, package)?;
    let mut out = DebScripts {
        package: package.to_string(),
        ..DebScripts::default()
    };
    let bad = |reason: String| AptError::Deb {
        package: package.to_string(),
        reason,
    };
    let ctl = members
        .iter()
        .find(|m| m.name.starts_with("control.tar"))
        .ok_or_else(|| bad("no control.tar member".into()))?;
    let mut postinst = None;
    for (name, text) in read_texts(&mut f, ctl, package, &|n| SCRIPT_NAMES.contains(&n))? {
        if name == "postinst" {
            postinst = Some(text.clone());
        }
        if name == "triggers" {
            out.triggers = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string)
                .collect();
        } else {
            out.texts.insert(name.clone(), text);
        }
        out.scripts.push(name);
    }
    out.scripts
        .sort_by_key(|s| SCRIPT_NAMES.iter().position(|n| n == s));
    if let Some(text) = postinst {
        (out.alternatives, out.unread) = parse_alternatives(&text);
    }
    if package == "base-passwd" {
        let data = members
            .iter()
            .find(|m| m.name.starts_with("data.tar"))
            .ok_or_else(|| bad("no data.tar member".into()))?;
        let wanted = |n: &str| {
            n == "usr/share/base-passwd/passwd.master" || n == "usr/share/base-passwd/group.master"
        };
        for (name, text) in read_texts(&mut f, data, package, &wanted)? {
            if name.ends_with("passwd.master") {
                out.passwd_master = Some(text);
            } else {
                out.group_master = Some(text);
            }
        }
    }
    Ok(out)
}

/// The files of member `m` that `wanted` accepts, as text (at most [`MAX_READ`] bytes of the
/// member's tar are read).
fn read_texts(
    f: &mut fs_err::File,
    m: &Member,
    package: &str,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<(String, String)>, AptError> {
    Ok(member_files(f, m, package, MAX_READ, wanted)?
        .into_iter()
        .map(|(n, b)| (n, String::from_utf8_lossy(&b).into_owned()))
        .collect())
}

/// The `update-alternatives --install` calls of a shell script, and the calls that cannot be
/// read statically. Backslash-newline continues a line; a call ends at the line's end or at
/// `;`, `&&`, `||` or `|`.
pub fn parse_alternatives(script: &str) -> (Vec<Alternative>, Vec<String>) {
    let joined = script.replace("\\\r\n", " ").replace("\\\n", " ");
    let (mut found, mut unread) = (Vec::new(), Vec::new());
    for line in joined.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("update-alternatives") {
            let after = &rest[i + "update-alternatives".len()..];
            let end = [";", "&&", "||", "|"]
                .iter()
                .filter_map(|sep| after.find(sep))
                .min()
                .unwrap_or(after.len());
            let call = &after[..end];
            rest = &after[end..];
            let words: Vec<String> = call.split_whitespace().map(unquote).collect();
            if !words.iter().any(|w| w == "--install") {
                if words.iter().any(|w| w == "--set" || w == "--auto") {
                    unread.push(format!("update-alternatives{call}").trim().to_string());
                }
                continue;
            }
            match install_call(&words) {
                Some(a) => found.push(a),
                None => unread.push(format!("update-alternatives{call}").trim().to_string()),
            }
        }
    }
    (found, unread)
}

fn unquote(w: &str) -> String {
    let w = w
        .strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .unwrap_or(w);
    let w = w
        .strip_prefix('\'')
        .and_then(|x| x.strip_suffix('\''))
        .unwrap_or(w);
    w.to_string()
}

/// `--install LINK NAME PATH PRIORITY` and its `--slave LINK NAME PATH`s; `None` when a word
/// is not literal (a variable, a substitution, a glob) or the call is malformed.
fn install_call(words: &[String]) -> Option<Alternative> {
    let literal = |w: &str| {
        !w.is_empty() && !w.contains(['$', '`', '*', '?', '[', '"', '\'', '(', ')', '{', '}'])
    };
    let abs = |w: &str| literal(w) && w.starts_with('/') && !w.split('/').any(|c| c == "..");
    let mut alt: Option<Alternative> = None;
    let mut slaves = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match words[i].as_str() {
            "--install" => {
                let [link, name, path, prio] = words.get(i + 1..i + 5)? else {
                    return None;
                };
                if !(abs(link) && literal(name) && !name.contains('/') && abs(path)) {
                    return None;
                }
                alt = Some(Alternative {
                    link: link.clone(),
                    name: name.clone(),
                    path: path.clone(),
                    priority: prio.parse().ok()?,
                    slaves: Vec::new(),
                });
                i += 5;
            }
            "--slave" => {
                let [link, name, path] = words.get(i + 1..i + 4)? else {
                    return None;
                };
                if !(abs(link) && literal(name) && !name.contains('/') && abs(path)) {
                    return None;
                }
                slaves.push(Slave {
                    link: link.clone(),
                    name: name.clone(),
                    path: path.clone(),
                });
                i += 4;
            }
            "--quiet" | "--force" | "--verbose" => i += 1,
            _ => return None,
        }
    }
    let mut alt = alt?;
    alt.slaves = slaves;
    Some(alt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dh_installalternatives_postinst() {
        // mawk 1.3.4-20200120-3.1 (Debian bookworm), as shipped.
        let mawk = "#!/bin/sh\nset -e\n# Automatically added by dh_installalternatives/13.7.1\nif [ \"$1\" = \"configure\" ] || [ \"$1\" = \"abort-upgrade\" ]; then\n        update-alternatives --install /usr/bin/awk awk /usr/bin/mawk 5 \\\n            --slave /usr/share/man/man1/awk.1.gz awk.1.gz /usr/share/man/man1/mawk.1.gz \\\n            --slave /usr/bin/nawk nawk /usr/bin/mawk \\\n            --slave /usr/share/man/man1/nawk.1.gz nawk.1.gz /usr/share/man/man1/mawk.1.gz\nfi\n";
        let (alts, unread) = parse_alternatives(mawk);
        assert!(unread.is_empty(), "{unread:?}");
        assert_eq!(alts.len(), 1);
        let a = &alts[0];
        assert_eq!(
            (
                a.link.as_str(),
                a.name.as_str(),
                a.path.as_str(),
                a.priority
            ),
            ("/usr/bin/awk", "awk", "/usr/bin/mawk", 5)
        );
        assert_eq!(a.slaves.len(), 3);
        assert_eq!(a.slaves[1].link, "/usr/bin/nawk");
        // Variables, removals and `--set`: not emulated, and said so (a removal is nothing).
        let (alts, unread) = parse_alternatives(
            "for v in 1 2; do update-alternatives --install /usr/bin/x x /usr/bin/x$v 10; done\nupdate-alternatives --remove x /usr/bin/x1 || true\nupdate-alternatives --set editor /usr/bin/vim.basic\n# update-alternatives --install /a a /b 1\n",
        );
        assert!(alts.is_empty());
        assert_eq!(unread.len(), 2, "{unread:?}");
        assert!(unread[0].contains("x$v") && unread[1].contains("--set"));
        // A relative or `..` path is refused too.
        assert!(
            parse_alternatives("update-alternatives --install usr/bin/a a /b 1")
                .0
                .is_empty()
        );
        assert!(
            parse_alternatives("update-alternatives --install /a a /../etc/x 1")
                .0
                .is_empty()
        );
    }
}
