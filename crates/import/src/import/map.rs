//! Instructions to recipe parts, stage by stage, with a row for each.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use parse_dockerfile::{Command, Dockerfile, Instruction, JsonOrStringArray};

use super::base::{distro, python_image_version, Distro};
use super::draft::{AptSource, Draft, LayerDraft, Origin, PythonDraft};
use super::parse::{dollars_doubled, expand, pairs, recipe_form, Lines, Vars};
use super::stages::{span_start, Role, Stages};
use super::{Class, ImportError, ImportOptions, Imported, Part, Row};

/// The PATH Docker gives a container whose image sets none (and Debian's images set).
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Build arguments Docker predefines from the platform.
const PLATFORM_ARGS: &[&str] = &[
    "TARGETPLATFORM",
    "TARGETOS",
    "TARGETARCH",
    "TARGETVARIANT",
    "BUILDPLATFORM",
    "BUILDOS",
    "BUILDARCH",
    "BUILDVARIANT",
];

pub(super) struct Mapper<'a> {
    pub opts: &'a ImportOptions,
    pub text: &'a str,
    pub file: String,
    pub lines: Lines,
    pub build_args: &'a BTreeMap<String, String>,
    pub globals: Vars,
    pub draft: Draft,
    pub rows: Vec<Row>,
    pub requirements: Vec<(String, Origin)>,
    pub notes: Vec<String>,
    pub distro: Option<Distro>,
    pub python_image: Option<String>,
    /// The context, relative to the output directory.
    pub ctx_rel: PathBuf,
    /// The output directory inside the context (`ocibuild/` of `-o ocibuild`), if it is.
    pub out_in_ctx: Option<String>,
    pub dockerignore: bool,
    pub stage_label: String,
    /// The recipe will have `[args]`: its strings that take arguments refer to them.
    pub keep_args: bool,
    /// The global ARGs as the recipe's strings write them (`${NAME}`).
    pub global_forms: Vars,
    /// The image stages' state.
    pub vars: Vars,
    /// `vars` as the recipe's strings write them ([`recipe_form`]).
    pub forms: Vars,
    /// `workdir` as the recipe writes it.
    pub rworkdir: String,
    pub env: Vec<(String, String)>,
    pub workdir: String,
    pub user: Option<String>,
    pub shell: Vec<String>,
    pub copied: Vec<(String, String)>,
    pub last_step: Option<String>,
    pub stage_image: String,
    /// Per builder stage: the outputs its step declares `(path, dest, image)`.
    pub builder_outputs: BTreeMap<usize, Vec<(String, String, bool)>>,
    /// Each stage's WORKDIR at its end (a stage built FROM it starts there).
    pub stage_cwd: BTreeMap<usize, String>,
    pub cmd_seen: bool,
    pub entrypoint_seen: bool,
}

impl Mapper<'_> {
    pub(super) fn path(&self) -> PathBuf {
        self.opts.dockerfile.clone()
    }

    /// `s` as a recipe string that takes arguments writes it: [`recipe_form`] when the recipe
    /// has `[args]`, the value otherwise.
    pub(super) fn rform(&self, s: &str) -> String {
        if self.keep_args {
            recipe_form(s, &self.vars, &self.forms)
        } else {
            expand(s, &self.vars)
        }
    }

    /// The instruction's first line, on one line, clipped.
    pub(super) fn text_of(&self, ins: &Instruction<'_>) -> (usize, String) {
        let start = span_start(ins);
        let line = self.lines.line(start);
        let rest = &self.text[start.min(self.text.len())..];
        let first = rest.lines().next().unwrap_or("").trim_end();
        let first = first.strip_suffix('\\').unwrap_or(first).trim_end();
        let more = rest.lines().count() > 1
            && rest
                .lines()
                .next()
                .is_some_and(|l| l.trim_end().ends_with('\\'));
        let mut t: String = first.chars().take(90).collect();
        if first.chars().count() > 90 || more {
            t.push_str(" …");
        }
        (line, t)
    }

    pub(super) fn origin(&self, ins: &Instruction<'_>) -> Origin {
        let (line, t) = self.text_of(ins);
        format!("{}:{line} {t}", self.file)
    }

    pub(super) fn row(
        &mut self,
        ins: &Instruction<'_>,
        class: Class,
        note: impl Into<String>,
        parts: Vec<Part>,
    ) {
        let (line, text) = self.text_of(ins);
        let instruction = keyword(ins).to_string();
        self.rows.push(Row {
            line,
            instruction,
            text,
            class,
            note: note.into(),
            stage: self.stage_label.clone(),
            parts,
        });
    }

    fn arg(&mut self, ins: &Instruction<'_>, args: &str, global: bool) -> Result<(), ImportError> {
        let mut notes = Vec::new();
        for (name, default) in pairs(args) {
            let value = match (self.build_args.get(&name), default, self.globals.get(&name)) {
                (Some(v), _, _) => v.clone(),
                (None, Some(d), _) => expand(&d, if global { &self.globals } else { &self.vars }),
                (None, None, Some(g)) => g.clone(),
                (None, None, None) => match platform_arg(&name, &self.opts.platform) {
                    Some(v) => v,
                    None => {
                        return Err(ImportError::ArgWithoutValue {
                            path: self.path(),
                            line: self.text_of(ins).0,
                            name,
                        })
                    }
                },
            };
            notes.push(format!("{name} = {value:?}"));
            // `${NAME}` where the recipe's [args] entry has this value (the first ARG of a
            // name makes it).
            let form = match self.draft.args.iter().find(|(k, _, _)| *k == name) {
                Some((_, v, _)) if *v != value => dollars_doubled(&value),
                _ => format!("${{{name}}}"),
            };
            if global {
                self.globals.insert(name.clone(), value.clone());
                self.global_forms.insert(name.clone(), form.clone());
            }
            self.vars.insert(name.clone(), value.clone());
            self.forms.insert(name.clone(), form);
            if !self.draft.args.iter().any(|(k, _, _)| *k == name) {
                let origin = self.origin(ins);
                self.draft.args.push((name, value, origin));
            }
        }
        self.row(
            ins,
            Class::Mapped,
            format!("[args] {}; referred to as ${{NAME}} where the recipe takes arguments, substituted elsewhere", notes.join(", ")),
            Vec::new(),
        );
        Ok(())
    }
}

fn platform_arg(name: &str, platform: &str) -> Option<String> {
    if !PLATFORM_ARGS.contains(&name) {
        return None;
    }
    let mut p = platform.split('/');
    let (os, arch, variant) = (
        p.next().unwrap_or("linux"),
        p.next().unwrap_or("amd64"),
        p.next().unwrap_or(""),
    );
    Some(if name.ends_with("PLATFORM") {
        platform.to_string()
    } else if name.ends_with("OS") {
        os.to_string()
    } else if name.ends_with("ARCH") {
        arch.to_string()
    } else {
        variant.to_string()
    })
}

pub(super) fn keyword(ins: &Instruction<'_>) -> &'static str {
    match ins {
        Instruction::Add(_) => "ADD",
        Instruction::Arg(_) => "ARG",
        Instruction::Cmd(_) => "CMD",
        Instruction::Copy(_) => "COPY",
        Instruction::Entrypoint(_) => "ENTRYPOINT",
        Instruction::Env(_) => "ENV",
        Instruction::Expose(_) => "EXPOSE",
        Instruction::From(_) => "FROM",
        Instruction::Healthcheck(_) => "HEALTHCHECK",
        Instruction::Label(_) => "LABEL",
        Instruction::Maintainer(_) => "MAINTAINER",
        Instruction::Onbuild(_) => "ONBUILD",
        Instruction::Run(_) => "RUN",
        Instruction::Shell(_) => "SHELL",
        Instruction::Stopsignal(_) => "STOPSIGNAL",
        Instruction::User(_) => "USER",
        Instruction::Volume(_) => "VOLUME",
        Instruction::Workdir(_) => "WORKDIR",
        _ => "?",
    }
}

/// An exec-form or shell-form command as an argv (shell form through `shell`).
pub(super) fn argv(cmd: &Command<'_>, shell: &[String]) -> (Vec<String>, bool) {
    match cmd {
        Command::Exec(v) => {
            let a: Vec<String> = v.value.iter().map(|s| s.value.to_string()).collect();
            if super::parse::is_empty_exec(&a) {
                return (Vec::new(), false);
            }
            (a, false)
        }
        Command::Shell(s) => {
            let mut a = shell.to_vec();
            a.push(join_continuations(s.value));
            (a, true)
        }
        _ => (Vec::new(), false),
    }
}

/// A shell-form line with its backslash-newlines joined.
pub(super) fn join_continuations(s: &str) -> String {
    let mut out = String::new();
    // Comment lines inside an instruction are dropped before lines are joined, as Docker does.
    for l in s.split('\n').filter(|l| !l.trim_start().starts_with('#')) {
        let t = l.trim_end();
        if let Some(x) = t.strip_suffix('\\') {
            out.push_str(x.trim_end());
            out.push(' ');
        } else {
            out.push_str(t);
            out.push('\n');
        }
    }
    let cleaned: Vec<&str> = out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    cleaned.join("\n")
}

pub(super) fn translate(
    text: &str,
    df: &Dockerfile<'_>,
    opts: &ImportOptions,
    build_args: &BTreeMap<String, String>,
) -> Result<Imported, ImportError> {
    let ctx = absolute(&opts.context);
    let out = absolute(&opts.out_dir);
    let file = opts
        .dockerfile
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "Dockerfile".into());
    let mut m = Mapper {
        opts,
        text,
        file,
        lines: Lines::new(text),
        build_args,
        globals: Vars::new(),
        draft: Draft::default(),
        rows: Vec::new(),
        requirements: Vec::new(),
        notes: Vec::new(),
        distro: None,
        python_image: None,
        ctx_rel: super::relative(&ctx, &out),
        out_in_ctx: out
            .strip_prefix(&ctx)
            .ok()
            .filter(|p| !p.as_os_str().is_empty())
            .map(|p| p.to_string_lossy().into_owned()),
        dockerignore: ctx.join(".dockerignore").is_file(),
        stage_label: String::new(),
        keep_args: false,
        global_forms: Vars::new(),
        vars: Vars::new(),
        forms: Vars::new(),
        rworkdir: "/".into(),
        env: Vec::new(),
        workdir: "/".into(),
        user: None,
        shell: vec!["/bin/sh".into(), "-c".into()],
        copied: Vec::new(),
        last_step: None,
        stage_image: String::new(),
        builder_outputs: BTreeMap::new(),
        stage_cwd: BTreeMap::new(),
        cmd_seen: false,
        entrypoint_seen: false,
    };
    m.draft.name = image_name(&ctx);
    m.draft.platform = opts.platform.clone();
    let ins = &df.instructions;
    let globals = ins
        .iter()
        .position(|i| matches!(i, Instruction::From(_)))
        .unwrap_or(0);
    m.stage_label = "(global)".into();
    for i in &ins[..globals] {
        if let Instruction::Arg(a) = i {
            m.arg(i, &a.arguments.value, true)?;
        }
    }
    let st = super::stages::stages(
        df,
        &m.globals,
        opts.target.as_deref(),
        &opts.dockerfile,
        &m.lines,
    )?;
    m.plan_builder_outputs(&st, ins);
    // The draft gets `[args]` from the global ARGs and those of the stages it uses.
    m.keep_args = !m.draft.args.is_empty()
        || st.stages.iter().enumerate().any(|(si, stage)| {
            !matches!(st.roles[si], Role::Unused)
                && ins[stage.first..stage.end]
                    .iter()
                    .any(|i| matches!(i, Instruction::Arg(_)))
        });
    for (si, stage) in st.stages.iter().enumerate() {
        m.stage_label = stage.label.clone();
        let slice = &ins[stage.first..stage.end];
        match st.roles[si] {
            Role::Image => {
                for i in slice {
                    m.image_instruction(i, &st, si)?;
                }
            }
            Role::Builder => m.builder_stage(&st, si, slice)?,
            Role::Unused => {
                for i in slice {
                    let note = format!(
                        "stage {} is not used by the target stage ({})",
                        stage.label, st.stages[st.target].label
                    );
                    m.row(i, Class::NotTranslated, note, Vec::new());
                }
            }
        }
    }
    m.finish(&st)
}

fn absolute(p: &Path) -> PathBuf {
    let p = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    fs_err::canonicalize(&p).unwrap_or(p)
}

/// `localhost/NAME` from the context directory's name.
fn image_name(ctx: &Path) -> String {
    let raw = ctx
        .file_name()
        .map(|f| f.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let mut s: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let s = s.trim_matches('-');
    format!("localhost/{}", if s.is_empty() { "imported" } else { s })
}

impl Mapper<'_> {
    fn image_instruction(
        &mut self,
        i: &Instruction<'_>,
        st: &Stages,
        si: usize,
    ) -> Result<(), ImportError> {
        match i {
            Instruction::From(_) => self.from(i, st, si),
            Instruction::Arg(a) => self.arg(i, &a.arguments.value, false)?,
            Instruction::Env(e) => {
                let mut set = Vec::new();
                let mut unknown = Vec::new();
                for (k, v) in pairs(&e.arguments.value) {
                    let raw = v.unwrap_or_default();
                    for n in super::parse::referenced(&raw) {
                        if !self.vars.contains_key(&n) && !unknown.contains(&n) {
                            if n == "PATH" {
                                // The base's PATH is not known here: Docker's default.
                                self.vars.insert(n.clone(), DEFAULT_PATH.into());
                                self.forms.insert(n.clone(), DEFAULT_PATH.into());
                            }
                            unknown.push(n);
                        }
                    }
                    let v = expand(&raw, &self.vars);
                    let r = self.rform(&raw);
                    self.vars.insert(k.clone(), v);
                    self.forms.insert(k.clone(), r.clone());
                    self.env.retain(|(x, _)| *x != k);
                    self.env.push((k.clone(), r.clone()));
                    let origin = self.origin(i);
                    self.draft.config.env.retain(|(x, _, _)| *x != k);
                    self.draft.config.env.push((k.clone(), r, origin));
                    set.push(k);
                }
                if unknown.is_empty() {
                    self.row(i, Class::Mapped, format!("[config.env] {}", set.join(", ")), Vec::new());
                } else {
                    let note = format!(
                        "[config.env] {}; ${} is the base's, not known here: PATH taken as {DEFAULT_PATH}, others as empty: check them against the base's config",
                        set.join(", "),
                        unknown.join(", $")
                    );
                    self.row(i, Class::Approximated, note, Vec::new());
                }
            }
            Instruction::Label(l) => {
                let mut set = Vec::new();
                for (k, v) in pairs(&l.arguments.value) {
                    let v = self.rform(&v.unwrap_or_default());
                    let origin = self.origin(i);
                    self.draft.config.labels.retain(|(x, _, _)| *x != k);
                    self.draft.config.labels.push((k.clone(), v, origin));
                    set.push(k);
                }
                self.row(i, Class::Mapped, format!("[config.labels] {}", set.join(", ")), Vec::new());
            }
            Instruction::Maintainer(mt) => {
                let origin = self.origin(i);
                let v = mt.name.value.to_string();
                self.draft.config.labels.push(("org.opencontainers.image.authors".into(), v, origin));
                self.row(i, Class::Mapped, "[config.labels] org.opencontainers.image.authors (MAINTAINER is deprecated)", Vec::new());
            }
            Instruction::Workdir(w) => {
                let dir = expand(&w.arguments.value, &self.vars);
                if dir.trim_matches('"').is_empty() {
                    let note = "the directory is a variable with no value here: set [config] workdir";
                    self.row(i, Class::NotTranslated, note, Vec::new());
                    return Ok(());
                }
                self.workdir = resolve(&self.workdir, &dir);
                let form = self.rform(&w.arguments.value);
                // `WORKDIR $DIR` of an absolute value: the reference, not joined.
                self.rworkdir = if dir.starts_with('/') && !form.starts_with('/') {
                    form
                } else {
                    resolve(&self.rworkdir, &form)
                };
                let origin = self.origin(i);
                self.draft.config.workdir = Some((self.rworkdir.clone(), origin));
                self.row(i, Class::Mapped, format!("[config] workdir = {:?}", self.workdir), Vec::new());
            }
            Instruction::User(u) => {
                let form = self.rform(&u.arguments.value);
                self.user_instruction(i, &expand(&u.arguments.value, &self.vars), form);
            }
            Instruction::Expose(e) => {
                let mut set = Vec::new();
                for p in &e.arguments {
                    let p = expand(&p.value, &self.vars);
                    let origin = self.origin(i);
                    set.push(p.clone());
                    self.draft.config.ports.push((p, origin));
                }
                self.row(i, Class::Mapped, format!("[config] exposed-ports {}", set.join(", ")), Vec::new());
            }
            Instruction::Volume(v) => {
                let list: Vec<String> = match &v.arguments {
                    JsonOrStringArray::Json(j) => j.value.iter().map(|s| s.value.to_string()).collect(),
                    JsonOrStringArray::String(s) => s.iter().map(|s| s.value.to_string()).collect(),
                };
                for p in &list {
                    let origin = self.origin(i);
                    self.draft.config.volumes.push((expand(p, &self.vars), origin));
                }
                self.row(i, Class::Mapped, format!("[config] volumes {}", list.join(", ")), Vec::new());
            }
            Instruction::Stopsignal(s) => {
                let origin = self.origin(i);
                self.draft.config.stop_signal = Some((expand(&s.arguments.value, &self.vars), origin));
                self.row(i, Class::Mapped, "[config] stop-signal", Vec::new());
            }
            Instruction::Shell(s) => {
                self.shell = s.arguments.iter().map(|a| a.value.to_string()).collect();
                let origin = self.origin(i);
                self.draft.config.shell = Some((self.shell.clone(), origin));
                self.row(i, Class::Mapped, "[config] shell; later shell-form RUN, CMD and ENTRYPOINT use it", Vec::new());
            }
            Instruction::Healthcheck(h) => self.healthcheck(i, h),
            Instruction::Cmd(c) => self.command(i, &c.arguments, false),
            Instruction::Entrypoint(e) => self.command(i, &e.arguments, true),
            Instruction::Onbuild(_) => self.row(
                i,
                Class::NotTranslated,
                "ONBUILD runs in images built FROM this one: do it in the recipes that use this image",
                Vec::new(),
            ),
            Instruction::Copy(_) | Instruction::Add(_) => self.copy(i, st, si)?,
            Instruction::Run(r) => self.run(i, r, st, si),
            _ => self.row(i, Class::NotTranslated, "an instruction this importer does not know", Vec::new()),
        }
        Ok(())
    }

    fn from(&mut self, i: &Instruction<'_>, st: &Stages, si: usize) {
        let stage = &st.stages[si];
        if let Some(p) = stage.parent {
            let note = format!("the image continues stage {}", st.stages[p].label);
            self.row(i, Class::Mapped, note, Vec::new());
            return;
        }
        let image = stage.image.clone();
        self.stage_image = image.clone();
        self.distro = distro(&image);
        self.python_image = python_image_version(&image);
        let origin = self.origin(i);
        if image == "scratch" {
            self.row(
                i,
                Class::Mapped,
                "scratch: the default base (nothing)",
                Vec::new(),
            );
            return;
        }
        if self.opts.scratch && self.distro.is_some() {
            self.draft.apt_essential = true;
            self.row(
                i,
                Class::Approximated,
                format!("--scratch: scratch + [apt] essential = true in place of {image} (Debian's essential set from the archive; what else the image had is not there)"),
                Vec::new(),
            );
            return;
        }
        self.draft.base = Some((image.clone(), origin));
        let pinned = if self.text_of(i).1.contains('$') {
            "[base] image, the ARGs substituted ([base] takes no arguments); `ocibuild lock` pins it by digest"
        } else {
            "[base] image; `ocibuild lock` pins it by digest"
        };
        match (&self.distro, image.contains(':') || image.contains('@')) {
            (_, false) => self.row(
                i,
                Class::Mapped,
                format!("{pinned} (no tag: latest)"),
                Vec::new(),
            ),
            _ => self.row(i, Class::Mapped, pinned, Vec::new()),
        }
    }

    /// `user` is the value, `form` as the recipe writes it.
    fn user_instruction(&mut self, i: &Instruction<'_>, user: &str, form: String) {
        if user.is_empty() || user.starts_with(':') {
            // `USER ${NB_UID}` with an ARG only the base's Dockerfile declared.
            self.row(
                i,
                Class::NotTranslated,
                "the user is a variable with no value here: set [config] user (a name or uid:gid)",
                Vec::new(),
            );
            return;
        }
        self.user = Some(user.to_string());
        let origin = self.origin(i);
        self.draft.config.user = Some((form, origin));
        let name = user.split(':').next().unwrap_or(user);
        let known = name.parse::<u32>().is_ok()
            || name == "root"
            || self.draft.users.iter().any(|u| u.name == name);
        if known {
            self.row(i, Class::Mapped, "[config] user", Vec::new());
        } else {
            self.row(
                i,
                Class::Approximated,
                format!("[config] user: {name} must be an account of the image (the base's /etc/passwd, or add [[accounts.user]])"),
                Vec::new(),
            );
        }
    }

    fn healthcheck(
        &mut self,
        i: &Instruction<'_>,
        h: &parse_dockerfile::HealthcheckInstruction<'_>,
    ) {
        let mut fields = Vec::new();
        let test: Vec<String> = match &h.arguments {
            parse_dockerfile::HealthcheckArguments::Cmd { arguments, .. } => match arguments {
                Command::Exec(v) => std::iter::once("CMD".to_string())
                    .chain(v.value.iter().map(|s| s.value.to_string()))
                    .collect(),
                Command::Shell(s) => vec!["CMD-SHELL".into(), join_continuations(s.value)],
                _ => vec!["NONE".into()],
            },
            _ => vec!["NONE".into()],
        };
        fields.push(("test".to_string(), super::draft::arr(&test)));
        for f in &h.options {
            let value = f
                .value
                .as_ref()
                .map(|v| v.value.to_string())
                .unwrap_or_default();
            let name = f.name.value.to_string();
            match name.as_str() {
                "retries" => fields.push((name, value)),
                "interval" | "timeout" | "start-period" | "start-interval" => {
                    fields.push((name, super::draft::q(&value)));
                }
                _ => {}
            }
        }
        let origin = self.origin(i);
        self.draft.config.healthcheck = Some((fields, origin));
        self.row(i, Class::Mapped, "[config.healthcheck]", Vec::new());
    }

    fn command(&mut self, i: &Instruction<'_>, c: &Command<'_>, entrypoint: bool) {
        let (argv, shell_form) = argv(c, &self.shell);
        let origin = self.origin(i);
        let key = if entrypoint { "entrypoint" } else { "cmd" };
        if entrypoint {
            self.draft.config.entrypoint = Some((argv, origin));
            self.entrypoint_seen = true;
        } else {
            self.draft.config.cmd = Some((argv, origin));
            self.cmd_seen = true;
        }
        let note = if shell_form {
            format!(
                "[config] {key}, shell form: run by {} (the image needs that shell)",
                self.shell.join(" ")
            )
        } else {
            format!("[config] {key}")
        };
        self.row(i, Class::Mapped, note, Vec::new());
    }

    fn finish(mut self, st: &Stages) -> Result<Imported, ImportError> {
        if self.entrypoint_seen && !self.cmd_seen && self.draft.base.is_some() {
            // Docker resets the base's CMD when a Dockerfile sets ENTRYPOINT.
            self.draft.config.cmd = Some((
                Vec::new(),
                "ENTRYPOINT without CMD: Docker clears the base's cmd".into(),
            ));
        }
        let pylock = self.python_finish();
        if !self.draft.apt_packages.is_empty() && self.draft.apt_sources.is_empty() {
            self.add_apt_source("the [apt] packages' archive".into());
        }
        if let Some((image, _)) = &self.draft.base {
            self.notes.push(format!(
                "[base] {image} is kept as the Dockerfile had it: `ocibuild lock` pins its digests"
            ));
        }
        for s in &self.draft.apt_sources {
            self.notes.push(format!("[[apt.source]] {} {}: provide the archive's public key at {} (relative to the recipe)", s.url, s.suite, s.signed_by));
        }
        if self.draft.steps.iter().any(|s| s.network) {
            self.notes.push("some [[step]]s download: build with --allow-network, or give them `fetch`es with sha256".into());
        }
        let file = self.file.clone();
        self.draft.header = vec![
            format!(
                "Imported from {file} by `ocibuild import` (target stage {}).",
                st.stages[st.target].label
            ),
            "Each part below names the Dockerfile line it came from. Check the TODOs, then:".into(),
            "  ocibuild lock recipe.toml && ocibuild build recipe.toml".into(),
        ];
        if let Some(cmd) = &pylock {
            self.draft
                .header
                .push("pylock.toml comes from requirements.in:".into());
            self.draft.header.push(format!("  {}", cmd.join(" ")));
        }
        let requirements = (!self.requirements.is_empty()).then(|| {
            let mut r = format!(
                "# Python requirements imported from {file}: compile them with\n#   {}\n",
                pylock.as_ref().map(|c| c.join(" ")).unwrap_or_default()
            );
            for (req, origin) in &self.requirements {
                r.push_str(&format!("{req}    # {origin}\n"));
            }
            r
        });
        Ok(Imported {
            rows: self.rows,
            target: st.stages[st.target].label.clone(),
            stages: st.labels(),
            recipe: self.draft.render(),
            requirements,
            pylock_command: pylock,
            notes: self.notes,
        })
    }

    /// `[python]` for requirements.in, an interpreter, and the `uv pip compile` command.
    fn python_finish(&mut self) -> Option<Vec<String>> {
        let origin = self.requirements.first()?.1.clone();
        let version = match (&self.python_image, &self.distro) {
            (Some(v), _) => Some(v.clone()),
            (None, Some(d)) => {
                for (p, why) in [
                    ("python3", "python3: the interpreter the requirements need"),
                    ("libstdc++6", "libstdc++6: manylinux wheels may link the system's libstdc++.so.6 (the manylinux policy allows it)"),
                ] {
                    if !self.draft.apt_packages.iter().any(|(x, _)| x == p) {
                        self.draft.apt_packages.push((p.into(), why.into()));
                    }
                }
                Some(d.python.to_string())
            }
            (None, None) => None,
        };
        let before = self.draft.apt_packages.len();
        self.draft
            .apt_packages
            .retain(|(p, _)| p != "python3-pip" && p != "python3-pip-whl");
        if self.draft.apt_packages.len() < before {
            self.notes.push(
                "python3-pip left out of [apt]: ocibuild installs the wheels, no pip runs".into(),
            );
        }
        self.draft.python = Some(PythonDraft {
            version: version.clone(),
            lock: "pylock.toml".into(),
            origin,
        });
        let glibc = self.distro.as_ref().map(|d| d.glibc).unwrap_or("2.36");
        let arch = match self.opts.platform.split('/').nth(1) {
            Some("arm64") => "aarch64",
            _ => "x86_64",
        };
        let mut cmd: Vec<String> = [
            "uv",
            "pip",
            "compile",
            "requirements.in",
            "--format",
            "pylock.toml",
            "-o",
            "pylock.toml",
        ]
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
        if let Some(v) = version {
            cmd.extend(["--python-version".into(), v]);
        }
        cmd.extend([
            "--python-platform".into(),
            format!("{arch}-manylinux_{}", glibc.replace('.', "_")),
        ]);
        self.notes.push(format!(
            "pylock.toml: run `{}` in the recipe's directory (or import --pylock)",
            cmd.join(" ")
        ));
        Some(cmd)
    }

    pub(super) fn add_apt_source(&mut self, origin: Origin) {
        if !self.draft.apt_sources.is_empty() {
            return;
        }
        let arm = !self.opts.platform.ends_with("amd64") && !self.opts.platform.ends_with("386");
        let source = match &self.distro {
            Some(d) if d.ubuntu => AptSource {
                url: if arm {
                    crate::defaults::UBUNTU_PORTS
                } else {
                    crate::defaults::UBUNTU_ARCHIVE
                }
                .into(),
                suite: d.suite.into(),
                components: vec!["main".into(), "universe".into()],
                signed_by: "keys/ubuntu-archive.asc".into(),
                origin,
            },
            Some(d) => AptSource {
                url: crate::defaults::DEBIAN_ARCHIVE.into(),
                suite: d.suite.into(),
                components: vec!["main".into()],
                signed_by: format!("keys/debian-{}.asc", d.suite),
                origin,
            },
            None => AptSource {
                url: crate::defaults::DEBIAN_ARCHIVE.into(),
                suite: "TODO-suite".into(),
                components: vec!["main".into()],
                signed_by: "keys/TODO-archive.asc".into(),
                origin,
            },
        };
        self.draft.apt_sources.push(source);
    }
}

/// A WORKDIR or COPY destination against the current directory.
pub(super) fn resolve(cwd: &str, p: &str) -> String {
    let joined = if p.starts_with('/') {
        p.to_string()
    } else {
        format!("{cwd}/{p}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in joined.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

pub(super) fn unused_layer_name(layers: &[LayerDraft], dest: &str) -> String {
    let base: String = dest
        .rsplit('/')
        .find(|c| !c.is_empty())
        .unwrap_or("root")
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let base = base
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string();
    let base = if base.is_empty() {
        "files".to_string()
    } else {
        base
    };
    let mut name = base.clone();
    let mut n = 2;
    while layers.iter().any(|l| l.name == name) {
        name = format!("{base}-{n}");
        n += 1;
    }
    name
}
