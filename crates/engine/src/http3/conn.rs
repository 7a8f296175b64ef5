//! One QUIC connection's state as the endpoint's driver keeps it, and what its events do:
//! the handshake's end (and 0-RTT's outcome), the connection's loss, the server's control
//! stream (SETTINGS, GOAWAY), and each request stream's response fed to
//! `loadmark_wire::http3`'s parser and dated by the datagram that carried it.

use std::collections::HashMap;
use std::task::Waker;
use std::time::{Duration, Instant};

use loadmark_metrics::EarlyData;
use loadmark_wire::http3::control::{Told, UniStream, CLIENT_CONTROL};
use loadmark_wire::http3::frame::H3_CLOSED_CRITICAL_STREAM;
use loadmark_wire::http3::response::Response;
use loadmark_wire::http3::H3Error;
use quinn_proto::{ConnectionError, Dir, Event, ReadError, StreamEvent, StreamId, VarInt};

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
pub(super) struct Request {
    pub(super) response: Response,
    /// When the stream was opened.
    pub(super) opened: Instant,
    /// When the datagrams that carried the response's head and its end arrived.
    pub(super) first_byte: Option<Instant>,
    pub(super) ended: Option<Instant>,
    pub(super) end: Option<StreamEnd>,
    /// The request's task, woken when the stream moves (readable, writable, ended).
    pub(super) waker: Option<Waker>,
    /// Opened before the handshake ended (0-RTT).
    pub(super) early: bool,
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
    pub(super) released: bool,
    pub(super) uni: HashMap<StreamId, UniStream>,
    pub(super) requests: HashMap<StreamId, Request>,
    /// Tasks waiting for the handshake or for stream credit.
    pub(super) waiting: Vec<Waker>,
    /// When quinn-proto wants `handle_timeout` next.
    pub(super) timer: Option<Instant>,
    /// A moving average of its requests' round trips (opened to answered), which bounds
    /// the driver's [`Pause`] between reads.
    pub(super) round_trip: Option<Duration>,
}

impl Conn {
    pub(super) fn new(quic: quinn_proto::Connection, early: Option<Instant>) -> Self {
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
            round_trip: None,
        }
    }

    pub(super) fn wake_all(&mut self) {
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
    pub(super) fn for_new(c: &Conn) -> Option<Closed> {
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
    /// When the datagrams that carried the head and the end arrived.
    pub first_byte: Option<Instant>,
    pub ended: Option<Instant>,
    pub response: Response,
    /// Sent before the handshake ended (0-RTT).
    pub early: bool,
}

/// What a connection's events do to its requests and streams; `arrived` is when the datagram
/// that caused them came (`now` for events of the driver's own).
pub(super) fn handle_events(c: &mut Conn, now: Instant, arrived: Instant) {
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
                    read_request(c, id, now, arrived);
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

/// Reads a response stream into its parser; the bytes came in a datagram that `arrived`.
fn read_request(c: &mut Conn, id: StreamId, now: Instant, arrived: Instant) {
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
                    Ok(true) => r.first_byte = Some(arrived),
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
            r.ended = Some(arrived);
            let took = arrived.saturating_duration_since(r.opened);
            // An average over about the last 16 requests.
            c.round_trip = Some(c.round_trip.map_or(took, |avg| (avg * 15 + took) / 16));
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
