//! The report-side subcommands and CI gates: `merge`, `compare`, thresholds on `run`,
//! JUnit output.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use loadmark_report::{render_json, Report};

use crate::args::MergeArgs;
use crate::output::write_atomic;
use crate::UsageError;

/// Reads a saved run report; a missing or foreign file is a usage error.
pub(crate) fn read_report(path: &Path) -> Result<Report> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("{}: cannot read it: {e}", path.display())))?;
    Ok(Report::from_json(&text).map_err(|e| UsageError(format!("{}: {e}", path.display())))?)
}

pub fn merge(args: &MergeArgs) -> Result<ExitCode> {
    let reports = args
        .files
        .iter()
        .map(|p| read_report(p))
        .collect::<Result<Vec<_>>>()?;
    let merged = loadmark_report::merge_reports(&reports).map_err(|e| UsageError(e.to_string()))?;
    write_or_print(args.output.as_deref(), &render_json(&merged))?;
    if args.output.is_some() {
        eprintln!(
            "loadmark: merged {} reports ({} responses)",
            reports.len(),
            merged.summary.requests.responses
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn write_or_print(path: Option<&Path>, text: &str) -> Result<()> {
    match path {
        Some(p) => write_atomic(p, text),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}
