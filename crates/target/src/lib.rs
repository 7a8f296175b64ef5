//! The built-in target: a small, fast HTTP/1.1 and WebSocket server that loadmark benchmarks in its
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
//! | `/flaky/N/K` | 200 JSON: `{"ok":false,"items":[]}` when K is a multiple of N, else `{"ok":true,"items":[...3 ids]}` (checks find the wrong bodies) |
//! | `POST /login` | body `{"user":"NAME"}`: 200 `{"token":"..."}` and `Set-Cookie: session=TOKEN`; 400 without a user |
//! | `/items` | with `Authorization: Bearer TOKEN` (from `/login`): 200 `{"items":[{"id":1,"name":"item 1"},...]}` (ids 1-10); 401 without a valid token (counted: [`RunningServer::auth_failures`]) |
//! | `/items/ID` | with the token: 200 `{"id":ID,"name":...,"price":...}`, 404 for an unknown id; 401 without it |
//! | `/me` | with `Cookie: session=TOKEN` (from `/login`): 200 `{"user":"NAME"}`; 403 without a valid one, or (`/me?user=NAME`) with another user's (counted: [`RunningServer::cookie_failures`]) |
//! | `POST /logout` | 200 and `Set-Cookie: session=; Max-Age=0` (deletes the session cookie) |
//! | `/relay?url=URL` | what a GET of the loopback `http://` URL answers (status, type, body ≤ 16 MiB; 502 if it fails; one kept-alive backend connection per client connection) |
//! | `/ws/echo` | WebSocket: every text or binary message back, same opcode and payload |
//! | `/ws/json` | WebSocket: one JSON reply per JSON request (below) |
//! | `/ws/close-after/N` | WebSocket: echoes N messages, then Close 1001 with a reason |
//! | `/ws/drop-after/N` | WebSocket: echoes N messages, then ends TCP without a Close frame |
//! | anything else | 404 with a hint listing the endpoints |
//!
//! # WebSocket endpoints
//! A valid handshake (GET over HTTP/1.1, `Connection: Upgrade`, `Upgrade: websocket`,
//! `Sec-WebSocket-Version: 13`, a 16-byte `Sec-WebSocket-Key`) on a `/ws/` endpoint gets
//! `101 Switching Protocols` with its `Sec-WebSocket-Accept`; no subprotocol or extension
//! (no compression) is negotiated. A `/ws/` endpoint asked without a valid handshake gets
//! `426 Upgrade Required` with a one-line hint; an unknown `/ws/` path gets 404, and a bad N
//! 400. A handshake on any other path gets that path's usual answer (200 `OK` for
//! `/status`): clients use it to test "the server did not switch protocols".
//!
//! A client must wait for the 101 before it sends frames (RFC 6455 §4.1); one that sends
//! them along with its handshake is disconnected without an answer (hyper, which holds a
//! response back while more request bytes are buffered, would otherwise lose the 101).
//!
//! In every session pings get a pong with the same payload, a client's Close gets a Close
//! with the same code and reason and then the server ends the TCP connection, and a message
//! (or frame) over [`MAX_WS_MESSAGE_BYTES`] (16 MiB) ends the session with Close 1009, as
//! does a protocol violation with Close 1002.
//! - `/ws/json`: each message (text, or binary parsed the same way) is one request; the reply
//!   is one text message `{"id":ID,"ok":true,"bytes":LEN}`, where ID is the request's `"id"`
//!   value copied verbatim (any JSON value, its spelling and spacing kept; the field is left
//!   out when the request has no `"id"`) and LEN the request's payload length in bytes. A
//!   payload that is not JSON gets `{"ok":false,"error":"not json"}`, valid JSON that is not
//!   an object `{"ok":false,"error":"not an object"}`.
//! - `/ws/close-after/N`: after echoing N messages (at once for N = 0) the server sends
//!   Close 1001 with the reason `closing after N messages`, discards any message still
//!   arriving, waits up to 2 s for the client's Close, and ends the connection.
//! - `/ws/drop-after/N`: after echoing N messages the server ends its side of TCP (FIN)
//!   without a Close frame; whatever the client still sends is read and discarded, unparsed,
//!   until it closes too (at most 2 s), so the server's FIN never turns into a reset that
//!   would destroy echoes the client has not read yet.
//!
//! With [`ServerConfig::capacity`] set, every request goes through one first-come-first-served
//! queue served at exactly N requests per second, and one that would wait longer than the
//! queue bound is answered 503 at once (see [`Capacity`]): a server whose capacity is
//! known, for testing `loadmark find`.
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
//! - **Exact counters.** [`RunningServer::requests_served`],
//!   [`RunningServer::connections_accepted`] and the `ws_*` counters are shared atomics, so
//!   tests can assert exact counts; the price is one contended cache line when several
//!   threads serve. Each is bumped before the answer it counts can reach the socket, so a
//!   client that has read an answer sees it counted.
//! - **WebSocket by a second implementation.** hyper answers the handshake (the accept key
//!   from tungstenite's `derive_accept_key`) and hands the socket over
//!   (`serve_connection(..).with_upgrades()`, which costs a plain request nothing); the
//!   session is then tokio-tungstenite's, on the server's own runtime. It shares no code with
//!   loadmark's client codec, so the client's tests against it are interop tests.
//! - **Sessions batch their writes.** Replies go to tungstenite's write buffer and are
//!   flushed only when no further message is already waiting to be read, so a pipelining
//!   client gets many replies per `write`. Echoes move the received payload back out without
//!   a copy; `/ws/json` writes its replies into one reused buffer. The socket is taken back
//!   from hyper's boxed `Upgraded` so reads and writes are direct.
//! - **Fails before returning.** [`start`] returns only once the socket is bound, so port 0
//!   works, [`RunningServer::local_addr`] is real, and a port in use is an error, not a
//!   message on another thread.

mod body;
mod capacity;
mod grpc;
mod http3;
mod journey;
mod listeners;
mod relay;
mod routes;
mod server;
mod stall;
mod ws;

pub use journey::{token_for, ITEMS};

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

pub use capacity::Capacity;
pub use relay::{MAX_RELAY_BYTES, RELAY_TIMEOUT};
pub use routes::{MAX_BODY_BYTES, MAX_DELAY, MAX_ECHO_BYTES};
use server::Counters;
pub use stall::Stall;
pub use ws::MAX_WS_MESSAGE_BYTES;

/// What a request tagged by loadmark said about itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tag {
    /// Its number in the whole run (`X-Loadmark-Seq`).
    pub seq: u64,
    /// The segment that sent it (`X-Loadmark-Segment`), when given.
    pub segment: Option<u32>,
    /// The request's path (which request of a mix, which data row).
    pub path: String,
    /// Its method, and its headers (names lower-case) in arrival order: tests of request
    /// scripts check from the server's side what a script sent.
    pub method: String,
    pub headers: Vec<(String, String)>,
}

/// Where and how to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Default 127.0.0.1:8080; port 0 picks a free port (read it from
    /// [`RunningServer::local_addr`]).
    pub addr: SocketAddr,
    /// Worker threads, at least 1. Default 1: one event loop on one OS thread.
    pub threads: usize,
    /// Scheduled freezes, to show coordinated omission; default none.
    pub stall: Option<Stall>,
    /// Serve HTTP/2 too: a connection that opens with the HTTP/2 preface is h2c with prior
    /// knowledge, any other HTTP/1.1 (hyper-util's auto builder). Default false: the
    /// HTTP/1.1-only path, which does not look for the preface.
    pub http2: bool,
    /// Bind with SO_REUSEPORT too (Unix), so a port held bound (not listening) with
    /// SO_REUSEPORT by whoever chose it can be taken over; default false.
    pub reuse_port: bool,
    /// TLS on the TCP port with a self-signed certificate generated at start (for
    /// 127.0.0.1, ::1 and localhost; [`RunningServer::tls_cert_pem`] gives it to clients),
    /// offering h2 with ALPN when `http2` is set. Default false.
    pub tls: bool,
    /// With `tls`: HTTP/3 too, over QUIC on the UDP port of the same number (as Caddy), with
    /// the same certificate and ALPN `h3`. Default false.
    pub http3: bool,
    /// Also listen on this Unix domain socket (same endpoints, same protocols as the TCP
    /// port, without TLS); the file must not exist and is removed when the server stops.
    pub unix_socket: Option<std::path::PathBuf>,
    /// Serve at most this many requests per second through one bounded queue (see
    /// [`Capacity`]): a server whose capacity is known, for capacity searches. Default none.
    pub capacity: Option<Capacity>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: ([127, 0, 0, 1], 8080).into(),
            threads: 1,
            stall: None,
            http2: false,
            reuse_port: false,
            tls: false,
            http3: false,
            unix_socket: None,
            capacity: None,
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
    /// The Unix socket could not be bound: the file exists (another server, or one that
    /// did not stop cleanly: remove it), or its directory is missing or not writable.
    #[error("cannot listen on the Unix socket {}: {source}", path.display())]
    BindUnix {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The UDP port for `http3` could not be bound: another process uses that UDP port
    /// (HTTP/3 takes the TCP port's number), or the address is not this machine's.
    #[error("cannot listen for HTTP/3 on UDP {addr}: {source}")]
    BindUdp {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// `http3` without `tls`: QUIC always runs TLS 1.3. Add `--tls`.
    #[error("HTTP/3 needs TLS (QUIC always encrypts): add --tls")]
    Http3NeedsTls,
    /// The self-signed certificate for `tls` could not be made.
    #[error("cannot set up TLS: {0}")]
    Tls(String),
    /// The stall's duration was zero or not shorter than its period, so the server would
    /// never freeze or never thaw. Pick a duration between zero and `every`, e.g. 1 s of 5 s.
    #[error("a stall of {:?} every {:?} must last more than zero and less than its period", .0.duration, .0.every)]
    InvalidStall(Stall),
    /// The capacity's rate was not a positive number (at most 10⁹ requests per second).
    #[error("a capacity of {} requests per second: it must be above 0 and at most 10^9", .0.rate)]
    InvalidCapacity(Capacity),
}

/// A running server. [`RunningServer::shutdown`] or dropping it stops accepting, closes every
/// open connection (cancelling any `/delay` in progress) and joins the server's threads.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    tls_cert_pem: Option<String>,
    counters: Arc<Counters>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl RunningServer {
    /// The bound address, with the real port when the config asked for port 0.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// With `tls`: the server's self-signed certificate, PEM, for a client's `--cacert`.
    pub fn tls_cert_pem(&self) -> Option<&str> {
        self.tls_cert_pem.as_deref()
    }

    /// Responses handed to hyper so far, one per request, every path and status. Exact:
    /// once a client has read a response, it is counted.
    pub fn requests_served(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }

    /// Requests that arrived over HTTP/2, every path and status (also counted in
    /// [`Self::requests_served`]): proof that a client really spoke HTTP/2. Exact.
    pub fn http2_requests(&self) -> u64 {
        self.counters.http2_requests.load(Ordering::Relaxed)
    }

    /// Requests answered over HTTP/3 (`http3`), counted with [`Self::requests_served`] too.
    pub fn http3_requests(&self) -> u64 {
        self.counters.http3_requests.load(Ordering::Relaxed)
    }

    /// QUIC connections that resumed a TLS session with a ticket this server issued (each
    /// ticket is taken once): the client's 0-RTT connections that were accepted.
    pub fn quic_resumptions(&self) -> u64 {
        self.counters.quic_resumed.load(Ordering::Relaxed)
    }

    /// `/items` requests refused (401) for a missing or wrong `Authorization: Bearer`
    /// token (issue 17): a journey that carries its login's token keeps this at 0. Exact.
    pub fn auth_failures(&self) -> u64 {
        self.counters.auth_failures.load(Ordering::Relaxed)
    }

    /// `POST /login` requests answered (with a token, or 400 without a user). Exact once
    /// the client has read the answer.
    pub fn logins(&self) -> u64 {
        self.counters.logins.load(Ordering::Relaxed)
    }

    /// `/me` requests refused (403) for a missing or wrong `session` cookie (issue 17): a
    /// scenario with `load.cookies` that logged in keeps this at 0. Exact.
    pub fn cookie_failures(&self) -> u64 {
        self.counters.cookie_failures.load(Ordering::Relaxed)
    }

    /// Users who logged in (`POST /login` with a user), by name, with their login count.
    pub fn login_users(&self) -> std::collections::BTreeMap<String, u64> {
        self.counters
            .login_users
            .lock()
            .expect("login users")
            .clone()
    }

    /// Connections accepted so far. Exact; keep-alive requests on one connection count once.
    pub fn connections_accepted(&self) -> u64 {
        self.counters.accepts.load(Ordering::Relaxed)
    }

    /// gRPC calls to `loadmark.target.Target` (not counting reflection), request messages
    /// read whole and response messages sent, and `Stream` calls the client cancelled.
    pub fn grpc_calls(&self) -> u64 {
        self.counters.grpc_calls.load(Ordering::Relaxed)
    }

    pub fn grpc_messages_received(&self) -> u64 {
        self.counters.grpc_messages_received.load(Ordering::Relaxed)
    }

    pub fn grpc_messages_sent(&self) -> u64 {
        self.counters.grpc_messages_sent.load(Ordering::Relaxed)
    }

    pub fn grpc_cancelled(&self) -> u64 {
        self.counters.grpc_cancelled.load(Ordering::Relaxed)
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

    /// `/ws/json` replies that carried an error status (a request's `"status"` of 400 or
    /// more): what a client's reply checks must count as failed. Exact, counted before the
    /// reply is written.
    pub fn ws_error_replies(&self) -> u64 {
        self.counters.ws_error_replies.load(Ordering::Relaxed)
    }

    /// From now on, keeps the `X-Loadmark-Seq` and `X-Loadmark-Segment` headers of every
    /// request that has them (`loadmark run --tag-requests` sends them), so a test can check
    /// from the server's side which requests arrived and from which segment. Memory grows by
    /// one [`Tag`] per such request: meant for bounded test runs.
    pub fn record_tags(&self) {
        self.counters.recording.store(true, Ordering::Relaxed);
    }

    /// The tags recorded so far (see [`Self::record_tags`]), in arrival order. Recorded as
    /// each request arrives, before its answer is written.
    pub fn tags(&self) -> Vec<Tag> {
        self.counters.tags.lock().expect("tag list").clone()
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
    if config.http3 && !config.tls {
        return Err(ServeError::Http3NeedsTls);
    }
    if let Some(stall) = config.stall.filter(|s| !s.is_valid()) {
        return Err(ServeError::InvalidStall(stall));
    }
    if let Some(capacity) = config.capacity.filter(|c| !c.is_valid()) {
        return Err(ServeError::InvalidCapacity(capacity));
    }
    let counters = Arc::new(Counters {
        capacity: config.capacity.map(capacity::Gate::new),
        ..Counters::default()
    });
    let (ready_tx, ready_rx) = mpsc::channel();
    let (shutdown_tx, shutdown_rx) = oneshot::channel();
    let thread_counters = counters.clone();
    let addr = config.addr;
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
        addr,
        tls_cert_pem: None,
        counters,
        shutdown: Some(shutdown_tx),
        thread: Some(thread),
    };
    match ready {
        Ok((addr, pem)) => {
            server.addr = addr;
            server.tls_cert_pem = pem;
            Ok(server)
        }
        // Dropping `server` joins the thread, which has already given up.
        Err(e) => Err(e),
    }
}
