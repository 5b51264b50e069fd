//! Builder stages: one `[[step]]` each, running its RUN lines in order, whose outputs are
//! what the image (or another builder) copies from it.

use parse_dockerfile::{Instruction, Source};

use super::draft::{StepDraft, StepImage};
use super::map::{resolve, Mapper};
use super::parse::{expand, Vars};
use super::run::{script, shell_quote, step_name, uses_network};
use super::stages::{from_flag, Role, Stages};
use super::{Class, ImportError};

impl Mapper<'_> {
    /// For each builder stage, the outputs its step declares: what later COPY --from take.
    pub(super) fn plan_builder_outputs(&mut self, st: &Stages, ins: &[Instruction<'_>]) {
        for (si, stage) in st.stages.iter().enumerate() {
            // The stage's WORKDIR as each instruction sees it (a child starts in its parent's).
            let mut cwd = stage
                .parent
                .and_then(|p| self.stage_cwd.get(&p).cloned())
                .unwrap_or_else(|| "/".into());
            for i in &ins[stage.first..stage.end] {
                if let Instruction::Workdir(w) = i {
                    cwd = resolve(&cwd, &expand(&w.arguments.value, &self.globals));
                }
                if st.roles[si] == Role::Unused {
                    continue;
                }
                let Instruction::Copy(c) = i else { continue };
                let Some(from) = from_flag(i).into_iter().next() else {
                    continue;
                };
                let Some(dep) = st.find(&from, si).filter(|d| st.roles[*d] == Role::Builder) else {
                    continue;
                };
                let raw = expand(&c.dest.value, &self.globals);
                let mut dest = resolve(&cwd, &raw);
                if raw.ends_with('/') {
                    dest.push('/');
                }
                let src_cwd = self
                    .stage_cwd
                    .get(&dep)
                    .cloned()
                    .unwrap_or_else(|| "/".into());
                for s in &c.src {
                    let Source::Path(p) = s else { continue };
                    let (path, dest) = output_for(&resolve(&src_cwd, &p.value), &dest);
                    let outs = self.builder_outputs.entry(dep).or_default();
                    let image = st.roles[si] == Role::Image;
                    match outs.iter_mut().find(|o| o.0 == path) {
                        Some(o) => o.2 |= image,
                        None => outs.push((path, dest, image)),
                    }
                }
            }
            self.stage_cwd.insert(si, cwd);
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
        let mut step = self.builder_draft(st, si, &name);
        let mut sv = StageVars {
            vars: self.globals.clone(),
            // `vars` as the recipe's strings write them (see Mapper::rform).
            forms: self.global_forms.clone(),
        };
        let mut cwd = stage
            .parent
            .and_then(|p| self.stage_cwd.get(&p).cloned())
            .unwrap_or_else(|| "/".into());
        // The directory the script is in (a step starts at /).
        let mut at = "/".to_string();
        for i in slice {
            let note = format!("in [[step]] {name}");
            let mut class = Class::Step;
            let mut note = note;
            match i {
                Instruction::Run(r) => {
                    let s = script(r);
                    step.network |= uses_network(&s);
                    if at != cwd {
                        step.script.push(format!("cd {}", shell_quote(&cwd)));
                        at = cwd.clone();
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
                Instruction::Env(e) => self.builder_env(&mut step, &e.arguments.value, &mut sv),
                Instruction::Arg(a) => {
                    self.builder_arg(&mut step, i, &a.arguments.value, &mut sv);
                }
                Instruction::Workdir(w) => {
                    cwd = resolve(&cwd, &expand(&w.arguments.value, &sv.vars));
                    step.script
                        .push(format!("mkdir -p {0} && cd {0}", shell_quote(&cwd)));
                    at = cwd.clone();
                }
                Instruction::User(u) => step.user = Some(expand(&u.arguments.value, &sv.vars)),
                Instruction::Copy(c) => {
                    let scope = Scope {
                        vars: &sv.vars,
                        cwd: &cwd,
                    };
                    (class, note) = self.builder_copy(
                        &mut step,
                        i,
                        c,
                        Stage {
                            stages: st,
                            index: si,
                        },
                        scope,
                        note,
                    );
                }
                Instruction::Add(a) => {
                    let scope = Scope {
                        vars: &sv.vars,
                        cwd: &cwd,
                    };
                    (class, note) = self.builder_add(&mut step, a, scope, note);
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
        self.draft.steps.push(step);
        Ok(())
    }

    /// The `[[step]]` of builder stage `si`, named `name`, before its instructions: its image
    /// (the parent builder's step, or the root image), and the outputs later stages copy.
    fn builder_draft(&self, st: &Stages, si: usize, name: &str) -> StepDraft {
        let stage = &st.stages[si];
        let image = match stage.parent {
            Some(p) if st.roles[p] == Role::Builder => {
                StepImage::Step(step_name(&st.stages[p].label, &[]))
            }
            Some(p) => StepImage::Image(root_image(st, p)),
            None => StepImage::Image(stage.image.clone()),
        };
        StepDraft {
            name: name.to_string(),
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
        }
    }

    /// A builder's ENV: each pair into the step's environment (the last of a name wins).
    fn builder_env(&self, step: &mut StepDraft, text: &str, sv: &mut StageVars) {
        for (k, v) in super::parse::pairs(text) {
            let raw = v.unwrap_or_default();
            let r = if self.keep_args {
                super::parse::recipe_form(&raw, &sv.vars, &sv.forms)
            } else {
                expand(&raw, &sv.vars)
            };
            sv.vars.insert(k.clone(), expand(&raw, &sv.vars));
            sv.forms.insert(k.clone(), r.clone());
            step.env.retain(|(x, _)| *x != k);
            step.env.push((k, r));
        }
    }

    /// A builder's ARG: its value (a build arg, the default, the global), an `[args]` entry
    /// for the first of a name, and the step's environment where the value differs from it.
    fn builder_arg(
        &mut self,
        step: &mut StepDraft,
        i: &Instruction<'_>,
        text: &str,
        sv: &mut StageVars,
    ) {
        for (k, v) in super::parse::pairs(text) {
            let v = self
                .build_args
                .get(&k)
                .cloned()
                .or(v.map(|v| expand(&v, &sv.vars)))
                .or_else(|| self.globals.get(&k).cloned())
                .unwrap_or_default();
            sv.vars.insert(k.clone(), v.clone());
            // An [args] entry (the first ARG of a name makes it) of this value is
            // in the step's environment.
            let entry = self.draft.args.iter().find(|(a, _, _)| *a == k);
            let same = entry.is_none_or(|(_, x, _)| *x == v);
            if entry.is_none() {
                let origin = self.origin(i);
                self.draft.args.push((k.clone(), v.clone(), origin));
            }
            if same {
                sv.forms.insert(k.clone(), format!("${{{k}}}"));
            } else {
                let r = if self.keep_args {
                    super::parse::dollars_doubled(&v)
                } else {
                    v.clone()
                };
                sv.forms.insert(k.clone(), r.clone());
                step.env.push((k, r));
            }
        }
    }
}

/// A builder stage's variables as its instructions go: their values, and the same as the
/// recipe's strings write them.
struct StageVars {
    vars: Vars,
    forms: Vars,
}

/// The stage an instruction is in: the stages, and its index among them.
#[derive(Clone, Copy)]
struct Stage<'a> {
    stages: &'a Stages,
    index: usize,
}

/// Where an instruction's names resolve: the stage's variables and working directory.
#[derive(Clone, Copy)]
struct Scope<'a> {
    vars: &'a Vars,
    cwd: &'a str,
}

impl Mapper<'_> {
    /// A COPY in a builder stage: an input of its step (from the context or another step).
    fn builder_copy(
        &self,
        step: &mut StepDraft,
        i: &Instruction<'_>,
        c: &parse_dockerfile::CopyInstruction<'_>,
        stage: Stage<'_>,
        scope: Scope<'_>,
        mut note: String,
    ) -> (Class, String) {
        let (st, si) = (stage.stages, stage.index);
        let (vars, cwd) = (scope.vars, scope.cwd);
        let mut class = Class::Step;
        let from = from_flag(i).into_iter().next();
        let dest = resolve(cwd, &expand(&c.dest.value, vars));
        match from.as_deref().and_then(|f| st.find(f, si)) {
            Some(dep) => {
                let n = step_name(&st.stages[dep].label, &[]);
                if !step.input_steps.contains(&n) {
                    step.input_steps.push(n);
                }
                note = format!("{note}: the outputs of [[step]] {}", st.stages[dep].label);
            }
            None if from.is_some() => {
                class = Class::NotTranslated;
                note = format!(
                    "{note}: COPY --from an image in a builder: add a step that copies from it"
                );
            }
            None => {
                for s in &c.src {
                    if let Source::Path(p) = s {
                        let src = expand(&p.value, vars);
                        if super::copy::outside_context(&src) {
                            class = Class::NotTranslated;
                            note = format!("{note}: {src} is outside the build context (Docker refuses it): not copied");
                            continue;
                        }
                        step.inputs.push((self.context_path(&src), dest.clone()));
                    }
                }
                note = format!("{note}: an input of the step");
            }
        }
        (class, note)
    }

    /// An ADD in a builder stage: a `fetch` of its step (a URL) or an input.
    fn builder_add(
        &self,
        step: &mut StepDraft,
        a: &parse_dockerfile::AddInstruction<'_>,
        scope: Scope<'_>,
        mut note: String,
    ) -> (Class, String) {
        let (vars, cwd) = (scope.vars, scope.cwd);
        let mut class = Class::Step;

        let dest = resolve(cwd, &expand(&a.dest.value, vars));
        for s in &a.src {
            let Source::Path(p) = s else { continue };
            let src = expand(&p.value, vars);
            if src.contains("://") {
                let file = src
                    .rsplit('/')
                    .next()
                    .filter(|f| !f.is_empty())
                    .unwrap_or("download");
                let at = if a.dest.value.ends_with('/') {
                    format!("{}/{file}", dest.trim_end_matches('/'))
                } else {
                    dest.clone()
                };
                step.fetch.push((src.clone(), at));
                note = format!("{note}: a `fetch` of the step (ocibuild lock pins its sha256)");
            } else if super::copy::outside_context(&src) {
                return (
                    Class::NotTranslated,
                    format!("{note}: {src} is outside the build context (Docker refuses it): not copied"),
                );
            } else {
                step.inputs.push((self.context_path(&src), dest.clone()));
                if [".tar", ".tgz", ".gz", ".xz", ".bz2", ".zst"]
                    .iter()
                    .any(|t| src.ends_with(t))
                {
                    note = format!("{note}: an input of the step; ADD unpacked it, this does not: unpack it in the step");
                    class = Class::Approximated;
                } else {
                    note = format!("{note}: an input of the step");
                }
            }
        }
        (class, note)
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
