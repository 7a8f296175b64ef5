//! HTTP/3 (`--http3 --tls`): the same endpoints over QUIC on UDP, on the port number of the
//! TLS listener (as Caddy does), with the same self-signed certificate. quinn carries QUIC,
//! the `h3` crate HTTP/3's frames and QPACK; each request is one task.
//!
//! A request's body is read whole before it is routed (at most [`MAX_ECHO_BYTES`] kept, the
//! rest read and dropped, then 413), so the routes see an ordinary `Request<Full<Bytes>>`.
//! What HTTP/3 cannot carry here is answered 501 and counted: WebSocket upgrades (RFC 9220
//! is not served) and gRPC (served over HTTP/2). `--capacity` queues only the TCP
//! listeners' requests; a stall freezes these too.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode};

use crate::body::ResponseBody;
use crate::routes::{self, Routed, MAX_ECHO_BYTES};
use crate::server::{count_auth, record_tag, Counters};
use crate::Stall;

/// Streams a client may open at once on one HTTP/3 connection: the HTTP/2 listener's limit.
const MAX_CONCURRENT_STREAMS: u32 = crate::listeners::MAX_CONCURRENT_STREAMS;

/// Sessions a server remembers for resumption: enough that a client reconnecting many
/// times at once (`--http3-0rtt` with a connection per request) finds its ticket.
const SESSIONS_KEPT: usize = 16_384;

/// The QUIC side of the server's certificate: TLS 1.3 only (QUIC has no other), ALPN `h3`;
/// 0-RTT accepted (early data from a resumed session), each resumption counted in
/// `resumed`.
pub(crate) fn server_config(
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
    resumed: Arc<AtomicU64>,
) -> Result<quinn::ServerConfig, String> {
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .map_err(|e| e.to_string())?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .map_err(|e| e.to_string())?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    // QUIC allows 0 or u32::MAX here: MAX accepts 0-RTT (RFC 9001 §4.6.1). Tickets are
    // kept server-side and taken once, so a replayed ticket is a full handshake.
    tls.max_early_data_size = u32::MAX;
    tls.session_storage = Arc::new(CountedSessions {
        inner: rustls::server::ServerSessionMemoryCache::new(SESSIONS_KEPT),
        resumed,
    });
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| format!("QUIC TLS setup: {e}"))?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_bidi_streams(MAX_CONCURRENT_STREAMS.into());
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// The server's session store, counting the sessions resumed (a ticket found and taken).
#[derive(Debug)]
struct CountedSessions {
    inner: Arc<rustls::server::ServerSessionMemoryCache>,
    resumed: Arc<AtomicU64>,
}

impl rustls::server::StoresServerSessions for CountedSessions {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.inner.put(key, value)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.get(key)
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let found = self.inner.take(key);
        if found.is_some() {
            self.resumed.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    fn can_cache(&self) -> bool {
        self.inner.can_cache()
    }
}

/// Binds the UDP socket at `addr` (the TLS listener's address and port).
pub(crate) fn bind(
    addr: SocketAddr,
    config: quinn::ServerConfig,
) -> Result<quinn::Endpoint, std::io::Error> {
    quinn::Endpoint::server(config, addr)
}

/// Accepts QUIC connections until the server stops; each is a task, each request another.
pub(crate) async fn accept(
    endpoint: quinn::Endpoint,
    counters: Arc<Counters>,
    stall: Option<(Stall, Instant)>,
) {
    while let Some(incoming) = endpoint.accept().await {
        let counters = counters.clone();
        tokio::spawn(async move {
            // A handshake that fails concerns its client only.
            let Ok(connection) = incoming.await else {
                return;
            };
            counters.accepts.fetch_add(1, Ordering::Relaxed);
            let quic = h3_quinn::Connection::new(connection);
            let Ok(mut h3) = h3::server::Connection::<_, Bytes>::new(quic).await else {
                return;
            };
            // Ends when the client closes the connection, or on its errors.
            while let Ok(Some(resolver)) = h3.accept().await {
                let counters = counters.clone();
                tokio::spawn(async move {
                    if let Ok((req, stream)) = resolver.resolve_request().await {
                        serve(req, stream, &counters, stall).await;
                    }
                });
            }
        });
    }
}

/// One request: its body read, routed as over TCP, the answer sent and counted. A client
/// that resets the stream ends it here, uncounted if no answer was made yet.
async fn serve<S>(
    req: Request<()>,
    mut stream: h3::server::RequestStream<S, Bytes>,
    counters: &Arc<Counters>,
    stall: Option<(Stall, Instant)>,
) where
    S: h3::quic::BidiStream<Bytes>,
{
    let mut body = BytesMut::new();
    let mut too_large = false;
    loop {
        match stream.recv_data().await {
            Ok(Some(mut chunk)) => {
                if body.len() + chunk.remaining() > MAX_ECHO_BYTES {
                    too_large = true;
                    chunk.advance(chunk.remaining());
                } else {
                    while chunk.has_remaining() {
                        let part = chunk.chunk();
                        body.extend_from_slice(part);
                        let n = part.len();
                        chunk.advance(n);
                    }
                }
            }
            Ok(None) => break,
            Err(_) => return,
        }
    }
    if counters.recording.load(Ordering::Relaxed) {
        record_tag(&req, counters);
    }
    if let Some(wait) = stall.and_then(|(stall, started)| stall.wait(started.elapsed())) {
        tokio::time::sleep(wait).await;
    }
    let head = req.method() == hyper::Method::HEAD;
    let response = if too_large {
        routes::text(StatusCode::PAYLOAD_TOO_LARGE, "request body over 16 MiB\n")
    } else {
        answer(req.map(|()| Full::new(body.freeze())), counters).await
    };
    counters.requests.fetch_add(1, Ordering::Relaxed);
    counters.http3_requests.fetch_add(1, Ordering::Relaxed);
    let _ = send(&mut stream, response, head).await;
}

/// What a request gets over HTTP/3: what it gets over TCP, but for the endpoints this
/// listener does not carry.
async fn answer(req: Request<Full<Bytes>>, counters: &Arc<Counters>) -> Response<ResponseBody> {
    const NOT_HERE: &str = "not served over HTTP/3: WebSocket and gRPC need the TCP listener\n";
    match routes::route(req) {
        Routed::Ready(response) => {
            count_auth(&response, counters);
            response
        }
        Routed::Delay(d) => routes::delay(d).await,
        Routed::Echo(req) => routes::echo(req).await,
        Routed::Login(req) => {
            counters.logins.fetch_add(1, Ordering::Relaxed);
            crate::journey::login(req, counters).await
        }
        Routed::Relay(url) => crate::relay::relay(url, Default::default()).await,
        Routed::Upgrade(..) | Routed::Grpc(_) => {
            routes::text(StatusCode::NOT_IMPLEMENTED, NOT_HERE)
        }
    }
}

/// Sends the head, then the body frame by frame (a large `/bytes/N` is never whole in
/// memory), then ends the stream.
async fn send<S>(
    stream: &mut h3::server::RequestStream<S, Bytes>,
    response: Response<ResponseBody>,
    head: bool,
) -> Result<(), h3::error::StreamError>
where
    S: h3::quic::BidiStream<Bytes>,
{
    let (parts, mut body) = response.into_parts();
    let mut headers = Response::from_parts(parts, ());
    // HTTP/3 forbids connection-specific fields (RFC 9114 §4.2).
    headers.headers_mut().remove(hyper::header::CONNECTION);
    headers
        .headers_mut()
        .remove(hyper::header::TRANSFER_ENCODING);
    stream.send_response(headers).await?;
    if !head {
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                if !data.is_empty() {
                    stream.send_data(data).await?;
                }
            }
        }
    }
    stream.finish().await
}
