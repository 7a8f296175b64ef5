//! The gRPC figures as the Markdown, HTML and CSV reports show them (issue 36): one row per
//! run (the method, its call shape, calls, messages per call, the request message's size, a
//! streaming run's calls ended by loadmark, time to first message and gap), and one row per
//! status code with its first `grpc-message`. The text report says the same in its gRPC
//! block. Imports `model` and `units`, never a format's renderer.

use loadmark_metrics::{Distribution, GrpcStats};

use crate::model::Report;
use crate::units::{format_bytes, format_pct};

/// The columns of [`grpc_row`].
pub(crate) const GRPC_HEADS: [&str; 9] = [
    "step",
    "method",
    "shape",
    "calls",
    "messages sent / received per call",
    "request message",
    "ended by loadmark",
    "first message p50 / p99",
    "message gap p50 / p99",
];

/// The columns of [`grpc_status_rows`].
pub(crate) const GRPC_STATUS_HEADS: [&str; 5] = [
    "step",
    "grpc-status",
    "calls",
    "share",
    "first grpc-message",
];

/// The run's gRPC figures, when it made gRPC calls.
pub(crate) fn grpc_of(r: &Report) -> Option<&GrpcStats> {
    r.totals.grpc.as_deref()
}

/// `package.Service/Method`: the request's path without its leading slash.
pub(crate) fn grpc_method(r: &Report) -> String {
    let path = r.plan.request.url.path_and_query();
    path.strip_prefix('/').unwrap_or(path).to_string()
}

/// unary, server streaming, client streaming or bidi streaming.
pub(crate) fn grpc_shape(r: &Report) -> &'static str {
    match r.plan.protocol.grpc.as_ref() {
        None => "unary",
        Some(s) => match (s.client_streams, s.server_streams) {
            (false, true) => "server streaming",
            (true, false) => "client streaming",
            _ => "bidi streaming",
        },
    }
}

/// The request messages in the plan's body and their mean size in bytes without gRPC's
/// 5-byte prefix (a client stream's body holds several).
pub(crate) fn request_message_bytes(r: &Report) -> Option<(u32, f64)> {
    let body = &r.plan.request.body;
    let (mut n, mut at, mut payload) = (0u32, 0usize, 0usize);
    while let Some(prefix) = body.get(at..at + 5) {
        let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        at += 5 + len;
        payload += len;
        n += 1;
    }
    (n > 0 && at == body.len()).then(|| (n, payload as f64 / f64::from(n)))
}

fn p50_p99(d: Option<&Distribution>) -> String {
    match d.filter(|d| d.count > 0) {
        Some(d) => format!("{} / {}", format_pct(d, 50.0), format_pct(d, 99.0)),
        None => "–".into(),
    }
}

/// One row of the gRPC table, formatted; `None` for a run without gRPC calls.
pub(crate) fn grpc_row(step: &str, r: &Report) -> Option<[String; 9]> {
    let g = grpc_of(r)?;
    let s = r.summary.grpc.as_ref();
    let streaming = r.plan.protocol.grpc.is_some();
    let per_call = s.map_or_else(
        || "–".to_string(),
        |s| {
            format!(
                "{:.1} / {:.1}",
                s.messages_sent_per_call, s.messages_received_per_call
            )
        },
    );
    let request = match request_message_bytes(r) {
        Some((1, bytes)) => format_bytes(bytes),
        Some((n, bytes)) => format!("{} (mean of {n})", format_bytes(bytes)),
        None => "–".into(),
    };
    let dash = || "–".to_string();
    Some([
        step.to_string(),
        grpc_method(r),
        grpc_shape(r).to_string(),
        g.calls().to_string(),
        per_call,
        request,
        if streaming {
            s.and_then(|s| s.ended_by_client).unwrap_or(0).to_string()
        } else {
            dash()
        },
        if streaming {
            p50_p99(s.and_then(|s| s.first_message.as_ref()))
        } else {
            dash()
        },
        if streaming {
            p50_p99(s.and_then(|s| s.message_gap.as_ref()))
        } else {
            dash()
        },
    ])
}

/// One row per status code the run's calls ended with, in code order: its name, calls, share
/// of the calls with a status, and first `grpc-message` (empty when none came).
pub(crate) fn grpc_status_rows(step: &str, r: &Report) -> Vec<[String; 5]> {
    let Some(g) = grpc_of(r) else {
        return Vec::new();
    };
    let with_status: u64 = g.codes.iter().map(|c| c.count).sum();
    g.codes
        .iter()
        .map(|c| {
            [
                step.to_string(),
                c.name.clone(),
                c.count.to_string(),
                format!("{:.2}%", c.count as f64 * 100.0 / with_status.max(1) as f64),
                c.first_message.clone().unwrap_or_default(),
            ]
        })
        .collect()
}

/// What a call's latency is in each gRPC run whose calls stream, for the note under the
/// table: `(step, definition)`.
pub(crate) fn grpc_latency_notes<'a>(
    steps: impl Iterator<Item = (String, &'a Report)>,
) -> Vec<(String, &'static str)> {
    steps
        .filter(|(_, r)| grpc_of(r).is_some())
        .filter_map(|(step, r)| {
            r.plan
                .protocol
                .grpc
                .as_ref()
                .map(|s| (step, s.latency_definition()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_messages_are_read_from_their_length_prefixes() {
        let mut r = Report::from_json(include_str!("../../../testdata/run.json")).unwrap();
        r.plan.request.body = vec![0, 0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 0, 1, 9];
        assert_eq!(request_message_bytes(&r), Some((2, 2.0)));
        r.plan.request.body = vec![0, 0, 0, 0, 0];
        assert_eq!(request_message_bytes(&r), Some((1, 0.0)));
        // Not gRPC framing (an HTTP body): no size claimed.
        r.plan.request.body = b"{\"a\":1}".to_vec();
        assert_eq!(request_message_bytes(&r), None);
    }
}
