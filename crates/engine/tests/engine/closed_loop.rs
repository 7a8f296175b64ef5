//! The closed-loop engine over real loopback sockets, against servers that count.

use std::time::{Duration, Instant};

use crate::common::{ok_response, plan, settled_count, RawServer, Reply, SLACK};
use loadmark_engine::{run, StopHandle};
use loadmark_metrics::ErrorKind;
use loadmark_plan::Stop;

#[test]
fn fixed_count_sends_exactly_n_and_the_server_agrees() {
    let server = RawServer::start(|_| Reply::Bytes(ok_response(b"hello")));
    let p = plan(&server.url("/"), 10, 2, Stop::Requests(1000));
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.responses, 1000);
    assert_eq!(s.errors.total(), 0);
    assert_eq!(r.totals.in_flight, 0);
    assert_eq!(s.status.get(200), 1000);
    assert_eq!(
        server.requests(),
        1000,
        "the server saw exactly what loadmark counted"
    );
    assert_eq!(s.connections_opened, 10);
    assert_eq!(server.accepts(), 10);
    assert_eq!(s.latency.len(), 1000);
    let per_second: u64 = r.totals.series.iter().map(|p| p.responses).sum();
    assert_eq!(per_second, 1000);
    assert_eq!(s.bytes_read, 1000 * ok_response(b"hello").len() as u64);
    assert!(!r.interrupted);
}

#[test]
fn no_keepalive_opens_one_connection_per_request() {
    let server = RawServer::start(|_| {
        Reply::BytesThenClose(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nOK".to_vec(),
        )
    });
    let mut p = plan(&server.url("/"), 4, 1, Stop::Requests(200));
    p.request.keep_alive = false;
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    assert_eq!(r.totals.snapshot.responses, 200);
    assert_eq!(r.totals.snapshot.errors.total(), 0);
    assert_eq!(server.accepts(), 200);
    assert_eq!(r.totals.snapshot.connections_opened, 200);
    assert_eq!(r.totals.snapshot.connect.len(), 200);
}

#[test]
fn chunked_close_delimited_and_varying_bodies_are_all_successes() {
    let server = RawServer::start(|n| {
        match n % 3 {
        0 => Reply::Bytes(ok_response(&vec![b'x'; (n as usize * 37) % 5000])),
        1 => Reply::Bytes(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nabcd\r\n3\r\nefg\r\n0\r\nTrailer: t\r\n\r\n".to_vec(),
        ),
        _ => Reply::BytesThenClose(b"HTTP/1.0 200 OK\r\n\r\nbody until close".to_vec()),
    }
    });
    let p = plan(&server.url("/"), 3, 1, Stop::Requests(300));
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 300);
    assert_eq!(server.requests(), 300);
    assert_eq!(
        s.status.not_success(),
        0,
        "varying lengths are not failures (ab's bug)"
    );
}

#[test]
fn a_silent_server_gives_timeouts_on_time() {
    let server = RawServer::start(|_| Reply::Silence);
    let mut p = plan(&server.url("/"), 2, 1, Stop::Requests(2));
    p.timeouts.request = Duration::from_millis(300);
    let t0 = Instant::now();
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let took = t0.elapsed();
    let timeouts = r.totals.snapshot.errors.get(ErrorKind::Timeout);
    assert_eq!(timeouts.count, 2);
    assert!(timeouts
        .first_example
        .as_deref()
        .unwrap()
        .contains("--timeout"));
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(300) + SLACK,
        "{took:?}"
    );
}

#[test]
fn refused_connections_are_classified() {
    // Bound and held, never listening: refused for the whole test, and no other test can
    // start listening there meanwhile (a port closed again could be taken; issue 23).
    let held = loadmark_test_support::refusing_port();
    let p = plan(
        &format!("http://127.0.0.1:{}/", held.port),
        2,
        1,
        Stop::Requests(20),
    );
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let connect = r.totals.snapshot.errors.get(ErrorKind::Connect);
    assert_eq!(connect.count, 20);
    assert!(
        connect
            .first_example
            .as_deref()
            .unwrap()
            .contains("refused"),
        "{connect:?}"
    );
    assert_eq!(r.totals.snapshot.responses, 0);
}

#[test]
fn duration_run_stops_on_time_and_counts_in_flight() {
    // Every response takes 5 s to come, so all 4 requests are in flight at the 500 ms stop.
    let server = RawServer::start(|_| Reply::Silence);
    let p = plan(
        &server.url("/"),
        4,
        2,
        Stop::Duration(Duration::from_millis(500)),
    );
    let t0 = Instant::now();
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    // Well under the 5 s the answers would take: the stop did not wait for them.
    assert!(
        t0.elapsed() < Duration::from_millis(500) + SLACK,
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(r.totals.in_flight, 4);
    assert_eq!(
        r.totals.snapshot.completed(),
        0,
        "in flight is neither success nor error"
    );
}

#[test]
fn stop_handle_interrupts_and_keeps_what_ran() {
    let server = RawServer::start(|_| Reply::Bytes(ok_response(b"ok")));
    let p = plan(
        &server.url("/"),
        2,
        1,
        Stop::Duration(Duration::from_secs(30)),
    );
    let stop = StopHandle::new();
    let stopper = stop.clone();
    let mut seen_progress = false;
    let t0 = Instant::now();
    let r = run(&p, &stop, |progress| {
        seen_progress = true;
        if progress.completed > 100 {
            stopper.stop();
        }
    })
    .unwrap();
    assert!(seen_progress);
    assert!(r.interrupted);
    // Stopped from the progress callback, far before the 30 s duration.
    assert!(t0.elapsed() < Duration::from_secs(5) + SLACK);
    let s = &r.totals.snapshot;
    assert!(s.responses > 100);
    let expected = s.responses + r.totals.in_flight;
    assert_eq!(
        settled_count(|| server.requests(), expected),
        expected,
        "every request the server saw is a response or in flight, and every one in flight \
         reached the server"
    );
}

#[test]
fn status_codes_are_counted_not_hidden() {
    let server = RawServer::start(|n| {
        let code = if n % 2 == 0 {
            "200 OK"
        } else {
            "503 Service Unavailable"
        };
        Reply::Bytes(format!("HTTP/1.1 {code}\r\nContent-Length: 0\r\n\r\n").into_bytes())
    });
    let p = plan(&server.url("/"), 1, 1, Stop::Requests(10));
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!((s.status.get(200), s.status.get(503)), (5, 5));
    assert_eq!(s.failed(), 5);
    assert_eq!(s.errors.total(), 0);
}

#[test]
fn ramping_connections_follow_the_stages() {
    use loadmark_plan::{Load, Profile};
    let server = RawServer::start(|_| Reply::Bytes(ok_response(b"ok")));
    // Stages of a second: a loaded machine can stall the executor for a few hundred ms, and
    // a stage it slept through would open fewer connections than planned.
    let stages = Profile::parse("1s:2->2,1s:6->6,1s:1->1", 0.0, "--stages").unwrap();
    let mut p = plan(&server.url("/"), 1, 2, Stop::Duration(stages.duration()));
    p.load = Load::Ramp {
        connections: stages,
        threads: 2,
    };
    let t0 = Instant::now();
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(3) + SLACK,
        "{:?}",
        t0.elapsed()
    );
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(
        s.connections_opened, 6,
        "2, then 4 more; none reopened when shrinking"
    );
    // The accept thread may take the last connection after the run is over.
    loadmark_test_support::wait_until("the server to accept 6", || server.accepts() >= 6);
    assert_eq!(server.accepts(), 6);
    assert!(s.responses > 100);
    // Every stage ran: requests ended in each of the three seconds.
    let series = &r.totals.series;
    assert!(
        series.len() >= 3 && series[..3].iter().all(|p| p.responses > 0),
        "{series:?}"
    );
}
