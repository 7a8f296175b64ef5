//! The OpenMetrics exposition: what a run has measured so far, as text Prometheus scrapes.
//!
//! Counters and the latency histogram cover the final seconds after warm-up, exactly what the
//! report's totals add up, and carry the timestamp of the end of the last second they hold:
//! Prometheus stores them on the run's own time axis, so `increase()` over any whole seconds
//! equals the report's series over those seconds (they arrive about 1-1.5 s late, when every
//! worker has handed the second over). Gauges (in flight, open connections, target rate,
//! the busiest load thread's CPU) are the latest hand-over's and carry no timestamp.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use loadmark_metrics::{ErrorKind, Snapshot};
use loadmark_plan::{Load, Plan};

use crate::Tick;

/// Upper bounds of the latency histogram's buckets, seconds: fixed, so histograms of several
/// loadmark processes (segments, machines) add up in PromQL.
pub const LATENCY_BUCKETS_S: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// Which exposition a scrape asked for (its Accept header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text: what Prometheus asks for first; timestamps in seconds.
    OpenMetrics,
    /// Prometheus text 0.0.4, for older scrapers and `promtool check metrics`: no UNIT or
    /// EOF, the info family as a gauge, counters' TYPE naming the `_total` sample, and
    /// timestamps in milliseconds.
    Text,
}

impl Format {
    /// The format an Accept header prefers: OpenMetrics when it is named at all.
    pub fn from_accept(accept: &str) -> Format {
        if accept.contains("application/openmetrics-text") {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }

    /// The Content-Type of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// What names one run (one plan step) in the labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labels {
    pub run_id: String,
    /// The plan step: 1 for `run` and `ws`, the step's number in `bench`.
    pub step: u32,
    /// The segment of a split run (`--segment 0/2` is `0/2`); no label for a whole run.
    pub segment: Option<String>,
}

/// What one step has exposed so far.
pub(crate) struct StepState {
    labels: Labels,
    url: String,
    websocket: bool,
    /// The open loop's rate over time, or the closed loop's connections.
    target: Target,
    /// Wall-clock time of the run's origin (second 0), Unix seconds.
    origin_unix: Option<f64>,
    /// The final seconds after warm-up, added.
    totals: Snapshot,
    /// Unix time of the end of the last second in `totals`.
    covered_until: Option<f64>,
    /// Seconds of `totals` (the last one possibly partial).
    measured_s: f64,
    in_flight: u64,
    open_connections: u64,
    busiest_worker: loadmark_metrics::Busy,
    elapsed: Duration,
    warmup: Duration,
    finished: bool,
}

enum Target {
    Rate(loadmark_plan::Profile),
    Connections(loadmark_plan::Profile),
    FixedConnections(usize),
}

impl StepState {
    pub(crate) fn new(labels: Labels, plan: &Plan) -> Self {
        let target = match &plan.load {
            Load::Open { rate, .. } => Target::Rate(rate.clone()),
            Load::Ramp { connections, .. } => Target::Connections(connections.clone()),
            Load::Closed { connections, .. } => Target::FixedConnections(*connections),
        };
        StepState {
            labels,
            url: plan.request.url.to_string(),
            websocket: plan.websocket.is_some(),
            target,
            origin_unix: None,
            totals: Snapshot::default(),
            covered_until: None,
            measured_s: 0.0,
            in_flight: 0,
            open_connections: 0,
            busiest_worker: Default::default(),
            elapsed: Duration::ZERO,
            warmup: plan.warmup,
            finished: false,
        }
    }

    pub(crate) fn labels(&self) -> &Labels {
        &self.labels
    }

    /// Adds a tick's final seconds.
    pub(crate) fn tick(&mut self, tick: &Tick) {
        // The run's origin on the wall clock: `now - elapsed` comes out late by however long
        // this thread waited between the engine reading `elapsed` and this call (seconds on
        // a loaded machine), never early, so the smallest estimate is the best. A late
        // origin would stamp counters in the future, where a query made just after the run
        // does not see them yet.
        let now = unix_now();
        let estimate = now - tick.elapsed.as_secs_f64();
        let origin = self.origin_unix.map_or(estimate, |o| o.min(estimate));
        self.origin_unix = Some(origin);
        for s in tick.seconds {
            let mut end = (s.point.second + 1) as f64;
            if tick.finished {
                end = end.min(tick.elapsed.as_secs_f64());
            }
            // Never after now, and always after a time already exposed (Prometheus refuses a
            // sample older than the last it stored, or at the same time with another value;
            // 2 ms, not 1, so that rounding to whole milliseconds cannot merge two times).
            let after = self.covered_until.map_or(f64::MIN, |t| t + 0.002);
            let at = (origin + end).min(now).max(after);
            self.covered_until = Some(at);
            if !s.point.warmup {
                self.totals.merge(&s.snapshot);
                self.measured_s = end - self.warmup.as_secs_f64().min(end);
            }
        }
        self.in_flight = tick.in_flight;
        self.open_connections = tick.open_connections;
        self.busiest_worker = tick.busiest_worker;
        self.elapsed = tick.elapsed;
        self.finished |= tick.finished;
    }

    /// Writes this step's metric points of family `family` (one call per family, so every
    /// family's lines stay together across steps, as OpenMetrics requires).
    pub(crate) fn write(&self, family: Family, format: Format, out: &mut String) {
        let mut l = format!(
            "run_id=\"{}\",step=\"{}\"",
            escape(&self.labels.run_id),
            self.labels.step
        );
        if let Some(segment) = &self.labels.segment {
            let _ = write!(l, ",segment=\"{}\"", escape(segment));
        }
        let ts = self
            .covered_until
            .or(self.origin_unix)
            .map(|t| match format {
                Format::OpenMetrics => format!(" {t:.3}"),
                Format::Text => format!(" {}", (t * 1000.0).round() as u64),
            })
            .unwrap_or_default();
        let t = &self.totals;
        let counter = |out: &mut String, name: &str, extra: &str, v: u64| {
            let _ = writeln!(out, "{name}_total{{{l}{extra}}} {v}{ts}");
        };
        match family {
            Family::Info => {
                let _ = writeln!(
                    out,
                    "loadmark_run_info{{{l},url=\"{}\",protocol=\"{}\"}} 1",
                    escape(&self.url),
                    if self.websocket { "websocket" } else { "http" }
                );
            }
            Family::Requests => counter(out, "loadmark_requests", "", t.completed()),
            Family::Responses => {
                for (code, n) in t.status.iter() {
                    let extra = format!(",class=\"{}xx\",code=\"{code}\"", code / 100);
                    counter(out, "loadmark_responses", &extra, n);
                }
            }
            Family::Failed => counter(out, "loadmark_failed", "", t.failed()),
            Family::Errors => {
                for kind in ErrorKind::ALL {
                    let extra = format!(",kind=\"{}\"", kind.as_str());
                    counter(out, "loadmark_errors", &extra, t.errors.get(kind).count);
                }
            }
            Family::ReadBytes => counter(out, "loadmark_read_bytes", "", t.bytes_read),
            Family::WrittenBytes => counter(out, "loadmark_written_bytes", "", t.bytes_written),
            Family::ConnectionsOpened => {
                counter(out, "loadmark_connections_opened", "", t.connections_opened)
            }
            Family::Dropped => counter(out, "loadmark_dropped", "", t.dropped),
            Family::Retries => counter(out, "loadmark_retries", "", t.retries),
            Family::WsMessages => {
                if let Some(ws) = t.websocket.as_deref() {
                    counter(
                        out,
                        "loadmark_ws_messages",
                        ",direction=\"sent\"",
                        ws.messages_sent,
                    );
                    let received = ws.messages_received;
                    counter(
                        out,
                        "loadmark_ws_messages",
                        ",direction=\"received\"",
                        received,
                    );
                } else if self.websocket {
                    counter(out, "loadmark_ws_messages", ",direction=\"sent\"", 0);
                    counter(out, "loadmark_ws_messages", ",direction=\"received\"", 0);
                }
            }
            Family::Latency => write_histogram(out, &l, &ts, &t.latency),
            Family::MeasuredSeconds => {
                let _ = writeln!(
                    out,
                    "loadmark_measured_seconds{{{l}}} {}{ts}",
                    self.measured_s
                );
            }
            Family::WsSessions => {
                if self.websocket {
                    let n = t.websocket.as_deref().map_or(0, |w| w.sessions_opened);
                    counter(out, "loadmark_ws_sessions_opened", "", n);
                }
            }
            Family::InFlight => {
                let _ = writeln!(out, "loadmark_in_flight{{{l}}} {}", self.in_flight);
            }
            Family::OpenConnections => {
                let n = self.open_connections;
                let _ = writeln!(out, "loadmark_open_connections{{{l}}} {n}");
            }
            Family::OpenSessions => {
                if self.websocket {
                    let n = self.open_connections;
                    let _ = writeln!(out, "loadmark_open_sessions{{{l}}} {n}");
                }
            }
            Family::BusiestThread => {
                let b = self.busiest_worker.recent;
                let _ = writeln!(out, "loadmark_busiest_thread_cpu_ratio{{{l}}} {b:.4}");
            }
            Family::TargetRate => {
                if let Target::Rate(p) = &self.target {
                    let now = p.value_at(self.elapsed).filter(|_| !self.finished);
                    let _ = writeln!(out, "loadmark_target_rate{{{l}}} {}", now.unwrap_or(0.0));
                }
            }
            Family::TargetConnections => {
                let now = match &self.target {
                    Target::Rate(_) => return,
                    Target::Connections(p) => p.value_at(self.elapsed).unwrap_or(0.0),
                    Target::FixedConnections(n) => *n as f64,
                };
                let now = if self.finished { 0.0 } else { now };
                let _ = writeln!(out, "loadmark_target_connections{{{l}}} {now}");
            }
            Family::Warmup => {
                let on = !self.finished && self.elapsed < self.warmup;
                let _ = writeln!(out, "loadmark_warmup{{{l}}} {}", u8::from(on));
            }
            Family::Finished => {
                let _ = writeln!(out, "loadmark_finished{{{l}}} {}", u8::from(self.finished));
            }
        }
    }
}

/// The metric families, in exposition order, with their type and help.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Family {
    Info,
    Requests,
    Responses,
    Failed,
    Errors,
    ReadBytes,
    WrittenBytes,
    ConnectionsOpened,
    Dropped,
    Retries,
    WsMessages,
    WsSessions,
    Latency,
    MeasuredSeconds,
    InFlight,
    OpenConnections,
    OpenSessions,
    BusiestThread,
    TargetRate,
    TargetConnections,
    Warmup,
    Finished,
}

impl Family {
    pub(crate) const ALL: [Family; 22] = [
        Family::Info,
        Family::Requests,
        Family::Responses,
        Family::Failed,
        Family::Errors,
        Family::ReadBytes,
        Family::WrittenBytes,
        Family::ConnectionsOpened,
        Family::Dropped,
        Family::Retries,
        Family::WsMessages,
        Family::WsSessions,
        Family::Latency,
        Family::MeasuredSeconds,
        Family::InFlight,
        Family::OpenConnections,
        Family::OpenSessions,
        Family::BusiestThread,
        Family::TargetRate,
        Family::TargetConnections,
        Family::Warmup,
        Family::Finished,
    ];

    /// (name, type, unit, help)
    pub(crate) fn meta(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            Family::Info => ("loadmark_run", "info", "", "The run: its id, plan step, URL and protocol."),
            Family::Requests => ("loadmark_requests", "counter", "", "Requests ended after warm-up: responses of any status plus transport errors."),
            Family::Responses => ("loadmark_responses", "counter", "", "Responses by status class and code."),
            Family::Failed => ("loadmark_failed", "counter", "", "Transport errors plus non-2xx/3xx responses."),
            Family::Errors => ("loadmark_errors", "counter", "", "Requests that failed without a complete response, by kind."),
            Family::ReadBytes => ("loadmark_read_bytes", "counter", "bytes", "Bytes read from the server."),
            Family::WrittenBytes => ("loadmark_written_bytes", "counter", "bytes", "Bytes of requests written."),
            Family::ConnectionsOpened => ("loadmark_connections_opened", "counter", "", "Connections opened."),
            Family::Dropped => ("loadmark_dropped", "counter", "", "Open loop: requests due while every connection was busy and the cap was reached."),
            Family::Retries => ("loadmark_retries", "counter", "", "Requests sent again after a reused connection closed before any response byte."),
            Family::WsMessages => ("loadmark_ws_messages", "counter", "", "WebSocket data messages by direction."),
            Family::Latency => ("loadmark_latency_seconds", "histogram", "seconds", "Response latency as the report defines it (open loop: from the intended send time)."),
            Family::MeasuredSeconds => ("loadmark_measured_seconds", "gauge", "seconds", "The run time the counters cover (warm-up excluded)."),
            Family::WsSessions => ("loadmark_ws_sessions_opened", "counter", "", "WebSocket sessions opened (upgrade answered 101)."),
            Family::InFlight => ("loadmark_in_flight", "gauge", "", "Requests begun and not yet ended."),
            Family::OpenConnections => ("loadmark_open_connections", "gauge", "", "Connections open now, from connect to close (WebSocket: one per session, the upgrade included)."),
            Family::OpenSessions => ("loadmark_open_sessions", "gauge", "", "WebSocket sessions open now: their connections, from connect to close."),
            Family::BusiestThread => ("loadmark_busiest_thread_cpu_ratio", "gauge", "", "The busiest load thread's CPU over the last second, idle polling left out (1 is a whole core; the report calls the client saturated from 0.9 over the run)."),
            Family::TargetRate => ("loadmark_target_rate", "gauge", "", "Open loop: the requested rate now, requests per second."),
            Family::TargetConnections => ("loadmark_target_connections", "gauge", "", "Closed loop: the connections asked for now."),
            Family::Warmup => ("loadmark_warmup", "gauge", "", "1 while warming up (its requests are left out of the counters)."),
            Family::Finished => ("loadmark_finished", "gauge", "", "1 once the run has stopped and the counters are final."),
        }
    }
}

/// The cumulative buckets of an HDR histogram of microseconds. A bucket's bound holds to the
/// histogram's precision (3 significant digits): a value within 0.1% above a bound may count
/// in it.
fn write_histogram(out: &mut String, l: &str, ts: &str, h: &hdrhistogram::Histogram<u64>) {
    let mut counts = [0u64; LATENCY_BUCKETS_S.len()];
    let mut sum_us = 0f64;
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        let n = v.count_at_value();
        sum_us += h.median_equivalent(value) as f64 * n as f64;
        let value_s = h.lowest_equivalent(value) as f64 / 1e6;
        if let Some(i) = LATENCY_BUCKETS_S.iter().position(|&b| value_s <= b) {
            counts[i] += n;
        }
    }
    let mut cumulative = 0;
    for (bound, n) in LATENCY_BUCKETS_S.iter().zip(counts) {
        cumulative += n;
        let _ = writeln!(
            out,
            "loadmark_latency_seconds_bucket{{{l},le=\"{bound}\"}} {cumulative}{ts}"
        );
    }
    let count = h.len();
    let _ = writeln!(
        out,
        "loadmark_latency_seconds_bucket{{{l},le=\"+Inf\"}} {count}{ts}"
    );
    let _ = writeln!(out, "loadmark_latency_seconds_count{{{l}}} {count}{ts}");
    let _ = writeln!(
        out,
        "loadmark_latency_seconds_sum{{{l}}} {}{ts}",
        sum_us / 1e6
    );
}

/// The whole exposition of every step so far (OpenMetrics: ending with `# EOF`).
pub(crate) fn render(steps: &[StepState], format: Format) -> String {
    let mut out = String::with_capacity(8 * 1024);
    for family in Family::ALL {
        let mut body = String::new();
        for s in steps {
            s.write(family, format, &mut body);
        }
        if body.is_empty() {
            continue;
        }
        let (name, kind, unit, help) = family.meta();
        match format {
            Format::OpenMetrics => {
                let _ = writeln!(out, "# TYPE {name} {kind}");
                if !unit.is_empty() {
                    let _ = writeln!(out, "# UNIT {name} {unit}");
                }
                let _ = writeln!(out, "# HELP {name} {help}");
            }
            Format::Text => {
                // The 0.0.4 format names the sample, and knows no info type.
                let (name, kind) = match kind {
                    "counter" => (format!("{name}_total"), kind),
                    "info" => (format!("{name}_info"), "gauge"),
                    _ => (name.to_string(), kind),
                };
                let _ = writeln!(out, "# HELP {name} {help}");
                let _ = writeln!(out, "# TYPE {name} {kind}");
            }
        }
        out.push_str(&body);
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use loadmark_metrics::{Second, SeriesPoint};
    use loadmark_plan::{RequestSpec, Stop, Target as Url, Timeouts, TlsPolicy};

    pub(crate) fn plan() -> Plan {
        Plan {
            request: RequestSpec {
                method: "GET".into(),
                url: Url::parse("http://127.0.0.1:8080/").unwrap(),
                headers: Vec::new(),
                body: Vec::new(),
                keep_alive: true,
            },
            load: Load::Closed {
                connections: 2,
                threads: 1,
            },
            stop: Stop::Duration(Duration::from_secs(2)),
            timeouts: Timeouts::default(),
            warmup: Duration::from_secs(1),
            tls: TlsPolicy::Verify,
            mix: Default::default(),
            websocket: None,
            script: None,
            protocol: Default::default(),
            checks: Vec::new(),
            scenario: None,
            scenarios: Vec::new(),
            cookies: false,
        }
    }

    fn second(n: u64, warmup: bool, latencies_us: &[u64]) -> Second {
        let mut snapshot = Snapshot::default();
        for &us in latencies_us {
            snapshot.responses += 1;
            snapshot.status.record(if us > 1000 { 503 } else { 200 });
            snapshot.latency.record(us).unwrap();
        }
        let mut point = SeriesPoint::empty(n, warmup);
        point.responses = snapshot.responses;
        Second { point, snapshot }
    }

    const OPENMETRICS_ACCEPT: &str =
        "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";

    #[test]
    fn counters_leave_warmup_out_and_the_exposition_is_well_formed() {
        let labels = Labels {
            run_id: "r\"1".into(),
            step: 1,
            segment: None,
        };
        let mut step = StepState::new(labels, &plan());
        let seconds = [
            second(0, true, &[50, 60]),
            second(1, false, &[90, 400, 2_000]),
        ];
        step.tick(&Tick {
            elapsed: Duration::from_millis(2_500),
            seconds: &seconds,
            in_flight: 3,
            open_connections: 2,
            finished: true,
            ..Tick::default()
        });
        let text = render(std::slice::from_ref(&step), Format::OpenMetrics);
        let l = "run_id=\"r\\\"1\",step=\"1\"";
        assert!(text.ends_with("# EOF\n"));
        assert!(
            text.contains(&format!("loadmark_requests_total{{{l}}} 3 ")),
            "{text}"
        );
        assert!(text.contains(&format!(
            "loadmark_responses_total{{{l},class=\"5xx\",code=\"503\"}} 1 "
        )));
        assert!(text.contains(&format!(
            "loadmark_latency_seconds_bucket{{{l},le=\"0.0001\"}} 1 "
        )));
        assert!(text.contains(&format!(
            "loadmark_latency_seconds_bucket{{{l},le=\"0.0025\"}} 3 "
        )));
        assert!(text.contains(&format!("loadmark_latency_seconds_count{{{l}}} 3 ")));
        assert!(text.contains(&format!("loadmark_measured_seconds{{{l}}} 1 ")));
        assert!(text.contains(&format!("loadmark_open_connections{{{l}}} 2\n")));
        assert!(
            !text.contains("loadmark_open_sessions"),
            "sessions only for WebSocket runs"
        );
        // Prometheus text 0.0.4 for scrapers that do not ask for OpenMetrics: the sample's
        // name in TYPE, no UNIT or EOF, timestamps in whole milliseconds.
        let plain = render(std::slice::from_ref(&step), Format::Text);
        assert!(
            plain.contains("# TYPE loadmark_requests_total counter\n"),
            "{plain}"
        );
        assert!(plain.contains("# TYPE loadmark_run_info gauge\n"));
        assert!(!plain.contains("# EOF") && !plain.contains("# UNIT"));
        let line = plain
            .lines()
            .find(|l| l.starts_with("loadmark_requests_total{"))
            .unwrap();
        let ts = line.rsplit(' ').next().unwrap();
        assert!(
            ts.len() >= 13 && ts.bytes().all(|b| b.is_ascii_digit()),
            "{line}"
        );
        assert_eq!(Format::from_accept(OPENMETRICS_ACCEPT), Format::OpenMetrics);
        assert_eq!(
            Format::from_accept("text/plain;version=0.0.4"),
            Format::Text
        );
        // Every family is announced once, before its samples, and its samples are together.
        let mut seen = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap().to_string();
                assert!(!seen.contains(&name), "{name} announced twice");
                seen.push(name);
            } else if !line.starts_with('#') {
                let family = seen.last().expect("a sample after its TYPE");
                assert!(line.starts_with(family.as_str()), "{line} outside {family}");
            }
        }
    }
}

#[cfg(test)]
mod segment_tests {
    use super::*;

    #[test]
    fn a_segment_is_labelled_so_segments_add_up_in_promql() {
        let plan = loadmark_plan::Plan {
            warmup: Duration::ZERO,
            ..super::tests::plan()
        };
        let labels = Labels {
            run_id: "r".into(),
            step: 2,
            segment: Some("1/3".into()),
        };
        let step = StepState::new(labels, &plan);
        let text = render(std::slice::from_ref(&step), Format::OpenMetrics);
        assert!(
            text.contains("loadmark_requests_total{run_id=\"r\",step=\"2\",segment=\"1/3\"} 0"),
            "{text}"
        );
    }
}
