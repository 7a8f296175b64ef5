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
    sleeper: Cell<Option<Waker>>,
    /// What lingering did, for measurements (`LOADMARK_LINGER_STATS=1` prints it).
    pub(crate) stats: Cell<LingerStats>,
}

/// Lingers that found work before the limit (and how long they polled for it), and lingers
/// that ended in sleep.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct LingerStats {
    pub hits: u64,
    pub hit_polling: Duration,
    pub misses: u64,
}

impl Activity {
    /// A request ended (called once per request; a counter and, rarely, a wake).
    #[inline]
    pub(crate) fn request_ended(&self) {
        self.ended.set(self.ended.get().wrapping_add(1));
        if let Some(waker) = self.sleeper.take() {
            waker.wake();
        }
    }
}

/// Runs beside a closed loop's connections until the run ends: while they all wait, polls
/// for up to `linger`, then sleeps until a request ends. Adds the polling that found nothing
/// to `idle`.
pub(crate) async fn linger_before_sleeping(
    activity: &Activity,
    linger: Duration,
    idle: &Cell<Duration>,
) {
    loop {
        let mut seen = activity.ended.get();
        let mut idle_since: Option<Instant> = None;
        loop {
            tokio::task::yield_now().await;
            let now = Instant::now();
            if activity.ended.get() != seen {
                // Work came: the polling since the last request was not idle after all.
                seen = activity.ended.get();
                if let Some(since) = idle_since.take() {
                    let mut stats = activity.stats.get();
                    stats.hits += 1;
                    stats.hit_polling += now - since;
                    activity.stats.set(stats);
                }
                continue;
            }
            let since = *idle_since.get_or_insert(now);
            if now - since >= linger {
                idle.set(idle.get() + (now - since));
                let mut stats = activity.stats.get();
                stats.misses += 1;
                activity.stats.set(stats);
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
