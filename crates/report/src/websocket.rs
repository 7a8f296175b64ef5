//! The WebSocket part of a report: [`WsSummary`], and its blocks in text, Markdown and HTML.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

use loadmark_metrics::{Distribution, WsStats};
use loadmark_plan::{format_duration, Load, Plan, Stop, WsMode, WsPayload, WsSpec};

use crate::format::{format_bytes, format_of, format_pct};
use crate::model::Report;

/// What the round-trip latency of each WebSocket mode includes.
pub fn latency_definition(spec: &WsSpec) -> &'static str {
    match spec.mode {
        WsMode::Echo => "round trip, from the message's intended send time on its session's --interval schedule to the last byte of its echo (no coordinated omission: a late send counts against the server); service_time starts when the message was written; connect is the whole handshake (TCP, TLS, upgrade to the 101)",
        WsMode::Request => "round trip, from the message written to the last byte of its reply (closed loop: the next message waits for the reply); connect is the whole handshake (TCP, TLS, upgrade to the 101)",
        WsMode::Send | WsMode::Receive => "no round trips in this mode (messages are counted, not matched); connect is the whole handshake (TCP, TLS, upgrade to the 101)",
    }
}

/// Sessions, messages both ways, pings and closes of a WebSocket run, per second where it
/// makes sense. Round trips are the report's responses and latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WsSummary {
    pub mode: WsMode,
    pub sessions_opened: u64,
    pub sessions_completed: u64,
    /// Upgrade answers that were 101 (the check passed) and that were not.
    pub upgrades_passed: u64,
    pub upgrades_failed: u64,
    /// Upgrade answers by status code.
    pub upgrade_status: BTreeMap<u16, u64>,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub messages_sent_per_s: f64,
    pub messages_received_per_s: f64,
    pub payload_bytes_sent: u64,
    pub payload_bytes_received: u64,
    pub payload_sent_per_s: f64,
    pub payload_received_per_s: f64,
    /// Echo and send modes: the send rate the plan asked for (sessions / interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_send_rate: Option<f64>,
    pub pings_sent: u64,
    pub pongs_received: u64,
    pub ping_rtt: Distribution,
    pub session_duration: Distribution,
    /// Close codes the server sent, by code.
    pub close_codes: BTreeMap<u16, u64>,
}

impl WsSummary {
    pub fn new(spec: &WsSpec, load: &Load, ws: &WsStats, measured_s: f64) -> Self {
        let per_s = |n: u64| {
            if measured_s > 0.0 {
                n as f64 / measured_s
            } else {
                0.0
            }
        };
        let requested_send_rate = match (spec.mode, spec.interval) {
            (WsMode::Echo | WsMode::Send, Some(interval)) => {
                Some(load.max_connections() as f64 / interval.as_secs_f64())
            }
            _ => None,
        };
        WsSummary {
            mode: spec.mode,
            sessions_opened: ws.sessions_opened,
            sessions_completed: ws.sessions_completed,
            upgrades_passed: ws.upgrades_passed(),
            upgrades_failed: ws.upgrades_failed(),
            upgrade_status: ws.upgrade_status.clone(),
            messages_sent: ws.messages_sent,
            messages_received: ws.messages_received,
            messages_sent_per_s: per_s(ws.messages_sent),
            messages_received_per_s: per_s(ws.messages_received),
            payload_bytes_sent: ws.payload_bytes_sent,
            payload_bytes_received: ws.payload_bytes_received,
            payload_sent_per_s: per_s(ws.payload_bytes_sent),
            payload_received_per_s: per_s(ws.payload_bytes_received),
            requested_send_rate,
            pings_sent: ws.pings_sent,
            pongs_received: ws.pongs_received,
            ping_rtt: Distribution::of(&ws.ping_rtt),
            session_duration: Distribution::of(&ws.session_duration),
            close_codes: ws.close_codes.clone(),
        }
    }

    /// The share of the requested send rate achieved (echo and send modes).
    pub fn send_rate_held(&self) -> Option<f64> {
        self.requested_send_rate
            .filter(|r| *r > 0.0)
            .map(|r| self.messages_sent_per_s / r)
    }
}

/// Below this share of the requested send rate, the run did not hold its schedule.
pub const HELD_RATE: f64 = 0.99;

/// How the sessions were asked to behave, in one line.
pub fn describe_load(plan: &Plan, spec: &WsSpec) -> String {
    let (sessions, threads) = (plan.load.max_connections(), plan.load.threads());
    let what = match (spec.mode, spec.interval) {
        (WsMode::Echo, Some(i)) => {
            format!("echo, one message every {} per session", format_duration(i))
        }
        (WsMode::Send, Some(i)) => format!(
            "send-only, one message every {} per session",
            format_duration(i)
        ),
        (WsMode::Request, _) => "request/response, one message in flight per session".to_string(),
        (WsMode::Receive, _) => "receive-only".to_string(),
        (_, None) => spec.mode.as_str().to_string(),
    };
    let payload = match &spec.payload {
        WsPayload::Random { min, max } if min == max => format!("{min} B"),
        WsPayload::Random { min, max } => format!("{min}..{max} B"),
        WsPayload::Message(_) => "templated message".to_string(),
    };
    let kind = if spec.binary { "binary" } else { "text" };
    let stop = match plan.stop {
        Stop::Duration(d) => format!("for {}", format_duration(d)),
        Stop::Requests(n) => format!("{n} messages"),
    };
    let sessions_last = match spec.session_duration {
        Some(d) => format!(", sessions of {}", format_duration(d)),
        None => String::new(),
    };
    let ping = match spec.ping {
        Some(p) => format!(", ping every {}", format_duration(p)),
        None => String::new(),
    };
    format!(
        "WebSocket {what}, {payload} {kind}; {sessions} session{} on {threads} thread{}{sessions_last}{ping}, {stop}",
        if sessions == 1 { "" } else { "s" },
        if threads == 1 { "" } else { "s" },
    )
}

/// The WebSocket lines of the terminal report (after the header).
pub fn render_text_block(o: &mut String, r: &Report, ws: &WsSummary) {
    let s = &r.summary;
    let q = &s.requests;
    let upgrades: Vec<String> = ws
        .upgrade_status
        .iter()
        .map(|(c, n)| format!("{c}: {n}"))
        .collect();
    let _ = writeln!(
        o,
        "  Sessions      {} opened, {} ended by loadmark; upgrade check (101): {} passed, {} failed{}",
        ws.sessions_opened,
        ws.sessions_completed,
        ws.upgrades_passed,
        ws.upgrades_failed,
        if ws.upgrades_failed > 0 {
            format!(" ({})", upgrades.join(", "))
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        o,
        "  Messages      sent {} ({:.2}/s{}), received {} ({:.2}/s){}",
        ws.messages_sent,
        ws.messages_sent_per_s,
        match ws.requested_send_rate {
            Some(rate) => format!(" of {rate:.0}/s requested"),
            None => String::new(),
        },
        ws.messages_received,
        ws.messages_received_per_s,
        if s.dropped > 0 {
            format!(
                "; {} due but dropped (never sent: over --timeout behind, or the server stopped reading)",
                s.dropped
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        o,
        "  Data          sent {}/s, received {}/s of payload ({} and {} in all); wire {}/s out, {}/s in",
        format_bytes(ws.payload_sent_per_s),
        format_bytes(ws.payload_received_per_s),
        format_bytes(ws.payload_bytes_sent as f64),
        format_bytes(ws.payload_bytes_received as f64),
        format_bytes(s.written_bytes_per_s),
        format_bytes(s.read_bytes_per_s),
    );
    if matches!(ws.mode, WsMode::Echo | WsMode::Request) {
        let _ = writeln!(
            o,
            "  Round trips   {} answered, {} errors; {} in flight at the end (not counted); {:.2}/s",
            q.responses, q.errors, q.in_flight_at_end, s.rps
        );
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "  Round trip    {}",
            match ws.mode {
                WsMode::Echo =>
                    "from each message's intended send time to its echo (no coordinated omission)",
                _ => "from each message written to its reply (closed loop)",
            }
        );
        crate::text::distribution_block(o, &s.latency, &r.totals.latency);
        if let Some(service) = &s.service_time {
            crate::text::short_line(o, "Service time", service, "written to echoed");
        }
        if let Some(lag) = &s.schedule_lag {
            crate::text::short_line(o, "Schedule lag", lag, "actual minus intended send time");
        }
    }
    let _ = writeln!(o);
    crate::text::short_line(
        o,
        "Handshake",
        &s.connect,
        "TCP, TLS and upgrade, until the 101 was read",
    );
    if ws.pings_sent > 0 {
        crate::text::short_line(
            o,
            "Ping RTT",
            &ws.ping_rtt,
            &format!("{} pings, {} pongs", ws.pings_sent, ws.pongs_received),
        );
    }
    if ws.session_duration.count > 0 {
        let _ = writeln!(
            o,
            "  Session       p50 {}  max {}   ({} sessions ended)",
            format_pct(&ws.session_duration, 50.0),
            format_of(&ws.session_duration, ws.session_duration.max_us as f64),
            ws.session_duration.count
        );
    }
    let closes: Vec<String> = ws
        .close_codes
        .iter()
        .map(|(c, n)| format!("{c}: {n}"))
        .collect();
    let _ = writeln!(
        o,
        "  Server closes {}",
        if closes.is_empty() {
            "none".to_string()
        } else {
            closes.join(", ")
        }
    );
}

/// The columns of the WebSocket table in Markdown and HTML.
const TABLE_HEADS: [&str; 10] = [
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
fn table_row(step: &str, r: &Report, ws: &WsSummary) -> [String; 10] {
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

/// A Markdown table of the WebSocket figures of every step that has them.
pub fn render_markdown_section(o: &mut String, steps: &[(String, &Report)]) {
    let rows: Vec<[String; 10]> = steps
        .iter()
        .filter_map(|(name, r)| {
            r.summary
                .websocket
                .as_ref()
                .map(|ws| table_row(name, r, ws))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n## WebSocket\n");
    let _ = writeln!(
        o,
        "Round trip: from the intended send time (echo) or the write (request) to the answer. Handshake: TCP, TLS and upgrade until the 101.\n"
    );
    let _ = writeln!(o, "| {} |", TABLE_HEADS.join(" | "));
    let _ = writeln!(o, "|---|{}", "---:|".repeat(TABLE_HEADS.len() - 1));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
}

/// An HTML table of the WebSocket figures of every step that has them.
pub fn render_html_section(o: &mut String, b: &crate::bundle::Bundle) {
    use crate::html::esc;
    let rows: Vec<[String; 10]> = b
        .steps
        .iter()
        .filter_map(|s| {
            let ws = s.report.summary.websocket.as_ref()?;
            Some(table_row(&s.number.to_string(), &s.report, ws))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let heads: String = TABLE_HEADS
        .iter()
        .map(|h| format!("<th>{h}</th>"))
        .collect();
    let _ = writeln!(
        o,
        "<section><h2>WebSocket</h2><table class=\"num\"><tr>{heads}</tr>"
    );
    for row in rows {
        let cells: String = row.iter().map(|c| format!("<td>{}</td>", esc(c))).collect();
        let _ = writeln!(o, "<tr>{cells}</tr>");
    }
    let _ = writeln!(o, "</table></section>");
}

/// Plain-words findings about a WebSocket run: a send rate not held, sends that left late.
pub fn findings(
    ws: &WsSummary,
    dropped: u64,
    lag_p99_us: Option<u64>,
    late_us: u64,
) -> Vec<String> {
    let mut out = Vec::new();
    if dropped > 0 {
        out.push(format!(
            "{dropped} messages fell due but were never sent: the sessions were more than --timeout behind their schedule, or the server stopped reading what they sent"
        ));
    }
    if let (Some(held), Some(rate)) = (ws.send_rate_held(), ws.requested_send_rate) {
        if held < HELD_RATE {
            out.push(format!(
                "the requested send rate was not held: {:.0} messages/s sent of {rate:.0}/s requested ({:.1}%); the server did not keep up (writes waited), sessions were being reopened, or the client was busy",
                ws.messages_sent_per_s,
                held * 100.0
            ));
        }
    }
    if let Some(p99) = lag_p99_us.filter(|&p| p > late_us) {
        out.push(format!(
            "messages left late: p99 schedule lag was {:.1}ms (actual minus intended send time)",
            p99 as f64 / 1000.0
        ));
    }
    out
}
