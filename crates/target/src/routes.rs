//! The endpoints. Every path takes any method.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};

use crate::body::ResponseBody;
use crate::Counters;

/// Largest body `/bytes/N` and `/chunked/N` serve.
pub const MAX_BODY_BYTES: usize = 100 * 1024 * 1024;
/// Largest request body `/echo` accepts.
pub const MAX_ECHO_BYTES: usize = 16 * 1024 * 1024;
/// Longest `/delay/MS`.
pub const MAX_DELAY_MS: u64 = 60_000;

const JSON: &[u8] = br#"{"id":12345,"name":"loadmark","ok":true,"tags":["a","b","c"],"msg":"hello from the built-in target"}"#;

fn text(status: StatusCode, body: &'static str) -> Response<ResponseBody> {
    let mut r = Response::new(ResponseBody::full(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

fn bad_request(why: &'static str) -> Response<ResponseBody> {
    text(StatusCode::BAD_REQUEST, why)
}

fn number<T: std::str::FromStr>(text: &str) -> Option<T> {
    text.parse().ok()
}

pub async fn handle(
    req: Request<Incoming>,
    counters: Arc<Counters>,
) -> Result<Response<ResponseBody>, std::convert::Infallible> {
    let response = route(req).await;
    counters.requests.fetch_add(1, Ordering::Relaxed);
    Ok(response)
}

async fn route(req: Request<Incoming>) -> Response<ResponseBody> {
    let path = req.uri().path();
    let mut parts = path.trim_start_matches('/').splitn(2, '/');
    let first = parts.next().unwrap_or("");
    let arg = parts.next();
    match (first, arg) {
        ("status", None) => text(StatusCode::OK, "OK"),
        ("json", None) => {
            let mut r = Response::new(ResponseBody::full(Bytes::from_static(JSON)));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            r
        }
        ("bytes", Some(n)) => match number::<usize>(n).filter(|&n| n <= MAX_BODY_BYTES) {
            Some(n) => Response::new(ResponseBody::Filler {
                remaining: n,
                chunked: false,
            }),
            None => bad_request("N must be a number of bytes up to 104857600"),
        },
        ("chunked", Some(n)) => match number::<usize>(n).filter(|&n| n <= MAX_BODY_BYTES) {
            Some(n) => Response::new(ResponseBody::Filler {
                remaining: n,
                chunked: true,
            }),
            None => bad_request("N must be a number of bytes up to 104857600"),
        },
        ("delay", Some(ms)) => match number::<u64>(ms).filter(|&ms| ms <= MAX_DELAY_MS) {
            Some(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                text(StatusCode::OK, "OK")
            }
            None => bad_request("MS must be milliseconds up to 60000"),
        },
        ("status", Some(code)) => match number::<u16>(code)
            .filter(|c| (200..=599).contains(c))
            .and_then(|c| StatusCode::from_u16(c).ok())
        {
            Some(status) => {
                let body = if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
                    ResponseBody::empty()
                } else {
                    ResponseBody::full(Bytes::from_static(
                        status.canonical_reason().unwrap_or("status").as_bytes(),
                    ))
                };
                let mut r = Response::new(body);
                *r.status_mut() = status;
                r
            }
            None => bad_request("CODE must be a status from 200 to 599"),
        },
        ("echo", None) => {
            let content_type = req.headers().get(CONTENT_TYPE).cloned();
            match Limited::new(req.into_body(), MAX_ECHO_BYTES).collect().await {
                Ok(body) => {
                    let mut r = Response::new(ResponseBody::full(body.to_bytes()));
                    if let Some(ct) = content_type {
                        r.headers_mut().insert(CONTENT_TYPE, ct);
                    }
                    r
                }
                Err(_) => {
                    let mut r = text(StatusCode::PAYLOAD_TOO_LARGE, "request body over 16 MiB");
                    r.headers_mut()
                        .insert(CONNECTION, HeaderValue::from_static("close"));
                    r
                }
            }
        }
        ("close", None) => {
            let mut r = text(StatusCode::OK, "OK");
            r.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
            r
        }
        _ => text(StatusCode::NOT_FOUND, "not found: try /status, /bytes/N, /json, /delay/MS, /status/CODE, /echo, /chunked/N, /close"),
    }
}
