//! HTTP/1.1 request bytes into the bytes of an HTTP/3 request stream: the request line becomes
//! the pseudo-headers, `Host` the `:authority`, and the connection-specific headers HTTP/3
//! forbids (RFC 9114 §4.2) are left out, `te` with them (HTTP/3 has no transfer codings).

use bytes::Bytes;

use super::frame::{put_frame_head, DATA, HEADERS};
use super::qpack::{encode_field, start_block};
use crate::http1::read_head;

/// One request, ready to be sent any number of times: its HEADERS frame encoded once.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The HEADERS frame, head and payload.
    pub headers: Vec<u8>,
    pub body: Bytes,
    /// GET, HEAD, OPTIONS or TRACE: safe to send in 0-RTT data (RFC 9110 §9.2.1).
    pub safe: bool,
    /// What a sample counts as written: each header field's name and value and the 32 bytes
    /// RFC 9204 counts for it, and the body.
    pub bytes_written: u64,
}

impl Prepared {
    /// The head of the DATA frame that carries the body.
    pub fn data_head(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(9);
        put_frame_head(&mut out, DATA, self.body.len() as u64);
        out
    }
}

/// Parses `bytes` (an HTTP/1.1 request with its body) into an `https` HTTP/3 request.
pub fn prepare(bytes: &[u8]) -> Result<Prepared, String> {
    let head = read_head(bytes, "https")?;
    let mut block = Vec::with_capacity(64 + bytes.len() - head.body.len());
    start_block(&mut block);
    encode_field(b":method", head.method.as_bytes(), &mut block);
    encode_field(b":scheme", b"https", &mut block);
    encode_field(b":authority", head.authority, &mut block);
    encode_field(b":path", head.path.as_bytes(), &mut block);
    let pseudo = head.method.len() + "https".len() + head.authority.len() + head.path.len();
    let mut fields = 4 * 32 + pseudo as u64;
    for (name, value) in &head.fields {
        // HTTP/3 has no transfer codings, so no `te` (RFC 9114 §4.2).
        if name == http::header::TE {
            continue;
        }
        encode_field(name.as_str().as_bytes(), value, &mut block);
        fields += (name.as_str().len() + value.len() + 32) as u64;
    }
    let mut frame = Vec::with_capacity(block.len() + 9);
    put_frame_head(&mut frame, HEADERS, block.len() as u64);
    frame.extend_from_slice(&block);
    let body = Bytes::copy_from_slice(head.body);
    Ok(Prepared {
        headers: frame,
        bytes_written: fields + body.len() as u64,
        body,
        safe: matches!(head.method, "GET" | "HEAD" | "OPTIONS" | "TRACE"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http3::frame::frame_head;
    use crate::http3::qpack::decode;

    #[test]
    fn an_http1_request_becomes_an_http3_one_without_connection_headers() {
        let bytes =
            b"POST /api?x=1 HTTP/1.1\r\nHost: example.test:8443\r\nConnection: keep-alive\r\n\
                      TE: trailers\r\nX-Token: abc\r\nContent-Length: 3\r\n\r\nabc";
        let p = prepare(bytes).unwrap();
        let (kind, len, at) = frame_head(&p.headers).unwrap();
        assert_eq!((kind, len as usize), (HEADERS, p.headers.len() - at));
        let mut fields = Vec::new();
        decode(&p.headers[at..], &mut Default::default(), |n, v| {
            fields.push(format!(
                "{}: {}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            ))
        })
        .unwrap();
        assert_eq!(
            fields,
            [
                ":method: POST",
                ":scheme: https",
                ":authority: example.test:8443",
                ":path: /api?x=1",
                "x-token: abc",
                "content-length: 3"
            ]
        );
        assert_eq!(&p.body[..], b"abc");
        assert!(!p.safe);
        assert_eq!(p.data_head(), [0, 3]);
        // 4 pseudo fields (4 + 5 + 17 + 8 bytes), x-token and content-length, 32 each, body 3.
        assert_eq!(p.bytes_written, 34 + 7 + 3 + 14 + 1 + 6 * 32 + 3);
        assert!(prepare(b"GET / HTTP/1.1\r\n\r\n")
            .unwrap_err()
            .contains("Host"));
        assert!(prepare(b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n").is_err());
        assert!(prepare(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap().safe);
    }
}
