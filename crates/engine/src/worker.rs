//! One worker thread of a run: its current-thread event loop, the executor it runs (closed
//! loop, open loop, HTTP/2, pipelining, scenarios, WebSocket), and the seconds it hands over
//! to the run ([`crate::runner`] starts the workers and adds up what they send).

use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use loadmark_metrics::{Recorder, RequestsPerConnection, WorkerReport};
use loadmark_plan::{Profile, Target, WsSpec};
use tokio::sync::watch;

use crate::closed::{ramp, spawn_slots, Budget, ClosedDriver};
use crate::connection::{preconnect, Shared};
use crate::exchange::Scratch;
use crate::http2::{H2Run, H2Shared, Http2, Negotiated};
use crate::open::{schedule_loop, Driver, Http1, Share};
use crate::pipeline::open::Pipelined;
use crate::source::RequestSource;
use crate::sys::{thread_cpu_time, thread_cpu_wait, BusyClock, CpuTime};
use crate::transport::Transport;
use crate::ws::WsShared;
use tokio::task::JoinSet;

/// What a worker tells the run.
pub(crate) enum Message {
    Tick(usize, WorkerReport),
    /// A worker's last report, its CPU time, its share of a core over its life, and how long
    /// it waited for a CPU while runnable.
    Done(
        usize,
        WorkerReport,
        CpuTime,
        f64,
        RequestsPerConnection,
        Duration,
    ),
}

/// What a worker runs: a load model over a protocol. Every model runs every protocol's
/// driver the same way ([`crate::closed`], [`crate::open`]).
pub(crate) struct Executor {
    pub(crate) model: Model,
    pub(crate) protocol: Protocol,
}

/// How load is offered.
pub(crate) enum Model {
    /// A fixed number of slots (connections, sessions, users), each starting its next
    /// request when the last ended.
    Closed { slots: usize, budget: Arc<Budget> },
    /// Slots whose number follows a profile (`stages`).
    Ramp {
        profile: Arc<Profile>,
        share: Share,
        budget: Arc<Budget>,
    },
    /// Requests (or scenario iterations) due on a schedule, on a pool of connections (or
    /// users) that grows on demand up to a cap.
    Open {
        profile: Arc<Profile>,
        share: Share,
        max_connections: usize,
        /// Connections opened before the schedule starts.
        preopen: usize,
    },
}

/// What a slot speaks: each is one driver.
pub(crate) enum Protocol {
    Http1,
    /// HTTP/1.1 with `depth` requests written at a time.
    Pipelined {
        depth: usize,
    },
    /// HTTP/2 with `streams` per connection; TLS; what the run's connections share.
    Http2 {
        streams: usize,
        tls: bool,
        h2run: Arc<H2Run>,
        /// gRPC calls: the longest response message, how calls stream (issue 36).
        grpc: Option<crate::grpc::Driving>,
    },
    /// HTTP/3 over QUIC (issue 37): `--streams` per connection; the run's QUIC client.
    Http3 {
        h3run: Arc<crate::http3::H3Run>,
    },
    /// WebSocket sessions, one after another per virtual user.
    WebSocket {
        spec: WsSpec,
    },
    /// Scenario virtual users (issue 17, `crate::scenario`): the scenario is the
    /// [`Assigned`]'s.
    Scenario,
}

/// One executor of a worker: what it runs, and when it begins and ends its load.
pub(crate) struct Assigned {
    pub(crate) executor: Executor,
    /// A scenario's compiled steps (issue 17), for the scenario executors.
    pub(crate) scenario: Option<crate::scenario::ScenarioShared>,
    /// When it begins, from the run's start: a scenario's `start` when a plan runs several
    /// (its ramp or schedule counts from there), else zero.
    pub(crate) begin: Duration,
    /// When its load ends, from its begin: no request starts after it.
    pub(crate) load_end_after: Option<Duration>,
}

pub(crate) struct Worker<T: Transport> {
    pub(crate) index: usize,
    /// What it runs: one executor, or one per scenario of a plan that runs several.
    pub(crate) executors: Vec<Assigned>,
    /// Where the workers wait for each other before the load starts.
    pub(crate) start: Arc<StartLine>,
    /// Whatever is still running then is abandoned and reported in flight.
    pub(crate) hard_stop_after: Option<Duration>,
    pub(crate) transport: T,
    /// Taken by the event loop's shared state when the worker starts.
    pub(crate) source: Option<RequestSource>,
    /// Response checks (issue 17), compiled on the worker's thread.
    pub(crate) checks: Vec<loadmark_plan::Check>,
    pub(crate) timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) url: Target,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) stop: watch::Receiver<bool>,
    pub(crate) tx: mpsc::Sender<Message>,
}

/// How long an idle closed-loop worker polls before sleeping ([`crate::linger`]);
/// `LOADMARK_LINGER_US` overrides the default (0: sleep at once, the lightest on CPU).
fn linger_time() -> Duration {
    std::env::var("LOADMARK_LINGER_US")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or_else(crate::linger::default_linger, Duration::from_micros)
}

/// Naps for a closed-loop worker of `connections` ([`crate::linger::Naps`]): only where the
/// kernel stamps arrivals, so a nap never enters a latency; `LOADMARK_NAP=0` turns them off
/// for measurements.
fn naps_for<T: Transport>(transport: &T, connections: usize) -> Option<crate::linger::Naps> {
    let off = std::env::var("LOADMARK_NAP").is_ok_and(|v| v == "0");
    if off || !transport.stamps_arrival() {
        return None;
    }
    crate::linger::Naps::new(connections as u64)
}

/// The lingering task of a closed loop of `waiting` requests at once (`crate::linger`), if
/// this machine and transport call for one. Not in the worker's tasks: the run ends when the
/// connections have.
fn linger_beside<T: Transport>(
    ctx: &Rc<Shared<T>>,
    transport: &T,
    waiting: usize,
) -> Option<tokio::task::JoinHandle<()>> {
    let linger = linger_time();
    let naps = naps_for(transport, waiting);
    if linger.is_zero() && naps.is_none() {
        return None;
    }
    if naps.is_some() {
        crate::linger::tighten_timer_slack();
    }
    let ctx = ctx.clone();
    Some(tokio::task::spawn_local(async move {
        crate::linger::linger_before_sleeping(&ctx.activity, linger, naps, &ctx.idle_polling).await
    }))
}

impl<T: Transport> Worker<T>
where
    T::Stream: Negotiated,
{
    /// One thread, one event loop (wrk's model): connections are tasks on a current-thread
    /// runtime, sharing the recorder without locks.
    pub(crate) fn run(mut self) {
        let cpu_start = thread_cpu_time();
        let wait_start = thread_cpu_wait();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("building a current-thread runtime only fails when out of memory or fds");
        let local = tokio::task::LocalSet::new();
        let preopen = self
            .executors
            .iter()
            .map(|a| match a.executor {
                Executor {
                    model: Model::Open { preopen, .. },
                    ..
                } => preopen,
                _ => 0,
            })
            .sum();
        let mut preopened = match preopen {
            0 => Vec::new(),
            n => local.block_on(&runtime, preconnect(&self.transport, n)),
        };
        let origin = self.start.wait();
        let mut busy = BusyClock::new(cpu_start, origin);
        let hard_stop = self.hard_stop_after.map(|d| origin + d);
        let executors = std::mem::take(&mut self.executors);
        let ctx = Rc::new(Shared {
            transport: self.transport.clone(),
            source: self.source.take().expect("a worker starts once"),
            timeout: self.timeout,
            recorder: std::cell::RefCell::new(Recorder::new(origin)),
            in_flight: std::cell::Cell::new(0),
            scratch: Scratch::new(),
            idle_polling: std::cell::Cell::new(Duration::ZERO),
            activity: Default::default(),
            checks: crate::checks::Checks::new(&self.checks), // issue 17
        });
        for (_, connect_time) in &preopened {
            ctx.recorder
                .borrow_mut()
                .record_connection(origin, *connect_time);
        }
        until(origin);
        local.block_on(&runtime, async {
            let mut tasks = tokio::task::JoinSet::new();
            let mut lingering = None;
            for assigned in executors {
                let linger = self.spawn(assigned, &ctx, &mut tasks, origin, &mut preopened);
                lingering = lingering.or(linger);
            }
            // Hand over each second shortly after it ends.
            let mut tick = tokio::time::interval_at(
                (origin + Duration::from_millis(1_020)).into(),
                Duration::from_secs(1),
            );
            let far = origin + Duration::from_secs(100 * 365 * 24 * 3600);
            let deadline = tokio::time::sleep_until(hard_stop.unwrap_or(far).into());
            tokio::pin!(deadline);
            let stopped = self.stop.wait_for(|s| *s);
            tokio::pin!(stopped);
            loop {
                tokio::select! {
                    joined = tasks.join_next() => {
                        if joined.is_none() { break; }
                    }
                    _ = tick.tick() => {
                        let mut report = ctx.recorder.borrow_mut().drain(std::time::Instant::now());
                        report.in_flight_now = ctx.in_flight.get();
                        report.busy = busy.sample(&ctx.idle_polling);
                        let _ = self.tx.send(Message::Tick(self.index, report));
                    }
                    _ = &mut deadline => break,
                    _ = &mut stopped => break,
                }
            }
            if let Some(task) = lingering {
                task.abort();
                if std::env::var_os("LOADMARK_LINGER_STATS").is_some() {
                    eprintln!(
                        "worker {} lingering: {:?}",
                        self.index,
                        ctx.activity.stats.get()
                    );
                }
            }
            // Requests still running now are in flight: abandoned, not errors.
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
        });
        let recorder = std::mem::replace(&mut *ctx.recorder.borrow_mut(), Recorder::new(origin));
        let mut report = recorder.finish();
        report.in_flight = ctx.in_flight.get();
        report.busy = busy.sample(&ctx.idle_polling);
        let cpu = thread_cpu_time() - cpu_start;
        let waited = thread_cpu_wait().saturating_sub(wait_start);
        let wall = origin.elapsed().as_secs_f64().max(1e-9);
        let busy = cpu
            .total()
            .saturating_sub(ctx.idle_polling.get())
            .as_secs_f64()
            / wall;
        // Every connection has ended once the event loop's tasks are gone.
        drop(local);
        let carried = crate::carried::take();
        let _ = self.tx.send(Message::Done(
            self.index, report, cpu, busy, carried, waited,
        ));
    }

    /// Starts one executor's tasks on this worker's event loop; returns its lingering task,
    /// if it has one (`crate::linger`).
    fn spawn(
        &self,
        assigned: Assigned,
        ctx: &Rc<Shared<T>>,
        tasks: &mut JoinSet<()>,
        run_origin: Instant,
        preopened: &mut Vec<(crate::connection::Connection<T::Stream>, Duration)>,
    ) -> Option<tokio::task::JoinHandle<()>> {
        // A scenario that starts later counts its ramp or schedule from its own start.
        let origin = run_origin + assigned.begin;
        let at = Times {
            origin,
            begin: (!assigned.begin.is_zero()).then_some(origin),
            load_end: assigned.load_end_after.map(|d| origin + d),
        };
        let Executor { model, protocol } = assigned.executor;
        match protocol {
            Protocol::Http1 => self.drive(Rc::new(Http1), model, ctx, tasks, at, preopened),
            Protocol::Pipelined { depth } => {
                let driver = Rc::new(Pipelined { depth });
                self.drive(driver, model, ctx, tasks, at, preopened)
            }
            Protocol::Http2 {
                streams,
                tls,
                h2run,
                grpc,
            } => {
                let h2s = Rc::new(H2Shared::new(tls, streams, h2run).with_grpc(grpc));
                self.drive(Rc::new(Http2 { h2s }), model, ctx, tasks, at, preopened)
            }
            Protocol::Http3 { h3run } => {
                let h3s = Rc::new(crate::http3::H3Shared::new(h3run));
                let driver = Rc::new(crate::http3::closed::Http3 { h3s });
                self.drive(driver, model, ctx, tasks, at, preopened)
            }
            Protocol::WebSocket { spec } => {
                let ws = Rc::new(WsShared::new(
                    spec,
                    self.url.clone(),
                    self.headers.clone(),
                    self.connect_timeout,
                    self.index as u64 + 1,
                ));
                self.closed_model(&ws, model, ctx, tasks, at)
            }
            Protocol::Scenario => {
                let sc = Rc::new(assigned.scenario.expect("a scenario plan"));
                match model {
                    Model::Open {
                        profile,
                        share,
                        max_connections,
                        ..
                    } => {
                        tasks.spawn_local(crate::scenario::schedule_users(
                            ctx.clone(),
                            sc,
                            profile,
                            origin,
                            share,
                            max_connections,
                        ));
                        None
                    }
                    model => self.closed_model(&sc, model, ctx, tasks, at),
                }
            }
        }
    }

    /// Runs `model` over a driver of requests on connections: the open loop's pool, or the
    /// closed model's slots.
    fn drive<D: Driver<T> + ClosedDriver<T>>(
        &self,
        driver: Rc<D>,
        model: Model,
        ctx: &Rc<Shared<T>>,
        tasks: &mut JoinSet<()>,
        at: Times,
        preopened: &mut Vec<(crate::connection::Connection<T::Stream>, Duration)>,
    ) -> Option<tokio::task::JoinHandle<()>> {
        match model {
            Model::Open {
                profile,
                share,
                max_connections,
                ..
            } => {
                let driver = Rc::into_inner(driver).expect("the open loop's own driver");
                tasks.spawn_local(schedule_loop(
                    ctx.clone(),
                    driver,
                    profile,
                    at.origin,
                    share,
                    max_connections,
                    std::mem::take(preopened),
                ));
                None
            }
            model => self.closed_model(&driver, model, ctx, tasks, at),
        }
    }

    /// Runs the closed model or the ramp over `driver`'s slots.
    fn closed_model<D: ClosedDriver<T>>(
        &self,
        driver: &Rc<D>,
        model: Model,
        ctx: &Rc<Shared<T>>,
        tasks: &mut JoinSet<()>,
        at: Times,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let worker = self.index;
        match model {
            Model::Closed { slots, budget } => {
                let lingering = driver
                    .waiting_per_slot()
                    .and_then(|n| linger_beside(ctx, &self.transport, slots * n));
                let ends = (at.begin, at.load_end);
                let seed = |user| user_seed(worker, user);
                spawn_slots(tasks, driver, ctx, slots, &budget, ends, seed);
                lingering
            }
            Model::Ramp {
                profile,
                share,
                budget,
            } => {
                tasks.spawn_local(ramp(
                    driver.clone(),
                    ctx.clone(),
                    budget,
                    (profile, at.origin, share),
                    user_seed(worker, 0),
                ));
                None
            }
            Model::Open { .. } => unreachable!("the plan refuses an open loop of this protocol"),
        }
    }
}

/// When one executor runs, on the run's clock.
#[derive(Clone, Copy)]
struct Times {
    /// Where its ramp or schedule counts from.
    origin: Instant,
    /// When its slots start, if later than the run (a scenario's `start`).
    begin: Option<Instant>,
    /// When its load ends.
    load_end: Option<Instant>,
}

/// Sleeps until the wall clock reads `at`: coarse sleeps (waking for Ctrl-C), then a
/// yielding spin for the last 2 ms, since thread sleeps overshoot by tens of microseconds.
fn wait_until(at: SystemTime, stopped: &dyn Fn() -> bool) {
    loop {
        let Ok(left) = at.duration_since(SystemTime::now()) else {
            return;
        };
        if stopped() {
            return;
        }
        if left > Duration::from_millis(2) {
            std::thread::sleep((left - Duration::from_millis(2)).min(Duration::from_millis(100)));
        } else {
            std::thread::yield_now();
        }
    }
}

/// How far ahead of the go the clock starts: each worker wakes from the barrier and sets up
/// its recorder (page faults in fresh histograms) before its first request. Starting the
/// clock at the go put every worker 150-200 µs behind its schedule from the first request:
/// a burst that found every connection busy and grew the open loop's pool by two or three
/// connections the rate never needed.
const START_AHEAD: Duration = Duration::from_millis(1);

/// Where the workers meet before the load starts: each opens what it opens up front (an
/// open-loop pool), then the clock starts for all at once, [`START_AHEAD`] after the go, so
/// no intended send time is spent waiting for those connects or for a worker's wake-up.
pub(crate) struct StartLine {
    ready: std::sync::Barrier,
    origin: std::sync::OnceLock<Instant>,
    go: std::sync::Barrier,
}

impl StartLine {
    pub(crate) fn new(workers: usize) -> Self {
        StartLine {
            ready: std::sync::Barrier::new(workers + 1),
            origin: std::sync::OnceLock::new(),
            go: std::sync::Barrier::new(workers + 1),
        }
    }

    /// The run's side: waits until every worker is ready (and until `at`, when given, so the
    /// machines of a split run start together), starts the clock, lets them go. Returns the
    /// start, its wall-clock time, and how late it was against `at` (negative: early).
    pub(crate) fn open(
        &self,
        at: Option<SystemTime>,
        stopped: &dyn Fn() -> bool,
    ) -> (Instant, SystemTime, Option<f64>) {
        self.ready.wait();
        if let Some(at) = at {
            wait_until(at, stopped);
        }
        let origin = *self.origin.get_or_init(|| Instant::now() + START_AHEAD);
        let wall = SystemTime::now() + START_AHEAD;
        self.go.wait();
        let skew = at.map(|at| match wall.duration_since(at) {
            Ok(late) => late.as_secs_f64(),
            Err(early) => -early.duration().as_secs_f64(),
        });
        (origin, wall, skew)
    }

    /// A worker's side: ready; returns the start once it is given.
    pub(crate) fn wait(&self) -> Instant {
        self.ready.wait();
        self.go.wait();
        *self.origin.get().expect("set before the go")
    }
}

/// Returns at `at` (at once if it has passed): sleeps most of the way, then yields the CPU
/// until then (the last stretch is shorter than a sleep's wake-up error).
fn until(at: Instant) {
    loop {
        let now = Instant::now();
        if now >= at {
            return;
        }
        if at - now > Duration::from_micros(300) {
            std::thread::sleep(at - now - Duration::from_micros(200));
        } else {
            std::thread::yield_now();
        }
    }
}

/// A virtual user's random seed: distinct for every (worker, user), spread over all 64 bits.
fn user_seed(worker: usize, user: usize) -> u64 {
    ((worker as u64) << 32 | user as u64) ^ 0x9E37_79B9_7F4A_7C15
}
