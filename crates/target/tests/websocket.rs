//! The `/ws/` endpoints over real loopback sockets, driven by tokio-tungstenite's client: an
//! implementation independent of both the server's glue and loadmark's own client.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream as StdTcpStream};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use loadmark_target::{start, RunningServer, ServerConfig, MAX_WS_MESSAGE_BYTES};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::error::{Error as WsError, ProtocolError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Bytes, Message};
use tokio_tungstenite::WebSocketStream;

/// Upper bound on any single wait, so a server bug fails a test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(10);

type Ws = WebSocketStream<TcpStream>;

fn server_with(threads: usize) -> RunningServer {
    start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads,
        ..Default::default()
    })
    .unwrap()
}

fn server() -> RunningServer {
    server_with(1)
}

async fn try_connect(addr: SocketAddr, path: &str) -> Result<Ws, WsError> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    // The client must take the largest message the server may send back.
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_WS_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_WS_MESSAGE_BYTES));
    let url = format!("ws://{addr}{path}");
    tokio::time::timeout(
        PATIENCE,
        tokio_tungstenite::client_async_with_config(url, tcp, Some(config)),
    )
    .await
    .expect("handshake timed out")
    .map(|(ws, response)| {
        assert_eq!(response.status(), 101);
        ws
    })
}

async fn connect(addr: SocketAddr, path: &str) -> Ws {
    try_connect(addr, path).await.unwrap()
}

/// The next message, control frames included.
async fn next(ws: &mut Ws) -> Option<Result<Message, WsError>> {
    tokio::time::timeout(PATIENCE, ws.next())
        .await
        .expect("no message in time")
}

async fn recv(ws: &mut Ws) -> Message {
    next(ws).await.expect("stream ended").unwrap()
}

/// Payload bytes that differ from one position to the next, so a shifted or truncated
/// echo cannot pass.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

fn text_pattern(len: usize) -> String {
    (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect()
}

const BOUNDARIES: [usize; 9] = [0, 1, 125, 126, 127, 65_535, 65_536, 65_537, 1 << 20];

#[tokio::test]
async fn echo_returns_binary_of_every_length_class() {
    let server = server();
    let mut ws = connect(server.local_addr(), "/ws/echo").await;
    let mut bytes = 0;
    for len in BOUNDARIES {
        let payload = pattern(len);
        ws.send(Message::binary(payload.clone())).await.unwrap();
        assert_eq!(
            recv(&mut ws).await,
            Message::Binary(Bytes::from(payload)),
            "{len} B"
        );
        bytes += len as u64;
    }
    assert_eq!(server.ws_sessions(), 1);
    assert_eq!(server.ws_messages_received(), BOUNDARIES.len() as u64);
    assert_eq!(server.ws_messages_sent(), BOUNDARIES.len() as u64);
    assert_eq!(server.ws_bytes_received(), bytes);
}

#[tokio::test]
async fn echo_returns_text_as_text() {
    let server = server();
    let mut ws = connect(server.local_addr(), "/ws/echo").await;
    for len in BOUNDARIES {
        let payload = text_pattern(len);
        ws.send(Message::text(payload.clone())).await.unwrap();
        assert_eq!(recv(&mut ws).await, Message::text(payload), "{len} B");
    }
    let unicode = "grüße, 世界 🌍";
    ws.send(Message::text(unicode)).await.unwrap();
    assert_eq!(recv(&mut ws).await, Message::text(unicode));
}

#[tokio::test]
async fn echo_takes_16_mib_and_refuses_more_with_close_1009() {
    let server = server();
    let mut ws = connect(server.local_addr(), "/ws/echo").await;
    let payload = Bytes::from(pattern(MAX_WS_MESSAGE_BYTES));
    ws.send(Message::Binary(payload.clone())).await.unwrap();
    assert_eq!(recv(&mut ws).await, Message::Binary(payload));
    ws.send(Message::binary(pattern(MAX_WS_MESSAGE_BYTES + 1)))
        .await
        .unwrap();
    match recv(&mut ws).await {
        Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Size),
        other => panic!("expected Close 1009, got {other:?}"),
    }
    assert_eq!(server.ws_messages_received(), 1);
    assert_eq!(server.ws_bytes_received(), MAX_WS_MESSAGE_BYTES as u64);
}

#[tokio::test]
async fn pipelined_messages_all_come_back_in_order() {
    let server = server();
    let mut ws = connect(server.local_addr(), "/ws/echo").await;
    const N: usize = 2_000;
    for i in 0..N {
        ws.feed(Message::text(i.to_string())).await.unwrap();
    }
    ws.flush().await.unwrap();
    for i in 0..N {
        assert_eq!(recv(&mut ws).await, Message::text(i.to_string()));
    }
    assert_eq!(server.ws_messages_sent(), N as u64);
}

#[tokio::test]
async fn ping_is_answered_with_a_pong_of_the_same_payload() {
    let server = server();
    let mut ws = connect(server.local_addr(), "/ws/echo").await;
    for payload in [&b""[..], b"rtt-1", &[7u8; 125]] {
        ws.send(Message::Ping(Bytes::copy_from_slice(payload)))
            .await
            .unwrap();
        assert_eq!(
            recv(&mut ws).await,
            Message::Pong(Bytes::copy_from_slice(payload))
        );
    }
    // A ping between data messages does not disturb the echoes around it.
    ws.send(Message::text("a")).await.unwrap();
    ws.send(Message::Ping(Bytes::from_static(b"p")))
        .await
        .unwrap();
    ws.send(Message::text("b")).await.unwrap();
    assert_eq!(recv(&mut ws).await, Message::text("a"));
    assert_eq!(recv(&mut ws).await, Message::Pong(Bytes::from_static(b"p")));
    assert_eq!(recv(&mut ws).await, Message::text("b"));
    assert_eq!(
        server.ws_messages_received(),
        2,
        "pings are not data messages"
    );
    assert_eq!(server.ws_messages_sent(), 2, "pongs are not data messages");
}

#[tokio::test]
async fn client_close_is_answered_with_the_same_code_then_the_connection_ends() {
    let server = server();
    let mut ws = connect(server.local_addr(), "/ws/echo").await;
    ws.send(Message::text("before")).await.unwrap();
    assert_eq!(recv(&mut ws).await, Message::text("before"));
    ws.send(Message::Close(Some(CloseFrame {
        code: CloseCode::Library(4321),
        reason: "done".into(),
    })))
    .await
    .unwrap();
    match recv(&mut ws).await {
        Message::Close(Some(frame)) => {
            assert_eq!(frame.code, CloseCode::Library(4321));
            assert_eq!(frame.reason.as_str(), "done");
        }
        other => panic!("expected the Close echoed, got {other:?}"),
    }
    // The server ends TCP after the handshake: the client's stream ends cleanly.
    assert!(next(&mut ws).await.is_none());
    let mut raw = ws.into_inner();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(
        PATIENCE,
        tokio::io::AsyncReadExt::read_to_end(&mut raw, &mut rest),
    )
    .await
    .expect("the server kept the connection open");
    assert_eq!(read.unwrap(), 0);
}

async fn json(ws: &mut Ws, request: &str) -> String {
    ws.send(Message::text(request)).await.unwrap();
    match recv(ws).await {
        Message::Text(reply) => reply.as_str().to_owned(),
        other => panic!("expected a text reply, got {other:?}"),
    }
}

#[tokio::test]
async fn json_endpoint_answers_each_request() {
    let server = server();
    let mut ws = connect(server.local_addr(), "/ws/json").await;
    let geo = r#"{"controller":"geo","action":"test","lat":38.5,"id":17}"#;
    assert_eq!(
        json(&mut ws, geo).await,
        format!(r#"{{"id":17,"ok":true,"bytes":{}}}"#, geo.len())
    );
    assert_eq!(
        json(&mut ws, r#"{"id":"req-\"9\""}"#).await,
        r#"{"id":"req-\"9\"","ok":true,"bytes":18}"#
    );
    assert_eq!(
        json(&mut ws, r#"{"lat":1}"#).await,
        r#"{"ok":true,"bytes":9}"#
    );
    assert_eq!(
        json(&mut ws, "lat=1").await,
        r#"{"ok":false,"error":"not json"}"#
    );
    assert_eq!(
        json(&mut ws, "[1]").await,
        r#"{"ok":false,"error":"not an object"}"#
    );
    // Binary requests are parsed the same way; the reply is text.
    ws.send(Message::binary(&b"{\"id\":[1]}"[..]))
        .await
        .unwrap();
    assert_eq!(
        recv(&mut ws).await,
        Message::text(r#"{"id":[1],"ok":true,"bytes":10}"#)
    );
    assert_eq!(server.ws_messages_received(), 6);
    assert_eq!(server.ws_messages_sent(), 6);
}

#[tokio::test]
async fn close_after_n_echoes_n_then_closes_with_1001() {
    let server = server();
    let mut ws = connect(server.local_addr(), "/ws/close-after/3").await;
    for i in 0..3 {
        ws.send(Message::text(format!("m{i}"))).await.unwrap();
        assert_eq!(recv(&mut ws).await, Message::text(format!("m{i}")));
    }
    match recv(&mut ws).await {
        Message::Close(Some(frame)) => {
            assert_eq!(frame.code, CloseCode::Away);
            assert!(!frame.reason.is_empty(), "a reason is given");
        }
        other => panic!("expected Close 1001, got {other:?}"),
    }
    // tungstenite's client answers the Close; then the server ends the connection.
    assert!(next(&mut ws).await.is_none());
    assert_eq!(server.ws_messages_received(), 3);
    assert_eq!(server.ws_messages_sent(), 3);
}

#[tokio::test]
async fn close_after_zero_closes_at_once() {
    let server = server();
    let mut ws = connect(server.local_addr(), "/ws/close-after/0").await;
    match recv(&mut ws).await {
        Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Away),
        other => panic!("expected Close 1001, got {other:?}"),
    }
    assert!(next(&mut ws).await.is_none());
    assert_eq!(server.ws_sessions(), 1);
    assert_eq!(server.ws_messages_sent(), 0);
}

#[tokio::test]
async fn drop_after_n_echoes_n_then_ends_tcp_without_a_close_frame() {
    let server = server();
    let mut ws = connect(server.local_addr(), "/ws/drop-after/2").await;
    // All at once, and one more than the limit: the first two are echoed, then nothing.
    for i in 0..3 {
        ws.feed(Message::text(format!("m{i}"))).await.unwrap();
    }
    ws.flush().await.unwrap();
    assert_eq!(recv(&mut ws).await, Message::text("m0"));
    assert_eq!(recv(&mut ws).await, Message::text("m1"));
    match next(&mut ws).await {
        Some(Err(WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake))) => {}
        other => panic!("expected the connection to end without a Close, got {other:?}"),
    }
    assert_eq!(server.ws_messages_received(), 2, "the third is not counted");
    assert_eq!(server.ws_messages_sent(), 2);
}

/// Sends a raw HTTP/1.1 request with `Connection: close` and returns status line and body.
fn raw_get(addr: SocketAddr, path: &str, headers: &str) -> (String, String) {
    let mut conn = StdTcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: t\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").expect("a full response");
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

#[tokio::test]
async fn ws_paths_without_a_handshake_get_426_with_a_hint() {
    let server = server();
    let addr = server.local_addr();
    for path in [
        "/ws/echo",
        "/ws/json",
        "/ws/close-after/1",
        "/ws/drop-after/1",
    ] {
        let (status, body) = raw_get(addr, path, "");
        assert_eq!(status, "HTTP/1.1 426 Upgrade Required", "{path}");
        assert!(body.contains("Upgrade: websocket"), "{path}: {body}");
    }
    // Upgrade headers with a wrong version are not a handshake either.
    let (status, _) = raw_get(
        addr,
        "/ws/echo",
        "Upgrade: websocket\r\nSec-WebSocket-Version: 8\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
    );
    assert_eq!(status, "HTTP/1.1 426 Upgrade Required");
    let (status, _) = raw_get(addr, "/ws/nope", "");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    let (status, _) = raw_get(addr, "/ws/close-after/many", "");
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert_eq!(server.ws_sessions(), 0);
}

#[tokio::test]
async fn a_handshake_on_a_plain_path_gets_the_plain_answer() {
    let server = server();
    match try_connect(server.local_addr(), "/status").await {
        Err(WsError::Http(response)) => {
            assert_eq!(response.status(), 200);
            assert_eq!(response.body().as_deref(), Some(&b"OK"[..]));
        }
        other => panic!("expected the handshake refused with 200, got {other:?}"),
    }
    match try_connect(server.local_addr(), "/ws/nope").await {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 404),
        other => panic!("expected 404, got {other:?}"),
    }
    assert_eq!(server.ws_sessions(), 0);
}

#[tokio::test]
async fn plain_http_still_works_beside_websocket_sessions() {
    let server = server();
    let addr = server.local_addr();
    let mut ws = connect(addr, "/ws/echo").await;
    ws.send(Message::text("x")).await.unwrap();
    let (status, body) = tokio::task::spawn_blocking(move || raw_get(addr, "/status", ""))
        .await
        .unwrap();
    assert_eq!((status.as_str(), body.as_str()), ("HTTP/1.1 200 OK", "OK"));
    assert_eq!(recv(&mut ws).await, Message::text("x"));
    assert_eq!(server.requests_served(), 2, "the 101 and the 200");
    assert_eq!(server.connections_accepted(), 2);
}

/// Several sessions at once on a multi-thread server, mixed sizes and endpoints: every
/// counter is exact once every reply has been read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_are_exact_over_many_sessions() {
    for threads in [1, 2] {
        let server = server_with(threads);
        let addr = server.local_addr();
        const SESSIONS: usize = 6;
        const MESSAGES: usize = 300;
        let tasks: Vec<_> = (0..SESSIONS)
            .map(|s| {
                tokio::spawn(async move {
                    let path = if s % 3 == 2 { "/ws/json" } else { "/ws/echo" };
                    let mut ws = connect(addr, path).await;
                    let mut bytes = 0u64;
                    for i in 0..MESSAGES {
                        let len = (i * 37 + s * 101) % 3000;
                        let message = if path == "/ws/json" {
                            Message::text(format!(r#"{{"id":{i},"pad":"{}"}}"#, "x".repeat(len)))
                        } else if i % 2 == 0 {
                            Message::binary(pattern(len))
                        } else {
                            Message::text(text_pattern(len))
                        };
                        bytes += message.len() as u64;
                        if i % 50 == 0 {
                            // A ping sent first is answered first; it is no data message.
                            ws.send(Message::Ping(Bytes::from_static(b"k")))
                                .await
                                .unwrap();
                            ws.send(message.clone()).await.unwrap();
                            assert_eq!(
                                recv(&mut ws).await,
                                Message::Pong(Bytes::from_static(b"k"))
                            );
                        } else {
                            ws.send(message.clone()).await.unwrap();
                        }
                        let reply = recv(&mut ws).await;
                        if path == "/ws/echo" {
                            assert_eq!(reply, message);
                        } else {
                            assert!(reply
                                .to_text()
                                .unwrap()
                                .starts_with(&format!(r#"{{"id":{i},"#)));
                        }
                    }
                    ws.close(None).await.unwrap();
                    bytes
                })
            })
            .collect();
        let mut bytes = 0;
        for task in tasks {
            bytes += task.await.unwrap();
        }
        let total = (SESSIONS * MESSAGES) as u64;
        assert_eq!(server.ws_sessions(), SESSIONS as u64, "{threads} threads");
        assert_eq!(server.ws_messages_received(), total, "{threads} threads");
        assert_eq!(server.ws_messages_sent(), total, "{threads} threads");
        assert_eq!(server.ws_bytes_received(), bytes, "{threads} threads");
        assert_eq!(server.requests_served(), SESSIONS as u64);
    }
}

#[tokio::test]
async fn shutdown_ends_open_sessions() {
    let server = server();
    let mut ws = connect(server.local_addr(), "/ws/echo").await;
    ws.send(Message::text("x")).await.unwrap();
    assert_eq!(recv(&mut ws).await, Message::text("x"));
    tokio::task::spawn_blocking(move || server.shutdown())
        .await
        .unwrap();
    // No Close frame: the runtime is gone and so is the socket.
    assert!(matches!(next(&mut ws).await, Some(Err(_)) | None));
}

/// A handshake written by hand: the RFC 6455 sample key, and whatever bytes follow it in the
/// same write.
fn raw_handshake(addr: SocketAddr, path: &str, then: &[u8]) -> StdTcpStream {
    let mut conn = StdTcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut bytes = format!(
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    .into_bytes();
    bytes.extend_from_slice(then);
    conn.write_all(&bytes).unwrap();
    conn
}

/// Reads the response head, byte by byte so that no frame after it is consumed.
fn read_head(conn: &mut StdTcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        conn.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

/// A client frame: FIN set, masked with a fixed key, payload under 126 bytes.
fn masked(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let key = [0x37, 0xfa, 0x21, 0x3d];
    let mut frame = vec![0x80 | opcode, 0x80 | payload.len() as u8];
    frame.extend_from_slice(&key);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    frame
}

fn read_frame(conn: &mut StdTcpStream) -> (u8, Vec<u8>) {
    let mut header = [0u8; 2];
    conn.read_exact(&mut header).unwrap();
    assert_eq!(header[1] & 0x80, 0, "server frames are not masked");
    let len = (header[1] & 0x7f) as usize;
    assert!(len < 126, "short frames only here");
    let mut payload = vec![0u8; len];
    conn.read_exact(&mut payload).unwrap();
    (header[0], payload)
}

#[test]
fn the_101_carries_the_rfc_accept_key() {
    let server = server();
    let mut conn = raw_handshake(server.local_addr(), "/ws/echo", b"");
    let head = read_head(&mut conn);
    assert!(
        head.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
        "{head}"
    );
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("\r\nupgrade: websocket\r\n"), "{head}");
    assert!(lower.contains("\r\nconnection: upgrade\r\n"), "{head}");
    // The RFC 6455 §1.3 example.
    assert!(
        lower.contains("\r\nsec-websocket-accept: ")
            && head.contains(": s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
        "{head}"
    );
    assert!(!lower.contains("sec-websocket-protocol"), "no subprotocol");
    assert!(!lower.contains("sec-websocket-extensions"), "no extension");
    conn.write_all(&masked(0x2, b"raw")).unwrap();
    assert_eq!(read_frame(&mut conn), (0x82, b"raw".to_vec()));
}

/// RFC 6455 §4.1: a client waits for the 101 before it sends frames. One that does not is
/// disconnected, never answered with frames: hyper may not even have sent the 101.
#[test]
fn frames_sent_before_the_101_end_the_connection() {
    let server = server();
    let mut conn = raw_handshake(server.local_addr(), "/ws/echo", &masked(0x1, b"early"));
    let mut got = Vec::new();
    // The end may come as a FIN or as a reset; either way no echo.
    let _ = conn.read_to_end(&mut got);
    let echo = [&[0x81, 5][..], b"early"].concat();
    assert!(
        !got.windows(echo.len()).any(|w| w == echo),
        "echoed before the handshake: {:?}",
        String::from_utf8_lossy(&got)
    );
    assert_eq!(server.ws_messages_received(), 0);
}

#[test]
fn protocol_violations_end_the_session_with_close_1002() {
    let server = server();
    let invalid_utf8 = masked(0x1, &[0xff, 0xfe]);
    let unmasked = b"\x81\x02hi".to_vec();
    for frame in [invalid_utf8, unmasked] {
        let mut conn = raw_handshake(server.local_addr(), "/ws/echo", b"");
        read_head(&mut conn);
        conn.write_all(&frame).unwrap();
        let (opcode, payload) = read_frame(&mut conn);
        assert_eq!((opcode, &payload[..2]), (0x88, &1002u16.to_be_bytes()[..]));
    }
    assert_eq!(server.ws_messages_received(), 0);
}

#[tokio::test]
async fn a_stall_holds_the_handshake_and_the_session_then_works() {
    // Frozen from 1 s to 2 s of the server's life: a second-long window and bounds half a
    // second from the truth, so a loaded machine's stalls do not change the story.
    let server = start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        stall: Some(loadmark_target::Stall {
            duration: Duration::from_secs(1),
            every: Duration::from_secs(2),
        }),
        ..Default::default()
    })
    .unwrap();
    let t0 = std::time::Instant::now();
    let mut slowest = Duration::ZERO;
    let mut sessions = 0;
    while t0.elapsed() < Duration::from_millis(2100) {
        let began = std::time::Instant::now();
        let mut ws = connect(server.local_addr(), "/ws/echo").await;
        slowest = slowest.max(began.elapsed());
        ws.send(Message::text("s")).await.unwrap();
        assert_eq!(recv(&mut ws).await, Message::text("s"));
        ws.close(None).await.unwrap();
        sessions += 1;
    }
    assert!(slowest >= Duration::from_millis(500), "{slowest:?}");
    assert!(slowest < Duration::from_millis(1600), "{slowest:?}");
    assert_eq!(server.ws_sessions(), sessions);
    assert_eq!(server.ws_messages_sent(), sessions);
}
