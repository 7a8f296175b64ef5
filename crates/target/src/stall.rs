//! Scheduled freezes: the server holds every request that arrives during the last
//! `duration` of each `every`, counted from its start, and answers when the window ends.
//!
//! This exists to show coordinated omission: a closed-loop client sees one slow request per
//! connection per stall, an open-loop client sees every request it scheduled in the window.
//! The schedule is a pure function of the time since start, so it is tested without a clock.

use std::time::Duration;

/// Freeze for `duration` at the end of every period of `every`, e.g. 1 s of every 5 s: the
/// server then holds requests arriving from 4 s to 5 s, 9 s to 10 s, … of its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// How long each freeze lasts; shorter than `every`.
    pub duration: Duration,
    /// The period: one freeze per `every`, at its end.
    pub every: Duration,
}

impl Stall {
    /// A stall that never lets go or never happens is a mistake, not a schedule.
    pub(crate) fn is_valid(&self) -> bool {
        !self.duration.is_zero() && self.duration < self.every
    }

    /// How long a request arriving `since_start` after the server started must wait, if it
    /// arrives inside a freeze.
    pub(crate) fn wait(&self, since_start: Duration) -> Option<Duration> {
        let every = self.every.as_nanos();
        let phase = since_start.as_nanos() % every;
        let frozen_from = every - self.duration.as_nanos();
        // Both values are below `every`, a Duration, so they fit back into one.
        (phase >= frozen_from).then(|| Duration::from_nanos((every - phase) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE_IN_FIVE: Stall = Stall {
        duration: Duration::from_secs(1),
        every: Duration::from_secs(5),
    };

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn freezes_only_at_the_end_of_each_period() {
        let s = ONE_IN_FIVE;
        assert_eq!(s.wait(ms(0)), None);
        assert_eq!(s.wait(ms(3_999)), None);
        assert_eq!(s.wait(ms(4_000)), Some(ms(1_000)));
        assert_eq!(s.wait(ms(4_750)), Some(ms(250)));
        assert_eq!(s.wait(ms(5_000)), None, "the next period starts thawed");
        assert_eq!(s.wait(ms(9_500)), Some(ms(500)));
        assert_eq!(s.wait(ms(10_001)), None);
    }

    #[test]
    fn a_stall_must_be_shorter_than_its_period_and_not_empty() {
        assert!(ONE_IN_FIVE.is_valid());
        let stall = |d, e| Stall {
            duration: ms(d),
            every: ms(e),
        };
        assert!(!stall(5_000, 5_000).is_valid());
        assert!(!stall(6_000, 5_000).is_valid());
        assert!(!stall(0, 5_000).is_valid());
        assert!(!stall(0, 0).is_valid());
    }
}
