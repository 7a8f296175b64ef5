//! The server's unidirectional streams (RFC 9114 §6.2): its control stream (SETTINGS first,
//! then GOAWAY), its QPACK encoder and decoder streams (nothing to say to a client that
//! allowed no dynamic table, so their bytes are read and dropped), and stream types the
//! client does not know (read and dropped, §9). A push stream is an error: the client never
//! allows a push.

use super::frame::{
    frame_head, is_http2_only, varint, H3Error, DATA, GOAWAY, H3_FRAME_UNEXPECTED, H3_ID_ERROR,
    H3_MISSING_SETTINGS, HEADERS, MAX_PUSH_ID, PUSH_PROMISE, SETTINGS,
};

const CONTROL: u64 = 0x00;
const PUSH: u64 = 0x01;

/// What the control stream told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Told {
    /// The server's SETTINGS, as (identifier, value) pairs.
    Settings(Vec<(u64, u64)>),
    /// GOAWAY: requests on streams from this id on were not processed (§5.2).
    Goaway(u64),
}

/// One of the server's unidirectional streams, read as it comes.
#[derive(Debug, Default)]
pub struct UniStream {
    /// The stream's type, once its first varint came.
    kind: Option<u64>,
    buf: Vec<u8>,
    settings: bool,
}

impl UniStream {
    /// The server's control stream (its type 0x00 came first).
    pub fn is_control(&self) -> bool {
        self.kind == Some(CONTROL)
    }

    /// Feeds the stream's next bytes; what the control stream told is pushed to `told`.
    pub fn feed(&mut self, bytes: &[u8], told: &mut Vec<Told>) -> Result<(), H3Error> {
        if self.kind.is_some_and(|k| k != CONTROL) {
            return Ok(()); // QPACK's streams and unknown ones: dropped.
        }
        self.buf.extend_from_slice(bytes);
        let mut at = 0;
        if self.kind.is_none() {
            let Some((kind, used)) = varint(&self.buf) else {
                return Ok(());
            };
            if kind == PUSH {
                return Err(H3Error::connection(
                    H3_ID_ERROR,
                    "a push stream, though the client allowed no push",
                ));
            }
            self.kind = Some(kind);
            at = used;
            if kind != CONTROL {
                self.buf.clear();
                return Ok(());
            }
        }
        while let Some((kind, len, used)) = frame_head(&self.buf[at..]) {
            let Some(payload) = self.buf[at + used..].get(..len as usize) else {
                break;
            };
            if !self.settings && kind != SETTINGS {
                return Err(H3Error::connection(
                    H3_MISSING_SETTINGS,
                    format!(
                        "the control stream began with a frame of type 0x{kind:x}, not SETTINGS"
                    ),
                ));
            }
            match kind {
                SETTINGS if self.settings => {
                    return Err(H3Error::connection(
                        H3_FRAME_UNEXPECTED,
                        "a second SETTINGS",
                    ))
                }
                SETTINGS => {
                    self.settings = true;
                    told.push(Told::Settings(pairs(payload)?));
                }
                GOAWAY => {
                    let id = varint(payload).map(|(id, _)| id);
                    let id = id.ok_or_else(|| {
                        H3Error::connection(super::frame::H3_FRAME_ERROR, "an empty GOAWAY")
                    })?;
                    told.push(Told::Goaway(id));
                }
                DATA | HEADERS | PUSH_PROMISE | MAX_PUSH_ID => {
                    return Err(H3Error::connection(
                        H3_FRAME_UNEXPECTED,
                        format!("a frame of type 0x{kind:x} on the control stream"),
                    ))
                }
                k if is_http2_only(k) => {
                    return Err(H3Error::connection(
                        H3_FRAME_UNEXPECTED,
                        format!("HTTP/2's frame type 0x{k:x} on the control stream"),
                    ))
                }
                _ => {} // CANCEL_PUSH (no push was allowed) and unknown types: nothing to do.
            }
            at += used + len as usize;
        }
        self.buf.drain(..at);
        Ok(())
    }
}

fn pairs(mut payload: &[u8]) -> Result<Vec<(u64, u64)>, H3Error> {
    let mut out = Vec::new();
    while !payload.is_empty() {
        let malformed =
            || H3Error::connection(super::frame::H3_FRAME_ERROR, "a malformed SETTINGS");
        let (id, a) = varint(payload).ok_or_else(malformed)?;
        let (value, b) = varint(&payload[a..]).ok_or_else(malformed)?;
        out.push((id, value));
        payload = &payload[a + b..];
    }
    Ok(out)
}

/// The client's control stream: its type and an empty SETTINGS frame (every setting at its
/// default: no QPACK dynamic table, no limit on the field section).
pub const CLIENT_CONTROL: [u8; 3] = [CONTROL as u8, SETTINGS as u8, 0];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_stream_gives_settings_then_goaway_in_any_split() {
        // type 0, SETTINGS {0x6: 16384, 0x1: 0}, an unknown frame 0x21, GOAWAY 8.
        let stream = [
            0x00, 0x04, 0x07, 0x06, 0x80, 0x00, 0x40, 0x00, 0x01, 0x00, 0x21, 1, 7, 0x07, 1, 8,
        ];
        let want = [Told::Settings(vec![(6, 16384), (1, 0)]), Told::Goaway(8)];
        for split in 0..=stream.len() {
            let (mut s, mut told) = (UniStream::default(), Vec::new());
            s.feed(&stream[..split], &mut told).unwrap();
            s.feed(&stream[split..], &mut told).unwrap();
            assert!(s.is_control());
            assert_eq!(told, want, "split {split}");
        }
    }

    #[test]
    fn qpack_and_unknown_streams_are_dropped_and_a_bad_control_stream_is_an_error() {
        let mut told = Vec::new();
        for kind in [0x02u8, 0x03, 0x21] {
            let mut s = UniStream::default();
            s.feed(&[kind, 0x3f, 0xe1, 0xe1], &mut told).unwrap();
            assert!(!s.is_control());
        }
        assert!(told.is_empty());
        let code = |bytes: &[u8]| {
            UniStream::default()
                .feed(bytes, &mut Vec::new())
                .unwrap_err()
                .code
        };
        assert_eq!(code(&[0x01]), H3_ID_ERROR);
        assert_eq!(code(&[0x00, 0x07, 1, 0]), H3_MISSING_SETTINGS);
        assert_eq!(code(&[0x00, 0x04, 0, 0x04, 0]), H3_FRAME_UNEXPECTED);
        assert_eq!(code(&[0x00, 0x04, 0, 0x01, 0]), H3_FRAME_UNEXPECTED);
        assert_eq!(code(&[0x00, 0x04, 0, 0x08, 0]), H3_FRAME_UNEXPECTED);
        assert_eq!(CLIENT_CONTROL, [0, 4, 0]);
    }
}
