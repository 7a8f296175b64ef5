//! The `loadmark` binary: flags in, plan through the engine, report out.
//!
//! Exit codes: 0 ok, 1 run error (or a run that failed: see `verdict`), 2 usage or plan
//! error, 3 thresholds failed, 4 not clean under `--strict`, 130 interrupted (the report for
//! the time that ran is still printed and written). Every command that measures decides its
//! code in one place, [`verdict::exit_code`].

mod args;
mod bench;
mod commands;
mod dist;
mod gate;
mod k8s;
mod live;
mod output;
mod progress;
mod script;
mod services;
mod split;
mod verdict;

use std::process::ExitCode;

use clap::Parser;

/// Exit code of a run error, and of a run that failed: no request succeeded, or a failure
/// named by `--fail-on` was seen (the report is still printed and written).
pub const EXIT_RUN_FAILED: u8 = 1;
/// Exit code of a usage or plan error (clap uses the same).
pub const EXIT_USAGE: u8 = 2;
/// Exit code of a run (or `compare --fail-if`) whose thresholds failed.
pub const EXIT_THRESHOLDS: u8 = 3;
/// Exit code of a run that finished but was not clean under `--strict` (client saturated,
/// requests dropped or left late).
pub const EXIT_NOT_CLEAN: u8 = 4;
/// Exit code of a run stopped by a signal (its report was still written).
pub const EXIT_INTERRUPTED: u8 = 130;

/// An error the user caused with their input (exit code 2), not one of the run (exit 1).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The static (musl) build's allocator: musl's own malloc takes a lock per call and costs
/// more CPU per request (measured in bench/RESULTS.md, "Static binary").
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    fixed_mmap_threshold();
    let cli = args::Cli::parse();
    match commands::dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("loadmark: error: {e:#}");
            if e.downcast_ref::<UsageError>().is_some()
                || e.downcast_ref::<loadmark_plan::PlanError>().is_some()
            {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::from(EXIT_RUN_FAILED)
            }
        }
    }
}

/// Every worker starts a new one-second snapshot each second (five HDR histograms, ~190 KiB
/// each) and frees the old one once handed over. glibc raises its mmap threshold after the
/// first such free, and from then on serves these blocks from heaps it rarely trims, so RSS
/// would carry a stray megabyte now and then. A fixed threshold keeps them in their own
/// mappings, given back when freed: RSS stays what is live (issue 24's soak test).
fn fixed_mmap_threshold() {
    // glibc's malloc only: mimalloc and musl's malloc do not read mallopt.
    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "mimalloc")))]
    // SAFETY: mallopt only sets an allocator parameter; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
