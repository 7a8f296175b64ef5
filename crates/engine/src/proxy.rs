//! Going through a proxy (`-x`, `HTTP(S)_PROXY`): what changes is how a connection is
//! opened, and for plain http:// through an HTTP proxy, the request line.
//!
//! - **Forward** (an HTTP proxy, a plain http:// HTTP/1.1 target, as curl, hey and k6 do):
//!   connections go to the proxy, and each request names its target in absolute form
//!   (`GET http://host:port/path HTTP/1.1`) with a `Proxy-Authorization: Basic` header when
//!   the proxy URL holds credentials. The request bytes are rewritten where they are made
//!   (once per run for a fixed request, [`Forward::rewrite`]), so sending stays as it is.
//! - **Tunnel**: an HTTP proxy's `CONNECT host:port` for https://, HTTP/2 and WebSocket
//!   targets; SOCKS5 (RFC 1928, user/password auth RFC 1929) for every target. Once up, the
//!   tunnel is the same TCP socket carrying the target's bytes, so every stream type (TLS,
//!   HTTP/2, WebSocket, the HTTP/1.1 executors' own) works over it unchanged; the tunnel's
//!   set-up is part of the connection's connect time.
//!
//! A proxy that refuses (407, a 502 for a CONNECT, a SOCKS5 reply code) fails the connect:
//! a connect error naming the proxy, with what it said. Only [`crate::transport::Tcp`]
//! knows about tunnels; with no proxy its connect is the direct one, branch for branch.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use base64::Engine as _;
use loadmark_metrics::ErrorKind;
use loadmark_plan::{Plan, Proxy, ProxyKind, Scheme};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::transport::{classify_io, ConnectError};

/// What a connection through the proxy does once TCP to the proxy is up.
#[derive(Debug)]
pub(crate) struct Via {
    /// The proxy as messages name it (no password).
    label: String,
    tunnel: Tunnel,
}

#[derive(Debug)]
enum Tunnel {
    /// Nothing: requests are forwarded (see [`Forward`]).
    Forward,
    /// An HTTP proxy's CONNECT, this request written as-is.
    Connect {
        request: Box<[u8]>,
        authority: String,
    },
    /// SOCKS5 to this destination, with RFC 1929 credentials when given.
    Socks5 {
        destination: Destination,
        credentials: Option<(String, String)>,
    },
}

#[derive(Debug)]
enum Destination {
    /// `socks5://`: resolved here.
    Addr(SocketAddr),
    /// `socks5h://`: the proxy resolves the name.
    Name(String, u16),
}

/// How a plan's connections reach its target through its proxy: the address to connect to
/// (the proxy's) and what to do there. None without a proxy.
pub(crate) fn route(plan: &Plan) -> Result<Option<(SocketAddr, Via)>, crate::EngineError> {
    let Some(proxy) = &plan.protocol.proxy else {
        return Ok(None);
    };
    let url = &plan.request.url;
    let proxy_addr = crate::runner::resolve(&proxy.host, proxy.port).map_err(|e| match e {
        crate::EngineError::Resolve { source, .. } => crate::EngineError::ProxyResolve {
            proxy: proxy.to_string(),
            source,
        },
        other => other,
    })?;
    let tunnel = match proxy.kind {
        ProxyKind::Http if forwards(plan) => Tunnel::Forward,
        ProxyKind::Http => {
            let authority = authority(url.host(), url.port());
            let mut request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
            if let Some(value) = basic(proxy) {
                request.push_str(&format!("Proxy-Authorization: {value}\r\n"));
            }
            request.push_str("\r\n");
            Tunnel::Connect {
                request: request.into_bytes().into(),
                authority,
            }
        }
        ProxyKind::Socks5 => Tunnel::Socks5 {
            destination: Destination::Addr(crate::runner::resolve(url.host(), url.port())?),
            credentials: proxy.credentials.clone(),
        },
        ProxyKind::Socks5h => Tunnel::Socks5 {
            destination: Destination::Name(url.host().to_string(), url.port()),
            credentials: proxy.credentials.clone(),
        },
    };
    Ok(Some((
        proxy_addr,
        Via {
            label: proxy.to_string(),
            tunnel,
        },
    )))
}

/// True when the plan's requests are forwarded by an HTTP proxy rather than tunnelled:
/// plain http:// HTTP/1.1 (HTTP/2 without TLS and WebSocket upgrades need a tunnel: a
/// forwarding proxy speaks HTTP/1.1 to the target and does not pass an upgrade on).
fn forwards(plan: &Plan) -> bool {
    plan.protocol
        .proxy
        .as_ref()
        .is_some_and(|p| p.kind == ProxyKind::Http)
        && plan.request.url.scheme() == Scheme::Http
        && plan.protocol.http2.is_none()
        && plan.websocket.is_none()
}

fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `Basic base64(user:password)`, when the proxy URL holds credentials.
fn basic(proxy: &Proxy) -> Option<String> {
    let (user, password) = proxy.credentials.as_ref()?;
    let token =
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}").as_bytes());
    Some(format!("Basic {token}"))
}

impl Via {
    /// The proxy as messages name it.
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// Connects to the proxy at `addr` and sets the tunnel up, all within `timeout`.
    pub(crate) async fn connect(
        &self,
        addr: SocketAddr,
        timeout: Duration,
        open: impl std::future::Future<Output = Result<TcpStream, ConnectError>>,
    ) -> Result<TcpStream, ConnectError> {
        let began = Instant::now();
        let mut stream = open.await.map_err(|e| ConnectError {
            kind: e.kind,
            message: format!("proxy {}: {}", self.label, e.message),
        })?;
        let left = timeout.saturating_sub(began.elapsed());
        let set_up = async {
            match &self.tunnel {
                Tunnel::Forward => Ok(()),
                Tunnel::Connect { request, authority } => {
                    self.connect_tunnel(&mut stream, request, authority).await
                }
                Tunnel::Socks5 {
                    destination,
                    credentials,
                } => {
                    self.socks5(&mut stream, destination, credentials.as_ref())
                        .await
                }
            }
        };
        match tokio::time::timeout(left, set_up).await {
            Ok(Ok(())) => Ok(stream),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(self.refused(format!(
                "no tunnel to the target within {timeout:?} (--connect-timeout) from {addr}"
            ))),
        }
    }

    fn refused(&self, what: String) -> ConnectError {
        ConnectError {
            kind: ErrorKind::Connect,
            message: format!("proxy {}: {what}", self.label),
        }
    }

    fn io(&self, step: &str, e: io::Error) -> ConnectError {
        ConnectError {
            kind: classify_io(&e, ErrorKind::Connect),
            message: format!("proxy {}: {step}: {e}", self.label),
        }
    }

    async fn connect_tunnel(
        &self,
        stream: &mut TcpStream,
        request: &[u8],
        authority: &str,
    ) -> Result<(), ConnectError> {
        stream
            .write_all(request)
            .await
            .map_err(|e| self.io("writing CONNECT", e))?;
        // The target says nothing before the client (TLS, HTTP/2 and HTTP/1.1 all speak
        // first), so whatever arrives before our first write is the proxy's answer alone.
        let mut head = Vec::with_capacity(256);
        let mut buf = [0u8; 1024];
        let end = loop {
            let n = stream
                .read(&mut buf)
                .await
                .map_err(|e| self.io("reading the CONNECT answer", e))?;
            if n == 0 {
                return Err(self.refused(format!(
                    "closed the connection without answering CONNECT {authority}"
                )));
            }
            head.extend_from_slice(&buf[..n]);
            if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            if head.len() > 16 * 1024 {
                return Err(self.refused(format!(
                    "answered CONNECT {authority} with no end of head in 16 KiB"
                )));
            }
        };
        let status_line = String::from_utf8_lossy(
            head[..end]
                .split(|&b| b == b'\r')
                .next()
                .unwrap_or_default(),
        )
        .into_owned();
        let status: Option<u16> = status_line.split(' ').nth(1).and_then(|s| s.parse().ok());
        match status {
            Some(200..=299) if head.len() == end + 4 => Ok(()),
            Some(200..=299) => Err(self.refused(format!(
                "sent {} bytes after its answer to CONNECT {authority}, before the target could",
                head.len() - end - 4
            ))),
            Some(407) => Err(self.refused(format!(
                "CONNECT {authority} refused: {} (the proxy wants credentials: \
                 http://USER:PASSWORD@host:port in -x or the *_PROXY variable)",
                status_line.trim()
            ))),
            _ => Err(self.refused(format!(
                "CONNECT {authority} refused: {}",
                status_line.trim()
            ))),
        }
    }

    async fn socks5(
        &self,
        stream: &mut TcpStream,
        destination: &Destination,
        credentials: Option<&(String, String)>,
    ) -> Result<(), ConnectError> {
        let greeting: &[u8] = match credentials {
            Some(_) => &[5, 2, 0x00, 0x02],
            None => &[5, 1, 0x00],
        };
        let step = "SOCKS5 handshake";
        stream
            .write_all(greeting)
            .await
            .map_err(|e| self.io(step, e))?;
        let mut choice = [0u8; 2];
        self.read_exact(stream, &mut choice).await?;
        match (choice, credentials) {
            ([5, 0x00], _) => {}
            ([5, 0x02], Some((user, password))) => {
                if user.len() > 255 || password.len() > 255 {
                    return Err(
                        self.refused("SOCKS5 user and password are at most 255 bytes each".into())
                    );
                }
                let mut auth = vec![1, user.len() as u8];
                auth.extend_from_slice(user.as_bytes());
                auth.push(password.len() as u8);
                auth.extend_from_slice(password.as_bytes());
                stream
                    .write_all(&auth)
                    .await
                    .map_err(|e| self.io(step, e))?;
                let mut status = [0u8; 2];
                self.read_exact(stream, &mut status).await?;
                if status[1] != 0 {
                    return Err(self.refused(format!(
                        "rejected the user name and password (RFC 1929 status {})",
                        status[1]
                    )));
                }
            }
            ([5, 0xFF], None) => {
                return Err(self.refused(
                    "accepts no connection without authentication: give USER:PASSWORD@ in \
                     the proxy URL"
                        .into(),
                ))
            }
            ([5, 0xFF], Some(_)) => {
                return Err(
                    self.refused("accepts neither no authentication nor user/password".into())
                )
            }
            ([version, method], _) => {
                return Err(self.refused(format!(
                    "not a SOCKS5 answer (version {version}, method {method})"
                )))
            }
        }
        let mut request = vec![5, 1, 0];
        let port = match destination {
            Destination::Addr(SocketAddr::V4(a)) => {
                request.push(1);
                request.extend_from_slice(&a.ip().octets());
                a.port()
            }
            Destination::Addr(SocketAddr::V6(a)) => {
                request.push(4);
                request.extend_from_slice(&a.ip().octets());
                a.port()
            }
            Destination::Name(name, port) => {
                if name.len() > 255 {
                    return Err(self.refused("host name longer than SOCKS5 allows".into()));
                }
                request.push(3);
                request.push(name.len() as u8);
                request.extend_from_slice(name.as_bytes());
                *port
            }
        };
        request.extend_from_slice(&port.to_be_bytes());
        stream
            .write_all(&request)
            .await
            .map_err(|e| self.io(step, e))?;
        let mut reply = [0u8; 4];
        self.read_exact(stream, &mut reply).await?;
        if reply[1] != 0 {
            return Err(self.refused(format!(
                "SOCKS5 connect to {} failed: {} (reply {})",
                destination,
                socks_reply(reply[1]),
                reply[1]
            )));
        }
        // The address the proxy bound: read and dropped, so the target's bytes come next.
        let rest = match reply[3] {
            1 => 4 + 2,
            4 => 16 + 2,
            3 => {
                let mut len = [0u8; 1];
                self.read_exact(stream, &mut len).await?;
                usize::from(len[0]) + 2
            }
            other => return Err(self.refused(format!("SOCKS5 reply with address type {other}"))),
        };
        let mut bound = [0u8; 258];
        self.read_exact(stream, &mut bound[..rest]).await
    }

    async fn read_exact(&self, stream: &mut TcpStream, buf: &mut [u8]) -> Result<(), ConnectError> {
        match stream.read_exact(buf).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err(self.refused("closed the connection during the SOCKS5 handshake".into()))
            }
            Err(e) => Err(self.io("SOCKS5 handshake", e)),
        }
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Destination::Addr(a) => write!(f, "{a}"),
            Destination::Name(host, port) => f.write_str(&authority(host, *port)),
        }
    }
}

/// RFC 1928 §6's reply codes, in its words.
fn socks_reply(code: u8) -> &'static str {
    match code {
        1 => "general SOCKS server failure",
        2 => "connection not allowed by ruleset",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => "unassigned reply code",
    }
}

/// Rewrites HTTP/1.1 requests for a forwarding proxy: absolute-form targets and
/// Proxy-Authorization. Built only when the plan forwards.
#[derive(Debug, Clone)]
pub(crate) struct Forward {
    /// `http://host[:port]`, put before each request's path.
    origin: Box<[u8]>,
    /// `Proxy-Authorization: Basic ...\r\n`, put after each request line.
    authorization: Option<Box<[u8]>>,
}

impl Forward {
    /// The rewrite `plan`'s requests need, if they are forwarded by an HTTP proxy.
    pub(crate) fn for_plan(plan: &Plan) -> Option<Forward> {
        if !forwards(plan) {
            return None;
        }
        let proxy = plan.protocol.proxy.as_ref()?;
        Some(Forward {
            origin: format!("http://{}", plan.request.url.host_header())
                .into_bytes()
                .into(),
            authorization: basic(proxy)
                .map(|v| format!("Proxy-Authorization: {v}\r\n").into_bytes().into()),
        })
    }

    /// Rewrites every request in `buf` (a script may pipeline several): `METHOD /path` becomes
    /// `METHOD http://host:port/path`, and the credentials header follows the request line.
    /// A request whose target is not origin-form (`*`, or already absolute) keeps it.
    pub(crate) fn rewrite(&self, buf: &mut Vec<u8>) {
        let mut starts = Vec::new();
        if crate::script::each_request(buf, |start| starts.push(start)).is_err() {
            // Not whole requests: the first is still rewritten (the server will say what
            // is wrong with the rest, as it would without a proxy).
            starts = vec![0];
        }
        // From the last, so that earlier offsets stay right.
        for &start in starts.iter().rev() {
            let Some(space) = buf[start..].iter().position(|&b| b == b' ') else {
                continue;
            };
            let Some(line_end) = buf[start..].windows(2).position(|w| w == b"\r\n") else {
                continue;
            };
            if let Some(auth) = &self.authorization {
                let at = start + line_end + 2;
                buf.splice(at..at, auth.iter().copied());
            }
            let at = start + space + 1;
            if buf.get(at) == Some(&b'/') {
                buf.splice(at..at, self.origin.iter().copied());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_requests_name_their_target_and_carry_the_credentials() {
        let f = Forward {
            origin: (*b"http://t:8080").into(),
            authorization: Some((*b"Proxy-Authorization: Basic dTpw\r\n").into()),
        };
        let mut one = b"GET /a?b=1 HTTP/1.1\r\nHost: t:8080\r\n\r\n".to_vec();
        f.rewrite(&mut one);
        assert_eq!(
            one,
            b"GET http://t:8080/a?b=1 HTTP/1.1\r\nProxy-Authorization: Basic dTpw\r\nHost: t:8080\r\n\r\n"
        );
        let mut two =
            b"POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\n/ yGET / HTTP/1.1\r\n\r\n".to_vec();
        let plain = Forward {
            authorization: None,
            ..f
        };
        plain.rewrite(&mut two);
        assert_eq!(
            two,
            b"POST http://t:8080/x HTTP/1.1\r\nContent-Length: 3\r\n\r\n/ yGET http://t:8080/ HTTP/1.1\r\n\r\n"
        );
        let mut star = b"OPTIONS * HTTP/1.1\r\n\r\n".to_vec();
        plain.rewrite(&mut star);
        assert_eq!(star, b"OPTIONS * HTTP/1.1\r\n\r\n");
    }

    #[test]
    fn socks5_reply_codes_are_named() {
        assert_eq!(socks_reply(5), "connection refused");
        assert_eq!(socks_reply(2), "connection not allowed by ruleset");
        assert_eq!(socks_reply(42), "unassigned reply code");
    }
}
