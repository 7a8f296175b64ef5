//! The open-loop executor: requests arrive on a fixed schedule, whatever the responses do
//! (wrk2, vegeta, k6's arrival-rate executors).
//!
//! Requests are numbered from 0 over the whole run and the schedule gives each one its
//! intended send time ([`Profile::due`]); worker `i` of `n` owns requests `i, i+n, i+2n, ...`,
//! so workers (and later machines) split one schedule exactly. A request is sent on a free
//! connection of the worker's pool, which grows on demand up to a cap; when none is free and
//! the cap is reached, the request is dropped and counted, never silently skipped. Latency is
//! measured from the intended time, so a stalled server shows up in every request that had to
//! wait (no coordinated omission).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadmark_plan::{Profile, Segment};
use tokio::task::JoinSet;

use crate::connection::{perform, Connection, Shared};
use crate::transport::Transport;
use loadmark_timer::Pacer;

/// Which requests of the global schedule a worker owns: the segment (this machine's share
/// of the run) owns requests `segment.global(0), segment.global(1), ...`, and worker `index`
/// of `of` owns every `of`-th of those from its index.
#[derive(Debug, Clone)]
pub(crate) struct Share {
    pub index: u64,
    pub of: u64,
    pub segment: Arc<Segment>,
}

/// This worker's share of the schedule, one request after another: each is handed out once
/// it is due. Every open-loop executor (HTTP/1.1, pipelined, HTTP/2, scenario iterations)
/// walks it the same way.
pub(crate) struct Schedule {
    profile: Arc<Profile>,
    origin: Instant,
    share: Share,
    /// This worker's next request, counted among the segment's.
    j: u64,
    pacer: Pacer,
}

impl Schedule {
    pub(crate) fn new(profile: Arc<Profile>, origin: Instant, share: Share) -> Schedule {
        let j = share.index;
        Schedule {
            profile,
            origin,
            share,
            j,
            pacer: Pacer::new(),
        }
    }

    /// The next request's number in the whole run and its intended time, once that time has
    /// come (at once for one already due); None when the schedule has no more. Time the pacer
    /// spent polling with nothing to do is added to `idle`.
    pub(crate) async fn next(&mut self, idle: &Cell<Duration>) -> Option<(u64, Instant)> {
        let k = self.share.segment.global(self.j);
        let due = self.origin + self.profile.due(k)?;
        // Sleep only when nothing is due: every request already due goes out at once.
        let polled = self.pacer.sleep_until(due).await;
        idle.set(idle.get() + polled);
        self.j += self.share.of;
        Some((k, due))
    }
}

/// Sends this worker's share of the schedule, then waits for its requests to end (each is
/// bounded by the request timeout).
pub(crate) async fn schedule_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    profile: Arc<Profile>,
    origin: Instant,
    share: Share,
    max_connections: usize,
    preopened: Vec<(Connection<T::Stream>, Duration)>,
) {
    let opened = Rc::new(Cell::new(preopened.len()));
    let idle: Rc<RefCell<Vec<Connection<T::Stream>>>> = Rc::new(RefCell::new(
        preopened.into_iter().map(|(c, _)| c).collect(),
    ));
    let mut requests = JoinSet::new();
    let mut schedule = Schedule::new(profile, origin, share);
    while let Some((k, due)) = schedule.next(&shared.idle_polling).await {
        while requests.try_join_next().is_some() {}
        let conn = idle.borrow_mut().pop().or_else(|| {
            (opened.get() < max_connections).then(|| {
                opened.set(opened.get() + 1);
                Connection::new()
            })
        });
        match conn {
            Some(mut conn) => {
                let (shared, idle) = (shared.clone(), idle.clone());
                requests.spawn_local(async move {
                    perform(&shared, &mut conn, Some(due), Some(k)).await;
                    idle.borrow_mut().push(conn);
                });
            }
            None => shared.recorder.borrow_mut().record_dropped(due, 1),
        }
    }
    while requests.join_next().await.is_some() {}
}
