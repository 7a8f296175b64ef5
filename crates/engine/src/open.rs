//! The open-loop executor: requests arrive on a fixed schedule, whatever the responses do
//! (wrk2, vegeta, k6's arrival-rate executors).
//!
//! Requests are numbered from 0 over the whole run and the schedule gives each one its
//! intended send time ([`Profile::due`]); worker `i` of `n` owns requests `i, i+n, i+2n, ...`,
//! so workers (and later machines) split one schedule exactly. A request is sent on a free
//! connection of the worker's pool ([`crate::pool`]), which grows while the server is slow,
//! up to a cap, and shrinks back; when none is free a request waits its turn for the next
//! one, and is dropped and counted, never silently skipped, when the cap is reached, when it
//! waited longer than the request timeout, or when the run ends with it still waiting. Latency is
//! measured from the intended time, so a stalled server shows up in every request that had to
//! wait (no coordinated omission).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadmark_plan::{Profile, Segment};
use tokio::task::JoinSet;

use crate::connection::{perform, Connection, Shared};
use crate::pool::{Pool, Slot};
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

/// One due request: its number on the run's schedule and its intended send time.
type Job = (u64, Instant);

/// Sends this worker's share of the schedule, then waits for its requests to end (each is
/// bounded by the request timeout).
///
/// Each connection of the pool is one task that waits in [`Pool`] for its next request, so
/// a request costs a pop, a wake and a push, and no task or timer of its own; the pool grows
/// only when every connection waits on the server, as answers come ([`crate::pool`]).
pub(crate) async fn schedule_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    profile: Arc<Profile>,
    origin: Instant,
    share: Share,
    max_connections: usize,
    preopened: Vec<(Connection<T::Stream>, Duration)>,
) {
    let now = Instant::now();
    let pool: Rc<Pool<Job>> = Rc::new(Pool::new(max_connections, preopened.len(), now));
    let _report = ReportPool {
        shared: &shared,
        pool: &pool,
    };
    let mut connections = JoinSet::new();
    for (conn, _) in preopened {
        if pool.open_one(true) {
            let slot = Slot::new(now);
            pool.give_back(slot.clone(), now);
            connections.spawn_local(connection_task(
                shared.clone(),
                pool.clone(),
                slot,
                conn,
                None,
            ));
        }
    }
    let mut schedule = Schedule::new(profile, origin, share);
    while let Some((k, due)) = schedule.next(&shared.idle_polling).await {
        let slot = match pool.take() {
            Some(slot) => Some(slot),
            // Reading what has arrived may free a connection, cheaper than a new one. When
            // the pool may not grow anyway, the request waits its turn without that round of
            // the event loop: past the server's capacity a round per due request (a thousand
            // connections' turns) left the schedule 100 ms behind at 50,000 req/s.
            None if pool.may_grow(due.max(Instant::now())) => pool.harvest().await,
            None => None,
        };
        match slot {
            Some(slot) => slot.give((k, due)),
            None if pool.may_grow(due.max(Instant::now())) => {
                pool.open_one(false);
                connections.spawn_local(connection_task(
                    shared.clone(),
                    pool.clone(),
                    Slot::new(due),
                    Connection::new(),
                    Some((k, due)),
                ));
            }
            None if !pool.full() => pool.wait((k, due), Instant::now()),
            None => shared.recorder.borrow_mut().record_dropped(due, 1),
        }
        pool.placed();
        pool.shrink(due);
        while connections.try_join_next().is_some() {}
    }
    pool.finish();
    while connections.join_next().await.is_some() {}
}

/// One connection of the pool: performs what it is given, then the oldest request waiting
/// for a connection, if any, else waits in the pool again, until the pool retires it (idle
/// too long, or the schedule is over).
async fn connection_task<T: Transport>(
    shared: Rc<Shared<T>>,
    pool: Rc<Pool<Job>>,
    slot: Rc<Slot<Job>>,
    mut conn: Connection<T::Stream>,
    first: Option<Job>,
) {
    let mut next = first;
    loop {
        let (k, due) = match next.take() {
            Some(job) => job,
            None => match slot.next_job().await {
                Some(job) => job,
                None => return,
            },
        };
        let ended = perform(&shared, &mut conn, Some(due), Some(k)).await;
        pool.answered();
        next = waiting_job(&shared, &pool, &mut conn, ended);
        if next.is_none() {
            pool.give_back(slot.clone(), ended);
        }
    }
}

/// The oldest request waiting for a connection that can still be sent; those that waited
/// longer than the request timeout are dropped (they would time out unsent).
fn waiting_job<T: Transport>(
    shared: &Shared<T>,
    pool: &Pool<Job>,
    conn: &mut Connection<T::Stream>,
    now: Instant,
) -> Option<Job> {
    while let Some(((k, due), taken_up)) = pool.next_waiting() {
        if now.saturating_duration_since(due) >= shared.timeout {
            pool.waited_too_long();
            shared.recorder.borrow_mut().record_dropped(due, 1);
            continue;
        }
        conn.taken_up = Some(taken_up);
        return Some((k, due));
    }
    None
}

/// Records what the pool did when the loop ends, however it ends: a run stopped early
/// (Ctrl-C, the hard stop) drops the loop mid-way, and its report still says why its
/// connections opened.
struct ReportPool<'a, T: Transport> {
    shared: &'a Shared<T>,
    pool: &'a Pool<Job>,
}

impl<T: Transport> Drop for ReportPool<'_, T> {
    fn drop(&mut self) {
        let stats = self.pool.stats.get();
        if let Ok(mut recorder) = self.shared.recorder.try_borrow_mut() {
            recorder.record_pool(Instant::now(), &stats.into());
            // Requests still waiting for a connection when the run stopped were never sent.
            for ((_, due), _) in self.pool.take_waiting() {
                recorder.record_dropped(due, 1);
            }
        }
        if std::env::var_os("LOADMARK_POOL_STATS").is_some() {
            eprintln!("open-loop pool: {stats:?}");
        }
    }
}
