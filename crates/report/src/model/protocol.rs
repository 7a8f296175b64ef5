//! What carried a run's requests (issue 16): the protocol actually spoken (which differs
//! from the plan's under `--http2-fallback`), the streams a server allowed, and how many
//! requests each connection carried. Built here from the plan and the few figures the run
//! observed ([`ProtocolFacts`], which the CLI copies from the engine's result, so this crate
//! needs no engine); absent in WebSocket runs and in reports written before it existed.
//! Part of the model: imports `model` siblings only, never a renderer.

use loadmark_metrics::{ConnectionSpread, QuicFigures};
use loadmark_plan::Plan;
use serde::{Deserialize, Serialize};

use super::report::Report;

/// What a run observed about its connections: the input [`ProtocolSummary::of`] needs
/// besides the plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProtocolFacts {
    /// `--http2-fallback` took effect: what the server chose with ALPN instead of h2.
    pub http2_fallback: Option<String>,
    /// HTTP/2: the lowest SETTINGS_MAX_CONCURRENT_STREAMS a server announced, when below
    /// the streams asked for.
    pub server_max_concurrent_streams: Option<usize>,
    /// Responses each connection carried, over the connections opened.
    pub requests_per_connection: Option<ConnectionSpread>,
    /// HTTP/3: what the QUIC stack counted over the run's connections.
    pub quic: Option<QuicFigures>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProtocolSummary {
    /// The protocol the requests went over: `HTTP/3`, `HTTP/2` or `HTTP/1.1`.
    pub used: String,
    /// `--http2-fallback` took effect: the server did not choose h2 with ALPN (this says
    /// what it chose), so the run went over HTTP/1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2_fallback: Option<String>,
    /// HTTP/2: concurrent streams per connection asked for (`--streams`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams_per_connection: Option<usize>,
    /// HTTP/2: the lowest SETTINGS_MAX_CONCURRENT_STREAMS a server announced, when below
    /// `--streams`: requests waited for a free stream, the limit was never exceeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_max_concurrent_streams: Option<usize>,
    /// HTTP/1.1 pipelining depth (`--pipeline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<usize>,
    /// Responses each connection carried, over the connections opened (one figure per
    /// connection, counted when it ended). Not kept when reports of several machines are
    /// merged (a median cannot be added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_connection: Option<ConnectionSpread>,
    /// HTTP/3 (issue 37): handshake times, packets sent and lost, the congestion window and
    /// datagrams, as the QUIC stack counted them over every connection. Not kept when
    /// reports of several machines are merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicFigures>,
}

impl ProtocolSummary {
    /// The summary of one run: none for a WebSocket run (its own section says how it ran).
    pub fn of(plan: &Plan, facts: ProtocolFacts) -> Option<ProtocolSummary> {
        if plan.websocket.is_some() {
            return None;
        }
        let http2 = plan
            .protocol
            .http2
            .filter(|_| facts.http2_fallback.is_none());
        let http3 = plan.protocol.http3;
        Some(ProtocolSummary {
            used: match (http3, http2) {
                (Some(_), _) => "HTTP/3",
                (None, Some(_)) => "HTTP/2",
                (None, None) => "HTTP/1.1",
            }
            .into(),
            http2_fallback: facts.http2_fallback,
            streams_per_connection: http3.map(|h| h.streams).or(http2.map(|h| h.streams)),
            server_max_concurrent_streams: facts.server_max_concurrent_streams,
            pipeline: plan.protocol.pipeline,
            requests_per_connection: facts.requests_per_connection,
            quic: facts.quic,
        })
    }

    /// The summary of merged reports: the lowest stream limit of any, no per-connection
    /// spread (see the field).
    pub fn merged(all: &[&Report]) -> Option<ProtocolSummary> {
        let mut out = all.first()?.summary.protocol.clone()?;
        out.server_max_concurrent_streams = all
            .iter()
            .filter_map(|r| r.summary.protocol.as_ref()?.server_max_concurrent_streams)
            .min();
        if all.len() > 1 {
            out.requests_per_connection = None;
            out.quic = None;
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(http2: Option<usize>, pipeline: Option<usize>) -> Plan {
        let request = loadmark_plan::RequestSpec {
            method: "GET".into(),
            url: loadmark_plan::Target::parse("http://127.0.0.1:1/").unwrap(),
            headers: Vec::new(),
            body: Vec::new(),
            keep_alive: true,
        };
        let mut plan = loadmark_plan::Settings::default()
            .to_plan(request, 2)
            .unwrap();
        plan.protocol.http2 = http2.map(|streams| loadmark_plan::Http2 {
            streams,
            fallback: true,
        });
        plan.protocol.pipeline = pipeline;
        plan
    }

    #[test]
    fn the_summary_says_what_was_spoken_from_the_plan_and_the_run() {
        let facts = ProtocolFacts {
            server_max_concurrent_streams: Some(4),
            ..Default::default()
        };
        let h2 = ProtocolSummary::of(&plan(Some(8), None), facts).unwrap();
        assert_eq!(h2.used, "HTTP/2");
        assert_eq!(h2.streams_per_connection, Some(8));
        assert_eq!(h2.server_max_concurrent_streams, Some(4));

        // A fallback means the run spoke HTTP/1.1, whatever the plan asked.
        let fell_back = ProtocolFacts {
            http2_fallback: Some("the server chose http/1.1".into()),
            ..Default::default()
        };
        let h1 = ProtocolSummary::of(&plan(Some(8), None), fell_back);
        let h1 = h1.unwrap();
        assert_eq!(h1.used, "HTTP/1.1");
        assert_eq!(h1.streams_per_connection, None);
        assert_eq!(
            h1.http2_fallback.as_deref(),
            Some("the server chose http/1.1")
        );

        let piped = ProtocolSummary::of(&plan(None, Some(16)), Default::default());
        assert_eq!(piped.unwrap().pipeline, Some(16));
    }
}
