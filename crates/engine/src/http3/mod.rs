//! HTTP/3 over QUIC (RFC 9114, issue 37): one connection carries `--streams` requests at
//! once, each on its own bidirectional QUIC stream. quinn is the QUIC stack (its endpoint
//! and connections are polled by tasks of their own on the worker's event loop), the `h3`
//! crate frames requests and encodes headers with QPACK; this folder is the driver: the
//! closed loop in [`closed`], the open loop in [`open`], and here what both share (the
//! connection's handshake and life, one request on a stream, how failures are classified).
//!
//! The dependency stays behind this driver: a run without `--http3` builds no QUIC endpoint
//! and binds no UDP socket. Each worker has one endpoint (one UDP socket) for all its
//! connections, as a browser has one per origin pool.
//!
//! - **Handshake**: bounded by the connect timeout; a server that never answers (nothing on
//!   the UDP port, a firewall dropping datagrams) is a `timeout` naming the address, never a
//!   hang. A server that does not offer `h3` with ALPN fails the TLS handshake (`tls`).
//! - **Streams**: a request waits for stream credit when the server's limit (its
//!   initial_max_streams_bidi) is below `--streams`; the wait is in the request's latency,
//!   and the limit is never exceeded. (quinn sends no STREAMS_BLOCKED frames, so the waits
//!   are not counted apart yet.)
//! - **Failures**: a stream reset names its HTTP/3 error code (`read`, or `write` before the
//!   request was sent); a connection closed by the server (GOAWAY, an application close, a
//!   stateless reset, an idle timeout) fails the requests it carried with the close's code,
//!   and the slot opens a new connection.
//!
//! Bytes: a sample counts its body bytes and its header fields (name and value lengths as
//! QPACK sees them before compression); what QUIC itself moved is in the QUIC figures (UDP
//! datagrams and bytes, packets lost).

pub(crate) mod closed;
mod early;
pub(crate) mod open;
pub(crate) mod request;

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use loadmark_metrics::{EarlyData, ErrorKind, QuicConnection, QuicFigures, QuicTally, Sample};
use loadmark_plan::TlsPolicy;

use crate::connection::Shared;
use crate::transport::Transport;
use early::Early;
pub(crate) use request::Prepared;

/// How the client asks for a request: h3's handle to open streams on a connection.
pub(crate) type Sender = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// What every worker's HTTP/3 connections share for a run: where to connect and how, and
/// the QUIC figures of the connections that closed.
pub(crate) struct H3Run {
    client: quinn::ClientConfig,
    addr: SocketAddr,
    server_name: String,
    streams: usize,
    connect_timeout: Duration,
    /// `--http3-0rtt`: connections try 0-RTT with a ticket from an earlier one.
    zero_rtt: bool,
    /// False under `--no-keepalive`: a connection carries one request per stream, then
    /// closes.
    keep_alive: bool,
    tally: Mutex<QuicTally>,
}

impl std::fmt::Debug for H3Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H3Run")
            .field("addr", &self.addr)
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl H3Run {
    /// The run's QUIC client: TLS as `policy` says (`--insecure`, `--cacert`, a client
    /// certificate) with ALPN `h3`, early data when `zero_rtt` (rustls keeps the tickets
    /// servers send, in memory, for every connection of the run). A file that cannot be
    /// read is an error here, before load.
    pub(crate) fn new(
        addr: SocketAddr,
        host: &str,
        policy: &TlsPolicy,
        (streams, zero_rtt, keep_alive): (usize, bool, bool),
        connect_timeout: Duration,
    ) -> Result<H3Run, String> {
        let mut tls = crate::transport::client_config(policy, &[b"h3"]).map_err(|e| e.message)?;
        tls.enable_early_data = zero_rtt;
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
            .map_err(|e| format!("QUIC TLS setup: {e}"))?;
        let mut client = quinn::ClientConfig::new(Arc::new(crypto));
        let mut transport = quinn::TransportConfig::default();
        // Large responses on many streams at once: a window per stream as large as the
        // connection's, so one stream is never held back by its own window alone.
        transport.stream_receive_window((8u32 << 20).into());
        transport.receive_window((16u32 << 20).into());
        client.transport_config(Arc::new(transport));
        Ok(H3Run {
            client,
            addr,
            server_name: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            streams: streams.max(1),
            connect_timeout,
            zero_rtt,
            keep_alive,
            tally: Mutex::new(QuicTally::default()),
        })
    }

    /// The QUIC figures of every connection that closed; None when none completed its
    /// handshake.
    pub(crate) fn figures(&self) -> Option<QuicFigures> {
        self.tally
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .figures()
    }

    fn closed(&self, connection: &QuicConnection) {
        (self.tally.lock().unwrap_or_else(|e| e.into_inner())).closed(connection);
    }
}

/// One worker's HTTP/3 side: its endpoint (bound when the worker starts: a failure is every
/// connection's, named), the run's settings, prepared requests.
pub(crate) struct H3Shared {
    endpoint: Result<quinn::Endpoint, String>,
    pub(crate) run: Arc<H3Run>,
    fixed: request::Fixed,
}

impl H3Shared {
    /// Binds the worker's UDP socket; call on the worker's event loop (quinn drives the
    /// endpoint from a task of its own).
    pub(crate) fn new(run: Arc<H3Run>) -> Self {
        let local: SocketAddr = match run.addr {
            SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
            SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let endpoint = quinn::Endpoint::client(local)
            .map_err(|e| format!("cannot bind a UDP socket for QUIC on {local}: {e}"));
        H3Shared {
            endpoint,
            run,
            fixed: request::Fixed::default(),
        }
    }

    pub(crate) fn streams(&self) -> usize {
        self.run.streams
    }

    /// False under `--no-keepalive`: a connection carries one request per stream.
    pub(crate) fn keep_alive(&self) -> bool {
        self.run.keep_alive
    }

    /// Opens a connection: QUIC's handshake (bounded by the connect timeout), then HTTP/3's
    /// control and QPACK streams (the server's SETTINGS are read as they come). The
    /// handshake time goes to the recorder as the connection's connect time, and to the QUIC
    /// figures when the connection closes.
    ///
    /// With `--http3-0rtt` and a ticket from an earlier connection, the connection is usable
    /// at once (0-RTT): its connect time is the time to set it up, no round trip, and what
    /// the server does with the early data is watched ([`Early`]).
    pub(crate) async fn connect<T: Transport>(
        &self,
        shared: &Shared<T>,
        early: bool,
    ) -> Result<(Live, Sender), (ErrorKind, String)> {
        let endpoint = self
            .endpoint
            .as_ref()
            .map_err(|e| (ErrorKind::Resource, e.clone()))?;
        let run = &self.run;
        let t0 = Instant::now();
        let connecting = endpoint
            .connect_with(run.client.clone(), run.addr, &run.server_name)
            .map_err(|e| {
                (
                    ErrorKind::Connect,
                    format!("QUIC connect to {}: {e}", run.addr),
                )
            })?;
        // `early` false: a full handshake for requests the server rejected in 0-RTT once.
        let attempt = match run.zero_rtt && early {
            true => connecting.into_0rtt(),
            false => Err(connecting),
        };
        let (connection, early) = match attempt {
            Ok((connection, accepted)) => {
                let early = Early::watch(connection.clone(), accepted, t0);
                (connection, Some(early))
            }
            // No ticket yet (the run's first connections): a full handshake.
            Err(connecting) => match tokio::time::timeout(run.connect_timeout, connecting).await {
                Ok(Ok(c)) => (c, None),
                Ok(Err(e)) => return Err(classify_connection(&e, "during the QUIC handshake")),
                Err(_) => {
                    return Err((
                        ErrorKind::Timeout,
                        format!(
                            "no QUIC handshake with UDP {} within {:?} (the connect timeout): \
                             is an HTTP/3 server listening on that UDP port?",
                            run.addr, run.connect_timeout
                        ),
                    ))
                }
            },
        };
        let handshake = t0.elapsed();
        let mut live = Live {
            connection: connection.clone(),
            handshake,
            run: run.clone(),
            driver: None,
            answered: Cell::new(0),
            early,
            requests_early: Cell::new(0),
            requests_rejected: Cell::new(0),
            requests_moved: Cell::new(0),
        };
        let quic = h3_quinn::Connection::new(connection);
        let built = tokio::time::timeout(run.connect_timeout, h3::client::new(quic)).await;
        let (mut driver, sender) = match built {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return Err(classify_h3_setup(&e)),
            Err(_) => {
                return Err((
                    ErrorKind::Timeout,
                    "the HTTP/3 control streams did not open within the connect timeout".into(),
                ))
            }
        };
        // h3's connection must be polled for its control streams (SETTINGS, GOAWAY) to be
        // read: a task of its own, ended with the connection.
        live.driver = Some(tokio::task::spawn_local(async move {
            std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        }));
        let now = Instant::now();
        shared
            .recorder
            .borrow_mut()
            .record_connection(now, handshake);
        Ok((live, sender))
    }

    /// The next request, prepared: fixed ones once per run, templated ones each time.
    pub(crate) fn pick<T: Transport>(
        &self,
        shared: &Shared<T>,
        global: Option<u64>,
        rendered: &mut Vec<u8>,
    ) -> Result<Rc<Prepared>, String> {
        self.fixed.pick(shared, global, rendered)
    }
}

/// An open connection: its requests go through [`Live::sender`]; when it is dropped (its
/// slot ended, or the worker stopped) it closes and its QUIC figures are added to the run's.
pub(crate) struct Live {
    connection: quinn::Connection,
    handshake: Duration,
    run: Arc<H3Run>,
    driver: Option<tokio::task::JoinHandle<()>>,
    /// Responses it carried, for the requests-per-connection figures (counted when it
    /// closes, however its slot ended).
    pub(crate) answered: Cell<u64>,
    /// A 0-RTT connection's handshake, watched.
    early: Option<Early>,
    /// Requests answered that went in 0-RTT; requests it could not carry, sent on another
    /// connection: 0-RTT rejected, or never sent because of GOAWAY.
    requests_early: Cell<u64>,
    requests_rejected: Cell<u64>,
    requests_moved: Cell<u64>,
}

impl Live {
    pub(crate) fn answered_one(&self) {
        self.answered.set(self.answered.get() + 1);
    }

    /// [`exchange_until`] on this connection, keeping 0-RTT's rule: while the handshake is
    /// under way, a request with a safe method (GET, HEAD, OPTIONS, TRACE: RFC 9110 §9.2.1)
    /// goes at once, in early data; any other waits for the handshake, since early data can
    /// be replayed by an attacker (RFC 9114 §10.9, RFC 8470). A request the server rejected
    /// with the early data fails `unprocessed` and `early_rejected`, for another connection.
    pub(crate) async fn exchange(
        &self,
        sender: &mut Sender,
        prepared: &Prepared,
        scheduled: Option<Instant>,
        limits: (Instant, Duration),
        capture: Option<&mut Captured>,
    ) -> Result<Sample, Failed> {
        let Some(early) = self.early.as_ref().filter(|e| e.outcome().is_none()) else {
            return exchange_until(sender, prepared, scheduled, limits, capture).await;
        };
        if !prepared.head.method().is_safe() {
            let waited = tokio::time::timeout_at(limits.0.into(), early.ended()).await;
            if waited.is_err() {
                return Err(Failed {
                    kind: ErrorKind::Timeout,
                    message: format!(
                        "no complete response within {:?}: the request (not safe to send \
                         in 0-RTT) waited for a QUIC handshake that did not end",
                        limits.1
                    ),
                    connection_over: false,
                    unprocessed: false,
                    early_rejected: false,
                });
            }
        }
        let sent_early = early.outcome().is_none();
        if early.outcome() == Some(EarlyData::Rejected) {
            return Err(Failed::early_rejected(ErrorKind::Write));
        }
        let ended = exchange_until(sender, prepared, scheduled, limits, capture).await;
        match ended {
            Ok(sample) => {
                if sent_early {
                    self.requests_early.set(self.requests_early.get() + 1);
                }
                Ok(sample)
            }
            Err(failed) if early.outcome() == Some(EarlyData::Rejected) => {
                Err(Failed::early_rejected(failed.kind))
            }
            Err(failed) => Err(failed),
        }
    }

    /// A request this connection could not carry goes to another: counted apart from retries
    /// (the server never processed it): 0-RTT rejected, or not sent after GOAWAY.
    pub(crate) fn moved(&self, failed: &Failed) {
        let count = match failed.early_rejected {
            true => &self.requests_rejected,
            false => &self.requests_moved,
        };
        count.set(count.get() + 1);
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        crate::carried::connection_ended(self.answered.get());
        // Known before the close (after it, the handshake's end reads as the connection's).
        let zero_rtt = (self.early.as_ref()).map(|e| e.outcome().unwrap_or(EarlyData::Unknown));
        // H3_NO_ERROR: the client is done; anything still open was abandoned at the stop.
        self.connection.close(0x100u32.into(), b"done");
        if let Some(driver) = self.driver.take() {
            driver.abort();
        }
        let stats = self.connection.stats();
        let handshake = (self.early.as_ref())
            .and_then(Early::handshake)
            .unwrap_or(self.handshake);
        self.run.closed(&QuicConnection {
            handshake,
            zero_rtt,
            requests_early: self.requests_early.get(),
            requests_rejected: self.requests_rejected.get(),
            requests_moved: self.requests_moved.get(),
            packets_sent: stats.path.sent_packets,
            packets_lost: stats.path.lost_packets,
            bytes_lost: stats.path.lost_bytes,
            congestion_events: stats.path.congestion_events,
            cwnd: stats.path.cwnd,
            rtt: stats.path.rtt,
            datagrams_sent: stats.udp_tx.datagrams,
            datagrams_received: stats.udp_rx.datagrams,
            udp_bytes_sent: stats.udp_tx.bytes,
            udp_bytes_received: stats.udp_rx.bytes,
        });
    }
}

/// A request that ended without a response: its kind and message, whether the connection
/// it was on is over (the slot then opens another), and whether the server certainly did
/// not process it (never sent after a GOAWAY, or refused with H3_REQUEST_REJECTED: it may
/// be sent again, as HTTP/2 does with REFUSED_STREAM).
pub(crate) struct Failed {
    pub kind: ErrorKind,
    pub message: String,
    pub connection_over: bool,
    pub unprocessed: bool,
    /// The server rejected the connection's 0-RTT data, this request with it.
    pub early_rejected: bool,
}

impl Failed {
    fn early_rejected(kind: ErrorKind) -> Failed {
        Failed {
            kind,
            message: "the server rejected 0-RTT (early data) and did not process the request \
                      (it did not know the ticket, or refuses early data)"
                .into(),
            connection_over: true,
            unprocessed: true,
            early_rejected: true,
        }
    }
}

/// Where a request was when its time ran out: a timeout names what it was waiting for (a
/// server that stops granting stream or flow-control credit is told from a slow one).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Phase {
    /// Opening a stream and sending the head: waits for the server's MAX_STREAMS credit,
    /// and for flow-control credit for the HEADERS frame.
    Opening,
    /// Sending the body: waits for the server's flow-control credit (its stream and
    /// connection receive windows).
    SendingBody,
    /// Sent whole; waiting for the response's head.
    Waiting,
    /// Reading the response's body.
    Reading,
}

impl Phase {
    fn timeout_message(self, timeout: Duration) -> String {
        let what = match self {
            Phase::Opening => {
                "the request never started: no stream credit from the server (its MAX_STREAMS \
                 limit reached and not raised) or no flow-control credit for the head"
            }
            Phase::SendingBody => {
                "the request body was not all sent: the server stopped granting flow-control \
                 credit (its receive window stayed full)"
            }
            Phase::Waiting => "the request was sent whole; no response head came",
            Phase::Reading => "the response's body was still coming",
        };
        format!("no complete response within {timeout:?}: {what}")
    }
}

/// [`exchange`] bounded by `deadline`: a timeout is a failure naming the request's phase.
pub(crate) async fn exchange_until(
    sender: &mut Sender,
    prepared: &Prepared,
    scheduled: Option<Instant>,
    (deadline, timeout): (Instant, Duration),
    capture: Option<&mut Captured>,
) -> Result<Sample, Failed> {
    let phase = Cell::new(Phase::Opening);
    let exchanged = exchange(sender, prepared, scheduled, &phase, capture);
    match tokio::time::timeout_at(deadline.into(), exchanged).await {
        Ok(ended) => ended,
        Err(_) => Err(Failed {
            kind: ErrorKind::Timeout,
            message: phase.get().timeout_message(timeout),
            connection_over: false,
            unprocessed: false,
            early_rejected: false,
        }),
    }
}

/// One request on a new stream of `sender`: the head, the body, then the response read to
/// its end, `phase` following it. Latency counts from `scheduled` when given.
async fn exchange(
    sender: &mut Sender,
    prepared: &Prepared,
    scheduled: Option<Instant>,
    phase: &Cell<Phase>,
    mut capture: Option<&mut Captured>,
) -> Result<Sample, Failed> {
    let started = Instant::now();
    let mut stream = (sender.send_request(prepared.head.clone()).await)
        .map_err(|e| stream_failure(e, ErrorKind::Write))?;
    if !prepared.body.is_empty() {
        phase.set(Phase::SendingBody);
        (stream.send_data(prepared.body.clone()).await)
            .map_err(|e| stream_failure(e, ErrorKind::Write))?;
    }
    (stream.finish().await).map_err(|e| stream_failure(e, ErrorKind::Write))?;
    phase.set(Phase::Waiting);
    let response =
        (stream.recv_response().await).map_err(|e| stream_failure(e, ErrorKind::Read))?;
    phase.set(Phase::Reading);
    let first_byte = Instant::now();
    let mut bytes_read = request::field_bytes(response.headers()) + 1;
    if let Some(c) = capture.as_deref_mut() {
        c.head(&response);
    }
    while let Some(chunk) =
        (stream.recv_data().await).map_err(|e| stream_failure(e, ErrorKind::Read))?
    {
        bytes_read += chunk.remaining() as u64;
        if let Some(c) = capture.as_deref_mut() {
            c.push(chunk.chunk());
        }
    }
    Ok(Sample {
        scheduled,
        started,
        first_byte,
        ended: Instant::now(),
        status: response.status().as_u16(),
        bytes_read,
        bytes_written: prepared.bytes_written,
    })
}

/// A response kept for `--check` (issue 17): its head in HTTP/1.1's form (`HTTP/1.1 200`,
/// then each field as `name: value`), then its body, as the HTTP/2 driver keeps it, so the
/// one parser the checks use reads it. Bytes past [`crate::checks::CAPTURE_LIMIT`] are not
/// kept.
#[derive(Default)]
pub(crate) struct Captured {
    pub bytes: Vec<u8>,
    pub overflow: bool,
}

impl Captured {
    fn head(&mut self, response: &http::Response<()>) {
        self.bytes.clear();
        self.overflow = false;
        let line = format!("HTTP/1.1 {} \r\n", response.status().as_u16());
        self.push(line.as_bytes());
        for (name, value) in response.headers() {
            self.push(name.as_str().as_bytes());
            self.push(b": ");
            self.push(value.as_bytes());
            self.push(b"\r\n");
        }
        self.push(b"\r\n");
    }

    fn push(&mut self, bytes: &[u8]) {
        let room = crate::checks::CAPTURE_LIMIT.saturating_sub(self.bytes.len());
        self.overflow |= bytes.len() > room;
        (self.bytes).extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

/// Records a response, with its checks when the run has some (judged on `captured`, which
/// holds the response when a check reads headers or the body).
pub(crate) fn settle_response<T: Transport>(
    shared: &Shared<T>,
    sample: &Sample,
    captured: &Captured,
) {
    let (raw, overflow) = (&captured.bytes, captured.overflow);
    crate::settle::response_checked(
        &shared.recorder,
        shared.checks.as_ref(),
        sample,
        raw,
        overflow,
    );
}

/// Whether the run's checks read a response's headers or body.
pub(crate) fn wants_capture<T: Transport>(shared: &Shared<T>) -> bool {
    shared.checks.as_ref().is_some_and(|c| c.capture)
}

/// H3_REQUEST_REJECTED (RFC 9114 §8.1): the server did not process the request.
const H3_REQUEST_REJECTED: u64 = 0x10b;

/// A stream's failure, classified: the connection's end (with its code) or the stream's.
fn stream_failure(e: h3::error::StreamError, kind: ErrorKind) -> Failed {
    use h3::error::StreamError;
    match e {
        // A graceful close (H3_NO_ERROR, after a GOAWAY) with the request still open: a
        // server closes so only once it answered all it processed (RFC 9114 §5.2).
        StreamError::ConnectionError { 0: c, .. } if c.is_h3_no_error() => Failed {
            kind,
            message: "the server closed the connection (H3_NO_ERROR, after GOAWAY) without \
                      answering: request not processed"
                .into(),
            connection_over: true,
            unprocessed: true,
            early_rejected: false,
        },
        StreamError::ConnectionError { 0: c, .. } => {
            let (kind, message) = classify_h3_connection(&c);
            Failed {
                kind,
                message,
                connection_over: true,
                unprocessed: false,
                early_rejected: false,
            }
        }
        StreamError::RemoteClosing { .. } => Failed {
            kind,
            message: "the server is closing the connection (HTTP/3 GOAWAY): request not sent"
                .into(),
            connection_over: true,
            unprocessed: true,
            early_rejected: false,
        },
        StreamError::RemoteTerminate { code, .. } => Failed {
            kind,
            message: format!("the server reset the stream ({code})"),
            connection_over: false,
            unprocessed: code.value() == H3_REQUEST_REJECTED,
            early_rejected: false,
        },
        other => Failed {
            kind: ErrorKind::Protocol,
            message: format!("HTTP/3 stream: {other}"),
            connection_over: false,
            unprocessed: false,
            early_rejected: false,
        },
    }
}

fn classify_h3_connection(e: &h3::error::ConnectionError) -> (ErrorKind, String) {
    use h3::error::ConnectionError;
    use h3::quic::ConnectionErrorIncoming as Incoming;
    match e {
        ConnectionError::Timeout { .. } => (
            ErrorKind::Timeout,
            "the QUIC connection timed out (no packet from the server within its idle timeout)"
                .into(),
        ),
        // h3-quinn passes QUIC's own ends (a stateless reset, a transport error) through
        // untyped: quinn's error names them best.
        ConnectionError::Remote {
            0: Incoming::Undefined(inner),
            ..
        } if inner.downcast_ref::<quinn::ConnectionError>().is_some() => {
            let quic = inner.downcast_ref::<quinn::ConnectionError>();
            classify_connection(quic.unwrap(), "while requests were under way")
        }
        ConnectionError::Remote { 0: incoming, .. } => (
            ErrorKind::Read,
            format!("the HTTP/3 connection ended: {incoming}"),
        ),
        other => (
            ErrorKind::Protocol,
            format!("the HTTP/3 connection ended: {other}"),
        ),
    }
}

/// A failure while h3 opened its control streams: a QUIC end there (a stateless reset from a
/// server that lost the connection's state right after the handshake, a close, a silent
/// peer) is classified as it is once requests are under way; anything else is h3's own
/// (`protocol`).
fn classify_h3_setup(e: &h3::error::ConnectionError) -> (ErrorKind, String) {
    use h3::error::ConnectionError;
    use h3::quic::ConnectionErrorIncoming as Incoming;
    match e {
        ConnectionError::Remote {
            0: Incoming::Undefined(inner),
            ..
        } => match inner.downcast_ref::<quinn::ConnectionError>() {
            Some(quic) => classify_connection(quic, "while HTTP/3 was being set up"),
            None => (ErrorKind::Protocol, format!("HTTP/3 setup: {e}")),
        },
        _ => (ErrorKind::Protocol, format!("HTTP/3 setup: {e}")),
    }
}

/// A QUIC connection's end, classified: TLS alerts (a certificate not trusted, no `h3` with
/// ALPN) are `tls`, a silent peer a `timeout`, a server's close or reset a `read` naming it.
pub(crate) fn classify_connection(e: &quinn::ConnectionError, when: &str) -> (ErrorKind, String) {
    use quinn::ConnectionError as E;
    let crypto = |code: quinn::TransportErrorCode| {
        let code = u64::from(code);
        (0x100..0x200).contains(&code)
    };
    match e {
        E::TimedOut => (
            ErrorKind::Timeout,
            format!("the QUIC connection timed out {when} (no packet within the idle timeout)"),
        ),
        E::TransportError(t) if crypto(t.code) => (ErrorKind::Tls, tls_message(&t.to_string())),
        E::ConnectionClosed(c) if crypto(c.error_code) => {
            (ErrorKind::Tls, tls_message(&c.to_string()))
        }
        E::ApplicationClosed(c) => (
            ErrorKind::Read,
            format!("the server closed the QUIC connection {when}: {c}"),
        ),
        E::Reset => (
            ErrorKind::Read,
            format!("the server sent a stateless reset {when} (it lost the connection's state)"),
        ),
        E::CidsExhausted => (ErrorKind::Resource, format!("QUIC: {e}")),
        other => (ErrorKind::Protocol, format!("QUIC {when}: {other}")),
    }
}

fn tls_message(what: &str) -> String {
    let hint = if what.contains("no_application_protocol") || what.contains("120") {
        " (the server does not offer HTTP/3: ALPN h3 refused)"
    } else if what.contains("certificate") || what.contains("UnknownIssuer") {
        " (use --cacert with the server's CA, or --insecure for a test server)"
    } else {
        ""
    };
    format!("QUIC TLS handshake failed: {what}{hint}")
}

/// A request under way: counted in flight if the worker stops it before it ends.
pub(crate) struct Flight<'a> {
    in_flight: &'a Cell<u64>,
    ended: bool,
}

impl<'a> Flight<'a> {
    pub(crate) fn new(in_flight: &'a Cell<u64>) -> Self {
        Flight {
            in_flight,
            ended: false,
        }
    }

    pub(crate) fn ended(mut self) {
        self.ended = true;
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.in_flight.set(self.in_flight.get() + 1);
        }
    }
}
