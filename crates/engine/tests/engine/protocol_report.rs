//! What a run tells about its protocol (issue 16), against the built-in target on loopback:
//! `--http2-fallback` over a TLS server without h2 (HTTP/1.1 used, checked on the server
//! side), and how many requests each connection carried, for HTTP/1.1, HTTP/2 (closed and
//! open loop) and pipelining.

use std::time::Duration;

use crate::common::{plan, settled_count};
use loadmark_engine::{run, EngineError, RunResult, StopHandle};
use loadmark_plan::{Http2, Load, Plan, Profile, Stop, TlsPolicy};
use loadmark_target::{start, RunningServer, ServerConfig};

fn target(http2: bool, tls: bool) -> RunningServer {
    start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        http2,
        tls,
        ..Default::default()
    })
    .unwrap()
}

fn h2(mut p: Plan, streams: usize, fallback: bool) -> Plan {
    p.protocol.http2 = Some(Http2 { streams, fallback });
    p
}

fn no_errors(r: &RunResult) {
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
}

#[test]
fn http2_fallback_runs_over_http1_when_tls_offers_no_h2() {
    // TLS without h2 in ALPN (the built-in target offers h2 only with --http2).
    let server = target(false, true);
    let url = format!("https://{}/status", server.local_addr());
    let mut p = h2(plan(&url, 2, 1, Stop::Requests(300)), 8, true);
    p.tls = TlsPolicy::Insecure;
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    let why = r
        .http2_fallback
        .as_deref()
        .expect("the fallback is reported");
    assert!(
        why.contains("ALPN") && !why.contains("drop --http2"),
        "{why}"
    );
    assert_eq!(r.totals.snapshot.responses, 300);
    assert_eq!(settled_count(|| server.requests_served(), 300), 300);
    assert_eq!(server.http2_requests(), 0, "the server saw only HTTP/1.1");
    assert_eq!(r.http2_server_streams, None);
    // Without the option the same run is refused, naming the option.
    p.protocol.http2 = Some(Http2 {
        streams: 8,
        fallback: false,
    });
    match run(&p, &StopHandle::new(), |_| {}) {
        Err(e @ EngineError::Http2NotOffered(_)) => {
            let message = e.to_string();
            assert!(message.contains("--http2-fallback"), "{message}")
        }
        other => panic!(
            "expected a refusal, got {:?}",
            other.map(|r| r.http2_fallback)
        ),
    }
}

#[test]
fn http2_fallback_is_not_taken_when_the_server_offers_h2() {
    let server = target(true, true);
    let url = format!("https://{}/status", server.local_addr());
    let mut p = h2(plan(&url, 1, 1, Stop::Requests(100)), 4, true);
    p.tls = TlsPolicy::Insecure;
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    assert_eq!(r.http2_fallback, None);
    assert_eq!(settled_count(|| server.http2_requests(), 100), 100);
}

#[test]
fn requests_per_connection_over_http1_add_up_to_the_responses() {
    let server = target(false, false);
    let url = format!("http://{}/status", server.local_addr());
    let r = run(
        &plan(&url, 4, 2, Stop::Requests(800)),
        &StopHandle::new(),
        |_| {},
    )
    .unwrap();
    no_errors(&r);
    let spread = r.requests_per_connection.expect("connections were counted");
    assert_eq!(spread.connections, 4);
    assert_eq!(spread.connections, server.connections_accepted());
    // Every response was carried by one of them (the mean is exact).
    assert!((spread.mean * 4.0 - 800.0).abs() < 1e-6, "{spread:?}");
    assert!(spread.min <= spread.median && spread.median <= spread.max);
    assert!(spread.max <= 800 && spread.min >= 1, "{spread:?}");
}

#[test]
fn connection_close_makes_one_request_per_connection() {
    let server = target(false, false);
    let url = format!("http://{}/status", server.local_addr());
    let mut p = plan(&url, 2, 1, Stop::Requests(60));
    p.request.keep_alive = false;
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    let spread = r.requests_per_connection.unwrap();
    assert_eq!(
        (spread.connections, spread.min, spread.max),
        (60, 1, 1),
        "{spread:?}"
    );
}

#[test]
fn requests_per_connection_over_http2_closed_and_open_loop() {
    let server = target(true, false);
    let url = format!("http://{}/status", server.local_addr());
    let r = run(
        &h2(plan(&url, 3, 1, Stop::Requests(900)), 5, false),
        &StopHandle::new(),
        |_| {},
    )
    .unwrap();
    no_errors(&r);
    let spread = r.requests_per_connection.unwrap();
    assert_eq!(spread.connections, 3, "{spread:?}");
    assert!((spread.mean * 3.0 - 900.0).abs() < 1e-6, "{spread:?}");

    let rate = Profile::constant(200.0, Duration::from_secs(1));
    let mut p = plan(&url, 1, 1, Stop::Duration(rate.duration()));
    p.load = Load::Open {
        rate,
        max_connections: 2,
        threads: 1,
        connections: None,
    };
    let r = run(&h2(p, 100, false), &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    let s = &r.totals.snapshot;
    let spread = r.requests_per_connection.unwrap();
    assert_eq!(spread.connections, s.connections_opened, "{spread:?}");
    let carried = (spread.mean * spread.connections as f64).round() as u64;
    assert_eq!(carried, s.responses, "{spread:?}");
}

#[test]
fn requests_per_connection_when_pipelining() {
    let server = target(false, false);
    let url = format!("http://{}/status", server.local_addr());
    let mut p = plan(&url, 2, 1, Stop::Requests(320));
    p.protocol.pipeline = Some(16);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    let spread = r.requests_per_connection.unwrap();
    assert_eq!(spread.connections, 2, "{spread:?}");
    assert!((spread.mean * 2.0 - 320.0).abs() < 1e-6, "{spread:?}");
}

/// `--stages` of connections with `--http2` (issue 16): each slot of the ramp is an HTTP/2
/// connection with its streams; shrinking retires connections (their streams end their
/// requests first) and none is reopened.
#[test]
fn http2_connections_follow_a_ramp() {
    let server = target(true, false);
    let url = format!("http://{}/status", server.local_addr());
    // Stages of a second, as the HTTP/1.1 ramp test: a stalled stage would open fewer.
    let stages = Profile::parse("1s:2->2,1s:6->6,1s:1->1", 0.0, "--stages").unwrap();
    let mut p = plan(&url, 1, 2, Stop::Duration(stages.duration()));
    p.load = Load::Ramp {
        connections: stages,
        threads: 2,
    };
    let p = h2(p, 4, false);
    p.validate()
        .expect("a ramp of HTTP/2 connections is a valid plan");
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    no_errors(&r);
    let s = &r.totals.snapshot;
    assert_eq!(s.connections_opened, 6, "2, then 4 more; none reopened");
    assert_eq!(
        settled_count(|| server.connections_accepted(), 6),
        6,
        "the server saw 6 connections"
    );
    let served = s.responses + r.totals.in_flight;
    assert_eq!(settled_count(|| server.http2_requests(), served), served);
    assert!(s.responses > 100, "{} responses", s.responses);
    let series = &r.totals.series;
    assert!(
        series.len() >= 3 && series[..3].iter().all(|p| p.responses > 0),
        "every stage ran: {series:?}"
    );
    let spread = r.requests_per_connection.unwrap();
    assert_eq!(spread.connections, 6, "{spread:?}");
}
