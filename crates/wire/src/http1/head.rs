//! An HTTP/1.1 request head read as the fields of an HTTP/2 or HTTP/3 request: the request
//! line's parts become the pseudo-headers, `Host` the `:authority`, and each other header a
//! lowercase field, checked as `http` checks names and values. HTTP/2's and HTTP/3's request
//! preparation share it, and leave out what each protocol forbids.

use http::header::{HeaderName, HeaderValue};

/// A request head: its pseudo-headers' values, its other fields in order, and its body.
#[derive(Debug)]
pub struct Head<'a> {
    pub method: &'a str,
    pub authority: &'a [u8],
    pub path: &'a str,
    /// Every header but `Host`, with its name lowercased, in the order written.
    pub fields: Vec<(HeaderName, &'a [u8])>,
    pub body: &'a [u8],
}

/// Headers that mean something only to one HTTP/1.1 connection, which HTTP/2 and HTTP/3
/// forbid (RFC 9113 §8.2.2, RFC 9114 §4.2); `Host` becomes the `:authority`. (`te` is
/// HTTP/2's `trailers` only, and HTTP/3 drops it.)
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

/// Reads `bytes` (as encoded by [`super::encode_request`] or a template) as a request for
/// `scheme` ("http" or "https"), leaving out the [`connection_specific`] headers.
pub fn read_head<'a>(bytes: &'a [u8], scheme: &str) -> Result<Head<'a>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut parsed = httparse::Request::new(&mut headers);
    let head_len = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("incomplete request head".into()),
        Err(e) => return Err(format!("request head: {e}")),
    };
    let method = parsed.method.unwrap_or("GET");
    http::Method::from_bytes(method.as_bytes()).map_err(|e| format!("method: {e}"))?;
    let authority = (parsed.headers.iter())
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map(|h| h.value)
        .ok_or("no Host header")?;
    let path = parsed.path.unwrap_or("/");
    // The checks `http::Uri` makes of an authority and a path.
    format!("{scheme}://{}{path}", String::from_utf8_lossy(authority))
        .parse::<http::Uri>()
        .map_err(|e| format!("URL: {e}"))?;
    let mut fields = Vec::with_capacity(parsed.headers.len());
    for h in parsed.headers.iter() {
        if connection_specific(h.name) {
            continue;
        }
        // Field names are lowercase in HTTP/2 and HTTP/3; `HeaderName` lowercases and refuses
        // what no field name may hold.
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|e| format!("header {:?}: {e}", h.name))?;
        HeaderValue::from_bytes(h.value).map_err(|e| format!("header {:?}: {e}", h.name))?;
        fields.push((name, h.value));
    }
    Ok(Head {
        method,
        authority,
        path,
        fields,
        body: &bytes[head_len..],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_reads_as_pseudo_headers_and_lowercase_fields_without_connection_ones() {
        let bytes = b"POST /a?b=1 HTTP/1.1\r\nHost: example.com:8443\r\nConnection: keep-alive\r\n\
                      X-Trace: 7\r\nContent-Length: 2\r\n\r\nhi";
        let head = read_head(bytes, "https").unwrap();
        assert_eq!(head.method, "POST");
        assert_eq!(head.authority, b"example.com:8443");
        assert_eq!(head.path, "/a?b=1");
        let names: Vec<_> = head.fields.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        assert_eq!(
            names,
            [("x-trace", &b"7"[..]), ("content-length", &b"2"[..])]
        );
        assert_eq!(head.body, b"hi");
    }

    #[test]
    fn what_cannot_be_a_request_is_refused_with_the_reason() {
        let no_host = read_head(b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", "http").unwrap_err();
        assert!(no_host.contains("no Host header"), "{no_host}");
        let partial = read_head(b"GET / HTTP/1.1\r\nHost: a\r\n", "http").unwrap_err();
        assert!(partial.contains("incomplete"), "{partial}");
        let bad_name = read_head(b"GET / HTTP/1.1\r\nHost: a\r\nX\x01: 1\r\n\r\n", "http");
        assert!(bad_name.is_err());
    }
}
