//! The CLI's HTTP/2, Unix-socket and pipelining flags end to end: `loadmark serve --http2
//! --unix-socket` as a subprocess, `loadmark run` against it, the report's protocol line.

mod common;

use std::process::Command;

use loadmark_test_support::{Daemon, TempDir, PATIENCE};

fn loadmark(args: &[&str]) -> (bool, Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loadmark"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn http2_unix_socket_and_pipelining_runs_against_loadmark_serve() {
    let dir = TempDir::new("protocols");
    let sock = dir.path().join("t.sock");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_loadmark"));
    serve
        .args(["serve", "--port", "0", "--http2", "--unix-socket"])
        .arg(&sock);
    let server = Daemon::spawn("loadmark serve", serve).unwrap();
    // The server binds port 0 and says which port it got.
    let port: u16 = server
        .wait_for_line(PATIENCE, |line| {
            let rest = line.strip_prefix("loadmark target listening on http://127.0.0.1:")?;
            rest.split(' ').next()?.parse().ok()
        })
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/status");

    let (ok, _, out, err) = loadmark(&[
        "run",
        &url,
        "--http2",
        "--streams",
        "4",
        "-c",
        "2",
        "-n",
        "400",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("HTTP/2, 4 streams per connection, 200.0 requests per connection"),
        "{out}"
    );
    assert!(out.contains("400 completed"), "{out}");

    // More streams than the server allows (128, as nginx): the limit is in the result.
    let json = dir.path().join("limit.json");
    let (ok, _, out, err) = loadmark(&[
        "run",
        &url,
        "--http2",
        "--streams",
        "200",
        "-c",
        "1",
        "-n",
        "600",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("the server allowed 128 concurrent streams per connection"),
        "{out}"
    );
    let report = common::report_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let p = report.summary.protocol.as_ref().unwrap();
    assert_eq!(p.used, "HTTP/2", "{p:?}");
    assert_eq!(p.streams_per_connection, Some(200), "{p:?}");
    assert_eq!(p.server_max_concurrent_streams, Some(128), "{p:?}");
    assert_eq!(
        p.requests_per_connection.as_ref().unwrap().max,
        600,
        "{p:?}"
    );

    let sock_arg = sock.to_str().unwrap();
    for extra in [&[][..], &["--http2", "--streams", "8"][..]] {
        let mut args = vec![
            "run",
            "http://app.local/status",
            "--unix-socket",
            sock_arg,
            "-c",
            "1",
            "-n",
            "100",
        ];
        args.extend_from_slice(extra);
        let (ok, _, out, err) = loadmark(&args);
        assert!(ok, "{err}");
        assert!(out.contains("over the Unix socket"), "{out}");
        assert!(out.contains("100 completed"), "{out}");
    }

    let (ok, _, out, err) = loadmark(&["run", &url, "--pipeline", "16", "-c", "2", "-n", "320"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("pipelining, up to 16 requests in flight per connection"),
        "{out}"
    );
    assert!(out.contains("320 completed"), "{out}");
}

#[test]
fn conflicting_protocol_flags_are_usage_errors_naming_both() {
    let url = "http://127.0.0.1:9/";
    let (_, code, _, err) = loadmark(&["run", url, "--http2", "--pipeline", "4", "-n", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--pipeline") && err.contains("--http2"),
        "{err}"
    );
    let (_, code, _, err) = loadmark(&["run", url, "--streams", "4", "-n", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--http2"), "{err}");
}

/// `--http2-fallback` (issue 16): against a TLS server that offers no h2, the run goes over
/// HTTP/1.1 and every form of the report says so; without it the run is refused, naming the
/// option. The stream limit and requests per connection ride in the JSON result.
#[test]
fn http2_fallback_and_the_protocol_summary_in_text_and_json() {
    let dir = TempDir::new("fallback");
    let mut serve = Command::new(env!("CARGO_BIN_EXE_loadmark"));
    serve.args(["serve", "--port", "0", "--tls"]);
    let server = Daemon::spawn("loadmark serve --tls", serve).unwrap();
    let port: u16 = server
        .wait_for_line(PATIENCE, |line| {
            let rest = line.strip_prefix("loadmark target listening on https://127.0.0.1:")?;
            rest.split(' ').next()?.parse().ok()
        })
        .unwrap();
    let url = format!("https://127.0.0.1:{port}/status");
    let json = dir.path().join("r.json");
    let (ok, _, out, err) = loadmark(&[
        "run",
        &url,
        "--http2",
        "--http2-fallback",
        "--insecure",
        "-c",
        "2",
        "-n",
        "200",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("200 completed"), "{out}");
    assert!(
        out.contains("HTTP/2 not offered, so HTTP/1.1 was used (--http2-fallback)"),
        "{out}"
    );
    assert!(
        // The two connections share one count: their split is the scheduler's.
        out.contains("HTTP/1.1, 100.0 requests per connection (min ")
            && out.contains("; 2 connections)"),
        "{out}"
    );
    let report = common::report_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let p = report.summary.protocol.as_ref().unwrap();
    assert_eq!(p.used, "HTTP/1.1", "{p:?}");
    assert!(
        p.http2_fallback.as_deref().unwrap().contains("ALPN"),
        "{p:?}"
    );
    assert_eq!(
        p.requests_per_connection.as_ref().unwrap().connections,
        2,
        "{p:?}"
    );
    assert!(report.plan.protocol.http2.as_ref().unwrap().fallback);

    let (ok, code, _, err) = loadmark(&["run", &url, "--http2", "--insecure", "-n", "10"]);
    assert!(!ok);
    assert_ne!(code, Some(0));
    assert!(err.contains("--http2-fallback"), "{err}");

    let (_, code, _, err) = loadmark(&["run", &url, "--http2-fallback", "-n", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--http2"), "{err}");
}

/// Issue 42: `--http2` against a server that does not speak HTTP/2 with prior knowledge
/// ends at once with exit code 1 and says what the server answered, closed loop, open loop
/// and connection stages alike, instead of failing every connection for the whole `-d`.
#[test]
fn http2_against_a_server_without_h2c_fails_at_once_naming_its_answer() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    // (what the server sends before it closes, what the message must quote)
    let cases: [(&[u8], &str); 2] = [
        (
            b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n",
            "it answered `HTTP/1.1 400 Bad Request`",
        ),
        (
            b"",
            "it closed the connection without answering the preface",
        ),
    ];
    for (answer, quoted) in cases {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // As an HTTP/1.1-only server: the preface is a request (`PRI * HTTP/2.0`) it
        // refuses; it answers, closes its side, and reads what the client sends until the
        // client closes (a lingering close, as nginx's: closing with unread bytes would be a
        // reset instead). Runs until the test process ends (the listener is leaked).
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                std::thread::spawn(move || {
                    let _ = conn.write_all(answer);
                    let _ = conn.shutdown(std::net::Shutdown::Write);
                    let _ = std::io::copy(&mut conn, &mut std::io::sink());
                });
            }
        });
        let url = format!("http://127.0.0.1:{port}/");
        let loads: [&[&str]; 3] = [
            &["-c", "4", "-d", "20s"],
            &["-R", "200", "-d", "20s"],
            &["--stages", "20s:2->4"],
        ];
        for load in loads {
            let mut args = vec!["run", &url, "--http2"];
            args.extend_from_slice(load);
            let t0 = Instant::now();
            let (ok, code, _, err) = loadmark(&args);
            let took = t0.elapsed();
            assert!(!ok && code == Some(1), "{load:?}: exit {code:?}: {err}");
            assert!(took < Duration::from_secs(3), "{load:?}: took {took:?}");
            assert!(
                err.contains(&format!(
                    "the server at http://127.0.0.1:{port}/ does not speak HTTP/2 with prior \
                     knowledge (h2c): {quoted}; over TLS, ALPN decides: drop --http2, or use https"
                )),
                "{load:?}: {err}"
            );
        }
    }
}

/// What the kernel moved on the connections a client made through it: a relay between the
/// client and the built-in target that, when a connection has ended both ways, asks the
/// kernel for its client-side socket's TCP_INFO: `tcpi_bytes_received` is every byte the
/// client's writes put on the wire, `tcpi_bytes_acked` every byte the client's kernel took
/// in (acknowledged by the time its FIN came).
///
/// Why not another measure: /proc/<pid>/io's rchar/wchar count read(2)/write(2) only, and
/// sockets here are read and written with recv/recvmsg/send (none counted there), besides
/// files; `ss -tin` sees only live sockets, and the client's close at exit ends them. The
/// relay's own count of what it read is kept too and must agree with the kernel's exactly,
/// which checks the measure itself.
struct KernelCounts {
    addr: std::net::SocketAddr,
    /// (client → server bytes, server → client bytes, connections ended) by the kernel,
    /// and (the same two) by the relay's reads and writes.
    totals: std::sync::Arc<std::sync::Mutex<([u64; 3], [u64; 2])>>,
    open: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl KernelCounts {
    fn relay_to(upstream: std::net::SocketAddr) -> KernelCounts {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let counts = KernelCounts {
            addr: listener.local_addr().unwrap(),
            totals: Default::default(),
            open: Default::default(),
        };
        let (totals, open) = (counts.totals.clone(), counts.open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let client = client.unwrap();
                open.fetch_add(1, Ordering::SeqCst);
                let server = std::net::TcpStream::connect(upstream).unwrap();
                let (totals, open) = (totals.clone(), open.clone());
                std::thread::spawn(move || {
                    let ((up, fin), (down, _)) = std::thread::scope(|s| {
                        let down = s.spawn(|| copy_then_shut(&server, &client));
                        (copy_then_shut(&client, &server), down.join().unwrap())
                    });
                    // The kernel's counts are of sequence numbers: a FIN takes one. The FIN
                    // the relay sent comes after every byte it wrote, so the bytes of it the
                    // client's kernel acknowledged are at most `down`.
                    let (received, acked) = tcp_bytes(&client);
                    let (received, acked) = (received - u64::from(fin), acked.min(down));
                    let mut t = totals.lock().unwrap();
                    t.0[0] += received;
                    t.0[1] += acked;
                    t.0[2] += 1;
                    t.1[0] += up;
                    t.1[1] += down;
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        counts
    }

    /// The totals once every connection the client made has ended.
    fn settled(&self, connections_at_least: u64) -> ([u64; 3], [u64; 2]) {
        use std::sync::atomic::Ordering;
        common::wait_until("the relayed connections to end", || {
            self.open.load(Ordering::SeqCst) == 0
                && self.totals.lock().unwrap().0[2] >= connections_at_least
        });
        *self.totals.lock().unwrap()
    }
}

/// Copies `from` to `to` until `from` ends, then ends `to`'s writing: the bytes copied, and
/// whether `from` ended with a FIN (not a reset).
fn copy_then_shut(from: &std::net::TcpStream, to: &std::net::TcpStream) -> (u64, bool) {
    use std::io::{Read, Write};
    let (mut from, mut to) = (from, to);
    let mut buf = vec![0u8; 64 << 10];
    let mut total = 0;
    let mut fin = false;
    loop {
        match from.read(&mut buf) {
            Ok(0) => {
                fin = true;
                break;
            }
            Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
                total += n as u64;
            }
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
    (total, fin)
}

/// The kernel's `tcpi_bytes_received` and `tcpi_bytes_acked` of a socket (struct tcp_info of
/// linux/tcp.h: at offsets 128 and 120, Linux 4.1 and later; the libc crate's glibc struct
/// stops before them).
fn tcp_bytes(s: &std::net::TcpStream) -> (u64, u64) {
    use std::os::fd::AsRawFd;
    let mut info = [0u8; 256];
    let mut len = info.len() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "TCP_INFO: {}", std::io::Error::last_os_error());
    assert!(len >= 136, "tcp_info of {len} bytes: no byte counters");
    let at = |o: usize| u64::from_ne_bytes(info[o..o + 8].try_into().unwrap());
    (at(128), at(120))
}

/// Issue 42: the report's bytes read and written are what crossed the connections, frame
/// headers, HPACK blocks, control frames, handshakes and all, for HTTP/1.1, HTTP/2 (closed
/// and open loop, GET and POST) and WebSocket: within 1% of what the kernel moved.
#[test]
fn transfer_counts_match_the_bytes_the_kernel_moved() {
    let server = loadmark_target::start(loadmark_target::ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        http2: true,
        ..Default::default()
    })
    .unwrap();
    let dir = TempDir::new("kernel-bytes");
    // (name, arguments; {http} and {ws} stand for the relay's address)
    let cases = [
        ("HTTP/1.1 GET", "run {http}/json -c 4 -n 4000"),
        (
            "HTTP/1.1 POST",
            "run {http}/echo -m POST -b payload -c 2 -n 2000",
        ),
        (
            "HTTP/2 GET",
            "run {http}/json --http2 --streams 8 -c 2 -n 4000",
        ),
        (
            "HTTP/2 POST",
            "run {http}/echo --http2 -m POST -b payload -c 2 -n 2000",
        ),
        ("HTTP/2 open loop", "run {http}/json --http2 -R 2000 -d 1s"),
        (
            "WebSocket",
            "ws {ws}/ws/echo -c 3 -n 600 --payload 16..2048",
        ),
    ];
    for (name, template) in cases {
        let relay = KernelCounts::relay_to(server.local_addr());
        let json = dir
            .path()
            .join(format!("{}.json", name.replace([' ', '/'], "-")));
        let mut args: Vec<String> = template
            .split_whitespace()
            .map(|a| {
                a.replace("{http}", &format!("http://{}", relay.addr))
                    .replace("{ws}", &format!("ws://{}", relay.addr))
            })
            .collect();
        args.extend(["-q".into(), "-o".into(), json.to_str().unwrap().into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, _, out, err) = loadmark(&args);
        assert!(ok, "{name}: {out}{err}");
        let report = common::report_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let t = &report.summary;
        let (kernel, relayed) = relay.settled(t.connections_opened);
        // The measure itself: the relay read what the kernel received.
        assert_eq!(kernel[0], relayed[0], "{name}: relay and kernel disagree");
        let within = |reported: u64, moved: u64| reported.abs_diff(moved) * 100 <= moved;
        assert!(
            within(t.bytes_written, kernel[0]) && within(t.bytes_read, kernel[1]),
            "{name}: the report says {} B written, {} B read; the kernel moved {} and {} \
             over {} connections",
            t.bytes_written,
            t.bytes_read,
            kernel[0],
            kernel[1],
            kernel[2]
        );
    }
}

/// A server that answers the first three pipelined requests of each connection, sends the
/// head of a fourth answer and ends its side (a FIN, as nginx at `keepalive_requests`), then
/// reads until the client leaves: what a client must count though no response carries it.
fn answers_three_then_breaks_off() -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let mut conn = conn.unwrap();
            std::thread::spawn(move || {
                let (mut seen, mut answered, mut buf) = (Vec::new(), 0, [0u8; 4096]);
                while answered < 3 {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                    let ends = seen.windows(4).filter(|w| w == b"\r\n\r\n").count();
                    while answered < ends.min(3) {
                        let _ =
                            conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
                        answered += 1;
                    }
                }
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Len");
                let _ = conn.shutdown(std::net::Shutdown::Write);
                while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

/// Issue 42: a pipelined batch the server breaks off still counts every byte that crossed:
/// the requests written and never answered, and the partial answer read.
#[test]
fn pipelined_batches_broken_off_count_every_byte_the_kernel_moved() {
    let server = answers_three_then_breaks_off();
    let dir = TempDir::new("pipeline-bytes");
    for (name, load) in [
        ("closed loop", "-c 2 -n 400"),
        ("open loop", "-R 400 -d 1s"),
    ] {
        let relay = KernelCounts::relay_to(server);
        let json = dir.path().join(format!("{}.json", name.replace(' ', "-")));
        let url = format!("http://{}/", relay.addr);
        let mut args = vec![
            "run",
            &url,
            "--pipeline",
            "8",
            "-q",
            "-o",
            json.to_str().unwrap(),
        ];
        args.extend(load.split_whitespace());
        let (_, _, out, err) = loadmark(&args);
        let report = common::report_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let t = &report.summary;
        assert!(t.requests.completed > 0, "{name}: {out}{err}");
        let (kernel, relayed) = relay.settled(t.connections_opened);
        assert_eq!(kernel[0], relayed[0], "{name}: relay and kernel disagree");
        let what = format!(
            "{name}: the report's written and read bytes {:?} against the kernel's {:?} over {} connections",
            (t.bytes_written, t.bytes_read),
            (kernel[0], kernel[1]),
            kernel[2]
        );
        assert_eq!(t.bytes_written, kernel[0], "{what}");
        if name == "closed loop" {
            assert_eq!(t.bytes_read, kernel[1], "{what}");
        } else {
            // A run ended by its duration closes connections whose last bytes may have
            // reached the socket and not the client: an answer to a request in flight at
            // the end (38 bytes) or a broken-off head (28). Read counts what loadmark read.
            let unread = kernel[1].checked_sub(t.bytes_read).expect(&what);
            let bound = 38 * t.requests.in_flight_at_end + 28 * kernel[2];
            assert!(unread <= bound, "{what}: {unread} unread, at most {bound}");
        }
    }
}

/// Every load model under every driver (issue 35's matrix; the scenario models are in
/// `scenarios.rs`): closed (a count), a connection or session ramp, and an open loop, each
/// over HTTP/1.1, pipelined HTTP/1.1, HTTP/2 and WebSocket, against the built-in target in
/// this process. What the report counts is what the server counted, request for request.
#[test]
fn every_load_model_runs_under_every_driver_and_counts_what_the_server_counted() {
    let server = loadmark_target::start(loadmark_target::ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 2,
        http2: true,
        ..Default::default()
    })
    .unwrap();
    let http = format!("http://{}/json", server.local_addr());
    let ws = format!("ws://{}/ws/echo", server.local_addr());
    let models: [(&str, &[&str]); 3] = [
        ("closed", &["-c", "4", "-n", "600"]),
        ("ramp", &["-c", "1", "--stages", "500ms:4,500ms:4"]),
        ("open", &["-R", "400", "-d", "1s"]),
    ];
    let drivers: [(&str, &str, &[&str]); 4] = [
        ("http/1.1", "run", &[]),
        ("pipelined", "run", &["--pipeline", "4"]),
        ("http/2", "run", &["--http2", "--streams", "4"]),
        ("websocket", "ws", &[]),
    ];
    for (model, load) in models {
        for (driver, command, flags) in drivers {
            let cell = format!("{model} × {driver}");
            let url = if command == "ws" { &ws } else { &http };
            let before = (server.requests_served(), server.ws_messages_received());
            let mut args = vec![command, url.as_str(), "-t", "2", "-q", "--format", "json"];
            args.extend_from_slice(flags);
            args.extend_from_slice(load);
            let (ok, code, stdout, stderr) = loadmark(&args);
            assert!(ok, "{cell}: exit {code:?}\n{stderr}");
            let r = common::report_json(&stdout).unwrap();
            let q = &r.summary.requests;
            assert_eq!(q.errors, 0, "{cell}: {:?}", r.summary.errors);
            match model {
                "closed" => assert_eq!(q.responses, 600, "{cell}"),
                "open" => assert!(q.responses >= 380, "{cell}: {q:?}"),
                _ => assert!(q.responses > 0, "{cell}"),
            }
            if command == "ws" {
                let w = r.summary.websocket.as_ref().unwrap();
                let received = server.ws_messages_received() - before.1;
                assert_eq!(
                    (received, w.messages_received),
                    (w.messages_sent, w.messages_sent),
                    "{cell}"
                );
                assert_eq!(q.responses, w.messages_sent, "{cell}");
            } else {
                // A request still in flight when the run ended was sent, never answered: the
                // server may yet answer it (its handler runs after loadmark exits) or drop it
                // with the connection (hyper cancels a stream whose connection closed). So the
                // count settles between the answered and the sent, and is exact when none was
                // left in flight.
                let settled = |served: u64| {
                    (q.responses..=q.responses + q.in_flight_at_end).contains(&served)
                };
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
                let mut served = server.requests_served() - before.0;
                while served != q.responses + q.in_flight_at_end
                    && std::time::Instant::now() < deadline
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    served = server.requests_served() - before.0;
                }
                assert!(
                    settled(served),
                    "{cell}: server served {served}, report {q:?}"
                );
            }
        }
    }
}
