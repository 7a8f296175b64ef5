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
use std::time::Instant;

pub(crate) mod open;

use loadmark_metrics::{ErrorKind, Sample};
use loadmark_wire::http1::{Feed, Limits, ParseError, Response, ResponseParser};
use tokio::io::AsyncWriteExt;

use crate::closed::{ClosedDriver, Until};
use crate::connection::{count_unanswered, Shared};
use crate::settle;
use crate::source::Picked;
use crate::transport::{classify_io, Inbound, Transport};

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

/// Pipelining's closed loop: each slot a connection writing `depth` at a time.
impl<T: Transport> ClosedDriver<T> for open::Pipelined {
    fn waiting_per_slot(&self) -> Option<usize> {
        Some(self.depth)
    }

    fn run_slot(
        self: &Rc<Self>,
        shared: Rc<Shared<T>>,
        until: Until,
        _seed: u64,
    ) -> impl std::future::Future<Output = ()> + 'static {
        pipeline_loop(shared, self.depth, until)
    }
}

/// One pipelined connection slot of a closed loop, until the budget, the deadline or (in a
/// ramp) its retirement.
async fn pipeline_loop<T: Transport>(shared: Rc<Shared<T>>, depth: usize, until: Until) {
    let budget = &until.budget;
    let mut retry: Vec<Job> = Vec::new();
    let mut out = Vec::new();
    let mut rendered = Vec::new();
    let mut responses = InOrder::new();
    let mut jobs: Vec<Job> = Vec::with_capacity(depth);
    // The request timeout, registered once per slot and moved only when it fires before the
    // current batch's deadline (deadlines only grow), so a read costs no timer registration.
    let far = Instant::now() + std::time::Duration::from_secs(100 * 365 * 24 * 3600);
    let mut timer = Box::pin(tokio::time::sleep_until(far.into()));
    'connections: loop {
        if until.reached(Instant::now()) {
            return;
        }
        let t0 = Instant::now();
        let mut stream = match shared.transport.connect().await {
            Ok(s) => s,
            Err(e) => {
                // As over one request at a time: the connect failure is a request's error.
                if retry.pop().is_some() || budget.claim() {
                    settle::failure(&shared.recorder, e.kind, &e.message);
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
            if until.reached(Instant::now()) {
                return;
            }
            // The batch: requests to send again first, then new ones from the budget.
            jobs.clear();
            jobs.append(&mut retry);
            out.clear();
            // A retried request is picked from the source again: the same request for a
            // single one, possibly another of a mix.
            for job in &mut jobs {
                (job.written, job.head, job.idempotent) =
                    append(&shared, None, &mut out, &mut rendered);
            }
            while jobs.len() < depth && budget.claim() {
                let (written, head, idempotent) = append(&shared, None, &mut out, &mut rendered);
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
                    settle::failure(
                        &shared.recorder,
                        classify_io(&e, ErrorKind::Write),
                        &format!("write: {e}"),
                    );
                }
                continue 'connections;
            }
            let (answered, ended_early) = read_batch(
                &shared,
                &mut stream,
                (&mut responses, &mut timer),
                &jobs,
                (started, timeout_at),
                (&mut carried, &mut outstanding),
            )
            .await;
            outstanding.n = 0;
            // What crossed the connection without a response to carry it: requests written
            // and not answered, and bytes read past the last answer (a partial response).
            let unanswered_written: u64 = jobs[answered..].iter().map(|j| j.written).sum();
            count_unanswered(&shared, responses.take_unanswered(), unanswered_written);
            let Some((kind, message)) = ended_early else {
                continue;
            };
            give_back(&shared, &jobs[answered..], (kind, &message), &mut retry);
            continue 'connections;
        }
    }
}

/// The batch's responses, in order, each parsed from where the previous one ended (bytes
/// past the last one of a batch answer nothing and are dropped with the batch): how many
/// were answered, and why the connection ended before the last one if it did.
async fn read_batch<T: Transport>(
    shared: &Shared<T>,
    stream: &mut T::Stream,
    (responses, timer): (&mut InOrder, &mut std::pin::Pin<Box<tokio::time::Sleep>>),
    jobs: &[Job],
    (started, timeout_at): (Instant, Instant),
    (carried, outstanding): (&mut crate::carried::Tally, &mut Outstanding<'_>),
) -> (usize, Option<(ErrorKind, String)>) {
    let mut answered = 0;
    responses.clear();
    responses.expect(jobs[0].head);
    let unanswered = |answered: usize| {
        format!(
            "{} of {} pipelined requests unanswered",
            jobs.len() - answered,
            jobs.len()
        )
    };
    // When the bytes being parsed arrived: the kernel's stamp where it gives one, so a
    // response read late (the worker napping, `crate::linger`) keeps its latency.
    let mut at = Instant::now();
    loop {
        let (response, first) = match responses.next(at) {
            Ok(Next::Response(response, first)) => (response, first),
            Ok(Next::NeedRead) => {
                match read_before(stream, responses.space(), timer, timeout_at).await {
                    Err(_) => return (answered, Some(timed_out(shared))),
                    Ok(Ok(0)) => {
                        let why = format!(
                            "the server closed the connection with {}",
                            unanswered(answered)
                        );
                        return (answered, Some((ErrorKind::Closed, why)));
                    }
                    Ok(Ok(n)) => {
                        responses.filled(n);
                        at = stream.arrival().unwrap_or_else(Instant::now);
                    }
                    Ok(Err(e)) => {
                        let kind = classify_io(&e, ErrorKind::Read);
                        return (answered, Some((kind, format!("read: {e}"))));
                    }
                }
                continue;
            }
            Err(e) => return (answered, Some((ErrorKind::Protocol, e.to_string()))),
        };
        let sample = Sample {
            scheduled: None,
            started,
            first_byte: first,
            ended: at,
            status: response.status,
            bytes_read: response.head_bytes + response.body_bytes,
            bytes_written: jobs[answered].written,
        };
        settle::response(&shared.recorder, &sample);
        answered += 1;
        carried.0 += 1;
        shared.activity.request_ended(stream.arrival().is_some());
        outstanding.n -= 1;
        if !response.keep_alive {
            // Nothing more comes on this connection (none unanswered: a plain reconnect).
            let why = format!(
                "the server closed the connection (Connection: close) with {}",
                unanswered(answered)
            );
            return (answered, Some((ErrorKind::Closed, why)));
        }
        if answered == jobs.len() {
            return (answered, None);
        }
        responses.expect(jobs[answered].head);
    }
}

/// Requests a connection ended without answering: once more on a new connection if they
/// may be, else an error each. A timed-out request is not sent again (the server may be
/// working on it).
fn give_back<T: Transport>(
    shared: &Shared<T>,
    unanswered: &[Job],
    (kind, message): (ErrorKind, &str),
    retry: &mut Vec<Job>,
) {
    for job in unanswered {
        if job.idempotent && !job.retried && kind != ErrorKind::Timeout {
            settle::retry(&shared.recorder);
            retry.push(Job {
                retried: true,
                ..*job
            });
        } else {
            settle::failure(&shared.recorder, kind, &message);
        }
    }
}

/// Reads into `buf`, or gives up at `deadline` (`Err(())`) on `timer`, which is moved to the
/// deadline when it is set later, and otherwise only when it fires before it.
async fn read_before<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut [u8],
    timer: &mut std::pin::Pin<Box<tokio::time::Sleep>>,
    deadline: Instant,
) -> Result<std::io::Result<usize>, ()> {
    use std::future::Future;
    use std::task::Poll;
    if timer.deadline().into_std() > deadline {
        timer.as_mut().reset(deadline.into());
    }
    let mut buf = tokio::io::ReadBuf::new(buf);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(r) = std::pin::Pin::new(&mut *stream).poll_read(cx, &mut buf) {
            return Poll::Ready(Ok(r.map(|()| buf.filled().len())));
        }
        while timer.as_mut().poll(cx).is_ready() {
            if Instant::now() >= deadline {
                return Poll::Ready(Err(()));
            }
            timer.as_mut().reset(deadline.into());
        }
        Poll::Pending
    })
    .await
}

/// Responses read in order from one connection: the bytes read and not yet parsed sit at
/// `pos..filled` of `buf`, so a response may start in the read that ended the one before.
pub(crate) struct InOrder {
    buf: Vec<u8>,
    filled: usize,
    pos: usize,
    parser: ResponseParser,
    /// When the first byte of the response being parsed was read.
    first_byte: Option<Instant>,
    /// Bytes read that no response returned so far accounts for: a partial response, or
    /// bytes past the last one. They crossed the connection and count in the totals.
    unanswered: u64,
}

pub(crate) enum Next {
    /// A whole response, and when its first byte was read.
    Response(Response, Instant),
    /// The bytes read end inside the next response (or there are none): read more.
    NeedRead,
}

impl InOrder {
    pub(crate) fn new() -> InOrder {
        InOrder {
            buf: vec![0u8; 64 * 1024],
            filled: 0,
            pos: 0,
            parser: ResponseParser::new(Limits::default()),
            first_byte: None,
            unanswered: 0,
        }
    }

    /// A new connection or batch: nothing read yet (what was read and not answered stays
    /// in [`InOrder::take_unanswered`]).
    pub(crate) fn clear(&mut self) {
        (self.filled, self.pos, self.first_byte) = (0, 0, None);
    }

    /// The next response answers a HEAD request or not (its body is framed differently).
    pub(crate) fn expect(&mut self, head: bool) {
        self.parser.reset(head);
    }

    /// Where the next read goes (the buffer doubles when the unparsed bytes fill it).
    pub(crate) fn space(&mut self) -> &mut [u8] {
        if self.filled == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        &mut self.buf[self.filled..]
    }

    /// A read put `n` bytes into [`InOrder::space`].
    pub(crate) fn filled(&mut self, n: usize) {
        self.filled += n;
        self.unanswered += n as u64;
    }

    /// The bytes read that no returned response holds, since the last call.
    pub(crate) fn take_unanswered(&mut self) -> u64 {
        std::mem::take(&mut self.unanswered)
    }

    /// The next response, if the bytes read (last at `at`) hold its end.
    pub(crate) fn next(&mut self, at: Instant) -> Result<Next, ParseError> {
        if self.pos == self.filled {
            return Ok(Next::NeedRead);
        }
        let first = *self.first_byte.get_or_insert(at);
        match self.parser.feed(&self.buf[self.pos..self.filled])? {
            Feed::NeedMore { consumed } => {
                // Keep the unparsed tail (a partial head or framing line) in front.
                self.pos += consumed;
                self.buf.copy_within(self.pos..self.filled, 0);
                self.filled -= self.pos;
                self.pos = 0;
                Ok(Next::NeedRead)
            }
            Feed::Done { consumed, response } => {
                self.pos += consumed;
                // The response's own bytes (framing included) leave the unanswered count.
                self.unanswered -= response.head_bytes + response.body_bytes;
                if self.pos == self.filled {
                    self.clear();
                } else {
                    // The next response starts in this read's bytes.
                    self.first_byte = Some(at);
                }
                Ok(Next::Response(response, first))
            }
        }
    }
}

fn timed_out<T: Transport>(shared: &Shared<T>) -> (ErrorKind, String) {
    (
        ErrorKind::Timeout,
        format!(
            "no complete response within {:?} (--timeout)",
            shared.timeout
        ),
    )
}

/// Appends the next request (number `global` of an open loop's schedule) to the batch; its
/// length, whether it is HEAD, and idempotent.
fn append<T: Transport>(
    shared: &Shared<T>,
    global: Option<u64>,
    out: &mut Vec<u8>,
    rendered: &mut Vec<u8>,
) -> (u64, bool, bool) {
    let meta = match shared.source.next(global, rendered) {
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
