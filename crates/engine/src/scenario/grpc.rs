//! A scenario's `grpc:` steps (issue 36): the call goes over the user's gRPC link (an
//! HTTP/2 connection of its own, `super::h2`), and its answer is handed to the checks and
//! extractions in the form they read any response: the head in HTTP/1.1's form with the
//! call's `grpc-status` (and `grpc-message`) first among its headers, then the first
//! response message as JSON. So `extract: {id: json /id}`, `json /text == "hi"` and
//! `grpc-status == OK` work as they do for an HTTP step's JSON body.

use std::sync::Arc;

use loadmark_plan::{BodyEncoder, GrpcCodec};
use loadmark_wire::http2::state::Capture;

/// The response of a gRPC step as checks read it, and whether it was longer than kept.
pub(super) fn response_view(
    capture: &Capture,
    status: Option<(u32, Option<String>)>,
    codec: &GrpcCodec,
) -> (Vec<u8>, bool) {
    let raw = &capture.bytes;
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return (raw.clone(), capture.overflow);
    };
    let line = raw.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
    let mut out = Vec::with_capacity(raw.len() + 64);
    out.extend_from_slice(&raw[..line]);
    if let Some((code, message)) = status {
        out.extend_from_slice(format!("grpc-status: {code}\r\n").as_bytes());
        if let Some(message) = message {
            // One header line: a message's line breaks would end the head.
            let message = message.replace(['\r', '\n'], " ");
            out.extend_from_slice(format!("grpc-message: {message}\r\n").as_bytes());
        }
    }
    out.extend_from_slice(&raw[line..end + 4]);
    if let Some(message) = first_message(&raw[end + 4..]) {
        // A message that does not decode leaves the body empty: checks on it fail and
        // extractions find nothing, each saying what the head held.
        if let Ok(json) = (codec.decode)(message) {
            out.extend_from_slice(&json);
        }
    }
    (out, capture.overflow)
}

/// The first length-prefixed message of a body, if it came whole and uncompressed.
fn first_message(body: &[u8]) -> Option<&[u8]> {
    let [0, a, b, c, d, rest @ ..] = body else {
        return None;
    };
    rest.get(..u32::from_be_bytes([*a, *b, *c, *d]) as usize)
}

/// A step whose codec the CLI did not set (a plan run by a program that loaded no schema):
/// each call fails saying so, rather than sending JSON as protobuf.
pub(super) fn no_codec(call: &str) -> GrpcCodec {
    let why = format!(
        "grpc step {call}: no schema was loaded for it (run the plan with `loadmark bench`, which reads the plan's `grpc:` or asks the server's reflection)"
    );
    let again = why.clone();
    GrpcCodec {
        encode: BodyEncoder(Arc::new(move |_, _| Err(why.clone()))),
        decode: Arc::new(move |_| Err(again.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec() -> GrpcCodec {
        GrpcCodec {
            encode: BodyEncoder(Arc::new(|_, _| Ok(()))),
            // "Decodes" a message by quoting it.
            decode: Arc::new(|m| {
                Ok(format!("{{\"m\":\"{}\"}}", String::from_utf8_lossy(m)).into_bytes())
            }),
        }
    }

    #[test]
    fn the_status_goes_first_and_the_first_message_becomes_the_body() {
        let mut capture = Capture::default();
        capture.bytes =
            b"HTTP/1.1 200 \r\ncontent-type: application/grpc\r\n\r\n\0\0\0\0\x02hi\0\0\0\0\x01x"
                .to_vec();
        let (view, overflow) =
            response_view(&capture, Some((14, Some("down\r\nnow".into()))), &codec());
        assert!(!overflow);
        assert_eq!(
            String::from_utf8(view).unwrap(),
            "HTTP/1.1 200 \r\ngrpc-status: 14\r\ngrpc-message: down  now\r\ncontent-type: application/grpc\r\n\r\n{\"m\":\"hi\"}"
        );
        // A cut message, or none: an empty body.
        capture.bytes = b"HTTP/1.1 200 \r\n\r\n\0\0\0\0\x09hi".to_vec();
        let (view, _) = response_view(&capture, Some((0, None)), &codec());
        assert_eq!(view, b"HTTP/1.1 200 \r\ngrpc-status: 0\r\n\r\n");
    }
}
