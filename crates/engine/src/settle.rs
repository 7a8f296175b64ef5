//! Where a request ends, whatever carried it (HTTP/1.1, pipelined, HTTP/2, a WebSocket
//! message, a scenario step) and whatever load model sent it: as one sample, one classified
//! error, or one dropped request. The drivers decide *how* a request ended; only this file
//! puts it in the run's figures, so what each ending counts is said once. (Bytes moved and
//! connections opened are the connection's, not a request's ending: the drivers count them.)

use std::cell::RefCell;
use std::fmt::Display;
use std::time::Instant;

use loadmark_metrics::{ErrorKind, Recorder, Sample};

use crate::checks::{Checks, View};
use crate::exchange::Failure;

/// How a request ended, as a driver hands it here.
pub(crate) enum Outcome {
    Response(Sample),
    Failed(Failure),
}

/// A response: one sample. Latency runs from the request's due time in an open loop and
/// from its first byte written in a closed one (see [`Sample`]).
#[inline]
pub(crate) fn response(recorder: &RefCell<Recorder>, sample: &Sample) {
    recorder.borrow_mut().record(sample);
}

/// A response and its checks, judged on what was kept of it (`view`).
#[inline]
pub(crate) fn checked(recorder: &mut Recorder, sample: &Sample, checks: &Checks, view: &View) {
    recorder.record(sample);
    checks.record(view, sample.ended, recorder);
}

/// A response with the run's checks when it has some, judged on what was kept of it: `raw`
/// is its head and body as received (empty unless the checks read them), `overflow` says
/// it was longer than what is kept. Every driver's responses end here.
#[inline]
pub(crate) fn response_checked(
    recorder: &RefCell<Recorder>,
    checks: Option<&Checks>,
    sample: &Sample,
    raw: &[u8],
    overflow: bool,
) {
    match checks {
        None => response(recorder, sample),
        Some(checks) => {
            let view = View::response(sample, raw, overflow);
            checked(&mut recorder.borrow_mut(), sample, checks, &view);
        }
    }
}

/// A message's reply (WebSocket) checked: the message itself is settled by [`round_trip`].
#[inline]
pub(crate) fn message_checked(recorder: &mut Recorder, checks: &Checks, view: &View, at: Instant) {
    checks.record(view, at, recorder);
}

/// A request that ended without a response, classified; returns when.
#[inline]
pub(crate) fn failure(
    recorder: &RefCell<Recorder>,
    kind: ErrorKind,
    message: &dyn Display,
) -> Instant {
    let now = Instant::now();
    failure_at(&mut recorder.borrow_mut(), kind, now, message);
    now
}

/// [`failure`] at a known instant, with the recorder already in hand.
#[inline]
pub(crate) fn failure_at(
    recorder: &mut Recorder,
    kind: ErrorKind,
    at: Instant,
    message: &dyn Display,
) {
    recorder.record_error(kind, at, message);
}

/// A request sent once more on another connection (a reused one closed under it, or a
/// stream the server refused unprocessed): still one request, its ending is yet to come.
#[inline]
pub(crate) fn retry(recorder: &RefCell<Recorder>) {
    recorder.borrow_mut().record_retry(Instant::now());
}

/// Open loop: requests due at `due` that were never sent (no connection could take them).
#[inline]
pub(crate) fn dropped(recorder: &mut Recorder, due: Instant, count: u64) {
    recorder.record_dropped(due, count);
}

/// A WebSocket message answered: its round trip, from its intended send time when paced.
#[inline]
pub(crate) fn round_trip(
    recorder: &mut Recorder,
    intended: Option<Instant>,
    sent: Instant,
    ended: Instant,
) {
    recorder.record_round_trip(intended, sent, ended);
}
