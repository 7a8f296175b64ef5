//! HTTP/1.1 request bytes into an HTTP/2 request: the request line becomes the
//! pseudo-headers, `Host` the `:authority`, and the connection-specific headers HTTP/2
//! forbids (RFC 9113 §8.2.2) are left out.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::Method;

use super::hpack::encode_field;

/// One request, ready to be sent any number of times: its header block is encoded once
/// (the client's HPACK never uses the dynamic table, so the same bytes serve every stream).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub block: Vec<u8>,
    pub body: Bytes,
}

/// Headers that mean something only to one HTTP/1.1 connection; h2 refuses to send them
/// (HTTP/3 drops them too, and `te` as well).
pub fn connection_specific(name: &str) -> bool {
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
pub fn prepare(bytes: &[u8], scheme: &str) -> Result<Prepared, String> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut parsed = httparse::Request::new(&mut headers);
    let head_len = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("incomplete request head".into()),
        Err(e) => return Err(format!("request head: {e}")),
    };
    let method = parsed.method.unwrap_or("GET");
    Method::from_bytes(method.as_bytes()).map_err(|e| format!("method: {e}"))?;
    let authority = parsed
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| h.value)
        .ok_or("no Host header")?;
    let path = parsed.path.unwrap_or("/");
    // The same checks `http::Uri` makes of an authority and a path.
    format!("{scheme}://{}{path}", String::from_utf8_lossy(authority))
        .parse::<http::Uri>()
        .map_err(|e| format!("URL: {e}"))?;
    // gRPC requests carry no content-length: a call's length is its messages, and a paced
    // stream sends more than the one round its body holds (h2 servers reset a stream whose
    // DATA exceeds its content-length).
    let grpc = parsed.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("content-type") && crate::grpc::is_grpc_content_type(h.value)
    });
    let mut block = Vec::with_capacity(64 + head_len);
    encode_field(b":method", method.as_bytes(), &mut block);
    encode_field(b":scheme", scheme.as_bytes(), &mut block);
    encode_field(b":authority", authority, &mut block);
    encode_field(b":path", path.as_bytes(), &mut block);
    for h in parsed.headers.iter() {
        if connection_specific(h.name)
            || (h.name.eq_ignore_ascii_case("te") && !h.value.eq_ignore_ascii_case(b"trailers"))
            || (grpc && h.name.eq_ignore_ascii_case("content-length"))
        {
            continue;
        }
        // HTTP/2 field names are lowercase (RFC 9113 §8.2.1); `HeaderName` lowercases and
        // refuses what no field name may hold.
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|e| format!("header {:?}: {e}", h.name))?;
        HeaderValue::from_bytes(h.value).map_err(|e| format!("header {:?}: {e}", h.name))?;
        encode_field(name.as_str().as_bytes(), h.value, &mut block);
    }
    Ok(Prepared {
        block,
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
        let mut fields = Vec::new();
        super::super::hpack::Decoder::new()
            .decode(&p.block, |n, v| {
                fields.push((
                    String::from_utf8(n.to_vec()).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                ))
            })
            .unwrap();
        let get = |name: &str| {
            fields
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        // Pseudo-headers first, in the order RFC 9113 §8.3.1 lists them.
        let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(&names[..4], [":method", ":scheme", ":authority", ":path"]);
        assert_eq!(get(":method"), Some("POST"));
        assert_eq!(get(":scheme"), Some("http"));
        assert_eq!(get(":authority"), Some("127.0.0.1:8080"));
        assert_eq!(get(":path"), Some("/api/x?y=1"));
        assert_eq!(get("client-id"), Some("abc"));
        assert_eq!(get("content-length"), Some("7"));
        for gone in ["connection", "host", "te"] {
            assert_eq!(get(gone), None, "{gone} must not be sent");
        }
        assert_eq!(&p.body[..], b"{\"a\":1}");
    }

    #[test]
    fn a_grpc_request_carries_no_content_length() {
        let head = b"POST /p.S/M HTTP/1.1\r\nHost: h\r\ncontent-type: application/grpc\r\ncontent-length: 7\r\n\r\n";
        let p = prepare(head, "http").unwrap();
        let mut names = Vec::new();
        super::super::hpack::Decoder::new()
            .decode(&p.block, |n, _| names.push(n.to_vec()))
            .unwrap();
        assert!(names.iter().any(|n| n == b"content-type"));
        assert!(!names.iter().any(|n| n == b"content-length"));
    }

    #[test]
    fn a_head_without_host_is_refused_with_the_reason() {
        let e = prepare(b"GET / HTTP/1.1\r\nX: y\r\n\r\n", "http").unwrap_err();
        assert!(e.contains("Host"), "{e}");
    }
}
