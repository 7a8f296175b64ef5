//! HTTP/2 frames (RFC 9113 §4 and §6): the 9-byte header, the frame types and error codes
//! the client speaks, and writers that append a frame to the connection's output buffer.
//! Reading is [`FrameReader`]: whole frames out of the bytes read so far, checked against the
//! size the client announced, never a panic on what a server sends.

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;

/// The largest frame payload a peer may send before it learns otherwise, and the most the
/// client ever accepts (it never announces more: responses come in 16 KiB frames at most).
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The largest flow-control window (RFC 9113 §6.9.1).
pub const MAX_WINDOW: i64 = (1 << 31) - 1;

/// RFC 9113 §7 error codes, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason(pub u32);

impl Reason {
    pub const NO_ERROR: Reason = Reason(0x0);
    pub const PROTOCOL_ERROR: Reason = Reason(0x1);
    pub const FLOW_CONTROL_ERROR: Reason = Reason(0x3);
    pub const FRAME_SIZE_ERROR: Reason = Reason(0x6);
    pub const REFUSED_STREAM: Reason = Reason(0x7);
    pub const CANCEL: Reason = Reason(0x8);
    pub const COMPRESSION_ERROR: Reason = Reason(0x9);

    pub fn name(self) -> Option<&'static str> {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        NAMES.get(self.0 as usize).copied()
    }
}

impl std::fmt::Display for Reason {
    /// The code's name, or its number for codes RFC 9113 does not define.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "error code {:#x}", self.0),
        }
    }
}

/// The length of a frame's header.
pub const FRAME_HEAD: usize = 9;

/// A frame's 9-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

/// Appends a frame header announcing `len` payload bytes.
pub fn head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    let s = stream.to_be_bytes();
    out.extend_from_slice(&[
        (len >> 16) as u8,
        (len >> 8) as u8,
        len as u8,
        kind,
        flags,
        s[0] & 0x7f,
        s[1],
        s[2],
        s[3],
    ]);
}

pub fn settings(out: &mut Vec<u8>, values: &[(u16, u32)]) {
    head(out, values.len() * 6, SETTINGS, 0, 0);
    for (id, value) in values {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub fn settings_ack(out: &mut Vec<u8>) {
    head(out, 0, SETTINGS, ACK, 0);
}

pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

pub fn ping_ack(out: &mut Vec<u8>, payload: &[u8]) {
    head(out, 8, PING, ACK, 0);
    out.extend_from_slice(payload);
}

pub fn rst_stream(out: &mut Vec<u8>, stream: u32, reason: Reason) {
    head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&reason.0.to_be_bytes());
}

pub fn goaway(out: &mut Vec<u8>, last_stream: u32, reason: Reason) {
    head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(&reason.0.to_be_bytes());
}

/// Appends a header block as one HEADERS frame and as many CONTINUATION frames as
/// `max_frame` (the server's SETTINGS_MAX_FRAME_SIZE) requires.
pub fn headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool, max_frame: usize) {
    let end = if end_stream { END_STREAM } else { 0 };
    let mut chunks = block.chunks(max_frame.max(1));
    let first = chunks.next().unwrap_or(&[]);
    let more = block.len() > first.len();
    head(
        out,
        first.len(),
        HEADERS,
        end | if more { 0 } else { END_HEADERS },
        stream,
    );
    out.extend_from_slice(first);
    let mut rest = block.len() - first.len();
    for chunk in chunks {
        rest -= chunk.len();
        let flags = if rest == 0 { END_HEADERS } else { 0 };
        head(out, chunk.len(), CONTINUATION, flags, stream);
        out.extend_from_slice(chunk);
    }
}

pub fn data(out: &mut Vec<u8>, stream: u32, chunk: &[u8], end_stream: bool) {
    head(
        out,
        chunk.len(),
        DATA,
        if end_stream { END_STREAM } else { 0 },
        stream,
    );
    out.extend_from_slice(chunk);
}

/// A connection error the client found in what the server sent: the code it sends in its
/// GOAWAY, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnError {
    pub reason: Reason,
    pub what: String,
}

impl ConnError {
    pub fn new(reason: Reason, what: impl Into<String>) -> ConnError {
        ConnError {
            reason,
            what: what.into(),
        }
    }

    /// `Ok` when `ok`, else the error with the message `what` makes.
    pub fn unless(
        ok: bool,
        reason: Reason,
        what: impl FnOnce() -> String,
    ) -> Result<(), ConnError> {
        if ok {
            Ok(())
        } else {
            Err(ConnError::new(reason, what()))
        }
    }
}

/// Whole frames out of a connection's read buffer: bytes land at [`FrameReader::space`],
/// complete frames come out of [`FrameReader::next`], a partial one stays for the next read.
pub struct FrameReader {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl FrameReader {
    pub fn new() -> FrameReader {
        // Four of the largest frames the client accepts, with their headers.
        FrameReader {
            buf: vec![0; 4 * (DEFAULT_MAX_FRAME + 9)],
            start: 0,
            end: 0,
        }
    }

    /// Where the next read goes: the unread tail moves to the front first, so there is
    /// always room for at least one whole frame.
    pub fn space(&mut self) -> &mut [u8] {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.buf.len() - self.end < DEFAULT_MAX_FRAME + 9 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.buf[self.end..]
    }

    pub fn filled(&mut self, n: usize) {
        self.end += n;
    }

    /// Whether the unread bytes begin with `prefix` (an HTTP/1.x answer to the preface).
    pub fn starts_with(&self, prefix: &[u8]) -> bool {
        self.unread().starts_with(prefix)
    }

    /// The bytes read and not yet taken as whole frames.
    pub fn unread(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// The next whole frame, or `None` until more bytes are read. A frame larger than the
    /// client allows is a FRAME_SIZE_ERROR.
    // Not an `Iterator`: the payload borrows the reader, and an error is not the end.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<(Head, &[u8])>, ConnError> {
        let avail = &self.buf[self.start..self.end];
        if avail.len() < 9 {
            return Ok(None);
        }
        let len =
            (usize::from(avail[0]) << 16) | (usize::from(avail[1]) << 8) | usize::from(avail[2]);
        if len > DEFAULT_MAX_FRAME {
            return Err(ConnError::new(
                Reason::FRAME_SIZE_ERROR,
                format!("a frame of {len} bytes, above the {DEFAULT_MAX_FRAME} allowed"),
            ));
        }
        if avail.len() < 9 + len {
            return Ok(None);
        }
        let h = Head {
            len,
            kind: avail[3],
            flags: avail[4],
            stream: u32::from_be_bytes([avail[5], avail[6], avail[7], avail[8]]) & 0x7fff_ffff,
        };
        let at = self.start + 9;
        self.start = at + len;
        Ok(Some((h, &self.buf[at..at + len])))
    }
}

impl Default for FrameReader {
    fn default() -> Self {
        Self::new()
    }
}

/// A padded payload (DATA, HEADERS) without its padding: the pad length byte and the pad.
pub fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], ConnError> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let Some((&pad, rest)) = payload.split_first() else {
        return Err(ConnError::new(
            Reason::PROTOCOL_ERROR,
            "a padded frame with no pad length",
        ));
    };
    let pad = usize::from(pad);
    if pad > rest.len() {
        return Err(ConnError::new(
            Reason::PROTOCOL_ERROR,
            "padding longer than the frame",
        ));
    }
    Ok(&rest[..rest.len() - pad])
}

/// A u32 from the first four bytes of `b` (callers have checked the length).
pub fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_header_block_larger_than_a_frame_goes_on_in_continuation_frames() {
        let block: Vec<u8> = (0..25u8).collect();
        let mut out = Vec::new();
        headers(&mut out, 3, &block, true, 10);
        let mut r = FrameReader::new();
        let n = out.len();
        r.space()[..n].copy_from_slice(&out);
        r.filled(n);
        let mut seen = Vec::new();
        let mut joined = Vec::new();
        while let Some((h, p)) = r.next().unwrap() {
            seen.push((h.kind, h.flags, h.len, h.stream));
            joined.extend_from_slice(p);
        }
        assert_eq!(
            seen,
            vec![
                (HEADERS, END_STREAM, 10, 3),
                (CONTINUATION, 0, 10, 3),
                (CONTINUATION, END_HEADERS, 5, 3)
            ]
        );
        assert_eq!(joined, block);
    }

    #[test]
    fn a_frame_above_the_announced_size_is_a_frame_size_error() {
        let mut out = Vec::new();
        head(&mut out, DEFAULT_MAX_FRAME + 1, DATA, 0, 1);
        let mut r = FrameReader::new();
        r.space()[..9].copy_from_slice(&out);
        r.filled(9);
        assert_eq!(r.next().unwrap_err().reason, Reason::FRAME_SIZE_ERROR);
    }

    #[test]
    fn padding_is_removed_and_overlong_padding_refused() {
        assert_eq!(unpad(PADDED, &[2, b'a', b'b', 0, 0]).unwrap(), b"ab");
        assert_eq!(unpad(0, &[2, b'a']).unwrap(), &[2, b'a']);
        assert!(unpad(PADDED, &[5, b'a']).is_err());
        assert!(unpad(PADDED, &[]).is_err());
    }

    #[test]
    fn reasons_print_their_names_and_unknown_codes_their_number() {
        assert_eq!(Reason(2).to_string(), "INTERNAL_ERROR");
        assert_eq!(Reason::REFUSED_STREAM.to_string(), "REFUSED_STREAM");
        assert_eq!(Reason(0xff).to_string(), "error code 0xff");
    }

    proptest! {
        /// Any bytes, fed in any split: frames come out whole, in order, and the reader
        /// never panics or loses bytes.
        #[test]
        fn the_reader_takes_any_bytes_in_any_split(
            bytes in proptest::collection::vec(any::<u8>(), 0..3000),
            cut in 1usize..700,
        ) {
            let mut r = FrameReader::new();
            let mut consumed = 0usize;
            for piece in bytes.chunks(cut) {
                let space = r.space();
                prop_assert!(space.len() >= piece.len());
                space[..piece.len()].copy_from_slice(piece);
                r.filled(piece.len());
                loop {
                    match r.next() {
                        Ok(Some((h, p))) => {
                            prop_assert_eq!(h.len, p.len());
                            consumed += 9 + p.len();
                        }
                        Ok(None) => break,
                        Err(e) => {
                            prop_assert_eq!(e.reason, Reason::FRAME_SIZE_ERROR);
                            return Ok(());
                        }
                    }
                }
            }
            prop_assert!(consumed <= bytes.len());
        }
    }
}
