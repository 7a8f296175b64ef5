//! HTTP/1.1 pipelining in an open loop (`--pipeline P -R RATE`): requests are due on the same
//! schedule as one at a time ([`crate::open`]), and each due request is written at once on the
//! connection of the worker's pool with the fewest unanswered (connections are opened up front
//! as for HTTP/1.1), behind the ones already on it, up to P. The pool grows on demand up to the
//! cap of connections; a request due when every connection holds P and the cap is reached is
//! dropped and counted, as over HTTP/1.1 and HTTP/2.
//!
//! Latency counts from the intended time, so a response held up behind an earlier one on its
//! connection (head-of-line blocking, which pipelining has) shows in every request that waited.
//! Requests due together go out in one write. A connection that ends with requests unanswered
//! sends the idempotent ones once more on a new connection (counted as retries); the others,
//! and every request behind a timed-out one, are errors.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadmark_metrics::{ErrorKind, Sample};
use loadmark_plan::Profile;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::task::JoinSet;

use super::{append, count_unanswered, error, timed_out, InOrder, Next};
use crate::connection::{Connection, Shared};
use crate::open::{Schedule, Share};
use crate::transport::{classify_io, Transport};

/// A request handed to a connection: when it was due and its number in the schedule.
#[derive(Clone, Copy)]
struct Due {
    due: Instant,
    k: u64,
    /// Already sent once on a connection that ended before answering it.
    retried: bool,
}

/// A request written and not yet answered.
struct Written {
    due: Due,
    started: Instant,
    bytes: u64,
    head: bool,
    idempotent: bool,
}

/// One pipelined connection of the pool, with its task.
struct Conn {
    /// Requests handed over and not yet written.
    queue: RefCell<VecDeque<Due>>,
    /// Requests handed over and not yet answered (queued or written).
    busy: Cell<usize>,
    /// Requests are waiting in `queue`, or the schedule ended.
    wake: Notify,
}

struct Pool {
    conns: RefCell<Vec<Rc<Conn>>>,
    max_connections: usize,
    depth: usize,
    /// The schedule has no more requests: connections end once theirs are answered.
    done: Cell<bool>,
}

impl Conn {
    fn new() -> Rc<Conn> {
        Rc::new(Conn {
            queue: RefCell::new(VecDeque::new()),
            busy: Cell::new(0),
            wake: Notify::new(),
        })
    }
}

impl Pool {
    /// Hands `due` to the open connection with the fewest unanswered, if one has room, else
    /// to a new one if the cap allows (true: start its task); None when every connection is
    /// full, or when `may_grow` is false and a new one would be needed. So requests spread
    /// over the connections and queue behind others only when every connection carries some:
    /// pipelining adds depth, not waiting.
    fn hand(&self, due: Due, may_grow: bool) -> Option<(Rc<Conn>, bool)> {
        let mut conns = self.conns.borrow_mut();
        let mut least: Option<&Rc<Conn>> = None;
        for c in conns.iter() {
            if least.is_none_or(|l| c.busy.get() < l.busy.get()) {
                least = Some(c);
                if c.busy.get() == 0 {
                    break;
                }
            }
        }
        let (conn, new) = match least {
            Some(c) if c.busy.get() < self.depth => (c.clone(), false),
            _ if may_grow && conns.len() < self.max_connections => {
                let c = Conn::new();
                conns.push(c.clone());
                (c, true)
            }
            _ => return None,
        };
        conn.queue.borrow_mut().push_back(due);
        conn.busy.set(conn.busy.get() + 1);
        Some((conn, new))
    }
}

/// Sends this worker's share of the schedule, pipelined `depth` deep, then waits for its
/// requests to end (each is bounded by the request timeout).
pub(crate) async fn schedule_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    profile: Arc<Profile>,
    origin: Instant,
    share: Share,
    max_connections: usize,
    depth: usize,
    preopened: Vec<(Connection<T::Stream>, Duration)>,
) {
    let pool = Rc::new(Pool {
        conns: RefCell::new(Vec::new()),
        max_connections: max_connections.max(1),
        depth: depth.max(1),
        done: Cell::new(false),
    });
    let mut tasks = JoinSet::new();
    for (mut opened, _) in preopened {
        let conn = Conn::new();
        pool.conns.borrow_mut().push(conn.clone());
        let stream = opened.take_stream();
        tasks.spawn_local(connection(shared.clone(), pool.clone(), conn, stream));
    }
    let mut schedule = Schedule::new(profile, origin, share);
    while let Some((k, due)) = schedule.next(&shared.idle_polling).await {
        let request = Due {
            due,
            k,
            retried: false,
        };
        let mut handed = pool.hand(request, false);
        // At the cap no connection can come of it: no round then (see crate::open).
        if handed.is_none() && pool.conns.borrow().len() < pool.max_connections {
            // Every connection full: let the event loop read what has arrived before the
            // pool grows, so it grows for a slow server and not for a late loop
            // (crate::pool).
            tokio::task::yield_now().await;
            handed = pool.hand(request, true);
        }
        match handed {
            Some((conn, true)) => {
                tasks.spawn_local(connection(shared.clone(), pool.clone(), conn, None));
            }
            Some((conn, false)) => conn.wake.notify_one(),
            None => shared.recorder.borrow_mut().record_dropped(due, 1),
        }
    }
    pool.done.set(true);
    for conn in pool.conns.borrow().iter() {
        conn.wake.notify_one();
    }
    while tasks.join_next().await.is_some() {}
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
/// ends), writes what is queued, reads the responses in order, until the schedule ended and
/// nothing is left.
async fn connection<T: Transport>(
    shared: Rc<Shared<T>>,
    pool: Rc<Pool>,
    conn: Rc<Conn>,
    mut preopened: Option<T::Stream>,
) {
    let mut out = Vec::new();
    let mut rendered = Vec::new();
    let mut responses = InOrder::new();
    let answered = |n: usize| conn.busy.set(conn.busy.get() - n);
    loop {
        if conn.queue.borrow().is_empty() {
            if pool.done.get() {
                return;
            }
            conn.wake.notified().await;
            continue;
        }
        let t0 = Instant::now();
        let connected = match preopened.take() {
            // Counted by the worker when it opened it.
            Some(stream) => Ok((stream, false)),
            None => shared.transport.connect().await.map(|s| (s, true)),
        };
        let mut stream = match connected {
            Ok((s, false)) => s,
            Ok((s, true)) => {
                let now = Instant::now();
                shared
                    .recorder
                    .borrow_mut()
                    .record_connection(now, now - t0);
                s
            }
            Err(e) => {
                // As one request at a time: the connect failure is the request's error, and
                // the next one tries again.
                conn.queue.borrow_mut().pop_front();
                answered(1);
                error(&shared, e.kind, &e.message);
                tokio::task::consume_budget().await;
                continue;
            }
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
            // Write everything queued, in one write.
            if !conn.queue.borrow().is_empty() {
                out.clear();
                let started = Instant::now();
                let first = flight.requests.len();
                while let Some(due) = conn.queue.borrow_mut().pop_front() {
                    let (bytes, head, idempotent) =
                        append(&shared, Some(due.k), &mut out, &mut rendered);
                    flight.requests.push_back(Written {
                        due,
                        started,
                        bytes,
                        head,
                        idempotent,
                    });
                }
                if first == 0 {
                    responses.expect(flight.requests[0].head);
                }
                if let Err(e) = stream.write_all(&out).await {
                    break (classify_io(&e, ErrorKind::Write), format!("write: {e}"));
                }
                written_unanswered += out.len() as u64;
            }
            let Some(oldest) = flight.requests.front() else {
                // Nothing unanswered: wait for the next request, or the end.
                if pool.done.get() && conn.queue.borrow().is_empty() {
                    return;
                }
                conn.wake.notified().await;
                continue;
            };
            let timeout_at = oldest.due.due.max(oldest.started) + shared.timeout;
            // Read the next response, unless requests come to be written first.
            let at = Instant::now();
            match responses.next(at) {
                Ok(Next::Response(response, first_byte)) => {
                    let request = flight.requests.pop_front().expect("a request answered");
                    answered(1);
                    carried.0 += 1;
                    written_unanswered -= request.bytes;
                    shared.recorder.borrow_mut().record(&Sample {
                        scheduled: Some(request.due.due),
                        started: request.started,
                        first_byte,
                        ended: at,
                        status: response.status,
                        bytes_read: response.head_bytes + response.body_bytes,
                        bytes_written: request.bytes,
                    });
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
                        () = conn.wake.notified() => {}
                    }
                }
                Err(e) => break 'connection (ErrorKind::Protocol, e.to_string()),
            }
        };
        // The unanswered: once more on the new connection, ahead of the queue, if they may
        // be; else errors. Requests behind a timed-out one are not sent again (the server
        // may be working on them).
        let (kind, message) = ended;
        count_unanswered(&shared, responses.take_unanswered(), written_unanswered);
        let unanswered = std::mem::take(&mut flight.requests);
        let mut queue = conn.queue.borrow_mut();
        for request in unanswered.into_iter().rev() {
            if request.idempotent && !request.due.retried && kind != ErrorKind::Timeout {
                shared.recorder.borrow_mut().record_retry(Instant::now());
                queue.push_front(Due {
                    retried: true,
                    ..request.due
                });
            } else {
                answered(1);
                error(&shared, kind, &message);
            }
        }
        drop(queue);
        drop(carried);
    }
}
