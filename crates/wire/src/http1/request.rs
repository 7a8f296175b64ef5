//! Request bytes, built once per run and written as-is for every request.

use loadmark_plan::RequestSpec;

/// Encodes the request: `Host`, `Content-Length` (when there is a body or the method usually
/// carries one), `Connection: close` without keep-alive, and a `User-Agent`, unless the user
/// set them.
pub fn encode_request(spec: &RequestSpec) -> Vec<u8> {
    let has = |name: &str| {
        spec.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let mut out = Vec::with_capacity(256 + spec.body.len());
    out.extend_from_slice(spec.method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(spec.url.path_and_query().as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut header = |name: &str, value: &str| {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    };
    if !has("host") {
        header("Host", spec.url.host_header());
    }
    if !has("user-agent") {
        header(
            "User-Agent",
            concat!("loadmark/", env!("CARGO_PKG_VERSION")),
        );
    }
    for (name, value) in &spec.headers {
        header(name, value);
    }
    let body_method = matches!(spec.method.as_str(), "POST" | "PUT" | "PATCH");
    if !has("content-length") && (!spec.body.is_empty() || body_method) {
        header("Content-Length", &spec.body.len().to_string());
    }
    if !spec.keep_alive && !has("connection") {
        header("Connection", "close");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&spec.body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadmark_plan::Target;

    fn spec(method: &str, body: &[u8], keep_alive: bool) -> RequestSpec {
        RequestSpec {
            method: method.into(),
            url: Target::parse("http://127.0.0.1:8080/api/x?y=1").unwrap(),
            headers: vec![("Client-Id".into(), "abc".into())],
            body: body.to_vec(),
            keep_alive,
        }
    }

    #[test]
    fn get_with_headers() {
        let text = String::from_utf8(encode_request(&spec("GET", b"", true))).unwrap();
        assert!(
            text.starts_with("GET /api/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
            "{text}"
        );
        assert!(text.contains("Client-Id: abc\r\n"));
        assert!(!text.contains("Content-Length") && !text.contains("Connection"));
        assert!(text.ends_with("\r\n\r\n"));
    }

    #[test]
    fn post_body_and_close() {
        let text = String::from_utf8(encode_request(&spec("POST", b"{\"a\":1}", false))).unwrap();
        assert!(text.contains("Content-Length: 7\r\n"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("\r\n\r\n{\"a\":1}"));
    }
}
