//! What a session sends and what it makes of what arrives: frames parsed in place, data
//! messages counted and matched to what they answer, pings timed, messages built straight
//! into the write buffer.

use std::time::{Duration, Instant};

use loadmark_metrics::{ErrorKind, Recorder};
use loadmark_plan::{next_random, RenderContext, WsMode, WsPayload, MAX_WS_MESSAGE, WS_SEQ_BYTES};
use loadmark_wire::ws::frame::{
    self, Header, OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT,
};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::checks::View;
use crate::settle;

use super::session::{Failure, Live, Owed, KEPT_READ_CAPACITY};

impl<S: AsyncRead + AsyncWrite + Unpin> Live<'_, S> {
    /// Handles every complete frame read so far. `Ok(true)` when the server sent Close.
    pub(super) fn on_read(&mut self, now: Instant) -> Result<bool, Failure> {
        let protocol = |e: frame::FrameError| Failure {
            kind: ErrorKind::Protocol,
            message: e.to_string(),
        };
        loop {
            let unparsed = &self.bufs.read[self.rstart..self.rend];
            let Some(header) = frame::parse_header(unparsed, MAX_WS_MESSAGE).map_err(protocol)?
            else {
                break;
            };
            if unparsed.len() < header.frame_len() {
                // Wait for the rest, with room for all of it.
                self.make_room(header.frame_len() - unparsed.len());
                break;
            }
            let at = self.rstart + header.header_len;
            self.rstart += header.frame_len();
            if self.on_frame(header, at, now)? {
                return Ok(true);
            }
        }
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
            self.bufs.read.clear();
            // A buffer grown for a large frame is given back: idle sessions hold little.
            if self.bufs.read.capacity() > KEPT_READ_CAPACITY {
                self.bufs.read.shrink_to(KEPT_READ_CAPACITY);
            }
        }
        Ok(false)
    }

    /// Handles one frame whose payload is `bufs.read[at..at + header.payload_len]`.
    fn on_frame(&mut self, header: Header, at: usize, now: Instant) -> Result<bool, Failure> {
        let protocol = |e: frame::FrameError| Failure {
            kind: ErrorKind::Protocol,
            message: e.to_string(),
        };
        let range = at..at + header.payload_len;
        match header.opcode {
            OP_PING => {
                let mask = (next_random(&mut self.rng) as u32).to_ne_bytes();
                frame::encode(&mut self.bufs.write, OP_PONG, &self.bufs.read[range], mask);
                Ok(false)
            }
            OP_PONG => {
                let payload = &self.bufs.read[range];
                if let Ok(bytes) = <[u8; 8]>::try_from(payload) {
                    let number = u64::from_be_bytes(bytes);
                    while let Some(&(n, sent)) = self.pings.front() {
                        if n > number {
                            break;
                        }
                        self.pings.pop_front();
                        if n == number {
                            let mut rec = self.recorder.borrow_mut();
                            let stats = rec.websocket(now);
                            stats.pongs_received += 1;
                            loadmark_metrics::record_us(
                                &mut stats.ping_rtt,
                                u64::try_from((now - sent).as_micros()).unwrap_or(u64::MAX),
                            );
                        }
                    }
                }
                Ok(false)
            }
            OP_CLOSE => {
                let (code, reason) =
                    frame::parse_close(&self.bufs.read[range]).map_err(protocol)?;
                self.server_close = Some((code, reason.to_string()));
                *self
                    .recorder
                    .borrow_mut()
                    .websocket(now)
                    .close_codes
                    .entry(code)
                    .or_default() += 1;
                Ok(true)
            }
            OP_TEXT | OP_BINARY if self.frag_opcode.is_some() => {
                Err(protocol(frame::FrameError::BadContinuation))
            }
            OP_TEXT | OP_BINARY if header.fin => {
                let (start, end) = (range.start, range.end);
                self.on_message(header.opcode, Where::Read(start, end), now)?;
                Ok(false)
            }
            OP_TEXT | OP_BINARY => {
                self.frag_opcode = Some(header.opcode);
                self.bufs.fragments.clear();
                let payload = &self.bufs.read[range];
                self.bufs.fragments.extend_from_slice(payload);
                Ok(false)
            }
            OP_CONTINUATION => {
                let Some(opcode) = self.frag_opcode else {
                    return Err(protocol(frame::FrameError::BadContinuation));
                };
                let payload = &self.bufs.read[range];
                if self.bufs.fragments.len() + payload.len() > MAX_WS_MESSAGE {
                    return Err(protocol(frame::FrameError::TooLarge {
                        len: (self.bufs.fragments.len() + payload.len()) as u64,
                        limit: MAX_WS_MESSAGE,
                    }));
                }
                self.bufs.fragments.extend_from_slice(payload);
                if header.fin {
                    self.frag_opcode = None;
                    self.on_message(opcode, Where::Fragments, now)?;
                }
                Ok(false)
            }
            _ => unreachable!("parse_header refuses other opcodes"),
        }
    }

    /// A whole data message arrived: count it, and match it to what it answers.
    fn on_message(&mut self, opcode: u8, at: Where, now: Instant) -> Result<(), Failure> {
        let payload: &[u8] = match at {
            Where::Read(start, end) => &self.bufs.read[start..end],
            Where::Fragments => &self.bufs.fragments,
        };
        if opcode == OP_TEXT && std::str::from_utf8(payload).is_err() {
            return Err(Failure {
                kind: ErrorKind::Protocol,
                message: frame::FrameError::NotUtf8.to_string(),
            });
        }
        let mut rec = self.recorder.borrow_mut();
        let stats = rec.websocket(now);
        stats.messages_received += 1;
        stats.payload_bytes_received += payload.len() as u64;
        match self.ws.spec.mode {
            WsMode::Echo => {
                let seq = (payload.len() >= WS_SEQ_BYTES)
                    .then(|| read_seq(payload))
                    .flatten();
                // An echo of a message that already timed out is late: counted, not matched.
                if let (Some(seq), Some(front)) = (seq, self.owed.front()) {
                    if seq < front.seq {
                        return Ok(());
                    }
                }
                let Some(owed) = self.owed.pop_front() else {
                    return Ok(());
                };
                self.in_flight.set(self.in_flight.get() - 1);
                if payload.len() != owed.len || seq.is_some_and(|s| s != owed.seq) {
                    return Err(Failure {
                        kind: ErrorKind::Protocol,
                        message: format!(
                            "echo of {} bytes{} arrived where message #{} ({} bytes) was owed",
                            payload.len(),
                            seq.map(|s| format!(" carrying #{s}")).unwrap_or_default(),
                            owed.seq,
                            owed.len
                        ),
                    });
                }
                answered(&mut rec, &owed, now, self.timeout);
            }
            WsMode::Request => {
                let Some(owed) = self.owed.pop_front() else {
                    return Ok(());
                };
                self.in_flight.set(self.in_flight.get() - 1);
                if let (Some(field), Some(expected)) = (&self.ws.spec.reply_match, &owed.expect) {
                    let got = serde_json::from_slice::<serde_json::Value>(payload)
                        .ok()
                        .and_then(|v| v.get(field).cloned());
                    if got.as_ref() != Some(expected) {
                        return Err(Failure {
                            kind: ErrorKind::Protocol,
                            message: format!(
                                "reply's {field:?} is {}, expected {expected} (--reply-match)",
                                got.map_or("missing".to_string(), |v| v.to_string())
                            ),
                        });
                    }
                }
                if answered(&mut rec, &owed, now, self.timeout) {
                    // Checks test what the reply says (issue 20): an API that answers every
                    // request in a message of its own with `"status":404` is not a success.
                    if let Some(checks) = self.checks {
                        let latency = now.saturating_duration_since(owed.since());
                        settle::message_checked(
                            &mut rec,
                            checks,
                            &View::message(payload, latency),
                            now,
                        );
                    }
                }
            }
            WsMode::Send | WsMode::Receive => {}
        }
        Ok(())
    }

    /// Queues the next data message; `intended` is its place on the schedule.
    pub(super) fn send_message(&mut self, intended: Option<Instant>, now: Instant) {
        // Written bytes at the front go, so a long backlog never grows the buffer.
        if self.wpos > 0 && self.wpos >= self.bufs.write.len() / 2 {
            self.bufs.write.drain(..self.wpos);
            self.wpos = 0;
        }
        let rng = &mut self.rng;
        let seq = self.next_seq;
        self.next_seq += 1;
        let opcode = if self.ws.spec.binary {
            OP_BINARY
        } else {
            OP_TEXT
        };
        let mask = (next_random(rng) as u32).to_ne_bytes();
        let write = &mut self.bufs.write;
        let mut expect = None;
        let len = match (&self.ws.spec.payload, &self.ws.template) {
            (WsPayload::Random { min, max }, _) => {
                let len = min + (next_random(rng) % (max - min + 1) as u64) as usize;
                frame::encode_header(write, opcode, len, mask);
                let start = write.len();
                if len >= WS_SEQ_BYTES {
                    write_seq(write, seq);
                }
                let rest = len - (write.len() - start);
                let offset = (next_random(rng) % (self.ws.pool.len() - rest + 1) as u64) as usize;
                write.extend_from_slice(&self.ws.pool[offset..offset + rest]);
                frame::apply_mask(&mut write[start..], mask);
                len
            }
            (WsPayload::Message(_), Some(template)) => {
                let scratch = &mut self.bufs.scratch;
                scratch.clear();
                template.render(
                    &mut RenderContext {
                        rng,
                        seq,
                        row: &[],
                        segment: 0,
                    },
                    scratch,
                );
                if let Some(field) = &self.ws.spec.reply_match {
                    expect = serde_json::from_slice::<serde_json::Value>(scratch)
                        .ok()
                        .and_then(|v| v.get(field).cloned());
                }
                frame::encode(write, opcode, scratch, mask);
                scratch.len()
            }
            (WsPayload::Message(_), None) => unreachable!("a message payload has a template"),
        };
        let mut rec = self.recorder.borrow_mut();
        let stats = rec.websocket(now);
        stats.messages_sent += 1;
        stats.payload_bytes_sent += len as u64;
        if self.ws.expects_answers() {
            self.in_flight.set(self.in_flight.get() + 1);
            self.owed.push_back(Owed {
                seq,
                len,
                intended,
                sent: now,
                expect,
            });
        }
    }

    /// Queues a ping carrying its number.
    pub(super) fn send_ping(&mut self, now: Instant) {
        let number = self.next_ping_seq;
        self.next_ping_seq += 1;
        self.queue_frame(OP_PING, &number.to_be_bytes());
        self.pings.push_back((number, now));
        self.recorder.borrow_mut().websocket(now).pings_sent += 1;
    }

    pub(super) fn queue_frame(&mut self, opcode: u8, payload: &[u8]) {
        let mask = (next_random(&mut self.rng) as u32).to_ne_bytes();
        frame::encode(&mut self.bufs.write, opcode, payload, mask);
    }
}

/// Records an answer: a round trip, or a `timeout` error when it came later than
/// `--timeout` allows (before the session's next check had counted it as one).
/// Records the answer to `owed`; false when it came too late and counts as a timeout.
fn answered(rec: &mut Recorder, owed: &Owed, now: Instant, timeout: Duration) -> bool {
    if now >= owed.since() + timeout {
        settle::failure_at(
            rec,
            ErrorKind::Timeout,
            now,
            &format_args!(
                "no answer to message #{} within {timeout:?} (--timeout)",
                owed.seq
            ),
        );
        false
    } else {
        settle::round_trip(rec, owed.intended, owed.sent, now);
        true
    }
}

/// Where a received message's payload is.
#[derive(Clone, Copy)]
enum Where {
    Read(usize, usize),
    Fragments,
}

/// Writes `seq` as 16 lowercase hex digits (valid in a text message).
fn write_seq(out: &mut Vec<u8>, seq: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for shift in (0..16).rev() {
        out.push(HEX[((seq >> (shift * 4)) & 0xF) as usize]);
    }
}

/// Reads the sequence number at the head of a random payload; `None` if it is not one.
fn read_seq(payload: &[u8]) -> Option<u64> {
    let mut seq = 0u64;
    for &b in &payload[..WS_SEQ_BYTES] {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => return None,
        };
        seq = seq << 4 | u64::from(digit);
    }
    Some(seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_round_trip_as_hex() {
        for seq in [0u64, 1, 0xabc, u64::MAX] {
            let mut out = Vec::new();
            write_seq(&mut out, seq);
            assert_eq!(out.len(), WS_SEQ_BYTES);
            assert_eq!(read_seq(&out), Some(seq));
        }
        assert_eq!(read_seq(b"zzzzzzzzzzzzzzzz"), None);
    }
}
