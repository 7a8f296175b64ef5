//! [`GrpcStats`]: gRPC calls counted by their status code's name (issue 36), mergeable by
//! addition.
//!
//! A gRPC call that got an answer is a response (it keeps its latency); what it ended with is
//! its `grpc-status`, counted here by name with the first `grpc-message` of each code. Calls
//! that did not end with a status from the server are given the one a gRPC client would give
//! them (grpc-go's choices: a missing `grpc-status` is INTERNAL, a message over the size limit
//! RESOURCE_EXHAUSTED), and the message says so. Transport failures (a reset stream, a closed
//! connection, a timeout) stay errors of their kind, as for HTTP.

use serde::{Deserialize, Serialize};

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

/// Every status code a run's calls ended with, in code order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GrpcStats {
    pub codes: Vec<GrpcCode>,
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

    pub fn merge(&mut self, other: &GrpcStats) {
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
    }
}
