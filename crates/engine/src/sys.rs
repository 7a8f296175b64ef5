//! The few OS facts the engine needs: open-file limits and per-thread CPU time.

use std::ops::{AddAssign, Sub};
use std::time::Duration;

use crate::error::EngineError;

/// CPU time, split as the kernel accounts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    pub user: Duration,
    pub system: Duration,
}

impl CpuTime {
    pub fn total(&self) -> Duration {
        self.user + self.system
    }
}

impl AddAssign for CpuTime {
    fn add_assign(&mut self, o: CpuTime) {
        self.user += o.user;
        self.system += o.system;
    }
}

impl Sub for CpuTime {
    type Output = CpuTime;
    fn sub(self, o: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(o.user),
            system: self.system.saturating_sub(o.system),
        }
    }
}

fn timeval(tv: libc::timeval) -> Duration {
    Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
}

/// CPU time of the calling thread (Linux `RUSAGE_THREAD`; zero where unsupported).
pub fn thread_cpu_time() -> CpuTime {
    #[cfg(target_os = "linux")]
    {
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage only writes into the struct we own.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } == 0 {
            return CpuTime {
                user: timeval(usage.ru_utime),
                system: timeval(usage.ru_stime),
            };
        }
    }
    CpuTime::default()
}

/// A load thread's busy share of a core, sampled at each hand-over (once a second, one
/// `getrusage` call): its CPU time since it started, less the time it spent polling while
/// idle (the linger), over the wall time since the run's origin, as the report computes it.
pub(crate) struct BusyClock {
    cpu_start: CpuTime,
    origin: std::time::Instant,
    last: (std::time::Instant, Duration),
}

impl BusyClock {
    pub(crate) fn new(cpu_start: CpuTime, origin: std::time::Instant) -> Self {
        BusyClock {
            cpu_start,
            origin,
            // The first second's share leaves out what was spent before the origin
            // (runtime, open-loop pool).
            last: (origin, (thread_cpu_time() - cpu_start).total()),
        }
    }

    /// Called on the load thread itself (the CPU time is the calling thread's).
    pub(crate) fn sample(
        &mut self,
        idle_polling: &std::cell::Cell<Duration>,
    ) -> loadmark_metrics::Busy {
        let now = std::time::Instant::now();
        let busy = (thread_cpu_time() - self.cpu_start)
            .total()
            .saturating_sub(idle_polling.get());
        let share =
            |cpu: Duration, wall: Duration| cpu.as_secs_f64() / wall.as_secs_f64().max(1e-9);
        let (then, busy_then) = std::mem::replace(&mut self.last, (now, busy));
        loadmark_metrics::Busy {
            so_far: share(busy, now - self.origin),
            recent: share(busy.saturating_sub(busy_then), now - then),
        }
    }
}

/// Files a run needs besides its connections: runtime, stdio, output files.
const SPARE_FILES: u64 = 64;

/// Raises the soft open-file limit as far as the hard limit allows, and says up front when
/// `connections` cannot fit.
pub fn raise_file_limit(connections: usize) -> Result<(), EngineError> {
    let needed = connections as u64 + SPARE_FILES;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return Ok(());
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    if lim.rlim_cur < needed {
        return Err(EngineError::FileLimit {
            needed,
            limit: lim.rlim_cur,
        });
    }
    Ok(())
}
