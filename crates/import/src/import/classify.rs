//! One part of a `RUN` line (between `&&`s): what it does, when that is something a recipe
//! declares (apt packages, Python requirements, accounts, paths) or needs nothing for.

use super::shell::{is_plain, words};

/// What a part of a `RUN` line becomes.
#[derive(Debug, PartialEq)]
pub(super) enum Action {
    /// Nothing to do in a recipe (the note says why).
    Nothing(&'static str),
    /// `apt-get update`: the `[[apt.source]]`.
    AptUpdate,
    /// `apt-get install`: `[apt] packages`.
    AptInstall { packages: Vec<String> },
    /// Something apt-get does that a declarative install has no counterpart for.
    AptOther(String),
    /// `pip install` / `uv pip install`: lines of requirements.in.
    Pip {
        requirements: Vec<String>,
        notes: Vec<String>,
    },
    /// `useradd` / `adduser`.
    User(Account),
    /// `groupadd` / `addgroup`.
    Group(Account),
    /// `mkdir -p`.
    Mkdir(Vec<String>),
    /// `chmod MODE PATH…`.
    Chmod {
        mode: String,
        paths: Vec<String>,
        recursive: bool,
    },
    /// `chown OWNER PATH…`.
    Chown {
        owner: String,
        paths: Vec<String>,
        recursive: bool,
    },
    /// `ln -s TARGET LINK`.
    Symlink { target: String, link: String },
    /// Stays in a `[[step]]`.
    Step,
}

/// A user or group a part creates.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Account {
    pub name: String,
    pub id: Option<u32>,
    /// A user's primary group (a name or a number).
    pub group: Option<String>,
    pub home: Option<String>,
    pub shell: Option<String>,
    pub system: bool,
}

pub(super) fn classify(part: &str) -> Action {
    if !is_plain(part) {
        return Action::Step;
    }
    let mut w = words(part);
    // Leading `VAR=value` assignments (DEBIAN_FRONTEND=noninteractive apt-get …) and `sudo`.
    while w
        .first()
        .is_some_and(|x| x == "sudo" || (x.contains('=') && !x.starts_with('-')))
    {
        w.remove(0);
    }
    let Some(cmd) = w
        .first()
        .map(|c| c.rsplit('/').next().unwrap_or(c).to_string())
    else {
        // Only assignments: shell variables the later parts use.
        return Action::Step;
    };
    let args = &w[1..];
    match cmd.as_str() {
        "set" => Action::Nothing("a shell option"),
        "apt-get" | "apt" => apt(args),
        "pip" | "pip3" => pip(args),
        c if c.starts_with("python") && args.first().is_some_and(|a| a == "-m") => {
            match args.get(1).map(String::as_str) {
                Some("pip") => pip(&args[2..]),
                _ => Action::Step,
            }
        }
        "uv" if args.first().is_some_and(|a| a == "pip") => pip(&args[1..]),
        "useradd" | "adduser" => user(args),
        "groupadd" | "addgroup" => group(args),
        "mkdir" => mkdir(args),
        "chmod" => chmod(args),
        "chown" => chown(args),
        "ln" => ln(args),
        "rm" => rm(args),
        "pip-cache" => Action::Nothing("a cache"),
        _ => Action::Step,
    }
}

fn apt(args: &[String]) -> Action {
    let Some(sub) = args.iter().find(|a| !a.starts_with('-')) else {
        return Action::Step;
    };
    match sub.as_str() {
        "update" => Action::AptUpdate,
        "install" => {
            let mut packages = Vec::new();
            let mut skip = false;
            for a in args.iter().skip_while(|a| *a != "install").skip(1) {
                if skip {
                    skip = false;
                } else if a == "-o" || a == "-t" || a == "--target-release" {
                    skip = true;
                } else if !a.starts_with('-') {
                    packages.push(a.clone());
                }
            }
            if packages.iter().any(|p| p.contains('/') || p.ends_with(".deb")) {
                return Action::AptOther(
                    "a local .deb or a release (pkg/suite): not an archive package".into(),
                );
            }
            Action::AptInstall { packages }
        }
        "clean" | "autoclean" => Action::Nothing("no apt cache is in the image"),
        "autoremove" => Action::Nothing("nothing is installed that was not asked for"),
        "upgrade" | "dist-upgrade" | "full-upgrade" => Action::AptOther(
            "the [apt] packages come from the archive's current versions (pinned in the lock); the base's own packages are not upgraded".into(),
        ),
        "purge" | "remove" => Action::AptOther(
            "packages cannot be removed from the base: leave them out of [apt], or start from scratch with [apt] essential = true".into(),
        ),
        other => Action::AptOther(format!("apt-get {other}: no counterpart")),
    }
}

fn pip(args: &[String]) -> Action {
    let Some(pos) = args.iter().position(|a| a == "install") else {
        return match args.first().map(String::as_str) {
            Some("cache") => Action::Nothing("no pip cache is in the image"),
            _ => Action::Step,
        };
    };
    let mut requirements = Vec::new();
    let mut notes = Vec::new();
    let mut it = args[pos + 1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-r" | "--requirement" | "-c" | "--constraint" => {
                if let Some(f) = it.next() {
                    requirements.push(format!("{} {f}", &a[..2].replace("--", "-")));
                }
            }
            "-i" | "--index-url" | "--extra-index-url" | "-f" | "--find-links" => {
                if let Some(u) = it.next() {
                    notes.push(format!(
                        "{a} {u}: give it to uv pip compile (and [python] index for requirements)"
                    ));
                }
            }
            "-e" | "--editable" | "-t" | "--target" | "--prefix" | "--root" => return Action::Step,
            a if a.starts_with('-') => {}
            a if is_local(a) => return Action::Step,
            a => requirements.push(a.to_string()),
        }
    }
    if requirements.is_empty() {
        return Action::Step;
    }
    let tools = ["pip", "setuptools", "wheel", "uv"];
    let before = requirements.len();
    requirements.retain(|r| !tools.contains(&requirement_name(r).as_str()));
    if requirements.len() < before {
        notes.push(
            "pip / setuptools / wheel / uv themselves are not needed: ocibuild installs the wheels"
                .into(),
        );
    }
    if requirements.is_empty() {
        return Action::Nothing("pip itself is not in the image: ocibuild installs the wheels");
    }
    Action::Pip {
        requirements,
        notes,
    }
}

/// The normalized project name of a requirement (`Torch[cuda]>=2` → `torch`).
pub(super) fn requirement_name(r: &str) -> String {
    r.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect::<String>()
        .to_ascii_lowercase()
        .replace(['_', '.'], "-")
}

fn is_local(a: &str) -> bool {
    a == "."
        || a.starts_with("./")
        || a.starts_with('/')
        || a.starts_with("../")
        || a.ends_with(".whl")
        || a.ends_with(".tar.gz")
        || a.contains("://")
        || a.contains(" @ ")
}

/// `flag VALUE` pairs and the last plain word (the name) of useradd / adduser / groupadd.
fn account(args: &[String], with_value: &[&str]) -> Account {
    let mut acc = Account::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        if flag.starts_with('-') {
            let value = if with_value.contains(&flag) {
                inline.or_else(|| it.next().cloned())
            } else {
                None
            };
            match (flag, value) {
                ("-u" | "--uid", Some(v)) => acc.id = v.parse().ok(),
                ("-g" | "--gid" | "-G" | "--ingroup", Some(v)) => acc.group = Some(v),
                ("-d" | "--home" | "--home-dir" | "-h", Some(v)) => acc.home = Some(v),
                ("-s" | "--shell", Some(v)) => acc.shell = Some(v),
                ("-r" | "--system" | "-S", _) => acc.system = true,
                _ => {}
            }
        } else if acc.name.is_empty() {
            acc.name = a.clone();
        } else {
            // `adduser USER GROUP` adds a user to a group: the last word is the group.
            acc.group = Some(a.clone());
        }
    }
    acc
}

const USER_FLAGS: &[&str] = &[
    "-u",
    "--uid",
    "-g",
    "--gid",
    "-G",
    "--groups",
    "--ingroup",
    "-d",
    "--home",
    "--home-dir",
    "-h",
    "-s",
    "--shell",
    "-c",
    "--comment",
    "--gecos",
    "-k",
    "-K",
    "-e",
    "-f",
    "-p",
];

fn user(args: &[String]) -> Action {
    let acc = account(args, USER_FLAGS);
    if acc.name.is_empty() {
        return Action::Step;
    }
    Action::User(acc)
}

fn group(args: &[String]) -> Action {
    let mut acc = account(args, &["-g", "--gid", "-K", "-p"]);
    // groupadd -g GID: `account` read it as a group name.
    if let Some(g) = acc.group.take() {
        acc.id = g.parse().ok();
    }
    if acc.name.is_empty() {
        return Action::Step;
    }
    Action::Group(acc)
}

fn mkdir(args: &[String]) -> Action {
    let paths: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .cloned()
        .collect();
    if paths.is_empty()
        || args.iter().any(|a| a == "-m")
        || paths.iter().any(|p| !p.starts_with('/'))
    {
        return Action::Step;
    }
    Action::Mkdir(paths)
}

fn chmod(args: &[String]) -> Action {
    let recursive = args.iter().any(|a| a == "-R" || a == "--recursive");
    let rest: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let Some((mode, paths)) = rest.split_first() else {
        return Action::Step;
    };
    if paths.is_empty() || paths.iter().any(|p| !p.starts_with('/') || p.contains('*')) {
        return Action::Step;
    }
    Action::Chmod {
        mode: (*mode).clone(),
        paths: paths.iter().map(|p| (*p).clone()).collect(),
        recursive,
    }
}

fn chown(args: &[String]) -> Action {
    let recursive = args.iter().any(|a| a == "-R" || a == "--recursive");
    let rest: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let Some((owner, paths)) = rest.split_first() else {
        return Action::Step;
    };
    if paths.is_empty() || paths.iter().any(|p| !p.starts_with('/') || p.contains('*')) {
        return Action::Step;
    }
    Action::Chown {
        owner: (*owner).clone(),
        paths: paths.iter().map(|p| (*p).clone()).collect(),
        recursive,
    }
}

fn ln(args: &[String]) -> Action {
    let symbolic = args
        .iter()
        .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('s'));
    let rest: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    match (symbolic, rest.as_slice()) {
        (true, [target, link]) if link.starts_with('/') && !link.ends_with('/') => {
            Action::Symlink {
                target: (*target).clone(),
                link: (*link).clone(),
            }
        }
        _ => Action::Step,
    }
}

/// `rm -rf` of caches and apt lists: nothing to do (ocibuild writes none); other paths stay.
fn rm(args: &[String]) -> Action {
    let paths: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let cache = |p: &str| {
        p.starts_with("/var/lib/apt/lists")
            || p.starts_with("/var/cache/")
            || p.starts_with("/tmp/")
            || p.contains("/.cache")
            || p.starts_with("~/.cache")
            || p.contains("/.cache/pip")
            || p.starts_with("/var/log/")
    };
    if !paths.is_empty() && paths.iter().all(|p| cache(p)) {
        return Action::Nothing("caches, apt lists and /tmp: ocibuild writes none into the image");
    }
    Action::Step
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apt_and_pip() {
        assert_eq!(
            classify("DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 curl=8.5.0-2"),
            Action::AptInstall {
                packages: vec!["python3".into(), "curl=8.5.0-2".into()]
            }
        );
        assert_eq!(
            classify("pip3 install --no-cache-dir -r requirements.txt 'numpy<2' pip"),
            Action::Pip {
                requirements: vec!["-r requirements.txt".into(), "numpy<2".into()],
                notes: vec!["pip / setuptools / wheel / uv themselves are not needed: ocibuild installs the wheels".into()],
            }
        );
        assert_eq!(classify("pip install -e ."), Action::Step);
        assert_eq!(
            classify("python3 -m pip install --upgrade pip"),
            Action::Nothing("pip itself is not in the image: ocibuild installs the wheels")
        );
        assert_eq!(
            classify("rm -rf /var/lib/apt/lists/*"),
            Action::Nothing("caches, apt lists and /tmp: ocibuild writes none into the image")
        );
        assert_eq!(classify("curl -fsSL https://x | sh"), Action::Step);
    }

    #[test]
    fn accounts_and_paths() {
        assert_eq!(
            classify("useradd -m -u 1001 -s /bin/bash app"),
            Action::User(Account {
                name: "app".into(),
                id: Some(1001),
                shell: Some("/bin/bash".into()),
                ..Account::default()
            })
        );
        assert_eq!(
            classify("groupadd -g 2000 data"),
            Action::Group(Account {
                name: "data".into(),
                id: Some(2000),
                ..Account::default()
            })
        );
        assert_eq!(
            classify("ln -sf /usr/bin/python3 /usr/local/bin/python"),
            Action::Symlink {
                target: "/usr/bin/python3".into(),
                link: "/usr/local/bin/python".into()
            }
        );
        assert_eq!(
            classify("mkdir -p /data /models"),
            Action::Mkdir(vec!["/data".into(), "/models".into()])
        );
    }
}
