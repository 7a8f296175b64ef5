//! A server of known capacity (`loadmark serve --capacity N`): one queue in front of every
//! endpoint, served first come first served at exactly N requests per second, so a capacity
//! search (`loadmark find`) has a right answer to be tested against.
//!
//! The model is a single server with a fixed service time of 1/N (M/D/1 with a bound): each
//! request is given the instant its service ends, `max(now, when the previous one ends) +
//! 1/N`, and is answered then. Because those instants are computed, not the sum of slept
//! intervals, the rate is exactly N whatever the timer's granularity (tokio's is 1 ms, which
//! only adds to each latency). A request that would wait longer than the queue bound before
//! its service starts is answered at once with 503: below N nothing queues (the arrivals of
//! an open-loop client are evenly spaced), above it the queue fills, waits grow to the bound
//! and the excess is refused, so latency decides with a long bound and errors with a short
//! one. The schedule is a pure function, tested without a clock.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most `rate` requests per second, waiting up to `queue` for service.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Capacity {
    /// Requests served per second; above zero.
    pub rate: f64,
    /// The longest a request waits for its service to start before it is refused (503).
    pub queue: Duration,
}

// A valid capacity's rate is never NaN (see `is_valid`), so equality is an equivalence.
impl Eq for Capacity {}

impl Capacity {
    /// A rate that is not a positive finite number serves nobody, or everybody at once.
    pub(crate) fn is_valid(&self) -> bool {
        self.rate.is_finite() && self.rate > 0.0 && self.rate <= 1e9
    }
}

/// The queue's state shared by every connection: when the server is next free.
#[derive(Debug)]
pub(crate) struct Gate {
    service: Duration,
    queue: Duration,
    free_at: Mutex<Option<Instant>>,
}

impl Gate {
    pub(crate) fn new(capacity: Capacity) -> Gate {
        Gate {
            service: Duration::from_secs_f64(1.0 / capacity.rate),
            queue: capacity.queue,
            free_at: Mutex::new(None),
        }
    }

    /// When the request arriving `now` is answered, or `None`: refuse it (the queue is full).
    pub(crate) fn admit(&self, now: Instant) -> Option<Instant> {
        let mut free_at = self.free_at.lock().expect("capacity gate");
        let (done, next) = schedule(*free_at, now, self.service, self.queue)?;
        *free_at = Some(next);
        Some(done)
    }
}

/// The service of a request arriving `now` at a server next free at `free_at`: its end, and
/// when the server is free again (the same instant); `None` when it would wait past `queue`.
fn schedule(
    free_at: Option<Instant>,
    now: Instant,
    service: Duration,
    queue: Duration,
) -> Option<(Instant, Instant)> {
    let start = free_at.map_or(now, |f| f.max(now));
    if start.duration_since(now) > queue {
        return None;
    }
    let done = start + service;
    Some((done, done))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn below_capacity_nothing_waits_and_above_it_the_queue_fills_then_refuses() {
        let t0 = Instant::now();
        // 1,000 req/s: 1 ms each. Arrivals every 2 ms are served at once.
        let mut free = None;
        for i in 0..5u32 {
            let now = t0 + 2 * i * MS;
            let (done, next) = schedule(free, now, MS, 3 * MS).unwrap();
            assert_eq!(done, now + MS);
            free = Some(next);
        }
        // Ten at the same instant: the first four wait 0, 1, 2, 3 ms, the rest are refused.
        let now = t0 + 100 * MS;
        let mut free = None;
        let mut served = 0;
        for _ in 0..10 {
            if let Some((done, next)) = schedule(free, now, MS, 3 * MS) {
                served += 1;
                assert_eq!(done, now + served * MS);
                free = Some(next);
            }
        }
        assert_eq!(served, 4);
    }

    #[test]
    fn the_rate_served_is_exactly_the_capacity_whatever_the_arrivals() {
        // 2,000 arrivals per second for one second at a 1,000 req/s server with a long queue:
        // the last admitted ends no earlier than admitted / 1,000 s after the first arrival.
        let gate = Gate::new(Capacity {
            rate: 1000.0,
            queue: Duration::from_secs(10),
        });
        let t0 = Instant::now();
        let mut last = t0;
        for i in 0..2000u32 {
            last = gate.admit(t0 + i * MS / 2).unwrap();
        }
        assert_eq!(last.duration_since(t0), Duration::from_secs(2));
        assert!(!Capacity {
            rate: 0.0,
            queue: MS
        }
        .is_valid());
    }
}
