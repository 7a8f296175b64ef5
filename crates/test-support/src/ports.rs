//! Ports for servers that must be told their port before they start.
//!
//! The range below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`, usually
//! 32768-60999) is cut into blocks of [`BLOCK`] ports. A test process takes a whole block by
//! holding an exclusive `flock` on the block's file in [`LOCK_DIR`], for the rest of its life:
//! the kernel drops the lock when the process exits, however it exits, so a crashed run never
//! leaves a block taken. Ports of a block are handed out once each, in order; when they run
//! out the process takes another block. Being below the ephemeral range, a leased port is
//! never drawn by `bind(0)` or by an outgoing connection; what remains (a foreign daemon on a
//! fixed port) is skipped when seen at lease time, and otherwise handled by retrying the start
//! ([`crate::retry_on_port_conflict`]).

use std::fs::{File, OpenOptions};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::PathBuf;
use std::sync::Mutex;

/// Ports per block: a test binary rarely needs more; a second block is taken if it does.
const BLOCK: u16 = 16;
/// Where the block lock files live. Fixed (not `$TMPDIR`): every test process on the
/// machine, whatever its environment, must see the same locks. `LOADMARK_TEST_PORT_DIR`
/// overrides it for machines without a writable /tmp.
const LOCK_DIR: &str = "/tmp/loadmark-test-ports";

struct Leases {
    /// The lock files of the blocks taken; held open (and so locked) until the process exits.
    locks: Vec<File>,
    next: u16,
    end: u16,
}

static LEASES: Mutex<Leases> = Mutex::new(Leases {
    locks: Vec::new(),
    next: 0,
    end: 0,
});

/// A loopback port reserved for this test process, for a server that needs its port in a
/// config file before it starts. Nothing listens on it at the time of the call; start the
/// server inside [`crate::retry_on_port_conflict`] in case something foreign takes it.
///
/// Prefer a server that binds port 0 and reports its port, or a held listener (see the crate
/// docs): those cannot collide at all.
pub fn port() -> u16 {
    let mut leases = LEASES.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        while leases.next < leases.end {
            let port = leases.next;
            leases.next += 1;
            if bindable(port) {
                return port;
            }
        }
        let (first, lock) = take_block();
        leases.locks.push(lock);
        leases.next = first;
        leases.end = first + BLOCK;
    }
}

/// Whether nothing listens on (or holds) `port` on IPv4 loopback right now. Bound the way
/// servers bind (`SO_REUSEADDR`, which std sets), so a port only in TIME_WAIT counts as free,
/// as it is for the server.
fn bindable(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// The leasable range: up to 10 000 ports right below the ephemeral range, or above it when
/// it starts too low.
fn range() -> (u16, u16) {
    let (low, high) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| {
            let mut parts = text.split_whitespace().map(|p| p.parse::<u16>().ok());
            Some((parts.next()??, parts.next()??))
        })
        .unwrap_or((32768, 60999));
    let below = (low.saturating_sub(10_000).max(1024), low);
    if below.1.saturating_sub(below.0) >= 1000 {
        below
    } else {
        (high.saturating_add(1), 65535)
    }
}

fn lock_dir() -> PathBuf {
    std::env::var_os("LOADMARK_TEST_PORT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(LOCK_DIR))
}

/// Takes the first free block, starting at a place that depends on the pid so that
/// processes starting together do not all queue on block 0.
fn take_block() -> (u16, File) {
    let (low, high) = range();
    let blocks = high.saturating_sub(low) / BLOCK;
    assert!(blocks > 0, "no port range to lease from ({low}-{high})");
    let dir = lock_dir();
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create the port lock directory {dir:?}: {e}"));
    // Everyone may lock: sessions may run as different users. Best effort (not our dir?).
    let _ = std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o1777));
    let start = std::process::id() as u16 % blocks;
    for i in 0..blocks {
        let first = low + ((start + i) % blocks) * BLOCK;
        let path = dir.join(format!("block-{first}.lock"));
        let Ok(file) = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
        else {
            continue;
        };
        // SAFETY: flock on a descriptor we own; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return (first, file);
        }
    }
    panic!("every port block in {low}-{high} is locked by another process ({dir:?})");
}

/// A loopback port bound but never listening, held as long as this value lives: connections
/// to it are refused, and no other test can take it meanwhile.
#[derive(Debug)]
pub struct HeldPort {
    _socket: TcpStream,
    pub port: u16,
}

impl HeldPort {
    pub fn addr(&self) -> SocketAddr {
        ([127, 0, 0, 1], self.port).into()
    }
}

/// A port that refuses connections for as long as the returned value lives (see
/// [`HeldPort`]). For "nothing listens here" tests: the server under test must not bind it.
pub fn refusing_port() -> HeldPort {
    // SAFETY: plain syscalls on a socket this function owns; the structs are plain data.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let socket = TcpStream::from_raw_fd(fd);
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let bound = libc::bind(fd, &addr as *const _ as *const libc::sockaddr, len);
        assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
        let mut got: libc::sockaddr_in = std::mem::zeroed();
        let mut got_len = len;
        let named = libc::getsockname(fd, &mut got as *mut _ as *mut libc::sockaddr, &mut got_len);
        assert_eq!(named, 0, "getsockname: {}", std::io::Error::last_os_error());
        HeldPort {
            _socket: socket,
            port: u16::from_be(got.sin_port),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leased_ports_are_distinct_free_and_outside_the_ephemeral_range() {
        let (low, high) = range();
        let ports: Vec<u16> = (0..BLOCK + 3).map(|_| port()).collect();
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ports.len(), "{ports:?}");
        for &p in &ports {
            assert!((low..high).contains(&p), "{p} outside {low}-{high}");
            assert!(bindable(p), "{p} is taken");
        }
        // More than a block: a second block was taken, and both stay locked by us.
        let leases = LEASES.lock().unwrap();
        assert!(leases.locks.len() >= 2);
        for lock in &leases.locks {
            // A second open file description cannot take the lock while we hold it.
            let path = std::fs::read_link(format!("/proc/self/fd/{}", lock.as_raw_fd())).unwrap();
            let other = File::open(&path).unwrap();
            // SAFETY: as in take_block.
            let got = unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            assert_eq!(got, -1, "{path:?} was not locked");
        }
    }

    #[test]
    fn a_refusing_port_refuses() {
        let held = refusing_port();
        let e = TcpStream::connect(held.addr()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
        assert!(TcpListener::bind(held.addr()).is_err(), "held, not free");
    }
}
