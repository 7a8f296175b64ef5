//! Listeners beyond the HTTP/1.1-over-TCP accept loop in [`crate::server`] (which stays as it
//! is, so the default path does not look for HTTP/2's preface): HTTP/2 with prior knowledge
//! (h2c) beside HTTP/1.1, TLS with a self-signed certificate (h2 or HTTP/1.1 chosen with
//! ALPN), and a Unix domain socket.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};

use crate::server::{is_per_connection, Counters, Target, ACCEPT_BACKOFF};
use crate::{ServeError, Stall};

/// Streams a client may open at once on one HTTP/2 connection, as nginx's default.
pub const MAX_CONCURRENT_STREAMS: u32 = 128;

/// What a connection speaks once accepted.
#[derive(Clone)]
pub(crate) struct Serving {
    pub counters: Arc<Counters>,
    pub stall: Option<(Stall, Instant)>,
    /// HTTP/2 beside HTTP/1.1 (hyper-util's auto builder reads the first bytes).
    pub http2: bool,
}

impl Serving {
    /// Serves one connection to its end on a task of its own.
    fn spawn<IO>(&self, io: IO)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.counters.accepts.fetch_add(1, Ordering::Relaxed);
        let target = Target::new(self.counters.clone(), self.stall);
        let http2 = self.http2;
        tokio::spawn(async move {
            let io = TokioIo::new(io);
            if http2 {
                let mut http = auto::Builder::new(TokioExecutor::new());
                http.http1().keep_alive(true).pipeline_flush(true);
                http.http2().max_concurrent_streams(MAX_CONCURRENT_STREAMS);
                let _ = http.serve_connection_with_upgrades(io, target).await;
            } else {
                let _ = http1::Builder::new()
                    .keep_alive(true)
                    .pipeline_flush(true)
                    .serve_connection(io, target)
                    .with_upgrades()
                    .await;
            }
        });
    }
}

/// Plain TCP, HTTP/1.1 and h2c.
pub(crate) async fn accept_auto(listener: TcpListener, serving: Serving) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                serving.spawn(stream);
            }
            Err(e) if is_per_connection(&e) => {}
            Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
        }
    }
}

/// TLS: the handshake runs on the connection's own task, so a slow client holds up no other.
pub(crate) async fn accept_tls(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    serving: Serving,
) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                let (acceptor, serving) = (acceptor.clone(), serving.clone());
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(stream).await {
                        serving.spawn(tls);
                    }
                });
            }
            Err(e) if is_per_connection(&e) => {}
            Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
        }
    }
}

pub(crate) async fn accept_unix(listener: UnixListener, serving: Serving) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => serving.spawn(stream),
            Err(e) if is_per_connection(&e) => {}
            Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
        }
    }
}

/// Binds the socket file; an existing file is an error (another server may use it), named.
pub(crate) fn bind_unix(path: &Path) -> Result<UnixListener, ServeError> {
    UnixListener::bind(path).map_err(|source| ServeError::BindUnix {
        path: path.to_path_buf(),
        source,
    })
}

/// What `tls` serves with: the TCP acceptor (h2 by ALPN when `http2`, and HTTP/1.1), the
/// QUIC configuration with the same certificate when `http3`, and the certificate's PEM (for
/// clients' `--cacert`).
pub(crate) struct Certified {
    pub acceptor: tokio_rustls::TlsAcceptor,
    pub quic: Option<quinn::ServerConfig>,
    pub pem: String,
}

/// A fresh self-signed certificate for 127.0.0.1, ::1 and localhost.
/// `resumed` counts the QUIC sessions resumed (0-RTT).
pub(crate) fn self_signed(
    http2: bool,
    http3: bool,
    resumed: Arc<std::sync::atomic::AtomicU64>,
) -> Result<Certified, String> {
    let names = ["127.0.0.1", "::1", "localhost"].map(String::from).to_vec();
    let cert = rcgen::generate_simple_self_signed(names).map_err(|e| e.to_string())?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
    let quic = match http3 {
        true => Some(crate::http3::server_config(
            vec![cert.cert.der().clone()],
            key.clone_key(),
            resumed,
        )?),
        false => None,
    };
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_no_client_auth()
    .with_single_cert(vec![cert.cert.der().clone()], key)
    .map_err(|e| e.to_string())?;
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Certified {
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        quic,
        pem: cert.cert.pem(),
    })
}

/// Removes the socket file when the server stops, so the path can be used again.
pub(crate) struct SocketFile(pub Option<PathBuf>);

impl Drop for SocketFile {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}
