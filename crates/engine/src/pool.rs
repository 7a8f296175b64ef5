//! The open loop's pool of connections, whatever they speak (issue 43): one pool for every
//! driver ([`crate::open`]). A connection carries up to the driver's capacity at once (one
//! request over HTTP/1.1, the pipeline's depth, HTTP/2's streams).
//!
//! An open loop hands each due request to a connection with room. Three rules keep the pool the
//! size the server needs, and the work per request independent of that size:
//!
//! - **O(1) hand-out.** Idle connections wait on a stack (the most recently freed on top, so
//!   the same few hot connections carry the load and the rest age at the bottom). Taking one
//!   and giving it back costs a push and a pop; idle connections cost nothing per request.
//!   Connections that carry some requests and have room for more wait on a second stack,
//!   taken only when none is idle: requests spread over the connections and queue behind
//!   others only when every connection carries some (a pipelined request waits for those
//!   ahead of it; an HTTP/2 stream does not, and spreading costs it nothing).
//! - **Grow for a slow server, not for a late client.** When no connection is free, the loop
//!   first lets its event loop read what has arrived ([`Pool::harvest`]): responses that sat
//!   unread while the loop was busy free their connections. Only when every connection is
//!   still waiting on the server does the pool open another. Before this rule a late turn
//!   found every connection "busy" with responses it had not read yet, opened new ones
//!   (a connect costs about what one request does), fell later still, and grew the pool to
//!   600-1000 connections at 20,000 req/s against a server that needed one or two.
//! - **Grow as answers come, not during a stall.** A server that stops answering for a
//!   while (a descheduled vCPU: service time p99 of 40-60 ms at 20,000 req/s on this VM)
//!   gains nothing from more connections, and each one costs both sides a handshake: a
//!   40 ms stall grew the pool by 800, whose connects and accepts then stalled both sides
//!   again. So growth spends credit: [`GROWTH_BURST`] at most, one more for every response.
//!   A request due when every connection is busy and growth is not allowed waits for the next
//!   connection to come free, first in first out; its lag ends when the schedule took it up
//!   and the wait is service time, as a connect made for it is. While answers drain such a
//!   backlog faster than requests fall due, the pool does not grow, unless the oldest has
//!   waited [`PATIENCE`] and the backlog would not be gone within [`DRAIN_HORIZON`] at the
//!   pace it has shrunk since its peak. A stall's backlog drains on the connections there
//!   are; a connection opened for it finds the server at the same limit: with every
//!   connection busy, each answer takes N / X (N connections, the server's limit X), and
//!   Little's law over that time asks for more than N whenever the rate is above X / 2, so
//!   growing for it fed itself (9 to 797 connections after 25 ms stalls at 50,000 req/s).
//!   A backlog that holds or grows is a pool too small or a server past its limit: it grows,
//!   and an open loop offers the server what the schedule asks. One that waited longer than
//!   the request timeout is dropped, never sent late.
//! - **Not for a late client, nor past what Little's law asks.** A request placed [`LATE`]
//!   or more after its due time means the client's own loop is behind: a connection costs
//!   it a connect, which only puts it further behind; unless the server takes
//!   [`SLOW_SERVICE`] or more, when waiting for a busy connection costs more than a connect.
//!   And the pool does not grow past twice
//!   the connections Little's law asks for (rate × typical service time,
//!   [`crate::service`], over what a connection carries) plus one; nor, while answers are
//!   coming, before it knows that time (the run's first millisecond is cold on both
//!   sides), unless a request waited [`PATIENCE`]. Either way due requests wait for the next
//!   connection to come free. At 50,000 req/s against a one-core server that fell behind,
//!   growth without such a rule took the pool to 1,000 connections and the schedule 150-330
//!   ms late. (Holding growth back whenever the server queues did better there, but it is
//!   a closed loop's feedback: a server that sheds its excess with 503s never saw the excess,
//!   and the capacity search found it 50% above its capacity.)
//! - **Shrink back.** A connection left at the bottom of the stack, unused for
//!   [`IDLE_CLOSE`], is closed, down to the pool's floor (what was opened up front).
//!
//! Why connections opened is kept per reason ([`PoolStats`]): "1,000 connections" means
//! something else when 990 of them were the server closing keep-alive connections.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::service::{ServiceTimes, WARM_UP};

/// Connections the pool may open before any response has come back (see the module doc).
pub(crate) const GROWTH_BURST: usize = 2;
/// How long the oldest waiting request may wait while answers drain the backlog before the
/// pool grows anyway: a server stall of a few milliseconds (a descheduled vCPU) drains in
/// about as long, without new connections.
pub(crate) const PATIENCE: Duration = Duration::from_millis(10);
/// A backlog that shrinks fast enough to be gone within this long holds the pool back even
/// after [`PATIENCE`]: the stall that made it is over and the server catches up on the
/// connections there are (a 25 ms stall at 50,000 req/s against a one-core server that
/// carries 65,000 drains in about 80 ms).
pub(crate) const DRAIN_HORIZON: Duration = Duration::from_millis(200);
/// A request placed this long after its due time means the client is behind: the pool does
/// not grow for it (a connect costs the late loop as much as a request). Four times issue
/// 43's bar for the schedule lag's p99.
pub(crate) const LATE: Duration = Duration::from_micros(200);
/// ... unless the server is this slow: a request that waits for a busy connection then waits
/// about a service time, more than a connect costs the loop (tens of µs on loopback), so the
/// pool grows for a late client too. Without this, a client made late by a busy machine (a
/// few hundred µs) kept every request of a 5 ms server waiting for a busy connection, and
/// its lag grew to the service time (CI's capacity search at 5,000 req/s: "client late").
pub(crate) const SLOW_SERVICE: Duration = Duration::from_millis(1);
/// A connection unused this long, beyond the pool's floor, is closed.
pub(crate) const IDLE_CLOSE: Duration = Duration::from_secs(1);
/// How often the bottom of the stack is looked at for connections to close.
const SHRINK_EVERY: Duration = Duration::from_millis(100);

/// A due request of the open loop, whatever carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Due {
    /// Its number in the whole run's schedule.
    pub k: u64,
    /// Its intended send time: latency counts from here.
    pub due: Instant,
    /// When the schedule took it up, if it had to wait for a connection with room: its lag
    /// ends there, and the wait is the server's, as a connect made for it is.
    pub taken_up: Option<Instant>,
    /// Already sent once on a connection that ended without processing it.
    pub retried: bool,
}

impl Due {
    pub(crate) fn new(k: u64, due: Instant) -> Self {
        Due {
            k,
            due,
            taken_up: None,
            retried: false,
        }
    }

    /// When it went under way: when the schedule took it up if it waited, else `now`.
    pub(crate) fn started(&self, now: Instant) -> Instant {
        self.taken_up.unwrap_or(now)
    }
}

/// One connection's place in the pool: where its task is handed work.
pub(crate) struct Slot {
    /// Handed to the connection and not yet taken up by its task.
    jobs: RefCell<VecDeque<Due>>,
    /// Handed and not ended (queued here, or under way on the connection).
    busy: Cell<usize>,
    /// Listed on the pool's idle stack, or its stack of connections with some room.
    on_idle: Cell<bool>,
    on_partial: Cell<bool>,
    waker: Cell<Option<Waker>>,
    /// When it was handed a request while it carried nothing: that request's service time
    /// runs from there to the connection's next end, with nothing of ours ahead of it (a
    /// pipelined request behind others waits for them, which says nothing of the server).
    handed: Cell<Option<Instant>>,
    /// When it last became idle.
    idle_since: Cell<Instant>,
    /// Told to close (idle too long, or the schedule is over).
    retire: Cell<bool>,
    /// Closed for good, and no longer counted open.
    gone: Cell<bool>,
}

impl Slot {
    pub(crate) fn new(now: Instant) -> Rc<Self> {
        Rc::new(Slot {
            jobs: RefCell::new(VecDeque::new()),
            busy: Cell::new(0),
            on_idle: Cell::new(false),
            on_partial: Cell::new(false),
            waker: Cell::new(None),
            handed: Cell::new(None),
            idle_since: Cell::new(now),
            retire: Cell::new(false),
            gone: Cell::new(false),
        })
    }

    /// Gives this connection a job at `at` and wakes its task.
    fn give(&self, job: Due, at: Instant) {
        self.jobs.borrow_mut().push_back(job);
        if self.busy.get() == 0 {
            self.handed.set(Some(at));
        }
        self.busy.set(self.busy.get() + 1);
        self.wake();
    }

    fn wake(&self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    fn retire(&self) {
        self.retire.set(true);
        self.wake();
    }

    /// Whether it may be handed another request.
    fn has_room(&self, capacity: usize) -> bool {
        !self.gone.get() && !self.retire.get() && self.busy.get() < capacity
    }

    /// Requests handed to it and not ended.
    pub(crate) fn busy(&self) -> usize {
        self.busy.get()
    }

    /// Told to close: once what it was handed has ended, its task ends.
    pub(crate) fn retired(&self) -> bool {
        self.retire.get()
    }

    /// A job handed over and not yet taken up, without waiting.
    pub(crate) fn try_job(&self) -> Option<Due> {
        self.jobs.borrow_mut().pop_front()
    }

    /// Puts a job taken up back at the front (a connection that ended before sending it;
    /// it stays counted busy).
    pub(crate) fn requeue(&self, job: Due) {
        self.jobs.borrow_mut().push_front(job);
    }

    /// Ready when a job is waiting to be taken up; else the task is woken when one comes,
    /// or when the connection is told to close (which the task looks at itself).
    pub(crate) fn poll_job(&self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.jobs.borrow().is_empty() {
            return Poll::Ready(());
        }
        self.waker.set(Some(cx.waker().clone()));
        Poll::Pending
    }

    /// The connection's task waits here for its next job; None when it is to close.
    pub(crate) async fn next_job(&self) -> Option<Due> {
        poll_fn(|cx| {
            if let Some(job) = self.try_job() {
                return Poll::Ready(Some(job));
            }
            if self.retire.get() {
                return Poll::Ready(None);
            }
            self.waker.set(Some(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }
}

/// Why the pool opened connections, how far it grew, and what it closed: per worker,
/// added up in the report.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolStats {
    /// Opened before the schedule started.
    pub preopened: u64,
    /// Opened because a request was due while every connection waited on the server.
    pub grown: u64,
    /// Closed after [`IDLE_CLOSE`] unused.
    pub closed_idle: u64,
    /// The most connections open at once.
    pub peak: u64,
    /// Times a due request found no connection with room and the loop read what had
    /// arrived first; of those, times that freed one.
    pub harvests: u64,
    pub harvest_freed: u64,
    /// Requests that waited for a connection to come free (no credit to grow), and those
    /// of them dropped after waiting longer than the request timeout.
    pub waited: u64,
    pub waited_too_long: u64,
    /// Times a due request found every connection busy and the pool did not grow: the
    /// client was [`LATE`], the pool already had what Little's law asks for twice over, or
    /// answers were draining the backlog (see [`DRAIN_HORIZON`]).
    pub held_back: u64,
    /// Service times as the pool saw them at the end: the least, and the recent average.
    pub service_least: Duration,
    pub service_recent: Duration,
}

impl From<PoolStats> for loadmark_metrics::PoolCounts {
    fn from(s: PoolStats) -> Self {
        loadmark_metrics::PoolCounts {
            preopened: s.preopened,
            grown: s.grown,
            closed_idle: s.closed_idle,
            peak: s.peak,
        }
    }
}

/// The connections of one worker's open loop with room for a request, and how many are
/// open.
pub(crate) struct Pool {
    /// Connections carrying nothing, the most recently freed last.
    idle: RefCell<VecDeque<Rc<Slot>>>,
    /// Connections carrying some requests, with room for more (capacity above one).
    partial: RefCell<Vec<Rc<Slot>>>,
    /// Requests one connection carries at once.
    capacity: usize,
    /// Requests handed to connections and not ended.
    under_way: Cell<usize>,
    /// When the first request was handed to a connection.
    first_handed: Cell<Option<Instant>>,
    /// How long requests take from hand-out to end: whether the server queues them.
    service: RefCell<ServiceTimes>,
    /// `LOADMARK_POOL_TRACE` is set: each growth is told on stderr, with why.
    trace: bool,
    /// The due time of the last request placed, and a moving average of the time between
    /// due requests (ns; 0 before two): the rate this worker's share of the schedule asks.
    last_due: Cell<Option<Instant>>,
    gap: Cell<u64>,
    /// Requests due while every connection was busy and no credit was left, with when the
    /// schedule took each up.
    waiting: RefCell<VecDeque<Due>>,
    /// Connections the pool may still open before more responses come back.
    credit: Cell<usize>,
    /// Requests waiting when the last due request was placed: fewer now means answers are
    /// draining the backlog faster than requests fall due.
    waiting_before: Cell<usize>,
    /// The backlog's peak since it last emptied, and when: how fast answers drain it.
    backlog_peak: Cell<Option<(Instant, usize)>>,
    open: Cell<usize>,
    cap: usize,
    floor: usize,
    last_shrink: Cell<Instant>,
    /// The schedule is over: a connection that ends its last request closes.
    finished: Cell<bool>,
    pub(crate) stats: Cell<PoolStats>,
}

impl Pool {
    /// A pool of at most `cap` connections, each carrying up to `capacity` requests, that
    /// never shrinks below `floor`.
    pub(crate) fn new(cap: usize, floor: usize, capacity: usize, now: Instant) -> Self {
        Pool {
            idle: RefCell::new(VecDeque::new()),
            partial: RefCell::new(Vec::new()),
            capacity: capacity.max(1),
            under_way: Cell::new(0),
            first_handed: Cell::new(None),
            service: RefCell::new(ServiceTimes::default()),
            trace: std::env::var_os("LOADMARK_POOL_TRACE").is_some(),
            last_due: Cell::new(None),
            gap: Cell::new(0),
            waiting: RefCell::new(VecDeque::new()),
            credit: Cell::new(GROWTH_BURST),
            waiting_before: Cell::new(0),
            backlog_peak: Cell::new(None),
            open: Cell::new(0),
            cap: cap.max(1),
            floor,
            last_shrink: Cell::new(now),
            finished: Cell::new(false),
            stats: Cell::new(PoolStats::default()),
        }
    }

    fn note(&self, f: impl FnOnce(&mut PoolStats)) {
        let mut s = self.stats.get();
        f(&mut s);
        self.stats.set(s);
    }

    /// A connection with room: an idle one, the most recently freed first, else one that
    /// carries some. A listing that went stale (the connection filled up, closed) is
    /// dropped when it comes up, so each listing is looked at once.
    pub(crate) fn take(&self) -> Option<Rc<Slot>> {
        let mut idle = self.idle.borrow_mut();
        while let Some(slot) = idle.pop_back() {
            slot.on_idle.set(false);
            if slot.has_room(self.capacity) {
                return Some(slot);
            }
        }
        drop(idle);
        let mut partial = self.partial.borrow_mut();
        while let Some(slot) = partial.pop() {
            slot.on_partial.set(false);
            if slot.has_room(self.capacity) {
                return Some(slot);
            }
        }
        None
    }

    /// Gives `job` to `slot` (one [`Pool::take`] returned, or a new one) at `now`, and lists
    /// the connection again if it still has room. Its service time runs from `now`: how long
    /// the connection is held, what Little's law counts. A late client's lateness is not in
    /// it (a cold start 150-200 µs behind made 40 µs answers look like 200 µs, and the pool
    /// grew to 5-8 connections at 20,000 req/s where 2-3 carry it).
    pub(crate) fn hand(&self, slot: &Rc<Slot>, job: Due, now: Instant) {
        self.give(slot, job, now);
        self.list(slot);
    }

    fn give(&self, slot: &Slot, job: Due, at: Instant) {
        self.under_way.set(self.under_way.get() + 1);
        if self.first_handed.get().is_none() {
            self.first_handed.set(Some(at));
        }
        slot.give(job, at);
    }

    /// Puts a connection with room on the stack it belongs to, unless it is listed there.
    pub(crate) fn list(&self, slot: &Rc<Slot>) {
        if !slot.has_room(self.capacity) {
            return;
        }
        if slot.busy.get() == 0 {
            if !slot.on_idle.replace(true) {
                self.idle.borrow_mut().push_back(slot.clone());
            }
        } else if !slot.on_partial.replace(true) {
            self.partial.borrow_mut().push(slot.clone());
        }
    }

    /// One of `slot`'s requests ended at `now` (answered, failed, or sent elsewhere): the
    /// oldest request waiting for a connection goes to it at once, those that waited longer
    /// than `timeout` are dropped through `dropped` (they would time out unsent); else it
    /// is listed with room again, or closes if the schedule is over and it carries nothing.
    pub(crate) fn done(
        &self,
        slot: &Rc<Slot>,
        now: Instant,
        timeout: Duration,
        mut dropped: impl FnMut(Instant),
    ) {
        self.answered();
        self.under_way.set(self.under_way.get().saturating_sub(1));
        if let Some(handed) = slot.handed.take() {
            let warm = self
                .first_handed
                .get()
                .is_some_and(|first| handed.saturating_duration_since(first) >= WARM_UP);
            self.service.borrow_mut().note(handed, now, warm);
        }
        slot.busy.set(slot.busy.get().saturating_sub(1));
        if slot.gone.get() || slot.retire.get() {
            return;
        }
        loop {
            let Some(mut job) = self.waiting.borrow_mut().pop_front() else {
                break;
            };
            if now.saturating_duration_since(job.due) >= timeout {
                self.note(|s| s.waited_too_long += 1);
                dropped(job.due);
                continue;
            }
            job.taken_up.get_or_insert(now);
            self.give(slot, job, now);
            self.list(slot);
            return;
        }
        if self.finished.get() {
            if slot.busy.get() == 0 {
                slot.retire();
            }
            return;
        }
        if slot.busy.get() == 0 {
            slot.idle_since.set(now);
        }
        self.list(slot);
    }

    /// The connection closed for good (its task ended, or the server went away): it is no
    /// longer counted open, and never handed another request.
    pub(crate) fn gone(&self, slot: &Slot) {
        if !slot.gone.replace(true) {
            self.open.set(self.open.get().saturating_sub(1));
        }
    }

    /// Whether a request due at `due`, placed `now` with every connection busy, should open
    /// a connection: below the cap, with credit left, the client not [`LATE`], the pool
    /// below twice what Little's law asks, and no backlog that answers are already draining;
    /// while answers are coming, the pool grows only once it knows the server's typical
    /// service time ([`crate::service`]: the run's first answers are cold). Whatever holds
    /// it back, a backlog whose oldest request waited [`PATIENCE`] grows it: one that drains
    /// only as fast as requests fall due is a pool too small for the server, and a server
    /// slow from its first answer gets its connections.
    pub(crate) fn may_grow(&self, now: Instant, due: Instant) -> bool {
        if self.open.get() >= self.cap || self.credit.get() == 0 {
            return false;
        }
        let waiting = self.waiting.borrow();
        let patient = waiting.front().is_none_or(|job| {
            let taken_up = job.taken_up.unwrap_or(job.due);
            now.saturating_duration_since(taken_up) < PATIENCE
        });
        if self.under_way.get() > 0 {
            let times = self.service.borrow();
            let late = now.saturating_duration_since(due) >= LATE && times.recent() < SLOW_SERVICE;
            let unknown = times.typical().is_none() && patient;
            if late || unknown || self.open.get() >= self.enough() {
                self.note(|s| s.held_back += 1);
                return false;
            }
        }
        let draining = !waiting.is_empty() && waiting.len() < self.waiting_before.get();
        if draining && patient {
            return false;
        }
        if self.drains_soon(now, waiting.len()) {
            self.note(|s| s.held_back += 1);
            return false;
        }
        true
    }

    /// Whether a backlog of `len` requests, shrinking as fast as it has since its peak,
    /// would be gone within [`DRAIN_HORIZON`]. Near a balance of answers and arrivals the
    /// backlog wanders up and down by about the square root of its size; a drain is believed
    /// only once it took more than twice that off the peak, so a backlog that grows slowly
    /// (a rate just above the server's) is not taken for one that drains.
    fn drains_soon(&self, now: Instant, len: usize) -> bool {
        let Some((peak_at, peak)) = self.backlog_peak.get() else {
            return false;
        };
        let drained = peak.saturating_sub(len);
        if len == 0 || drained == 0 || drained * drained <= 4 * peak {
            return false;
        }
        // len / rate, with rate = drained / elapsed, kept in integers.
        let elapsed = now.saturating_duration_since(peak_at);
        elapsed.saturating_mul(len as u32) <= DRAIN_HORIZON.saturating_mul(drained as u32)
    }

    /// Called once the request due at `due` is placed: the backlog it left, to compare the
    /// next with, and the rate the schedule asks.
    pub(crate) fn placed(&self, due: Instant) {
        self.waiting_before.set(self.waiting.borrow().len());
        if let Some(last) = self.last_due.replace(Some(due)) {
            let gap = due.saturating_duration_since(last).as_nanos() as u64;
            let average = self.gap.get();
            self.gap.set(if average == 0 {
                gap.max(1)
            } else {
                (average * 7 + gap) / 8
            });
        }
    }

    /// Connections enough for the rate the schedule asks at the service time the server
    /// gives: twice what Little's law needs (requests in flight = rate x service time,
    /// over what one connection carries), plus one; unbounded before the pool knows both.
    /// Issue 43's bar: at 20,000 req/s and 25 µs, two connections.
    fn enough(&self) -> usize {
        let gap = self.gap.get();
        let Some(service) = self.service.borrow().typical() else {
            return usize::MAX;
        };
        if gap == 0 {
            return usize::MAX;
        }
        let in_flight = service.as_nanos() as u64 * 2;
        let per_connection = gap * self.capacity as u64;
        in_flight.div_ceil(per_connection) as usize + 1
    }

    /// Whether the cap is reached (a request due with every connection busy is dropped).
    pub(crate) fn full(&self) -> bool {
        self.open.get() >= self.cap
    }

    /// A request ended on one of the pool's connections: one more connection may open, up
    /// to [`GROWTH_BURST`] at once (credit kept from a busy spell would let the next stall
    /// grow the pool by as much: the pool doubled at each stall of the server).
    fn answered(&self) {
        self.credit.set((self.credit.get() + 1).min(GROWTH_BURST));
    }

    /// Queues a due request for the next connection with room; it was taken up `now`.
    pub(crate) fn wait(&self, mut job: Due, now: Instant) {
        job.taken_up = Some(now);
        let mut waiting = self.waiting.borrow_mut();
        waiting.push_back(job);
        let len = waiting.len();
        // A backlog that had emptied starts anew: its old peak says nothing now.
        if len == 1 || self.backlog_peak.get().is_none_or(|(_, peak)| len >= peak) {
            self.backlog_peak.set(Some((now, len)));
        }
        self.note(|s| s.waited += 1);
    }

    /// Requests still waiting (the run stopping: they are dropped, never sent).
    pub(crate) fn take_waiting(&self) -> Vec<Due> {
        self.backlog_peak.set(None);
        self.waiting.borrow_mut().drain(..).collect()
    }

    /// Counts a connection that opens (`preopened`: before the schedule, spending no
    /// credit); false when the cap is reached.
    pub(crate) fn open_one(&self, preopened: bool) -> bool {
        if self.open.get() >= self.cap {
            return false;
        }
        if !preopened {
            self.credit.set(self.credit.get().saturating_sub(1));
            if self.trace {
                self.trace_growth();
            }
        }
        self.open.set(self.open.get() + 1);
        let open = self.open.get() as u64;
        self.note(|s| {
            if preopened {
                s.preopened += 1;
            } else {
                s.grown += 1;
            }
            s.peak = s.peak.max(open);
        });
        true
    }

    /// Tells why the pool grows, for `LOADMARK_POOL_TRACE`: how far into the run, the
    /// service times it knows, what Little's law asks and the backlog.
    fn trace_growth(&self) {
        let t = self.service.borrow();
        let enough = self.enough();
        eprintln!(
            "loadmark pool: grows at {:?} from {} open: service least {:?}, recent {:?}, \
             typical {:?}; enough {}; {} waiting, {} under way",
            self.first_handed.get().map(|f| f.elapsed()),
            self.open.get(),
            t.least(),
            t.recent(),
            t.typical(),
            if enough == usize::MAX {
                "unknown".into()
            } else {
                enough.to_string()
            },
            self.waiting.borrow().len(),
            self.under_way.get()
        );
    }

    /// Every connection is busy: lets the event loop read what has arrived (one turn that
    /// polls the sockets without blocking and runs the tasks it woke), then takes a
    /// connection with room if that freed one.
    pub(crate) async fn harvest(&self) -> Option<Rc<Slot>> {
        tokio::task::yield_now().await;
        let slot = self.take();
        let freed = slot.is_some() as u64;
        self.note(|s| {
            s.harvests += 1;
            s.harvest_freed += freed;
        });
        slot
    }

    /// Closes connections that sat idle at the bottom of the stack for [`IDLE_CLOSE`],
    /// keeping the floor; looks at most every [`SHRINK_EVERY`].
    pub(crate) fn shrink(&self, now: Instant) {
        if now.saturating_duration_since(self.last_shrink.get()) < SHRINK_EVERY {
            return;
        }
        self.last_shrink.set(now);
        let mut idle = self.idle.borrow_mut();
        while self.open.get() > self.floor {
            let Some(oldest) = idle.front() else {
                break;
            };
            if !oldest.has_room(self.capacity) || oldest.busy.get() > 0 {
                // A stale listing: it is busy or closed now.
                let stale = idle.pop_front().expect("looked at");
                stale.on_idle.set(false);
                continue;
            }
            if now.saturating_duration_since(oldest.idle_since.get()) < IDLE_CLOSE {
                break;
            }
            let oldest = idle.pop_front().expect("looked at");
            oldest.on_idle.set(false);
            oldest.retire();
            self.gone(&oldest);
            self.note(|s| s.closed_idle += 1);
        }
    }

    /// The schedule is over: idle connections close now, busy ones after their requests.
    pub(crate) fn finish(&self) {
        self.finished.set(true);
        let service = self.service.borrow().clone();
        self.note(|s| {
            s.service_least = service.least();
            s.service_recent = service.recent();
        });
        for slot in self.idle.borrow_mut().drain(..) {
            slot.on_idle.set(false);
            if slot.busy.get() == 0 {
                slot.retire();
            }
        }
        for slot in self.partial.borrow_mut().drain(..) {
            slot.on_partial.set(false);
        }
    }
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;
