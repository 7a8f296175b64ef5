//! The [`Report`] struct: one run, complete, versioned, and what it is built from ([`RunFacts`]
//! and the engine-free totals). Part of the model: imports `model` siblings and `units` only,
//! never a renderer.

use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use loadmark_metrics::{
    Distribution, ErrorCounts, SeriesPoint, Snapshot, StatusCounts, Totals, WsStats,
};
use loadmark_plan::{Load, Plan, WsMode};

use super::websocket::WsSummary;

use super::environment::Environment;

/// Bumped whenever a field is added with a new meaning, renamed or removed.
///
/// 2: percentiles as `{"p", "us"}` objects; `totals.service` and `totals.lag` renamed
/// `service_time` and `schedule_lag` as in the summary; series points may carry `partial_s`.
/// Files of version 1 still load.
pub const SCHEMA_VERSION: u32 = 2;

/// What the latency figures of a closed-loop run include, stated in every report.
pub const LATENCY_DEFINITION: &str = "from the first byte of the request written to the last byte of the response read; excludes connecting (see connect) and any wait before sending (closed loop)";

/// What the latency figures of an open-loop run include.
pub const OPEN_LATENCY_DEFINITION: &str = "from the request's intended send time on the rate schedule to the last byte of the response read; includes waiting for a free connection, connecting and any schedule lag (open loop, no coordinated omission); service_time starts at the first byte written";

/// Above this share of one core, a worker thread was the bottleneck.
pub const SATURATED_BUSY: f64 = 0.9;

/// Above this p99 schedule lag, requests did not leave on time.
pub const LATE_LAG_P99_US: u64 = 5_000;

/// Facts about the run that the engine measured, in plain types.
#[derive(Debug, Clone)]
pub struct RunFacts {
    pub started_at: SystemTime,
    pub elapsed: Duration,
    pub measured: Duration,
    pub interrupted: bool,
    pub client_cpu_user: Duration,
    pub client_cpu_system: Duration,
    /// The busiest load thread's CPU time over the wall time (1.0 is a whole core).
    pub busiest_worker: f64,
    pub target_addr: String,
    /// Whether the load threads had to wait for a CPU (None where the OS does not say).
    pub contention: Option<CpuContention>,
}

/// Whether other work on the machine kept the load threads from running (issue 43): a
/// thread that is runnable but waits on its CPU's run queue sends its due requests late,
/// and that lag is the machine's, not loadmark's pacing nor the server's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuContention {
    /// The load threads' time runnable but waiting for a CPU, added up, seconds
    /// (/proc/thread-self/schedstat).
    pub waited_s: f64,
    /// How busy all of the machine's CPUs were over the run, 0-1 (/proc/stat).
    pub machine_busy: f64,
    /// The CPUs the machine has online, and those loadmark may run on.
    pub cpus: usize,
    pub usable_cpus: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClientCpu {
    pub user_s: f64,
    pub system_s: f64,
    /// CPU time of the load-generating threads per completed request, µs.
    pub per_request_us: f64,
    /// The busiest load thread's share of one core over the run.
    pub busiest_worker: f64,
    /// Whether the load threads had to wait for a CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<CpuContention>,
}

/// Whether the numbers measure the server, or the client (or the pool) got in the way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Health {
    /// loadmark itself was the bottleneck: the figures understate what the server can do.
    pub client_saturated: bool,
    /// Open loop: the target (or the connection cap) did not keep up with the schedule.
    pub overloaded: bool,
    /// Plain-words explanations, one per finding.
    pub findings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunInfo {
    /// UTC, RFC 3339.
    pub started_at: String,
    /// Wall time of the whole run, warm-up included.
    pub elapsed_s: f64,
    /// The time the summary covers (elapsed minus warm-up).
    pub measured_s: f64,
    /// Stopped early (Ctrl-C or SIGTERM): the figures cover the time that ran.
    pub interrupted: bool,
    pub target_addr: String,
    /// The proxy the run went through (`-x`, or the environment's `*_PROXY`), without its
    /// password; connect times then include the tunnel's set-up, and `target_addr` is the
    /// proxy's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    pub client_cpu: ClientCpu,
    pub latency_definition: String,
    pub health: Health,
}

/// Where every request ended. `completed + in_flight_at_end + warmup_completed` is every
/// request begun.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequestCounts {
    /// Requests that ended in the measured time: `responses + errors`.
    pub completed: u64,
    /// Complete responses, any status.
    pub responses: u64,
    /// Requests that failed without a complete response (see `errors` for kinds).
    pub errors: u64,
    /// Responses whose status is not 2xx or 3xx.
    pub non_success_responses: u64,
    /// Requests running when the run stopped: neither successes nor errors.
    pub in_flight_at_end: u64,
    /// Requests that ended during warm-up, left out of every other figure.
    pub warmup_completed: u64,
}

/// Responses per second across the measured whole seconds (bombardier's Reqs/sec line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RpsStats {
    pub seconds: u64,
    pub mean: f64,
    pub stdev: f64,
    pub min: u64,
    pub max: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    pub requests: RequestCounts,
    /// Responses per second over the measured time.
    pub rps: f64,
    pub rps_per_second: RpsStats,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub read_bytes_per_s: f64,
    pub written_bytes_per_s: f64,
    pub connections_opened: u64,
    /// Open loop: why its pool opened connections, how far it grew, what it closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<loadmark_metrics::PoolCounts>,
    /// Open loop: requests due when no connection was free and the cap was reached.
    pub dropped: u64,
    /// Requests sent again on a new connection after a reused one closed before any
    /// response byte (idempotent methods only); each is still one request.
    #[serde(default)]
    pub retries: u64,
    pub latency: Distribution,
    pub ttfb: Distribution,
    pub connect: Distribution,
    /// Open loop only: from the first byte written to the last byte received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_time: Option<Distribution>,
    /// Open loop only: actual minus intended send time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lag: Option<Distribution>,
    pub status: StatusCounts,
    pub errors: ErrorCounts,
    /// WebSocket runs (`loadmark ws`): sessions, messages both ways, pings, closes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<WsSummary>,
    /// gRPC runs (`loadmark grpc`): messages per call, a streaming run's timings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<super::grpc::GrpcSummary>,
    /// Runs with checks (`--check`, a plan's `checks:`): passes and failures by check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<loadmark_metrics::CheckStats>,
    /// Scenario runs (a plan's `scenario:`): iterations and a row per step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<super::scenario::ScenarioSummary>,
    /// Plans with several scenarios at once (`scenarios:`): a section per scenario, in the
    /// plan's order; the fields above are the whole run's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<super::scenario::NamedScenarioSummary>,
    /// HTTP runs: the protocol spoken, a server's stream limit, requests per connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<super::protocol::ProtocolSummary>,
}

/// One run, complete. JSON is its stable form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Report {
    pub schema_version: u32,
    pub loadmark_version: String,
    pub plan: Plan,
    pub environment: Environment,
    pub run: RunInfo,
    pub summary: Summary,
    pub series: Vec<SeriesPoint>,
    /// The measured totals with their HDR histograms (V2 deflate, base64): the source of
    /// every figure above, and what merging adds.
    pub totals: Snapshot,
    /// Pass/fail of each `--threshold`, when any were given (absent in older reports).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<super::threshold::ThresholdResult>,
    /// A segment of a split run (`--segment`, `--slurm`), or the merge of all segments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<super::split::Split>,
}

/// A section per scenario of a plan that runs several, from the totals' figures of each.
pub(crate) fn named_summaries(
    plan: &Plan,
    snap: &Snapshot,
    measured: std::time::Duration,
) -> Vec<super::scenario::NamedScenarioSummary> {
    plan.scenarios
        .iter()
        .map(|named| {
            let empty = loadmark_metrics::ScenarioStats::named(&named.name);
            let stats = snap
                .scenarios
                .iter()
                .find(|s| s.name.as_deref() == Some(named.name.as_str()))
                .unwrap_or(&empty);
            let measured_s = super::scenario::measured_of(named, stats, (plan.warmup, measured));
            super::scenario::NamedScenarioSummary::of(named, stats, measured_s)
        })
        .collect()
}

/// A saved report could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not JSON of a loadmark report; the message says where.
    #[error("not a loadmark report: {0}")]
    Json(#[from] serde_json::Error),
    /// Written by a newer loadmark: upgrade to read it.
    #[error("report schema version {found} is newer than this loadmark understands ({SCHEMA_VERSION}); upgrade loadmark")]
    TooNew { found: u32 },
}

impl Report {
    /// Builds the report of a run. `plan` is redacted here, so secrets never reach a file.
    pub fn new(plan: &Plan, facts: &RunFacts, totals: Totals, environment: Environment) -> Self {
        let snap = totals.snapshot;
        let mut series = totals.series;
        mark_partial(&mut series, facts.elapsed);
        let measured_s = facts.measured.as_secs_f64();
        let per_s = |n: u64| {
            if measured_s > 0.0 {
                n as f64 / measured_s
            } else {
                0.0
            }
        };
        let completed = snap.completed();
        let cpu_s = (facts.client_cpu_user + facts.client_cpu_system).as_secs_f64();
        // Sends on a schedule: HTTP open loop, or WebSocket echo on an interval.
        let scheduled = matches!(plan.load, Load::Open { .. })
            || plan
                .websocket
                .as_ref()
                .is_some_and(|w| w.mode == WsMode::Echo);
        let websocket = plan.websocket.as_ref().map(|spec| {
            WsSummary::new(
                spec,
                &plan.load,
                snap.websocket.as_deref().unwrap_or(&WsStats::default()),
                measured_s,
            )
        });
        let summary = Summary {
            requests: RequestCounts {
                completed,
                responses: snap.responses,
                errors: snap.errors.total(),
                non_success_responses: snap.status.not_success(),
                in_flight_at_end: totals.in_flight,
                warmup_completed: totals.warmup_completed,
            },
            rps: per_s(snap.responses),
            rps_per_second: rps_stats(&series, facts.elapsed),
            bytes_read: snap.bytes_read,
            bytes_written: snap.bytes_written,
            read_bytes_per_s: per_s(snap.bytes_read),
            written_bytes_per_s: per_s(snap.bytes_written),
            connections_opened: snap.connections_opened,
            pool: snap.pool,
            dropped: snap.dropped,
            retries: snap.retries,
            latency: Distribution::of(&snap.latency),
            ttfb: Distribution::of(&snap.ttfb),
            connect: Distribution::of(&snap.connect),
            service_time: scheduled.then(|| Distribution::of(&snap.service)),
            schedule_lag: scheduled.then(|| Distribution::of(&snap.lag)),
            status: snap.status.clone(),
            errors: snap.errors.clone(),
            websocket,
            grpc: snap.grpc.as_deref().map(super::grpc::GrpcSummary::new),
            checks: (!plan.checks.is_empty() || snap.checks.is_some())
                .then(|| snap.checks.as_deref().cloned().unwrap_or_default()),
            scenario: plan.scenario.as_ref().map(|_| {
                super::scenario::ScenarioSummary::of(
                    snap.scenario.as_deref().unwrap_or(&Default::default()),
                    measured_s,
                )
            }),
            scenarios: named_summaries(plan, &snap, facts.measured),
            // Set by the caller that knows the engine's result (or by a merge).
            protocol: None,
        };
        let all_completed = completed + totals.warmup_completed;
        Report {
            schema_version: SCHEMA_VERSION,
            loadmark_version: env!("CARGO_PKG_VERSION").to_string(),
            plan: plan.redacted(),
            environment,
            run: RunInfo {
                started_at: rfc3339(facts.started_at),
                elapsed_s: facts.elapsed.as_secs_f64(),
                measured_s,
                interrupted: facts.interrupted,
                target_addr: facts.target_addr.clone(),
                proxy: plan
                    .protocol
                    .proxy
                    .as_ref()
                    .map(|p| format!("{p} (from {})", p.from)),
                client_cpu: ClientCpu {
                    user_s: facts.client_cpu_user.as_secs_f64(),
                    system_s: facts.client_cpu_system.as_secs_f64(),
                    per_request_us: if all_completed > 0 {
                        cpu_s * 1e6 / all_completed as f64
                    } else {
                        0.0
                    },
                    busiest_worker: facts.busiest_worker,
                    contention: facts.contention,
                },
                latency_definition: match (&plan.websocket, &plan.protocol.grpc) {
                    (Some(spec), _) => super::websocket::latency_definition(spec).to_string(),
                    // A streaming gRPC call's response ends at its trailers, or its cancel.
                    (None, Some(streaming)) => format!(
                        "{}; a streaming gRPC call: {}",
                        if scheduled {
                            OPEN_LATENCY_DEFINITION
                        } else {
                            LATENCY_DEFINITION
                        },
                        streaming.latency_definition()
                    ),
                    (None, None) if scheduled => OPEN_LATENCY_DEFINITION.to_string(),
                    (None, None) => LATENCY_DEFINITION.to_string(),
                },
                health: super::health::assess(plan, facts, &summary),
            },
            summary,
            series,
            totals: snap,
            thresholds: Vec::new(),
            split: None,
        }
    }

    /// Reads a saved report, refusing versions newer than this build.
    pub fn from_json(text: &str) -> Result<Report, ReadError> {
        let mut report: Report = read_versioned(text)?;
        // Older files are read into the current types, and written again in this schema.
        report.schema_version = SCHEMA_VERSION;
        Ok(report)
    }

    /// The series as charts and CSV show it: without the run's last second when the run
    /// ended inside it (a fragment of a few ms holding a handful of responses would read as
    /// a fall to zero). Its counts stay in the JSON series and in the totals. A run shorter
    /// than one second keeps its only point.
    pub fn chart_series(&self) -> &[SeriesPoint] {
        match self.series.iter().rposition(|p| p.partial_s.is_none()) {
            Some(last_whole) => &self.series[..=last_whole],
            None => &self.series,
        }
    }

    /// Requests that failed: transport errors, non-2xx/3xx responses, gRPC calls that ended
    /// with a status other than OK (their HTTP status is 200), and 2xx/3xx responses that
    /// failed a check (each request counted once).
    pub fn failed(&self) -> u64 {
        self.summary.requests.errors
            + self.summary.requests.non_success_responses
            + self.totals.grpc.as_ref().map_or(0, |g| g.answered_not_ok())
            + self
                .summary
                .checks
                .as_ref()
                .map_or(0, |c| c.failed_success_responses)
    }
}

/// Reads any saved loadmark document (report or bundle), refusing versions newer than this
/// build before trying to understand the rest.
pub(crate) fn read_versioned<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ReadError> {
    #[derive(Deserialize)]
    struct Version {
        schema_version: u32,
    }
    let v: Version = serde_json::from_str(text)?;
    if v.schema_version > SCHEMA_VERSION {
        return Err(ReadError::TooNew {
            found: v.schema_version,
        });
    }
    Ok(serde_json::from_str(text)?)
}

/// Marks the seconds the run did not cover whole (the last one, and any straggler past it)
/// with the part that it did cover.
fn mark_partial(series: &mut [SeriesPoint], elapsed: Duration) {
    for p in series {
        p.mark_partial(elapsed);
    }
}

/// Only whole measured seconds count: a partial last second would drag the mean down.
fn rps_stats(series: &[SeriesPoint], elapsed: Duration) -> RpsStats {
    let whole: Vec<u64> = series
        .iter()
        .filter(|p| !p.warmup && (p.second + 1) as f64 <= elapsed.as_secs_f64() + 1e-3)
        .map(|p| p.responses)
        .collect();
    if whole.is_empty() {
        return RpsStats {
            seconds: 0,
            mean: 0.0,
            stdev: 0.0,
            min: 0,
            max: 0,
        };
    }
    let n = whole.len() as f64;
    let mean = whole.iter().sum::<u64>() as f64 / n;
    let var = whole
        .iter()
        .map(|&x| (x as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    RpsStats {
        seconds: whole.len() as u64,
        mean,
        stdev: var.sqrt(),
        min: *whole.iter().min().unwrap_or(&0),
        max: *whole.iter().max().unwrap_or(&0),
    }
}

/// `2026-11-22T21:05:03Z`, whole seconds (no date crate needed for UTC).
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_381_503);
        assert_eq!(rfc3339(t), "2026-11-22T21:05:03Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }

    fn facts(busiest_worker: f64) -> RunFacts {
        RunFacts {
            started_at: UNIX_EPOCH,
            elapsed: Duration::from_secs(1),
            measured: Duration::from_secs(1),
            interrupted: false,
            client_cpu_user: Duration::ZERO,
            client_cpu_system: Duration::ZERO,
            busiest_worker,
            target_addr: String::new(),
            contention: None,
        }
    }

    fn open_plan() -> Plan {
        let json = r#"{"request":{"method":"GET","url":"http://127.0.0.1:1/","keep_alive":true},
            "load":{"kind":"open","rate":[{"duration":"1s","from":100.0,"to":100.0}],"max_connections":3,"threads":1},
            "stop":{"duration":"1s"}}"#;
        serde_json::from_str(json).unwrap()
    }

    fn totals_with(lag_us: u64, dropped: u64) -> Totals {
        let mut snapshot = Snapshot::default();
        snapshot.lag.record(lag_us).unwrap();
        snapshot.dropped = dropped;
        Totals {
            snapshot,
            warmup_completed: 0,
            in_flight: 0,
            series: Vec::new(),
        }
    }

    #[test]
    fn health_names_saturation_drops_and_lag() {
        let env = Environment::default;
        let clean = Report::new(&open_plan(), &facts(0.3), totals_with(200, 0), env());
        assert!(!clean.run.health.client_saturated && !clean.run.health.overloaded);
        assert!(clean.run.health.findings.is_empty());

        let busy = Report::new(&open_plan(), &facts(0.97), totals_with(20_000, 0), env());
        assert!(busy.run.health.client_saturated);
        assert!(
            busy.run.health.findings[0].contains("97% of a core"),
            "{:?}",
            busy.run.health
        );
        assert!(busy.run.health.findings[1].contains("because the client was saturated"));

        let dropped = Report::new(&open_plan(), &facts(0.2), totals_with(200, 40), env());
        assert!(dropped.run.health.overloaded && !dropped.run.health.client_saturated);
        assert!(dropped.run.health.findings[0].contains("40 requests were dropped"));
        assert!(dropped.run.health.findings[0].contains("up to 3 connections"));

        // Lag within bounds but a visible share of latency: named, and still clean.
        let mut t = totals_with(400, 0);
        t.snapshot.latency.record(1000).unwrap();
        let visible = Report::new(&open_plan(), &facts(0.2), t, env());
        assert!(!visible.run.health.overloaded);
        assert!(
            visible.run.health.findings[0].contains("schedule lag p99 was 400µs, 40%"),
            "{:?}",
            visible.run.health
        );
    }

    /// Issue 43: a lag that came from other work on the client's cores says so, with the
    /// wait and how busy the machine was, and is not blamed on the server.
    #[test]
    fn a_lag_from_a_crowded_machine_is_named_as_such() {
        let env = Environment::default;
        let crowded = |waited_s| RunFacts {
            contention: Some(CpuContention {
                waited_s,
                machine_busy: 0.97,
                cpus: 2,
                usable_cpus: 2,
            }),
            ..facts(0.3)
        };
        let mut t = totals_with(1163, 0);
        t.snapshot.latency.record(56).unwrap();
        let r = Report::new(&open_plan(), &crowded(0.120), t.clone(), env());
        let finding = &r.run.health.findings[0];
        assert!(finding.contains("schedule lag p99 was 1163µs"), "{finding}");
        assert!(finding.contains("the lag is the machine's"), "{finding}");
        assert!(finding.contains("waited 120.0ms"), "{finding}");
        assert!(finding.contains("2 CPUs were 97% busy"), "{finding}");
        // A thread that hardly waited: the pacing's own, as before.
        let r = Report::new(&open_plan(), &crowded(0.000_1), t, env());
        assert!(r.run.health.findings[0].contains("the client's own pacing"));

        let late = Report::new(&open_plan(), &crowded(0.2), totals_with(20_000, 0), env());
        assert!(!late.run.health.overloaded, "the server is not blamed");
        assert!(late.run.health.findings[0].contains("because the load threads waited"));
    }

    #[test]
    fn rps_ignores_warmup_and_partial_seconds() {
        let p = |second, responses, warmup| SeriesPoint {
            second,
            warmup,
            responses,
            errors: 0,
            failed: 0,
            bytes_read: 0,
            connections_opened: 0,
            latency_p50_us: 0,
            latency_p99_us: 0,
            latency_max_us: 0,
            messages_sent: 0,
            messages_received: 0,
            partial_s: None,
            scenarios: Vec::new(),
        };
        let series = [
            p(0, 5, true),
            p(1, 100, false),
            p(2, 300, false),
            p(3, 7, false),
        ];
        let s = rps_stats(&series, Duration::from_millis(3_050));
        assert_eq!((s.seconds, s.min, s.max), (2, 100, 300));
        assert!((s.mean - 200.0).abs() < 1e-9 && (s.stdev - 100.0).abs() < 1e-9);
    }

    /// A 5.004 s run whose last response ended at 5.002 s: that fragment is in the totals and
    /// the JSON series (marked partial), not in what charts and CSV draw.
    #[test]
    fn the_last_partial_second_is_marked_and_left_out_of_charts() {
        use loadmark_metrics::{Aggregate, Recorder, Sample};
        use std::time::Instant;
        let origin = Instant::now();
        let mut recorder = Recorder::new(origin);
        let mut end_at = |ms: u64| {
            let ended = origin + Duration::from_millis(ms);
            recorder.record(&Sample {
                scheduled: None,
                started: ended - Duration::from_micros(300),
                first_byte: ended,
                ended,
                status: 200,
                bytes_read: 10,
                bytes_written: 10,
            });
        };
        for ms in (1..5_000).step_by(10) {
            end_at(ms);
        }
        end_at(5_002);
        let mut aggregate = Aggregate::new(1, 0);
        aggregate.add(recorder.finish());
        let mut f = facts(0.2);
        f.elapsed = Duration::from_millis(5_004);
        f.measured = f.elapsed;
        let r = Report::new(&open_plan(), &f, aggregate.finish(), Environment::default());
        assert_eq!(r.series.len(), 6);
        assert_eq!(r.series[5].responses, 1);
        assert_eq!(r.series[5].partial_s, Some(0.004));
        assert!(r.series[..5].iter().all(|p| p.partial_s.is_none()));
        assert_eq!(
            r.summary.requests.responses, 501,
            "the fragment stays in the totals"
        );
        let drawn = r.chart_series();
        assert_eq!(drawn.len(), 5);
        assert!(drawn.iter().all(|p| p.responses == 100), "{drawn:?}");

        // A run shorter than one second keeps its only point.
        let mut short = r.clone();
        short.series.truncate(1);
        short.series[0].partial_s = Some(0.5);
        assert_eq!(short.chart_series().len(), 1);
    }
}
