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
    };
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

/// The frames in `bytes`: (type, flags, stream, payload).
fn frames_of(bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut reader = FrameReader::new();
    reader.space()[..bytes.len()].copy_from_slice(bytes);
    reader.filled(bytes.len());
    let mut out = Vec::new();
    while let Some((head, payload)) = reader.next().unwrap() {
        out.push((head.kind, head.flags, head.stream, payload.to_vec()));
    }
    out
}

fn streaming_state(spec: loadmark_plan::GrpcStreaming) -> State<()> {
    let mut state: State<()> = State::new(Duration::from_secs(5));
    state.settings_seen = true;
    state.grpc = Some(64);
    state.streaming = Some(spec);
    state
}

#[test]
fn a_server_stream_is_cancelled_at_its_count_whatever_came_in_the_same_read() {
    let mut state = streaming_state(loadmark_plan::GrpcStreaming {
        server_streams: true,
        count: Some(2),
        ..Default::default()
    });
    let body = Bytes::from(crate::grpc::frame_message(b"rect"));
    state.open(&[0x83], &body, (), Instant::now() + Duration::from_secs(5));
    state.out.clear();
    let mut server = Vec::new();
    grpc_head(&[(b":status", b"200"), GRPC_CT], false, &mut server);
    let mut three = crate::grpc::frame_message(b"a");
    three.extend(crate::grpc::frame_message(b"b"));
    three.extend(crate::grpc::frame_message(b"c"));
    frame::data(&mut server, 1, &three, false);
    let mut events = Vec::new();
    for (kind, flags, stream, payload) in frames_of(&server) {
        let head = frame::Head {
            len: payload.len(),
            kind,
            flags,
            stream,
        };
        state
            .frame(head, &payload, Instant::now(), &mut events)
            .unwrap();
    }
    let [Event::Response { answer, .. }] = &events[..] else {
        panic!("one response");
    };
    let end = answer.grpc.as_ref().unwrap();
    assert!(end.ended_by_client && end.streaming && end.broken.is_none());
    assert_eq!((end.messages, end.sent), (2, 1));
    assert!(end.first_message.is_some());
    assert_eq!(end.gaps, [0], "the second message came in the first's read");
    let sent = frames_of(&state.out);
    assert!(
        sent.iter()
            .any(|(k, _, s, p)| *k == frame::RST_STREAM && *s == 1 && p[..] == 8u32.to_be_bytes()),
        "RST_STREAM CANCEL: {sent:?}"
    );
}

#[test]
fn a_paced_stream_sends_a_data_frame_per_message_cycling_and_half_closes_after_its_count() {
    let mut state = streaming_state(loadmark_plan::GrpcStreaming {
        client_streams: true,
        count: Some(3),
        interval: Some(Duration::from_millis(10)),
        ..Default::default()
    });
    let mut round = crate::grpc::frame_message(b"one");
    round.extend(crate::grpc::frame_message(b"second"));
    let wake = state.open(
        &[0x83],
        &Bytes::from(round),
        (),
        Instant::now() + Duration::from_secs(5),
    );
    let first = frames_of(&state.out);
    // HEADERS without END_STREAM, then the first message at once.
    assert_eq!(first.len(), 2);
    assert_eq!(
        (first[0].0, first[0].1 & frame::END_STREAM),
        (frame::HEADERS, 0)
    );
    assert_eq!(first[1].0, frame::DATA);
    assert_eq!(first[1].3, crate::grpc::frame_message(b"one"));
    assert_eq!(first[1].1 & frame::END_STREAM, 0);
    assert!(
        wake < Instant::now() + Duration::from_secs(1),
        "woken for the next message"
    );
    state.out.clear();
    // Nothing is due before the interval.
    let mut events = Vec::new();
    state.tick(Instant::now(), &mut events);
    assert!(state.out.is_empty());
    // Late: both messages due go out, the last with END_STREAM.
    state.tick(Instant::now() + Duration::from_millis(25), &mut events);
    let rest = frames_of(&state.out);
    let payloads: Vec<&[u8]> = rest.iter().map(|f| &f.3[..]).collect();
    assert_eq!(
        payloads,
        [
            &crate::grpc::frame_message(b"second")[..],
            &crate::grpc::frame_message(b"one")[..]
        ]
    );
    assert_eq!(rest[0].1 & frame::END_STREAM, 0);
    assert_eq!(rest[1].1 & frame::END_STREAM, frame::END_STREAM);
    assert!(events.is_empty(), "the call waits for its response");
    assert_eq!(state.streams[&1].wake(), state.streams[&1].deadline);
}
