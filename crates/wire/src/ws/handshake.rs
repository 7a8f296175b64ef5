//! The opening handshake (RFC 6455 section 4): the upgrade request and the check of the
//! server's answer.

use base64::Engine as _;
use sha1::{Digest, Sha1};

use loadmark_plan::Target;

/// Appended to the key before hashing (RFC 6455 1.3).
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The largest response head read before the upgrade is refused as a protocol error.
pub const MAX_HEAD: usize = 64 * 1024;

/// A fresh `Sec-WebSocket-Key` from 16 random bytes.
pub fn key(random: [u64; 2]) -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&random[0].to_le_bytes());
    bytes[8..].copy_from_slice(&random[1].to_le_bytes());
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The `Sec-WebSocket-Accept` a server must answer `key` with.
pub fn accept_for(key: &str) -> String {
    let mut sha = Sha1::new();
    sha.update(key.as_bytes());
    sha.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(sha.finalize())
}

/// The upgrade request; `headers` are the user's (`-H`), written after loadmark's own.
pub fn request(url: &Target, key: &str, headers: &[(String, String)]) -> Vec<u8> {
    request_to(url.path_and_query(), url.host_header(), key, headers)
}

/// The upgrade request for `path` (and query) on `host`.
pub fn request_to(path: &str, host: &str, key: &str, headers: &[(String, String)]) -> Vec<u8> {
    let mut out = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
    );
    for (name, value) in headers {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// What the server answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// More bytes are needed.
    Partial,
    /// 101 with the right accept value; `head_len` bytes were the head, the rest are frames.
    Upgraded { head_len: usize },
    /// Any other status, or 101 without the right headers: the check failed.
    Refused { status: u16, why: String },
    /// Not an HTTP response at all.
    Malformed(String),
}

/// Reads the server's answer from `buf` (everything read so far).
pub fn answer(buf: &[u8], key: &str) -> Answer {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let head_len = match response.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
            return Answer::Malformed(format!("upgrade response head exceeds {MAX_HEAD} bytes"))
        }
        Ok(httparse::Status::Partial) => return Answer::Partial,
        Err(e) => {
            let shown = String::from_utf8_lossy(&buf[..buf.len().min(40)]).into_owned();
            return Answer::Malformed(format!("upgrade response is not HTTP ({e}): {shown:?}"));
        }
    };
    let status = response.code.unwrap_or(0);
    let reason = response.reason.unwrap_or("");
    if status != 101 {
        return Answer::Refused {
            status,
            why: format!("upgrade answered {status} {reason}, expected 101 Switching Protocols"),
        };
    }
    let header = |name: &str| {
        response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    let has_token = |name: &str, token: &str| {
        header(name).is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    };
    if !has_token("upgrade", "websocket") || !has_token("connection", "upgrade") {
        return Answer::Refused {
            status,
            why: "101 without `Upgrade: websocket` and `Connection: Upgrade`".to_string(),
        };
    }
    let expected = accept_for(key);
    match header("sec-websocket-accept") {
        Some(got) if got == expected => Answer::Upgraded { head_len },
        got => Answer::Refused {
            status,
            why: format!(
                "101 with Sec-WebSocket-Accept {got:?}, expected {expected:?} for this key"
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_matches_rfc_6455_example() {
        // RFC 6455 section 1.3.
        assert_eq!(
            accept_for("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert_eq!(key([1, 2]).len(), 24);
    }

    #[test]
    fn request_carries_the_upgrade_and_user_headers() {
        let url = Target::parse_ws("ws://127.0.0.1:8080/ws/echo?x=1").unwrap();
        let text = String::from_utf8(request(
            &url,
            "abc",
            &[("Authorization".into(), "Bearer t".into())],
        ))
        .unwrap();
        assert!(text.starts_with("GET /ws/echo?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"));
        assert!(text.contains("Sec-WebSocket-Key: abc\r\n"));
        assert!(text.ends_with("Authorization: Bearer t\r\n\r\n"));
    }

    #[test]
    fn checks_the_answer() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let good = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
        let mut with_frame = good.as_bytes().to_vec();
        with_frame.extend_from_slice(&[0x81, 0x00]);
        assert_eq!(
            answer(&with_frame, key),
            Answer::Upgraded {
                head_len: good.len()
            }
        );
        assert_eq!(answer(&good.as_bytes()[..30], key), Answer::Partial);
        match answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK", key) {
            Answer::Refused { status: 200, why } => assert!(why.contains("expected 101"), "{why}"),
            other => panic!("{other:?}"),
        }
        let wrong = good.replace("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "nope");
        assert!(matches!(
            answer(wrong.as_bytes(), key),
            Answer::Refused { status: 101, .. }
        ));
        assert!(matches!(
            answer(b"SSH-2.0-OpenSSH\r\n\r\n", key),
            Answer::Malformed(_)
        ));
    }
}
