//! The closed list of ways a request can fail before a complete response arrived.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a request failed. Non-2xx/3xx responses are not errors of this list: they are
/// responses, counted by status code (see [`crate::StatusCounts`]).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The TCP connection could not be opened: refused, unreachable, DNS failure, or the
    /// connect timeout passed. Usually the server is down or its accept queue is full.
    Connect,
    /// The TLS handshake failed: certificate not trusted (use `--insecure` for test servers),
    /// wrong name, or protocol mismatch.
    Tls,
    /// Writing the request failed: the server reset or closed the connection.
    Write,
    /// Reading the response failed: reset, or the connection ended before the response was
    /// complete.
    Read,
    /// No complete response within `--timeout`.
    Timeout,
    /// The server sent bytes that are not a valid HTTP/1.1 response (bad status line, bad
    /// chunk size, headers past the limit, an unsolicited response, ...).
    Protocol,
    /// A local resource ran out: too many open files (EMFILE) or no free ephemeral port.
    /// Raise `ulimit -n` or use fewer connections.
    Resource,
    /// WebSocket: the upgrade was not accepted: the server answered with a status other
    /// than 101, or without the `Sec-WebSocket-Accept` the key calls for. Check the path.
    Handshake,
    /// WebSocket: the server ended a session before loadmark did (a Close frame, or the
    /// connection dropped without one). The close code, when sent, is counted too.
    Closed,
    /// A request script (`-s`, wrk's Lua API) failed: a Lua runtime error in `request()`,
    /// `response()` or `delay()`, or a `request()` that returned no valid HTTP request. The
    /// example names the script's line.
    Script,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::Connect,
        ErrorKind::Tls,
        ErrorKind::Write,
        ErrorKind::Read,
        ErrorKind::Timeout,
        ErrorKind::Protocol,
        ErrorKind::Resource,
        ErrorKind::Handshake,
        ErrorKind::Closed,
        ErrorKind::Script,
    ];

    /// The lower-case name used in reports and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Tls => "tls",
            ErrorKind::Write => "write",
            ErrorKind::Read => "read",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Resource => "resource",
            ErrorKind::Handshake => "handshake",
            ErrorKind::Closed => "closed",
            ErrorKind::Script => "script",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The count of one error kind and the first message seen, so a report can show an example.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorStat {
    pub count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_example: Option<String>,
}

/// Counts per [`ErrorKind`]; fixed size, no allocation after the first example of each kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    stats: [ErrorStat; ErrorKind::ALL.len()],
}

impl ErrorCounts {
    /// Counts one error; the message is only rendered for the first of its kind.
    pub fn record(&mut self, kind: ErrorKind, detail: &dyn fmt::Display) {
        let stat = &mut self.stats[kind.index()];
        stat.count += 1;
        if stat.first_example.is_none() {
            stat.first_example = Some(detail.to_string());
        }
    }

    pub fn get(&self, kind: ErrorKind) -> &ErrorStat {
        &self.stats[kind.index()]
    }

    pub fn total(&self) -> u64 {
        self.stats.iter().map(|s| s.count).sum()
    }

    /// Kinds with a nonzero count, in report order.
    pub fn nonzero(&self) -> impl Iterator<Item = (ErrorKind, &ErrorStat)> {
        ErrorKind::ALL
            .iter()
            .map(move |&k| (k, self.get(k)))
            .filter(|(_, s)| s.count > 0)
    }

    /// Adds `other` into `self`. The first example kept is `self`'s when it has one, so merging
    /// in time order keeps the earliest example.
    pub fn merge(&mut self, other: &ErrorCounts) {
        for (mine, theirs) in self.stats.iter_mut().zip(other.stats.iter()) {
            mine.count += theirs.count;
            if mine.first_example.is_none() {
                mine.first_example.clone_from(&theirs.first_example);
            }
        }
    }
}

/// In JSON: an object from error kind to its count and first example, kinds with no errors
/// left out.
impl schemars::JsonSchema for ErrorCounts {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ErrorCounts".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let stat = g.subschema_for::<ErrorStat>();
        let kinds: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        schemars::json_schema!({
            "type": "object",
            "propertyNames": { "enum": kinds },
            "additionalProperties": stat,
        })
    }
}

impl Serialize for ErrorCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for (kind, stat) in self.nonzero() {
            map.serialize_entry(&kind, stat)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ErrorCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<ErrorKind, ErrorStat>::deserialize(d)?;
        let mut counts = ErrorCounts::default();
        for (kind, stat) in map {
            counts.stats[kind.index()] = stat;
        }
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_first_example_and_counts() {
        let mut c = ErrorCounts::default();
        c.record(ErrorKind::Timeout, &"first");
        c.record(ErrorKind::Timeout, &"second");
        c.record(ErrorKind::Connect, &"refused");
        assert_eq!(c.get(ErrorKind::Timeout).count, 2);
        assert_eq!(
            c.get(ErrorKind::Timeout).first_example.as_deref(),
            Some("first")
        );
        assert_eq!(c.total(), 3);
        let kinds: Vec<_> = c.nonzero().map(|(k, _)| k).collect();
        assert_eq!(kinds, vec![ErrorKind::Connect, ErrorKind::Timeout]);
    }

    #[test]
    fn merge_adds_and_round_trips_json() {
        let mut a = ErrorCounts::default();
        a.record(ErrorKind::Read, &"reset");
        let mut b = ErrorCounts::default();
        b.record(ErrorKind::Read, &"eof");
        b.record(ErrorKind::Protocol, &"bad status line");
        a.merge(&b);
        assert_eq!(a.get(ErrorKind::Read).count, 2);
        assert_eq!(
            a.get(ErrorKind::Read).first_example.as_deref(),
            Some("reset")
        );
        let json = serde_json::to_string(&a).unwrap();
        assert!(json.contains("\"protocol\""), "{json}");
        let back: ErrorCounts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
    }
}
