//! What carried a run's requests (issue 16): the protocol actually spoken (which differs
//! from the plan's under `--http2-fallback`), the streams a server allowed, and how many
//! requests each connection carried. Filled from the engine's result by the CLI; absent in
//! WebSocket runs and in reports written before it existed.

use std::fmt::Write;

use loadmark_metrics::ConnectionSpread;
use serde::{Deserialize, Serialize};

use crate::Report;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProtocolSummary {
    /// The protocol the requests went over: `HTTP/2` or `HTTP/1.1`.
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
}

impl ProtocolSummary {
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
        }
        Some(out)
    }

    /// The lines the text and Markdown reports show, without indentation.
    pub fn lines(&self) -> Vec<String> {
        let mut first = self.used.clone();
        if let Some(streams) = self.streams_per_connection {
            let _ = write!(
                first,
                ", {streams} stream{} per connection",
                if streams == 1 { "" } else { "s" }
            );
        }
        if let Some(depth) = self.pipeline {
            let _ = write!(
                first,
                " pipelining, up to {depth} requests in flight per connection"
            );
        }
        if let Some(s) = &self.requests_per_connection {
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
        if let Some(why) = &self.http2_fallback {
            lines.push(format!(
                "HTTP/2 not offered, so HTTP/1.1 was used (--http2-fallback): {why}"
            ));
        }
        if let Some(allowed) = self.server_max_concurrent_streams {
            lines.push(format!(
                "the server allowed {allowed} concurrent stream{} per connection \
                 (SETTINGS_MAX_CONCURRENT_STREAMS), fewer than --streams: requests waited \
                 for a free stream, the limit was never exceeded",
                if allowed == 1 { "" } else { "s" }
            ));
        }
        lines
    }
}

/// What carried a run's requests, as the text report says it under the load line and the
/// HTML page repeats it: the summary's lines; for a report older than the summary, what the
/// plan asked (HTTP/2 streams, pipelining); the Unix socket when there was one.
pub(crate) fn report_lines(r: &Report) -> Vec<String> {
    let s = &r.summary;
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let mut lines = Vec::new();
    if let Some(p) = &s.protocol {
        lines.extend(p.lines());
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

/// Markdown: each step's protocol lines, when any step has them.
pub(crate) fn render_markdown_section(o: &mut String, named: &[(String, &Report)]) {
    let rows: Vec<(&String, Vec<String>)> = named
        .iter()
        .filter_map(|(name, r)| {
            let mut lines = r
                .summary
                .protocol
                .as_ref()
                .map_or_else(Vec::new, |p| p.lines());
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
