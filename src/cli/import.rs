//! `ocibuild import Dockerfile`: writes recipe.toml (and requirements.in, pylock.toml) and
//! prints what each instruction became.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::Cli;
use crate::import::{self, Class, ImportOptions};

#[derive(Args, Debug)]
#[command(
    after_help = "Every instruction gets a row: `mapped` (a recipe key does the same), `step` (it \
became a [[step]]), `approximated` (the note says what differs) or `not translated` (the note says \
why and what to do). RUN lines are split at && and ; and each part is classified. Pip installs go \
to requirements.in, with the `uv pip compile` command that writes pylock.toml (run by --pylock). \
docs/porting.md has the whole mapping.

Examples:
  ocibuild import Dockerfile                         recipe.toml beside the Dockerfile (its context)
  ocibuild import docker/Dockerfile --context . -o ocibuild/
  ocibuild import Dockerfile --target runtime --build-arg CUDA=12.8.1 --json"
)]
pub(super) struct ImportArgs {
    /// The Dockerfile to read.
    pub dockerfile: PathBuf,
    /// The build context: COPY sources are relative to it (default: the Dockerfile's directory).
    #[arg(long, value_name = "DIR")]
    pub context: Option<PathBuf>,
    /// The stage that is the image (default: the last one).
    #[arg(long, value_name = "STAGE")]
    pub target: Option<String>,
    /// A build argument's value, as `docker build --build-arg` (repeatable): the `[args]`
    /// default the recipe is written with (`build --build-arg` sets it again).
    #[arg(long = "build-arg", value_name = "NAME=VALUE")]
    pub build_args: Vec<String>,
    /// Where recipe.toml and requirements.in are written (default: the context directory, so
    /// that `COPY . /app` is `src = "."`).
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Overwrite an existing recipe.toml.
    #[arg(long)]
    pub force: bool,
    /// Run the `uv pip compile` command (uv must be on PATH) to write pylock.toml from
    /// requirements.in.
    #[arg(long)]
    pub pylock: bool,
    /// Start from scratch with `[apt] essential = true` in place of a Debian or Ubuntu FROM.
    #[arg(long)]
    pub scratch: bool,
    /// The image's platform (`[image] platform`, and the wheels' platform for uv).
    #[arg(long, value_name = "OS/ARCH", default_value = "linux/amd64")]
    pub platform: String,
    /// Print the table and the files written as JSON (docs/json.md).
    #[arg(long)]
    pub json: bool,
}

pub(super) fn run(_cli: &Cli, args: &ImportArgs) -> anyhow::Result<ExitCode> {
    let dir = args
        .dockerfile
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let context = args.context.clone().unwrap_or(dir);
    let out_dir = args.output.clone().unwrap_or_else(|| context.clone());
    let opts = ImportOptions {
        dockerfile: args.dockerfile.clone(),
        context,
        out_dir: out_dir.clone(),
        target: args.target.clone(),
        build_args: args.build_args.clone(),
        scratch: args.scratch,
        platform: args.platform.clone(),
    };
    let imported = import::import(&opts)?;
    let mut written = import::write(&imported, &out_dir, args.force)?;
    if args.pylock {
        if let Some(p) = import::compile_pylock(&imported, &out_dir)? {
            written.push(p);
        }
    }
    if args.json {
        let mut doc = serde_json::to_value(&imported)?;
        doc["files"] = serde_json::json!(written
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>());
        doc["counts"] = serde_json::json!(imported
            .counts()
            .iter()
            .map(|(c, n)| (c.as_str().replace(' ', "-"), *n))
            .collect::<std::collections::BTreeMap<_, _>>());
        let bytes = crate::json::to_canonical_vec("the import table", &doc)?;
        println!("{}", String::from_utf8_lossy(&bytes));
        return Ok(ExitCode::SUCCESS);
    }
    print_table(&imported);
    for p in &written {
        println!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(imported: &import::Imported) {
    let width = imported
        .rows
        .iter()
        .map(|r| r.text.chars().count())
        .max()
        .unwrap_or(0)
        .min(60);
    println!(
        "{:>5}  {:<width$}  {:<14}  note",
        "line", "instruction", "class"
    );
    for r in &imported.rows {
        let text: String = r.text.chars().take(width).collect();
        println!(
            "{:>5}  {text:<width$}  {:<14}  {}",
            r.line,
            r.class.as_str(),
            r.note
        );
        for p in &r.parts {
            let t: String = p.text.chars().take(width.saturating_sub(4)).collect();
            println!(
                "{:>5}    - {t:<w$}  {:<14}  {}",
                "",
                p.class.as_str(),
                p.note,
                w = width.saturating_sub(4)
            );
        }
    }
    let counts: Vec<String> = [
        Class::Mapped,
        Class::Step,
        Class::Approximated,
        Class::NotTranslated,
    ]
    .iter()
    .map(|c| {
        format!(
            "{} {}",
            imported.counts().get(c).copied().unwrap_or(0),
            c.as_str()
        )
    })
    .collect();
    println!(
        "{} instructions: {}",
        imported.rows.len(),
        counts.join(", ")
    );
    for n in &imported.notes {
        println!("note: {n}");
    }
}
