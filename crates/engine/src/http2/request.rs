//! HTTP/1.1 request bytes into an HTTP/2 request: the request line becomes the
//! pseudo-headers, `Host` the `:authority`, and the connection-specific headers HTTP/2
//! forbids (RFC 9113 §8.2.2) are left out.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Uri};

/// One request, ready to be sent any number of times.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    pub body: Bytes,
}

impl Prepared {
    /// A new `http::Request` (h2 takes one by value; the header map is cloned, not rebuilt).
    pub fn request(&self) -> Request<()> {
        let mut req = Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }
}

/// Headers that mean something only to one HTTP/1.1 connection; h2 refuses to send them.
fn connection_specific(name: &str) -> bool {
    [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "host",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

/// Parses `bytes` (as encoded by [`crate::http1::encode_request`] or a template) into a
/// request for `scheme` ("http" or "https").
pub(crate) fn prepare(bytes: &[u8], scheme: &str) -> Result<Prepared, String> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut parsed = httparse::Request::new(&mut headers);
    let head_len = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("incomplete request head".into()),
        Err(e) => return Err(format!("request head: {e}")),
    };
    let method = Method::from_bytes(parsed.method.unwrap_or("GET").as_bytes())
        .map_err(|e| format!("method: {e}"))?;
    let authority = parsed
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| String::from_utf8_lossy(h.value).into_owned())
        .ok_or("no Host header")?;
    let uri = Uri::builder()
        .scheme(scheme)
        .authority(authority.as_str())
        .path_and_query(parsed.path.unwrap_or("/"))
        .build()
        .map_err(|e| format!("URL: {e}"))?;
    let mut map = HeaderMap::with_capacity(parsed.headers.len());
    for h in parsed.headers.iter() {
        if connection_specific(h.name)
            || (h.name.eq_ignore_ascii_case("te") && !h.value.eq_ignore_ascii_case(b"trailers"))
        {
            continue;
        }
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|e| format!("header {:?}: {e}", h.name))?;
        let value =
            HeaderValue::from_bytes(h.value).map_err(|e| format!("header {:?}: {e}", h.name))?;
        map.append(name, value);
    }
    Ok(Prepared {
        method,
        uri,
        headers: map,
        body: Bytes::copy_from_slice(&bytes[head_len..]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadmark_plan::{RequestSpec, Target};

    #[test]
    fn http1_bytes_become_pseudo_headers_without_connection_headers() {
        let spec = RequestSpec {
            method: "POST".into(),
            url: Target::parse("http://127.0.0.1:8080/api/x?y=1").unwrap(),
            headers: vec![
                ("Client-Id".into(), "abc".into()),
                ("Connection".into(), "keep-alive".into()),
                ("TE".into(), "gzip".into()),
            ],
            body: b"{\"a\":1}".to_vec(),
            keep_alive: true,
        };
        let p = prepare(&crate::http1::encode_request(&spec), "http").unwrap();
        let req = p.request();
        assert_eq!(req.method(), Method::POST);
        assert_eq!(req.uri().to_string(), "http://127.0.0.1:8080/api/x?y=1");
        assert_eq!(req.headers()["client-id"], "abc");
        assert_eq!(req.headers()["content-length"], "7");
        for gone in ["connection", "host", "te"] {
            assert!(!req.headers().contains_key(gone), "{gone} must not be sent");
        }
        assert_eq!(&p.body[..], b"{\"a\":1}");
    }

    #[test]
    fn a_head_without_host_is_refused_with_the_reason() {
        let e = prepare(b"GET / HTTP/1.1\r\nX: y\r\n\r\n", "http").unwrap_err();
        assert!(e.contains("Host"), "{e}");
    }
}
