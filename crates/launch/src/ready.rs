//! Readiness probes: a TCP connect, or a minimal blocking HTTP/1.1 GET.
//!
//! Deliberately tiny and blocking: a probe runs a few times a second for a few seconds before
//! the run starts, so a runtime or an HTTP client crate would buy nothing.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// A parsed `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpTarget {
    host: String,
    port: u16,
    /// As written in the URL (`example:8080`, `[::1]:80`), for the Host header.
    authority: String,
    /// Path and query, at least "/".
    path: String,
}

pub(crate) fn parse_http_url(url: &str) -> Result<HttpTarget, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("expected a URL like http://127.0.0.1:8080/health, got `{url}`"))?;
    match scheme.to_ascii_lowercase().as_str() {
        "http" => {}
        "https" => {
            return Err(
                "https is not supported for readiness checks; give the server's plain \
                        http:// health URL, or wait for its port to open instead"
                    .to_string(),
            )
        }
        other => return Err(format!("unsupported scheme `{other}`; expected http://")),
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err("user names and passwords in the URL are not supported".to_string());
    }
    let path = tail.split('#').next().unwrap_or("");
    let path = match path.chars().next() {
        None => "/".to_string(),
        Some('?') => format!("/{path}"),
        Some(_) => path.to_string(),
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("unclosed '[' in `{authority}`"))?;
        let port = match after.strip_prefix(':') {
            Some(port) => Some(port),
            None if after.is_empty() => None,
            None => return Err(format!("unexpected `{after}` after the address in `{url}`")),
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(format!("no host in `{url}`"));
    }
    let port = match port {
        None => 80,
        Some(port) => port
            .parse::<u16>()
            .map_err(|_| format!("bad port `{port}` in `{url}`"))?,
    };
    Ok(HttpTarget {
        host: host.to_string(),
        port,
        authority: authority.to_string(),
        path,
    })
}

/// Connects to the first address that accepts, within `timeout` per address.
fn connect(addrs: &[SocketAddr], timeout: Duration) -> Result<TcpStream, String> {
    let mut last = String::from("no address to connect to");
    for addr in addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = format!("connect to {addr}: {e}"),
        }
    }
    Err(last)
}

/// Whether something accepts TCP connections at `addr`.
pub(crate) fn probe_port(addr: SocketAddr, timeout: Duration) -> Result<(), String> {
    connect(&[addr], timeout).map(drop)
}

/// GETs the URL and returns the response's status code.
pub(crate) fn probe_http(target: &HttpTarget, timeout: Duration) -> Result<u16, String> {
    let addrs: Vec<SocketAddr> = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{}`: {e}", target.host))?
        .collect();
    let mut stream = connect(&addrs, timeout)?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| format!("socket options: {e}"))?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: loadmark-launch\r\nAccept: */*\r\n\
         Connection: close\r\n\r\n",
        target.path, target.authority
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send request: {e}"))?;
    // Only the status line matters; stop reading as soon as it is complete.
    let mut head = Vec::with_capacity(256);
    let mut buf = [0u8; 256];
    while !head.windows(2).any(|w| w == b"\r\n") && head.len() < 4096 {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("read response: {e}")),
        }
    }
    parse_status_line(&head)
}

fn parse_status_line(head: &[u8]) -> Result<u16, String> {
    let line_end = head
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(head.len());
    let line = String::from_utf8_lossy(&head[..line_end]);
    let bad = || {
        if line.is_empty() {
            "the connection closed without a response".to_string()
        } else {
            format!(
                "not an HTTP response: `{}`",
                line.chars().take(80).collect::<String>()
            )
        }
    };
    let mut parts = line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/") {
        return Err(bad());
    }
    parts
        .next()
        .filter(|code| code.len() == 3)
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_http_urls() {
        let t = parse_http_url("http://127.0.0.1:8080/health?full=1#x").unwrap();
        assert_eq!(
            (
                t.host.as_str(),
                t.port,
                t.authority.as_str(),
                t.path.as_str()
            ),
            ("127.0.0.1", 8080, "127.0.0.1:8080", "/health?full=1")
        );
        let t = parse_http_url("HTTP://localhost").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("localhost", 80, "/")
        );
        let t = parse_http_url("http://[::1]:9000?x=1").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("::1", 9000, "/?x=1")
        );
        assert_eq!(t.authority, "[::1]:9000");
    }

    #[test]
    fn rejects_what_it_cannot_probe() {
        assert!(parse_http_url("https://x/")
            .unwrap_err()
            .contains("https is not supported"));
        assert!(parse_http_url("ftp://x/").unwrap_err().contains("ftp"));
        assert!(parse_http_url("localhost:80/")
            .unwrap_err()
            .contains("expected a URL"));
        assert!(parse_http_url("http://:80/")
            .unwrap_err()
            .contains("no host"));
        assert!(parse_http_url("http://x:99999/")
            .unwrap_err()
            .contains("bad port"));
        assert!(parse_http_url("http://u:p@x/").is_err());
    }

    #[test]
    fn parses_status_lines() {
        assert_eq!(parse_status_line(b"HTTP/1.1 204 No Content\r\n"), Ok(204));
        assert_eq!(parse_status_line(b"HTTP/1.0 503\r\n"), Ok(503));
        assert!(parse_status_line(b"").unwrap_err().contains("closed"));
        assert!(parse_status_line(b"SSH-2.0-OpenSSH\r\n")
            .unwrap_err()
            .contains("not an HTTP"));
        assert!(parse_status_line(b"HTTP/1.1 20 OK\r\n").is_err());
    }
}
