//! Flags users bring from other tools (oha, ab, hey, curl) and the messages that put a typo
//! right: each accepted flag is checked on the wire, each refusal by its exit code and words.

mod common;

use common::*;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

fn run(args: &[&str]) -> Output {
    loadmark().args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A raw HTTP/1.1 server that answers every request `200` with an empty body and hands the
/// exact bytes of each request (head and body) to the test.
fn capturing_server() -> (SocketAddr, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for mut tcp in listener.incoming().flatten() {
            let tx = tx.clone();
            thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .map_or(0, |v| v.trim().parse().unwrap());
                        if buf.len() >= end + 4 + len {
                            let request: Vec<u8> = buf.drain(..end + 4 + len).collect();
                            let _ = tx.send(String::from_utf8_lossy(&request).into_owned());
                            let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
                            if tcp.write_all(ok).is_err() {
                                return;
                            }
                            continue;
                        }
                    }
                    match tcp.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    (addr, rx)
}

#[test]
fn ab_hey_and_curl_request_flags_reach_the_server() {
    let (addr, requests) = capturing_server();
    let dir = temp_dir("habits", "flags");
    let body = dir.join("body.json");
    std::fs::write(&body, "{\"from\":\"a file\"}").unwrap();
    let url = format!("http://{addr}/submit");
    let at_body = format!("@{}", path(&body));
    let one = ["-n", "1", "-c", "1", "-t", "1", "-q"];

    // curl's -b @FILE, ab/hey's -T, ab's -A and -k, and --cookie (twice).
    let mut args = vec!["run", &url, "-b", &at_body, "-T", "application/json"];
    args.extend([
        "-A",
        "user:pa:ss",
        "--cookie",
        "a=1",
        "--cookie",
        "b=2",
        "-k",
    ]);
    args.extend(one);
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let request = requests.recv().unwrap();
    assert!(
        request.starts_with("POST /submit HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(
        request.contains("\r\nContent-Type: application/json\r\n"),
        "{request}"
    );
    // base64("user:pa:ss"): the password may hold a colon.
    assert!(
        request.contains("\r\nAuthorization: Basic dXNlcjpwYTpzcw==\r\n"),
        "{request}"
    );
    assert!(request.contains("\r\nCookie: a=1; b=2\r\n"), "{request}");
    assert!(
        request.ends_with("\r\n\r\n{\"from\":\"a file\"}"),
        "{request}"
    );
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        !report.contains("dXNlcjpwYTpzcw"),
        "the credentials are redacted: {report}"
    );

    // ab's -p FILE is the body file; -H wins over -T.
    let mut args = vec!["run", &url, "-p", path(&body), "-T", "text/plain"];
    args.extend(["-H", "content-type: application/x-ndjson"]);
    args.extend(one);
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let request = requests.recv().unwrap();
    assert!(request.starts_with("POST /submit"), "{request}");
    assert!(
        request.contains("content-type: application/x-ndjson\r\n"),
        "{request}"
    );
    assert!(!request.contains("text/plain"), "{request}");
    assert!(request.ends_with("{\"from\":\"a file\"}"), "{request}");

    let o = run(&["run", &url, "-b", "@/nonexistent-body-file", "-n", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--body @FILE /nonexistent-body-file"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn oha_duration_flag_and_quickstart_port() {
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let o = run(&[
        "run", &url, "-z", "1s", "-c", "1", "-t", "1", "-q", "--format", "json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let report = report_json(&String::from_utf8_lossy(&o.stdout)).unwrap();
    assert_eq!(
        report.plan.stop,
        loadmark_plan::Stop::Duration(std::time::Duration::from_secs(1))
    );

    // A leased port (the flag is what is tested), run again on another should it be taken.
    let (o, port) = retry_on_port_conflict("loadmark quickstart", || {
        let port = port();
        let o = run(&[
            "quickstart",
            "--port",
            &port.to_string(),
            "-d",
            "1s",
            "-c",
            "2",
        ]);
        if !o.status.success() && is_port_conflict(&text(&o)) {
            return Err(text(&o));
        }
        Ok((o, port))
    });
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains(&format!("built-in target on 127.0.0.1:{port}")),
        "{}",
        text(&o)
    );
}

#[test]
fn typos_are_refused_with_the_right_words_and_no_load() {
    let (addr, requests) = capturing_server();
    let url = format!("http://{addr}/");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", &url, "-c", "-5"], "must be at least 1"),
        (vec!["run", &url, "-c", "0"], "must be at least 1"),
        (vec!["run", &url, "-n", "-1"], "must be at least 1"),
        (vec!["run", &url, "-t", "-2"], "must be at least 1"),
        (vec!["run", "http:/127.0.0.1:8080/"], "then '://'"),
        (vec!["ws", "ws:/127.0.0.1:8080/ws/echo"], "then '://'"),
        (
            vec!["ws", "ws://127.0.0.1:1/", "-c", "-3"],
            "must be at least 1",
        ),
        (vec!["run", &url, "-A", "nocolon"], "expected USER:PASSWORD"),
        (
            vec!["run", &url, "--cert", "/nonexistent.pem"],
            "--cert: invalid value",
        ),
        (
            vec!["run", &url, "--cacert", "/nonexistent.pem"],
            "--cacert",
        ),
        (vec!["run", &url, "-k", "--no-keepalive"], "--no-keepalive"),
    ];
    for (args, expected) in cases {
        let o = run(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    assert!(requests.try_recv().is_err(), "no load was sent");
}

/// A TLS server that answers `200 OK` to each request of a client whose certificate it
/// verified, and counts them.
fn tls_server(config: Arc<rustls::ServerConfig>) -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(AtomicU64::new(0));
    let count = served.clone();
    thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let (config, count) = (config.clone(), count.clone());
            thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let (mut buf, mut chunk) = (Vec::new(), [0u8; 4096]);
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        assert!(tls.conn.peer_certificates().is_some_and(|c| !c.is_empty()));
                        count.fetch_add(1, Ordering::SeqCst);
                        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK";
                        if tls.write_all(ok).and_then(|()| tls.flush()).is_err() {
                            return;
                        }
                    }
                    match tls.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    (addr, served)
}

#[test]
fn client_certificates_and_a_private_ca_as_curl_spells_them() {
    let dir = temp_dir("habits", "mtls");
    let (addr, served) = tls_server(Arc::new(common::mtls::mutual_tls(&dir)));
    let url = format!("https://{addr}/");
    let file = |name: &str| dir.join(name).display().to_string();
    let (ca, cert, key, both) = (
        file("ca.pem"),
        file("client.pem"),
        file("client.key"),
        file("both.pem"),
    );
    let load = ["-n", "20", "-c", "2", "-t", "1", "-q", "--format", "json"];

    let mut args = vec!["run", &url, "--cacert", &ca, "--cert", &cert, "--key", &key];
    args.extend(load);
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let r = report_json(&String::from_utf8_lossy(&o.stdout)).unwrap();
    assert_eq!(r.summary.requests.responses, 20, "{:?}", r.summary.errors);
    assert_eq!(
        served.load(Ordering::SeqCst),
        20,
        "the server verified each client"
    );

    // Key and certificate in one file, as curl allows.
    let mut args = vec!["run", &url, "--cacert", &ca, "--cert", &both];
    args.extend(load);
    let o = run(&args);
    let r = report_json(&String::from_utf8_lossy(&o.stdout)).unwrap();
    assert_eq!(r.summary.requests.responses, 20, "{}", text(&o));
    assert_eq!(served.load(Ordering::SeqCst), 40);

    // Without the client certificate the server refuses every request.
    let mut args = vec!["run", &url, "--cacert", &ca];
    args.extend(load);
    let o = run(&args);
    let r = report_json(&String::from_utf8_lossy(&o.stdout)).unwrap();
    assert_eq!(r.summary.requests.responses, 0, "{}", text(&o));
    assert!(r.summary.requests.errors > 0);
    assert_eq!(served.load(Ordering::SeqCst), 40);

    // Without the CA the server is not trusted, and the report says what to do.
    let mut args = vec!["run", &url, "--cert", &cert, "--key", &key];
    args.extend(["-n", "5", "-c", "1", "-t", "1", "-q"]);
    let o = run(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("5 requests failed TLS verification"),
        "{}",
        text(&o)
    );
    assert!(
        out.contains("add --insecure") && out.contains("--cacert FILE"),
        "{out}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// vegeta's, k6's and oha's spellings that cannot be misread, each run against the built-in
/// target and checked in the plan the report records and in what the server counted.
#[test]
fn vegeta_k6_and_oha_spellings_do_what_they_do_there() {
    use loadmark_plan::{Load, Stop};
    let server = target();
    let url = format!("http://{}/status", server.local_addr());
    let report = |args: &[&str]| {
        let o = run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
        // oha's --json: the JSON report, alone, on stdout.
        report_json(&String::from_utf8_lossy(&o.stdout)).unwrap()
    };

    // vegeta's -rate N/DURATION, with and without the duration's number.
    for (rate, per_second) in [
        ("500/1s", 500.0),
        ("500/s", 500.0),
        ("30000/1m", 500.0),
        ("20/100ms", 200.0),
    ] {
        let r = report(&[
            "run", &url, "-R", rate, "-n", "40", "-t", "1", "-q", "--json",
        ]);
        match &r.plan.load {
            Load::Open { rate, .. } => assert_eq!(rate.peak(), per_second, "-R {rate:?}"),
            other => panic!("-R {rate}: {other:?}"),
        }
        assert_eq!(r.summary.requests.responses, 40);
    }

    // k6's --vus and --iterations (shared iterations: the total); oha's --no-tui.
    let r = report(&[
        "run",
        &url,
        "--vus",
        "3",
        "--iterations",
        "30",
        "-t",
        "1",
        "-q",
        "--json",
        "--no-tui",
    ]);
    assert_eq!(
        r.plan.load,
        Load::Closed {
            connections: 3,
            threads: 1
        }
    );
    assert_eq!(r.plan.stop, Stop::Requests(30));
    assert_eq!(r.summary.requests.responses, 30);
    assert_eq!(r.summary.connections_opened, 3);

    // oha's --disable-keepalive: a connection per request.
    let r = report(&[
        "run",
        &url,
        "--disable-keepalive",
        "-n",
        "20",
        "-c",
        "2",
        "-t",
        "1",
        "-q",
        "--json",
    ]);
    assert_eq!(r.summary.requests.responses, 20);
    assert_eq!(r.summary.connections_opened, 20);
    assert_eq!(server.requests_served(), 4 * 40 + 30 + 20);
}

#[test]
fn ab_cookie_flag_reaches_the_server() {
    let (addr, requests) = capturing_server();
    let url = format!("http://{addr}/");
    let o = run(&[
        "run",
        &url,
        "-C",
        "session=abc",
        "-n",
        "1",
        "-c",
        "1",
        "-t",
        "1",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let request = requests.recv().unwrap();
    assert!(request.contains("\r\nCookie: session=abc\r\n"), "{request}");
}

/// hey's and oha's -q RATE (per worker in hey, in all in oha: loadmark cannot tell which),
/// hey's and curl's -d BODY: refused, naming the loadmark flag, and nothing is sent.
#[test]
fn spellings_that_would_be_misread_are_refused_naming_loadmarks_flag() {
    let (addr, requests) = capturing_server();
    let url = format!("http://{addr}/");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", &url, "-q", "100"], "-R/--rate"),
        (vec!["run", "-c", "10", "-q", "10", &url], "-R/--rate"),
        (vec![&url, "-c", "10", "-q100"], "-R/--rate"),
        (
            vec!["run", &url, "-d", "{}"],
            "-d is the duration here; for a request body use --body/-b",
        ),
        (
            vec!["run", &url, "-d", "name=x&id=2"],
            "for a request body use --body/-b",
        ),
        (vec!["run", &url, "-R", "fast"], "500/1s"),
        (vec!["run", &url, "--json", "-o", "r.json"], "--output"),
        (vec!["run", &url, "--no-tui", "--tui"], "--tui"),
    ];
    for (args, expected) in cases {
        let o = run(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    assert!(requests.try_recv().is_err(), "no load was sent");
}
