//! Transports: how a connection to the target is opened. Executors are generic over
//! [`Transport`], so TCP, TLS and (later) Unix sockets share one request loop.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use loadmark_metrics::ErrorKind;
use loadmark_plan::TlsPolicy;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A connection attempt that failed, already classified.
#[derive(Debug, Clone)]
pub struct ConnectError {
    pub kind: ErrorKind,
    pub message: String,
}

impl ConnectError {
    pub(crate) fn io(addr: SocketAddr, e: &io::Error) -> Self {
        ConnectError {
            kind: classify_io(e, ErrorKind::Connect),
            message: format!("connect to {addr}: {e}"),
        }
    }
}

/// Maps an I/O error to a kind: local resource exhaustion is its own kind, whatever the step.
pub fn classify_io(e: &io::Error, step: ErrorKind) -> ErrorKind {
    match e.raw_os_error() {
        Some(libc::EMFILE)
        | Some(libc::ENFILE)
        | Some(libc::EADDRNOTAVAIL)
        | Some(libc::ENOBUFS) => ErrorKind::Resource,
        _ => step,
    }
}

/// Opens connections to one target. Cloned into every worker thread.
pub trait Transport: Clone + Send + 'static {
    type Stream: AsyncRead + AsyncWrite + Inbound + Unpin + 'static;
    fn connect(&self) -> impl Future<Output = Result<Self::Stream, ConnectError>>;

    /// Its streams ask the kernel when their bytes arrived ([`Inbound::arrival`]), so a
    /// response's latency does not grow while it waits to be read: the closed loop may then
    /// nap instead of being woken for every response (`linger.rs`).
    fn stamps_arrival(&self) -> bool {
        false
    }
}

/// What a stream offers the response reader beyond reading: dropping received bytes without
/// copying them into the process (a body the load generator only counts need not cross into
/// user space: on TCP, `recv` with `MSG_TRUNC`, which Linux has honoured for TCP since 2.4),
/// and the kernel's time of arrival of what it last read (`arrival.rs`).
pub trait Inbound {
    /// False for streams that must read every byte (TLS decrypts and authenticates them).
    const CAN_DISCARD: bool = false;

    /// Drops up to `max` received bytes; ready with how many (0: the peer closed), or pending
    /// until some arrive. Called only when [`Inbound::CAN_DISCARD`] is true.
    fn poll_discard(&mut self, _cx: &mut Context<'_>, _max: usize) -> Poll<io::Result<usize>> {
        Poll::Ready(Err(io::ErrorKind::Unsupported.into()))
    }

    /// When the kernel received the bytes of the last read, if it stamped them; None when the
    /// reader must take the time itself.
    fn arrival(&self) -> Option<Instant> {
        None
    }

    /// What the first write showed of the connection's handshake. Streams whose connect waits
    /// for it are always [`Handshake::Done`]; `crate::oneshot` lets the request's own `send`
    /// confirm it.
    fn handshake(&self) -> Handshake {
        Handshake::Done
    }
}

/// How a connection came up, as its first write found it.
#[derive(Debug, Clone)]
pub enum Handshake {
    /// Up before the request was written.
    Done,
    /// The first write waited this long for the handshake, which ended at `at`: connect time,
    /// not the request's.
    Waited { waited: Duration, at: Instant },
    /// The first write is still waiting for the handshake to this address.
    Waiting(SocketAddr),
    /// The connect failed; the first write found out. The request's error is this one.
    Failed(ConnectError),
}

impl Inbound for TcpStream {
    /// Linux documents `MSG_TRUNC` for TCP (tcp(7)); elsewhere the body is read as before.
    const CAN_DISCARD: bool = cfg!(target_os = "linux");

    fn poll_discard(&mut self, cx: &mut Context<'_>, max: usize) -> Poll<io::Result<usize>> {
        use std::os::fd::AsRawFd;
        let fd = self.as_raw_fd();
        loop {
            std::task::ready!(self.poll_read_ready(cx))?;
            // SAFETY: with MSG_TRUNC, TCP copies nothing, so no buffer is given; the fd is
            // open while `self` is.
            let dropped = self.try_io(tokio::io::Interest::READABLE, || {
                let n = unsafe {
                    libc::recv(
                        fd,
                        std::ptr::null_mut(),
                        max,
                        libc::MSG_TRUNC | libc::MSG_DONTWAIT,
                    )
                };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            });
            match dropped {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                other => return Poll::Ready(other),
            }
        }
    }
}

impl<S> Inbound for tokio_rustls::client::TlsStream<S> {}

async fn tcp_connect(
    addr: SocketAddr,
    timeout: Duration,
    nagle: Nagle,
) -> Result<TcpStream, ConnectError> {
    let error = |e: io::Error| ConnectError::io(addr, &e);
    let (socket, state) = start_connect(addr, nagle, true).map_err(error)?;
    if state == Connect::Failed {
        // Refused at once (loopback): take the error before the socket is registered with
        // the event loop. A registration dropped without the loop turning is only released
        // when it turns, so a loop of instant refusals kept ~400 bytes per attempt.
        let e = socket
            .take_error()
            .map_err(error)?
            .unwrap_or_else(|| io::Error::from(io::ErrorKind::ConnectionRefused));
        return Err(error(e));
    }
    let stream = TcpStream::from_std(socket).map_err(error)?;
    if state == Connect::InProgress {
        // A real network: wait for the handshake (as tokio's own connect does).
        match tokio::time::timeout(timeout, stream.writable()).await {
            Ok(ready) => ready.map_err(error)?,
            Err(_) => {
                return Err(ConnectError {
                    kind: ErrorKind::Connect,
                    message: format!(
                        "connect to {addr}: no answer within {timeout:?} (--connect-timeout)"
                    ),
                })
            }
        }
    }
    if state == Connect::InProgress {
        if let Some(e) = stream.take_error().map_err(error)? {
            return Err(error(e));
        }
    }
    Ok(stream)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Connect {
    /// Established when `connect` returned.
    Done,
    /// The handshake is under way.
    InProgress,
    /// It ended with an error, kept as the socket's pending error.
    Failed,
}

/// Whether a new socket turns Nagle's algorithm off before it connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nagle {
    /// `TCP_NODELAY` at once: for streams that write many small pieces while earlier ones
    /// are unanswered (WebSocket frames, TLS records, HTTP/2's frames: a PING's ACK written
    /// just before the next request held that request for a delayed ACK, 40 ms a call
    /// against grpc-go, which PINGs after each response).
    Off,
    /// Left on until a write is cut short (see [`TcpConn`]): one request per write, each
    /// sent after the previous one was answered, is never held by Nagle (Linux holds a small
    /// segment only while an earlier small one is unacknowledged), and the setsockopt was
    /// one of nine syscalls a `Connection: close` request cost.
    UntilSplit,
}

/// Opens a non-blocking TCP socket and connects it, without the event loop.
///
/// On loopback the whole handshake runs inside `connect` (it still says EINPROGRESS), so one
/// zero-timeout `poll` tells that the connection is up and the request can be written at
/// once: no wait for the event loop to report the socket writable, and no timer for
/// --connect-timeout. Only a handshake still under way goes through the event loop. Without
/// `check` there is no `poll`: a connect that did not end at once is `InProgress`, and the
/// caller finds out (`crate::oneshot`: with the request's own `send`).
pub(crate) fn start_connect(
    addr: SocketAddr,
    nagle: Nagle,
    check: bool,
) -> io::Result<(std::net::TcpStream, Connect)> {
    use std::os::fd::{AsRawFd, FromRawFd};

    let family = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: plain syscalls; the fd is owned by the TcpStream as soon as it exists.
    let socket = unsafe {
        let fd = libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        std::net::TcpStream::from_raw_fd(fd)
    };
    if nagle == Nagle::Off {
        socket.set_nodelay(true)?;
    }
    let (storage, len) = sockaddr(&addr);
    let fd = socket.as_raw_fd();
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    let rc = unsafe { libc::connect(fd, &storage as *const _ as *const libc::sockaddr, len) };
    if rc == 0 {
        return Ok((socket, Connect::Done));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::EINPROGRESS) {
        return Err(e);
    }
    if !check {
        return Ok((socket, Connect::InProgress));
    }
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one pollfd we own, zero timeout.
    let n = unsafe { libc::poll(&mut pfd, 1, 0) };
    let state = if n == 1 && pfd.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
        Connect::Failed
    } else if n == 1 && pfd.revents & libc::POLLOUT != 0 {
        Connect::Done
    } else {
        Connect::InProgress
    };
    Ok((socket, state))
}

fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Plain TCP.
#[derive(Clone)]
pub struct Tcp {
    /// Where to connect: the target, or the proxy when there is one.
    pub addr: SocketAddr,
    pub connect_timeout: Duration,
    /// Through a proxy: what to do once TCP to it is up (`crate::proxy`).
    pub(crate) via: Option<Arc<crate::proxy::Via>>,
}

impl Tcp {
    /// A TCP stream to the target: straight, or through the proxy's tunnel (whose set-up
    /// is then part of the connect, and of its timeout).
    pub(crate) async fn open(&self, nagle: Nagle) -> Result<TcpStream, ConnectError> {
        let direct = tcp_connect(self.addr, self.connect_timeout, nagle);
        match &self.via {
            None => direct.await,
            Some(via) => via.connect(self.addr, self.connect_timeout, direct).await,
        }
    }

    /// Who a handshake over this connection is with, as messages say it.
    fn peer(&self) -> String {
        match &self.via {
            None => self.addr.to_string(),
            Some(via) => format!("the target through the proxy {}", via.label()),
        }
    }
}

impl Transport for Tcp {
    type Stream = TcpStream;
    async fn connect(&self) -> Result<TcpStream, ConnectError> {
        self.open(Nagle::Off).await
    }
}

/// Plain TCP for the engine's own HTTP/1.1 and cleartext HTTP/2 executors: streams that
/// write their first bytes at once (see [`TcpConn`]) and, when `stamp` says so, read arrival
/// times from the kernel ([`crate::arrival`]; a setsockopt per connection, so not for
/// `Connection: close` runs, whose syscalls per request are counted).
#[derive(Clone)]
pub(crate) struct DirectTcp {
    pub tcp: Tcp,
    pub stamp: bool,
    /// [`Nagle::UntilSplit`] for HTTP/1.1 (one write per request), [`Nagle::Off`] for
    /// HTTP/2, whose control frames are small writes of their own.
    pub nagle: Nagle,
}

impl Transport for DirectTcp {
    type Stream = TcpConn;
    async fn connect(&self) -> Result<TcpConn, ConnectError> {
        use std::os::fd::AsRawFd;
        let inner = self.tcp.open(self.nagle).await?;
        let stamped = self.stamp && crate::arrival::enable(inner.as_raw_fd());
        Ok(TcpConn {
            inner,
            fresh: true,
            nagle: self.nagle == Nagle::UntilSplit,
            stamped,
            arrival: None,
        })
    }

    fn stamps_arrival(&self) -> bool {
        self.stamp
    }
}

/// A TCP stream whose first write goes straight to the socket. tokio writes only once its
/// event loop has reported a socket writable, and a new socket has not been reported yet:
/// that costs every new connection a trip through the event loop before its request goes
/// out. The connection is known to be up ([`tcp_connect`] checked), so the first write is
/// simply tried; only if the socket cannot take it does the stream wait like any other.
///
/// Nagle's algorithm stays on until a write is cut short ([`Nagle::UntilSplit`]): the rest
/// of a request that did not fit the socket buffer must not wait for an acknowledgement.
pub(crate) struct TcpConn {
    inner: TcpStream,
    fresh: bool,
    nagle: bool,
    /// The kernel stamps what this socket receives.
    stamped: bool,
    /// When the bytes of the last read arrived, as the kernel stamped them.
    arrival: Option<Instant>,
}

impl TcpConn {
    fn after_write(&mut self, wanted: usize, result: &Poll<io::Result<usize>>) {
        if self.nagle {
            if let Poll::Ready(Ok(n)) = result {
                if *n < wanted {
                    self.nagle = false;
                    let _ = self.inner.set_nodelay(true);
                }
            }
        }
    }
}

impl AsyncRead for TcpConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.stamped {
            return Pin::new(&mut self.inner).poll_read(cx, buf);
        }
        use std::os::fd::AsRawFd;
        let fd = self.inner.as_raw_fd();
        let room = buf.initialize_unfilled();
        let len = room.len();
        loop {
            std::task::ready!(self.inner.poll_read_ready(cx))?;
            let mut read = None;
            let tried = self.inner.try_io(tokio::io::Interest::READABLE, || {
                let (n, arrival) = crate::arrival::recv(fd, room)?;
                read = Some((n, arrival));
                // As tokio's own read: a short read shows the socket drained, so readiness is
                // cleared now (WouldBlock is how `try_io` is told) and the next read waits for
                // the event loop instead of costing a recv that finds nothing.
                if n > 0 && n < len {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok(())
            });
            match (tried, read) {
                (_, Some((n, arrival))) => {
                    self.arrival = arrival;
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                (Err(e), None) if e.kind() == io::ErrorKind::WouldBlock => continue,
                (Err(e), None) => return Poll::Ready(Err(e)),
                (Ok(()), None) => unreachable!("a read that succeeded set `read`"),
            }
        }
    }
}

impl Inbound for TcpConn {
    const CAN_DISCARD: bool = TcpStream::CAN_DISCARD;

    fn poll_discard(&mut self, cx: &mut Context<'_>, max: usize) -> Poll<io::Result<usize>> {
        // Dropped bytes carry no stamp: whatever ends on them is timed by the reader.
        self.arrival = None;
        self.inner.poll_discard(cx, max)
    }

    fn arrival(&self) -> Option<Instant> {
        self.arrival
    }
}

/// One `send` on a socket, without the event loop and without SIGPIPE: a stream's first write
/// goes straight out (see [`TcpConn`] and `crate::oneshot`).
pub(crate) fn send_now(socket: &impl std::os::fd::AsRawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes; the fd is open while `socket` is.
    let n = unsafe {
        libc::send(
            socket.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

impl AsyncWrite for TcpConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if std::mem::take(&mut self.fresh) {
            match send_now(&self.inner, buf) {
                Ok(n) => {
                    let written = Poll::Ready(Ok(n));
                    self.after_write(buf.len(), &written);
                    return written;
                }
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Poll::Ready(Err(e)),
                Err(_) => {}
            }
        }
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.after_write(buf.len(), &written);
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// TLS over TCP (rustls), certificates verified against the Mozilla roots unless insecure.
#[derive(Clone)]
pub struct Tls {
    tcp: Tcp,
    connector: tokio_rustls::TlsConnector,
    server_name: rustls::pki_types::ServerName<'static>,
}

impl Tls {
    /// `policy` says what to trust (the Mozilla roots, a private CA's PEM file, or anything
    /// under `--insecure`) and whether to present a client certificate (mutual TLS). A file
    /// that cannot be read or parsed is an error here, before any load.
    pub fn new(tcp: Tcp, host: &str, policy: &TlsPolicy) -> Result<Tls, ConnectError> {
        Self::with_alpn(tcp, host, policy, &[b"http/1.1"])
    }

    /// As [`Tls::new`], offering these protocols with ALPN (`h2` first for HTTP/2).
    pub fn with_alpn(
        tcp: Tcp,
        host: &str,
        policy: &TlsPolicy,
        alpn: &[&[u8]],
    ) -> Result<Tls, ConnectError> {
        let config = client_config(policy, alpn)?;
        let server_name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| tls_error(format!("invalid TLS server name {host:?}: {e}")))?;
        Ok(Tls {
            tcp,
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
            server_name,
        })
    }
}

/// One TLS connection to `addr` offering HTTP/2 (ALPN `h2`), verified as `host` under
/// `policy`, for a question asked before the load (gRPC server reflection over TLS): the
/// same trust, client certificate and errors as the run's connections.
pub async fn connect_tls_h2(
    addr: SocketAddr,
    host: &str,
    policy: &TlsPolicy,
    connect_timeout: Duration,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, ConnectError> {
    let tcp = Tcp {
        addr,
        connect_timeout,
        via: None,
    };
    Tls::with_alpn(tcp, host, policy, &[b"h2"])?.connect().await
}

/// The client's TLS configuration for `policy` (roots, `--cacert`, `--insecure`, a client
/// certificate) offering `alpn`: what TLS over TCP and QUIC (HTTP/3) both start from.
pub(crate) fn client_config(
    policy: &TlsPolicy,
    alpn: &[&[u8]],
) -> Result<rustls::ClientConfig, ConnectError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(format!("TLS setup: {e}")))?;
    let files = match policy {
        TlsPolicy::Files(f) => f.clone(),
        _ => Default::default(),
    };
    let certs = |flag: &str, path: &std::path::Path| {
        CertificateDer::pem_file_iter(path)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| tls_error(format!("{flag} {}: {e}", path.display())))
            .and_then(|certs| match certs.is_empty() {
                true => Err(tls_error(format!(
                    "{flag} {}: no PEM certificate in it",
                    path.display()
                ))),
                false => Ok(certs),
            })
    };
    let trusting = if policy.is_insecure() {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        match &files.ca {
            // As curl's --cacert: the file replaces the default roots.
            Some(ca) => {
                for cert in certs("--cacert", ca)? {
                    roots
                        .add(cert)
                        .map_err(|e| tls_error(format!("--cacert {}: {e}", ca.display())))?;
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match &files.cert {
        Some(cert) => {
            let chain = certs("--cert", cert)?;
            let key_path = files.key.as_ref().unwrap_or(cert);
            let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| {
                tls_error(format!(
                    "--key {}: no usable PEM private key: {e}",
                    key_path.display()
                ))
            })?;
            trusting
                .with_client_auth_cert(chain, key)
                .map_err(|e| tls_error(format!("--cert/--key: {e}")))?
        }
        None => trusting.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

fn tls_error(message: String) -> ConnectError {
    ConnectError {
        kind: ErrorKind::Tls,
        message,
    }
}

impl Transport for Tls {
    type Stream = tokio_rustls::client::TlsStream<TcpStream>;
    async fn connect(&self) -> Result<Self::Stream, ConnectError> {
        let tcp = self.tcp.connect().await?;
        let handshake = self.connector.connect(self.server_name.clone(), tcp);
        match tokio::time::timeout(self.tcp.connect_timeout, handshake).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(tls_error(format!(
                "TLS handshake with {}: {e}{}",
                self.tcp.peer(),
                untrusted_hint(&e)
            ))),
            Err(_) => Err(tls_error(format!(
                "TLS handshake with {}: no answer within {:?} (--connect-timeout)",
                self.tcp.peer(),
                self.tcp.connect_timeout
            ))),
        }
    }
}

/// What to do about a certificate that did not verify, named where the error is read.
fn untrusted_hint(e: &io::Error) -> &'static str {
    let rustls_error = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    use rustls::CertificateError::{NotValidForName, NotValidForNameContext};
    match rustls_error {
        Some(rustls::Error::InvalidCertificate(
            NotValidForName | NotValidForNameContext { .. },
        )) => {
            " (the certificate is for another name: connect by a name it holds, or skip \
             verification: --insecure; loadmark grpc's --insecure is plaintext, its \
             --skip-verify skips verification)"
        }
        Some(rustls::Error::InvalidCertificate(_)) => {
            " (the server's certificate is not trusted: --cacert FILE trusts its CA, --insecure \
             skips verification; loadmark grpc's --insecure is plaintext, its --skip-verify \
             skips verification)"
        }
        _ => "",
    }
}

/// `--insecure`: any certificate is accepted, but signatures are still checked so the
/// handshake is a real one.
#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_out_of_local_resources_is_its_own_kind() {
        for errno in [
            libc::EMFILE,
            libc::ENFILE,
            libc::EADDRNOTAVAIL,
            libc::ENOBUFS,
        ] {
            let e = io::Error::from_raw_os_error(errno);
            assert_eq!(
                classify_io(&e, ErrorKind::Connect),
                ErrorKind::Resource,
                "{e}"
            );
        }
        let refused = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(
            classify_io(&refused, ErrorKind::Connect),
            ErrorKind::Connect
        );
        let reset = io::Error::from_raw_os_error(libc::ECONNRESET);
        assert_eq!(classify_io(&reset, ErrorKind::Read), ErrorKind::Read);
    }
}
