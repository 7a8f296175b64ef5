//! HTTP/3's closed loop: a slot opens a connection and keeps `--streams` requests on it,
//! each stream starting its next request when its last one ended; when the connection ends
//! while load is still owed, the slot opens another.
//!
//! A connection that cannot open charges one request with the cause (as HTTP/1.1 and HTTP/2
//! do), so a server that never answers makes classified errors at the pace of the connect
//! timeout, never a spin or a hang.
//!
//! A request the server certainly did not process is sent again: one refused with
//! H3_REQUEST_REJECTED once more on the same connection, counted as a retry (as HTTP/2
//! does: the server saw it); one never sent because of a GOAWAY, or sent in 0-RTT data the
//! server rejected, on the slot's next connection, counted apart from retries in the QUIC
//! figures (the server never saw it), [`MAX_GOAWAY_CARRIES`] times at most, so a server
//! that sends GOAWAY at once on every connection cannot spin it.
//!
//! Under `--no-keepalive` each stream sends one request and the connection closes when its
//! streams are done; the slot opens the next (a handshake per request, 0-RTT ones with
//! `--http3-0rtt`).

use std::rc::Rc;
use std::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};
use loadmark_metrics::ErrorKind;

use super::{settle_response, wants_capture, Captured, Flight, H3Shared, Live, Prepared, Sender};
use crate::closed::{ClosedDriver, Until};
use crate::connection::Shared;
use crate::settle;
use crate::transport::Transport;

/// HTTP/3: a connection carries up to `--streams` requests at once.
pub(crate) struct Http3 {
    pub(crate) h3s: Rc<H3Shared>,
}

impl<T: Transport> ClosedDriver<T> for Http3 {
    fn run_slot(
        self: &Rc<Self>,
        shared: Rc<Shared<T>>,
        until: Until,
        _seed: u64,
    ) -> impl std::future::Future<Output = ()> + 'static {
        slot_loop(shared, self.h3s.clone(), until)
    }
}

/// How many times one request not sent because of GOAWAY (or rejected with 0-RTT) goes to a
/// new connection.
const MAX_GOAWAY_CARRIES: u8 = 3;

/// A request owed to the next connection: never sent because its connection was going away.
struct Carried {
    prepared: Rc<Prepared>,
    carries: u8,
    /// Rejected with its connection's 0-RTT data.
    rejected: bool,
}

/// How one stream's loop ended.
enum StreamEnd {
    /// The budget, the load's end or the ramp says stop.
    Done,
    /// Its connection is over; a new one may carry the rest (and this request, unsent).
    ConnectionOver(Option<Carried>),
}

async fn slot_loop<T: Transport>(shared: Rc<Shared<T>>, h3s: Rc<H3Shared>, until: Until) {
    // Requests the last connection owed (GOAWAY): the next one's first streams send them.
    let mut owed: Vec<Carried> = Vec::new();
    loop {
        if owed.is_empty() && (until.reached(Instant::now()) || !until.budget.claim()) {
            return;
        }
        // Requests the server rejected in 0-RTT go on a full handshake: a server that
        // always rejects early data cannot bounce them from connection to connection.
        let early = !owed.iter().any(|c| c.rejected);
        let (live, sender) = match h3s.connect(&shared, early).await {
            Ok(pair) => pair,
            Err((kind, message)) => {
                // The request claimed for this connection fails with it (or one it owed).
                owed.pop();
                settle::failure(&shared.recorder, kind, &message);
                tokio::task::consume_budget().await;
                continue;
            }
        };
        // The first stream sends the request claimed above (or one owed); every stream
        // claims its own after that.
        let first = owed.is_empty();
        let mut streams: FuturesUnordered<_> = (0..h3s.streams().max(owed.len()))
            .map(|i| {
                let start = match owed.pop() {
                    Some(c) => Start::Owed(c),
                    None if i == 0 && first => Start::Claimed,
                    None => Start::Claim,
                };
                stream_loop(&shared, &h3s, sender.clone(), &until, start, &live)
            })
            .collect();
        drop(sender);
        let mut over = false;
        while let Some(end) = streams.next().await {
            if let StreamEnd::ConnectionOver(carried) = end {
                over = true;
                owed.extend(carried);
            }
        }
        drop(streams);
        let answered = live.answered.get();
        drop(live);
        if !over && h3s.keep_alive() {
            return;
        }
        if answered == 0 {
            // Nothing answered: every stream's request already failed with the cause; give
            // the event loop a turn before the next connection.
            tokio::task::consume_budget().await;
        }
    }
}

/// What a stream sends first.
enum Start {
    /// A request of its own: claims it from the budget.
    Claim,
    /// The request the slot claimed before connecting.
    Claimed,
    /// A request the last connection owed.
    Owed(Carried),
}

/// One stream of a connection: requests one after another until told to stop or the
/// connection ends.
async fn stream_loop<T: Transport>(
    shared: &Shared<T>,
    h3s: &H3Shared,
    mut sender: Sender,
    until: &Until,
    start: Start,
    live: &Live,
) -> StreamEnd {
    let mut rendered = Vec::new();
    let mut captured = Captured::default();
    let capture = wants_capture(shared);
    // The request to send again (refused unprocessed, or owed), and how often it was
    // carried to a new connection.
    let (mut again, mut carries, mut claimed) = match start {
        Start::Owed(c) => (Some(c.prepared), c.carries, true),
        Start::Claimed => (None, 0, true),
        Start::Claim => (None, 0, false),
    };
    let mut retried = again.is_some();
    loop {
        if !claimed && (until.reached(Instant::now()) || !until.budget.claim()) {
            return StreamEnd::Done;
        }
        claimed = false;
        let prepared = match again.take() {
            Some(p) => p,
            None => {
                retried = false;
                carries = 0;
                match h3s.pick(shared, None, &mut rendered) {
                    Ok(p) => p,
                    Err(message) => {
                        settle::failure(&shared.recorder, ErrorKind::Protocol, &message);
                        continue;
                    }
                }
            }
        };
        let flight = Flight::new(&shared.in_flight);
        let deadline = Instant::now() + shared.timeout;
        let keep = capture.then_some(&mut captured);
        let limits = (deadline, shared.timeout);
        let ended = live
            .exchange(&mut sender, &prepared, None, limits, keep)
            .await;
        flight.ended();
        match ended {
            Ok(sample) => {
                live.answered_one();
                settle_response(shared, &sample, &captured);
            }
            Err(failed) if failed.unprocessed && failed.connection_over => {
                // GOAWAY or 0-RTT rejected: not processed; the slot's next connection sends
                // it (not a retry: the server never saw it).
                if carries < MAX_GOAWAY_CARRIES {
                    live.moved(&failed);
                    return StreamEnd::ConnectionOver(Some(Carried {
                        prepared,
                        carries: carries + 1,
                        rejected: failed.early_rejected,
                    }));
                }
                settle::failure(&shared.recorder, failed.kind, &failed.message);
                return StreamEnd::ConnectionOver(None);
            }
            Err(failed) if failed.unprocessed && !retried => {
                // Refused unprocessed: once more, at once.
                settle::retry(&shared.recorder);
                (again, retried, claimed) = (Some(prepared), true, true);
            }
            Err(failed) => {
                settle::failure(&shared.recorder, failed.kind, &failed.message);
                if failed.connection_over {
                    return StreamEnd::ConnectionOver(None);
                }
            }
        }
        if !h3s.keep_alive() && again.is_none() {
            // --no-keepalive: one request per stream; the slot opens the next connection.
            return StreamEnd::Done;
        }
    }
}
