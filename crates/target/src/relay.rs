//! `/relay?url=http://127.0.0.1:PORT/path`: fetch a loopback URL and answer with what it
//! answered, so the built-in target can play the "API stack that reads JSON from a backend"
//! of a stack comparison.
//!
//! Loopback only (127.0.0.0/8, ::1, `localhost`), plain HTTP/1.1, GET, bounded: the answer
//! body is at most [`MAX_RELAY_BYTES`] and the whole fetch at most [`RELAY_TIMEOUT`]. Each
//! client connection keeps one keep-alive connection to the backend and reuses it, as an app
//! server's connection pool would (a new backend connection per request would measure
//! TIME_WAIT exhaustion, not the stack).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderValue, CONTENT_TYPE, HOST};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use crate::body::ResponseBody;

/// Largest backend answer relayed (16 MiB): the target holds it in memory once.
pub const MAX_RELAY_BYTES: usize = 16 * 1024 * 1024;
/// Longest a relayed fetch may take, connect included.
pub const RELAY_TIMEOUT: Duration = Duration::from_secs(10);

/// A backend address and path, checked to be loopback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RelayUrl {
    pub addr: SocketAddr,
    /// `host:port` as written, for the Host header.
    pub authority: String,
    pub path: String,
}

/// One client connection's backend connection, kept between its requests.
pub(crate) type Slot = Arc<tokio::sync::Mutex<Option<(SocketAddr, SendRequest<Empty<Bytes>>)>>>;

/// Parses the `url` query parameter of a `/relay` request.
pub(crate) fn parse_query(query: Option<&str>) -> Result<RelayUrl, &'static str> {
    let value = query
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("url="))
        .ok_or("relay: give the backend as ?url=http://127.0.0.1:PORT/path\n")?;
    parse_url(&percent_decode(value))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_url(url: &str) -> Result<RelayUrl, &'static str> {
    const FORM: &str = "relay: url must be http://127.0.0.1:PORT/path (or [::1], localhost): the relay fetches from loopback only\n";
    let rest = url.strip_prefix("http://").ok_or(FORM)?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && !p.contains(']') => {
            (h, p.parse::<u16>().map_err(|_| FORM)?)
        }
        _ => (authority, 80),
    };
    let ip: IpAddr = match host.trim_start_matches('[').trim_end_matches(']') {
        "localhost" => Ipv4Addr::LOCALHOST.into(),
        h => h.parse().map_err(|_| FORM)?,
    };
    if !ip.is_loopback() || port == 0 {
        return Err(FORM);
    }
    Ok(RelayUrl {
        addr: SocketAddr::new(ip, port),
        authority: authority.to_string(),
        path: path.to_string(),
    })
}

/// Fetches `url` over the slot's connection (opening one when it has none, or one to another
/// address, or a closed one) and answers with the backend's status, content type and body.
/// A failed fetch is a 502 naming what failed.
pub(crate) async fn relay(url: RelayUrl, slot: Slot) -> Response<ResponseBody> {
    match tokio::time::timeout(RELAY_TIMEOUT, fetch(&url, &slot)).await {
        Ok(Ok(r)) => r,
        Ok(Err(why)) => bad_gateway(format!("relay: {}: {why}\n", url.addr)),
        Err(_) => {
            // The connection may hold half an answer: never reuse it.
            *slot.lock().await = None;
            bad_gateway(format!(
                "relay: {}: no answer within {RELAY_TIMEOUT:?}\n",
                url.addr
            ))
        }
    }
}

async fn fetch(url: &RelayUrl, slot: &Slot) -> Result<Response<ResponseBody>, String> {
    let mut guard = slot.lock().await;
    let reusable = matches!(&*guard, Some((addr, s)) if *addr == url.addr && !s.is_closed());
    if !reusable {
        let stream = tokio::net::TcpStream::connect(url.addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let _ = stream.set_nodelay(true);
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        *guard = Some((url.addr, send));
    }
    let (_, send) = guard.as_mut().expect("set above");
    send.ready().await.map_err(|e| format!("connection: {e}"))?;
    let request = Request::get(url.path.as_str())
        .header(
            HOST,
            HeaderValue::from_str(&url.authority).map_err(|e| e.to_string())?,
        )
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let answer = send.send_request(request).await;
    let response = match answer {
        Ok(r) => r,
        Err(e) => {
            *guard = None;
            return Err(format!("request: {e}"));
        }
    };
    let (parts, body) = response.into_parts();
    let body = match Limited::new(body, MAX_RELAY_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            *guard = None;
            return Err(format!("body (at most {MAX_RELAY_BYTES} bytes): {e}"));
        }
    };
    let mut r = Response::new(ResponseBody::full(body));
    *r.status_mut() = parts.status;
    if let Some(ct) = parts.headers.get(CONTENT_TYPE) {
        r.headers_mut().insert(CONTENT_TYPE, ct.clone());
    }
    Ok(r)
}

fn bad_gateway(why: String) -> Response<ResponseBody> {
    let mut r = Response::new(ResponseBody::full(Bytes::from(why)));
    *r.status_mut() = StatusCode::BAD_GATEWAY;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_urls_are_relayed() {
        let u = parse_query(Some("url=http://127.0.0.1:8080/data.json")).unwrap();
        assert_eq!(u.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(
            (u.authority.as_str(), u.path.as_str()),
            ("127.0.0.1:8080", "/data.json")
        );
        let u = parse_query(Some("a=1&url=http%3A%2F%2F%5B%3A%3A1%5D%3A9%2Fx%3Fy%3D1")).unwrap();
        assert_eq!(
            (u.addr, u.path.as_str()),
            ("[::1]:9".parse().unwrap(), "/x?y=1")
        );
        let u = parse_query(Some("url=http://localhost:7")).unwrap();
        assert_eq!((u.addr.port(), u.path.as_str()), (7, "/"));
        for bad in [
            None,
            Some("x=1"),
            Some("url=http://10.0.0.1:80/"),
            Some("url=http://example.com/"),
            Some("url=https://127.0.0.1:443/"),
            Some("url=http://127.0.0.1:0/"),
            Some("url=http://127.0.0.1:99999/"),
            Some("url=127.0.0.1:80/"),
        ] {
            assert!(parse_query(bad).is_err(), "{bad:?}");
        }
    }
}
