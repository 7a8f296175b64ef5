//! The QUIC socket's reads, each datagram dated by the kernel, and the driver's pause between
//! reads.
//!
//! Against a server that sends each response in a datagram of its own (Caddy, quic-go), a
//! client that reads each datagram as it comes wakes, reads and sends once per request, and
//! on a 2-vCPU guest those wake-ups and small sends are most of its CPU. Reading every
//! [`Pause`] instead — a fraction of the requests' own round trip, so that the requests in
//! flight barely notice — handles the datagrams of that pause in one turn and sends what they
//! call for together (bench/RESULTS.md, "HTTP/3: reading in turns"). A datagram that waits
//! in the socket for the next turn must not make a response look slower than it was: the
//! kernel dates each one as it arrives (`SO_TIMESTAMPNS`), and the response's times are the
//! arrival times of the datagrams that carried it, as TCP's are ([`crate::arrival`]).
//!
//! quinn-udp's `recv` reports no time of arrival, so the reads are this module's own
//! `recvmmsg`; quinn-udp still sends (GSO) and set up the socket (GRO, which this read keeps).

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::unix::AsyncFd;

/// One message read: a datagram, or several of one size coalesced by GRO.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Received {
    pub from: SocketAddr,
    pub len: usize,
    /// The size of each coalesced datagram (`len` when there is one).
    pub stride: usize,
    /// When it arrived, by the kernel's clock (None if the kernel gave no time).
    pub arrived: Option<Instant>,
}

/// The most messages one read takes.
pub(crate) const BATCH: usize = 32;

/// Asks the kernel to date each datagram the socket receives.
pub(crate) fn date_arrivals(socket: &UdpSocket) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid descriptor, and an option value of the size given.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Room for the control messages one datagram may carry: its time, its GRO segment size,
/// and the packet-info and TOS messages quinn-udp's socket setup asks for.
const CONTROL: usize = 128;

/// Reads what the socket holds, up to [`BATCH`] messages into `bufs` (one per buffer), in one
/// `recvmmsg`; `WouldBlock` when it holds nothing.
pub(crate) fn read_batch(
    socket: &UdpSocket,
    bufs: &mut [Vec<u8>],
    out: &mut [Received; BATCH],
) -> io::Result<usize> {
    let n = bufs.len().min(BATCH);
    // SAFETY: plain C structs, for which all-zero is a valid value.
    let mut names: [libc::sockaddr_storage; BATCH] = unsafe { zeroed() };
    let mut iovs: [libc::iovec; BATCH] = unsafe { zeroed() };
    let mut controls = [[0u64; CONTROL / 8]; BATCH];
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
    for i in 0..n {
        iovs[i] = libc::iovec {
            iov_base: bufs[i].as_mut_ptr().cast(),
            iov_len: bufs[i].len(),
        };
        let h = &mut msgs[i].msg_hdr;
        h.msg_name = (&mut names[i] as *mut libc::sockaddr_storage).cast();
        h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        h.msg_iov = &mut iovs[i];
        h.msg_iovlen = 1;
        h.msg_control = controls[i].as_mut_ptr().cast();
        h.msg_controllen = CONTROL as _;
    }
    // SAFETY: every header points into arrays that outlive the call, with their sizes.
    let count = unsafe {
        libc::recvmmsg(
            socket.as_raw_fd(),
            msgs.as_mut_ptr(),
            n as libc::c_uint,
            // `as _`: the flags are an int on glibc and unsigned on musl.
            libc::MSG_DONTWAIT as _,
            std::ptr::null_mut(),
        )
    };
    if count < 0 {
        return Err(io::Error::last_os_error());
    }
    // Kernel times are wall-clock; one reading of both clocks maps them onto Instants.
    let (now, wall) = (Instant::now(), SystemTime::now());
    let wall = wall.duration_since(UNIX_EPOCH).unwrap_or_default();
    for i in 0..count as usize {
        let len = msgs[i].msg_len as usize;
        let mut r = Received {
            from: sockaddr(&names[i]).unwrap_or_else(|| ([0, 0, 0, 0], 0).into()),
            len,
            stride: len,
            arrived: None,
        };
        let h = &msgs[i].msg_hdr;
        // SAFETY: the kernel filled `msg_control` with `msg_controllen` bytes of cmsgs.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            while !c.is_null() {
                let data = libc::CMSG_DATA(c);
                match ((*c).cmsg_level, (*c).cmsg_type) {
                    (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) => {
                        let ts = std::ptr::read_unaligned(data as *const libc::timespec);
                        let at = Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
                        // A time past the clock's reading (a step of the wall clock) is now.
                        r.arrived = Some(now.checked_sub(wall.saturating_sub(at)).unwrap_or(now));
                    }
                    (libc::SOL_UDP, libc::UDP_GRO) => {
                        let size = std::ptr::read_unaligned(data as *const libc::c_int);
                        if size > 0 {
                            r.stride = size as usize;
                        }
                    }
                    _ => {}
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
        out[i] = r;
    }
    Ok(count as usize)
}

fn sockaddr(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match s.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says which struct the storage holds.
            let a = unsafe { &*(s as *const _ as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some((ip, u16::from_be(a.sin_port)).into())
        }
        libc::AF_INET6 => {
            // SAFETY: as above.
            let a = unsafe { &*(s as *const _ as *const libc::sockaddr_in6) };
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(
                std::net::SocketAddrV6::new(ip, u16::from_be(a.sin6_port), 0, a.sin6_scope_id)
                    .into(),
            )
        }
        _ => None,
    }
}

/// When the driver reads the socket: as datagrams come, or after a [`Pause`].
///
/// The socket is not on the event loop's own epoll, whose edge-triggered registration wakes
/// the thread for every datagram that arrives, read or not: a pause would save the reads but
/// not the wake-ups. It sits alone, one-shot, in an epoll set of its own, and that set is on
/// the event loop: armed, the first datagram wakes the driver once; after that it stays
/// quiet until the driver arms it again, which it does only when it has nothing to wait for
/// but the socket.
pub(crate) struct Reads {
    socket: libc::c_int,
    set: AsyncFd<OwnedFd>,
    pause: Option<Pause>,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Armed: the next datagram wakes the driver.
    Waiting,
    /// Not armed; the pause's end wakes the driver.
    Paused,
    /// Read on the next turn, whatever the socket says (the last one stopped at its cap).
    Due,
}

impl Reads {
    /// The shortest pause worth a timer. Against the built-in target, which packs about four
    /// responses in a datagram and answers 100 requests in flight in about 1 ms, pauses of
    /// 60 µs cost 1.5 µs of CPU per request more than reading as datagrams came (the timer's
    /// arming and wake-up, for few datagrams saved); against Caddy, pauses of 0.5-1 ms halve
    /// it (bench/RESULTS.md, "HTTP/3: reading in turns").
    pub const MIN_PAUSE: Duration = Duration::from_micros(200);
    /// The longest: no response waits longer in the socket.
    pub const MAX_PAUSE: Duration = Duration::from_millis(1);

    /// For `socket`, which must outlive it; call on the event loop.
    pub(crate) fn new(socket: &UdpSocket) -> io::Result<Reads> {
        // SAFETY: creates a descriptor, owned below.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor, owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLONESHOT) as u32,
            u64: 0,
        };
        // SAFETY: valid descriptors and event.
        if unsafe {
            libc::epoll_ctl(
                fd.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                socket.as_raw_fd(),
                &mut event,
            )
        } < 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the AsyncFd owns the set's descriptor, so it stays open (and is this set's)
        // for as long as it is registered.
        let set = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }?;
        Ok(Reads {
            socket: socket.as_raw_fd(),
            set,
            // Without a timerfd, the driver reads as datagrams come.
            pause: Pause::new().ok(),
            state: State::Waiting,
        })
    }

    /// Whether the driver reads on this turn; if not, `cx` is woken when it should.
    pub(crate) fn poll_due(&mut self, cx: &mut Context<'_>, now: Instant) -> Poll<()> {
        match self.state {
            State::Due => Poll::Ready(()),
            State::Paused => {
                let pause = self.pause.as_mut().expect("paused with a timer");
                pause.poll_over(cx, now)
            }
            State::Waiting => loop {
                let Poll::Ready(Ok(mut ready)) = self.set.poll_read_ready(cx) else {
                    return Poll::Pending;
                };
                // Takes the one-shot event off the set's ready list, so that the set is not
                // readable again until it is armed and a datagram comes.
                let mut event = libc::epoll_event { events: 0, u64: 0 };
                // SAFETY: room for one event.
                let n = unsafe { libc::epoll_wait(self.set.as_raw_fd(), &mut event, 1, 0) };
                ready.clear_ready();
                if n > 0 {
                    return Poll::Ready(());
                }
            },
        }
    }

    /// After a turn's reads: `read` datagrams, `capped` if it stopped at its cap. Pauses for
    /// `pause` when it read something and a pause is worth it, else arms the socket.
    pub(crate) fn after(
        &mut self,
        cx: &mut Context<'_>,
        now: Instant,
        read: usize,
        capped: bool,
        pause: Duration,
    ) {
        if capped {
            self.state = State::Due;
            cx.waker().wake_by_ref();
            return;
        }
        if let Some(timer) = self
            .pause
            .as_mut()
            .filter(|_| read > 0 && pause >= Self::MIN_PAUSE)
        {
            timer.start(pause);
            self.state = State::Paused;
            if timer.poll_over(cx, now).is_ready() {
                self.state = State::Due;
                cx.waker().wake_by_ref();
            }
            return;
        }
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLONESHOT) as u32,
            u64: 0,
        };
        // SAFETY: valid descriptors and event.
        let armed = unsafe {
            libc::epoll_ctl(
                self.set.as_raw_fd(),
                libc::EPOLL_CTL_MOD,
                self.socket,
                &mut event,
            )
        } == 0;
        self.state = if armed { State::Waiting } else { State::Due };
        // Registers the driver with the set (or wakes it at once if a datagram came since).
        if !armed || self.poll_due(cx, now).is_ready() {
            self.state = State::Due;
            cx.waker().wake_by_ref();
        }
    }
}

/// A pause between reads: a timerfd on the event loop, for pauses finer than tokio's
/// millisecond timer.
struct Pause {
    timer: AsyncFd<OwnedFd>,
    until: Option<Instant>,
}

impl Pause {
    fn new() -> io::Result<Pause> {
        // SAFETY: creates a descriptor, owned below.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor, owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: the AsyncFd owns the descriptor, so it stays open (and is this timer's)
        // for as long as it is registered.
        let timer = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }?;
        Ok(Pause { timer, until: None })
    }

    fn start(&mut self, length: Duration) {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: length.as_secs() as _,
                tv_nsec: length.subsec_nanos() as _,
            },
        };
        // SAFETY: a valid timerfd and timer value.
        let rc = unsafe {
            libc::timerfd_settime(self.timer.as_raw_fd(), 0, &spec, std::ptr::null_mut())
        };
        self.until = Some(if rc == 0 {
            Instant::now() + length
        } else {
            Instant::now()
        });
    }

    /// Ready once the pause is over, else Pending with `cx` woken at its end.
    fn poll_over(&mut self, cx: &mut Context<'_>, now: Instant) -> Poll<()> {
        let Some(until) = self.until else {
            return Poll::Ready(());
        };
        loop {
            let Poll::Ready(Ok(mut ready)) = self.timer.poll_read_ready(cx) else {
                // Not fired yet; an error leaves the pause to end by the clock.
                return if now >= until {
                    self.end()
                } else {
                    Poll::Pending
                };
            };
            let mut expirations = [0u8; 8];
            // SAFETY: reads 8 bytes into an 8-byte buffer.
            let n =
                unsafe { libc::read(self.timer.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
            // Read or not, the timer is not readable now: tokio's readiness is cleared so that
            // the next pause waits for its own expiry.
            ready.clear_ready();
            if n == 8 {
                return self.end();
            }
        }
    }

    fn end(&mut self) -> Poll<()> {
        self.until = None;
        Poll::Ready(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;

    fn pair() -> (UdpSocket, UdpSocket) {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        (rx, tx)
    }

    fn empty() -> [Received; BATCH] {
        [Received {
            from: ([0, 0, 0, 0], 0).into(),
            len: 0,
            stride: 0,
            arrived: None,
        }; BATCH]
    }

    #[test]
    fn a_datagram_left_in_the_socket_is_dated_by_its_arrival_not_its_read() {
        let (rx, tx) = pair();
        date_arrivals(&rx).unwrap();
        let mut bufs = vec![vec![0u8; 2048]; 4];
        let mut out = empty();
        // The kernel turns its receive-time stamping on a moment after the first socket asks
        // (a deferred static key); until then a datagram is dated when it is read. A run's
        // first datagrams may be so dated; the test waits that moment out.
        std::thread::sleep(Duration::from_millis(50));
        let sent = Instant::now();
        tx.send(b"first").unwrap();
        tx.send(b"second, longer").unwrap();
        std::thread::sleep(Duration::from_millis(40));
        let read_at = Instant::now();
        let n = read_batch(&rx, &mut bufs, &mut out).unwrap();
        assert_eq!(n, 2);
        assert_eq!(&bufs[0][..out[0].len], b"first");
        assert_eq!(&bufs[1][..out[1].len], b"second, longer");
        assert_eq!(out[1].stride, out[1].len, "one datagram, not a GRO train");
        assert_eq!(out[0].from, tx.local_addr().unwrap());
        for r in &out[..2] {
            let at = r.arrived.expect("the kernel dated it");
            // Within a few ms of the send (loopback delivers at once), and 40 ms before
            // the read that found it.
            let after_send = at.saturating_duration_since(sent);
            assert!(
                after_send < Duration::from_millis(10),
                "{after_send:?} after the send"
            );
            assert!(read_at.duration_since(at) >= Duration::from_millis(35));
        }
        // Nothing left: WouldBlock, not a zero-length read.
        let e = read_batch(&rx, &mut bufs, &mut out).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn reads_wait_for_the_socket_then_pause_and_resume_at_the_pauses_end() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (rx, tx) = pair();
            let mut reads = Reads::new(&rx).unwrap();
            let mut bufs = vec![vec![0u8; 2048]; 4];
            let mut out = empty();
            // Armed, nothing there: not due.
            let due = poll_fn(|cx| Poll::Ready(reads.poll_due(cx, Instant::now()))).await;
            assert!(due.is_pending());
            tx.send(b"one").unwrap();
            tokio::time::timeout(
                Duration::from_secs(5),
                poll_fn(|cx| reads.poll_due(cx, Instant::now())),
            )
            .await
            .expect("a datagram makes the reads due");
            assert_eq!(read_batch(&rx, &mut bufs, &mut out).unwrap(), 1);
            let paused_at = Instant::now();
            let pause = Duration::from_millis(30);
            poll_fn(|cx| {
                reads.after(cx, Instant::now(), 1, false, pause);
                Poll::Ready(())
            })
            .await;
            // A datagram during the pause does not make the reads due before its end.
            tx.send(b"two").unwrap();
            std::thread::sleep(Duration::from_millis(5));
            let due = poll_fn(|cx| Poll::Ready(reads.poll_due(cx, Instant::now()))).await;
            assert!(due.is_pending(), "due during the pause");
            tokio::time::timeout(
                Duration::from_secs(5),
                poll_fn(|cx| reads.poll_due(cx, Instant::now())),
            )
            .await
            .expect("the pause ends");
            assert!(paused_at.elapsed() >= pause - Duration::from_millis(1));
            assert_eq!(read_batch(&rx, &mut bufs, &mut out).unwrap(), 1);
            // Nothing read: armed again, and the next datagram makes the reads due.
            poll_fn(|cx| {
                reads.after(cx, Instant::now(), 0, false, pause);
                Poll::Ready(())
            })
            .await;
            tx.send(b"three").unwrap();
            tokio::time::timeout(
                Duration::from_secs(5),
                poll_fn(|cx| reads.poll_due(cx, Instant::now())),
            )
            .await
            .expect("armed again");
            assert_eq!(read_batch(&rx, &mut bufs, &mut out).unwrap(), 1);
        });
    }
}
