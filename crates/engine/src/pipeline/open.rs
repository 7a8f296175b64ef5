//! HTTP/1.1 pipelining's driver in the open loop (`--pipeline P -R RATE`): requests are due on
//! the same schedule as one at a time, in the same pool ([`crate::open`]); a connection
//! carries up to P written and unanswered, and a due request goes to an idle connection
//! before it queues behind others on a busy one (connections are opened up front as for
//! HTTP/1.1). Requests a connection is handed together go out in one write.
//!
//! Latency counts from the intended time, so a response held up behind an earlier one on its
//! connection (head-of-line blocking, which pipelining has) shows in every request that waited.
//! A connection that ends with requests unanswered sends the idempotent ones once more on a
//! new connection (counted as retries); the others, and every request behind a timed-out one,
//! are errors.

use std::cell::Cell;
use std::collections::VecDeque;
use std::time::Instant;

use loadmark_metrics::{ErrorKind, Sample};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{append, timed_out, InOrder, Next};
use crate::connection::count_unanswered;
use crate::connection::Connection;
use crate::open::{Driver, Lane};
use crate::pool::Due;
use crate::settle;
use crate::transport::{classify_io, Transport};

/// HTTP/1.1 pipelining: a connection carries up to `depth` requests written and unanswered.
pub(crate) struct Pipelined {
    pub(crate) depth: usize,
}

impl<T: Transport> Driver<T> for Pipelined {
    fn capacity(&self) -> usize {
        self.depth.max(1)
    }

    fn serve(
        lane: Lane<T, Self>,
        preopened: Option<Connection<T::Stream>>,
    ) -> impl std::future::Future<Output = ()> + 'static {
        connection(lane, preopened.and_then(|mut c| c.take_stream()))
    }
}

/// A request written and not yet answered.
struct Written {
    due: Due,
    started: Instant,
    bytes: u64,
    head: bool,
    idempotent: bool,
}

/// Requests written on the connection and not yet answered, in order; counted in flight if
/// the worker stops before they are answered.
struct InFlight<'a> {
    requests: VecDeque<Written>,
    in_flight: &'a Cell<u64>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let n = self.requests.len() as u64;
        self.in_flight.set(self.in_flight.get() + n);
    }
}

/// One connection's task: opens it (unless it was opened before the start; again after one
/// ends), writes what it is handed, reads the responses in order, until the schedule ended
/// and nothing is left.
async fn connection<T: Transport>(lane: Lane<T, Pipelined>, mut preopened: Option<T::Stream>) {
    let shared = lane.shared().clone();
    let mut out = Vec::new();
    let mut rendered = Vec::new();
    let mut responses = InOrder::new();
    // A request taken up and not yet written: the first of the next connection.
    let mut first: Option<Due> = None;
    loop {
        if first.is_none() {
            match lane.next().await {
                Some(job) => first = Some(job),
                None => return,
            }
        }
        let Some(mut stream) = open_stream(&lane, preopened.take()).await else {
            // As one request at a time: the connect failure is the request's error, and the
            // next one tries again.
            first = None;
            lane.done(Instant::now());
            tokio::task::consume_budget().await;
            continue;
        };
        let mut carried = crate::carried::Tally::default();
        let mut flight = InFlight {
            requests: VecDeque::new(),
            in_flight: &shared.in_flight,
        };
        responses.clear();
        // Bytes of requests written on this connection and not answered yet.
        let mut written_unanswered = 0u64;
        // Why the connection ended, if it did with requests unanswered.
        let ended: (ErrorKind, String) = 'connection: loop {
            // Write everything handed over, in one write.
            let mut next = first.take().or_else(|| lane.try_next());
            if next.is_some() {
                out.clear();
                let now = Instant::now();
                let was_empty = flight.requests.is_empty();
                while let Some(due) = next {
                    let (bytes, head, idempotent) =
                        append(&shared, Some(due.k), &mut out, &mut rendered);
                    flight.requests.push_back(Written {
                        due,
                        started: due.started(now),
                        bytes,
                        head,
                        idempotent,
                    });
                    next = lane.try_next();
                }
                if was_empty {
                    responses.expect(flight.requests[0].head);
                }
                if let Err(e) = stream.write_all(&out).await {
                    break (classify_io(&e, ErrorKind::Write), format!("write: {e}"));
                }
                written_unanswered += out.len() as u64;
            }
            let Some(oldest) = flight.requests.front() else {
                // Nothing unanswered: wait for the next request, or the end.
                match lane.next().await {
                    Some(job) => first = Some(job),
                    None => return,
                }
                continue;
            };
            let timeout_at = oldest.due.due.max(oldest.started) + shared.timeout;
            // Read the next response, unless requests come to be written first.
            let at = Instant::now();
            match responses.next(at) {
                Ok(Next::Response(response, first_byte)) => {
                    let request = flight.requests.pop_front().expect("a request answered");
                    carried.0 += 1;
                    written_unanswered -= request.bytes;
                    settle::response(
                        &shared.recorder,
                        &Sample {
                            scheduled: Some(request.due.due),
                            started: request.started,
                            first_byte,
                            ended: at,
                            status: response.status,
                            bytes_read: response.head_bytes + response.body_bytes,
                            bytes_written: request.bytes,
                        },
                    );
                    lane.done(at);
                    if !response.keep_alive {
                        break 'connection (
                            ErrorKind::Closed,
                            "the server closed the connection (Connection: close) with \
                             pipelined requests unanswered"
                                .to_string(),
                        );
                    }
                    if let Some(next) = flight.requests.front() {
                        responses.expect(next.head);
                    }
                }
                Ok(Next::NeedRead) => {
                    tokio::select! {
                        biased;
                        read = tokio::time::timeout_at(
                            timeout_at.into(),
                            stream.read(responses.space()),
                        ) => match read {
                            Err(_) => break 'connection timed_out(&shared),
                            Ok(Ok(0)) => {
                                break 'connection (
                                    ErrorKind::Closed,
                                    "the server closed the connection with pipelined \
                                     requests unanswered"
                                        .to_string(),
                                )
                            }
                            Ok(Ok(n)) => responses.filled(n),
                            Ok(Err(e)) => {
                                break 'connection (
                                    classify_io(&e, ErrorKind::Read),
                                    format!("read: {e}"),
                                )
                            }
                        },
                        // A read in progress is dropped safely: nothing it read is lost.
                        () = lane.job_waiting() => {}
                    }
                }
                Err(e) => break 'connection (ErrorKind::Protocol, e.to_string()),
            }
        };
        give_back_unanswered(&lane, flight.requests.drain(..), ended);
        count_unanswered(&shared, responses.take_unanswered(), written_unanswered);
        drop(carried);
    }
}

/// The connection, opened before the start or now (counted here; a failure is recorded as
/// the request's error).
async fn open_stream<T: Transport>(
    lane: &Lane<T, Pipelined>,
    preopened: Option<T::Stream>,
) -> Option<T::Stream> {
    // Counted by the worker when it opened it.
    if let Some(stream) = preopened {
        return Some(stream);
    }
    let shared = lane.shared();
    let t0 = Instant::now();
    match shared.transport.connect().await {
        Ok(stream) => {
            let now = Instant::now();
            shared
                .recorder
                .borrow_mut()
                .record_connection(now, now - t0);
            Some(stream)
        }
        Err(e) => {
            settle::failure(&shared.recorder, e.kind, &e.message);
            None
        }
    }
}

/// The requests a connection ended with unanswered: once more on the next connection, ahead
/// of the others, if they may be; else errors. Requests behind a timed-out one are not sent
/// again (the server may be working on them).
fn give_back_unanswered<T: Transport>(
    lane: &Lane<T, Pipelined>,
    unanswered: impl DoubleEndedIterator<Item = Written>,
    (kind, message): (ErrorKind, String),
) {
    let shared = lane.shared();
    for request in unanswered.rev() {
        if request.idempotent && !request.due.retried && kind != ErrorKind::Timeout {
            settle::retry(&shared.recorder);
            lane.requeue(Due {
                retried: true,
                ..request.due
            });
        } else {
            settle::failure(&shared.recorder, kind, &message);
            lane.done(Instant::now());
        }
    }
}
