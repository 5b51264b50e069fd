//! `RUN` lines (split into parts, each mapped or kept in a `[[step]]`), `COPY` / `ADD`, and
//! builder stages (one `[[step]]` each, whose outputs are what the image copies from them).

use parse_dockerfile::{Command, Instruction, RunInstruction, Source};

use super::classify::{classify, requirement_name, Account, Action};
use super::draft::{LayerDraft, PathDraft, StepDraft, StepImage, UserDraft};
use super::map::{join_continuations, resolve, unused_layer_name, Mapper};
use super::parse::expand;
use super::shell::{parts, words};
use super::stages::{from_flag, is_image_ref, Role, Stages};
use super::{Class, ImportError, Part};

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
fn script(r: &RunInstruction<'_>) -> String {
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
            let first_line = cmd.lines().next().unwrap_or("").trim();
            if first_line.starts_with("<<") && !first_line.contains(' ') {
                return doc.value.trim_end().to_string();
            }
            let delim: String = first_line
                .split("<<")
                .nth(1)
                .unwrap_or("EOF")
                .trim_start_matches('-')
                .trim_matches(|c| c == '"' || c == '\'')
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
                .collect();
            format!("{first_line}\n{}\n{delim}", doc.value.trim_end())
        }
        _ => String::new(),
    }
}

fn shell_quote(s: &str) -> String {
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

fn uses_network(script: &str) -> bool {
    parts(script).iter().any(|p| {
        words(p)
            .iter()
            .find(|w| !w.contains('=') && *w != "sudo")
            .is_some_and(|c| NETWORK_TOOLS.contains(&c.rsplit('/').next().unwrap_or(c)))
    })
}

impl Mapper<'_> {
    /// For each builder stage, the outputs its step declares: what later COPY --from take.
    pub(super) fn plan_builder_outputs(&mut self, st: &Stages, ins: &[Instruction<'_>]) {
        for (si, stage) in st.stages.iter().enumerate() {
            if st.roles[si] == Role::Unused {
                continue;
            }
            for i in &ins[stage.first..stage.end] {
                let Instruction::Copy(c) = i else { continue };
                let Some(from) = from_flag(i).into_iter().next() else {
                    continue;
                };
                let Some(dep) = st.find(&from, si).filter(|d| st.roles[*d] == Role::Builder) else {
                    continue;
                };
                let dest = expand(&c.dest.value, &self.globals);
                for s in &c.src {
                    let Source::Path(p) = s else { continue };
                    let (path, dest) = output_for(&p.value, &dest);
                    let outs = self.builder_outputs.entry(dep).or_default();
                    let image = st.roles[si] == Role::Image;
                    match outs.iter_mut().find(|o| o.0 == path) {
                        Some(o) => o.2 |= image,
                        None => outs.push((path, dest, image)),
                    }
                }
            }
        }
    }

    /// A builder stage: its rows, and one `[[step]]` running its RUN lines in order.
    pub(super) fn builder_stage(
        &mut self,
        st: &Stages,
        si: usize,
        slice: &[Instruction<'_>],
    ) -> Result<(), ImportError> {
        let stage = &st.stages[si];
        let name = step_name(&stage.label, &self.draft.steps);
        let image = match stage.parent {
            Some(p) if st.roles[p] == Role::Builder => {
                StepImage::Step(step_name(&st.stages[p].label, &[]))
            }
            Some(p) => StepImage::Image(root_image(st, p)),
            None => StepImage::Image(stage.image.clone()),
        };
        let mut step = StepDraft {
            name: name.clone(),
            image,
            inputs: Vec::new(),
            input_steps: Vec::new(),
            fetch: Vec::new(),
            script: Vec::new(),
            env: Vec::new(),
            workdir: None,
            user: None,
            outputs: self.builder_outputs.get(&si).cloned().unwrap_or_default(),
            outputs_guessed: true,
            network: false,
            origins: Vec::new(),
        };
        let mut vars = self.globals.clone();
        let mut cwd = "/".to_string();
        for i in slice {
            let note = format!("in [[step]] {name}");
            let mut class = Class::Step;
            let mut note = note;
            match i {
                Instruction::Run(r) => {
                    let s = script(r);
                    step.network |= uses_network(&s);
                    if let Some(w) = &step.workdir {
                        if step.script.last().is_none_or(|l| !l.starts_with("cd ")) && w != "/" {
                            step.script.push(format!("cd {}", shell_quote(w)));
                        }
                    }
                    step.script.push(s);
                    step.origins.push(self.origin(i));
                    if r.options.iter().any(|f| {
                        f.value
                            .as_ref()
                            .is_some_and(|v| v.value.contains("type=secret"))
                    }) {
                        class = Class::NotTranslated;
                        note = format!("{note}; --mount=type=secret: a step gets no secrets: fetch what it was for with `fetch` (a login in netrc), or build that part outside");
                    }
                }
                Instruction::Env(e) => {
                    for (k, v) in super::parse::pairs(&e.arguments.value) {
                        let v = expand(&v.unwrap_or_default(), &vars);
                        vars.insert(k.clone(), v.clone());
                        step.env.retain(|(x, _)| *x != k);
                        step.env.push((k, v));
                    }
                }
                Instruction::Arg(a) => {
                    for (k, v) in super::parse::pairs(&a.arguments.value) {
                        let v = self
                            .build_args
                            .get(&k)
                            .cloned()
                            .or(v.map(|v| expand(&v, &vars)))
                            .or_else(|| self.globals.get(&k).cloned())
                            .unwrap_or_default();
                        vars.insert(k.clone(), v.clone());
                        step.env.push((k, v));
                    }
                }
                Instruction::Workdir(w) => {
                    cwd = resolve(&cwd, &expand(&w.arguments.value, &vars));
                    step.workdir = Some(cwd.clone());
                    step.script
                        .push(format!("mkdir -p {0} && cd {0}", shell_quote(&cwd)));
                }
                Instruction::User(u) => step.user = Some(expand(&u.arguments.value, &vars)),
                Instruction::Copy(c) => {
                    let from = from_flag(i).into_iter().next();
                    let dest = resolve(&cwd, &expand(&c.dest.value, &vars));
                    match from.as_deref().and_then(|f| st.find(f, si)) {
                        Some(dep) => {
                            let n = step_name(&st.stages[dep].label, &[]);
                            if !step.input_steps.contains(&n) {
                                step.input_steps.push(n);
                            }
                            note =
                                format!("{note}: the outputs of [[step]] {}", st.stages[dep].label);
                        }
                        None if from.is_some() => {
                            class = Class::NotTranslated;
                            note = format!("{note}: COPY --from an image in a builder: add a step that copies from it");
                        }
                        None => {
                            for s in &c.src {
                                if let Source::Path(p) = s {
                                    let src = self.context_path(&expand(&p.value, &vars));
                                    step.inputs.push((src, dest.clone()));
                                }
                            }
                            note = format!("{note}: an input of the step");
                        }
                    }
                }
                Instruction::From(_) => note = format!("the builder of [[step]] {name}"),
                _ => {
                    class = Class::NotTranslated;
                    note = "no effect on a builder's files".into();
                }
            }
            self.row(i, class, note, Vec::new());
        }
        if step.outputs.is_empty() {
            step.outputs.push(("/out".into(), "/".into(), false));
            step.outputs_guessed = false;
        }
        if step.script.is_empty() {
            step.script.push("true".into());
        }
        if step.workdir.is_some() {
            step.workdir = Some("/".into());
        }
        self.draft.steps.push(step);
        Ok(())
    }

    /// A COPY source as a recipe path: the context's path, relative to the output directory.
    pub(super) fn context_path(&self, src: &str) -> String {
        let p = self.ctx_rel.join(src.trim_start_matches('/'));
        let s = p.to_string_lossy().replace("/./", "/");
        let s = s.trim_end_matches("/.").trim_end_matches('/').to_string();
        let s = s.strip_prefix("./").map(str::to_string).unwrap_or(s);
        if s.is_empty() {
            ".".into()
        } else {
            s
        }
    }

    pub(super) fn copy(
        &mut self,
        i: &Instruction<'_>,
        st: &Stages,
        si: usize,
    ) -> Result<(), ImportError> {
        let (opts, srcs, dest, add) = match i {
            Instruction::Copy(c) => (&c.options, &c.src, &c.dest, false),
            Instruction::Add(a) => (&a.options, &a.src, &a.dest, true),
            _ => return Ok(()),
        };
        let raw_dest = expand(&dest.value, &self.vars);
        let dest_dir = raw_dest.ends_with('/') || srcs.len() > 1;
        let dest = resolve(&self.workdir, &raw_dest);
        let mut notes = Vec::new();
        let mut class = Class::Mapped;
        let mut owner = None;
        let mut from = None;
        for f in opts {
            let v = f
                .value
                .as_ref()
                .map(|v| expand(&v.value, &self.vars))
                .unwrap_or_default();
            match &*f.name.value {
                "chown" => match self.numeric_owner(&v) {
                    Some(o) => owner = Some(o),
                    None => {
                        class = class.max(Class::Approximated);
                        notes.push(format!("--chown={v}: not a declared account: set the layer's owner = \"UID:GID\""));
                    }
                },
                "chmod" => {
                    class = class.max(Class::Approximated);
                    notes.push(format!("--chmod={v}: ocibuild normalizes modes; set them on disk and use mode = \"preserve\""));
                }
                "from" => from = Some(v),
                "link" => notes.push("--link: every ocibuild layer is independent already".into()),
                "exclude" => notes.push(format!("--exclude={v}: add it to the layer's ignore")),
                other => {
                    class = class.max(Class::Approximated);
                    notes.push(format!("--{other}: no counterpart"));
                }
            }
        }
        if let Some(from) = from {
            return self.copy_from(i, st, si, &from, class, notes);
        }
        for s in srcs {
            let src = match s {
                Source::Path(p) => expand(&p.value, &self.vars),
                _ => {
                    class = class.max(Class::NotTranslated);
                    notes.push(
                        "a heredoc source: write the file into the context and COPY it".into(),
                    );
                    continue;
                }
            };
            if add && src.contains("://") {
                class = class.max(Class::Step);
                self.add_url(i, &src, &dest, dest_dir);
                notes.push(format!(
                    "ADD {src}: a [[step]] `fetch` (its sha256 pinned by `ocibuild lock`)"
                ));
                continue;
            }
            let tar = [".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.bz2", ".tar.zst"];
            if add && tar.iter().any(|t| src.ends_with(t)) {
                class = class.max(Class::NotTranslated);
                notes.push(format!("ADD {src} unpacks a local tar: unpack it into the context and COPY the directory"));
                continue;
            }
            if src.contains(['*', '?', '[']) {
                class = class.max(Class::Approximated);
                notes.push(format!(
                    "{src}: a glob; the layer copies its directory: narrow it with ignore"
                ));
            }
            self.push_layer(i, &src, &dest, dest_dir, owner.clone(), &mut notes);
        }
        let note = if notes.is_empty() {
            "[[layer]]".to_string()
        } else {
            format!("[[layer]]; {}", notes.join("; "))
        };
        self.row(i, class, note, Vec::new());
        Ok(())
    }

    fn push_layer(
        &mut self,
        i: &Instruction<'_>,
        src: &str,
        dest: &str,
        dest_dir: bool,
        owner: Option<String>,
        notes: &mut Vec<String>,
    ) {
        let dir_src = src.split(['*', '?', '[']).next().unwrap_or(src);
        let dir_src = if dir_src.len() < src.len() {
            dir_src.rsplit_once('/').map(|(d, _)| d).unwrap_or(".")
        } else {
            dir_src
        };
        let recipe_src = self.context_path(dir_src);
        let base = dir_src
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("");
        let looks_file =
            dir_src.len() == src.len() && base.contains('.') && base != "." && !src.ends_with('/');
        let dest = if looks_file && dest_dir {
            format!("{}/{base}", dest.trim_end_matches('/'))
        } else {
            dest.to_string()
        };
        let mut ignore = Vec::new();
        let mut ignore_file = None;
        if recipe_src == "." {
            // The recipe's own files are beside it: not the app's.
            ignore.extend(
                [
                    "recipe.toml",
                    "requirements.in",
                    "pylock.toml",
                    "recipe.lock",
                ]
                .map(String::from),
            );
        }
        if self.dockerignore && !looks_file {
            if dir_src.trim_matches(['.', '/']).is_empty() {
                if self.ctx_rel.as_os_str() != "." {
                    ignore_file = Some(self.context_path(".dockerignore"));
                }
                notes.push(".dockerignore: the layer's ignore-file".into());
            } else {
                ignore_file = Some(self.context_path(".dockerignore"));
                notes.push(
                    ".dockerignore as ignore-file: its patterns match below src, not the context"
                        .into(),
                );
            }
        }
        let name = unused_layer_name(&self.draft.layers, &dest);
        self.copied.push((recipe_src.clone(), dest.clone()));
        self.draft.layers.push(LayerDraft {
            name,
            src: recipe_src,
            dest,
            owner,
            mode_preserve: false,
            ignore_file,
            ignore,
            origin: self.origin(i),
        });
    }

    fn copy_from(
        &mut self,
        i: &Instruction<'_>,
        st: &Stages,
        si: usize,
        from: &str,
        class: Class,
        mut notes: Vec<String>,
    ) -> Result<(), ImportError> {
        if let Some(dep) = st.find(from, si) {
            let note = if st.roles[dep] == Role::Builder {
                format!(
                    "the outputs of [[step]] {} (one output per source)",
                    st.stages[dep].label
                )
            } else {
                notes.push(format!(
                    "stage {} is part of the image already",
                    st.stages[dep].label
                ));
                "nothing to copy".into()
            };
            let note = if notes.is_empty() {
                note
            } else {
                format!("{note}; {}", notes.join("; "))
            };
            self.row(i, class, note, Vec::new());
            return Ok(());
        }
        if !is_image_ref(from) {
            return Err(ImportError::NoStage {
                path: self.path(),
                line: self.text_of(i).0,
                name: from.to_string(),
                known: st.stages[..si].iter().map(|s| s.label.clone()).collect(),
            });
        }
        // COPY --from=IMAGE: a step that copies out of that image.
        let Instruction::Copy(c) = i else {
            return Ok(());
        };
        let dest = resolve(&self.workdir, &expand(&c.dest.value, &self.vars));
        let name = step_name(&format!("copy-{}", self.text_of(i).0), &self.draft.steps);
        let mut script = Vec::new();
        let mut outputs = Vec::new();
        for (n, s) in c.src.iter().enumerate() {
            let Source::Path(p) = s else { continue };
            let out = format!("/out/{n}");
            script.push(format!("cp -a {} {out}/", shell_quote(&p.value)));
            let d = if c.dest.value.ends_with('/') {
                dest.clone()
            } else {
                dest.rsplit_once('/')
                    .map(|(d, _)| {
                        if d.is_empty() {
                            "/".to_string()
                        } else {
                            d.to_string()
                        }
                    })
                    .unwrap_or(dest.clone())
            };
            outputs.push((out, d, true));
        }
        self.draft.steps.push(StepDraft {
            name: name.clone(),
            image: StepImage::Image(from.to_string()),
            inputs: Vec::new(),
            input_steps: Vec::new(),
            fetch: Vec::new(),
            script,
            env: Vec::new(),
            workdir: None,
            user: None,
            outputs,
            outputs_guessed: true,
            network: false,
            origins: vec![self.origin(i)],
        });
        notes.insert(
            0,
            format!("[[step]] {name} copies out of {from} (the image needs cp)"),
        );
        self.row(i, Class::Step, notes.join("; "), Vec::new());
        Ok(())
    }

    fn add_url(&mut self, i: &Instruction<'_>, url: &str, dest: &str, dest_dir: bool) {
        let file = url
            .rsplit('/')
            .next()
            .filter(|f| !f.is_empty())
            .unwrap_or("download")
            .to_string();
        let (dir, target) = if dest_dir {
            (dest.to_string(), file.clone())
        } else {
            let (d, f) = dest.rsplit_once('/').unwrap_or(("", dest));
            (
                if d.is_empty() {
                    "/".to_string()
                } else {
                    d.to_string()
                },
                f.to_string(),
            )
        };
        let name = step_name(&format!("add-{}", self.text_of(i).0), &self.draft.steps);
        let image = self
            .draft
            .base
            .as_ref()
            .map(|b| b.0.clone())
            .unwrap_or_else(|| "docker.io/library/busybox:stable".into());
        self.draft.steps.push(StepDraft {
            name,
            image: StepImage::Image(image),
            inputs: Vec::new(),
            input_steps: Vec::new(),
            fetch: vec![(url.to_string(), format!("/fetch/{file}"))],
            script: vec![format!(
                "cp /fetch/{} /out/{}",
                shell_quote(&file),
                shell_quote(&target)
            )],
            env: Vec::new(),
            workdir: None,
            user: None,
            outputs: vec![("/out".into(), dir, true)],
            outputs_guessed: true,
            network: false,
            origins: vec![self.origin(i)],
        });
    }

    /// `NAME[:GROUP]` or `UID[:GID]` as `uid:gid`, from the declared accounts.
    pub(super) fn numeric_owner(&self, spec: &str) -> Option<String> {
        let (u, g) = spec
            .split_once(':')
            .map_or((spec, None), |(u, g)| (u, Some(g)));
        let uid = u
            .parse::<u32>()
            .ok()
            .or_else(|| (u == "root").then_some(0))
            .or_else(|| self.draft.users.iter().find(|x| x.name == u).map(|x| x.uid))?;
        let gid = match g {
            None => self
                .draft
                .users
                .iter()
                .find(|x| x.uid == uid)
                .and_then(|x| x.gid)
                .unwrap_or(uid),
            Some(g) => g
                .parse::<u32>()
                .ok()
                .or_else(|| (g == "root").then_some(0))
                .or_else(|| self.draft.groups.iter().find(|x| x.0 == g).map(|x| x.1))
                .or_else(|| {
                    self.draft
                        .users
                        .iter()
                        .find(|x| x.name == g)
                        .map(|x| x.gid.unwrap_or(x.uid))
                })?,
        };
        Some(format!("{uid}:{gid}"))
    }
}

/// A COPY --from source as a step output `(path, dest)`: a directory is its own output; a
/// file's directory is.
fn output_for(src: &str, dest: &str) -> (String, String) {
    let src = src.trim_end_matches('/');
    let base = src.rsplit('/').next().unwrap_or(src);
    let file = base.contains('.') || base.contains('*');
    if !file || !src.starts_with('/') {
        return (src.to_string(), dest.trim_end_matches('/').to_string());
    }
    let dir = src
        .rsplit_once('/')
        .map(|(d, _)| d)
        .filter(|d| !d.is_empty())
        .unwrap_or("/");
    let d = if dest.ends_with('/') {
        dest.trim_end_matches('/')
    } else {
        dest.rsplit_once('/').map(|(d, _)| d).unwrap_or(dest)
    };
    (
        dir.to_string(),
        if d.is_empty() {
            "/".into()
        } else {
            d.to_string()
        },
    )
}

fn root_image(st: &Stages, mut s: usize) -> String {
    while let Some(p) = st.stages[s].parent {
        s = p;
    }
    st.stages[s].image.clone()
}

/// A step name from a stage label: lowercase letters, digits, `.`, `_`, `-`.
fn step_name(label: &str, taken: &[StepDraft]) -> String {
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
        let bare_heredoc =
            matches!(&r.arguments, Command::Shell(s) if s.value.trim().starts_with("<<"));
        let split = if r.here_docs.is_empty() || bare_heredoc {
            parts(&script)
        } else {
            vec![script.clone()]
        };
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
            !k.starts_with("cd ") && !k.starts_with("export ") && !k.starts_with("set ")
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
            } => {
                let venv = words(p).iter().find(|w| !w.contains('=')).is_some_and(|c| {
                    c.contains('/')
                        && !c.starts_with("/usr/bin")
                        && !c.starts_with("/usr/local/bin")
                });
                for r in &requirements {
                    let line = match r.strip_prefix("-r ").or_else(|| r.strip_prefix("-c ")) {
                        Some(f) => format!(
                            "{} {}",
                            &r[..2],
                            self.context_path(&resolve(&self.workdir, f))
                                .trim_start_matches("/")
                        ),
                        None => r.clone(),
                    };
                    if !self.requirements.iter().any(|(x, _)| *x == line) {
                        self.requirements.push((line, origin.clone()));
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
                if venv {
                    return (Class::Approximated, format!("{note}; installed into the image's site-packages, not the virtual environment"));
                }
                (Class::Mapped, note)
            }
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
            } => {
                let octal = mode.len() >= 3 && mode.chars().all(|c| c.is_digit(8));
                if !octal || recursive {
                    keep.push(raw.to_string());
                    return (Class::Step, "symbolic or recursive chmod".into());
                }
                let mut layer = false;
                for path in &paths {
                    layer |= self.under_layer(path);
                    self.path_entry(path, origin.clone()).mode = Some(format!("{:0>4}", mode));
                }
                if layer {
                    return (Class::Approximated, "a copied file's mode: set it on disk and use mode = \"preserve\" on its layer ([[path]] mode given too)".into());
                }
                (Class::Mapped, format!("[[path]] mode {mode}"))
            }
            Action::Chown {
                owner,
                paths,
                recursive,
            } => {
                let Some(num) = self.numeric_owner(&owner) else {
                    keep.push(raw.to_string());
                    return (
                        Class::Step,
                        format!("owner {owner}: not a declared account"),
                    );
                };
                let mut layer = false;
                for path in &paths {
                    layer |= self.under_layer(path);
                    for l in self
                        .draft
                        .layers
                        .iter_mut()
                        .filter(|l| l.dest.starts_with(path.as_str()))
                    {
                        l.owner = Some(num.clone());
                    }
                    self.path_entry(path, origin.clone()).owner = Some(num.clone());
                }
                if recursive || layer {
                    return (
                        Class::Approximated,
                        format!(
                            "[[path]] owner {num}, and the owner of the layers copied below it"
                        ),
                    );
                }
                (Class::Mapped, format!("[[path]] owner {num}"))
            }
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
                    _ => "kept in a step",
                };
                (Class::Step, note.into())
            }
        }
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
        let idx = match self.draft.paths.iter().position(|p| p.path == path) {
            Some(idx) => idx,
            None => {
                self.draft.paths.push(PathDraft {
                    path,
                    origin,
                    ..PathDraft::default()
                });
                self.draft.paths.len() - 1
            }
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
        let mut env = self.env.clone();
        for (k, v) in &self.vars {
            if !env.iter().any(|(x, _)| x == k) && self.draft.args.iter().any(|(a, _, _)| a == k) {
                env.push((k.clone(), v.clone()));
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
            workdir: (self.workdir != "/").then(|| self.workdir.clone()),
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
        (1000..).find(|x| !taken.contains(x)).unwrap_or(1000)
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
