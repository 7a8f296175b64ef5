//! Every endpoint of the built-in target, over a real loopback socket, with a tiny blocking
//! HTTP/1.1 client that checks the framing the server chose (Content-Length or chunked).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use loadmark_target::{start, RunningServer, ServeError, ServerConfig, Stall};

/// Upper bound on any single read, so a server bug fails a test instead of hanging it.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

fn any_port() -> ServerConfig {
    ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        ..Default::default()
    }
}

fn server_with(threads: usize) -> RunningServer {
    start(ServerConfig {
        threads,
        ..any_port()
    })
    .unwrap()
}

fn server() -> RunningServer {
    server_with(1)
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

struct Conn(BufReader<TcpStream>);

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        Conn(BufReader::new(stream))
    }

    /// Sends one request with `extra` header lines (each ending in CRLF) and reads its reply.
    fn send(&mut self, method: &str, path: &str, extra: &str, body: &[u8]) -> Reply {
        self.write(&request(method, path, extra, body));
        self.read_reply(method == "HEAD")
    }

    fn get(&mut self, path: &str) -> Reply {
        self.send("GET", path, "", b"")
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.get_mut().write_all(bytes).unwrap();
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.0.read_line(&mut line).unwrap();
        assert!(line.ends_with("\r\n"), "truncated line {line:?}");
        line.truncate(line.len() - 2);
        line
    }

    fn read_reply(&mut self, head_only: bool) -> Reply {
        let status_line = self.line();
        assert!(status_line.starts_with("HTTP/1.1 "), "{status_line:?}");
        let status = status_line[9..12].parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let line = self.line();
            if line.is_empty() {
                break;
            }
            let (n, v) = line.split_once(':').unwrap();
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
        let mut reply = Reply {
            status,
            headers,
            body: Vec::new(),
        };
        if head_only {
            return reply;
        }
        if reply.header("transfer-encoding") == Some("chunked") {
            assert_eq!(reply.header("content-length"), None, "both framings");
            loop {
                let size = usize::from_str_radix(&self.line(), 16).unwrap();
                if size == 0 {
                    assert_eq!(self.line(), "", "no trailers expected");
                    break;
                }
                let start = reply.body.len();
                reply.body.resize(start + size, 0);
                self.0.read_exact(&mut reply.body[start..]).unwrap();
                assert_eq!(self.line(), "", "chunk not followed by CRLF");
            }
        } else if let Some(len) = reply.header("content-length") {
            reply.body = vec![0; len.parse().unwrap()];
            self.0.read_exact(&mut reply.body).unwrap();
        }
        reply
    }

    /// True when the server has closed the connection and sent nothing more.
    fn at_eof(&mut self) -> bool {
        let mut rest = Vec::new();
        self.0.read_to_end(&mut rest).unwrap() == 0
    }

    /// True when the server has dropped the connection without another reply: a clean EOF,
    /// or a reset, which the kernel sends instead when a request was still unread.
    fn dropped(&mut self) -> bool {
        let mut rest = Vec::new();
        match self.0.read_to_end(&mut rest) {
            Ok(n) => n == 0,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset && rest.is_empty(),
        }
    }
}

fn request(method: &str, path: &str, extra: &str, body: &[u8]) -> Vec<u8> {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: t\r\n{extra}").into_bytes();
    if !body.is_empty() {
        req.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    req.extend_from_slice(body);
    req
}

fn get(s: &RunningServer, path: &str) -> Reply {
    Conn::open(s.local_addr()).get(path)
}

#[test]
fn status_is_ok_as_plain_text() {
    let s = server();
    let r = get(&s, "/status");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"OK"[..]));
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.header("content-length"), Some("2"));
}

#[test]
fn json_is_a_small_object() {
    let s = server();
    let r = get(&s, "/json");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r.body.starts_with(b"{\"") && r.body.ends_with(b"}"));
    assert!((50..200).contains(&r.body.len()), "{}", r.body.len());
}

#[test]
fn bytes_sends_exactly_n_bytes() {
    let s = server();
    let mut c = Conn::open(s.local_addr());
    let r = c.get("/bytes/0");
    assert_eq!((r.status, r.header("content-length")), (200, Some("0")));
    assert!(r.body.is_empty());
    let r = c.get("/bytes/100000");
    assert_eq!(r.header("content-length"), Some("100000"));
    assert_eq!(r.body.len(), 100_000);
    assert!(r.body.iter().all(|&b| b == b'a'));
    // Still in step after a body spanning several 64 KiB frames.
    assert_eq!(c.get("/status").body, b"OK");
    assert_eq!(c.get("/bytes/104857601").status, 400);
    assert_eq!(c.get("/bytes/lots").status, 400);
}

#[test]
fn chunked_is_really_chunked() {
    let s = server();
    let mut c = Conn::open(s.local_addr());
    c.write(&request("GET", "/chunked/10000", "", b""));
    // Read the raw head to see the chunk sizes the server chose, not just the decoded body.
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        c.0.read_line(&mut head).unwrap();
    }
    let head = head.to_ascii_lowercase();
    assert!(head.contains("transfer-encoding: chunked\r\n"), "{head}");
    assert!(!head.contains("content-length"), "{head}");
    assert_eq!(c.line(), "1000", "first chunk is 4 KiB");
    let r = Conn::open(s.local_addr()).get("/chunked/10000");
    assert_eq!((r.status, r.body.len()), (200, 10_000));
    assert!(r.body.iter().all(|&b| b == b'a'));
    let r = Conn::open(s.local_addr()).get("/chunked/0");
    assert_eq!((r.status, r.body.len()), (200, 0));
}

#[test]
fn delay_waits_at_least_that_long() {
    let s = server();
    let t0 = Instant::now();
    let r = get(&s, "/delay/100");
    assert!(
        t0.elapsed() >= Duration::from_millis(100),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!((r.status, r.body.as_slice()), (200, &b"OK"[..]));
    assert_eq!(get(&s, "/delay/60001").status, 400);
    assert_eq!(s.requests_served(), 2);
}

#[test]
fn delay_does_not_block_other_connections() {
    let s = server();
    let addr = s.local_addr();
    // 5 s against a bound of 4 s: far apart, so a loaded machine's stall of a second or two
    // cannot turn "served meanwhile" into "served after".
    let slow = std::thread::spawn(move || Conn::open(addr).get("/delay/5000").status);
    // Wait until the slow request is in flight (accepted), without sleeping blindly.
    let deadline = Instant::now() + READ_TIMEOUT;
    while s.connections_accepted() == 0 {
        assert!(Instant::now() < deadline, "slow request never arrived");
        std::thread::yield_now();
    }
    let t0 = Instant::now();
    assert_eq!(get(&s, "/status").status, 200);
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert_eq!(slow.join().unwrap(), 200);
}

#[test]
fn status_code_is_echoed_with_bodies_only_where_allowed() {
    let s = server();
    let mut c = Conn::open(s.local_addr());
    let r = c.get("/status/503");
    assert_eq!(
        (r.status, r.body.as_slice()),
        (503, &b"Service Unavailable"[..])
    );
    for code in [204, 304] {
        let r = c.get(&format!("/status/{code}"));
        assert_eq!((r.status, r.body.len()), (code, 0));
        assert_eq!(r.header("transfer-encoding"), None);
    }
    assert_eq!(c.get("/status/404").status, 404);
    for bad in ["100", "101", "600", "x"] {
        assert_eq!(c.get(&format!("/status/{bad}")).status, 400, "{bad}");
    }
    // A 204 with no body must not have desynchronised the connection.
    assert_eq!(c.get("/status").body, b"OK");
}

#[test]
fn echo_round_trips_body_and_content_type() {
    let s = server();
    let mut c = Conn::open(s.local_addr());
    let body = br#"{"a":1}"#;
    let r = c.send("POST", "/echo", "Content-Type: application/json\r\n", body);
    assert_eq!((r.status, r.body.as_slice()), (200, &body[..]));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let big: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
    let r = c.send("PUT", "/echo", "", &big);
    assert_eq!(r.body, big);
    assert_eq!(r.header("content-type"), None);
    let r = c.send("GET", "/echo", "", b"");
    assert_eq!((r.status, r.body.len()), (200, 0));
}

#[test]
fn chunked_request_body_is_echoed() {
    let s = server();
    let mut c = Conn::open(s.local_addr());
    c.write(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
    assert_eq!(c.read_reply(false).body, b"abcde");
}

#[test]
fn any_method_and_head_has_no_body() {
    let s = server();
    let mut c = Conn::open(s.local_addr());
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        assert_eq!(c.send(method, "/status", "", b"x").body, b"OK", "{method}");
    }
    let r = c.send("HEAD", "/bytes/1000", "", b"");
    assert_eq!((r.status, r.header("content-length")), (200, Some("1000")));
    // No body bytes followed the head: the next reply parses from a clean start.
    assert_eq!(c.get("/status").body, b"OK");
}

#[test]
fn unknown_path_is_404_with_a_hint() {
    let s = server();
    let r = get(&s, "/nope");
    assert_eq!(r.status, 404);
    assert!(String::from_utf8(r.body).unwrap().contains("/bytes/N"));
}

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let s = server();
    let mut c = Conn::open(s.local_addr());
    for _ in 0..3 {
        assert_eq!(c.get("/status").status, 200);
    }
    assert_eq!(s.connections_accepted(), 1);
    assert_eq!(s.requests_served(), 3);
}

#[test]
fn pipelined_requests_are_all_answered_in_order() {
    let s = server();
    let mut c = Conn::open(s.local_addr());
    let mut burst = request("GET", "/bytes/3", "", b"");
    burst.extend(request("GET", "/json", "", b""));
    burst.extend(request("GET", "/status", "", b""));
    c.write(&burst);
    assert_eq!(c.read_reply(false).body, b"aaa");
    assert_eq!(c.read_reply(false).status, 200);
    assert_eq!(c.read_reply(false).body, b"OK");
    assert_eq!((s.connections_accepted(), s.requests_served()), (1, 3));
}

#[test]
fn close_endpoint_closes_the_connection() {
    let s = server();
    let mut c = Conn::open(s.local_addr());
    let r = c.get("/close");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"OK"[..]));
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.at_eof(), "server closed after /close");
}

#[test]
fn client_connection_close_is_honoured() {
    let s = server();
    let mut c = Conn::open(s.local_addr());
    let r = c.send("GET", "/status", "Connection: close\r\n", b"");
    assert_eq!(r.body, b"OK");
    assert!(c.at_eof(), "server closed after the client asked to");
}

#[test]
fn port_zero_binds_a_real_port() {
    let s = server();
    assert_ne!(s.local_addr().port(), 0);
    assert!(s.local_addr().ip().is_loopback());
    assert_eq!(get(&s, "/status").status, 200);
}

#[test]
fn port_in_use_is_a_bind_error() {
    let s = server();
    let addr = s.local_addr();
    let err = start(ServerConfig { addr, ..any_port() }).unwrap_err();
    assert!(
        matches!(err, ServeError::Bind { addr: a, .. } if a == addr),
        "{err}"
    );
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
    // The failed start did not disturb the running server.
    assert_eq!(get(&s, "/status").status, 200);
}

#[test]
fn zero_threads_is_refused() {
    let config = ServerConfig {
        threads: 0,
        ..any_port()
    };
    assert!(matches!(start(config), Err(ServeError::NoThreads)));
}

#[test]
fn a_stall_that_never_thaws_is_refused() {
    let stall = Stall {
        duration: Duration::from_secs(5),
        every: Duration::from_secs(5),
    };
    let config = ServerConfig {
        stall: Some(stall),
        ..any_port()
    };
    assert!(matches!(start(config), Err(ServeError::InvalidStall(s)) if s == stall));
}

#[test]
fn a_stall_holds_requests_until_its_window_ends() {
    // Frozen from 1 s to 2 s of the server's life. A window of a second (not a few hundred
    // ms) and bounds half a second from the truth: a test thread stalled for a few hundred
    // ms by a loaded machine still sees the same story.
    let config = ServerConfig {
        stall: Some(Stall {
            duration: Duration::from_secs(1),
            every: Duration::from_secs(2),
        }),
        ..any_port()
    };
    let s = start(config).unwrap();
    let t0 = Instant::now();
    let mut c = Conn::open(s.local_addr());
    let mut slowest = (Duration::ZERO, Duration::ZERO); // (latency, finished since t0)
    while t0.elapsed() < Duration::from_millis(2100) {
        let sent = Instant::now();
        assert_eq!(c.get("/status").body, b"OK");
        if sent.elapsed() > slowest.0 {
            slowest = (sent.elapsed(), t0.elapsed());
        }
    }
    let (latency, finished) = slowest;
    // Back-to-back requests: one arrives just after 1 s and is held about 1 s.
    assert!(latency >= Duration::from_millis(500), "{latency:?}");
    // `t0` is a little after the server's own start, so its 2 s end comes a little early.
    assert!(finished >= Duration::from_millis(1500), "{finished:?}");
    assert!(
        latency < Duration::from_millis(1600),
        "held past the window: {latency:?}"
    );
}

fn assert_shutdown_is_prompt_and_final(threads: usize) {
    let s = server_with(threads);
    let addr = s.local_addr();
    // An idle keep-alive connection and a request in the middle of a long delay must not
    // hold shutdown up.
    let mut idle = Conn::open(addr);
    assert_eq!(idle.get("/status").status, 200);
    let mut waiting = Conn::open(addr);
    waiting.write(&request("GET", "/delay/60000", "", b""));
    let deadline = Instant::now() + READ_TIMEOUT;
    while s.connections_accepted() < 2 {
        assert!(Instant::now() < deadline);
        std::thread::yield_now();
    }
    let t0 = Instant::now();
    s.shutdown();
    // Not the 60 s of the delay: prompt, with room for a loaded machine.
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    assert!(idle.dropped(), "open connections are closed");
    assert!(
        waiting.dropped(),
        "a pending delay is cancelled, not answered"
    );
    assert!(
        TcpStream::connect(addr).is_err(),
        "nothing listens after shutdown"
    );
}

#[test]
fn shutdown_is_prompt_and_stops_accepting() {
    assert_shutdown_is_prompt_and_final(1);
}

#[test]
fn shutdown_is_prompt_with_several_threads() {
    assert_shutdown_is_prompt_and_final(3);
}

#[test]
fn drop_stops_the_server() {
    let addr = {
        let s = server();
        s.local_addr()
    };
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn several_threads_count_exactly() {
    let s = server_with(2);
    let addr = s.local_addr();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Conn::open(addr);
                (0..25).all(|_| c.get("/status").status == 200)
            })
        })
        .collect();
    assert!(clients.into_iter().all(|h| h.join().unwrap()));
    assert_eq!((s.connections_accepted(), s.requests_served()), (4, 100));
}

/// The CLI's quickstart starts the target from code that may already run a tokio runtime;
/// starting and dropping it there must neither panic nor deadlock.
#[tokio::test]
async fn starts_and_stops_inside_another_runtime() {
    let s = server();
    let addr = s.local_addr();
    let status = tokio::task::spawn_blocking(move || Conn::open(addr).get("/status").status)
        .await
        .unwrap();
    assert_eq!(status, 200);
    drop(s);
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn relay_answers_what_the_loopback_backend_answers_over_one_kept_connection() {
    let backend = server();
    let front = server();
    let b = backend.local_addr();
    let mut conn = Conn::open(front.local_addr());
    let direct = get(&backend, "/json");
    for _ in 0..3 {
        let r = conn.get(&format!("/relay?url=http://{b}/json"));
        assert_eq!(r.status, 200);
        assert_eq!(r.body, direct.body, "the backend's body, unchanged");
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
    // The backend's status is passed on, not turned into the relay's own.
    assert_eq!(
        conn.get(&format!("/relay?url=http://{b}/status/503"))
            .status,
        503
    );
    // 1 direct + 4 relayed; the relay kept one backend connection for this client connection.
    assert_eq!(backend.requests_served(), 5);
    assert_eq!(backend.connections_accepted(), 2);
    assert_eq!(front.requests_served(), 4);
}

#[test]
fn relay_refuses_other_hosts_and_reports_a_dead_backend_as_502() {
    let front = server();
    for url in [
        "http://10.1.2.3:80/",
        "http://example.com/",
        "https://127.0.0.1:1/",
    ] {
        let r = get(&front, &format!("/relay?url={url}"));
        assert_eq!(r.status, 400, "{url}");
        assert!(String::from_utf8_lossy(&r.body).contains("loopback only"));
    }
    assert_eq!(get(&front, "/relay").status, 400);
    // A backend that accepts and hangs up without answering.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let hangup = std::thread::spawn(move || drop(listener.accept().unwrap()));
    let r = get(&front, &format!("/relay?url=http://{addr}/x"));
    hangup.join().unwrap();
    assert_eq!(r.status, 502);
    assert!(String::from_utf8_lossy(&r.body).contains(&addr.to_string()));
}
