//! What defines the image a recipe builds, as one digest (`dev.ocibuild.recipe.digest`): the
//! canonical JSON of the parsed recipe's image-relevant parts. A comment, a reordered table, a
//! changed `[[test]]` or `[podman]`, or the tag (the index entry carries it) do not change it;
//! a changed name, layer, config value,
//! package request, interpreter or account does. Host paths never enter it: layer sources are
//! as written (relative to the recipe), and a `signed-by` key is pinned by the lock instead.

use serde_json::{json, Value};

use super::{Base, PythonPackages, PythonSource, Recipe};
use crate::digest::Digest;
use crate::json::JsonError;

/// Bumped when what the identity covers changes (it is also covered by the determinism
/// contract's version, which every manifest records).
const IDENTITY: &str = "ocibuild-recipe-identity/1";

impl Recipe {
    /// The digest of what defines this recipe's image.
    pub fn identity(&self) -> Result<Digest, JsonError> {
        let bytes = crate::json::to_canonical_vec("recipe identity", &self.identity_value())?;
        Ok(Digest::of(&bytes))
    }

    #[cfg(test)]
    pub(crate) fn identity_value_for_tests(&self) -> Value {
        self.identity_value()
    }

    /// `[config]` as the identity names it.
    fn config_identity(&self) -> Value {
        let c = &self.config;
        let mut config = json!({
            "env": c.env, "entrypoint": c.entrypoint, "cmd": c.cmd, "workdir": c.workdir,
            "user": c.user, "labels": c.labels, "exposedPorts": c.exposed_ports,
            "annotations": c.annotations, "stopSignal": c.stop_signal,
        });
        // Each only when set: the identity of every recipe without them stays as it was.
        if !c.volumes.is_empty() {
            config["volumes"] = json!(c.volumes);
        }
        if let Some(s) = &c.shell {
            config["shell"] = json!(s);
        }
        if let Some(h) = &c.healthcheck {
            config["healthcheck"] = h.config_value();
        }
        config
    }

    fn identity_value(&self) -> Value {
        let i = &self.image;
        let base = match &self.base {
            Base::Scratch => Value::Null,
            Base::Image { reference } => json!(reference),
        };
        let layers: Vec<Value> = self
            .layers
            .iter()
            .map(|l| {
                json!({
                    "name": l.name, "src": l.src, "dest": l.spec.dest, "ignore": l.spec.ignore,
                    "uid": l.spec.uid, "gid": l.spec.gid, "mode": match l.spec.mode {
                        crate::layer::ModePolicy::Normalize => "normalize",
                        crate::layer::ModePolicy::Preserve => "preserve",
                    },
                })
            })
            .collect();
        let config = self.config_identity();
        let apt = self.apt.as_ref().map(|a| {
            let sources: Vec<Value> = a
                .sources
                .iter()
                .map(|s| {
                    json!({
                        "url": s.url, "suite": s.suite, "components": s.components,
                        "snapshot": s.snapshot, "allowUnsigned": s.allow_unsigned,
                    })
                })
                .collect();
            let mut v = json!({
                "sources": sources, "packages": a.packages, "architecture": a.architecture,
            });
            // Only when set: the identity of every recipe without it stays as it was.
            if !a.host_provides.is_empty() {
                v["hostProvides"] = json!(a.host_provides);
            }
            if a.essential {
                v["essential"] = json!(true);
            }
            v
        });
        let python = self.python.as_ref().map(|p| {
            let source = match &p.source {
                PythonSource::Auto => json!("auto"),
                PythonSource::Path(path) => json!({ "path": path }),
                PythonSource::Archive(a) => json!({
                    "url": a.written, "sha256": a.sha256, "prefix": a.prefix, "strip": a.strip,
                }),
            };
            let packages = p.packages.as_ref().map(|k| match k {
                PythonPackages::Pylock { written, .. } => json!({ "lock": written }),
                PythonPackages::UvLock {
                    written, selection, ..
                } => json!({
                    "lock": written, "extras": selection.extras, "groups": selection.groups,
                    "noDev": selection.no_dev,
                }),
                PythonPackages::Requirements { written, index, .. } => {
                    json!({ "requirements": written, "index": index })
                }
            });
            let mut v = json!({
                "source": source, "version": p.version, "packages": packages,
                "overlap": match p.overlap {
                    super::Overlap::Error => "error",
                    super::Overlap::Last => "last",
                },
                "maxLayerSize": p.max_layer_size,
            });
            // Only when set: every identity without one stays as it was.
            if let Some(b) = &p.sdist_builder {
                v["sdistBuilder"] = step_image(&b.image);
            }
            if let Some(project) = &p.project {
                v["project"] = json!(project.written);
            }
            v
        });
        let groups: Vec<Value> = self
            .accounts
            .groups
            .iter()
            .map(|g| json!({"name": g.name, "gid": g.gid}))
            .collect();
        let users: Vec<Value> = self
            .accounts
            .users
            .iter()
            .map(|u| {
                // The default as it was always written: every identity stays as it was.
                let shell = u.shell.as_deref().unwrap_or(super::accounts::DEFAULT_SHELL);
                json!({"name": u.name, "uid": u.uid, "gid": u.gid, "home": u.home, "shell": shell})
            })
            .collect();
        let mut v = json!({
            "identity": IDENTITY,
            // Not the tag: the index entry carries it, and `build --tag` gives the same image.
            "image": {
                "name": i.name, "compression": i.compression.describe(),
                "sourceDateEpoch": if i.epoch_from_git { json!("git") } else { json!(i.source_date_epoch) },
                "platform": i.platform.to_string(),
            },
            "base": base,
            "layers": layers,
            "config": config,
            "apt": apt,
            "python": python,
            "accounts": {"groups": groups, "users": users},
        });
        // Only with `cuda-archs`: the identity of every recipe without it stays as it was.
        if let Some(t) = &i.cuda {
            v["image"]["cuda"] = t.to_json();
        }
        // Likewise only when set.
        if i.drop_unused_copies {
            v["image"]["dropUnusedCopies"] = json!(true);
        }
        // Only with `[args]`: the identity of every recipe without them stays as it was.
        if let Some(a) = &self.args {
            v["args"] = json!(a);
        }
        // Only when there are steps: the identity of every recipe without them stays as it was.
        if !self.steps.is_empty() {
            v["steps"] = json!(self.steps.iter().map(step_identity).collect::<Vec<_>>());
        }
        // Only when there are `[[path]]`s, likewise.
        // Sorted by path: the layer is, so the recipe's order does not make another image.
        if !self.paths.is_empty() {
            let mut paths: Vec<&super::PathEntry> = self.paths.iter().collect();
            paths.sort_by(|a, b| a.path.cmp(&b.path));
            v["paths"] = json!(paths.into_iter().map(path_identity).collect::<Vec<_>>());
        }
        v
    }
}

fn path_identity(p: &super::PathEntry) -> Value {
    let target = match &p.kind {
        super::PathKind::Dir => None,
        super::PathKind::Symlink { target } => Some(target),
    };
    json!({"path": p.path, "symlink": target, "mode": p.mode, "uid": p.uid, "gid": p.gid})
}

fn step_identity(s: &super::Step) -> Value {
    use super::StepInput;
    let image = step_image(&s.image);
    let inputs: Vec<Value> = s
        .inputs
        .iter()
        .map(|i| match i {
            // `ignore` only when there are patterns: the identity of every step input without
            // them stays as it was.
            StepInput::Files(l) if l.spec.ignore.is_empty() => {
                json!({ "src": l.src, "dest": l.spec.dest })
            }
            StepInput::Files(l) => {
                json!({ "src": l.src, "dest": l.spec.dest, "ignore": l.spec.ignore })
            }
            StepInput::Step(n) => json!({ "step": n }),
        })
        .collect();
    let fetch: Vec<Value> = s
        .fetch
        .iter()
        .map(|f| json!({ "url": f.url, "sha256": f.sha256, "dest": f.dest }))
        .collect();
    let outputs: Vec<Value> = s
        .outputs
        .iter()
        .map(|o| json!({ "path": o.path, "dest": o.dest, "image": o.in_image }))
        .collect();
    json!({
        "name": s.name, "image": image, "inputs": inputs, "fetch": fetch, "run": s.run,
        "env": s.env, "workdir": s.workdir, "user": s.user, "outputs": outputs,
        "network": s.network,
    })
}

/// A builder as the identity names it.
fn step_image(image: &super::StepImage) -> Value {
    use super::StepImage;
    match image {
        StepImage::Registry(r) => json!(r),
        StepImage::Recipe { written, .. } => json!({ "recipe": written }),
        StepImage::Step(n) => json!({ "step": n }),
    }
}
