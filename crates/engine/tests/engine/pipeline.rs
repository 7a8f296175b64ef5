//! `--pipeline P`: P HTTP/1.1 requests written together per connection, responses matched in
//! order; exact counts against the built-in target at depth 16; a server that closes
//! mid-pipeline gets the unanswered idempotent requests once more on a new connection. The
//! same in an open loop (`-R`: due requests written behind the unanswered ones) and with
//! `--stages` (a ramp of pipelined connections).

use crate::common;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::common::{plan, settled_count};
use loadmark_engine::RunResult;
use loadmark_engine::{run, StopHandle};
use loadmark_metrics::ErrorKind;
use loadmark_plan::{Load, Plan, Profile, Stop};
use loadmark_target::{start, ServerConfig};

fn pipelined(mut p: Plan, depth: usize) -> Plan {
    p.protocol.pipeline = Some(depth);
    p
}

/// An open loop at `rate` for `duration`, pipelined `depth` deep over at most `max`
/// connections of one worker.
fn pipelined_open(url: &str, rate: f64, duration: Duration, max: usize, depth: usize) -> Plan {
    let mut p = pipelined(plan(url, 1, 1, Stop::Duration(duration)), depth);
    p.load = Load::Open {
        rate: Profile::constant(rate, duration),
        max_connections: max,
        threads: 1,
        connections: None,
    };
    p.validate()
        .expect("pipelining in an open loop is a valid plan");
    p
}

/// 8 requests at 1000/s, on one connection 8 deep.
fn eight_due_a_millisecond_apart(addr: SocketAddr) -> Plan {
    pipelined_open(
        &format!("http://{addr}/"),
        1000.0,
        Duration::from_millis(8),
        1,
        8,
    )
}

/// Every scheduled request is a response, an error, a drop, or in flight.
fn accounted(r: &RunResult) -> u64 {
    let s = &r.totals.snapshot;
    s.responses + s.errors.total() + s.dropped + r.totals.in_flight
}

#[test]
fn depth_16_against_the_built_in_target_counts_exactly() {
    let server = start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        ..Default::default()
    })
    .unwrap();
    let url = format!("http://{}/status", server.local_addr());
    // 3,200 = 4 connections x 50 batches of 16; and 3,201 leaves a last batch of one.
    for n in [3200u64, 3201] {
        let before = server.requests_served();
        let p = pipelined(plan(&url, 4, 2, Stop::Requests(n)), 16);
        let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
        let s = &r.totals.snapshot;
        assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
        assert_eq!(s.responses, n);
        assert_eq!(s.status.get(200), n);
        assert_eq!(s.connections_opened, 4);
        assert_eq!(settled_count(|| server.requests_served() - before, n), n);
    }
}

/// Answers `answer_first` requests of the first connection, then closes it; answers every
/// request of later connections. Returns the request heads seen on the first connection
/// before it closed, and the responses sent in all.
fn closing_server(answer_first: usize) -> (SocketAddr, Arc<Mutex<Vec<usize>>>, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let first_reads = Arc::new(Mutex::new(Vec::new()));
    let answered = Arc::new(AtomicU64::new(0));
    let (reads, count) = (first_reads.clone(), answered.clone());
    thread::spawn(move || {
        for (i, tcp) in listener.incoming().flatten().enumerate() {
            let (reads, count) = (reads.clone(), count.clone());
            thread::spawn(move || {
                let mut tcp = tcp;
                let mut buf = Vec::new();
                let mut chunk = [0u8; 65536];
                let mut sent = 0;
                loop {
                    let n = match tcp.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    buf.extend_from_slice(&chunk[..n]);
                    let mut heads = 0;
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        heads += 1;
                    }
                    if i == 0 {
                        reads.lock().unwrap().push(heads);
                    }
                    for _ in 0..heads {
                        if i == 0 && sent == answer_first {
                            // Closes with the rest of the batch unanswered.
                            return;
                        }
                        if tcp.write_all(&common::ok_response(b"ok")).is_err() {
                            return;
                        }
                        sent += 1;
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    (addr, first_reads, answered)
}

#[test]
fn a_connection_closed_mid_pipeline_retries_the_unanswered_gets_once() {
    let (addr, first_reads, answered) = closing_server(5);
    let p = pipelined(plan(&format!("http://{addr}/"), 1, 1, Stop::Requests(8)), 8);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 8);
    assert_eq!(s.retries, 3, "the 3 unanswered of 8 were sent again");
    assert_eq!(s.connections_opened, 2);
    // The server counts an answer after writing it: wait for its count to catch up with
    // what the client read.
    assert_eq!(settled_count(|| answered.load(Ordering::SeqCst), 8), 8);
    // The 8 requests were on the first connection before any answer: written together.
    let reads = first_reads.lock().unwrap().clone();
    assert_eq!(reads.iter().sum::<usize>(), 8, "{reads:?}");
}

#[test]
fn unanswered_posts_are_not_sent_again() {
    let (addr, _, answered) = closing_server(5);
    let mut p = pipelined(plan(&format!("http://{addr}/"), 1, 1, Stop::Requests(8)), 8);
    p.request.method = "POST".into();
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.responses, 5);
    assert_eq!(s.retries, 0);
    let closed = s.errors.get(ErrorKind::Closed);
    assert_eq!(closed.count, 3, "{:?}", s.errors);
    assert!(
        closed
            .first_example
            .as_deref()
            .unwrap()
            .contains("3 of 8 pipelined"),
        "{closed:?}"
    );
    // The server counts an answer after writing it: wait for its count to catch up with
    // what the client read.
    assert_eq!(settled_count(|| answered.load(Ordering::SeqCst), 5), 5);
}

#[test]
fn an_open_loop_writes_due_requests_behind_unanswered_ones_and_counts_exactly() {
    let server = start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        ..Default::default()
    })
    .unwrap();
    let url = format!("http://{}/status", server.local_addr());
    let p = pipelined_open(&url, 2000.0, Duration::from_secs(1), 4, 16);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(accounted(&r), 2000, "exactly R x D scheduled");
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert!(
        (1..=4).contains(&s.connections_opened),
        "{} connections for at most 4",
        s.connections_opened
    );
    // Each response timed from its intended time: the schedule lag was recorded for all.
    assert_eq!(s.lag.len(), s.responses);
    let expected = s.responses + r.totals.in_flight;
    assert_eq!(
        settled_count(|| server.requests_served(), expected),
        expected
    );
}

#[test]
fn an_open_loop_retries_the_gets_a_closed_pipeline_left_unanswered() {
    let (addr, _, answered) = closing_server(5);
    // 8 requests due 1 ms apart: the first connection answers 5 and closes on the next.
    let p = eight_due_a_millisecond_apart(addr);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.dropped, 0);
    assert_eq!(s.responses, 8);
    assert!(s.retries >= 1, "the unanswered were sent again");
    assert_eq!(s.connections_opened, 2);
    assert_eq!(settled_count(|| answered.load(Ordering::SeqCst), 8), 8);
}

#[test]
fn an_open_loop_does_not_send_unanswered_posts_again() {
    let (addr, _, answered) = closing_server(5);
    let mut p = eight_due_a_millisecond_apart(addr);
    p.request.method = "POST".into();
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.retries, 0);
    let closed = s.errors.get(ErrorKind::Closed).count;
    assert!(closed >= 1, "{:?}", s.errors);
    assert_eq!(s.responses + closed, 8, "{:?}", s.errors);
    assert_eq!(
        settled_count(|| answered.load(Ordering::SeqCst), s.responses),
        s.responses
    );
}

#[test]
fn stages_ramp_pipelined_connections() {
    let server = start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        ..Default::default()
    })
    .unwrap();
    let url = format!("http://{}/status", server.local_addr());
    let stages = Profile::parse("1s:2->2,1s:4->4", 0.0, "--stages").unwrap();
    let mut p = pipelined(plan(&url, 1, 1, Stop::Duration(stages.duration())), 8);
    p.load = Load::Ramp {
        connections: stages,
        threads: 1,
    };
    p.validate()
        .expect("a ramp of pipelined connections is a valid plan");
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.connections_opened, 4, "2, then 2 more; none reopened");
    assert!(s.responses > 0);
    let expected = s.responses + r.totals.in_flight;
    assert_eq!(
        settled_count(|| server.requests_served(), expected),
        expected
    );
}

/// Answers nothing until `n` requests have arrived on a connection, then answers them all:
/// only a client that writes requests behind unanswered ones gets any answer.
fn batch_server(n: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            thread::spawn(move || {
                let mut tcp = tcp;
                let (mut buf, mut chunk, mut heads) = (Vec::new(), [0u8; 65536], 0);
                while let Ok(read) = tcp.read(&mut chunk) {
                    if read == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..read]);
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        heads += 1;
                    }
                    if heads >= n {
                        for _ in 0..heads {
                            if tcp.write_all(&common::ok_response(b"ok")).is_err() {
                                return;
                            }
                        }
                        heads = 0;
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn an_open_loop_pipelines_due_requests_on_one_connection() {
    let addr = batch_server(8);
    // 8 requests due 1 ms apart, one connection 8 deep: all 8 must be on it unanswered.
    let p = eight_due_a_millisecond_apart(addr);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!((s.responses, s.dropped, s.connections_opened), (8, 0, 1));
    // The first was answered after the eighth was due, 7 ms later: its latency shows it.
    assert!(s.latency.max() >= 7_000, "max {} µs", s.latency.max());
}

/// A server that takes connections and requests and never answers (held for the test's
/// life; each connection's thread ends when the client closes it).
fn silent_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for mut tcp in listener.incoming().flatten() {
            thread::spawn(move || {
                let mut sink = [0u8; 4096];
                while matches!(tcp.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

#[test]
fn a_batch_the_server_never_answers_times_out_and_is_not_sent_again() {
    let addr = silent_server();
    let mut p = pipelined(plan(&format!("http://{addr}/"), 1, 1, Stop::Requests(8)), 4);
    p.timeouts.request = Duration::from_millis(300);
    let t0 = std::time::Instant::now();
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let took = t0.elapsed();
    let s = &r.totals.snapshot;
    // Two batches of four, each ended by its own deadline (the second after a new connection).
    assert_eq!(s.errors.get(ErrorKind::Timeout).count, 8, "{:?}", s.errors);
    assert_eq!(s.responses, 0);
    assert_eq!(s.retries, 0, "a timed-out request is not sent again");
    assert!(took >= Duration::from_millis(600), "{took:?}");
}
