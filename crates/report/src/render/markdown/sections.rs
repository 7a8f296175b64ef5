//! The Markdown sections that only some bundles have: the protocol that carried the
//! requests, WebSocket figures, response checks, scenario steps, and a comparison of two
//! runs. Imports `model`, `units` and `render::shared`, never another format.

use std::fmt::Write;

use crate::model::{Comparison, NamedScenarioSummary, Report, ScenarioSummary, Verdict};
use crate::render::shared::{
    named_scenario_line, pass_rate, protocol_lines, scenario_cells, ws_row, SCENARIO_HEADS,
    WS_HEADS,
};
use crate::units::format_pct;

/// Markdown: each step's protocol lines, when any step has them.
pub(crate) fn protocol_section(o: &mut String, named: &[(String, &Report)]) {
    let rows: Vec<(&String, Vec<String>)> = named
        .iter()
        .filter_map(|(name, r)| {
            let mut lines = r
                .summary
                .protocol
                .as_ref()
                .map_or_else(Vec::new, protocol_lines);
            if let Some(proxy) = &r.run.proxy {
                lines.push(format!("through the proxy {proxy}"));
            }
            (!lines.is_empty()).then_some((name, lines))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n## Protocol\n");
    for (name, lines) in rows {
        let _ = writeln!(o, "- **{}**: {}", name.trim(), lines.join("; "));
    }
}

/// A Markdown table of the WebSocket figures of every step that has them.
pub(crate) fn websocket_section(o: &mut String, steps: &[(String, &Report)]) {
    let rows: Vec<[String; 10]> = steps
        .iter()
        .filter_map(|(name, r)| r.summary.websocket.as_ref().map(|ws| ws_row(name, r, ws)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n## WebSocket\n");
    let _ = writeln!(
        o,
        "Round trip: from the intended send time (echo) or the write (request) to the answer. Handshake: TCP, TLS and upgrade until the 101.\n"
    );
    let _ = writeln!(o, "| {} |", WS_HEADS.join(" | "));
    let _ = writeln!(o, "|---|{}", "---:|".repeat(WS_HEADS.len() - 1));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
}

/// Markdown tables of the gRPC figures of every step that made gRPC calls: one row per run,
/// one per status code with its first `grpc-message`, and what a streaming call's latency is.
pub(crate) fn grpc_section(o: &mut String, steps: &[(String, &Report)]) {
    use crate::render::shared::grpc::{
        grpc_latency_notes, grpc_row, grpc_status_rows, GRPC_HEADS, GRPC_STATUS_HEADS,
    };
    let rows: Vec<[String; 9]> = steps
        .iter()
        .filter_map(|(name, r)| grpc_row(name, r))
        .collect();
    if rows.is_empty() {
        return;
    }
    let esc = |c: &String| c.replace('|', "\\|").replace('\n', " ");
    let _ = writeln!(o, "\n## gRPC\n");
    let _ = writeln!(
        o,
        "Every call ends as one response counted by its grpc-status, or as a transport error. A status other than OK is a failed call. The request message's size is its protobuf encoding, without gRPC's 5-byte prefix.\n"
    );
    let _ = writeln!(o, "| {} |", GRPC_HEADS.join(" | "));
    let _ = writeln!(o, "|---|---|---|{}", "---:|".repeat(GRPC_HEADS.len() - 3));
    for row in rows {
        let cells: Vec<String> = row.iter().map(esc).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    let statuses: Vec<[String; 5]> = steps
        .iter()
        .flat_map(|(name, r)| grpc_status_rows(name, r))
        .collect();
    if !statuses.is_empty() {
        let _ = writeln!(o, "\n| {} |", GRPC_STATUS_HEADS.join(" | "));
        let _ = writeln!(o, "|---|---|---:|---:|---|");
        for row in statuses {
            let cells: Vec<String> = row.iter().map(esc).collect();
            let _ = writeln!(o, "| {} |", cells.join(" | "));
        }
    }
    let notes = grpc_latency_notes(steps.iter().map(|(name, r)| (name.clone(), *r)));
    if !notes.is_empty() {
        o.push('\n');
    }
    for (step, definition) in notes {
        let _ = writeln!(
            o,
            "- **{}**: a call's latency is {definition}.",
            step.trim()
        );
    }
}

/// A Markdown section with one row per check of every step that has checks.
pub(crate) fn checks_section(o: &mut String, steps: &[(String, &Report)]) {
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
                    pass_rate(s.passed, s.failed),
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

/// A Markdown section over a bundle's steps that ran scenarios: a line per scenario (each
/// named one of a run with several after its run's name), then a row per step.
pub(crate) fn scenario_section(o: &mut String, steps: &[(String, &Report)]) {
    let mut journeys: Vec<(String, &ScenarioSummary, Option<&NamedScenarioSummary>)> = Vec::new();
    for (run, r) in steps {
        if let Some(s) = &r.summary.scenario {
            journeys.push((run.clone(), s, None));
        }
        for named in &r.summary.scenarios {
            journeys.push((
                format!("{run} · {}", named.name),
                &named.scenario,
                Some(named),
            ));
        }
    }
    if journeys.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n## Scenario steps\n");
    for (run, s, named) in &journeys {
        if let Some(named) = named {
            let _ = writeln!(o, "- {run}: {}", named_scenario_line(named));
        }
        let _ = writeln!(
            o,
            "- {run}: {} iterations complete ({:.1}/s), {} ended early, {} dropped; iteration duration p50 {}, p99 {}",
            s.iterations,
            s.iterations_per_s,
            s.aborted,
            s.dropped,
            format_pct(&s.duration, 50.0),
            format_pct(&s.duration, 99.0)
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "| run | step | {} |", SCENARIO_HEADS.join(" | "));
    let _ = writeln!(o, "|---|---|{}", "---:|".repeat(SCENARIO_HEADS.len()));
    for (run, s, _) in &journeys {
        for st in &s.steps {
            let _ = writeln!(
                o,
                "| {} | {} | {} |",
                run.replace('|', "\\|"),
                st.name.replace('|', "\\|"),
                scenario_cells(st).join(" | ")
            );
        }
    }
}

/// Markdown table.
pub fn render_comparison_markdown(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "## Comparison: `{}` vs `{}`\n",
        c.baseline_name, c.candidate_name
    );
    let _ = writeln!(
        o,
        "| metric | baseline | candidate | change | p | verdict |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---:|---|");
    for m in &c.metrics {
        let bold = if m.verdict == Verdict::NoSignificantChange {
            ""
        } else {
            "**"
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {:.3} | {bold}{}{bold} |",
            m.metric.name(),
            m.metric.show(m.baseline),
            m.metric.show(m.candidate),
            m.delta_text(),
            m.p_value,
            m.verdict_words()
        );
    }
    let _ = writeln!(
        o,
        "\nVerdicts: two-sided Mann-Whitney U test on the per-second values of both runs ({} and {} seconds), significant at p <= {} with a change of at least {}%; p90 and p99.9 are judged on the per-second p99.",
        c.baseline_seconds, c.candidate_seconds, c.settings.alpha, c.settings.min_effect_percent
    );
    if let Some(note) = &c.note {
        let _ = writeln!(o, "\n> **Note:** {note}");
    }
    for f in &c.forced {
        let _ = writeln!(o, "\n> **Forced (--force):** the runs differ in {f}");
    }
    if !c.gates.is_empty() {
        let _ = writeln!(o);
        for g in &c.gates {
            let _ = writeln!(o, "- {g}");
        }
    }
    o
}
