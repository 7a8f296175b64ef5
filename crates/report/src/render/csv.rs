//! CSV for spreadsheets: the per-second series, the summary (one row per run or step), and
//! a scenario's steps (one row per step of the journey, `--format csv-steps`).
//!
//! Two separate files rather than two sections in one, because spreadsheets and `pandas`
//! read one table per file. Latencies are integer microseconds, rates per second. The
//! WebSocket columns (messages, sessions) are zero or empty for HTTP runs; the checks and
//! scenario columns are empty for runs without them; `retries` (requests sent again on a new
//! connection) ends the usual summary columns, and the gRPC ones follow it (empty for other runs:
//! the method, calls, failed calls, `grpc_status` as `NAME:count` pairs and
//! `grpc_first_messages` as `NAME:message` pairs, `;`-separated, messages, the request
//! message's mean size without gRPC's prefix, and a streaming run's timings). The series leaves
//! out the fragment of a second after the run's end (`Report::chart_series`): its handful of
//! responses is no rate; the summary row counts them.
//!
//! Imports `model` and `render::shared::table` (the chosen columns' raw values), never
//! another format.

use std::fmt::Write as _;

use crate::model::Report;
use crate::model::{Bundle, BundleStep};

const SERIES_HEADER: &str = "second,warmup,responses,errors,failed,bytes_read,connections_opened,latency_p50_us,latency_p99_us,latency_max_us,messages_sent,messages_received";
const SUMMARY_HEADER: &str = "started_at,method,url,measured_s,completed,responses,errors,non_success_responses,failed,dropped,in_flight_at_end,rps,read_bytes_per_s,latency_min_us,latency_mean_us,latency_stdev_us,latency_p50_us,latency_p75_us,latency_p90_us,latency_p95_us,latency_p99_us,latency_p99_9_us,latency_p99_99_us,latency_max_us,messages_sent_per_s,messages_received_per_s,sessions_opened,checks_passed,checks_failed,checks_failed_responses,iterations,iterations_aborted,iterations_dropped,retries,grpc_method,grpc_calls,grpc_not_ok,grpc_status,grpc_first_messages,grpc_messages_sent,grpc_messages_received,grpc_request_message_bytes,grpc_ended_by_client,grpc_first_message_p50_us,grpc_first_message_p99_us,grpc_message_gap_p50_us,grpc_message_gap_p99_us";

const STEPS_HEADER: &str = "scenario_step,requests,responses,status_1xx,status_2xx,status_3xx,status_4xx,status_5xx,errors,checks_passed,checks_failed,extraction_failures,latency_min_us,latency_mean_us,latency_p50_us,latency_p90_us,latency_p95_us,latency_p99_us,latency_p99_9_us,latency_max_us";

/// A scenario run's steps (issue 17): one row per request step, in the scenario's order,
/// with its requests, statuses, errors, checks, extraction failures and latency (from its
/// own histogram); only the header for a run without a scenario.
pub fn render_csv_steps(r: &Report) -> String {
    let mut o = format!("{STEPS_HEADER}\n");
    step_rows(&mut o, "", r);
    o
}

/// Every step's scenario rows, each led by the plan step's number and parameters.
pub fn render_bundle_csv_steps(b: &Bundle) -> String {
    let mut o = format!("step,target,params,{STEPS_HEADER}\n");
    for s in &b.steps {
        step_rows(&mut o, &step_prefix(s), &s.report);
    }
    o
}

fn step_rows(o: &mut String, prefix: &str, r: &Report) {
    let Some(sc) = &r.summary.scenario else {
        return;
    };
    for st in &sc.steps {
        let d = &st.latency;
        // Empty cells, not zeros, for a step that never got a response.
        let p = |q: f64| {
            d.percentile(q)
                .map_or_else(String::new, |us| us.to_string())
        };
        let (min, mean, max) = if d.count == 0 {
            (String::new(), String::new(), String::new())
        } else {
            (
                d.min_us.to_string(),
                format!("{:.1}", d.mean_us),
                d.max_us.to_string(),
            )
        };
        let _ = writeln!(
            o,
            "{prefix}{},{},{},{},{},{},{},{},{},{},{},{},{min},{mean},{},{},{},{},{},{max}",
            field(&st.name),
            st.requests,
            st.responses,
            st.status.class(1),
            st.status.class(2),
            st.status.class(3),
            st.status.class(4),
            st.status.class(5),
            st.errors.total(),
            st.checks_passed,
            st.checks_failed,
            st.extraction_failures,
            p(50.0),
            p(90.0),
            p(95.0),
            p(99.0),
            p(99.9),
        );
    }
}

/// The per-second series of one run.
pub fn render_csv(r: &Report) -> String {
    let mut o = format!("{SERIES_HEADER}\n");
    series_rows(&mut o, "", r);
    o
}

/// The summary of one run: a header and one row.
pub fn render_csv_summary(r: &Report) -> String {
    let mut o = format!("{SUMMARY_HEADER}\n");
    summary_row(&mut o, "", r);
    o
}

/// Every step's per-second series, each row led by the step number and its parameters.
pub fn render_bundle_csv(b: &Bundle) -> String {
    let mut o = format!("step,target,params,{SERIES_HEADER}\n");
    for s in &b.steps {
        series_rows(&mut o, &step_prefix(s), &s.report);
    }
    o
}

/// One summary row per step; the columns a plan chose (`report.columns`) follow the usual
/// ones, raw (numbers in the unit their header names).
pub fn render_bundle_csv_summary(b: &Bundle) -> String {
    let chosen = &b.columns;
    let extra: String = chosen
        .iter()
        .map(|c| format!(",{}", field(&crate::render::shared::table::header_raw(c))))
        .collect();
    let mut o = format!("step,target,params,{SUMMARY_HEADER}{extra}\n");
    for s in &b.steps {
        let mut row = String::new();
        summary_row(&mut row, &step_prefix(s), &s.report);
        if !chosen.is_empty() {
            let cells: String = chosen
                .iter()
                .map(|c| format!(",{}", field(&crate::render::shared::table::cell(c, s).raw)))
                .collect();
            row.truncate(row.trim_end_matches('\n').len());
            row.push_str(&cells);
            row.push('\n');
        }
        o.push_str(&row);
    }
    o
}

fn step_prefix(s: &BundleStep) -> String {
    let params: Vec<String> = s.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "{},{},{},",
        s.number,
        field(&s.target),
        field(&params.join(" "))
    )
}

fn series_rows(o: &mut String, prefix: &str, r: &Report) {
    for p in r.chart_series() {
        let _ = writeln!(
            o,
            "{prefix}{},{},{},{},{},{},{},{},{},{},{},{}",
            p.second,
            p.warmup,
            p.responses,
            p.errors,
            p.failed,
            p.bytes_read,
            p.connections_opened,
            p.latency_p50_us,
            p.latency_p99_us,
            p.latency_max_us,
            p.messages_sent,
            p.messages_received
        );
    }
}

fn summary_row(o: &mut String, prefix: &str, r: &Report) {
    let s = &r.summary;
    let h = &r.totals.latency;
    let q = |q: f64| {
        if h.is_empty() {
            0
        } else {
            h.value_at_quantile(q)
        }
    };
    let _ = writeln!(
        o,
        "{prefix}{},{},{},{:.3},{},{},{},{},{},{},{},{:.3},{:.1},{},{:.1},{:.1},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        field(&r.run.started_at),
        field(&r.plan.request.method),
        field(&r.plan.request.url.to_string()),
        r.run.measured_s,
        s.requests.completed,
        s.requests.responses,
        s.requests.errors,
        s.requests.non_success_responses,
        r.failed(),
        s.dropped,
        s.requests.in_flight_at_end,
        s.rps,
        s.read_bytes_per_s,
        s.latency.min_us,
        s.latency.mean_us,
        s.latency.stdev_us,
        q(0.5),
        q(0.75),
        q(0.9),
        q(0.95),
        q(0.99),
        q(0.999),
        q(0.9999),
        s.latency.max_us,
        // WebSocket runs only; empty for HTTP.
        match &s.websocket {
            Some(ws) => format!(
                "{:.3},{:.3},{}",
                ws.messages_sent_per_s, ws.messages_received_per_s, ws.sessions_opened
            ),
            None => ",,".to_string(),
        },
        // Runs with checks only (issue 17); empty otherwise.
        match &s.checks {
            Some(c) => format!(
                "{},{},{}",
                c.passed(),
                c.evaluated() - c.passed(),
                c.failed_responses
            ),
            None => ",,".to_string(),
        },
        // Scenario runs only; empty otherwise.
        match &s.scenario {
            Some(sc) => format!("{},{},{}", sc.iterations, sc.aborted, sc.dropped),
            None => ",,".to_string(),
        },
        // Last of the usual columns, so the ones before it keep their positions (issue 20).
        s.retries,
        grpc_cells(r),
    );
}

/// The gRPC columns (issue 36), empty for a run without gRPC calls.
fn grpc_cells(r: &Report) -> String {
    use crate::render::shared::grpc::{grpc_method, grpc_of, request_message_bytes};
    let Some(g) = grpc_of(r) else {
        return ",".repeat(12);
    };
    let pairs = |f: &dyn Fn(&loadmark_metrics::GrpcCode) -> Option<String>| {
        let list: Vec<String> = g
            .codes
            .iter()
            .filter_map(|c| f(c).map(|v| format!("{}:{v}", c.name)))
            .collect();
        field(&list.join(";"))
    };
    let s = r.summary.grpc.as_ref();
    let us = |d: Option<&loadmark_metrics::Distribution>, q: f64| {
        d.filter(|d| d.count > 0)
            .and_then(|d| d.percentile(q))
            .map_or_else(String::new, |v| v.to_string())
    };
    let first = s.and_then(|s| s.first_message.as_ref());
    let gap = s.and_then(|s| s.message_gap.as_ref());
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{}",
        field(&grpc_method(r)),
        g.calls(),
        g.not_ok(),
        pairs(&|c| Some(c.count.to_string())),
        pairs(&|c| c.first_message.clone()),
        g.messages_sent,
        g.messages_received,
        request_message_bytes(r).map_or_else(String::new, |(_, b)| format!("{b:.1}")),
        s.and_then(|s| s.ended_by_client)
            .map_or_else(String::new, |n| n.to_string()),
        us(first, 50.0),
        us(first, 99.0),
        us(gap, 50.0),
        us(gap, 99.0),
    )
}

/// RFC 4180 quoting where needed.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(field("a"), "a");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn the_series_leaves_out_the_partial_last_second() {
        let mut r = Report::from_json(include_str!("../../testdata/run.json")).unwrap();
        let seconds = r.series.len();
        r.series[seconds - 1].partial_s = Some(0.004);
        let csv = render_csv(&r);
        assert_eq!(csv.lines().count(), 1 + seconds - 1, "{csv}");
        let last = format!("{},", seconds - 1);
        assert!(!csv.lines().any(|l| l.starts_with(&last)), "{csv}");
    }
}
