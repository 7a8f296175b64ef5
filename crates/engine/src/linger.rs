//! A closed loop lingers a few microseconds before its event loop sleeps (issue 22).
//!
//! loadmark handles a response and sends the next request in a few µs, faster than a busy
//! server answers the next one, so its worker often runs out of work and sleeps in
//! `epoll_wait`; the server's next response must then wake it. That wake-up is paid by the
//! server's core: a rescheduling inter-processor interrupt (on a VM, an exit to the hypervisor)
//! and the wake-up path itself. Against nginx pinned to one core, loadmark's worker was
//! woken 0.32-0.37 times per request where wrk's was 0.16-0.21 (wrk is slower per request
//! and so less often idle), and nginx spent ~1 µs more per request serving loadmark: it
//! served 0.90x the requests it served wrk (bench/serverview.py, RESULTS.md).
//!
//! So when every connection waits on the server, the worker keeps polling its sockets
//! (each round is a zero-timeout `epoll_wait` that tokio makes before it runs a task that
//! yielded) for up to [`LINGER`] before it lets the event loop sleep: a response that comes
//! within that time finds it awake, and no one pays for waking it. The time spent polling
//! with nothing to do is left out of the worker's busy figure, as the open-loop pacer's is.

use std::cell::Cell;
use std::future::poll_fn;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

/// How long an idle worker polls before sleeping: about what nginx takes per request on
/// this class of machine, so the next response usually comes within it.
pub(crate) const LINGER: Duration = Duration::from_micros(5);

/// The linger to use: none where the kernel's idle loop itself polls before it halts the CPU
/// (the `haltpoll` cpuidle driver with `guest_halt_poll_ns` above 0, a KVM guest's default),
/// since a polling CPU is woken without an interrupt; [`LINGER`] elsewhere. Measured against
/// nginx on this VM (bench/RESULTS.md, "Lingering stands in for the guest's idle polling"):
/// with its boot line's `guest_halt_poll_ns=0` lingering takes nginx from 0.96-0.98x wrk's
/// count to 1.02-1.03x; with the idle loop polling, loadmark is at 1.03x without lingering, at
/// 0.85x wrk's CPU per request, and lingering would only spend CPU.
pub(crate) fn default_linger() -> Duration {
    if idle_loop_polls() {
        Duration::ZERO
    } else {
        LINGER
    }
}

fn idle_loop_polls() -> bool {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    read("/sys/devices/system/cpu/cpuidle/current_driver").trim() == "haltpoll"
        && read("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
            .trim()
            .parse::<u64>()
            .is_ok_and(|ns| ns > 0)
}

/// What the lingering task watches: requests ending, and where to wake it when one does.
#[derive(Default)]
pub(crate) struct Activity {
    ended: Cell<u64>,
    /// The last request's response was stamped by the kernel when it arrived.
    stamped: Cell<bool>,
    sleeper: Cell<Option<Waker>>,
    /// What lingering did, for measurements (`LOADMARK_LINGER_STATS=1` prints it).
    pub(crate) stats: Cell<LingerStats>,
}

/// Lingers that found work before the limit (and how long they polled for it), lingers
/// that ended in sleep, and naps (with the responses each collected).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LingerStats {
    pub hits: u64,
    pub hit_polling: Duration,
    pub misses: u64,
    pub naps: u64,
    pub napped: Duration,
    pub nap_responses: u64,
    pub empty_naps: u64,
    pub skipped_naps: u64,
}

impl Activity {
    /// A request ended (called once per request; a counter and, rarely, a wake). `stamped`:
    /// its response's arrival time came from the kernel.
    #[inline]
    pub(crate) fn request_ended(&self, stamped: bool) {
        self.ended.set(self.ended.get().wrapping_add(1));
        self.stamped.set(stamped);
        if let Some(waker) = self.sleeper.take() {
            waker.wake();
        }
    }

    fn note(&self, f: impl FnOnce(&mut LingerStats)) {
        let mut stats = self.stats.get();
        f(&mut stats);
        self.stats.set(stats);
    }
}

/// Naps: where the kernel stamps arrivals ([`crate::arrival`]), an idle worker whose
/// connections all wait on the server sleeps a short while on its own timer, then collects
/// every response that came meanwhile in one turn of its event loop. No one wakes it, so the
/// server's core pays no wake-up, and the worker pays one wake-up for a batch of responses
/// instead of one for every few: less CPU per request on both sides, as wrk's slower loop
/// gets by accident. Latency is unchanged, because a response's end is when the kernel
/// received it, not when the worker read it.
///
/// A nap must end while the server still has most of its queue, or the server idles and the
/// run measures the client's naps: at 4 connections against the built-in target (7 µs a
/// request), naps of 10 µs halved the count, since the server answered all four within the
/// nap and the timer's own lateness. So each nap's real length (lateness included) is
/// measured, the time between responses is learned from it, and the worker naps only while
/// the nap, lateness included, lasts at most a quarter of the time the server needs to answer
/// every connection ([`NAP_SHARE`]); it asks for that less the lateness. Otherwise it skips naps for
/// [`NAP_SKIP`] idle spells and then tries one again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Naps {
    connections: u32,
    /// The time between two responses while every connection waits, as the naps saw it.
    per_response: Duration,
    /// How much later than asked a nap ends (timer slack, wake-up), as last seen.
    lateness: Duration,
    /// The share of a nap cycle (nap and the batch handled after the last one) the worker
    /// spent handling responses, smoothed.
    busy_share: f32,
    /// Idle spells left to sleep through without napping.
    skip: u32,
}

pub(crate) const NAP_MIN_CONNECTIONS: u64 = 4;
/// A nap lasts this share of the time the server needs to answer every connection (1/N).
/// An eighth left the client at 1.06-1.07x the epoll floor's CPU per request (ka-json,
/// ka-10k; bench/floor/same-run); a quarter collects twice the responses per wake-up, 5%
/// less CPU per request at the same nginx-counted req/s; a half let nginx idle (-10% req/s).
const NAP_SHARE: u32 = 4;
const NAP_MIN: Duration = Duration::from_micros(10);
const NAP_MAX: Duration = Duration::from_micros(200);
/// The most one nap's lateness counts for (see [`Naps::learn`]).
const NAP_LATE_MAX: Duration = Duration::from_micros(40);
/// Naps stop while the worker is busier than this share of a nap cycle.
const NAP_BUSY_MAX: f32 = 0.75;
/// Idle spells without naps after naps were found not to pay.
const NAP_SKIP: u32 = 256;

impl Naps {
    /// Naps for a worker of `connections`, or None when it has too few to nap.
    pub(crate) fn new(connections: u64) -> Option<Naps> {
        (connections >= NAP_MIN_CONNECTIONS).then_some(Naps {
            connections: u32::try_from(connections).unwrap_or(u32::MAX),
            per_response: NAP_MIN,
            lateness: Duration::ZERO,
            busy_share: 0.0,
            skip: 0,
        })
    }

    /// The time the server needs to answer every connection, at the rate the naps saw.
    fn drain(&self) -> Duration {
        self.per_response.saturating_mul(self.connections)
    }

    /// The next nap to ask for: a quarter of the drain time less the lateness.
    fn length(&self) -> Duration {
        (self.drain() / NAP_SHARE)
            .saturating_sub(self.lateness)
            .clamp(NAP_MIN, NAP_MAX)
    }

    /// Whether to nap in this idle spell: false, using up one skipped spell, while skipping
    /// after naps did not pay.
    fn take_turn(&mut self) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        true
    }

    fn skipping(&self) -> bool {
        self.skip > 0
    }

    /// A nap asked for `asked` lasted `slept` and collected `responses`, which came over
    /// `span` (the nap, and the handling of the last batch before it, when naps follow each
    /// other).
    fn learn(&mut self, asked: Duration, slept: Duration, span: Duration, responses: u64) {
        // Smoothed, and a sample capped at NAP_LATE_MAX: one wake-up delayed by a busy host
        // (this VM has shown 1 ms) must not stop naps for thousands of idle spells.
        let late = slept.saturating_sub(asked).min(NAP_LATE_MAX);
        self.lateness = (self.lateness * 3 + late) / 4;
        self.per_response = match u32::try_from(responses) {
            // Slower than thought: at least the whole nap per response.
            Ok(0) => (self.per_response * 2).max(slept).min(NAP_MAX),
            Ok(n) => (self.per_response * 3 + span / n) / 4,
            Err(_) => Duration::from_nanos(1),
        };
        if span > slept {
            let share = (span - slept).as_secs_f32() / span.as_secs_f32();
            self.busy_share = (self.busy_share * 3.0 + share) / 4.0;
        }
        // A worker busy most of the cycle is about as slow as the server: a nap there only
        // delays requests it would have sent (against the built-in target, ~7 µs a request
        // on each side, naps cost 9% of the count). Against nginx at 50 connections the
        // share stays under 0.65; against the built-in target it passes 0.8.
        if self.length() + self.lateness > self.drain() / NAP_SHARE
            || self.busy_share > NAP_BUSY_MAX
        {
            self.skip = NAP_SKIP;
            self.busy_share = 0.0;
        }
    }
}

/// The worker thread's timer slack down to 1 ns (from Linux's 50 µs default), so a nap ends
/// when asked. Per thread; only workers that nap ask for it.
pub(crate) fn tighten_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with an integer argument, affecting only the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Naps while every connection waits, then takes what came in one turn (in which the
/// connections answered write their next requests), and again while naps bring responses
/// stamped by the kernel. Returns the requests ended count it has seen.
async fn nap_while_idle(activity: &Activity, naps: &mut Naps, mut seen: u64) -> u64 {
    if !naps.take_turn() {
        activity.note(|s| s.skipped_naps += 1);
        return seen;
    }
    // The end of the last nap: responses that came while the worker handled the last batch
    // are collected by this nap too, so the rate is over the span.
    let mut woke: Option<Instant> = None;
    while activity.stamped.get() && !naps.skipping() {
        let asked = naps.length();
        let before = Instant::now();
        std::thread::sleep(asked);
        let after = Instant::now();
        let slept = after - before;
        let span = woke.map_or(slept, |w| after - w);
        woke = Some(after);
        tokio::task::yield_now().await;
        let responses = activity.ended.get().wrapping_sub(seen);
        seen = activity.ended.get();
        naps.learn(asked, slept, span, responses);
        activity.note(|s| {
            s.naps += 1;
            s.napped += slept;
            s.nap_responses += responses;
            s.empty_naps += u64::from(responses == 0);
        });
        if responses == 0 {
            break;
        }
    }
    seen
}

/// Runs beside a closed loop's connections until the run ends: while they all wait, naps
/// (when `naps` is given and the last response was stamped) or polls for up to `linger`, then
/// sleeps until a request ends. Adds the polling that found nothing to `idle`.
pub(crate) async fn linger_before_sleeping(
    activity: &Activity,
    linger: Duration,
    mut naps: Option<Naps>,
    idle: &Cell<Duration>,
) {
    loop {
        let mut seen = activity.ended.get();
        let mut idle_since: Option<Instant> = None;
        loop {
            tokio::task::yield_now().await;
            let mut now = Instant::now();
            if activity.ended.get() != seen {
                // Work came: the polling since the last request was not idle after all.
                seen = activity.ended.get();
                if let Some(since) = idle_since.take() {
                    activity.note(|s| {
                        s.hits += 1;
                        s.hit_polling += now - since;
                    });
                }
                continue;
            }
            if let (None, Some(n)) = (idle_since, naps.as_mut()) {
                // Every connection waits: nap while naps pay.
                seen = nap_while_idle(activity, n, seen).await;
                // Napping is sleep, not polling: the linger's clock starts after it.
                now = Instant::now();
            }
            let since = *idle_since.get_or_insert(now);
            if now - since >= linger {
                idle.set(idle.get() + (now - since));
                activity.note(|s| s.misses += 1);
                break;
            }
        }
        // Sleep until a request ends (the event loop sleeps once nothing else can run).
        poll_fn(|cx| {
            if activity.ended.get() != seen {
                Poll::Ready(())
            } else {
                activity.sleeper.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_connections_never_nap() {
        assert!(Naps::new(NAP_MIN_CONNECTIONS - 1).is_none());
        assert!(Naps::new(NAP_MIN_CONNECTIONS).is_some());
    }

    #[test]
    fn naps_settle_at_a_quarter_of_the_drain_time() {
        let mut n = Naps::new(40).unwrap();
        // The server answers every 15 µs (600 µs for all 40); naps end 5 µs late.
        for _ in 0..50 {
            assert!(n.take_turn());
            let asked = n.length();
            let slept = asked + Duration::from_micros(5);
            n.learn(asked, slept, slept, (slept.as_micros() / 15) as u64);
        }
        let settled = n.length().as_micros();
        assert!((135..=150).contains(&settled), "{settled} µs");
    }

    #[test]
    fn naps_stop_where_the_server_would_drain_during_one() {
        // Four connections, a server answering in 7 µs: the timer alone is later than a
        // quarter of the 28 µs the server needs for all four.
        let mut n = Naps::new(4).unwrap();
        assert!(n.take_turn());
        n.learn(
            NAP_MIN,
            Duration::from_micros(22),
            Duration::from_micros(22),
            3,
        );
        for _ in 0..NAP_SKIP {
            assert!(!n.take_turn());
        }
        assert!(n.take_turn(), "tried again after the skip");
    }

    #[test]
    fn one_very_late_wake_up_does_not_stop_naps() {
        let mut n = Naps::new(50).unwrap();
        for _ in 0..20 {
            let asked = n.length();
            n.learn(asked, asked + Duration::from_micros(5), asked, 6);
        }
        let asked = n.length();
        n.learn(asked, asked + Duration::from_millis(1), asked, 6);
        assert!(n.take_turn(), "a 1 ms late nap stopped naps");
    }

    #[test]
    fn a_worker_as_busy_as_the_server_stops_napping() {
        let mut n = Naps::new(50).unwrap();
        // Naps each followed by four times as long handling the batch: busy 80% of the cycle.
        for _ in 0..30 {
            if !n.take_turn() {
                return;
            }
            let asked = n.length();
            n.learn(asked, asked, asked * 5, 6);
        }
        panic!("still napping while busy 80% of the time");
    }

    #[test]
    fn an_empty_nap_lengthens_the_next() {
        let mut n = Naps::new(64).unwrap();
        let before = n.length();
        n.learn(before, before, before, 0);
        assert!(n.length() > before);
        for _ in 0..20 {
            n.learn(n.length(), n.length(), n.length(), 0);
        }
        assert_eq!(n.length(), NAP_MAX);
    }
}
