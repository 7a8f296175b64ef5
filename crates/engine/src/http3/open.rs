//! HTTP/3's driver in the open loop: requests are due on the same schedule as over every
//! protocol, in the same pool ([`crate::open`]); each due request goes out on a stream of a
//! connection with room, up to `--streams` on each. Latency counts from the intended send
//! time. A connection that ends fails the requests it carried (classified) and leaves the
//! pool; requests handed to it and not yet sent go to another connection. A request the
//! server certainly did not process goes once to another connection: refused with
//! H3_REQUEST_REJECTED it counts as a retry, as over HTTP/2 (the server saw it); not sent
//! after its GOAWAY, or rejected with 0-RTT data, it is counted apart in the QUIC figures.
//!
//! Under `--no-keepalive` a connection takes `--streams` requests, leaves the pool, and
//! closes once they ended: the pool opens connections for the next ones.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::Instant;

use futures_util::stream::{FuturesUnordered, Stream};
use loadmark_metrics::{ErrorKind, Sample};

use super::closed::Http3;
use super::{settle_response, wants_capture, Captured, Failed, Flight, Prepared};
use crate::connection::Connection;
use crate::open::{Driver, Lane};
use crate::pool::Due;
use crate::settle;
use crate::transport::Transport;

impl<T: Transport> Driver<T> for Http3 {
    fn capacity(&self) -> usize {
        self.h3s.streams()
    }

    fn serve(
        lane: Lane<T, Self>,
        _preopened: Option<Connection<T::Stream>>,
    ) -> impl Future<Output = ()> + 'static {
        drive(lane)
    }
}

/// How a request of the open loop ended (with the response, when checks read it).
type Ended = (Due, Result<Sample, Failed>, Captured);

/// A connection's life: opens it, puts what it is handed on streams up to its capacity,
/// records what ends, and hands what it could not send to another connection.
async fn drive<T: Transport>(lane: Lane<T, Http3>) {
    let shared = lane.shared().clone();
    let h3s = lane.driver().h3s.clone();
    let (live, sender) = match h3s.connect(&shared, true).await {
        Ok(pair) => pair,
        Err((kind, message)) => {
            // Every request handed to a connection that could not open fails with it.
            lane.gone();
            while lane.try_next().is_some() {
                settle::failure(&shared.recorder, kind, &message);
                lane.done(Instant::now());
            }
            return;
        }
    };
    let capacity = h3s.streams();
    let mut over = false;
    let mut taken = 0;
    let mut rendered = Vec::new();
    let mut running: FuturesUnordered<Pin<Box<dyn Future<Output = Ended> + '_>>> =
        FuturesUnordered::new();
    loop {
        while !over && running.len() < capacity {
            let Some(job) = lane.try_next() else {
                break;
            };
            taken += 1;
            if !h3s.keep_alive() && taken == capacity {
                // --no-keepalive: this connection's last request; the pool looks elsewhere.
                over = true;
                lane.gone();
            }
            let now = Instant::now();
            let prepared: Rc<Prepared> = match h3s.pick(&shared, Some(job.k), &mut rendered) {
                Ok(p) => p,
                Err(message) => {
                    settle::failure(&shared.recorder, ErrorKind::Protocol, &message);
                    lane.done(now);
                    continue;
                }
            };
            let mut sender = sender.clone();
            let deadline = job.due.max(now) + shared.timeout;
            let in_flight = &shared.in_flight;
            let limits = (deadline, shared.timeout);
            let capture = wants_capture(&shared);
            let live = &live;
            running.push(Box::pin(async move {
                let flight = Flight::new(in_flight);
                let due = Some(job.due);
                let mut captured = Captured::default();
                let keep = capture.then_some(&mut captured);
                let ended = live
                    .exchange(&mut sender, &prepared, due, limits, keep)
                    .await;
                flight.ended();
                (job, ended, captured)
            }));
        }
        if running.is_empty() && (over || lane.retired()) {
            break;
        }
        let ended = poll_fn(|cx| {
            if let Poll::Ready(Some(ended)) = Pin::new(&mut running).poll_next(cx) {
                return Poll::Ready(Some(ended));
            }
            // Registers the task's waker on the lane too: a request handed over, or the
            // lane told to close, wakes it.
            let handed = lane.poll_job(cx).is_ready();
            if (handed && !over && running.len() < capacity)
                || (lane.retired() && running.is_empty())
            {
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await;
        let Some((job, ended, captured)) = ended else {
            continue;
        };
        // Ended here first: a request not processed may go to another connection.
        lane.done(Instant::now());
        match ended {
            Ok(mut sample) => {
                live.answered_one();
                // Lag ends where the schedule took the request up, if it waited.
                sample.started = job.started(sample.started);
                settle_response(&shared, &sample, &captured);
            }
            Err(failed) => {
                if (failed.connection_over || failed.unprocessed) && !over {
                    // Out of the pool before another connection is looked for (one that
                    // refuses requests is going away too).
                    over = true;
                    lane.gone();
                }
                let again = Due {
                    retried: true,
                    ..job
                };
                if failed.unprocessed && !job.retried && lane.place_elsewhere(again) {
                    if failed.connection_over {
                        // Never processed (GOAWAY, 0-RTT rejected): moved, not retried.
                        live.moved(&failed);
                    } else {
                        settle::retry(&shared.recorder);
                    }
                } else {
                    settle::failure(&shared.recorder, failed.kind, &failed.message);
                }
            }
        }
    }
    lane.gone();
    drop(running);
    drop(sender);
    drop(live);
    // Requests handed here and never sent go to another connection, or are dropped as any
    // request is that finds every stream taken.
    while let Some(job) = lane.try_next() {
        lane.done(Instant::now());
        if !lane.place_elsewhere(job) {
            settle::dropped(&mut shared.recorder.borrow_mut(), job.due, 1);
        }
    }
}
