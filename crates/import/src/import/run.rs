//! `RUN` lines in an image stage: split into parts, each mapped (apt, pip, accounts, paths)
//! or kept in the `[[step]]` of that line.

use parse_dockerfile::{Command, Instruction, RunInstruction};

use super::classify::{classify, requirement_name, Account, Action};
use super::draft::{PathDraft, StepDraft, StepImage, UserDraft};
use super::map::{join_continuations, resolve, Mapper};
use super::parse::expand;
use super::shell::{parts, words};
use super::stages::Stages;
use super::{Class, Part};

/// Commands that reach the network: a step running them asks for it.
const NETWORK_TOOLS: &[&str] = &[
    "curl",
    "wget",
    "git",
    "pip",
    "pip3",
    "uv",
    "conda",
    "mamba",
    "micromamba",
    "npm",
    "yarn",
    "cargo",
    "go",
    "apt-get",
    "apt",
    "apk",
    "gem",
    "huggingface-cli",
    "hf",
    "poetry",
    "pipx",
];

/// The shell script of a RUN, and whether it is a bare heredoc (its body a script).
/// The shell script of a RUN: its line, or a heredoc's body (`RUN <<EOF`), or the command
/// after the heredoc fed that body (`RUN <<EOF python3`). The parser gives a heredoc RUN's
/// arguments as what follows the delimiter on its line.
pub(super) fn script(r: &RunInstruction<'_>) -> String {
    match &r.arguments {
        Command::Exec(v) => v
            .value
            .iter()
            .map(|s| shell_quote(&s.value))
            .collect::<Vec<_>>()
            .join(" "),
        Command::Shell(s) => {
            let cmd = s.value.trim();
            let Some(doc) = r.here_docs.first() else {
                return join_continuations(cmd);
            };
            let body = doc.value.trim_end();
            if cmd.is_empty() {
                return body.to_string();
            }
            format!("{cmd} <<'IMPORTED_HEREDOC'\n{body}\nIMPORTED_HEREDOC")
        }
        _ => String::new(),
    }
}

/// Whether a part opens or closes a compound shell command.
fn is_compound(part: &str) -> bool {
    let first = part.split_whitespace().next().unwrap_or("");
    matches!(
        first,
        "if" | "then"
            | "else"
            | "elif"
            | "fi"
            | "for"
            | "do"
            | "done"
            | "while"
            | "until"
            | "case"
            | "esac"
    )
}

/// Whether a RUN's script is a heredoc body of its own (`RUN <<EOF`): split into parts.
pub(super) fn is_bare_heredoc(r: &RunInstruction<'_>) -> bool {
    !r.here_docs.is_empty()
        && matches!(&r.arguments, Command::Shell(s) if s.value.trim().is_empty())
}

pub(super) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// What the step's outputs look like from the command: `(path, dest)`.
fn guess_outputs(part: &str) -> Vec<String> {
    let w = words(part);
    let mut out = Vec::new();
    for (i, a) in w.iter().enumerate() {
        let next = w.get(i + 1);
        let value = match a.as_str() {
            "-w" | "--wheel-dir" | "--prefix" | "-p" | "--target" | "-C" | "--directory" => {
                next.cloned()
            }
            "-o" | "-O" | "--output" | "--output-document" => {
                next.and_then(|f| f.rsplit_once('/').map(|(d, _)| d.to_string()))
            }
            "venv" | "virtualenv" => next.cloned(),
            "clone" => w[i + 1..]
                .iter()
                .filter(|x| !x.starts_with('-'))
                .nth(1)
                .cloned(),
            _ => a
                .strip_prefix("--prefix=")
                .or_else(|| a.strip_prefix("PREFIX="))
                .or_else(|| a.strip_prefix("DESTDIR="))
                .or_else(|| a.strip_prefix("--wheel-dir="))
                .or_else(|| a.strip_prefix("--target="))
                .map(str::to_string),
        };
        if let Some(v) = value.filter(|v| {
            v.starts_with('/') && v.len() > 1 && !v.starts_with("/tmp") && !v.contains('$')
        }) {
            let v = v.trim_end_matches('/').to_string();
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

pub(super) fn uses_network(script: &str) -> bool {
    parts(script).iter().any(|p| {
        words(p)
            .iter()
            .find(|w| !w.contains('=') && *w != "sudo")
            .is_some_and(|c| NETWORK_TOOLS.contains(&c.rsplit('/').next().unwrap_or(c)))
    })
}

/// A step name from a stage label: lowercase letters, digits, `.`, `_`, `-`.
pub(super) fn step_name(label: &str, taken: &[StepDraft]) -> String {
    let base: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let base = if base
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
    {
        base
    } else {
        format!("s{base}")
    };
    let mut name = base.clone();
    let mut n = 2;
    while taken.iter().any(|s| s.name == name) {
        name = format!("{base}-{n}");
        n += 1;
    }
    name
}

impl Mapper<'_> {
    /// A RUN in an image stage: each part mapped, or kept in this RUN's `[[step]]`.
    pub(super) fn run(
        &mut self,
        i: &Instruction<'_>,
        r: &RunInstruction<'_>,
        _st: &Stages,
        _si: usize,
    ) {
        let mut parts_out = Vec::new();
        let mut network = false;
        for f in &r.options {
            let v = f
                .value
                .as_ref()
                .map(|v| v.value.to_string())
                .unwrap_or_default();
            let (class, note) = match (&*f.name.value, v.as_str()) {
                ("mount", m) if m.contains("type=cache") => (Class::Mapped, "dropped: no cache is needed (nothing is downloaded twice)".to_string()),
                ("mount", m) if m.contains("type=secret") || m.contains("type=ssh") => (Class::NotTranslated, "a step gets no secrets: fetch what it was for with a step `fetch` (a login in netrc), or do that part outside the build".to_string()),
                ("mount", _) => (Class::Approximated, "a bind mount: give the step those files as `inputs`".to_string()),
                ("network", "host" | "default") => {
                    network = true;
                    (Class::Mapped, "network = true".to_string())
                }
                ("network", _) => (Class::Mapped, "steps have no network".to_string()),
                _ => (Class::Approximated, "no counterpart".to_string()),
            };
            parts_out.push(Part {
                text: format!("--{}={v}", f.name.value),
                class,
                note,
            });
        }
        let script = script(r);
        let bare_heredoc = is_bare_heredoc(r);
        let mut split = if r.here_docs.is_empty() || bare_heredoc {
            parts(&script)
        } else {
            vec![script.clone()]
        };
        // `if`, `for`, `while`, `case`: the parts depend on each other; one step part.
        if split.iter().any(|p| is_compound(p)) {
            split = vec![script.clone()];
        }
        let mut keep = Vec::new();
        for p in split {
            let expanded = expand(&p, &self.vars);
            let (class, note) = self.run_part(i, &p, &expanded, &mut keep);
            parts_out.push(Part {
                text: clip(&p),
                class,
                note,
            });
        }
        let substantive = keep.iter().any(|k: &String| {
            let first = words(k).into_iter().next().unwrap_or_default();
            !(matches!(first.as_str(), "cd" | "export" | "set" | "true")
                || words(k).iter().all(|w| w.contains('=')))
        });
        if substantive {
            let name = step_name(&format!("run-{}", self.text_of(i).0), &self.draft.steps);
            self.step_for(i, &name, keep, network);
            let (guessed, outs) = {
                let s = self.draft.steps.last();
                (
                    s.is_some_and(|s| s.outputs_guessed),
                    s.map(|s| {
                        s.outputs
                            .iter()
                            .map(|o| o.0.clone())
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default(),
                )
            };
            for p in parts_out.iter_mut().filter(|p| p.class == Class::Step) {
                if guessed {
                    p.note = format!("[[step]] {name}; outputs {outs} (guessed from the command)");
                } else {
                    p.class = Class::Approximated;
                    p.note = format!("[[step]] {name}: declare the outputs");
                }
            }
        } else {
            for p in parts_out.iter_mut().filter(|p| p.class == Class::Step) {
                p.class = Class::Mapped;
                p.note = "no effect without a step".into();
            }
        }
        let class = parts_out
            .iter()
            .map(|p| p.class)
            .max()
            .unwrap_or(Class::Mapped);
        let summary = summarize(&parts_out);
        self.row(i, class, summary, parts_out);
    }

    fn run_part(
        &mut self,
        i: &Instruction<'_>,
        raw: &str,
        p: &str,
        keep: &mut Vec<String>,
    ) -> (Class, String) {
        let origin = format!("{}:{} RUN {}", self.file, self.text_of(i).0, clip(raw));
        match classify(p) {
            Action::Nothing(why) => (Class::Mapped, format!("nothing to do: {why}")),
            Action::AptUpdate => {
                self.add_apt_source(origin);
                match &self.distro {
                    Some(d) if !d.assumed => (Class::Mapped, format!("[[apt.source]] {} (give its key at {})", d.suite, self.draft.apt_sources[0].signed_by)),
                    Some(d) => (Class::Approximated, format!("[[apt.source]] {}: assumed from the image's name; check it", d.suite)),
                    None => (Class::Approximated, "[[apt.source]]: the base's distribution is unknown: set url, suite and signed-by".into()),
                }
            }
            Action::AptInstall { packages } => {
                for pk in &packages {
                    if !self.draft.apt_packages.iter().any(|(x, _)| x == pk) {
                        self.draft.apt_packages.push((pk.clone(), origin.clone()));
                    }
                }
                let rec = if p.contains("--no-install-recommends") {
                    ""
                } else {
                    " (Recommends are not installed)"
                };
                (
                    Class::Mapped,
                    format!("[apt] packages {}{rec}", packages.join(" ")),
                )
            }
            Action::AptOther(why) => (Class::NotTranslated, why),
            Action::Pip {
                requirements,
                notes,
            } => self.pip_part(p, &requirements, notes, &origin),
            Action::User(a) => self.account_user(a, origin),
            Action::Group(a) => {
                let gid = a
                    .id
                    .unwrap_or_else(|| next_id(self.draft.groups.iter().map(|g| g.1), a.system));
                let class = if a.id.is_some() {
                    Class::Mapped
                } else {
                    Class::Approximated
                };
                self.draft.groups.push((a.name.clone(), gid, origin));
                (
                    class,
                    format!(
                        "[[accounts.group]] {} gid {gid}{}",
                        a.name,
                        if a.id.is_none() {
                            " (chosen: give -g)"
                        } else {
                            ""
                        }
                    ),
                )
            }
            Action::Mkdir(paths) => {
                for path in &paths {
                    self.path_entry(path, origin.clone());
                }
                (Class::Mapped, format!("[[path]] {}", paths.join(" ")))
            }
            Action::Chmod {
                mode,
                paths,
                recursive,
            } => self.chmod_part(raw, &mode, &paths, recursive, &origin, keep),
            Action::Chown {
                owner,
                paths,
                recursive,
            } => self.chown_part(raw, &owner, &paths, recursive, &origin, keep),
            Action::Symlink { target, link } => {
                self.path_entry(&link, origin).symlink = Some(target.clone());
                (Class::Mapped, format!("[[path]] {link} -> {target}"))
            }
            Action::Step => {
                keep.push(raw.to_string());
                let first = words(p)
                    .into_iter()
                    .find(|w| !w.contains('='))
                    .unwrap_or_default();
                let tool = first.rsplit('/').next().unwrap_or(&first).to_string();
                let note = match tool.as_str() {
                    "conda" | "mamba" | "micromamba" => "conda: no counterpart; kept in a step (or move the packages to requirements.in)",
                    "curl" | "wget" => "a download: kept in a step (a `fetch` with sha256 is better)",
                    "uv" if p.contains(" sync") => "uv sync: `[python] lock = \"uv.lock\"` reads uv's lock as it is, and `project = \".\"` builds the project's own package (with an `sdist-builder`); kept in a step",
                    "poetry" => "poetry install: `poetry export` gives requirements for [python]; kept in a step",
                    _ => "kept in a step",
                };
                (Class::Step, note.into())
            }
        }
    }

    fn pip_part(
        &mut self,
        p: &str,
        requirements: &[String],
        notes: Vec<String>,
        origin: &str,
    ) -> (Class, String) {
        let venv = words(p).iter().find(|w| !w.contains('=')).is_some_and(|c| {
            c.contains('/') && !c.starts_with("/usr/bin") && !c.starts_with("/usr/local/bin")
        });
        let mut unresolved = Vec::new();
        for r in requirements {
            let line = match r.strip_prefix("-r ").or_else(|| r.strip_prefix("-c ")) {
                Some(f) => {
                    if let Some(ctx) = self.image_to_context(&resolve(&self.workdir, f)) {
                        format!("{} {ctx}", &r[..2])
                    } else {
                        unresolved.push(f.to_string());
                        continue;
                    }
                }
                None => r.clone(),
            };
            if !self.requirements.iter().any(|(x, _)| *x == line) {
                self.requirements.push((line, origin.to_string()));
            }
        }
        let names: Vec<String> = requirements
            .iter()
            .map(|r| {
                if r.starts_with('-') {
                    r.clone()
                } else {
                    requirement_name(r)
                }
            })
            .collect();
        let mut note = format!(
            "requirements.in: {} ([python] lock = \"pylock.toml\")",
            names.join(" ")
        );
        for n in notes {
            note.push_str("; ");
            note.push_str(&n);
        }
        if !unresolved.is_empty() {
            return (
                Class::Approximated,
                format!(
                    "{note}; {}: not a file a COPY put there: add it to requirements.in by hand",
                    unresolved.join(", ")
                ),
            );
        }
        if venv {
            return (
                Class::Approximated,
                format!(
                    "{note}; installed into the image's site-packages, not the virtual environment"
                ),
            );
        }
        (Class::Mapped, note)
    }

    fn chmod_part(
        &mut self,
        raw: &str,
        mode: &str,
        paths: &[String],
        recursive: bool,
        origin: &str,
        keep: &mut Vec<String>,
    ) -> (Class, String) {
        let octal = mode.len() >= 3 && mode.chars().all(|c| c.is_digit(8));
        if !octal || recursive {
            keep.push(raw.to_string());
            return (Class::Step, "symbolic or recursive chmod".into());
        }
        let mut layer = false;
        for path in paths {
            layer |= self.under_layer(path);
            self.path_entry(path, origin.to_string()).mode = Some(format!("{mode:0>4}"));
        }
        if layer {
            return (Class::Approximated, "a copied file's mode: set it on disk and use mode = \"preserve\" on its layer ([[path]] mode given too)".into());
        }
        (Class::Mapped, format!("[[path]] mode {mode}"))
    }

    fn chown_part(
        &mut self,
        raw: &str,
        owner: &str,
        paths: &[String],
        recursive: bool,
        origin: &str,
        keep: &mut Vec<String>,
    ) -> (Class, String) {
        let Some(num) = self.numeric_owner(owner) else {
            keep.push(raw.to_string());
            return (
                Class::Step,
                format!("owner {owner}: not a declared account"),
            );
        };
        let mut layer = false;
        for path in paths {
            layer |= self.under_layer(path);
            for l in self
                .draft
                .layers
                .iter_mut()
                .filter(|l| l.dest.starts_with(path))
            {
                l.owner = Some(num.clone());
            }
            self.path_entry(path, origin.to_string()).owner = Some(num.clone());
        }
        if recursive || layer {
            return (
                Class::Approximated,
                format!("[[path]] owner {num}, and the owner of the layers copied below it"),
            );
        }
        (Class::Mapped, format!("[[path]] owner {num}"))
    }

    /// The context file a COPY put at `path` in the image (as a recipe path).
    fn image_to_context(&self, path: &str) -> Option<String> {
        self.copied.iter().rev().find_map(|(src, dest)| {
            if path == dest {
                return Some(src.clone());
            }
            let rest = path
                .strip_prefix(dest.as_str())?
                .strip_prefix('/')
                .or_else(|| (dest == "/").then(|| path.trim_start_matches('/')))?;
            Some(if src == "." {
                rest.to_string()
            } else {
                format!("{src}/{rest}")
            })
        })
    }

    fn account_user(&mut self, a: Account, origin: String) -> (Class, String) {
        let chosen = a.id.is_none();
        let uid =
            a.id.unwrap_or_else(|| next_id(self.draft.users.iter().map(|u| u.uid), a.system));
        let gid = a.group.as_ref().and_then(|g| {
            g.parse::<u32>()
                .ok()
                .or_else(|| self.draft.groups.iter().find(|x| x.0 == *g).map(|x| x.1))
        });
        self.draft.users.push(UserDraft {
            name: a.name.clone(),
            uid,
            gid,
            home: a.home,
            shell: a.shell,
            origin,
        });
        let class = if chosen {
            Class::Approximated
        } else {
            Class::Mapped
        };
        (
            class,
            format!(
                "[[accounts.user]] {} uid {uid}{}",
                a.name,
                if chosen {
                    " (chosen: useradd would pick the first free id; give -u)"
                } else {
                    ""
                }
            ),
        )
    }

    fn under_layer(&self, path: &str) -> bool {
        self.draft.layers.iter().any(|l| {
            path.starts_with(l.dest.as_str())
                && (path.len() == l.dest.len()
                    || l.dest == "/"
                    || path.as_bytes().get(l.dest.len()) == Some(&b'/'))
        })
    }

    fn path_entry(&mut self, path: &str, origin: String) -> &mut PathDraft {
        let path = resolve("/", path);
        let idx = if let Some(idx) = self.draft.paths.iter().position(|p| p.path == path) {
            idx
        } else {
            self.draft.paths.push(PathDraft {
                path,
                origin,
                ..PathDraft::default()
            });
            self.draft.paths.len() - 1
        };
        &mut self.draft.paths[idx]
    }

    fn step_for(&mut self, i: &Instruction<'_>, name: &str, keep: Vec<String>, network: bool) {
        let image = match &self.last_step {
            Some(s) => StepImage::Step(s.clone()),
            None if self.stage_image == "scratch" || self.stage_image.is_empty() => {
                StepImage::Image("TODO-builder-image".into())
            }
            None => StepImage::Image(self.stage_image.clone()),
        };
        let mut outputs: Vec<(String, String, bool)> = Vec::new();
        for k in &keep {
            for o in guess_outputs(&expand(k, &self.vars)) {
                if !outputs.iter().any(|x| x.0 == o) {
                    outputs.push((o.clone(), o, true));
                }
            }
        }
        let guessed = !outputs.is_empty();
        if !guessed {
            outputs.push(("/out".into(), "/".into(), true));
        }
        let script = keep.join("\n");
        let network = network || uses_network(&script);
        // A step gets the recipe's [args] in its environment: only an ARG of another value
        // than its [args] entry's (declared again) is written.
        let mut env = self.env.clone();
        for (k, f) in &self.forms {
            let other = *f != format!("${{{k}}}");
            if other
                && !env.iter().any(|(x, _)| x == k)
                && self.draft.args.iter().any(|(a, _, _)| a == k)
            {
                env.push((k.clone(), f.clone()));
            }
        }
        self.draft.steps.push(StepDraft {
            name: name.to_string(),
            image,
            inputs: self.copied.clone(),
            input_steps: Vec::new(),
            fetch: Vec::new(),
            script: vec![script],
            env,
            workdir: (self.workdir != "/").then(|| self.rworkdir.clone()),
            user: self.user.clone(),
            outputs,
            outputs_guessed: guessed,
            network,
            origins: vec![self.origin(i)],
        });
        self.last_step = Some(name.to_string());
    }
}

fn next_id(taken: impl Iterator<Item = u32>, system: bool) -> u32 {
    let taken: Vec<u32> = taken.collect();
    if system {
        (100..1000)
            .rev()
            .find(|x| !taken.contains(x))
            .unwrap_or(999)
    } else {
        (1000..=u32::MAX)
            .find(|x| !taken.contains(x))
            .unwrap_or(1000)
    }
}

fn clip(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 70 {
        format!("{} …", one.chars().take(70).collect::<String>())
    } else {
        one
    }
}

fn summarize(parts: &[Part]) -> String {
    let mut by: Vec<(Class, usize)> = Vec::new();
    for p in parts {
        match by.iter_mut().find(|(c, _)| *c == p.class) {
            Some(e) => e.1 += 1,
            None => by.push((p.class, 1)),
        }
    }
    by.sort();
    let s: Vec<String> = by
        .iter()
        .map(|(c, n)| format!("{n} {}", c.as_str()))
        .collect();
    format!("{} part(s): {}", parts.len(), s.join(", "))
}
