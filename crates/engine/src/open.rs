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
    let mut j = share.index;
    let mut pacer = Pacer::new();
    loop {
        let k = share.segment.global(j);
        let Some(offset) = profile.due(k) else {
            break;
        };
        let due = origin + offset;
        // Sleep only when nothing is due: every request already due goes out at once.
        let polled = pacer.sleep_until(due).await;
        shared.idle_polling.set(shared.idle_polling.get() + polled);
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
        j += share.of;
    }
    while requests.join_next().await.is_some() {}
}
