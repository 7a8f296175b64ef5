//! HTTP/1.1 pipelining (`--pipeline P`), as wrk's pipeline script and the TechEmpower
//! plaintext test drive it: each connection writes P requests in one write, reads the P
//! responses in order, then writes the next P. Its own executor, so the one-request-at-a-time
//! path in [`crate::connection`] has no branch for it.
//!
//! Each response's latency runs from the write that carried its request (the whole batch
//! goes out in that one write) to its last byte. A connection that ends before answering the
//! whole batch (closed by the server, `Connection: close` on an earlier response) leaves the
//! rest unanswered: idempotent ones are sent once more on a new connection and counted as
//! retries; the others, and a second failure, are errors.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use loadmark_metrics::{ErrorKind, Sample};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::closed::Budget;
use crate::connection::Shared;
use crate::http1::{Feed, Limits, ResponseParser};
use crate::source::Picked;
use crate::transport::{classify_io, Transport};

/// A request of the batch: its place in the write buffer and whether it may go again.
#[derive(Clone, Copy)]
struct Job {
    head: bool,
    idempotent: bool,
    retried: bool,
    written: u64,
}

/// Counts the batch's unanswered requests as in flight if the worker stops mid-batch.
struct Outstanding<'a> {
    in_flight: &'a Cell<u64>,
    n: u64,
}

impl Drop for Outstanding<'_> {
    fn drop(&mut self) {
        self.in_flight.set(self.in_flight.get() + self.n);
    }
}

/// One pipelined connection slot of a closed loop, until the budget or the deadline.
pub(crate) async fn pipeline_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    budget: Arc<Budget>,
    depth: usize,
    deadline: Option<Instant>,
) {
    let mut retry: Vec<Job> = Vec::new();
    let mut out = Vec::new();
    let mut rendered = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut parser = ResponseParser::new(Limits::default());
    'connections: loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return;
        }
        let t0 = Instant::now();
        let mut stream = match shared.transport.connect().await {
            Ok(s) => s,
            Err(e) => {
                // As over one request at a time: the connect failure is a request's error.
                if retry.pop().is_some() || budget.claim() {
                    error(&shared, e.kind, &e.message);
                    tokio::task::consume_budget().await;
                    continue;
                }
                return;
            }
        };
        let now = Instant::now();
        shared
            .recorder
            .borrow_mut()
            .record_connection(now, now - t0);
        let mut carried = crate::carried::Tally::default();
        loop {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return;
            }
            // The batch: requests to send again first, then new ones from the budget.
            let mut jobs: Vec<Job> = std::mem::take(&mut retry);
            out.clear();
            // A retried request is picked from the source again: the same request for a
            // single one, possibly another of a mix.
            for job in &mut jobs {
                (job.written, job.head, job.idempotent) = append(&shared, &mut out, &mut rendered);
            }
            while jobs.len() < depth && budget.claim() {
                let (written, head, idempotent) = append(&shared, &mut out, &mut rendered);
                jobs.push(Job {
                    head,
                    idempotent,
                    retried: false,
                    written,
                });
            }
            if jobs.is_empty() {
                return;
            }
            let mut outstanding = Outstanding {
                in_flight: &shared.in_flight,
                n: jobs.len() as u64,
            };
            let started = Instant::now();
            let timeout_at = started + shared.timeout;
            if let Err(e) = stream.write_all(&out).await {
                outstanding.n = 0;
                for _ in &jobs {
                    error(
                        &shared,
                        classify_io(&e, ErrorKind::Write),
                        &format!("write: {e}"),
                    );
                }
                continue 'connections;
            }
            // Responses in order, each parsed from where the previous one ended; `buf`
            // holds the bytes read and not yet parsed at `pos..filled`.
            let mut answered = 0;
            let (mut filled, mut pos, mut need_read) = (0usize, 0usize, true);
            let mut first_byte = None;
            parser.reset(jobs[0].head);
            let ended_early: Option<(ErrorKind, String)> = loop {
                if need_read {
                    if filled == buf.len() {
                        buf.resize(buf.len() * 2, 0);
                    }
                    let read =
                        tokio::time::timeout_at(timeout_at.into(), stream.read(&mut buf[filled..]));
                    match read.await {
                        Err(_) => {
                            break Some((
                                ErrorKind::Timeout,
                                format!(
                                    "no complete response within {:?} (--timeout)",
                                    shared.timeout
                                ),
                            ))
                        }
                        Ok(Ok(0)) => {
                            break Some((
                                ErrorKind::Closed,
                                format!(
                                    "the server closed the connection with {} of {} pipelined \
                                     requests unanswered",
                                    jobs.len() - answered,
                                    jobs.len()
                                ),
                            ))
                        }
                        Ok(Ok(n)) => filled += n,
                        Ok(Err(e)) => {
                            break Some((classify_io(&e, ErrorKind::Read), format!("read: {e}")))
                        }
                    }
                    need_read = false;
                }
                let at = Instant::now();
                let first = *first_byte.get_or_insert(at);
                match parser.feed(&buf[pos..filled]) {
                    Ok(Feed::NeedMore { consumed }) => {
                        // Keep the unparsed tail (a partial head or framing line) in front.
                        pos += consumed;
                        buf.copy_within(pos..filled, 0);
                        filled -= pos;
                        pos = 0;
                        need_read = true;
                    }
                    Ok(Feed::Done { consumed, response }) => {
                        pos += consumed;
                        shared.recorder.borrow_mut().record(&Sample {
                            scheduled: None,
                            started,
                            first_byte: first,
                            ended: at,
                            status: response.status,
                            bytes_read: response.head_bytes + response.body_bytes,
                            bytes_written: jobs[answered].written,
                        });
                        answered += 1;
                        carried.0 += 1;
                        outstanding.n -= 1;
                        if !response.keep_alive {
                            // Nothing more comes on this connection (none unanswered: a
                            // plain reconnect).
                            break Some((
                                ErrorKind::Closed,
                                format!(
                                    "the server closed the connection (Connection: close) with \
                                     {} of {} pipelined requests unanswered",
                                    jobs.len() - answered,
                                    jobs.len()
                                ),
                            ));
                        }
                        if answered == jobs.len() {
                            break None;
                        }
                        // The next response starts in this read's bytes, or in the next read.
                        if pos == filled {
                            (pos, filled, need_read) = (0, 0, true);
                            first_byte = None;
                        } else {
                            first_byte = Some(at);
                        }
                        parser.reset(jobs[answered].head);
                    }
                    Err(e) => break Some((ErrorKind::Protocol, e.to_string())),
                }
            };
            outstanding.n = 0;
            let Some((kind, message)) = ended_early else {
                continue;
            };
            // Whatever was not answered: once more on a new connection if it may be, else
            // an error. A timed-out request is not sent again (the server may be working).
            for job in &jobs[answered..] {
                if job.idempotent && !job.retried && kind != ErrorKind::Timeout {
                    shared.recorder.borrow_mut().record_retry(Instant::now());
                    retry.push(Job {
                        retried: true,
                        ..*job
                    });
                } else {
                    error(&shared, kind, &message);
                }
            }
            continue 'connections;
        }
    }
}

/// Appends the next request to the batch; its length, whether it is HEAD, and idempotent.
fn append<T: Transport>(
    shared: &Shared<T>,
    out: &mut Vec<u8>,
    rendered: &mut Vec<u8>,
) -> (u64, bool, bool) {
    let meta = match shared.source.next(None, rendered) {
        Picked::Fixed(bytes, meta) => {
            out.extend_from_slice(bytes);
            (bytes.len() as u64, meta)
        }
        Picked::Rendered(meta) => {
            out.extend_from_slice(rendered);
            (rendered.len() as u64, meta)
        }
        // Scripts are refused with --pipeline when the plan is validated.
        Picked::Failed(message) => unreachable!("a script with --pipeline: {message}"),
    };
    (meta.0, meta.1.head, meta.1.idempotent)
}

fn error<T: Transport>(shared: &Shared<T>, kind: ErrorKind, message: &str) {
    shared
        .recorder
        .borrow_mut()
        .record_error(kind, Instant::now(), &message);
}
