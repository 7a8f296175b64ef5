//! The report-side subcommands and CI gates: `merge`, `compare`, thresholds on `run`,
//! JUnit output.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use loadmark_report::{
    parse_thresholds, render_comparison_markdown, render_comparison_text, render_json,
    render_junit_with_checks, CompareSettings, FailIf, Purpose, Report, Threshold,
};

use crate::args::{CompareArgs, CompareFormat, MergeArgs, ReportFlags};
use crate::output::{check_writable, write_atomic};
use crate::{UsageError, EXIT_THRESHOLDS};

/// Reads a saved run report; a missing or foreign file is a usage error. A worker's log
/// (`kubectl logs` of a `loadmark k8s` pod) holds its result framed: that is read too.
pub(crate) fn read_report(path: &Path) -> Result<Report> {
    let mut text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("{}: cannot read it: {e}", path.display())))?;
    if text.contains("LOADMARK-RESULT-BEGIN") {
        let mut c = loadmark_cluster::frame::Collector::new();
        for line in text.lines() {
            c.feed(0, line);
        }
        text = match c.finish().0.remove(&0) {
            Some(loadmark_cluster::frame::Collected::Result(json)) => json,
            _ => {
                return Err(UsageError(format!(
                "{}: the framed result in this log is cut off (the worker died while writing it)",
                path.display()
            ))
                .into())
            }
        };
    }
    Ok(loadmark_report::read_result(&text)
        .map_err(|e| UsageError(format!("{}: {e}", path.display())))?)
}

pub fn merge(args: &MergeArgs) -> Result<ExitCode> {
    let reports = args
        .files
        .iter()
        .map(|p| read_report(p))
        .collect::<Result<Vec<_>>>()?;
    let names: Vec<String> = args.files.iter().map(|p| p.display().to_string()).collect();
    let thresholds = parse_thresholds(&args.thresholds).map_err(|errors| {
        UsageError(
            errors
                .iter()
                .map(|e| format!("--threshold: {e}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
    let options = loadmark_report::MergeOptions {
        force: args.force,
        allow_partial: args.allow_partial,
    };
    let mut merged =
        loadmark_report::merge_with_options(&reports, &names, options).map_err(|e| match e {
            loadmark_report::MergeError::Split(_) => UsageError(e.to_string()),
            e => UsageError(format!(
                "{e}\n(pass --force to merge them anyway; the merged report will say so)"
            )),
        })?;
    merged.thresholds = loadmark_report::check_thresholds(&thresholds, &merged);
    for f in merged
        .run
        .health
        .findings
        .iter()
        .filter(|f| f.starts_with("merged with --force"))
    {
        eprintln!("loadmark: warning: {f}");
    }
    for f in merged
        .run
        .health
        .findings
        .iter()
        .filter(|f| f.starts_with("PARTIAL"))
    {
        eprintln!("loadmark: warning: {f}");
    }
    write_or_print(args.output.as_deref(), &render_json(&merged))?;
    if args.output.is_some() {
        eprintln!(
            "loadmark: merged {} reports ({} responses)",
            reports.len(),
            merged.summary.requests.responses
        );
    }
    Ok(crate::verdict::exit_code(
        &[crate::verdict::Judged::one(&merged)],
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
    let thresholds = parse_thresholds(&args.thresholds).map_err(|errors| {
        UsageError(
            errors
                .iter()
                .map(|e| format!("--threshold: {e}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
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
    let gates = args
        .fail_if
        .iter()
        .map(|t| FailIf::parse(t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| UsageError(e.to_string()))?;
    let valid = args.alpha > 0.0 && args.alpha < 1.0 && args.min_effect >= 0.0;
    if !valid {
        return Err(UsageError("--alpha must be in (0, 1) and --min-effect >= 0".into()).into());
    }
    let baseline = read_report(&args.baseline)?;
    let candidate = read_report(&args.candidate)?;
    let (base_name, cand_name) = (
        args.baseline.display().to_string(),
        args.candidate.display().to_string(),
    );
    let forced = loadmark_report::differences(
        Purpose::Compare,
        (&base_name, &cand_name),
        &baseline,
        &candidate,
    );
    if !forced.is_empty() && !args.force {
        return Err(UsageError(format!(
            "these runs do not measure the same thing: {}\n(pass --force to compare them anyway; the output will say so)",
            forced.join("; ")
        ))
        .into());
    }
    let mut c = loadmark_report::compare(
        &args.baseline.display().to_string(),
        &baseline,
        &args.candidate.display().to_string(),
        &candidate,
        CompareSettings {
            alpha: args.alpha,
            min_effect_percent: args.min_effect,
        },
    );
    c.gates = gates.iter().map(|g| g.check(&c)).collect();
    for f in &forced {
        eprintln!("loadmark: warning: compared with --force although the runs differ in {f}");
    }
    c.forced = forced;
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

/// The plan file's `thresholds`, parsed before any server starts or load is sent.
pub(crate) fn plan_thresholds(texts: &[String], plan: &Path) -> Result<Vec<Threshold>> {
    parse_thresholds(texts).map_err(|errors| {
        let lines: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: thresholds: {e}", plan.display()))
            .collect();
        UsageError(lines.join("\n")).into()
    })
}
