//! One HTTP/1.1 exchange on an open stream: the request written while the response is read,
//! the response parsed as it arrives (in the worker's shared buffer), long bodies dropped
//! unread where the stream can, pipelined batches and script or check captures kept, and the
//! response's arrival taken from the kernel where it stamps ([`Inbound::arrival`]). What the
//! exchange means for the request (retry, close, record) is [`crate::connection`]'s job.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use loadmark_metrics::ErrorKind;
use loadmark_wire::http1::{Feed, Limits, ParseError, Response, ResponseParser};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::source::RequestSource;
use crate::transport::{classify_io, Inbound};

/// Size of a worker's receive buffer, shared by all its connections: every read lands there
/// and is parsed at once, so memory does not grow with the number of connections. It grows
/// only when a partial head kept from an earlier read plus [`MIN_READ_BYTES`] do not fit.
pub(crate) const SCRATCH_BYTES: usize = 64 * 1024;
/// The least room a read is given.
const MIN_READ_BYTES: usize = 16 * 1024;
/// Bodies (or chunks of a chunked body) longer than this are dropped unread where the stream
/// can. It takes two more calls than reading them (a head-sized first read, the drop, then
/// the last byte), which cost about what copying 32 KiB does on loopback: at 10 KiB dropping
/// is no cheaper, at 64 KiB it saves 14-21% of the client's CPU, at 1 MiB 30%
/// (bench/RESULTS.md).
const DISCARD_MIN_BYTES: u64 = 32 * 1024;
/// The receive buffer of one worker, lent to one read at a time. Reads and parsing happen
/// inside a single poll, never across an await, so the borrow cannot overlap another.
pub(crate) struct Scratch(pub(crate) RefCell<Vec<u8>>);

impl Scratch {
    pub(crate) fn new() -> Self {
        Scratch(RefCell::new(Vec::new()))
    }
}

/// What one connection keeps between reads of its responses.
pub(crate) struct Reader {
    /// Bytes read but not yet parsed: the start of a head split across reads (usually empty).
    pub(crate) pending: Vec<u8>,
    pub(crate) parser: ResponseParser,
    /// How much the first read of a response asks for (see [`receive`]); 0: all there is.
    pub(crate) head_hint: usize,
    /// Checks that read headers or the body: the response as received, up to
    /// [`crate::checks::CAPTURE_LIMIT`] (issue 17). Empty otherwise.
    pub(crate) capture: Vec<u8>,
    /// The response did not fit in `capture`.
    pub(crate) overflow: bool,
    /// The last response's end was stamped by the kernel ([`Inbound::arrival`]).
    pub(crate) stamped: bool,
}

impl Reader {
    pub(crate) fn new() -> Self {
        Reader {
            pending: Vec::new(),
            parser: ResponseParser::new(Limits::default()),
            head_hint: 0,
            capture: Vec::new(),
            overflow: false,
            stamped: false,
        }
    }
}

/// A failed exchange, classified.
pub(crate) struct Failure {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
}

pub(crate) struct Exchange {
    pub(crate) first_byte: Instant,
    /// When the last byte was read: `first_byte` itself when the response came in one read.
    pub(crate) ended: Instant,
    pub(crate) status: u16,
    pub(crate) reusable: bool,
}

/// How far one attempt got; readable after a timeout dropped the attempt.
#[derive(Default)]
pub(crate) struct Progress<'a> {
    /// Set once a byte of the request is written (by any attempt).
    pub(crate) on_air: Option<&'a Cell<bool>>,
    pub(crate) written: usize,
    /// The whole request is written and flushed.
    pub(crate) sent: bool,
    /// Writing failed; reading goes on in case the server answered before it reset.
    pub(crate) write_error: Option<io::Error>,
    pub(crate) received: u64,
}

/// Writes what is left of the request, as far as the socket takes it. Ready when the
/// request is written and flushed, or writing failed (kept in `p.write_error`).
fn poll_send<S: AsyncWrite + Unpin>(
    stream: &mut S,
    request: &[u8],
    p: &mut Progress<'_>,
    cx: &mut Context<'_>,
) -> Poll<()> {
    while !p.sent && p.write_error.is_none() {
        let step = if p.written < request.len() {
            match Pin::new(&mut *stream).poll_write(cx, &request[p.written..]) {
                Poll::Ready(Ok(0)) => Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    p.written += n;
                    if let Some(on_air) = p.on_air {
                        on_air.set(true);
                    }
                    Poll::Ready(Ok(()))
                }
                other => other.map_ok(|_| ()),
            }
        } else {
            // A no-op for TCP; TLS streams hold the record until flushed.
            Pin::new(&mut *stream)
                .poll_flush(cx)
                .map_ok(|()| p.sent = true)
        };
        match step {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => p.write_error = Some(e),
        }
    }
    Poll::Ready(())
}

/// What a script adds to an exchange: more than one response to read (pipelined requests),
/// and responses handed to its `response()`.
pub(crate) struct Batch<'a> {
    /// Responses still to read for these request bytes (1: the usual one).
    pub(crate) left: u32,
    /// The requests are HEAD requests (their responses have no body).
    pub(crate) head: bool,
    /// Responses of the batch before the last: status, end, bytes.
    pub(crate) earlier: Vec<(u16, Instant, u64)>,
    /// Every byte read, kept while the script wants responses.
    pub(crate) capture: Option<&'a mut Vec<u8>>,
    pub(crate) source: &'a RequestSource,
    /// The first error of the script's `response()`: the request's outcome.
    pub(crate) script_error: Option<String>,
}

impl Batch<'_> {
    /// A response ended `rest` bytes before the end of what was read: hands its bytes to
    /// the script when it wants them.
    fn ended(&mut self, rest: usize) {
        if let Some(capture) = self.capture.as_deref_mut() {
            let end = capture.len().saturating_sub(rest);
            if let Err(e) = self.source.response(&capture[..end]) {
                self.script_error.get_or_insert(e);
            }
            capture.drain(..end);
        }
    }
}

/// Writes the request and reads one whole response (or a pipelined batch's), counting
/// their bytes.
pub(crate) async fn exchange<S: AsyncRead + AsyncWrite + Inbound + Unpin>(
    stream: &mut S,
    request: &[u8],
    scratch: &Scratch,
    reader: &mut Reader,
    batch: &mut Batch<'_>,
    p: &mut Progress<'_>,
    capture: bool,
) -> Result<Exchange, Failure> {
    reader.parser.reset(batch.head);
    if capture {
        reader.capture.clear();
        reader.overflow = false;
    }
    let result = receive(stream, request, scratch, reader, batch, p, capture).await;
    let write_failure = |p: &Progress<'_>| {
        p.write_error.as_ref().map(|e| Failure {
            kind: classify_io(e, ErrorKind::Write),
            message: format!(
                "write request: {e} ({} of {} bytes written, {} bytes of response received)",
                p.written,
                request.len(),
                p.received
            ),
        })
    };
    match result {
        Ok(received) => {
            let response = received.response;
            if let Some((extra, start)) = received.extra {
                if response.status != 101 {
                    return Err(Failure {
                        kind: ErrorKind::Protocol,
                        message: format!(
                            "{extra} bytes followed a complete {} response (a second \
                             response, or more body than the response announced), starting \
                             {start:?}; connection closed",
                            response.status,
                        ),
                    });
                }
            }
            Ok(Exchange {
                first_byte: received.first_byte,
                ended: received.ended,
                status: response.status,
                reusable: response.keep_alive && p.sent,
            })
        }
        // The server reset while the request was being written: that is the cause, unless
        // what it sent before is itself malformed.
        Err(f) if f.kind != ErrorKind::Protocol => Err(write_failure(p).unwrap_or(f)),
        Err(f) => Err(f),
    }
}

/// One response, read whole.
struct Received {
    response: Response,
    first_byte: Instant,
    ended: Instant,
    /// Bytes that followed the response, and how they start.
    extra: Option<(usize, String)>,
}

/// Reads one response, writing the rest of the request meanwhile: a server may answer before
/// it has read the whole request, and then may stop reading.
///
/// Each read lands in the worker's shared buffer and is parsed in the same poll; only the
/// start of a head split across reads is copied into the connection's [`Reader::pending`]
/// bytes. A read is attempted only when the event loop says the socket is readable (a short
/// read clears that), so a response that arrives whole costs exactly one read.
///
/// A long Content-Length body, or a long chunk's data, is counted and dropped unread where the
/// stream can ([`Inbound`]), so its bytes are never copied into the process.
/// [`Reader::head_hint`] is the head length of the connection's last response when its body
/// was long (else 0): the first read then asks for that much, so the next head (usually as
/// long) is read alone and the body dropped.
async fn receive<S: AsyncRead + AsyncWrite + Inbound + Unpin>(
    stream: &mut S,
    request: &[u8],
    scratch: &Scratch,
    reader: &mut Reader,
    batch: &mut Batch<'_>,
    p: &mut Progress<'_>,
    capture: bool,
) -> Result<Received, Failure> {
    let Reader {
        pending,
        parser,
        head_hint,
        capture: captured,
        overflow,
        stamped,
    } = reader;
    let mut first_byte = None;
    poll_fn(|cx| {
        let _ = poll_send(stream, request, p, cx);
        let mut buf = scratch.0.borrow_mut();
        loop {
            let keep = pending.len();
            // A response that a script or a check reads is never dropped unread.
            let droppable = if S::CAN_DISCARD && keep == 0 && batch.capture.is_none() && !capture {
                parser.body_left().filter(|&left| left > DISCARD_MIN_BYTES)
            } else {
                None
            };
            let drop_body = droppable.is_some();
            let hint = (*head_hint > 0 && keep == 0 && first_byte.is_none()).then_some(*head_hint);
            let polled = poll_read_more(stream, cx, &mut buf, pending, droppable, hint);
            let n = match polled {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => {
                    return Poll::Ready(Err(Failure {
                        kind: classify_io(&e, ErrorKind::Read),
                        message: format!(
                            "read response: {e} ({} bytes of response received)",
                            p.received
                        ),
                    }))
                }
            };
            // When the bytes came: the kernel's stamp where the stream has one (a response
            // that waited in the socket is not charged to the server), else now.
            let arrival = stream.arrival();
            *stamped = arrival.is_some();
            let read_at = || arrival.unwrap_or_else(Instant::now);
            let first_read = first_byte.is_none();
            let first = *first_byte.get_or_insert_with(read_at);
            // A response that came in the read that brought its first byte ended then too
            // (parsing it takes well under a microsecond): one clock read, not two.
            let ended = || if first_read { first } else { read_at() };
            if n == 0 {
                let result = parser.finish_eof();
                if result.is_ok() {
                    batch.ended(0);
                }
                return Poll::Ready(
                    result
                        .map(|response| Received {
                            response,
                            first_byte: first,
                            ended: ended(),
                            extra: None,
                        })
                        .map_err(parse_failure),
                );
            }
            p.received += n as u64;
            if let (false, Some(capture)) = (drop_body, batch.capture.as_deref_mut()) {
                capture.extend_from_slice(&buf[keep..keep + n]);
            }
            let mut done = |response: Response, extra| {
                *head_hint = next_head_hint::<S>(&response);
                Poll::Ready(Ok(Received {
                    response,
                    first_byte: first,
                    ended: ended(),
                    extra,
                }))
            };
            if drop_body {
                match parser.skip_body(n as u64) {
                    Some(response) if batch.left > 1 => {
                        // A pipelined batch: the next response follows.
                        batch.left -= 1;
                        let bytes = response.head_bytes + response.body_bytes;
                        batch.earlier.push((response.status, ended(), bytes));
                        parser.reset(batch.head);
                        continue;
                    }
                    Some(response) => return done(response, None),
                    None => continue,
                }
            }
            let kept = (&mut *captured, &mut *overflow);
            match feed_read(
                parser,
                &buf[..keep + n],
                batch,
                pending,
                capture.then_some(kept),
                ended,
            ) {
                Err(e) => return Poll::Ready(Err(e)),
                Ok(Some((response, extra))) => return done(response, extra),
                Ok(None) => {}
            }
        }
    })
    .await
}

/// Reads more of the response: into the scratch buffer after the bytes kept from an earlier
/// read (`pending`, copied to its start), at most `hint` bytes when the next head's length is
/// known; or, for a long body no one reads (`droppable` bytes left), drops all of it but its
/// last byte unread.
fn poll_read_more<S: AsyncRead + Inbound + Unpin>(
    stream: &mut S,
    cx: &mut std::task::Context<'_>,
    buf: &mut Vec<u8>,
    pending: &[u8],
    droppable: Option<u64>,
    hint: Option<usize>,
) -> Poll<io::Result<usize>> {
    if let Some(left) = droppable {
        // The last byte is read, not dropped: that read also takes any bytes past the body
        // (a protocol error, shown by their start) and tells the event loop the socket is
        // drained, so the next request's idle check costs no syscall.
        return stream.poll_discard(cx, usize::try_from(left - 1).unwrap_or(usize::MAX));
    }
    let keep = pending.len();
    if buf.len() < keep + MIN_READ_BYTES {
        buf.resize((keep + MIN_READ_BYTES).max(SCRATCH_BYTES), 0);
    }
    buf[..keep].copy_from_slice(pending);
    let room = hint.unwrap_or(buf.len() - keep);
    let mut rb = ReadBuf::new(&mut buf[keep..keep + room]);
    Pin::new(&mut *stream)
        .poll_read(cx, &mut rb)
        .map_ok(|()| rb.filled().len())
}

/// A complete response, and the bytes that followed it if any (their count and how they start).
type Complete = (Response, Option<(usize, String)>);

/// Parses `data` (the bytes kept from an earlier read, then the new ones): the batch's last
/// response once it is complete, with the bytes that followed it (a protocol error); `None`
/// when more must be read (what is not parsed yet is kept in `pending`). The responses of a
/// pipelined batch before its last are put in the batch, each ended at `ended()`. `kept`:
/// where the response's bytes go when checks read it.
fn feed_read(
    parser: &mut ResponseParser,
    mut data: &[u8],
    batch: &mut Batch<'_>,
    pending: &mut Vec<u8>,
    mut kept: Option<(&mut Vec<u8>, &mut bool)>,
    ended: impl Fn() -> Instant,
) -> Result<Option<Complete>, Failure> {
    loop {
        match parser.feed(data) {
            Err(e) => return Err(parse_failure(e)),
            Ok(Feed::Done { consumed, response }) => {
                if let Some((captured, overflow)) = kept.as_mut() {
                    keep_bytes(captured, overflow, &data[..consumed]);
                }
                let rest = &data[consumed..];
                batch.ended(rest.len());
                if batch.left > 1 {
                    // A pipelined batch: the next response starts in `rest`, or in a later
                    // read. Checks read the batch's last response.
                    batch.left -= 1;
                    let bytes = response.head_bytes + response.body_bytes;
                    batch.earlier.push((response.status, ended(), bytes));
                    parser.reset(batch.head);
                    if let Some((captured, overflow)) = kept.as_mut() {
                        captured.clear();
                        **overflow = false;
                    }
                    data = rest;
                    if data.is_empty() {
                        pending.clear();
                        return Ok(None);
                    }
                    continue;
                }
                pending.clear();
                let extra = (!rest.is_empty()).then(|| (rest.len(), excerpt(rest)));
                return Ok(Some((response, extra)));
            }
            Ok(Feed::NeedMore { consumed }) => {
                if let Some((captured, overflow)) = kept.as_mut() {
                    keep_bytes(captured, overflow, &data[..consumed]);
                }
                pending.clear();
                pending.extend_from_slice(&data[consumed..]);
                return Ok(None);
            }
        }
    }
}

/// Keeps what the parser consumed when checks read the response (issue 17), up to
/// [`crate::checks::CAPTURE_LIMIT`]; past it, says the response overflowed.
fn keep_bytes(captured: &mut Vec<u8>, overflow: &mut bool, bytes: &[u8]) {
    let room = crate::checks::CAPTURE_LIMIT - captured.len();
    if bytes.len() > room {
        *overflow = true;
    }
    captured.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

/// How much the first read of the connection's next response asks for: the head just read,
/// when its body was long enough to be dropped unread, or everything there is (0).
fn next_head_hint<S: Inbound>(response: &Response) -> usize {
    if S::CAN_DISCARD
        && response.body_bytes > DISCARD_MIN_BYTES
        && response.head_bytes < MIN_READ_BYTES as u64
    {
        response.head_bytes as usize
    } else {
        0
    }
}

pub(crate) fn excerpt(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(40)]).into_owned()
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
