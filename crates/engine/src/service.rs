//! How long the open loop's requests take, as its pool sees them (issue 43): from the
//! hand-out of a request to a connection that carried nothing to the request's end, the
//! time the connection is held. The pool sizes itself by it (Little's law: requests in
//! flight = rate × service time), and reports the least and the recent figure.

use std::time::{Duration, Instant};

/// How long a change of the service time takes to move [`ServiceTimes::settled`] by 63%.
/// A server stall of a few milliseconds (a descheduled vCPU) moves it by a few percent; a
/// server that stays slow moves it within a few tenths of a second.
pub(crate) const SETTLE: Duration = Duration::from_millis(100);

/// The least service time seen, a moving average of the recent ones, and a settled one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ServiceTimes {
    /// The least, in ns; 0 before the first answer.
    least: u64,
    /// An exponential moving average (1/8 per answer, as TCP's smoothed RTT), in ns.
    recent: u64,
    /// An exponential moving average over time ([`SETTLE`]), in ns: what the pool is sized
    /// by. Per answer it would follow a stall: at 20,000 req/s the answers that drain a 1 ms
    /// stall are most of the answers of that millisecond.
    settled: u64,
    /// When the previous answer came.
    last: Option<Instant>,
}

impl ServiceTimes {
    /// One request handed to its connection at `handed` ended at `ended`.
    pub(crate) fn note(&mut self, handed: Instant, ended: Instant) {
        let took = ended.saturating_duration_since(handed).as_nanos() as u64;
        let took = took.max(1);
        let since = self
            .last
            .map_or(Duration::ZERO, |last| ended.saturating_duration_since(last));
        self.last = Some(self.last.map_or(ended, |last| last.max(ended)));
        if self.least == 0 {
            self.least = took;
            self.recent = took;
            self.settled = took;
            return;
        }
        self.least = self.least.min(took);
        self.recent = (self.recent * 7 + took) / 8;
        // Weighted by the time since the previous answer: the average over about SETTLE.
        let weight = (since.as_secs_f64() / SETTLE.as_secs_f64()).min(1.0);
        let settled = self.settled as f64 + (took as f64 - self.settled as f64) * weight;
        self.settled = settled.round().max(1.0) as u64;
    }

    /// The service time averaged over about [`SETTLE`]; zero before any answer.
    pub(crate) fn settled(&self) -> Duration {
        Duration::from_nanos(self.settled)
    }

    /// The recent service time (a moving average); zero before any answer.
    pub(crate) fn recent(&self) -> Duration {
        Duration::from_nanos(self.recent)
    }

    /// The least service time seen; zero before any answer.
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
    fn nothing_is_known_before_the_first_answer() {
        let s = ServiceTimes::default();
        assert!(s.recent().is_zero() && s.least().is_zero());
    }

    #[test]
    fn the_settled_time_ignores_a_stall_and_follows_a_server_that_stays_slow() {
        let t0 = Instant::now();
        let mut s = ServiceTimes::default();
        let us = Duration::from_micros;
        // 20,000 answers a second in 25 µs, for 100 ms.
        let mut at = t0;
        for _ in 0..2_000 {
            at += us(50);
            s.note(at - us(25), at);
        }
        assert_eq!(s.settled(), us(25));
        // A 1 ms stall: the twenty answers behind it come at once, each after about 1 ms.
        at += us(1_000);
        for _ in 0..20 {
            s.note(at - us(1_000), at);
        }
        assert!(s.settled() < us(40), "{:?}", s.settled());
        assert!(s.recent() > us(500), "{:?}", s.recent());
        // A server that stays at 2 ms for half a second: the settled time follows it.
        for _ in 0..10_000 {
            at += us(50);
            s.note(at - us(2_000), at);
        }
        assert!(s.settled() > us(1_900), "{:?}", s.settled());
    }

    #[test]
    fn the_least_is_kept_and_the_recent_follows_the_answers() {
        let t0 = Instant::now();
        let mut s = ServiceTimes::default();
        for _ in 0..20 {
            note_us(&mut s, t0, 15);
        }
        assert_eq!(s.recent(), Duration::from_micros(15));
        // A server that fell behind: the recent figure rises within a few answers.
        for us in [400, 800, 1200] {
            note_us(&mut s, t0, us);
        }
        assert!(s.recent() > Duration::from_micros(250), "{:?}", s.recent());
        assert_eq!(s.least(), Duration::from_micros(15));
        // The backlog drained: it comes back.
        for _ in 0..40 {
            note_us(&mut s, t0, 15);
        }
        assert!(s.recent() < Duration::from_micros(20), "{:?}", s.recent());
    }
}
