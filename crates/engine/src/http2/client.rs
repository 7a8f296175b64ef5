//! The HTTP/2 closed loop: a connection slot opens a connection, keeps `--streams` requests
//! open on it (each ended request's place goes to the next one, all sent in one write after
//! the read that ended them), and opens a new connection when that one ends while load is
//! still owed. How servers that break the rules are handled is [`super::conn`]'s to say; here:
//! - **Unprocessed requests** (GOAWAY above the server's last stream id, REFUSED_STREAM) are
//!   sent once more on a new connection and counted as retries; a second refusal is an error
//!   naming the code.
//! - **A connection that ends before it answered anything** (GOAWAY at once, a dead peer, a
//!   stream limit of 0): one waiting request is charged with the cause, so a server that
//!   refuses everything makes errors, never a silent spin.
//!
//! - **A server that does not speak HTTP/2 with prior knowledge** (it answers the preface
//!   with `HTTP/1.1 400`, closes, or sends bytes that are no frame) while no connection of
//!   the run has spoken HTTP/2: the run stops at once ([`H2Run::refuse`]) and fails naming
//!   the answer, instead of failing every connection the same way for the whole duration.
//!
//! Bytes: a response's sample carries its stream's frames both ways; what the connection
//! moved beside them (preface, SETTINGS, PING, WINDOW_UPDATE, GOAWAY, failed streams) is
//! added to the recorder's totals without a sample after each poll ([`Live::count_bytes`]),
//! so the totals are every byte that crossed the connection (above TLS, if any).
//!
//! Latency runs from the moment the request's HEADERS frame is queued (it goes out in the
//! same turn of the event loop, in the write that follows) to the read that held the end of
//! its response.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Poll, Waker};
use std::time::Instant;

use loadmark_metrics::{ErrorKind, Recorder};
use loadmark_wire::http2::request::{prepare, Prepared};
use loadmark_wire::http2::{Event, Failure};

use super::conn::H2Conn;
use crate::closed::{ClosedDriver, Until};
use crate::connection::Shared;
use crate::settle;
use crate::source::Picked;
use crate::transport::Transport;

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

/// What every worker's HTTP/2 connections share for a run: the lowest stream limit a server
/// announced (for the report), and whether the server speaks HTTP/2 at all.
#[derive(Debug)]
pub(crate) struct H2Run {
    /// The lowest SETTINGS_MAX_CONCURRENT_STREAMS a server announced below `--streams`
    /// (`usize::MAX`: none lower).
    pub(crate) server_limit: AtomicUsize,
    /// A connection of the run finished its handshake.
    spoken: AtomicBool,
    /// What the server answered instead of HTTP/2, when the run stopped for it.
    refused: OnceLock<String>,
    /// The loops waiting in [`H2Run::stopped`] (one per worker): woken once, when refused.
    waiting: Mutex<Vec<Waker>>,
}

impl Default for H2Run {
    fn default() -> Self {
        H2Run {
            server_limit: AtomicUsize::new(usize::MAX),
            spoken: AtomicBool::new(false),
            refused: OnceLock::new(),
            waiting: Mutex::new(Vec::new()),
        }
    }
}

impl H2Run {
    fn spoke(&self) {
        if !self.spoken.load(Ordering::Relaxed) {
            self.spoken.store(true, Ordering::Relaxed);
        }
    }

    /// A connection's handshake got `answer`, which is not HTTP/2. Unless a connection of
    /// the run already spoke HTTP/2 (then it is one failed connection, counted as such),
    /// the whole run stops: every connection would fail the same way. True: stop.
    pub(crate) fn refuse(&self, answer: &str) -> bool {
        if self.spoken.load(Ordering::Relaxed) {
            return false;
        }
        let _ = self.refused.set(answer.to_string());
        let waiting = std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
        for waker in waiting {
            waker.wake();
        }
        true
    }

    /// What the server answered, if the run stopped because it does not speak HTTP/2.
    pub(crate) fn refused(&self) -> Option<&str> {
        self.refused.get().map(String::as_str)
    }

    /// Ready once the run stopped because the server does not speak HTTP/2. Meant to be
    /// raced against a loop's own work in one task: it registers the task's waker once, and
    /// every later poll is one atomic load (no lock per request).
    pub(crate) async fn stopped(&self) {
        let mut registered = false;
        std::future::poll_fn(|cx| {
            if self.refused().is_some() {
                return Poll::Ready(());
            }
            if !registered {
                registered = true;
                self.waiting
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(cx.waker().clone());
                // Refused between the check and the registration: its wake-up was missed.
                if self.refused().is_some() {
                    return Poll::Ready(());
                }
            }
            Poll::Pending
        })
        .await
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
    /// Shared by the workers and read by the runner.
    pub(crate) run: Arc<H2Run>,
    /// gRPC calls: the longest response message (`crate::grpc`).
    pub(crate) grpc: Option<crate::grpc::Driving>,
}

impl H2Shared {
    pub(crate) fn new(tls: bool, streams: usize, run: Arc<H2Run>) -> Self {
        H2Shared {
            scheme: if tls { "https" } else { "http" },
            streams: streams.max(1),
            fixed: RefCell::new(Vec::new()),
            run,
            grpc: None,
        }
    }

    pub(crate) fn with_grpc(self, grpc: Option<crate::grpc::Driving>) -> Self {
        H2Shared { grpc, ..self }
    }

    pub(crate) fn streams(&self) -> usize {
        self.streams
    }

    /// Notes a server's stream limit below `--streams` (the connection already keeps to it).
    pub(crate) fn observe_limit(&self, allowed: usize) {
        if allowed < self.streams {
            self.run.server_limit.fetch_min(allowed, Ordering::Relaxed);
        }
    }
}

/// A request taken from the budget and not yet ended: `started` once it was first sent.
struct Job {
    started: Option<Instant>,
    retried: bool,
}

/// What a stream of the closed loop carries.
struct Tag {
    started: Instant,
    retried: bool,
}

/// A connection whose open streams count as in flight if the worker stops it, and whose
/// bytes no sample carries go to the recorder as they move and when it closes.
pub(crate) struct Live<'a, S, G> {
    pub conn: H2Conn<S, G>,
    pub in_flight: &'a Cell<u64>,
    pub recorder: &'a RefCell<Recorder>,
}

impl<'a, S, G> Live<'a, S, G> {
    pub(crate) fn new<T: Transport>(conn: H2Conn<S, G>, shared: &'a Shared<T>) -> Self {
        Live {
            conn,
            in_flight: &shared.in_flight,
            recorder: &shared.recorder,
        }
    }

    /// Adds the connection's own bytes (see [`H2Conn::unattributed`]) to the totals; a
    /// few integer operations unless there are some.
    pub(crate) fn count_bytes(&mut self, closing: bool) {
        let (read, written) = self.conn.unattributed(closing);
        if read > 0 || written > 0 {
            if let Ok(mut recorder) = self.recorder.try_borrow_mut() {
                recorder.record_bytes(Instant::now(), read, written);
            }
        }
    }
}

impl<S, G> Drop for Live<'_, S, G> {
    fn drop(&mut self) {
        self.in_flight
            .set(self.in_flight.get() + self.conn.active() as u64);
        self.count_bytes(true);
    }
}

/// One connection slot of a closed loop, until the budget or the deadline says stop, or a
/// ramp retires the slot (`retire`): then the requests open on it end, and it closes, as an
/// HTTP/1.1 connection of a ramp does after its request.
async fn slot_loop<T: Transport>(shared: Rc<Shared<T>>, h2s: Rc<H2Shared>, until: Until)
where
    T::Stream: Negotiated,
{
    let budget = &until.budget;
    let stopped = |now: Instant| until.reached(now);
    // Requests taken from the budget that the last connection did not end (retries).
    let mut waiting: Vec<Job> = Vec::new();
    let mut rendered = Vec::new();
    let mut events = Vec::new();
    loop {
        if stopped(Instant::now()) || h2s.run.refused().is_some() {
            return;
        }
        if waiting.is_empty() {
            if !budget.claim() {
                return;
            }
            waiting.push(Job {
                started: None,
                retried: false,
            });
        }
        let conn = match connect(&shared, &h2s.run).await {
            Ok(c) => c,
            Err(f) => {
                // The connect failure is the waiting request's error (as over HTTP/1.1).
                waiting.pop();
                crate::grpc::failure(&shared.recorder, h2s.grpc, f.kind, &f.message, None, false);
                tokio::task::consume_budget().await;
                continue;
            }
        };
        let mut live = Live::new(conn, &shared);
        live.conn.grpc(h2s.grpc);
        let mut answered = 0u64;
        let mut last_failure: Option<Failure> = None;
        let mut stop = false;
        let mut exhausted = false;
        loop {
            let now = Instant::now();
            stop |= stopped(now);
            while !stop && live.conn.can_open() && live.conn.active() < h2s.streams {
                let job = match waiting.pop() {
                    Some(job) => job,
                    None if !exhausted && budget.claim() => Job {
                        started: None,
                        retried: false,
                    },
                    None => {
                        exhausted = true;
                        break;
                    }
                };
                let prepared = match pick(&shared, &h2s, None, &mut rendered) {
                    Ok(p) => p,
                    Err(message) => {
                        settle::failure(&shared.recorder, ErrorKind::Protocol, &message);
                        continue;
                    }
                };
                let started = job.started.unwrap_or(now);
                let tag = Tag {
                    started,
                    retried: job.retried,
                };
                live.conn.open(
                    &prepared.block,
                    &prepared.body,
                    tag,
                    started + shared.timeout,
                );
            }
            if live.conn.active() == 0 {
                break;
            }
            events.clear();
            poll_fn(|cx| live.conn.poll(cx, &mut events)).await;
            live.count_bytes(false);
            let stamped = live.conn.stamped();
            for event in events.drain(..) {
                match event {
                    Event::Response { tag, answer } => {
                        answered += 1;
                        let sample = answer.sample(None, tag.started);
                        super::settle_response(&shared, &sample);
                        crate::grpc::settle(&shared.recorder, &answer, tag.started);
                        // For the lingering task (`crate::linger`), as over HTTP/1.1.
                        shared.activity.request_ended(stamped);
                    }
                    Event::Failed { tag, failure } => {
                        let resend = || {
                            waiting.push(Job {
                                started: Some(tag.started),
                                retried: true,
                            });
                            true
                        };
                        let recorder = &shared.recorder;
                        crate::grpc::stream_failed(
                            recorder,
                            h2s.grpc,
                            &failure,
                            tag.retried,
                            resend,
                        );
                        last_failure = Some(failure);
                    }
                }
            }
            h2s.observe_limit(live.conn.server_limit());
        }
        let over = live.conn.is_over();
        let why = live.conn.why_over();
        drop(live);
        crate::carried::connection_ended(answered);
        if stop || !over {
            // Stopped, or the load is done: the connection ended every request it had.
            return;
        }
        if answered == 0 {
            // Nothing answered on this connection: charge one waiting request with the cause,
            // so a server that ends every connection at once cannot make this loop spin.
            if waiting.pop().is_some() || budget.claim() {
                let (kind, message) = match (last_failure.take(), why) {
                    (Some(f), _) => (f.kind, f.message),
                    (None, Some(why)) => why,
                    (None, None) => (
                        ErrorKind::Protocol,
                        "the HTTP/2 connection ended before it answered any request".into(),
                    ),
                };
                crate::grpc::failure(&shared.recorder, h2s.grpc, kind, &message, None, false);
            }
            tokio::task::consume_budget().await;
        }
    }
}

/// HTTP/2's closed loop: each slot a connection keeping its streams busy.
impl<T: Transport> ClosedDriver<T> for super::Http2
where
    T::Stream: Negotiated,
{
    fn waiting_per_slot(&self) -> Option<usize> {
        Some(self.h2s.streams())
    }

    /// A server that does not speak HTTP/2 ends a ramp at once.
    fn halted(&self) -> impl std::future::Future<Output = ()> {
        self.h2s.run.stopped()
    }

    fn run_slot(
        self: &Rc<Self>,
        shared: Rc<Shared<T>>,
        until: Until,
        _seed: u64,
    ) -> impl std::future::Future<Output = ()> + 'static {
        slot_loop(shared, self.h2s.clone(), until)
    }
}

pub(crate) struct ConnectFailure {
    pub kind: ErrorKind,
    pub message: String,
}

/// Opens a connection and runs the HTTP/2 handshake (the preface and both SETTINGS). A
/// server that answers with something else than HTTP/2 before any connection of the run
/// spoke it stops the run ([`H2Run::refuse`]); the caller sees the failure and checks.
pub(crate) async fn connect<T: Transport, G>(
    shared: &Shared<T>,
    run: &H2Run,
) -> Result<H2Conn<T::Stream, G>, ConnectFailure>
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
    let conn = match H2Conn::handshake(stream, shared.timeout).await {
        Ok(conn) => conn,
        Err(e) => {
            let (read, written) = e.bytes;
            shared
                .recorder
                .borrow_mut()
                .record_bytes(Instant::now(), read, written);
            if let Some(answer) = &e.not_h2 {
                run.refuse(answer);
            }
            return Err(ConnectFailure {
                kind: e.kind,
                message: e.message,
            });
        }
    };
    run.spoke();
    let now = Instant::now();
    shared
        .recorder
        .borrow_mut()
        .record_connection(now, now - t0);
    Ok(conn)
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
