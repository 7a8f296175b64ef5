//! What each frame a server sends does to a connection's state (RFC 9113 §6), and the
//! streams that end or fail because of it. The engine's `H2Conn` owns the socket and calls
//! [`State::frame`] for every whole frame it reads.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::time::{Duration, Instant};

use bytes::Bytes;
use loadmark_metrics::ErrorKind;

pub use super::capture::Capture;
use super::event::{Answer, Event, Failure};
use super::frame::{self, ConnError, Head, Reason};
use super::hpack::Decoder;

/// Flow-control windows the client grants: large enough that a fast server is never held up
/// on loopback by WINDOW_UPDATE round trips (RFC 9113's default is 64 KiB - 1).
pub const STREAM_WINDOW: i64 = 1 << 20;
pub const CONNECTION_WINDOW: i64 = 16 << 20;
pub const DEFAULT_WINDOW: i64 = 65_535;

/// The most a header block may grow over CONTINUATION frames before the client gives up.
const MAX_HEADER_BLOCK: usize = 256 << 10;

pub struct Stream<T> {
    pub(crate) tag: T,
    pub deadline: Instant,
    pub(crate) send_window: i64,
    pub(crate) recv_window: i64,
    /// The request body not yet sent, from `sent` on.
    pub(crate) upload: Option<(Bytes, usize)>,
    /// 0 until the final response headers came.
    pub(crate) status: u16,
    pub(crate) first_byte: Option<Instant>,
    /// Body bytes: DATA payloads without padding.
    pub(crate) body: u64,
    /// Every byte of the frames on this stream, both ways, frame headers and padding
    /// included (see [`State::open_read`]).
    pub(crate) wire_read: u64,
    pub(crate) wire_written: u64,
    /// gRPC streams ([`State::grpc`]): the body's message prefixes and the call's status.
    pub(crate) grpc: Option<crate::grpc::Call>,
}

/// Stream ids are odd and dense: a multiply spreads them over the map (SipHash would cost
/// more than the rest of a lookup).
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Everything but the socket and the read buffer, so a frame borrowed from the reader can be
/// handled while the state changes.
pub struct State<T> {
    pub out: Vec<u8>,
    pub out_pos: usize,
    pub(crate) decoder: Decoder,
    /// A header block continued over CONTINUATION frames: its stream and END_STREAM flag.
    pub(crate) continuing: Option<(u32, bool)>,
    pub(crate) block: Vec<u8>,
    pub streams: HashMap<u32, Stream<T>, BuildHasherDefault<IdHasher>>,
    /// Streams with request body left to send.
    pub(crate) uploads: Vec<u32>,
    pub next_id: u32,
    pub settings_seen: bool,
    pub max_streams: usize,
    pub(crate) initial_window: i64,
    pub(crate) max_frame: usize,
    pub(crate) send_window: i64,
    pub(crate) recv_window: i64,
    /// The last stream id of the server's GOAWAY, and its code.
    pub goaway: Option<u32>,
    pub goaway_reason: Reason,
    /// Why nothing more can be read or written (streams have been failed with it).
    pub ended: Option<(ErrorKind, String)>,
    pub timeout: Duration,
    /// The wire bytes of the streams open now, and of those that ended in a response (they
    /// went out in its sample). What the connection moved beyond these (the preface,
    /// SETTINGS, PING, WINDOW_UPDATE, GOAWAY, frames of streams that failed or were already
    /// ended) belongs to no response: the engine's `H2Conn::unattributed` hands it over.
    pub open_read: u64,
    pub open_written: u64,
    pub sampled_read: u64,
    pub sampled_written: u64,
    /// The one stream whose response is kept ([`State::open_capturing`]), apart from the
    /// streams so that connections that keep none carry nothing more per stream.
    pub(crate) capture: Option<Box<Capture>>,
    /// Every stream is a gRPC call whose response messages may be this long at most
    /// (`None`: plain HTTP/2).
    pub grpc: Option<usize>,
    /// gRPC calls of a streaming method: how each streams (`crate::grpc::calls`).
    pub streaming: Option<loadmark_plan::GrpcStreaming>,
}

impl<T> State<T> {
    pub fn new(timeout: Duration) -> State<T> {
        State {
            out: Vec::with_capacity(16 << 10),
            out_pos: 0,
            decoder: Decoder::new(),
            continuing: None,
            block: Vec::new(),
            streams: HashMap::default(),
            uploads: Vec::new(),
            next_id: 1,
            settings_seen: false,
            max_streams: usize::MAX,
            initial_window: DEFAULT_WINDOW,
            max_frame: frame::DEFAULT_MAX_FRAME,
            send_window: DEFAULT_WINDOW,
            recv_window: CONNECTION_WINDOW,
            goaway: None,
            goaway_reason: Reason::NO_ERROR,
            ended: None,
            timeout,
            open_read: 0,
            open_written: 0,
            sampled_read: 0,
            sampled_written: 0,
            capture: None,
            grpc: None,
            streaming: None,
        }
    }

    /// Opens the next stream: its HEADERS (and what the windows allow of its body) queued.
    /// Returns when it next needs the caller's timer: its deadline, or sooner for a
    /// streaming gRPC call's paced messages or planned cancel.
    pub fn open(&mut self, block: &[u8], body: &Bytes, tag: T, deadline: Instant) -> Instant {
        let id = self.next_id;
        self.next_id += 2;
        let (call, paced) = self.new_call(body);
        // A paced call's messages go out one by one (`super::calls`), not as a body.
        let end = body.is_empty() && !paced;
        let before = self.out.len();
        frame::headers(&mut self.out, id, block, end, self.max_frame);
        let written = (self.out.len() - before) as u64;
        self.open_written += written;
        self.streams.insert(
            id,
            Stream {
                tag,
                deadline,
                send_window: self.initial_window,
                recv_window: STREAM_WINDOW,
                upload: (!end && !paced).then(|| (body.clone(), 0)),
                status: 0,
                first_byte: None,
                body: 0,
                wire_read: 0,
                wire_written: written,
                grpc: call,
            },
        );
        if paced {
            self.pace(id, Instant::now());
        } else if !end {
            self.uploads.push(id);
            self.send_uploads();
        }
        self.streams.get(&id).map_or(deadline, Stream::wake)
    }

    pub fn frame(
        &mut self,
        h: Head,
        p: &[u8],
        at: Instant,
        events: &mut Vec<Event<T>>,
    ) -> Result<(), ConnError> {
        use frame::*;
        // A frame on an open stream is that request's, whatever it turns out to be.
        if h.stream != 0 {
            if let Some(s) = self.streams.get_mut(&h.stream) {
                let n = (FRAME_HEAD + h.len) as u64;
                s.wire_read += n;
                self.open_read += n;
            }
        }
        if let Some((id, end)) = self.continuing {
            if h.kind != CONTINUATION || h.stream != id {
                return Err(ConnError::new(
                    Reason::PROTOCOL_ERROR,
                    "another frame inside a header block (CONTINUATION expected)",
                ));
            }
            if self.block.len() + p.len() > MAX_HEADER_BLOCK {
                return Err(ConnError::new(
                    Reason::PROTOCOL_ERROR,
                    "a header block over 256 KiB",
                ));
            }
            self.block.extend_from_slice(p);
            if h.flags & END_HEADERS != 0 {
                self.continuing = None;
                let block = std::mem::take(&mut self.block);
                let done = self.header_block(id, &block, end, at, events);
                self.block = block;
                self.block.clear();
                done?;
            }
            return Ok(());
        }
        if !self.settings_seen && h.kind != SETTINGS {
            return Err(ConnError::new(
                Reason::PROTOCOL_ERROR,
                "the server's first frame is not SETTINGS",
            ));
        }
        // A frame on the wrong stream is a PROTOCOL_ERROR, one of the wrong length a
        // FRAME_SIZE_ERROR (RFC 9113 §6).
        let on_stream = |ok: bool, name: &str| {
            ConnError::unless(ok, Reason::PROTOCOL_ERROR, || {
                format!("{name} on stream {}", h.stream)
            })
        };
        let sized = |ok: bool, name: &str| {
            ConnError::unless(ok, Reason::FRAME_SIZE_ERROR, || {
                format!("{name} of {} bytes", h.len)
            })
        };
        match h.kind {
            DATA => {
                on_stream(h.stream != 0, "DATA")?;
                self.data(h, p, at, events)
            }
            HEADERS => {
                on_stream(h.stream != 0, "HEADERS")?;
                let mut block = unpad(h.flags, p)?;
                if h.flags & PRIORITY_FLAG != 0 {
                    sized(block.len() >= 5, "HEADERS with priority")?;
                    block = &block[5..];
                }
                let end = h.flags & END_STREAM != 0;
                if h.flags & END_HEADERS != 0 {
                    self.header_block(h.stream, block, end, at, events)
                } else {
                    self.block.clear();
                    self.block.extend_from_slice(block);
                    self.continuing = Some((h.stream, end));
                    Ok(())
                }
            }
            PRIORITY => {
                on_stream(h.stream != 0, "PRIORITY")?;
                sized(h.len == 5, "PRIORITY")
            }
            RST_STREAM => {
                on_stream(h.stream != 0, "RST_STREAM")?;
                sized(h.len == 4, "RST_STREAM")?;
                self.idle(h.stream, "RST_STREAM")?;
                let reason = Reason(be32(p));
                if self.streams.contains_key(&h.stream) {
                    self.uploads.retain(|id| *id != h.stream);
                    let message = format!("RST_STREAM {reason} from the server");
                    let unprocessed = reason == Reason::REFUSED_STREAM;
                    let failed = (ErrorKind::Protocol, message, Some(reason));
                    self.fail_as(h.stream, failed, unprocessed, false, events);
                }
                Ok(())
            }
            SETTINGS => {
                on_stream(h.stream == 0, "SETTINGS")?;
                if h.flags & ACK != 0 {
                    return sized(h.len == 0, "a SETTINGS ACK");
                }
                sized(h.len.is_multiple_of(6), "SETTINGS")?;
                for setting in p.chunks_exact(6) {
                    let id = u16::from_be_bytes([setting[0], setting[1]]);
                    self.setting(id, be32(&setting[2..]))?;
                }
                self.settings_seen = true;
                settings_ack(&mut self.out);
                self.send_uploads();
                Ok(())
            }
            PUSH_PROMISE => Err(ConnError::new(
                Reason::PROTOCOL_ERROR,
                "PUSH_PROMISE, though the client disabled push",
            )),
            PING => {
                on_stream(h.stream == 0, "PING")?;
                sized(h.len == 8, "PING")?;
                if h.flags & ACK == 0 {
                    ping_ack(&mut self.out, p);
                }
                Ok(())
            }
            GOAWAY => {
                on_stream(h.stream == 0, "GOAWAY")?;
                sized(h.len >= 8, "GOAWAY")?;
                self.goaway(be32(p) & 0x7fff_ffff, Reason(be32(&p[4..])), events);
                Ok(())
            }
            WINDOW_UPDATE => {
                sized(h.len == 4, "WINDOW_UPDATE")?;
                let increment = i64::from(be32(p) & 0x7fff_ffff);
                if increment == 0 {
                    return Err(ConnError::new(
                        Reason::PROTOCOL_ERROR,
                        "a WINDOW_UPDATE of 0",
                    ));
                }
                if h.stream == 0 {
                    self.send_window += increment;
                    if self.send_window > MAX_WINDOW {
                        return Err(ConnError::new(
                            Reason::FLOW_CONTROL_ERROR,
                            "a connection window above 2^31-1",
                        ));
                    }
                } else if let Some(s) = self.streams.get_mut(&h.stream) {
                    s.send_window += increment;
                    if s.send_window > MAX_WINDOW {
                        return Err(ConnError::new(
                            Reason::FLOW_CONTROL_ERROR,
                            "a stream window above 2^31-1",
                        ));
                    }
                }
                self.send_uploads();
                Ok(())
            }
            CONTINUATION => Err(ConnError::new(
                Reason::PROTOCOL_ERROR,
                "CONTINUATION without HEADERS",
            )),
            // Unknown frame types are ignored (RFC 9113 §4.1).
            _ => Ok(()),
        }
    }

    /// A frame on a stream the client never opened is a connection error.
    fn idle(&self, id: u32, name: &str) -> Result<(), ConnError> {
        if id.is_multiple_of(2) || id >= self.next_id {
            return Err(ConnError::new(
                Reason::PROTOCOL_ERROR,
                format!("{name} on stream {id}, which the client never opened"),
            ));
        }
        Ok(())
    }

    fn setting(&mut self, id: u16, value: u32) -> Result<(), ConnError> {
        use frame::*;
        match id {
            SETTINGS_ENABLE_PUSH if value > 1 => Err(ConnError::new(
                Reason::PROTOCOL_ERROR,
                format!("SETTINGS_ENABLE_PUSH = {value}"),
            )),
            SETTINGS_MAX_CONCURRENT_STREAMS => {
                self.max_streams = value as usize;
                Ok(())
            }
            SETTINGS_INITIAL_WINDOW_SIZE => {
                let value = i64::from(value);
                if value > MAX_WINDOW {
                    return Err(ConnError::new(
                        Reason::FLOW_CONTROL_ERROR,
                        format!("SETTINGS_INITIAL_WINDOW_SIZE = {value}"),
                    ));
                }
                let delta = value - self.initial_window;
                self.initial_window = value;
                for s in self.streams.values_mut() {
                    s.send_window += delta;
                    if s.send_window > MAX_WINDOW {
                        return Err(ConnError::new(
                            Reason::FLOW_CONTROL_ERROR,
                            "a stream window above 2^31-1 after SETTINGS_INITIAL_WINDOW_SIZE",
                        ));
                    }
                }
                Ok(())
            }
            SETTINGS_MAX_FRAME_SIZE => {
                if !(16_384..=16_777_215).contains(&value) {
                    return Err(ConnError::new(
                        Reason::PROTOCOL_ERROR,
                        format!("SETTINGS_MAX_FRAME_SIZE = {value}"),
                    ));
                }
                self.max_frame = value as usize;
                Ok(())
            }
            // The header table size only bounds an encoder's dynamic table, which the
            // client's encoder never uses.
            SETTINGS_HEADER_TABLE_SIZE => Ok(()),
            // Unknown settings are ignored (RFC 9113 §6.5.2).
            _ => Ok(()),
        }
    }

    fn header_block(
        &mut self,
        id: u32,
        block: &[u8],
        end: bool,
        at: Instant,
        events: &mut Vec<Event<T>>,
    ) -> Result<(), ConnError> {
        // Decoded whatever the stream: the table is the connection's.
        let mut status: Option<Option<u16>> = None;
        let grpc = self.grpc.is_some();
        let mut seen = crate::grpc::Seen::default();
        let keep = self
            .capture
            .as_deref_mut()
            .filter(|c| c.id == id && !c.head);
        let decoded = match keep {
            None => self.decoder.decode(block, |name, value| {
                if name == b":status" && status.is_none() {
                    status = Some(parse_status(value));
                } else if grpc {
                    seen.note(name, value);
                }
            }),
            // The capturing stream's headers are kept as they are decoded; a 1xx head or
            // trailers are dropped below.
            Some(capture) => {
                let start = capture.bytes.len();
                let decoded = self.decoder.decode(block, |name, value| {
                    if name == b":status" && status.is_none() {
                        status = Some(parse_status(value));
                    } else if !name.starts_with(b":") {
                        if grpc {
                            seen.note(name, value);
                        }
                        capture.push(&[name, b": ", value, b"\r\n"].concat());
                    }
                });
                match status.flatten() {
                    Some(code) if code >= 200 => capture.head(start, code),
                    _ => capture.truncate(start),
                }
                decoded
            }
        };
        decoded.map_err(|e| {
            ConnError::new(
                Reason::COMPRESSION_ERROR,
                format!("a header block HPACK cannot decode ({e})"),
            )
        })?;
        self.idle(id, "HEADERS")?;
        let Some(s) = self.streams.get_mut(&id) else {
            // A stream the client already ended (a timeout): nothing to count.
            return Ok(());
        };
        let first = s.status == 0;
        if s.status == 0 {
            match status.flatten() {
                // Informational (100 Continue, 103 Early Hints): the final response follows.
                Some(code) if (100..200).contains(&code) && !end => return Ok(()),
                Some(code) if code >= 200 => {
                    s.status = code;
                    s.first_byte = Some(at);
                }
                _ => {
                    frame::rst_stream(&mut self.out, id, Reason::PROTOCOL_ERROR);
                    let message = "a response without a valid :status (loadmark sent RST_STREAM \
                                   PROTOCOL_ERROR)"
                        .to_string();
                    self.fail(id, ErrorKind::Protocol, message, false, events);
                    return Ok(());
                }
            }
        } else if !end {
            frame::rst_stream(&mut self.out, id, Reason::PROTOCOL_ERROR);
            let message =
                "trailers without END_STREAM (loadmark sent RST_STREAM PROTOCOL_ERROR)".to_string();
            self.fail(id, ErrorKind::Protocol, message, false, events);
            return Ok(());
        }
        if let Some(call) = s.grpc.as_mut() {
            seen.apply(call, first, end);
        }
        if end {
            self.complete(id, at, events);
        }
        Ok(())
    }

    fn data(
        &mut self,
        h: Head,
        p: &[u8],
        at: Instant,
        events: &mut Vec<Event<T>>,
    ) -> Result<(), ConnError> {
        // Flow control counts the whole payload, padding included.
        let len = h.len as i64;
        self.recv_window -= len;
        if self.recv_window < 0 {
            return Err(ConnError::new(
                Reason::FLOW_CONTROL_ERROR,
                "DATA beyond the connection's window",
            ));
        }
        if self.recv_window <= CONNECTION_WINDOW / 2 {
            frame::window_update(
                &mut self.out,
                0,
                (CONNECTION_WINDOW - self.recv_window) as u32,
            );
            self.recv_window = CONNECTION_WINDOW;
        }
        let body = frame::unpad(h.flags, p)?;
        self.idle(h.stream, "DATA")?;
        let Some(s) = self.streams.get_mut(&h.stream) else {
            return Ok(());
        };
        s.recv_window -= len;
        let refused = if s.status == 0 {
            Some("DATA before the response headers")
        } else if s.recv_window < 0 {
            Some("DATA beyond the stream's window")
        } else {
            None
        };
        if let Some(what) = refused {
            let reason = if s.recv_window < 0 {
                Reason::FLOW_CONTROL_ERROR
            } else {
                Reason::PROTOCOL_ERROR
            };
            frame::rst_stream(&mut self.out, h.stream, reason);
            let message = format!("{what} (loadmark sent RST_STREAM {reason})");
            self.fail(h.stream, ErrorKind::Protocol, message, false, events);
            return Ok(());
        }
        s.body += body.len() as u64;
        if let (Some(call), Some(limit)) = (s.grpc.as_mut(), self.grpc) {
            let spec = self.streaming.as_ref();
            if call.data(body, limit, spec, (h.stream, at), &mut self.out) {
                self.complete(h.stream, at, events);
                return Ok(());
            }
        }
        if let Some(capture) = self.capture.as_deref_mut().filter(|c| c.id == h.stream) {
            capture.push(body);
        }
        if h.flags & frame::END_STREAM != 0 {
            self.complete(h.stream, at, events);
        } else if s.recv_window <= STREAM_WINDOW / 2 {
            frame::window_update(
                &mut self.out,
                h.stream,
                (STREAM_WINDOW - s.recv_window) as u32,
            );
            s.recv_window = STREAM_WINDOW;
        }
        Ok(())
    }

    /// The server ended the stream: its response is whole.
    pub(crate) fn complete(&mut self, id: u32, at: Instant, events: &mut Vec<Event<T>>) {
        let Some(s) = self.streams.remove(&id) else {
            return;
        };
        self.open_read -= s.wire_read;
        self.open_written -= s.wire_written;
        self.sampled_read += s.wire_read;
        self.sampled_written += s.wire_written;
        if let Some(capture) = self.capture.as_deref_mut().filter(|c| c.id == id) {
            capture.done = true;
        }
        if s.upload.is_some() || s.grpc.as_ref().is_some_and(crate::grpc::Call::cut_short) {
            // Answered before the whole body was sent (a 413, say, or a gRPC server that
            // ended the call before its request stream): the rest is not wanted.
            self.uploads.retain(|u| *u != id);
            frame::rst_stream(&mut self.out, id, Reason::NO_ERROR);
        }
        events.push(Event::Response {
            tag: s.tag,
            answer: Answer {
                first_byte: s.first_byte.unwrap_or(at),
                ended: at,
                status: s.status,
                body: s.body,
                read: s.wire_read,
                written: s.wire_written,
                grpc: s.grpc.map(crate::grpc::Call::end),
            },
        });
    }

    pub fn fail(
        &mut self,
        id: u32,
        kind: ErrorKind,
        message: String,
        unprocessed: bool,
        events: &mut Vec<Event<T>>,
    ) {
        self.fail_as(id, (kind, message, None), unprocessed, false, events);
    }

    /// [`State::fail`], saying whether the connection can carry more streams, and the
    /// server's RST_STREAM code when it reset the stream.
    fn fail_as(
        &mut self,
        id: u32,
        (kind, message, reset): (ErrorKind, String, Option<Reason>),
        unprocessed: bool,
        connection_over: bool,
        events: &mut Vec<Event<T>>,
    ) {
        if let Some(s) = self.streams.remove(&id) {
            // No sample carries its bytes: they become the connection's.
            self.open_read -= s.wire_read;
            self.open_written -= s.wire_written;
            if s.upload.is_some() {
                self.uploads.retain(|u| *u != id);
            }
            events.push(Event::Failed {
                tag: s.tag,
                failure: Failure {
                    kind,
                    message,
                    unprocessed,
                    connection_over,
                    reset,
                },
            });
        }
    }

    /// The server said it processes nothing above `last`: those streams fail as unprocessed;
    /// the others may still end.
    fn goaway(&mut self, last: u32, reason: Reason, events: &mut Vec<Event<T>>) {
        let last = self.goaway.map_or(last, |before| before.min(last));
        self.goaway = Some(last);
        self.goaway_reason = reason;
        let above: Vec<u32> = self
            .streams
            .keys()
            .copied()
            .filter(|id| *id > last)
            .collect();
        for id in above {
            let message = format!("GOAWAY {reason} from the server");
            self.fail_as(id, (ErrorKind::Protocol, message, None), true, true, events);
        }
    }

    /// Ends the connection: every open stream fails with the cause (streams above a GOAWAY's
    /// last id as unprocessed).
    fn end(&mut self, kind: ErrorKind, message: String, events: &mut Vec<Event<T>>) {
        let ids: Vec<u32> = self.streams.keys().copied().collect();
        for id in ids {
            let unprocessed = self.goaway.is_some_and(|last| id > last);
            self.fail_as(id, (kind, message.clone(), None), unprocessed, true, events);
        }
        self.uploads.clear();
        self.ended = Some((kind, message));
    }

    /// Ends the connection after the socket failed `what` ("read" or "write") with `e`, which
    /// the caller classified as `kind` (the step, or a local resource running out): telling
    /// those apart takes the OS's error codes, which are the caller's.
    pub fn end_io(
        &mut self,
        e: &io::Error,
        what: &str,
        kind: ErrorKind,
        events: &mut Vec<Event<T>>,
    ) {
        self.end(kind, format!("{what}: {e}"), events);
    }

    pub fn end_eof(&mut self, events: &mut Vec<Event<T>>) {
        let message = match self.goaway {
            Some(_) => "the server closed the connection after its GOAWAY".to_string(),
            None => "the server closed the HTTP/2 connection without a GOAWAY".to_string(),
        };
        self.end(ErrorKind::Closed, message, events);
    }

    pub fn conn_error(&mut self, e: ConnError, events: &mut Vec<Event<T>>) {
        frame::goaway(&mut self.out, 0, e.reason);
        let message = format!(
            "the server broke the HTTP/2 protocol ({}); loadmark sent GOAWAY {}",
            e.what, e.reason
        );
        self.end(ErrorKind::Protocol, message, events);
    }

    /// Sends as much of each pending request body as the windows allow.
    pub(crate) fn send_uploads(&mut self) {
        let mut i = 0;
        while i < self.uploads.len() && self.send_window > 0 {
            let id = self.uploads[i];
            let Some(s) = self.streams.get_mut(&id) else {
                self.uploads.swap_remove(i);
                continue;
            };
            let Some((body, sent)) = s.upload.as_mut() else {
                self.uploads.swap_remove(i);
                continue;
            };
            while *sent < body.len() && s.send_window > 0 && self.send_window > 0 {
                let room = s.send_window.min(self.send_window) as usize;
                let n = (body.len() - *sent).min(room).min(self.max_frame);
                // A paced gRPC call's stream stays open for its next message.
                let last = *sent + n == body.len() && !crate::grpc::calls::sending(&s.grpc);
                frame::data(&mut self.out, id, &body[*sent..*sent + n], last);
                s.wire_written += (frame::FRAME_HEAD + n) as u64;
                self.open_written += (frame::FRAME_HEAD + n) as u64;
                *sent += n;
                s.send_window -= n as i64;
                self.send_window -= n as i64;
            }
            if *sent == body.len() {
                s.upload = None;
                self.uploads.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }
}

/// `:status` as a number, if it is three digits.
fn parse_status(v: &[u8]) -> Option<u16> {
    match v {
        [a, b, c] if v.iter().all(u8::is_ascii_digit) => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
