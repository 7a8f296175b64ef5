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
