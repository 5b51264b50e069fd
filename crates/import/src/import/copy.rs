//! `COPY` and `ADD`: layers from the context (owner, .dockerignore, globs), `--from` a
//! builder stage's step or an image, `ADD URL` as a step `fetch`.

use parse_dockerfile::{Instruction, Source};

use super::draft::{LayerDraft, StepDraft, StepImage};
use super::map::{resolve, unused_layer_name, Mapper};
use super::parse::expand;
use super::run::{shell_quote, step_name};
use super::stages::{is_image_ref, Role, Stages};
use super::{Class, ImportError};

/// Whether a COPY/ADD source (relative to the build context; a leading `/` is the context's
/// root, as Docker takes it) climbs out of the context with `..`: Docker refuses such a source,
/// and a recipe would read the host's file there.
pub(super) fn outside_context(src: &str) -> bool {
    let mut depth = 0usize;
    for c in src.split('/') {
        match c {
            "" | "." => {}
            ".." if depth == 0 => return true,
            ".." => depth -= 1,
            _ => depth += 1,
        }
    }
    false
}

impl Mapper<'_> {
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
        // `dest/`, `.` (the WORKDIR) and `..` are directories: a file goes in under its name.
        let dest_dir = raw_dest.ends_with('/')
            || srcs.len() > 1
            || matches!(raw_dest.rsplit('/').next(), Some("." | ".."));
        let dest = resolve(&self.workdir, &raw_dest);
        let mut notes = Vec::new();
        let mut class = Class::Mapped;
        let mut owner = None;
        let mut from = None;
        for f in opts {
            let v = f
                .value
                .as_ref()
                .map(|v| expand(v.value.trim_matches(|c| c == '"' || c == '\''), &self.vars))
                .unwrap_or_default();
            match &*f.name.value {
                "chown" => {
                    if let Some(o) = self.numeric_owner(&v) {
                        owner = Some(o);
                    } else {
                        class = class.max(Class::Approximated);
                        notes.push(format!("--chown={v}: not a declared account: set the layer's owner = \"UID:GID\""));
                    }
                }
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
            let src = if let Source::Path(p) = s {
                expand(&p.value, &self.vars)
            } else {
                class = class.max(Class::NotTranslated);
                notes.push("a heredoc source: write the file into the context and COPY it".into());
                continue;
            };
            if !src.contains("://") && outside_context(&src) {
                class = class.max(Class::NotTranslated);
                notes.push(format!(
                    "{src} is outside the build context (Docker refuses it): not copied"
                ));
                continue;
            }
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
                class = class.max(Class::Step);
                self.add_local_tar(i, &src, &dest);
                notes.push(format!(
                    "ADD {src}: its contents, unpacked by a [[step]] in the stage's image (which needs tar)"
                ));
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
        if let (Some(o), true) = (
            &self.out_in_ctx,
            dir_src.trim_matches(['.', '/']).is_empty(),
        ) {
            // The whole context holds the output directory: the recipe is not the app's.
            ignore.push(o.clone());
        }
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
        let image = self.stage_image();
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

    /// The image a step of the final stage runs in: the stage's base (busybox on scratch).
    fn stage_image(&self) -> String {
        self.draft
            .base
            .as_ref()
            .map(|b| b.0.clone())
            .unwrap_or_else(|| "docker.io/library/busybox:stable".into())
    }

    /// `ADD archive.tar.gz /dest`: a step that unpacks the context's archive (an input) into
    /// its output, which becomes a layer at `dest` (a directory, as ADD makes it).
    fn add_local_tar(&mut self, i: &Instruction<'_>, src: &str, dest: &str) {
        let file = src.rsplit('/').next().unwrap_or(src).to_string();
        let name = step_name(&format!("add-{}", self.text_of(i).0), &self.draft.steps);
        let image = self.stage_image();
        let dest = dest.trim_end_matches('/');
        self.draft.steps.push(StepDraft {
            name,
            image: StepImage::Image(image),
            inputs: vec![(self.context_path(src), format!("/in/{file}"))],
            input_steps: Vec::new(),
            fetch: Vec::new(),
            script: vec![format!("tar -xf /in/{} -C /out", shell_quote(&file))],
            env: Vec::new(),
            workdir: None,
            user: None,
            outputs: vec![(
                "/out".into(),
                if dest.is_empty() {
                    "/".into()
                } else {
                    dest.to_string()
                },
                true,
            )],
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
