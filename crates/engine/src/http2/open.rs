//! The HTTP/2 open loop: requests are due on the same schedule as over HTTP/1.1
//! ([`crate::open`]), and each due request goes out on a stream of a connection in this
//! worker's pool. A connection takes up to `--streams` requests at once; the pool grows on
//! demand up to the cap of connections; a request due when every stream of every connection
//! is taken and the cap is reached is dropped and counted, as over HTTP/1.1. Latency counts
//! from the intended send time, so schedule lag keeps its meaning.
//!
//! A stream the server did not process (GOAWAY above its last stream id, REFUSED_STREAM) is
//! sent once more on another connection and counted as a retry; the connection it was on
//! is taken out of the pool.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Instant;

use loadmark_metrics::ErrorKind;
use loadmark_wire::http2::Event;
use tokio::task::JoinSet;

use super::client::{connect, pick, record_error, H2Shared, Live, Negotiated};
use crate::connection::Shared;
use crate::open::{Schedule, Share};
use crate::transport::Transport;
use loadmark_plan::Profile;

/// A due request: number `k` of the schedule, due at `due`.
#[derive(Clone, Copy)]
struct Due {
    k: u64,
    due: Instant,
    retried: bool,
}

/// What a stream of the open loop carries.
struct Tag {
    job: Due,
    started: Instant,
}

/// One connection of the pool: its driver task opens it and sends what lands in `queue`.
struct Conn {
    queue: RefCell<VecDeque<Due>>,
    /// Requests given to it and not ended (queued or on a stream).
    busy: Cell<usize>,
    /// Out of the pool: it could not open, it failed, or the server went away.
    dead: Cell<bool>,
    /// On the pool's stack of connections with a free stream.
    listed: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Conn {
    fn wake(&self) {
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }
}

/// The connections of one worker's HTTP/2 open loop. As over HTTP/1.1 ([`crate::pool`]),
/// handing out a request costs the same whatever the pool's size: connections with a free
/// stream wait on a stack (the most recently freed on top), each listed once; one that died
/// or filled up meanwhile is skipped when it comes up, so each listing is looked at once.
struct Pool<T: Transport> {
    shared: Rc<Shared<T>>,
    h2s: Rc<H2Shared>,
    /// Connections that had a free stream when listed.
    room: RefCell<Vec<Rc<Conn>>>,
    /// Every live connection (for the wake-up at the end).
    conns: RefCell<Vec<Rc<Conn>>>,
    /// Connections alive (opening or open).
    open: Cell<usize>,
    max_connections: usize,
    /// The schedule is over: drivers end once their requests have.
    finished: Cell<bool>,
    /// Where drivers run; held by [`schedule_loop`] alone, so stopping it stops them.
    drivers: Weak<RefCell<JoinSet<()>>>,
}

impl<T: Transport> Pool<T>
where
    T::Stream: Negotiated,
{
    /// Lists `conn` as having a free stream, unless it is listed, dead, or full.
    fn list(&self, conn: &Rc<Conn>) {
        if !conn.listed.get() && !conn.dead.get() && conn.busy.get() < self.h2s.streams() {
            conn.listed.set(true);
            self.room.borrow_mut().push(conn.clone());
        }
    }

    /// A connection with a free stream, the most recently freed first.
    fn with_room(&self) -> Option<Rc<Conn>> {
        let streams = self.h2s.streams();
        let mut room = self.room.borrow_mut();
        while let Some(c) = room.pop() {
            c.listed.set(false);
            if !c.dead.get() && c.busy.get() < streams {
                return Some(c);
            }
        }
        None
    }

    /// A connection leaves the pool (it could not open, failed, or the server went away).
    fn kill(&self, conn: &Conn) {
        if !conn.dead.replace(true) {
            self.open.set(self.open.get() - 1);
        }
    }

    /// Gives `job` to a connection with a free stream, or to a new one if the cap allows;
    /// false when every stream of every connection is taken.
    fn dispatch(self: &Rc<Self>, job: Due) -> bool {
        let conn = match self.with_room() {
            Some(c) => c,
            None if self.open.get() < self.max_connections => {
                let c = Rc::new(Conn {
                    queue: RefCell::new(VecDeque::new()),
                    busy: Cell::new(0),
                    dead: Cell::new(false),
                    listed: Cell::new(false),
                    waker: RefCell::new(None),
                });
                self.open.set(self.open.get() + 1);
                let mut conns = self.conns.borrow_mut();
                conns.retain(|c| !c.dead.get());
                conns.push(c.clone());
                if let Some(drivers) = self.drivers.upgrade() {
                    drivers
                        .borrow_mut()
                        .spawn_local(drive(self.clone(), c.clone()));
                }
                c
            }
            None => return false,
        };
        conn.busy.set(conn.busy.get() + 1);
        conn.queue.borrow_mut().push_back(job);
        self.list(&conn);
        conn.wake();
        true
    }
}

/// Sends this worker's share of the schedule over HTTP/2, then waits for its requests to end
/// (each is bounded by the request timeout).
pub(crate) async fn schedule_loop<T: Transport>(
    shared: Rc<Shared<T>>,
    h2s: Rc<H2Shared>,
    profile: Arc<Profile>,
    origin: Instant,
    share: Share,
    max_connections: usize,
) where
    T::Stream: Negotiated,
{
    let drivers = Rc::new(RefCell::new(JoinSet::new()));
    let pool = Rc::new(Pool {
        shared: shared.clone(),
        h2s,
        room: RefCell::new(Vec::new()),
        conns: RefCell::new(Vec::new()),
        open: Cell::new(0),
        max_connections: max_connections.max(1),
        finished: Cell::new(false),
        drivers: Rc::downgrade(&drivers),
    });
    let mut schedule = Schedule::new(profile, origin, share);
    let run = pool.h2s.run.clone();
    // A server that does not speak HTTP/2 ends the schedule at once.
    let stopped = run.stopped();
    tokio::pin!(stopped);
    loop {
        let next = tokio::select! {
            biased;
            () = &mut stopped => None,
            next = schedule.next(&shared.idle_polling) => next,
        };
        let Some((k, due)) = next else {
            break;
        };
        while drivers.borrow_mut().try_join_next().is_some() {}
        let job = Due {
            k,
            due,
            retried: false,
        };
        // Every stream taken: let the event loop read what has arrived before the pool
        // grows, so it grows for a slow server and not for a late loop (crate::pool).
        // At the cap no stream can come of it: no round then (see crate::open).
        if pool.room.borrow().is_empty()
            && pool.open.get() > 0
            && pool.open.get() < pool.max_connections
        {
            tokio::task::yield_now().await;
        }
        if !pool.dispatch(job) {
            shared.recorder.borrow_mut().record_dropped(due, 1);
        }
    }
    pool.finished.set(true);
    for c in pool.conns.borrow().iter() {
        c.wake();
    }
    while poll_fn(|cx| drivers.borrow_mut().poll_join_next(cx))
        .await
        .is_some()
    {}
}

/// A connection's life: opens it, puts what lands in its queue on streams as the server's
/// limit allows, records what ends, and hands requests the server did not process to
/// another connection (once, counted as a retry).
async fn drive<T: Transport>(pool: Rc<Pool<T>>, me: Rc<Conn>)
where
    T::Stream: Negotiated,
{
    let shared = &pool.shared;
    let conn = match connect(shared, &pool.h2s.run).await {
        Ok(c) => c,
        Err(f) => {
            // Every request that landed on a connection that could not open fails with it.
            pool.kill(&me);
            for _ in me.queue.borrow_mut().drain(..) {
                record_error(shared, f.kind, &f.message);
            }
            me.busy.set(0);
            return;
        }
    };
    let mut live = Live::new(conn, shared);
    let mut answered = 0u64;
    let mut rendered = Vec::new();
    let mut events = Vec::new();
    loop {
        let now = Instant::now();
        while live.conn.can_open() {
            let Some(job) = me.queue.borrow_mut().pop_front() else {
                break;
            };
            match pick(shared, &pool.h2s, Some(job.k), &mut rendered) {
                Ok(prepared) => live.conn.open(
                    &prepared.block,
                    &prepared.body,
                    Tag { job, started: now },
                    job.due.max(now) + shared.timeout,
                ),
                Err(message) => {
                    me.busy.set(me.busy.get() - 1);
                    record_error(shared, ErrorKind::Protocol, &message);
                }
            }
        }
        if live.conn.is_over()
            || (pool.finished.get() && live.conn.active() == 0 && me.queue.borrow().is_empty())
        {
            break;
        }
        events.clear();
        poll_fn(|cx| {
            if live.conn.poll(cx, &mut events).is_ready()
                || (live.conn.can_open() && !me.queue.borrow().is_empty())
                || (pool.finished.get() && live.conn.active() == 0)
            {
                return Poll::Ready(());
            }
            let mut waker = me.waker.borrow_mut();
            if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *waker = Some(cx.waker().clone());
            }
            Poll::Pending
        })
        .await;
        live.count_bytes(false);
        for event in events.drain(..) {
            me.busy.set(me.busy.get() - 1);
            match event {
                Event::Response { tag, answer } => {
                    answered += 1;
                    let sample = answer.sample(Some(tag.job.due), tag.started);
                    shared.recorder.borrow_mut().record(&sample);
                }
                Event::Failed { tag, failure } => {
                    if failure.connection_over || failure.unprocessed {
                        // Out of the pool before another connection is looked for.
                        pool.kill(&me);
                    }
                    let again = Due {
                        retried: true,
                        ..tag.job
                    };
                    if failure.unprocessed && !tag.job.retried && pool.dispatch(again) {
                        shared.recorder.borrow_mut().record_retry(Instant::now());
                    } else {
                        record_error(shared, failure.kind, &failure.message);
                    }
                }
            }
        }
        pool.h2s.observe_limit(live.conn.server_limit());
        pool.list(&me);
    }
    pool.kill(&me);
    drop(live);
    crate::carried::connection_ended(answered);
    // Requests queued here and never sent go to another connection, or are dropped as any
    // request is that finds every stream taken.
    let left: Vec<Due> = me.queue.borrow_mut().drain(..).collect();
    for job in left {
        me.busy.set(me.busy.get() - 1);
        if !pool.dispatch(job) {
            shared.recorder.borrow_mut().record_dropped(job.due, 1);
        }
    }
}
