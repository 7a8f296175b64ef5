//! The client's side of the connection rules (issue 20), checked from the server's side over
//! real sockets:
//!
//! - a request that said `Connection: close` (--no-keepalive, or the user's own header in any
//!   case) is the last on its connection, even when the server keeps it open
//!   (RFC 9112 §9.6): connections accepted = requests;
//! - a reused connection that closes before any response byte is retried on a new one only
//!   for idempotent methods (RFC 9110 §9.2.2), and each retry is counted; a POST is never
//!   sent twice.

use std::time::Duration;

use crate::common::{ok_response, plan, RawServer, Reply};
use loadmark_engine::{run, RunResult, StopHandle};
use loadmark_metrics::ErrorKind;
use loadmark_plan::{Plan, Stop};

fn run_plan(p: &Plan) -> RunResult {
    run(p, &StopHandle::new(), |_| {}).unwrap()
}

fn bounded(mut p: Plan) -> Plan {
    p.timeouts.request = Duration::from_secs(2);
    p.timeouts.connect = Duration::from_secs(2);
    p
}

/// Answers every request and never closes: it ignores `Connection: close`.
fn close_ignoring_server() -> RawServer {
    RawServer::start(|_| Reply::Bytes(ok_response(b"kept open")))
}

#[test]
fn no_keepalive_never_reuses_a_connection_the_server_kept_open() {
    let server = close_ignoring_server();
    let mut p = bounded(plan(&server.url("/"), 10, 1, Stop::Requests(200)));
    p.request.keep_alive = false;
    let r = run_plan(&p);
    let s = &r.totals.snapshot;
    assert_eq!((s.responses, s.errors.total()), (200, 0), "{:?}", s.errors);
    assert_eq!(server.requests(), 200);
    assert_eq!(server.accepts(), 200, "one connection per request");
    assert_eq!(s.connections_opened, 200);
}

#[test]
fn a_connection_close_header_in_any_case_is_honoured_like_no_keepalive() {
    for value in ["close", "CLOSE", "Keep-Alive, Close"] {
        let server = close_ignoring_server();
        let mut p = bounded(plan(&server.url("/"), 10, 1, Stop::Requests(100)));
        p.request.headers = vec![("connection".into(), value.into())];
        let r = run_plan(&p);
        let s = &r.totals.snapshot;
        assert_eq!(s.responses, 100, "{value}: {:?}", s.errors);
        assert_eq!(
            server.accepts(),
            100,
            "Connection: {value}: one connection per request"
        );
    }
}

/// On one connection at a time: request 0 is answered, request 1 (the second on that
/// connection) is read and the connection closed without a byte of answer, every later
/// request is answered.
fn closes_on_the_second_request() -> RawServer {
    RawServer::start(|n| match n {
        1 => Reply::custom(|_| false),
        _ => Reply::Bytes(ok_response(b"ok")),
    })
}

#[test]
fn a_get_on_a_reused_connection_closed_before_any_byte_is_retried_once_and_counted() {
    let server = closes_on_the_second_request();
    let r = run_plan(&bounded(plan(&server.url("/"), 1, 1, Stop::Requests(2))));
    let s = &r.totals.snapshot;
    assert_eq!((s.responses, s.errors.total()), (2, 0), "{:?}", s.errors);
    assert_eq!(
        s.retries, 1,
        "the second request went again on a new connection"
    );
    assert_eq!(
        server.requests(),
        3,
        "the retried request reached the server twice"
    );
    assert_eq!(s.connections_opened, 2);
}

#[test]
fn a_post_on_a_reused_connection_closed_before_any_byte_is_an_error_never_sent_twice() {
    let server = closes_on_the_second_request();
    let mut p = bounded(plan(&server.url("/"), 1, 1, Stop::Requests(2)));
    p.request.method = "POST".into();
    let r = run_plan(&p);
    let s = &r.totals.snapshot;
    assert_eq!(s.responses, 1);
    assert_eq!(s.retries, 0);
    let read = s.errors.get(ErrorKind::Read);
    assert_eq!((read.count, s.errors.total()), (1, 1), "{:?}", s.errors);
    let example = read.first_example.as_deref().unwrap();
    assert!(example.contains("not idempotent"), "{example}");
    assert_eq!(server.requests(), 2, "the POST reached the server once");
}
