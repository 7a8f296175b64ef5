//! The WebSocket part of a report: [`WsSummary`] (sessions, messages, round trips, closes)
//! built from the totals, what each mode's latency means, and the findings of a send rate
//! not held.
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use loadmark_metrics::{Distribution, WsStats};
use loadmark_plan::{Load, WsMode, WsSpec};

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
