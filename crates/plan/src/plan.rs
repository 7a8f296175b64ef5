//! [`Plan`]: the one normalized description of a run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::schedule::Profile;
use crate::target::Target;
use crate::text::{format_duration, parse_duration, redact_header_value};
use crate::websocket::WsSpec;

/// Default per-request timeout (wrk's is 2 s; long enough here not to hide slow servers).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What to send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestSpec {
    pub method: String,
    pub url: Target,
    /// Extra headers in the order given. `Host`, `Content-Length` and `Connection` are set by
    /// loadmark unless given here.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// Request body (empty: none). In JSON, UTF-8 text as a string, other bytes as numbers.
    #[serde(default, with = "body_text", skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "body_text::Repr")]
    pub body: Vec<u8>,
    /// False sends `Connection: close` and opens one connection per request.
    pub keep_alive: bool,
}

impl RequestSpec {
    /// True when a `Connection` header of the user's lists `close` (any case).
    pub fn says_close(&self) -> bool {
        self.headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("connection")
                && value
                    .split(',')
                    .any(|token| token.trim().eq_ignore_ascii_case("close"))
        })
    }

    /// Whether the method is idempotent (RFC 9110 §9.2.2), so a request that may not have
    /// reached the server can be sent again without doing its work twice.
    pub fn idempotent(&self) -> bool {
        matches!(
            self.method.as_str(),
            "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE"
        )
    }
}

/// When a run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// After this long (warm-up included); requests still in flight are reported as such.
    Duration(
        #[serde(with = "duration_text")]
        #[schemars(with = "String")]
        Duration,
    ),
    /// After exactly this many requests have ended (warm-up included).
    Requests(u64),
}

/// How load is generated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Load {
    /// Closed loop: each connection sends its next request when the previous one ended.
    Closed { connections: usize, threads: usize },
    /// Closed loop whose connection count follows a profile over time (k6's ramping VUs).
    Ramp {
        connections: Profile,
        threads: usize,
    },
    /// Open loop: requests arrive on a fixed schedule (requests per second over time),
    /// whatever the responses do; latency is measured from each request's intended time.
    Open {
        rate: Profile,
        /// The connection pool grows on demand up to this cap; a request due when every
        /// connection is busy and the cap is reached is dropped (and counted).
        max_connections: usize,
        threads: usize,
        /// Connections opened before the schedule starts (`-c` with `-R`, as wrk2 users type
        /// it); without it, estimated from the rate (see [`Load::preopen`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        connections: Option<usize>,
    },
}

/// The service time assumed to size an open-loop pool before any response: a loopback
/// service's (tens of µs), so 20,000 req/s opens one connection and 50,000 three. The pool
/// grows from there only while every connection waits on the server (issue 43: a 2 ms guess
/// opened 40 connections at 20,000 req/s for a server that needed one, and the acceptance
/// asks for at most twice what Little's law needs plus the thread count). `-c` opens more
/// up front for a slower server.
pub const PREOPEN_LATENCY_GUESS: Duration = Duration::from_micros(50);

impl Load {
    pub fn threads(&self) -> usize {
        match *self {
            Load::Closed { threads, .. }
            | Load::Ramp { threads, .. }
            | Load::Open { threads, .. } => threads,
        }
    }

    /// Open loop: connections to open before the schedule starts, so a server that keeps up
    /// never sees the first requests wait for connects (nor the pool grow in a storm of
    /// them). `-c` when given; otherwise enough for the first rate if each request took
    /// [`PREOPEN_LATENCY_GUESS`], at least 1. Never more than the cap.
    pub fn preopen(&self) -> usize {
        match self {
            Load::Open {
                rate,
                max_connections,
                connections,
                ..
            } => {
                let first = rate.stages.first().map_or(0.0, |s| s.from.max(s.to));
                let guess = (first * PREOPEN_LATENCY_GUESS.as_secs_f64()).ceil() as usize;
                connections.unwrap_or(guess.max(1)).min(*max_connections)
            }
            _ => 0,
        }
    }

    /// Connections this load may hold open at once.
    pub fn max_connections(&self) -> usize {
        match *self {
            Load::Closed { connections, .. } => connections,
            Load::Ramp {
                ref connections, ..
            } => connections.peak().ceil() as usize,
            Load::Open {
                max_connections, ..
            } => max_connections,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Timeouts {
    /// Per request, from its start to the last byte of its response.
    #[serde(with = "duration_text")]
    #[schemars(with = "String")]
    pub request: Duration,
    /// Per connection attempt (TCP connect and TLS handshake).
    #[serde(with = "duration_text")]
    #[schemars(with = "String")]
    pub connect: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            request: DEFAULT_TIMEOUT,
            connect: DEFAULT_TIMEOUT,
        }
    }
}

/// Whether TLS certificates are verified, against what, and who the client is.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TlsPolicy {
    /// Verify the server against the Mozilla roots; no client certificate.
    #[default]
    Verify,
    /// Accept any certificate (`--insecure`); always printed in the report.
    Insecure,
    /// A private CA and/or a client certificate (mutual TLS), as curl spells them.
    Files(TlsFiles),
}

/// PEM files for TLS: curl's `--cacert`, `--cert` and `--key`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct TlsFiles {
    /// CA certificates to trust instead of the Mozilla roots (`--cacert`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<std::path::PathBuf>,
    /// The client's certificate chain, for servers that require one (`--cert`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<std::path::PathBuf>,
    /// The client certificate's private key (`--key`; default: in the `--cert` file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<std::path::PathBuf>,
    /// Accept any server certificate (`--insecure`) while still presenting `cert`.
    #[serde(default)]
    pub insecure: bool,
}

impl TlsPolicy {
    /// Server certificates are not verified.
    pub fn is_insecure(&self) -> bool {
        match self {
            TlsPolicy::Verify => false,
            TlsPolicy::Insecure => true,
            TlsPolicy::Files(f) => f.insecure,
        }
    }
}

/// One run, validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    pub request: RequestSpec,
    pub load: Load,
    pub stop: Stop,
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Load that runs but stays out of the totals; whole seconds, so the series stays aligned.
    #[serde(with = "duration_text", default)]
    #[schemars(with = "String")]
    pub warmup: Duration,
    #[serde(default)]
    pub tls: TlsPolicy,
    /// More requests mixed with `request` by weight, and per-request templates (plan files).
    #[serde(default, skip_serializing_if = "Mix::says_nothing")]
    pub mix: Mix,
    /// A WebSocket run (`loadmark ws`): `request.url` is a ws:// or wss:// URL, connections
    /// are sessions, and this says what each session does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<WsSpec>,
    /// How requests travel: HTTP version, streams per connection, the socket. Absent in a
    /// plan written before HTTP/2 existed: HTTP/1.1 over TCP.
    #[serde(default, skip_serializing_if = "Protocol::is_default")]
    pub protocol: Protocol,
    /// A wrk Lua script (`-s FILE -- ARGS`) that shapes the requests; `request` then holds
    /// the `wrk` table's request after the script's `init()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<ScriptRef>,
    /// Response checks (`--check`, a plan's `checks:`), each counted pass/fail by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::check::Check>,
    /// A scenario (plan files' `scenario:`), as written: every iteration runs these steps
    /// against `request.url`'s origin; `Stop::Requests` counts iterations (issue 17).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<Vec<crate::scenario::ScenarioStepFile>>,
    /// Several scenarios at once (plan files' `scenarios:`), each with its own load, start
    /// and thresholds; `load` and `stop` then describe the whole run
    /// ([`Plan::whole_run_of`]) and `scenario` is empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<crate::scenarios::NamedScenario>,
    /// Scenarios: a cookie jar per virtual user (plans' `load.cookies`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cookies: bool,
}

/// Most concurrent streams one HTTP/2 connection may be asked to carry (`--streams`); RFC
/// 9113 suggests servers allow at least 100, and more than this only queues in the client.
pub const MAX_STREAMS: usize = 10_000;

/// Deepest `--pipeline`: more only grows one write and one read burst.
pub const MAX_PIPELINE: usize = 1024;

/// How requests travel, beside what they say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Protocol {
    /// HTTP/2 (`--http2`): over TLS it is negotiated with ALPN, over http:// it is spoken
    /// from the first byte (h2c with prior knowledge). Absent: HTTP/1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2>,
    /// Connect to this Unix domain socket instead of the URL's host and port (curl's
    /// `--unix-socket`); the URL still gives the Host header and the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_socket: Option<std::path::PathBuf>,
    /// HTTP/1.1 pipelining (`--pipeline P`): up to P requests in flight per connection,
    /// responses read in order (written together in a closed loop). Absent: one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<usize>,
    /// The proxy the run goes through (`-x`, or the environment as curl reads it); never
    /// written out (it may hold a password, and it belongs to the machine that runs the load).
    #[serde(skip)]
    pub proxy: Option<crate::proxy::Proxy>,
    /// `loadmark grpc` of a streaming method: how each call streams (issue 36).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<crate::grpc::GrpcStreaming>,
    /// gRPC calls: the longest response message accepted, in bytes (`loadmark grpc
    /// --max-recv-message-size`); a longer one ends its call as RESOURCE_EXHAUSTED.
    /// Absent: 4 MiB, gRPC's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_max_receive: Option<usize>,
    /// HTTP/3 over QUIC (`--http3`, issue 37): https:// only, ALPN `h3` on the URL's UDP
    /// port. Absent: TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<Http3>,
    /// TLS over TCP: the server name sent (SNI) and verified in the certificate, instead of
    /// the URL's host (`loadmark grpc --cname`, ghz's); the URL still says where to connect
    /// and what `:authority` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_server_name: Option<String>,
}

impl Protocol {
    pub fn is_default(&self) -> bool {
        *self == Protocol::default()
    }

    /// The protocol's name as reports print it (what was asked; a report's
    /// `summary.protocol.used` says what was spoken).
    pub fn name(&self) -> &'static str {
        match (self.http2, self.http3) {
            (_, Some(_)) => "HTTP/3",
            (Some(_), None) => "HTTP/2",
            (None, None) => "HTTP/1.1",
        }
    }

    /// Requests one connection carries at once: its streams, or 1.
    pub fn streams(&self) -> usize {
        match (self.http2, self.http3) {
            (_, Some(h3)) => h3.streams,
            (Some(h2), None) => h2.streams,
            (None, None) => 1,
        }
    }
}

/// HTTP/3 settings of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Http3 {
    /// Concurrent requests (bidirectional QUIC streams) per connection; a server that allows
    /// fewer (its initial_max_streams_bidi) makes the rest wait for a stream, never fail.
    pub streams: usize,
    /// `--http3-0rtt`: connections after the first resume a TLS session and send their first
    /// requests with the handshake (0-RTT); only safe methods (GET, HEAD, OPTIONS) go early,
    /// others wait for the handshake. The report counts them apart (early data is
    /// replayable).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zero_rtt: bool,
}

/// HTTP/2 settings of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Http2 {
    /// Concurrent streams per connection (h2load's `-m`, oha's `--http2-parallel`); a server
    /// that allows fewer (SETTINGS_MAX_CONCURRENT_STREAMS) is never asked for more.
    pub streams: usize,
    /// `--http2-fallback`: over TLS, a server that does not choose h2 with ALPN is loaded over
    /// HTTP/1.1 (the report says so) instead of refused. h2c (http://) has nothing to fall
    /// back from: prior knowledge either speaks HTTP/2 or fails.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fallback: bool,
}

/// The script a run used and the arguments its `init(args)` received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScriptRef {
    pub path: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

/// Several requests by weight, and templates expanded per request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Mix {
    /// Weight of `Plan::request` (0 counts as 1).
    #[serde(default)]
    pub weight: u32,
    /// Other requests and their weights, in the plan's order.
    #[serde(default)]
    pub others: Vec<(u32, RequestSpec)>,
    /// `{{rand_int A B}}`, `{{seq}}` and `{{csv column}}` in paths, header values and bodies
    /// are expanded per request.
    #[serde(default)]
    pub templated: bool,
    /// CSV file for `{{csv column}}`: its first line names the columns; rows go round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<std::path::PathBuf>,
    /// Who takes the next data row: each request, or (scenarios) each user or iteration.
    #[serde(default, skip_serializing_if = "DataPer::is_request")]
    pub per: DataPer,
    /// `loadmark grpc` with placeholders in `--data`: each rendered body (the request
    /// message as JSON) becomes the call's length-prefixed protobuf through this. Set by the
    /// command, never by a plan file.
    #[serde(skip)]
    #[schemars(skip)]
    pub encode_body: Option<crate::grpc::BodyEncoder>,
    /// What `encode_body` and the scenario steps' gRPC codecs are made from, for a process
    /// that gets the plan without them (`loadmark worker` under `--slurm` or Kubernetes).
    /// Set by `loadmark grpc` and `loadmark bench`, never by a plan file; left out of reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub grpc_schema: Option<crate::grpc::CarriedGrpcSchema>,
}

/// How data-file rows are assigned (plans' `data: {file, per}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DataPer {
    /// Each request takes the next row, going round.
    #[default]
    Request,
    /// Scenarios: virtual user k keeps row k (modulo the rows) for its life.
    User,
    /// Scenarios: iteration k of the run takes row k (modulo the rows).
    Iteration,
}

impl DataPer {
    pub fn is_request(&self) -> bool {
        *self == DataPer::Request
    }
}

impl Mix {
    /// One plain request, nothing to mix or expand, and no gRPC schema to carry: nothing a
    /// plan's JSON needs to say.
    pub fn says_nothing(&self) -> bool {
        self.others.is_empty() && !self.templated && self.grpc_schema.is_none()
    }
}

impl Plan {
    /// The same plan with secret header values masked, for reports and logs.
    pub fn redacted(&self) -> Plan {
        let mut plan = self.clone();
        for (name, value) in &mut plan.request.headers {
            *value = redact_header_value(name, value);
        }
        // A schema carried for srun's tasks is no part of what the run was: kilobytes of
        // descriptors in every report.
        plan.mix.grpc_schema = None;
        plan
    }
}

pub(crate) mod duration_text {
    use super::*;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text).map_err(serde::de::Error::custom)
    }

    /// The same text form for an optional duration.
    pub mod option {
        use super::*;

        pub fn serialize<S: serde::Serializer>(
            d: &Option<Duration>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => s.serialize_str(&format_duration(*d)),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: serde::Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Duration>, D::Error> {
            Option::<String>::deserialize(d)?
                .map(|text| parse_duration(&text).map_err(serde::de::Error::custom))
                .transpose()
        }
    }
}

mod body_text {
    use serde::{Deserialize, Serialize};

    /// UTF-8 text as a string, other bytes as numbers.
    #[derive(Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(untagged)]
    pub(super) enum Repr {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub fn serialize<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(b) {
            Ok(text) => Repr::Text(text.to_string()).serialize(s),
            Err(_) => Repr::Bytes(b.to_vec()).serialize(s),
        }
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Ok(match Repr::deserialize(d)? {
            Repr::Text(t) => t.into_bytes(),
            Repr::Bytes(b) => b,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            request: RequestSpec {
                method: "POST".into(),
                url: Target::parse("http://127.0.0.1:8080/echo").unwrap(),
                headers: vec![
                    ("Authorization".into(), "Bearer s3cret".into()),
                    ("Client-Id".into(), "abc".into()),
                ],
                body: b"{\"a\":1}".to_vec(),
                keep_alive: true,
            },
            load: Load::Closed {
                connections: 10,
                threads: 2,
            },
            stop: Stop::Duration(Duration::from_secs(30)),
            timeouts: Timeouts::default(),
            warmup: Duration::from_secs(5),
            tls: TlsPolicy::Verify,
            mix: Mix::default(),
            websocket: None,
            protocol: Default::default(),
            script: None,
            checks: Vec::new(),
            scenario: None,
            scenarios: Vec::new(),
            cookies: false,
        }
    }

    #[test]
    fn valid_plan_round_trips_json() {
        let p = plan();
        p.validate().unwrap();
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains("\"30s\""), "{json}");
        let back: Plan = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn redacts_secrets_only() {
        let r = plan().redacted();
        assert_eq!(r.request.headers[0].1, "<redacted>");
        assert_eq!(r.request.headers[1].1, "abc");
    }

    #[test]
    fn rejects_impossible_settings_naming_the_flag() {
        type Mutation = fn(&mut Plan);
        let cases: Vec<(Mutation, &str)> = vec![
            (
                |p| {
                    p.load = Load::Closed {
                        connections: 0,
                        threads: 1,
                    }
                },
                "--connections",
            ),
            (
                |p| {
                    p.load = Load::Closed {
                        connections: 1,
                        threads: 2,
                    }
                },
                "--threads",
            ),
            (|p| p.stop = Stop::Requests(0), "--requests"),
            (|p| p.warmup = Duration::from_secs(30), "--warmup"),
            (|p| p.warmup = Duration::from_millis(1500), "--warmup"),
            (|p| p.request.method = "GE T".into(), "--method"),
            (|p| p.timeouts.request = Duration::ZERO, "--timeout"),
        ];
        for (mutate, flag) in cases {
            let mut p = plan();
            mutate(&mut p);
            let err = p.validate().unwrap_err().to_string();
            assert!(err.starts_with(flag), "{flag}: {err}");
        }
    }
}
