//! [`Snapshot`]: everything measured over some span of time, mergeable by addition.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::error_kind::ErrorCounts;
use crate::websocket::WsStats;

/// The largest value a histogram holds, in microseconds (one hour). Longer values are clamped
/// to it, never dropped, so counts stay exact.
pub const HISTOGRAM_MAX_US: u64 = 3_600_000_000;

/// Where a new histogram's range starts to end: 16.4 ms (5 KiB of counts).
const INITIAL_HIGH_US: u64 = 16_383;

/// A histogram of durations in microseconds, 1 µs to 1 h ([`record_us`] clamps), 3 significant
/// digits, whose counts grow with the largest value recorded. A histogram sized for an hour up
/// front is 188 KB of counts that its constructor writes (zeros) in full, and a run holds a
/// dozen of them at a second's turn; most seconds see values below a few milliseconds. The
/// layout of the counts depends only on the lowest value and the digits, so histograms of any
/// current size add to each other exactly.
pub fn new_histogram() -> Histogram<u64> {
    let mut h =
        Histogram::new_with_bounds(1, INITIAL_HIGH_US, 3).expect("constant bounds are valid");
    h.auto(true);
    h
}

/// Records a duration in µs, clamped to [`HISTOGRAM_MAX_US`] (counted, never dropped).
#[inline]
pub fn record_us(h: &mut Histogram<u64>, us: u64) {
    // `record` grows the counts (auto-resize); `saturating_record` would clamp to the current
    // size instead. It fails only if the counts cannot grow, where clamping is all there is.
    let us = us.min(HISTOGRAM_MAX_US);
    if h.record(us).is_err() {
        h.saturating_record(us);
    }
}

/// Responses counted by status code (100..=999; anything else is a protocol error earlier).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCounts {
    counts: Vec<u64>,
}

impl Default for StatusCounts {
    fn default() -> Self {
        StatusCounts {
            counts: vec![0; 1000],
        }
    }
}

impl StatusCounts {
    pub fn record(&mut self, status: u16) {
        if let Some(slot) = self.counts.get_mut(status as usize) {
            *slot += 1;
        }
    }

    pub fn get(&self, status: u16) -> u64 {
        self.counts.get(status as usize).copied().unwrap_or(0)
    }

    /// Nonzero codes in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(code, &n)| (code as u16, n))
    }

    /// Count of responses whose status is in class `class` (1 for 1xx ... 5xx).
    pub fn class(&self, class: u16) -> u64 {
        let lo = (class * 100) as usize;
        self.counts[lo..lo + 100].iter().sum()
    }

    /// Responses that are not 2xx or 3xx: reported as failures next to transport errors.
    pub fn not_success(&self) -> u64 {
        self.total() - self.class(2) - self.class(3)
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn merge(&mut self, other: &StatusCounts) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }
}

/// In JSON: an object from status code (as a string) to its count, codes never seen left out.
impl schemars::JsonSchema for StatusCounts {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StatusCounts".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "propertyNames": { "pattern": "^[0-9]{1,3}$" },
            "additionalProperties": { "type": "integer", "minimum": 0 },
        })
    }
}

impl Serialize for StatusCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let map: BTreeMap<String, u64> = self.iter().map(|(c, n)| (c.to_string(), n)).collect();
        map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for StatusCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, u64>::deserialize(d)?;
        let mut counts = StatusCounts::default();
        for (code, n) in map {
            let code: u16 = code
                .parse()
                .ok()
                .filter(|c| *c < 1000)
                .ok_or_else(|| serde::de::Error::custom(format!("bad status code {code:?}")))?;
            counts.counts[code as usize] = n;
        }
        Ok(counts)
    }
}

/// Everything measured over a span: a second of one worker, or a whole run of all workers.
///
/// Two snapshots add exactly ([`Snapshot::merge`]); percentiles are always read from the
/// merged histograms, never averaged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Snapshot {
    /// Responses received, any status.
    pub responses: u64,
    /// Requests that failed without a complete response, by kind.
    pub errors: ErrorCounts,
    /// Responses by status code.
    pub status: StatusCounts,
    /// Bytes read from the server, every one that crossed the connection (wrk's
    /// "Transfer"): HTTP/1.1 status lines, headers and bodies; HTTP/2 frames with their
    /// 9-byte headers, HPACK blocks, padding and control frames (SETTINGS, PING,
    /// WINDOW_UPDATE, GOAWAY, RST_STREAM); WebSocket frames and the upgrade. Over TLS, the
    /// bytes of the protocol above TLS (TLS records and handshakes are not counted).
    pub bytes_read: u64,
    /// Bytes written, counted as `bytes_read` is (requests, HTTP/2's connection preface and
    /// frames, WebSocket frames with their masks and the upgrade request).
    pub bytes_written: u64,
    /// Connections opened (TCP connects that succeeded).
    pub connections_opened: u64,
    /// Open loop: requests that were due but not sent, because no connection was free and
    /// the connection cap was reached (k6's dropped iterations). Never silently skipped.
    #[serde(default)]
    pub dropped: u64,
    /// Requests sent a second time on a new connection because a reused one closed before
    /// any response byte (idempotent methods only). Each is still one request.
    #[serde(default)]
    pub retries: u64,
    /// Latency of responses, µs: from the request's start (first byte written, or in open
    /// loop its intended send time) to the last byte of the response. Excludes connecting.
    #[serde(with = "hist_base64")]
    #[schemars(with = "String")]
    pub latency: Histogram<u64>,
    /// Time to first byte, µs: from the first byte written to the first byte read.
    #[serde(with = "hist_base64")]
    #[schemars(with = "String")]
    pub ttfb: Histogram<u64>,
    /// TCP (and TLS) connect time of each new connection, µs.
    #[serde(with = "hist_base64")]
    #[schemars(with = "String")]
    pub connect: Histogram<u64>,
    /// Open loop only, µs: service time, from the first byte written to the last byte received
    /// (what a closed-loop tool calls latency). `service_time` in JSON, as in the summary
    /// (`service` in reports of schema 1).
    #[serde(with = "hist_base64", rename = "service_time", alias = "service")]
    #[schemars(with = "String")]
    pub service: Histogram<u64>,
    /// Open loop only, µs: schedule lag, from the intended send time to the first byte
    /// written. Large values mean the client or the connection pool could not keep up.
    /// `schedule_lag` in JSON, as in the summary (`lag` in reports of schema 1).
    #[serde(with = "hist_base64", rename = "schedule_lag", alias = "lag")]
    #[schemars(with = "String")]
    pub lag: Histogram<u64>,
    /// WebSocket runs only: sessions, messages, pings and closes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<Box<WsStats>>,
    /// Runs with checks only: passes and failures by check name (issue 17).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<Box<crate::checks::CheckStats>>,
    /// Scenario runs only: iterations and each step's own figures (issue 17).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<Box<crate::scenario::ScenarioStats>>,
    /// Plans with several scenarios at once (`scenarios:`): each one's figures, by name, in
    /// the plan's order; the fields above hold the whole run's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<crate::scenario::ScenarioStats>,
    /// Open loop only: why its connection pool opened connections (issue 43).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolCounts>,
    /// gRPC runs only: calls by status code name (issue 36).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<Box<crate::grpc::GrpcStats>>,
}

/// An open loop's connection pool over a run: why connections were opened, how far the pool
/// grew and what it closed. A connection opened for none of these reasons (see
/// [`PoolCounts::reopened`]) replaced one that the server closed or that failed.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct PoolCounts {
    /// Opened before the schedule started (`-c`, or estimated from the rate).
    pub preopened: u64,
    /// Opened because a request was due while every connection waited on the server.
    pub grown: u64,
    /// Closed after a second unused, the pool shrinking back.
    pub closed_idle: u64,
    /// The most connections open at once: each load thread's peak, added up.
    pub peak: u64,
}

impl PoolCounts {
    pub fn merge(&mut self, other: &PoolCounts) {
        self.preopened += other.preopened;
        self.grown += other.grown;
        self.closed_idle += other.closed_idle;
        self.peak += other.peak;
    }

    /// Of `opened` connections in all, those that replaced a connection the server closed
    /// (or that failed), rather than adding to the pool.
    pub fn reopened(&self, opened: u64) -> u64 {
        opened.saturating_sub(self.preopened + self.grown)
    }
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            responses: 0,
            errors: ErrorCounts::default(),
            status: StatusCounts::default(),
            bytes_read: 0,
            bytes_written: 0,
            connections_opened: 0,
            dropped: 0,
            retries: 0,
            latency: new_histogram(),
            ttfb: new_histogram(),
            connect: new_histogram(),
            service: new_histogram(),
            lag: new_histogram(),
            websocket: None,
            checks: None,
            scenario: None,
            scenarios: Vec::new(),
            pool: None,
            grpc: None,
        }
    }
}

impl Snapshot {
    /// Requests that ended (a response or an error).
    pub fn completed(&self) -> u64 {
        self.responses + self.errors.total()
    }

    /// Requests that failed: transport errors plus non-2xx/3xx responses.
    pub fn failed(&self) -> u64 {
        // A gRPC call without an answer is already among the errors.
        let grpc = self.grpc.as_ref().map_or(0, |g| g.answered_not_ok());
        self.errors.total() + self.status.not_success() + grpc
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &Snapshot) {
        self.responses += other.responses;
        self.errors.merge(&other.errors);
        self.status.merge(&other.status);
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        self.connections_opened += other.connections_opened;
        self.dropped += other.dropped;
        self.retries += other.retries;
        let pairs = [
            (&mut self.latency, &other.latency),
            (&mut self.ttfb, &other.ttfb),
            (&mut self.connect, &other.connect),
            (&mut self.service, &other.service),
            (&mut self.lag, &other.lag),
        ];
        for (mine, theirs) in pairs {
            // Same bounds on both sides, so addition cannot fail.
            mine.add(theirs).expect("same histogram bounds");
        }
        if let Some(theirs) = &other.pool {
            self.pool.get_or_insert_with(Default::default).merge(theirs);
        }
        if let Some(theirs) = &other.grpc {
            (self.grpc.get_or_insert_with(Default::default)).merge(theirs);
        }
        if let Some(theirs) = &other.checks {
            self.checks
                .get_or_insert_with(Default::default)
                .merge(theirs);
        }
        if let Some(theirs) = &other.scenario {
            self.scenario
                .get_or_insert_with(Default::default)
                .merge(theirs);
        }
        crate::scenario::merge_named(&mut self.scenarios, &other.scenarios);
        if let Some(theirs) = &other.websocket {
            self.websocket
                .get_or_insert_with(Default::default)
                .merge(theirs);
        }
    }
}

/// A histogram in a saved result could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum HistogramDecodeError {
    /// The text is not base64: the file was edited or truncated.
    #[error("histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// The bytes are not an HdrHistogram V2 (deflate) encoding.
    #[error("histogram is not a valid HdrHistogram V2 encoding: {0}")]
    Decode(String),
}

/// Histograms travel as HdrHistogram V2 compressed, base64: the format every HdrHistogram
/// implementation reads, so results can be merged later by any tool.
pub mod hist_base64 {
    use super::*;

    pub fn encode(h: &Histogram<u64>) -> String {
        let mut buf = Vec::new();
        V2DeflateSerializer::new()
            .serialize(h, &mut buf)
            .expect("serializing to memory cannot fail");
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    pub fn decode(text: &str) -> Result<Histogram<u64>, HistogramDecodeError> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(text)?;
        let decoded: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| HistogramDecodeError::Decode(format!("{e:?}")))?;
        // Re-home into our fixed bounds so every histogram adds to every other.
        let mut h = new_histogram();
        h.add(&decoded)
            .map_err(|e| HistogramDecodeError::Decode(format!("{e:?}")))?;
        Ok(h)
    }

    pub fn serialize<S: serde::Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(h))
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
        let text = String::deserialize(d)?;
        decode(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn histograms_grow_with_their_values_and_still_add_exactly() {
        let mut small = new_histogram();
        record_us(&mut small, 250);
        let mut grown = new_histogram();
        record_us(&mut grown, 250);
        record_us(&mut grown, 42_000_000); // 42 s: past the first size, counted as it is
        record_us(&mut grown, u64::MAX); // past an hour: clamped, still counted
        assert!(grown.len() == 3 && small.len() == 1);
        assert!(grown.max() >= 3_600_000_000 && grown.max() <= 3_604_000_000);
        let mut sum = new_histogram();
        sum.add(&small).unwrap();
        sum.add(&grown).unwrap();
        let mut other_order = new_histogram();
        other_order.add(&grown).unwrap();
        other_order.add(&small).unwrap();
        assert_eq!(sum, other_order);
        assert_eq!(sum.len(), 4);
        assert_eq!(sum.count_at(250), 2);
        assert_eq!(sum.value_at_quantile(0.6), grown.value_at_quantile(0.4));
        // A grown histogram survives the report's encoding.
        let back = hist_base64::decode(&hist_base64::encode(&grown)).unwrap();
        assert_eq!(back, grown);
        // And a small one stays small: what recording in the run's hot path allocates.
        assert!(small.distinct_values() < 8 * 1024);
    }

    fn snapshot_with(values: &[u64], status: u16) -> Snapshot {
        let mut s = Snapshot::default();
        for &v in values {
            for h in [
                &mut s.latency,
                &mut s.ttfb,
                &mut s.connect,
                &mut s.service,
                &mut s.lag,
            ] {
                h.record(v).unwrap();
            }
            s.dropped += 1;
            s.responses += 1;
            s.status.record(status);
        }
        s
    }

    #[test]
    fn merge_equals_one_histogram_of_all_samples() {
        let a = snapshot_with(&[10, 20, 30, 4000], 200);
        let b = snapshot_with(&[15, 25, 900_000], 503);
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, ba, "merge is order independent");
        let all = snapshot_with(&[10, 20, 30, 4000, 15, 25, 900_000], 200);
        for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(
                ab.latency.value_at_quantile(q),
                all.latency.value_at_quantile(q)
            );
        }
        for (merged, single) in [
            (&ab.ttfb, &all.ttfb),
            (&ab.connect, &all.connect),
            (&ab.service, &all.service),
            (&ab.lag, &all.lag),
        ] {
            assert_eq!(merged.len(), single.len(), "every histogram is merged");
            assert_eq!(merged.max(), single.max());
        }
        assert_eq!(ab.dropped, 7);
        assert_eq!(ab.responses, 7);
        assert_eq!(ab.status.class(5), 3);
        assert_eq!(ab.status.not_success(), 3);
        assert_eq!(ab.failed(), 3);
    }

    #[test]
    fn json_round_trip_keeps_histograms_exact() {
        let mut s = snapshot_with(&[1, 2, 3, 1_000, 3_599_999_999], 200);
        s.errors
            .record(ErrorKind::Timeout, &"no response within 10s");
        s.connect.record(250).unwrap();
        let json = serde_json::to_string(&s).unwrap();
        let back: Snapshot = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.latency.len(), 5);
    }

    #[test]
    fn bad_histogram_text_is_an_error() {
        assert!(hist_base64::decode("not base64 !!").is_err());
        assert!(hist_base64::decode("AAAA").is_err());
    }

    #[test]
    fn huge_latency_is_clamped_not_lost() {
        let mut h = new_histogram();
        record_us(&mut h, u64::MAX);
        assert_eq!(h.len(), 1);
        assert!(h.max() >= HISTOGRAM_MAX_US - HISTOGRAM_MAX_US / 1000);
    }
}
