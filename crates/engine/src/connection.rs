//! One connection and one request on it: connect when needed, write, read one response,
//! classify, record. Every executor (closed loop, open loop) drives requests through here, so
//! counting and classification have exactly one implementation.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use loadmark_metrics::{ErrorKind, Recorder, Sample};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::http1::{Feed, Limits, ParseError, ResponseParser};
use crate::transport::{classify_io, Transport};

/// First size of a connection's read buffer; it grows only for heads larger than this.
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// What the connections of one worker share (single-threaded, so `Cell`/`RefCell`).
pub(crate) struct Shared<T: Transport> {
    pub transport: T,
    pub request: Box<[u8]>,
    pub head_request: bool,
    pub timeout: Duration,
    pub recorder: RefCell<Recorder>,
    /// Requests begun and not yet ended; what remains when the worker stops is "in flight".
    pub in_flight: Cell<u64>,
}

/// A connection slot: the stream if open, its reusable buffer and parser.
pub(crate) struct Connection<S> {
    stream: Option<S>,
    buf: Vec<u8>,
    parser: ResponseParser,
}

impl<S> Connection<S> {
    pub(crate) fn new() -> Self {
        Connection {
            stream: None,
            buf: vec![0u8; READ_BUFFER_BYTES],
            parser: ResponseParser::new(Limits::default()),
        }
    }
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

/// Performs one request on `conn`, opening it first if needed, and records the outcome.
///
/// `scheduled` is the intended send time of an open-loop request (latency is measured from
/// it); `None` in a closed loop, where latency starts at the first byte written. The request
/// counts as in flight from the call until its outcome is recorded. Returns when it ended.
pub(crate) async fn perform<T: Transport>(
    shared: &Shared<T>,
    conn: &mut Connection<T::Stream>,
    scheduled: Option<Instant>,
) -> Instant {
    shared.in_flight.set(shared.in_flight.get() + 1);
    let stream = match conn.stream {
        Some(ref mut s) => s,
        None => {
            let t0 = Instant::now();
            let result = shared.transport.connect().await;
            let now = Instant::now();
            match result {
                Ok(s) => {
                    shared
                        .recorder
                        .borrow_mut()
                        .record_connection(now, now - t0);
                    conn.stream.insert(s)
                }
                Err(e) => {
                    shared.in_flight.set(shared.in_flight.get() - 1);
                    shared
                        .recorder
                        .borrow_mut()
                        .record_error(e.kind, now, &e.message);
                    return now;
                }
            }
        }
    };
    let started = Instant::now();
    let outcome = tokio::time::timeout_at(
        (scheduled.unwrap_or(started).max(started - shared.timeout) + shared.timeout).into(),
        exchange(
            stream,
            &shared.request,
            &mut conn.buf,
            &mut conn.parser,
            shared.head_request,
        ),
    )
    .await;
    let now = Instant::now();
    shared.in_flight.set(shared.in_flight.get() - 1);
    let mut recorder = shared.recorder.borrow_mut();
    match outcome {
        Ok(Ok(ex)) => {
            recorder.record(&Sample {
                scheduled,
                started,
                first_byte: ex.first_byte,
                ended: now,
                status: ex.status,
                bytes_read: ex.bytes_read,
                bytes_written: shared.request.len() as u64,
            });
            if !ex.reusable {
                conn.stream = None;
            }
        }
        Ok(Err(f)) => {
            recorder.record_error(f.kind, now, &f.message);
            conn.stream = None;
        }
        Err(_) => {
            let message = format!(
                "no complete response within {:?} (--timeout); {} bytes received",
                shared.timeout,
                conn.parser.received()
            );
            recorder.record_error(ErrorKind::Timeout, now, &message);
            conn.stream = None;
        }
    }
    now
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
    parser.reset(head_request);
    stream
        .write_all(request)
        .await
        .map_err(|e| io_failure(ErrorKind::Write, "write request", e))?;
    // A no-op for TCP; TLS streams hold the record until flushed.
    stream
        .flush()
        .await
        .map_err(|e| io_failure(ErrorKind::Write, "write request", e))?;
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

fn parse_failure(e: ParseError) -> Failure {
    Failure {
        kind: if e.is_eof() {
            ErrorKind::Read
        } else {
            ErrorKind::Protocol
        },
        message: e.to_string(),
    }
}
