//! The connection against scripted servers over an in-memory pipe: a server's bytes are
//! written before the client reads, then the pipe closes, so each case ends by itself. The
//! property every case checks: each stream opened ends exactly once (a response or a
//! failure), whatever the server sent, and nothing panics.

use std::future::poll_fn;
use std::time::{Duration, Instant};

use bytes::Bytes;
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use loadmark_wire::http2::frame::{self, Reason};
use loadmark_wire::http2::hpack::encode_field;
use loadmark_wire::http2::Event;

use super::conn::H2Conn;
use crate::transport::Inbound;

impl Inbound for DuplexStream {}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn request_block() -> Vec<u8> {
    let mut block = Vec::new();
    for (n, v) in [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", "x"),
        (":path", "/"),
    ] {
        encode_field(n.as_bytes(), v.as_bytes(), &mut block);
    }
    block
}

/// What the client saw: (responses as (stream tag, status, body bytes), failures as (tag,
/// message, unprocessed)), once the server's bytes were all read and the pipe closed.
type Seen = (Vec<(u32, u16, u64)>, Vec<(u32, String, bool)>);

/// Runs a client with `streams` requests (each with `body`) against a server that sends an
/// empty SETTINGS, then `script`, then closes.
fn against(script: &[u8], streams: u32, body: &[u8]) -> Result<Seen, String> {
    runtime().block_on(async {
        let (client, server) = tokio::io::duplex(1 << 22);
        let (mut rd, mut wr) = tokio::io::split(server);
        let mut settings = Vec::new();
        frame::settings(&mut settings, &[]);
        wr.write_all(&settings).await.unwrap();
        // The client's writes must not block: read them away as they come, counted.
        let drain = tokio::spawn(async move {
            let mut sink = vec![0u8; 1 << 16];
            let mut total = 0u64;
            while let Ok(n @ 1..) = rd.read(&mut sink).await {
                total += n as u64;
            }
            total
        });
        let mut conn: H2Conn<DuplexStream, u32> = H2Conn::handshake(client, Duration::from_secs(5))
            .await
            .map_err(|e| e.message)?;
        let deadline = Instant::now() + Duration::from_secs(10);
        let body = Bytes::copy_from_slice(body);
        let block = request_block();
        let mut opened = 0;
        while opened < streams && conn.can_open() {
            conn.open(&block, &body, opened, deadline);
            opened += 1;
        }
        // The script once the streams are open, then the end of the server's bytes.
        wr.write_all(script).await.unwrap();
        wr.shutdown().await.unwrap();
        let (mut ok, mut failed) = (Vec::new(), Vec::new());
        let mut events = Vec::new();
        // Bytes as the run counts them: samples plus the connection's own.
        let mut counted = (0u64, 0u64);
        while conn.active() > 0 {
            events.clear();
            let polled = tokio::time::timeout(
                Duration::from_secs(5),
                poll_fn(|cx| conn.poll(cx, &mut events)),
            );
            if polled.await.is_err() {
                return Err(format!("hung with {} streams open", conn.active()));
            }
            let (r, w) = conn.unattributed(false);
            counted = (counted.0 + r, counted.1 + w);
            for e in events.drain(..) {
                match e {
                    Event::Response { tag, answer } => {
                        counted = (counted.0 + answer.read, counted.1 + answer.written);
                        ok.push((tag, answer.status, answer.body))
                    }
                    Event::Failed { tag, failure } => {
                        failed.push((tag, failure.message, failure.unprocessed))
                    }
                }
            }
        }
        let (r, w) = conn.unattributed(true);
        counted = (counted.0 + r, counted.1 + w);
        // Every byte the client read, and every byte that reached the server, counted once.
        assert_eq!(counted.0, conn.wire().0, "bytes read");
        drop(conn);
        assert_eq!(counted.1, drain.await.unwrap(), "bytes written");
        let mut tags: Vec<u32> = ok
            .iter()
            .map(|o| o.0)
            .chain(failed.iter().map(|f| f.0))
            .collect();
        tags.sort();
        assert_eq!(
            tags,
            (0..opened).collect::<Vec<_>>(),
            "each stream ends once"
        );
        Ok((ok, failed))
    })
}

fn status_200(stream: u32, end: bool) -> Vec<u8> {
    let mut out = Vec::new();
    frame::headers(&mut out, stream, &[0x88], end, 16_384);
    out
}

#[test]
fn responses_are_counted_with_status_and_body_bytes() {
    let mut script = status_200(1, false);
    frame::data(&mut script, 1, b"hello", false);
    frame::data(&mut script, 1, b"!", true);
    script.extend(status_200(3, true));
    let (ok, failed) = against(&script, 2, b"").unwrap();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(ok, vec![(0, 200, 6), (1, 200, 0)]);
}

#[test]
fn an_informational_response_is_skipped_and_trailers_end_the_stream() {
    let mut script = Vec::new();
    // 100 Continue: static entry 8 is 200, so 100 is a literal with name index 8.
    let mut block = Vec::new();
    encode_field(b":status", b"100", &mut block);
    frame::headers(&mut script, 1, &block, false, 16_384);
    script.extend(status_200(1, false));
    frame::data(&mut script, 1, b"ab", false);
    let mut trailers = Vec::new();
    encode_field(b"grpc-status", b"0", &mut trailers);
    frame::headers(&mut script, 1, &trailers, true, 16_384);
    let (ok, failed) = against(&script, 1, b"").unwrap();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(ok, vec![(0, 200, 2)]);
}

#[test]
fn goaway_fails_the_streams_above_its_last_id_as_unprocessed() {
    let mut script = status_200(1, true);
    frame::goaway(&mut script, 1, Reason::NO_ERROR);
    let (ok, failed) = against(&script, 3, b"").unwrap();
    assert_eq!(ok, vec![(0, 200, 0)]);
    assert_eq!(failed.len(), 2);
    for (_, message, unprocessed) in &failed {
        assert!(unprocessed, "{message}");
        assert!(message.contains("GOAWAY NO_ERROR"), "{message}");
    }
}

#[test]
fn refused_stream_is_unprocessed_and_other_codes_are_named() {
    let mut script = Vec::new();
    frame::rst_stream(&mut script, 1, Reason::REFUSED_STREAM);
    frame::rst_stream(&mut script, 3, Reason(0x2));
    let (_, failed) = against(&script, 2, b"").unwrap();
    assert_eq!(failed[0].1, "RST_STREAM REFUSED_STREAM from the server");
    assert!(failed[0].2);
    assert_eq!(failed[1].1, "RST_STREAM INTERNAL_ERROR from the server");
    assert!(!failed[1].2);
}

#[test]
fn a_server_speaking_http1_is_named_at_the_handshake() {
    runtime().block_on(async {
        let (client, mut server) = tokio::io::duplex(1 << 16);
        server
            .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            .await
            .unwrap();
        let e = H2Conn::<DuplexStream, u32>::handshake(client, Duration::from_secs(5))
            .await
            .err()
            .unwrap();
        assert!(e.message.contains("answered in HTTP/1.x"), "{}", e.message);
        assert_eq!(
            e.not_h2.as_deref(),
            Some("it answered `HTTP/1.1 400 Bad Request`")
        );
        // The preface, SETTINGS and WINDOW_UPDATE went out, then a GOAWAY; the answer came in.
        assert_eq!(e.bytes.0, 47);
        assert_eq!(e.bytes.1, 24 + (9 + 12) + (9 + 4) + (9 + 8));
    });
}

/// The handshake's verdict on what a server sent instead of SETTINGS: not HTTP/2 at all
/// (`not_h2`), or HTTP/2 that went wrong (`None`).
fn not_h2_after(server_bytes: &[u8]) -> Option<String> {
    runtime().block_on(async {
        let (client, mut server) = tokio::io::duplex(1 << 16);
        server.write_all(server_bytes).await.unwrap();
        server.shutdown().await.unwrap();
        let e = H2Conn::<DuplexStream, u32>::handshake(client, Duration::from_secs(5))
            .await
            .err()
            .expect("no handshake without SETTINGS");
        assert_eq!(e.bytes.0, server_bytes.len() as u64);
        e.not_h2
    })
}

#[test]
fn a_close_or_bytes_that_are_not_frames_are_not_http2_but_a_bad_settings_is() {
    assert_eq!(
        not_h2_after(b"").as_deref(),
        Some("it closed the connection without answering the preface")
    );
    assert_eq!(
        not_h2_after(b"\x15\x03\x01\x00\x02\x02\x50").as_deref(),
        Some("it answered `\\x15\\x03\\x01\\x00\\x02\\x02P` and closed the connection")
    );
    let mut ping = Vec::new();
    frame::head(&mut ping, 8, frame::PING, 0, 0);
    ping.extend_from_slice(&[0; 8]);
    assert_eq!(
        not_h2_after(&ping).as_deref(),
        Some("it answered bytes that are not an HTTP/2 SETTINGS frame: `\\x00\\x00\\x08\\x06\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00`")
    );
    let mut bad = Vec::new();
    frame::settings(&mut bad, &[(frame::SETTINGS_ENABLE_PUSH, 7)]);
    assert_eq!(
        not_h2_after(&bad),
        None,
        "an HTTP/2 server with a bad setting"
    );
}

#[test]
fn every_frame_byte_is_counted_once_responses_and_connection_apart() {
    // Padding, CONTINUATION, a PING and a connection-level WINDOW_UPDATE among responses.
    let mut script = Vec::new();
    frame::head(&mut script, 1, frame::HEADERS, 0, 1);
    script.push(0x88);
    frame::head(&mut script, 0, frame::CONTINUATION, frame::END_HEADERS, 1);
    frame::head(&mut script, 8, frame::PING, 0, 0);
    script.extend_from_slice(b"pingpong");
    frame::head(&mut script, 1 + 5 + 10, frame::DATA, frame::PADDED, 1);
    script.push(10);
    script.extend_from_slice(b"hello");
    script.extend_from_slice(&[0; 10]);
    frame::window_update(&mut script, 0, 1000);
    frame::data(&mut script, 1, b"", true);
    script.extend(status_200(3, true));
    let (ok, failed) = against(&script, 2, b"post!").unwrap();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(ok, vec![(0, 200, 5), (1, 200, 0)]);
}

#[test]
fn an_upload_waits_for_window_and_goes_out_in_frames_the_server_allows() {
    runtime().block_on(async {
        let (client, mut server) = tokio::io::duplex(1 << 22);
        let mut bytes = Vec::new();
        frame::settings(&mut bytes, &[]);
        server.write_all(&bytes).await.unwrap();
        let mut conn: H2Conn<DuplexStream, u32> = H2Conn::handshake(client, Duration::from_secs(5))
            .await
            .unwrap();
        let body = Bytes::from(vec![7u8; 100_000]);
        conn.open(
            &request_block(),
            &body,
            0,
            Instant::now() + Duration::from_secs(10),
        );
        let mut events = Vec::new();
        let _ = poll_fn(|cx| {
            let _ = conn.poll(cx, &mut events);
            std::task::Poll::Ready(())
        })
        .await;
        // The default windows allow 65,535 body bytes; the rest waits for WINDOW_UPDATE.
        let sent = data_bytes(&mut server).await;
        assert_eq!(sent, 65_535);
        let mut grant = Vec::new();
        frame::window_update(&mut grant, 0, 50_000);
        frame::window_update(&mut grant, 1, 50_000);
        server.write_all(&grant).await.unwrap();
        let _ = tokio::time::timeout(
            Duration::from_millis(200),
            poll_fn(|cx| conn.poll(cx, &mut events)),
        )
        .await;
        assert_eq!(data_bytes(&mut server).await, 100_000 - 65_535);
    });
}

/// A stream that counts the client's writes that moved bytes (each is a `sendto` on TCP).
struct CountingWrites {
    inner: DuplexStream,
    writes: std::rc::Rc<std::cell::Cell<usize>>,
}

impl Inbound for CountingWrites {}

impl tokio::io::AsyncRead for CountingWrites {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for CountingWrites {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let done = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(done, std::task::Poll::Ready(Ok(1..))) {
            self.writes.set(self.writes.get() + 1);
        }
        done
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// grpc-go sends a PING (and a WINDOW_UPDATE) with each answer: the ACK goes out in the same
/// write as the next request, not in one of its own (a `sendto` per call, issue 36).
#[test]
fn the_ack_a_response_calls_for_goes_out_with_the_next_request_in_one_write() {
    runtime().block_on(async {
        let (client, mut server) = tokio::io::duplex(1 << 22);
        let writes = std::rc::Rc::new(std::cell::Cell::new(0));
        let client = CountingWrites {
            inner: client,
            writes: writes.clone(),
        };
        let mut bytes = Vec::new();
        frame::settings(&mut bytes, &[]);
        server.write_all(&bytes).await.unwrap();
        let mut conn: H2Conn<CountingWrites, u32> =
            H2Conn::handshake(client, Duration::from_secs(5))
                .await
                .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let (block, body) = (request_block(), Bytes::new());
        conn.open(&block, &body, 1, deadline);
        let mut events = Vec::new();
        poll_fn(|cx| {
            let _ = conn.poll(cx, &mut events);
            std::task::Poll::Ready(())
        })
        .await;
        let mut buf = vec![0u8; 1 << 16];
        let _ = server.read(&mut buf).await.unwrap(); // preface, SETTINGS, ACK, HEADERS
                                                      // The answer: a PING and the response, read in one read.
        let mut answer = Vec::new();
        frame::head(&mut answer, 8, frame::PING, 0, 0);
        answer.extend_from_slice(b"bdp-ping");
        answer.extend(status_200(1, true));
        server.write_all(&answer).await.unwrap();
        let before = writes.get();
        tokio::time::timeout(
            Duration::from_secs(5),
            poll_fn(|cx| conn.poll(cx, &mut events)),
        )
        .await
        .expect("the response ends the stream");
        assert_eq!(events.len(), 1, "one response");
        assert_eq!(
            writes.get(),
            before,
            "nothing written before the next request"
        );
        // The next request, then a poll: the PING ACK and its HEADERS in one write.
        events.clear();
        conn.open(&block, &body, 3, deadline);
        poll_fn(|cx| {
            let _ = conn.poll(cx, &mut events);
            std::task::Poll::Ready(())
        })
        .await;
        assert_eq!(
            writes.get(),
            before + 1,
            "one write for the ACK and the request"
        );
        let n = server.read(&mut buf).await.unwrap();
        let mut expected = Vec::new();
        frame::ping_ack(&mut expected, b"bdp-ping");
        frame::headers(&mut expected, 3, &block, true, 16_384);
        assert_eq!(&buf[..n], &expected[..]);
    });
}

/// The DATA payload bytes the client has written so far (frames read whole from `server`).
async fn data_bytes(server: &mut DuplexStream) -> usize {
    let mut all = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    while let Ok(Ok(n)) =
        tokio::time::timeout(Duration::from_millis(50), server.read(&mut buf)).await
    {
        if n == 0 {
            break;
        }
        all.extend_from_slice(&buf[..n]);
    }
    let mut at = if all.starts_with(frame::PREFACE) {
        frame::PREFACE.len()
    } else {
        0
    };
    let mut total = 0;
    while at + 9 <= all.len() {
        let len = (usize::from(all[at]) << 16)
            | (usize::from(all[at + 1]) << 8)
            | usize::from(all[at + 2]);
        if all[at + 3] == frame::DATA {
            total += len;
        }
        at += 9 + len;
    }
    total
}

/// A frame a server might send: any type, flags and payload, on the connection or a stream
/// the client opened (or not).
fn any_frame() -> impl Strategy<Value = Vec<u8>> {
    (
        0u8..11,
        any::<u8>(),
        prop_oneof![Just(0u32), Just(1), Just(2), Just(3), Just(5), Just(99)],
        proptest::collection::vec(any::<u8>(), 0..24),
        any::<bool>(),
    )
        .prop_map(|(kind, flags, stream, payload, status)| {
            let mut out = Vec::new();
            if kind == frame::HEADERS && status {
                // Often a well-formed response, so streams get past their headers.
                frame::headers(&mut out, stream, &[0x88], flags & 1 == 1, 16_384);
            } else {
                frame::head(&mut out, payload.len(), kind, flags, stream);
                out.extend_from_slice(&payload);
            }
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Whatever frames a server sends, every stream ends exactly once and nothing hangs or
    /// panics.
    #[test]
    fn any_frames_end_every_stream_once(
        frames in proptest::collection::vec(any_frame(), 0..12),
        upload in any::<bool>(),
    ) {
        let script: Vec<u8> = frames.concat();
        let body: &[u8] = if upload { b"0123456789" } else { b"" };
        if let Err(e) = against(&script, 3, body) {
            // Only a handshake may fail (a first frame that is not SETTINGS is impossible
            // here: the script comes after one).
            prop_assert!(e.starts_with("HTTP/2 handshake"), "{}", e);
        }
    }
}
