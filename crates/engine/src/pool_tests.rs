//! The pool's unit tests (kept apart: pool.rs holds the rules, this file their cases).

use super::*;

const TIMEOUT: Duration = Duration::from_secs(10);

fn job(k: u64, due: Instant) -> Due {
    Due::new(k, due)
}

/// Takes a connection and gives it a job, as the schedule does.
fn place(pool: &Pool, k: u64, now: Instant) -> Rc<Slot> {
    let slot = pool.take().expect("a connection with room");
    pool.hand(&slot, job(k, now), now);
    slot
}

#[test]
fn the_most_recently_freed_connection_is_taken_first() {
    let t0 = Instant::now();
    let pool = Pool::new(4, 0, 1, t0);
    let (a, b) = (Slot::new(t0), Slot::new(t0));
    pool.list(&a);
    pool.list(&b);
    assert!(Rc::ptr_eq(&pool.take().unwrap(), &b));
    assert!(Rc::ptr_eq(&pool.take().unwrap(), &a));
    assert!(pool.take().is_none());
}

#[test]
fn requests_spread_over_idle_connections_before_queueing_behind_others() {
    let t0 = Instant::now();
    let pool = Pool::new(4, 0, 3, t0);
    let (a, b) = (Slot::new(t0), Slot::new(t0));
    pool.list(&a);
    pool.list(&b);
    // Both idle: one request each, then the second and third on each.
    let first = place(&pool, 0, t0);
    let second = place(&pool, 1, t0);
    assert!(!Rc::ptr_eq(&first, &second), "an idle one comes first");
    for k in 2..6 {
        place(&pool, k, t0);
    }
    assert_eq!((a.busy(), b.busy()), (3, 3));
    assert!(
        pool.take().is_none(),
        "every connection carries its capacity"
    );
    // One ends: it has room again.
    pool.done(&a, t0, TIMEOUT, |_| panic!("nothing waits"));
    assert!(Rc::ptr_eq(&pool.take().unwrap(), &a));
}

#[test]
fn the_cap_bounds_what_opens_and_counts_why() {
    let pool = Pool::new(3, 1, 1, Instant::now());
    assert!(pool.open_one(true));
    assert!(pool.open_one(false));
    assert!(pool.open_one(false));
    assert!(!pool.open_one(false), "cap reached");
    let s = pool.stats.get();
    assert_eq!((s.preopened, s.grown, s.peak), (1, 2, 3));
}

#[test]
fn growth_spends_credit_that_answers_give_back() {
    let now = Instant::now();
    let pool = Pool::new(100, 1, 1, now);
    assert!(pool.open_one(true), "opening up front spends no credit");
    for _ in 0..GROWTH_BURST {
        assert!(pool.may_grow(now, now));
        assert!(pool.open_one(false));
    }
    assert!(
        !pool.may_grow(now, now),
        "a stall cannot grow the pool past the burst"
    );
    pool.answered();
    assert!(pool.may_grow(now, now), "an answer gives one back");
    // Credit never exceeds the burst: a stall after a busy spell grows the pool by two.
    for _ in 0..50 {
        pool.answered();
    }
    assert_eq!(pool.credit.get(), GROWTH_BURST);
    // Requests wait in order when there is nothing to grow with.
    pool.wait(job(1, now), now);
    pool.wait(job(2, now), now);
    pool.placed(now);
    pool.wait(job(3, now), now);
    // A connection that comes free takes the oldest waiting one.
    let slot = Slot::new(now);
    slot.give(job(0, now), now);
    slot.try_job().expect("its task takes it up");
    pool.done(&slot, now, TIMEOUT, |_| panic!("none waited too long"));
    assert_eq!(
        slot.try_job().map(|j| (j.k, j.taken_up)),
        Some((1, Some(now)))
    );
    pool.placed(now);
    // Answers took one (3 -> 2) before the next request fell due: draining, so it waits,
    // until the oldest has waited PATIENCE.
    pool.done(&slot, now, TIMEOUT, |_| panic!("none waited too long"));
    assert_eq!(slot.try_job().map(|j| j.k), Some(2));
    // This test is about credit and the backlog: no service time learnt from these
    // answers, which all took no time (the other tests cover those rules).
    *pool.service.borrow_mut() = ServiceTimes::default();
    assert!(
        !pool.may_grow(now, now),
        "a draining backlog does not grow the pool"
    );
    assert!(
        pool.may_grow(now + PATIENCE, now + PATIENCE),
        "one that waited too long does"
    );
    pool.wait(job(4, now), now);
    assert_eq!(pool.take_waiting().len(), 2);
    assert_eq!(pool.stats.get().waited, 4);
}

#[test]
fn a_late_client_does_not_grow_the_pool_but_a_slow_server_does() {
    let t0 = Instant::now();
    let us = Duration::from_micros;
    // One connection whose last ten requests took `service` each (after ten handed out in
    // the run's cold first millisecond), and one under way.
    let busy_pool = |service: Duration| {
        let pool = Pool::new(100, 0, 1, t0);
        let slot = Slot::new(t0);
        assert!(pool.open_one(false));
        for k in 0..20 {
            let at = t0 + us(100 * k);
            pool.hand(&slot, job(k, at), at);
            slot.try_job().expect("taken up");
            pool.done(&slot, at + service, TIMEOUT, |_| {});
        }
        pool.hand(&slot, job(20, t0 + us(2_500)), t0 + us(2_500));
        pool
    };
    let due = t0 + us(3_000);
    // The server falls behind a little: answers take 600 µs. An open loop still offers it
    // every request (a server that sheds load must see what it sheds)...
    let pool = busy_pool(us(600));
    assert!(pool.may_grow(due + us(5), due), "a slow server, on time");
    // ... but the same request placed LATE after its due time: the client is behind, and
    // a connect would cost it more than waiting for the busy connection.
    assert!(!pool.may_grow(due + LATE, due), "a late client");
    assert_eq!(pool.stats.get().held_back, 1);
    // A server slower than SLOW_SERVICE: waiting for its busy connection costs a late
    // client more than a connect does, so the pool grows.
    let pool = busy_pool(us(1_500));
    assert!(
        pool.may_grow(due + LATE, due),
        "a late client of a slow server"
    );
    // With nothing under way no answer will free a connection: the pool may grow.
    let idle = Pool::new(100, 0, 1, t0);
    assert!(idle.may_grow(due + LATE, due));
}

#[test]
fn the_pool_grows_to_what_littles_law_asks_twice_over_and_no_further() {
    let t0 = Instant::now();
    let us = Duration::from_micros;
    // 20,000 req/s (one due every 50 µs), answered in 25 µs: half a request in flight,
    // so two connections (twice that, rounded up, plus one).
    // (The first millisecond's answers are cold, and not what the pool is sized by.)
    let pool = Pool::new(100, 0, 1, t0);
    let slot = Slot::new(t0);
    assert!(pool.open_one(false));
    for k in 0..40 {
        let at = t0 + us(50 * k);
        pool.hand(&slot, job(k, at), at);
        slot.try_job().expect("taken up");
        pool.placed(at);
        pool.done(&slot, at + us(25), TIMEOUT, |_| {});
    }
    assert_eq!(pool.enough(), 2);
    let at = t0 + us(2_000);
    pool.hand(&slot, job(40, at), at);
    assert!(pool.may_grow(at, at), "one connection is not enough");
    assert!(pool.open_one(false));
    assert!(!pool.may_grow(at, at), "two are");
    // A server answering in a millisecond at the same rate needs forty in flight.
    let slow = Pool::new(1_000, 0, 1, t0);
    let slot = Slot::new(t0);
    for k in 0..40 {
        let at = t0 + us(50 * k);
        slow.hand(&slot, job(k, at), at);
        slot.try_job().expect("taken up");
        slow.placed(at);
        slow.done(&slot, at + us(1_000), TIMEOUT, |_| {});
    }
    assert_eq!(slow.enough(), 41);
}

#[test]
fn a_request_that_waited_longer_than_the_timeout_is_dropped_not_sent() {
    let t0 = Instant::now();
    let pool = Pool::new(1, 0, 1, t0);
    pool.wait(job(1, t0), t0);
    pool.wait(job(2, t0 + TIMEOUT), t0 + TIMEOUT);
    let slot = Slot::new(t0);
    slot.give(job(0, t0), t0);
    slot.try_job().expect("its task takes it up");
    let mut dropped = Vec::new();
    pool.done(&slot, t0 + TIMEOUT, TIMEOUT, |due| dropped.push(due));
    assert_eq!(dropped, vec![t0]);
    assert_eq!(slot.try_job().map(|j| j.k), Some(2));
    assert_eq!(pool.stats.get().waited_too_long, 1);
}

#[test]
fn connections_idle_too_long_close_down_to_the_floor() {
    let t0 = Instant::now();
    let pool = Pool::new(10, 2, 1, t0);
    let slots: Vec<_> = (0..5).map(|_| Slot::new(t0)).collect();
    for s in &slots {
        assert!(pool.open_one(false));
        pool.list(s);
    }
    // The top one was used again later.
    let top = place(&pool, 0, t0);
    pool.done(&top, t0 + IDLE_CLOSE, TIMEOUT, |_| {});
    pool.shrink(t0 + IDLE_CLOSE + SHRINK_EVERY);
    let s = pool.stats.get();
    assert_eq!(
        s.closed_idle, 3,
        "the four old ones close, down to the floor of 2"
    );
    assert_eq!(pool.open.get(), 2);
    assert!(slots[0].retired() && slots[1].retired() && slots[2].retired());
    assert!(!slots[3].retired() && !slots[4].retired());
}

#[test]
fn a_connection_that_ends_its_last_request_after_the_schedule_closes() {
    let t0 = Instant::now();
    let pool = Pool::new(4, 0, 2, t0);
    let (idle, busy) = (Slot::new(t0), Slot::new(t0));
    pool.list(&idle);
    busy.give(job(0, t0), t0);
    busy.give(job(1, t0), t0);
    pool.finish();
    assert!(idle.retired(), "an idle one closes at once");
    // One that was busy when the schedule ended must not wait for a job that never
    // comes (the run then lasted until its hard stop), nor close before its requests.
    pool.done(&busy, t0, TIMEOUT, |_| {});
    assert!(!busy.retired());
    pool.done(&busy, t0, TIMEOUT, |_| {});
    assert!(busy.retired());
    assert!(pool.take().is_none());
}

#[test]
fn a_connection_gone_is_never_handed_a_request() {
    let t0 = Instant::now();
    let pool = Pool::new(4, 0, 4, t0);
    assert!(pool.open_one(false));
    let slot = Slot::new(t0);
    pool.list(&slot);
    pool.gone(&slot);
    pool.gone(&slot);
    assert_eq!(pool.open.get(), 0, "counted once");
    assert!(pool.take().is_none());
}

#[test]
fn a_retired_slot_ends_its_task_and_a_job_wakes_it() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let slot = Slot::new(Instant::now());
        let waiting = {
            let slot = slot.clone();
            async move { (slot.next_job().await, slot.next_job().await) }
        };
        let giver = async {
            tokio::task::yield_now().await;
            slot.give(job(7, Instant::now()), Instant::now());
            tokio::task::yield_now().await;
            slot.retire();
        };
        let ((first, second), ()) = tokio::join!(waiting, giver);
        assert_eq!((first.map(|j| j.k), second), (Some(7), None));
    });
}

#[test]
fn the_pool_grows_only_once_it_knows_the_warm_service_time_or_a_request_waited_too_long() {
    let t0 = Instant::now();
    let us = Duration::from_micros;
    let pool = Pool::new(10, 1, 1, t0);
    assert!(pool.open_one(true));
    let slot = Slot::new(t0);
    pool.list(&slot);
    place(&pool, 0, t0);
    // A cold first exchange: requests due meanwhile wait for it.
    assert!(!pool.may_grow(t0 + us(50), t0 + us(50)));
    // Cold answers (200 µs where warm ones take 40) teach the pool nothing to size by.
    let mut at = t0;
    for k in 1..=5 {
        at = t0 + us(200 * k);
        pool.done(&slot, at, TIMEOUT, |_| {});
        place(&pool, k, at);
    }
    assert!(!pool.may_grow(at + us(10), at + us(10)), "still cold");
    // A request that waited PATIENCE grows it even so: a server slow from the start.
    pool.wait(job(99, at), at);
    assert!(pool.may_grow(at + PATIENCE, at + PATIENCE));
    assert_eq!(pool.take_waiting().len(), 1);
    // Warm answers: the usual rules decide (50 µs at 20,000 req/s: enough is 3).
    for k in 6..=40 {
        at += us(50);
        pool.done(&slot, at, TIMEOUT, |_| {});
        place(&pool, k, at);
        pool.placed(at);
    }
    assert_eq!(pool.enough(), 3);
    assert!(pool.may_grow(at + us(60), at + us(60)));
}

/// The pool before a backlog: one connection, busy, no credit spent, no service time known.
fn backlogged(now: Instant) -> Pool {
    let pool = Pool::new(100, 1, 1, now);
    assert!(pool.open_one(true));
    pool
}

/// `n` requests waiting for a connection, the k-th due (and arriving) at `due(k)`.
fn arrivals(pool: &Pool, n: u64, due: impl Fn(u64) -> Instant) {
    for k in 0..n {
        let at = due(k);
        pool.wait(job(k, at), at);
    }
}

/// `n` answers at `at`, each taking the oldest waiting request, as a connection coming free
/// does.
fn answers(pool: &Pool, n: usize, at: Instant) {
    let slot = Slot::new(at);
    for _ in 0..n {
        slot.give(job(0, at), at);
        slot.try_job();
        pool.done(&slot, at, TIMEOUT, |_| {});
        slot.try_job();
    }
}

#[test]
fn a_backlog_that_drains_fast_holds_the_pool_back_after_patience_too() {
    let t0 = Instant::now();
    let pool = backlogged(t0);
    // A stall: 1,000 requests due over 20 ms (50,000 a second) wait for the busy connection.
    arrivals(&pool, 1_000, |k| t0 + Duration::from_micros(20 * k));
    // The stall ends: 100 answers in the next millisecond take 100 of them. At that pace
    // (100 a ms) the other 900 are gone in 9 ms, within the horizon.
    let now = t0 + Duration::from_micros(20 * 999) + Duration::from_millis(1);
    answers(&pool, 100, now);
    pool.placed(now);
    assert!(
        now.duration_since(t0) >= PATIENCE,
        "the oldest waited past patience"
    );
    let held = pool.stats.get().held_back;
    assert!(
        !pool.may_grow(now, now),
        "a stall's backlog drains on what is open"
    );
    assert_eq!(pool.stats.get().held_back, held + 1, "and it is counted");
}

#[test]
fn a_backlog_that_drains_too_slowly_or_grows_grows_the_pool() {
    let t0 = Instant::now();
    let pool = backlogged(t0);
    arrivals(&pool, 1_000, |_| t0);
    // 100 answers in a second: 900 left at 0.1 a ms is nine seconds, past the horizon.
    let later = t0 + Duration::from_secs(1);
    answers(&pool, 100, later);
    pool.placed(later);
    assert!(pool.may_grow(later, later), "too slow to wait for");
    // A backlog at its peak (still growing) grows the pool once the oldest waited.
    let pool = backlogged(t0);
    arrivals(&pool, 10, |k| t0 + Duration::from_millis(k));
    let now = t0 + Duration::from_millis(10);
    assert!(pool.may_grow(now, now));
}

#[test]
fn a_backlog_that_wanders_near_its_peak_is_not_taken_for_a_drain() {
    let t0 = Instant::now();
    let pool = backlogged(t0);
    arrivals(&pool, 100, |_| t0);
    // 15 off a peak of 100 within a millisecond: fast, but within the wander of a backlog
    // whose answers and arrivals nearly balance (twice its square root is 20).
    let now = t0 + Duration::from_millis(1);
    answers(&pool, 15, now);
    pool.placed(now);
    let now = now + PATIENCE;
    assert!(
        pool.may_grow(now, now),
        "a rate just above the server's grows"
    );
}

#[test]
fn a_backlog_that_emptied_starts_its_peak_anew() {
    let t0 = Instant::now();
    let pool = backlogged(t0);
    arrivals(&pool, 100, |_| t0);
    assert_eq!(pool.take_waiting().len(), 100);
    let later = t0 + Duration::from_secs(1);
    pool.wait(job(100, later), later);
    assert_eq!(pool.backlog_peak.get(), Some((later, 1)));
}
