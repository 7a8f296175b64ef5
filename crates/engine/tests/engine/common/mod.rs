//! A raw TCP server for tests: it reads request heads and writes exactly the bytes a test
//! gives it, counting what it saw, so every figure loadmark reports can be checked.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use loadmark_plan::{Load, Plan, RequestSpec, Stop, Target, Timeouts, TlsPolicy};

/// What a loaded 2-core machine may add to a wall-clock bound: other sessions' builds and
/// benchmarks stall test threads for a second or more. Upper bounds are "the expected time
/// plus SLACK" where the failure they catch (a hang, waiting out a 4 s or 30 s answer) is
/// further away still.
pub const SLACK: Duration = Duration::from_secs(3);

/// What the server does with the n-th request (numbered from 0 across all connections).
pub enum Reply {
    /// Write these bytes and keep reading requests.
    Bytes(Vec<u8>),
    /// Write these bytes, then close the connection.
    BytesThenClose(Vec<u8>),
    /// Never answer (keep the connection open until the client leaves).
    Silence,
    /// Do anything with the connection (drip bytes, reset it, stop reading); return true to
    /// keep reading requests on it, false to close it.
    Custom(Box<dyn FnOnce(&mut TcpStream) -> bool + Send>),
}

impl Reply {
    pub fn custom(f: impl FnOnce(&mut TcpStream) -> bool + Send + 'static) -> Reply {
        Reply::Custom(Box::new(f))
    }
}

/// Makes the coming close of `conn` send a RST instead of a FIN (SO_LINGER 0).
pub fn linger_zero(conn: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket fd and a correctly sized option value.
    let rc = unsafe {
        libc::setsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt(SO_LINGER)");
}

pub struct RawServer {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicU64>,
    pub accepts: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl RawServer {
    pub fn start(reply: impl Fn(u64) -> Reply + Send + Sync + 'static) -> RawServer {
        let reply = Arc::new(reply);
        Self::start_raw(move |conn, requests, stop| serve(conn, requests, stop, &*reply))
    }

    /// Hands every accepted connection to `handle` on its own thread (with the request
    /// counter and the stop flag), for servers that do not even read a request.
    pub fn start_raw(
        handle: impl Fn(TcpStream, &AtomicU64, &AtomicBool) + Send + Sync + 'static,
    ) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let accepts = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let handle = Arc::new(handle);
        let (r, a, s) = (requests.clone(), accepts.clone(), stop.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                a.fetch_add(1, Ordering::SeqCst);
                let (r, s, handle) = (r.clone(), s.clone(), handle.clone());
                thread::spawn(move || handle(conn, &r, &s));
            }
        });
        RawServer {
            addr,
            requests,
            accepts,
            stop,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    pub fn accepts(&self) -> u64 {
        self.accepts.load(Ordering::SeqCst)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wakes the accept loop
    }
}

fn serve(
    mut conn: TcpStream,
    requests: &AtomicU64,
    stop: &AtomicBool,
    reply: &dyn Fn(u64) -> Reply,
) {
    let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // A request ends at the blank line: a body, never parsed, runs into the next request.
        while let Some(end) = find_head_end(&buf) {
            buf.drain(..end);
            let n = requests.fetch_add(1, Ordering::SeqCst);
            match reply(n) {
                Reply::Bytes(b) => {
                    if conn.write_all(&b).is_err() {
                        return;
                    }
                }
                Reply::BytesThenClose(b) => {
                    let _ = conn.write_all(&b);
                    return;
                }
                Reply::Silence => {}
                Reply::Custom(f) => {
                    if !f(&mut conn) {
                        return;
                    }
                }
            }
        }
        match conn.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

pub fn ok_response(body: &[u8]) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    r.extend_from_slice(body);
    r
}

/// A closed-loop plan with the given stop rule.
pub fn plan(url: &str, connections: usize, threads: usize, stop: Stop) -> Plan {
    Plan {
        request: RequestSpec {
            method: "GET".into(),
            url: Target::parse(url).unwrap(),
            headers: Vec::new(),
            body: Vec::new(),
            keep_alive: true,
        },
        load: Load::Closed {
            connections,
            threads,
        },
        stop,
        timeouts: Timeouts::default(),
        warmup: Duration::ZERO,
        tls: TlsPolicy::Verify,
        mix: Default::default(),
        websocket: None,
        protocol: Default::default(),
        script: None,
        checks: Vec::new(),
        scenario: None,
        scenarios: Vec::new(),
        cookies: false,
    }
}

/// A TLS server configuration with a fresh self-signed certificate for 127.0.0.1.
pub fn self_signed_tls() -> Arc<rustls::ServerConfig> {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap(),
    )
}

/// The TLS side of a blocking test server.
pub type TlsStream = rustls::StreamOwned<rustls::ServerConnection, TcpStream>;

/// A blocking TLS server (self-signed for 127.0.0.1) that hands every connection, on its own
/// thread, to `handle`.
pub fn tls_server(handle: fn(&mut TlsStream)) -> SocketAddr {
    let config = self_signed_tls();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let config = config.clone();
            thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                handle(&mut rustls::StreamOwned::new(conn, tcp));
            });
        }
    });
    addr
}

/// A server's request count once it has caught up with `expected`: a request written just
/// before the run stopped is counted when the server's thread reads it, which may come a
/// moment after `run` returned. Waits for the count (up to 10 s, generous for a loaded
/// machine) rather than for a fixed time; returns whatever it is then, for the caller's
/// exact assertion.
pub fn settled_count(count: impl Fn() -> u64, expected: u64) -> u64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let seen = count();
        if seen >= expected || std::time::Instant::now() > deadline {
            return seen;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
