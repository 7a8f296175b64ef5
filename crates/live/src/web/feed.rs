//! What the web dashboard's page is sent, as JSON events, built from the same ticks the other
//! live views get: pure, so it is tested without a socket or a browser.
//!
//! Events, in order: `step` (a plan step begins: what it runs), `tick` (the seconds made
//! final since the last tick, each with its counts and percentiles, and the state now:
//! in flight, open connections, the busiest worker), `step_end` (the step's totals, as its
//! report has them: measured seconds only, warm-up left out), and `end` (the final report can
//! be fetched from `/report`). A page that joins late is sent every event kept (see
//! [`Log`]), so it draws the run from its start.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use loadmark_metrics::{ErrorKind, SeriesPoint, Snapshot};
use loadmark_plan::{Load, Plan, Stop};
use loadmark_report::{LATE_LAG_P99_US, SATURATED_BUSY};
use serde_json::{json, Value};

use crate::Tick;

/// The events of one process's run, built tick by tick.
pub(crate) struct Feed {
    step: u32,
    load: Load,
    warmup: Duration,
    url: String,
    /// The step's seconds after warm-up, merged: its totals at `step_end`.
    totals: Snapshot,
}

impl Feed {
    pub(crate) fn new() -> Self {
        Feed {
            step: 0,
            load: Load::Closed {
                connections: 1,
                threads: 1,
            },
            warmup: Duration::ZERO,
            url: String::new(),
            totals: Snapshot::default(),
        }
    }

    /// Plan step `step` of `steps` begins.
    pub(crate) fn begin(&mut self, plan: &Plan, step: u32, steps: u32) -> Value {
        self.step = step;
        self.load = plan.load.clone();
        self.warmup = plan.warmup;
        self.url = plan.request.url.to_string();
        self.totals = Snapshot::default();
        let (model, rate) = match &plan.load {
            Load::Open { rate, .. } => ("open", rate.value_at(Duration::ZERO)),
            Load::Closed { connections, .. } => ("closed", Some(*connections as f64)),
            Load::Ramp { connections, .. } => ("ramp", connections.value_at(Duration::ZERO)),
        };
        let (duration_s, requests) = match plan.stop {
            Stop::Duration(d) => (Some(d.as_secs_f64()), None),
            Stop::Requests(n) => (None, Some(n)),
        };
        json!({
            "type": "step",
            "step": step,
            "steps": steps,
            "url": self.url,
            "websocket": plan.websocket.is_some(),
            "model": model,
            "target": rate,
            "duration_s": duration_s,
            "requests": requests,
            "warmup_s": plan.warmup.as_secs_f64(),
        })
    }

    /// A tick: its seconds and the state now; a last tick also ends the step.
    pub(crate) fn tick(&mut self, tick: &Tick) -> Vec<Value> {
        let seconds: Vec<Value> = tick
            .seconds
            .iter()
            .map(|s| {
                if !s.point.warmup {
                    self.totals.merge(&s.snapshot);
                }
                // A second the run's clock has not passed yet is a fragment (the run ended
                // inside it; it can come before the last tick): no rate, so the page leaves
                // it out of its charts. Marked as the report marks it, with the tick's clock.
                let mut point = s.point.clone();
                point.mark_partial(tick.elapsed);
                self.second(&point, &s.snapshot)
            })
            .collect();
        let busy = tick.busiest_worker.recent;
        let mut events = vec![json!({
            "type": "tick",
            "step": self.step,
            "elapsed_s": tick.elapsed.as_secs_f64(),
            "in_flight": tick.in_flight,
            "open_connections": tick.open_connections,
            "busiest_worker": busy,
            "saturated": busy >= SATURATED_BUSY,
            "finished": tick.finished,
            "seconds": seconds,
        })];
        if tick.finished {
            events.push(self.step_end(tick.elapsed));
        }
        events
    }

    fn second(&self, point: &SeriesPoint, snap: &Snapshot) -> Value {
        let at = Duration::from_secs(point.second);
        let target = match &self.load {
            Load::Open { rate, .. } => rate.value_at(at),
            Load::Ramp { connections, .. } => connections.value_at(at),
            Load::Closed { connections, .. } => Some(*connections as f64),
        };
        let lag_p99 = snap.lag.value_at_quantile(0.99);
        json!({
            "second": point.second,
            "warmup": point.warmup,
            "partial_s": point.partial_s,
            "responses": snap.responses,
            "failed": point.failed,
            "errors": errors(snap),
            "status": status_classes(snap),
            "p50_us": snap.latency.value_at_quantile(0.5),
            "p90_us": snap.latency.value_at_quantile(0.9),
            "p99_us": snap.latency.value_at_quantile(0.99),
            "max_us": snap.latency.max(),
            "lag_p99_us": lag_p99,
            "late": lag_p99 > LATE_LAG_P99_US,
            "dropped": snap.dropped,
            "opened": snap.connections_opened,
            "target": target,
            "checks_failed": snap.checks.as_ref().map_or(0, |c| c.failed_responses),
            "messages_sent": point.messages_sent,
            "messages_received": point.messages_received,
        })
    }

    /// The step's totals over its measured time, as its report counts them.
    fn step_end(&self, elapsed: Duration) -> Value {
        let t = &self.totals;
        let measured_s = elapsed.saturating_sub(self.warmup).as_secs_f64();
        let rps = if measured_s > 0.0 {
            t.responses as f64 / measured_s
        } else {
            0.0
        };
        json!({
            "type": "step_end",
            "step": self.step,
            "url": self.url,
            "responses": t.responses,
            "failed": t.failed(),
            "errors": errors(t),
            "rps": rps,
            "measured_s": measured_s,
            "p50_us": t.latency.value_at_quantile(0.5),
            "p99_us": t.latency.value_at_quantile(0.99),
            "max_us": t.latency.max(),
            "dropped": t.dropped,
            "checks_failed": t.checks.as_ref().map_or(0, |c| c.failed_responses),
        })
    }
}

/// Transport errors by kind, the kinds that occurred.
fn errors(snap: &Snapshot) -> Value {
    let mut map = serde_json::Map::new();
    for kind in ErrorKind::ALL {
        let n = snap.errors.get(kind).count;
        if n > 0 {
            map.insert(kind.as_str().to_string(), n.into());
        }
    }
    Value::Object(map)
}

/// Responses by status class ("2xx", ...), the classes that occurred.
fn status_classes(snap: &Snapshot) -> Value {
    let mut map = serde_json::Map::new();
    for class in 1..=5u16 {
        let n = snap.status.class(class);
        if n > 0 {
            map.insert(format!("{class}xx"), n.into());
        }
    }
    Value::Object(map)
}

/// The events kept for pages, numbered from 1: at most `cap`, the oldest forgotten first, so
/// a run of any length holds bounded memory (a page that joins after that misses the
/// forgotten ones and is told so).
pub(crate) struct Log {
    events: VecDeque<Arc<str>>,
    /// The number of the oldest event kept.
    first: u64,
    cap: usize,
}

impl Log {
    pub(crate) fn new(cap: usize) -> Self {
        Log {
            events: VecDeque::new(),
            first: 1,
            cap: cap.max(1),
        }
    }

    /// Adds an event; returns its number.
    pub(crate) fn push(&mut self, event: &Value) -> u64 {
        if self.events.len() == self.cap {
            self.events.pop_front();
            self.first += 1;
        }
        self.events.push_back(event.to_string().into());
        self.next() - 1
    }

    /// The number the next event will have.
    pub(crate) fn next(&self) -> u64 {
        self.first + self.events.len() as u64
    }

    /// Events from number `from` on, at most `max` of them, with their numbers; and whether
    /// some before the first returned were forgotten (the page missed them).
    pub(crate) fn since(&self, from: u64, max: usize) -> (Vec<(u64, Arc<str>)>, bool) {
        let start = from.max(self.first);
        let skip = (start - self.first) as usize;
        let out = self
            .events
            .iter()
            .skip(skip)
            .take(max)
            .enumerate()
            .map(|(i, e)| (start + i as u64, e.clone()))
            .collect();
        (out, from < self.first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openmetrics::tests::plan;
    use loadmark_metrics::{Busy, Second};

    fn second(n: u64, warmup: bool, responses: u64, latency_us: u64) -> Second {
        let mut snapshot = Snapshot::default();
        for _ in 0..responses {
            snapshot.responses += 1;
            snapshot.status.record(200);
            loadmark_metrics::record_us(&mut snapshot.latency, latency_us);
        }
        snapshot
            .errors
            .record(ErrorKind::Connect, &"connection refused");
        let mut point = SeriesPoint::empty(n, warmup);
        point.responses = responses;
        point.failed = 1;
        Second { point, snapshot }
    }

    #[test]
    fn a_step_reports_its_seconds_and_totals_without_warm_up() {
        let mut feed = Feed::new();
        let begin = feed.begin(&plan(), 2, 3);
        assert_eq!(
            (begin["step"].as_u64(), begin["steps"].as_u64()),
            (Some(2), Some(3))
        );
        let seconds = [second(0, true, 50, 100), second(1, false, 100, 200)];
        let events = feed.tick(&Tick {
            elapsed: Duration::from_secs(3),
            seconds: &seconds,
            in_flight: 4,
            open_connections: 8,
            busiest_worker: Busy {
                so_far: 0.5,
                recent: 0.97,
            },
            finished: true,
        });
        assert_eq!(events.len(), 2);
        let tick = &events[0];
        assert_eq!(tick["saturated"], true);
        assert_eq!(tick["seconds"][1]["responses"], 100);
        assert_eq!(tick["seconds"][1]["errors"]["connect"], 1);
        assert_eq!(tick["seconds"][1]["status"]["2xx"], 100);
        // The run's clock passed seconds 0 and 1: they are whole.
        assert!(tick["seconds"][1]["partial_s"].is_null());
        let end = &events[1];
        assert_eq!(end["type"], "step_end");
        // Warm-up's 50 responses and its error are left out, as the report leaves them.
        assert_eq!(end["responses"], 100);
        assert_eq!(end["failed"], 1);
        // 100 responses over the 2 measured seconds (3 s less 1 s of warm-up).
        assert_eq!(end["rps"], 50.0);
        // A second the clock is 3 ms into, before the last tick: a fragment.
        let events = Feed::new().tick(&Tick {
            elapsed: Duration::from_millis(2_003),
            seconds: &[second(2, false, 3, 100)],
            ..Tick::default()
        });
        assert_eq!(events[0]["seconds"][0]["partial_s"], 0.003);
    }

    #[test]
    fn the_log_keeps_the_newest_events_and_says_what_a_late_page_missed() {
        let mut log = Log::new(3);
        for i in 0..5 {
            assert_eq!(log.push(&json!({ "i": i })), i + 1);
        }
        let (events, missed) = log.since(1, 10);
        assert!(missed);
        assert_eq!(
            events.iter().map(|e| e.0).collect::<Vec<_>>(),
            vec![3, 4, 5]
        );
        let (events, missed) = log.since(5, 10);
        assert!(!missed && events.len() == 1 && &*events[0].1 == r#"{"i":4}"#);
        assert!(log.since(6, 10).0.is_empty());
        assert_eq!(log.since(3, 2).0.len(), 2);
    }
}
