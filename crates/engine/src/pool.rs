//! The open loop's pool of connections, whatever they speak (issue 43).
//!
//! An open loop hands each due request to a free connection. Three rules keep the pool the
//! size the server needs, and the work per request independent of that size:
//!
//! - **O(1) hand-out.** Free connections wait on a stack (the most recently freed on top, so
//!   the same few hot connections carry the load and the rest age at the bottom). Taking one
//!   and giving it back costs a push and a pop; idle connections cost nothing per request.
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
//!   waited [`PATIENCE`]. One that waited longer than the request timeout is dropped, never
//!   sent late.
//! - **Shrink back.** A connection left at the bottom of the stack, unused for
//!   [`IDLE_CLOSE`], is closed, down to the pool's floor (what was opened up front).
//!
//! Why connections opened is kept per reason ([`PoolStats`]): "1,000 connections" means
//! something else when 990 of them were the server closing keep-alive connections.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

/// Connections the pool may open before any response has come back (see the module doc).
pub(crate) const GROWTH_BURST: usize = 2;
/// How long the oldest waiting request may wait while answers drain the backlog before the
/// pool grows anyway: a server stall of a few milliseconds (a descheduled vCPU) drains in
/// about as long, without new connections.
pub(crate) const PATIENCE: Duration = Duration::from_millis(10);
/// A connection unused this long, beyond the pool's floor, is closed.
pub(crate) const IDLE_CLOSE: Duration = Duration::from_secs(1);
/// How often the bottom of the stack is looked at for connections to close.
const SHRINK_EVERY: Duration = Duration::from_millis(100);

/// One connection's place in the pool: where its task is handed work.
pub(crate) struct Slot<J> {
    job: Cell<Option<J>>,
    waker: Cell<Option<Waker>>,
    /// When it was last given back.
    idle_since: Cell<Instant>,
    /// Told to close (idle too long, or the schedule is over).
    retire: Cell<bool>,
}

impl<J> Slot<J> {
    pub(crate) fn new(now: Instant) -> Rc<Self> {
        Rc::new(Slot {
            job: Cell::new(None),
            waker: Cell::new(None),
            idle_since: Cell::new(now),
            retire: Cell::new(false),
        })
    }

    /// Gives this (free) connection a job and wakes its task.
    pub(crate) fn give(&self, job: J) {
        self.job.set(Some(job));
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    fn retire(&self) {
        self.retire.set(true);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    /// The connection's task waits here for its next job; None when it is to close.
    pub(crate) async fn next_job(&self) -> Option<J> {
        poll_fn(|cx| {
            if let Some(job) = self.job.take() {
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
    /// Times a due request found no connection free and the loop read what had arrived
    /// first; of those, times that freed one.
    pub harvests: u64,
    pub harvest_freed: u64,
    /// Requests that waited for a connection to come free (no credit to grow), and those
    /// of them dropped after waiting longer than the request timeout.
    pub waited: u64,
    pub waited_too_long: u64,
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

/// The free connections of one worker's open loop, and how many are open.
pub(crate) struct Pool<J> {
    free: RefCell<VecDeque<Rc<Slot<J>>>>,
    /// Requests due while every connection was busy and no credit was left, with when the
    /// schedule took each up.
    waiting: RefCell<VecDeque<(J, Instant)>>,
    /// Connections the pool may still open before more responses come back.
    credit: Cell<usize>,
    /// Requests waiting when the last due request was placed: fewer now means answers are
    /// draining the backlog faster than requests fall due.
    waiting_before: Cell<usize>,
    open: Cell<usize>,
    cap: usize,
    floor: usize,
    last_shrink: Cell<Instant>,
    /// The schedule is over: a connection given back closes instead of waiting.
    finished: Cell<bool>,
    pub(crate) stats: Cell<PoolStats>,
}

impl<J> Pool<J> {
    /// A pool of at most `cap` connections that never shrinks below `floor`.
    pub(crate) fn new(cap: usize, floor: usize, now: Instant) -> Self {
        Pool {
            free: RefCell::new(VecDeque::new()),
            waiting: RefCell::new(VecDeque::new()),
            credit: Cell::new(GROWTH_BURST),
            waiting_before: Cell::new(0),
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

    /// A free connection, the most recently used first.
    pub(crate) fn take(&self) -> Option<Rc<Slot<J>>> {
        self.free.borrow_mut().pop_back()
    }

    /// A connection's task is done with its job: it is free again.
    pub(crate) fn give_back(&self, slot: Rc<Slot<J>>, now: Instant) {
        if self.finished.get() {
            slot.retire();
            return;
        }
        slot.idle_since.set(now);
        self.free.borrow_mut().push_back(slot);
    }

    /// Whether a request due now, with every connection busy, should open a connection:
    /// below the cap, with credit left, and no backlog that answers are already draining
    /// (unless its oldest request has waited [`PATIENCE`]: a backlog that drains only as fast
    /// as requests fall due is a pool too small for the server).
    pub(crate) fn may_grow(&self, now: Instant) -> bool {
        if self.open.get() >= self.cap || self.credit.get() == 0 {
            return false;
        }
        let waiting = self.waiting.borrow();
        let draining = !waiting.is_empty() && waiting.len() < self.waiting_before.get();
        let patient = waiting
            .front()
            .is_none_or(|(_, taken_up)| now.saturating_duration_since(*taken_up) < PATIENCE);
        !(draining && patient)
    }

    /// Called once a due request is placed: the backlog it left, to compare the next with.
    pub(crate) fn placed(&self) {
        self.waiting_before.set(self.waiting.borrow().len());
    }

    /// Whether the cap is reached (a request due with every connection busy is dropped).
    pub(crate) fn full(&self) -> bool {
        self.open.get() >= self.cap
    }

    /// A request ended on one of the pool's connections: one more connection may open, up
    /// to [`GROWTH_BURST`] at once (credit kept from a busy spell would let the next stall
    /// grow the pool by as much: the pool doubled at each stall of the server).
    pub(crate) fn answered(&self) {
        self.credit.set((self.credit.get() + 1).min(GROWTH_BURST));
    }

    /// Queues a due request for the next connection that comes free; `taken_up` is now.
    pub(crate) fn wait(&self, job: J, taken_up: Instant) {
        self.waiting.borrow_mut().push_back((job, taken_up));
        self.note(|s| s.waited += 1);
    }

    /// The oldest request waiting for a connection, if any.
    pub(crate) fn next_waiting(&self) -> Option<(J, Instant)> {
        self.waiting.borrow_mut().pop_front()
    }

    /// Counts a waiting request dropped after waiting longer than the request timeout.
    pub(crate) fn waited_too_long(&self) {
        self.note(|s| s.waited_too_long += 1);
    }

    /// Requests still waiting (the run stopping: they are dropped, never sent).
    pub(crate) fn take_waiting(&self) -> Vec<(J, Instant)> {
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

    /// Every connection is busy: lets the event loop read what has arrived (one turn that
    /// polls the sockets without blocking and runs the tasks it woke), then takes a free
    /// connection if that freed one.
    pub(crate) async fn harvest(&self) -> Option<Rc<Slot<J>>> {
        tokio::task::yield_now().await;
        let slot = self.take();
        let freed = slot.is_some() as u64;
        self.note(|s| {
            s.harvests += 1;
            s.harvest_freed += freed;
        });
        slot
    }

    /// Closes connections that sat at the bottom of the stack for [`IDLE_CLOSE`], keeping
    /// the floor; looks at most every [`SHRINK_EVERY`].
    pub(crate) fn shrink(&self, now: Instant) {
        if now.saturating_duration_since(self.last_shrink.get()) < SHRINK_EVERY {
            return;
        }
        self.last_shrink.set(now);
        let mut free = self.free.borrow_mut();
        while self.open.get() > self.floor {
            match free.front() {
                Some(oldest)
                    if now.saturating_duration_since(oldest.idle_since.get()) >= IDLE_CLOSE =>
                {
                    let oldest = free.pop_front().expect("looked at");
                    oldest.retire();
                    self.open.set(self.open.get() - 1);
                    self.note(|s| s.closed_idle += 1);
                }
                _ => break,
            }
        }
    }

    /// The schedule is over: free connections close now, busy ones after their request.
    pub(crate) fn finish(&self) {
        self.finished.set(true);
        for slot in self.free.borrow_mut().drain(..) {
            slot.retire();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_recently_freed_connection_is_taken_first() {
        let t0 = Instant::now();
        let pool: Pool<u32> = Pool::new(4, 0, t0);
        let (a, b) = (Slot::new(t0), Slot::new(t0));
        pool.give_back(a.clone(), t0);
        pool.give_back(b.clone(), t0);
        assert!(Rc::ptr_eq(&pool.take().unwrap(), &b));
        assert!(Rc::ptr_eq(&pool.take().unwrap(), &a));
        assert!(pool.take().is_none());
    }

    #[test]
    fn the_cap_bounds_what_opens_and_counts_why() {
        let pool: Pool<u32> = Pool::new(3, 1, Instant::now());
        assert!(pool.open_one(true));
        assert!(pool.open_one(false));
        assert!(pool.open_one(false));
        assert!(!pool.open_one(false), "cap reached");
        let s = pool.stats.get();
        assert_eq!((s.preopened, s.grown, s.peak), (1, 2, 3));
    }

    #[test]
    fn growth_spends_credit_that_answers_give_back() {
        let pool: Pool<u32> = Pool::new(100, 1, Instant::now());
        assert!(pool.open_one(true), "opening up front spends no credit");
        let now = Instant::now();
        for _ in 0..GROWTH_BURST {
            assert!(pool.may_grow(now));
            assert!(pool.open_one(false));
        }
        assert!(
            !pool.may_grow(now),
            "a stall cannot grow the pool past the burst"
        );
        pool.answered();
        assert!(pool.may_grow(now), "an answer gives one back");
        // Credit never exceeds the burst: a stall after a busy spell grows the pool by two.
        for _ in 0..50 {
            pool.answered();
        }
        assert_eq!(pool.credit.get(), GROWTH_BURST);
        // Requests wait in order when there is nothing to grow with.
        pool.wait(1, now);
        pool.wait(2, now);
        pool.placed();
        pool.wait(3, now);
        assert_eq!(pool.next_waiting().map(|(j, _)| j), Some(1));
        pool.placed();
        // Answers took one (3 -> 2) before the next request fell due: draining, so it waits,
        // until the oldest has waited PATIENCE.
        let _ = pool.next_waiting();
        assert!(
            !pool.may_grow(now),
            "a draining backlog does not grow the pool"
        );
        assert!(
            pool.may_grow(now + PATIENCE),
            "one that waited too long does"
        );
        pool.wait(4, now);
        assert_eq!(pool.next_waiting().map(|(j, _)| j), Some(3));
        assert_eq!(pool.take_waiting().len(), 1);
        assert_eq!(pool.stats.get().waited, 4);
    }

    #[test]
    fn connections_idle_too_long_close_down_to_the_floor() {
        let t0 = Instant::now();
        let pool: Pool<u32> = Pool::new(10, 2, t0);
        let slots: Vec<_> = (0..5).map(|_| Slot::new(t0)).collect();
        for s in &slots {
            assert!(pool.open_one(false));
            pool.give_back(s.clone(), t0);
        }
        // The top one was used again later.
        let top = pool.take().unwrap();
        pool.give_back(top, t0 + IDLE_CLOSE);
        pool.shrink(t0 + IDLE_CLOSE + SHRINK_EVERY);
        let s = pool.stats.get();
        assert_eq!(
            s.closed_idle, 3,
            "the four old ones close, down to the floor of 2"
        );
        assert_eq!(pool.open.get(), 2);
        assert!(slots[0].retire.get() && slots[1].retire.get() && slots[2].retire.get());
        assert!(!slots[3].retire.get() && !slots[4].retire.get());
    }

    #[test]
    fn a_connection_given_back_after_the_schedule_ended_closes() {
        let t0 = Instant::now();
        let pool: Pool<u32> = Pool::new(4, 0, t0);
        let (idle, busy) = (Slot::new(t0), Slot::new(t0));
        pool.give_back(idle.clone(), t0);
        pool.finish();
        assert!(idle.retire.get(), "a free one closes at once");
        // One that was busy when the schedule ended must not wait for a job that never
        // comes (the run then lasted until its hard stop).
        pool.give_back(busy.clone(), t0);
        assert!(busy.retire.get());
        assert!(pool.take().is_none());
    }

    #[test]
    fn a_retired_slot_ends_its_task_and_a_job_wakes_it() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let slot: Rc<Slot<u32>> = Slot::new(Instant::now());
            let waiting = {
                let slot = slot.clone();
                async move { (slot.next_job().await, slot.next_job().await) }
            };
            let giver = async {
                tokio::task::yield_now().await;
                slot.give(7);
                tokio::task::yield_now().await;
                slot.retire();
            };
            let ((first, second), ()) = tokio::join!(waiting, giver);
            assert_eq!((first, second), (Some(7), None));
        });
    }
}
