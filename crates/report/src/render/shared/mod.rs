//! What more than one format shows alike: the step table's columns and cells, the
//! comparison tables of a plan's `compare:` block, the blocks in other tools' styles, and
//! the plain-text phrases (headline, retries, protocol lines, the rows of the scenario and
//! WebSocket tables) that the text, Markdown and HTML reports repeat word for word. Each
//! format adds only its own markup around them. Imports `model` and `units`, never a
//! format's renderer.

pub(crate) mod capacity;
pub(crate) mod compare_table;
pub(crate) mod grpc;
pub(crate) mod styles;
pub(crate) mod table;

use std::fmt::Write;

use loadmark_metrics::Distribution;
use loadmark_plan::WsMode;

use crate::model::{
    BundleStep, NamedScenarioSummary, ProtocolSummary, Report, StepSummary, WsSummary,
};
use crate::units::{format_bytes, format_of, format_pct, plural};

/// What a run measured, in a few words: `GET http://host/path`, `WebSocket ws://host/ws`,
/// or for a scenario its steps, `scenario login → list → open on http://host/` (its first
/// request alone would misname a journey), after the plan's name when it has one.
pub(crate) fn headline(r: &Report, name: Option<&str>) -> String {
    let req = &r.plan.request;
    if r.plan.websocket.is_some() {
        return format!("WebSocket {}", req.url);
    }
    if !r.plan.scenarios.is_empty() {
        let names: Vec<&str> = r.plan.scenarios.iter().map(|s| s.name.as_str()).collect();
        let what = format!("scenarios {}", names.join(", "));
        return match name {
            Some(name) => format!("{name} ({what}) on {}", origin_of(req.url.as_str())),
            None => format!("{what} on {}", origin_of(req.url.as_str())),
        };
    }
    let Some(plan_steps) = &r.plan.scenario else {
        return format!("{} {}", req.method, req.url);
    };
    // The summary holds each step's resolved name (METHOD URL when the plan gave none).
    let mut steps: Vec<String> = match &r.summary.scenario {
        Some(sc) => sc.steps.iter().map(|st| st.name.clone()).collect(),
        None => plan_steps
            .iter()
            .filter(|st| st.think.is_none())
            .map(|st| st.name.clone().unwrap_or_else(|| "(unnamed)".into()))
            .collect(),
    };
    const SHOWN: usize = 6;
    if steps.len() > SHOWN {
        let more = steps.len() - (SHOWN - 1);
        steps.truncate(SHOWN - 1);
        steps.push(format!("{more} more"));
    }
    let origin = origin_of(req.url.as_str());
    let steps = steps.join(" → ");
    match name {
        Some(name) => format!("{name} (scenario: {steps}) on {origin}"),
        None => format!("scenario {steps} on {origin}"),
    }
}

/// A scenario's requests name their own paths: the target is the URL's origin.
fn origin_of(url: &str) -> &str {
    url.find("://")
        .and_then(|at| url[at + 3..].find('/').map(|slash| &url[..at + 3 + slash]))
        .unwrap_or(url)
}

/// One named scenario in a line: `Scenario buy (from 5s, 10.0s): 400 requests, 40.0 req/s,
/// latency p50 1.2ms p99 3.4ms, 0 failed`, the same in every format.
pub(crate) fn named_scenario_line(n: &NamedScenarioSummary) -> String {
    format!(
        "Scenario {} (from {}s, ran {:.1}s): {} requests, {:.1} req/s, latency p50 {} p99 {}, {} failed",
        n.name,
        n.start_s,
        n.measured_s,
        n.requests,
        n.rps,
        format_pct(&n.latency, 50.0),
        format_pct(&n.latency, 99.0),
        n.failed
    )
}

/// The retries line of the text report, which the HTML and Markdown reports repeat.
pub(crate) fn retries_line(retries: u64) -> String {
    format!(
        "{retries} request{} sent again on a new connection: a reused one closed before any response byte",
        plural(retries)
    )
}

/// A check's pass rate, `-` when it was never evaluated.
pub(crate) fn pass_rate(passed: u64, failed: u64) -> String {
    if passed + failed == 0 {
        "-".into()
    } else {
        format!("{:.2}%", passed as f64 * 100.0 / (passed + failed) as f64)
    }
}

/// The step as the tables name it: its parameters, or its target.
pub(crate) fn params(step: &BundleStep) -> String {
    if step.params.is_empty() {
        step.target.clone()
    } else {
        step.params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The lines the text and Markdown reports show, without indentation.
pub(crate) fn protocol_lines(p: &ProtocolSummary) -> Vec<String> {
    let mut first = p.used.clone();
    if let Some(streams) = p.streams_per_connection {
        let _ = write!(
            first,
            ", {streams} stream{} per connection",
            if streams == 1 { "" } else { "s" }
        );
    }
    if let Some(depth) = p.pipeline {
        let _ = write!(
            first,
            " pipelining, up to {depth} requests in flight per connection"
        );
    }
    if let Some(s) = &p.requests_per_connection {
        let _ = write!(
            first,
            ", {:.1} requests per connection (min {}, median {}, max {}; {} connection{})",
            s.mean,
            s.min,
            s.median,
            s.max,
            s.connections,
            if s.connections == 1 { "" } else { "s" }
        );
    }
    let mut lines = vec![first];
    if let Some(q) = &p.quic {
        lines.extend(quic_lines(q));
    }
    if let Some(why) = &p.http2_fallback {
        lines.push(format!(
            "HTTP/2 not offered, so HTTP/1.1 was used (--http2-fallback): {why}"
        ));
    }
    if let Some(allowed) = p.server_max_concurrent_streams {
        lines.push(format!(
            "the server allowed {allowed} concurrent stream{} per connection \
             (SETTINGS_MAX_CONCURRENT_STREAMS), fewer than --streams: requests waited \
             for a free stream, the limit was never exceeded",
            if allowed == 1 { "" } else { "s" }
        ));
    }
    lines
}

/// HTTP/3: what QUIC counted, in two lines (handshakes and loss; datagrams and streams).
fn quic_lines(q: &loadmark_metrics::QuicFigures) -> Vec<String> {
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let ms = |v: f64| format!("{v:.2}ms");
    let kib = |b: u64| format!("{:.1} KiB", b as f64 / 1024.0);
    let full = q.connections - q.zero_rtt.as_ref().map_or(0, |z| z.connections);
    let mut lines = vec![
        format!(
            "QUIC: {} {}handshake{} (min {}, mean {}, max {}); {} packets sent, {} lost \
             ({:.3}%, {}), {} congestion event{}, congestion window {} to {} at close, \
             rtt {} mean",
            full,
            if q.zero_rtt.is_some() { "1-RTT " } else { "" },
            plural(full),
            ms(q.handshake_ms.min),
            ms(q.handshake_ms.mean),
            ms(q.handshake_ms.max),
            q.packets_sent,
            q.packets_lost,
            q.loss_ratio * 100.0,
            kib(q.bytes_lost),
            q.congestion_events,
            plural(q.congestion_events),
            kib(q.cwnd_min_bytes),
            kib(q.cwnd_max_bytes),
            ms(q.rtt_mean_ms),
        ),
        format!(
            "UDP: {} datagrams sent (mean {:.0} B), {} received (mean {:.0} B)",
            q.datagrams_sent,
            q.datagram_mean_bytes_sent,
            q.datagrams_received,
            q.datagram_mean_bytes_received,
        ),
    ];
    if let Some(z) = &q.zero_rtt {
        let handshake = z.handshake_ms.map_or(String::new(), |h| {
            format!(
                ", handshake min {}, mean {}, max {}",
                ms(h.min),
                ms(h.mean),
                ms(h.max)
            )
        });
        lines.push(format!(
            "0-RTT: {} connection{} resumed ({} accepted, {} rejected{handshake}); {} \
             request{} sent early and answered, {} rejected and sent again (early data is \
             replayable: only safe methods go early)",
            z.connections,
            plural(z.connections),
            z.accepted,
            z.rejected,
            z.requests_early,
            plural(z.requests_early),
            z.requests_rejected,
        ));
    }
    if q.requests_moved_after_goaway > 0 {
        lines.push(format!(
            "moved to a new connection after GOAWAY: {} (never sent, so not retries)",
            q.requests_moved_after_goaway
        ));
    }
    lines
}

/// What carried a run's requests, as the text report says it under the load line and the
/// HTML page repeats it: the summary's lines; for a report older than the summary, what the
/// plan asked (HTTP/2 streams, pipelining); the Unix socket when there was one.
pub(crate) fn report_protocol_lines(r: &Report) -> Vec<String> {
    let s = &r.summary;
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let mut lines = Vec::new();
    if let Some(p) = &s.protocol {
        lines.extend(protocol_lines(p));
    } else if let Some(h2) = &r.plan.protocol.http2 {
        let mut line = format!(
            "HTTP/2, {} stream{} per connection",
            h2.streams,
            plural(h2.streams as u64)
        );
        if s.connections_opened > 0 {
            let _ = write!(
                line,
                ", {:.1} requests per connection opened",
                s.requests.responses as f64 / s.connections_opened as f64
            );
        }
        lines.push(line);
    }
    if let (None, Some(depth)) = (&s.protocol, r.plan.protocol.pipeline) {
        lines.push(format!(
            "HTTP/1.1 pipelining, up to {depth} requests in flight per connection"
        ));
    }
    if let Some(path) = &r.plan.protocol.unix_socket {
        lines.push(format!("over the Unix socket {}", path.display()));
    }
    if let Some(proxy) = &r.run.proxy {
        lines.push(format!(
            "through the proxy {proxy}: connect times include its tunnel set-up"
        ));
    }
    lines
}

/// A percentile of `d`, `n/a` when it measured nothing (as every renderer says it).
fn pct(d: &Distribution, p: f64) -> String {
    format_pct(d, p)
}

/// The cells of a step's row: requests, non-2xx/3xx, errors, p50, p99, max, checks failed,
/// extraction failures.
pub(crate) fn scenario_cells(st: &StepSummary) -> [String; 8] {
    [
        st.requests.to_string(),
        st.status.not_success().to_string(),
        st.errors.total().to_string(),
        pct(&st.latency, 50.0),
        pct(&st.latency, 99.0),
        format_of(&st.latency, st.latency.max_us as f64),
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

/// The heads of the scenario steps table, after the step's name.
pub(crate) const SCENARIO_HEADS: [&str; 8] = [
    "requests",
    "non-2xx",
    "errors",
    "p50",
    "p99",
    "max",
    "checks failed",
    "extract failed",
];

/// The columns of the WebSocket table in Markdown and HTML.
pub(crate) const WS_HEADS: [&str; 10] = [
    "step",
    "sessions",
    "upgrade 101 pass / fail",
    "messages/s sent / received",
    "payload/s sent / received",
    "round trip p50 / p99",
    "handshake p50",
    "ping RTT p50",
    "server closes",
    "errors",
];

/// One row of the WebSocket table, formatted.
pub(crate) fn ws_row(step: &str, r: &Report, ws: &WsSummary) -> [String; 10] {
    let s = &r.summary;
    let pct = |d: &Distribution, q: f64| format_pct(d, q);
    let closes: Vec<String> = ws
        .close_codes
        .iter()
        .map(|(c, n)| format!("{c}: {n}"))
        .collect();
    [
        step.to_string(),
        ws.sessions_opened.to_string(),
        format!("{} / {}", ws.upgrades_passed, ws.upgrades_failed),
        format!(
            "{:.0} / {:.0}",
            ws.messages_sent_per_s, ws.messages_received_per_s
        ),
        format!(
            "{} / {}",
            format_bytes(ws.payload_sent_per_s),
            format_bytes(ws.payload_received_per_s)
        ),
        if matches!(ws.mode, WsMode::Echo | WsMode::Request) {
            format!("{} / {}", pct(&s.latency, 50.0), pct(&s.latency, 99.0))
        } else {
            "–".into()
        },
        pct(&s.connect, 50.0),
        if ws.pongs_received > 0 {
            pct(&ws.ping_rtt, 50.0)
        } else {
            "–".into()
        },
        if closes.is_empty() {
            "–".to_string()
        } else {
            closes.join(", ")
        },
        s.requests.errors.to_string(),
    ]
}
