//! The floor: the cheapest keep-alive HTTP/1.1 client this machine allows, to tell how much of
//! a load generator's CPU per request is the kernel's share that every client pays.
//!
//! N connections, one fixed GET each, for D seconds. Every send and receive goes through one
//! io_uring (one `io_uring_enter` per turn, no epoll), responses are checked only for their
//! status line and Content-Length, nothing is recorded but a count. It is not a load
//! generator: no timeouts, no latency, no error classification (any error aborts).
//!
//! Usage: loadmark-floor URL CONNECTIONS SECONDS [BATCH | epoll]
//!   BATCH (default 1): a turn waits until BATCH completions are ready, or 100 µs have passed
//!   with at least one ready (IORING_ENTER min_wait): fewer sleeps and wake-ups per request,
//!   at the price of latency, which is why loadmark does not do it.
//!   `epoll`: the same client on epoll instead (edge-triggered, one `send` and one `recv` per
//!   request, one `epoll_wait` per turn): the floor of the readiness model loadmark and wrk use.
//!   `epoll-close`: the same with `Connection: close`, a new connection per request (`socket`,
//!   non-blocking `connect`, `epoll_ctl`, `send`, `recv`, `close`; IPv4 only).
//!   `epoll-pipeline16`: the epoll client pipelining, as wrk's pipeline script: 16 requests in
//!   one `send`, the next 16 once all 16 responses are in (responses of one URL are taken to
//!   be the same length, as nginx's `return` makes them).

use std::io::Write;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use io_uring::{opcode, types, IoUring};

const BUFFER: usize = 64 * 1024;

struct Conn {
    stream: TcpStream,
    buf: Box<[u8]>,
    /// The request waits for the handshake (epoll-close only; rare on loopback).
    unsent: bool,
    /// Bytes of the current response received so far, and its whole length once known.
    have: usize,
    need: Option<usize>,
}

fn fail(message: String) -> ! {
    eprintln!("loadmark-floor: {message}");
    std::process::exit(2)
}

/// The length of a whole response (head and Content-Length body) once its head is in `b`.
fn response_length(b: &[u8]) -> Option<usize> {
    let end = b.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&b[..end]).unwrap_or_else(|_| fail("non-UTF-8 head".into()));
    if !head.starts_with("HTTP/1.1 200 ") {
        fail(format!("not a 200: {:?}", head.lines().next()));
    }
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            if name.eq_ignore_ascii_case("content-length") {
                value.trim().parse::<usize>().ok()
            } else {
                None
            }
        })
        .unwrap_or_else(|| fail("no Content-Length".into()));
    Some(end + length)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        fail("usage: loadmark-floor URL CONNECTIONS SECONDS [BATCH]".into());
    }
    let rest = args[1]
        .strip_prefix("http://")
        .unwrap_or_else(|| fail("only http:// URLs".into()));
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let conns: usize = args[2]
        .parse()
        .unwrap_or_else(|_| fail("bad CONNECTIONS".into()));
    let secs: f64 = args[3]
        .parse()
        .unwrap_or_else(|_| fail("bad SECONDS".into()));
    let mode = args.get(4).map_or("1", |b| b.as_str());
    let depth = if mode == "epoll-pipeline16" { 16 } else { 1 };
    let close = if mode == "epoll-close" {
        "Connection: close\r\n"
    } else {
        ""
    };
    let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\n{close}\r\n").repeat(depth);
    let request = request.into_bytes();
    let addr = authority
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| fail(format!("cannot resolve {authority}")));

    let mut cs: Vec<Conn> = (0..conns)
        .map(|_| {
            let stream = TcpStream::connect(addr).unwrap_or_else(|e| fail(format!("connect: {e}")));
            stream.set_nodelay(true).unwrap();
            Conn {
                stream,
                buf: vec![0u8; BUFFER].into_boxed_slice(),
                have: 0,
                need: None,
                unsent: false,
            }
        })
        .collect();
    let (responses, elapsed, per_wait) = if mode == "epoll" {
        run_epoll(&mut cs, &request, secs, None)
    } else if mode == "epoll-pipeline16" {
        DEPTH.store(depth, std::sync::atomic::Ordering::Relaxed);
        let (batches, elapsed, per_wait) = run_epoll(&mut cs, &request, secs, None);
        (batches * depth as u64, elapsed, per_wait)
    } else if mode == "epoll-close" {
        let std::net::SocketAddr::V4(v4) = addr else {
            fail("epoll-close: IPv4 only".into())
        };
        let sa = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: v4.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(v4.ip().octets()),
            },
            sin_zero: [0; 8],
        };
        run_epoll(&mut cs, &request, secs, Some(sa))
    } else {
        let batch = mode
            .parse()
            .unwrap_or_else(|_| fail("bad BATCH (a number, or epoll)".into()));
        run_uring(&mut cs, &request, secs, batch)
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{responses} responses in {elapsed:.2}s, {:.0} req/s; {per_wait:.2} completions or \
         events per wait",
        responses as f64 / elapsed,
    );
}

/// Responses per request batch (16 when pipelining).
static DEPTH: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

/// Takes `got` bytes into `c`; true when its response (or batch of pipelined responses) is
/// complete (any error aborts).
fn take(c: &mut Conn, got: usize) -> bool {
    c.have += got;
    if c.need.is_none() {
        let depth = DEPTH.load(std::sync::atomic::Ordering::Relaxed);
        c.need = response_length(&c.buf[..c.have]).map(|n| n * depth);
    }
    match c.need {
        Some(n) if c.have >= n => {
            if c.have > n {
                fail("bytes after a response".into());
            }
            c.have = 0;
            c.need = None;
            true
        }
        _ if c.have == BUFFER => fail("response larger than the buffer".into()),
        _ => false,
    }
}

/// A new non-blocking socket connecting to `sa` (on loopback the handshake is done when
/// `connect` returns, though it says EINPROGRESS).
fn connect_nonblocking(sa: &libc::sockaddr_in) -> TcpStream {
    use std::os::fd::FromRawFd;
    // SAFETY: plain syscalls; the fd is owned by the TcpStream from here on.
    unsafe {
        let fd = libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            fail(format!("socket: {}", std::io::Error::last_os_error()));
        }
        let stream = TcpStream::from_raw_fd(fd);
        let rc = libc::connect(
            fd,
            (sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        let e = std::io::Error::last_os_error();
        if rc != 0 && e.raw_os_error() != Some(libc::EINPROGRESS) {
            fail(format!("connect: {e}"));
        }
        stream
    }
}

/// The epoll client: returns responses, seconds, events per `epoll_wait`. With `reconnect`,
/// each response is followed by a close and a new connection to that address.
fn run_epoll(
    cs: &mut [Conn],
    request: &[u8],
    secs: f64,
    reconnect: Option<libc::sockaddr_in>,
) -> (u64, f64, f64) {
    // SAFETY: plain syscalls on fds owned by `cs` and buffers that outlive each call.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        fail(format!(
            "epoll_create1: {}",
            std::io::Error::last_os_error()
        ));
    }
    // Sends the request; false when the handshake is still under way (then the socket is
    // also watched for writability and the request goes out when it is).
    let send = |c: &mut Conn, i: usize| -> bool {
        let n = unsafe {
            libc::send(
                c.stream.as_raw_fd(),
                request.as_ptr().cast(),
                request.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n == request.len() as isize {
            c.unsent = false;
            return true;
        }
        let e = std::io::Error::last_os_error();
        let waiting = matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::ENOTCONN));
        if n >= 0 || !waiting || c.unsent {
            fail(format!("send: {n} ({e})"));
        }
        c.unsent = true;
        watch(ep, c, i, libc::EPOLL_CTL_MOD, libc::EPOLLOUT);
        false
    };
    for (i, c) in cs.iter_mut().enumerate() {
        c.stream.set_nonblocking(true).unwrap();
        watch(ep, c, i, libc::EPOLL_CTL_ADD, 0);
        send(c, i);
    }
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    let (mut responses, mut waits, mut events, mut busy) = (0u64, 0u64, 0u64, cs.len());
    let mut ready = vec![libc::epoll_event { events: 0, u64: 0 }; cs.len().min(1024)];
    while busy > 0 {
        let n = unsafe { libc::epoll_wait(ep, ready.as_mut_ptr(), ready.len() as i32, 100) };
        if n < 0 {
            fail(format!("epoll_wait: {}", std::io::Error::last_os_error()));
        }
        waits += 1;
        events += n as u64;
        let stopping = Instant::now() >= end;
        for ev in &ready[..n as usize] {
            let i = ev.u64 as usize;
            let c = &mut cs[i];
            if c.unsent && !send(c, i) {
                continue;
            }
            // Edge-triggered: read until the socket is drained (a short read says so).
            loop {
                let free = &mut c.buf[c.have..];
                let got = unsafe {
                    libc::recv(
                        c.stream.as_raw_fd(),
                        free.as_mut_ptr().cast(),
                        free.len(),
                        0,
                    )
                };
                if got < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock
                {
                    break;
                }
                if got <= 0 {
                    fail(format!("receive: {got} (connection closed or failed)"));
                }
                let short = (got as usize) < free.len();
                if take(c, got as usize) {
                    responses += 1;
                    if stopping {
                        busy -= 1;
                    } else if let Some(sa) = &reconnect {
                        // Closes the old connection (the kernel forgets its epoll entry).
                        c.stream = connect_nonblocking(sa);
                        watch(ep, c, i, libc::EPOLL_CTL_ADD, 0);
                        send(c, i);
                        break;
                    } else {
                        send(c, i);
                    }
                }
                if short {
                    break;
                }
            }
        }
    }
    (
        responses,
        start.elapsed().as_secs_f64(),
        events as f64 / waits as f64,
    )
}

/// Registers (or changes) `c`'s socket in `ep`: readable, edge-triggered, plus `extra`.
fn watch(ep: i32, c: &Conn, i: usize, op: i32, extra: i32) {
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLET | extra) as u32,
        u64: i as u64,
    };
    // SAFETY: a valid epoll fd, a socket fd owned by `c`, an initialized event.
    if unsafe { libc::epoll_ctl(ep, op, c.stream.as_raw_fd(), &mut ev) } != 0 {
        fail(format!("epoll_ctl: {}", std::io::Error::last_os_error()));
    }
}

/// The io_uring client: returns responses, seconds, completions per `io_uring_enter`.
fn run_uring(cs: &mut [Conn], request: &[u8], secs: f64, batch: usize) -> (u64, f64, f64) {
    let conns = cs.len();
    let mut ring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build((2 * conns as u32).next_power_of_two().max(8))
        .unwrap_or_else(|e| fail(format!("io_uring: {e}")));

    // user data: connection index << 1, low bit 1 for a receive, 0 for a send.
    let queue = |ring: &mut IoUring, c: &mut Conn, i: usize, send: bool| {
        let fd = types::Fd(c.stream.as_raw_fd());
        let mut sq = ring.submission();
        // SAFETY: the request and the connection's buffer outlive every operation (the
        // connections live until main returns, after the last completion).
        unsafe {
            if send {
                let e = opcode::Send::new(fd, request.as_ptr(), request.len() as u32)
                    .build()
                    .user_data((i as u64) << 1);
                sq.push(&e)
                    .expect("the ring holds two entries per connection");
            }
            let free = &mut c.buf[c.have..];
            let e = opcode::Recv::new(fd, free.as_mut_ptr(), free.len() as u32)
                .build()
                .user_data(((i as u64) << 1) | 1);
            sq.push(&e)
                .expect("the ring holds two entries per connection");
        }
    };
    for (i, c) in cs.iter_mut().enumerate() {
        queue(&mut ring, c, i, true);
    }
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    let (mut responses, mut turns, mut completions, mut busy) = (0u64, 0u64, 0u64, conns);
    let ts = types::Timespec::from(Duration::from_millis(100));
    let args = types::SubmitArgs::new()
        .timespec(&ts)
        .min_wait_usec(if batch > 1 { 100 } else { 0 });
    while busy > 0 {
        let want = batch.min(busy);
        match ring.submitter().submit_with_args(want, &args) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(ETIME) => {}
            Err(e) => fail(format!("io_uring_enter: {e}")),
        }
        turns += 1;
        let stopping = Instant::now() >= end;
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        completions += done.len() as u64;
        for (data, res) in done {
            let i = (data >> 1) as usize;
            if data & 1 == 0 {
                if res != request.len() as i32 {
                    fail(format!("send: {res}"));
                }
                continue;
            }
            if res <= 0 {
                fail(format!("receive: {res} (connection closed or failed)"));
            }
            let c = &mut cs[i];
            if take(c, res as usize) {
                responses += 1;
                if stopping {
                    busy -= 1;
                } else {
                    queue(&mut ring, c, i, true);
                }
            } else {
                queue(&mut ring, c, i, false);
            }
        }
    }
    (
        responses,
        start.elapsed().as_secs_f64(),
        completions as f64 / turns as f64,
    )
}

/// ETIME (Linux): a turn's timeout passed with fewer completions than wanted (not an error).
const ETIME: i32 = 62;
