//! `ocibuild completions SHELL` and `ocibuild man`: shell completions, the man pages and the
//! markdown reference (docs/cli/), generated from the command definition.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, CommandFactory};

use super::Cli;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ocibuild completions bash > /etc/bash_completion.d/ocibuild
  ocibuild completions zsh > \"${fpath[1]}/_ocibuild\"
  ocibuild completions fish > ~/.config/fish/completions/ocibuild.fish")]
pub(super) struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  ocibuild man > /usr/local/share/man/man1/ocibuild.1
  ocibuild man --dir /usr/local/share/man/man1       ocibuild.1 and ocibuild-SUBCOMMAND.1
  ocibuild man --markdown-dir docs/cli               the reference pages checked in as docs/cli/")]
pub(super) struct ManArgs {
    /// Write ocibuild.1 and one ocibuild-SUBCOMMAND.1 per subcommand into DIR.
    #[arg(long, value_name = "DIR", conflicts_with = "markdown_dir")]
    pub dir: Option<PathBuf>,
    /// Write the markdown reference (ocibuild.md, one SUBCOMMAND.md each) into DIR.
    #[arg(long, value_name = "DIR")]
    pub markdown_dir: Option<PathBuf>,
}

pub(super) fn completions(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "ocibuild", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

pub(super) fn man(args: &ManArgs) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &args.dir {
        fs_err::create_dir_all(dir)?;
        clap_mangen::generate_to(super::command(), dir)
            .with_context(|| format!("writing the man pages into {}", dir.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(dir) = &args.markdown_dir {
        fs_err::create_dir_all(dir)?;
        for (name, text) in super::reference::pages() {
            fs_err::write(dir.join(name), text)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    clap_mangen::Man::new(super::command()).render(&mut std::io::stdout())?;
    Ok(ExitCode::SUCCESS)
}
