//! Microsecond sleeps on a tokio event loop: waking for an open-loop schedule (the engine)
//! and answering `/delay/N` on time (the built-in target).
//!
//! ```no_run
//! # async fn f() {
//! let mut pacer = loadmark_timer::Pacer::new();
//! let due = std::time::Instant::now() + std::time::Duration::from_micros(700);
//! pacer.sleep_until(due).await; // returns within a few µs of `due`
//! # }
//! ```
//!
//! tokio's timer wheel has millisecond slots: a sleep until an intended send time wakes up to
//! 1 ms late, and since open-loop latency runs from the intended time, that lag would be
//! charged to the server (p50 ~850 µs of "latency" against a server answering in 120 µs).
//! On Linux the schedule waits on a `timerfd` instead, armed for the exact time and
//! registered with the worker's event loop like a socket, so the loop wakes when it fires.
//! The thread's timer slack is set to 1 ns so the kernel does not defer the wake-up either
//! (the default slack is 50 µs). Requests whose times have passed are sent at once without
//! any wait, so a dense schedule costs no timer call at all.

use std::time::{Duration, Instant};

/// Waking a sleeping thread takes time: 30-40 µs on this class of VM (schedule lag p50 36 µs
/// with the timerfd alone). The pacer learns that delay (a moving average of how late each
/// wake-up came) and arms its timer that much early, then polls the event loop for the last
/// few microseconds: a fixed 50 µs polling window gave lag p50 7 µs but kept a core busy
/// at 20k req/s; learning the delay polls only for its jitter.
const FIRST_GUESS: Duration = Duration::from_micros(30);
/// A polling round (yield, poll the sockets without blocking, come back) that found nothing
/// to do takes 1-2 µs; one that took longer did work.
const IDLE_ROUND: Duration = Duration::from_micros(3);
/// The least added to the learned delay, for its jitter.
const MARGIN: Duration = Duration::from_micros(5);
/// How many mean deviations of the wake-up delay are added to it (TCP adds four to its
/// round-trip estimate for its retransmission timer): a fixed 5 µs margin left the lag p99
/// at 53-65 µs at 2k req/s. This VM's wake-ups from a 400 µs sleep come 26 µs late at p50,
/// 46 at p90 and 67 at p99 (bench: a nanosleep loop); four deviations still missed 1 in 100.
const DEVIATIONS: u32 = 6;
/// Wake-ups learned from are capped here: a wake-up delayed by a busy core or a descheduled
/// VM says nothing about the next one and must not make every later sleep poll for long.
const MAX_LEARNED: Duration = Duration::from_micros(200);

/// Sleeps until given instants; learns the wake-up delay of the thread it runs on, so keep
/// one per task that sleeps repeatedly (one per open-loop schedule).
pub struct Pacer {
    #[cfg(target_os = "linux")]
    timer: Option<linux::TimerFd>,
}

thread_local! {
    /// How late this thread's wake-ups come, learned by every pacer on it (an exponential
    /// moving average, 1/8 per sample): a pacer made per request still starts well informed.
    static WAKE_DELAY: std::cell::Cell<Duration> = const { std::cell::Cell::new(FIRST_GUESS) };
    /// How far wake-ups stray from that average (the mean deviation, 1/4 per sample).
    static WAKE_DEVIATION: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

/// How long before a due time the pacer arms its timer: the learned delay and its jitter.
fn wake_early() -> Duration {
    WAKE_DELAY.get() + (WAKE_DEVIATION.get() * DEVIATIONS).max(MARGIN)
}

/// A wait too short to sleep through teaches nothing, so the jitter estimate fades instead
/// (1/64 per wait): else two late wake-ups could leave a low-rate schedule polling between
/// all its requests for the rest of the run, never sleeping again to learn otherwise.
fn forget_a_little() {
    WAKE_DEVIATION.set(WAKE_DEVIATION.get() * 63 / 64);
}

/// Learns from one wake-up that came `late` after the time asked.
fn learn(late: Duration) {
    let late = late.min(MAX_LEARNED);
    let delay = WAKE_DELAY.get();
    let miss = late.abs_diff(delay);
    WAKE_DEVIATION.set((WAKE_DEVIATION.get() * 3 + miss) / 4);
    WAKE_DELAY.set((delay * 7 + late) / 8);
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new()
    }
}

impl Pacer {
    /// A pacer on a timerfd where the OS has one; the tokio timer otherwise (or if the
    /// timerfd cannot be made, e.g. no file descriptors left, which the run reports anyway).
    pub fn new() -> Self {
        #[cfg(target_os = "linux")]
        {
            linux::tight_timer_slack();
            Pacer {
                timer: linux::TimerFd::new().ok(),
            }
        }
        #[cfg(not(target_os = "linux"))]
        Pacer {}
    }

    /// Returns at `due` (at once if it has passed), with the time it spent polling with
    /// nothing to do.
    pub async fn sleep_until(&mut self, due: Instant) -> Duration {
        self.sleep_until_seen(due).await.0
    }

    /// As [`Pacer::sleep_until`], with the clock as last read (at or after `due`): callers
    /// that stamp what they do at once save a read of the clock per request.
    pub async fn sleep_until_seen(&mut self, due: Instant) -> (Duration, Instant) {
        let now = Instant::now();
        if due <= now {
            return (Duration::ZERO, now);
        }
        let early = wake_early();
        if due - now > early {
            let wake_at = due - early;
            #[cfg(target_os = "linux")]
            let slept = match &mut self.timer {
                Some(timer) => timer.sleep(wake_at - now).await.is_ok(),
                None => false,
            };
            #[cfg(not(target_os = "linux"))]
            let slept = false;
            if !slept {
                tokio::time::sleep_until(wake_at.into()).await;
            }
            learn(Instant::now().saturating_duration_since(wake_at));
        } else {
            forget_a_little();
        }
        // The last stretch: yield to the event loop until due. Each yield polls the sockets
        // without blocking, so responses are read meanwhile. A round that came back at once
        // found nothing to do: its time is idle, kept apart so that polling does not look
        // like a saturated client.
        let mut idle = Duration::ZERO;
        let mut before = Instant::now();
        while before < due {
            tokio::task::yield_now().await;
            let after = Instant::now();
            if after - before <= IDLE_ROUND {
                idle += after - before;
            }
            before = after;
        }
        (idle, before)
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::Duration;

    use tokio::io::unix::AsyncFd;

    /// Sets the calling thread's timer slack to 1 ns (prctl(2) PR_SET_TIMERSLACK): the
    /// kernel may otherwise delay a timer's expiry by up to 50 µs to group wake-ups.
    pub(super) fn tight_timer_slack() {
        // SAFETY: prctl with PR_SET_TIMERSLACK only changes this thread's slack.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        }
    }

    pub(super) struct TimerFd(AsyncFd<OwnedFd>);

    impl TimerFd {
        pub(super) fn new() -> io::Result<Self> {
            // SAFETY: plain syscall; the fd is owned at once.
            let fd = unsafe {
                libc::timerfd_create(
                    libc::CLOCK_MONOTONIC,
                    libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `fd` is a new descriptor nobody else owns.
            let owned = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: the OwnedFd is moved into the AsyncFd, which neither replaces nor
            // closes it while registered.
            let registered =
                unsafe { AsyncFd::register_with_interest(owned, tokio::io::Interest::READABLE) };
            Ok(TimerFd(registered.map_err(|e| e.into_parts().1)?))
        }

        /// Arms the timer `after` from now (relative: the same clock as `Instant`) and waits
        /// for it to fire.
        pub(super) async fn sleep(&mut self, after: Duration) -> io::Result<()> {
            let fd = self.0.get_ref().as_raw_fd();
            let spec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    // Not `as libc::time_t`: that alias is deprecated on musl (the static build).
                    tv_sec: after.as_secs().try_into().unwrap_or(i32::MAX.into()),
                    // A zero it_value disarms the timer: never ask for exactly 0.
                    tv_nsec: after.subsec_nanos().max(1) as libc::c_long,
                },
            };
            // SAFETY: `spec` is a valid itimerspec; the fd is ours.
            if unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) } != 0 {
                return Err(io::Error::last_os_error());
            }
            loop {
                let mut guard = self.0.readable().await?;
                let mut expirations = 0u64;
                // SAFETY: reads 8 bytes into a u64 we own.
                let n = unsafe {
                    libc::read(
                        fd,
                        (&mut expirations as *mut u64).cast(),
                        std::mem::size_of::<u64>(),
                    )
                };
                if n == 8 {
                    // The expiry is consumed: the fd is no longer readable until it next
                    // fires, so the next wait need not try (and fail) a read first.
                    guard.clear_ready();
                    return Ok(());
                }
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::WouldBlock {
                    return Err(e);
                }
                guard.clear_ready();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a thread of its own: the estimates are per thread.
    fn fresh<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
        std::thread::spawn(f).join().unwrap()
    }

    #[test]
    fn steady_wake_ups_are_met_a_little_early() {
        let early = fresh(|| {
            for _ in 0..100 {
                learn(Duration::from_micros(26));
            }
            wake_early()
        });
        // The delay itself, and the least margin: no jitter seen.
        assert!(early.as_micros().abs_diff(26 + 5) <= 1, "{early:?}");
    }

    #[test]
    fn a_few_late_wake_ups_fade_instead_of_polling_for_ever() {
        let gap = Duration::from_micros(500); // 2,000 requests a second
        let (after_late, faded) = fresh(move || {
            for _ in 0..20 {
                learn(Duration::from_micros(26));
            }
            for _ in 0..3 {
                learn(Duration::from_millis(1)); // counted as MAX_LEARNED
            }
            let after_late = wake_early();
            // Every wait now looks too short to sleep through.
            let mut waits = 0;
            while wake_early() >= gap && waits < 1000 {
                forget_a_little();
                waits += 1;
            }
            (after_late, waits)
        });
        assert!(
            after_late >= gap,
            "the late wake-ups made it poll: {after_late:?}"
        );
        assert!(faded < 100, "it sleeps again after {faded} waits");
    }
}
