//! [`Aggregate`]: adds the workers' seconds into the per-second series and the run's totals.

use serde::{Deserialize, Serialize};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::time::Duration;

use crate::recorder::{Busy, WorkerReport};
use crate::snapshot::Snapshot;

/// One second of the run, all workers added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SeriesPoint {
    /// Seconds since the run started.
    pub second: u64,
    /// True while warming up: shown in the series, left out of the totals.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
    pub responses: u64,
    pub errors: u64,
    /// Transport errors plus non-2xx/3xx responses.
    pub failed: u64,
    pub bytes_read: u64,
    pub connections_opened: u64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
    pub latency_max_us: u64,
    /// WebSocket runs: data messages sent and received in this second.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub messages_sent: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub messages_received: u64,
    /// The run's last second, when the run ended inside it: how much of it the run covered, in
    /// seconds (e.g. 0.004 for a 5.004 s run). Its counts are real and part of the totals,
    /// but they are not a rate: charts and CSV leave such a fragment out. Absent for whole
    /// seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_s: Option<f64>,
    /// Plans with several scenarios at once (`scenarios:`): each one's figures in this
    /// second, by name, so a report can chart each scenario over time. Absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<ScenarioPoint>,
}

/// One scenario's second, of a plan with several at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioPoint {
    pub name: String,
    /// Its requests that ended in this second (responses and errors), over every step.
    pub requests: u64,
    /// Transport errors plus non-2xx/3xx responses among them.
    pub failed: u64,
    /// Its iterations that ran every step and ended in this second.
    pub iterations: u64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
    pub latency_max_us: u64,
}

impl ScenarioPoint {
    fn of(s: &crate::scenario::ScenarioStats) -> Self {
        let (mut requests, mut failed) = (0, 0);
        for st in &s.steps {
            requests += st.completed();
            failed += st.errors.total() + st.status.not_success();
        }
        // One step's histogram is read as it is; several are added into one (a few per
        // second, a few scenarios: nothing beside the second's own work).
        let merged;
        let latency = match s.steps.as_slice() {
            [one] => &one.latency,
            steps => {
                let mut all = crate::new_histogram();
                for st in steps {
                    all.add(&st.latency).expect("same histogram bounds");
                }
                merged = all;
                &merged
            }
        };
        ScenarioPoint {
            name: s.name.clone().unwrap_or_default(),
            requests,
            failed,
            iterations: s.iterations,
            latency_p50_us: latency.value_at_quantile(0.5),
            latency_p99_us: latency.value_at_quantile(0.99),
            latency_max_us: latency.max(),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl SeriesPoint {
    /// A second with nothing in it.
    pub fn empty(second: u64, warmup: bool) -> Self {
        Self::from_snapshot(second, warmup, &Snapshot::default())
    }

    fn from_snapshot(second: u64, warmup: bool, s: &Snapshot) -> Self {
        SeriesPoint {
            second,
            warmup,
            responses: s.responses,
            errors: s.errors.total(),
            failed: s.failed(),
            bytes_read: s.bytes_read,
            connections_opened: s.connections_opened,
            latency_p50_us: s.latency.value_at_quantile(0.5),
            latency_p99_us: s.latency.value_at_quantile(0.99),
            latency_max_us: s.latency.max(),
            messages_sent: s.websocket.as_ref().map_or(0, |w| w.messages_sent),
            messages_received: s.websocket.as_ref().map_or(0, |w| w.messages_received),
            partial_s: None,
            scenarios: s.scenarios.iter().map(ScenarioPoint::of).collect(),
        }
    }

    /// Marks this second with the part of it a run of `elapsed` covered, when that is not
    /// the whole second (the run's last second, and any straggler past it). The report and
    /// the live stream both mark with this, so their series agree exactly.
    pub fn mark_partial(&mut self, elapsed: Duration) {
        let covered = (elapsed.as_secs_f64() - self.second as f64).clamp(0.0, 1.0);
        self.partial_s = (covered < 1.0 - 1e-3).then(|| (covered * 1e3).round() / 1e3);
    }
}

/// One final second of the run, all workers added: its series point and everything measured
/// in it (what a live view, an exporter or a streamed result is fed with).
#[derive(Debug, Clone)]
pub struct Second {
    pub point: SeriesPoint,
    pub snapshot: Snapshot,
}

/// The result of a run: totals over the measured time and the series over all of it.
#[derive(Debug, Clone)]
pub struct Totals {
    /// Everything after warm-up.
    pub snapshot: Snapshot,
    /// Requests that ended during warm-up (left out of `snapshot`).
    pub warmup_completed: u64,
    /// Requests begun but not ended when the run stopped. Not counted as errors.
    pub in_flight: u64,
    /// One point per second from second 0 to the last second with data, gaps filled with zeros.
    pub series: Vec<SeriesPoint>,
}

/// Adds worker reports. A second is final once every worker's watermark passed it; until then
/// it is held (so a second's histograms exist only for a moment and memory stays bounded).
pub struct Aggregate {
    warmup_seconds: u64,
    watermarks: Vec<u64>,
    pending: BTreeMap<u64, Snapshot>,
    totals: Totals,
    /// Final seconds not yet taken, kept only when asked ([`Aggregate::keep_seconds`]).
    outbox: Option<Vec<Second>>,
    /// Each worker's requests in flight at its latest hand-over.
    in_flight_now: Vec<u64>,
    /// Each worker's CPU use at its latest hand-over.
    busy_now: Vec<Busy>,
}

impl Aggregate {
    /// `workers` is how many workers report (each by its index); the first `warmup_seconds`
    /// seconds are warm-up.
    pub fn new(workers: usize, warmup_seconds: u64) -> Self {
        Aggregate {
            warmup_seconds,
            watermarks: vec![0; workers.max(1)],
            pending: BTreeMap::new(),
            totals: Totals {
                snapshot: Snapshot::default(),
                warmup_completed: 0,
                in_flight: 0,
                series: Vec::new(),
            },
            outbox: None,
            in_flight_now: vec![0; workers.max(1)],
            busy_now: vec![Busy::default(); workers.max(1)],
        }
    }

    /// Keeps every second made final, with its snapshot, until [`Aggregate::take_seconds`].
    /// Off by default: a run nobody watches keeps no second longer than it takes to add it.
    pub fn keep_seconds(&mut self) {
        self.outbox.get_or_insert_with(Vec::new);
    }

    /// The seconds made final since the last call, in order (empty unless kept).
    pub fn take_seconds(&mut self) -> Vec<Second> {
        self.outbox.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Requests in flight at the workers' latest hand-overs, added.
    pub fn in_flight_now(&self) -> u64 {
        self.in_flight_now.iter().sum()
    }

    /// The busiest worker's CPU use at the latest hand-overs (each share the largest of
    /// any worker's).
    pub fn busiest_now(&self) -> Busy {
        self.busy_now.iter().fold(Busy::default(), |m, b| Busy {
            so_far: m.so_far.max(b.so_far),
            recent: m.recent.max(b.recent),
        })
    }

    /// Adds the report of worker 0 (single-worker shortcut used by tests and examples).
    pub fn add(&mut self, report: WorkerReport) {
        self.add_from(0, report);
    }

    /// Adds one worker's report.
    pub fn add_from(&mut self, worker: usize, report: WorkerReport) {
        for interval in report.intervals {
            // The first worker's second is kept as it is: a fresh snapshot to merge it into
            // would be five more histograms (~1 MiB) alive each second.
            match self.pending.entry(interval.second) {
                Entry::Vacant(slot) => {
                    slot.insert(interval.snapshot);
                }
                Entry::Occupied(mut slot) => slot.get_mut().merge(&interval.snapshot),
            }
        }
        self.totals.in_flight += report.in_flight;
        if let Some(n) = self.in_flight_now.get_mut(worker) {
            *n = report.in_flight_now;
        }
        if let Some(b) = self.busy_now.get_mut(worker) {
            *b = report.busy;
        }
        if let Some(w) = self.watermarks.get_mut(worker) {
            *w = (*w).max(report.watermark);
        }
        let complete_before = self.watermarks.iter().copied().min().unwrap_or(0);
        while let Some(entry) = self.pending.first_entry() {
            if *entry.key() >= complete_before {
                break;
            }
            let (second, snapshot) = entry.remove_entry();
            self.finalize(second, snapshot);
        }
    }

    fn finalize(&mut self, second: u64, snapshot: Snapshot) {
        let next = self.totals.series.len() as u64;
        for gap in next..second {
            let warmup = gap < self.warmup_seconds;
            let empty = Snapshot::default();
            let point = SeriesPoint::from_snapshot(gap, warmup, &empty);
            self.totals.series.push(point.clone());
            if let Some(out) = &mut self.outbox {
                out.push(Second {
                    point,
                    snapshot: empty,
                });
            }
        }
        let warmup = second < self.warmup_seconds;
        let point = SeriesPoint::from_snapshot(second, warmup, &snapshot);
        self.totals.series.push(point.clone());
        if warmup {
            self.totals.warmup_completed += snapshot.completed();
        } else {
            self.totals.snapshot.merge(&snapshot);
        }
        if let Some(out) = &mut self.outbox {
            out.push(Second { point, snapshot });
        }
    }

    /// Final seconds so far (for live progress).
    pub fn series(&self) -> &[SeriesPoint] {
        &self.totals.series
    }

    /// Totals of the final seconds so far, warm-up excluded (for live progress).
    pub fn snapshot(&self) -> &Snapshot {
        &self.totals.snapshot
    }

    /// Requests ended so far, including seconds not yet final and warm-up.
    pub fn completed_so_far(&self) -> u64 {
        self.totals.snapshot.completed()
            + self.totals.warmup_completed
            + self.pending.values().map(Snapshot::completed).sum::<u64>()
    }

    /// Makes every held second final (once every worker is done: nothing more can come).
    pub fn finish_held(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for (second, snapshot) in pending {
            self.finalize(second, snapshot);
        }
    }

    /// Makes every held second final and returns the totals.
    pub fn finish(mut self) -> Totals {
        self.finish_held();
        self.totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, Recorder, Sample};
    use std::time::{Duration, Instant};

    fn ok(origin: Instant, end_ms: u64) -> Sample {
        let ended = origin + Duration::from_millis(end_ms);
        Sample {
            scheduled: None,
            started: ended - Duration::from_micros(100),
            first_byte: ended,
            ended,
            status: 200,
            bytes_read: 1,
            bytes_written: 1,
        }
    }

    #[test]
    fn holds_a_second_until_every_worker_passed_it() {
        let origin = Instant::now();
        let mut a = Recorder::new(origin);
        let mut b = Recorder::new(origin);
        let mut agg = Aggregate::new(2, 0);
        a.record(&ok(origin, 10));
        b.record(&ok(origin, 20));
        agg.add_from(0, a.drain(origin + Duration::from_millis(1_100)));
        assert!(agg.series().is_empty(), "worker 1 has not passed second 0");
        agg.add_from(1, b.drain(origin + Duration::from_millis(1_050)));
        assert_eq!(agg.series().len(), 1);
        assert_eq!(agg.series()[0].responses, 2);
    }

    #[test]
    fn warmup_is_in_series_not_totals_and_gaps_are_zero() {
        let origin = Instant::now();
        let mut r = Recorder::new(origin);
        r.record(&ok(origin, 500)); // warm-up
        r.record(&ok(origin, 1_500));
        r.record_error(
            ErrorKind::Timeout,
            origin + Duration::from_millis(3_500),
            &"t",
        );
        let mut agg = Aggregate::new(1, 1);
        let mut report = r.finish();
        report.in_flight = 4;
        agg.add(report);
        let t = agg.finish();
        assert_eq!(t.series.len(), 4);
        assert!(t.series[0].warmup && !t.series[1].warmup);
        assert_eq!(t.series[2].responses, 0, "gap filled");
        assert_eq!(t.series[3].errors, 1);
        assert_eq!(t.warmup_completed, 1);
        assert_eq!(t.snapshot.responses, 1);
        assert_eq!(t.snapshot.completed(), 2);
        assert_eq!(t.in_flight, 4);
        let per_second: u64 = t
            .series
            .iter()
            .filter(|p| !p.warmup)
            .map(|p| p.responses + p.errors)
            .sum();
        assert_eq!(
            per_second,
            t.snapshot.completed(),
            "series adds up to totals"
        );
    }

    #[test]
    fn kept_seconds_come_out_once_in_order_and_add_up_to_the_totals() {
        let origin = Instant::now();
        let mut r = Recorder::new(origin);
        let mut agg = Aggregate::new(1, 1);
        agg.keep_seconds();
        r.record(&ok(origin, 500)); // warm-up
        r.record(&ok(origin, 1_500));
        agg.add(r.drain(origin + Duration::from_millis(2_100)));
        let first = agg.take_seconds();
        assert_eq!(
            first.iter().map(|s| s.point.second).collect::<Vec<_>>(),
            [0, 1]
        );
        assert!(agg.take_seconds().is_empty(), "each second comes out once");
        r.record(&ok(origin, 3_200)); // second 3; second 2 is a gap
        let mut last = r.finish();
        last.in_flight_now = 2;
        agg.add(last);
        assert_eq!(agg.in_flight_now(), 2);
        agg.finish_held();
        let rest = agg.take_seconds();
        assert_eq!(
            rest.iter().map(|s| s.point.second).collect::<Vec<_>>(),
            [2, 3]
        );
        let mut sum = Snapshot::default();
        for s in first.iter().chain(&rest).filter(|s| !s.point.warmup) {
            assert_eq!(s.point.responses, s.snapshot.responses);
            sum.merge(&s.snapshot);
        }
        let totals = agg.finish();
        assert_eq!(sum, totals.snapshot, "kept seconds add up to the totals");
        let mut p = totals.series[3].clone();
        p.mark_partial(Duration::from_millis(3_250));
        assert_eq!(p.partial_s, Some(0.25));
        p.mark_partial(Duration::from_millis(4_000));
        assert_eq!(p.partial_s, None);
    }
}
