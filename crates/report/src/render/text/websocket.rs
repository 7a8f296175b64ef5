//! The WebSocket lines of the text report: how the sessions were asked to behave, and what
//! they did (sessions, messages, round trips, closes). Imports `model`, `units` and the text
//! renderer's own helpers, never another format.

use std::fmt::Write;

use loadmark_plan::{format_duration, Plan, Stop, WsMode, WsPayload, WsSpec};

use crate::model::{Report, WsSummary};
use crate::units::{format_bytes, format_of, format_pct};

/// How the sessions were asked to behave, in one line.
pub(crate) fn describe_load(plan: &Plan, spec: &WsSpec) -> String {
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
    let sessions = match &plan.load {
        loadmark_plan::Load::Ramp { connections, .. } => {
            format!("sessions ramping {}", connections.to_text())
        }
        _ => format!("{sessions} session{}", if sessions == 1 { "" } else { "s" }),
    };
    format!(
        "WebSocket {what}, {payload} {kind}; {sessions} on {threads} thread{}{sessions_last}{ping}, {stop}",
        if threads == 1 { "" } else { "s" },
    )
}

/// The WebSocket lines of the terminal report (after the header).
pub(crate) fn render_text_block(o: &mut String, r: &Report, ws: &WsSummary) {
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
        super::distribution_block(o, &s.latency, &r.totals.latency);
        if let Some(service) = &s.service_time {
            super::short_line(o, "Service time", service, "written to echoed");
        }
        if let Some(lag) = &s.schedule_lag {
            super::short_line(o, "Schedule lag", lag, "actual minus intended send time");
        }
    }
    let _ = writeln!(o);
    super::short_line(
        o,
        "Handshake",
        &s.connect,
        "TCP, TLS and upgrade, until the 101 was read",
    );
    if ws.pings_sent > 0 {
        super::short_line(
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
