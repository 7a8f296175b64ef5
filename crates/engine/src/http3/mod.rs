//! HTTP/3 over QUIC (RFC 9114, issue 37): one connection carries `--streams` requests at
//! once, each on its own bidirectional QUIC stream. QUIC is quinn-proto's state machines,
//! driven by the worker's own endpoint loop ([`quic`]); HTTP/3's frames and QPACK are
//! `loadmark_wire::http3`'s. This folder is the driver: the closed loop in [`closed`], the
//! open loop in [`open`], and here what both share (the connection's handshake and life,
//! one request on a stream, how failures are classified).
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
//!   and the limit is never exceeded.
//! - **Failures**: a stream reset names its HTTP/3 error code (`read`, or `write` before the
//!   request was sent); a connection closed by the server (GOAWAY, an application close, a
//!   stateless reset, an idle timeout) fails the requests it carried with the close's code,
//!   and the slot opens a new connection. A server that breaks HTTP/3's rules on a stream
//!   fails that request (`protocol`, naming the rule); where the rule is the connection's
//!   (its control stream, QPACK), the client closes the connection with the RFC's code.
//!
//! Bytes: a sample counts its body bytes and its header fields (name and value lengths and
//! 32 bytes each, as QPACK counts them); what QUIC itself moved is in the QUIC figures (UDP
//! datagrams and bytes, packets lost).

pub(crate) mod closed;
mod conn;
pub(crate) mod open;
mod quic;
pub(crate) mod request;
mod socket;

use std::cell::Cell;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loadmark_metrics::{EarlyData, ErrorKind, QuicConnection, QuicFigures, QuicTally, Sample};
use loadmark_plan::TlsPolicy;
use loadmark_wire::http3::frame::{describe_code, H3_NO_ERROR, H3_REQUEST_REJECTED};
use quinn_proto::{ConnectionError, ConnectionHandle, StreamId};

use crate::connection::Shared;
use crate::transport::Transport;
use conn::{Closed, StreamEnd, WriteFailed};
pub(crate) use request::Prepared;

/// What every worker's HTTP/3 connections share for a run: where to connect and how, and
/// the QUIC figures of the connections that closed.
pub(crate) struct H3Run {
    client: quinn_proto::ClientConfig,
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
        let crypto = quinn_proto::crypto::rustls::QuicClientConfig::try_from(tls)
            .map_err(|e| format!("QUIC TLS setup: {e}"))?;
        let mut client = quinn_proto::ClientConfig::new(Arc::new(crypto));
        let mut transport = quinn_proto::TransportConfig::default();
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

/// A worker's HTTP/3 side: its QUIC endpoint and its prepared requests.
pub(crate) struct H3Shared {
    endpoint: Result<Rc<quic::Endpoint>, String>,
    pub(crate) run: Arc<H3Run>,
    fixed: request::Fixed,
}

impl H3Shared {
    /// Binds the worker's UDP socket and starts its endpoint's driver; call on the worker's
    /// event loop.
    pub(crate) fn new(run: Arc<H3Run>) -> Self {
        H3Shared {
            endpoint: quic::Endpoint::bind(run.addr),
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

    /// Opens a connection: QUIC's handshake (bounded by the connect timeout); the client's
    /// control stream opens when it ends, and the server's SETTINGS are read as they come.
    /// The handshake time goes to the recorder as the connection's connect time, and to the
    /// QUIC figures when the connection closes.
    ///
    /// With `--http3-0rtt` and a ticket from an earlier connection, the connection is usable
    /// at once (0-RTT): its connect time is the time to set it up, no round trip, and what
    /// the server does with the early data is known when the handshake ends.
    pub(crate) async fn connect<T: Transport>(
        &self,
        shared: &Shared<T>,
        early: bool,
    ) -> Result<(Live, Sender), (ErrorKind, String)> {
        let ep = (self.endpoint.as_ref()).map_err(|e| (ErrorKind::Resource, e.clone()))?;
        let run = &self.run;
        let t0 = Instant::now();
        let handle = ep
            .connect(
                run.client.clone(),
                run.addr,
                &run.server_name,
                run.zero_rtt && early,
            )
            .map_err(|m| (ErrorKind::Connect, m))?;
        let link = Sender {
            ep: ep.clone(),
            handle,
        };
        let early = ep.with(handle, |c| c.early.is_some()) == Some(true);
        if !early {
            let ready = poll_fn(|cx| ep.poll_ready(handle, cx));
            let failed = match tokio::time::timeout(run.connect_timeout, ready).await {
                Err(_) => Some((
                    ErrorKind::Timeout,
                    format!(
                        "no QUIC handshake with UDP {} within {:?} (the connect timeout): is an \
                         HTTP/3 server listening on that UDP port?",
                        run.addr, run.connect_timeout
                    ),
                )),
                Ok(()) => match ep.with(handle, |c| Closed::of(c)).flatten() {
                    Some(Closed::Lost(e)) => {
                        Some(classify_connection(&e, "during the QUIC handshake"))
                    }
                    Some(Closed::Broken(e)) => {
                        Some((ErrorKind::Protocol, format!("HTTP/3 setup: {e}")))
                    }
                    _ => None,
                },
            };
            if let Some(failed) = failed {
                ep.release(handle);
                return Err(failed);
            }
        }
        let handshake = t0.elapsed();
        shared
            .recorder
            .borrow_mut()
            .record_connection(Instant::now(), handshake);
        let live = Live {
            link: link.clone(),
            handshake,
            run: run.clone(),
            answered: Cell::new(0),
            requests_early: Cell::new(0),
            requests_rejected: Cell::new(0),
            requests_moved: Cell::new(0),
        };
        Ok((live, link))
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

/// A connection, as its requests reach it: the worker's endpoint and the connection's handle
/// there.
#[derive(Clone)]
pub(crate) struct Sender {
    ep: Rc<quic::Endpoint>,
    handle: ConnectionHandle,
}

/// An open connection: its requests go through its [`Sender`]; when it is dropped (its slot
/// ended, or the worker stopped) it closes and its QUIC figures are added to the run's.
pub(crate) struct Live {
    link: Sender,
    handshake: Duration,
    run: Arc<H3Run>,
    /// Responses it carried, for the requests-per-connection figures (counted when it
    /// closes, however its slot ended).
    pub(crate) answered: Cell<u64>,
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
        let (ep, handle) = (&sender.ep, sender.handle);
        let outcome = ep.with(handle, |c| c.early.map(|e| e.outcome)).flatten();
        if outcome == Some(None) && !prepared.safe {
            let ready = poll_fn(|cx| ep.poll_ready(handle, cx));
            if tokio::time::timeout_at(limits.0.into(), ready)
                .await
                .is_err()
            {
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
        let (ended, early) = exchange_until(sender, prepared, scheduled, limits, capture).await;
        if ended.is_ok() && early {
            self.requests_early.set(self.requests_early.get() + 1);
        }
        ended
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
        // H3_NO_ERROR: the client is done; anything still open was abandoned at the stop.
        let Some((stats, early)) = self.link.ep.release(self.link.handle) else {
            return;
        };
        let zero_rtt = early.map(|e| e.outcome.unwrap_or(EarlyData::Unknown));
        let handshake = (early.and_then(|e| e.ended_after)).unwrap_or(self.handshake);
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
/// Also says whether the request went in 0-RTT data.
pub(crate) async fn exchange_until(
    sender: &mut Sender,
    prepared: &Prepared,
    scheduled: Option<Instant>,
    (deadline, timeout): (Instant, Duration),
    capture: Option<&mut Captured>,
) -> (Result<Sample, Failed>, bool) {
    let phase = Cell::new(Phase::Opening);
    let early = Cell::new(false);
    let exchanged = exchange(sender, prepared, scheduled, &phase, &early, capture);
    let ended = match tokio::time::timeout_at(deadline.into(), exchanged).await {
        Ok(ended) => ended,
        Err(_) => Err(Failed {
            kind: ErrorKind::Timeout,
            message: phase.get().timeout_message(timeout),
            connection_over: false,
            unprocessed: false,
            early_rejected: false,
        }),
    };
    (ended, early.get())
}

/// A request's stream while its request runs: dropped before the response ended (a timeout,
/// the worker's stop), the stream is reset so the server stops working on it.
struct Open<'a> {
    sender: &'a Sender,
    id: StreamId,
    armed: bool,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.sender.ep.abandon(self.sender.handle, self.id);
        }
    }
}

/// One request on a new stream of `sender`: the head, the body, then the response read to
/// its end, `phase` following it. Latency counts from `scheduled` when given.
async fn exchange(
    sender: &mut Sender,
    prepared: &Prepared,
    scheduled: Option<Instant>,
    phase: &Cell<Phase>,
    early: &Cell<bool>,
    capture: Option<&mut Captured>,
) -> Result<Sample, Failed> {
    let started = Instant::now();
    let (ep, handle) = (&sender.ep, sender.handle);
    let keep = capture.is_some().then_some(crate::checks::CAPTURE_LIMIT);
    let id = poll_fn(|cx| ep.poll_open(handle, keep, cx))
        .await
        .map_err(|c| closed_failure(c, ErrorKind::Write))?;
    let mut open = Open {
        sender,
        id,
        armed: true,
    };
    write_all(sender, id, &prepared.headers).await?;
    if !prepared.body.is_empty() {
        phase.set(Phase::SendingBody);
        write_all(sender, id, &prepared.data_head()).await?;
        write_all(sender, id, &prepared.body).await?;
    }
    ep.finish(handle, id);
    phase.set(Phase::Waiting);
    let head = Cell::new(false);
    let answer = poll_fn(|cx| {
        let polled = ep.poll_response(handle, id, &head, cx);
        if head.get() {
            phase.set(Phase::Reading);
        }
        polled
    })
    .await;
    // poll_response forgot the stream, however it ended.
    open.armed = false;
    let mut answer = answer.map_err(|c| closed_failure(c, ErrorKind::Read))?;
    early.set(answer.early);
    match answer.end {
        StreamEnd::Answered => {}
        end => return Err(end_failure(end, ErrorKind::Read)),
    }
    // The arrival of the datagram that ended the response, not the moment it was read: the
    // driver may have left it in the socket for its next turn.
    let ended = answer.ended.unwrap_or_else(Instant::now).max(started);
    if let (Some(c), Some(kept)) = (capture, answer.response.take_kept()) {
        c.bytes = kept.bytes;
        c.overflow = kept.overflow;
    }
    Ok(Sample {
        scheduled,
        started,
        first_byte: answer.first_byte.map_or(ended, |t| t.clamp(started, ended)),
        ended,
        status: answer.response.status(),
        bytes_read: answer.response.bytes_read(),
        bytes_written: prepared.bytes_written,
    })
}

/// Writes all of `bytes` to the stream, waiting for credit as needed.
async fn write_all(sender: &Sender, id: StreamId, bytes: &[u8]) -> Result<(), Failed> {
    let mut at = 0;
    while at < bytes.len() {
        match poll_fn(|cx| sender.ep.write(sender.handle, id, &bytes[at..], cx)).await {
            Ok(n) => at += n,
            Err(WriteFailed::Ended(end)) => return Err(end_failure(end, ErrorKind::Write)),
            Err(WriteFailed::Closed(c)) => return Err(closed_failure(c, ErrorKind::Write)),
        }
    }
    Ok(())
}

/// A request stream that ended without a response, classified.
fn end_failure(end: StreamEnd, kind: ErrorKind) -> Failed {
    let failed = |kind, message: String, unprocessed| Failed {
        kind,
        message,
        connection_over: false,
        unprocessed,
        early_rejected: false,
    };
    match end {
        // Not reached: a write after the answer is taken as done, and the answer read.
        StreamEnd::Answered => {
            debug_assert!(false, "an answered stream is not a failure");
            failed(kind, "the stream ended answered".into(), false)
        }
        StreamEnd::Reset(code) => failed(
            kind,
            format!("the server reset the stream ({})", describe_code(code)),
            code == H3_REQUEST_REJECTED,
        ),
        StreamEnd::Stopped(code) => failed(
            ErrorKind::Write,
            format!(
                "the server reset the stream (STOP_SENDING with {}) before the request was sent",
                describe_code(code)
            ),
            code == H3_REQUEST_REJECTED,
        ),
        StreamEnd::Broken(e) => Failed {
            connection_over: e.connection,
            ..failed(ErrorKind::Protocol, format!("HTTP/3 response: {e}"), false)
        },
        StreamEnd::EarlyRejected => Failed::early_rejected(kind),
    }
}

/// A request that found its connection over, classified.
fn closed_failure(closed: Closed, kind: ErrorKind) -> Failed {
    let over = |kind, message: String, unprocessed| Failed {
        kind,
        message,
        connection_over: true,
        unprocessed,
        early_rejected: false,
    };
    match closed {
        // A graceful close (H3_NO_ERROR, after a GOAWAY) with the request still open: a
        // server closes so only once it answered all it processed (RFC 9114 §5.2).
        Closed::Lost(ConnectionError::ApplicationClosed(c))
            if c.error_code.into_inner() == H3_NO_ERROR =>
        {
            over(
                kind,
                "the server closed the connection (H3_NO_ERROR, after GOAWAY) without \
                 answering: request not processed"
                    .into(),
                true,
            )
        }
        Closed::Lost(e) => {
            let (kind, message) = classify_connection(&e, "while requests were under way");
            over(kind, message, false)
        }
        Closed::Broken(e) => over(
            ErrorKind::Protocol,
            format!("the server broke HTTP/3, so the client closed the connection: {e}"),
            false,
        ),
        Closed::GoingAway => over(
            kind,
            "the server is closing the connection (HTTP/3 GOAWAY): request not sent".into(),
            true,
        ),
        Closed::EarlyRejected => Failed::early_rejected(kind),
        Closed::Gone => over(kind, "the connection was closed".into(), false),
    }
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

/// A QUIC connection's end, classified: TLS alerts (a certificate not trusted, no `h3` with
/// ALPN) are `tls`, a silent peer a `timeout`, a server's close or reset a `read` naming it.
pub(crate) fn classify_connection(e: &ConnectionError, when: &str) -> (ErrorKind, String) {
    use ConnectionError as E;
    let crypto = |code: quinn_proto::TransportErrorCode| {
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
        E::ApplicationClosed(c) => {
            let reason = String::from_utf8_lossy(&c.reason);
            let code = describe_code(c.error_code.into_inner());
            let reason = match reason.is_empty() {
                true => String::new(),
                false => format!(": {reason}"),
            };
            (
                ErrorKind::Read,
                format!("the server closed the QUIC connection {when} with {code}{reason}"),
            )
        }
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
    } else if what.contains("error 116") || what.contains("no certificates") {
        // TLS alert 116, certificate_required (RFC 8446 §6.2).
        " (the server requires a client certificate: --cert FILE, and --key FILE unless the \
         certificate's file holds the key)"
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
