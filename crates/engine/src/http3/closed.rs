//! HTTP/3's closed loop: a slot opens a connection and keeps `--streams` requests on it,
//! each stream starting its next request when its last one ended; when the connection ends
//! while load is still owed, the slot opens another.
//!
//! A connection that cannot open charges one request with the cause (as HTTP/1.1 and HTTP/2
//! do), so a server that never answers makes classified errors at the pace of the connect
//! timeout, never a spin or a hang.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};
use loadmark_metrics::ErrorKind;

use super::{exchange, Flight, H3Shared, Sender};
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

/// How one stream's loop ended.
enum StreamEnd {
    /// The budget, the load's end or the ramp says stop.
    Done,
    /// Its connection is over; a new one may carry the rest.
    ConnectionOver,
}

async fn slot_loop<T: Transport>(shared: Rc<Shared<T>>, h3s: Rc<H3Shared>, until: Until) {
    loop {
        if until.reached(Instant::now()) || !until.budget.claim() {
            return;
        }
        let (live, sender) = match h3s.connect(&shared).await {
            Ok(pair) => pair,
            Err((kind, message)) => {
                // The request claimed for this connection fails with it.
                settle::failure(&shared.recorder, kind, &message);
                tokio::task::consume_budget().await;
                continue;
            }
        };
        let answered = &live.answered;
        // The first stream sends the request claimed above; every stream claims its own
        // after that.
        let mut streams: FuturesUnordered<_> = (0..h3s.streams())
            .map(|i| stream_loop(&shared, &h3s, sender.clone(), &until, i == 0, answered))
            .collect();
        drop(sender);
        let mut over = false;
        while let Some(end) = streams.next().await {
            over |= matches!(end, StreamEnd::ConnectionOver);
        }
        drop(streams);
        let answered = answered.get();
        drop(live);
        if !over {
            return;
        }
        if answered == 0 {
            // Nothing answered: every stream's request already failed with the cause; give
            // the event loop a turn before the next connection.
            tokio::task::consume_budget().await;
        }
    }
}

/// One stream of a connection: requests one after another until told to stop or the
/// connection ends.
async fn stream_loop<T: Transport>(
    shared: &Shared<T>,
    h3s: &H3Shared,
    mut sender: Sender,
    until: &Until,
    mut claimed: bool,
    answered: &Cell<u64>,
) -> StreamEnd {
    let mut rendered = Vec::new();
    loop {
        if !claimed && (until.reached(Instant::now()) || !until.budget.claim()) {
            return StreamEnd::Done;
        }
        claimed = false;
        let prepared = match h3s.pick(shared, None, &mut rendered) {
            Ok(p) => p,
            Err(message) => {
                settle::failure(&shared.recorder, ErrorKind::Protocol, &message);
                continue;
            }
        };
        let flight = Flight::new(&shared.in_flight);
        let ended =
            tokio::time::timeout(shared.timeout, exchange(&mut sender, &prepared, None)).await;
        flight.ended();
        match ended {
            Ok(Ok(sample)) => {
                answered.set(answered.get() + 1);
                settle::response(&shared.recorder, &sample);
            }
            Ok(Err(failed)) => {
                settle::failure(&shared.recorder, failed.kind, &failed.message);
                if failed.connection_over {
                    return StreamEnd::ConnectionOver;
                }
            }
            Err(_) => {
                let message = format!("no complete response within {:?}", shared.timeout);
                settle::failure(&shared.recorder, ErrorKind::Timeout, &message);
            }
        }
    }
}
