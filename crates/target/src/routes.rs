//! The endpoints, as a pure function from a request to what to answer. Every path takes any
//! method; hyper drops the body of a HEAD response.
//!
//! Routing is synchronous so the common endpoints answer without boxing a future or touching
//! shared state; only `/delay` and `/echo` need to wait, and a WebSocket handshake needs the
//! server's counters and runtime, and they say so with [`Routed`].

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};

use crate::body::ResponseBody;
use crate::ws::{self, WsPath};

/// Largest body `/bytes/N` and `/chunked/N` serve (100 MiB).
pub const MAX_BODY_BYTES: usize = 100 * 1024 * 1024;
/// Largest request body `/echo` reads: the target must not hold an unbounded upload in memory.
pub const MAX_ECHO_BYTES: usize = 16 * 1024 * 1024;
/// Longest `/delay/MS`: a minute is long enough to test any client timeout.
pub const MAX_DELAY: Duration = Duration::from_millis(60_000);

const JSON: &[u8] = br#"{"id":12345,"name":"loadmark","ok":true,"tags":["a","b","c"],"msg":"hello from the built-in target"}"#;

const NOT_FOUND: &str = "not found: try /status, /bytes/N, /json, /delay/MS, /status/CODE, \
                         /echo, /chunked/N, /close, /flaky/N/K, POST /login, /items, /items/ID, /me, POST /logout, /relay?url=URL, /ws/echo, /ws/json, /ws/close-after/N, \
                         /ws/drop-after/N\n";

const WS_NOT_FOUND: &str = "not found: WebSocket endpoints are /ws/echo, /ws/json, \
                            /ws/close-after/N, /ws/drop-after/N\n";

/// What a request asks for: an answer now, or one that needs to wait.
pub(crate) enum Routed<B> {
    Ready(Response<ResponseBody>),
    /// `/delay/MS`: answer `OK` after this long.
    Delay(Duration),
    /// `/echo`: answer with the request's body, which must be read first.
    Echo(Request<B>),
    /// A valid WebSocket handshake on a `/ws/` endpoint: answer 101 and start the session.
    Upgrade(Request<B>, ws::Endpoint),
    /// `/relay?url=...`: answer with what this loopback URL answers.
    Relay(crate::relay::RelayUrl),
    /// `POST /login`: the body names the user; answer with a token.
    Login(Request<B>),
    /// A gRPC call to the target's service or its reflection (`crate::grpc`).
    Grpc(Request<B>),
}

pub(crate) fn route<B>(req: Request<B>) -> Routed<B> {
    let path = req.uri().path();
    let rest = path.strip_prefix('/').unwrap_or(path);
    let (first, arg) = match rest.split_once('/') {
        Some((first, arg)) => (first, Some(arg)),
        None => (rest, None),
    };
    let response = match (first, arg) {
        ("status", None) => ok(),
        ("json", None) => with_type(
            Response::new(ResponseBody::full(Bytes::from_static(JSON))),
            "application/json",
        ),
        ("bytes", Some(n)) => match size(n) {
            Some(n) => Response::new(ResponseBody::filler(n, false)),
            None => bad_request("N must be a number of bytes up to 104857600\n"),
        },
        ("chunked", Some(n)) => match size(n) {
            Some(n) => Response::new(ResponseBody::filler(n, true)),
            None => bad_request("N must be a number of bytes up to 104857600\n"),
        },
        ("delay", Some(ms)) => match ms.parse().map(Duration::from_millis) {
            Ok(delay) if delay <= MAX_DELAY => return Routed::Delay(delay),
            _ => bad_request("MS must be a number of milliseconds up to 60000\n"),
        },
        ("status", Some(code)) => match code.parse::<u16>().ok().and_then(final_status) {
            Some(status) => status_response(status),
            None => bad_request("CODE must be a status from 200 to 599\n"),
        },
        ("echo", None) => return Routed::Echo(req),
        ("flaky", Some(arg)) => flaky(arg),
        // ---- a user journey (crate::journey, issue 17)
        ("login", None) if req.method() == hyper::Method::POST => return Routed::Login(req),
        ("items", _) if !crate::journey::authorized(&req) => crate::journey::unauthorized(),
        ("items", None) => crate::journey::items(),
        ("items", Some(id)) => crate::journey::item(id),
        ("me", None) => crate::journey::me(&req),
        ("logout", None) if req.method() == hyper::Method::POST => crate::journey::logout(),
        ("relay", None) => match crate::relay::parse_query(req.uri().query()) {
            Ok(url) => return Routed::Relay(url),
            Err(why) => bad_request(why),
        },
        ("ws", Some(rest)) => match ws::parse(rest) {
            WsPath::Endpoint(endpoint) if ws::is_handshake(&req) => {
                return Routed::Upgrade(req, endpoint)
            }
            WsPath::Endpoint(_) => ws::upgrade_required(),
            WsPath::BadCount => bad_request("N must be a number of messages\n"),
            WsPath::Unknown => text(StatusCode::NOT_FOUND, WS_NOT_FOUND),
        },
        (service, Some(_)) if crate::grpc::serves(service) => return Routed::Grpc(req),
        ("close", None) => {
            let mut r = ok();
            r.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
            r
        }
        _ => text(StatusCode::NOT_FOUND, NOT_FOUND),
    };
    Routed::Ready(response)
}

/// Answers `OK` once `delay` has passed, to the microsecond: tests and the quickstart use
/// `/delay/N` as a known service time, and tokio's millisecond timer wheel made it ~1.2 ms
/// long. Each delayed request sleeps on its own [`loadmark_timer::Pacer`] (a timerfd).
pub(crate) async fn delay(delay: Duration) -> Response<ResponseBody> {
    let due = std::time::Instant::now() + delay;
    loadmark_timer::Pacer::new().sleep_until(due).await;
    ok()
}

/// Reads the whole request body (up to [`MAX_ECHO_BYTES`]) and sends it back with the same
/// content type.
pub(crate) async fn echo<B>(req: Request<B>) -> Response<ResponseBody>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = req.into_parts();
    match Limited::new(body, MAX_ECHO_BYTES).collect().await {
        Ok(body) => {
            let mut r = Response::new(ResponseBody::full(body.to_bytes()));
            if let Some(ct) = parts.headers.get(CONTENT_TYPE) {
                r.headers_mut().insert(CONTENT_TYPE, ct.clone());
            }
            r
        }
        // Too large, or the client broke off: either way the rest of the body is unread, so
        // the connection cannot carry another request.
        Err(_) => {
            let mut r = text(StatusCode::PAYLOAD_TOO_LARGE, "request body over 16 MiB\n");
            r.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
            r
        }
    }
}

/// `/flaky/N/K`: 200 with a JSON body that is wrong (`"ok":false`, no items) when K is a
/// multiple of N, right otherwise: a service answering fast with an error body, for checks
/// (issue 17). Stateless, so a test knows from the paths the server saw how many were wrong.
fn flaky(arg: &str) -> Response<ResponseBody> {
    const RIGHT: &[u8] = br#"{"ok":true,"items":[{"id":1},{"id":2},{"id":3}]}"#;
    const WRONG: &[u8] = br#"{"ok":false,"items":[]}"#;
    let parsed = arg
        .split_once('/')
        .and_then(|(n, k)| Some((n.parse::<u64>().ok()?, k.parse::<u64>().ok()?)))
        .filter(|(n, _)| *n > 0);
    match parsed {
        Some((n, k)) => with_type(
            Response::new(ResponseBody::full(Bytes::from_static(
                if k.is_multiple_of(n) { WRONG } else { RIGHT },
            ))),
            "application/json",
        ),
        None => bad_request("/flaky/N/K: N > 0 and K must be numbers\n"),
    }
}

pub(crate) fn ok() -> Response<ResponseBody> {
    text(StatusCode::OK, "OK")
}

/// `--capacity`: the queue is full.
pub(crate) fn over_capacity() -> Response<ResponseBody> {
    text(
        StatusCode::SERVICE_UNAVAILABLE,
        "over capacity: the queue is full\n",
    )
}

pub(crate) fn text(status: StatusCode, body: &'static str) -> Response<ResponseBody> {
    let mut r = with_type(
        Response::new(ResponseBody::full(Bytes::from_static(body.as_bytes()))),
        "text/plain",
    );
    *r.status_mut() = status;
    r
}

fn with_type(mut r: Response<ResponseBody>, content_type: &'static str) -> Response<ResponseBody> {
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn bad_request(why: &'static str) -> Response<ResponseBody> {
    text(StatusCode::BAD_REQUEST, why)
}

fn size(n: &str) -> Option<usize> {
    n.parse().ok().filter(|&n| n <= MAX_BODY_BYTES)
}

/// A status a server may end a request with. 1xx is excluded: hyper cannot send an
/// informational status as the final response (it would turn it into a 500).
fn final_status(code: u16) -> Option<StatusCode> {
    (200..=599)
        .contains(&code)
        .then(|| StatusCode::from_u16(code).ok())
        .flatten()
}

/// The status with its reason phrase as body, except where HTTP forbids a body (204, 304).
fn status_response(status: StatusCode) -> Response<ResponseBody> {
    if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        let mut r = Response::new(ResponseBody::empty());
        *r.status_mut() = status;
        return r;
    }
    text(status, status.canonical_reason().unwrap_or("status"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Body;

    fn routed(path: &str) -> Routed<()> {
        route(Request::get(path).body(()).unwrap())
    }

    fn ready(path: &str) -> Response<ResponseBody> {
        match routed(path) {
            Routed::Ready(r) => r,
            _ => panic!("{path} should answer at once"),
        }
    }

    fn length(r: &Response<ResponseBody>) -> Option<u64> {
        r.body().size_hint().exact()
    }

    #[test]
    fn sizes_are_bounded_at_100_mib() {
        let r = ready("/bytes/104857600");
        assert_eq!(
            (r.status(), length(&r)),
            (StatusCode::OK, Some(104_857_600))
        );
        assert_eq!(ready("/bytes/104857601").status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            ready("/chunked/104857601").status(),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(ready("/bytes/-1").status(), StatusCode::BAD_REQUEST);
        assert_eq!(ready("/bytes/").status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn chunked_hides_its_length_so_hyper_chunks_it() {
        assert_eq!(length(&ready("/chunked/10")), None);
        assert_eq!(length(&ready("/bytes/10")), Some(10));
    }

    #[test]
    fn delay_is_capped_at_a_minute() {
        assert!(matches!(routed("/delay/60000"), Routed::Delay(d) if d == MAX_DELAY));
        assert!(matches!(routed("/delay/0"), Routed::Delay(d) if d.is_zero()));
        assert_eq!(ready("/delay/60001").status(), StatusCode::BAD_REQUEST);
        assert_eq!(ready("/delay/soon").status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn status_codes_outside_200_to_599_are_refused() {
        for code in ["100", "101", "199", "600", "999", "70000", "abc"] {
            let r = ready(&format!("/status/{code}"));
            assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{code}");
        }
        for code in [200u16, 299, 418, 599] {
            let r = ready(&format!("/status/{code}"));
            assert_eq!(r.status().as_u16(), code);
            assert!(length(&r).unwrap() > 0, "{code} carries its reason");
        }
        for code in [204, 304] {
            assert_eq!(length(&ready(&format!("/status/{code}"))), Some(0));
        }
    }

    #[test]
    fn unknown_and_malformed_paths_are_404() {
        for path in [
            "/",
            "/nope",
            "/statusx",
            "/json/1",
            "/close/now",
            "/echo/x",
            "/bytes",
        ] {
            assert_eq!(ready(path).status(), StatusCode::NOT_FOUND, "{path}");
        }
        assert!(matches!(routed("/echo"), Routed::Echo(_)));
    }

    fn handshake(path: &str) -> Routed<()> {
        route(
            Request::get(path)
                .header("Connection", "Upgrade")
                .header("Upgrade", "websocket")
                .header("Sec-WebSocket-Version", "13")
                .header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
                .body(())
                .unwrap(),
        )
    }

    #[test]
    fn ws_endpoints_upgrade_only_a_handshake() {
        for (path, endpoint) in [
            ("/ws/echo", ws::Endpoint::Echo),
            ("/ws/json", ws::Endpoint::Json),
            ("/ws/close-after/5", ws::Endpoint::CloseAfter(5)),
            ("/ws/drop-after/0", ws::Endpoint::DropAfter(0)),
        ] {
            assert!(
                matches!(handshake(path), Routed::Upgrade(_, e) if e == endpoint),
                "{path}"
            );
            let r = ready(path);
            assert_eq!(r.status(), StatusCode::UPGRADE_REQUIRED, "{path}");
            assert_eq!(r.headers()["upgrade"], "websocket");
        }
        assert_eq!(ready("/ws/close-after/x").status(), StatusCode::BAD_REQUEST);
        for path in ["/ws", "/ws/", "/ws/nope", "/ws/echo/1"] {
            assert_eq!(ready(path).status(), StatusCode::NOT_FOUND, "{path}");
        }
    }

    #[test]
    fn a_handshake_elsewhere_gets_the_plain_answer() {
        match handshake("/status") {
            Routed::Ready(r) => assert_eq!(r.status(), StatusCode::OK),
            _ => panic!("/status answers at once, handshake or not"),
        }
        match handshake("/ws/nope") {
            Routed::Ready(r) => assert_eq!(r.status(), StatusCode::NOT_FOUND),
            _ => panic!("an unknown /ws/ path is not upgraded"),
        }
    }
}
