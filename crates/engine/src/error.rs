//! [`EngineError`]: why a run could not start or finish (failed requests are data, not this).

use loadmark_plan::PlanError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The plan is invalid; the message names the setting.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The target's host name did not resolve: check the URL or the DNS setup.
    #[error("cannot resolve host {host:?}: {source}")]
    Resolve {
        host: String,
        #[source]
        source: std::io::Error,
    },
    /// The proxy's host name did not resolve: check `-x` or the `*_PROXY` variable.
    #[error("cannot resolve the proxy {proxy}: {source}")]
    ProxyResolve {
        proxy: String,
        #[source]
        source: std::io::Error,
    },
    /// More connections than the open-file limit allows.
    #[error("{needed} open files are needed for these connections but the limit is {limit}: raise it (ulimit -n {needed}) or use fewer connections (-c)")]
    FileLimit { needed: u64, limit: u64 },
    /// TLS could not be set up (not a failed handshake, which is a request error).
    #[error("TLS setup: {0}")]
    Tls(String),
    /// The plan's requests could not be prepared (data file, template).
    #[error(transparent)]
    Source(#[from] crate::source::SourceError),
    /// `--http2` over TLS, and the server did not choose h2 with ALPN: it speaks only
    /// HTTP/1.1 there. Drop `--http2`, add `--http2-fallback` to run over HTTP/1.1 then, or
    /// point at a server that offers HTTP/2.
    #[error(
        "HTTP/2 refused: {0} (drop --http2, or add --http2-fallback to run over HTTP/1.1 then)"
    )]
    Http2NotOffered(String),
    /// `--http2` over plain TCP (or a Unix socket), and the first connection's preface got
    /// no SETTINGS frame: an HTTP/1.x answer, a close, or bytes that are not HTTP/2. The
    /// server does not speak HTTP/2 with prior knowledge (h2c); over TLS, ALPN decides.
    /// Drop `--http2`, or use https:// if the server offers HTTP/2 there.
    #[error(
        "the server at {url} does not speak HTTP/2 with prior knowledge (h2c): {answer}; \
         over TLS, ALPN decides: drop --http2, or use https"
    )]
    Http2NotSpoken { url: String, answer: String },
    /// `--unix-socket` with an https:// URL: TLS over a Unix socket is not supported; use
    /// an http:// URL (the socket is local) or TCP.
    #[error("--unix-socket carries plain HTTP only: use an http:// URL with it")]
    UnixTls,
    /// A worker thread could not be started.
    #[error("cannot start a worker thread: {0}")]
    Thread(#[source] std::io::Error),
    /// A worker thread panicked: a bug in loadmark; please report it.
    #[error("a worker thread panicked (a bug in loadmark)")]
    WorkerPanicked,
}
