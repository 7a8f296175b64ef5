//! Plain TCP for `Connection: close` runs, where every request opens a connection of its own:
//! sockets watched by an epoll set of the worker's own instead of tokio's reactor.
//!
//! Why (issue 20): through tokio, such a request cost 8 syscalls where 6 do (`socket`,
//! `connect`, `send`, `epoll_ctl(ADD)`, `recv`, `close`). tokio removes every socket from its
//! epoll set before closing it (`epoll_ctl(DEL)`), and the connect checked with a zero-timeout
//! `poll` whether the handshake was done before the request was written. Here:
//! - a socket joins the worker's set ([`EpollSet`]) only when it first has to wait, and leaves
//!   it by being closed: the kernel drops a closed file from every epoll set;
//! - on loopback the handshake runs inside `connect(2)` (which still says EINPROGRESS), so the
//!   request's own `send` is tried at once and is what confirms the connection: it fails with
//!   the connect's error when the connect failed (the request's error is then a connect
//!   error), and it finds the socket not writable when the handshake is still under way (a
//!   listener whose accept queue is full drops the SYN). It then waits for the socket to
//!   become writable, and that wait is connect time, not the request's
//!   ([`Inbound::handshake`]), bounded by `--connect-timeout`;
//! - elsewhere than on loopback the handshake takes a round trip, and the connect waits for
//!   it as for any TCP connection before the request is written.
//!
//! The set is one fd registered with tokio and read by one task per worker ([`drive`]), which
//! wakes the connections its events are for. One more `epoll_wait` per turn of the event loop
//! is what this costs; a turn serves every connection that became ready.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use loadmark_metrics::ErrorKind;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use crate::transport::{
    send_now, start_connect, Connect, ConnectError, Handshake, Inbound, Nagle, Tcp, Transport,
};

const READ: u32 = (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLERR | libc::EPOLLHUP) as u32;
const WRITE: u32 = (libc::EPOLLOUT | libc::EPOLLERR | libc::EPOLLHUP) as u32;

/// Plain TCP whose connections each carry one request (`Connection: close`).
#[derive(Clone)]
pub(crate) struct OneShotTcp {
    pub tcp: Tcp,
}

impl Transport for OneShotTcp {
    type Stream = OneShotConn;

    async fn connect(&self) -> Result<OneShotConn, ConnectError> {
        let addr = self.tcp.addr;
        let error = |e: io::Error| ConnectError::io(addr, &e);
        let set = EpollSet::of_this_worker().map_err(error)?;
        let loopback = addr.ip().is_loopback() || addr.ip().to_canonical().is_loopback();
        let (socket, state) = start_connect(addr, Nagle::UntilSplit, !loopback).map_err(error)?;
        if state == Connect::Failed {
            let e = socket.take_error().map_err(error)?;
            return Err(error(
                e.unwrap_or_else(|| io::ErrorKind::ConnectionRefused.into()),
            ));
        }
        let mut conn = OneShotConn {
            socket,
            addr,
            set,
            slot: None,
            nagle: true,
            handshake: match state {
                Connect::Done => Pending::Confirmed,
                _ => Pending::Unconfirmed { since: None },
            },
            connect_timeout: self.tcp.connect_timeout,
            deadline: None,
        };
        if state == Connect::InProgress && !loopback {
            // A real network: the handshake takes a round trip; wait for it here, as every
            // other connect does, so that it is connect time and --connect-timeout bounds it.
            let wait = std::future::poll_fn(|cx| conn.poll_handshake(cx));
            match tokio::time::timeout(self.tcp.connect_timeout, wait).await {
                Ok(Ok(())) => conn.handshake = Pending::Confirmed,
                Ok(Err(e)) => return Err(error(e)),
                Err(_) => return Err(connect_timed_out(addr, self.tcp.connect_timeout)),
            }
        }
        Ok(conn)
    }
}

fn connect_timed_out(addr: SocketAddr, timeout: Duration) -> ConnectError {
    ConnectError {
        kind: ErrorKind::Connect,
        message: format!("connect to {addr}: no answer within {timeout:?} (--connect-timeout)"),
    }
}

/// What is known of a connection's handshake.
#[derive(Debug, Clone)]
enum Pending {
    /// `connect(2)` said EINPROGRESS and nothing was sent yet; `since`: when the first send
    /// found the handshake still under way.
    Unconfirmed { since: Option<Instant> },
    /// A send went through: the connection was up.
    Confirmed,
    /// Up only after the first send waited this long for it, ending at this instant.
    ConfirmedAfter { waited: Duration, at: Instant },
    /// The first send failed: the connect had.
    Failed(ConnectError),
}

/// One connection (see the module's documentation).
pub(crate) struct OneShotConn {
    socket: std::net::TcpStream,
    addr: SocketAddr,
    set: Rc<EpollSet>,
    /// Its entry in the worker's set, once it had to wait.
    slot: Option<usize>,
    /// Nagle's algorithm on until a write is cut short (as `transport::TcpConn`).
    nagle: bool,
    handshake: Pending,
    connect_timeout: Duration,
    /// Bounds a first send that waits for the handshake.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl OneShotConn {
    /// Makes sure the set watches this socket for `interest` and that `waker` is woken by it.
    fn wait(&mut self, interest: u32, waker: &Waker) -> io::Result<()> {
        let fd = self.socket.as_raw_fd();
        let mut slots = self.set.slots.borrow_mut();
        let index = match self.slot {
            Some(i) => i,
            None => {
                let i = slots.take();
                self.slot = Some(i);
                i
            }
        };
        let slot = &mut slots.list[index];
        if interest & libc::EPOLLIN as u32 != 0 {
            slot.reader = Some(waker.clone());
        } else {
            slot.writer = Some(waker.clone());
        }
        let wanted = slot.interest | interest;
        if wanted != slot.interest {
            let op = if slot.interest == 0 {
                libc::EPOLL_CTL_ADD
            } else {
                libc::EPOLL_CTL_MOD
            };
            let mut event = libc::epoll_event {
                events: wanted | libc::EPOLLET as u32,
                u64: slot.token(index),
            };
            // SAFETY: both fds are open; `event` is a valid epoll_event.
            let rc = unsafe { libc::epoll_ctl(self.set.fd.as_raw_fd(), op, fd, &mut event) };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            slot.interest = wanted;
        }
        Ok(())
    }

    /// What the set last reported for this socket (nothing before it had to wait).
    fn ready(&self) -> u32 {
        self.slot
            .map(|i| self.set.slots.borrow().list[i].ready)
            .unwrap_or(0)
    }

    fn clear(&self, bits: u32) {
        if let Some(i) = self.slot {
            self.set.slots.borrow_mut().list[i].ready &= !bits;
        }
    }

    /// Ready once a connect still under way ended: Ok when the connection is up.
    fn poll_handshake(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            if self.ready() & WRITE != 0 {
                return Poll::Ready(match self.socket.take_error()? {
                    Some(e) => Err(e),
                    None => Ok(()),
                });
            }
            self.wait(libc::EPOLLOUT as u32, cx.waker())?;
            if self.ready() & WRITE == 0 {
                return Poll::Pending;
            }
        }
    }

    /// A read's syscall, with the readiness it leaves: into `room` (its length is `len`), or
    /// without one, dropping up to `len` bytes uncopied (`MSG_TRUNC`).
    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        room: Option<&mut [u8]>,
        len: usize,
    ) -> Poll<io::Result<usize>> {
        if let Pending::Failed(e) = &self.handshake {
            // Nothing can arrive on a connection that never came up: the exchange need not
            // wait for its response until --timeout.
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::NotConnected,
                e.message.clone(),
            )));
        }
        let (ptr, flags) = match room {
            Some(room) => (room.as_mut_ptr().cast::<libc::c_void>(), 0),
            None => (std::ptr::null_mut(), libc::MSG_TRUNC),
        };
        loop {
            if self.ready() & READ == 0 {
                // Nothing reported yet (a request was just written: its response cannot be
                // there): wait for the set rather than pay a `recv` that finds nothing.
                self.wait(libc::EPOLLIN as u32 | libc::EPOLLRDHUP as u32, cx.waker())?;
                if self.ready() & READ == 0 {
                    return Poll::Pending;
                }
            }
            let fd = self.socket.as_raw_fd();
            // SAFETY: `ptr` is valid for `len` bytes (or, with MSG_TRUNC on TCP, nothing is
            // copied and it is null); the fd is open while `socket` is.
            let n = unsafe { libc::recv(fd, ptr, len, flags | libc::MSG_DONTWAIT) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    self.clear(READ);
                    continue;
                }
                return Poll::Ready(Err(e));
            }
            let n = n as usize;
            if n > 0 && n < len {
                // A short read drained the socket (as tokio assumes): the next read waits.
                self.clear(libc::EPOLLIN as u32);
            }
            return Poll::Ready(Ok(n));
        }
    }
}

impl Drop for OneShotConn {
    fn drop(&mut self) {
        // The socket is closed right after (its own drop), which takes it out of the set.
        if let Some(i) = self.slot {
            self.set.slots.borrow_mut().give_back(i);
        }
    }
}

impl AsyncRead for OneShotConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let room = buf.initialize_unfilled();
        let len = room.len();
        let n = std::task::ready!(self.poll_recv(cx, Some(room), len))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for OneShotConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let waiting = self.slot.is_some_and(|i| {
                self.set.slots.borrow().list[i].interest & libc::EPOLLOUT as u32 != 0
            });
            if waiting && self.ready() & WRITE == 0 {
                if let Pending::Unconfirmed { .. } = self.handshake {
                    if let Some(deadline) = self.deadline.as_mut() {
                        if deadline.as_mut().poll(cx).is_ready() {
                            let failure = connect_timed_out(self.addr, self.connect_timeout);
                            let e =
                                io::Error::new(io::ErrorKind::TimedOut, failure.message.clone());
                            self.handshake = Pending::Failed(failure);
                            return Poll::Ready(Err(e));
                        }
                    }
                }
                return Poll::Pending;
            }
            match send_now(&self.socket, buf) {
                Ok(n) => {
                    if let Pending::Unconfirmed { since } = self.handshake {
                        self.handshake = match since {
                            None => Pending::Confirmed,
                            Some(t) => {
                                let at = Instant::now();
                                Pending::ConfirmedAfter { waited: at - t, at }
                            }
                        };
                        self.deadline = None;
                    }
                    if self.nagle && n < buf.len() {
                        self.nagle = false;
                        let _ = self.socket.set_nodelay(true);
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if let Pending::Unconfirmed { since: None } = self.handshake {
                        // The handshake is still under way: wait for it, within
                        // --connect-timeout.
                        self.handshake = Pending::Unconfirmed {
                            since: Some(Instant::now()),
                        };
                        self.deadline = Some(Box::pin(tokio::time::sleep(self.connect_timeout)));
                    }
                    self.clear(libc::EPOLLOUT as u32);
                    self.wait(libc::EPOLLOUT as u32, cx.waker())?;
                }
                Err(e) => {
                    if let Pending::Unconfirmed { .. } = self.handshake {
                        self.handshake = Pending::Failed(ConnectError::io(self.addr, &e));
                    }
                    return Poll::Ready(Err(e));
                }
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.socket.shutdown(std::net::Shutdown::Write))
    }
}

impl Inbound for OneShotConn {
    /// Linux documents `MSG_TRUNC` for TCP (tcp(7)).
    const CAN_DISCARD: bool = true;

    fn poll_discard(&mut self, cx: &mut Context<'_>, max: usize) -> Poll<io::Result<usize>> {
        self.poll_recv(cx, None, max)
    }

    fn handshake(&self) -> Handshake {
        match &self.handshake {
            Pending::Unconfirmed { since: None } | Pending::Confirmed => Handshake::Done,
            Pending::Unconfirmed { since: Some(_) } => Handshake::Waiting(self.addr),
            Pending::ConfirmedAfter { waited, at } => Handshake::Waited {
                waited: *waited,
                at: *at,
            },
            Pending::Failed(e) => Handshake::Failed(e.clone()),
        }
    }
}

/// The worker's own epoll set: one fd registered with tokio, and an entry per waiting socket.
struct EpollSet {
    fd: AsyncFd<OwnedFd>,
    slots: RefCell<Slots>,
    /// The task that reads the set ([`drive`]) runs: false once its event loop dropped it.
    driven: Cell<bool>,
}

thread_local! {
    static WORKER_SET: RefCell<Option<Rc<EpollSet>>> = const { RefCell::new(None) };
}

impl EpollSet {
    /// This worker's set, made (with its task) on the worker's first connection.
    fn of_this_worker() -> io::Result<Rc<EpollSet>> {
        WORKER_SET.with(|cell| {
            if let Some(set) = cell.borrow().as_ref().filter(|s| s.driven.get()) {
                return Ok(set.clone());
            }
            // SAFETY: a plain syscall; the fd is owned at once.
            let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
            if epfd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `epfd` is a new fd that nothing else owns.
            let owned = unsafe { OwnedFd::from_raw_fd(epfd) };
            // SAFETY: the OwnedFd keeps its one fd open for as long as the AsyncFd owns it.
            let fd =
                unsafe { AsyncFd::register_with_interest(owned, tokio::io::Interest::READABLE) }
                    .map_err(io::Error::from)?;
            let set = Rc::new(EpollSet {
                fd,
                slots: RefCell::new(Slots::default()),
                driven: Cell::new(true),
            });
            tokio::task::spawn_local(drive(set.clone()));
            *cell.borrow_mut() = Some(set.clone());
            Ok(set)
        })
    }
}

/// Reads the set whenever tokio reports it readable and wakes the connections its events
/// are for. Runs as long as the worker's event loop; its end marks the set unusable, so a
/// later event loop on the same thread makes a new one.
async fn drive(set: Rc<EpollSet>) {
    struct Ended<'a>(&'a Cell<bool>);
    impl Drop for Ended<'_> {
        fn drop(&mut self) {
            self.0.set(false);
            // The thread's handle goes with its event loop (connections still open hold
            // their own until they are dropped with it).
            let _ = WORKER_SET.try_with(|cell| cell.try_borrow_mut().map(|mut set| set.take()));
        }
    }
    let _ended = Ended(&set.driven);
    const BATCH: usize = 256;
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; BATCH];
    loop {
        let Ok(mut guard) = set.fd.readable().await else {
            return;
        };
        // SAFETY: `events` holds BATCH entries; zero timeout.
        let n =
            unsafe { libc::epoll_wait(set.fd.as_raw_fd(), events.as_mut_ptr(), BATCH as i32, 0) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        let n = n as usize;
        let mut slots = set.slots.borrow_mut();
        for event in &events[..n] {
            let (index, generation) = ((event.u64 & 0xffff_ffff) as usize, event.u64 >> 32);
            let Some(slot) = slots.list.get_mut(index) else {
                continue;
            };
            // An event of a socket whose entry was given back (and maybe taken again).
            if u64::from(slot.generation) != generation || slot.interest == 0 {
                continue;
            }
            slot.ready |= event.events;
            if event.events & READ != 0 {
                if let Some(w) = slot.reader.take() {
                    w.wake();
                }
            }
            if event.events & WRITE != 0 {
                if let Some(w) = slot.writer.take() {
                    w.wake();
                }
            }
        }
        drop(slots);
        if n < BATCH {
            guard.clear_ready();
        }
    }
}

#[derive(Default)]
struct Slot {
    /// Bumped each time the entry is given back, so a late event of its last socket is known.
    generation: u32,
    /// What the set watches the socket for (0: not in the set).
    interest: u32,
    /// What the set reported and no syscall has found gone since.
    ready: u32,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

impl Slot {
    fn token(&self, index: usize) -> u64 {
        (u64::from(self.generation) << 32) | index as u64
    }
}

#[derive(Default)]
struct Slots {
    list: Vec<Slot>,
    free: Vec<usize>,
}

impl Slots {
    fn take(&mut self) -> usize {
        match self.free.pop() {
            Some(i) => i,
            None => {
                self.list.push(Slot::default());
                self.list.len() - 1
            }
        }
    }

    fn give_back(&mut self, index: usize) {
        let slot = &mut self.list[index];
        slot.generation = slot.generation.wrapping_add(1);
        slot.interest = 0;
        slot.ready = 0;
        slot.reader = None;
        slot.writer = None;
        self.free.push(index);
    }
}
