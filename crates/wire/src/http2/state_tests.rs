//! A response kept for checks: its head in HTTP/1.1's form, its body, and the limit.

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::*;
use crate::http2::frame::FrameReader;
use crate::http2::hpack::encode_field;

/// Opens one stream (capturing up to `limit` when given), feeds it `server`'s frames, and
/// returns its one event and what was kept.
fn end(server: &[u8], limit: Option<usize>) -> (Event<()>, Option<Box<Capture>>) {
    let mut state: State<()> = State::new(Duration::from_secs(5));
    state.settings_seen = true;
    let deadline = Instant::now() + Duration::from_secs(5);
    let block = [0x82, 0x86, 0x84, 0x41, 0x01, b'x'];
    match limit {
        Some(limit) => state.open_capturing(&block, &Bytes::new(), (), deadline, limit),
        None => state.open(&block, &Bytes::new(), (), deadline),
    }
    let mut reader = FrameReader::new();
    let space = reader.space();
    space[..server.len()].copy_from_slice(server);
    reader.filled(server.len());
    let mut events = Vec::new();
    while let Some((head, payload)) = reader.next().unwrap() {
        state
            .frame(head, payload, Instant::now(), &mut events)
            .unwrap();
    }
    assert_eq!(events.len(), 1);
    (events.pop().unwrap(), state.take_captured())
}

/// A 201 with two headers and a body in two DATA frames, after a 103 Early Hints.
fn response() -> Vec<u8> {
    let mut out = Vec::new();
    let mut hints = Vec::new();
    encode_field(b":status", b"103", &mut hints);
    encode_field(b"link", b"</a.css>", &mut hints);
    frame::headers(&mut out, 1, &hints, false, 16_384);
    let mut block = Vec::new();
    encode_field(b":status", b"201", &mut block);
    encode_field(b"content-type", b"application/json", &mut block);
    encode_field(b"x-token", b"t-42", &mut block);
    frame::headers(&mut out, 1, &block, false, 16_384);
    frame::data(&mut out, 1, b"{\"id\":", false);
    frame::data(&mut out, 1, b"7}", true);
    out
}

#[test]
fn a_captured_response_reads_as_http1_head_and_body() {
    let (Event::Response { answer, .. }, captured) = end(&response(), Some(1 << 20)) else {
        panic!("no response");
    };
    assert_eq!((answer.status, answer.body), (201, 8));
    let captured = captured.expect("kept");
    assert!(!captured.overflow);
    assert_eq!(
        String::from_utf8(captured.bytes).unwrap(),
        "HTTP/1.1 201 \r\ncontent-type: application/json\r\nx-token: t-42\r\n\r\n{\"id\":7}"
    );
}

#[test]
fn a_response_past_the_limit_is_cut_and_says_so_and_one_not_asked_for_is_not_kept() {
    let (Event::Response { .. }, captured) = end(&response(), Some(20)) else {
        panic!("no response");
    };
    let captured = captured.expect("kept");
    assert!(captured.overflow);
    assert_eq!(captured.bytes, b"HTTP/1.1 201 \r\nconte");
    let (Event::Response { answer, .. }, captured) = end(&response(), None) else {
        panic!("no response");
    };
    assert!(captured.is_none());
    assert_eq!(answer.body, 8, "counted all the same");
}
