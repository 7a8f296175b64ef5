//! The report-side subcommands and CI gates: `merge`, `compare`, thresholds on `run`,
//! JUnit output. Reading, merging and comparing are `loadmark_workflow::gate`'s; here are
//! the flags, the output and the exit codes.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use loadmark_report::{
    render_comparison_markdown, render_comparison_text, render_json, render_junit_with_checks,
    Report, Threshold,
};
use loadmark_workflow::gate::{compare_files, merge_files, CompareRequest, MergeRequest};

use crate::args::{CompareArgs, CompareFormat, MergeArgs, ReportFlags};
use crate::output::{check_writable, write_atomic};
use crate::{UsageError, EXIT_THRESHOLDS};

pub fn merge(args: &MergeArgs) -> Result<ExitCode> {
    let merged = merge_files(
        &args.files,
        &MergeRequest {
            thresholds: args.thresholds.clone(),
            force: args.force,
            allow_partial: args.allow_partial,
        },
    )?;
    for f in &merged.warnings {
        eprintln!("loadmark: warning: {f}");
    }
    let report = &merged.report;
    write_or_print(args.output.as_deref(), &render_json(report))?;
    if args.output.is_some() {
        eprintln!(
            "loadmark: merged {} reports ({} responses)",
            merged.inputs, report.summary.requests.responses
        );
    }
    Ok(crate::verdict::exit_code(
        &[crate::verdict::Judged::one(report)],
        &crate::verdict::Rules {
            strict: args.strict,
            ..Default::default()
        },
    ))
}

pub(crate) fn write_or_print(path: Option<&Path>, text: &str) -> Result<()> {
    match path {
        Some(p) => write_atomic(p, text),
        None => crate::output::print_out(text),
    }
}

/// Parses `--threshold`s and checks `--junit` is writable: before any load is sent, so a typo
/// costs nothing and never passes silently.
pub(crate) fn thresholds_before_run(args: &ReportFlags) -> Result<Vec<Threshold>> {
    let thresholds = loadmark_workflow::gate::flag_thresholds(&args.thresholds)?;
    if let Some(path) = &args.junit {
        if thresholds.is_empty() {
            return Err(UsageError("--junit needs at least one --threshold".into()).into());
        }
        check_writable(path).map_err(|e| UsageError(format!("--junit: {e:#}")))?;
    }
    Ok(thresholds)
}

/// Writes `--junit` when asked for (the exit code is [`crate::verdict`]'s business).
pub(crate) fn write_junit(args: &ReportFlags, report: &Report) -> Result<()> {
    if let Some(path) = &args.junit {
        let suite = format!("{} {}", report.plan.request.method, report.plan.request.url);
        write_atomic(
            path,
            &render_junit_with_checks(&suite, &report.thresholds, report.summary.checks.as_ref()),
        )?;
        eprintln!("loadmark: JUnit XML written to {}", path.display());
    }
    Ok(())
}

pub fn compare(args: &CompareArgs) -> Result<ExitCode> {
    let c = compare_files(&CompareRequest {
        baseline: args.baseline.clone(),
        candidate: args.candidate.clone(),
        fail_if: args.fail_if.clone(),
        alpha: args.alpha,
        min_effect_percent: args.min_effect,
        force: args.force,
    })?;
    for f in &c.forced {
        eprintln!("loadmark: warning: compared with --force although the runs differ in {f}");
    }
    crate::output::print_out(match args.format {
        CompareFormat::Text => render_comparison_text(&c),
        CompareFormat::Md => render_comparison_markdown(&c),
        CompareFormat::Html => loadmark_report::render_comparison_html(&c),
        CompareFormat::Json => {
            serde_json::to_string_pretty(&c).expect("a Comparison serializes") + "\n"
        }
    })?;
    if c.gates_failed() {
        eprintln!("loadmark: --fail-if failed");
        return Ok(ExitCode::from(EXIT_THRESHOLDS));
    }
    Ok(ExitCode::SUCCESS)
}
