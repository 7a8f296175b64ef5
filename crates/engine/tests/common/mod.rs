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

/// What the server does with the n-th request (numbered from 0 across all connections).
pub enum Reply {
    /// Write these bytes and keep reading requests.
    Bytes(Vec<u8>),
    /// Write these bytes, then close the connection.
    BytesThenClose(Vec<u8>),
    /// Never answer (keep the connection open until the client leaves).
    Silence,
}

pub struct RawServer {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicU64>,
    pub accepts: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl RawServer {
    pub fn start(reply: impl Fn(u64) -> Reply + Send + Sync + 'static) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let accepts = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let reply = Arc::new(reply);
        let (r, a, s) = (requests.clone(), accepts.clone(), stop.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                a.fetch_add(1, Ordering::SeqCst);
                let (r, s, reply) = (r.clone(), s.clone(), reply.clone());
                thread::spawn(move || serve(conn, &r, &s, &*reply));
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
        // Requests in these tests carry no body: a request ends at the blank line.
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
    }
}
