//! Samples a server's process tree from /proc while a loadmark run lasts.
//!
//! A benchmark document wants to say "the server used 2.3 cores and grew from 40 MB to 800 MB",
//! not only "it answered 50k req/s". [`Monitor::start`] takes a first sample of a process and
//! all its descendants at once, then one every `interval` on its own thread; [`Monitor::stop`]
//! takes a last sample and returns the [`ProcessSeries`], whose [`ProcessSeries::summary`] gives
//! the start/peak/end RSS and the mean/peak CPU a report prints.
//!
//! ```no_run
//! use std::time::Duration;
//! use loadmark_monitor::{find_pid_by_name, Monitor};
//!
//! let pid = find_pid_by_name("nginx")?; // the master, whose workers are its children
//! let monitor = Monitor::start(pid, Duration::from_secs(1))?;
//! // ... run the load ...
//! let series = monitor.stop();
//! if let Some(summary) = series.summary() {
//!     println!("peak RSS {} bytes, mean CPU {:.0}%", summary.rss_peak_bytes, summary.cpu_mean_percent);
//! }
//! # Ok::<(), loadmark_monitor::MonitorError>(())
//! ```
//!
//! Design decisions:
//!
//! - **A tree, summed.** Servers are often several processes (nginx's master and workers,
//!   gunicorn's arbiter and workers, `sh -c` wrapping the real server when loadmark launched
//!   it). Monitoring only the pid you know would report an idle master. So every sample walks
//!   /proc once, finds the process and all its descendants through their parent pids, and sums
//!   CPU, RSS, threads and fds over them. RSS summed over processes counts shared pages (code,
//!   copy-on-write memory of forked workers) once per process, so it overestimates the real
//!   footprint of a forking server; it is what `ps`/`top` would add up, cheap to read and
//!   monotonic with the server's growth, which is what a report needs. PSS
//!   (`smaps_rollup`) would be exact but costs far more per sample and needs more privileges.
//! - **CPU from cumulative tick counters.** `utime + stime` of `/proc/[pid]/stat` grow
//!   monotonically; CPU % is their delta over the wall time between two samples (100 % = one
//!   core). Each process's `cutime + cstime` (time of reaped children) is included too, so a
//!   short-lived descendant (a CGI script, a worker restart) that exits and is reaped inside
//!   the tree moves its time to its parent instead of dropping out of the sum. The first
//!   sample has no interval before it, so its `cpu_percent` is 0.0 and summaries skip it.
//!   A last interval cut shorter than half the sampling interval by `stop` is folded into
//!   the one before it (one sample over both), so the series never ends on a tick-noise spike.
//! - **Bounded and cheap.** One sample per interval (one a second by default in plans), so an
//!   hour-long run keeps 3600 small records. The sampling thread waits on a channel, so `stop`
//!   returns at once instead of after the rest of an interval.
//! - **A process that exits ends the series, not the run.** The series records why it stopped
//!   early in [`ProcessSeries::stopped_early`]; a report can note "the server exited during
//!   step 3".
//! - **Linux only.** Everything comes from /proc.

mod listener;
mod proc;

pub use listener::{find_pid_by_listener, Listener};

use std::collections::HashMap;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// One sample of a process tree: the process and all its descendants, summed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessSample {
    /// Milliseconds since the monitor started (the first sample is at 0).
    pub at_ms: u64,
    /// CPU used since the previous sample over the wall time since it; 100 = one core fully
    /// busy. 0.0 for the first sample, which has no previous one.
    pub cpu_percent: f64,
    /// Resident set size, summed over the tree (shared pages counted once per process).
    pub rss_bytes: u64,
    /// Threads, summed over the tree.
    pub threads: u64,
    /// Open file descriptors (sockets included), summed over the tree.
    pub open_fds: u64,
    /// Live processes in the tree (1 = the process alone).
    pub processes: u64,
}

/// The samples of one monitored process tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessSeries {
    /// The root of the monitored tree.
    pub pid: u32,
    /// Its command name (`/proc/[pid]/comm`) when monitoring started.
    pub name: String,
    /// The sampling interval asked for (after clamping to at least 10 ms).
    pub interval_ms: u64,
    pub samples: Vec<ProcessSample>,
    /// Why sampling stopped before [`Monitor::stop`] was called (the process exited, /proc
    /// became unreadable); `None` when it ran until stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
}

/// What a report prints about a monitored server for one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessSummary {
    pub rss_start_bytes: u64,
    pub rss_peak_bytes: u64,
    pub rss_end_bytes: u64,
    /// CPU time used between the first and the last sample over the wall time between them
    /// (time-weighted, so a short last interval weighs little).
    pub cpu_mean_percent: f64,
    /// The highest per-interval CPU %. Intervals shorter than half the sampling interval (the
    /// last one, cut short by `stop`) are left out when there are others: CPU time is counted
    /// in clock ticks of 10 ms, so a 30 ms interval could read anywhere from 0 to 200 %.
    pub cpu_peak_percent: f64,
    pub threads_peak: u64,
    pub fds_peak: u64,
    pub processes_peak: u64,
    pub samples: u64,
}

impl ProcessSeries {
    /// Start/peak/end figures of the series; `None` if it holds no sample.
    pub fn summary(&self) -> Option<ProcessSummary> {
        let first = self.samples.first()?;
        let last = self.samples.last()?;
        // Each sample after the first, with the wall time of the interval it covers.
        let intervals: Vec<(f64, u64)> = self
            .samples
            .windows(2)
            .map(|pair| {
                (
                    pair[1].cpu_percent,
                    pair[1].at_ms.saturating_sub(pair[0].at_ms),
                )
            })
            .collect();
        let wall: u64 = intervals.iter().map(|&(_, dt)| dt).sum();
        let cpu_mean_percent = if wall > 0 {
            intervals
                .iter()
                .map(|&(cpu, dt)| cpu * dt as f64)
                .sum::<f64>()
                / wall as f64
        } else {
            intervals.iter().map(|&(cpu, _)| cpu).fold(0.0, f64::max)
        };
        let long_enough = |dt: u64| dt * 2 >= self.interval_ms;
        let peak_of = |filter: &dyn Fn(u64) -> bool| {
            intervals
                .iter()
                .filter(|&&(_, dt)| filter(dt))
                .map(|&(cpu, _)| cpu)
                .fold(None, |peak: Option<f64>, cpu| {
                    Some(peak.map_or(cpu, |p| p.max(cpu)))
                })
        };
        let cpu_peak_percent = peak_of(&long_enough)
            .or_else(|| peak_of(&|_| true))
            .unwrap_or(0.0);
        let max = |f: fn(&ProcessSample) -> u64| self.samples.iter().map(f).max().unwrap_or(0);
        Some(ProcessSummary {
            rss_start_bytes: first.rss_bytes,
            rss_peak_bytes: max(|s| s.rss_bytes),
            rss_end_bytes: last.rss_bytes,
            cpu_mean_percent,
            cpu_peak_percent,
            threads_peak: max(|s| s.threads),
            fds_peak: max(|s| s.open_fds),
            processes_peak: max(|s| s.processes),
            samples: self.samples.len() as u64,
        })
    }
}

/// One reading of a process tree, with cumulative CPU time (the raw material of a sample).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessTreeStat {
    /// The root's command name.
    pub name: String,
    /// CPU time used so far by the tree (user + system, including reaped children).
    pub cpu_time: Duration,
    pub rss_bytes: u64,
    pub threads: u64,
    pub open_fds: u64,
    pub processes: u64,
}

/// Why a process could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// No live process has this pid (it never existed, or it exited; a zombie counts as
    /// exited). Fix: check the pid, or that the server is still running.
    #[error("no running process with pid {pid} (did it exit?)")]
    NoSuchProcess { pid: u32 },
    /// No running process has this command name or `argv[0]` basename. Fix: check the name
    /// with `ps -e`; for interpreted servers (`python3 app.py`) the name is the interpreter's,
    /// so give the pid instead.
    #[error("no running process is named `{name}` (checked command names and argv[0])")]
    NotFound { name: String },
    /// Several unrelated processes have this name (processes of one tree, such as nginx's
    /// master and workers, count as one: the topmost is chosen). Fix: give the pid.
    #[error("several running processes are named `{name}`: pids {}; give the pid instead", join_pids(.pids))]
    Ambiguous { name: String, pids: Vec<u32> },
    /// No process of ours listens on this socket (a Unix socket's path or a TCP port). Fix:
    /// check that the server runs and listens there (`ss -lxp`, `ss -ltp`), and that it runs
    /// as loadmark's user (another user's fds cannot be read), or give the pid.
    #[error("no process that loadmark can see listens on the {listener} (is the server running, as this user?)")]
    NoListener { listener: String },
    /// Unrelated processes hold the same listening socket (passed over a Unix socket, or
    /// `SO_REUSEPORT` listeners on one port). Fix: give the pid.
    #[error("several unrelated processes listen on the {listener}: pids {}; give the pid instead", join_pids(.pids))]
    SharedListener { listener: String, pids: Vec<u32> },
    /// A /proc file could not be read, usually permission denied on `/proc/[pid]/fd` of
    /// another user's process. Fix: run loadmark as the server's user (or root), or let
    /// loadmark launch the server.
    #[error("cannot read {}: {source} (monitor a process of your own user, or run as root)", .path.display())]
    Proc {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The sampling thread could not be started (the system is out of threads or memory).
    /// Fix: lower the load generator's thread count or raise the limits.
    #[error("cannot start the monitoring thread: {source}")]
    Thread {
        #[source]
        source: std::io::Error,
    },
}

fn join_pids(pids: &[u32]) -> String {
    pids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads the process `pid` and all its descendants once, summed.
///
/// A descendant that exits while it is being read is left out; the root exiting (or being a
/// zombie) is [`MonitorError::NoSuchProcess`].
pub fn sample_once(pid: u32) -> Result<ProcessTreeStat, MonitorError> {
    let gone = || MonitorError::NoSuchProcess { pid };
    let root = proc::read_stat(pid)?.ok_or_else(gone)?;
    if root.is_zombie() {
        return Err(gone());
    }
    let stats = proc::all_stats()?;
    let page = proc::page_size();
    let mut total = ProcessTreeStat {
        name: root.comm.clone(),
        cpu_time: Duration::ZERO,
        rss_bytes: 0,
        threads: 0,
        open_fds: 0,
        processes: 0,
    };
    let mut ticks = 0u64;
    for member in proc::tree(pid, &stats) {
        // The root is read again with the others so that all figures come from one pass.
        let stat = if member == pid {
            stats.get(&pid).unwrap_or(&root)
        } else {
            &stats[&member]
        };
        // A zombie's (unreaped child's) CPU time still counts: it moves to its parent's
        // cutime once reaped, and leaving it out meanwhile would make the sum dip and jump.
        ticks += stat.cpu_ticks;
        if stat.is_zombie() {
            continue;
        }
        let Some(fds) = proc::count_fds(member)? else {
            if member == pid {
                return Err(gone());
            }
            continue;
        };
        total.rss_bytes += stat.rss_pages * page;
        total.threads += stat.threads;
        total.open_fds += fds;
        total.processes += 1;
    }
    total.cpu_time = proc::ticks_to_duration(ticks, proc::clock_ticks_per_second());
    Ok(total)
}

/// Finds a running process by exact name: its command name (`/proc/[pid]/comm`, which the
/// kernel cuts to 15 bytes) or the basename of its `argv[0]`.
///
/// When several processes match but they form one tree (nginx's master and its workers all
/// named `nginx`), the topmost one is returned, since [`Monitor`] covers its descendants
/// anyway. Zombies and the calling process are ignored.
pub fn find_pid_by_name(name: &str) -> Result<u32, MonitorError> {
    let own = std::process::id();
    let stats = proc::all_stats()?;
    let matches: Vec<u32> = stats
        .iter()
        .filter(|&(&pid, stat)| pid != own && !stat.is_zombie())
        .filter(|&(&pid, stat)| {
            stat.comm == name
                || proc::argv0(pid)
                    .is_some_and(|argv0| argv0.rsplit('/').next().unwrap_or(&argv0) == name)
        })
        .map(|(&pid, _)| pid)
        .collect();
    let roots = topmost(&matches, &stats);
    match roots.as_slice() {
        [] => Err(MonitorError::NotFound {
            name: name.to_string(),
        }),
        [pid] => Ok(*pid),
        _ => Err(MonitorError::Ambiguous {
            name: name.to_string(),
            pids: roots,
        }),
    }
}

/// Of `matches`, those with no ancestor among them, sorted: one tree of matching processes
/// (a master and its workers) counts as its topmost process.
pub(crate) fn topmost(matches: &[u32], stats: &HashMap<u32, proc::Stat>) -> Vec<u32> {
    let has_matching_ancestor = |pid: u32| {
        let mut current = stats.get(&pid).map(|s| s.ppid);
        // Bounded walk: a parent loop cannot happen in /proc, but a racy read must not hang.
        for _ in 0..stats.len() {
            match current {
                Some(parent) if parent != 0 => {
                    if matches.contains(&parent) {
                        return true;
                    }
                    current = stats.get(&parent).map(|s| s.ppid);
                }
                _ => break,
            }
        }
        false
    };
    let mut roots: Vec<u32> = matches
        .iter()
        .copied()
        .filter(|&pid| !has_matching_ancestor(pid))
        .collect();
    roots.sort_unstable();
    roots
}

/// Samples a process tree on its own thread until stopped.
///
/// Dropping a `Monitor` without calling [`Monitor::stop`] stops the thread and discards the
/// series.
pub struct Monitor {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<ProcessSeries>>,
}

/// The shortest interval: CPU time is counted in 10 ms clock ticks, so shorter intervals would
/// measure mostly rounding.
const MIN_INTERVAL: Duration = Duration::from_millis(10);

impl Monitor {
    /// Takes a first sample of `pid`'s tree now (so a wrong pid or missing permission fails
    /// here, before the run), then one every `interval` (at least 10 ms) on a new thread.
    /// Samples are due at fixed times from the start, so they do not drift; a sample that is
    /// late (a stalled machine) is taken once, not caught up.
    pub fn start(pid: u32, interval: Duration) -> Result<Monitor, MonitorError> {
        let interval = interval.max(MIN_INTERVAL);
        let started = Instant::now();
        let first = sample_once(pid)?;
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("monitor-{pid}"))
            .spawn(move || run(pid, interval, started, first, stopped))
            .map_err(|source| MonitorError::Thread { source })?;
        Ok(Monitor {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Takes a last sample (unless the process exited or the previous sample is less than a
    /// millisecond old) and returns the series.
    pub fn stop(mut self) -> ProcessSeries {
        self.finish().expect("a monitor is finished only once")
    }

    fn finish(&mut self) -> Option<ProcessSeries> {
        // Disconnecting the channel wakes the thread at once.
        drop(self.stop.take());
        let thread = self.thread.take()?;
        match thread.join() {
            Ok(series) => Some(series),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.finish();
        } else {
            drop(self.stop.take());
        }
    }
}

/// The sampling thread: runs until the channel disconnects or the process is gone.
fn run(
    pid: u32,
    interval: Duration,
    started: Instant,
    first: ProcessTreeStat,
    stopped: mpsc::Receiver<()>,
) -> ProcessSeries {
    let mut series = ProcessSeries {
        pid,
        name: first.name.clone(),
        interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
        samples: Vec::new(),
        stopped_early: None,
    };
    let mut previous = (started, first.cpu_time);
    // Where the last recorded interval began: a short last interval is folded into it.
    let mut last_start = previous;
    series.samples.push(to_sample(&first, 0, 0.0));
    let mut due = started + interval;
    loop {
        let stopping = match stopped.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Err(mpsc::RecvTimeoutError::Timeout) => false,
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => true,
        };
        let now = Instant::now();
        let elapsed = now.duration_since(previous.0);
        if stopping && elapsed < Duration::from_millis(1) {
            break;
        }
        match sample_once(pid) {
            Ok(stat) => {
                // `stop` cuts the last interval short. CPU time moves in 10 ms clock ticks,
                // so a 30 ms interval reads anywhere from 0 to 200 % of a core (a 143 %
                // spike at the end of a one-core server's chart was seen): fold it into the
                // interval before, and the last point covers its real span with a fair rate.
                let fold = stopping && elapsed * 2 < interval && series.samples.len() >= 2;
                let from = if fold { last_start } else { previous };
                if fold {
                    series.samples.pop();
                }
                let cpu = stat.cpu_time.saturating_sub(from.1);
                let wall = now.duration_since(from.0);
                let percent = cpu.as_secs_f64() / wall.as_secs_f64().max(1e-9) * 100.0;
                let at_ms =
                    u64::try_from(now.duration_since(started).as_millis()).unwrap_or(u64::MAX);
                series.samples.push(to_sample(&stat, at_ms, percent));
                last_start = from;
                previous = (now, stat.cpu_time);
            }
            Err(error) => {
                series.stopped_early = Some(match error {
                    MonitorError::NoSuchProcess { .. } => format!("process {pid} exited"),
                    other => other.to_string(),
                });
                break;
            }
        }
        if stopping {
            break;
        }
        due += interval;
        let now = Instant::now();
        while due <= now {
            due += interval;
        }
    }
    series
}

fn to_sample(stat: &ProcessTreeStat, at_ms: u64, cpu_percent: f64) -> ProcessSample {
    ProcessSample {
        at_ms,
        cpu_percent,
        rss_bytes: stat.rss_bytes,
        threads: stat.threads,
        open_fds: stat.open_fds,
        processes: stat.processes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: u64, cpu_percent: f64, rss_bytes: u64) -> ProcessSample {
        ProcessSample {
            at_ms,
            cpu_percent,
            rss_bytes,
            threads: 2,
            open_fds: 5,
            processes: 1,
        }
    }

    fn series(samples: Vec<ProcessSample>) -> ProcessSeries {
        ProcessSeries {
            pid: 1,
            name: "x".into(),
            interval_ms: 1000,
            samples,
            stopped_early: None,
        }
    }

    #[test]
    fn summary_of_nothing_is_none() {
        assert_eq!(series(vec![]).summary(), None);
    }

    #[test]
    fn summary_weights_cpu_by_time_and_skips_short_last_interval_for_peak() {
        let s = series(vec![
            sample(0, 0.0, 100),
            sample(1000, 50.0, 300),
            sample(2000, 150.0, 200),
            // A 20 ms tail reading 400 % (two ticks of rounding) must not become the peak.
            sample(2020, 400.0, 250),
        ]);
        let summary = s.summary().unwrap();
        assert_eq!(summary.rss_start_bytes, 100);
        assert_eq!(summary.rss_peak_bytes, 300);
        assert_eq!(summary.rss_end_bytes, 250);
        assert_eq!(summary.cpu_peak_percent, 150.0);
        let expected_mean = (50.0 * 1000.0 + 150.0 * 1000.0 + 400.0 * 20.0) / 2020.0;
        assert!((summary.cpu_mean_percent - expected_mean).abs() < 1e-9);
        assert_eq!(summary.samples, 4);
        assert_eq!(summary.threads_peak, 2);
        assert_eq!(summary.fds_peak, 5);
    }

    #[test]
    fn summary_of_one_sample_has_zero_cpu() {
        let summary = series(vec![sample(0, 0.0, 7)]).summary().unwrap();
        assert_eq!(summary.cpu_mean_percent, 0.0);
        assert_eq!(summary.cpu_peak_percent, 0.0);
        assert_eq!(summary.rss_end_bytes, 7);
    }

    #[test]
    fn peak_falls_back_to_short_intervals_when_there_are_no_others() {
        let summary = series(vec![sample(0, 0.0, 1), sample(30, 60.0, 1)])
            .summary()
            .unwrap();
        assert_eq!(summary.cpu_peak_percent, 60.0);
        assert_eq!(summary.cpu_mean_percent, 60.0);
    }

    #[test]
    fn error_messages_name_the_target() {
        let e = MonitorError::Ambiguous {
            name: "nginx".into(),
            pids: vec![3, 9],
        };
        assert_eq!(
            e.to_string(),
            "several running processes are named `nginx`: pids 3, 9; give the pid instead"
        );
        assert!(MonitorError::NoSuchProcess { pid: 42 }
            .to_string()
            .contains("42"));
    }
}
