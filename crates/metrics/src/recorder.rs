//! The per-worker [`Recorder`]: owned by one thread, never locked, cut into seconds.

use std::fmt;
use std::time::{Duration, Instant};

use crate::error_kind::ErrorKind;
use crate::snapshot::Snapshot;
use crate::websocket::WsStats;

/// One response, as the executor saw it.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// The intended send time of an open-loop request: latency is measured from it, so time
    /// spent waiting to be sent counts (no coordinated omission). `None` in a closed loop.
    pub scheduled: Option<Instant>,
    /// When the first byte of the request was written.
    pub started: Instant,
    /// When the first byte of the response was read.
    pub first_byte: Instant,
    /// When the last byte of the response was read.
    pub ended: Instant,
    pub status: u16,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

/// One worker's measurements for one second of the run (second 0 starts at the origin).
#[derive(Debug, Clone)]
pub struct Interval {
    pub second: u64,
    pub snapshot: Snapshot,
}

/// What a worker hands to the [`crate::Aggregate`]: its closed seconds, and a watermark saying
/// that it will send nothing more for seconds before it.
#[derive(Debug, Clone, Default)]
pub struct WorkerReport {
    pub intervals: Vec<Interval>,
    pub watermark: u64,
    /// Requests begun but not finished when the worker stopped (set only by [`Recorder::finish`]).
    pub in_flight: u64,
    /// Requests begun and not yet finished at this hand-over (a gauge for live views).
    pub in_flight_now: u64,
    /// The worker thread's CPU use at this hand-over (set by the engine; for live views).
    pub busy: Busy,
}

/// A load thread's CPU time, its idle polling left out, as a share of one core (1.0 is a
/// whole core): what the report's saturation verdict is made of, for live views.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Busy {
    /// Since the run's start (the report's `busiest_worker` is this at the end).
    pub so_far: f64,
    /// Since the worker's previous hand-over (about the last second).
    pub recent: f64,
}

/// Records samples of one worker into the current second's [`Snapshot`].
pub struct Recorder {
    origin: Instant,
    second: u64,
    current: Snapshot,
    current_used: bool,
    closed: Vec<Interval>,
}

fn saturating_us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Recorder {
    /// `origin` is the run's start: second k covers `[origin + k s, origin + (k+1) s)`.
    pub fn new(origin: Instant) -> Self {
        Recorder {
            origin,
            second: 0,
            current: Snapshot::default(),
            current_used: false,
            closed: Vec::new(),
        }
    }

    pub fn origin(&self) -> Instant {
        self.origin
    }

    fn second_of(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.origin).as_secs()
    }

    /// Makes the second of `at` current, closing the one before if it moved on.
    /// Events from an earlier second (rare: a late timestamp) stay in the current one.
    fn at(&mut self, at: Instant) -> &mut Snapshot {
        let second = self.second_of(at);
        if second > self.second {
            self.close_current();
            self.second = second;
        }
        self.current_used = true;
        &mut self.current
    }

    fn close_current(&mut self) {
        if self.current_used {
            let snapshot = std::mem::take(&mut self.current);
            self.closed.push(Interval {
                second: self.second,
                snapshot,
            });
            self.current_used = false;
        }
    }

    /// Records the checks of a response that ended at `at` (after [`Recorder::record`] of
    /// the same response): `failed[i]` says whether check `i` (named `names[i]`) failed;
    /// `example(i)` describes a failure, called only for the first one of each check.
    pub fn record_checks(
        &mut self,
        at: Instant,
        names: &[String],
        status: u16,
        failed: &[bool],
        example: impl FnMut(usize) -> String,
    ) {
        self.at(at)
            .checks
            .get_or_insert_with(Default::default)
            .record(names, status, failed, example);
    }

    /// gRPC (issue 36): a call that ended at `at` (after [`Recorder::record`] of its response)
    /// with status `code`; `message` is asked for only for the first call of a code.
    pub fn record_grpc(
        &mut self,
        at: Instant,
        code: u32,
        message: impl FnOnce() -> Option<String>,
    ) {
        (self.at(at).grpc.get_or_insert_with(Default::default)).record(code, message);
    }

    /// gRPC (issue 36): a call that ended at `at` with a response: its messages, and its
    /// status code and first message (`None` for a call loadmark ended itself, which has
    /// none). Time to first message and gaps are kept only for streaming runs' calls
    /// (`first_message_us` is `Some` for them once a message came, or they ended by plan).
    pub fn record_grpc_call(
        &mut self,
        at: Instant,
        call: &crate::grpc::GrpcCall<'_>,
        status: Option<(u32, Option<String>)>,
        streaming: bool,
    ) {
        let grpc = self.at(at).grpc.get_or_insert_with(Default::default);
        grpc.record_call(call, streaming);
        if let Some((code, message)) = status {
            grpc.record(code, || message);
        }
    }

    /// A gRPC call that got no answer (its error is recorded apart): counted under `code`.
    pub fn record_grpc_unanswered(&mut self, at: Instant, code: u32, message: Option<String>) {
        let grpc = self.at(at).grpc.get_or_insert_with(Default::default);
        grpc.record_unanswered(code, || message);
    }

    /// Scenario runs (issue 17): the scenario figures of the second of `at`.
    pub fn scenario(&mut self, at: Instant) -> &mut crate::scenario::ScenarioStats {
        self.at(at).scenario.get_or_insert_with(Default::default)
    }

    /// The figures of the scenario in `slot` for the second of `at`: the single one, or one
    /// of several run at once (created when new in this second).
    pub fn scenario_in(
        &mut self,
        at: Instant,
        slot: crate::scenario::ScenarioSlot<'_>,
    ) -> &mut crate::scenario::ScenarioStats {
        match slot {
            crate::scenario::ScenarioSlot::Single => self.scenario(at),
            crate::scenario::ScenarioSlot::Named(name) => {
                let since_start = saturating_us(at.saturating_duration_since(self.origin));
                let named = &mut self.at(at).scenarios;
                // A few scenarios at most: finding one by name costs less than the request.
                let i = match named.iter().position(|s| s.name.as_deref() == Some(name)) {
                    Some(i) => i,
                    None => {
                        named.push(crate::scenario::ScenarioStats::named(name));
                        named.len() - 1
                    }
                };
                let stats = &mut named[i];
                stats.until_us = stats.until_us.max(since_start);
                stats
            }
        }
    }

    /// As [`Recorder::record_checks`], the checks found by name rather than by place: a
    /// scenario's steps each record their own checks into the run's list (issue 17).
    pub fn record_checks_named(
        &mut self,
        at: Instant,
        names: &[String],
        status: u16,
        failed: &[bool],
        example: impl FnMut(usize) -> String,
    ) {
        self.at(at)
            .checks
            .get_or_insert_with(Default::default)
            .record_named(names, status, failed, example);
    }

    /// Records a response (any status).
    pub fn record(&mut self, s: &Sample) {
        let snap = self.at(s.ended);
        snap.responses += 1;
        snap.status.record(s.status);
        snap.bytes_read += s.bytes_read;
        snap.bytes_written += s.bytes_written;
        let service = s.ended.saturating_duration_since(s.started);
        crate::record_us(
            &mut snap.ttfb,
            saturating_us(s.first_byte.saturating_duration_since(s.started)),
        );
        match s.scheduled {
            None => crate::record_us(&mut snap.latency, saturating_us(service)),
            Some(scheduled) => {
                let latency = s.ended.saturating_duration_since(scheduled);
                let lag = s.started.saturating_duration_since(scheduled);
                crate::record_us(&mut snap.latency, saturating_us(latency));
                crate::record_us(&mut snap.service, saturating_us(service));
                crate::record_us(&mut snap.lag, saturating_us(lag));
            }
        }
    }

    /// Records a WebSocket round trip (an echo or reply matched to its message): a response
    /// whose latency runs from `scheduled` (the intended send time, when the session sends
    /// on a schedule) or else from `sent`.
    pub fn record_round_trip(&mut self, scheduled: Option<Instant>, sent: Instant, ended: Instant) {
        let snap = self.at(ended);
        snap.responses += 1;
        let service = saturating_us(ended.saturating_duration_since(sent));
        match scheduled {
            None => crate::record_us(&mut snap.latency, service),
            Some(scheduled) => {
                crate::record_us(
                    &mut snap.latency,
                    saturating_us(ended.saturating_duration_since(scheduled)),
                );
                crate::record_us(&mut snap.service, service);
                crate::record_us(
                    &mut snap.lag,
                    saturating_us(sent.saturating_duration_since(scheduled)),
                );
            }
        }
    }

    /// The WebSocket figures of the second of `at`, created on first use.
    pub fn websocket(&mut self, at: Instant) -> &mut WsStats {
        self.at(at).websocket.get_or_insert_with(Default::default)
    }

    /// Counts wire bytes (frames, handshake) read and written at `at`.
    pub fn record_bytes(&mut self, at: Instant, read: u64, written: u64) {
        let snap = self.at(at);
        snap.bytes_read += read;
        snap.bytes_written += written;
    }

    /// Records a failed request.
    pub fn record_error(&mut self, kind: ErrorKind, at: Instant, detail: &dyn fmt::Display) {
        self.at(at).errors.record(kind, detail);
    }

    /// Records open-loop requests that were due but could not be sent (no free connection
    /// and the cap reached).
    pub fn record_dropped(&mut self, at: Instant, count: u64) {
        self.at(at).dropped += count;
    }

    /// Records a request sent again on a new connection (see [`Snapshot::retries`]).
    pub fn record_retry(&mut self, at: Instant) {
        self.at(at).retries += 1;
    }

    /// Records what an open loop's connection pool did over the run (once, at its end).
    pub fn record_pool(&mut self, at: Instant, counts: &crate::PoolCounts) {
        self.at(at)
            .pool
            .get_or_insert_with(Default::default)
            .merge(counts);
    }

    /// Records a connection that opened, with its connect (and TLS handshake) time.
    pub fn record_connection(&mut self, at: Instant, connect_time: Duration) {
        let snap = self.at(at);
        snap.connections_opened += 1;
        crate::record_us(&mut snap.connect, saturating_us(connect_time));
    }

    /// Hands over every second that ended before `now`.
    pub fn drain(&mut self, now: Instant) -> WorkerReport {
        let watermark = self.second_of(now);
        if watermark > self.second {
            self.close_current();
            self.second = watermark;
        }
        WorkerReport {
            intervals: std::mem::take(&mut self.closed),
            watermark,
            in_flight: 0,
            in_flight_now: 0,
            busy: Busy::default(),
        }
    }

    /// Hands over everything, the open second included; nothing follows.
    pub fn finish(mut self) -> WorkerReport {
        self.close_current();
        WorkerReport {
            intervals: self.closed,
            watermark: u64::MAX,
            in_flight: 0,
            in_flight_now: 0,
            busy: Busy::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(origin: Instant, end_ms: u64, latency_us: u64) -> Sample {
        let ended = origin + Duration::from_millis(end_ms);
        let started = ended - Duration::from_micros(latency_us);
        Sample {
            scheduled: None,
            started,
            first_byte: started,
            ended,
            status: 200,
            bytes_read: 10,
            bytes_written: 5,
        }
    }

    #[test]
    fn buckets_by_end_second_and_drains_closed_seconds_only() {
        let origin = Instant::now();
        let mut r = Recorder::new(origin);
        r.record(&sample(origin, 100, 50));
        r.record(&sample(origin, 900, 50));
        r.record(&sample(origin, 1_100, 50));
        r.record_error(
            ErrorKind::Read,
            origin + Duration::from_millis(1_200),
            &"reset",
        );
        let report = r.drain(origin + Duration::from_millis(1_500));
        assert_eq!(report.watermark, 1);
        assert_eq!(report.intervals.len(), 1);
        assert_eq!(report.intervals[0].second, 0);
        assert_eq!(report.intervals[0].snapshot.responses, 2);
        let report = r.drain(origin + Duration::from_millis(3_000));
        assert_eq!(report.watermark, 3);
        assert_eq!(report.intervals.len(), 1);
        let one = &report.intervals[0].snapshot;
        assert_eq!((one.responses, one.errors.total()), (1, 1));
        assert!(r.finish().intervals.is_empty(), "nothing left open");
    }

    #[test]
    fn open_loop_latency_starts_at_the_intended_time() {
        let origin = Instant::now();
        let mut r = Recorder::new(origin);
        let scheduled = origin + Duration::from_millis(10);
        let started = scheduled + Duration::from_micros(300); // sent 300 µs late
        r.record(&Sample {
            scheduled: Some(scheduled),
            started,
            first_byte: started + Duration::from_micros(50),
            ended: started + Duration::from_micros(100),
            status: 200,
            bytes_read: 1,
            bytes_written: 1,
        });
        r.record_dropped(origin + Duration::from_millis(20), 3);
        let s = r.finish().intervals.remove(0).snapshot;
        assert_eq!(s.latency.max(), 400, "from intended send time");
        assert_eq!(s.service.max(), 100, "from actual send");
        assert_eq!(s.lag.max(), 300);
        assert_eq!(s.dropped, 3);
    }

    #[test]
    fn latency_in_microseconds() {
        let origin = Instant::now();
        let mut r = Recorder::new(origin);
        r.record(&sample(origin, 10, 1_234));
        r.record_connection(origin, Duration::from_micros(77));
        let i = r.finish().intervals.remove(0);
        assert_eq!(i.snapshot.latency.max(), 1_234);
        assert_eq!(i.snapshot.connect.max(), 77);
        assert_eq!(i.snapshot.connections_opened, 1);
        assert_eq!(i.snapshot.bytes_read, 10);
    }
}
