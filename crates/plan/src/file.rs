//! The plan file: one YAML document that reproduces a whole benchmark (targets, what to send,
//! how hard, sweeps, comparisons, server launch and monitoring).
//!
//! These types mirror the YAML one to one (unknown keys are refused), hold durations and
//! rates as the text the user wrote, and are turned into validated [`crate::Plan`]s, one per
//! step, by [`crate::PlanFile::steps`]. `loadmark schema` prints their JSON Schema.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A benchmark plan file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    /// Title of the benchmark document.
    #[serde(default)]
    pub name: Option<String>,
    /// A paragraph for the top of the report.
    #[serde(default)]
    pub description: Option<String>,
    /// Processes that stay up while the targets that need them run and never receive load:
    /// backends, databases, caches. Each starts (in `depends_on` order) before the first
    /// step that needs it and stops after the last; one that no target or service depends
    /// on is needed by every step. Monitored like targets when `monitor` is set.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub services: IndexMap<String, ServiceFile>,
    /// The systems under test, by name, in the order they appear in tables.
    pub targets: IndexMap<String, TargetFile>,
    /// What each request sends.
    #[serde(default)]
    pub request: RequestFile,
    /// Several requests instead of `request`, mixed by their `weight`. Paths, header values
    /// and bodies may hold `{{rand_int A B}}`, `{{seq}}` and `{{csv column}}`.
    #[serde(default)]
    pub requests: Vec<RequestFile>,
    /// A CSV file (first line: column names) whose rows feed `{{csv column}}`; relative to
    /// the plan file. `data: users.csv` gives one row per request, going round (a scenario:
    /// one per user); `data: {file: users.csv, per: user}` says how rows are assigned:
    /// `request`, or in a scenario `user` (user k keeps row k for its life) or `iteration`
    /// (iteration k takes row k), going round when the rows run out.
    #[serde(default)]
    pub data: Option<DataFile>,
    /// A WebSocket scenario instead of HTTP requests (`loadmark ws`): the targets' URLs are
    /// ws:// or wss://, `request.path` and `request.headers` shape the upgrade request,
    /// `load.connections` are sessions and `load.requests` counts messages.
    #[serde(default)]
    pub websocket: Option<WebSocketFile>,
    /// How hard, and for how long, each step loads its target.
    #[serde(default)]
    pub load: LoadFile,
    /// Parameters to vary: one run per combination, in order.
    #[serde(default)]
    pub sweep: SweepFile,
    /// Pause between two steps, e.g. `2s`, so the target settles.
    #[serde(default)]
    pub pause: Option<String>,
    /// Side-by-side tables built from the steps' results.
    #[serde(default)]
    pub compare: Vec<CompareFile>,
    /// Sample launched or attached servers' CPU, memory, threads and fds.
    #[serde(default)]
    pub monitor: Option<MonitorFile>,
    /// How the document shows each step: the step table's columns, or a known tool's
    /// layout.
    #[serde(default, skip_serializing_if = "ReportFile::is_default")]
    pub report: ReportFile,
    /// Pass/fail conditions checked on every step, as on the command line, e.g.
    /// `[p99<50ms, errors<1%, rps>10000]`; `loadmark bench` exits 3 when one fails.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<String>,
    /// Checks on every response, e.g. `[status == 200, 'body contains "ok"', 'items: json
    /// /items length > 0']`, each counted pass/fail by name (see `loadmark run --help`).
    /// Usable in thresholds: `checks>99%`, `check:items>99.9%`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::check::Check>,
    /// A user journey instead of one request: each virtual user (`load.users`) runs these
    /// steps in order, again and again (`load.duration` or `load.iterations`), or iterations
    /// start on a schedule (`load.iterations_per_second`). Each request step is measured on
    /// its own; see the README's "Scenarios".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<Vec<crate::scenario::ScenarioStepFile>>,
    /// Several journeys at once, by name (k6's `scenarios`): each with its own `steps`, its
    /// own `load` (users, stages, iterations_per_second, duration, iterations), a `start`
    /// offset and its own `thresholds`, against the same targets, on the same threads, in
    /// one run and one report with a section per scenario. Instead of `scenario:`.
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    pub scenarios: crate::scenarios::NamedScenarioFiles,
    /// Where the scenario's `grpc:` steps find their methods: `{proto: [greeter.proto],
    /// import_paths: [protos]}` or `{protoset: api.protoset}`, relative to the plan file;
    /// absent, the target's server reflection is asked (once, before the load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<crate::grpc::GrpcSchemaFile>,
    /// Every step a capacity search instead of one run: the highest open-loop rate at which
    /// the step's target meets every objective, e.g. `{slo: ['p99 < 5ms'], from: 1000, to:
    /// 100000}` (the same words as `loadmark find`'s flags). The bundle gives each step's
    /// `capacity`; the step table and `compare: {metric: capacity}` show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find: Option<crate::file_find::FindFile>,
}

/// The `data:` file: its path, or its path and how rows are assigned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
pub enum DataFile {
    Path(String),
    Spec {
        /// The CSV file, relative to the plan file.
        file: String,
        /// Who takes the next row: `request` [default without a scenario], `user` [default
        /// in a scenario] or `iteration` (scenarios).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        per: Option<crate::plan::DataPer>,
    },
}

impl DataFile {
    pub fn file(&self) -> &str {
        match self {
            DataFile::Path(p) | DataFile::Spec { file: p, .. } => p,
        }
    }

    pub fn per(&self) -> Option<crate::plan::DataPer> {
        match self {
            DataFile::Path(_) => None,
            DataFile::Spec { per, .. } => *per,
        }
    }
}

/// A system under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    /// Base URL, e.g. `http://127.0.0.1:8080`; the request path is appended.
    pub url: String,
    /// Headers sent to this target on every request (added to the request's own).
    #[serde(default)]
    pub headers: IndexMap<String, String>,
    /// Free labels used by comparisons, e.g. `{system: A, cache: redis}`.
    #[serde(default)]
    pub labels: IndexMap<String, String>,
    /// Start the server before its steps and stop it after.
    #[serde(default)]
    pub launch: Option<LaunchFile>,
    /// Monitor a server that is already running.
    #[serde(default)]
    pub attach: Option<AttachFile>,
    /// Services (from `services:`) this target needs running during its steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// Connect to this Unix domain socket instead of the URL's host and port (as
    /// `--unix-socket`; the URL still gives Host and the path); overrides `load.unix_socket`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix: Option<std::path::PathBuf>,
}

/// A process the plan keeps up while the steps that need it run (a backend, a database, a
/// cache): launched as a target is, never loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceFile {
    /// Shell command (run with `sh -c`); keep the process in the foreground.
    pub command: String,
    #[serde(default)]
    pub env: IndexMap<String, String>,
    /// Working directory, relative to the plan file.
    #[serde(default)]
    pub cwd: Option<String>,
    /// How to know it is ready: one of port, http or delay (a service has no URL to wait
    /// for, so this is required).
    #[serde(default)]
    pub ready: ReadyFile,
    /// How long readiness may take [default: 30s].
    #[serde(default)]
    pub ready_timeout: Option<String>,
    /// Time between SIGTERM and SIGKILL when stopping [default: 5s].
    #[serde(default)]
    pub stop_grace: Option<String>,
    /// Other services that must be up before this one starts (and stop after it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

/// How to start a server under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchFile {
    /// Shell command (run with `sh -c`).
    pub command: String,
    #[serde(default)]
    pub env: IndexMap<String, String>,
    /// Working directory, relative to the plan file.
    #[serde(default)]
    pub cwd: Option<String>,
    /// How to know it is ready.
    #[serde(default)]
    pub ready: ReadyFile,
    /// How long readiness may take [default: 30s].
    #[serde(default)]
    pub ready_timeout: Option<String>,
    /// Time between SIGTERM and SIGKILL when stopping [default: 5s].
    #[serde(default)]
    pub stop_grace: Option<String>,
}

/// Readiness: a TCP port that accepts, an http:// URL answering 2xx, or a fixed delay.
/// Without any, the target URL's port must accept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadyFile {
    #[serde(default)]
    pub port: Option<String>,
    #[serde(default)]
    pub http: Option<String>,
    #[serde(default)]
    pub delay: Option<String>,
}

/// A server already running, found by exactly one of: PID, process name, the Unix socket it
/// listens on, or the TCP port it listens on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachFile {
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub process: Option<String>,
    /// The path of the Unix socket the server listens on (a server behind a local proxy or
    /// sidecar); the process holding it is monitored.
    #[serde(default)]
    pub socket: Option<std::path::PathBuf>,
    /// A TCP port the server listens on (any local address).
    #[serde(default)]
    pub port: Option<u16>,
}

/// What to send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestFile {
    #[serde(default = "default_method")]
    pub method: String,
    /// Path and query appended to the target URL, e.g. `/api/features?x=1` [default: none,
    /// the target URL as written].
    #[serde(default = "default_path")]
    pub path: String,
    #[serde(default)]
    pub headers: IndexMap<String, String>,
    #[serde(default)]
    pub body: Option<String>,
    /// A file whose bytes are the body, relative to the plan file.
    #[serde(default)]
    pub body_file: Option<String>,
    /// Share of this request among `requests` [default: 1].
    #[serde(default)]
    pub weight: Option<u32>,
}

fn default_method() -> String {
    "GET".into()
}

fn default_path() -> String {
    String::new()
}

impl Default for RequestFile {
    fn default() -> Self {
        RequestFile {
            method: default_method(),
            path: default_path(),
            headers: IndexMap::new(),
            body: None,
            body_file: None,
            weight: None,
        }
    }
}

/// What each WebSocket session does; the same words as `loadmark ws`'s flags.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSocketFile {
    /// `echo` (send every `interval`, match each echo), `request` (send, wait for the reply),
    /// `send` or `receive` [default: echo with `interval`, else request].
    #[serde(default)]
    pub mode: Option<String>,
    /// One message per session every `interval`, e.g. `5ms` (echo and send modes).
    #[serde(default)]
    pub interval: Option<String>,
    /// Message size in bytes, or a range drawn per message, e.g. `128..4096` [default: 128].
    #[serde(default)]
    pub payload: Option<String>,
    /// A text message template instead: `{{seq}}`, `{{rand_int A B}}`, `{{rand_f A B}}`.
    #[serde(default)]
    pub message: Option<String>,
    /// Binary frames instead of text.
    #[serde(default)]
    pub binary: Option<bool>,
    /// Each session ends after this long and a new one takes its place, e.g. `10s`.
    #[serde(default)]
    pub session_duration: Option<String>,
    /// Send a ping this often and time its pong, e.g. `1s`.
    #[serde(default)]
    pub ping: Option<String>,
    /// Request mode: the JSON field a reply must share with its request, e.g. `id`.
    #[serde(default)]
    pub reply_match: Option<String>,
}

/// Load settings; the same words as `loadmark run`'s flags.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadFile {
    /// Closed loop: concurrent connections [default: 50].
    #[serde(default)]
    pub connections: Option<usize>,
    /// Open loop: requests per second.
    #[serde(default)]
    pub rate: Option<f64>,
    /// Rate stages (open loop), or connection stages with `connections` (closed loop). In a
    /// scenario: user counts, from `users` (or 0), unless `iterations_per_second` is given
    /// (then rates of iterations), e.g. `30s:200,1m:200,10s:0`.
    #[serde(default)]
    pub stages: Option<String>,
    /// Open loop: connection cap [default: 1000].
    #[serde(default)]
    pub max_connections: Option<usize>,
    /// Worker threads [default: CPU cores, at most the connections].
    #[serde(default)]
    pub threads: Option<usize>,
    /// How long each step runs, e.g. `30s` [default: 10s unless `requests`].
    #[serde(default)]
    pub duration: Option<String>,
    /// Exactly this many requests per step (closed loop).
    #[serde(default)]
    pub requests: Option<u64>,
    /// False sends `Connection: close` [default: true].
    #[serde(default)]
    pub keepalive: Option<bool>,
    #[serde(default)]
    pub timeout: Option<String>,
    #[serde(default)]
    pub connect_timeout: Option<String>,
    /// Whole seconds of load left out of the figures.
    #[serde(default)]
    pub warmup: Option<String>,
    /// Accept any TLS certificate.
    #[serde(default)]
    pub insecure: Option<bool>,
    /// HTTP/2: ALPN over https://, prior knowledge (h2c) over http:// [default: false].
    #[serde(default)]
    pub http2: Option<bool>,
    /// HTTP/3 over QUIC (`--http3`): https:// only, UDP to the URL's port [default: false].
    #[serde(default)]
    pub http3: Option<bool>,
    /// With `http3: true`: 0-RTT resumption on connections after the first
    /// (`--http3-0rtt`) [default: false].
    #[serde(default)]
    pub http3_0rtt: Option<bool>,
    /// Concurrent streams per HTTP/2 or HTTP/3 connection [default: 1].
    #[serde(default)]
    pub streams: Option<usize>,
    /// With `http2: true` over https://: run over HTTP/1.1 when the server does not offer
    /// h2 with ALPN, instead of refusing (`--http2-fallback`) [default: false].
    #[serde(default)]
    pub http2_fallback: Option<bool>,
    /// Connect to this Unix domain socket instead of the URL's host and port.
    #[serde(default)]
    pub unix_socket: Option<std::path::PathBuf>,
    /// HTTP/1.1 requests in flight per connection: written together in a closed loop (wrk's
    /// pipeline script), each as it comes due with `rate`.
    #[serde(default)]
    pub pipeline: Option<usize>,
    /// Scenarios: virtual users looping the scenario (closed model; `connections` in other
    /// words), or the cap on users busy at once with `iterations_per_second`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<usize>,
    /// Scenarios: exactly this many iterations in all (instead of a duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// Scenarios, open model: iterations started per second on a schedule, whatever the
    /// responses do; latency is measured from each iteration's intended start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations_per_second: Option<f64>,
    /// Scenarios: a cookie jar per virtual user. `Set-Cookie` answers are kept (name=value;
    /// `Max-Age=0` or an `Expires` in the past deletes) and sent back as a `Cookie` header
    /// on the user's later requests. Path, domain and secure attributes are ignored (one
    /// target) [default: false].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookies: Option<bool>,
}

/// Values to sweep; several keys make a matrix (targets outermost, then in this order).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    /// Which targets, in order [default: all].
    #[serde(default)]
    pub targets: Option<Vec<String>>,
    #[serde(default)]
    pub connections: Option<Vec<usize>>,
    #[serde(default)]
    pub rate: Option<Vec<f64>>,
    #[serde(default)]
    pub keepalive: Option<Vec<bool>>,
    #[serde(default)]
    pub threads: Option<Vec<usize>>,
    /// HTTP/2 streams per connection (`load.http2: true`).
    #[serde(default)]
    pub streams: Option<Vec<usize>>,
    /// HTTP/1.1 pipeline depths.
    #[serde(default)]
    pub pipeline: Option<Vec<usize>>,
}

/// The figure a comparison shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompareMetric {
    Rps,
    P50,
    P90,
    P99,
    Errors,
    /// A search's capacity (`find:` plans) and the objective that broke first.
    Capacity,
}

/// A side-by-side table: rows and columns are target labels (or `target` for the name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareFile {
    #[serde(default)]
    pub title: Option<String>,
    /// Label whose values name the rows, e.g. `cache`.
    pub rows: String,
    /// Label whose values name the columns, e.g. `system`.
    pub columns: String,
    /// `rps` [default], `p50`, `p90`, `p99`, `errors`, or `capacity` (a `find:` plan).
    #[serde(default = "default_metric")]
    pub metric: CompareMetric,
}

fn default_metric() -> CompareMetric {
    CompareMetric::Rps
}

/// Server monitoring.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MonitorFile {
    /// Sampling interval [default: 1s].
    #[serde(default)]
    pub interval: Option<String>,
}

/// The document's step table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportFile {
    /// The step table's columns, in order, e.g. `[rps, rps_stdev, latency_mean,
    /// latency_stdev, p50, p95, p99, connect_mean, ttfb_mean, failed]` [default: rps,
    /// transfer, p50, p90, p99, p99.9, max, failed, errors, status, server_rss, server_cpu].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<crate::table::Column>,
    /// Also lay each step out as `wrk`, `bombardier`, `ab` or `taurus` print their summary,
    /// computed from loadmark's numbers (and labelled so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<crate::table::TableStyle>,
}

impl ReportFile {
    fn is_default(&self) -> bool {
        *self == ReportFile::default()
    }
}
