//! The server thread: its runtime, its listener, the accept loop and the hyper service.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::oneshot;

use crate::body::ResponseBody;
use crate::listeners;
use crate::relay;
use crate::routes::{self, Routed};
use crate::ws;
use crate::{ServeError, ServerConfig, Stall};

/// Pending connections the kernel may queue (it caps this at `net.core.somaxconn`). std's
/// default of 128 makes a benchmark that opens a thousand connections at once see SYN
/// retries, which show up as one-second connect latencies that are not the target's fault.
const BACKLOG: u32 = 1024;

/// How long to wait before accepting again after an error such as EMFILE, which would
/// otherwise spin the accept loop at full CPU until a descriptor frees up.
pub(crate) const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Exact counts, shared by every connection task.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub requests: AtomicU64,
    pub http2_requests: AtomicU64,
    /// Requests answered over HTTP/3 (QUIC, `crate::h3`).
    pub http3_requests: AtomicU64,
    /// QUIC connections that resumed a TLS session (a ticket taken: 0-RTT when the client
    /// sent early data).
    pub quic_resumed: std::sync::Arc<AtomicU64>,
    pub accepts: AtomicU64,
    pub ws_sessions: AtomicU64,
    pub ws_received: AtomicU64,
    pub ws_sent: AtomicU64,
    pub ws_bytes_received: AtomicU64,
    /// `/ws/json` replies that carry an error status (`"ok":false`).
    pub ws_error_replies: AtomicU64,
    /// `/items` requests answered 401: a missing or wrong token (issue 17).
    pub auth_failures: AtomicU64,
    /// `POST /login` requests answered.
    pub logins: AtomicU64,
    /// `/login`s by user name (issue 17: which data rows a scenario sent).
    pub login_users: std::sync::Mutex<std::collections::BTreeMap<String, u64>>,
    /// `/me` requests answered 403: a missing or wrong session cookie.
    pub cookie_failures: AtomicU64,
    /// Set by [`crate::RunningServer::record_tags`]: keep each request's loadmark tags.
    pub recording: std::sync::atomic::AtomicBool,
    pub tags: std::sync::Mutex<Vec<crate::Tag>>,
    /// gRPC calls to `loadmark.target.Target` (reflection calls are not counted), their
    /// request messages read and response messages sent, and `Stream` calls the client
    /// cancelled before their last message.
    pub grpc_calls: AtomicU64,
    pub grpc_messages_received: AtomicU64,
    pub grpc_messages_sent: AtomicU64,
    pub grpc_cancelled: AtomicU64,
    /// `--capacity`: the one queue every request goes through (shared like the counters).
    pub capacity: Option<crate::capacity::Gate>,
}

/// Keeps the `X-Loadmark-Seq` and `X-Loadmark-Segment` headers of a request, when present.
pub(crate) fn record_tag<B>(req: &Request<B>, counters: &Counters) {
    let number = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    if let Some(seq) = number("x-loadmark-seq") {
        let segment = number("x-loadmark-segment").map(|s| s as u32);
        counters.tags.lock().expect("tag list").push(crate::Tag {
            seq,
            segment,
            path: req.uri().path().to_string(),
            method: req.method().to_string(),
            headers: req
                .headers()
                .iter()
                .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                .collect(),
        });
    }
}

/// Body of the server thread: builds the runtime, binds, reports the bound address (or why
/// it failed) on `ready`, then serves until `shutdown` fires or its sender is dropped.
/// Returning drops the runtime, which cancels every connection task and closes the listener.
pub(crate) fn run(
    config: ServerConfig,
    counters: Arc<Counters>,
    ready: mpsc::Sender<Result<(SocketAddr, Option<String>), ServeError>>,
    shutdown: oneshot::Receiver<()>,
) {
    let addr = config.addr;
    let reuse_port = config.reuse_port;
    let runtime = match runtime(config.threads) {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(ServeError::Runtime(e)));
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match listen(addr, reuse_port) {
            Ok(l) => l,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let local = match listener.local_addr() {
            Ok(a) => a,
            Err(source) => {
                let _ = ready.send(Err(ServeError::Bind { addr, source }));
                return;
            }
        };
        let tls = match (config.tls).then(|| {
            listeners::self_signed(config.http2, config.http3, counters.quic_resumed.clone())
        }) {
            Some(Err(e)) => {
                let _ = ready.send(Err(ServeError::Tls(e)));
                return;
            }
            Some(Ok(pair)) => Some(pair),
            None => None,
        };
        let unix = match config.unix_socket.as_deref().map(listeners::bind_unix) {
            Some(Err(e)) => {
                let _ = ready.send(Err(e));
                return;
            }
            Some(Ok(l)) => Some(l),
            None => None,
        };
        // Removed when the server stops (this block returns).
        let _socket_file = listeners::SocketFile(config.unix_socket.clone());
        // A stall schedule counts from the moment the server can be reached.
        let stall = config.stall.map(|stall| (stall, Instant::now()));
        let serving = listeners::Serving {
            counters: counters.clone(),
            stall,
            http2: config.http2,
        };
        let pem = tls.as_ref().map(|certified| certified.pem.clone());
        // HTTP/3 on UDP, on the TLS listener's address and port.
        if let Some(quic) = tls.as_ref().and_then(|certified| certified.quic.clone()) {
            match crate::http3::bind(local, quic) {
                Ok(endpoint) => {
                    tokio::spawn(crate::http3::accept(endpoint, counters.clone(), stall));
                }
                Err(source) => {
                    let _ = ready.send(Err(ServeError::BindUdp {
                        addr: local,
                        source,
                    }));
                    return;
                }
            }
        }
        if let Some(unix) = unix {
            tokio::spawn(listeners::accept_unix(unix, serving.clone()));
        }
        // Spawned rather than awaited here so that, on a multi-thread runtime, the accept
        // loop runs on a worker and new connections land on workers' local queues.
        match tls {
            Some(certified) => {
                let acceptor = certified.acceptor;
                tokio::spawn(listeners::accept_tls(listener, acceptor, serving));
            }
            None if config.http2 => {
                tokio::spawn(listeners::accept_auto(listener, serving));
            }
            None => {
                tokio::spawn(accept_loop(listener, counters, stall));
            }
        }
        let _ = ready.send(Ok((local, pem)));
        let _ = shutdown.await;
    });
}

/// One thread: a current-thread runtime, no cross-thread wakeups or work stealing, which is
/// what makes the one-core number competitive. More: tokio's work-stealing runtime, which
/// keeps long keep-alive connections spread over the workers.
fn runtime(threads: usize) -> io::Result<tokio::runtime::Runtime> {
    if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("loadmark-target-worker")
            .enable_all()
            .build()
    }
}

/// `reuse_port` sets SO_REUSEPORT, so the port can be one a test (or a supervisor) holds
/// bound with SO_REUSEPORT to keep anyone else from taking it until this server listens.
fn listen(addr: SocketAddr, reuse_port: bool) -> Result<TcpListener, ServeError> {
    let bind_error = |source| ServeError::Bind { addr, source };
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4(),
        SocketAddr::V6(_) => TcpSocket::new_v6(),
    }
    .map_err(bind_error)?;
    // Lets a restarted target take its port back while old connections sit in TIME_WAIT.
    // On Unix this never lets two listeners share a port; Windows semantics differ.
    #[cfg(unix)]
    socket.set_reuseaddr(true).map_err(bind_error)?;
    #[cfg(unix)]
    if reuse_port {
        socket.set_reuseport(true).map_err(bind_error)?;
    }
    socket.bind(addr).map_err(bind_error)?;
    socket.listen(BACKLOG).map_err(bind_error)
}

async fn accept_loop(
    listener: TcpListener,
    counters: Arc<Counters>,
    stall: Option<(Stall, Instant)>,
) {
    let mut http = http1::Builder::new();
    http.keep_alive(true)
        // Pipelined requests get their responses in one write instead of one each.
        .pipeline_flush(true);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) if is_per_connection(&e) => continue,
            Err(_) => {
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        counters.accepts.fetch_add(1, Ordering::Relaxed);
        // Small responses must leave at once, not wait for Nagle to coalesce them.
        let _ = stream.set_nodelay(true);
        let connection = http
            .serve_connection(
                TokioIo::new(stream),
                Target {
                    counters: counters.clone(),
                    stall,
                    relay: OnceLock::new(),
                },
            )
            // Lets a `/ws/` endpoint take the socket over after its 101.
            .with_upgrades();
        // A connection's errors (resets, malformed requests) concern its client only.
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
}

/// Errors that concern one connection that went away before we accepted it.
pub(crate) fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// The hyper service of one connection.
pub(crate) struct Target {
    counters: Arc<Counters>,
    /// The schedule and the instant it counts from.
    stall: Option<(Stall, Instant)>,
    /// This connection's backend connection for `/relay`, made on first use.
    relay: OnceLock<relay::Slot>,
}

impl Target {
    pub(crate) fn new(counters: Arc<Counters>, stall: Option<(Stall, Instant)>) -> Target {
        Target {
            counters,
            stall,
            relay: OnceLock::new(),
        }
    }

    fn relay_slot(&self) -> relay::Slot {
        self.relay.get_or_init(Default::default).clone()
    }
}

impl Service<Request<Incoming>> for Target {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Reply;

    fn call(&self, req: Request<Incoming>) -> Reply {
        if req.version() == hyper::Version::HTTP_2 {
            self.counters.http2_requests.fetch_add(1, Ordering::Relaxed);
        }
        if self.counters.recording.load(Ordering::Relaxed) {
            record_tag(&req, &self.counters);
        }
        if let Some(gate) = &self.counters.capacity {
            let counters = self.counters.clone();
            let slot = self.relay_slot();
            return match gate.admit(Instant::now()) {
                Some(done) => Reply::Later(counted(self.counters.clone(), async move {
                    tokio::time::sleep_until(done.into()).await;
                    answer(req, &counters, slot).await
                })),
                None => {
                    self.counters.requests.fetch_add(1, Ordering::Relaxed);
                    Reply::Ready(Some(routes::over_capacity()))
                }
            };
        }
        // Checked only when a stall is configured: no clock read per request otherwise.
        if let Some(wait) = self
            .stall
            .and_then(|(stall, started)| stall.wait(started.elapsed()))
        {
            let counters = self.counters.clone();
            let slot = self.relay_slot();
            return Reply::Later(counted(self.counters.clone(), async move {
                tokio::time::sleep(wait).await;
                answer(req, &counters, slot).await
            }));
        }
        let later = match routes::route(req) {
            Routed::Ready(response) => {
                count_auth(&response, &self.counters);
                self.counters.requests.fetch_add(1, Ordering::Relaxed);
                return Reply::Ready(Some(response));
            }
            Routed::Login(req) => {
                self.counters.logins.fetch_add(1, Ordering::Relaxed);
                let counters = self.counters.clone();
                counted(self.counters.clone(), async move {
                    crate::journey::login(req, &counters).await
                })
            }
            Routed::Delay(d) => counted(self.counters.clone(), routes::delay(d)),
            Routed::Echo(req) => counted(self.counters.clone(), routes::echo(req)),
            Routed::Relay(url) => {
                counted(self.counters.clone(), relay::relay(url, self.relay_slot()))
            }
            Routed::Upgrade(req, endpoint) => {
                let response = ws::accept(req, endpoint, &self.counters);
                self.counters.requests.fetch_add(1, Ordering::Relaxed);
                return Reply::Ready(Some(response));
            }
            Routed::Grpc(req) => {
                let response = crate::grpc::call(req, self.counters.clone());
                self.counters.requests.fetch_add(1, Ordering::Relaxed);
                return Reply::Ready(Some(response));
            }
        };
        Reply::Later(later)
    }
}

/// The answer to any request, waiting if its endpoint waits.
async fn answer(
    req: Request<Incoming>,
    counters: &Arc<Counters>,
    slot: relay::Slot,
) -> Response<ResponseBody> {
    match routes::route(req) {
        Routed::Ready(response) => {
            count_auth(&response, counters);
            response
        }
        Routed::Login(req) => {
            counters.logins.fetch_add(1, Ordering::Relaxed);
            crate::journey::login(req, counters).await
        }
        Routed::Delay(d) => routes::delay(d).await,
        Routed::Echo(req) => routes::echo(req).await,
        Routed::Relay(url) => relay::relay(url, slot).await,
        Routed::Upgrade(req, endpoint) => ws::accept(req, endpoint, counters),
        Routed::Grpc(req) => crate::grpc::call(req, counters.clone()),
    }
}

/// Counts a 401: only the journey's endpoints answer it, for a missing or wrong token.
pub(crate) fn count_auth(response: &Response<ResponseBody>, counters: &Counters) {
    if response.status() == hyper::StatusCode::UNAUTHORIZED {
        counters.auth_failures.fetch_add(1, Ordering::Relaxed);
    }
    if response
        .extensions()
        .get::<crate::journey::CookieFailure>()
        .is_some()
    {
        counters.cookie_failures.fetch_add(1, Ordering::Relaxed);
    }
}

type Pending = Pin<Box<dyn Future<Output = Response<ResponseBody>> + Send>>;

/// Counts the response once it exists, so a cancelled `/delay` is not counted as served.
fn counted(
    counters: Arc<Counters>,
    response: impl Future<Output = Response<ResponseBody>> + Send + 'static,
) -> Pending {
    Box::pin(async move {
        let response = response.await;
        counters.requests.fetch_add(1, Ordering::Relaxed);
        response
    })
}

/// The service's future. Most endpoints answer at once: `Ready` carries that answer without
/// a box; only the endpoints that wait pay for one.
pub(crate) enum Reply {
    Ready(Option<Response<ResponseBody>>),
    Later(Pending),
}

impl Future for Reply {
    type Output = Result<Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Reply::Ready(response) => {
                Poll::Ready(Ok(response.take().expect("Reply polled after completion")))
            }
            Reply::Later(pending) => pending.as_mut().poll(cx).map(Ok),
        }
    }
}
