//! The closed-loop executor: each connection sends its next request when the previous one
//! ended (wrk, ab, bombardier). One of these loops runs per connection, as a task on its
//! worker thread's event loop; everything it touches is that thread's own.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use loadmark_metrics::{ErrorKind, Recorder, Sample};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::http1::{Feed, Limits, ResponseParser};
use crate::transport::{classify_io, Transport};

/// First size of a connection's read buffer; it grows only for heads larger than this.
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// How many requests may still start: unlimited (a duration run) or a count shared by every
/// connection of every thread, so `-n N` sends exactly N.
pub(crate) struct Budget {
    remaining: Option<AtomicU64>,
}

impl Budget {
    pub(crate) fn new(count: Option<u64>) -> Self {
        Budget {
            remaining: count.map(AtomicU64::new),
        }
    }

    fn claim(&self) -> bool {
        match &self.remaining {
            None => true,
            Some(n) => n
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
        }
    }
}

/// What the connections of one worker share (single-threaded, so `Cell`/`RefCell`).
pub(crate) struct WorkerCtx<T: Transport> {
    pub transport: T,
    pub request: Rc<[u8]>,
    pub head_request: bool,
    pub timeout: Duration,
    /// When set, no request starts at or after it.
    pub deadline: Option<Instant>,
    pub budget: std::sync::Arc<Budget>,
    pub recorder: RefCell<Recorder>,
    /// Requests begun and not yet ended; what remains when the worker stops is "in flight".
    pub in_flight: Cell<u64>,
}

/// A failed exchange, classified.
struct Failure {
    kind: ErrorKind,
    message: String,
}

struct Exchange {
    first_byte: Instant,
    status: u16,
    bytes_read: u64,
    reusable: bool,
}

/// Runs one connection until the budget or the deadline says stop.
pub(crate) async fn connection_loop<T: Transport>(ctx: Rc<WorkerCtx<T>>) {
    let mut conn: Option<T::Stream> = None;
    let mut buf = vec![0u8; READ_BUFFER_BYTES];
    let mut parser = ResponseParser::new(Limits::default());
    let mut now = Instant::now();
    loop {
        if ctx.deadline.is_some_and(|d| now >= d) || !ctx.budget.claim() {
            return;
        }
        ctx.in_flight.set(ctx.in_flight.get() + 1);
        let stream = match conn {
            Some(ref mut s) => s,
            None => {
                let t0 = Instant::now();
                let result = ctx.transport.connect().await;
                now = Instant::now();
                match result {
                    Ok(s) => {
                        ctx.recorder.borrow_mut().record_connection(now, now - t0);
                        conn.insert(s)
                    }
                    Err(e) => {
                        ctx.in_flight.set(ctx.in_flight.get() - 1);
                        ctx.recorder
                            .borrow_mut()
                            .record_error(e.kind, now, &e.message);
                        continue;
                    }
                }
            }
        };
        let started = Instant::now();
        let outcome = tokio::time::timeout_at(
            (started + ctx.timeout).into(),
            exchange(
                stream,
                &ctx.request,
                &mut buf,
                &mut parser,
                ctx.head_request,
            ),
        )
        .await;
        now = Instant::now();
        ctx.in_flight.set(ctx.in_flight.get() - 1);
        let mut recorder = ctx.recorder.borrow_mut();
        match outcome {
            Ok(Ok(ex)) => {
                recorder.record(&Sample {
                    started,
                    first_byte: ex.first_byte,
                    ended: now,
                    status: ex.status,
                    bytes_read: ex.bytes_read,
                    bytes_written: ctx.request.len() as u64,
                });
                if !ex.reusable {
                    conn = None;
                }
            }
            Ok(Err(f)) => {
                recorder.record_error(f.kind, now, &f.message);
                conn = None;
            }
            Err(_) => {
                let message = format!(
                    "no complete response within {:?} (--timeout); {} bytes received",
                    ctx.timeout,
                    parser.received()
                );
                recorder.record_error(ErrorKind::Timeout, now, &message);
                conn = None;
            }
        }
    }
}

/// Writes the request and reads one whole response, counting its bytes.
async fn exchange<S>(
    stream: &mut S,
    request: &[u8],
    buf: &mut Vec<u8>,
    parser: &mut ResponseParser,
    head_request: bool,
) -> Result<Exchange, Failure>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let io_failure = |step: ErrorKind, what: &str, e: std::io::Error| Failure {
        kind: classify_io(&e, step),
        message: format!("{what}: {e}"),
    };
    stream
        .write_all(request)
        .await
        .map_err(|e| io_failure(ErrorKind::Write, "write request", e))?;
    // A no-op for TCP; TLS streams hold the record until flushed.
    stream
        .flush()
        .await
        .map_err(|e| io_failure(ErrorKind::Write, "write request", e))?;
    parser.reset(head_request);
    let mut first_byte = None;
    let mut filled = 0;
    let mut bytes_read = 0u64;
    loop {
        if filled == buf.len() {
            // Only a head larger than the buffer gets here; the parser caps it.
            buf.resize(buf.len() * 2, 0);
        }
        let n = stream
            .read(&mut buf[filled..])
            .await
            .map_err(|e| io_failure(ErrorKind::Read, "read response", e))?;
        let now = first_byte.get_or_insert_with(Instant::now);
        if n == 0 {
            let response = parser.finish_eof().map_err(parse_failure)?;
            return Ok(Exchange {
                first_byte: *now,
                status: response.status,
                bytes_read,
                reusable: false,
            });
        }
        bytes_read += n as u64;
        let data = &buf[..filled + n];
        match parser.feed(data).map_err(parse_failure)? {
            Feed::Done { consumed, response } => {
                // Bytes past the response answer no request: never reuse that connection.
                let leftover = data.len() - consumed;
                return Ok(Exchange {
                    first_byte: *now,
                    status: response.status,
                    bytes_read,
                    reusable: response.keep_alive && leftover == 0,
                });
            }
            Feed::NeedMore { consumed } => {
                buf.copy_within(consumed..filled + n, 0);
                filled = filled + n - consumed;
            }
        }
    }
}

fn parse_failure(e: crate::http1::ParseError) -> Failure {
    Failure {
        kind: if e.is_eof() {
            ErrorKind::Read
        } else {
            ErrorKind::Protocol
        },
        message: e.to_string(),
    }
}
