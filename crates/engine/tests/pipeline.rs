//! `--pipeline P`: P HTTP/1.1 requests written together per connection, responses matched in
//! order; exact counts against the built-in target at depth 16; a server that closes
//! mid-pipeline gets the unanswered idempotent requests once more on a new connection.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use common::{plan, settled_count};
use loadmark_engine::{run, StopHandle};
use loadmark_metrics::ErrorKind;
use loadmark_plan::{Plan, Stop};
use loadmark_target::{start, ServerConfig};

fn pipelined(mut p: Plan, depth: usize) -> Plan {
    p.protocol.pipeline = Some(depth);
    p
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
