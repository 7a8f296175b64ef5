//! A virtual user's WebSocket steps: a session of its own to the step's URL, opened at the
//! first step that names it and kept across steps and iterations while the steps name the
//! same URL (a step naming another closes it first), closed politely when the user leaves.
//! A step sends its `body` as one text message (none when the body is empty) and waits for
//! the next data message, the reply; pings are answered and pongs skipped on the way.
//!
//! Counted as every request is: one sample per step, its latency from the message's write
//! (or the iteration's intended start, for an open model's first step) to the read that
//! completed the reply, its bytes the frames both ways. The reply counts as a response with
//! status 200 (a reply has no status; checks say whether it was right), and its payload is
//! what the step's checks and extractions read. The upgrade is the connection's set-up, timed
//! as a connect. A server Close, a dropped connection, a frame that breaks RFC 6455, or no
//! reply within `--timeout` fail the step with its kind and end the session.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use loadmark_metrics::{ErrorKind, Recorder, Sample};
use loadmark_plan::{next_random, RenderContext};
use loadmark_wire::ws::frame::{self, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT};
use loadmark_wire::ws::handshake;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{Me, ScenarioShared, StepRun, User};
use crate::checks::CAPTURE_LIMIT;
use crate::connection::Shared;
use crate::transport::{classify_io, Transport};
use crate::ws::upgrade::{upgrade, Failure};

/// A user's open WebSocket session.
pub(crate) struct Session<S> {
    stream: S,
    /// The path (and query) it was opened to.
    path: String,
    /// Bytes read and not yet parsed.
    unread: Vec<u8>,
    /// The last reply's payload (up to the capture limit) and whether it was longer.
    reply: Vec<u8>,
    overflow: bool,
    answered: u64,
    rng: u64,
}

impl<S: AsyncWrite + Unpin> Session<S> {
    /// The session leaves: a Close (1000) goes out, best effort and briefly, and its bytes
    /// count in the totals.
    pub(super) async fn close(mut self, recorder: &RefCell<Recorder>) {
        let mut out = Vec::new();
        let mask = mask(&mut self.rng);
        frame::encode(&mut out, OP_CLOSE, &1000u16.to_be_bytes(), mask);
        let wrote = tokio::time::timeout(Duration::from_millis(100), self.stream.write_all(&out));
        if matches!(wrote.await, Ok(Ok(()))) {
            recorder
                .borrow_mut()
                .record_bytes(Instant::now(), 0, out.len() as u64);
        }
        crate::carried::connection_ended(self.answered);
    }
}

impl<S> Session<S> {
    /// The last reply, for the step's checks and extractions.
    pub(super) fn reply(&self) -> (&[u8], bool) {
        (&self.reply, self.overflow)
    }
}

/// Runs WebSocket step `run`: the session (opened, or another one's closed first), the
/// message and its reply. `due` is the iteration's intended start.
pub(super) async fn perform<T: Transport>(
    shared: &Shared<T>,
    sc: &ScenarioShared,
    run: &StepRun,
    user: &mut User<T::Stream>,
    due: Option<Instant>,
    seq: u64,
) -> Result<Sample, (ErrorKind, String)> {
    let (path, headers, message) = render(sc, run, &mut user.me, seq);
    if user.ws.as_ref().is_some_and(|s| s.path != path) {
        let other = user.ws.take().expect("checked");
        other.close(&shared.recorder).await;
    }
    if user.ws.is_none() {
        let began = Instant::now();
        let rng = &mut user.me.rng;
        let key = handshake::key([next_random(rng), next_random(rng)]);
        let request = handshake::request_to(&path, &sc.host, &key, &headers);
        let mut unread = Vec::new();
        let opened = upgrade(shared, (&request, &key), shared.timeout, &mut unread)
            .await
            .map_err(|f| (f.kind, f.message))?;
        let now = Instant::now();
        shared
            .recorder
            .borrow_mut()
            .record_connection(now, now - began);
        user.ws = Some(Session {
            stream: opened.stream,
            path,
            unread,
            reply: Vec::new(),
            overflow: false,
            answered: 0,
            rng: next_random(rng) | 1,
        });
    }
    let session = user.ws.as_mut().expect("opened above");
    let mut out = Vec::new();
    if !message.is_empty() {
        let mask = mask(&mut session.rng);
        frame::encode(&mut out, OP_TEXT, &message, mask);
    }
    let started = Instant::now();
    let mut exchange = Exchange {
        session,
        moved: (0, out.len() as u64),
        recorder: &shared.recorder,
        in_flight: &shared.in_flight,
        done: false,
    };
    let timeout = shared.timeout;
    let ended = tokio::time::timeout(timeout, exchange.run(&out)).await;
    exchange.done = true;
    let (read, written) = exchange.moved;
    drop(exchange);
    let failure = match ended {
        Ok(Ok(arrived)) => {
            if let Some(session) = user.ws.as_mut() {
                session.answered += 1;
            }
            return Ok(Sample {
                scheduled: due,
                started,
                first_byte: arrived,
                ended: arrived,
                status: 200,
                bytes_read: read,
                bytes_written: written,
            });
        }
        Ok(Err(failure)) => failure,
        Err(_) => Failure {
            kind: ErrorKind::Timeout,
            message: format!("no WebSocket reply within {timeout:?} (--timeout)"),
        },
    };
    // The session is over: what it moved for this step counts without a sample.
    shared
        .recorder
        .borrow_mut()
        .record_bytes(Instant::now(), read, written);
    if let Some(session) = user.ws.take() {
        crate::carried::connection_ended(session.answered);
    }
    Err((failure.kind, failure.message))
}

/// One step's message and reply on a session; dropped mid-way (the run's hard stop), the
/// step counts as in flight and its bytes go to the totals.
struct Exchange<'a, S> {
    session: &'a mut Session<S>,
    /// Bytes read and written so far by this step.
    moved: (u64, u64),
    recorder: &'a RefCell<Recorder>,
    in_flight: &'a Cell<u64>,
    done: bool,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Exchange<'_, S> {
    /// Writes `message` and reads until a whole data message came: when it did.
    async fn run(&mut self, message: &[u8]) -> Result<Instant, Failure> {
        let s = &mut *self.session;
        s.stream.write_all(message).await.map_err(|e| Failure {
            kind: classify_io(&e, ErrorKind::Write),
            message: format!("writing a WebSocket message: {e}"),
        })?;
        let mut opcode = None;
        s.reply.clear();
        s.overflow = false;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            while let Some(h) = frame::parse_header(&s.unread, CAPTURE_LIMIT * 16)
                .map_err(|e| protocol(&e.to_string()))?
            {
                if s.unread.len() < h.frame_len() {
                    break;
                }
                let payload = &s.unread[h.header_len..h.frame_len()];
                let mut whole = false;
                match h.opcode {
                    OP_PING => {
                        let mut pong = Vec::new();
                        let mask = mask(&mut s.rng);
                        frame::encode(&mut pong, OP_PONG, payload, mask);
                        s.stream.write_all(&pong).await.map_err(|e| Failure {
                            kind: classify_io(&e, ErrorKind::Write),
                            message: format!("answering a ping: {e}"),
                        })?;
                        self.moved.1 += pong.len() as u64;
                    }
                    OP_PONG => {}
                    OP_CLOSE => {
                        let (code, reason) =
                            frame::parse_close(payload).map_err(|e| protocol(&e.to_string()))?;
                        return Err(Failure {
                            kind: ErrorKind::Closed,
                            message: format!(
                                "the server closed the session before replying: {code} {reason}"
                            ),
                        });
                    }
                    OP_CONTINUATION if opcode.is_none() => {
                        return Err(protocol("a continuation frame with no message begun"));
                    }
                    op => {
                        if op != OP_CONTINUATION && opcode.replace(op).is_some() {
                            return Err(protocol("a new message inside a fragmented one"));
                        }
                        let room = CAPTURE_LIMIT.saturating_sub(s.reply.len());
                        s.overflow |= payload.len() > room;
                        s.reply
                            .extend_from_slice(&payload[..payload.len().min(room)]);
                        whole = h.fin;
                    }
                }
                s.unread.drain(..h.frame_len());
                if whole {
                    return Ok(Instant::now());
                }
            }
            let n = s.stream.read(&mut chunk).await.map_err(|e| Failure {
                kind: classify_io(&e, ErrorKind::Read),
                message: format!("reading a WebSocket reply: {e}"),
            })?;
            if n == 0 {
                return Err(Failure {
                    kind: ErrorKind::Closed,
                    message: "the server ended the connection without a Close, before replying"
                        .into(),
                });
            }
            self.moved.0 += n as u64;
            s.unread.extend_from_slice(&chunk[..n]);
        }
    }
}

impl<S> Drop for Exchange<'_, S> {
    fn drop(&mut self) {
        if !self.done {
            self.in_flight.set(self.in_flight.get() + 1);
            if let Ok(mut recorder) = self.recorder.try_borrow_mut() {
                recorder.record_bytes(Instant::now(), self.moved.0, self.moved.1);
            }
        }
    }
}

fn protocol(what: &str) -> Failure {
    Failure {
        kind: ErrorKind::Protocol,
        message: format!("WebSocket: {what}"),
    }
}

fn mask(rng: &mut u64) -> [u8; 4] {
    (next_random(rng) as u32).to_ne_bytes()
}

/// The step's path (the target's prefix, then its own), header values and message, rendered
/// with the user's variables.
fn render(
    sc: &ScenarioShared,
    run: &StepRun,
    me: &mut Me,
    seq: u64,
) -> (String, Vec<(String, String)>, Vec<u8>) {
    let step = &run.step;
    let mut ctx = RenderContext {
        rng: &mut me.rng,
        seq,
        row: sc.rows.get(me.row).map_or(&[], Vec::as_slice),
        segment: sc.segment.index,
    };
    let mut path = sc.prefix.as_bytes().to_vec();
    step.path.render_with_vars(&mut ctx, &me.vars, &mut path);
    let mut headers: Vec<(String, String)> = sc
        .headers
        .iter()
        .filter(|(n, _)| !step.headers.iter().any(|(m, _)| m.eq_ignore_ascii_case(n)))
        .cloned()
        .collect();
    headers.push((
        "User-Agent".into(),
        concat!("loadmark/", env!("CARGO_PKG_VERSION")).into(),
    ));
    for (name, value) in &step.headers {
        let mut out = Vec::new();
        value.render_with_vars(&mut ctx, &me.vars, &mut out);
        headers.push((name.clone(), String::from_utf8_lossy(&out).into_owned()));
    }
    // The jar's cookies go with the upgrade, as a browser's do, unless a header says its own.
    let cookie = |(n, _): &(String, String)| n.eq_ignore_ascii_case("cookie");
    if sc.cookies && !headers.iter().any(cookie) {
        let mut line = Vec::new();
        me.jar.write_header(&mut line);
        if let Some(value) = line.strip_prefix(b"Cookie: ") {
            let value = String::from_utf8_lossy(value.strip_suffix(b"\r\n").unwrap_or(value));
            headers.push(("Cookie".into(), value.into_owned()));
        }
    }
    let mut message = Vec::new();
    step.body.render_with_vars(&mut ctx, &me.vars, &mut message);
    (
        String::from_utf8_lossy(&path).into_owned(),
        headers,
        message,
    )
}
