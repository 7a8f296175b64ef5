//! The worker's QUIC endpoint: one UDP socket and quinn-proto's state machines, driven by one
//! task of the worker's event loop that reads every datagram the kernel has (when
//! `socket::Reads` says: as they come, or after a pause), hands each to its connection
//! (`conn.rs` handles what follows), wakes the requests whose streams moved, and sends what
//! the connections queued. Requests write their streams in place (no task of their own, no
//! lock) and wake the driver once to send; the driver's next turn sends for every request
//! written since, so the requests answered by one datagram go out together.
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
use std::net::{SocketAddr, UdpSocket};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use loadmark_wire::http3::frame::{H3_NO_ERROR, H3_REQUEST_CANCELLED};
use loadmark_wire::http3::response::Response;
use quinn_proto::{
    ClientConfig, ConnectionHandle, ConnectionStats, DatagramEvent, Dir, EndpointConfig, StreamId,
    VarInt, WriteError,
};

use super::conn::{handle_events, Answer, Closed, Conn, Early, Request, StreamEnd, WriteFailed};
use super::socket::{self, Reads};

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
    /// Not on the event loop itself: [`Reads`] waits for it.
    socket: UdpSocket,
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
            // Without the kernel's times, a response is dated when the driver reads it.
            let _ = socket::date_arrivals(&socket);
            Ok((socket, udp))
        };
        let (socket, udp) =
            bind().map_err(|e| format!("cannot bind a UDP socket for QUIC on {local}: {e}"))?;
        let reads = Reads::new(&socket)
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
            let mut turn = Turn::new(reads);
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
                    opened: Instant::now(),
                    first_byte: None,
                    ended: None,
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
            match c.requests.get(&id).and_then(|r| r.end.clone()) {
                // The whole response came before the request was sent whole (a server may
                // answer first, RFC 9114 §4.1): the rest is not needed.
                Some(StreamEnd::Answered) => return Poll::Ready(Ok(bytes.len())),
                Some(end) => return Poll::Ready(Err(WriteFailed::Ended(end))),
                None => {}
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
                    ended: r.ended,
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
                handle_events(c, now, now);
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
    /// connection, when [`Reads`] says it is time; then pauses the reads for a sixteenth of
    /// the requests' round trip (see [`super::socket`]).
    fn receive(&self, cx: &mut Context<'_>, turn: &mut Turn, now: Instant) {
        if turn.reads.poll_due(cx, now).is_pending() {
            return;
        }
        let mut read = 0;
        let mut capped = true;
        for _ in 0..READS_PER_TURN {
            // An error is nothing there (WouldBlock), or one the connection's timeout shows
            // (an ICMP unreachable).
            let count =
                socket::read_batch(&self.socket, &mut turn.rx, &mut turn.meta).unwrap_or_default();
            read += count;
            let mut inner = self.inner.borrow_mut();
            let Inner {
                endpoint,
                conns,
                dirty,
            } = &mut *inner;
            for (m, buf) in turn.meta.iter().zip(turn.rx.iter()).take(count) {
                // Dated by its arrival, as TCP's reads are (crate::arrival): neither the pause
                // nor the driver's wake-up counts in a latency.
                let arrived = m.arrived.unwrap_or(now).min(now);
                for datagram in buf[..m.len].chunks(m.stride.max(1)) {
                    turn.tx.clear();
                    let data = BytesMut::from(datagram);
                    match endpoint.handle(now, m.from, None, None, data, &mut turn.tx) {
                        Some(DatagramEvent::ConnectionEvent(h, event)) => {
                            if let Some(c) = conns.get_mut(&h) {
                                c.quic.handle_event(event);
                                // Now, while it is known which datagram answered what.
                                handle_events(c, now, arrived);
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
            // Fewer messages than the batch had room for: the socket is empty.
            if count < socket::BATCH {
                capped = false;
                break;
            }
        }
        let pause = if read > 0 {
            self.pause_length()
        } else {
            Duration::ZERO
        };
        turn.reads.after(cx, now, read, capped, pause);
    }

    /// How long the reads pause after one: a sixteenth of the shortest round trip of the
    /// connections with requests in flight, so that a response waits on average a
    /// thirty-second of its round trip before the request after it goes (and, in a closed
    /// loop, the server sees about 3% fewer requests in flight at most; none fewer when it
    /// is the bottleneck and they wait in its queue anyway).
    fn pause_length(&self) -> Duration {
        let inner = self.inner.borrow();
        let round_trip = (inner.conns.values())
            .filter(|c| !c.requests.is_empty())
            .filter_map(|c| c.round_trip)
            .min();
        round_trip.map_or(Duration::ZERO, |rt| (rt / 16).min(Reads::MAX_PAUSE))
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The driver's buffers, timer and reads, kept across turns.
struct Turn {
    rx: Vec<Vec<u8>>,
    meta: [socket::Received; socket::BATCH],
    tx: Vec<u8>,
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    reads: Reads,
}

impl Turn {
    fn new(reads: Reads) -> Self {
        Turn {
            rx: (0..socket::BATCH).map(|_| vec![0; 64 << 10]).collect(),
            meta: [socket::Received {
                from: ([0, 0, 0, 0], 0).into(),
                len: 0,
                stride: 0,
                arrived: None,
            }; socket::BATCH],
            tx: Vec::with_capacity(64 * 1500),
            timer: None,
            reads,
        }
    }
}

/// Sends everything the connection queued.
fn send_all(
    socket: &UdpSocket,
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
    socket: &UdpSocket,
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
    let _ = udp.send(socket.into(), &transmit);
}
