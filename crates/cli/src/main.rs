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
mod events;
mod find;
mod gate;
mod grpc;
mod grpc_steps;
mod history;
mod import;
mod k8s;
mod live;
mod output;
mod progress;
mod script;
mod split;
mod verdict;

use std::process::ExitCode;

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
    let cli = match args::parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match commands::dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("loadmark: error: {}", error_text(&e));
            if e.downcast_ref::<UsageError>().is_some()
                || e.downcast_ref::<loadmark_plan::PlanError>().is_some()
                || e.chain().any(loadmark_workflow::is_usage)
            {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::from(EXIT_RUN_FAILED)
            }
        }
    }
}

/// The error and its causes, as anyhow's `{:#}` shows them, but a cause that the message
/// above it already quotes is not repeated ("cannot resolve host: X: X" read twice).
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_the_message_already_quotes_is_shown_once() {
        let dns = std::io::Error::other(
            "failed to lookup address information: Name or service not known",
        );
        let e = anyhow::Error::new(loadmark_engine::EngineError::Resolve {
            host: "nowhere.invalid".into(),
            source: dns,
        });
        assert_eq!(
            error_text(&e),
            "cannot resolve host \"nowhere.invalid\": failed to lookup address information: Name or service not known"
        );
        // A cause the message does not quote is still shown, after it.
        let e = anyhow::Error::new(std::io::Error::other("permission denied"))
            .context("writing r.json");
        assert_eq!(error_text(&e), "writing r.json: permission denied");
    }
}
