//! The Dockerfile's stages: which is the image (`--target`, else the last), which it is built
//! `FROM`, and which are builders whose results it copies (`COPY --from`).

use std::collections::BTreeSet;
use std::path::Path;

use parse_dockerfile::{Dockerfile, Instruction};

use super::parse::{expand, Lines, Vars};
use super::ImportError;

/// One stage.
#[derive(Debug)]
pub(super) struct Stage {
    /// `AS name`, lowercased as Docker compares them.
    pub name: Option<String>,
    /// Its name, or its index when it has none.
    pub label: String,
    /// The FROM image, ARGs substituted.
    pub image: String,
    /// The earlier stage it is built `FROM`.
    pub parent: Option<usize>,
    /// Its instructions: `first` is its FROM, up to (not including) `end`.
    pub first: usize,
    pub end: usize,
}

/// What a stage is to the image.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Role {
    /// The target or a stage it is built FROM: its instructions are the image's.
    Image,
    /// A stage whose files the image (or another builder) copies: a `[[step]]`.
    Builder,
    /// Neither.
    Unused,
}

pub(super) struct Stages {
    pub stages: Vec<Stage>,
    pub roles: Vec<Role>,
    pub target: usize,
}

impl Stages {
    /// The stage a `--from=` / `FROM` name means, by name or index, before stage `before`.
    pub(super) fn find(&self, name: &str, before: usize) -> Option<usize> {
        let lower = name.to_ascii_lowercase();
        self.stages[..before]
            .iter()
            .position(|s| s.name.as_deref() == Some(lower.as_str()))
            .or_else(|| name.parse::<usize>().ok().filter(|&i| i < before))
    }

    pub(super) fn labels(&self) -> Vec<String> {
        self.stages.iter().map(|s| s.label.clone()).collect()
    }
}

/// Whether `--from=NAME` reads as an image reference rather than a stage name.
pub(super) fn is_image_ref(name: &str) -> bool {
    name.contains('/') || name.contains(':') || name.contains('@')
}

/// A `--from=` value of a COPY or a `RUN --mount`.
pub(super) fn from_flag(ins: &Instruction<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let flags = match ins {
        Instruction::Copy(c) => c.options.iter().collect::<Vec<_>>(),
        Instruction::Add(a) => a.options.iter().collect(),
        Instruction::Run(r) => r.options.iter().collect(),
        _ => Vec::new(),
    };
    for f in flags {
        let value = f
            .value
            .as_ref()
            .map(|v| v.value.to_string())
            .unwrap_or_default();
        match &*f.name.value {
            "from" => out.push(value),
            "mount" => {
                for kv in value.split(',') {
                    if let Some(v) = kv.strip_prefix("from=") {
                        out.push(v.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

pub(super) fn stages(
    df: &Dockerfile<'_>,
    globals_vars: &Vars,
    target: Option<&str>,
    path: &Path,
    lines: &Lines,
) -> Result<Stages, ImportError> {
    let ins = &df.instructions;
    let globals = ins
        .iter()
        .position(|i| matches!(i, Instruction::From(_)))
        .unwrap_or(ins.len());
    let mut stages: Vec<Stage> = Vec::new();
    for (i, instruction) in ins.iter().enumerate().skip(globals) {
        let Instruction::From(f) = instruction else {
            continue;
        };
        if let Some(last) = stages.last_mut() {
            last.end = i;
        }
        let image = expand(&f.image.value, globals_vars);
        let name = f.as_.as_ref().map(|(_, n)| n.value.to_ascii_lowercase());
        let label = name.clone().unwrap_or_else(|| stages.len().to_string());
        let mut all = Stages {
            stages,
            roles: Vec::new(),
            target: 0,
        };
        let parent = all.find(&image, all.stages.len());
        stages = std::mem::take(&mut all.stages);
        stages.push(Stage {
            name,
            label,
            image,
            parent,
            first: i,
            end: ins.len(),
        });
    }
    let mut all = Stages {
        roles: vec![Role::Unused; stages.len()],
        target: stages.len().saturating_sub(1),
        stages,
    };
    if let Some(t) = target {
        all.target = all
            .stages
            .iter()
            .position(|s| s.name.as_deref() == Some(t.to_ascii_lowercase().as_str()))
            .ok_or_else(|| ImportError::NoTarget {
                name: t.to_string(),
                known: all.labels(),
            })?;
    }
    mark_roles(&mut all, ins, path, lines)?;
    Ok(all)
}

fn mark_roles(
    all: &mut Stages,
    ins: &[Instruction<'_>],
    path: &Path,
    lines: &Lines,
) -> Result<(), ImportError> {
    let mut s = Some(all.target);
    while let Some(i) = s {
        all.roles[i] = Role::Image;
        s = all.stages[i].parent;
    }
    // Builders: what an image or builder stage copies from, and their parents.
    let mut todo: Vec<usize> = (0..all.stages.len())
        .filter(|&i| all.roles[i] == Role::Image)
        .collect();
    let mut seen = BTreeSet::new();
    while let Some(si) = todo.pop() {
        if !seen.insert(si) {
            continue;
        }
        let st = &all.stages[si];
        for instruction in ins.iter().take(st.end).skip(st.first) {
            for from in from_flag(instruction) {
                if is_image_ref(&from) {
                    continue;
                }
                let Some(dep) = all.find(&from, si) else {
                    return Err(ImportError::NoStage {
                        path: path.to_path_buf(),
                        line: lines.line(span_start(instruction)),
                        name: from,
                        known: all.stages[..si].iter().map(|s| s.label.clone()).collect(),
                    });
                };
                let mut d = Some(dep);
                while let Some(x) = d {
                    if all.roles[x] == Role::Unused {
                        all.roles[x] = Role::Builder;
                    }
                    todo.push(x);
                    d = all.stages[x].parent;
                }
            }
        }
    }
    Ok(())
}

/// The byte offset an instruction starts at.
pub(super) fn span_start(ins: &Instruction<'_>) -> usize {
    match ins {
        Instruction::Add(i) => i.add.span.start,
        Instruction::Arg(i) => i.arg.span.start,
        Instruction::Cmd(i) => i.cmd.span.start,
        Instruction::Copy(i) => i.copy.span.start,
        Instruction::Entrypoint(i) => i.entrypoint.span.start,
        Instruction::Env(i) => i.env.span.start,
        Instruction::Expose(i) => i.expose.span.start,
        Instruction::From(i) => i.from.span.start,
        Instruction::Healthcheck(i) => i.healthcheck.span.start,
        Instruction::Label(i) => i.label.span.start,
        Instruction::Maintainer(i) => i.maintainer.span.start,
        Instruction::Onbuild(i) => i.onbuild.span.start,
        Instruction::Run(i) => i.run.span.start,
        Instruction::Shell(i) => i.shell.span.start,
        Instruction::Stopsignal(i) => i.stopsignal.span.start,
        Instruction::User(i) => i.user.span.start,
        Instruction::Volume(i) => i.volume.span.start,
        Instruction::Workdir(i) => i.workdir.span.start,
        _ => 0,
    }
}
