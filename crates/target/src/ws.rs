//! The WebSocket endpoints under `/ws/`: the handshake check and the 101 answer (synchronous,
//! in the router's style), and the sessions that run on the upgraded connection.
//!
//! hyper answers the handshake; tokio-tungstenite then speaks the protocol on the upgraded
//! socket. Both are independent of loadmark's own client codec, which is the point: the
//! client's tests are interop tests against a second implementation.

use std::future::poll_fn;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::BytesMut;
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION,
    UPGRADE,
};
use hyper::{Method, Request, Response, StatusCode, Version};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

use crate::body::ResponseBody;
use crate::server::Counters;

/// Largest WebSocket message (and frame) a session accepts (16 MiB), like `/echo`'s body
/// limit; a larger one ends the session with Close 1009 (message too big).
pub const MAX_WS_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How long a session that is ending waits for the client: for its Close reply after
/// `/ws/close-after/N`, for its end of the connection after `/ws/drop-after/N`, and for a
/// Close sent on a protocol error to leave. A client that never answers cannot keep the
/// task alive longer than this.
const LINGER: Duration = Duration::from_secs(2);

const NOT_JSON: &str = r#"{"ok":false,"error":"not json"}"#;
const NOT_AN_OBJECT: &str = r#"{"ok":false,"error":"not an object"}"#;

/// What `/ws/...` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `/ws/echo`: every data message back, same opcode and payload.
    Echo,
    /// `/ws/json`: one JSON reply per message.
    Json,
    /// `/ws/close-after/N`: echo N messages, then Close 1001.
    CloseAfter(u64),
    /// `/ws/drop-after/N`: echo N messages, then end the TCP connection without a Close.
    DropAfter(u64),
}

/// A path under `/ws/`, parsed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WsPath {
    Endpoint(Endpoint),
    /// A known endpoint whose N is not a number.
    BadCount,
    Unknown,
}

/// Parses what follows `/ws/`.
pub(crate) fn parse(rest: &str) -> WsPath {
    let count = |n: &str, endpoint: fn(u64) -> Endpoint| match n.parse() {
        Ok(n) => WsPath::Endpoint(endpoint(n)),
        Err(_) => WsPath::BadCount,
    };
    match rest.split_once('/') {
        None if rest == "echo" => WsPath::Endpoint(Endpoint::Echo),
        None if rest == "json" => WsPath::Endpoint(Endpoint::Json),
        Some(("close-after", n)) => count(n, Endpoint::CloseAfter),
        Some(("drop-after", n)) => count(n, Endpoint::DropAfter),
        _ => WsPath::Unknown,
    }
}

/// Whether `req` is a valid WebSocket opening handshake (RFC 6455 §4.2.1): GET over
/// HTTP/1.1, `Connection` listing `upgrade`, `Upgrade` listing `websocket`,
/// `Sec-WebSocket-Version: 13` and a `Sec-WebSocket-Key` of 16 base64-encoded bytes.
pub(crate) fn is_handshake<B>(req: &Request<B>) -> bool {
    let headers = req.headers();
    let lists = |name, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str().is_ok_and(|v| {
                v.split(',')
                    .any(|item| item.trim().eq_ignore_ascii_case(token))
            })
        })
    };
    req.method() == Method::GET
        && req.version() == Version::HTTP_11
        && lists(CONNECTION, "upgrade")
        && lists(UPGRADE, "websocket")
        && headers
            .get(SEC_WEBSOCKET_VERSION)
            .is_some_and(|v| v.as_bytes() == b"13")
        && headers
            .get(SEC_WEBSOCKET_KEY)
            .is_some_and(|k| is_key(k.as_bytes()))
}

/// 16 bytes in base64: 22 significant characters and `==`.
fn is_key(key: &[u8]) -> bool {
    key.len() == 24
        && key.ends_with(b"==")
        && key[..22]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/')
}

/// 426 for a `/ws/...` request that is not a handshake, saying what one needs.
pub(crate) fn upgrade_required() -> Response<ResponseBody> {
    const HINT: &str = "upgrade required: /ws/ endpoints speak WebSocket; send GET over HTTP/1.1 \
                        with Connection: Upgrade, Upgrade: websocket, Sec-WebSocket-Version: 13 \
                        and a Sec-WebSocket-Key\n";
    let mut r = Response::new(ResponseBody::full(bytes::Bytes::from_static(
        HINT.as_bytes(),
    )));
    *r.status_mut() = StatusCode::UPGRADE_REQUIRED;
    let headers = r.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain"),
    );
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
    r
}

/// Answers a valid handshake (see [`is_handshake`]) with 101 and spawns the session that
/// takes the connection over once hyper has sent that answer. Counts the session now, before
/// hyper writes the 101, so a client that has read it sees it counted.
pub(crate) fn accept(
    req: Request<Incoming>,
    endpoint: Endpoint,
    counters: &Arc<Counters>,
) -> Response<ResponseBody> {
    let accept = req
        .headers()
        .get(SEC_WEBSOCKET_KEY)
        .map(|key| derive_accept_key(key.as_bytes()))
        .and_then(|accept| HeaderValue::try_from(accept).ok());
    let Some(accept) = accept else {
        // Unreachable after `is_handshake`; answering rather than panicking keeps it harmless.
        return upgrade_required();
    };
    counters.ws_sessions.fetch_add(1, Ordering::Relaxed);
    tokio::spawn(session(req, endpoint, counters.clone()));
    let mut r = Response::new(ResponseBody::empty());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = r.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
    r
}

fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_WS_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_WS_MESSAGE_BYTES))
}

/// Waits for hyper to hand the connection over, then serves the endpoint on it.
async fn session(req: Request<Incoming>, endpoint: Endpoint, counters: Arc<Counters>) {
    let Ok(upgraded) = hyper::upgrade::on(req).await else {
        return; // The client left before the upgrade finished.
    };
    match upgraded.downcast::<TokioIo<TcpStream>>() {
        // The connection is always ours: taking the socket back from the boxed `Upgraded`
        // makes every read and write direct.
        Ok(parts) if parts.read_buf.is_empty() => {
            let ws = WebSocketStream::from_raw_socket(
                parts.io.into_inner(),
                Role::Server,
                Some(config()),
            )
            .await;
            serve(ws, endpoint, &counters).await;
        }
        // The client sent data before it could have read the 101, which RFC 6455 §4.1
        // forbids. Worse, hyper (with `pipeline_flush`, which the accept loop sets) does not
        // flush a response while more bytes are buffered, and drops that unflushed 101 when
        // it hands the connection over: the client would get frames without a handshake.
        // Ending the connection is the one clear answer.
        Ok(_) => {}
        Err(upgraded) => {
            let ws = WebSocketStream::from_raw_socket(
                TokioIo::new(upgraded),
                Role::Server,
                Some(config()),
            )
            .await;
            serve(ws, endpoint, &counters).await;
        }
    }
}

/// Runs one session to its end, then drops the socket, which closes the TCP connection.
async fn serve<S>(mut ws: WebSocketStream<S>, endpoint: Endpoint, counters: &Counters)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let limit = match endpoint {
        Endpoint::CloseAfter(n) | Endpoint::DropAfter(n) => Some(n),
        Endpoint::Echo | Endpoint::Json => None,
    };
    let outcome = if limit == Some(0) {
        Ok(())
    } else {
        answer_messages(&mut ws, endpoint, limit, counters).await
    };
    let ending = async {
        match outcome {
            Ok(()) => match endpoint {
                Endpoint::CloseAfter(n) => close_after(&mut ws, n).await,
                Endpoint::DropAfter(_) => drop_after(&mut ws).await,
                // The client closed (tungstenite has answered its Close) or went away.
                Endpoint::Echo | Endpoint::Json => {}
            },
            Err(WsError::Capacity(CapacityError::MessageTooLong { .. })) => {
                fail(&mut ws, CloseCode::Size, "message too big").await;
            }
            Err(e @ (WsError::Protocol(_) | WsError::Utf8(_))) => {
                // The reason names the violation, so the client's report can show it (a
                // Close reason holds at most 123 bytes).
                let mut reason = format!("protocol error: {e}");
                while reason.len() > 123 {
                    reason.pop();
                }
                fail(&mut ws, CloseCode::Protocol, reason).await;
            }
            // I/O errors: the connection is gone, there is no one to tell.
            Err(_) => {}
        }
    };
    let _ = tokio::time::timeout(LINGER, ending).await;
}

/// Answers every data message until the client closes, the connection fails, or `limit`
/// messages have been answered (`Ok` in both ends that are not failures).
///
/// Replies are fed to tungstenite's write buffer and flushed only when no further message is
/// waiting, so a client that pipelines messages gets its replies in few writes. tungstenite
/// itself answers pings with pongs and a client's Close with the same code, flushing those
/// on the next read; a Close ends the stream once its answer is written.
async fn answer_messages<S>(
    ws: &mut WebSocketStream<S>,
    endpoint: Endpoint,
    limit: Option<u64>,
    counters: &Counters,
) -> Result<(), WsError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // Where /ws/json replies are written; each reply is split off it, and its allocation is
    // reclaimed once tungstenite has copied the reply out and dropped it.
    let mut json = BytesMut::new();
    let mut answered = 0u64;
    loop {
        let next = match poll_fn(|cx| Poll::Ready(ws.poll_next_unpin(cx))).await {
            Poll::Ready(next) => next,
            Poll::Pending => {
                ws.flush().await?;
                ws.next().await
            }
        };
        let message = match next {
            None => return Ok(()),
            Some(message) => message?,
        };
        let len = match &message {
            Message::Text(text) => text.len(),
            Message::Binary(data) => data.len(),
            // Pings, pongs and Close are control frames, answered by tungstenite.
            _ => continue,
        };
        counters.ws_received.fetch_add(1, Ordering::Relaxed);
        counters
            .ws_bytes_received
            .fetch_add(len as u64, Ordering::Relaxed);
        let reply = match endpoint {
            Endpoint::Json => {
                let reply = json_reply(&message, &mut json);
                if let Message::Text(text) = &reply {
                    if text.contains("\"ok\":false") {
                        counters.ws_error_replies.fetch_add(1, Ordering::Relaxed);
                    }
                }
                reply
            }
            _ => message,
        };
        // Counted before the reply can reach the socket, so a client that has read it sees
        // it counted.
        counters.ws_sent.fetch_add(1, Ordering::Relaxed);
        ws.feed(reply).await?;
        answered += 1;
        if Some(answered) == limit {
            return ws.flush().await;
        }
    }
}

/// Sends Close 1001 and waits (within [`LINGER`]) for the client's Close, discarding any
/// data message still on its way; uncounted, as they are not answered.
async fn close_after<S>(ws: &mut WebSocketStream<S>, n: u64)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let reason = format!("closing after {n} messages");
    if ws
        .close(Some(close_frame(CloseCode::Away, reason)))
        .await
        .is_err()
    {
        return;
    }
    while let Some(Ok(_)) = ws.next().await {}
}

/// Ends the TCP stream without a Close frame: a FIN, then [`drain`].
async fn drop_after<S>(ws: &mut WebSocketStream<S>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if ws.get_mut().shutdown().await.is_ok() {
        drain(ws.get_mut()).await;
    }
}

/// Fails the connection after a message the session cannot take: Close with `code`, then
/// [`drain`], since the rest of the offending frame may still be on its way and tungstenite
/// cannot parse past it.
async fn fail<S>(ws: &mut WebSocketStream<S>, code: CloseCode, reason: impl Into<Utf8Bytes>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if ws.close(Some(close_frame(code, reason))).await.is_ok() {
        drain(ws.get_mut()).await;
    }
}

/// Reads and discards until the client ends the connection (the caller bounds this with
/// [`LINGER`]). Closing with unread data in the socket would send a reset instead of a
/// FIN, which can destroy what the client has not read yet (the last replies, the Close)
/// and fail a write the client is still making. What is read is neither parsed nor counted.
async fn drain(socket: &mut (impl AsyncRead + Unpin)) {
    let mut sink = [0u8; 8192];
    while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {}
}

fn close_frame(code: CloseCode, reason: impl Into<Utf8Bytes>) -> CloseFrame {
    CloseFrame {
        code,
        reason: reason.into(),
    }
}

/// The `/ws/json` reply to one message (text or binary, parsed the same way):
/// `{"id":<id>,"ok":true,"bytes":<payload length>}` with the request's `"id"` value copied
/// verbatim (the field left out when the request has none), or a fixed error object when the
/// payload is not JSON or not a JSON object. A request with `"status":N` (0-999) is answered
/// the way APIs that wrap every answer in a message do (Kuzzle, JSON-RPC-style gateways):
/// `{"id":..,"status":N,"ok":<N < 400>,..}`, an error carried inside a delivered reply.
pub(crate) fn json_reply(message: &Message, buf: &mut BytesMut) -> Message {
    use std::fmt::Write;

    let payload: &[u8] = match message {
        Message::Text(text) => text.as_bytes(),
        Message::Binary(data) => data,
        _ => &[],
    };
    let (id, status) = match serde_json::from_slice::<JsonRequest>(payload) {
        Ok(request) => (request.id, request.status),
        Err(e) if e.is_data() => return Message::text(Utf8Bytes::from_static(NOT_AN_OBJECT)),
        Err(_) => return Message::text(Utf8Bytes::from_static(NOT_JSON)),
    };
    let id = id.map_or("", |id| id.get());
    buf.reserve(64 + id.len());
    buf.extend_from_slice(b"{");
    if !id.is_empty() {
        buf.extend_from_slice(b"\"id\":");
        buf.extend_from_slice(id.as_bytes());
        buf.extend_from_slice(b",");
    }
    // Writing to a BytesMut cannot fail.
    if let Some(status) = status {
        let _ = write!(buf, "\"status\":{status},");
    }
    let ok = status.is_none_or(|s| s < 400);
    let _ = write!(buf, "\"ok\":{ok},\"bytes\":{}}}", payload.len());
    match Utf8Bytes::try_from(buf.split()) {
        Ok(text) => Message::text(text),
        // Unreachable: serde_json hands out raw values as `str`.
        Err(_) => Message::text(Utf8Bytes::from_static(NOT_JSON)),
    }
}

/// The one field of a `/ws/json` request the reply needs. Only a JSON object is accepted
/// (serde's derive would also take an array as a struct).
struct JsonRequest<'a> {
    id: Option<&'a serde_json::value::RawValue>,
    /// The status the reply should carry (a number 0-999; anything else is ignored).
    status: Option<u16>,
}

impl<'de> serde::Deserialize<'de> for JsonRequest<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = JsonRequest<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Self::Value, M::Error> {
                let mut id = None;
                let mut status = None;
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Id => id = Some(map.next_value()?),
                        Key::Status => {
                            let value = map.next_value::<serde_json::Value>()?;
                            status = value.as_u64().filter(|s| *s < 1000).map(|s| s as u16);
                        }
                        Key::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(JsonRequest { id, status })
            }
        }
        d.deserialize_map(Visit)
    }
}

/// A key of the request object: `id` or `status` (escaped or not) or any other.
enum Key {
    Id,
    Status,
    Other,
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Key;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object key")
            }

            fn visit_str<E>(self, key: &str) -> Result<Key, E> {
                Ok(match key {
                    "id" => Key::Id,
                    "status" => Key::Status,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(payload: &str) -> String {
        let mut buf = BytesMut::new();
        match json_reply(&Message::text(payload), &mut buf) {
            Message::Text(text) => text.as_str().to_owned(),
            other => panic!("a text reply, not {other:?}"),
        }
    }

    #[test]
    fn json_replies_copy_the_id_verbatim() {
        assert_eq!(reply(r#"{"id":7}"#), r#"{"id":7,"ok":true,"bytes":8}"#);
        assert_eq!(
            reply(r#"{ "a" : [1,{"id":0}], "id" : "x\"y" , "z":null }"#),
            r#"{"id":"x\"y","ok":true,"bytes":48}"#
        );
        assert_eq!(
            reply(r#"{"id":{"n": 1.50e3, "s":[true]}}"#),
            r#"{"id":{"n": 1.50e3, "s":[true]},"ok":true,"bytes":32}"#,
            "nested, with its own spacing and number spelling"
        );
        assert_eq!(
            reply(r#"{"\u0069d":12}"#),
            r#"{"id":12,"ok":true,"bytes":14}"#
        );
        assert_eq!(
            reply(r#"{"id":null}"#),
            r#"{"id":null,"ok":true,"bytes":11}"#
        );
    }

    #[test]
    fn json_replies_carry_the_status_asked_for() {
        assert_eq!(
            reply(r#"{"id":3,"status":404}"#),
            r#"{"id":3,"status":404,"ok":false,"bytes":21}"#
        );
        assert_eq!(
            reply(r#"{"status":399}"#),
            r#"{"status":399,"ok":true,"bytes":14}"#
        );
        assert_eq!(
            reply(r#"{"status":"x"}"#),
            r#"{"ok":true,"bytes":14}"#,
            "not a number: ignored"
        );
    }

    #[test]
    fn json_replies_without_id_leave_it_out() {
        assert_eq!(reply("{}"), r#"{"ok":true,"bytes":2}"#);
        assert_eq!(reply(r#"{"ID":1,"idx":2}"#), r#"{"ok":true,"bytes":16}"#);
        // Bytes, not characters.
        assert_eq!(reply(r#"{"é":1}"#), r#"{"ok":true,"bytes":8}"#);
    }

    #[test]
    fn json_errors_tell_bad_json_from_non_objects() {
        for bad in ["", "nope", "{", r#"{"id":1} trailing"#, r#"{"id":}"#] {
            assert_eq!(reply(bad), NOT_JSON, "{bad:?}");
        }
        for other in ["[1,2]", "42", r#""id""#, "null", "[]"] {
            assert_eq!(reply(other), NOT_AN_OBJECT, "{other:?}");
        }
    }

    #[test]
    fn json_reply_buffer_is_reused() {
        let mut buf = BytesMut::new();
        let first = json_reply(&Message::text(r#"{"id":1}"#), &mut buf);
        drop(first);
        let capacity = buf.capacity();
        for _ in 0..100 {
            let r = json_reply(&Message::text(r#"{"id":1}"#), &mut buf);
            assert_eq!(r.len(), 28);
        }
        assert!(
            buf.capacity() <= capacity.max(64),
            "no growth: {}",
            buf.capacity()
        );
    }

    #[test]
    fn paths_under_ws() {
        assert_eq!(parse("echo"), WsPath::Endpoint(Endpoint::Echo));
        assert_eq!(parse("json"), WsPath::Endpoint(Endpoint::Json));
        assert_eq!(
            parse("close-after/3"),
            WsPath::Endpoint(Endpoint::CloseAfter(3))
        );
        assert_eq!(
            parse("drop-after/0"),
            WsPath::Endpoint(Endpoint::DropAfter(0))
        );
        assert_eq!(parse("close-after/x"), WsPath::BadCount);
        assert_eq!(parse("drop-after/"), WsPath::BadCount);
        assert_eq!(parse("drop-after/-1"), WsPath::BadCount);
        for unknown in ["", "echo/", "echo/1", "json/x", "close-after", "nope"] {
            assert_eq!(parse(unknown), WsPath::Unknown, "{unknown:?}");
        }
    }

    fn handshake() -> hyper::http::request::Builder {
        Request::get("/ws/echo")
            .header("Host", "t")
            .header("Connection", "keep-alive, Upgrade")
            .header("Upgrade", "WebSocket")
            .header("Sec-WebSocket-Version", "13")
            .header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
    }

    #[test]
    fn a_handshake_needs_every_part() {
        assert!(is_handshake(&handshake().body(()).unwrap()));
        let without = |name: &str| {
            let mut req = handshake().body(()).unwrap();
            req.headers_mut().remove(name);
            is_handshake(&req)
        };
        for name in [
            "Connection",
            "Upgrade",
            "Sec-WebSocket-Version",
            "Sec-WebSocket-Key",
        ] {
            assert!(!without(name), "without {name}");
        }
        let with = |name: &'static str, value: &'static str| {
            let mut req = handshake().body(()).unwrap();
            req.headers_mut()
                .insert(name, HeaderValue::from_static(value));
            is_handshake(&req)
        };
        assert!(!with("Connection", "keep-alive"));
        assert!(!with("Upgrade", "h2c"));
        assert!(!with("Sec-WebSocket-Version", "8"));
        assert!(!with("Sec-WebSocket-Key", "short=="));
        assert!(!with("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ!!"));
        assert!(with("Connection", "upgrade"));
        let post = handshake().method("POST").body(()).unwrap();
        assert!(!is_handshake(&post));
        let http10 = handshake().version(Version::HTTP_10).body(()).unwrap();
        assert!(!is_handshake(&http10));
    }
}
