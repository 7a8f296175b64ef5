//! HTTP/1.1 request bytes into an HTTP/2 request: the request line becomes the
//! pseudo-headers, `Host` the `:authority`, and the connection-specific headers HTTP/2
//! forbids (RFC 9113 §8.2.2) are left out.

use bytes::Bytes;

use super::hpack::encode_field;
use crate::http1::read_head;

/// One request, ready to be sent any number of times: its header block is encoded once
/// (the client's HPACK never uses the dynamic table, so the same bytes serve every stream).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub block: Vec<u8>,
    pub body: Bytes,
}

/// Parses `bytes` (as encoded by [`crate::http1::encode_request`] or a template) into a
/// request for `scheme` ("http" or "https").
pub fn prepare(bytes: &[u8], scheme: &str) -> Result<Prepared, String> {
    let head = read_head(bytes, scheme)?;
    // gRPC requests carry no content-length: a call's length is its messages, and a paced
    // stream sends more than the one round its body holds (h2 servers reset a stream whose
    // DATA exceeds its content-length).
    let grpc = (head.fields.iter()).any(|(name, value)| {
        name == http::header::CONTENT_TYPE && crate::grpc::is_grpc_content_type(value)
    });
    let mut block = Vec::with_capacity(64 + bytes.len() - head.body.len());
    encode_field(b":method", head.method.as_bytes(), &mut block);
    encode_field(b":scheme", scheme.as_bytes(), &mut block);
    encode_field(b":authority", head.authority, &mut block);
    encode_field(b":path", head.path.as_bytes(), &mut block);
    for (name, value) in &head.fields {
        // `te` is allowed only as `trailers` (RFC 9113 §8.2.2).
        if (name == http::header::TE && !value.eq_ignore_ascii_case(b"trailers"))
            || (grpc && name == http::header::CONTENT_LENGTH)
        {
            continue;
        }
        encode_field(name.as_str().as_bytes(), value, &mut block);
    }
    Ok(Prepared {
        block,
        body: Bytes::copy_from_slice(head.body),
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
