//! Finding the server behind a listening socket: a Unix socket's path or a TCP port.
//!
//! A server behind a local proxy or a sidecar is known by its socket, not by its name or pid
//! (issue 16). The kernel lists every socket with its inode (`/proc/net/unix`, `/proc/net/tcp`,
//! `/proc/net/tcp6`), and every process's fds name the inode they hold (`socket:[INODE]` in
//! `/proc/PID/fd`). The listening socket's holders are the server: one process, or a tree of
//! them that inherited it (nginx's master and its workers), whose topmost is monitored with
//! its descendants.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::{proc, MonitorError};

/// A listening socket to find the server by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listener {
    /// A Unix stream socket bound to this path.
    Unix(PathBuf),
    /// A TCP port listened on (any local address, IPv4 or IPv6).
    Tcp(u16),
}

impl std::fmt::Display for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listener::Unix(path) => write!(f, "Unix socket {}", path.display()),
            Listener::Tcp(port) => write!(f, "TCP port {port}"),
        }
    }
}

/// `__SO_ACCEPTCON` in `/proc/net/unix`'s Flags column: the socket listens.
const UNIX_ACCEPTING: u32 = 0x0001_0000;
/// `TCP_LISTEN` in `/proc/net/tcp`'s st column.
const TCP_LISTEN: &str = "0A";

/// The process serving on `listener`: the topmost of the processes holding its listening
/// socket (see [`crate::find_pid_by_name`] for how a tree counts as one).
pub fn find_pid_by_listener(listener: &Listener) -> Result<u32, MonitorError> {
    let inodes = match listener {
        Listener::Unix(path) => {
            let text = read("/proc/net/unix")?;
            unix_listening_inodes(&text, &same_path_as(path))
        }
        Listener::Tcp(port) => {
            let mut inodes = tcp_listening_inodes(&read("/proc/net/tcp")?, *port);
            // No IPv6 table on a kernel without IPv6: nothing listens there.
            if let Ok(text) = std::fs::read_to_string("/proc/net/tcp6") {
                inodes.extend(tcp_listening_inodes(&text, *port));
            }
            inodes
        }
    };
    let not_found = || MonitorError::NoListener {
        listener: listener.to_string(),
    };
    if inodes.is_empty() {
        return Err(not_found());
    }
    let own = std::process::id();
    // One walk of /proc: the processes and their parents, then the fds of each.
    let stats = proc::all_stats()?;
    let holders: Vec<u32> = stats
        .keys()
        .copied()
        .filter(|&pid| pid != own && holds_any(pid, &inodes))
        .collect();
    let roots = crate::topmost(&holders, &stats);
    match roots.as_slice() {
        [] => Err(not_found()),
        [pid] => Ok(*pid),
        _ => Err(MonitorError::SharedListener {
            listener: listener.to_string(),
            pids: roots,
        }),
    }
}

fn read(path: &str) -> Result<String, MonitorError> {
    std::fs::read_to_string(path).map_err(|source| MonitorError::Proc {
        path: PathBuf::from(path),
        source,
    })
}

/// Whether a path in `/proc/net/unix` names the same file as `path`: as written, or both
/// resolved (a server may have bound a relative path, or one through a symlink).
fn same_path_as(path: &Path) -> impl Fn(&str) -> bool {
    let wanted = path.to_path_buf();
    let resolved = std::fs::canonicalize(path).ok();
    move |listed: &str| {
        let listed = Path::new(listed);
        listed == wanted
            || resolved
                .as_ref()
                .is_some_and(|r| std::fs::canonicalize(listed).is_ok_and(|l| &l == r))
    }
}

/// Inodes of listening Unix sockets whose path matches. Lines: `Num RefCount Protocol Flags
/// Type St Inode Path`, in hex but the inode; abstract sockets' paths start with `@`.
fn unix_listening_inodes(text: &str, matches: &dyn Fn(&str) -> bool) -> HashSet<u64> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = u32::from_str_radix(fields.get(3)?, 16).ok()?;
            let inode = fields.get(6)?.parse().ok()?;
            let path = fields.get(7)?;
            (flags & UNIX_ACCEPTING != 0 && matches(path)).then_some(inode)
        })
        .collect()
}

/// Inodes of TCP sockets listening on `port`. Lines: `sl local_address rem_address st …
/// inode`, the local address as `HEXADDR:HEXPORT`.
fn tcp_listening_inodes(text: &str, port: u16) -> HashSet<u64> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit(':').next()?;
            let listening = *fields.get(3)? == TCP_LISTEN;
            let inode = fields.get(9)?.parse().ok()?;
            (listening && u16::from_str_radix(local_port, 16).ok()? == port).then_some(inode)
        })
        .collect()
}

/// Whether `pid` has an fd on one of these socket inodes. A process whose fds cannot be read
/// (another user's, or gone meanwhile) holds none that we can see.
fn holds_any(pid: u32, inodes: &HashSet<u64>) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| {
            target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|inode| inodes.contains(&inode))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_table_lines_give_listening_inodes_for_the_path() {
        let text = "\
Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 41021 /run/app.sock
0000000000000000: 00000003 00000000 00000000 0001 03 41030 /run/app.sock
0000000000000000: 00000002 00000000 00010000 0001 01 41022 /run/other.sock
0000000000000000: 00000002 00000000 00010000 0001 01 41023 @abstract
0000000000000000: 00000002 00000000 00000000 0002 01 41024
";
        let inodes = unix_listening_inodes(text, &|p| p == "/run/app.sock");
        // The accepted connection (41030, flags 0) shares the path but does not listen.
        assert_eq!(inodes, HashSet::from([41021]));
    }

    #[test]
    fn tcp_table_lines_give_listening_inodes_for_the_port() {
        let text = "\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51001 1 0 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 51002 1 0 20 4 30 10 -1
   2: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51003 1 0 100 0 0 10 0
";
        assert_eq!(tcp_listening_inodes(text, 8080), HashSet::from([51001]));
        assert_eq!(tcp_listening_inodes(text, 8081), HashSet::from([51003]));
        assert!(tcp_listening_inodes(text, 9).is_empty());
    }
}
