//! RFC 6455 framing, client side: masked frames out, unmasked frames in.
//!
//! Pure functions over byte slices, so every rule is tested without a socket. The session
//! keeps whole frames in its read buffer and reads payloads in place: nothing is copied per
//! message unless a message arrives in fragments.

use std::fmt;

pub const OP_CONTINUATION: u8 = 0x0;
pub const OP_TEXT: u8 = 0x1;
pub const OP_BINARY: u8 = 0x2;
pub const OP_CLOSE: u8 = 0x8;
pub const OP_PING: u8 = 0x9;
pub const OP_PONG: u8 = 0xA;

/// The longest header a frame can have: 2 bytes, 8 of extended length, 4 of mask.
pub const MAX_HEADER: usize = 14;

/// Appends one masked frame with `fin` set. The payload is masked as it is copied, eight
/// bytes at a time.
pub fn encode(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: [u8; 4]) {
    encode_header(out, opcode, payload.len(), mask);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], mask);
}

/// Appends the header of a masked frame whose payload (`len` bytes) the caller appends and
/// masks with [`apply_mask`].
pub fn encode_header(out: &mut Vec<u8>, opcode: u8, len: usize, mask: [u8; 4]) {
    out.push(0x80 | opcode);
    match len {
        0..=125 => out.push(0x80 | len as u8),
        126..=0xFFFF => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
}

/// XORs `data` with the mask (the operation is its own inverse).
pub fn apply_mask(data: &mut [u8], mask: [u8; 4]) {
    let wide = u64::from_ne_bytes([
        mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3],
    ]);
    let mut chunks = data.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let v = u64::from_ne_bytes(chunk.try_into().expect("8 bytes")) ^ wide;
        chunk.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= mask[i % 4];
    }
}

/// A frame header read from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub fin: bool,
    pub opcode: u8,
    /// Bytes of the header itself.
    pub header_len: usize,
    pub payload_len: usize,
}

impl Header {
    pub fn frame_len(&self) -> usize {
        self.header_len + self.payload_len
    }
    pub fn is_control(&self) -> bool {
        self.opcode & 0x8 != 0
    }
}

/// A server frame that breaks RFC 6455; the session ends as a `protocol` error naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// RSV bits set without a negotiated extension.
    Reserved(u8),
    /// An opcode RFC 6455 does not define.
    UnknownOpcode(u8),
    /// Servers must not mask their frames.
    Masked,
    /// A control frame longer than 125 bytes or fragmented.
    BadControl { opcode: u8, len: usize, fin: bool },
    /// Larger than the message limit.
    TooLarge { len: u64, limit: usize },
    /// A continuation with no message started, or a new message inside a fragmented one.
    BadContinuation,
    /// A text message that is not UTF-8.
    NotUtf8,
    /// A Close frame with a 1-byte payload or an invalid code.
    BadClose,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Reserved(bits) => write!(
                f,
                "frame with reserved bits {bits:#05b} set (no extension was negotiated)"
            ),
            FrameError::UnknownOpcode(op) => write!(f, "frame with unknown opcode {op:#x}"),
            FrameError::Masked => f.write_str("masked frame from the server (RFC 6455 5.1)"),
            FrameError::BadControl { opcode, len, fin } => write!(
                f,
                "control frame {opcode:#x} of {len} bytes{} (at most 125, never fragmented)",
                if *fin { "" } else { ", fragmented" }
            ),
            FrameError::TooLarge { len, limit } => {
                write!(f, "message of {len} bytes exceeds the {limit}-byte limit")
            }
            FrameError::BadContinuation => {
                f.write_str("continuation frame out of place (fragments interleaved)")
            }
            FrameError::NotUtf8 => f.write_str("text message that is not valid UTF-8"),
            FrameError::BadClose => f.write_str("Close frame with an invalid payload or code"),
        }
    }
}

/// Reads a frame header from the start of `buf`: `Ok(None)` when more bytes are needed.
pub fn parse_header(buf: &[u8], limit: usize) -> Result<Option<Header>, FrameError> {
    if buf.len() < 2 {
        return Ok(None);
    }
    let (b0, b1) = (buf[0], buf[1]);
    let fin = b0 & 0x80 != 0;
    let rsv = (b0 >> 4) & 0x7;
    if rsv != 0 {
        return Err(FrameError::Reserved(rsv));
    }
    let opcode = b0 & 0x0F;
    if !matches!(
        opcode,
        OP_CONTINUATION | OP_TEXT | OP_BINARY | OP_CLOSE | OP_PING | OP_PONG
    ) {
        return Err(FrameError::UnknownOpcode(opcode));
    }
    if b1 & 0x80 != 0 {
        return Err(FrameError::Masked);
    }
    let (len, header_len) = match b1 & 0x7F {
        126 => {
            if buf.len() < 4 {
                return Ok(None);
            }
            (u64::from(u16::from_be_bytes([buf[2], buf[3]])), 4)
        }
        127 => {
            if buf.len() < 10 {
                return Ok(None);
            }
            (
                u64::from_be_bytes(buf[2..10].try_into().expect("8 bytes")),
                10,
            )
        }
        n => (u64::from(n), 2),
    };
    if opcode & 0x8 != 0 && (len > 125 || !fin) {
        return Err(FrameError::BadControl {
            opcode,
            len: len as usize,
            fin,
        });
    }
    if len > limit as u64 {
        return Err(FrameError::TooLarge { len, limit });
    }
    Ok(Some(Header {
        fin,
        opcode,
        header_len,
        payload_len: len as usize,
    }))
}

/// The code and reason of a Close payload; 1005 (no status) when it is empty.
pub fn parse_close(payload: &[u8]) -> Result<(u16, &str), FrameError> {
    match payload.len() {
        0 => Ok((1005, "")),
        1 => Err(FrameError::BadClose),
        _ => {
            let code = u16::from_be_bytes([payload[0], payload[1]]);
            // Codes a peer may send (RFC 6455 7.4): 1000-1003, 1007-1014, 3000-4999.
            let valid = matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999);
            let reason = std::str::from_utf8(&payload[2..]).map_err(|_| FrameError::BadClose)?;
            if valid {
                Ok((code, reason))
            } else {
                Err(FrameError::BadClose)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a server does: unmask a client frame.
    fn unmask(frame: &[u8]) -> (u8, Vec<u8>) {
        let b1 = frame[1];
        assert!(b1 & 0x80 != 0, "client frames are masked");
        let (len, at) = match b1 & 0x7F {
            126 => (u16::from_be_bytes([frame[2], frame[3]]) as usize, 4),
            127 => (
                u64::from_be_bytes(frame[2..10].try_into().unwrap()) as usize,
                10,
            ),
            n => (n as usize, 2),
        };
        let mask: [u8; 4] = frame[at..at + 4].try_into().unwrap();
        let mut payload = frame[at + 4..].to_vec();
        assert_eq!(payload.len(), len);
        apply_mask(&mut payload, mask);
        (frame[0], payload)
    }

    #[test]
    fn encodes_every_length_form_and_masks() {
        for len in [0usize, 1, 7, 125, 126, 127, 65_535, 65_536, 70_001] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let mut out = Vec::new();
            encode(&mut out, OP_BINARY, &payload, [0xA1, 0x02, 0xF3, 0x44]);
            let (b0, back) = unmask(&out);
            assert_eq!(b0, 0x80 | OP_BINARY);
            assert_eq!(back, payload, "length {len}");
            if len >= 8 {
                assert_ne!(&out[out.len() - len..], &payload[..], "masked on the wire");
            }
        }
    }

    fn server_frame(b0: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![b0];
        match payload.len() {
            n @ 0..=125 => f.push(n as u8),
            n @ 126..=0xFFFF => {
                f.push(126);
                f.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                f.push(127);
                f.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn parses_headers_from_any_prefix() {
        for len in [0usize, 125, 126, 65_535, 65_536] {
            let frame = server_frame(0x80 | OP_TEXT, &vec![b'a'; len]);
            let header = parse_header(&frame, 1 << 20).unwrap().unwrap();
            assert_eq!(header.payload_len, len);
            assert_eq!(header.frame_len(), frame.len());
            for cut in 0..header.header_len {
                assert_eq!(parse_header(&frame[..cut], 1 << 20), Ok(None), "{cut}");
            }
        }
    }

    #[test]
    fn refuses_what_rfc_6455_forbids() {
        let cases: [(&[u8], FrameError); 6] = [
            (&[0xC1, 0x00], FrameError::Reserved(4)),
            (&[0x83, 0x00], FrameError::UnknownOpcode(3)),
            (&[0x81, 0x80, 0, 0, 0, 0], FrameError::Masked),
            (
                &[0x09, 0x00],
                FrameError::BadControl {
                    opcode: OP_PING,
                    len: 0,
                    fin: false,
                },
            ),
            (
                &[0x89, 126, 0, 200],
                FrameError::BadControl {
                    opcode: OP_PING,
                    len: 200,
                    fin: true,
                },
            ),
            (
                &[0x82, 127, 0, 0, 0, 1, 0, 0, 0, 0],
                FrameError::TooLarge {
                    len: 1 << 32,
                    limit: 1 << 24,
                },
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(parse_header(bytes, 1 << 24), Err(want.clone()));
            assert!(!want.to_string().is_empty());
        }
    }

    #[test]
    fn close_payloads() {
        assert_eq!(parse_close(&[]), Ok((1005, "")));
        assert_eq!(
            parse_close(&[0x03, 0xE9, b'b', b'y', b'e']),
            Ok((1001, "bye"))
        );
        assert_eq!(parse_close(&[0x03]), Err(FrameError::BadClose));
        assert_eq!(parse_close(&[0x03, 0xED]), Err(FrameError::BadClose)); // 1005 is reserved
        assert_eq!(parse_close(&[0x03, 0xE8, 0xFF]), Err(FrameError::BadClose));
    }
}
