//! The open-loop executor: requests arrive on a fixed schedule, whatever the responses do
//! (wrk2, vegeta, k6's arrival-rate executors). Written once for every protocol: a
//! [`Driver`] says how many requests one of its connections carries at once and runs a
//! connection's life on the jobs its [`Lane`] hands it; the schedule, the pool, dropped
//! requests and lag are the executor's, so they mean the same over every protocol.
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

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use loadmark_plan::{Profile, Segment};
use tokio::task::JoinSet;

use crate::connection::{perform, Connection, Shared};
use crate::pool::{Due, Pool, Slot};
use crate::settle;
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
        self.next_seen(idle).await.map(|(k, due, _)| (k, due))
    }

    /// As [`Schedule::next`], with the clock as the pacer last read it (at or after the due
    /// time): when the request is handed out, without another read of the clock.
    pub(crate) async fn next_seen(
        &mut self,
        idle: &Cell<Duration>,
    ) -> Option<(u64, Instant, Instant)> {
        let k = self.share.segment.global(self.j);
        let due = self.origin + self.profile.due(k)?;
        // Sleep only when nothing is due: every request already due goes out at once.
        let (polled, seen) = self.pacer.sleep_until_seen(due).await;
        idle.set(idle.get() + polled);
        self.j += self.share.of;
        Some((k, due, seen))
    }
}

/// A protocol's side of the open loop: one connection's life, fed by the executor.
pub(crate) trait Driver<T: Transport>: Sized + 'static {
    /// Requests one connection carries at once: 1 over HTTP/1.1, the depth when pipelined,
    /// the streams over HTTP/2.
    fn capacity(&self) -> usize;

    /// Resolves when the run must stop at once (a server that refused the protocol); the
    /// schedule then ends.
    fn halted(&self) -> impl Future<Output = ()> {
        std::future::pending()
    }

    /// One connection's life: opens it (unless it was opened before the schedule started:
    /// `preopened`), sends what its lane hands it as its capacity allows, records each
    /// request's end (a sample, or a classified error) and tells the lane
    /// ([`Lane::done`]), until the lane says it is to close and nothing is under way.
    fn serve(
        lane: Lane<T, Self>,
        preopened: Option<Connection<T::Stream>>,
    ) -> impl Future<Output = ()> + 'static;
}

/// One worker's open loop: the pool, the driver, and where connections' tasks run.
pub(crate) struct OpenLoop<T: Transport, D> {
    pub(crate) shared: Rc<Shared<T>>,
    pub(crate) driver: D,
    pool: Pool,
    /// Where connections run; held by [`schedule_loop`] alone, so stopping it stops them.
    tasks: Weak<RefCell<JoinSet<()>>>,
}

impl<T: Transport, D: Driver<T>> OpenLoop<T, D> {
    /// Opens a connection for `job` at `now` (the pool may grow: checked by the caller).
    fn grow(self: &Rc<Self>, job: Due, now: Instant) {
        self.pool.open_one(false);
        let slot = Slot::new(job.due);
        self.pool.hand(&slot, job, now);
        self.start(slot, None);
    }

    fn start(self: &Rc<Self>, slot: Rc<Slot>, preopened: Option<Connection<T::Stream>>) {
        if let Some(tasks) = self.tasks.upgrade() {
            let lane = Lane {
                run: self.clone(),
                slot,
            };
            tasks.borrow_mut().spawn_local(D::serve(lane, preopened));
        }
    }

    /// Places a request at once, without a round of the event loop: on a connection with
    /// room, or a new one if the pool may grow; false when neither.
    fn place_now(self: &Rc<Self>, job: Due) -> bool {
        let now = Instant::now();
        if let Some(slot) = self.pool.take() {
            self.pool.hand(&slot, job, now);
            return true;
        }
        // A request sent elsewhere is not the schedule's lateness: placed as if due now.
        if self.pool.may_grow(now, now) {
            self.grow(job, now);
            return true;
        }
        false
    }

    fn record_dropped(&self, due: Instant) {
        settle::dropped(&mut self.shared.recorder.borrow_mut(), due, 1);
    }
}

/// A connection's place in the open loop, as its driver sees it.
pub(crate) struct Lane<T: Transport, D> {
    run: Rc<OpenLoop<T, D>>,
    slot: Rc<Slot>,
}

impl<T: Transport, D: Driver<T>> Lane<T, D> {
    pub(crate) fn shared(&self) -> &Rc<Shared<T>> {
        &self.run.shared
    }

    pub(crate) fn driver(&self) -> &D {
        &self.run.driver
    }

    /// The next request handed to this connection, waiting for one; None when it is to close.
    pub(crate) async fn next(&self) -> Option<Due> {
        self.slot.next_job().await
    }

    /// A request handed over and not yet taken up, without waiting.
    pub(crate) fn try_next(&self) -> Option<Due> {
        self.slot.try_job()
    }

    /// Ready when a request waits to be taken up; the task is also woken when the
    /// connection is told to close ([`Lane::retired`]).
    pub(crate) fn poll_job(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.slot.poll_job(cx)
    }

    /// Waits until a request waits to be taken up.
    pub(crate) async fn job_waiting(&self) {
        poll_fn(|cx| self.poll_job(cx)).await
    }

    /// Puts a request taken up back at the front, to send on the connection's next life.
    pub(crate) fn requeue(&self, job: Due) {
        self.slot.requeue(job);
    }

    /// Requests handed to this connection and not ended.
    pub(crate) fn busy(&self) -> usize {
        self.slot.busy()
    }

    /// Told to close once what it carries has ended.
    pub(crate) fn retired(&self) -> bool {
        self.slot.retired()
    }

    /// One of its requests ended at `now` (recorded by the driver): the connection may take
    /// a waiting request or go back to the pool.
    pub(crate) fn done(&self, now: Instant) {
        let run = &self.run;
        run.pool.done(&self.slot, now, run.shared.timeout, |due| {
            run.record_dropped(due)
        });
    }

    /// The connection is gone for good (it could not open, failed, or the server went
    /// away): out of the pool before its requests are placed elsewhere.
    pub(crate) fn gone(&self) {
        self.run.pool.gone(&self.slot);
    }

    /// Sends a request this connection cannot (it ended before sending it, or the server
    /// did not process it) on another connection, which may be a new one; false when none
    /// has room and the pool may not grow. The caller ended it here first ([`Lane::done`]).
    pub(crate) fn place_elsewhere(&self, job: Due) -> bool {
        self.run.place_now(job)
    }
}

/// Sends this worker's share of the schedule on `driver`'s connections, then waits for its
/// requests to end (each is bounded by the request timeout).
///
/// Each connection of the pool is one task that waits in [`Pool`] for its next request, so
/// a request costs a pop, a wake and a push, and no task or timer of its own; the pool grows
/// only when every connection waits on the server, as answers come ([`crate::pool`]).
pub(crate) async fn schedule_loop<T: Transport, D: Driver<T>>(
    shared: Rc<Shared<T>>,
    driver: D,
    profile: Arc<Profile>,
    origin: Instant,
    share: Share,
    max_connections: usize,
    preopened: Vec<(Connection<T::Stream>, Duration)>,
) {
    let now = Instant::now();
    let tasks = Rc::new(RefCell::new(JoinSet::new()));
    let capacity = driver.capacity();
    let run = Rc::new(OpenLoop {
        shared: shared.clone(),
        driver,
        pool: Pool::new(max_connections, preopened.len(), capacity, now),
        tasks: Rc::downgrade(&tasks),
    });
    let pool = &run.pool;
    let _report = ReportPool {
        shared: &shared,
        pool,
    };
    for (conn, _) in preopened {
        if pool.open_one(true) {
            let slot = Slot::new(now);
            pool.list(&slot);
            run.start(slot, Some(conn));
        }
    }
    let mut schedule = Schedule::new(profile, origin, share);
    let halted = run.driver.halted();
    tokio::pin!(halted);
    loop {
        let next = tokio::select! {
            biased;
            () = &mut halted => None,
            next = schedule.next_seen(&shared.idle_polling) => next,
        };
        let Some((k, due, seen)) = next else {
            break;
        };
        let job = Due::new(k, due);
        let (slot, now) = match pool.take() {
            Some(slot) => (Some(slot), seen),
            // Reading what has arrived may free a connection, cheaper than a new one. When
            // the pool may not grow anyway, the request waits its turn without that round of
            // the event loop: past the server's capacity a round per due request (a thousand
            // connections' turns) left the schedule 100 ms behind at 50,000 req/s.
            None if pool.may_grow(seen, due) => (pool.harvest().await, Instant::now()),
            None => (None, seen),
        };
        match slot {
            Some(slot) => pool.hand(&slot, job, now),
            None if pool.may_grow(now, due) => run.grow(job, now),
            None if !pool.full() => pool.wait(job, now),
            None => run.record_dropped(due),
        }
        pool.placed(due);
        pool.shrink(due);
        while tasks.borrow_mut().try_join_next().is_some() {}
    }
    pool.finish();
    while poll_fn(|cx| tasks.borrow_mut().poll_join_next(cx))
        .await
        .is_some()
    {}
}

/// HTTP/1.1, one request at a time on each connection.
pub(crate) struct Http1;

impl<T: Transport> Driver<T> for Http1 {
    fn capacity(&self) -> usize {
        1
    }

    async fn serve(lane: Lane<T, Self>, preopened: Option<Connection<T::Stream>>) {
        let mut conn = preopened.unwrap_or_else(Connection::new);
        while let Some(job) = lane.next().await {
            conn.taken_up = job.taken_up;
            let ended = perform(lane.shared(), &mut conn, Some(job.due), Some(job.k)).await;
            lane.done(ended);
        }
    }
}

/// Records what the pool did when the loop ends, however it ends: a run stopped early
/// (Ctrl-C, the hard stop) drops the loop mid-way, and its report still says why its
/// connections opened.
struct ReportPool<'a, T: Transport> {
    shared: &'a Shared<T>,
    pool: &'a Pool,
}

impl<T: Transport> Drop for ReportPool<'_, T> {
    fn drop(&mut self) {
        let stats = self.pool.stats.get();
        if let Ok(mut recorder) = self.shared.recorder.try_borrow_mut() {
            recorder.record_pool(Instant::now(), &stats.into());
            // Requests still waiting for a connection when the run stopped were never sent.
            for job in self.pool.take_waiting() {
                settle::dropped(&mut recorder, job.due, 1);
            }
        }
        if std::env::var_os("LOADMARK_POOL_STATS").is_some() {
            eprintln!("open-loop pool: {stats:?}");
        }
    }
}
