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

/// A gRPC stream (messages up to 64 bytes) fed `server`'s frames: its one event.
fn grpc_end(server: &[u8]) -> (Event<()>, Vec<u8>) {
    let mut state: State<()> = State::new(Duration::from_secs(5));
    state.settings_seen = true;
    state.grpc = Some(64);
    let deadline = Instant::now() + Duration::from_secs(5);
    state.open(
        &[0x83, 0x86, 0x84, 0x41, 0x01, b'x'],
        &Bytes::new(),
        (),
        deadline,
    );
    state.out.clear();
    let mut reader = FrameReader::new();
    reader.space()[..server.len()].copy_from_slice(server);
    reader.filled(server.len());
    let mut events = Vec::new();
    while let Some((head, payload)) = reader.next().unwrap() {
        state
            .frame(head, payload, Instant::now(), &mut events)
            .unwrap();
    }
    assert_eq!(events.len(), 1, "one event, never a hang");
    (events.pop().unwrap(), std::mem::take(&mut state.out))
}

fn grpc_head(fields: &[(&[u8], &[u8])], end: bool, out: &mut Vec<u8>) {
    let mut block = Vec::new();
    for (n, v) in fields {
        encode_field(n, v, &mut block);
    }
    frame::headers(out, 1, &block, end, 16_384);
}

fn grpc_outcome(server: &[u8]) -> (u32, Option<String>, crate::grpc::End) {
    let (Event::Response { answer, .. }, _) = grpc_end(server) else {
        panic!("no response");
    };
    let end = answer.grpc.expect("a gRPC end");
    let (code, message) = end.outcome(answer.status);
    (code, message, end)
}

const GRPC_CT: (&[u8], &[u8]) = (b"content-type", b"application/grpc");

#[test]
fn grpc_status_comes_from_trailers_or_a_trailers_only_head() {
    let mut out = Vec::new();
    grpc_head(&[(b":status", b"200"), GRPC_CT], false, &mut out);
    frame::data(&mut out, 1, &crate::grpc::frame_message(b"hi"), false);
    grpc_head(&[(b"grpc-status", b"0")], true, &mut out);
    let (code, message, end) = grpc_outcome(&out);
    assert_eq!(
        (code, message, end.messages, end.trailers_only),
        (0, None, 1, false)
    );

    let mut out = Vec::new();
    grpc_head(
        &[
            (b":status", b"200"),
            GRPC_CT,
            (b"grpc-status", b"14"),
            (b"grpc-message", b"down%20now"),
        ],
        true,
        &mut out,
    );
    let (code, message, end) = grpc_outcome(&out);
    assert_eq!(
        (code, message.as_deref(), end.trailers_only),
        (14, Some("down now"), true)
    );
}

#[test]
fn hostile_grpc_answers_end_with_the_status_a_client_gives() {
    // No grpc-status at all: INTERNAL.
    let mut out = Vec::new();
    grpc_head(&[(b":status", b"200"), GRPC_CT], false, &mut out);
    frame::data(&mut out, 1, &crate::grpc::frame_message(b"hi"), true);
    let (code, message, _) = grpc_outcome(&out);
    assert_eq!(code, 13);
    assert!(message.unwrap().contains("without grpc-status"));
    // An unknown compressed flag: INTERNAL, and the stream is reset (CANCEL).
    let mut out = Vec::new();
    grpc_head(&[(b":status", b"200"), GRPC_CT], false, &mut out);
    frame::data(&mut out, 1, &[7, 0, 0, 0, 1, 0], false);
    let (Event::Response { answer, .. }, sent) = grpc_end(&out) else {
        panic!("no response");
    };
    assert_eq!(answer.grpc.unwrap().outcome(200).0, 13);
    assert_eq!(&sent[3..5], [frame::RST_STREAM, 0], "RST_STREAM sent");
    // A message over the limit: RESOURCE_EXHAUSTED, before its bytes come.
    let mut out = Vec::new();
    grpc_head(&[(b":status", b"200"), GRPC_CT], false, &mut out);
    frame::data(&mut out, 1, &[0, 0, 0, 1, 0], false);
    assert_eq!(grpc_outcome(&out).0, 8);
    // A body cut inside a message, then OK trailers: INTERNAL all the same.
    let mut out = Vec::new();
    grpc_head(&[(b":status", b"200"), GRPC_CT], false, &mut out);
    frame::data(&mut out, 1, &[0, 0, 0, 0, 9, 1], false);
    grpc_head(&[(b"grpc-status", b"0")], true, &mut out);
    assert_eq!(grpc_outcome(&out).0, 13);
    // HTTP 503 without grpc-status: UNAVAILABLE.
    let mut out = Vec::new();
    grpc_head(&[(b":status", b"503")], true, &mut out);
    assert_eq!(grpc_outcome(&out).0, 14);
    // RST_STREAM from the server: a transport failure of the stream, as for HTTP/2.
    let mut out = Vec::new();
    grpc_head(&[(b":status", b"200"), GRPC_CT], false, &mut out);
    frame::rst_stream(&mut out, 1, frame::Reason(0x2));
    let (event, _) = grpc_end(&out);
    assert!(matches!(event, Event::Failed { .. }));
}
