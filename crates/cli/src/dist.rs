//! What a binary copied onto a load machine needs to say about itself: which build it is
//! (`--version`, and every JSON result's `environment.build`), its shell completions and its
//! man pages, all generated from the same clap definitions as the flags themselves.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory};
use loadmark_report::Build;

/// `loadmark --version`: the same line as [`Build`]'s `Display`, fixed at compile time by
/// build.rs (git commit, features, target).
pub const VERSION: &str = env!("LOADMARK_VERSION_LINE");

/// This binary's build, as recorded in reports.
pub fn build() -> Build {
    Build {
        version: env!("CARGO_PKG_VERSION").to_string(),
        commit: env!("LOADMARK_COMMIT").to_string(),
        features: env!("LOADMARK_FEATURES")
            .split(',')
            .filter(|f| !f.is_empty())
            .map(str::to_string)
            .collect(),
        target: env!("LOADMARK_TARGET").to_string(),
    }
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Where to write the pages: loadmark.1 and one loadmark-SUBCOMMAND.1 per subcommand
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

/// Prints the completion script for a shell (bash: `source <(loadmark completions bash)`).
pub fn completions(args: &CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = crate::args::Cli::command();
    // Into memory first: clap_complete panics when its writer fails (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "loadmark", &mut script);
    crate::output::print_out(script)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the man pages into a directory (created if missing) and names each file written.
pub fn man(args: &ManArgs) -> Result<ExitCode> {
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("cannot create {}", args.dir.display()))?;
    // Built as clap_mangen's `generate_to` does, so each subcommand's page is named
    // `loadmark-run` with the synopsis `loadmark run ...`; written here so that each file
    // written is listed and a failure names its file.
    let mut cmd = crate::args::Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut written = Vec::new();
    write_pages(&cmd, &args.dir, &mut written)?;
    for path in written {
        crate::output::print_out(format!("{}\n", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn write_pages(
    cmd: &clap::Command,
    dir: &std::path::Path,
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page)?;
    std::fs::write(&path, page).with_context(|| format!("cannot write {}", path.display()))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}
