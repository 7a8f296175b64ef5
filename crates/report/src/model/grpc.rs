//! The gRPC part of a report (issue 36): the calls' messages both ways, per call, and for a
//! streaming run, the calls loadmark ended itself and when response messages came. Status
//! codes by name stay in the totals (`totals.grpc.codes`), where the text report reads them.
//!
//! Part of the model: imports `model` siblings and `units` only, never a renderer.

use serde::{Deserialize, Serialize};

use loadmark_metrics::{Distribution, GrpcStats};

/// Messages of a gRPC run's calls, per call, and a streaming run's timings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GrpcSummary {
    /// Calls that ended with a response: with a `grpc-status`, or ended by loadmark.
    pub calls: u64,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub messages_sent_per_call: f64,
    pub messages_received_per_call: f64,
    /// Streaming runs only: server streams loadmark cancelled as planned (after
    /// `--stream-call-count` messages or `--stream-call-duration`); they have no
    /// `grpc-status` and are not failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by_client: Option<u64>,
    /// Streaming runs only: from a call's start to its first response message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_message: Option<Distribution>,
    /// Streaming runs only: between a response message and the one before in its call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_gap: Option<Distribution>,
}

impl GrpcSummary {
    pub fn new(g: &GrpcStats) -> Self {
        let calls = g.calls();
        let per_call = |n: u64| {
            if calls > 0 {
                n as f64 / calls as f64
            } else {
                0.0
            }
        };
        let streams = g.streams.as_deref();
        GrpcSummary {
            calls,
            messages_sent: g.messages_sent,
            messages_received: g.messages_received,
            messages_sent_per_call: per_call(g.messages_sent),
            messages_received_per_call: per_call(g.messages_received),
            ended_by_client: streams.map(|s| s.ended_by_client),
            first_message: streams.map(|s| Distribution::of(&s.first_message)),
            message_gap: streams.map(|s| Distribution::of(&s.message_gap)),
        }
    }
}
