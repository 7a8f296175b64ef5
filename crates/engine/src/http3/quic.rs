//! The worker's QUIC endpoint: one UDP socket and quinn-proto's state machines, driven by one
//! task of the worker's event loop that reads every datagram the kernel has, hands each to
//! its connection, wakes the requests whose streams moved, and sends what the connections
//! queued. Requests write their streams in place (no task of their own, no lock) and wake
//! the driver once to send; the driver's next turn sends for every request written since,
//! so the requests answered by one datagram go out together.
//!
//! quinn (the async crate) drove the same state machines from an endpoint task and a task
//! per connection, with a lock and a wake-up per stream operation; that layer, with h3's
//! request path, was 20-26 µs of user CPU per request against Caddy (bench/RESULTS.md,
//! "HTTP/3's floor on this machine").
//!
//! HTTP/3 framing is `loadmark_wire::http3`'s: this module feeds it each stream's bytes.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::io::IoSliceMut;
use std::net::{SocketAddr, UdpSocket};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use loadmark_metrics::EarlyData;
use loadmark_wire::http3::control::{Told, UniStream, CLIENT_CONTROL};
use loadmark_wire::http3::frame::{H3_CLOSED_CRITICAL_STREAM, H3_NO_ERROR, H3_REQUEST_CANCELLED};
use loadmark_wire::http3::response::Response;
use loadmark_wire::http3::H3Error;
use quinn_proto::{
    ClientConfig, ConnectionError, ConnectionHandle, ConnectionStats, DatagramEvent, Dir,
    EndpointConfig, Event, ReadError, StreamEvent, StreamId, VarInt, WriteError,
};
use tokio::io::unix::AsyncFd;

/// How a request stream ended, as the driver saw it.
#[derive(Debug, Clone)]
pub(crate) enum StreamEnd {
    /// The response came whole.
    Answered,
    /// The server reset the stream (RESET_STREAM) with this code.
    Reset(u64),
    /// The server stopped reading the request (STOP_SENDING) before it was sent whole.
    Stopped(u64),
    /// The response broke HTTP/3's rules.
    Broken(H3Error),
    /// Sent in 0-RTT data, which the server rejected.
    EarlyRejected,
}

/// One request stream's state, shared by its request and the driver.
struct Request {
    response: Response,
    first_byte: Option<Instant>,
    end: Option<StreamEnd>,
    /// The request's task, woken when the stream moves (readable, writable, ended).
    waker: Option<Waker>,
    /// Opened before the handshake ended (0-RTT).
    early: bool,
}

/// The handshake of a connection that went 0-RTT: when it ended and what the server did
/// with the early data.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Early {
    pub started: Instant,
    pub ended_after: Option<Duration>,
    pub outcome: Option<EarlyData>,
}

/// One connection's state.
pub(crate) struct Conn {
    pub quic: quinn_proto::Connection,
    pub connected: bool,
    pub lost: Option<ConnectionError>,
    /// An HTTP/3 rule the server broke on a stream that matters to the whole connection
    /// (its control stream, a frame only the control stream may carry): the client closed
    /// the connection with its code.
    pub broken: Option<H3Error>,
    /// The server's GOAWAY: streams from this id on were not processed.
    pub goaway: Option<u64>,
    pub early: Option<Early>,
    /// The client is done with it (closed, waiting to drain).
    released: bool,
    uni: HashMap<StreamId, UniStream>,
    requests: HashMap<StreamId, Request>,
    /// Tasks waiting for the handshake or for stream credit.
    waiting: Vec<Waker>,
    /// When quinn-proto wants `handle_timeout` next.
    timer: Option<Instant>,
}

impl Conn {
    fn new(quic: quinn_proto::Connection, early: Option<Instant>) -> Self {
        Conn {
            quic,
            connected: false,
            lost: None,
            broken: None,
            goaway: None,
            early: early.map(|started| Early {
                started,
                ended_after: None,
                outcome: None,
            }),
            released: false,
            uni: HashMap::new(),
            requests: HashMap::new(),
            waiting: Vec::new(),
            timer: None,
        }
    }

    fn wake_all(&mut self) {
        for w in self.waiting.drain(..) {
            w.wake();
        }
        for r in self.requests.values_mut() {
            if let Some(w) = r.waker.take() {
                w.wake();
            }
        }
    }

    /// Closes the connection for an HTTP/3 rule the server broke.
    fn break_with(&mut self, e: H3Error, now: Instant) {
        if self.broken.is_none() && self.lost.is_none() {
            let code = VarInt::from_u64(e.code).unwrap_or(VarInt::from_u32(0x101));
            self.quic.close(now, code, e.what.clone().into());
            self.broken = Some(e);
        }
        self.wake_all();
    }
}

/// The endpoint and its connections, behind one `RefCell`: the driver and the requests take
/// turns on the worker's one thread, never holding it across an await.
struct Inner {
    endpoint: quinn_proto::Endpoint,
    conns: HashMap<ConnectionHandle, Conn>,
    /// Connections to look at on the driver's next turn.
    dirty: Vec<ConnectionHandle>,
}

/// The worker's QUIC endpoint.
pub(crate) struct Endpoint {
    inner: RefCell<Inner>,
    socket: AsyncFd<UdpSocket>,
    udp: quinn_udp::UdpSocketState,
    /// The driver's waker: a request that wrote wakes it to send.
    driver: RefCell<Option<Waker>>,
    task: Cell<Option<tokio::task::JoinHandle<()>>>,
}

/// The most datagrams read per turn before the connections' events are handled and what they
/// queued is sent (a turn's reads are bounded, so a flood cannot starve the sends).
const READS_PER_TURN: usize = 4;

impl Endpoint {
    /// Binds the UDP socket for `remote`'s family and starts the driver; call on the worker's
    /// event loop.
    pub(crate) fn bind(remote: SocketAddr) -> Result<Rc<Endpoint>, String> {
        let local: SocketAddr = match remote {
            SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
            SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let bind = || -> std::io::Result<(UdpSocket, quinn_udp::UdpSocketState)> {
            let socket = UdpSocket::bind(local)?;
            socket.set_nonblocking(true)?;
            let udp = quinn_udp::UdpSocketState::new((&socket).into())?;
            Ok((socket, udp))
        };
        let (socket, udp) =
            bind().map_err(|e| format!("cannot bind a UDP socket for QUIC on {local}: {e}"))?;
        // SAFETY: the AsyncFd owns the socket, so its descriptor stays open (and is this
        // socket's) for as long as it is registered.
        let socket = unsafe { AsyncFd::register(socket) }
            .map_err(|e| format!("cannot register the QUIC socket with the event loop: {e}"))?;
        let endpoint =
            quinn_proto::Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
        let ep = Rc::new(Endpoint {
            inner: RefCell::new(Inner {
                endpoint,
                conns: HashMap::new(),
                dirty: Vec::new(),
            }),
            socket,
            udp,
            driver: RefCell::new(None),
            task: Cell::new(None),
        });
        let weak = Rc::downgrade(&ep);
        ep.task.set(Some(tokio::task::spawn_local(async move {
            let mut turn = Turn::default();
            std::future::poll_fn(|cx| match weak.upgrade() {
                Some(ep) => ep.poll_drive(cx, &mut turn),
                None => Poll::Ready(()),
            })
            .await;
        })));
        Ok(ep)
    }

    /// Starts a connection; with `early_ok`, one that may carry requests before its handshake
    /// ends (0-RTT, when rustls holds a ticket for the server).
    pub(crate) fn connect(
        &self,
        config: ClientConfig,
        remote: SocketAddr,
        server_name: &str,
        early_ok: bool,
    ) -> Result<ConnectionHandle, String> {
        let mut inner = self.inner.borrow_mut();
        let now = Instant::now();
        let (handle, quic) = (inner.endpoint)
            .connect(now, config, remote, server_name)
            .map_err(|e| format!("QUIC connect to {remote}: {e}"))?;
        let early = (early_ok && quic.has_0rtt()).then_some(now);
        inner.conns.insert(handle, Conn::new(quic, early));
        inner.dirty.push(handle);
        drop(inner);
        self.kick();
        Ok(handle)
    }

    /// Runs `f` on a connection's state (None once it is gone).
    pub(crate) fn with<R>(
        &self,
        handle: ConnectionHandle,
        f: impl FnOnce(&mut Conn) -> R,
    ) -> Option<R> {
        self.inner.borrow_mut().conns.get_mut(&handle).map(f)
    }

    /// Waits (registering `cx`) for the handshake or the connection's end.
    pub(crate) fn poll_ready(&self, handle: ConnectionHandle, cx: &mut Context<'_>) -> Poll<()> {
        self.with(handle, |c| {
            if c.connected || c.lost.is_some() || c.broken.is_some() {
                return Poll::Ready(());
            }
            c.waiting.push(cx.waker().clone());
            Poll::Pending
        })
        .unwrap_or(Poll::Ready(()))
    }

    /// Opens a request stream, or waits for credit (registering `cx`).
    pub(crate) fn poll_open(
        &self,
        handle: ConnectionHandle,
        keep: Option<usize>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<StreamId, Closed>> {
        let opened = self.with(handle, |c| {
            if let Some(closed) = Closed::for_new(c) {
                return Poll::Ready(Err(closed));
            }
            let Some(id) = c.quic.streams().open(Dir::Bi) else {
                c.waiting.push(cx.waker().clone());
                return Poll::Pending;
            };
            let early = !c.connected;
            c.requests.insert(
                id,
                Request {
                    response: Response::new(keep),
                    first_byte: None,
                    end: None,
                    waker: None,
                    early,
                },
            );
            Poll::Ready(Ok(id))
        });
        opened.unwrap_or(Poll::Ready(Err(Closed::Gone)))
    }

    /// Writes as much of `bytes` as the stream's and connection's credit allows; how much was
    /// written, or why nothing can be.
    pub(crate) fn write(
        &self,
        handle: ConnectionHandle,
        id: StreamId,
        bytes: &[u8],
        cx: &mut Context<'_>,
    ) -> Poll<Result<usize, WriteFailed>> {
        let written = self.with(handle, |c| {
            if let Some(end) = c.requests.get(&id).and_then(|r| r.end.clone()) {
                return Poll::Ready(Err(WriteFailed::Ended(end)));
            }
            if let Some(closed) = Closed::of(c) {
                return Poll::Ready(Err(WriteFailed::Closed(closed)));
            }
            match c.quic.send_stream(id).write(bytes) {
                Ok(n) => Poll::Ready(Ok(n)),
                Err(WriteError::Blocked) => {
                    if let Some(r) = c.requests.get_mut(&id) {
                        r.waker = Some(cx.waker().clone());
                    }
                    Poll::Pending
                }
                // The server needs no more of the request (H3_NO_ERROR, or quinn's 0 from a
                // server that dropped its side after answering): the rest is not sent, and
                // the response is awaited.
                Err(WriteError::Stopped(code)) if matches!(code.into_inner(), 0 | H3_NO_ERROR) => {
                    Poll::Ready(Ok(bytes.len()))
                }
                Err(WriteError::Stopped(code)) => Poll::Ready(Err(WriteFailed::Ended(
                    StreamEnd::Stopped(code.into_inner()),
                ))),
                Err(WriteError::ClosedStream) => {
                    Poll::Ready(Err(WriteFailed::Closed(Closed::Gone)))
                }
            }
        });
        let written = written.unwrap_or(Poll::Ready(Err(WriteFailed::Closed(Closed::Gone))));
        if matches!(written, Poll::Ready(Ok(_))) {
            self.touch(handle);
        }
        written
    }

    /// Ends the request's side of the stream.
    pub(crate) fn finish(&self, handle: ConnectionHandle, id: StreamId) {
        self.with(handle, |c| {
            let _ = c.quic.send_stream(id).finish();
        });
        self.touch(handle);
    }

    /// Waits for the response's end (registering `cx`): the stream's end, with when its head
    /// came, or the connection's. `head` is set once the head came.
    pub(crate) fn poll_response(
        &self,
        handle: ConnectionHandle,
        id: StreamId,
        head: &Cell<bool>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Answer, Closed>> {
        let polled = self.with(handle, |c| {
            let Some(r) = c.requests.get_mut(&id) else {
                return Poll::Ready(Err(Closed::Gone));
            };
            if let Some(end) = r.end.take() {
                let r = c.requests.remove(&id).expect("present");
                return Poll::Ready(Ok(Answer {
                    end,
                    first_byte: r.first_byte,
                    response: r.response,
                    early: r.early,
                }));
            }
            head.set(r.first_byte.is_some());
            if let Some(closed) = Closed::of(c) {
                c.requests.remove(&id);
                return Poll::Ready(Err(closed));
            }
            c.requests.get_mut(&id).expect("present").waker = Some(cx.waker().clone());
            Poll::Pending
        });
        polled.unwrap_or(Poll::Ready(Err(Closed::Gone)))
    }

    /// A request given up before its end (timed out, or the worker stopped): its stream is
    /// reset and its reading stopped, with H3_REQUEST_CANCELLED.
    pub(crate) fn abandon(&self, handle: ConnectionHandle, id: StreamId) {
        let code = VarInt::from_u64(H3_REQUEST_CANCELLED).expect("small");
        let done = self.with(handle, |c| {
            if c.requests.remove(&id).is_some() {
                let _ = c.quic.send_stream(id).reset(code);
                let _ = c.quic.recv_stream(id).stop(code);
            }
        });
        if done.is_some() {
            self.touch(handle);
        }
    }

    /// The client is done with a connection: closed with H3_NO_ERROR, its statistics read
    /// before the close; the driver drops it once it drained.
    pub(crate) fn release(
        &self,
        handle: ConnectionHandle,
    ) -> Option<(ConnectionStats, Option<Early>)> {
        let now = Instant::now();
        let released = self.with(handle, |c| {
            let stats = c.quic.stats();
            c.released = true;
            c.quic.close(now, VarInt::from_u32(0x100), "done".into());
            c.wake_all();
            // CONNECTION_CLOSE goes now, not on the driver's next turn: at the run's end the
            // process may exit first, and the server would wait out its idle timeout.
            send_all(&self.socket, &self.udp, c, now, &mut Vec::new());
            (stats, c.early)
        });
        self.touch(handle);
        released
    }

    /// Marks a connection for the driver's next turn and wakes the driver.
    fn touch(&self, handle: ConnectionHandle) {
        self.inner.borrow_mut().dirty.push(handle);
        self.kick();
    }

    fn kick(&self) {
        if let Some(w) = self.driver.borrow_mut().take() {
            w.wake();
        }
    }

    /// One turn of the driver: read, hand over, handle timers and events, send.
    fn poll_drive(&self, cx: &mut Context<'_>, turn: &mut Turn) -> Poll<()> {
        *self.driver.borrow_mut() = Some(cx.waker().clone());
        let now = Instant::now();
        self.receive(cx, turn, now);
        let mut inner = self.inner.borrow_mut();
        let Inner {
            endpoint,
            conns,
            dirty,
        } = &mut *inner;
        // Connections whose timer came, then every connection something happened to.
        for (&h, c) in conns.iter_mut() {
            if c.timer.is_some_and(|t| t <= now) {
                c.quic.handle_timeout(now);
                dirty.push(h);
            }
        }
        dirty.sort_unstable();
        dirty.dedup();
        let mut drained = Vec::new();
        for h in dirty.drain(..) {
            let Some(c) = conns.get_mut(&h) else { continue };
            loop {
                let mut again = false;
                while let Some(event) = c.quic.poll_endpoint_events() {
                    if let Some(event) = endpoint.handle_event(h, event) {
                        c.quic.handle_event(event);
                        again = true;
                    }
                }
                handle_events(c, now);
                send_all(&self.socket, &self.udp, c, now, &mut turn.tx);
                if !again {
                    break;
                }
            }
            c.timer = c.quic.poll_timeout();
            if c.released && c.quic.is_drained() {
                drained.push(h);
            }
        }
        for h in drained {
            conns.remove(&h);
        }
        // The earliest timer of all.
        let next = conns.values().filter_map(|c| c.timer).min();
        drop(inner);
        match next {
            Some(at) => {
                let at = tokio::time::Instant::from_std(at);
                match turn.timer.as_mut() {
                    Some(t) if t.deadline() == at => {}
                    Some(t) => t.as_mut().reset(at),
                    None => turn.timer = Some(Box::pin(tokio::time::sleep_until(at))),
                }
                if turn
                    .timer
                    .as_mut()
                    .expect("set")
                    .as_mut()
                    .poll(cx)
                    .is_ready()
                {
                    // Already due: another turn at once.
                    cx.waker().wake_by_ref();
                }
            }
            None => turn.timer = None,
        }
        Poll::Pending
    }

    /// Reads what the socket holds (a few batches at most) and hands each datagram to its
    /// connection.
    fn receive(&self, cx: &mut Context<'_>, turn: &mut Turn, now: Instant) {
        for _ in 0..READS_PER_TURN {
            let Poll::Ready(Ok(mut ready)) = self.socket.poll_read_ready(cx) else {
                return;
            };
            let mut iov: [IoSliceMut; quinn_udp::BATCH_SIZE] =
                std::array::from_fn(|_| IoSliceMut::new(&mut []));
            for (slot, buf) in iov.iter_mut().zip(turn.rx.iter_mut()) {
                *slot = IoSliceMut::new(buf);
            }
            let count = match self
                .udp
                .recv(ready.get_inner().into(), &mut iov, &mut turn.meta)
            {
                Ok(count) => count,
                Err(e) => {
                    if e.kind() == std::io::ErrorKind::WouldBlock {
                        ready.clear_ready();
                    }
                    // Polled again, so that the next datagram wakes the driver (another
                    // error, an ICMP unreachable, shows as the connection's timeout).
                    continue;
                }
            };
            // Fewer messages than the batch had room for: the socket is empty. Its readiness
            // is cleared here rather than by one more read that would find nothing (tokio
            // keeps it if a datagram came in since).
            if count < quinn_udp::BATCH_SIZE {
                ready.clear_ready();
            }
            let mut inner = self.inner.borrow_mut();
            let Inner {
                endpoint,
                conns,
                dirty,
            } = &mut *inner;
            for (m, buf) in turn.meta.iter().zip(turn.rx.iter()).take(count) {
                for datagram in buf[..m.len].chunks(m.stride.max(1)) {
                    turn.tx.clear();
                    let data = BytesMut::from(datagram);
                    match endpoint.handle(now, m.addr, m.dst_ip, None, data, &mut turn.tx) {
                        Some(DatagramEvent::ConnectionEvent(h, event)) => {
                            if let Some(c) = conns.get_mut(&h) {
                                c.quic.handle_event(event);
                                dirty.push(h);
                            }
                        }
                        Some(DatagramEvent::Response(t)) => {
                            send(&self.socket, &self.udp, &t, &turn.tx)
                        }
                        // A client accepts no connection.
                        Some(DatagramEvent::NewConnection(_)) | None => {}
                    }
                }
            }
        }
        // Read a full set of batches: the rest waits for the next turn, which comes at once.
        cx.waker().wake_by_ref();
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The driver's buffers and timer, kept across turns.
struct Turn {
    rx: Vec<Vec<u8>>,
    meta: Vec<quinn_udp::RecvMeta>,
    tx: Vec<u8>,
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl Default for Turn {
    fn default() -> Self {
        Turn {
            rx: (0..quinn_udp::BATCH_SIZE)
                .map(|_| vec![0; 64 << 10])
                .collect(),
            meta: vec![quinn_udp::RecvMeta::default(); quinn_udp::BATCH_SIZE],
            tx: Vec::with_capacity(64 * 1500),
            timer: None,
        }
    }
}

/// Why a connection carries no more requests.
#[derive(Debug, Clone)]
pub(crate) enum Closed {
    Lost(ConnectionError),
    Broken(H3Error),
    /// GOAWAY came: new requests are not sent.
    GoingAway,
    /// The server rejected the connection's 0-RTT data: its requests go on another.
    EarlyRejected,
    /// Released or removed (the slot is done with it).
    Gone,
}

impl Closed {
    pub(crate) fn of(c: &Conn) -> Option<Closed> {
        if let Some(e) = &c.broken {
            return Some(Closed::Broken(e.clone()));
        }
        if let Some(e) = &c.lost {
            return Some(Closed::Lost(e.clone()));
        }
        c.released.then_some(Closed::Gone)
    }

    /// [`Closed::of`] for a request not yet on a stream: after GOAWAY, none is sent (those
    /// already sent below its id are still answered).
    fn for_new(c: &Conn) -> Option<Closed> {
        let rejected = c
            .early
            .is_some_and(|e| e.outcome == Some(EarlyData::Rejected));
        (Closed::of(c))
            .or(rejected.then_some(Closed::EarlyRejected))
            .or(c.goaway.is_some().then_some(Closed::GoingAway))
    }
}

/// Why a write failed: the stream ended, or the connection did.
#[derive(Debug)]
pub(crate) enum WriteFailed {
    Ended(StreamEnd),
    Closed(Closed),
}

/// A request stream's end, with its response.
pub(crate) struct Answer {
    pub end: StreamEnd,
    pub first_byte: Option<Instant>,
    pub response: Response,
    /// Sent before the handshake ended (0-RTT).
    pub early: bool,
}

/// What a connection's events do to its requests and streams.
fn handle_events(c: &mut Conn, now: Instant) {
    while let Some(event) = c.quic.poll() {
        match event {
            Event::Connected => {
                c.connected = true;
                if let Ok(id) = c.quic.streams().open(Dir::Uni).ok_or(()) {
                    let _ = c.quic.send_stream(id).write(&CLIENT_CONTROL);
                }
                if let Some(early) = c.early.as_mut() {
                    early.ended_after = Some(now.duration_since(early.started));
                    let accepted = c.quic.accepted_0rtt();
                    early.outcome = Some(if accepted {
                        EarlyData::Accepted
                    } else {
                        EarlyData::Rejected
                    });
                    if !accepted {
                        // quinn-proto forgot the streams written in the early data, and hands
                        // their ids out again: no new request goes on this connection
                        // ([`Closed::for_new`]), so an id is never two requests' at once.
                        for r in c
                            .requests
                            .values_mut()
                            .filter(|r| r.early && r.end.is_none())
                        {
                            r.end = Some(StreamEnd::EarlyRejected);
                        }
                    }
                }
                c.wake_all();
            }
            Event::ConnectionLost { reason } => {
                if let Some(early) = c.early.as_mut().filter(|e| e.outcome.is_none()) {
                    early.outcome = Some(EarlyData::Unknown);
                }
                c.lost = Some(reason);
                c.wake_all();
            }
            Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                while let Some(id) = c.quic.streams().accept(Dir::Uni) {
                    c.uni.insert(id, UniStream::default());
                    read_uni(c, id, now);
                }
            }
            Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                // A server may not open request streams (RFC 9114 §6.1).
                while let Some(id) = c.quic.streams().accept(Dir::Bi) {
                    let code = VarInt::from_u32(0x103); // H3_STREAM_CREATION_ERROR
                    let _ = c.quic.recv_stream(id).stop(code);
                    let _ = c.quic.send_stream(id).reset(code);
                }
            }
            Event::Stream(StreamEvent::Readable { id }) => {
                if id.dir() == Dir::Uni {
                    read_uni(c, id, now);
                } else {
                    read_request(c, id, now);
                }
            }
            Event::Stream(StreamEvent::Writable { id }) => {
                if let Some(w) = c.requests.get_mut(&id).and_then(|r| r.waker.take()) {
                    w.wake();
                }
            }
            Event::Stream(StreamEvent::Stopped { id, .. }) => {
                // STOP_SENDING: the server reads no more of the request. The response may
                // still come (RFC 9114 §4.1: a server may answer before reading it all), so
                // only a writer still at work hears of it, from its next write.
                if let Some(w) = c.requests.get_mut(&id).and_then(|r| r.waker.take()) {
                    w.wake();
                }
            }
            Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => {
                for w in c.waiting.drain(..) {
                    w.wake();
                }
            }
            _ => {}
        }
    }
}

/// Reads a response stream into its parser.
fn read_request(c: &mut Conn, id: StreamId, now: Instant) {
    let mut stream = c.quic.recv_stream(id);
    let Ok(mut chunks) = stream.read(true) else {
        return;
    };
    let mut ended = None;
    let mut broken = None;
    let r = c.requests.get_mut(&id);
    let mut r = r.filter(|r| r.end.is_none());
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => {
                let Some(r) = r.as_deref_mut() else { continue };
                match r.response.feed(&chunk.bytes) {
                    Ok(true) => r.first_byte = Some(now),
                    Ok(false) => {}
                    Err(e) => {
                        if e.connection {
                            broken = Some(e.clone());
                        }
                        ended = Some(StreamEnd::Broken(e));
                        break;
                    }
                }
            }
            Ok(None) => {
                if let Some(r) = r.as_deref() {
                    ended = Some(match r.response.finish() {
                        Ok(()) => StreamEnd::Answered,
                        Err(e) => StreamEnd::Broken(e),
                    });
                }
                break;
            }
            Err(ReadError::Reset(code)) => {
                ended = Some(StreamEnd::Reset(code.into_inner()));
                break;
            }
            Err(ReadError::Blocked) => break,
        }
    }
    let _ = chunks.finalize();
    if let (Some(end), Some(r)) = (ended, c.requests.get_mut(&id)) {
        if r.end.is_none() {
            r.end = Some(end);
        }
        if let Some(w) = r.waker.take() {
            w.wake();
        }
    }
    if let Some(e) = broken {
        c.break_with(e, now);
    }
}

/// Reads one of the server's unidirectional streams: its control stream's SETTINGS and
/// GOAWAY; QPACK's streams and unknown ones read and dropped.
fn read_uni(c: &mut Conn, id: StreamId, now: Instant) {
    let mut told = Vec::new();
    let mut failed = None;
    let mut stream = c.quic.recv_stream(id);
    let Ok(mut chunks) = stream.read(true) else {
        return;
    };
    let Some(uni) = c.uni.get_mut(&id) else {
        let _ = chunks.finalize();
        return;
    };
    let mut finished = false;
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => {
                if let Err(e) = uni.feed(&chunk.bytes, &mut told) {
                    failed = Some(e);
                    break;
                }
            }
            Ok(None) | Err(ReadError::Reset(_)) => {
                finished = true;
                break;
            }
            Err(ReadError::Blocked) => break,
        }
    }
    let _ = chunks.finalize();
    if finished && uni.is_control() && failed.is_none() {
        failed = Some(H3Error::connection(
            H3_CLOSED_CRITICAL_STREAM,
            "the server closed its control stream",
        ));
    }
    for t in told {
        if let Told::Goaway(last) = t {
            // No new request goes on this connection. Those already sent at or past the id
            // were not processed (RFC 9114 §5.2): the server resets them or closes the
            // connection, and they end so; one it answers anyway is an answer.
            c.goaway = Some(c.goaway.map_or(last, |g| g.min(last)));
            for w in c.waiting.drain(..) {
                w.wake();
            }
        }
    }
    if let Some(e) = failed {
        c.break_with(e, now);
    }
}

/// Sends everything the connection queued.
fn send_all(
    socket: &AsyncFd<UdpSocket>,
    udp: &quinn_udp::UdpSocketState,
    c: &mut Conn,
    now: Instant,
    tx: &mut Vec<u8>,
) {
    let segments = udp.max_gso_segments();
    loop {
        tx.clear();
        let Some(t) = c.quic.poll_transmit(now, segments, tx) else {
            break;
        };
        send(socket, udp, &t, tx);
    }
}

fn send(
    socket: &AsyncFd<UdpSocket>,
    udp: &quinn_udp::UdpSocketState,
    t: &quinn_proto::Transmit,
    buf: &[u8],
) {
    let transmit = quinn_udp::Transmit {
        destination: t.destination,
        ecn: None,
        contents: &buf[..t.size],
        segment_size: t.segment_size,
        src_ip: t.src_ip,
    };
    // A full socket buffer drops the datagram, as a congested link would; QUIC's loss
    // recovery sends its frames again.
    let _ = udp.send(socket.get_ref().into(), &transmit);
}
