//! Hostile HTTP/2 servers, written frame by frame on raw loopback TCP: GOAWAY at once, GOAWAY
//! mid-run, RST_STREAM on every stream, a malformed frame, no WINDOW_UPDATE for an upload, a
//! stream limit lowered after the handshake, a PING before every answer. Each run is bounded by a request count; every
//! request ends as a response or a classified error naming the HTTP/2 code, never a hang.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::common::{plan, settled_count};
use loadmark_engine::{run, RunResult, StopHandle};
use loadmark_metrics::ErrorKind;
use loadmark_plan::{Http2, Plan, Protocol, Stop};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const END_STREAM_HEADERS: u8 = 0x1 | 0x4;
/// HPACK: static table entry 8, `:status: 200`.
const STATUS_200: &[u8] = &[0x88];

#[derive(Clone, Copy)]
enum Mode {
    GoawayAtOnce,
    /// Answers this many streams per connection, then GOAWAY naming the last one answered.
    GoawayAfter(u64),
    ResetEvery,
    MalformedSettings,
    NoWindowUpdate,
    /// SETTINGS_MAX_CONCURRENT_STREAMS = 1 sent after the handshake, then answers everything.
    LowerLimit,
    /// Sends a PING for every request (its payload names the stream) and answers the stream
    /// only once the client's PING ACK with that payload came back.
    PingFirst,
    /// After the first request, writes PINGs without end and reads nothing (so the client's
    /// ACKs pile up), counting the bytes it wrote in the given counter.
    PingFlood,
}

fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, ty, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn goaway(last: u32, code: u32) -> Vec<u8> {
    let mut p = last.to_be_bytes().to_vec();
    p.extend_from_slice(&code.to_be_bytes());
    frame(GOAWAY, 0, 0, &p)
}

/// The listener stays bound in the server thread for the test's life (port 0, held).
fn server(mode: Mode) -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let answered = Arc::new(AtomicU64::new(0));
    let count = answered.clone();
    thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let count = count.clone();
            thread::spawn(move || {
                let _ = connection(tcp, mode, &count);
            });
        }
    });
    (addr, answered)
}

fn connection(mut tcp: TcpStream, mode: Mode, answered: &AtomicU64) -> std::io::Result<()> {
    let mut preface = [0u8; 24];
    tcp.read_exact(&mut preface)?;
    assert_eq!(
        &preface[..],
        PREFACE,
        "the client speaks HTTP/2 from its first byte"
    );
    tcp.write_all(&frame(SETTINGS, 0, 0, &[]))?;
    if let Mode::GoawayAtOnce = mode {
        tcp.write_all(&goaway(0, 0))?;
    }
    let mut here = 0u64;
    let mut limited = false;
    loop {
        let mut head = [0u8; 9];
        tcp.read_exact(&mut head)?;
        let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
        let (ty, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0u8; len];
        tcp.read_exact(&mut payload)?;
        if ty == SETTINGS && flags & 1 == 0 {
            tcp.write_all(&frame(SETTINGS, 1, 0, &[]))?;
            continue;
        }
        if let (Mode::PingFirst, PING, 1) = (mode, ty, flags & 1) {
            // The ACK of our PING: its payload names the stream to answer now.
            let acked = u64::from_be_bytes(payload[..8].try_into().expect("8-byte PING")) as u32;
            tcp.write_all(&frame(HEADERS, END_STREAM_HEADERS, acked, STATUS_200))?;
            answered.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        if ty != HEADERS {
            continue;
        }
        match mode {
            Mode::PingFlood => {
                let mut burst = Vec::new();
                for i in 0..1000u64 {
                    burst.extend(frame(PING, 0, 0, &i.to_be_bytes()));
                }
                // Until the client closes the connection (the write then fails).
                loop {
                    tcp.write_all(&burst)?;
                    answered.fetch_add(burst.len() as u64, Ordering::SeqCst);
                }
            }
            Mode::GoawayAtOnce | Mode::NoWindowUpdate => {}
            Mode::ResetEvery => {
                // INTERNAL_ERROR (2).
                tcp.write_all(&frame(RST_STREAM, 0, stream, &2u32.to_be_bytes()))?;
            }
            Mode::MalformedSettings => {
                // A SETTINGS payload must be a multiple of 6 bytes.
                tcp.write_all(&frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0]))?;
            }
            Mode::GoawayAfter(n) => {
                if here < n {
                    tcp.write_all(&frame(HEADERS, END_STREAM_HEADERS, stream, STATUS_200))?;
                    answered.fetch_add(1, Ordering::SeqCst);
                    here += 1;
                    if here == n {
                        tcp.write_all(&goaway(stream, 0))?;
                    }
                }
            }
            Mode::PingFirst => {
                tcp.write_all(&frame(PING, 0, 0, &u64::from(stream).to_be_bytes()))?;
            }
            Mode::LowerLimit => {
                if !limited {
                    // SETTINGS_MAX_CONCURRENT_STREAMS (3) = 1, before the first answer.
                    tcp.write_all(&frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 1]))?;
                    limited = true;
                }
                tcp.write_all(&frame(HEADERS, 0x4, stream, STATUS_200))?;
                tcp.write_all(&frame(DATA, 0x1, stream, b"ok"))?;
                answered.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

fn h2_plan(addr: SocketAddr, connections: usize, streams: usize, requests: u64) -> Plan {
    let mut p = plan(
        &format!("http://{addr}/"),
        connections,
        1,
        Stop::Requests(requests),
    );
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
    // A hang would show as a timeout error; 5 s is far above any answer on loopback.
    p.timeouts.request = Duration::from_secs(5);
    p
}

fn example(r: &RunResult, kind: ErrorKind) -> String {
    r.totals
        .snapshot
        .errors
        .get(kind)
        .first_example
        .clone()
        .unwrap_or_default()
}

#[test]
fn goaway_at_once_ends_every_request_as_an_error_naming_goaway() {
    let (addr, _) = server(Mode::GoawayAtOnce);
    let r = run(&h2_plan(addr, 2, 4, 20), &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.responses, 0);
    assert_eq!(
        s.errors.total(),
        20,
        "every request accounted: {:?}",
        s.errors
    );
    assert!(
        ErrorKind::ALL
            .iter()
            .filter(|k| s.errors.get(**k).count > 0)
            .all(|k| matches!(k, ErrorKind::Protocol | ErrorKind::Read | ErrorKind::Closed)),
        "{:?}",
        s.errors
    );
    if s.errors.get(ErrorKind::Protocol).count > 0 {
        assert!(
            example(&r, ErrorKind::Protocol).contains("GOAWAY"),
            "{:?}",
            s.errors
        );
    }
}

#[test]
fn goaway_mid_run_retries_the_unprocessed_streams_on_a_new_connection() {
    let (addr, answered) = server(Mode::GoawayAfter(25));
    let r = run(&h2_plan(addr, 1, 4, 200), &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 200);
    // The server counts an answer after writing it: let its count catch up.
    assert_eq!(
        settled_count(|| answered.load(Ordering::SeqCst), 200),
        200,
        "the server answered each once"
    );
    // 25 answers per connection: at least 8 connections.
    assert!(s.connections_opened >= 8, "{}", s.connections_opened);
    assert!(
        s.retries >= 1,
        "streams above the GOAWAY's last id were retried"
    );
}

#[test]
fn rst_stream_on_every_stream_is_a_protocol_error_naming_the_code() {
    let (addr, _) = server(Mode::ResetEvery);
    let r = run(&h2_plan(addr, 2, 4, 40), &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.responses, 0);
    assert_eq!(
        s.errors.get(ErrorKind::Protocol).count,
        40,
        "{:?}",
        s.errors
    );
    let e = example(&r, ErrorKind::Protocol);
    assert!(
        e.contains("RST_STREAM") && e.contains("INTERNAL_ERROR"),
        "{e}"
    );
    assert_eq!(
        s.connections_opened, 2,
        "a reset stream leaves its connection up"
    );
}

#[test]
fn a_malformed_frame_is_a_protocol_error_naming_the_code_loadmark_sent() {
    let (addr, _) = server(Mode::MalformedSettings);
    let r = run(&h2_plan(addr, 1, 2, 10), &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.responses, 0);
    assert_eq!(s.errors.total(), 10, "{:?}", s.errors);
    let e = example(&r, ErrorKind::Protocol);
    // A SETTINGS payload that is not a multiple of 6 bytes is a FRAME_SIZE_ERROR
    // (RFC 9113 §6.5).
    assert!(
        e.contains("broke the HTTP/2 protocol") && e.contains("GOAWAY FRAME_SIZE_ERROR"),
        "{:?}",
        s.errors
    );
}

#[test]
fn an_upload_the_server_never_grants_window_for_times_out() {
    let (addr, _) = server(Mode::NoWindowUpdate);
    let mut p = h2_plan(addr, 1, 3, 3);
    p.request.method = "POST".into();
    // Above the 65,535-byte initial window: the rest waits for a WINDOW_UPDATE never sent.
    p.request.body = vec![b'x'; 200_000];
    p.timeouts.request = Duration::from_secs(1);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.get(ErrorKind::Timeout).count, 3, "{:?}", s.errors);
    assert_eq!(s.responses, 0);
}

#[test]
fn a_server_flooding_pings_and_reading_nothing_is_held_off_and_times_out() {
    let (addr, flooded) = server(Mode::PingFlood);
    let mut p = h2_plan(addr, 1, 1, 1);
    p.timeouts.request = Duration::from_secs(2);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.get(ErrorKind::Timeout).count, 1, "{:?}", s.errors);
    // The client stops reading once 1 MiB of PING ACKs wait to be written, so the server can
    // write only what that and the sockets' buffers hold (a few MiB), not two seconds' worth
    // of PINGs that the client would answer into its own memory.
    let sent = flooded.load(Ordering::SeqCst);
    assert!(sent < 32 << 20, "the server wrote {sent} bytes of PINGs");
}

#[test]
fn a_stream_limit_lowered_after_the_handshake_is_kept_and_reported() {
    let (addr, answered) = server(Mode::LowerLimit);
    let r = run(&h2_plan(addr, 1, 8, 100), &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 100);
    assert_eq!(settled_count(|| answered.load(Ordering::SeqCst), 100), 100);
    assert_eq!(r.http2_server_streams, Some(1));
}

#[test]
fn a_server_that_pings_before_every_answer_gets_its_acks() {
    let (addr, answered) = server(Mode::PingFirst);
    let r = run(&h2_plan(addr, 2, 4, 200), &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.responses, 200);
    // Each answer followed the ACK of its own PING.
    assert_eq!(settled_count(|| answered.load(Ordering::SeqCst), 200), 200);
}
