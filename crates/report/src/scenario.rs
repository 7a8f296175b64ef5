//! How reports show a scenario (issue 17): the iterations (completed, ended early, dropped,
//! their duration) and one row per step with its own requests, statuses, errors, latency,
//! checks and extraction failures. The summary is read from the totals' `ScenarioStats`, so a
//! merged report (added histograms) shows exact figures too.

use std::fmt::Write;

use loadmark_metrics::{Distribution, ErrorCounts, ScenarioStats, StatusCounts};
use serde::{Deserialize, Serialize};

use crate::model::Report;

/// One step's figures in a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepSummary {
    pub name: String,
    /// Requests of this step that ended (responses and errors).
    pub requests: u64,
    pub responses: u64,
    pub status: StatusCounts,
    pub errors: ErrorCounts,
    pub latency: Distribution,
    /// Checks of this step evaluated and failed (0 without checks).
    pub checks_passed: u64,
    pub checks_failed: u64,
    /// Responses from which a value could not be extracted (each ended its iteration).
    pub extraction_failures: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_extraction_failure: Option<String>,
}

/// A scenario run's iterations and steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioSummary {
    /// Iterations that ran every step.
    pub iterations: u64,
    /// Iterations per second over the measured time.
    pub iterations_per_s: f64,
    /// Iterations ended early by a failed request or a failed extraction.
    pub aborted: u64,
    /// Open model: iterations due when every user was busy (not started).
    pub dropped: u64,
    /// Duration of complete iterations (think times included).
    pub duration: Distribution,
    pub steps: Vec<StepSummary>,
}

impl ScenarioSummary {
    pub(crate) fn of(s: &ScenarioStats, measured_s: f64) -> Self {
        ScenarioSummary {
            iterations: s.iterations,
            iterations_per_s: if measured_s > 0.0 {
                s.iterations as f64 / measured_s
            } else {
                0.0
            },
            aborted: s.aborted,
            dropped: s.dropped,
            duration: Distribution::of(&s.duration),
            steps: s
                .steps
                .iter()
                .map(|st| StepSummary {
                    name: st.name.clone(),
                    requests: st.completed(),
                    responses: st.responses,
                    status: st.status.clone(),
                    errors: st.errors.clone(),
                    latency: Distribution::of(&st.latency),
                    checks_passed: st.checks.as_ref().map_or(0, |c| c.passed()),
                    checks_failed: st.checks.as_ref().map_or(0, |c| c.evaluated() - c.passed()),
                    extraction_failures: st.extraction_failures,
                    first_extraction_failure: st.first_extraction_failure.clone(),
                })
                .collect(),
        }
    }
}

/// A percentile of `d`, `n/a` when it measured nothing (as every renderer says it).
fn pct(d: &Distribution, p: f64) -> String {
    crate::format::format_pct(d, p)
}

/// The cells of a step's row: requests, non-2xx/3xx, errors, p50, p99, max, checks failed,
/// extraction failures.
pub(crate) fn cells(st: &StepSummary) -> [String; 8] {
    [
        st.requests.to_string(),
        st.status.not_success().to_string(),
        st.errors.total().to_string(),
        pct(&st.latency, 50.0),
        pct(&st.latency, 99.0),
        crate::format::format_of(&st.latency, st.latency.max_us as f64),
        if st.checks_passed + st.checks_failed == 0 {
            "-".into()
        } else {
            format!(
                "{} of {}",
                st.checks_failed,
                st.checks_passed + st.checks_failed
            )
        },
        st.extraction_failures.to_string(),
    ]
}

pub(crate) const HEADS: [&str; 8] = [
    "requests",
    "non-2xx",
    "errors",
    "p50",
    "p99",
    "max",
    "checks failed",
    "extract failed",
];

/// The terminal block.
pub(crate) fn render_text_block(o: &mut String, s: &ScenarioSummary) {
    let _ = writeln!(
        o,
        "  Iterations    {} complete ({:.1}/s), {} ended early, {} dropped; duration p50 {} p99 {}",
        s.iterations,
        s.iterations_per_s,
        s.aborted,
        s.dropped,
        pct(&s.duration, 50.0),
        pct(&s.duration, 99.0)
    );
    let width = s
        .steps
        .iter()
        .map(|st| st.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = write!(o, "    {:<width$}", "step");
    for h in HEADS {
        let _ = write!(o, "  {h:>9}");
    }
    let _ = writeln!(o);
    for st in &s.steps {
        let _ = write!(o, "    {:<width$}", st.name);
        for c in cells(st) {
            let _ = write!(o, "  {c:>9}");
        }
        let _ = writeln!(o);
        if let Some(first) = &st.first_extraction_failure {
            let _ = writeln!(o, "    {:<width$}  first extraction failure: {first}", "");
        }
    }
}

/// A Markdown section over a bundle's steps that ran scenarios.
pub(crate) fn render_markdown_section(o: &mut String, steps: &[(String, &Report)]) {
    let rows: Vec<String> = steps
        .iter()
        .filter_map(|(name, r)| r.summary.scenario.as_ref().map(|s| (name, s)))
        .flat_map(|(run, s)| {
            s.steps.iter().map(move |st| {
                format!(
                    "| {} | {} | {} |",
                    run.replace('|', "\\|"),
                    st.name.replace('|', "\\|"),
                    cells(st).join(" | ")
                )
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n## Scenario steps\n");
    for (run, s) in steps
        .iter()
        .filter_map(|(name, r)| r.summary.scenario.as_ref().map(|s| (name, s)))
    {
        let _ = writeln!(
            o,
            "- {run}: {} iterations complete ({:.1}/s), {} ended early, {} dropped; iteration duration p50 {}, p99 {}",
            s.iterations,
            s.iterations_per_s,
            s.aborted,
            s.dropped,
            pct(&s.duration, 50.0),
            pct(&s.duration, 99.0)
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "| run | step | {} |", HEADS.join(" | "));
    let _ = writeln!(o, "|---|---|{}", "---:|".repeat(HEADS.len()));
    for row in rows {
        let _ = writeln!(o, "{row}");
    }
}
