//! Every endpoint of the built-in target, over a real socket, with a tiny blocking client.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use loadmark_target::{start, RunningServer, ServeError, ServerConfig};

fn server() -> RunningServer {
    start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
    })
    .unwrap()
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one request on `conn` and reads one response (Content-Length or chunked).
fn exchange(conn: &mut BufReader<TcpStream>, method: &str, path: &str, body: &[u8]) -> Reply {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    conn.get_mut().write_all(head.as_bytes()).unwrap();
    conn.get_mut().write_all(body).unwrap();
    let mut line = String::new();
    conn.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        conn.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').unwrap();
        headers.push((n.trim().to_string(), v.trim().to_string()));
    }
    let mut reply = Reply {
        status,
        headers,
        body: Vec::new(),
    };
    if method == "HEAD" {
        return reply;
    }
    if reply.header("transfer-encoding") == Some("chunked") {
        loop {
            line.clear();
            conn.read_line(&mut line).unwrap();
            let size = usize::from_str_radix(line.trim_end(), 16).unwrap();
            let mut chunk = vec![0; size + 2];
            conn.read_exact(&mut chunk).unwrap();
            if size == 0 {
                break;
            }
            reply.body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = reply.header("content-length") {
        let mut body = vec![0; len.parse().unwrap()];
        conn.read_exact(&mut body).unwrap();
        reply.body = body;
    }
    reply
}

fn connect(s: &RunningServer) -> BufReader<TcpStream> {
    let c = TcpStream::connect(s.local_addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    BufReader::new(c)
}

fn get(s: &RunningServer, path: &str) -> Reply {
    exchange(&mut connect(s), "GET", path, b"")
}

#[test]
fn status_json_and_bytes() {
    let s = server();
    let r = get(&s, "/status");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"OK"[..]));
    let r = get(&s, "/json");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r.body.starts_with(b"{") && r.body.ends_with(b"}"));
    assert_eq!(get(&s, "/bytes/0").body.len(), 0);
    let r = get(&s, "/bytes/100000");
    assert_eq!(
        (r.body.len(), r.header("content-length")),
        (100_000, Some("100000"))
    );
    assert_eq!(get(&s, "/bytes/999999999999").status, 400);
    assert_eq!(get(&s, "/nope").status, 404);
}

#[test]
fn chunked_is_really_chunked() {
    let s = server();
    let r = get(&s, "/chunked/10000");
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("content-length"), None);
    assert_eq!(r.body.len(), 10_000);
}

#[test]
fn delay_status_codes_and_echo() {
    let s = server();
    let t0 = Instant::now();
    assert_eq!(get(&s, "/delay/100").status, 200);
    assert!(t0.elapsed() >= Duration::from_millis(100));
    let r = get(&s, "/status/503");
    assert_eq!(r.status, 503);
    let r = get(&s, "/status/204");
    assert_eq!((r.status, r.body.len()), (204, 0));
    assert_eq!(get(&s, "/status/42").status, 400);
    let mut c = connect(&s);
    let r = exchange(&mut c, "POST", "/echo", b"{\"a\":1}");
    assert_eq!(r.body, b"{\"a\":1}");
}

#[test]
fn close_closes_and_keep_alive_keeps() {
    let s = server();
    let mut c = connect(&s);
    for _ in 0..3 {
        assert_eq!(exchange(&mut c, "GET", "/status", b"").status, 200);
    }
    assert_eq!(s.connections_accepted(), 1);
    assert_eq!(s.requests_served(), 3);
    let r = exchange(&mut c, "GET", "/close", b"");
    assert_eq!(r.header("connection"), Some("close"));
    let mut rest = Vec::new();
    assert_eq!(
        c.read_to_end(&mut rest).unwrap(),
        0,
        "server closed after /close"
    );
}

#[test]
fn port_in_use_is_a_bind_error_and_shutdown_stops_accepting() {
    let s = server();
    let addr = s.local_addr();
    let err = start(ServerConfig { addr, threads: 1 }).err().unwrap();
    assert!(matches!(err, ServeError::Bind { .. }), "{err}");
    assert!(err.to_string().contains(&addr.to_string()));
    let t0 = Instant::now();
    s.shutdown();
    assert!(t0.elapsed() < Duration::from_secs(2));
    assert!(
        TcpStream::connect(addr).is_err(),
        "nothing listens after shutdown"
    );
}

#[test]
fn several_threads_serve_too() {
    let s = start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 2,
    })
    .unwrap();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let addr = s.local_addr();
            std::thread::spawn(move || {
                let c = TcpStream::connect(addr).unwrap();
                let mut c = BufReader::new(c);
                (0..25).all(|_| exchange(&mut c, "GET", "/status", b"").status == 200)
            })
        })
        .collect();
    assert!(handles.into_iter().all(|h| h.join().unwrap()));
    assert_eq!(s.requests_served(), 100);
}
