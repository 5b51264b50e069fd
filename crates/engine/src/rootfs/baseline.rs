//! The filesystem every Debian system has, for an image on `scratch`: the directories Debian's
//! base-files package ships (bookworm's 12.4, in its data.tar) and the ones its postinst makes
//! (`install_directory`, `install_local_dir`, `migrate_directory`), with their modes and
//! owners. Left out: the files base-files ships (`/etc/os-release`, `/etc/issue`, …: install
//! base-files for those), `/etc/profile`, `/root/.profile` and `/root/.bashrc` (copied from
//! base-files by its postinst), and the login records (`/var/log/wtmp`, `btmp`, `lastlog`).

/// What one baseline path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    Symlink(&'static str),
}

/// One baseline path: relative to `/`, mode, and the group that owns it by name (its gid
/// where the image's group file has it, else root's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path {
    pub path: &'static str,
    pub kind: Kind,
    pub mode: u32,
    pub group: &'static str,
}

const fn dir(path: &'static str) -> Path {
    Path {
        path,
        kind: Kind::Dir,
        mode: 0o755,
        group: "root",
    }
}

const fn special(path: &'static str, mode: u32, group: &'static str) -> Path {
    Path {
        path,
        kind: Kind::Dir,
        mode,
        group,
    }
}

const fn link(path: &'static str, target: &'static str) -> Path {
    Path {
        path,
        kind: Kind::Symlink(target),
        mode: 0o777,
        group: "root",
    }
}

/// The baseline, sorted by path.
pub const BASELINE: &[Path] = &[
    dir("bin"),
    dir("boot"),
    dir("dev"),
    dir("etc"),
    dir("etc/default"),
    dir("etc/dpkg"),
    dir("etc/dpkg/origins"),
    dir("etc/opt"),
    dir("etc/profile.d"),
    dir("etc/skel"),
    dir("home"),
    dir("lib"),
    dir("media"),
    dir("mnt"),
    dir("opt"),
    dir("proc"),
    special("root", 0o700, "root"),
    dir("run"),
    special("run/lock", 0o1777, "root"),
    dir("sbin"),
    dir("srv"),
    dir("sys"),
    special("tmp", 0o1777, "root"),
    dir("usr"),
    dir("usr/bin"),
    dir("usr/games"),
    dir("usr/include"),
    dir("usr/lib"),
    dir("usr/local"),
    dir("usr/local/bin"),
    dir("usr/local/etc"),
    dir("usr/local/games"),
    dir("usr/local/include"),
    dir("usr/local/lib"),
    link("usr/local/man", "share/man"),
    dir("usr/local/sbin"),
    dir("usr/local/share"),
    dir("usr/local/share/man"),
    dir("usr/local/src"),
    dir("usr/sbin"),
    dir("usr/share"),
    dir("usr/share/dict"),
    dir("usr/share/info"),
    dir("usr/share/man"),
    dir("usr/share/misc"),
    dir("usr/src"),
    dir("var"),
    dir("var/backups"),
    dir("var/cache"),
    dir("var/lib"),
    dir("var/lib/dpkg"),
    dir("var/lib/misc"),
    special("var/local", 0o2775, "staff"),
    link("var/lock", "/run/lock"),
    dir("var/log"),
    special("var/mail", 0o2775, "mail"),
    dir("var/opt"),
    link("var/run", "/run"),
    dir("var/spool"),
    link("var/spool/mail", "../mail"),
    special("var/tmp", 0o1777, "root"),
];

/// Why `path` (absolute, normalized) cannot be a home, if it cannot: a baseline path or one
/// that holds some (it would become the user's), or one beneath a baseline symlink or a
/// directory of another mode than 0755 (its parents are written 0755 directories, which
/// would replace the link or change `/tmp`'s 1777).
pub fn home_problem(path: &str) -> Option<&'static str> {
    let p = path.trim_start_matches('/');
    if p.is_empty()
        || BASELINE
            .iter()
            .any(|b| b.path == p || b.path.starts_with(&format!("{p}/")))
    {
        return Some("is a system directory (it would become the user's)");
    }
    let beneath = |b: &&Path| p.starts_with(&format!("{}/", b.path));
    if BASELINE
        .iter()
        .filter(beneath)
        .any(|b| b.kind != Kind::Dir || b.mode != 0o755)
    {
        return Some("is beneath a system symlink or a directory such as /tmp");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_unique_and_parents_first() {
        for w in BASELINE.windows(2) {
            assert!(w[0].path < w[1].path, "{} before {}", w[0].path, w[1].path);
        }
        for b in BASELINE {
            if let Some((parent, _)) = b.path.rsplit_once('/') {
                assert!(
                    BASELINE
                        .iter()
                        .any(|p| p.path == parent && p.kind == Kind::Dir),
                    "{} has no parent",
                    b.path
                );
            }
        }
        for bad in [
            "/tmp",
            "/usr",
            "/",
            "/tmp/app",
            "/var/run/app",
            "/root/x",
            "/var/tmp/a/b",
        ] {
            assert!(home_problem(bad).is_some(), "{bad}");
        }
        for ok in ["/home/app", "/srv/app", "/opt/app/home", "/var/lib/app"] {
            assert!(home_problem(ok).is_none(), "{ok}");
        }
    }
}
