//! The closed-loop executors, written once for every protocol: each slot (a connection, a
//! WebSocket session, a scenario's user) starts its next request when the previous one
//! ended (wrk, ab, bombardier), as a task on its worker thread's event loop; everything it
//! touches is that thread's own. A fixed number of slots ([`spawn_slots`]) or a number
//! that follows a profile ([`ramp`]); what a slot does is its protocol's [`ClosedDriver`].

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadmark_plan::Profile;
use tokio::task::JoinSet;

use crate::connection::{perform, Connection, Shared};
use crate::open::Share;
use crate::settle;
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

/// When a closed-loop slot stops starting requests: the budget is spent, the load's end
/// has come, or a ramp retired the slot.
pub(crate) struct Until {
    pub(crate) budget: Arc<Budget>,
    pub(crate) end: Option<Instant>,
    pub(crate) retire: Option<Retire>,
}

impl Until {
    /// Past the load's end, or retired by a ramp (the budget is claimed apart).
    pub(crate) fn reached(&self, now: Instant) -> bool {
        self.end.is_some_and(|end| now >= end) || self.retire.as_ref().is_some_and(Retire::now)
    }
}

/// A protocol's side of the closed loop and the ramp: one slot's life (a connection keeping
/// its capacity busy, a WebSocket session after another, a scenario's virtual user).
pub(crate) trait ClosedDriver<T: Transport>: 'static {
    /// Requests one slot keeps waiting on the server at once, for the lingering task
    /// ([`crate::linger`]); None when its slots do not linger.
    fn waiting_per_slot(&self) -> Option<usize> {
        None
    }

    /// Resolves when the run must stop at once (a server that refused the protocol): a ramp
    /// then starts no more slots.
    fn halted(&self) -> impl Future<Output = ()> {
        std::future::pending()
    }

    /// One slot's life, until `until` says stop; `seed` is its own (virtual users' random
    /// choices).
    fn run_slot(
        self: &Rc<Self>,
        shared: Rc<Shared<T>>,
        until: Until,
        seed: u64,
    ) -> impl Future<Output = ()> + 'static;
}

/// The closed model: `slots` slots of `driver` from `begin` (a scenario that starts later)
/// until the budget or `end`.
pub(crate) fn spawn_slots<T: Transport, D: ClosedDriver<T>>(
    tasks: &mut JoinSet<()>,
    driver: &Rc<D>,
    shared: &Rc<Shared<T>>,
    slots: usize,
    budget: &Arc<Budget>,
    (begin, end): (Option<Instant>, Option<Instant>),
    seed: impl Fn(usize) -> u64,
) {
    for i in 0..slots {
        let until = Until {
            budget: budget.clone(),
            end,
            retire: None,
        };
        let run = driver.run_slot(shared.clone(), until, seed(i));
        match begin {
            None => tasks.spawn_local(run),
            Some(begin) => tasks.spawn_local(async move {
                tokio::time::sleep_until(begin.into()).await;
                run.await
            }),
        };
    }
}

/// The ramp: `driver`'s slots follow a count profile ([`ramp_slots`]), each with a seed of
/// its own; a server that refused the protocol ends it at once.
pub(crate) async fn ramp<T: Transport, D: ClosedDriver<T>>(
    driver: Rc<D>,
    shared: Rc<Shared<T>>,
    budget: Arc<Budget>,
    (profile, origin, share): (Arc<Profile>, Instant, Share),
    seed: u64,
) {
    let started = Cell::new(0u64);
    let slots = ramp_slots(profile, origin, share, |retire, end| {
        started.set(started.get() + 1);
        let until = Until {
            budget: budget.clone(),
            end: Some(end),
            retire: Some(retire),
        };
        driver.run_slot(
            shared.clone(),
            until,
            seed ^ started.get().wrapping_mul(0x9E37_79B9_7F4A_7C15),
        )
    });
    tokio::select! {
        () = slots => {}
        () = driver.halted() => {}
    }
}

/// HTTP/1.1's closed loop: one connection, one request after another.
impl<T: Transport> ClosedDriver<T> for crate::open::Http1 {
    fn waiting_per_slot(&self) -> Option<usize> {
        Some(1)
    }

    fn run_slot(
        self: &Rc<Self>,
        shared: Rc<Shared<T>>,
        until: Until,
        _seed: u64,
    ) -> impl Future<Output = ()> + 'static {
        connection_loop(shared, until)
    }
}

/// Runs one connection until the budget, the load's end or the ramp says stop.
async fn connection_loop<T: Transport>(shared: Rc<Shared<T>>, until: Until) {
    let mut conn = Connection::new();
    let mut now = Instant::now();
    while !until.reached(now) && !scripted_wait(&shared).await && until.budget.claim() {
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
            settle::failure(
                &shared.recorder,
                loadmark_metrics::ErrorKind::Script,
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
