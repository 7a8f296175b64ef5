//! `--unix-socket`: HTTP/1.1 and HTTP/2 to the built-in target over a Unix domain socket
//! (the URL gives only the Host header and the path), counted by the server.

use crate::common::{plan, settled_count};
use loadmark_engine::{run, StopHandle};
use loadmark_metrics::ErrorKind;
use loadmark_plan::{Http2, Protocol, Stop};
use loadmark_target::{start, ServerConfig};
use loadmark_test_support::TempDir;

#[test]
fn http1_and_http2_over_a_unix_socket_reach_the_server_there() {
    let dir = TempDir::new("unix-socket");
    let path = dir.path().join("target.sock");
    let server = start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        http2: true,
        unix_socket: Some(path.clone()),
        ..Default::default()
    })
    .unwrap();
    // The URL's host names the service; it is not connected to (this port is not the
    // server's TCP port, and nothing listens on it).
    let mut p = plan("http://app.local:1/status", 3, 1, Stop::Requests(600));
    p.protocol = Protocol {
        http2: None,
        unix_socket: Some(path.clone()),
        pipeline: None,
        proxy: None,
        grpc: None,
        grpc_max_receive: None,
        http3: None,
        tls_server_name: None,
    };
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 600);
    assert_eq!(s.connections_opened, 3);
    assert_eq!(settled_count(|| server.requests_served(), 600), 600);
    assert_eq!(server.http2_requests(), 0);

    p.protocol.http2 = Some(Http2 {
        streams: 8,
        fallback: false,
    });
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 600);
    assert_eq!(settled_count(|| server.http2_requests(), 600), 600);
    assert_eq!(server.connections_accepted(), 6);
    drop(server);
    assert!(
        !path.exists(),
        "the socket file is removed when the server stops"
    );
}

#[test]
fn a_missing_socket_is_a_connect_error_naming_the_path() {
    let dir = TempDir::new("unix-socket");
    let path = dir.path().join("nobody.sock");
    let mut p = plan("http://localhost/", 1, 1, Stop::Requests(3));
    p.protocol.unix_socket = Some(path.clone());
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let e = r.totals.snapshot.errors.get(ErrorKind::Connect);
    assert_eq!(e.count, 3);
    let example = e.first_example.as_deref().unwrap();
    assert!(example.contains(&path.display().to_string()), "{example}");
}
