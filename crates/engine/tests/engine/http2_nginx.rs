//! HTTP/2 against Debian's nginx on loopback (installed by .ci/run): h2c with prior knowledge
//! and h2 over TLS (ALPN), counted by nginx's own access log, which also says the protocol;
//! a 4 MiB download and 3 MiB uploads (nginx's WebDAV PUT writes them to disk, so their size
//! is checked there); GOAWAY from nginx every 50 requests (`keepalive_requests`).

use crate::common::plan;
use loadmark_engine::{run, StopHandle};
use loadmark_plan::{Http2, Plan, Protocol, Stop, TlsPolicy};
use loadmark_test_support::{port, retry_on_port_conflict, wait_until, Daemon, TempDir, PATIENCE};
use std::process::Command;

struct Nginx {
    dir: TempDir,
    h2c: u16,
    tls: u16,
    goaway: u16,
    _daemon: Daemon,
}

const BIG: usize = 4 << 20;

fn nginx() -> Nginx {
    let dir = TempDir::new("h2-nginx");
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    std::fs::write(dir.path().join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), cert.key_pair.serialize_pem()).unwrap();
    for sub in ["tmp", "www", "www/up"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    // nginx's workers run as nobody: the PUT directory must be theirs to write.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.path().join("www/up"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    std::fs::write(dir.path().join("www/big"), vec![b'b'; BIG]).unwrap();
    let (daemon, h2c, tls, goaway) = retry_on_port_conflict("nginx", || {
        let (h2c, tls, goaway) = (port(), port(), port());
        let conf = format!(
            r#"worker_processes 1;
pid nginx.pid;
error_log stderr warn;
events {{ worker_connections 1024; }}
http {{
    log_format proto '$server_port $server_protocol $request_method $status';
    access_log access.log proto;
    client_body_temp_path tmp;
    proxy_temp_path tmp;
    fastcgi_temp_path tmp;
    uwsgi_temp_path tmp;
    scgi_temp_path tmp;
    client_max_body_size 16m;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{h2c} http2;
        listen 127.0.0.1:{tls} ssl http2;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        root www;
        location = /status {{ default_type text/plain; return 200 "OK"; }}
        location /up/ {{ dav_methods PUT; }}
    }}
    server {{
        listen 127.0.0.1:{goaway} http2;
        keepalive_requests 50;
        location = /status {{ default_type text/plain; return 200 "OK"; }}
    }}
}}
"#
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let mut cmd = Command::new("nginx");
        cmd.arg("-p")
            .arg(dir.path())
            .args(["-c", "nginx.conf", "-g", "daemon off;"]);
        let daemon = Daemon::spawn("nginx", cmd).map_err(|e| e.to_string())?;
        for p in [h2c, tls, goaway] {
            daemon.wait_for_port(p, PATIENCE)?;
        }
        Ok((daemon, h2c, tls, goaway))
    });
    Nginx {
        dir,
        h2c,
        tls,
        goaway,
        _daemon: daemon,
    }
}

impl Nginx {
    /// Requests nginx logged on `port` with this protocol (its `$server_protocol`).
    fn logged(&self, port: u16, protocol: &str) -> u64 {
        let log = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        let prefix = format!("{port} {protocol} ");
        log.lines().filter(|l| l.starts_with(&prefix)).count() as u64
    }

    /// Waits until nginx has logged `n` requests on `port` (it logs after the response),
    /// and checks that every request on it was HTTP/2.
    fn expect_http2(&self, port: u16, n: u64) {
        wait_until(&format!("nginx to log {n} requests on {port}"), || {
            self.logged(port, "HTTP/2.0") >= n
        });
        assert_eq!(
            self.logged(port, "HTTP/2.0"),
            n,
            "exactly the requests sent"
        );
        assert_eq!(
            self.logged(port, "HTTP/1.1"),
            0,
            "none fell back to HTTP/1.1"
        );
    }
}

fn h2(mut p: Plan, streams: usize) -> Plan {
    p.protocol = Protocol {
        http2: Some(Http2 {
            streams,
            fallback: false,
        }),
        unix_socket: None,
        pipeline: None,
        proxy: None,
        grpc: None,
        grpc_max_receive: None,
        http3: None,
        tls_server_name: None,
    };
    p
}

#[test]
fn h2c_and_h2_over_tls_counted_by_nginx_as_http2() {
    let n = nginx();
    let p = h2(
        plan(
            &format!("http://127.0.0.1:{}/status", n.h2c),
            4,
            2,
            Stop::Requests(2000),
        ),
        10,
    );
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 2000);
    assert_eq!(s.connections_opened, 4);
    n.expect_http2(n.h2c, 2000);

    let mut p = h2(
        plan(
            &format!("https://127.0.0.1:{}/status", n.tls),
            2,
            1,
            Stop::Requests(1000),
        ),
        10,
    );
    p.tls = TlsPolicy::Insecure;
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 1000);
    assert_eq!(s.connections_opened, 2);
    n.expect_http2(n.tls, 1000);
}

#[test]
fn large_bodies_both_ways_with_nginx() {
    let n = nginx();
    let p = h2(
        plan(
            &format!("http://127.0.0.1:{}/big", n.h2c),
            2,
            1,
            Stop::Requests(10),
        ),
        2,
    );
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.status.get(200), 10);
    // Every byte that crossed the connection: the bodies and their frames (issue 42).
    let body = 10 * BIG as u64;
    assert!(
        s.bytes_read >= body && s.bytes_read <= body + body / 100,
        "{}",
        s.bytes_read
    );

    let mut p = h2(
        plan(
            &format!("https://127.0.0.1:{}/up/file", n.tls),
            1,
            1,
            Stop::Requests(4),
        ),
        2,
    );
    p.tls = TlsPolicy::Insecure;
    p.request.method = "PUT".into();
    p.request.body = vec![b'u'; 3 << 20];
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    // 201 for the first PUT, 204 for those that replace it.
    assert_eq!(s.status.get(201) + s.status.get(204), 4, "{:?}", s.status);
    let written = std::fs::metadata(n.dir.path().join("www/up/file"))
        .unwrap()
        .len();
    assert_eq!(written, 3 << 20, "nginx received the whole upload");
}

#[test]
fn goaway_every_50_requests_is_followed_by_new_connections_without_errors() {
    let n = nginx();
    let p = h2(
        plan(
            &format!("http://127.0.0.1:{}/status", n.goaway),
            2,
            1,
            Stop::Requests(1000),
        ),
        10,
    );
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 1000);
    // nginx answers 50 per connection, then GOAWAY: at least 20 connections.
    assert!(s.connections_opened >= 20, "{}", s.connections_opened);
    // Streams nginx did not process were sent again, and nginx processed each request once.
    n.expect_http2(n.goaway, 1000);
    // Each connection has 10 streams open when nginx's GOAWAY comes after the 50th: the
    // ones above its last stream id were refused and sent again (nginx counted them once).
    assert!(s.retries >= 1, "{} retries", s.retries);
}
