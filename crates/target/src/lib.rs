//! The built-in target: a small, fast HTTP/1.1 server that loadmark benchmarks in its
//! quickstart, its tests and its benches, so a fresh machine needs nothing else to try it.
//!
//! ```
//! let server = loadmark_target::start(loadmark_target::ServerConfig {
//!     addr: ([127, 0, 0, 1], 0).into(),
//!     threads: 1,
//! }).unwrap();
//! println!("serving on http://{}/status", server.local_addr());
//! server.shutdown();
//! ```
//!
//! Endpoints (any method): `/status` (2-byte `OK`), `/bytes/N`, `/json`, `/delay/MS`,
//! `/status/CODE`, `/echo`, `/chunked/N`, `/close`.
//!
//! Design decisions:
//! - The server owns its OS threads and tokio runtime, so it runs the same from sync code,
//!   from tests, and beside loadmark's own event loops in one process (quickstart).
//! - It binds to 127.0.0.1 unless told otherwise: a load target should not be reachable
//!   from the network by accident.
//! - Static bodies are `Bytes` slices of one shared buffer: nothing is allocated per request
//!   beyond what hyper needs, so the target is not the bottleneck of the quickstart.
//! - Exact counters of requests and accepts let tests compare loadmark's counts with the
//!   server's own.

mod body;
mod routes;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

/// Where and how to serve.
#[derive(Debug, Clone, Copy)]
pub struct ServerConfig {
    /// Default 127.0.0.1:8080; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Worker threads; 1 runs a single-threaded event loop.
    pub threads: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: ([127, 0, 0, 1], 8080).into(),
            threads: 1,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address is in use or not ours: pick another port (`--port`) or stop the other server.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The runtime or its thread could not be created (out of memory or file descriptors).
    #[error("cannot start the server runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// Exact counts, shared by every connection task.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub requests: AtomicU64,
    pub accepts: AtomicU64,
}

/// A running server; [`RunningServer::shutdown`] (or drop) stops it and joins its thread.
pub struct RunningServer {
    addr: SocketAddr,
    counters: Arc<Counters>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl RunningServer {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Requests answered so far (every path, every status).
    pub fn requests_served(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }

    /// Connections accepted so far.
    pub fn connections_accepted(&self) -> u64 {
        self.counters.accepts.load(Ordering::Relaxed)
    }

    /// Stops accepting, drops every connection, and waits for the server thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Binds, then serves on its own thread(s); returns once the socket is listening.
pub fn start(config: ServerConfig) -> Result<RunningServer, ServeError> {
    let bind_error = |source| ServeError::Bind {
        addr: config.addr,
        source,
    };
    let listener = std::net::TcpListener::bind(config.addr).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    let addr = listener.local_addr().map_err(bind_error)?;
    let runtime = if config.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads)
            .thread_name("loadmark-target")
            .enable_all()
            .build()
    }
    .map_err(ServeError::Runtime)?;
    let counters = Arc::new(Counters::default());
    let (tx, rx) = oneshot::channel();
    let thread_counters = counters.clone();
    let thread = std::thread::Builder::new()
        .name("loadmark-target".into())
        .spawn(move || {
            runtime.block_on(accept_loop(listener, thread_counters, rx));
            // Dropping the runtime here cancels every connection still open.
        })
        .map_err(ServeError::Runtime)?;
    Ok(RunningServer {
        addr,
        counters,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}

async fn accept_loop(
    listener: std::net::TcpListener,
    counters: Arc<Counters>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("loadmark target: cannot register the listener: {e}");
            return;
        }
    };
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = &mut shutdown => return,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            // EMFILE and friends: back off briefly instead of spinning.
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        counters.accepts.fetch_add(1, Ordering::Relaxed);
        let _ = stream.set_nodelay(true);
        let counters = counters.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| routes::handle(req, counters.clone()));
            // Connection errors (client resets) are the client's business, not the server's.
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
