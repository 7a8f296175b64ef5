//! The few OS facts the engine needs: open-file limits and per-thread CPU time.

use std::ops::{AddAssign, Sub};
use std::os::fd::AsRawFd;
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

/// How long the calling thread has been runnable but waiting on a run queue for a CPU, so
/// far (the second field of /proc/thread-self/schedstat, in ns); zero where the kernel does
/// not say. A load thread that waits there sends its due requests late: the lag is then
/// other work on its core, not the engine (issue 43).
pub fn thread_cpu_wait() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// All online CPUs' busy and total time so far, in clock ticks (the first line of
/// /proc/stat: busy is everything but idle and iowait); None where there is no /proc.
pub fn machine_cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect();
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
    Some((total - idle.min(total), total))
}

/// The CPUs this process may run on (its affinity mask: `taskset -c 1 loadmark` has one),
/// never more than the machine has; 1 when it cannot be read.
pub fn usable_cpus() -> usize {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: all-zero is an empty cpu_set_t; sched_getaffinity fills the one we own.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let rc =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc == 0 {
            // SAFETY: CPU_COUNT reads the set we own.
            let n = unsafe { libc::CPU_COUNT(&set) } as usize;
            if n > 0 {
                return n;
            }
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The machine's online CPUs, whatever this process may use.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf reads a constant of the system.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as usize
    } else {
        usable_cpus()
    }
}

/// Files a run needs besides its connections: runtime, stdio, output files.
const SPARE_FILES: u64 = 64;

/// Raises the soft open-file limit as far as the hard limit allows, and says up front when
/// `connections` cannot fit. The file table is grown to hold them all before the run
/// ([`reserve_file_table`]).
pub fn raise_file_limit(connections: usize) -> Result<(), EngineError> {
    let needed = connections as u64 + SPARE_FILES;
    let Some(limit) = raise_soft_limit() else {
        return Ok(());
    };
    if limit < needed {
        return Err(EngineError::FileLimit { needed, limit });
    }
    reserve_file_table(needed);
    Ok(())
}

/// For a server, which cannot know its connections: raises the soft limit as
/// [`raise_file_limit`] does and grows the file table for up to `connections` of them, or
/// as many as the limit allows.
pub fn prepare_files_for(connections: usize) {
    let wanted = connections as u64 + SPARE_FILES;
    let limit = raise_soft_limit().unwrap_or(wanted);
    reserve_file_table(wanted.min(limit));
}

/// The soft open-file limit after raising it to the hard one (None when it cannot be read).
fn raise_soft_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
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
    Some(lim.rlim_cur)
}

/// Grows the process's file table to hold `size` descriptors now, before the run.
///
/// The kernel's table starts at 64 slots and doubles when a new descriptor does not fit. In
/// a process with more than one thread, each doubling waits for an RCU grace period
/// (`expand_fdtable` in fs/file.c) while the thread that asked sleeps, uninterruptible,
/// inside `socket()`: 5-24 ms on this class of VM. An open-loop pool growing past 64, 128,
/// 256 and 512 connections stalled its schedule that long four times (schedule lag p99
/// 15-22 ms at 20k req/s, requests dropped), and only when started by a parent that had
/// closed its descriptors: a shell that holds a high one (fd 251) hands down a table that
/// is already large. One growth here, before the clock starts, costs at most one grace
/// period, and none if no other thread runs yet. The table never shrinks, so the slot
/// borrowed to grow it is closed at once.
fn reserve_file_table(size: u64) {
    let Ok(probe) = std::fs::File::open("/dev/null") else {
        return;
    };
    let highest = libc::c_int::try_from(size.saturating_sub(1)).unwrap_or(libc::c_int::MAX);
    // SAFETY: F_DUPFD_CLOEXEC duplicates a descriptor we own onto the lowest free one at or
    // above `highest`; the duplicate is ours and closed at once.
    unsafe {
        let fd = libc::fcntl(probe.as_raw_fd(), libc::F_DUPFD_CLOEXEC, highest);
        if fd >= 0 {
            libc::close(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's table size, as /proc says it (Linux only; None elsewhere).
    fn file_table_size() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("FDSize:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    #[test]
    fn the_affinity_mask_bounds_the_usable_cpus() {
        let usable = usable_cpus();
        assert!(usable >= 1 && usable <= online_cpus());
        // Pinned to one CPU, a thread may use one: what `taskset -c N` gives a process.
        std::thread::spawn(|| {
            // SAFETY: an empty set with CPU 0 added, applied to this thread only.
            let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            unsafe { libc::CPU_SET(0, &mut one) };
            let rc =
                unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) };
            if rc == 0 {
                assert_eq!(usable_cpus(), 1);
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_that_waited_for_a_cpu_says_how_long() {
        if !std::path::Path::new("/proc/thread-self/schedstat").exists() {
            return;
        }
        // Two threads on one CPU: each runs while the other waits on the run queue.
        let spin = || {
            std::thread::spawn(|| {
                let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
                unsafe { libc::CPU_SET(0, &mut one) };
                // SAFETY: pins this thread only.
                unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) };
                let before = thread_cpu_wait();
                let t0 = std::time::Instant::now();
                while t0.elapsed() < Duration::from_millis(300) {
                    std::hint::black_box(0u64);
                }
                thread_cpu_wait() - before
            })
        };
        let (a, b) = (spin(), spin());
        let waited = a.join().unwrap() + b.join().unwrap();
        assert!(waited >= Duration::from_millis(50), "waited {waited:?}");
        let (busy, total) = machine_cpu_ticks().expect("/proc/stat");
        assert!(busy > 0 && busy <= total);
    }

    #[test]
    fn the_file_table_holds_every_connection_before_the_run() {
        let Some(before) = file_table_size() else {
            return; // no /proc: nothing to observe
        };
        // Above what the table holds now (other tests in this process may have grown it).
        let connections = 3000.max(before as usize * 2);
        match raise_file_limit(connections) {
            Ok(()) => {
                let after = file_table_size().unwrap();
                assert!(after >= connections as u64 + SPARE_FILES, "FDSize {after}");
            }
            // A hard limit too low here: the refusal names both figures instead.
            Err(EngineError::FileLimit { needed, limit }) => assert!(limit < needed),
            Err(e) => panic!("{e}"),
        }
    }
}
