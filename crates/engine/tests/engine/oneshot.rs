//! `Connection: close` over plain TCP (`oneshot.rs`, issue 20): the request's own `send`
//! confirms a loopback handshake, so the connect's outcome must still be told apart from the
//! request's, over real sockets:
//!
//! - a refused connect is a connect error, found by the first write, and opens no connection;
//! - a handshake the listener holds up (its accept queue full: the SYN is dropped and sent
//!   again a second later) is connect time, not the request's latency;
//! - a handshake that never completes ends at --connect-timeout as a connect error.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::FromRawFd;
use std::time::{Duration, Instant};

use crate::common::{ok_response, plan};
use loadmark_engine::{run, RunResult, StopHandle};
use loadmark_metrics::ErrorKind;
use loadmark_plan::{Plan, Stop};

fn close_mode(url: &str, requests: u64) -> Plan {
    let mut p = plan(url, 1, 1, Stop::Requests(requests));
    p.request.keep_alive = false;
    p.timeouts.request = Duration::from_secs(5);
    p.timeouts.connect = Duration::from_secs(5);
    p
}

fn run_plan(p: &Plan) -> RunResult {
    run(p, &StopHandle::new(), |_| {}).unwrap()
}

/// A loopback socket bound to a port of its own and not listening, and the port.
fn bound_not_listening() -> (std::os::fd::OwnedFd, u16) {
    // SAFETY: plain syscalls on a new socket that the OwnedFd then owns.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let owned = std::os::fd::OwnedFd::from_raw_fd(fd);
        let mut addr = loopback_any_port();
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        assert_eq!(
            libc::bind(fd, &addr as *const _ as *const libc::sockaddr, len),
            0
        );
        assert_eq!(
            libc::getsockname(fd, &mut addr as *mut _ as *mut libc::sockaddr, &mut len),
            0
        );
        (owned, u16::from_be(addr.sin_port))
    }
}

fn loopback_any_port() -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        },
        sin_zero: [0; 8],
    }
}

/// A listener whose accept queue holds one connection (backlog 0), already taken by a
/// connection nobody accepts: the kernel drops further SYNs while it is full.
fn full_listener() -> (TcpListener, TcpStream) {
    // SAFETY: plain syscalls on a new socket that the TcpListener then owns.
    let listener = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let listener = TcpListener::from_raw_fd(fd);
        let addr = loopback_any_port();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        assert_eq!(
            libc::bind(fd, &addr as *const _ as *const libc::sockaddr, len),
            0
        );
        assert_eq!(libc::listen(fd, 0), 0);
        listener
    };
    let filler = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    (listener, filler)
}

/// A socket of this machine is connecting to `port` on loopback (SYN_SENT in /proc/net/tcp).
fn syn_sent_to(port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let remote = format!("0100007F:{port:04X}");
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.len() > 3 && fields[2] == remote && fields[3] == "02"
    })
}

#[test]
fn a_refused_connect_is_a_connect_error_and_opens_no_connection() {
    // Bound without listening: connects are refused, and no other test can take the port.
    let (_bound, port) = bound_not_listening();
    let r = run_plan(&close_mode(&format!("http://127.0.0.1:{port}/"), 50));
    let s = &r.totals.snapshot;
    let connect = s.errors.get(ErrorKind::Connect);
    assert_eq!(
        (s.responses, connect.count, s.errors.total()),
        (0, 50, 50),
        "{:?}",
        s.errors
    );
    let example = connect.first_example.as_deref().unwrap_or_default();
    assert!(
        example.contains(&format!("connect to 127.0.0.1:{port}")) && example.contains("refused"),
        "{example}"
    );
    assert_eq!(s.connections_opened, 0);
}

#[test]
fn a_handshake_the_listener_holds_up_is_connect_time_not_latency() {
    let (listener, filler) = full_listener();
    let addr: SocketAddr = listener.local_addr().unwrap();
    // Starts accepting (and answering) only once loadmark's connect is under way, its SYN
    // dropped (on loopback that happens inside `connect(2)`); the kernel sends it again after
    // its initial retransmission timeout (1 s).
    let server = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !syn_sent_to(addr.port()) {
            assert!(Instant::now() < deadline, "loadmark never connected");
            std::thread::sleep(Duration::from_millis(5));
        }
        let _filler_seen = listener.accept().unwrap();
        let (mut conn, _) = listener.accept().unwrap();
        let mut request = [0u8; 1024];
        let mut got = 0;
        while !request[..got].windows(4).any(|w| w == b"\r\n\r\n") {
            got += conn.read(&mut request[got..]).unwrap();
        }
        conn.write_all(&ok_response(b"late")).unwrap();
    });
    let r = run_plan(&close_mode(&format!("http://{addr}/"), 1));
    server.join().unwrap();
    drop(filler);
    let s = &r.totals.snapshot;
    assert_eq!((s.responses, s.errors.total()), (1, 0), "{:?}", s.errors);
    assert_eq!(s.connections_opened, 1);
    let connect = Duration::from_micros(s.connect.max());
    let latency = Duration::from_micros(s.latency.max());
    assert!(connect >= Duration::from_millis(700), "connect {connect:?}");
    assert!(
        latency < Duration::from_millis(500),
        "latency {latency:?} (connect {connect:?})"
    );
}

#[test]
fn a_handshake_that_never_completes_ends_at_the_connect_timeout() {
    let (listener, filler) = full_listener();
    let mut p = close_mode(&format!("http://{}/", listener.local_addr().unwrap()), 1);
    p.timeouts.connect = Duration::from_millis(300);
    let r = run_plan(&p);
    drop((listener, filler));
    // Ended by --connect-timeout, not by the request's 5 s --timeout.
    assert!(r.elapsed < Duration::from_secs(4), "{:?}", r.elapsed);
    let s = &r.totals.snapshot;
    let connect = s.errors.get(ErrorKind::Connect);
    assert_eq!((s.responses, connect.count), (0, 1), "{:?}", s.errors);
    let example = connect.first_example.as_deref().unwrap_or_default();
    assert!(example.contains("--connect-timeout"), "{example}");
    assert_eq!(s.connections_opened, 0);
}
