//! [`GrpcStats`]: gRPC calls counted by their status code's name (issue 36), mergeable by
//! addition.
//!
//! A gRPC call that got an answer is a response (it keeps its latency); what it ended with is
//! its `grpc-status`, counted here by name with the first `grpc-message` of each code. Calls
//! that did not end with a status from the server are given the one a gRPC client would give
//! them (grpc-go's choices: a missing `grpc-status` is INTERNAL, a message over the size limit
//! RESOURCE_EXHAUSTED), and the message says so. Transport failures (a reset stream, a closed
//! connection, a timeout) stay errors of their kind, as for HTTP.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::snapshot::{hist_base64, new_histogram, record_us};

/// The status codes of gRPC (`grpc/status.proto`), by number.
pub const GRPC_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A code's name: `UNAVAILABLE` for 14, `CODE_99` for one gRPC does not define.
pub fn grpc_code_name(code: u32) -> String {
    match GRPC_CODES.get(code as usize) {
        Some(name) => (*name).to_string(),
        None => format!("CODE_{code}"),
    }
}

/// The most characters of a `grpc-message` kept.
const MESSAGE_CHARS: usize = 200;

/// One status code's count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GrpcCode {
    /// The code's name, as `grpc/status.proto` spells it (`OK`, `UNAVAILABLE`, ...).
    pub name: String,
    pub code: u32,
    pub count: u64,
    /// The first `grpc-message` seen with it (absent when none came, as with OK).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_message: Option<String>,
}

/// Every status code a run's calls ended with, in code order, and the messages the calls
/// carried.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GrpcStats {
    pub codes: Vec<GrpcCode>,
    /// Request messages sent and response messages received whole, over every call that
    /// ended with a response (a unary call: 1 and 1).
    #[serde(default)]
    pub messages_sent: u64,
    #[serde(default)]
    pub messages_received: u64,
    /// Streaming runs only: calls loadmark ended itself and when response messages came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<Box<GrpcStreamStats>>,
    /// Calls counted under a status that got no answer: the status a gRPC client gives a
    /// passed deadline, a RST_STREAM or a lost connection. Each is an error of its kind too,
    /// so `failed` counts it once, as an error.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unanswered: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a streaming run measures beyond the calls' total latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GrpcStreamStats {
    /// Server streams loadmark cancelled as planned (RST_STREAM CANCEL after
    /// `--stream-call-count` messages or `--stream-call-duration`): complete calls by the
    /// plan's measure, with no `grpc-status` (they are in no code's count, and not failures).
    pub ended_by_client: u64,
    /// From the call's start to its first response message whole, µs.
    #[serde(with = "hist_base64")]
    #[schemars(with = "String")]
    pub first_message: Histogram<u64>,
    /// Between a response message and the one before in the same call, µs (messages read
    /// together are 0 apart).
    #[serde(with = "hist_base64")]
    #[schemars(with = "String")]
    pub message_gap: Histogram<u64>,
}

impl Default for GrpcStreamStats {
    fn default() -> Self {
        GrpcStreamStats {
            ended_by_client: 0,
            first_message: new_histogram(),
            message_gap: new_histogram(),
        }
    }
}

/// One call's figures, as the engine hands them over.
#[derive(Debug)]
pub struct GrpcCall<'a> {
    pub sent: u32,
    pub received: u32,
    pub ended_by_client: bool,
    /// Streaming runs only (`None` for a unary run's calls, or no message came).
    pub first_message_us: Option<u64>,
    pub gaps_us: &'a [u32],
}

impl GrpcStats {
    /// Counts one call that ended with `code`; `message` is asked for only when it is the
    /// first of its code.
    pub fn record(&mut self, code: u32, message: impl FnOnce() -> Option<String>) {
        let at = match self.codes.binary_search_by_key(&code, |c| c.code) {
            Ok(i) => i,
            Err(i) => {
                self.codes.insert(
                    i,
                    GrpcCode {
                        name: grpc_code_name(code),
                        code,
                        count: 0,
                        first_message: None,
                    },
                );
                i
            }
        };
        let slot = &mut self.codes[at];
        slot.count += 1;
        if slot.first_message.is_none() && slot.count == 1 {
            slot.first_message = message().map(|m| m.chars().take(MESSAGE_CHARS).collect());
        }
    }

    /// Counts one call's messages and, for a streaming run, when they came.
    pub fn record_call(&mut self, call: &GrpcCall<'_>, streaming: bool) {
        self.messages_sent += u64::from(call.sent);
        self.messages_received += u64::from(call.received);
        if streaming {
            let streams = self.streams.get_or_insert_with(Default::default);
            streams.ended_by_client += u64::from(call.ended_by_client);
            if let Some(us) = call.first_message_us {
                record_us(&mut streams.first_message, us);
            }
            for gap in call.gaps_us {
                record_us(&mut streams.message_gap, u64::from(*gap));
            }
        }
    }

    /// A call that got no answer (an error of `kind` too) counted under `code`.
    pub fn record_unanswered(&mut self, code: u32, message: impl FnOnce() -> Option<String>) {
        self.unanswered += 1;
        self.record(code, message);
    }

    /// Calls that ended with a status other than OK after an answer (the others are errors).
    pub fn answered_not_ok(&self) -> u64 {
        self.not_ok().saturating_sub(self.unanswered)
    }

    /// Every call: those with a status (answered or not) and those loadmark ended.
    pub fn calls(&self) -> u64 {
        self.codes.iter().map(|c| c.count).sum::<u64>()
            + self.streams.as_ref().map_or(0, |s| s.ended_by_client)
    }

    pub fn merge(&mut self, other: &GrpcStats) {
        self.unanswered += other.unanswered;
        self.messages_sent += other.messages_sent;
        self.messages_received += other.messages_received;
        if let Some(theirs) = &other.streams {
            let mine = self.streams.get_or_insert_with(Default::default);
            mine.ended_by_client += theirs.ended_by_client;
            mine.first_message
                .add(&theirs.first_message)
                .expect("same histogram bounds");
            mine.message_gap
                .add(&theirs.message_gap)
                .expect("same histogram bounds");
        }
        for theirs in &other.codes {
            match self.codes.binary_search_by_key(&theirs.code, |c| c.code) {
                Ok(i) => {
                    let mine = &mut self.codes[i];
                    mine.count += theirs.count;
                    if mine.first_message.is_none() {
                        mine.first_message = theirs.first_message.clone();
                    }
                }
                Err(i) => self.codes.insert(i, theirs.clone()),
            }
        }
    }

    /// Calls counted under `name` (`OK`, `UNAVAILABLE`, ...).
    pub fn count(&self, name: &str) -> u64 {
        self.codes
            .iter()
            .filter(|c| c.name == name)
            .map(|c| c.count)
            .sum()
    }

    /// Calls that ended with a status other than OK: failed calls, as non-2xx responses are.
    pub fn not_ok(&self) -> u64 {
        self.codes
            .iter()
            .filter(|c| c.code != 0)
            .map(|c| c.count)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_counted_by_name_with_their_first_message_and_merge_by_addition() {
        let mut a = GrpcStats::default();
        a.record(14, || Some("down".into()));
        a.record(0, || None);
        a.record(14, || Some("second".into()));
        let mut b = GrpcStats::default();
        b.record(4, || Some("slow".into()));
        b.record(14, || Some("other".into()));
        a.merge(&b);
        let names: Vec<&str> = a.codes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["OK", "DEADLINE_EXCEEDED", "UNAVAILABLE"]);
        assert_eq!(a.count("UNAVAILABLE"), 3);
        assert_eq!(a.codes[2].first_message.as_deref(), Some("down"));
        assert_eq!(a.not_ok(), 4);
        assert_eq!(grpc_code_name(99), "CODE_99");
        // A call without an answer has a status but is an error, not an answered failure.
        b.record_unanswered(4, || Some("loadmark: no answer in time".into()));
        a.merge(&b);
        assert_eq!((a.unanswered, a.count("DEADLINE_EXCEEDED")), (1, 3));
        assert_eq!((a.not_ok(), a.answered_not_ok()), (7, 6));
        assert_eq!(a.calls(), 8);
    }

    #[test]
    fn a_streaming_runs_messages_and_timings_add_up_and_calls_ended_by_loadmark_are_no_failures() {
        let mut a = GrpcStats::default();
        let call = |ended_by_client| GrpcCall {
            sent: 1,
            received: 3,
            ended_by_client,
            first_message_us: Some(200),
            gaps_us: &[50, 0],
        };
        a.record_call(&call(true), true);
        let mut b = GrpcStats::default();
        b.record_call(&call(false), true);
        b.record(0, || None);
        // A unary run's call keeps no timings.
        let mut unary = GrpcStats::default();
        unary.record_call(&call(false), false);
        assert!(unary.streams.is_none());
        a.merge(&b);
        a.merge(&unary);
        assert_eq!((a.messages_sent, a.messages_received), (3, 9));
        let streams = a.streams.as_deref().unwrap();
        assert_eq!(streams.ended_by_client, 1);
        assert_eq!(streams.first_message.len(), 2);
        assert_eq!(streams.message_gap.len(), 4);
        assert_eq!(a.calls(), 2, "one OK, one ended by loadmark");
        assert_eq!(a.not_ok(), 0);
    }
}
