//! Reading and parsing the few /proc files the monitor needs.
//!
//! Every function here treats a process that vanishes between listing and reading as a normal
//! event (`Ok(None)`), because processes come and go while a server runs; only errors that
//! would make the numbers wrong (permission denied, /proc missing) are returned.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::MonitorError;

/// The fields of `/proc/[pid]/stat` the monitor uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stat {
    pub comm: String,
    pub state: char,
    pub ppid: u32,
    /// utime + stime + cutime + cstime, in clock ticks. The children's times are included so
    /// that a descendant that exits and is reaped inside the tree moves its time to its parent
    /// instead of making it vanish from the sum.
    pub cpu_ticks: u64,
    pub threads: u64,
    pub rss_pages: u64,
}

impl Stat {
    pub fn is_zombie(&self) -> bool {
        // 'Z' zombie, 'X' dead (never normally visible, but it means the same).
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses the text of `/proc/[pid]/stat`. The command name sits between the first '(' and the
/// *last* ')', since it may itself contain spaces and parentheses.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    // Field n of proc(5) (1-based) is at index n - 3 after the command name.
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).copied();
    let num = |n: usize| field(n).and_then(|s| s.parse::<i64>().ok());
    let state = field(3)?.chars().next()?;
    let ppid = u32::try_from(num(4)?).ok()?;
    let ticks = [14, 15, 16, 17]
        .iter()
        .map(|&n| num(n).map(|v| v.max(0) as u64))
        .sum::<Option<u64>>()?;
    Some(Stat {
        comm,
        state,
        ppid,
        cpu_ticks: ticks,
        threads: num(20)?.max(0) as u64,
        rss_pages: num(24)?.max(0) as u64,
    })
}

/// True when an error means "the process is gone" rather than "we may not look".
fn vanished(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::NotFound || error.raw_os_error() == Some(libc::ESRCH)
}

fn proc_error(path: PathBuf, source: io::Error) -> MonitorError {
    MonitorError::Proc { path, source }
}

pub(crate) fn read_stat(pid: u32) -> Result<Option<Stat>, MonitorError> {
    let path = PathBuf::from(format!("/proc/{pid}/stat"));
    match std::fs::read_to_string(&path) {
        Ok(text) => match parse_stat(&text) {
            Some(stat) => Ok(Some(stat)),
            None => Err(proc_error(
                path,
                io::Error::new(io::ErrorKind::InvalidData, "unexpected format"),
            )),
        },
        Err(e) if vanished(&e) => Ok(None),
        Err(e) => Err(proc_error(path, e)),
    }
}

/// Counts the entries of `/proc/[pid]/fd`; `None` if the process is gone.
pub(crate) fn count_fds(pid: u32) -> Result<Option<u64>, MonitorError> {
    let path = PathBuf::from(format!("/proc/{pid}/fd"));
    match std::fs::read_dir(&path) {
        Ok(entries) => Ok(Some(entries.filter(|e| e.is_ok()).count() as u64)),
        Err(e) if vanished(&e) => Ok(None),
        Err(e) => Err(proc_error(path, e)),
    }
}

/// `argv[0]` of a process, or `None` if it is gone, unreadable or empty (kernel threads,
/// zombies).
pub(crate) fn argv0(pid: u32) -> Option<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let first = bytes.split(|&b| b == 0).next()?;
    if first.is_empty() {
        return None;
    }
    Some(String::from_utf8_lossy(first).into_owned())
}

/// Every process id listed in /proc (thread ids are not listed there, only thread groups).
pub(crate) fn all_pids() -> Result<Vec<u32>, MonitorError> {
    let root = Path::new("/proc");
    let entries = std::fs::read_dir(root).map_err(|e| proc_error(root.to_path_buf(), e))?;
    Ok(entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .collect())
}

/// The stat of every live process, keyed by pid. Unreadable entries are skipped: this is used
/// to find relationships, and a process we may not read is not one we can sum anyway.
pub(crate) fn all_stats() -> Result<HashMap<u32, Stat>, MonitorError> {
    let mut stats = HashMap::new();
    for pid in all_pids()? {
        if let Ok(Some(stat)) = read_stat(pid) {
            stats.insert(pid, stat);
        }
    }
    Ok(stats)
}

/// `root` and all its descendants (live or zombie), root first.
pub(crate) fn tree(root: u32, stats: &HashMap<u32, Stat>) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, stat) in stats {
        if pid != root {
            children.entry(stat.ppid).or_default().push(pid);
        }
    }
    let mut members = vec![root];
    let mut next = 0;
    while next < members.len() {
        if let Some(kids) = children.get(&members[next]) {
            members.extend(kids.iter().copied());
        }
        next += 1;
    }
    members
}

pub(crate) fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 for unknown names.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as u64
    } else {
        100
    }
}

pub(crate) fn page_size() -> u64 {
    // SAFETY: as above.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64
    } else {
        4096
    }
}

pub(crate) fn ticks_to_duration(ticks: u64, per_second: u64) -> Duration {
    let nanos = u128::from(ticks) * 1_000_000_000 / u128::from(per_second.max(1));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line_with_awkward_command_name() {
        let line = "1234 (we) ird (name)) S 1 1234 1234 0 -1 4194560 100 0 0 0 \
                    70 30 5 -2 20 0 3 0 100 12345678 256 18446744073709551615 \
                    1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        let stat = parse_stat(line).unwrap();
        assert_eq!(stat.comm, "we) ird (name)");
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.ppid, 1);
        // Negative cutime/cstime are clamped, never subtracted.
        assert_eq!(stat.cpu_ticks, 70 + 30 + 5);
        assert_eq!(stat.threads, 3);
        assert_eq!(stat.rss_pages, 256);
    }

    #[test]
    fn rejects_truncated_stat() {
        assert_eq!(parse_stat("1 (x) S 1 2"), None);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn tree_walks_descendants_only() {
        let stat = |ppid| Stat {
            comm: "x".into(),
            state: 'S',
            ppid,
            cpu_ticks: 0,
            threads: 1,
            rss_pages: 1,
        };
        let stats: HashMap<u32, Stat> = [
            (1, stat(0)),
            (10, stat(1)),
            (11, stat(10)),
            (12, stat(11)),
            (20, stat(1)),
        ]
        .into_iter()
        .collect();
        let mut members = tree(10, &stats);
        members.sort_unstable();
        assert_eq!(members, vec![10, 11, 12]);
    }

    #[test]
    fn ticks_convert_exactly() {
        assert_eq!(ticks_to_duration(150, 100), Duration::from_millis(1500));
    }
}
