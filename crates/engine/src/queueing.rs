//! Whether the server is queueing the open loop's requests: the test that decides if another
//! connection could help (issue 43).
//!
//! A due request that finds every connection busy either waits for one to come free or
//! opens another. Another connection helps only when the connections are what limits the
//! rate: a server that answers each request in about as long as ever (a fixed 1 ms of work,
//! a slow backend with threads to spare) gains throughput from each connection added. A
//! server at its capacity does not: its answers come no faster, each new connection costs
//! both sides a handshake, and every added request in flight only lengthens the server's
//! queue. At 50,000 req/s against a one-core server that fell behind, growth took the pool
//! to 1,000 connections and the client's own loop 150-330 ms behind its schedule, while the
//! same run held to 8 connections kept lag p99 at 27-47 µs (bench/RESULTS.md, session 22).
//!
//! So the pool compares how long its requests now take with the least they have taken, as
//! TCP Vegas compares round-trip times: a request's service time here runs from when it was
//! handed to a connection to when it ended, so a late client inflates it as a slow server
//! does (more connections would help neither). While the recent service time is more than
//! [`QUEUE_FACTOR`] times the least plus [`QUEUE_SLACK`], the server is queueing, the pool
//! does not grow, and due requests wait their turn first in first out (their latency, from
//! the intended time, includes that wait; one that waits past the request timeout is
//! dropped and counted).

use std::time::{Duration, Instant};

/// Recent service times above this many times the least mean the server queues.
pub(crate) const QUEUE_FACTOR: u64 = 2;
/// Added to the threshold: a server answering in 12 µs that took 30 µs once did not queue,
/// its answer met a busy loop on either side (this VM's wake-ups vary by tens of µs).
pub(crate) const QUEUE_SLACK: Duration = Duration::from_micros(50);

/// The least service time seen and a moving average of the recent ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ServiceTimes {
    /// The least, in ns; 0 before the first answer.
    least: u64,
    /// An exponential moving average (1/8 per answer, as TCP's smoothed RTT), in ns.
    recent: u64,
}

impl ServiceTimes {
    /// One request handed to its connection at `handed` ended at `ended`.
    pub(crate) fn note(&mut self, handed: Instant, ended: Instant) {
        let took = ended.saturating_duration_since(handed).as_nanos() as u64;
        let took = took.max(1);
        if self.least == 0 {
            self.least = took;
            self.recent = took;
            return;
        }
        self.least = self.least.min(took);
        self.recent = (self.recent * 7 + took) / 8;
    }

    /// Whether recent requests take so much longer than the least that the server (or the
    /// client's own loop) is queueing them; false before any answer.
    pub(crate) fn queueing(&self) -> bool {
        self.least != 0 && self.recent > self.least * QUEUE_FACTOR + QUEUE_SLACK.as_nanos() as u64
    }

    /// The recent service time (a moving average), for the pool's statistics.
    pub(crate) fn recent(&self) -> Duration {
        Duration::from_nanos(self.recent)
    }

    /// The least service time seen.
    pub(crate) fn least(&self) -> Duration {
        Duration::from_nanos(self.least)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note_us(s: &mut ServiceTimes, t0: Instant, us: u64) {
        s.note(t0, t0 + Duration::from_micros(us));
    }

    #[test]
    fn no_answer_yet_is_not_queueing() {
        assert!(!ServiceTimes::default().queueing());
    }

    #[test]
    fn a_fast_server_with_jitter_is_not_queueing() {
        let t0 = Instant::now();
        let mut s = ServiceTimes::default();
        for us in [14, 20, 12, 31, 25, 18, 60, 22, 19, 24] {
            note_us(&mut s, t0, us);
        }
        assert_eq!(s.least(), Duration::from_micros(12));
        assert!(!s.queueing(), "recent {:?}", s.recent());
    }

    #[test]
    fn a_server_that_fell_behind_is_queueing_and_recovers() {
        let t0 = Instant::now();
        let mut s = ServiceTimes::default();
        for _ in 0..20 {
            note_us(&mut s, t0, 15);
        }
        // Answers from a backlog: each waited behind the others.
        for us in [400, 800, 1200] {
            note_us(&mut s, t0, us);
        }
        assert!(s.queueing(), "recent {:?}", s.recent());
        // The backlog drained: answers as fast as before bring the average back.
        for _ in 0..40 {
            note_us(&mut s, t0, 15);
        }
        assert!(!s.queueing(), "recent {:?}", s.recent());
    }

    #[test]
    fn a_slow_but_steady_server_is_not_queueing() {
        // `/delay/1`: every answer takes about a millisecond; connections are what limits
        // the rate, so the pool may grow.
        let t0 = Instant::now();
        let mut s = ServiceTimes::default();
        for us in [1_060, 1_040, 1_120, 1_051, 1_300, 1_070] {
            note_us(&mut s, t0, us);
        }
        assert!(!s.queueing());
    }
}
