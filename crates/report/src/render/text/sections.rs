//! The text report's sections that only some runs have: response checks, a scenario's
//! iterations and steps, the segments of a split run, and threshold results. Imports
//! `model`, `units` and `render::shared`, never another format.

use std::fmt::Write;

use loadmark_metrics::CheckStats;

use crate::model::{short_hash, Part, ScenarioSummary, Split, ThresholdResult};
use crate::render::shared::{pass_rate, scenario_cells, SCENARIO_HEADS};
use crate::units::{format_pct, format_us};

/// The terminal block: `Checks` and a line per check. `unit` is what was checked:
/// responses, or a WebSocket run's replies.
pub(crate) fn checks_block(o: &mut String, c: &CheckStats, unit: &str) {
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
            pass_rate(s.passed, s.failed)
        );
        if let Some(first) = &s.first_failure {
            let _ = writeln!(o, "    {:<width$}  first failure: {first}", "");
        }
    }
}

/// The terminal block.
pub(crate) fn scenario_block(o: &mut String, s: &ScenarioSummary) {
    let _ = writeln!(
        o,
        "  Iterations    {} complete ({:.1}/s), {} ended early, {} dropped; duration p50 {} p99 {}",
        s.iterations,
        s.iterations_per_s,
        s.aborted,
        s.dropped,
        format_pct(&s.duration, 50.0),
        format_pct(&s.duration, 99.0)
    );
    let width = s
        .steps
        .iter()
        .map(|st| st.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = write!(o, "    {:<width$}", "step");
    for h in SCENARIO_HEADS {
        let _ = write!(o, "  {h:>9}");
    }
    let _ = writeln!(o);
    for st in &s.steps {
        let _ = write!(o, "    {:<width$}", st.name);
        for c in scenario_cells(st) {
            let _ = write!(o, "  {c:>9}");
        }
        let _ = writeln!(o);
        if let Some(first) = &st.first_extraction_failure {
            let _ = writeln!(o, "    {:<width$}  first extraction failure: {first}", "");
        }
    }
}

/// The segments block of the text report: one line per segment, so a slow, late or
/// saturated machine is seen by name.
pub(crate) fn split_block(split: &Split) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n  Segments      {} of {}{} (run {}, plan {}), largest start skew {:.1} ms",
        split.parts.len(),
        split.weights.len(),
        if split.partial { ", PARTIAL" } else { "" },
        split.run_id,
        short_hash(&split.plan_hash),
        split.max_skew_s * 1e3
    );
    for p in &split.parts {
        let _ = writeln!(
            o,
            "    {:>3} {:<16} {:>10} responses {:>9.1}/s  p50 {:>8}  p99 {:>8}  skew {:>7}  busiest worker {:>3.0}%{}",
            p.index,
            p.host,
            p.responses,
            p.rps,
            part_latency(p, p.latency_p50_us),
            part_latency(p, p.latency_p99_us),
            p.start_skew_s
                .map_or_else(|| "n/a".to_string(), |s| format!("{:.1}ms", s * 1e3)),
            p.busiest_worker * 100.0,
            if p.client_saturated { "  SATURATED" } else { "" }
        );
    }
    o
}

/// A segment's latency figure, `n/a` when it had no response to measure.
fn part_latency(p: &Part, us: u64) -> String {
    if p.responses == 0 {
        "n/a".into()
    } else {
        format_us(us as f64)
    }
}

/// The text section listing threshold results (empty when there are none).
pub fn render_thresholds_text(results: &[ThresholdResult]) -> String {
    let mut o = String::new();
    if results.is_empty() {
        return o;
    }
    let failed = results.iter().filter(|r| !r.passed).count();
    let _ = writeln!(
        o,
        "\n  Thresholds    {} of {} passed{}",
        results.len() - failed,
        results.len(),
        if failed > 0 { ": FAILED" } else { "" }
    );
    for r in results {
        let _ = writeln!(o, "    {r}");
    }
    o
}

/// gRPC calls by status code name, each non-OK one with its first `grpc-message` (issue 36).
/// A streaming run's block adds the calls loadmark ended itself, the messages per call,
/// what a call's latency is, and when response messages came.
pub(crate) fn grpc_block(
    o: &mut String,
    g: &loadmark_metrics::GrpcStats,
    summary: Option<&crate::model::GrpcSummary>,
    streaming: Option<&loadmark_plan::GrpcStreaming>,
) {
    let ended = summary.and_then(|s| s.ended_by_client).unwrap_or(0);
    let width = g
        .codes
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(2)
        .max(if ended > 0 { 17 } else { 2 });
    for (i, c) in g.codes.iter().enumerate() {
        let label = if i == 0 { "gRPC status" } else { "" };
        let _ = write!(o, "  {label:<12}  {:<width$}  {}", c.name, c.count);
        if let Some(m) = &c.first_message {
            let _ = write!(o, "  (first: {m})");
        }
        o.push('\n');
    }
    if ended > 0 {
        let label = if g.codes.is_empty() {
            "gRPC status"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "  {label:<12}  {:<width$}  {ended}  (streams loadmark cancelled after --stream-call-count/--stream-call-duration: no grpc-status, not failures)",
            "ended by loadmark"
        );
    }
    let (Some(s), Some(spec)) = (summary, streaming) else {
        return;
    };
    let _ = writeln!(
        o,
        "  Messages      {} sent ({:.1} per call), {} received ({:.1} per call)",
        s.messages_sent,
        s.messages_sent_per_call,
        s.messages_received,
        s.messages_received_per_call
    );
    let _ = writeln!(o, "  Call latency  {}", spec.latency_definition());
    if let Some(d) = s.first_message.as_ref().filter(|d| d.count > 0) {
        super::short_line(o, "First message", d, "from the call's start");
    }
    if let Some(d) = s.message_gap.as_ref().filter(|d| d.count > 0) {
        super::short_line(o, "Message gap", d, "between response messages of a call");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_segments_block_names_a_partial_run_and_each_segment() {
        let split = crate::model::split_fixture();
        let text = super::split_block(&split);
        assert!(
            text.contains("Segments      2 of 3, PARTIAL (run r, plan 0123456789ab)"),
            "{text}"
        );
        assert!(
            text.contains("skew -250.0ms") && text.contains("SATURATED"),
            "{text}"
        );
    }
}
