//! What a Debian system has beyond its packages' files, made without running anything: the
//! effects of the maintainer scripts ocibuild does not run (base-files' directories,
//! base-passwd's accounts, `update-alternatives --install`), the recipe's `[accounts]`, and
//! whether `/etc/ld.so.cache` is needed. [`plan`] decides the paths of the `rootfs` layer and
//! reports what was emulated; `system::rootfs` builds the layer.
//!
//! - [`baseline`]: the directories of a Debian system, for an image on `scratch`.
//! - [`accounts`]: `/etc/passwd`, `/etc/group`, `/etc/shadow`.
//!
//! **Alternatives.** For each alternative name, the `--install` candidates of every installed
//! package whose path the packages ship; the highest priority wins (a tie: the path first in
//! byte order), as `update-alternatives` does in auto mode. It gets `LINK -> /etc/alternatives/
//! NAME -> PATH`, and so does each of its slaves whose path is shipped. dpkg's state
//! (`/var/lib/dpkg/alternatives/NAME`) is not written.

pub mod accounts;
pub mod baseline;
pub mod effects;
pub mod listing;
mod shell;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::apt::scripts::DebScripts;
use crate::apt::UsrMerge;
use crate::recipe::Accounts;

/// The layer's name (in the image's layer annotations and history).
pub const LAYER_NAME: &str = "rootfs";

#[derive(Debug, thiserror::Error)]
pub enum RootfsError {
    #[error("{at}: {problem}")]
    Account { at: String, problem: String },
}

/// One path of the `rootfs` layer (relative, no trailing `/`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Planned {
    pub path: String,
    pub kind: PlannedKind,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlannedKind {
    Dir,
    File(String),
    Symlink(String),
}

/// What the packages installed, as far as the plan needs it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Installed {
    /// The paths the packages' layer holds (normalized, as in the layer).
    pub paths: BTreeSet<String>,
    /// Directories holding shared libraries (`lib*.so*` files or links).
    pub library_dirs: BTreeSet<String>,
    /// Directories `etc/ld.so.conf.d/*.conf` lists (absolute, as written).
    pub ld_conf_dirs: BTreeSet<String>,
    /// The layer's top-level merged-/usr links (`bin` → `usr/bin`): base-files 13's, or those
    /// the apt layer made on `scratch` for trixie's packages.
    #[serde(default)]
    pub links: BTreeMap<String, String>,
}

/// What [`plan`] needs.
pub struct Inputs<'a> {
    /// The image starts from `scratch`: it gets the [`baseline`] (the step runs for a system,
    /// declared accounts, or a named `[config] user`).
    pub scratch: bool,
    /// `[apt]` or `[python]`: a system, which gets accounts when its base has none.
    pub system: bool,
    /// The base's `etc/passwd`, `etc/group`, `etc/shadow`, when it has them.
    pub base_accounts: &'a BTreeMap<String, String>,
    /// The installed packages' scripts.
    pub scripts: &'a [DebScripts],
    pub installed: &'a Installed,
    pub declared: &'a Accounts,
    /// `[config] user` and where the recipe says it.
    pub config_user: Option<(&'a str, &'a str)>,
    /// The alternatives the base has chosen already: kept as they are.
    pub base_alternatives: &'a BTreeSet<String>,
    pub usr_merge: &'a UsrMerge,
    /// The Debian architecture (for the multiarch library directories).
    pub architecture: &'a str,
    /// Whether a path is in the image below the rootfs layer, when its files are known (on
    /// `scratch`): the declared accounts' shells are checked against it.
    pub has: Option<&'a dyn Fn(&str) -> bool>,
}

/// The layer's paths, sorted, and the report.
#[derive(Clone, Debug)]
pub struct Plan {
    pub paths: Vec<Planned>,
    pub report: Report,
}

/// What `build --json` says of the root filesystem (`rootfs`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Whether the [`baseline`] directories were added (a `scratch` base).
    pub baseline: bool,
    pub accounts: Option<AccountsReport>,
    pub alternatives: Vec<AlternativeReport>,
    /// Every installed package with maintainer scripts, none of which ran.
    pub scripts_not_run: Vec<ScriptsReport>,
    /// The effects of [`Report::scripts_not_run`] counted by outcome.
    pub script_effects: EffectCounts,
    pub ld_so_cache: LdReport,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AccountsReport {
    pub origin: accounts::Origin,
    pub users: Vec<accounts::UserLine>,
    pub groups: Vec<(String, u32)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AlternativeReport {
    pub name: String,
    pub link: String,
    pub path: String,
    pub priority: i64,
    pub package: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScriptsReport {
    pub package: String,
    pub scripts: Vec<String>,
    /// What was done in their place; empty when nothing was.
    pub emulated: Vec<String>,
    /// `update-alternatives` calls that could not be read, as written.
    pub not_emulated: Vec<String>,
    /// What each script would have done and what came of it; never empty.
    pub effects: Vec<effects::Effect>,
}

/// How many effects were emulated, are not needed in an image, and were not done.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectCounts {
    pub packages: usize,
    pub emulated: usize,
    pub not_needed: usize,
    pub not_done: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LdReport {
    /// Whether a cache would be needed to find the packages' libraries: a directory from
    /// `ld.so.conf.d` that holds some and is not searched by default. ocibuild does not write
    /// one.
    pub needed: bool,
    /// Those directories.
    pub directories: Vec<String>,
    pub reason: String,
}

/// The Debian architecture's multiarch triplet.
fn triplet(arch: &str) -> &'static str {
    match arch {
        "amd64" => "x86_64-linux-gnu",
        "arm64" => "aarch64-linux-gnu",
        "armhf" => "arm-linux-gnueabihf",
        "armel" => "arm-linux-gnueabi",
        "i386" => "i386-linux-gnu",
        "ppc64el" => "powerpc64le-linux-gnu",
        "s390x" => "s390x-linux-gnu",
        "riscv64" => "riscv64-linux-gnu",
        _ => "",
    }
}

fn dir_entry(path: &str) -> Planned {
    Planned {
        path: path.to_string(),
        kind: PlannedKind::Dir,
        mode: 0o755,
        uid: 0,
        gid: 0,
    }
}

/// Adds `p`, with its missing parents as root's 0755 directories; an earlier entry for the
/// same path stays.
fn add(out: &mut BTreeMap<String, Planned>, p: Planned) {
    let mut parent = p.path.as_str();
    while let Some((d, _)) = parent.rsplit_once('/') {
        out.entry(d.to_string()).or_insert_with(|| dir_entry(d));
        parent = d;
    }
    out.entry(p.path.clone()).or_insert(p);
}

/// The `rootfs` layer's paths and the report.
pub fn plan(inp: &Inputs<'_>) -> Result<Plan, RootfsError> {
    let mut out: BTreeMap<String, Planned> = BTreeMap::new();
    let mut report = Report {
        baseline: inp.scratch,
        ..Report::default()
    };
    // Accounts: the base's, else base-passwd's, else root and nobody; written when the
    // recipe declares some, or when a system image would otherwise have none.
    let base_has = inp.base_accounts.contains_key("etc/passwd");
    let master = inp
        .scripts
        .iter()
        .find_map(|s| Some((s.passwd_master.clone()?, s.group_master.clone()?)));
    let start = if base_has {
        Some((
            accounts::Origin::Base,
            inp.base_accounts["etc/passwd"].clone(),
            inp.base_accounts
                .get("etc/group")
                .cloned()
                .unwrap_or_default(),
            inp.base_accounts.get("etc/shadow").cloned(),
        ))
    } else {
        master.map(|(p, g)| (accounts::Origin::BasePasswd, p, g, None))
    };
    let write_accounts = !inp.declared.is_empty() || (inp.system && !base_has);
    let files = if write_accounts || base_has {
        Some(accounts::merge(start, inp.declared, inp.has)?)
    } else {
        None
    };
    for u in &inp.declared.users {
        if let Some(why) = baseline::home_problem(&u.home) {
            return Err(RootfsError::Account {
                at: u.at.clone(),
                problem: format!(
                    "user `{}`: home `{}` {why}: pick one like \"/home/{}\"",
                    u.name, u.home, u.name
                ),
            });
        }
    }
    if let Some((user, at)) = inp.config_user {
        accounts::check_user(user, at, files.as_ref())?;
    }
    let gid_of = |name: &str| files.as_ref().and_then(|f| f.gid_of(name)).unwrap_or(0);
    if report.baseline {
        // What a package ships stays (trixie's base-files has `bin -> usr/bin`).
        for b in baseline::BASELINE
            .iter()
            .filter(|b| !inp.installed.paths.contains(b.path))
        {
            let (kind, mode) = match b.kind {
                baseline::Kind::Dir => (PlannedKind::Dir, b.mode),
                baseline::Kind::Symlink(t) => (PlannedKind::Symlink(t.to_string()), 0o777),
            };
            add(
                &mut out,
                Planned {
                    path: b.path.to_string(),
                    kind,
                    mode,
                    uid: 0,
                    gid: gid_of(b.group),
                },
            );
        }
    }
    if let (true, Some(f)) = (write_accounts, &files) {
        let shadow_gid = gid_of("shadow");
        for (path, text, mode, gid) in [
            ("etc/passwd", &f.passwd, 0o644, 0),
            ("etc/group", &f.group, 0o644, 0),
            ("etc/shadow", &f.shadow, 0o640, shadow_gid),
        ] {
            add(
                &mut out,
                Planned {
                    path: path.to_string(),
                    kind: PlannedKind::File(text.clone()),
                    mode,
                    uid: 0,
                    gid,
                },
            );
        }
        for u in &inp.declared.users {
            add(
                &mut out,
                Planned {
                    path: u.home.trim_start_matches('/').to_string(),
                    kind: PlannedKind::Dir,
                    mode: 0o700,
                    uid: u.uid,
                    gid: u.gid,
                },
            );
        }
        report.accounts = Some(AccountsReport {
            origin: f.origin,
            users: f.users.clone(),
            groups: f.groups.clone(),
        });
    }
    report.alternatives = alternatives(inp, &mut out);
    report.ld_so_cache = ld_report(inp);
    let planned: BTreeSet<String> = out.keys().cloned().collect();
    report.scripts_not_run = scripts_report(inp, &report, &planned);
    let all = report.scripts_not_run.iter().flat_map(|s| &s.effects);
    let count = |o: effects::Outcome| all.clone().filter(|e| e.outcome == o).count();
    report.script_effects = EffectCounts {
        packages: report.scripts_not_run.len(),
        emulated: count(effects::Outcome::Emulated),
        not_needed: count(effects::Outcome::NotNeeded),
        not_done: count(effects::Outcome::NotDone),
    };
    Ok(Plan {
        paths: out.into_values().collect(),
        report,
    })
}

fn alternatives(inp: &Inputs<'_>, out: &mut BTreeMap<String, Planned>) -> Vec<AlternativeReport> {
    let shipped = |abs: &str| {
        let rel = inp.usr_merge.rewrite(abs.trim_start_matches('/'));
        inp.installed.paths.contains(&rel)
    };
    // name → the best (priority, path, package, alternative).
    let mut best: BTreeMap<&str, (i64, &str, &str, &crate::apt::scripts::Alternative)> =
        BTreeMap::new();
    for s in inp.scripts {
        for a in &s.alternatives {
            if !shipped(&a.path) || inp.base_alternatives.contains(&a.name) {
                continue;
            }
            let better = match best.get(a.name.as_str()) {
                None => true,
                Some((p, path, _, _)) => {
                    a.priority > *p || (a.priority == *p && a.path.as_str() < *path)
                }
            };
            if better {
                best.insert(&a.name, (a.priority, &a.path, &s.package, a));
            }
        }
    }
    let mut report = Vec::new();
    for (name, (priority, path, package, alt)) in best {
        let mut link = |link: &str, name: &str, path: &str| {
            let at = format!("etc/alternatives/{name}");
            for (from, to) in [
                (
                    inp.usr_merge.rewrite(link.trim_start_matches('/')),
                    format!("/{at}"),
                ),
                (at.clone(), path.to_string()),
            ] {
                add(
                    out,
                    Planned {
                        path: from,
                        kind: PlannedKind::Symlink(to),
                        mode: 0o777,
                        uid: 0,
                        gid: 0,
                    },
                );
            }
        };
        link(&alt.link, name, path);
        for sl in &alt.slaves {
            if shipped(&sl.path) {
                link(&sl.link, &sl.name, &sl.path);
            }
        }
        report.push(AlternativeReport {
            name: name.to_string(),
            link: alt.link.clone(),
            path: path.to_string(),
            priority,
            package: package.to_string(),
        });
    }
    report
}

fn scripts_report(
    inp: &Inputs<'_>,
    report: &Report,
    planned: &BTreeSet<String>,
) -> Vec<ScriptsReport> {
    let ctx = effects::Ctx {
        scripts: inp.scripts,
        installed: inp.installed,
        planned,
        usr_merge: inp.usr_merge,
        report,
    };
    let mut out = Vec::new();
    for s in inp.scripts.iter().filter(|s| !s.scripts.is_empty()) {
        let mut emulated = Vec::new();
        for a in report
            .alternatives
            .iter()
            .filter(|a| a.package == s.package)
        {
            emulated.push(format!("update-alternatives: {} -> {}", a.link, a.path));
        }
        if s.triggers
            .iter()
            .any(|t| t.split_whitespace().nth(1) == Some("ldconfig"))
        {
            emulated.push(if report.ld_so_cache.needed {
                "ldconfig trigger: not emulated; see ldSoCache".into()
            } else {
                "ldconfig trigger: no ld.so.cache needed (see ldSoCache)".into()
            });
        }
        match s.package.as_str() {
            "base-passwd"
                if report
                    .accounts
                    .as_ref()
                    .is_some_and(|a| a.origin == accounts::Origin::BasePasswd) =>
            {
                emulated
                    .push("/etc/passwd and /etc/group from passwd.master and group.master".into());
            }
            "base-files" if report.baseline => {
                emulated.push("the directories of its postinst (the baseline)".into());
            }
            "ca-certificates" => {
                emulated.push(format!(
                    "/{} from the certificates it ships",
                    crate::apt::deb::CA_BUNDLE
                ));
            }
            _ => {}
        }
        out.push(ScriptsReport {
            package: s.package.clone(),
            scripts: s.scripts.clone(),
            emulated,
            not_emulated: s.unread.clone(),
            effects: effects::of_package(s, &ctx),
        });
    }
    out
}

fn ld_report(inp: &Inputs<'_>) -> LdReport {
    let t = triplet(inp.architecture);
    let default: Vec<String> = ["lib", "usr/lib"]
        .iter()
        .flat_map(|d| [d.to_string(), format!("{d}/{t}")])
        .collect();
    let default_rel: BTreeSet<String> = default.iter().map(|d| inp.usr_merge.rewrite(d)).collect();
    let rel = |d: &str| {
        inp.usr_merge
            .rewrite(d.trim_start_matches('/').trim_end_matches('/'))
    };
    let is_default = |d: &str| {
        let d = rel(d);
        default_rel.contains(&d)
            || default_rel
                .iter()
                .any(|x| d.starts_with(&format!("{x}/glibc-hwcaps/")))
    };
    let needed: Vec<String> = inp
        .installed
        .ld_conf_dirs
        .iter()
        .filter(|d| inp.installed.library_dirs.contains(&rel(d)) && !is_default(d))
        .cloned()
        .collect();
    let defaults = default
        .iter()
        .map(|d| format!("/{d}"))
        .collect::<Vec<_>>()
        .join(", ");
    LdReport {
        needed: !needed.is_empty(),
        reason: if needed.is_empty() {
            format!("not needed: every library directory the packages' ld.so.conf.d names is empty of them or searched by default ({defaults})")
        } else {
            format!("needed and not written: ld.so.conf.d names {} with libraries outside the default search ({defaults}); set LD_LIBRARY_PATH in [config] env", needed.join(", "))
        },
        directories: needed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apt::scripts::{Alternative, DebScripts};
    use crate::recipe::User;

    fn inputs<'a>(
        scripts: &'a [DebScripts],
        installed: &'a Installed,
        declared: &'a Accounts,
        base_accounts: &'a BTreeMap<String, String>,
        base_alternatives: &'a BTreeSet<String>,
        usr: &'a UsrMerge,
    ) -> Inputs<'a> {
        Inputs {
            scratch: base_accounts.is_empty(),
            system: true,
            base_accounts,
            scripts,
            installed,
            declared,
            config_user: None,
            base_alternatives,
            usr_merge: usr,
            architecture: "amd64",
            has: None,
        }
    }

    #[test]
    fn shipped_paths_base_choices_and_base_groups_are_kept() {
        let scripts = vec![DebScripts {
            package: "vim".into(),
            scripts: vec!["postinst".into()],
            alternatives: vec![Alternative {
                link: "/usr/bin/editor".into(),
                name: "editor".into(),
                path: "/usr/bin/vim.basic".into(),
                priority: 30,
                slaves: vec![],
            }],
            ..DebScripts::default()
        }];
        let installed = Installed {
            paths: ["bin", "usr/bin/vim.basic"].map(String::from).into(),
            ..Installed::default()
        };
        let none = Accounts::default();
        let (no_files, no_alts, usr) = (BTreeMap::new(), BTreeSet::new(), UsrMerge::none());
        // On scratch, `bin` (a package's symlink in trixie) is not replaced by a directory.
        let planned = super::plan(&inputs(
            &scripts, &installed, &none, &no_files, &no_alts, &usr,
        ))
        .unwrap();
        assert!(planned.paths.iter().all(|p| p.path != "bin"));
        assert!(planned.paths.iter().any(|p| p.path == "usr/bin/editor"));
        // A base that chose an editor already keeps its choice.
        let mut base = BTreeMap::new();
        base.insert(
            "etc/passwd".to_string(),
            "root:x:0:0:root:/root:/bin/sh\n".to_string(),
        );
        base.insert(
            "etc/group".to_string(),
            "root:x:0:\nusers:x:100:\n".to_string(),
        );
        let chosen: BTreeSet<String> = ["editor".to_string()].into();
        let planned =
            super::plan(&inputs(&scripts, &installed, &none, &base, &chosen, &usr)).unwrap();
        assert!(
            planned.paths.is_empty() && planned.report.alternatives.is_empty(),
            "{planned:?}"
        );
        // A user whose gid is the base's `users` joins it; no group is added.
        let declared = Accounts {
            groups: vec![],
            users: vec![User {
                name: "app".into(),
                uid: 1001,
                gid: 100,
                home: "/home/app".into(),
                shell: Some("/bin/sh".into()),
                at: "r.toml:1:1".into(),
            }],
        };
        let planned = super::plan(&inputs(
            &scripts, &installed, &declared, &base, &chosen, &usr,
        ))
        .unwrap();
        let group = planned
            .paths
            .iter()
            .find(|p| p.path == "etc/group")
            .unwrap();
        assert_eq!(
            group.kind,
            PlannedKind::File("root:x:0:\nusers:x:100:\n".into())
        );
        let home = planned.paths.iter().find(|p| p.path == "home/app").unwrap();
        assert_eq!((home.uid, home.gid, home.mode), (1001, 100, 0o700));
    }
}
