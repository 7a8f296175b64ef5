//! The HTTP/2 closed loop: a connection slot opens a connection, runs `streams` request
//! loops over it (each sends its next request when its previous one ended), and opens a new
//! connection when that one ends while load is still owed.
//!
//! The rules for servers that misbehave, in one place:
//! - **MAX_CONCURRENT_STREAMS below `--streams`**: h2's `SendRequest::ready` waits for a free
//!   stream, so the server's limit is never exceeded; the extra loops simply wait.
//! - **GOAWAY**: streams the server says it did not process (above its last stream id, which
//!   h2 fails with a remote GOAWAY error) and streams refused with REFUSED_STREAM are sent once
//!   more on a new connection and counted as retries; processed ones end as they end. A request
//!   refused twice is an error naming the code.
//! - **RST_STREAM** with any other code: the request is a `protocol` error naming the code.
//! - **A connection that ends before it answered anything** (GOAWAY at once, a dead peer):
//!   one waiting request is charged with the cause, so a server that refuses everything makes
//!   errors, never a silent spin.
//!
//! Latency runs from the moment the request is handed to h2 (its HEADERS frame is queued and
//! goes out on the connection's next write, in the same turn of the event loop) to the end
//! of its last DATA frame.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use h2::client::SendRequest;
use loadmark_metrics::{ErrorKind, Sample};

use super::request::{prepare, Prepared};
use crate::closed::Budget;
use crate::connection::Shared;
use crate::source::Picked;
use crate::transport::{classify_io, Transport};

/// Flow-control windows the client grants: large enough that a fast server is never held up
/// on loopback by WINDOW_UPDATE round trips (h2's default is 64 KiB - 1, RFC 9113's).
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// Whether a stream speaks HTTP/2 once connected: always over plain TCP and Unix sockets
/// (prior knowledge), only when ALPN chose `h2` over TLS.
pub trait Negotiated {
    /// `Err` names what was negotiated instead (the caller adds what the user can do).
    fn h2_negotiated(&self) -> Result<(), String> {
        Ok(())
    }
}

impl Negotiated for tokio::net::TcpStream {}
impl Negotiated for crate::transport::TcpConn {}
impl Negotiated for crate::oneshot::OneShotConn {}
impl Negotiated for tokio::net::UnixStream {}

impl<S> Negotiated for tokio_rustls::client::TlsStream<S> {
    fn h2_negotiated(&self) -> Result<(), String> {
        match self.get_ref().1.alpn_protocol() {
            Some(b"h2") => Ok(()),
            Some(other) => Err(format!(
                "the server chose {} with ALPN, not h2: it does not offer HTTP/2 over TLS",
                String::from_utf8_lossy(other)
            )),
            None => Err(
                "the server negotiated no protocol with ALPN, so it does not \
                 offer HTTP/2 over TLS"
                    .into(),
            ),
        }
    }
}

/// What the HTTP/2 connections of one worker share beside [`Shared`].
pub(crate) struct H2Shared {
    /// `http` or `https`, for the `:scheme` pseudo-header.
    scheme: &'static str,
    streams: usize,
    /// Fixed requests, prepared once, by the address of their HTTP/1.1 bytes (which the
    /// source keeps for the whole run).
    fixed: RefCell<Vec<(usize, Rc<Prepared>)>>,
    /// The lowest SETTINGS_MAX_CONCURRENT_STREAMS a server announced below `streams`, shared
    /// by the workers and read by the runner for the report (`usize::MAX`: none lower).
    pub(crate) server_limit: Arc<AtomicUsize>,
}

impl H2Shared {
    pub(crate) fn new(tls: bool, streams: usize, server_limit: Arc<AtomicUsize>) -> Self {
        H2Shared {
            scheme: if tls { "https" } else { "http" },
            streams: streams.max(1),
            fixed: RefCell::new(Vec::new()),
            server_limit,
        }
    }

    pub(crate) fn streams(&self) -> usize {
        self.streams
    }

    /// Called after a connection's first response, when the server's SETTINGS have been
    /// read: notes a limit below `--streams` (h2 already keeps to it).
    pub(crate) fn observe_limit(&self, client: &SendRequest<Bytes>) {
        let allowed = client.current_max_send_streams();
        if allowed < self.streams {
            self.server_limit.fetch_min(allowed, Ordering::Relaxed);
        }
    }
}

/// A request taken from the budget and not yet ended.
struct Job {
    started: Option<Instant>,
    retried: bool,
}

/// How an exchange failed.
pub(crate) struct Failure {
    pub kind: ErrorKind,
    pub message: String,
    /// The server did not process it (GOAWAY above its last stream, REFUSED_STREAM): it may
    /// be sent again on a new connection.
    pub unprocessed: bool,
    /// The connection cannot carry more streams.
    pub connection_over: bool,
}

pub(crate) fn failure(e: &h2::Error, what: &str) -> Failure {
    let (kind, message) = if let Some(io) = e.get_io() {
        (classify_io(io, ErrorKind::Read), format!("{what}: {io}"))
    } else if e.is_go_away() {
        let reason = e.reason().map_or("?".into(), |r| format!("{r:?}"));
        let message = if e.is_remote() {
            format!("{what}: GOAWAY {reason} from the server")
        } else {
            // h2 found the server's frames malformed and closed the connection itself.
            format!("{what}: the server broke the HTTP/2 protocol; loadmark sent GOAWAY {reason}")
        };
        (ErrorKind::Protocol, message)
    } else if e.is_reset() {
        let reason = e.reason().map_or("?".into(), |r| format!("{r:?}"));
        (
            ErrorKind::Protocol,
            format!("{what}: RST_STREAM {reason} from the server"),
        )
    } else {
        (ErrorKind::Protocol, format!("{what}: HTTP/2 error: {e}"))
    };
    let refused = e.is_reset() && e.reason() == Some(h2::Reason::REFUSED_STREAM);
    Failure {
        kind,
        message,
        unprocessed: (e.is_go_away() && e.is_remote()) || refused,
        connection_over: e.is_io() || e.is_go_away(),
    }
}

/// Counts a request as in flight if the worker stops it after its HEADERS were queued.
pub(crate) struct Flight<'a> {
    pub in_flight: &'a Cell<u64>,
    pub on_air: bool,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if self.on_air {
            self.in_flight.set(self.in_flight.get() + 1);
        }
    }
}

/// One connection slot of a closed loop, until the budget or the deadline says stop, or a
/// ramp retires the slot (`retire`): then each stream ends its current request and the
/// connection closes, as an HTTP/1.1 connection of a ramp does after its request.
pub(crate) async fn slot_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    h2s: Rc<H2Shared>,
    budget: Arc<Budget>,
    deadline: Option<Instant>,
    retire: Option<crate::closed::Retire>,
) where
    T::Stream: Negotiated,
{
    let stopped = || {
        deadline.is_some_and(|d| Instant::now() >= d) || retire.as_ref().is_some_and(|r| r.now())
    };
    // Requests taken from the budget that the last connection did not end.
    let waiting: RefCell<Vec<Job>> = RefCell::new(Vec::new());
    loop {
        if stopped() {
            return;
        }
        if waiting.borrow().is_empty() {
            if !budget.claim() {
                return;
            }
            waiting.borrow_mut().push(Job {
                started: None,
                retried: false,
            });
        }
        let client = match connect(&shared).await {
            Ok(c) => c,
            Err(f) => {
                // The connect failure is the waiting request's error (as over HTTP/1.1).
                waiting.borrow_mut().pop();
                record_error(&shared, f.kind, &f.message);
                tokio::task::consume_budget().await;
                continue;
            }
        };
        let answered = Cell::new(0u64);
        let last_failure: RefCell<Option<Failure>> = RefCell::new(None);
        let loops = (0..h2s.streams).map(|_| {
            stream_loop(
                &shared,
                &h2s,
                client.clone(),
                &budget,
                &stopped,
                &waiting,
                &answered,
                &last_failure,
            )
        });
        let ended = futures_join_all(loops).await;
        drop(client);
        crate::carried::connection_ended(answered.get());
        if ended.iter().all(|over| !over) {
            return;
        }
        if answered.get() == 0 {
            // Nothing answered on this connection: charge one waiting request with the cause,
            // so a server that ends every connection at once cannot make this loop spin.
            if waiting.borrow_mut().pop().is_some() {
                let (kind, message) = match last_failure.borrow_mut().take() {
                    Some(f) => (f.kind, f.message),
                    None => (
                        ErrorKind::Protocol,
                        "the HTTP/2 connection ended before it answered any request".into(),
                    ),
                };
                record_error(&shared, kind, &message);
            }
            tokio::task::consume_budget().await;
        }
    }
}

/// HTTP/2 connections following a connection-count profile (`--stages` of connections):
/// the same ramp as HTTP/1.1's ([`crate::closed::ramp_slots`]), each slot a connection with
/// its streams; a retired slot's streams end their requests, then its connection closes.
pub(crate) async fn ramp_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    h2s: Rc<H2Shared>,
    budget: Arc<Budget>,
    profile: Arc<loadmark_plan::Profile>,
    origin: Instant,
    share: crate::open::Share,
) where
    T::Stream: Negotiated,
{
    crate::closed::ramp_slots(profile, origin, share, move |retire, end| {
        slot_loop(
            shared.clone(),
            h2s.clone(),
            budget.clone(),
            Some(end),
            Some(retire),
        )
    })
    .await
}

/// Polls every stream loop of a connection to its end; true for each that ended because the
/// connection did.
async fn futures_join_all<F: std::future::Future<Output = bool>>(
    loops: impl Iterator<Item = F>,
) -> Vec<bool> {
    let mut loops: Vec<_> = loops.map(|f| Some(Box::pin(f))).collect();
    let mut out = vec![false; loops.len()];
    poll_fn(|cx| {
        let mut pending = false;
        for (i, slot) in loops.iter_mut().enumerate() {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        out[i] = v;
                        *slot = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out
}

pub(crate) struct ConnectFailure {
    pub kind: ErrorKind,
    pub message: String,
}

/// Opens a connection and runs the HTTP/2 handshake (the preface and SETTINGS); the
/// connection's frames are then driven by a task of their own.
pub(crate) async fn connect<T: Transport>(
    shared: &Shared<T>,
) -> Result<SendRequest<Bytes>, ConnectFailure>
where
    T::Stream: Negotiated,
{
    let t0 = Instant::now();
    let stream = shared
        .transport
        .connect()
        .await
        .map_err(|e| ConnectFailure {
            kind: e.kind,
            message: e.message,
        })?;
    stream.h2_negotiated().map_err(|why| ConnectFailure {
        kind: ErrorKind::Tls,
        message: format!("{why} (drop --http2)"),
    })?;
    let handshake = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake::<_, Bytes>(stream);
    let (client, connection) = match tokio::time::timeout(shared.timeout, handshake).await {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => {
            let f = failure(&e, "HTTP/2 handshake");
            return Err(ConnectFailure {
                kind: f.kind,
                message: f.message,
            });
        }
        Err(_) => {
            return Err(ConnectFailure {
                kind: ErrorKind::Timeout,
                message: format!("HTTP/2 handshake: no answer within {:?}", shared.timeout),
            })
        }
    };
    let now = Instant::now();
    shared
        .recorder
        .borrow_mut()
        .record_connection(now, now - t0);
    // The connection's errors reach every stream on it; its own result adds nothing.
    tokio::task::spawn_local(async move {
        let _ = connection.await;
    });
    Ok(client)
}

pub(crate) fn record_error<T: Transport>(shared: &Shared<T>, kind: ErrorKind, message: &str) {
    shared
        .recorder
        .borrow_mut()
        .record_error(kind, Instant::now(), &message);
}

/// One stream's closed loop on one connection. True when it ended because the connection
/// can carry no more streams (load is still owed), false when the load is done.
#[allow(clippy::too_many_arguments)]
async fn stream_loop<T: Transport>(
    shared: &Shared<T>,
    h2s: &H2Shared,
    mut client: SendRequest<Bytes>,
    budget: &Budget,
    stopped: &dyn Fn() -> bool,
    waiting: &RefCell<Vec<Job>>,
    answered: &Cell<u64>,
    last_failure: &RefCell<Option<Failure>>,
) -> bool {
    let mut rendered = Vec::new();
    loop {
        if stopped() {
            return false;
        }
        let mut job = match waiting.borrow_mut().pop() {
            Some(job) => job,
            None if budget.claim() => Job {
                started: None,
                retried: false,
            },
            None => return false,
        };
        // Waits for a stream the server allows (SETTINGS_MAX_CONCURRENT_STREAMS).
        // Bounded: a server that allows no stream (a limit of 0) makes timeouts, not a hang.
        client = match tokio::time::timeout(shared.timeout, client.ready()).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                *last_failure.borrow_mut() = Some(failure(&e, "open a stream"));
                waiting.borrow_mut().push(job);
                return true;
            }
            Err(_) => {
                record_error(
                    shared,
                    ErrorKind::Timeout,
                    &format!(
                        "the server allowed no new stream within {:?} (--timeout)",
                        shared.timeout
                    ),
                );
                return true;
            }
        };
        let prepared = match pick(shared, h2s, None, &mut rendered) {
            Ok(p) => p,
            Err(message) => {
                record_error(shared, ErrorKind::Protocol, &message);
                continue;
            }
        };
        let mut flight = Flight {
            in_flight: &shared.in_flight,
            on_air: false,
        };
        let started = *job.started.get_or_insert_with(Instant::now);
        let deadline_at = started + shared.timeout;
        let result = tokio::time::timeout_at(
            deadline_at.into(),
            exchange(&mut client, &prepared, &mut flight.on_air),
        )
        .await;
        flight.on_air = false;
        match result {
            Ok(Ok((first_byte, status, bytes_read))) => {
                if answered.get() == 0 {
                    h2s.observe_limit(&client);
                }
                answered.set(answered.get() + 1);
                shared.recorder.borrow_mut().record(&Sample {
                    scheduled: None,
                    started,
                    first_byte,
                    ended: Instant::now(),
                    status,
                    bytes_read,
                    bytes_written: prepared.body.len() as u64,
                });
            }
            Ok(Err(f)) => {
                if f.unprocessed && !job.retried {
                    shared.recorder.borrow_mut().record_retry(Instant::now());
                    waiting.borrow_mut().push(Job {
                        started: job.started,
                        retried: true,
                    });
                    *last_failure.borrow_mut() = Some(f);
                    return true;
                }
                record_error(shared, f.kind, &f.message);
                if f.connection_over {
                    *last_failure.borrow_mut() = Some(f);
                    return true;
                }
            }
            Err(_) => {
                // Dropping the exchange resets the stream (RST_STREAM CANCEL).
                record_error(
                    shared,
                    ErrorKind::Timeout,
                    &format!(
                        "no complete response within {:?} (--timeout)",
                        shared.timeout
                    ),
                );
            }
        }
    }
}

/// The next request, prepared: fixed ones once per run, templated ones each time.
pub(crate) fn pick<T: Transport>(
    shared: &Shared<T>,
    h2s: &H2Shared,
    global: Option<u64>,
    rendered: &mut Vec<u8>,
) -> Result<Rc<Prepared>, String> {
    match shared.source.next(global, rendered) {
        // Scripts are refused with --http2 when the plan is validated; kept for safety.
        Picked::Failed(message) => Err(message),
        Picked::Fixed(bytes, _) => {
            let key = bytes.as_ptr() as usize;
            let mut fixed = h2s.fixed.borrow_mut();
            if let Some((_, p)) = fixed.iter().find(|(k, _)| *k == key) {
                return Ok(p.clone());
            }
            let p = Rc::new(prepare(bytes, h2s.scheme)?);
            fixed.push((key, p.clone()));
            Ok(p)
        }
        Picked::Rendered(_) => prepare(rendered, h2s.scheme).map(Rc::new),
    }
}

/// Sends one request (its body within the flow-control windows the server grants) and reads
/// its whole response, releasing the window as the body is read. Returns when the response
/// headers arrived, the status, and the body bytes read.
pub(crate) async fn exchange(
    client: &mut SendRequest<Bytes>,
    prepared: &Prepared,
    on_air: &mut bool,
) -> Result<(Instant, u16, u64), Failure> {
    let end = prepared.body.is_empty();
    let (response, mut send) = client
        .send_request(prepared.request(), end)
        .map_err(|e| failure(&e, "send request"))?;
    *on_air = true;
    let mut upload_error = None;
    if !end {
        if let Err(e) = send_body(&mut send, prepared.body.clone()).await {
            // The server may have answered before it read the whole body (a 413): the
            // response decides.
            upload_error = Some(e);
        }
    }
    let response = match response.await {
        Ok(r) => r,
        Err(e) => return Err(failure(upload_error.as_ref().unwrap_or(&e), "response")),
    };
    let first_byte = Instant::now();
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut read = 0u64;
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| failure(&e, "response body"))?;
        read += chunk.len() as u64;
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    if !body.is_end_stream() {
        body.trailers()
            .await
            .map_err(|e| failure(&e, "response trailers"))?;
    }
    Ok((first_byte, status, read))
}

async fn send_body(send: &mut h2::SendStream<Bytes>, mut rest: Bytes) -> Result<(), h2::Error> {
    while !rest.is_empty() {
        send.reserve_capacity(rest.len());
        let granted = match poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(granted) => granted?,
            // The stream closed before the server gave room for the rest.
            None => return Ok(()),
        };
        if granted == 0 {
            continue;
        }
        let chunk = rest.split_to(granted.min(rest.len()));
        send.send_data(chunk, rest.is_empty())?;
    }
    Ok(())
}
