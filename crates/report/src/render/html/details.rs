//! The tables of an HTML page that say everything the text report says: counts and rates
//! (open loop: requested against achieved, dropped), latency and its phases (service time,
//! schedule lag, TTFB, connect), status codes, errors with their first example, client CPU;
//! and a plan's comparison tables. WebSocket runs are told in their own words (round trips,
//! messages), never as requests.
//!
//! Imports `model`, `units`, `render::shared` and the HTML renderer's own modules, never
//! another format.

use std::fmt::Write as _;

use loadmark_metrics::Distribution;
use loadmark_plan::Load;

use super::esc;
use crate::model::Report;
use crate::model::{Bundle, BundleStep};
use crate::units::{format_bytes, format_of, format_pct};

/// How a page names what it counted: HTTP requests, or WebSocket messages and round trips.
pub(crate) struct Words {
    /// "request" or "message": what fails.
    pub unit: &'static str,
    /// What completes: "responses" or "round trips".
    pub answers: &'static str,
    /// The rate's short name: "req/s" or "round trips/s".
    pub rate: &'static str,
    /// What checks judge: "responses", or a WebSocket run's "replies" (as the text says).
    pub checked: &'static str,
}

const HTTP: Words = Words {
    unit: "request",
    answers: "responses",
    rate: "req/s",
    checked: "responses",
};

const WEBSOCKET: Words = Words {
    unit: "message",
    answers: "round trips",
    rate: "round trips/s",
    checked: "replies",
};

/// The words of one run.
pub(crate) fn words_of(r: &Report) -> &'static Words {
    if r.plan.websocket.is_some() {
        &WEBSOCKET
    } else {
        &HTTP
    }
}

/// The words of a page: WebSocket words when every step is a WebSocket run.
pub(crate) fn words(b: &Bundle) -> &'static Words {
    if !b.steps.is_empty() && b.steps.iter().all(|s| s.report.plan.websocket.is_some()) {
        &WEBSOCKET
    } else {
        &HTTP
    }
}

/// The details of every step: open for a single run, one collapsible block per step of a
/// plan (a page of twelve steps stays short, and every figure is one click away).
pub(crate) fn details(o: &mut String, b: &Bundle, label: impl Fn(&BundleStep) -> String) {
    let multi = b.steps.len() > 1;
    let _ = writeln!(o, "<section class=\"details\"><h2>Details</h2>");
    for s in &b.steps {
        if multi {
            let _ = writeln!(
                o,
                "<details data-step=\"{}\"><summary>{}</summary>",
                s.number,
                esc(&label(s))
            );
        }
        step_details(o, &s.report);
        if multi {
            let _ = writeln!(o, "</details>");
        }
    }
    let _ = writeln!(o, "</section>");
}

fn row(o: &mut String, key: &str, value: &str) {
    let _ = writeln!(o, "<tr><th>{}</th><td>{}</td></tr>", esc(key), esc(value));
}

fn step_details(o: &mut String, r: &Report) {
    let w = words_of(r);
    let s = &r.summary;
    let q = &s.requests;
    let _ = writeln!(o, "<table class=\"kv\" data-table=\"counts\">");
    // What carried the requests, as the text report says under its load line (issue 20).
    let protocol = crate::render::shared::report_protocol_lines(r);
    if !protocol.is_empty() {
        row(o, "Protocol", &protocol.join("; "));
    }
    let mut counted = format!(
        "{} completed in {:.2}s: {} {}, {} errors; {} in flight at the end (not counted)",
        q.completed, r.run.measured_s, q.responses, w.answers, q.errors, q.in_flight_at_end
    );
    if q.warmup_completed > 0 {
        let _ = write!(
            counted,
            "; {} during warm-up (not counted)",
            q.warmup_completed
        );
    }
    row(o, &format!("{}s", capitalized(w.unit)), &counted);
    let rs = &s.rps_per_second;
    let mut rate = format!("{:.2} {}", s.rps, w.rate);
    if rs.seconds > 1 {
        let _ = write!(
            rate,
            " (per second over {}s: mean {:.0}, stdev {:.0}, min {}, max {})",
            rs.seconds, rs.mean, rs.stdev, rs.min, rs.max
        );
    }
    row(o, "Rate", &rate);
    if let Load::Open { rate: profile, .. } = &r.plan.load {
        let secs = profile.duration().as_secs_f64();
        let requested = if secs > 0.0 {
            profile.total_requests() as f64 / secs
        } else {
            0.0
        };
        let sent = (q.completed + q.in_flight_at_end) as f64 / r.run.measured_s.max(1e-9);
        row(
            o,
            "Requested rate",
            &format!("{requested:.1} req/s on average ({})", profile.to_text()),
        );
        row(
            o,
            "Achieved rate",
            &format!(
                "{sent:.1} req/s sent ({:.1}% of the requested rate), {:.1} responses/s",
                if requested > 0.0 {
                    sent * 100.0 / requested
                } else {
                    0.0
                },
                s.rps
            ),
        );
        row(
            o,
            "Dropped",
            &if s.dropped > 0 {
                format!(
                    "{} requests were due with every connection busy and none came free in time",
                    s.dropped
                )
            } else {
                "0".to_string()
            },
        );
    } else if s.dropped > 0 {
        row(o, "Dropped", &format!("{} {}s", s.dropped, w.unit));
    }
    row(
        o,
        "Transfer",
        &format!(
            "{}/s read, {}/s written ({} and {} in all)",
            format_bytes(s.read_bytes_per_s),
            format_bytes(s.written_bytes_per_s),
            format_bytes(s.bytes_read as f64),
            format_bytes(s.bytes_written as f64)
        ),
    );
    row(
        o,
        // WebSocket sessions are counted in their own table; this is the TCP side.
        if w.unit == "message" {
            "Handshakes timed"
        } else {
            "Connections opened"
        },
        &s.connections_opened.to_string(),
    );
    if s.retries > 0 && w.unit != "message" {
        row(
            o,
            "Retries",
            &crate::render::shared::retries_line(s.retries),
        );
    }
    let cpu = &r.run.client_cpu;
    row(
        o,
        "Client CPU",
        &format!(
            "{:.2}s user, {:.2}s system ({:.1}µs per {}; busiest load thread {:.0}% of a core)",
            cpu.user_s,
            cpu.system_s,
            cpu.per_request_us,
            w.unit,
            cpu.busiest_worker * 100.0
        ),
    );
    row(o, "Latency measured", &r.run.latency_definition);
    let _ = writeln!(o, "</table>");

    phases(o, r);
    status_codes(o, r);
    errors(o, r);
    super::checks::checks_and_steps(o, r); // issue 17
}

pub(crate) fn capitalized(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Latency and the phases the report keeps apart, one row each.
fn phases(o: &mut String, r: &Report) {
    let s = &r.summary;
    let ws = r.plan.websocket.is_some();
    let mut rows: Vec<(&str, &Distribution, &str)> = vec![(
        if ws { "round trip" } else { "latency" },
        &s.latency,
        "as the definition above says",
    )];
    if let Some(d) = &s.service_time {
        rows.push((
            "service time",
            d,
            "first byte written to last byte received (what the server took)",
        ));
    }
    if let Some(d) = &s.schedule_lag {
        rows.push((
            "schedule lag",
            d,
            "actual minus intended send time (what the client added)",
        ));
    }
    if !ws {
        rows.push((
            "TTFB",
            &s.ttfb,
            "first byte written to first byte read; the rest of latency is the transfer",
        ));
    }
    rows.push((
        if ws { "handshake" } else { "connect" },
        &s.connect,
        if ws {
            "TCP, TLS and the upgrade, per session"
        } else {
            "TCP (and TLS) per new connection"
        },
    ));
    let _ = writeln!(
        o,
        "<table class=\"num\" data-table=\"phases\"><tr><th>figure</th><th>count</th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>spans</th></tr>"
    );
    for (name, d, spans) in rows {
        let _ = writeln!(
            o,
            "<tr><td>{name}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
            d.count,
            format_of(d, d.min_us as f64),
            format_pct(d, 50.0),
            format_pct(d, 90.0),
            format_pct(d, 99.0),
            format_pct(d, 99.9),
            format_of(d, d.max_us as f64),
            esc(spans)
        );
    }
    let _ = writeln!(o, "</table>");
}

fn status_codes(o: &mut String, r: &Report) {
    let s = &r.summary;
    if r.plan.websocket.is_some() {
        return; // Upgrade answers are in the WebSocket table.
    }
    let codes: Vec<String> = s
        .status
        .iter()
        .map(|(c, n)| format!("<td>{c}</td><td>{n}</td>"))
        .collect();
    let _ = writeln!(
        o,
        "<table class=\"num\" data-table=\"status\"><tr><th>status</th><th>responses</th></tr>"
    );
    if codes.is_empty() {
        let _ = writeln!(o, "<tr><td>none</td><td>0</td></tr>");
    }
    for c in codes {
        let _ = writeln!(o, "<tr>{c}</tr>");
    }
    for class in 1..=5 {
        let n = s.status.class(class);
        if n > 0 {
            let _ = writeln!(o, "<tr><td>{class}xx</td><td>{n}</td></tr>");
        }
    }
    let _ = writeln!(o, "</table>");
}

fn errors(o: &mut String, r: &Report) {
    let s = &r.summary;
    if s.errors.total() == 0 {
        let _ = writeln!(o, "<p data-table=\"errors\">Errors: none.</p>");
        return;
    }
    let _ = writeln!(
        o,
        "<table class=\"num\" data-table=\"errors\"><tr><th>error</th><th>count</th><th>first example</th></tr>"
    );
    for (kind, stat) in s.errors.nonzero() {
        let _ = writeln!(
            o,
            "<tr><td>{kind}</td><td>{}</td><td class=\"text\">{}</td></tr>",
            stat.count,
            esc(stat.first_example.as_deref().unwrap_or(""))
        );
    }
    let _ = writeln!(o, "</table>");
}

/// The plan's `compare:` tables, as the Markdown document has them.
pub(crate) fn comparisons(o: &mut String, b: &Bundle) {
    if b.compare.is_empty() {
        return;
    }
    let _ = writeln!(o, "<section class=\"comparisons\"><h2>Comparisons</h2>");
    for c in &b.compare {
        for t in crate::render::shared::compare_table::comparison_tables(b, c) {
            let _ = writeln!(
                o,
                "<h3>{}</h3>\n<table class=\"num\" data-table=\"compare\"><tr><th>{} \\ {}</th>{}</tr>",
                esc(&t.title),
                esc(&t.rows_key),
                esc(&t.columns_key),
                t.columns
                    .iter()
                    .map(|c| format!("<th>{}</th>", esc(c)))
                    .collect::<String>()
            );
            for (name, cells) in &t.rows {
                let _ = writeln!(
                    o,
                    "<tr><td>{}</td>{}</tr>",
                    esc(name),
                    cells
                        .iter()
                        .map(|c| format!("<td>{}</td>", esc(c)))
                        .collect::<String>()
                );
            }
            let _ = writeln!(o, "</table>");
        }
    }
    let _ = writeln!(o, "</section>");
}
