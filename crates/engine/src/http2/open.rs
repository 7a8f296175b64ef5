//! HTTP/2's driver in the open loop: requests are due on the same schedule as over HTTP/1.1,
//! in the same pool ([`crate::open`]); each due request goes out on a stream of a connection
//! with room, up to `--streams` on each (and never more than the server allows: the rest wait
//! on the connection for a stream to end). Latency counts from the intended send time, so
//! schedule lag keeps its meaning.
//!
//! A stream the server did not process (GOAWAY above its last stream id, REFUSED_STREAM) is
//! sent once more on another connection and counted as a retry; the connection it was on
//! is taken out of the pool.

use std::future::{poll_fn, Future};
use std::rc::Rc;
use std::task::Poll;
use std::time::Instant;

use loadmark_metrics::ErrorKind;
use loadmark_wire::http2::Event;

use super::client::{connect, pick, H2Shared, Live, Negotiated};
use crate::connection::Connection;
use crate::open::{Driver, Lane};
use crate::pool::Due;
use crate::settle;
use crate::transport::Transport;

/// HTTP/2: a connection carries up to `--streams` requests at once.
pub(crate) struct Http2 {
    pub(crate) h2s: Rc<H2Shared>,
}

impl<T: Transport> Driver<T> for Http2
where
    T::Stream: Negotiated,
{
    fn capacity(&self) -> usize {
        self.h2s.streams()
    }

    /// A server that does not speak HTTP/2 ends the schedule at once.
    fn halted(&self) -> impl Future<Output = ()> {
        self.h2s.run.stopped()
    }

    fn serve(
        lane: Lane<T, Self>,
        _preopened: Option<Connection<T::Stream>>,
    ) -> impl Future<Output = ()> + 'static {
        drive(lane)
    }
}

/// What a stream of the open loop carries.
struct Tag {
    job: Due,
    started: Instant,
}

/// A connection's life: opens it, puts what it is handed on streams as the server's limit
/// allows, records what ends, and hands requests the server did not process to another
/// connection (once, counted as a retry).
async fn drive<T: Transport>(lane: Lane<T, Http2>)
where
    T::Stream: Negotiated,
{
    let shared = lane.shared().clone();
    let h2s = lane.driver().h2s.clone();
    let conn = match connect(&shared, &h2s.run).await {
        Ok(c) => c,
        Err(f) => {
            // Every request handed to a connection that could not open fails with it.
            lane.gone();
            while lane.try_next().is_some() {
                crate::grpc::failure(&shared.recorder, h2s.grpc, f.kind, &f.message, None, false);
                lane.done(Instant::now());
            }
            return;
        }
    };
    let mut live = Live::new(conn, &shared);
    live.conn.grpc(h2s.grpc);
    let mut answered = 0u64;
    let mut rendered = Vec::new();
    let mut events = Vec::new();
    loop {
        let now = Instant::now();
        while live.conn.can_open() {
            let Some(job) = lane.try_next() else {
                break;
            };
            match pick(&shared, &h2s, Some(job.k), &mut rendered) {
                Ok(prepared) => live.conn.open(
                    &prepared.block,
                    &prepared.body,
                    Tag {
                        job,
                        started: job.started(now),
                    },
                    job.due.max(now) + shared.timeout,
                ),
                Err(message) => {
                    settle::failure(&shared.recorder, ErrorKind::Protocol, &message);
                    lane.done(now);
                }
            }
        }
        let idle = |live: &Live<_, _>| live.conn.active() == 0 && lane.busy() == 0;
        if live.conn.is_over() || (lane.retired() && idle(&live)) {
            break;
        }
        events.clear();
        poll_fn(|cx| {
            let read = live.conn.poll(cx, &mut events).is_ready();
            // Registers the task's waker on the lane too: a request handed over, or the
            // lane told to close, wakes it.
            let handed = lane.poll_job(cx).is_ready();
            if read
                || (live.conn.can_open() && handed)
                || (lane.retired() && live.conn.active() == 0)
            {
                return Poll::Ready(());
            }
            Poll::Pending
        })
        .await;
        live.count_bytes(false);
        for event in events.drain(..) {
            match event {
                Event::Response { tag, answer } => {
                    answered += 1;
                    let sample = answer.sample(Some(tag.job.due), tag.started);
                    super::settle_response(&shared, &sample);
                    crate::grpc::settle(&shared.recorder, &answer, tag.started);
                    lane.done(Instant::now());
                }
                Event::Failed { tag, failure } => {
                    if failure.connection_over || failure.unprocessed {
                        // Out of the pool before another connection is looked for.
                        lane.gone();
                    }
                    let again = Due {
                        retried: true,
                        ..tag.job
                    };
                    lane.done(Instant::now());
                    let resend = || lane.place_elsewhere(again);
                    let retried = tag.job.retried;
                    crate::grpc::stream_failed(
                        &shared.recorder,
                        h2s.grpc,
                        &failure,
                        retried,
                        resend,
                    );
                }
            }
        }
        h2s.observe_limit(live.conn.server_limit());
    }
    lane.gone();
    drop(live);
    crate::carried::connection_ended(answered);
    // Requests handed here and never sent go to another connection, or are dropped as any
    // request is that finds every stream taken.
    while let Some(job) = lane.try_next() {
        lane.done(Instant::now());
        if !lane.place_elsewhere(job) {
            settle::dropped(&mut shared.recorder.borrow_mut(), job.due, 1);
        }
    }
}
