//! `/etc/passwd`, `/etc/group` and `/etc/shadow`: read from the base (or base-passwd's master
//! files, or root and nobody), the recipe's accounts added, written back whole. Lines already
//! there are kept byte for byte, in their order; new ones follow in recipe order.

use std::collections::BTreeSet;

use super::RootfsError;
use crate::recipe::Accounts;

/// Where the starting accounts came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// The base image's `/etc/passwd` and `/etc/group`.
    Base,
    /// base-passwd's `passwd.master` and `group.master` (what its postinst copies).
    BasePasswd,
    /// Neither: root (0) and nobody (65534), with groups root and nogroup, as Debian has them.
    Minimal,
}

const MINIMAL_PASSWD: &str =
    "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
const MINIMAL_GROUP: &str = "root:x:0:\nnogroup:x:65534:\n";

/// One `passwd` line's fields (name, uid, gid, home).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UserLine {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: String,
}

/// The image's account files, as they will be written.
#[derive(Clone, Debug)]
pub struct AccountFiles {
    pub origin: Origin,
    pub passwd: String,
    pub group: String,
    pub shadow: String,
    pub users: Vec<UserLine>,
    /// (name, gid).
    pub groups: Vec<(String, u32)>,
}

impl AccountFiles {
    pub fn gid_of(&self, group: &str) -> Option<u32> {
        self.groups
            .iter()
            .find(|(n, _)| n == group)
            .map(|(_, g)| *g)
    }
}

/// `(name, id)` of each well-formed `name:x:id:…` line.
fn ids(text: &str) -> Vec<(String, u32)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let id = f.nth(1)?.parse().ok()?;
            (!name.is_empty()).then(|| (name.to_string(), id))
        })
        .collect()
}

/// The accounts of a `passwd` text: every line with a name and a numeric uid counts (for the
/// collision checks, even a short or malformed one).
fn users_of(passwd: &str) -> Vec<UserLine> {
    passwd
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            if f.len() < 3 || f[0].is_empty() {
                return None;
            }
            Some(UserLine {
                name: f[0].to_string(),
                uid: f[2].parse().ok()?,
                gid: f.get(3).and_then(|g| g.parse().ok()).unwrap_or(0),
                home: f.get(5).unwrap_or(&"").to_string(),
            })
        })
        .collect()
}

fn with_newline(mut s: String) -> String {
    if !s.is_empty() && !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// The shell of a user declared without one, when the image has it.
pub const DEFAULT_SHELL: &str = "/bin/sh";
/// The shell of a user declared without one, when the image has no `/bin/sh`.
pub const NO_SHELL: &str = "/usr/sbin/nologin";

/// The account files: `start` ((passwd, group, shadow) text and where it came from) with
/// `declared` added. A declared name or id that is already there is an error naming the
/// recipe line. `has` says whether a path is in the image, when its files are known: then a
/// declared shell must be there, and a user without one gets `/bin/sh` only when it is.
pub fn merge(
    start: Option<(Origin, String, String, Option<String>)>,
    declared: &Accounts,
    has: Option<&dyn Fn(&str) -> bool>,
) -> Result<AccountFiles, RootfsError> {
    let (origin, passwd, group, shadow) = start.unwrap_or((
        Origin::Minimal,
        MINIMAL_PASSWD.to_string(),
        MINIMAL_GROUP.to_string(),
        None,
    ));
    let (mut passwd, mut group) = (with_newline(passwd), with_newline(group));
    let mut groups = ids(&group);
    let mut users = users_of(&passwd);
    let from = match origin {
        Origin::Base => "the base image",
        Origin::BasePasswd => "base-passwd",
        Origin::Minimal => "the default accounts",
    };
    for g in &declared.groups {
        if let Some((n, id)) = groups.iter().find(|(n, id)| *n == g.name || *id == g.gid) {
            return Err(RootfsError::Account {
                at: g.at.clone(),
                problem: format!(
                    "group `{}` ({}) collides with `{n}` ({id}) of {from}",
                    g.name, g.gid
                ),
            });
        }
        group.push_str(&format!("{}:x:{}:\n", g.name, g.gid));
        groups.push((g.name.clone(), g.gid));
    }
    for u in &declared.users {
        if !groups.iter().any(|(_, id)| *id == u.gid) {
            // A gid no group has: the user's own group, named after it.
            if let Some((_, id)) = groups.iter().find(|(n, _)| *n == u.name) {
                return Err(RootfsError::Account {
                    at: u.at.clone(),
                    problem: format!(
                        "user `{}`: no group has gid {}, and its own group `{}` would collide \
                         with `{}` ({id}): declare the group, or set `gid = {id}`",
                        u.name, u.gid, u.name, u.name
                    ),
                });
            }
            group.push_str(&format!("{}:x:{}:\n", u.name, u.gid));
            groups.push((u.name.clone(), u.gid));
        }
        if let Some(x) = users.iter().find(|x| x.name == u.name || x.uid == u.uid) {
            return Err(RootfsError::Account {
                at: u.at.clone(),
                problem: format!(
                    "user `{}` ({}) collides with `{}` ({}) of {from}",
                    u.name, u.uid, x.name, x.uid
                ),
            });
        }
        let shell = match (&u.shell, has) {
            (Some(s), Some(has)) if !has(s) => {
                return Err(RootfsError::Account {
                    at: u.at.clone(),
                    problem: format!(
                        "user `{}`: shell `{s}` is not in the image: install the package that \
                         has it (`[apt] essential = true` gives /bin/sh and /bin/bash), or \
                         leave `shell` out",
                        u.name
                    ),
                })
            }
            (Some(s), _) => s.as_str(),
            (None, Some(has)) if !has(DEFAULT_SHELL) => NO_SHELL,
            (None, _) => DEFAULT_SHELL,
        };
        passwd.push_str(&format!(
            "{}:x:{}:{}::{}:{shell}\n",
            u.name, u.uid, u.gid, u.home
        ));
        users.push(UserLine {
            name: u.name.clone(),
            uid: u.uid,
            gid: u.gid,
            home: u.home.clone(),
        });
    }
    // shadow: the base's lines kept; a locked entry (`*`, no aging dates: nothing depends on
    // the build's clock) for every user it lacks.
    let mut shadow = with_newline(shadow.unwrap_or_default());
    let have: BTreeSet<String> = shadow
        .lines()
        .filter_map(|l| l.split(':').next().map(str::to_string))
        .collect();
    for u in &users {
        if !have.contains(&u.name) {
            shadow.push_str(&format!("{}:*::0:99999:7:::\n", u.name));
        }
    }
    Ok(AccountFiles {
        origin,
        passwd,
        group,
        shadow,
        users,
        groups,
    })
}

/// Checks `[config] user` (`name`, `uid`, `name:group`, `uid:gid`) against the accounts: a
/// name must be a user (a group name a group); numbers are taken as they are.
pub fn check_user(user: &str, at: &str, files: Option<&AccountFiles>) -> Result<(), RootfsError> {
    let (u, g) = match user.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (user, None),
    };
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let err = |what: String| RootfsError::Account {
        at: at.to_string(),
        problem: format!("[config] user `{}`: {what}", crate::bounded::clip(user)),
    };
    if !numeric(u) && files.is_none_or(|f| !f.users.iter().any(|x| x.name == u)) {
        return Err(err(match files {
            None => format!(
                "the image has no /etc/passwd: declare `{}` in [[accounts.user]], or use a uid",
                crate::bounded::clip(u)
            ),
            Some(f) => match crate::diag::closest(u, f.users.iter().map(|x| x.name.as_str())) {
                Some(near) => format!(
                    "no account `{}`: did you mean `{near}`? (else declare it in \
                     [[accounts.user]])",
                    crate::bounded::clip(u)
                ),
                None => format!(
                    "no account `{}`: declare it in [[accounts.user]]",
                    crate::bounded::clip(u)
                ),
            },
        }));
    }
    if let Some(g) = g {
        if !numeric(g) && files.is_none_or(|f| f.gid_of(g).is_none()) {
            let near =
                files.and_then(|f| crate::diag::closest(g, f.groups.iter().map(|x| x.0.as_str())));
            return Err(err(match near {
                Some(near) => format!(
                    "no group `{}`: did you mean `{near}`? (else declare it in \
                     [[accounts.group]])",
                    crate::bounded::clip(g)
                ),
                None => format!(
                    "no group `{}`: declare it in [[accounts.group]]",
                    crate::bounded::clip(g)
                ),
            }));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::{Group, User};

    fn declared() -> Accounts {
        Accounts {
            groups: vec![Group {
                name: "app".into(),
                gid: 1000,
                at: "r.toml:3:1".into(),
            }],
            users: vec![User {
                name: "app".into(),
                uid: 1000,
                gid: 1000,
                home: "/home/app".into(),
                shell: Some("/bin/sh".into()),
                at: "r.toml:7:1".into(),
            }],
        }
    }

    #[test]
    fn minimal_accounts_and_a_declared_user() {
        let f = merge(None, &declared(), None).unwrap();
        assert_eq!(f.origin, Origin::Minimal);
        assert_eq!(
            f.passwd,
            "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\napp:x:1000:1000::/home/app:/bin/sh\n"
        );
        assert_eq!(f.group, "root:x:0:\nnogroup:x:65534:\napp:x:1000:\n");
        assert_eq!(
            f.shadow,
            "root:*::0:99999:7:::\nnobody:*::0:99999:7:::\napp:*::0:99999:7:::\n"
        );
        check_user("app", "r.toml:1:1", Some(&f)).unwrap();
        check_user("app:app", "r.toml:1:1", Some(&f)).unwrap();
        check_user("1234:5", "r.toml:1:1", None).unwrap();
        let e = check_user("web", "r.toml:9:8", Some(&f))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "r.toml:9:8: [config] user `web`: no account `web`: declare it in [[accounts.user]]"
        );
        let e = check_user("apx", "r.toml:9:8", Some(&f))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "r.toml:9:8: [config] user `apx`: no account `apx`: did you mean `app`? (else \
             declare it in [[accounts.user]])"
        );
        let e = check_user("app:web", "r.toml:9:8", Some(&f))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no group `web`"), "{e}");
        assert!(check_user("app", "r.toml:9:8", None)
            .unwrap_err()
            .to_string()
            .contains("no /etc/passwd"));
    }

    #[test]
    fn a_base_keeps_its_lines_and_collisions_name_the_recipe_line() {
        let base = (
            Origin::Base,
            "root:x:0:0:root:/root:/bin/bash\nubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash"
                .to_string(),
            "root:x:0:\nubuntu:x:1000:".to_string(),
            Some("root:!:19000:0:99999:7:::\n".to_string()),
        );
        let e = merge(Some(base.clone()), &declared(), None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "r.toml:3:1: group `app` (1000) collides with `ubuntu` (1000) of the base image"
        );
        let mut d = declared();
        d.groups[0].gid = 1001;
        d.users[0].gid = 1001;
        let e = merge(Some(base.clone()), &d, None).unwrap_err().to_string();
        assert!(
            e.starts_with("r.toml:7:1: user `app` (1000) collides with `ubuntu` (1000)"),
            "{e}"
        );
        d.users[0].uid = 1001;
        let f = merge(Some(base), &d, None).unwrap();
        assert!(f
            .passwd
            .starts_with("root:x:0:0:root:/root:/bin/bash\nubuntu:x:1000:"));
        assert!(f.passwd.ends_with("\napp:x:1001:1001::/home/app:/bin/sh\n"));
        assert_eq!(
            f.shadow,
            "root:!:19000:0:99999:7:::\nubuntu:*::0:99999:7:::\napp:*::0:99999:7:::\n"
        );
    }
}
