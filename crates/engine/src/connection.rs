//! One HTTP/1.1 connection and one request on it: connect when needed, write, read one
//! response, classify, and hand the outcome to `crate::settle`, where every driver's requests
//! end. Every executor (closed loop, open loop) drives HTTP/1.1 requests through here, so their
//! classification has exactly one implementation.
//!
//! Every request ends as exactly one response or one error (or is abandoned in flight by the
//! executor). The rules for servers that misbehave, in one place:
//!
//! - **Idle keep-alive connection closed by the server** (EOF or reset seen before the request
//!   is written): a new connection is opened; nothing is counted but the connection.
//! - **Reused connection that ends before any response byte** (EOF or reset while writing or
//!   reading): the server closed it as the request arrived, so the request never reached it.
//!   It is sent once more on a new connection (Go's net/http and hyper do the same); it is
//!   still one request, the extra connection shows in `connections_opened`, and its latency
//!   includes the second attempt. A new connection that ends before any response byte is a
//!   `read` error, never retried, so a server that closes every connection cannot cause a loop.
//! - **Response before the request was fully written** (a 413 to a large upload): writing and
//!   reading go on together, so the response is read and counted by its status; the connection
//!   is closed afterwards, since the server would read the rest of the body as a request. If
//!   writing fails (the server reset) but a complete response had arrived, it still counts.
//! - **Bytes after a complete response** (a second response to one request, a body longer than
//!   its Content-Length, a body to a HEAD request): the request is a `protocol` error naming
//!   the bytes, and the connection is closed. Bytes that arrive on an idle connection are the
//!   same error for the request about to be sent, which is then not sent (the message says
//!   so). A `408` on an idle connection is a server closing it, not an error. An unsolicited
//!   response that arrives after the next request went out cannot be told from its answer:
//!   HTTP/1.1 has no request ids.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use loadmark_metrics::{ErrorKind, Recorder, Sample};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::time::Sleep;

use crate::exchange::{
    excerpt, exchange, Batch, Exchange, Failure, Progress, Reader, Scratch, SCRATCH_BYTES,
};
use crate::settle::{self, Outcome};
use crate::source::{Meta, Picked, RequestSource};
use crate::transport::{Handshake, Inbound, Transport};

/// A connection keeps unparsed bytes (a head split across reads) in its own buffer; a buffer
/// grown past this by a large head is given back when the connection closes.
const PENDING_KEEP_BYTES: usize = 4 * 1024;

/// What the connections of one worker share (single-threaded, so `Cell`/`RefCell`).
pub(crate) struct Shared<T: Transport> {
    pub transport: T,
    /// The requests to send (one encoded once, or a weighted, templated mix).
    pub source: RequestSource,
    pub timeout: Duration,
    pub recorder: RefCell<Recorder>,
    /// Requests abandoned when the worker stopped after at least one of their bytes was
    /// written: the server may have seen them ("in flight at the end", not counted). A
    /// request stopped before its first byte (waiting for a connection, or for its turn on
    /// the event loop) never reached the server and is not one of them.
    pub in_flight: Cell<u64>,
    /// Where every read of this worker lands.
    pub scratch: Scratch,
    /// Time the open-loop pacer spent polling with nothing to do (left out of the worker's
    /// busy figure).
    pub idle_polling: Cell<Duration>,
    /// Requests ending, watched by a closed loop's lingering task.
    pub activity: crate::linger::Activity,
    /// Response checks (issue 17); `None` (no checks) leaves the request path as it was.
    pub checks: Option<crate::checks::Checks>,
}

/// A connection slot: the stream if open, what reads its responses, and the timer.
pub(crate) struct Connection<S> {
    stream: Option<S>,
    reader: Reader,
    /// Where templated requests are rendered (stays empty for fixed requests).
    rendered: Vec<u8>,
    /// The bytes of responses a script wants to see (stays empty otherwise).
    captured: Vec<u8>,
    /// The request timeout, kept registered between requests: it is moved only when it fires
    /// before the current request's deadline, so a request costs no timer registration.
    timer: Option<Pin<Box<Sleep>>>,
    /// Responses the open stream answered, reported to [`crate::carried`] when it ends.
    carried: u64,
    /// Open loop: when the schedule took up the next request, if it then had to wait for
    /// this connection ([`crate::pool`]): its lag ends there, and the wait is service time.
    pub(crate) taken_up: Option<Instant>,
}

impl<S> Connection<S> {
    /// The open stream, taken out of the slot (an executor of its own takes over a
    /// preconnected connection).
    pub(crate) fn take_stream(&mut self) -> Option<S> {
        self.stream.take()
    }

    pub(crate) fn new() -> Self {
        Connection {
            stream: None,
            reader: Reader::new(),
            rendered: Vec::new(),
            captured: Vec::new(),
            timer: None,
            carried: 0,
            taken_up: None,
        }
    }

    /// The last response's end was stamped by the kernel ([`crate::transport::Inbound::arrival`]).
    pub(crate) fn stamped(&self) -> bool {
        self.reader.stamped
    }

    /// Drops the stream and any unparsed bytes; a buffer grown by a large head is given back,
    /// so a hostile server cannot keep every slot's memory at the head limit.
    fn close(&mut self) {
        if self.stream.take().is_some() {
            crate::carried::connection_ended(self.carried);
        }
        self.carried = 0;
        let reader = &mut self.reader;
        reader.pending.clear();
        reader.head_hint = 0;
        if reader.pending.capacity() > PENDING_KEEP_BYTES {
            reader.pending = Vec::new();
        }
    }
}

impl<S> Drop for Connection<S> {
    /// A connection still open at the stop ends here.
    fn drop(&mut self) {
        if self.stream.is_some() {
            crate::carried::connection_ended(self.carried);
        }
    }
}

/// Performs one request on `conn`, opening it first if needed, and records the outcome.
///
/// `scheduled` is the intended send time of an open-loop request (latency is measured from
/// it); `None` in a closed loop, where latency starts at the first byte written. `global` is
/// an open-loop request's number on the whole run's schedule (it picks the request). If the
/// run stops it while its bytes are on their way, it counts as in flight. Returns when it
/// ended.
pub(crate) async fn perform<T: Transport>(
    shared: &Shared<T>,
    conn: &mut Connection<T::Stream>,
    scheduled: Option<Instant>,
    global: Option<u64>,
) -> Instant {
    let mut flight = Flight {
        in_flight: &shared.in_flight,
        on_air: Cell::new(false),
        ended: false,
    };
    let outcome = request(shared, conn, scheduled, global, &flight.on_air).await;
    flight.ended = true;
    shared.activity.request_ended(conn.stamped());
    match outcome {
        Outcome::Response(sample) => {
            // --- issue 17: checks, judged on the captured bytes; none: the sample alone ---
            let reader = &conn.reader;
            let checks = shared.checks.as_ref();
            settle::response_checked(
                &shared.recorder,
                checks,
                &sample,
                &reader.capture,
                reader.overflow,
            );
            if checks.is_some() {
                conn.release_capture();
            }
            // --- end issue 17 ---
            sample.ended
        }
        Outcome::Failed(f) => {
            let now = settle::failure(&shared.recorder, f.kind, &f.message);
            // A failure can come without the event loop ever being asked (a refused connect
            // on loopback fails inside `connect`): without this a connection loop against a
            // dead server never yields, the worker never hands over its seconds or turns its
            // event loop, and memory grows with every attempt (issue 24).
            tokio::task::consume_budget().await;
            now
        }
    }
}

/// Scenarios (issue 17): one request whose bytes the caller built; the outcome is returned
/// for the caller to record (the run's figures and the step's). `capture` keeps the response
/// (see [`Connection::response`]) for the step's checks and extractions.
pub(crate) async fn perform_bytes<T: Transport>(
    shared: &Shared<T>,
    conn: &mut Connection<T::Stream>,
    scheduled: Option<Instant>,
    bytes: &[u8],
    meta: Meta,
    capture: bool,
) -> Result<Sample, (ErrorKind, String)> {
    let mut flight = Flight {
        in_flight: &shared.in_flight,
        on_air: Cell::new(false),
        ended: false,
    };
    let outcome = send(
        shared,
        conn,
        scheduled,
        bytes,
        meta,
        &flight.on_air,
        capture,
    )
    .await;
    flight.ended = true;
    match outcome {
        Outcome::Response(sample) => Ok(sample),
        Outcome::Failed(f) => {
            // As in `perform`: a failure that never waited must still yield.
            tokio::task::consume_budget().await;
            Err((f.kind, f.message))
        }
    }
}

impl<S> Connection<S> {
    /// The last response as received (head and body) when it was captured, and whether it
    /// was longer than the capture limit.
    pub(crate) fn response(&self) -> (&[u8], bool) {
        (&self.reader.capture, self.reader.overflow)
    }

    /// Gives back a capture buffer grown by a large response.
    pub(crate) fn release_capture(&mut self) {
        if self.reader.capture.capacity() > SCRATCH_BYTES {
            self.reader.capture = Vec::new();
        }
    }
}

/// Counts a request as in flight if it is dropped (the worker stopping) after its first
/// byte was written and before it ended.
struct Flight<'a> {
    in_flight: &'a Cell<u64>,
    on_air: Cell<bool>,
    ended: bool,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if !self.ended && self.on_air.get() {
            self.in_flight.set(self.in_flight.get() + 1);
        }
    }
}

/// Opens a connection; a failure is the request's error. The connection is recorded once its
/// first request was written ([`Opened::record`]): a stream may confirm its handshake only
/// then ([`Handshake`]).
async fn connect<T: Transport>(shared: &Shared<T>) -> Result<(T::Stream, Opened), Failure> {
    let started = Instant::now();
    let result = shared.transport.connect().await;
    let returned = Instant::now();
    match result {
        Ok(s) => Ok((s, Opened { started, returned })),
        Err(e) => Err(Failure {
            kind: e.kind,
            message: e.message,
        }),
    }
}

/// A connection opened for a request, not yet recorded.
struct Opened {
    started: Instant,
    /// When `connect` returned.
    returned: Instant,
}

impl Opened {
    /// Records the connection as its first write found it. Returns when it was up (the
    /// request's first byte could not be written before), or the connect's failure, which is
    /// then the request's error.
    fn record<T: Transport>(
        self,
        shared: &Shared<T>,
        handshake: Handshake,
    ) -> Result<Instant, Failure> {
        let (up, connect_time) = match handshake {
            Handshake::Done => (self.returned, self.returned - self.started),
            Handshake::Waited { waited, at } => (at, self.returned - self.started + waited),
            Handshake::Waiting(addr) => {
                return Err(Failure {
                    kind: ErrorKind::Connect,
                    message: format!(
                        "connect to {addr}: no answer within the request's {:?} (--timeout)",
                        shared.timeout
                    ),
                })
            }
            Handshake::Failed(e) => {
                return Err(Failure {
                    kind: e.kind,
                    message: e.message,
                })
            }
        };
        shared
            .recorder
            .borrow_mut()
            .record_connection(up, connect_time);
        Ok(up)
    }
}

/// Opens up to `n` connections before a run's clock starts, with each one's connect time.
/// Connections that fail are simply not there: the run opens them when needed and counts
/// what goes wrong then.
pub(crate) async fn preconnect<T: Transport>(
    transport: &T,
    n: usize,
) -> Vec<(Connection<T::Stream>, Duration)> {
    let mut opened = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        let Ok(stream) = transport.connect().await else {
            break;
        };
        let mut conn = Connection::new();
        conn.stream = Some(stream);
        opened.push((conn, t0.elapsed()));
    }
    opened
}

/// Picks the next request's bytes (rendered into the connection's own buffer when they have
/// templates) and sends them.
async fn request<T: Transport>(
    shared: &Shared<T>,
    conn: &mut Connection<T::Stream>,
    scheduled: Option<Instant>,
    global: Option<u64>,
    on_air: &Cell<bool>,
) -> Outcome {
    let mut rendered = std::mem::take(&mut conn.rendered);
    let capture = shared.checks.as_ref().is_some_and(|c| c.capture);
    let outcome = match shared.source.next(global, &mut rendered) {
        Picked::Fixed(bytes, meta) => {
            send(shared, conn, scheduled, bytes, meta, on_air, capture).await
        }
        Picked::Rendered(meta) => {
            send(shared, conn, scheduled, &rendered, meta, on_air, capture).await
        }
        Picked::Failed(message) => Outcome::Failed(Failure {
            kind: ErrorKind::Script,
            message,
        }),
    };
    conn.rendered = rendered;
    outcome
}

/// One request, retried once on a new connection when a reused one turned out to be closed.
async fn send<T: Transport>(
    shared: &Shared<T>,
    conn: &mut Connection<T::Stream>,
    scheduled: Option<Instant>,
    bytes: &[u8],
    meta: Meta,
    on_air: &Cell<bool>,
    capture: bool,
) -> Outcome {
    if let Some(refused) = look_before_reuse(shared, conn).await {
        return refused;
    }
    // Open loop: the request is under way once its task runs, before any connect. So the
    // schedule lag (intended to this instant) is the client's own lateness only, and a
    // connect the pool had to make for it (a server slow to accept) is service time, as it is
    // latency (issue 20: at 20,000 req/s against nginx, stalls grew the pool to ~900
    // connections and their connects had been counted as the client's lag).
    // A request that waited for a free connection was taken up when the schedule queued it
    // (crate::pool): the wait is the server's, like a connect the pool made for it.
    let taken_up = conn.taken_up.take();
    let dispatched = scheduled.map(|_| taken_up.unwrap_or_else(Instant::now));
    let mut first_attempt: Option<(Instant, Instant)> = None;
    let mut bytes_written = 0u64;
    let mut retried = false;
    loop {
        let reused = conn.stream.is_some();
        let mut opened = None;
        let stream = match conn.stream {
            Some(ref mut s) => s,
            None => match connect(shared).await {
                Ok((s, o)) => {
                    opened = Some(o);
                    conn.stream.insert(s)
                }
                Err(f) => return Outcome::Failed(f),
            },
        };
        // The first attempt's start and deadline hold for a retry too: --timeout bounds the
        // whole request.
        let (started, deadline) = *first_attempt.get_or_insert_with(|| {
            let now = Instant::now();
            let deadline = match scheduled {
                None => later(now, shared.timeout),
                Some(due) => later(due, shared.timeout).max(now),
            };
            (dispatched.unwrap_or(now), deadline)
        });
        let mut progress = Progress {
            on_air: Some(on_air),
            ..Progress::default()
        };
        conn.captured.clear();
        let mut batch = Batch {
            left: meta.batch.max(1),
            head: meta.head,
            earlier: Vec::new(),
            capture: shared.source.wants_response().then_some(&mut conn.captured),
            source: &shared.source,
            script_error: None,
        };
        let result = within(
            deadline,
            &mut conn.timer,
            exchange(
                stream,
                bytes,
                &shared.scratch,
                &mut conn.reader,
                &mut batch,
                &mut progress,
                capture,
            ),
        )
        .await;
        bytes_written += progress.written as u64;
        let Batch {
            earlier,
            script_error,
            ..
        } = batch;
        let mut started = started;
        if let Some(opened) = opened {
            match connection_up(shared, conn, opened) {
                // The closed loop times a request from its first byte written, which could
                // not be before the connection was up.
                Ok(up) if scheduled.is_none() => started = started.max(up),
                Ok(_) => {}
                Err(f) => {
                    count_unanswered(shared, progress.received, bytes_written);
                    return Outcome::Failed(f);
                }
            }
        }
        let exchanged = match result {
            Ok(Ok(exchanged)) => exchanged,
            Ok(Err(f)) => {
                conn.close();
                let server_closed =
                    matches!(f.kind, ErrorKind::Read | ErrorKind::Write) && progress.received == 0;
                if reused && server_closed && !retried {
                    if !meta.idempotent {
                        // The server may have acted on it before closing: never sent twice.
                        count_unanswered(shared, 0, bytes_written);
                        return Outcome::Failed(Failure {
                            kind: f.kind,
                            message: format!(
                                "{}; a reused connection closed before any response byte, \
                                 not retried: the method is not idempotent (RFC 9110 §9.2.2)",
                                f.message
                            ),
                        });
                    }
                    retried = true;
                    settle::retry(&shared.recorder);
                    continue;
                }
                count_unanswered(shared, progress.received, bytes_written);
                return Outcome::Failed(f);
            }
            Err(_) => {
                conn.close();
                count_unanswered(shared, progress.received, bytes_written);
                return Outcome::Failed(Failure {
                    kind: ErrorKind::Timeout,
                    message: timeout_message(shared, &progress, bytes.len()),
                });
            }
        };
        let timing = Timing {
            scheduled,
            started,
            received: progress.received,
            written: bytes_written,
        };
        return answered(
            shared,
            conn,
            &meta,
            exchanged,
            (earlier, script_error),
            timing,
        );
    }
}

/// A new connection is recorded once its first write showed whether (and when) it was up: a
/// connect that failed is the request's error (the connection closed), whatever the exchange
/// made of it.
fn connection_up<T: Transport>(
    shared: &Shared<T>,
    conn: &mut Connection<T::Stream>,
    opened: Opened,
) -> Result<Instant, Failure> {
    let handshake = conn
        .stream
        .as_ref()
        .map_or(Handshake::Done, |s| s.handshake());
    opened
        .record(shared, handshake)
        .inspect_err(|_| conn.close())
}

/// Before a kept-alive connection is reused: closed if the server closed it, and the request
/// refused (not sent) when bytes arrived on it that answer no request.
async fn look_before_reuse<T: Transport>(
    shared: &Shared<T>,
    conn: &mut Connection<T::Stream>,
) -> Option<Outcome> {
    let stream = conn.stream.as_mut()?;
    match check_idle(stream, &shared.scratch).await {
        Idle::Open => None,
        Idle::Closed => {
            conn.close();
            None
        }
        Idle::Unsolicited(n, start) => {
            conn.close();
            Some(Outcome::Failed(Failure {
                kind: ErrorKind::Protocol,
                message: format!(
                    "{n} bytes arrived on an idle keep-alive connection, answering no request \
                     (starting {start:?}); connection closed, this request not sent"
                ),
            }))
        }
    }
}

/// When a request was due and written, and the bytes it moved (a retry's first attempt
/// included).
struct Timing {
    scheduled: Option<Instant>,
    started: Instant,
    received: u64,
    written: u64,
}

/// A request whose response arrived: the responses before the last of a pipelined batch are
/// settled here, each one a response of its own timed from the batch's first byte written;
/// the last is the outcome (or the script's error, when `response()` failed on it).
fn answered<T: Transport>(
    shared: &Shared<T>,
    conn: &mut Connection<T::Stream>,
    meta: &Meta,
    ex: Exchange,
    (earlier, script_error): (Vec<(u16, Instant, u64)>, Option<String>),
    t: Timing,
) -> Outcome {
    conn.carried += 1 + earlier.len() as u64;
    // After a request that said `Connection: close`, the connection is closed by the client
    // even when the server kept it open (RFC 9112 §9.6).
    if !ex.reusable || meta.close {
        conn.close();
    }
    // A kernel stamp never precedes the request (a real-time clock stepped back mid-run is
    // the only way it could).
    let first_byte = ex.first_byte.max(t.started);
    let mut earlier_bytes = 0;
    for &(status, ended, bytes) in &earlier {
        earlier_bytes += bytes;
        let sample = Sample {
            scheduled: t.scheduled,
            started: t.started,
            first_byte,
            ended: ended.max(first_byte),
            status,
            bytes_read: bytes,
            bytes_written: 0,
        };
        settle::response(&shared.recorder, &sample);
    }
    if let Some(message) = script_error {
        count_unanswered(shared, t.received - earlier_bytes, t.written);
        return Outcome::Failed(Failure {
            kind: ErrorKind::Script,
            message,
        });
    }
    Outcome::Response(Sample {
        scheduled: t.scheduled,
        started: t.started,
        first_byte,
        ended: ex.ended.max(first_byte),
        status: ex.status,
        bytes_read: t.received - earlier_bytes,
        bytes_written: t.written,
    })
}

/// A request that ends without a response still moved bytes: they count in the totals
/// without a sample (a retry's first attempt received none, and its written bytes go on
/// with the retry's).
pub(crate) fn count_unanswered<T: Transport>(shared: &Shared<T>, received: u64, written: u64) {
    if received > 0 || written > 0 {
        shared
            .recorder
            .borrow_mut()
            .record_bytes(Instant::now(), received, written);
    }
}

fn timeout_message<T: Transport>(
    shared: &Shared<T>,
    p: &Progress<'_>,
    request_len: usize,
) -> String {
    let t = shared.timeout;
    if p.sent || p.write_error.is_some() {
        format!(
            "no complete response within {t:?} (--timeout); {} bytes received",
            p.received
        )
    } else {
        format!(
            "no complete response within {t:?} (--timeout); only {} of the {} request bytes \
             could be written (the server stopped reading), {} bytes received",
            p.written, request_len, p.received
        )
    }
}

/// The request timed out.
struct Elapsed;

/// Runs `work` until `deadline`, on the connection's long-lived timer: the timer is left
/// registered at an earlier request's deadline and moved only when it fires early, so a
/// request that ends in time (nearly all) costs no timer registration and removal.
async fn within<F: Future>(
    deadline: Instant,
    timer: &mut Option<Pin<Box<Sleep>>>,
    work: F,
) -> Result<F::Output, Elapsed> {
    let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
    if timer.deadline() > deadline.into() {
        timer.as_mut().reset(deadline.into());
    }
    let mut work = std::pin::pin!(work);
    poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(Ok(out));
        }
        while timer.as_mut().poll(cx).is_ready() {
            if Instant::now() >= deadline {
                return Poll::Ready(Err(Elapsed));
            }
            timer.as_mut().reset(deadline.into());
        }
        Poll::Pending
    })
    .await
}

/// `t + d`, or far in the future when that overflows (an absurd --timeout).
fn later(t: Instant, d: Duration) -> Instant {
    t.checked_add(d)
        .unwrap_or_else(|| t + Duration::from_secs(10 * 365 * 24 * 3600))
}

enum Idle {
    Open,
    /// EOF or reset: the server closed the idle connection.
    Closed,
    /// This many bytes answer no request; the excerpt shows how they start.
    Unsolicited(usize, String),
}

/// Looks at a kept-alive connection before reusing it, without waiting. For TCP this costs
/// no syscall unless the event loop has seen the socket become readable since the last read.
async fn check_idle<S: AsyncRead + Unpin>(stream: &mut S, scratch: &Scratch) -> Idle {
    poll_fn(|cx| {
        let mut buf = scratch.0.borrow_mut();
        if buf.len() < SCRATCH_BYTES {
            buf.resize(SCRATCH_BYTES, 0);
        }
        let mut rb = ReadBuf::new(&mut buf);
        Poll::Ready(match Pin::new(&mut *stream).poll_read(cx, &mut rb) {
            Poll::Pending => Idle::Open,
            Poll::Ready(Err(_)) => Idle::Closed,
            Poll::Ready(Ok(())) => {
                let data = rb.filled();
                // A server timing out an idle connection may say so with a 408 before closing
                // (Go's client ignores it too).
                if data.is_empty()
                    || (data.starts_with(b"HTTP/1.") && data.get(9..12) == Some(b"408"))
                {
                    Idle::Closed
                } else {
                    Idle::Unsolicited(data.len(), excerpt(data))
                }
            }
        })
    })
    .await
}
