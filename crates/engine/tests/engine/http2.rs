//! HTTP/2 against the built-in target (hyper's server, h2c with prior knowledge) on loopback:
//! exact counts, HTTP/2 seen by the server, streams multiplexed on few connections, large
//! bodies both ways, the open loop; and over TLS, a server without h2 refused clearly.

use crate::common;
use std::time::Duration;

use crate::common::{plan, settled_count};
use loadmark_engine::{run, EngineError, RunResult, StopHandle};
use loadmark_plan::{Http2, Load, Plan, Profile, Protocol, Stop, TlsPolicy};
use loadmark_target::{start, RunningServer, ServerConfig};

fn h2_target() -> RunningServer {
    start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        http2: true,
        ..Default::default()
    })
    .unwrap()
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

fn no_errors(r: &RunResult) {
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
}

#[test]
fn closed_loop_h2c_counts_equal_the_servers_and_every_request_was_http2() {
    let server = h2_target();
    let url = format!("http://{}/status", server.local_addr());
    let p = h2(plan(&url, 4, 2, Stop::Requests(3000)), 8);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    no_errors(&r);
    assert_eq!(s.responses, 3000);
    assert_eq!(s.status.get(200), 3000);
    // 4 connections carried 8 streams each: no connection per request.
    assert_eq!(s.connections_opened, 4);
    assert_eq!(settled_count(|| server.requests_served(), 3000), 3000);
    assert_eq!(
        server.http2_requests(),
        3000,
        "the server saw HTTP/2 frames"
    );
    assert_eq!(server.connections_accepted(), 4);
    assert_eq!(
        r.http2_server_streams, None,
        "hyper allows 128 streams here"
    );
}

#[test]
fn streams_above_the_servers_limit_wait_and_the_limit_is_reported() {
    let server = h2_target();
    let url = format!("http://{}/status", server.local_addr());
    // The built-in target allows 128 concurrent streams; ask for 200 on one connection.
    let p = h2(plan(&url, 1, 1, Stop::Requests(2000)), 200);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    assert_eq!(r.totals.snapshot.responses, 2000);
    assert_eq!(r.http2_server_streams, Some(128));
    assert_eq!(server.http2_requests(), 2000);
}

#[test]
fn large_bodies_both_ways_pass_the_flow_control_windows() {
    let server = h2_target();
    // Downloads: 4 MiB each, far above the 64 KiB default stream window.
    let url = format!("http://{}/bytes/4194304", server.local_addr());
    let p = h2(plan(&url, 2, 1, Stop::Requests(20)), 4);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    let s = &r.totals.snapshot;
    assert_eq!(s.responses, 20);
    assert!(
        body_and_frames(s.bytes_read, 20 * 4_194_304),
        "every body byte was read, with its frames: {}",
        s.bytes_read
    );
    // Uploads: 3 MiB echoed back, the server grants window as it reads.
    let url = format!("http://{}/echo", server.local_addr());
    let mut p = h2(plan(&url, 2, 1, Stop::Requests(10)), 3);
    p.request.method = "POST".into();
    p.request.body = vec![b'x'; 3 << 20];
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    let s = &r.totals.snapshot;
    assert_eq!(s.responses, 10);
    assert_eq!(s.status.get(200), 10);
    assert!(
        body_and_frames(s.bytes_read, 10 * (3 << 20)),
        "the echo came back whole, with its frames: {}",
        s.bytes_read
    );
    assert_eq!(settled_count(|| server.http2_requests(), 30), 30);
}

#[test]
fn open_loop_over_streams_sends_the_whole_schedule() {
    let server = h2_target();
    let url = format!("http://{}/status", server.local_addr());
    let rate = Profile::constant(500.0, Duration::from_secs(2));
    let mut p = plan(&url, 1, 2, Stop::Duration(rate.duration()));
    // Two connections of 50 streams each: 100 requests in flight before any is dropped,
    // which covers a 200 ms stall of the server (a busy shared machine).
    p.load = Load::Open {
        rate,
        max_connections: 2,
        threads: 2,
        connections: None,
    };
    let p = h2(p, 50);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    let s = &r.totals.snapshot;
    assert_eq!(
        s.responses + s.dropped + r.totals.in_flight,
        1000,
        "exactly R x D scheduled: {} responses, {} dropped, {} in flight",
        s.responses,
        s.dropped,
        r.totals.in_flight
    );
    let expected = s.responses + r.totals.in_flight;
    assert_eq!(
        settled_count(|| server.http2_requests(), expected),
        expected
    );
    assert!(
        s.connections_opened <= 2,
        "{} connections",
        s.connections_opened
    );
}

#[test]
fn tls_server_without_h2_is_refused_before_any_load() {
    // An HTTP/1.1-only TLS server: it does not choose h2 with ALPN.
    let addr = common::tls_server(|tls| {
        let mut b = [0u8; 1024];
        let _ = std::io::Read::read(tls, &mut b);
    });
    let mut p = h2(
        plan(&format!("https://{addr}/"), 1, 1, Stop::Requests(5)),
        4,
    );
    p.tls = TlsPolicy::Insecure;
    match run(&p, &StopHandle::new(), |_| {}) {
        Err(e @ EngineError::Http2NotOffered(_)) => {
            let why = e.to_string();
            assert!(why.contains("ALPN") && why.contains("--http2"), "{why}")
        }
        other => panic!(
            "expected a refusal, got {:?}",
            other.map(|r| r.totals.snapshot.responses)
        ),
    }
}

#[test]
fn h2_over_tls_by_alpn_against_the_built_in_target() {
    let server = start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        http2: true,
        tls: true,
        ..Default::default()
    })
    .unwrap();
    assert!(server.tls_cert_pem().unwrap().contains("BEGIN CERTIFICATE"));
    let url = format!("https://{}/status", server.local_addr());
    let mut p = h2(plan(&url, 2, 1, Stop::Requests(500)), 10);
    p.tls = TlsPolicy::Insecure;
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    assert_eq!(r.totals.snapshot.responses, 500);
    assert_eq!(r.totals.snapshot.connections_opened, 2);
    assert_eq!(settled_count(|| server.http2_requests(), 500), 500);
    // The same server still speaks HTTP/1.1 to a client that offers only it.
    let p = {
        let mut p = plan(&url, 1, 1, Stop::Requests(50));
        p.tls = TlsPolicy::Insecure;
        p
    };
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    assert_eq!(settled_count(|| server.requests_served(), 550), 550);
    assert_eq!(server.http2_requests(), 500);
}

/// `bytes` counts every byte that crossed the connection (issue 42): the body, and the frames
/// around it (9-byte frame headers, HPACK, control frames), which are a small share of a
/// large body.
fn body_and_frames(bytes: u64, body: u64) -> bool {
    bytes >= body && bytes <= body + body / 100
}
