//! The little of protobuf's and gRPC's wire formats the service needs: varints, fields of
//! a message, and length-prefixed messages read from a request body as they come.

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;

/// The longest request message read (grpc-go's default receive limit).
pub(crate) const MAX_MESSAGE: usize = 4 << 20;

pub(crate) fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn field_varint(out: &mut Vec<u8>, number: u32, v: u64) {
    varint(out, u64::from(number) << 3);
    varint(out, v);
}

pub(crate) fn field_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    varint(out, (u64::from(number) << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A field of a message: its number and a varint's value or a length-delimited's bytes.
pub(crate) enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

/// The varint and length-delimited fields of `message`, in order; fixed-size ones are
/// skipped; `None` when it is not a protobuf message.
pub(crate) fn fields(mut message: &[u8]) -> Option<Vec<(u32, Value<'_>)>> {
    let mut out = Vec::new();
    while !message.is_empty() {
        let key = read_varint(&mut message)?;
        let number = u32::try_from(key >> 3).ok()?;
        match key & 7 {
            0 => out.push((number, Value::Varint(read_varint(&mut message)?))),
            1 => message = message.get(8..)?,
            2 => {
                let len = usize::try_from(read_varint(&mut message)?).ok()?;
                let bytes = message.get(..len)?;
                message = &message[len..];
                out.push((number, Value::Bytes(bytes)));
            }
            5 => message = message.get(4..)?,
            _ => return None,
        }
    }
    Some(out)
}

fn read_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (b, rest) = bytes.split_first()?;
        *bytes = rest;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A message with gRPC's 5-byte prefix (uncompressed).
pub(crate) fn framed(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    Bytes::from(out)
}

/// A request body's messages, each as soon as it is whole.
pub(crate) struct Messages {
    body: Incoming,
    buf: BytesMut,
}

/// Why a request stream could not be read: the status the call ends with.
pub(crate) struct Broken(pub u32, pub &'static str);

impl Messages {
    pub(crate) fn new(body: Incoming) -> Self {
        Messages {
            body,
            buf: BytesMut::new(),
        }
    }

    /// The next message, `None` after the client's last.
    pub(crate) async fn next(&mut self) -> Result<Option<Bytes>, Broken> {
        loop {
            if self.buf.len() >= 5 {
                if self.buf[0] != 0 {
                    return Err(Broken(12, "compressed messages are not supported"));
                }
                let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]);
                let len = len as usize;
                if len > MAX_MESSAGE {
                    return Err(Broken(8, "a request message over 4 MiB"));
                }
                if self.buf.len() >= 5 + len {
                    self.buf.advance(5);
                    return Ok(Some(self.buf.split_to(len).freeze()));
                }
            }
            match self.body.frame().await {
                None if self.buf.is_empty() => return Ok(None),
                None => return Err(Broken(13, "the request ended inside a message")),
                Some(Err(_)) => return Err(Broken(1, "the client ended the call")),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_what_was_written() {
        let mut m = Vec::new();
        field_varint(&mut m, 1, 300);
        field_bytes(&mut m, 3, b"hi");
        let f = fields(&m).unwrap();
        assert!(matches!(f[0], (1, Value::Varint(300))));
        assert!(matches!(f[1], (3, Value::Bytes(b"hi"))));
        assert!(fields(&[0x08]).is_none(), "a varint cut short");
        assert_eq!(&framed(b"ab")[..], [0, 0, 0, 0, 2, b'a', b'b']);
    }
}
