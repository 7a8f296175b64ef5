//! A response stream parsed as it arrives: frames (RFC 9114 §4.1: informational heads, the
//! final head, DATA, trailers), the head decoded with QPACK, the body counted, and kept (in
//! HTTP/1.1's form, for the checks) only when asked.

use super::frame::{
    frame_head, is_http2_only, H3Error, CANCEL_PUSH, DATA, GOAWAY, H3_EXCESSIVE_LOAD,
    H3_FRAME_ERROR, H3_FRAME_UNEXPECTED, H3_ID_ERROR, H3_MESSAGE_ERROR, HEADERS, MAX_PUSH_ID,
    PUSH_PROMISE, QPACK_DECOMPRESSION_FAILED, SETTINGS,
};
use super::qpack;

/// The largest header block accepted: a server's SETTINGS_MAX_FIELD_SECTION_SIZE is its own
/// business, but a client that gathers one without a bound can be made to hold anything.
pub const MAX_HEAD: u64 = 256 << 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// No final head yet (an informational one may have come).
    Head,
    Body,
    /// Trailers came: nothing more may.
    Trailers,
}

/// A response kept for the checks: `HTTP/1.1 STATUS`, each field as `name: value`, then the
/// body, up to a limit.
#[derive(Debug, Default)]
pub struct Kept {
    pub bytes: Vec<u8>,
    pub overflow: bool,
    limit: usize,
}

impl Kept {
    fn push(&mut self, bytes: &[u8]) {
        let room = self.limit.saturating_sub(self.bytes.len());
        self.overflow |= bytes.len() > room;
        self.bytes
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// One response stream's parser.
#[derive(Debug)]
pub struct Response {
    stage: Stage,
    /// Bytes of a frame head that came split.
    partial: Vec<u8>,
    /// The frame being read: its type and how much of its payload is still to come.
    frame: Option<(u64, u64)>,
    /// A HEADERS payload being gathered.
    block: Vec<u8>,
    status: u16,
    field_bytes: u64,
    body_bytes: u64,
    kept: Option<Kept>,
    scratch: (Vec<u8>, Vec<u8>),
}

impl Response {
    /// A parser; with `keep`, the response is kept up to that many bytes.
    pub fn new(keep: Option<usize>) -> Self {
        Response {
            stage: Stage::Head,
            partial: Vec::new(),
            frame: None,
            block: Vec::new(),
            status: 0,
            field_bytes: 0,
            body_bytes: 0,
            kept: keep.map(|limit| Kept {
                limit,
                ..Kept::default()
            }),
            scratch: Default::default(),
        }
    }

    /// The final head's status, 0 before it came.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The final head came.
    pub fn has_head(&self) -> bool {
        self.stage != Stage::Head
    }

    /// What a sample counts as read: the final head's fields (name, value and 32 bytes each,
    /// as QPACK counts them) and the body.
    pub fn bytes_read(&self) -> u64 {
        self.field_bytes + self.body_bytes
    }

    pub fn take_kept(&mut self) -> Option<Kept> {
        self.kept.take()
    }

    /// Feeds the stream's next bytes; true when the final head completed in them.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<bool, H3Error> {
        let mut head_now = false;
        while !bytes.is_empty() {
            let Some((kind, remaining)) = self.frame else {
                // A frame head: at most 16 bytes, maybe split across chunks.
                let taken = bytes.len().min(16 - self.partial.len());
                let mut head = std::mem::take(&mut self.partial);
                head.extend_from_slice(&bytes[..taken]);
                match frame_head(&head) {
                    Some((kind, len, used)) => {
                        let before = head.len() - taken;
                        bytes = &bytes[used - before..];
                        self.start(kind, len)?;
                        if len == 0 {
                            head_now |= self.end_frame(kind)?;
                        }
                    }
                    None if head.len() >= 16 => {
                        return Err(H3Error::connection(
                            H3_FRAME_ERROR,
                            "a malformed frame head",
                        ))
                    }
                    None => {
                        self.partial = head;
                        bytes = &[];
                    }
                }
                continue;
            };
            let n = (remaining as usize).min(bytes.len());
            let (now, rest) = bytes.split_at(n);
            bytes = rest;
            match kind {
                HEADERS => self.block.extend_from_slice(now),
                DATA => {
                    self.body_bytes += n as u64;
                    if let Some(k) = self.kept.as_mut() {
                        k.push(now);
                    }
                }
                _ => {} // A frame of an unknown type: skipped (§9).
            }
            let left = remaining - n as u64;
            self.frame = Some((kind, left));
            if left == 0 {
                head_now |= self.end_frame(kind)?;
            }
        }
        Ok(head_now)
    }

    /// The stream ended: the response must be whole.
    pub fn finish(&self) -> Result<(), H3Error> {
        if self.frame.is_some() || !self.partial.is_empty() {
            return Err(H3Error::stream(
                H3_FRAME_ERROR,
                "the stream ended inside a frame",
            ));
        }
        if self.stage == Stage::Head {
            return Err(H3Error::stream(
                H3_MESSAGE_ERROR,
                "the stream ended without a response head",
            ));
        }
        Ok(())
    }

    fn start(&mut self, kind: u64, len: u64) -> Result<(), H3Error> {
        match kind {
            HEADERS if self.stage == Stage::Trailers => {
                return Err(H3Error::connection(
                    H3_FRAME_UNEXPECTED,
                    "HEADERS after trailers",
                ))
            }
            HEADERS if len > MAX_HEAD => {
                return Err(H3Error::stream(
                    H3_EXCESSIVE_LOAD,
                    format!("a header block of {len} bytes (the client's limit is {MAX_HEAD})"),
                ))
            }
            HEADERS => self.block.clear(),
            DATA if self.stage != Stage::Body => {
                let what = match self.stage {
                    Stage::Head => "DATA before the response head",
                    _ => "DATA after trailers",
                };
                return Err(H3Error::connection(H3_FRAME_UNEXPECTED, what));
            }
            DATA => {}
            PUSH_PROMISE => {
                return Err(H3Error::connection(
                    H3_ID_ERROR,
                    "PUSH_PROMISE, though the client allowed no push (it sent no MAX_PUSH_ID)",
                ))
            }
            k if matches!(k, CANCEL_PUSH | SETTINGS | GOAWAY | MAX_PUSH_ID) || is_http2_only(k) => {
                return Err(H3Error::connection(
                    H3_FRAME_UNEXPECTED,
                    format!("a frame of type 0x{k:x} on a request stream"),
                ))
            }
            _ => {}
        }
        self.frame = Some((kind, len));
        Ok(())
    }

    /// A frame's payload is in; true when it was the final head.
    fn end_frame(&mut self, kind: u64) -> Result<bool, H3Error> {
        self.frame = None;
        if kind != HEADERS {
            return Ok(false);
        }
        if self.stage == Stage::Body {
            // Trailers: decoded for their validity, not counted or kept.
            self.stage = Stage::Trailers;
            let block = std::mem::take(&mut self.block);
            let decoded = qpack::decode(&block, &mut self.scratch, |_, _| {});
            self.block = block;
            return decoded.map(|_| false).map_err(qpack_error);
        }
        let (mut status, mut fields, mut bad) = (None, 0u64, None);
        let mut kept_head = Vec::new();
        let keeping = self.kept.is_some();
        qpack::decode(&self.block, &mut self.scratch, |name, value| {
            if name == b":status" {
                status = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse::<u16>().ok());
                if status.is_none_or(|s| !(100..=999).contains(&s)) {
                    bad = Some("a :status that is not a 3-digit code");
                }
            } else if name.first() == Some(&b':') {
                bad = Some("a pseudo-header other than :status in a response");
            } else {
                fields += (name.len() + value.len() + 32) as u64;
                if keeping {
                    kept_head.extend_from_slice(name);
                    kept_head.extend_from_slice(b": ");
                    kept_head.extend_from_slice(value);
                    kept_head.extend_from_slice(b"\r\n");
                }
            }
        })
        .map_err(qpack_error)?;
        if let Some(what) = bad {
            return Err(H3Error::stream(H3_MESSAGE_ERROR, what));
        }
        let Some(status) = status else {
            return Err(H3Error::stream(
                H3_MESSAGE_ERROR,
                "a response head without :status",
            ));
        };
        if status < 200 {
            return Ok(false); // Informational (1xx): the final head is still to come.
        }
        self.status = status;
        self.field_bytes = fields + 1;
        self.stage = Stage::Body;
        if let Some(k) = self.kept.as_mut() {
            k.bytes.clear();
            k.overflow = false;
            k.push(format!("HTTP/1.1 {status} \r\n").as_bytes());
            k.push(&kept_head);
            k.push(b"\r\n");
        }
        Ok(true)
    }
}

fn qpack_error(e: qpack::QpackError) -> H3Error {
    H3Error::connection(
        QPACK_DECOMPRESSION_FAILED,
        format!("a response head QPACK could not decode: {e}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http3::frame::put_frame_head;
    use crate::http3::qpack::{encode_field, start_block};

    fn headers(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = Vec::new();
        start_block(&mut block);
        for (n, v) in fields {
            encode_field(n.as_bytes(), v.as_bytes(), &mut block);
        }
        let mut out = Vec::new();
        put_frame_head(&mut out, HEADERS, block.len() as u64);
        out.extend_from_slice(&block);
        out
    }

    fn data(body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_frame_head(&mut out, DATA, body.len() as u64);
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn a_response_parses_in_any_split_with_informational_heads_unknown_frames_and_trailers() {
        let mut stream = headers(&[(":status", "103"), ("link", "</a>")]);
        stream.extend(headers(&[
            (":status", "200"),
            ("content-type", "text/plain"),
        ]));
        stream.extend([0x21, 2, 9, 9]); // a reserved frame type (0x1f * 1 + 0x21), skipped
        stream.extend(data(b"hello "));
        stream.extend(data(b"world"));
        stream.extend(headers(&[("x-trailer", "1")]));
        for split in 1..stream.len() {
            let mut r = Response::new(Some(1 << 20));
            let heads = [
                r.feed(&stream[..split]).unwrap(),
                r.feed(&stream[split..]).unwrap(),
            ];
            assert_eq!(heads.iter().filter(|h| **h).count(), 1, "split {split}");
            r.finish().unwrap();
            assert_eq!(r.status(), 200);
            assert_eq!(r.bytes_read(), (12 + 10 + 32 + 1) + 11);
            let kept = r.take_kept().unwrap();
            assert_eq!(
                kept.bytes,
                b"HTTP/1.1 200 \r\ncontent-type: text/plain\r\n\r\nhello world"
            );
        }
        let mut byte_by_byte = Response::new(None);
        for b in &stream {
            byte_by_byte.feed(std::slice::from_ref(b)).unwrap();
        }
        byte_by_byte.finish().unwrap();
        assert_eq!(byte_by_byte.bytes_read(), 55 + 11);
    }

    #[test]
    fn a_server_that_breaks_the_framing_is_named_with_the_code_the_rfc_gives() {
        let code = |stream: &[u8]| {
            let mut r = Response::new(None);
            match r.feed(stream) {
                Err(e) => e.code,
                Ok(_) => r.finish().map(|_| 0).unwrap_or_else(|e| e.code),
            }
        };
        assert_eq!(code(&data(b"x")), H3_FRAME_UNEXPECTED);
        assert_eq!(code(&[0x04, 0]), H3_FRAME_UNEXPECTED); // SETTINGS on a request stream
        assert_eq!(code(&[0x06, 0]), H3_FRAME_UNEXPECTED); // HTTP/2's PING
        assert_eq!(code(&[0x05, 1, 0]), H3_ID_ERROR);
        assert_eq!(code(&headers(&[("server", "x")])), H3_MESSAGE_ERROR);
        assert_eq!(code(&headers(&[(":status", "2000")])), H3_MESSAGE_ERROR);
        assert_eq!(
            code(&headers(&[(":status", "200"), (":path", "/")])),
            H3_MESSAGE_ERROR
        );
        assert_eq!(code(&[0x01, 3, 1, 0, 0x80]), QPACK_DECOMPRESSION_FAILED);
        assert_eq!(code(&headers(&[(":status", "103")])), H3_MESSAGE_ERROR); // no final head
        let mut cut = headers(&[(":status", "200")]);
        cut.extend(&data(b"abc")[..3]);
        assert_eq!(code(&cut), H3_FRAME_ERROR);
        let mut big = Vec::new();
        put_frame_head(&mut big, HEADERS, MAX_HEAD + 1);
        assert_eq!(code(&big), H3_EXCESSIVE_LOAD);
        let mut twice = headers(&[(":status", "200")]);
        twice.extend(headers(&[("t", "1")]));
        twice.extend(headers(&[("t", "2")]));
        assert_eq!(code(&twice), H3_FRAME_UNEXPECTED);
    }
}
