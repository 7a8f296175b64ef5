//! The closed-loop executor: each connection sends its next request when the previous one
//! ended (wrk, ab, bombardier). One of these loops runs per connection, as a task on its
//! worker thread's event loop; everything it touches is that thread's own.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadmark_plan::Profile;
use tokio::task::JoinSet;

use crate::connection::{perform, Connection, Shared};
use crate::open::Share;
use crate::transport::Transport;

/// How often a ramp adjusts its connection count.
pub(crate) const RAMP_STEP: Duration = Duration::from_millis(100);

/// How many requests may still start: unlimited (a duration run) or a count shared by every
/// connection of every thread, so `-n N` sends exactly N.
pub(crate) struct Budget {
    remaining: Option<AtomicU64>,
    /// Claims numbered so far ([`Budget::claim_numbered`]; scenarios only).
    numbered: AtomicU64,
}

impl Budget {
    pub(crate) fn new(count: Option<u64>) -> Self {
        Budget {
            remaining: count.map(AtomicU64::new),
            numbered: AtomicU64::new(0),
        }
    }

    /// A claim with its number among this machine's claims, dense from 0 across every
    /// thread: a scenario's iteration number (`{{seq}}`, the data row of `per: iteration`).
    /// One more atomic than [`Budget::claim`], so the plain request loops do not use it.
    pub(crate) fn claim_numbered(&self) -> Option<u64> {
        self.claim()
            .then(|| self.numbered.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn claim(&self) -> bool {
        match &self.remaining {
            None => true,
            Some(n) => n
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
        }
    }
}

/// Runs one connection until the budget or the deadline says stop.
pub(crate) async fn connection_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    budget: Arc<Budget>,
    deadline: Option<Instant>,
) {
    let mut conn = Connection::new();
    let mut now = Instant::now();
    while deadline.is_none_or(|d| now < d) && !scripted_wait(&shared).await && budget.claim() {
        now = perform(&shared, &mut conn, None, None).await;
    }
}

/// A script's say before a connection's next request: its `delay()` is waited out here
/// (wrk waits before every request); true when the script stopped its thread. No cost
/// without a script.
async fn scripted_wait<T: Transport>(shared: &Shared<T>) -> bool {
    match shared.source.delay() {
        Ok(Some(wait)) => tokio::time::sleep(wait).await,
        Ok(None) => {}
        Err(message) => {
            let now = Instant::now();
            shared.recorder.borrow_mut().record_error(
                loadmark_metrics::ErrorKind::Script,
                now,
                &message,
            );
            // A failing delay() must not spin the event loop without yielding.
            tokio::task::consume_budget().await;
        }
    }
    shared.source.stopped()
}

/// A ramp's say over one connection slot: the slot retires once the ramp wants fewer
/// slots than its number.
pub(crate) struct Retire {
    id: usize,
    wanted: Rc<Cell<usize>>,
}

impl Retire {
    pub(crate) fn now(&self) -> bool {
        self.id >= self.wanted.get()
    }
}

/// Follows a connection-count profile: every [`RAMP_STEP`] this worker's share of the count is
/// recomputed; missing connections start, surplus ones retire after their current request.
pub(crate) async fn ramp_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    budget: Arc<Budget>,
    profile: Arc<Profile>,
    origin: Instant,
    share: Share,
) {
    ramp_slots(profile, origin, share, move |retire, end| {
        let (shared, budget) = (shared.clone(), budget.clone());
        async move {
            let mut conn = Connection::new();
            let mut now = Instant::now();
            while !retire.now() && now < end && !scripted_wait(&shared).await && budget.claim() {
                now = perform(&shared, &mut conn, None, None).await;
            }
        }
    })
    .await
}

/// The ramp itself, whatever a slot runs (an HTTP/1.1 connection, or an HTTP/2 connection
/// with its streams): `slot` is started for each missing slot with its [`Retire`] and the
/// ramp's end, and must return once either says so.
pub(crate) async fn ramp_slots<F, S>(profile: Arc<Profile>, origin: Instant, share: Share, slot: S)
where
    S: Fn(Retire, Instant) -> F,
    F: std::future::Future<Output = ()> + 'static,
{
    let end = origin + profile.duration();
    let wanted = Rc::new(Cell::new(0usize));
    let alive: Rc<RefCell<Vec<bool>>> = Rc::new(RefCell::new(Vec::new()));
    let mut connections = JoinSet::new();
    let mut step = tokio::time::interval_at(origin.into(), RAMP_STEP);
    loop {
        step.tick().await;
        let Some(total) = profile.value_at(origin.elapsed()) else {
            break;
        };
        // This machine's share of the whole run's count, then this worker's of that.
        let total = share.segment.share_of(total.round() as u64);
        let mine = (total / share.of + u64::from(share.index < total % share.of)) as usize;
        wanted.set(mine);
        let mut alive_now = alive.borrow_mut();
        if alive_now.len() < mine {
            alive_now.resize(mine, false);
        }
        for id in 0..mine {
            if !alive_now[id] {
                alive_now[id] = true;
                let retire = Retire {
                    id,
                    wanted: wanted.clone(),
                };
                let run = slot(retire, end);
                let alive = alive.clone();
                connections.spawn_local(async move {
                    run.await;
                    alive.borrow_mut()[id] = false;
                });
            }
        }
        drop(alive_now);
        while connections.try_join_next().is_some() {}
    }
    while connections.join_next().await.is_some() {}
}
