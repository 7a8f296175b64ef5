//! How long the open loop's requests take, as its pool sees them (issue 43): from the
//! hand-out of a request to a connection that carried nothing to the request's end, the
//! time the connection is held. The pool sizes itself by it (Little's law: requests in
//! flight = rate × service time), and reports the least and the recent figure.
//!
//! What the pool is sized by is the **typical** service time: the mean of the answers of the
//! last 100-200 ms with their slowest 5% left out. Not a moving average: on this class of VM
//! the server's vCPU stops for 1-5 ms tens of times a second, and each stop ends in a burst
//! of answers that each took that long. An average per answer jumped with every burst, one
//! weighted by time still sat at 200-800 µs against a server answering in 45 µs (p99 of
//! 0.7-1.6 ms), and the pool grew to 7-16 connections at 20,000 req/s where three carry it
//! (issue 43's bar). More connections do not shorten a stop; they only make the next one
//! end in a storm of connects. A server that is slow for more than one answer in twenty is
//! slow, and the trimmed mean follows it within a window.
//!
//! Nor does it count the run's **cold start**: answers to requests handed out in its first
//! [`WARM_UP`] took 150-300 µs where the next took 40 (code, caches and buffers warming on
//! both sides), and sizing by them opened four or five connections in the first
//! millisecond that the run never needed.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// How long each of the two windows the typical service time is taken over lasts: a
/// server that stays slower is followed within one or two of them.
pub(crate) const WINDOW: Duration = Duration::from_millis(100);
/// Answers to requests handed out this soon after the run's first are cold: kept out of
/// the typical service time (they still count for the least and the recent one).
pub(crate) const WARM_UP: Duration = Duration::from_millis(1);
/// The typical service time is known once this many warm answers have come.
const KNOWN_AFTER: u32 = 4;
/// The slowest answers left out of the typical service time: one in twenty.
const TRIM_DIVISOR: u32 = 20;

/// The least service time seen, a moving average of the recent ones, and the typical one.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServiceTimes {
    /// The least, in ns; 0 before the first answer.
    least: u64,
    /// An exponential moving average (1/8 per answer, as TCP's smoothed RTT), in ns.
    recent: u64,
    /// Warm answers of the current window and of the one before.
    current: LogCounts,
    previous: LogCounts,
    /// When the current window began (at its first answer).
    window_start: Option<Instant>,
    /// [`Self::typical`] as last computed, until the next answer: the pool asks for it
    /// whenever a due request finds every connection busy, which can be many times per
    /// answer, and the scan of the buckets is worth doing once.
    typical: Cell<Option<Option<Duration>>>,
}

impl ServiceTimes {
    /// One request handed to its connection at `handed` ended at `ended`; `warm` unless it
    /// was handed out in the run's [`WARM_UP`].
    pub(crate) fn note(&mut self, handed: Instant, ended: Instant, warm: bool) {
        let took = ended.saturating_duration_since(handed).as_nanos() as u64;
        let took = took.max(1);
        if self.least == 0 {
            self.least = took;
            self.recent = took;
        } else {
            self.least = self.least.min(took);
            self.recent = (self.recent * 7 + took) / 8;
        }
        if !warm {
            return;
        }
        self.typical.set(None);
        match self.window_start {
            Some(start) if ended.saturating_duration_since(start) < WINDOW => {}
            Some(start) => {
                // A window with no answer at all in between leaves nothing to go by.
                self.previous = if ended.saturating_duration_since(start) < 2 * WINDOW {
                    std::mem::take(&mut self.current)
                } else {
                    LogCounts::default()
                };
                self.current = LogCounts::default();
                self.window_start = Some(ended);
            }
            None => self.window_start = Some(ended),
        }
        self.current.add(took);
    }

    /// The typical service time: the mean of the last one or two windows' warm answers
    /// without their slowest twentieth; None until [`KNOWN_AFTER`] warm answers came.
    pub(crate) fn typical(&self) -> Option<Duration> {
        if let Some(known) = self.typical.get() {
            return known;
        }
        let typical = self.compute_typical();
        self.typical.set(Some(typical));
        typical
    }

    fn compute_typical(&self) -> Option<Duration> {
        let n = self.current.total + self.previous.total;
        if n < KNOWN_AFTER {
            return None;
        }
        let mut left = n - n / TRIM_DIVISOR;
        let kept = left;
        let mut sum = 0u128;
        let (now, before) = (&self.current, &self.previous);
        for i in 0..BUCKETS {
            let count = now.counts[i] + before.counts[i];
            if count == 0 {
                continue;
            }
            let bucket_sum = now.sums[i] as u128 + before.sums[i] as u128;
            // The bucket the trim cuts through counts at its own mean.
            sum += if count <= left {
                bucket_sum
            } else {
                bucket_sum * left as u128 / count as u128
            };
            left = left.saturating_sub(count);
            if left == 0 {
                break;
            }
        }
        Some(Duration::from_nanos((sum / kept as u128) as u64))
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

/// Durations counted and summed in buckets a quarter of a power of two wide: the trim
/// cuts at a bucket's edge (coarse, which a pool sized at twice its need does not mind),
/// and the sums keep the mean exact. An answer costs two additions.
#[derive(Debug, Clone)]
struct LogCounts {
    counts: [u32; BUCKETS],
    sums: [u64; BUCKETS],
    total: u32,
}

/// Up to 2^42 ns (73 minutes), four buckets per power of two.
const BUCKETS: usize = 4 * 42;

impl Default for LogCounts {
    fn default() -> Self {
        LogCounts {
            counts: [0; BUCKETS],
            sums: [0; BUCKETS],
            total: 0,
        }
    }
}

impl LogCounts {
    fn add(&mut self, ns: u64) {
        let i = Self::bucket(ns);
        self.counts[i] += 1;
        self.sums[i] += ns;
        self.total += 1;
    }

    /// Below 4 ns, the value itself; else its power of two and the next two bits.
    fn bucket(ns: u64) -> usize {
        let msb = 63 - ns.max(1).leading_zeros() as usize;
        let i = if msb < 2 {
            ns as usize
        } else {
            msb * 4 + ((ns >> (msb - 2)) & 3) as usize
        };
        i.min(BUCKETS - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: fn(u64) -> Duration = Duration::from_micros;

    #[test]
    fn nothing_is_known_before_the_first_answers() {
        let t0 = Instant::now();
        let mut s = ServiceTimes::default();
        assert!(s.recent().is_zero() && s.least().is_zero());
        for _ in 0..KNOWN_AFTER - 1 {
            s.note(t0, t0 + US(25), true);
        }
        assert_eq!(s.typical(), None);
        s.note(t0, t0 + US(25), true);
        assert!(s.typical().is_some());
    }

    #[test]
    fn buckets_are_a_quarter_of_a_power_of_two() {
        let b = LogCounts::bucket;
        assert_eq!(
            (b(1), b(3), b(4), b(7), b(8), b(9), b(10)),
            (1, 3, 8, 11, 12, 12, 13)
        );
        assert_eq!(b(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn the_typical_time_is_the_mean_of_all_but_the_slowest_twentieth() {
        let t0 = Instant::now();
        let mut s = ServiceTimes::default();
        for us in 1..=100u64 {
            s.note(t0, t0 + US(us), true);
        }
        // 1..=95 µs kept; 96..=100 share the top bucket with nothing else kept from it.
        let typical = s.typical().unwrap();
        assert!(typical.abs_diff(US(48)) <= US(1), "{typical:?}");
    }

    #[test]
    fn stalls_leave_the_typical_time_alone_and_a_server_that_stays_slow_moves_it() {
        let t0 = Instant::now();
        let mut s = ServiceTimes::default();
        // 20,000 req/s answered in 45 µs for 200 ms, with a 2 ms stop of the server every
        // 50 ms: the forty answers behind each stop come at once, each after 1-2 ms.
        let mut at = t0;
        for i in 0..4_000u64 {
            at += US(50);
            s.note(at - US(45), at, true);
            if i % 1_000 == 499 {
                at += US(2_000);
                for k in 0..40 {
                    s.note(at - US(2_000 - 50 * k), at, true);
                }
            }
        }
        let typical = s.typical().unwrap();
        assert!(typical.abs_diff(US(45)) < US(5), "{typical:?}");
        assert!(s.recent() < US(100), "{:?}", s.recent());
        // A server that stays at 2 ms: within two windows the typical time is its own.
        for _ in 0..4_000 {
            at += US(50);
            s.note(at - US(2_000), at, true);
        }
        let typical = s.typical().unwrap();
        assert!(typical.abs_diff(US(2_000)) < US(250), "{typical:?}");
    }

    #[test]
    fn cold_answers_count_for_the_least_and_the_recent_but_not_the_typical() {
        let t0 = Instant::now();
        let mut s = ServiceTimes::default();
        for _ in 0..10 {
            s.note(t0, t0 + US(300), false);
        }
        assert_eq!((s.typical(), s.least()), (None, US(300)));
        for _ in 0..10 {
            s.note(t0, t0 + US(40), true);
        }
        let typical = s.typical().unwrap();
        assert!(typical.abs_diff(US(40)) < US(5), "{typical:?}");
        assert_eq!(s.least(), US(40));
    }

    #[test]
    fn the_recent_follows_the_answers() {
        let t0 = Instant::now();
        let mut s = ServiceTimes::default();
        for _ in 0..20 {
            s.note(t0, t0 + US(15), true);
        }
        assert_eq!(s.recent(), US(15));
        // A server that fell behind: the recent figure rises within a few answers.
        for us in [400, 800, 1200] {
            s.note(t0, t0 + US(us), true);
        }
        assert!(s.recent() > US(250), "{:?}", s.recent());
        assert_eq!(s.least(), US(15));
        // The backlog drained: it comes back.
        for _ in 0..40 {
            s.note(t0, t0 + US(15), true);
        }
        assert!(s.recent() < US(20), "{:?}", s.recent());
    }

    #[test]
    fn a_quiet_spell_longer_than_two_windows_forgets_what_came_before() {
        let t0 = Instant::now();
        let mut s = ServiceTimes::default();
        for _ in 0..10 {
            s.note(t0, t0 + US(5_000), true);
        }
        let later = t0 + 3 * WINDOW;
        for _ in 0..10 {
            s.note(later - US(30), later, true);
        }
        let typical = s.typical().unwrap();
        assert!(typical.abs_diff(US(30)) < US(4), "{typical:?}");
    }
}
