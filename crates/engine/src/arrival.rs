//! When a response's bytes arrived, as the kernel saw them (issues 20 and 22).
//!
//! A latency ends when the response's last byte is read. Timed with the process's own clock,
//! that includes however long the bytes sat in the socket before the worker got to them: a
//! wake-up, other connections handled first, or a worker that chose to sleep a little
//! instead of being woken for every response ([`crate::linger`]'s naps). With
//! `SO_TIMESTAMPNS`, TCP hands each `recvmsg` the time the kernel received the last segment
//! it read (socket(7), tcp(7)); on loopback that is when the server's write reached the
//! device, the instant a capture on `lo` shows. So the latency is the server's and the
//! network's, not the client's.
//!
//! The kernel's stamp is on the real-time clock and the engine's times are [`Instant`]s (the
//! monotonic clock): a stamp is turned into an `Instant` by its age, `now_real - stamp`,
//! taken back from `Instant::now()`, so a step of the real-time clock cannot move it by more
//! than the few nanoseconds between the two clock reads.

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where the kernel stamps TCP reads: Linux on the targets whose `SO_TIMESTAMPNS` (the `_OLD`
/// value, whose `timespec` is 64-bit there) is asm-generic's 35. Elsewhere [`os`] is the
/// fallback below, and reads take the time themselves.
#[cfg(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
))]
mod os {
    use std::os::fd::RawFd;
    use std::time::Duration;

    /// The libc crate does not export it for Linux.
    const SO_TIMESTAMPNS: libc::c_int = 35;

    pub(super) fn enable(fd: RawFd) -> bool {
        let on: libc::c_int = 1;
        // SAFETY: a plain setsockopt with an int option on an fd the caller owns.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        rc == 0
    }

    pub(super) fn stamp(msg: &libc::msghdr) -> Option<Duration> {
        // SAFETY: `msg` was filled by recvmsg; the CMSG macros walk within msg_controllen.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == SO_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                    if ts.tv_sec <= 0 {
                        return None;
                    }
                    return Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
                }
                cmsg = libc::CMSG_NXTHDR(msg, cmsg);
            }
        }
        None
    }
}

/// Another OS or architecture: no stamps.
#[cfg(not(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
)))]
mod os {
    use std::os::fd::RawFd;
    use std::time::Duration;

    pub(super) fn enable(_fd: RawFd) -> bool {
        false
    }

    pub(super) fn stamp(_msg: &libc::msghdr) -> Option<Duration> {
        None
    }
}

/// Asks the kernel to stamp the segments this socket receives. False where it cannot (another
/// OS or architecture, or a refusal): reads then take the time themselves.
pub(crate) fn enable(fd: RawFd) -> bool {
    os::enable(fd)
}

/// Room for one `SCM_TIMESTAMPNS` control message (CMSG_SPACE of a 16-byte timespec), as
/// u64s so it is aligned for `cmsghdr`.
type Control = [u64; 4];

/// `recv` into `buf`, also returning when the kernel received the last segment read (None
/// when it gave no stamp: a socket without [`enable`], or the first segments after it, which
/// the kernel may not have stamped yet).
pub(crate) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<Instant>)> {
    let mut control: Control = [0; 4];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: all-zero is a valid msghdr; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of::<Control>() as _;
    // SAFETY: `msg` describes `buf` and `control`, both valid for writes of their lengths.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize, os::stamp(&msg).map(to_instant)))
}

/// How long a (monotonic, real-time) base serves before it is read again: the two clocks run
/// at the same rate, both slewed by NTP alike, so only a step of the real-time clock moves
/// them apart, and it is caught within this long.
const REBASE_AFTER: Duration = Duration::from_millis(10);

std::thread_local! {
    static BASE: std::cell::Cell<Option<(Instant, Duration)>> = const { std::cell::Cell::new(None) };
}

/// A real-time stamp as an `Instant`, through the thread's base pair: no clock read per
/// stamp, and no error from an interrupt between two reads (a VM exit there once put a
/// stamp 13 µs before its request was written).
fn to_instant(since_epoch: Duration) -> Instant {
    BASE.with(|base| {
        let (mono, real) = match base.get() {
            Some((mono, real)) if since_epoch < real + REBASE_AFTER => (mono, real),
            _ => {
                let fresh = read_base();
                base.set(Some(fresh));
                fresh
            }
        };
        if since_epoch >= real {
            mono + (since_epoch - real)
        } else {
            mono.checked_sub(real - since_epoch).unwrap_or(mono)
        }
    })
}

/// The monotonic clock and the real-time clock read together: of three tries, the one whose
/// two real-time reads around the monotonic one were closest, at their midpoint.
fn read_base() -> (Instant, Duration) {
    let real = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
    };
    let mut best: Option<(Duration, Instant, Duration)> = None;
    for _ in 0..3 {
        let before = real();
        let mono = Instant::now();
        let after = real();
        let gap = after.saturating_sub(before);
        if best.is_none_or(|(tightest, _, _)| gap < tightest) {
            best = Some((gap, mono, before + gap / 2));
        }
    }
    let (_, mono, real) = best.expect("three tries");
    (mono, real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::{DirectTcp, Inbound, Nagle, Tcp, Transport};
    use std::io::Write;
    use tokio::io::AsyncReadExt;

    /// Connects a [`DirectTcp`] stream to a real loopback server that writes 5 bytes; reads
    /// them 30 ms after they were written. Returns the stream's arrival and the write's time.
    fn read_late(stamp: bool) -> (Option<Instant>, Instant, Instant) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let transport = DirectTcp {
            tcp: Tcp {
                addr: listener.local_addr().unwrap(),
                connect_timeout: Duration::from_secs(5),
                via: None,
            },
            stamp,
            nagle: Nagle::UntilSplit,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut stream = transport.connect().await.unwrap();
            let (mut server, _) = listener.accept().unwrap();
            // The kernel switches stamping on for the whole system a moment after the first
            // socket asks (from a work queue): exchange until it stamps (or 1 s passes).
            let mut buf = [0u8; 16];
            for _ in 0..100 {
                server.write_all(b"warm").unwrap();
                let _ = stream.read(&mut buf).await.unwrap();
                if stream.arrival().is_some() || !stamp {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let written = Instant::now();
            server.write_all(b"hello").unwrap();
            std::thread::sleep(Duration::from_millis(30));
            let read_at = Instant::now();
            let n = stream.read(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"hello");
            (stream.arrival(), written, read_at)
        })
    }

    #[test]
    fn a_late_read_is_timed_when_the_bytes_arrived() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let (arrival, written, read_at) = read_late(true);
        let arrival = arrival.expect("the kernel stamped the bytes");
        // The read comes 30 ms after the write: under 25 ms means the stamp is the arrival,
        // with room for a test thread preempted inside its write on a busy machine.
        assert!(
            arrival >= written && arrival < written + Duration::from_millis(25),
            "arrived {:?} after the write, read {:?} after it",
            arrival.saturating_duration_since(written),
            read_at - written
        );
    }

    #[test]
    fn a_stream_not_asked_to_stamp_leaves_the_time_to_the_reader() {
        assert_eq!(read_late(false).0, None);
    }

    #[test]
    fn a_stamp_converts_to_the_instant_it_names() {
        let real = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let mono = Instant::now();
        for back in [0u64, 5, 300, 20_000] {
            let stamp = real - Duration::from_micros(back);
            let converted = to_instant(stamp);
            let expected = mono - Duration::from_micros(back);
            let off = if converted > expected {
                converted - expected
            } else {
                expected - converted
            };
            assert!(
                off < Duration::from_millis(2),
                "{back} µs back: off by {off:?}"
            );
        }
    }
}
