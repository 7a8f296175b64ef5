//! How long the open loop's requests take, as its pool sees them (issue 43): from the
//! hand-out of a request to a connection that carried nothing to the request's end. A late
//! client counts in it as a slow server does. The pool sizes itself by it (Little's law:
//! requests in flight = rate × service time), and reports the least and the recent figure.

use std::time::{Duration, Instant};

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
