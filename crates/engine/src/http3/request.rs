//! HTTP/1.1 request bytes (as the [`crate::source::RequestSource`] makes them for every
//! protocol) into an HTTP/3 request for h3: the request line becomes the pseudo-headers,
//! `Host` the `:authority`, and the connection-specific headers HTTP/3 forbids (RFC 9114
//! §4.2) are left out. Fixed requests are prepared once per worker.

use std::cell::RefCell;
use std::rc::Rc;

use bytes::Bytes;

use crate::connection::Shared;
use crate::source::Picked;
use crate::transport::Transport;

/// One request, ready to be sent any number of times.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub head: http::Request<()>,
    pub body: Bytes,
    /// What a sample counts as written: the header fields and the body.
    pub bytes_written: u64,
}

/// Headers that mean something only to one HTTP/1.1 connection: HTTP/2's list, and `te`
/// (HTTP/3 carries no transfer codings).
fn connection_specific(name: &str) -> bool {
    loadmark_wire::http2::request::connection_specific(name) || name.eq_ignore_ascii_case("te")
}

/// Header fields' bytes as QPACK sees them before compression (name, value, and the 32
/// bytes of overhead RFC 9204 counts for each field).
pub(crate) fn field_bytes(headers: &http::HeaderMap) -> u64 {
    (headers.iter())
        .map(|(n, v)| (n.as_str().len() + v.len() + 32) as u64)
        .sum()
}

/// Parses `bytes` (an HTTP/1.1 request with its body) into an `https` HTTP/3 request.
pub(crate) fn prepare(bytes: &[u8]) -> Result<Prepared, String> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut parsed = httparse::Request::new(&mut headers);
    let head_len = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("incomplete request head".into()),
        Err(e) => return Err(format!("request head: {e}")),
    };
    let authority = (parsed.headers.iter())
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| String::from_utf8_lossy(h.value).into_owned())
        .ok_or("no Host header")?;
    let path = parsed.path.unwrap_or("/");
    let uri = format!("https://{authority}{path}")
        .parse::<http::Uri>()
        .map_err(|e| format!("URL: {e}"))?;
    let mut head = http::Request::builder()
        .method(parsed.method.unwrap_or("GET"))
        .uri(uri);
    for h in parsed.headers.iter() {
        if connection_specific(h.name) {
            continue;
        }
        // h3 lowercases field names; `HeaderName` refuses what no field name may hold.
        let name = http::HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|e| format!("header {:?}: {e}", h.name))?;
        let value = http::HeaderValue::from_bytes(h.value)
            .map_err(|e| format!("header {:?}: {e}", h.name))?;
        head = head.header(name, value);
    }
    let head = head.body(()).map_err(|e| format!("request: {e}"))?;
    let body = Bytes::copy_from_slice(&bytes[head_len..]);
    let pseudo = head.method().as_str().len() + path.len() + authority.len() + "https".len();
    let bytes_written = field_bytes(head.headers()) + pseudo as u64 + 4 * 32 + body.len() as u64;
    Ok(Prepared {
        head,
        body,
        bytes_written,
    })
}

/// Fixed requests, prepared once, by the address of their HTTP/1.1 bytes (which the source
/// keeps for the whole run).
#[derive(Default)]
pub(crate) struct Fixed(RefCell<Vec<(usize, Rc<Prepared>)>>);

impl Fixed {
    pub(crate) fn pick<T: Transport>(
        &self,
        shared: &Shared<T>,
        global: Option<u64>,
        rendered: &mut Vec<u8>,
    ) -> Result<Rc<Prepared>, String> {
        match shared.source.next(global, rendered) {
            // Scripts are refused with --http3 when the plan is validated.
            Picked::Failed(message) => Err(message),
            Picked::Fixed(bytes, _) => {
                let key = bytes.as_ptr() as usize;
                let mut fixed = self.0.borrow_mut();
                if let Some((_, p)) = fixed.iter().find(|(k, _)| *k == key) {
                    return Ok(p.clone());
                }
                let p = Rc::new(prepare(bytes)?);
                fixed.push((key, p.clone()));
                Ok(p)
            }
            Picked::Rendered(_) => prepare(rendered).map(Rc::new),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http1_request_becomes_an_http3_one_without_connection_headers() {
        let bytes =
            b"POST /echo?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nConnection: keep-alive\r\n\
                      Content-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
        let p = prepare(bytes).unwrap();
        assert_eq!(p.head.method(), "POST");
        assert_eq!(p.head.uri().to_string(), "https://127.0.0.1:8443/echo?x=1");
        assert!(p.head.headers().get("connection").is_none());
        assert!(p.head.headers().get("host").is_none());
        assert_eq!(p.head.headers()["content-type"], "text/plain");
        assert_eq!(&p.body[..], b"hello");
        assert!(p.bytes_written > 5);
        assert!(prepare(b"GET / HTTP/1.1\r\n\r\n")
            .unwrap_err()
            .contains("Host"));
    }
}
