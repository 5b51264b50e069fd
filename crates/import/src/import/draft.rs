//! The recipe being written: every part with the Dockerfile line it came from, rendered as
//! TOML with a `# Dockerfile:LINE INSTRUCTION …` comment above each.

use std::fmt::Write as _;

/// Where a part came from: `Dockerfile:12 RUN apt-get install …` (clipped).
pub(super) type Origin = String;

#[derive(Debug, Default)]
pub(super) struct Draft {
    pub header: Vec<String>,
    pub name: String,
    pub platform: String,
    pub base: Option<(String, Origin)>,
    pub args: Vec<(String, String, Origin)>,
    pub apt_sources: Vec<AptSource>,
    pub apt_packages: Vec<(String, Origin)>,
    pub apt_essential: bool,
    pub python: Option<PythonDraft>,
    pub groups: Vec<(String, u32, Origin)>,
    pub users: Vec<UserDraft>,
    pub paths: Vec<PathDraft>,
    pub steps: Vec<StepDraft>,
    pub layers: Vec<LayerDraft>,
    pub config: ConfigDraft,
}

#[derive(Debug)]
pub(super) struct AptSource {
    pub url: String,
    pub suite: String,
    pub components: Vec<String>,
    pub signed_by: String,
    pub origin: Origin,
}

#[derive(Debug)]
pub(super) struct PythonDraft {
    pub version: Option<String>,
    pub lock: String,
    pub origin: Origin,
}

#[derive(Debug)]
pub(super) struct UserDraft {
    pub name: String,
    pub uid: u32,
    pub gid: Option<u32>,
    pub home: Option<String>,
    pub shell: Option<String>,
    pub origin: Origin,
}

#[derive(Debug, Default)]
pub(super) struct PathDraft {
    pub path: String,
    pub mode: Option<String>,
    pub owner: Option<String>,
    pub symlink: Option<String>,
    pub origin: Origin,
}

#[derive(Debug)]
pub(super) enum StepImage {
    Image(String),
    Step(String),
}

#[derive(Debug)]
pub(super) struct StepDraft {
    pub name: String,
    pub image: StepImage,
    /// `(src, dest)` from the context, or `(step, "")` for an earlier step's outputs.
    pub inputs: Vec<(String, String)>,
    pub input_steps: Vec<String>,
    pub fetch: Vec<(String, String)>,
    pub script: Vec<String>,
    pub env: Vec<(String, String)>,
    pub workdir: Option<String>,
    pub user: Option<String>,
    /// `(path, dest, image)`.
    pub outputs: Vec<(String, String, bool)>,
    pub outputs_guessed: bool,
    pub network: bool,
    pub origins: Vec<Origin>,
}

#[derive(Debug)]
pub(super) struct LayerDraft {
    pub name: String,
    pub src: String,
    pub dest: String,
    pub owner: Option<String>,
    pub mode_preserve: bool,
    pub ignore_file: Option<String>,
    pub ignore: Vec<String>,
    pub origin: Origin,
}

#[derive(Debug, Default)]
pub(super) struct ConfigDraft {
    pub env: Vec<(String, String, Origin)>,
    pub labels: Vec<(String, String, Origin)>,
    pub workdir: Option<(String, Origin)>,
    pub user: Option<(String, Origin)>,
    pub entrypoint: Option<(Vec<String>, Origin)>,
    pub cmd: Option<(Vec<String>, Origin)>,
    pub ports: Vec<(String, Origin)>,
    pub volumes: Vec<(String, Origin)>,
    pub shell: Option<(Vec<String>, Origin)>,
    pub stop_signal: Option<(String, Origin)>,
    pub healthcheck: Option<(Vec<(String, String)>, Origin)>,
}

/// A TOML basic string.
/// A TOML basic string on one line (JSON's escapes are TOML's).
pub(super) fn q(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A TOML array of strings, on one line.
pub(super) fn arr(v: &[String]) -> String {
    let items: Vec<String> = v.iter().map(|s| q(s)).collect();
    format!("[{}]", items.join(", "))
}

fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        k.to_string()
    } else {
        q(k)
    }
}

fn comment(out: &mut String, origin: &str) {
    for l in origin.lines() {
        let _ = writeln!(out, "# {l}");
    }
}

impl Draft {
    pub(super) fn render(&self) -> String {
        let mut o = String::new();
        for h in &self.header {
            let _ = writeln!(o, "# {h}");
        }
        let _ = writeln!(o, "\n[image]\nname = {}", q(&self.name));
        let _ = writeln!(o, "platform = {}", q(&self.platform));
        if let Some((image, origin)) = &self.base {
            o.push('\n');
            comment(&mut o, origin);
            let _ = writeln!(o, "[base]\nimage = {}", q(image));
        }
        if !self.args.is_empty() {
            o.push_str("\n[args]\n");
            for (k, v, origin) in &self.args {
                comment(&mut o, origin);
                let _ = writeln!(o, "{} = {}", key(k), q(v));
            }
        }
        self.render_apt(&mut o);
        if let Some(p) = &self.python {
            o.push('\n');
            comment(&mut o, &p.origin);
            o.push_str("[python]\n");
            if let Some(v) = &p.version {
                let _ = writeln!(o, "version = {}", q(v));
            }
            let _ = writeln!(o, "lock = {}", q(&p.lock));
        }
        self.render_accounts(&mut o);
        for p in &self.paths {
            o.push('\n');
            comment(&mut o, &p.origin);
            let _ = writeln!(o, "[[path]]\npath = {}", q(&p.path));
            for (k, v) in [
                ("symlink", &p.symlink),
                ("mode", &p.mode),
                ("owner", &p.owner),
            ] {
                if let Some(v) = v {
                    let _ = writeln!(o, "{k} = {}", q(v));
                }
            }
        }
        let names: Vec<&str> = self.args.iter().map(|(k, _, _)| k.as_str()).collect();
        for s in &self.steps {
            render_step(&mut o, s, &names);
        }
        for l in &self.layers {
            render_layer(&mut o, l);
        }
        self.config.render(&mut o, &names);
        o
    }

    fn render_apt(&self, o: &mut String) {
        for s in &self.apt_sources {
            o.push('\n');
            comment(o, &s.origin);
            let _ = writeln!(
                o,
                "[[apt.source]]\nurl = {}\nsuite = {}\ncomponents = {}\nsigned-by = {}",
                q(&s.url),
                q(&s.suite),
                arr(&s.components),
                q(&s.signed_by)
            );
        }
        if self.apt_packages.is_empty() {
            return;
        }
        o.push_str("\n[apt]\n");
        if self.apt_essential {
            o.push_str("essential = true\n");
        }
        o.push_str("packages = [\n");
        for (p, origin) in &self.apt_packages {
            let _ = writeln!(o, "    {},    # {origin}", q(p));
        }
        o.push_str("]\n");
    }

    fn render_accounts(&self, o: &mut String) {
        for (name, gid, origin) in &self.groups {
            o.push('\n');
            comment(o, origin);
            let _ = writeln!(o, "[[accounts.group]]\nname = {}\ngid = {gid}", q(name));
        }
        for u in &self.users {
            o.push('\n');
            comment(o, &u.origin);
            let _ = writeln!(
                o,
                "[[accounts.user]]\nname = {}\nuid = {}",
                q(&u.name),
                u.uid
            );
            if let Some(g) = u.gid {
                let _ = writeln!(o, "gid = {g}");
            }
            if let Some(h) = &u.home {
                let _ = writeln!(o, "home = {}", q(h));
            }
            if let Some(s) = &u.shell {
                let _ = writeln!(o, "shell = {}", q(s));
            }
        }
    }
}

/// `args`: the recipe's argument names (its run script is the shell's, as written).
fn render_step(o: &mut String, s: &StepDraft, args: &[&str]) {
    o.push('\n');
    for origin in &s.origins {
        comment(o, origin);
    }
    let _ = writeln!(o, "[[step]]\nname = {}", q(&s.name));
    match &s.image {
        StepImage::Image(i) => {
            let _ = writeln!(o, "image = {}", q(i));
        }
        StepImage::Step(n) => {
            let _ = writeln!(o, "image = {{ step = {} }}", q(n));
        }
    }
    let mut inputs: Vec<String> = s
        .inputs
        .iter()
        .map(|(src, dest)| format!("{{ src = {}, dest = {} }}", q(src), q(dest)))
        .collect();
    inputs.extend(
        s.input_steps
            .iter()
            .map(|n| format!("{{ step = {} }}", q(n))),
    );
    if !inputs.is_empty() {
        let _ = writeln!(o, "inputs = [{}]", inputs.join(", "));
    }
    if !s.fetch.is_empty() {
        let f: Vec<String> = s
            .fetch
            .iter()
            .map(|(url, dest)| format!("{{ url = {}, dest = {} }}", q(url), q(dest)))
            .collect();
        let _ = writeln!(o, "fetch = [{}]", f.join(", "));
    }
    let script = super::parse::verbatim(&s.script.join("\n"), args);
    let _ = writeln!(o, "run = {}", arr(&["/bin/sh".into(), "-c".into(), script]));
    if !s.env.is_empty() {
        let e: Vec<String> = s
            .env
            .iter()
            .map(|(k, v)| format!("{} = {}", key(k), q(v)))
            .collect();
        let _ = writeln!(o, "env = {{ {} }}", e.join(", "));
    }
    if let Some(w) = &s.workdir {
        let _ = writeln!(o, "workdir = {}", q(w));
    }
    if let Some(u) = &s.user {
        let _ = writeln!(o, "user = {}", q(u));
    }
    if s.network {
        o.push_str(
            "network = true    # it downloads: build --allow-network, or declare `fetch`es\n",
        );
    }
    if !s.outputs_guessed {
        o.push_str("# TODO: declare the outputs: the directories this command fills, and where they go in the image\n");
    }
    let outs: Vec<String> = s
        .outputs
        .iter()
        .map(|(p, d, image)| {
            let img = if *image { "" } else { ", image = false" };
            format!("{{ path = {}, dest = {}{img} }}", q(p), q(d))
        })
        .collect();
    let _ = writeln!(o, "outputs = [{}]", outs.join(", "));
}

fn render_layer(o: &mut String, l: &LayerDraft) {
    o.push('\n');
    comment(o, &l.origin);
    let _ = writeln!(
        o,
        "[[layer]]\nname = {}\nsrc = {}\ndest = {}",
        q(&l.name),
        q(&l.src),
        q(&l.dest)
    );
    if let Some(owner) = &l.owner {
        let _ = writeln!(o, "owner = {}", q(owner));
    }
    if l.mode_preserve {
        o.push_str("mode = \"preserve\"\n");
    }
    if let Some(f) = &l.ignore_file {
        let _ = writeln!(o, "ignore-file = {}", q(f));
    }
    if !l.ignore.is_empty() {
        let _ = writeln!(o, "ignore = {}", arr(&l.ignore));
    }
}

impl ConfigDraft {
    fn is_empty(&self) -> bool {
        self.env.is_empty()
            && self.labels.is_empty()
            && self.workdir.is_none()
            && self.user.is_none()
            && self.entrypoint.is_none()
            && self.cmd.is_none()
            && self.ports.is_empty()
            && self.volumes.is_empty()
            && self.shell.is_none()
            && self.stop_signal.is_none()
            && self.healthcheck.is_none()
    }

    /// `args`: the recipe's argument names (entrypoint and cmd are written as the Dockerfile
    /// had them: Docker substitutes nothing there).
    fn render(&self, o: &mut String, args: &[&str]) {
        if self.is_empty() {
            return;
        }
        let top_level = self.workdir.is_some()
            || self.user.is_some()
            || self.stop_signal.is_some()
            || self.entrypoint.is_some()
            || self.cmd.is_some()
            || self.shell.is_some()
            || !self.ports.is_empty()
            || !self.volumes.is_empty();
        if top_level {
            o.push_str("\n[config]\n");
        }
        let scalars = [
            ("workdir", &self.workdir),
            ("user", &self.user),
            ("stop-signal", &self.stop_signal),
        ];
        for (k, v) in scalars {
            if let Some((v, origin)) = v {
                comment(o, origin);
                let _ = writeln!(o, "{k} = {}", q(v));
            }
        }
        let arrays = [
            ("entrypoint", &self.entrypoint),
            ("cmd", &self.cmd),
            ("shell", &self.shell),
        ];
        for (k, v) in arrays {
            if let Some((v, origin)) = v {
                comment(o, origin);
                let v: Vec<String> = if k == "shell" {
                    v.clone()
                } else {
                    v.iter().map(|a| super::parse::verbatim(a, args)).collect()
                };
                let _ = writeln!(o, "{k} = {}", arr(&v));
            }
        }
        for (k, list) in [("exposed-ports", &self.ports), ("volumes", &self.volumes)] {
            if list.is_empty() {
                continue;
            }
            let _ = writeln!(o, "{k} = [");
            for (v, origin) in list {
                let _ = writeln!(o, "    {},    # {origin}", q(v));
            }
            o.push_str("]\n");
        }
        for (table, list) in [("env", &self.env), ("labels", &self.labels)] {
            if list.is_empty() {
                continue;
            }
            let _ = writeln!(o, "\n[config.{table}]");
            for (k, v, origin) in list {
                comment(o, origin);
                let _ = writeln!(o, "{} = {}", key(k), q(v));
            }
        }
        if let Some((fields, origin)) = &self.healthcheck {
            o.push('\n');
            comment(o, origin);
            o.push_str("[config.healthcheck]\n");
            for (k, v) in fields {
                let _ = writeln!(o, "{k} = {v}");
            }
        }
    }
}
