//! A virtual user's HTTP/3 link: one QUIC connection per user (on a UDP socket of its own,
//! as each browser has), opened at the user's first `protocol: h3` step and kept across its
//! iterations, carrying one request at a time. The exchange is the HTTP/3 driver's
//! ([`crate::http3`]), so failures are classified the same way; here:
//! - a connection that ended (a close, a stateless reset, GOAWAY) is dropped and the next
//!   step opens another;
//! - a request the server did not process is sent once more on a new connection (a second
//!   refusal is an error): refused with H3_REQUEST_REJECTED it counts as a retry (the server
//!   saw it), never sent after GOAWAY it counts as moved, in the QUIC figures.
//!
//! Latency runs from the request's start (or from the iteration's intended start, for an
//! open model's first step) to the response's end.

use std::sync::Arc;
use std::time::Instant;

use loadmark_metrics::{ErrorKind, Sample};

use super::{render, ScenarioShared, StepRun, User};
use crate::connection::Shared;
use crate::http3::{request, Captured, Flight, H3Run, H3Shared};
use crate::settle;
use crate::transport::Transport;

/// A user's QUIC side: its endpoint, and its connection when one is open.
pub(crate) struct Link {
    h3s: H3Shared,
    open: Option<(crate::http3::Live, crate::http3::Sender)>,
    /// The last response, when its step keeps it for checks or extractions.
    captured: Captured,
}

impl Link {
    /// What the last step kept of its response (empty unless it kept it), and whether it
    /// was longer than the limit.
    pub(super) fn response(&self) -> (&[u8], bool) {
        (&self.captured.bytes, self.captured.overflow)
    }
}

/// Sends step `run` over HTTP/3 on the user's connection (opening one when it has none) and
/// waits for its end. `due` is the iteration's intended start.
pub(super) async fn perform<T: Transport>(
    shared: &Shared<T>,
    sc: &ScenarioShared,
    run: &StepRun,
    user: &mut User<T::Stream>,
    due: Option<Instant>,
    seq: u64,
) -> Result<Sample, (ErrorKind, String)> {
    let h3run: &Arc<H3Run> = (sc.h3run.as_ref()).ok_or((
        ErrorKind::Protocol,
        "protocol: h3 in a run without its QUIC client".to_string(),
    ))?;
    let bytes = match &run.fixed {
        Some(bytes) => bytes,
        None => {
            render(sc, run, &mut user.me, seq).map_err(|m| (ErrorKind::Protocol, m))?;
            &user.me.request
        }
    };
    let prepared = request::prepare(bytes).map_err(|m| (ErrorKind::Protocol, m))?;
    let link = user.h3.get_or_insert_with(|| Link {
        // Binds the user's UDP socket (on the worker's event loop, where this runs).
        h3s: H3Shared::new(h3run.clone()),
        open: None,
        captured: Captured::default(),
    });
    let mut retried = false;
    loop {
        if link.open.is_none() {
            link.open = Some(link.h3s.connect(shared, true).await?);
        }
        let (live, sender) = link.open.as_mut().expect("opened above");
        let deadline = Instant::now() + shared.timeout;
        let keep = run.capture.then_some(&mut link.captured);
        let limits = (deadline, shared.timeout);
        // Counted in flight if the run's hard stop drops it half way.
        let flight = Flight::new(&shared.in_flight);
        let ended = live.exchange(sender, &prepared, due, limits, keep).await;
        flight.ended();
        match ended {
            Ok(sample) => {
                live.answered_one();
                return Ok(sample);
            }
            Err(failed) => {
                let again = failed.unprocessed && !retried;
                match (again, failed.connection_over) {
                    (true, true) => live.moved(&failed),
                    (true, false) => settle::retry(&shared.recorder),
                    _ => {}
                }
                if failed.connection_over || failed.unprocessed {
                    // Closed when dropped; its figures go to the run's.
                    link.open = None;
                }
                if again {
                    retried = true;
                    continue;
                }
                return Err((failed.kind, failed.message));
            }
        }
    }
}
