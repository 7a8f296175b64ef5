//! How reports show response checks (issue 17): one row per check with its passes, failures,
//! pass rate and first failure. Reads the model only.

use std::fmt::Write;

use loadmark_metrics::CheckStats;

use crate::model::Report;

pub(crate) fn rate(passed: u64, failed: u64) -> String {
    if passed + failed == 0 {
        "-".into()
    } else {
        format!("{:.2}%", passed as f64 * 100.0 / (passed + failed) as f64)
    }
}

/// The terminal block: `Checks` and a line per check. `unit` is what was checked:
/// responses, or a WebSocket run's replies.
pub(crate) fn render_text_block(o: &mut String, c: &CheckStats, unit: &str) {
    let _ = writeln!(
        o,
        "  Checks        {} of {} {unit} failed a check",
        c.failed_responses, c.checked_responses
    );
    let width = c
        .checks
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0);
    for s in &c.checks {
        let _ = writeln!(
            o,
            "    {:<width$}  {:>10} passed {:>10} failed  {:>8}",
            s.name,
            s.passed,
            s.failed,
            rate(s.passed, s.failed)
        );
        if let Some(first) = &s.first_failure {
            let _ = writeln!(o, "    {:<width$}  first failure: {first}", "");
        }
    }
}

/// A Markdown section with one row per check of every step that has checks.
pub(crate) fn render_markdown_section(o: &mut String, steps: &[(String, &Report)]) {
    let rows: Vec<String> = steps
        .iter()
        .filter_map(|(name, r)| r.summary.checks.as_ref().map(|c| (name, c)))
        .flat_map(|(step, c)| {
            c.checks.iter().map(move |s| {
                let cells = [
                    step.clone(),
                    s.name.clone(),
                    s.passed.to_string(),
                    s.failed.to_string(),
                    rate(s.passed, s.failed),
                    s.first_failure.clone().unwrap_or_default(),
                ];
                let cells: Vec<String> = cells
                    .iter()
                    .map(|c| c.replace('|', "\\|").replace('\n', " "))
                    .collect();
                format!("| {} |", cells.join(" | "))
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n## Checks\n");
    let checked = || steps.iter().filter(|(_, r)| r.summary.checks.is_some());
    let websocket = checked().any(|(_, r)| r.plan.websocket.is_some());
    let http = checked().any(|(_, r)| r.plan.websocket.is_none());
    if http {
        let _ = writeln!(
            o,
            "A failed check does not make a response an error: its latency is counted. Responses with a 2xx/3xx status that failed a check count as failed requests.\n"
        );
    }
    if websocket {
        // A WebSocket reply has no status: every reply that fails a check is a failed one.
        let _ = writeln!(
            o,
            "A failed check does not make a WebSocket reply an error: its round trip is counted. Replies that failed a check count as failed.\n"
        );
    }
    let _ = writeln!(
        o,
        "| step | check | passed | failed | pass rate | first failure |"
    );
    let _ = writeln!(o, "|---|---|---:|---:|---:|---|");
    for row in rows {
        let _ = writeln!(o, "{row}");
    }
}
