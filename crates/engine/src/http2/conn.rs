//! One HTTP/2 connection, as the client needs it and no more: streams opened from prepared
//! header blocks, responses counted (status, body bytes, when they arrived), flow control
//! both ways, and every rule a server can break turned into an event that names it.
//!
//! It is driven, not spawned: the loop that owns it opens streams, then polls it for
//! [`Event`]s. A poll writes what is queued, reads what arrived, handles every whole frame in
//! it, and returns the requests that ended. No task per stream, no lock, no waker per
//! request: one read can end many streams, and their next requests go out in one write
//! (what h2load does; the `h2` crate this replaces cost ~3 µs of user CPU per request).
//! What each frame does is `loadmark_wire::http2::state`'s (sans-IO); this file owns the
//! socket, the timers and the handshake's wait.
//!
//! The rules for servers that misbehave, in one place:
//! - **SETTINGS_MAX_CONCURRENT_STREAMS**: the client waits for the server's first SETTINGS
//!   before its first request, and [`H2Conn::can_open`] never exceeds the limit, also when it
//!   is lowered mid-run.
//! - **GOAWAY**: streams above the server's last stream id were not processed: they fail as
//!   `unprocessed` (the caller sends them once more elsewhere); the others may still end.
//! - **RST_STREAM**: the stream fails naming the code; REFUSED_STREAM means unprocessed.
//! - **A frame that breaks RFC 9113 or an undecodable header block**: the client sends
//!   GOAWAY with the code and fails every open stream naming it.
//! - **No WINDOW_UPDATE for an upload, a stalled response**: each stream's deadline ends it
//!   (RST_STREAM CANCEL) as a timeout.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use loadmark_metrics::ErrorKind;
use loadmark_wire::http2::frame::{self, ConnError, FrameReader, Reason};
use loadmark_wire::http2::state::{State, CONNECTION_WINDOW, DEFAULT_WINDOW, STREAM_WINDOW};
use loadmark_wire::http2::Event;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use crate::transport::{classify_io, Inbound};

/// The most output the client queues before it stops reading (see [`H2Conn::poll`]).
const MAX_UNSENT: usize = 1 << 20;
/// The most reads one poll makes.
const MAX_READS_PER_POLL: usize = 32;

/// Why the handshake failed.
#[derive(Debug)]
pub(crate) struct HandshakeError {
    pub kind: ErrorKind,
    pub message: String,
    /// The server answered the preface with something that is not HTTP/2 at all (an
    /// HTTP/1.x response, bytes that are no frame, a close before any byte): what it did,
    /// as "it answered `HTTP/1.1 400 Bad Request`". A server that speaks HTTP/2 but failed
    /// (a timeout, a broken SETTINGS) leaves this `None`.
    pub not_h2: Option<String>,
    /// The bytes read and written on the connection: they count in the run's totals.
    pub bytes: (u64, u64),
}

/// An HTTP/2 connection over any stream (TCP, TLS after ALPN chose h2, a Unix socket).
pub(crate) struct H2Conn<S, T> {
    io: S,
    reader: FrameReader,
    state: State<T>,
    /// The earliest stream deadline it may need to act on; moved only when it fires, so
    /// opening a stream costs no timer registration.
    timer: Pin<Box<Sleep>>,
    timer_at: Option<Instant>,
    /// Bytes read from and written to `io` (above TLS, if any), and how many of them
    /// [`H2Conn::unattributed`] handed over so far.
    wire_read: u64,
    wire_written: u64,
    reported: (u64, u64),
    /// What the server answered instead of HTTP/2 (see [`HandshakeError::not_h2`]).
    not_h2: Option<String>,
}

impl<S, T> H2Conn<S, T> {
    /// Whether the kernel stamped the last read's arrival (then responses' times are the
    /// kernel's, and a late read costs no latency).
    pub(crate) fn stamped(&self) -> bool
    where
        S: Inbound,
    {
        self.io.arrival().is_some()
    }

    /// Streams open now.
    pub(crate) fn active(&self) -> usize {
        self.state.streams.len()
    }

    /// Bytes read from and written to the socket so far.
    #[cfg(test)]
    pub(crate) fn wire(&self) -> (u64, u64) {
        (self.wire_read, self.wire_written)
    }

    /// The bytes this connection moved, read and written, since the last call, that no
    /// response's sample carries: the preface, SETTINGS and their ACKs, PING, WINDOW_UPDATE,
    /// GOAWAY, RST_STREAM for an ended stream, and every frame of a stream that failed.
    /// Responses' samples plus these are every byte that crossed the connection, so the
    /// run's totals are exact. While the connection lives, the frames of open streams wait
    /// for their sample; bytes not yet whole frames wait to be parsed. With `closing` (the
    /// connection is being dropped) everything not in a sample is handed over.
    pub(crate) fn unattributed(&mut self, closing: bool) -> (u64, u64) {
        let s = &self.state;
        let (parsed, open_read, open_written) = if closing {
            (self.wire_read, 0, 0)
        } else {
            let buffered = self.reader.unread().len() as u64;
            (
                self.wire_read.saturating_sub(buffered),
                s.open_read,
                s.open_written,
            )
        };
        // Written bytes are attributed to a stream when queued and counted here when the
        // socket took them: queued ones make this lower for a moment, never higher.
        let due_read = parsed.saturating_sub(s.sampled_read + open_read);
        let due_written = self
            .wire_written
            .saturating_sub(s.sampled_written + open_written);
        let (read, written) = (
            due_read.saturating_sub(self.reported.0),
            due_written.saturating_sub(self.reported.1),
        );
        self.reported.0 = self.reported.0.max(due_read);
        self.reported.1 = self.reported.1.max(due_written);
        (read, written)
    }
}

impl<S, T> H2Conn<S, T>
where
    S: AsyncRead + AsyncWrite + Inbound + Unpin,
{
    /// Sends the preface and the client's SETTINGS, and waits for the server's SETTINGS
    /// (within `timeout`), so the first requests already keep to its stream limit.
    pub(crate) async fn handshake(io: S, timeout: Duration) -> Result<Self, HandshakeError> {
        let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
        let mut conn = H2Conn {
            io,
            reader: FrameReader::new(),
            state: State::new(timeout),
            timer: Box::pin(tokio::time::sleep_until(far.into())),
            timer_at: None,
            wire_read: 0,
            wire_written: 0,
            reported: (0, 0),
            not_h2: None,
        };
        let out = &mut conn.state.out;
        out.extend_from_slice(frame::PREFACE);
        frame::settings(
            out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW as u32),
            ],
        );
        frame::window_update(out, 0, (CONNECTION_WINDOW - DEFAULT_WINDOW) as u32);
        let mut none: Vec<Event<T>> = Vec::new();
        let settled = std::future::poll_fn(|cx| {
            let _ = conn.poll(cx, &mut none);
            if conn.state.settings_seen || conn.state.ended.is_some() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        });
        let (kind, message) = if tokio::time::timeout(timeout, settled).await.is_err() {
            (
                ErrorKind::Timeout,
                format!("HTTP/2 handshake: no SETTINGS from the server within {timeout:?}"),
            )
        } else {
            match conn.state.ended.take() {
                Some((kind, message)) => (kind, format!("HTTP/2 handshake: {message}")),
                None => return Ok(conn),
            }
        };
        // Closed (or reset) before a whole frame came, as an HTTP/1.1-only server may end
        // a connection that opens with the preface.
        if conn.not_h2.is_none()
            && matches!(kind, ErrorKind::Closed | ErrorKind::Read | ErrorKind::Write)
        {
            let how = if kind == ErrorKind::Closed {
                "closed the connection".to_string()
            } else {
                let why = message.trim_start_matches("HTTP/2 handshake: ");
                format!("ended the connection ({why})")
            };
            conn.not_h2 = Some(match conn.reader.unread() {
                [] => format!("it {how} without answering the preface"),
                some => format!("it answered `{}` and {how}", first_line(some)),
            });
        }
        Err(HandshakeError {
            kind,
            message,
            not_h2: conn.not_h2.take(),
            bytes: conn.unattributed(true),
        })
    }

    /// Whether a new stream may open now: the server's limit, its GOAWAY and the stream ids
    /// left allow it.
    pub(crate) fn can_open(&self) -> bool {
        let s = &self.state;
        s.ended.is_none()
            && s.goaway.is_none()
            && s.streams.len() < s.max_streams
            && s.next_id < (1 << 31)
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (`usize::MAX` until it sets one).
    pub(crate) fn server_limit(&self) -> usize {
        self.state.max_streams
    }

    /// Why it can carry no more streams, if it cannot: how it ended, or the server's GOAWAY.
    pub(crate) fn why_over(&self) -> Option<(ErrorKind, String)> {
        let s = &self.state;
        match (&s.ended, s.goaway) {
            (Some(ended), _) => Some(ended.clone()),
            (None, Some(_)) => Some((
                ErrorKind::Protocol,
                format!("GOAWAY {} from the server", s.goaway_reason),
            )),
            (None, None) if s.max_streams == 0 => Some((
                ErrorKind::Protocol,
                "the server allows no stream (SETTINGS_MAX_CONCURRENT_STREAMS 0)".into(),
            )),
            (None, None) => None,
        }
    }

    /// Nothing more will happen on it: it ended, or it can open no stream and has none open.
    pub(crate) fn is_over(&self) -> bool {
        self.state.ended.is_some() || (self.state.streams.is_empty() && !self.can_open())
    }

    /// Opens a stream carrying `block` (an HPACK header block) and `body`, queued for the
    /// next poll's write. Callers check [`H2Conn::can_open`] first.
    pub(crate) fn open(&mut self, block: &[u8], body: &Bytes, tag: T, deadline: Instant) {
        let wake = self.state.open(block, body, tag, deadline);
        self.arm(wake);
    }

    /// [`H2Conn::open`], keeping the response (up to `limit` bytes) for checks and
    /// extractions: [`H2Conn::take_captured`] hands it over after its event.
    pub(crate) fn open_capturing(
        &mut self,
        (block, body): (&[u8], &Bytes),
        tag: T,
        deadline: Instant,
        limit: usize,
    ) {
        let wake = self.state.open_capturing(block, body, tag, deadline, limit);
        self.arm(wake);
    }

    /// The response the last [`H2Conn::open_capturing`] stream kept, once it came whole.
    pub(crate) fn take_captured(&mut self) -> Option<Box<loadmark_wire::http2::state::Capture>> {
        self.state.take_captured()
    }

    /// Makes every stream a gRPC call, reading responses' messages up to `limit` bytes
    /// (`crate::grpc`); `None` leaves plain HTTP/2.
    pub(crate) fn grpc(&mut self, grpc: Option<crate::grpc::Driving>) {
        self.state.grpc = grpc.map(|g| g.limit);
        self.state.streaming = grpc.and_then(|g| g.streaming);
    }

    fn arm(&mut self, deadline: Instant) {
        if self.timer_at.is_none_or(|at| deadline < at) {
            self.timer.as_mut().reset(deadline.into());
            self.timer_at = Some(deadline);
        }
    }

    /// Writes what is queued, reads and handles what arrived, and appends the requests that
    /// ended to `events`. Ready when there are events or the connection ended.
    ///
    /// A poll that returns events leaves the frames it queued (PING and SETTINGS ACKs,
    /// WINDOW_UPDATEs, RST_STREAMs) for the next poll, which writes them first, together
    /// with the streams opened meanwhile: one write per turn instead of two. A caller that
    /// will not poll again soon (a user thinking between requests) calls
    /// [`H2Conn::poll_flush`] first. Pending means everything queued was handed to the
    /// socket (or it is full and will wake the task).
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>, events: &mut Vec<Event<T>>) -> Poll<()> {
        if self.state.ended.is_none() {
            if let Err(e) = self.flush(cx) {
                end_io(&mut self.state, &e, "write", events);
            }
        }
        // Reads stop while the answers they called for (PING and SETTINGS ACKs, window
        // updates) cannot be written: a server that floods PINGs and reads nothing fills its
        // own socket, not this process's memory.
        let mut reads = 0;
        while self.state.ended.is_none() && self.state.out.len() < MAX_UNSENT {
            if reads == MAX_READS_PER_POLL {
                // Reads that end no request (a long body, a stream of PINGs) give the other
                // connections and the timers their turn, and come back at once.
                cx.waker().wake_by_ref();
                break;
            }
            reads += 1;
            let mut buf = ReadBuf::new(self.reader.space());
            match Pin::new(&mut self.io).poll_read(cx, &mut buf) {
                Poll::Pending => break,
                Poll::Ready(Err(e)) => end_io(&mut self.state, &e, "read", events),
                Poll::Ready(Ok(())) => {
                    let n = buf.filled().len();
                    if n == 0 {
                        self.state.end_eof(events);
                        break;
                    }
                    self.wire_read += n as u64;
                    self.reader.filled(n);
                    let at = self.io.arrival().unwrap_or_else(Instant::now);
                    if let Err(e) = self.frames(at, events) {
                        self.state.conn_error(e, events);
                        // The GOAWAY naming the code, if the socket takes it.
                        let _ = self.flush(cx);
                        break;
                    }
                    if !events.is_empty() {
                        // Requests ended: the ACKs and window updates this read called for
                        // wait for the caller's next poll, which writes them in one write
                        // with the streams it opens in the ended ones' place (grpc-go sends
                        // a BDP PING with each answer: its ACK was a write of its own).
                        break;
                    }
                    // ACKs, window updates and body frames the read called for.
                    if let Err(e) = self.flush(cx) {
                        end_io(&mut self.state, &e, "write", events);
                    }
                }
            }
        }
        self.poll_timer(cx, events);
        if self.state.ended.is_none()
            && self.state.out.len() > self.state.out_pos
            && events.is_empty()
        {
            // What the timer queued (paced gRPC messages, RST_STREAMs). With events, it
            // waits for the caller's next poll, as the answers to a read do.
            if let Err(e) = self.flush(cx) {
                end_io(&mut self.state, &e, "write", events);
            }
        }
        if !events.is_empty() || self.state.ended.is_some() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Writes what a poll that returned events left queued (see [`H2Conn::poll`]). Ready
    /// at once: what the socket does not take now, the next poll writes.
    pub(crate) fn poll_flush(&mut self, cx: &mut Context<'_>, events: &mut Vec<Event<T>>) {
        if self.state.ended.is_none() && self.state.out.len() > self.state.out_pos {
            if let Err(e) = self.flush(cx) {
                end_io(&mut self.state, &e, "write", events);
            }
        }
    }

    fn frames(&mut self, at: Instant, events: &mut Vec<Event<T>>) -> Result<(), ConnError> {
        if self.state.settings_seen {
            return self.whole_frames(at, events);
        }
        if self.reader.starts_with(b"HTTP/") {
            self.not_h2 = Some(format!(
                "it answered `{}`",
                first_line(self.reader.unread())
            ));
            return Err(ConnError::new(
                Reason::PROTOCOL_ERROR,
                "it answered in HTTP/1.x: the server does not speak HTTP/2 with prior knowledge",
            ));
        }
        // Before the server's SETTINGS, an error in a first frame that is not SETTINGS means
        // its bytes are not HTTP/2 (a SETTINGS with a bad value is a broken HTTP/2 server).
        let settings_first = self.reader.unread().get(3) == Some(&frame::SETTINGS);
        let first = first_line(self.reader.unread());
        let result = self.whole_frames(at, events);
        if result.is_err() && !self.state.settings_seen && !settings_first {
            self.not_h2 = Some(format!(
                "it answered bytes that are not an HTTP/2 SETTINGS frame: `{first}`"
            ));
        }
        result
    }

    fn whole_frames(&mut self, at: Instant, events: &mut Vec<Event<T>>) -> Result<(), ConnError> {
        while let Some((head, payload)) = self.reader.next()? {
            self.state.frame(head, payload, at, events)?;
        }
        Ok(())
    }

    fn flush(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        let s = &mut self.state;
        while s.out_pos < s.out.len() {
            match Pin::new(&mut self.io).poll_write(cx, &s.out[s.out_pos..]) {
                Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => {
                    s.out_pos += n;
                    self.wire_written += n as u64;
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => return Ok(()),
            }
        }
        s.out.clear();
        s.out_pos = 0;
        // TLS keeps records until flushed; TCP's flush does nothing.
        match Pin::new(&mut self.io).poll_flush(cx) {
            Poll::Ready(Err(e)) => Err(e),
            _ => Ok(()),
        }
    }

    /// Ends the streams whose deadline passed (RST_STREAM CANCEL, a timeout each) and moves
    /// the timer to the earliest deadline left.
    fn poll_timer(&mut self, cx: &mut Context<'_>, events: &mut Vec<Event<T>>) {
        while self.timer_at.is_some() && self.timer.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            let s = &mut self.state;
            // Streaming gRPC calls' paced messages and planned cancels.
            s.tick(now, events);
            let expired: Vec<u32> = s
                .streams
                .iter()
                .filter(|(_, st)| st.deadline <= now)
                .map(|(id, _)| *id)
                .collect();
            for id in expired {
                frame::rst_stream(&mut s.out, id, Reason::CANCEL);
                let message = format!("no complete response within {:?} (--timeout)", s.timeout);
                s.fail(id, ErrorKind::Timeout, message, false, events);
            }
            self.timer_at = s.streams.values().map(|st| st.wake()).min();
            let next = self
                .timer_at
                .unwrap_or(now + Duration::from_secs(365 * 24 * 3600));
            self.timer.as_mut().reset(next.into());
        }
    }
}

/// Ends the connection after a failed `what` ("read" or "write"): a local resource running
/// out (too many files, no port) is told apart from the server's doing by the OS's code.
fn end_io<T>(state: &mut State<T>, e: &io::Error, what: &str, events: &mut Vec<Event<T>>) {
    let kind = classify_io(
        e,
        if what == "write" {
            ErrorKind::Write
        } else {
            ErrorKind::Read
        },
    );
    state.end_io(e, what, kind, events);
}

/// The first line of what a server sent (at most 60 bytes), printable: enough to tell an
/// HTTP/1.x status line or what else it was.
fn first_line(bytes: &[u8]) -> String {
    let line = bytes.split(|b| *b == b'\n').next().unwrap_or(&[]);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let cut = line.len().min(60);
    let mut shown = line[..cut].escape_ascii().to_string();
    if cut < line.len() {
        shown.push('…');
    }
    shown
}
