//! What each maintainer script of the installed packages would have done on `dpkg
//! --configure`, and what ocibuild did instead: every action [`shell::scan`] finds, and every
//! directive of the package's `triggers` file, with an [`Outcome`]. Nothing is run; the only
//! effects made at build time are those a pure function of the packages' files gives (the
//! alternatives, the CA bundle, the baseline directories, the accounts). The caches that
//! packages' own tools write in their own formats (fontconfig's, the MIME database,
//! `loaders.cache`, `gschemas.compiled`, byte-compiled Python) are listed as not done, with
//! the consequence: running those tools belongs to a build step that runs package code.

use serde::Serialize;

use super::shell::{self, Found, UNRECOGNIZED};
use super::{accounts, Installed, Report};
use crate::apt::scripts::DebScripts;
use crate::apt::UsrMerge;

/// One effect of a script: the action, what came of it, and the lines it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Effect {
    /// `preinst`, `postinst`, `prerm`, `postrm`, `config` or `triggers`.
    pub script: String,
    /// The action (`ldconfig`, `fc-cache`, `services`, `mkdir`, `unrecognized`…).
    pub action: String,
    pub outcome: Outcome,
    /// What ocibuild did instead (`emulated`), why an image needs none (`not-needed`), or
    /// the consequence of it not being done (`not-done`).
    pub detail: String,
    /// The script's lines (continuations joined) or the `triggers` directive.
    pub lines: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Emulated,
    NotNeeded,
    NotDone,
}

/// What the outcomes read from.
pub struct Ctx<'a> {
    pub scripts: &'a [DebScripts],
    pub installed: &'a Installed,
    /// Paths the `rootfs` layer adds (relative).
    pub planned: &'a std::collections::BTreeSet<String>,
    pub usr_merge: &'a UsrMerge,
    pub report: &'a Report,
}

const REMOVAL: &str =
    "runs only when the package is removed or upgraded, or its installation fails: an image's packages are installed once";
const BYTECOMPILE: &str = "no .pyc files: Python compiles each module when first imported (in memory with PYTHONDONTWRITEBYTECODE=1, as the recipes set it); byte-compiling runs the interpreter and embeds source mtimes unless --invalidation-mode unchecked-hash (a build step's job, not done)";

impl Ctx<'_> {
    fn rel(&self, abs: &str) -> String {
        self.usr_merge
            .rewrite(abs.trim_start_matches('/').trim_end_matches('/'))
    }

    /// Whether the image holds `abs` (the packages' layer or the `rootfs` layer).
    fn exists(&self, abs: &str) -> bool {
        let raw = abs.trim_start_matches('/').trim_end_matches('/');
        [raw.to_string(), self.rel(abs)]
            .iter()
            .any(|r| r.is_empty() || self.installed.paths.contains(r) || self.planned.contains(r))
    }

    /// The packages' paths under `abs` whose name `pick` accepts.
    fn under(&self, abs: &str, pick: &dyn Fn(&str) -> bool) -> Vec<&String> {
        let prefix = format!("{}/", self.rel(abs));
        self.installed
            .paths
            .range(prefix.clone()..)
            .take_while(|p| p.starts_with(&prefix))
            .filter(|p| pick(p))
            .collect()
    }
}

/// The effects of one package's scripts; never empty when it has any.
pub fn of_package(s: &DebScripts, ctx: &Ctx<'_>) -> Vec<Effect> {
    let mut out = Vec::new();
    match s.package.as_str() {
        "base-passwd"
            if ctx
                .report
                .accounts
                .as_ref()
                .is_some_and(|a| a.origin == accounts::Origin::BasePasswd) =>
        {
            out.push(effect(
                "postinst",
                "accounts",
                Outcome::Emulated,
                "/etc/passwd and /etc/group from passwd.master and group.master".into(),
                vec![],
            ));
        }
        "base-files" if ctx.report.baseline => {
            out.push(effect(
                "postinst",
                "baseline",
                Outcome::Emulated,
                "the directories of its postinst (the baseline)".into(),
                vec![],
            ));
        }
        _ => {}
    }
    for script in &s.scripts {
        if script == "triggers" {
            for t in &s.triggers {
                out.push(trigger(s, t, ctx));
            }
            continue;
        }
        let Some(text) = s.texts.get(script) else {
            out.push(effect(
                script,
                UNRECOGNIZED,
                Outcome::NotDone,
                "not read (the script is not text)".into(),
                vec![],
            ));
            continue;
        };
        let found = shell::scan(text);
        if found.is_empty() {
            out.push(effect(
                script,
                "nothing",
                Outcome::NotNeeded,
                "the script holds only shell structure (tests, messages, exit)".into(),
                vec![],
            ));
        }
        for f in found {
            let (outcome, detail) = match script.as_str() {
                "prerm" | "postrm" => (Outcome::NotNeeded, REMOVAL.to_string()),
                "config" => (Outcome::NotNeeded, "debconf's config script asks the questions; a non-interactive build takes their defaults, and the script changes nothing on disk".to_string()),
                _ => outcome(s, script, &f, ctx),
            };
            out.push(effect(script, f.action, outcome, detail, f.lines));
        }
    }
    out
}

fn effect(
    script: &str,
    action: &str,
    outcome: Outcome,
    detail: String,
    lines: Vec<String>,
) -> Effect {
    Effect {
        script: script.to_string(),
        action: action.to_string(),
        outcome,
        detail,
        lines,
    }
}

/// A `triggers` directive: `interest*` with the files or packages that activate it, or
/// `activate*`.
fn trigger(s: &DebScripts, directive: &str, ctx: &Ctx<'_>) -> Effect {
    let mut w = directive.split_whitespace();
    let (kind, name) = (w.next().unwrap_or(""), w.next().unwrap_or(""));
    let lines = vec![directive.to_string()];
    let mk = |action: &str, o: Outcome, d: String| effect("triggers", action, o, d, lines.clone());
    if kind.starts_with("activate") {
        if name == "ldconfig" {
            let (o, d) = ldconfig(ctx);
            return mk("ldconfig", o, d);
        }
        let interested: Vec<&str> = ctx
            .scripts
            .iter()
            .filter(|o| {
                o.triggers
                    .iter()
                    .any(|t| t.starts_with("interest") && t.split_whitespace().nth(1) == Some(name))
            })
            .map(|o| o.package.as_str())
            .collect();
        let d = if interested.is_empty() {
            format!("activates {name}: no installed package is interested in it")
        } else {
            format!(
                "activates {name}: its effect is reported under {}",
                interested.join(", ")
            )
        };
        return mk("dpkg-trigger", Outcome::NotNeeded, d);
    }
    if !kind.starts_with("interest") {
        return mk(
            UNRECOGNIZED,
            Outcome::NotDone,
            "not a triggers directive ocibuild knows".into(),
        );
    }
    let action = trigger_action(name);
    if name.starts_with('/') {
        let hits = ctx.under(name, &|_| true);
        if hits.is_empty() {
            return mk(
                action,
                Outcome::NotNeeded,
                format!("no installed file under {name} activates it"),
            );
        }
        let (o, d) = match action {
            "" => (
                Outcome::NotDone,
                format!("{}'s postinst `triggered` is not run", s.package),
            ),
            a => outcome(
                s,
                "triggers",
                &Found {
                    action: a,
                    lines: vec![],
                    paths: vec![],
                },
                ctx,
            ),
        };
        let more = if hits.len() > 1 {
            format!(" and {} more", hits.len() - 1)
        } else {
            String::new()
        };
        return mk(
            if action.is_empty() { "trigger" } else { action },
            o,
            format!("activated by /{}{more}: {d}", hits[0]),
        );
    }
    // An explicit trigger: activated by a package's `activate NAME` or `dpkg-trigger NAME`.
    let by: Vec<&str> = ctx
        .scripts
        .iter()
        .filter(|o| {
            o.triggers
                .iter()
                .any(|t| t.starts_with("activate") && t.split_whitespace().nth(1) == Some(name))
                || o.texts.values().any(|t| {
                    t.lines().any(|l| {
                        l.contains("dpkg-trigger") && l.split_whitespace().any(|x| x == name)
                    })
                })
        })
        .map(|o| o.package.as_str())
        .collect();
    if by.is_empty() {
        return mk(
            if action.is_empty() { "trigger" } else { action },
            Outcome::NotNeeded,
            format!("no installed package activates {name}"),
        );
    }
    let (o, d) = match action {
        "" => (
            Outcome::NotDone,
            format!("{}'s postinst `triggered` is not run", s.package),
        ),
        a => outcome(
            s,
            "triggers",
            &Found {
                action: a,
                lines: vec![],
                paths: vec![],
            },
            ctx,
        ),
    };
    mk(
        if action.is_empty() { "trigger" } else { action },
        o,
        format!("activated by {}: {d}", by.join(", ")),
    )
}

/// The action an interest stands for, by its path or name; `""` when unknown.
fn trigger_action(name: &str) -> &'static str {
    let n = name.trim_end_matches('/');
    match n {
        "ldconfig" => "ldconfig",
        "update-ca-certificates" | "update-ca-certificates-fresh" => "update-ca-certificates",
        _ if n.contains("/fonts") => "fc-cache",
        _ if n.ends_with("/mime/packages") => "update-mime-database",
        _ if n.contains("gdk-pixbuf") => "gdk-pixbuf-query-loaders",
        _ if n.ends_with("glib-2.0/schemas") => "glib-compile-schemas",
        _ if n.ends_with("gio/modules") => "gio-querymodules",
        _ if n.ends_with("/man") => "mandb",
        _ if n.contains("/icons") => "gtk-update-icon-cache",
        _ if n.ends_with("/applications") => "update-desktop-database",
        _ if n.ends_with("/info") => "install-info",
        _ if n.contains("python3") && n.contains("-packages") => "python-bytecompile",
        _ => "",
    }
}

fn ldconfig(ctx: &Ctx<'_>) -> (Outcome, String) {
    let ld = &ctx.report.ld_so_cache;
    if ld.needed {
        (
            Outcome::NotDone,
            format!("no /etc/ld.so.cache: {}", ld.reason),
        )
    } else {
        (Outcome::NotNeeded, format!("no ld.so.cache needed: the dynamic loader finds every library in its default directories without one ({})", ld.reason.trim_start_matches("not needed: ")))
    }
}

/// What came of one action of a preinst or postinst.
fn outcome(s: &DebScripts, script: &str, f: &Found, ctx: &Ctx<'_>) -> (Outcome, String) {
    use Outcome::*;
    let files = |dir: &str, ext: &str| ctx.under(dir, &|p: &str| p.ends_with(ext)).len();
    let r = |o: Outcome, d: &str| (o, d.to_string());
    match f.action {
        "update-alternatives" if script == "postinst" => alternatives(s, ctx),
        "update-alternatives" if f.lines.iter().any(|l| l.contains("--install")) => r(NotDone, "an --install outside the postinst is not read: its links are missing"),
        "update-alternatives" => r(NotNeeded, "removals, --auto or queries: what an upgrade tidies, nothing a fresh install needs"),
        "ldconfig" => ldconfig(ctx),
        "services" => r(NotNeeded, "services are neither enabled nor started in an image: a container runs its command, not an init system"),
        "systemd-tmpfiles" => r(NotDone, "the paths of its tmpfiles.d entry are not created: systemd-tmpfiles runs at boot, and nothing runs it in a container"),
        "accounts" => accounts_outcome(f, ctx),
        "dpkg-trigger" => r(NotNeeded, "activates a trigger: the interested package's effect is reported under that package"),
        "python-bytecompile" => r(NotDone, BYTECOMPILE),
        "python-rtupdate" => {
            let hooks = ctx.under("/usr/share/python3/runtime.d", &|p: &str| p.ends_with(".rtupdate") || p.ends_with(".rtinstall"));
            if hooks.is_empty() {
                r(NotNeeded, "no installed package has a runtime hook in /usr/share/python3/runtime.d")
            } else {
                (NotDone, format!("the runtime hooks of /usr/share/python3/runtime.d ({}) are not run", hooks.len()))
            }
        }
        "update-mime-database" if files("/usr/share/mime/packages", ".xml") == 0 => r(NotNeeded, "no MIME package in /usr/share/mime/packages"),
        "update-mime-database" => r(NotDone, "no MIME database (/usr/share/mime/mime.cache): programs that guess a file's type from shared-mime-info (GLib's g_content_type_guess, xdg-mime) find none; made by update-mime-database (a build step's job)"),
        "fc-cache" if ctx.under("/usr/share/fonts", &|_| true).is_empty() => r(NotNeeded, "no fonts under /usr/share/fonts"),
        "fc-cache" => r(NotDone, "no fontconfig cache in /var/cache/fontconfig: fontconfig scans every font at each program's first use (a slower start) and writes its cache where it may; made by fc-cache (a build step's job)"),
        "gdk-pixbuf-query-loaders" => {
            let n = ctx.installed.paths.iter().filter(|p| p.contains("gdk-pixbuf-2.0/2.10.0/loaders/") && p.ends_with(".so")).count();
            if n == 0 {
                r(NotNeeded, "no loader module in gdk-pixbuf-2.0/2.10.0/loaders: GdkPixbuf uses the loaders built into it, and loaders.cache would list none")
            } else {
                (NotDone, format!("no loaders.cache: GdkPixbuf cannot find the {n} loader module(s) installed (images of those formats fail to load); made by gdk-pixbuf-query-loaders (a build step's job)"))
            }
        }
        "glib-compile-schemas" if files("/usr/share/glib-2.0/schemas", ".gschema.xml") == 0 => r(NotNeeded, "no GSettings schema in /usr/share/glib-2.0/schemas"),
        "glib-compile-schemas" => r(NotDone, "no gschemas.compiled: GLib programs that read GSettings abort (\"No GSettings schemas are installed\"); made by glib-compile-schemas (a build step's job)"),
        "gio-querymodules" => {
            let n = ctx.installed.paths.iter().filter(|p| p.contains("/gio/modules/") && p.ends_with(".so")).count();
            if n == 0 {
                r(NotNeeded, "no GIO module installed: giomodule.cache would list none")
            } else {
                (NotDone, format!("no giomodule.cache: GIO loads all {n} module(s) at startup instead of on demand (works, slower)"))
            }
        }
        "update-ca-certificates" if s.package == "ca-certificates" && ctx.exists(&format!("/{}", crate::apt::deb::CA_BUNDLE)) => (Emulated, format!("/{} from the certificates it ships, all enabled (the per-certificate hash links of /etc/ssl/certs are not made: OpenSSL's CApath lookups find none; the bundle is what OpenSSL, Python and curl read)", crate::apt::deb::CA_BUNDLE)),
        "update-ca-certificates" => r(NotDone, "the CA bundle is not rebuilt"),
        "dpkg-maintscript-helper" => r(NotNeeded, "moves or removes what an older version shipped (conffiles, directories, symlinks): a fresh install has none"),
        "ucf" => r(NotDone, "the configuration file ucf installs from the package's template is missing"),
        "debconf" => r(NotNeeded, "debconf's questions: a non-interactive install takes their defaults (what the script does with the answers is listed with its other lines)"),
        "dpkg-divert" => r(NotDone, "the diversion is not made: the file stays where its package ships it"),
        "dpkg-statoverride" => r(NotDone, "the owner and mode override is not applied"),
        "mandb" if ctx.under("/usr/share/man", &|_| true).is_empty() => r(NotNeeded, "no manual page installed"),
        "mandb" => r(NotDone, "no man-db index (/var/cache/man/index.db): `man -k` and `apropos` find nothing; `man PAGE` works"),
        "host-only" => r(NotNeeded, "acts on the host's kernel, AppArmor, binfmt_misc or boot loader, which an image does not own"),
        "update-catalog" => r(NotDone, "SGML/XML catalog entries not registered: lookups by public identifier fail"),
        "install-info" => r(NotDone, "the info directory (/usr/share/info/dir) does not list its manuals"),
        "gtk-update-icon-cache" => r(NotDone, "no icon-theme.cache: GTK scans the theme's directories at startup (slower)"),
        "update-desktop-database" => r(NotDone, "no mimeinfo.cache: looking up the application for a MIME type finds none"),
        "setcap" => r(NotDone, "file capabilities not set: the program runs without them"),
        "locale-gen" => r(NotDone, "locales not generated: only C and C.UTF-8 exist"),
        "pam-auth-update" => r(NotDone, "PAM profiles not merged into /etc/pam.d/common-*"),
        "update-mime" => r(NotDone, "/etc/mailcap not updated"),
        "update-fonts-dir" => r(NotDone, "X font directory indexes (fonts.dir, fonts.alias) not made"),
        "mkdir" => {
            let (there, missing) = split_paths(f, ctx);
            if missing.is_empty() {
                (Emulated, format!("in the image already (from a package or the baseline): {there}"))
            } else if there.is_empty() {
                (NotDone, format!("not made: {missing} (a program that writes there must create it)"))
            } else {
                (NotDone, format!("not made: {missing} (in the image already: {there})"))
            }
        }
        "remove" => r(NotNeeded, "removes what an older version or a failed run left: a fresh install has none"),
        "owner-mode" => r(NotDone, "owner and mode not changed: the paths keep what their package gives them"),
        "files" => {
            let (there, missing) = split_paths(f, ctx);
            if missing.is_empty() {
                (NotNeeded, format!("in the image already: {there}"))
            } else {
                (NotDone, format!("not written: {missing}"))
            }
        }
        _ => r(NotDone, "not run: ocibuild does not know what these lines do"),
    }
}

/// The paths of a `mkdir` or file write that the image holds, and those it lacks (a path
/// computed when the script runs among them), each joined with `, `.
fn split_paths(f: &Found, ctx: &Ctx<'_>) -> (String, String) {
    let (mut there, mut missing) = (Vec::new(), Vec::new());
    for p in &f.paths {
        match p.as_str() {
            "" => missing.push("a path computed when the script runs"),
            p if ctx.exists(p) => there.push(p),
            p => missing.push(p),
        }
    }
    missing.dedup();
    (there.join(", "), missing.join(", "))
}

fn alternatives(s: &DebScripts, ctx: &Ctx<'_>) -> (Outcome, String) {
    let mut parts = Vec::new();
    for a in &s.alternatives {
        let won = ctx.report.alternatives.iter().find(|r| r.name == a.name);
        parts.push(match won {
            Some(w) if w.package == s.package && w.path == a.path => {
                format!("{} -> {}", w.link, w.path)
            }
            Some(w) => format!(
                "{}: {}'s {} won (priority {} against {})",
                a.name, w.package, w.path, w.priority, a.priority
            ),
            None if !ctx.exists(&a.path) => format!("{}: {} is not in the image", a.name, a.path),
            None => format!("{}: the base's choice kept", a.name),
        });
    }
    if !s.unread.is_empty() {
        return (
            Outcome::NotDone,
            format!(
                "not read without running the script, their links are missing: {}",
                s.unread.join("; ")
            ),
        );
    }
    if parts.is_empty() {
        return (
            Outcome::NotNeeded,
            "removals or queries only: nothing to install".into(),
        );
    }
    (Outcome::Emulated, parts.join("; "))
}

/// Accounts the script would add: emulated when each name it adds exists already.
fn accounts_outcome(f: &Found, ctx: &Ctx<'_>) -> (Outcome, String) {
    let Some(acc) = &ctx.report.accounts else {
        return (
            Outcome::NotDone,
            "the account is not created: declare it in [accounts]".into(),
        );
    };
    let mut names = Vec::new();
    for l in &f.lines {
        if let Some(last) = l
            .split(['|', ';', '&'])
            .next()
            .and_then(|c| c.split_whitespace().last())
        {
            names.push(last.trim_matches(|c| c == '"' || c == '\'').to_string());
        }
    }
    let known =
        |n: &str| acc.users.iter().any(|u| u.name == n) || acc.groups.iter().any(|(g, _)| g == n);
    if !names.is_empty() && names.iter().all(|n| known(n)) {
        (
            Outcome::Emulated,
            format!("exists already: {}", names.join(", ")),
        )
    } else {
        (
            Outcome::NotDone,
            "the account is not created: declare it in [accounts]".into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::recipe::Accounts;
    use crate::rootfs::{plan, Inputs};

    fn pkg(name: &str, scripts: &[(&str, &str)], triggers: &[&str]) -> DebScripts {
        let mut s = DebScripts {
            package: name.into(),
            triggers: triggers
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
            ..DebScripts::default()
        };
        for (n, text) in scripts {
            s.scripts.push(n.to_string());
            s.texts.insert(n.to_string(), text.to_string());
        }
        if !triggers.is_empty() {
            s.scripts.push("triggers".into());
        }
        s
    }

    fn effects_of(scripts: &[DebScripts], paths: &[&str]) -> BTreeMap<String, Vec<Effect>> {
        let installed = Installed {
            paths: paths.iter().map(std::string::ToString::to_string).collect(),
            ..Installed::default()
        };
        let (none, base, alts, usr) = (
            Accounts::default(),
            BTreeMap::new(),
            BTreeSet::new(),
            UsrMerge::all(),
        );
        let p = plan(&Inputs {
            scratch: true,
            system: true,
            base_accounts: &base,
            scripts,
            installed: &installed,
            declared: &none,
            config_user: None,
            base_alternatives: &alts,
            usr_merge: &usr,
            architecture: "amd64",
            has: None,
        })
        .unwrap();
        p.report
            .scripts_not_run
            .into_iter()
            .map(|s| (s.package, s.effects))
            .collect()
    }

    fn find<'a>(e: &'a [Effect], script: &str, action: &str) -> &'a Effect {
        e.iter()
            .find(|x| x.script == script && x.action == action)
            .unwrap_or_else(|| panic!("{script} {action}: {e:#?}"))
    }

    const FONTCACHE: &str = "#!/bin/sh\nset -e\nif [ \"$1\" = triggered ] || [ \"$1\" = configure ]; then\n  fc-cache -s\nfi\n";

    #[test]
    fn file_triggers_are_matched_against_the_image() {
        let scripts = [
            pkg(
                "fontconf",
                &[("postinst", FONTCACHE)],
                &[
                    "interest-noawait /usr/share/fonts",
                    "interest-noawait /usr/share/texmf/fonts",
                ],
            ),
            pkg("fonts-demo", &[], &[]),
            pkg("libdemo1", &[], &["activate-noawait ldconfig"]),
            pkg(
                "quiet",
                &[
                    ("postinst", "#!/bin/sh\nset -e\nexit 0\n"),
                    (
                        "prerm",
                        "#!/bin/sh\nupdate-alternatives --remove x /usr/bin/x\n",
                    ),
                ],
                &[],
            ),
        ];
        let fonts = ["usr/share/fonts", "usr/share/fonts/truetype/demo.ttf"];
        let e = effects_of(&scripts, &fonts);
        // A package that ships fonts activates the interest: fontconfig's cache is not made.
        let t = find(&e["fontconf"], "triggers", "fc-cache");
        assert_eq!(t.outcome, Outcome::NotDone, "{t:#?}");
        assert!(
            t.detail
                .starts_with("activated by /usr/share/fonts/truetype/demo.ttf"),
            "{t:#?}"
        );
        assert!(t.detail.contains("no fontconfig cache"), "{t:#?}");
        assert_eq!(t.lines, ["interest-noawait /usr/share/fonts"]);
        // The other interest has no file under it.
        let other = e["fontconf"]
            .iter()
            .find(|x| x.lines == ["interest-noawait /usr/share/texmf/fonts"])
            .unwrap();
        assert_eq!(other.outcome, Outcome::NotNeeded);
        assert_eq!(
            find(&e["fontconf"], "postinst", "fc-cache").outcome,
            Outcome::NotDone
        );
        // ldconfig with every library in the default directories: not needed, said so.
        let ld = find(&e["libdemo1"], "triggers", "ldconfig");
        assert_eq!(ld.outcome, Outcome::NotNeeded);
        // A package without scripts has no entry; one whose scripts do nothing still has one
        // per script, never an empty list.
        assert!(!e.contains_key("fonts-demo"));
        assert_eq!(
            find(&e["quiet"], "postinst", "nothing").outcome,
            Outcome::NotNeeded
        );
        let rm = find(&e["quiet"], "prerm", "update-alternatives");
        assert_eq!(
            (rm.outcome, rm.detail.as_str()),
            (Outcome::NotNeeded, REMOVAL)
        );
        // Without fonts the same trigger and postinst are not needed.
        let e = effects_of(&scripts, &[]);
        assert_eq!(
            find(&e["fontconf"], "triggers", "fc-cache").outcome,
            Outcome::NotNeeded
        );
        assert_eq!(
            find(&e["fontconf"], "postinst", "fc-cache").outcome,
            Outcome::NotNeeded
        );
    }

    #[test]
    fn explicit_triggers_alternatives_and_directories() {
        let scripts = [
            pkg("watcher", &[("postinst", "#!/bin/sh\n[ \"$1\" = triggered ] && /usr/lib/watcher/rebuild\n")], &["interest demo-refresh", "interest nobody-activates"]),
            pkg("plugin", &[("postinst", "#!/bin/sh\ndpkg-trigger --no-await demo-refresh\nmkdir -p /var/cache/plugin /tmp\n")], &[]),
            pkg("alt", &[("postinst", "update-alternatives --install /usr/bin/demo demo /usr/bin/demo.alt 10\n")], &[]),
        ];
        let mut s = scripts.to_vec();
        s[2].alternatives = crate::apt::scripts::parse_alternatives(&s[2].texts["postinst"]).0;
        let e = effects_of(&s, &["usr/bin/demo.alt"]);
        let t = e["watcher"]
            .iter()
            .find(|x| x.lines == ["interest demo-refresh"])
            .unwrap();
        assert_eq!(
            (t.action.as_str(), t.outcome),
            ("trigger", Outcome::NotDone),
            "{t:#?}"
        );
        assert!(
            t.detail
                .starts_with("activated by plugin: watcher's postinst"),
            "{t:#?}"
        );
        let t = e["watcher"]
            .iter()
            .find(|x| x.lines == ["interest nobody-activates"])
            .unwrap();
        assert_eq!(t.outcome, Outcome::NotNeeded);
        // The watcher's own rebuild command is not known: listed, not dropped.
        assert_eq!(
            find(&e["watcher"], "postinst", "unrecognized").lines.len(),
            1
        );
        // /tmp is the baseline's; /var/cache/plugin is nobody's.
        let m = find(&e["plugin"], "postinst", "mkdir");
        assert_eq!(m.outcome, Outcome::NotDone);
        assert_eq!(
            m.detail,
            "not made: /var/cache/plugin (in the image already: /tmp)"
        );
        let a = find(&e["alt"], "postinst", "update-alternatives");
        assert_eq!(
            (a.outcome, a.detail.as_str()),
            (Outcome::Emulated, "/usr/bin/demo -> /usr/bin/demo.alt")
        );
    }
}
