//! A virtual user's HTTP/2 link: one connection per user, opened at the user's first HTTP/2
//! step and kept across its iterations, carrying one request at a time (a user's steps run
//! in order). Users do not share connections: N users are N connections, as N browsers
//! would be, so per-user state (cookies, tokens) never crosses between users.
//!
//! The connection is [`crate::http2::conn::H2Conn`], the same the HTTP/2 executors drive, so
//! every rule a server can break is classified the same way. Here:
//! - a connection that cannot carry another stream (GOAWAY, a stream limit of 0, an ended
//!   connection) is closed before the step and a new one opened;
//! - a request the server did not process (GOAWAY above its last stream, REFUSED_STREAM) is
//!   sent once more on a new connection and counted as a retry; a second refusal is an error;
//! - bytes no response carries (preface, SETTINGS, PING, WINDOW_UPDATE, GOAWAY) go to the
//!   run's totals after every turn and when the link closes, so the totals stay exact.
//!
//! Latency runs from the moment the request's HEADERS frame is queued (or from the
//! iteration's intended start, for an open model's first step) to the read that ended it.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::sync::Arc;
use std::time::Instant;

use loadmark_metrics::{ErrorKind, Recorder, Sample};
use loadmark_wire::http2::request::{prepare, Prepared};
use loadmark_wire::http2::state::Capture;
use loadmark_wire::http2::{Event, Failure};

use super::{render, ScenarioShared, StepRun, User};
use crate::checks::CAPTURE_LIMIT;
use crate::connection::Shared;
use crate::http2::client::connect;
use crate::http2::conn::H2Conn;
use crate::http2::Negotiated;
use crate::settle;
use crate::transport::{Inbound, Transport};

/// A user's HTTP/2 connection and what it answered.
pub(crate) struct Link<S> {
    conn: H2Conn<S, ()>,
    answered: u64,
    /// The last response, when its step keeps it for checks or extractions.
    captured: Option<Box<Capture>>,
    /// A gRPC link's last call: the status it ended with and its message.
    status: Option<(u32, Option<String>)>,
}

impl<S> Link<S> {
    /// The response the last step kept, if it kept one.
    pub(super) fn take_capture(&mut self) -> Option<Box<Capture>> {
        self.captured.take()
    }

    /// How the last gRPC call ended (`None` on a plain HTTP/2 link).
    pub(super) fn take_status(&mut self) -> Option<(u32, Option<String>)> {
        self.status.take()
    }

    /// The connection leaves: what it moved beyond its responses goes to the totals, and its
    /// request count to the per-connection spread.
    pub(super) fn close<T: Transport>(mut self, shared: &Shared<T>) {
        count_bytes(&mut self.conn, &shared.recorder, true);
        crate::carried::connection_ended(self.answered);
    }
}

impl<S: Inbound> Link<S> {
    pub(super) fn stamped(&self) -> bool {
        self.conn.stamped()
    }
}

/// Sends step `run` on the user's HTTP/2 connection (opening one when it has none that can
/// carry a stream) and waits for its end. `due` is the iteration's intended start. A
/// `grpc:` step goes on the user's gRPC link instead: an HTTP/2 connection of its own whose
/// streams are all read as gRPC calls (as a gRPC client keeps its channel apart).
pub(super) async fn perform<T: Transport>(
    shared: &Shared<T>,
    sc: &ScenarioShared,
    run: &StepRun,
    user: &mut User<T::Stream>,
    due: Option<Instant>,
    seq: u64,
) -> Result<Sample, (ErrorKind, String)>
where
    T::Stream: Negotiated,
{
    let grpc = run.grpc.is_some();
    let (slot, me) = if grpc {
        (&mut user.grpc, &mut user.me)
    } else {
        (&mut user.h2, &mut user.me)
    };
    let prepared = match &run.prepared {
        Some(prepared) => prepared.clone(),
        None => {
            render(sc, run, me, seq).map_err(|message| (ErrorKind::Protocol, message))?;
            let prepared = prepare(&me.request, sc.scheme)
                .map_err(|message| (ErrorKind::Protocol, message))?;
            Arc::new(prepared)
        }
    };
    let mut first_sent: Option<Instant> = None;
    let mut retried = false;
    loop {
        if slot.as_ref().is_some_and(|link| !link.conn.can_open()) {
            let over = slot.take().expect("checked");
            over.close(shared);
        }
        let link = match slot {
            Some(link) => link,
            None => {
                let mut conn = connect(shared, &sc.h2run)
                    .await
                    .map_err(|f| (f.kind, f.message))?;
                if grpc {
                    conn.grpc(Some(crate::grpc::Driving {
                        limit: sc.grpc_limit,
                        streaming: None,
                    }));
                }
                slot.insert(Link {
                    conn,
                    answered: 0,
                    captured: None,
                    status: None,
                })
            }
        };
        let now = Instant::now();
        let started = *first_sent.get_or_insert(now);
        let deadline = now + shared.timeout;
        if run.capture {
            let request = (&prepared.block[..], &prepared.body);
            link.conn
                .open_capturing(request, (), deadline, CAPTURE_LIMIT);
        } else {
            link.conn
                .open(&prepared.block, &prepared.body, (), deadline);
        }
        match answer(&mut link.conn, shared).await {
            Event::Response { answer, .. } => {
                link.answered += 1;
                link.captured = link.conn.take_captured();
                if let Some(end) = &answer.grpc {
                    // Counted by status name in the run's gRPC figures, as `loadmark grpc`
                    // counts its calls.
                    crate::grpc::settle(&shared.recorder, &answer, started);
                    link.status = Some(end.outcome(answer.status));
                }
                return Ok(answer.sample(due, started));
            }
            Event::Failed { failure, .. } => {
                let Failure {
                    kind,
                    message,
                    unprocessed,
                    reset,
                    ..
                } = failure;
                if let Some(link) = slot.take() {
                    // A failed stream may leave the connection usable; a new one is the
                    // simple truth for a user that sends one request at a time.
                    link.close(shared);
                }
                if unprocessed && !retried {
                    retried = true;
                    settle::retry(&shared.recorder);
                    continue;
                }
                if grpc {
                    // The status a gRPC client gives the call, so the calls counted by
                    // status are every call made (the error itself is the iteration's).
                    let code = loadmark_wire::grpc::failed_status(kind, reset, unprocessed);
                    let why = Some(format!("loadmark: {message}"));
                    let mut recorder = shared.recorder.borrow_mut();
                    recorder.record_grpc_unanswered(Instant::now(), code, why);
                }
                return Err((kind, message));
            }
        }
    }
}

/// Polls the connection until its one open stream ends. Dropped mid-way (the run's hard
/// stop), the stream counts as in flight and the connection's bytes go to the totals.
async fn answer<S, T>(conn: &mut H2Conn<S, ()>, shared: &Shared<T>) -> Event<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Inbound + Unpin,
    T: Transport,
{
    let mut turn = Turn {
        conn,
        in_flight: &shared.in_flight,
        recorder: &shared.recorder,
        done: false,
    };
    let mut events = Vec::with_capacity(1);
    loop {
        poll_fn(|cx| turn.conn.poll(cx, &mut events)).await;
        if let Some(event) = events.pop() {
            // The ACKs and window updates the answer's read called for go out now: the
            // user may think before its next request (a write failing here fails no
            // stream, the one open just ended; the next request sees the connection over).
            let mut none = Vec::new();
            poll_fn(|cx| {
                turn.conn.poll_flush(cx, &mut none);
                std::task::Poll::Ready(())
            })
            .await;
            count_bytes(turn.conn, turn.recorder, false);
            turn.done = true;
            return event;
        }
        count_bytes(turn.conn, turn.recorder, false);
        if turn.conn.is_over() {
            // Ended without a word for the stream: cannot happen while one is open, but a
            // loop that waits on a dead connection must not spin.
            turn.done = true;
            let (kind, message) = turn.conn.why_over().unwrap_or((
                ErrorKind::Protocol,
                "the HTTP/2 connection ended before it answered".into(),
            ));
            return Event::Failed {
                tag: (),
                failure: Failure {
                    kind,
                    message,
                    unprocessed: false,
                    connection_over: true,
                    reset: None,
                },
            };
        }
    }
}

struct Turn<'a, S> {
    conn: &'a mut H2Conn<S, ()>,
    in_flight: &'a Cell<u64>,
    recorder: &'a RefCell<Recorder>,
    done: bool,
}

impl<S> Drop for Turn<'_, S> {
    fn drop(&mut self) {
        if !self.done {
            self.in_flight
                .set(self.in_flight.get() + self.conn.active() as u64);
            count_bytes(self.conn, self.recorder, true);
        }
    }
}

/// Adds the connection's bytes that no response carries to the run's totals.
fn count_bytes<S>(conn: &mut H2Conn<S, ()>, recorder: &RefCell<Recorder>, closing: bool) {
    let (read, written) = conn.unattributed(closing);
    if read > 0 || written > 0 {
        if let Ok(mut recorder) = recorder.try_borrow_mut() {
            recorder.record_bytes(Instant::now(), read, written);
        }
    }
}

/// A step's request prepared for HTTP/2 once, when nothing in it changes.
pub(super) fn prepare_fixed(bytes: &[u8], scheme: &str) -> Option<Arc<Prepared>> {
    prepare(bytes, scheme).ok().map(Arc::new)
}
