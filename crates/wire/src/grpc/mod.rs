//! gRPC over HTTP/2 (the "gRPC over HTTP2" protocol document), as the client needs it: a
//! message is a 5-byte prefix (a compressed flag, a big-endian length) and the message; a
//! call ends with `grpc-status` (and `grpc-message`) in the trailers, or in the headers of a
//! trailers-only response. [`Reader`] follows the prefixes of a response body across DATA
//! frames without keeping the messages; [`End`] is how a call ended, which the engine counts
//! by code name. A streaming run's calls also carry a [`Flow`]: request messages paced
//! over time, a server stream the client cancels, and when response messages came.

pub(crate) mod calls;

use std::time::{Duration, Instant};

use bytes::Bytes;
use loadmark_plan::GrpcStreaming;

/// Whether a request's headers ask for gRPC: `content-type: application/grpc` (or
/// `application/grpc+proto`, ...). Such requests over HTTP/2 are counted by `grpc-status`.
pub fn is_grpc_content_type(value: &[u8]) -> bool {
    // Read from every response's headers: compared in place, no lowercase copy.
    const GRPC: &[u8] = b"application/grpc";
    value.len() >= GRPC.len()
        && value[..GRPC.len()].eq_ignore_ascii_case(GRPC)
        && matches!(value.get(GRPC.len()), None | Some(b'+' | b';'))
}

/// The 5-byte prefix of an uncompressed message of `len` bytes, then the message.
pub fn frame_message(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// What broke the framing of a response body; the call ends with the status a gRPC client
/// gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broken {
    /// A compressed-flag byte other than 0 and 1 (INTERNAL).
    Flag(u8),
    /// A compressed message when the response named no `grpc-encoding` (INTERNAL).
    CompressedWithoutEncoding,
    /// A message longer than the limit (RESOURCE_EXHAUSTED).
    TooLarge { len: u32, limit: usize },
    /// The stream ended inside a message (INTERNAL).
    Cut,
}

impl Broken {
    /// The gRPC status code a client ends the call with, and why.
    pub fn status(&self) -> (u32, String) {
        match self {
            Broken::Flag(f) => (
                13,
                format!(
                    "loadmark: a response message with compressed flag {f} (only 0 and 1 exist)"
                ),
            ),
            Broken::CompressedWithoutEncoding => (
                13,
                "loadmark: a compressed response message without grpc-encoding".into(),
            ),
            Broken::TooLarge { len, limit } => (
                8,
                format!("loadmark: a response message of {len} bytes, over the limit of {limit}"),
            ),
            Broken::Cut => (
                13,
                "loadmark: the response ended inside a length-prefixed message".into(),
            ),
        }
    }
}

/// Follows a response body's message prefixes as its bytes come, keeping none of them.
#[derive(Debug, Clone, Default)]
pub struct Reader {
    /// The prefix bytes seen of the message being read (0-5).
    head: [u8; 5],
    head_len: u8,
    /// Message bytes still to come after the prefix.
    left: u64,
    /// Whole messages read.
    pub messages: u32,
    /// The response named a `grpc-encoding` (a compressed flag of 1 is then allowed).
    pub encoded: bool,
}

impl Reader {
    /// Feeds body bytes; `Err` at the first prefix that breaks the rules.
    pub fn feed(&mut self, mut bytes: &[u8], limit: usize) -> Result<(), Broken> {
        while !bytes.is_empty() {
            if self.left > 0 {
                let n = (self.left as usize).min(bytes.len());
                self.left -= n as u64;
                bytes = &bytes[n..];
                if self.left == 0 {
                    self.messages += 1;
                }
                continue;
            }
            let need = 5 - self.head_len as usize;
            let n = need.min(bytes.len());
            let at = self.head_len as usize;
            self.head[at..at + n].copy_from_slice(&bytes[..n]);
            self.head_len += n as u8;
            bytes = &bytes[n..];
            if self.head_len == 5 {
                self.head_len = 0;
                match self.head[0] {
                    0 => {}
                    1 if self.encoded => {}
                    1 => return Err(Broken::CompressedWithoutEncoding),
                    f => return Err(Broken::Flag(f)),
                }
                let len =
                    u32::from_be_bytes([self.head[1], self.head[2], self.head[3], self.head[4]]);
                if len as usize > limit {
                    return Err(Broken::TooLarge { len, limit });
                }
                self.left = u64::from(len);
                if len == 0 {
                    self.messages += 1;
                }
            }
        }
        Ok(())
    }

    /// Whether the body ended between messages.
    pub fn whole(&self) -> bool {
        self.head_len == 0 && self.left == 0
    }
}

/// What a gRPC stream learnt from the response's header blocks and body.
#[derive(Debug, Clone, Default)]
pub struct End {
    /// `grpc-status` from the trailers (or a trailers-only response's headers).
    pub status: Option<u32>,
    /// `grpc-message`, percent-decoded, when the status is not OK.
    pub message: Option<String>,
    /// The response's `content-type` was gRPC's.
    pub grpc_content_type: bool,
    /// The body's framing broke (the stream was reset by the client).
    pub broken: Option<Broken>,
    /// The status came in the response headers with END_STREAM (no body, no trailers).
    pub trailers_only: bool,
    /// Response messages read whole (for a call the client cancelled, up to its count).
    pub messages: u32,
    /// Request messages sent (queued whole on the connection).
    pub sent: u32,
    /// The client ended the call itself, as the plan asked (a server stream cancelled after
    /// `--stream-call-count` messages or `--stream-call-duration`): no `grpc-status` came,
    /// and none is made up for it.
    pub ended_by_client: bool,
    /// Streaming runs only: when the first response message came whole, and the time
    /// between each response message and the one before, µs.
    pub first_message: Option<std::time::Instant>,
    pub gaps: Vec<u32>,
    /// The call was one of a streaming run's (it carried a [`Flow`]).
    pub streaming: bool,
}

impl End {
    /// The status code the call ended with and its message, as a gRPC client sees it: the
    /// server's `grpc-status`, else what the framing or the HTTP status says (the gRPC
    /// document's mapping of HTTP statuses).
    pub fn outcome(&self, http_status: u16) -> (u32, Option<String>) {
        if let Some(broken) = &self.broken {
            let (code, why) = broken.status();
            return (code, Some(why));
        }
        if let Some(code) = self.status {
            return (code, self.message.clone());
        }
        let code = match http_status {
            200 => 13,
            400 => 13,
            401 => 16,
            403 => 7,
            404 => 12,
            429 | 502 | 503 | 504 => 14,
            _ => 2,
        };
        let why = if http_status == 200 {
            "loadmark: the response ended without grpc-status".to_string()
        } else {
            format!("loadmark: HTTP status {http_status} without grpc-status")
        };
        (code, Some(why))
    }
}

/// The status a gRPC client gives a call that ended without an answer, as the gRPC over
/// HTTP/2 document maps transport failures: a RST_STREAM by its error code (CANCEL is
/// CANCELLED, REFUSED_STREAM UNAVAILABLE, ENHANCE_YOUR_CALM RESOURCE_EXHAUSTED,
/// INADEQUATE_SECURITY PERMISSION_DENIED, the others INTERNAL), a passed deadline
/// DEADLINE_EXCEEDED, a call the server never took (`unprocessed`: GOAWAY, REFUSED_STREAM)
/// or a connection that failed or closed UNAVAILABLE, a broken protocol INTERNAL.
pub fn failed_status(
    kind: loadmark_metrics::ErrorKind,
    reset: Option<crate::http2::frame::Reason>,
    unprocessed: bool,
) -> u32 {
    use loadmark_metrics::ErrorKind as K;
    if let Some(reason) = reset {
        return match reason.0 {
            0x7 => 14,
            0x8 => 1,
            0xb => 8,
            0xc => 7,
            _ => 13,
        };
    }
    match kind {
        _ if unprocessed => 14,
        K::Timeout => 4,
        K::Protocol => 13,
        K::Script => 2,
        K::Connect | K::Tls | K::Write | K::Read | K::Resource | K::Handshake | K::Closed => 14,
    }
}

/// `grpc-status`'s value as a number.
pub fn parse_status(value: &[u8]) -> Option<u32> {
    std::str::from_utf8(value).ok()?.trim().parse().ok()
}

/// `grpc-message` is percent-encoded (the gRPC document): decoded, invalid escapes kept.
pub fn decode_message(value: &[u8]) -> String {
    let mut out = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        if value[i] == b'%' && i + 2 < value.len() {
            let hex = std::str::from_utf8(&value[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(value[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_content_types_are_told_apart_in_any_case() {
        for yes in [
            &b"application/grpc"[..],
            b"Application/GRPC",
            b"application/grpc+proto",
            b"application/grpc;charset=utf-8",
        ] {
            assert!(is_grpc_content_type(yes), "{}", yes.escape_ascii());
        }
        for no in [
            &b"application/grpcx"[..],
            b"application/grp",
            b"application/json",
            b"",
            b"text/application/grpc",
        ] {
            assert!(!is_grpc_content_type(no), "{}", no.escape_ascii());
        }
    }

    #[test]
    fn prefixes_are_followed_across_any_split() {
        let mut body = frame_message(b"hello");
        body.extend(frame_message(b""));
        body.extend(frame_message(&[7u8; 300]));
        for cut in 0..body.len() {
            let mut r = Reader::default();
            r.feed(&body[..cut], 1000).unwrap();
            r.feed(&body[cut..], 1000).unwrap();
            assert_eq!(r.messages, 3, "cut at {cut}");
            assert!(r.whole());
        }
        let mut r = Reader::default();
        r.feed(&body[..8], 1000).unwrap();
        assert!(!r.whole());
    }

    #[test]
    fn broken_prefixes_are_named_with_the_status_a_client_gives() {
        let mut r = Reader::default();
        assert_eq!(r.feed(&[2, 0, 0, 0, 1, 9], 100), Err(Broken::Flag(2)));
        let mut r = Reader::default();
        assert_eq!(
            r.feed(&[1, 0, 0, 0, 1], 100),
            Err(Broken::CompressedWithoutEncoding)
        );
        let mut r = Reader {
            encoded: true,
            ..Reader::default()
        };
        assert!(r.feed(&[1, 0, 0, 0, 1, 9], 100).is_ok());
        let mut r = Reader::default();
        let e = r.feed(&[0, 0, 0, 1, 0], 100).unwrap_err();
        assert_eq!(
            e,
            Broken::TooLarge {
                len: 256,
                limit: 100
            }
        );
        assert_eq!(e.status().0, 8);
    }

    #[test]
    fn an_end_without_grpc_status_maps_like_a_grpc_client() {
        let end = End::default();
        assert_eq!(end.outcome(200).0, 13);
        assert_eq!(end.outcome(404).0, 12);
        assert_eq!(end.outcome(503).0, 14);
        let ok = End {
            status: Some(0),
            ..End::default()
        };
        assert_eq!(ok.outcome(200), (0, None));
        assert_eq!(decode_message(b"a%20b%zz%"), "a b%zz%");
    }

    #[test]
    fn failed_calls_get_the_status_the_grpc_document_maps_them_to() {
        use crate::http2::frame::Reason;
        use loadmark_metrics::ErrorKind as K;
        let reset = |code| failed_status(K::Protocol, Some(Reason(code)), false);
        assert_eq!(reset(0x2), 13, "INTERNAL_ERROR");
        assert_eq!(reset(0x0), 13, "NO_ERROR");
        assert_eq!(reset(0x8), 1, "CANCEL");
        assert_eq!(reset(0x7), 14, "REFUSED_STREAM");
        assert_eq!(reset(0xb), 8, "ENHANCE_YOUR_CALM");
        assert_eq!(failed_status(K::Timeout, None, false), 4);
        assert_eq!(failed_status(K::Closed, None, false), 14);
        assert_eq!(failed_status(K::Connect, None, false), 14);
        assert_eq!(failed_status(K::Protocol, None, true), 14, "GOAWAY");
        assert_eq!(failed_status(K::Protocol, None, false), 13);
    }
}

/// A gRPC stream's reading: the body's prefixes and what its header blocks said, and for a
/// streaming run, what the call sent and when its messages came.
#[derive(Debug, Clone, Default)]
pub struct Call {
    pub reader: Reader,
    pub end: End,
    /// Streaming runs only (boxed: a unary call carries one pointer more, no more).
    pub flow: Option<Box<Flow>>,
}

impl Call {
    /// A call of a streaming run, opened at `now` with `body` (its request messages: all of
    /// them, or one round to cycle through when paced).
    pub fn streaming(spec: &GrpcStreaming, body: &Bytes, now: Instant) -> Call {
        let round = count_messages(body);
        let pacing = spec
            .interval
            .filter(|_| spec.client_streams)
            .map(|interval| Pacing {
                round: body.clone(),
                at: 0,
                next: now,
                interval,
                // Neither a count nor a duration: the round once.
                left: spec.count.or(spec.duration.is_none().then_some(round)),
                until: spec.duration.map(|d| now + d),
            });
        let cancel_at = spec
            .duration
            .filter(|_| !spec.client_streams)
            .map(|d| now + d);
        Call {
            flow: Some(Box::new(Flow {
                sent: if pacing.is_some() { 0 } else { round },
                pacing,
                cancel_at,
                ..Flow::default()
            })),
            ..Call::default()
        }
    }
}

/// What a streaming call does over time, beside reading its response.
#[derive(Debug, Clone, Default)]
pub struct Flow {
    /// Request messages queued whole so far.
    pub sent: u32,
    /// Paced sending (`--stream-interval`): `None` once the last message went.
    pub pacing: Option<Pacing>,
    /// A server stream the client cancels at this instant (`--stream-call-duration`).
    pub cancel_at: Option<Instant>,
    first_message: Option<Instant>,
    last_message: Option<Instant>,
    gaps: Vec<u32>,
}

impl Flow {
    /// `new` response messages came whole at `at`: the first's gap is from the message
    /// before (or it is the first message), those read in the same read came 0 µs apart.
    pub fn received(&mut self, new: u32, at: Instant) {
        if new == 0 {
            return;
        }
        let zeros = match self.last_message {
            None => {
                self.first_message = Some(at);
                new - 1
            }
            Some(last) => {
                let gap = at.saturating_duration_since(last).as_micros();
                self.gaps.push(gap.min(u128::from(u32::MAX)) as u32);
                new - 1
            }
        };
        self.gaps.extend(std::iter::repeat_n(0, zeros as usize));
        self.last_message = Some(at);
    }

    /// When it next has something to do (a message due, the end of sending, a cancel).
    pub fn wake(&self) -> Option<Instant> {
        let pace = self.pacing.as_ref().map(Pacing::wake);
        match (pace, self.cancel_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Hands what was measured to the call's end.
    pub fn finish(self, end: &mut End) {
        end.streaming = true;
        end.sent = self.sent;
        end.first_message = self.first_message;
        end.gaps = self.gaps;
    }
}

/// Request messages sent one per interval, cycling through one round of them.
#[derive(Debug, Clone)]
pub struct Pacing {
    round: Bytes,
    /// Where the next message starts in `round`.
    at: usize,
    /// When the next message is due: the call's opening plus a whole number of intervals,
    /// so a late timer sends late, never fewer messages.
    pub next: Instant,
    interval: Duration,
    /// Messages still to send (`--stream-call-count`, or the round once).
    left: Option<u32>,
    /// No message is due at or after this (`--stream-call-duration`).
    until: Option<Instant>,
}

impl Pacing {
    fn wake(&self) -> Instant {
        match self.until {
            Some(until) if self.next >= until => until,
            _ => self.next,
        }
    }

    /// The next message if one is due at `now`; `Err(())` when sending is over.
    #[allow(clippy::result_unit_err)]
    pub fn next_message(&mut self, now: Instant) -> Result<Option<Bytes>, ()> {
        if self.left == Some(0) || self.until.is_some_and(|until| self.next >= until) {
            return Err(());
        }
        if self.next > now {
            return Ok(None);
        }
        let rest = &self.round[self.at..];
        let len = match rest {
            [_, a, b, c, d, ..] => {
                (5 + u32::from_be_bytes([*a, *b, *c, *d]) as usize).min(rest.len())
            }
            _ => rest.len(),
        };
        let message = self.round.slice(self.at..self.at + len);
        self.at += len;
        if self.at >= self.round.len() {
            self.at = 0;
        }
        if let Some(left) = self.left.as_mut() {
            *left -= 1;
        }
        self.next += self.interval;
        Ok(Some(message))
    }

    /// No more messages will be due (the count is sent).
    pub fn done(&self) -> bool {
        self.left == Some(0)
    }
}

/// Length-prefixed messages in `body`.
pub fn count_messages(body: &[u8]) -> u32 {
    let mut n = 0;
    let mut at = 0;
    while at + 5 <= body.len() {
        let len = u32::from_be_bytes([body[at + 1], body[at + 2], body[at + 3], body[at + 4]]);
        at += 5 + len as usize;
        n += 1;
    }
    n
}

/// The fields of one header block that matter to a gRPC call, noted as HPACK decodes them.
#[derive(Debug, Default)]
pub struct Seen {
    status: Option<u32>,
    message: Option<String>,
    content_type: bool,
    encoding: bool,
}

impl Seen {
    pub fn note(&mut self, name: &[u8], value: &[u8]) {
        match name {
            b"grpc-status" => self.status = parse_status(value).or(Some(2)),
            b"grpc-message" => self.message = Some(decode_message(value)),
            b"content-type" => self.content_type = is_grpc_content_type(value),
            b"grpc-encoding" => self.encoding = value != b"identity",
            _ => {}
        }
    }

    /// Applies the block to `call`: `first` when it is the response's headers, `end` when
    /// it ended the stream (headers with END_STREAM: a trailers-only response).
    pub fn apply(self, call: &mut Call, first: bool, end: bool) {
        if first {
            call.end.grpc_content_type = self.content_type;
            call.reader.encoded = self.encoding;
            call.end.trailers_only = end;
        }
        if self.status.is_some() {
            call.end.status = self.status;
            call.end.message = self.message.filter(|_| self.status != Some(0));
        }
    }
}
