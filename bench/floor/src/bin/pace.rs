//! The open loop's floor: how late can the least a client does send requests due at a fixed
//! rate on this machine? (issue 43)
//!
//! One thread, pinned by the caller, that never sleeps: it spins on the clock, and each time a
//! request falls due it notes how late it noticed it (the schedule lag) and, given a URL,
//! sends a fixed `GET` on a free keep-alive connection of a fixed pool (64 by default; when
//! none is free the request waits its turn, first in first out, and goes out on the next
//! connection answered), reading answers, epoll-ready ones only, between due times. Nothing else: no timers, no
//! tasks, no recording but the lags. A spinning thread is late only when its CPU is taken
//! from it (another thread, an interrupt, or the host stealing the vCPU), and by a send's own
//! cost: what no client on this CPU can do better than.
//!
//! Usage: loadmark-floor-pace RATE SECONDS [URL [CONNECTIONS]]
//! Prints one JSON line: lag p50/p99/p99.9/max (µs), requests, connections opened, how many
//! requests waited for a connection and the most that waited at once, and the
//! spin loop's gaps: how many turns of the loop took over 100 µs (the CPU was away), for how
//! long in all, and the longest.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// A turn of the loop longer than this lost its CPU.
const GAP_US: u64 = 100;

struct Conn {
    stream: TcpStream,
    busy: bool,
    have: Vec<u8>,
}

fn fail(message: String) -> ! {
    eprintln!("loadmark-floor-pace: {message}");
    std::process::exit(2)
}

/// A whole response's length once its head is in `b` (Content-Length framing only).
fn whole(b: &[u8]) -> Option<usize> {
    let end = b.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&b[..end]).to_ascii_lowercase();
    if !head.starts_with("http/1.1 200 ") {
        fail(format!("not a 200: {:?}", head.lines().next()));
    }
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse::<usize>().unwrap_or_else(|_| fail("bad length".into())))
        .unwrap_or_else(|| fail("no Content-Length".into()));
    Some(end + length)
}

/// A new keep-alive connection, registered (edge-triggered would lose a read left short; level
/// is fine at one read per turn) with `epoll` under its index `i`.
fn connect(addr: std::net::SocketAddr, epoll: i32, i: usize) -> Conn {
    use std::os::fd::AsRawFd;
    let stream = TcpStream::connect(addr).unwrap_or_else(|e| fail(format!("connect: {e}")));
    stream.set_nodelay(true).unwrap();
    stream.set_nonblocking(true).unwrap();
    let mut event = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: i as u64,
    };
    if unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, stream.as_raw_fd(), &mut event) } != 0 {
        fail(format!("epoll_ctl: {}", std::io::Error::last_os_error()));
    }
    Conn {
        stream,
        busy: false,
        have: Vec::with_capacity(4096),
    }
}

fn send(c: &mut Conn, request: &[u8]) {
    c.stream
        .write_all(request)
        .unwrap_or_else(|e| fail(format!("send: {e}")));
    c.busy = true;
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() as f64 * p / 100.0).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        fail("usage: loadmark-floor-pace RATE SECONDS [URL [CONNECTIONS]]".into());
    }
    let rate: f64 = args[1].parse().unwrap_or_else(|_| fail("RATE: a number".into()));
    let seconds: f64 = args[2].parse().unwrap_or_else(|_| fail("SECONDS: a number".into()));
    let target = args.get(3).map(|url| {
        let rest = url
            .strip_prefix("http://")
            .unwrap_or_else(|| fail("only http:// URLs".into()));
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let path = if path.is_empty() { "/" } else { path };
        let addr = authority
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .unwrap_or_else(|| fail(format!("cannot resolve {authority}")));
        let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\n\r\n").into_bytes();
        (addr, request)
    });
    let preopen: usize = args.get(4).map_or(64, |n| n.parse().unwrap_or(64));
    let epoll = unsafe { libc::epoll_create1(0) };
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
    let mut conns: Vec<Conn> = match &target {
        Some((addr, _)) => (0..preopen).map(|i| connect(*addr, epoll, i)).collect(),
        None => Vec::new(),
    };
    // Free connections, last freed on top, and the requests due that wait for one.
    let mut free: Vec<usize> = (0..conns.len()).collect();
    let (mut waiting, mut waited, mut most_waiting) = (0u64, 0u64, 0u64);
    let opened_up_front = conns.len();

    let interval = Duration::from_secs_f64(1.0 / rate);
    let total = (rate * seconds) as u64;
    let mut lags = Vec::with_capacity(total as usize);
    let (mut gaps, mut gap_total, mut longest_gap) = (0u64, Duration::ZERO, Duration::ZERO);
    let mut responses = 0u64;
    let mut buf = [0u8; 16 * 1024];
    let start = Instant::now() + Duration::from_millis(10);
    let mut k = 0u64;
    let mut last_turn = Instant::now();
    while k < total {
        // A turn is one send, or reads of at most 64 ready connections: ~10-40 µs. One that
        // took longer lost its CPU (the host, an interrupt, the kernel's own work).
        let now = Instant::now();
        let gap = now - last_turn;
        last_turn = now;
        if gap > Duration::from_micros(GAP_US) {
            gaps += 1;
            gap_total += gap;
            longest_gap = longest_gap.max(gap);
        }
        let due = start + interval * k as u32;
        if now >= due {
            lags.push((now - due).as_micros() as u64);
            k += 1;
            if let Some((_, request)) = &target {
                match free.pop() {
                    Some(i) => send(&mut conns[i], request),
                    // The pool is fixed: a request with no free connection waits its turn,
                    // first in first out (its lag was taken above; the wait is service time).
                    None => {
                        waiting += 1;
                        most_waiting = most_waiting.max(waiting);
                    }
                }
            }
            continue;
        }
        // Only the connections with bytes waiting: a scan of every busy one would make a
        // turn's cost grow with the pool (issue 43's own trap).
        let ready = unsafe { libc::epoll_wait(epoll, events.as_mut_ptr(), 64, 0) };
        for e in &events[..ready.max(0) as usize] {
            let c = &mut conns[e.u64 as usize];
            match c.stream.read(&mut buf) {
                Ok(0) => fail("the server closed a connection".into()),
                Ok(n) => {
                    c.have.extend_from_slice(&buf[..n]);
                    if whole(&c.have).is_some_and(|len| c.have.len() >= len) {
                        c.have.clear();
                        c.busy = false;
                        responses += 1;
                        match (&target, waiting) {
                            (Some((_, request)), 1..) => {
                                waiting -= 1;
                                waited += 1;
                                send(c, request);
                            }
                            _ => free.push(e.u64 as usize),
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => fail(format!("recv: {e}")),
            }
        }
    }
    lags.sort_unstable();
    println!(
        "{{\"rate\":{rate},\"requests\":{},\"lag_p50_us\":{},\"lag_p99_us\":{},\"lag_p999_us\":{},\
         \"lag_max_us\":{},\"opened\":{},\"opened_up_front\":{opened_up_front},\"responses\":{responses},\"waited\":{waited},\"most_waiting\":{most_waiting},\
         \"gaps\":{gaps},\"gap_total_ms\":{:.3},\"longest_gap_us\":{}}}",
        lags.len(),
        percentile(&lags, 50.0),
        percentile(&lags, 99.0),
        percentile(&lags, 99.9),
        lags.last().copied().unwrap_or(0),
        conns.len(),
        gap_total.as_secs_f64() * 1e3,
        longest_gap.as_micros()
    );
}
