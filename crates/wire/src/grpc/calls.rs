//! gRPC calls over an HTTP/2 connection's state (issue 36): what a DATA frame does to a
//! call, how its end is handed over, and for streaming calls, what happens over time rather
//! than because a frame came. A client or bidi stream sends its request
//! messages one per `--stream-interval`, each in its own DATA frame, and half-closes after
//! the last (`--stream-call-count`, or `--stream-call-duration` over); a server stream is
//! cancelled by the client (RST_STREAM CANCEL) after `--stream-call-count` response
//! messages or when `--stream-call-duration` is over. The caller's timer calls
//! [`State::tick`] when [`Stream::wake`] says; unary runs never come here.

use std::time::Instant;

use bytes::Bytes;
use loadmark_plan::GrpcStreaming;

use crate::grpc::{Broken, Call, End, Flow, Reader};
use crate::http2::frame::{self, Reason};
use crate::http2::state::{State, Stream};
use crate::http2::Event;

impl<T> State<T> {
    /// The gRPC reading of a new stream carrying `body`, and whether its request messages
    /// are paced (sent by [`State::tick`], not as a body).
    pub(crate) fn new_call(&self, body: &Bytes) -> (Option<Call>, bool) {
        match (self.grpc, self.streaming) {
            (None, _) => (None, false),
            (Some(_), None) => (Some(Call::default()), false),
            (Some(_), Some(spec)) => (
                Some(Call::streaming(&spec, body, Instant::now())),
                spec.paced(),
            ),
        }
    }

    /// The timed work due at `now`: paced request messages, the half-close after the last,
    /// server streams whose duration is over cancelled (their calls end as events).
    pub fn tick(&mut self, now: Instant, events: &mut Vec<Event<T>>) {
        if self.streaming.is_none() {
            return;
        }
        let due: Vec<u32> = self
            .streams
            .iter()
            .filter(|(_, s)| flow_of(s).and_then(Flow::wake).is_some_and(|at| at <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            let Some(s) = self.streams.get_mut(&id) else {
                continue;
            };
            let Some(call) = s.grpc.as_mut() else {
                continue;
            };
            if call
                .flow
                .as_deref()
                .and_then(|f| f.cancel_at)
                .is_some_and(|at| at <= now)
            {
                cancel(&mut self.out, id, &mut call.end);
                self.complete(id, now, events);
            } else {
                self.pace(id, now);
            }
        }
    }

    /// Queues the paced messages of stream `id` that are due at `now`, each in its own DATA
    /// frame (as the windows allow), and the half-close once no more will be.
    pub(crate) fn pace(&mut self, id: u32, now: Instant) {
        loop {
            let Some(s) = self.streams.get_mut(&id) else {
                return;
            };
            let Some(flow) = s.grpc.as_mut().and_then(|c| c.flow.as_deref_mut()) else {
                return;
            };
            let Some(pacing) = flow.pacing.as_mut() else {
                return;
            };
            let over = match pacing.next_message(now) {
                Ok(None) => return,
                Ok(Some(message)) => {
                    flow.sent += 1;
                    s.upload = Some(match s.upload.take() {
                        None => (message, 0),
                        // The one before still waits on flow control: this one follows it.
                        Some((body, sent)) => {
                            let mut joined = body[sent..].to_vec();
                            joined.extend_from_slice(&message);
                            (Bytes::from(joined), 0)
                        }
                    });
                    if !self.uploads.contains(&id) {
                        self.uploads.push(id);
                    }
                    pacing.done()
                }
                Err(()) => true,
            };
            if over {
                flow.pacing = None;
                if s.upload.is_none() {
                    // Nothing left in flight: the half-close is an empty DATA frame.
                    frame::data(&mut self.out, id, &[], true);
                    s.wire_written += frame::FRAME_HEAD as u64;
                    self.open_written += frame::FRAME_HEAD as u64;
                }
            }
            // With pacing over, a pending upload's last frame carries END_STREAM.
            self.send_uploads();
            if over {
                return;
            }
        }
    }
}

impl Call {
    /// Feeds the call a DATA payload of stream `id` that came `at`; `true` when the call
    /// ends here, its RST_STREAM queued in `out`: its framing broke (the rest is not wanted;
    /// it ends with the status a gRPC client gives it, `Broken::status`), or a server stream
    /// reached the count after which the client cancels it.
    pub(crate) fn data(
        &mut self,
        body: &[u8],
        limit: usize,
        spec: Option<&GrpcStreaming>,
        (id, at): (u32, Instant),
        out: &mut Vec<u8>,
    ) -> bool {
        let before = self.reader.messages;
        if let Err(broken) = self.reader.feed(body, limit) {
            self.end.broken = Some(broken);
            frame::rst_stream(out, id, Reason::CANCEL);
            return true;
        }
        let Some(flow) = self.flow.as_deref_mut() else {
            return false;
        };
        if received(spec, &mut self.reader, flow, before, at) {
            cancel(out, id, &mut self.end);
            return true;
        }
        false
    }

    /// The server ended the call while it was still sending paced request messages it had
    /// not been told to stop (the rest is not wanted: the client resets the stream).
    pub(crate) fn cut_short(&self) -> bool {
        let sending = self.flow.as_deref().is_some_and(|f| f.pacing.is_some());
        sending && !self.end.ended_by_client
    }

    /// How the call ended, once its stream did: what was read and sent, and a body that
    /// stopped inside a message (unless the client cancelled it there).
    pub(crate) fn end(self) -> End {
        let mut end = self.end;
        end.messages = self.reader.messages;
        match self.flow {
            Some(flow) => flow.finish(&mut end),
            None => end.sent = 1,
        }
        if end.broken.is_none() && !end.ended_by_client && !self.reader.whole() {
            end.broken = Some(Broken::Cut);
        }
        end
    }
}

/// `reader` read response messages (it had `before`); notes when they came, and says
/// whether the client now cancels the call (a server stream's `--stream-call-count`
/// reached: the count is what the call received, whatever came in the same read).
fn received(
    spec: Option<&GrpcStreaming>,
    reader: &mut Reader,
    flow: &mut Flow,
    before: u32,
    at: Instant,
) -> bool {
    let cap = spec
        .filter(|s| s.cancels())
        .and_then(|s| s.count)
        .unwrap_or(u32::MAX);
    let now = reader.messages.min(cap);
    flow.received(now.saturating_sub(before), at);
    if reader.messages >= cap {
        reader.messages = cap;
        return true;
    }
    false
}

/// The client ends the call as planned: RST_STREAM CANCEL, and no status made up for it.
fn cancel(out: &mut Vec<u8>, id: u32, end: &mut End) {
    frame::rst_stream(out, id, Reason::CANCEL);
    end.ended_by_client = true;
}

impl<T> Stream<T> {
    /// When the caller's timer must next look at it: its deadline, or a streaming call's
    /// next paced message or planned cancel.
    pub fn wake(&self) -> Instant {
        match self.grpc.as_ref().and_then(|c| c.flow.as_deref()?.wake()) {
            Some(at) => at.min(self.deadline),
            None => self.deadline,
        }
    }
}

/// A gRPC call still sending paced request messages.
pub(crate) fn sending(call: &Option<crate::grpc::Call>) -> bool {
    call.as_ref()
        .and_then(|c| c.flow.as_deref())
        .is_some_and(|f| f.pacing.is_some())
}

fn flow_of<T>(s: &Stream<T>) -> Option<&Flow> {
    s.grpc.as_ref()?.flow.as_deref()
}
