//! QUIC's variable-length integers (RFC 9000 §16), HTTP/3's frame layout (RFC 9114 §7.1:
//! a type and a length, each such an integer, then the payload) and its error codes (§8.1).

use std::fmt;

pub const DATA: u64 = 0x0;
pub const HEADERS: u64 = 0x1;
pub const CANCEL_PUSH: u64 = 0x3;
pub const SETTINGS: u64 = 0x4;
pub const PUSH_PROMISE: u64 = 0x5;
pub const GOAWAY: u64 = 0x7;
pub const MAX_PUSH_ID: u64 = 0xd;

/// HTTP/2's frame types that HTTP/3 reserves (PRIORITY, PING, WINDOW_UPDATE, CONTINUATION):
/// receiving one is a connection error (§7.2.8).
pub fn is_http2_only(kind: u64) -> bool {
    matches!(kind, 0x2 | 0x6 | 0x8 | 0x9)
}

pub const H3_NO_ERROR: u64 = 0x100;
pub const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
pub const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
pub const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub const H3_FRAME_ERROR: u64 = 0x106;
pub const H3_EXCESSIVE_LOAD: u64 = 0x107;
pub const H3_ID_ERROR: u64 = 0x108;
pub const H3_MISSING_SETTINGS: u64 = 0x10a;
pub const H3_REQUEST_REJECTED: u64 = 0x10b;
pub const H3_REQUEST_CANCELLED: u64 = 0x10c;
pub const H3_MESSAGE_ERROR: u64 = 0x10e;
pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;

/// An error code's name (RFC 9114 §8.1, RFC 9204 §6), for messages; None for codes the
/// RFCs do not name (a server's own, or a reserved one).
pub fn code_name(code: u64) -> Option<&'static str> {
    Some(match code {
        0x100 => "H3_NO_ERROR",
        0x101 => "H3_GENERAL_PROTOCOL_ERROR",
        0x102 => "H3_INTERNAL_ERROR",
        0x103 => "H3_STREAM_CREATION_ERROR",
        0x104 => "H3_CLOSED_CRITICAL_STREAM",
        0x105 => "H3_FRAME_UNEXPECTED",
        0x106 => "H3_FRAME_ERROR",
        0x107 => "H3_EXCESSIVE_LOAD",
        0x108 => "H3_ID_ERROR",
        0x109 => "H3_SETTINGS_ERROR",
        0x10a => "H3_MISSING_SETTINGS",
        0x10b => "H3_REQUEST_REJECTED",
        0x10c => "H3_REQUEST_CANCELLED",
        0x10d => "H3_REQUEST_INCOMPLETE",
        0x10e => "H3_MESSAGE_ERROR",
        0x10f => "H3_CONNECT_ERROR",
        0x110 => "H3_VERSION_FALLBACK",
        0x200 => "QPACK_DECOMPRESSION_FAILED",
        0x201 => "QPACK_ENCODER_STREAM_ERROR",
        0x202 => "QPACK_DECODER_STREAM_ERROR",
        _ => return None,
    })
}

/// A code as a message shows it: its name and number, or the number alone.
pub fn describe_code(code: u64) -> String {
    match code_name(code) {
        Some(name) => format!("{name} (0x{code:x})"),
        None => format!("error code 0x{code:x}"),
    }
}

/// What the server got wrong on a stream: the code the client answers with, whether it ends
/// the whole connection (RFC 9114 names which do) or only the request, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H3Error {
    pub code: u64,
    pub connection: bool,
    pub what: String,
}

impl H3Error {
    pub fn connection(code: u64, what: impl Into<String>) -> Self {
        H3Error {
            code,
            connection: true,
            what: what.into(),
        }
    }

    pub fn stream(code: u64, what: impl Into<String>) -> Self {
        H3Error {
            code,
            connection: false,
            what: what.into(),
        }
    }
}

impl fmt::Display for H3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.what, describe_code(self.code))
    }
}

/// Appends `v` (below 2^62) in the shortest form.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0x3f => out.push(v as u8),
        0x40..=0x3fff => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        0x4000..=0x3fff_ffff => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// The integer at the start of `b` and its length in bytes; None when `b` ends inside it.
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let len = 1usize << (b.first()? >> 6);
    let bytes = b.get(..len)?;
    let first = u64::from(bytes[0] & 0x3f);
    Some((
        bytes[1..]
            .iter()
            .fold(first, |v, x| (v << 8) | u64::from(*x)),
        len,
    ))
}

/// A frame's type and payload length at the start of `b`, and how many bytes they took;
/// None when `b` ends inside them.
pub fn frame_head(b: &[u8]) -> Option<(u64, u64, usize)> {
    let (kind, a) = varint(b)?;
    let (len, c) = varint(&b[a..])?;
    Some((kind, len, a + c))
}

/// Appends a frame's type and length.
pub fn put_frame_head(out: &mut Vec<u8>, kind: u64, len: u64) {
    put_varint(out, kind);
    put_varint(out, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_in_every_length_and_the_rfc_examples_decode() {
        for v in [
            0,
            37,
            63,
            64,
            15293,
            16383,
            16384,
            494_878_333,
            (1 << 30) - 1,
            1 << 30,
            151_288_809_941_952_652,
            (1 << 62) - 1,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(varint(&out), Some((v, out.len())), "{v}");
            assert_eq!(varint(&out[..out.len() - 1]), None, "{v} cut short");
        }
        // RFC 9000 §A.1.
        assert_eq!(
            varint(&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c])
                .unwrap()
                .0,
            151_288_809_941_952_652
        );
        assert_eq!(varint(&[0x9d, 0x7f, 0x3e, 0x7d]).unwrap().0, 494_878_333);
        assert_eq!(varint(&[0x7b, 0xbd]).unwrap().0, 15293);
        assert_eq!(varint(&[0x25]).unwrap().0, 37);
        assert_eq!(varint(&[0x40, 0x25]).unwrap().0, 37);
    }

    #[test]
    fn a_frame_head_is_found_only_when_whole() {
        let mut out = Vec::new();
        put_frame_head(&mut out, HEADERS, 300);
        assert_eq!(frame_head(&out), Some((HEADERS, 300, 3)));
        assert_eq!(frame_head(&out[..2]), None);
        assert_eq!(describe_code(0x10b), "H3_REQUEST_REJECTED (0x10b)");
        assert_eq!(describe_code(0x1f), "error code 0x1f");
    }
}
