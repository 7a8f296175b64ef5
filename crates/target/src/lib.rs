//! The built-in target: a small, fast HTTP/1.1 server that loadmark benchmarks in its
//! quickstart, its tests and its benches, so a fresh machine needs nothing else to try
//! loadmark, and tests can compare loadmark's counts with the server's exact ones.
//!
//! ```
//! use std::io::{Read, Write};
//!
//! let server = loadmark_target::start(loadmark_target::ServerConfig {
//!     addr: ([127, 0, 0, 1], 0).into(), // port 0: any free port
//!     ..Default::default()
//! })
//! .unwrap();
//! let mut conn = std::net::TcpStream::connect(server.local_addr()).unwrap();
//! conn.write_all(b"GET /status HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
//! let mut reply = String::new();
//! conn.read_to_string(&mut reply).unwrap();
//! assert!(reply.starts_with("HTTP/1.1 200 OK") && reply.ends_with("\r\n\r\nOK"));
//! assert_eq!(server.requests_served(), 1);
//! server.shutdown();
//! ```
//!
//! # Endpoints
//! Every path takes any method; a HEAD response has no body.
//!
//! | path | answer |
//! |---|---|
//! | `/status` | 200, `OK`, `text/plain` |
//! | `/bytes/N` | 200, N bytes with `Content-Length` (N ≤ 100 MiB, else 400) |
//! | `/chunked/N` | 200, N bytes with `Transfer-Encoding: chunked`, 4 KiB per chunk |
//! | `/json` | 200, a ~100-byte JSON object, `application/json` |
//! | `/delay/MS` | 200 `OK` after MS milliseconds (MS ≤ 60000, else 400) |
//! | `/status/CODE` | that status (200..=599, else 400); no body for 204 and 304 |
//! | `/echo` | 200, the request body (≤ 16 MiB) with its `Content-Type` |
//! | `/close` | 200 `OK` with `Connection: close`, then the connection is closed |
//! | anything else | 404 with a hint listing the endpoints |
//!
//! With [`ServerConfig::stall`] set, requests arriving during the last `duration` of every
//! `every` (counted from start) are held until that window ends, whatever their path.
//!
//! # Design decisions
//! - **Its own threads and runtime.** [`start`] spawns OS threads with a private tokio
//!   runtime, so the server works the same from sync code, from tests, and beside loadmark's
//!   own event loops in one process (quickstart), and it never competes with the caller's
//!   runtime for a worker. The runtime is built on the server thread, never on the caller's,
//!   so starting or dropping it inside an async context cannot panic.
//! - **One thread means one current-thread runtime.** It is benchmarked against nginx with
//!   one worker; a current-thread runtime has no cross-thread wakeups. With more threads it
//!   uses tokio's work-stealing runtime, which keeps keep-alive connections balanced.
//! - **127.0.0.1 by default.** A load target should not be reachable from the network by
//!   accident.
//! - **Nothing per request that can be avoided.** Bodies are static slices of one shared
//!   buffer, the common endpoints answer without boxing a future, nothing is logged, and
//!   sockets are `TCP_NODELAY`.
//! - **Exact counters.** [`RunningServer::requests_served`] and
//!   [`RunningServer::connections_accepted`] are shared atomics, so tests can assert exact
//!   counts; the price is one contended cache line when several threads serve.
//! - **Fails before returning.** [`start`] returns only once the socket is bound, so port 0
//!   works, [`RunningServer::local_addr`] is real, and a port in use is an error, not a
//!   message on another thread.

mod body;
mod routes;
mod server;
mod stall;
mod ws;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

pub use routes::{MAX_BODY_BYTES, MAX_DELAY, MAX_ECHO_BYTES};
use server::Counters;
pub use stall::Stall;
pub use ws::MAX_WS_MESSAGE_BYTES;

/// Where and how to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerConfig {
    /// Default 127.0.0.1:8080; port 0 picks a free port (read it from
    /// [`RunningServer::local_addr`]).
    pub addr: SocketAddr,
    /// Worker threads, at least 1. Default 1: one event loop on one OS thread.
    pub threads: usize,
    /// Scheduled freezes, to show coordinated omission; default none.
    pub stall: Option<Stall>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: ([127, 0, 0, 1], 8080).into(),
            threads: 1,
            stall: None,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound: another process listens on the port (pick another
    /// port, or port 0 for any free one, or stop the other server), the address is not one
    /// of this machine's, a port below 1024 needs privileges, or file descriptors ran out.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The server's thread or tokio runtime could not be created, usually because the
    /// process ran out of memory, threads or file descriptors: raise `ulimit -n` / `-u`, or
    /// ask for fewer threads.
    #[error("cannot start the server runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// `threads` was 0: a server needs at least one thread to serve on. Pass 1 or more.
    #[error("the server needs at least one thread, got 0")]
    NoThreads,
    /// The stall's duration was zero or not shorter than its period, so the server would
    /// never freeze or never thaw. Pick a duration between zero and `every`, e.g. 1 s of 5 s.
    #[error("a stall of {:?} every {:?} must last more than zero and less than its period", .0.duration, .0.every)]
    InvalidStall(Stall),
}

/// A running server. [`RunningServer::shutdown`] or dropping it stops accepting, closes every
/// open connection (cancelling any `/delay` in progress) and joins the server's threads.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    counters: Arc<Counters>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl RunningServer {
    /// The bound address, with the real port when the config asked for port 0.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Responses handed to hyper so far, one per request, every path and status. Exact:
    /// once a client has read a response, it is counted.
    pub fn requests_served(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }

    /// Connections accepted so far. Exact; keep-alive requests on one connection count once.
    pub fn connections_accepted(&self) -> u64 {
        self.counters.accepts.load(Ordering::Relaxed)
    }

    /// WebSocket sessions opened so far: valid handshakes on a `/ws/` endpoint answered with
    /// 101. Counted when the 101 is handed to hyper (also in [`Self::requests_served`]), so
    /// a client that has read its 101 sees its session counted. Exact.
    pub fn ws_sessions(&self) -> u64 {
        self.counters.ws_sessions.load(Ordering::Relaxed)
    }

    /// WebSocket data messages (text and binary, not pings, pongs or Close) the server has
    /// read and answered, over every session. Exact: counted before the answer is written,
    /// so once a client has read the answer to a message, that message is counted. Messages
    /// that arrive after `/ws/close-after/N` or `/ws/drop-after/N` reached N are discarded
    /// unanswered and not counted, so this always equals [`Self::ws_messages_sent`].
    pub fn ws_messages_received(&self) -> u64 {
        self.counters.ws_received.load(Ordering::Relaxed)
    }

    /// WebSocket data messages the server has sent (echoes and `/ws/json` replies; not
    /// pongs or Close frames). Counted as each one is handed to the socket's write buffer,
    /// before the client can read it; one that a connection failing at that moment never
    /// delivers is still counted.
    pub fn ws_messages_sent(&self) -> u64 {
        self.counters.ws_sent.load(Ordering::Relaxed)
    }

    /// Payload bytes of the data messages counted by [`Self::ws_messages_received`]: the
    /// messages' own bytes, without frame headers or masks.
    pub fn ws_bytes_received(&self) -> u64 {
        self.counters.ws_bytes_received.load(Ordering::Relaxed)
    }

    /// Stops the server and waits for its threads; see [`RunningServer`].
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts the server on its own OS threads with its own tokio runtime; returns once the
/// socket is bound and listening, so connections made after it returns are served.
pub fn start(config: ServerConfig) -> Result<RunningServer, ServeError> {
    if config.threads == 0 {
        return Err(ServeError::NoThreads);
    }
    if let Some(stall) = config.stall.filter(|s| !s.is_valid()) {
        return Err(ServeError::InvalidStall(stall));
    }
    let counters = Arc::new(Counters::default());
    let (ready_tx, ready_rx) = mpsc::channel();
    let (shutdown_tx, shutdown_rx) = oneshot::channel();
    let thread_counters = counters.clone();
    let thread = std::thread::Builder::new()
        .name("loadmark-target".into())
        .spawn(move || server::run(config, thread_counters, ready_tx, shutdown_rx))
        .map_err(ServeError::Runtime)?;
    let ready = ready_rx.recv().unwrap_or_else(|_| {
        Err(ServeError::Runtime(std::io::Error::other(
            "the server thread ended before it was ready",
        )))
    });
    let mut server = RunningServer {
        addr: config.addr,
        counters,
        shutdown: Some(shutdown_tx),
        thread: Some(thread),
    };
    match ready {
        Ok(addr) => {
            server.addr = addr;
            Ok(server)
        }
        // Dropping `server` joins the thread, which has already given up.
        Err(e) => Err(e),
    }
}
