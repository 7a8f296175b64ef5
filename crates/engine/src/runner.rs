//! Runs a [`Plan`]: resolves the target, starts one event loop per worker thread, adds their
//! seconds as they arrive, and stops on time, on count, or on request.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use loadmark_metrics::{
    Aggregate, Busy, ConnectionSpread, RequestsPerConnection, Second, SeriesPoint, Snapshot, Totals,
};
use loadmark_plan::{Load, NamedScenario, Plan, Segment, Stop};
use tokio::sync::watch;

use crate::closed::Budget;
use crate::counted::{Counting, OpenConnections};
use crate::error::EngineError;
use crate::http2::{H2Run, Negotiated};
use crate::oneshot::OneShotTcp;
use crate::open::Share;
use crate::scenario::ScenarioShared;
use crate::source::RequestSource;
use crate::sys::{raise_file_limit, CpuTime};
use crate::transport::{DirectTcp, Nagle, Tcp, Tls, Transport};
use crate::unix::Unix;
use crate::worker::{Assigned, Executor, Message, Model, Protocol, StartLine, Worker};

/// Stops a run from another thread (a signal handler): the load stops, and the run returns
/// its result for the time that ran.
#[derive(Clone)]
pub struct StopHandle(Arc<watch::Sender<bool>>);

impl Default for StopHandle {
    fn default() -> Self {
        StopHandle(Arc::new(watch::channel(false).0))
    }
}

impl StopHandle {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn stop(&self) {
        self.0.send_replace(true);
    }
    pub fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }
}

/// What a live progress line shows.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub elapsed: Duration,
    /// Requests ended so far (responses and errors, warm-up included).
    pub completed: u64,
    /// The latest complete second, if any.
    pub last_second: Option<&'a SeriesPoint>,
    /// Failed requests so far, warm-up excluded.
    pub failed: u64,
    /// Everything measured in the seconds that are final, warm-up excluded: errors with
    /// their first examples, status codes.
    pub totals: &'a Snapshot,
    /// The seconds made final since the previous call, in order, each exactly as the
    /// report's series will have it (before the last one is marked partial), with its
    /// histograms: what live views, exporters and the streamed result are fed with.
    pub seconds: &'a [Second],
    /// Requests begun and not yet ended at the workers' latest hand-overs.
    pub in_flight: u64,
    /// Connections open now (WebSocket: one per session, from connect to close).
    pub open_connections: u64,
    /// The busiest load thread's CPU use at the latest hand-overs: what the report's
    /// saturation verdict is made of (`so_far` at the end is the report's `busiest_worker`).
    pub busiest_worker: Busy,
    /// The last call: the load has stopped, every second is final, and `elapsed` is the
    /// run's wall time as the report will state it.
    pub finished: bool,
    /// On the last call: the time the report's totals cover (its rates' denominator).
    pub measured: Option<Duration>,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub totals: Totals,
    pub started_at: SystemTime,
    /// Wall time from the first request to the stop.
    pub elapsed: Duration,
    /// `elapsed` minus warm-up: the time the totals cover.
    pub measured: Duration,
    /// True when stopped by [`StopHandle::stop`] before the plan's own end.
    pub interrupted: bool,
    /// CPU time used by the load-generating threads (user, system).
    pub client_cpu: CpuTime,
    /// The busiest worker thread's CPU time over its wall time (1.0 is a whole core).
    pub busiest_worker: f64,
    /// The worker threads' time runnable but waiting for a CPU, added up.
    pub cpu_wait: Duration,
    /// How busy the machine's CPUs were over the run, 0-1 (None where /proc/stat is missing).
    pub machine_busy: Option<f64>,
    /// The address the target resolved to; through a proxy, the proxy's (the target's name
    /// may be the proxy's to resolve).
    pub addr: SocketAddr,
    /// With `Part::start_at`: how late the clock started against it, seconds (negative:
    /// early). Machines of a split run compare these to know how well they started together.
    pub start_skew: Option<f64>,
    /// HTTP/2: the lowest SETTINGS_MAX_CONCURRENT_STREAMS a server announced when it was
    /// below `--streams` (requests waited for a free stream instead of exceeding it).
    pub http2_server_streams: Option<usize>,
    /// Requests answered per connection, over every connection the run opened (`None`:
    /// none was counted, as in WebSocket runs).
    pub requests_per_connection: Option<ConnectionSpread>,
    /// `--http2-fallback` over TLS: the server did not choose h2 with ALPN (this says what
    /// it chose), so the run went over HTTP/1.1.
    pub http2_fallback: Option<String>,
    /// HTTP/3: what the QUIC stack counted over every connection (None: not HTTP/3, or no
    /// handshake completed).
    pub quic: Option<loadmark_metrics::QuicFigures>,
}

/// Runs the plan to its end (or until `stop`), calling `on_progress` about twice a second.
pub fn run(
    plan: &Plan,
    stop: &StopHandle,
    on_progress: impl FnMut(&Progress),
) -> Result<RunResult, EngineError> {
    run_part(plan, &Part::default(), stop, on_progress)
}

/// Runs one segment of `plan` (see [`Part`]): this process's exact share of every count and
/// of the open-loop schedule, started at `part.start_at` when given.
pub fn run_part(
    plan: &Plan,
    part: &Part,
    stop: &StopHandle,
    mut on_progress: impl FnMut(&Progress),
) -> Result<RunResult, EngineError> {
    plan.validate()?;
    raise_file_limit(plan.load.max_connections())?;
    let url = &plan.request.url;
    if let Some(path) = &plan.protocol.unix_socket {
        if url.scheme().is_tls() {
            return Err(EngineError::UnixTls);
        }
        // The URL names the service for Host; it need not resolve.
        let addr = resolve(url.host(), url.port())
            .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], url.port())));
        let unix = Unix {
            path: path.clone(),
            connect_timeout: plan.timeouts.connect,
        };
        return run_with(plan, part, addr, unix, None, stop, &mut on_progress);
    }
    let scenario = plan.scenario.is_some() || !plan.scenarios.is_empty();
    if let (Some(h3), false) = (plan.protocol.http3, scenario) {
        // QUIC goes straight to the URL's UDP port (no proxy carries it here).
        let addr = resolve(url.host(), url.port())?;
        // The workers' connections are QUIC's: this transport is never connected, it only
        // keeps the executors' shape (every model runs any driver over a transport).
        let tcp = Tcp {
            addr,
            connect_timeout: plan.timeouts.connect,
            via: None,
        };
        let transport = DirectTcp {
            tcp,
            stamp: false,
            nagle: Nagle::Off,
        };
        // --no-keepalive: a connection per request (per stream), as over TCP.
        let keep_alive = plan.request.keep_alive && !plan.request.says_close();
        let h3run = Some(h3run_of(plan, addr, (h3.streams, h3.zero_rtt, keep_alive))?);
        return run_with(plan, part, addr, transport, h3run, stop, &mut on_progress);
    }
    // A scenario's `protocol: h3` steps: a QUIC connection per user, one request at a time,
    // beside its TCP ones.
    let scenario_h3 = if scenario && plan.speaks_h3() {
        Some(h3run_of(
            plan,
            resolve(url.host(), url.port())?,
            (1, false, true),
        )?)
    } else {
        None
    };
    // Through a proxy, connections go to it (and the target's name may be its to resolve).
    let (addr, via) = match crate::proxy::route(plan)? {
        Some((proxy, via)) => (proxy, Some(Arc::new(via))),
        None => (resolve(url.host(), url.port())?, None),
    };
    let proxied = via.is_some();
    // The name TLS sends and verifies: the URL's host unless the plan names another.
    let server_name = plan
        .protocol
        .tls_server_name
        .as_deref()
        .unwrap_or(url.host());
    let tcp = Tcp {
        addr,
        connect_timeout: plan.timeouts.connect,
        via,
    };
    if let (true, Some(h2)) = (url.scheme().is_tls(), plan.protocol.http2) {
        let tls = Tls::with_alpn(tcp.clone(), server_name, &plan.tls, &[b"h2", b"http/1.1"])
            .map_err(|e| EngineError::Tls(e.message))?;
        match refuse_without_h2(&tls) {
            Ok(()) => run_with(plan, part, addr, tls, scenario_h3, stop, &mut on_progress),
            Err(EngineError::Http2NotOffered(why)) if h2.fallback => {
                // --http2-fallback: the same run over HTTP/1.1 (as curl's --http2 would go
                // on), and the result says so; nothing HTTP/2-only is left in the plan.
                let mut http1 = plan.clone();
                http1.protocol.http2 = None;
                let tls = Tls::new(tcp, server_name, &plan.tls)
                    .map_err(|e| EngineError::Tls(e.message))?;
                let mut result = run_with(&http1, part, addr, tls, None, stop, &mut on_progress)?;
                result.http2_fallback = Some(why);
                Ok(result)
            }
            Err(e) => Err(e),
        }
    } else if url.scheme().is_tls() {
        let tls = Tls::new(tcp, server_name, &plan.tls).map_err(|e| EngineError::Tls(e.message))?;
        run_with(plan, part, addr, tls, scenario_h3, stop, &mut on_progress)
    } else {
        let keep_alive = plan.request.keep_alive && !plan.request.says_close();
        // HTTP/2 (and gRPC on it) writes control frames of its own between requests (a PING's
        // ACK, WINDOW_UPDATE): with Nagle on, the next request waited behind them for a
        // delayed ACK.
        let nagle = if plan.protocol.http2.is_some() {
            Nagle::Off
        } else {
            Nagle::UntilSplit
        };
        if proxied {
            // The one-shot stream connects without the event loop, straight to the target:
            // a proxy's tunnel is set up by the ordinary connect.
            let transport = DirectTcp {
                tcp,
                stamp: keep_alive,
                nagle,
            };
            run_with(plan, part, addr, transport, None, stop, &mut on_progress)
        } else if keep_alive {
            // Kernel arrival times cost a setsockopt per connection: worth it where
            // connections are kept (and the closed loop can nap).
            let transport = DirectTcp {
                tcp,
                stamp: true,
                nagle,
            };
            run_with(plan, part, addr, transport, None, stop, &mut on_progress)
        } else {
            // A connection per request: its syscalls are what a request costs (oneshot.rs).
            let transport = OneShotTcp { tcp };
            run_with(plan, part, addr, transport, None, stop, &mut on_progress)
        }
    }
}

/// The run's QUIC client for `addr`: `streams` requests at once per connection, 0-RTT
/// resumption or not, connections kept or one request per stream.
fn h3run_of(
    plan: &Plan,
    addr: SocketAddr,
    connections: (usize, bool, bool),
) -> Result<Arc<crate::http3::H3Run>, EngineError> {
    let url = &plan.request.url;
    let timeout = plan.timeouts.connect;
    let run = crate::http3::H3Run::new(addr, url.host(), &plan.tls, connections, timeout)
        .map_err(EngineError::Tls)?;
    Ok(Arc::new(run))
}

/// Over TLS, asks the server once before any load whether it speaks HTTP/2 (ALPN): a run
/// against a server that does not would only fail every connection the same way. A server
/// that cannot be reached is left to the run, which counts its connect errors.
fn refuse_without_h2(tls: &Tls) -> Result<(), EngineError> {
    use crate::http2::Negotiated;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(EngineError::Thread)?;
    match runtime.block_on(tls.connect()) {
        Ok(stream) => stream.h2_negotiated().map_err(EngineError::Http2NotOffered),
        Err(_) => Ok(()),
    }
}

pub(crate) fn resolve(host: &str, port: u16) -> Result<SocketAddr, EngineError> {
    let mut addrs = (host, port)
        .to_socket_addrs()
        .map_err(|source| EngineError::Resolve {
            host: host.to_string(),
            source,
        })?;
    addrs.next().ok_or_else(|| EngineError::Resolve {
        host: host.to_string(),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
    })
}

fn run_with<T: Transport>(
    plan: &Plan,
    part: &Part,
    addr: SocketAddr,
    transport: T,
    h3run: Option<Arc<crate::http3::H3Run>>,
    stop: &StopHandle,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunResult, EngineError>
where
    T::Stream: Negotiated,
{
    // Every executor connects through the transport: counting its streams is the
    // open-connections gauge, at no cost per request.
    let open = OpenConnections::default();
    let transport = Counting {
        inner: transport,
        open,
    };
    let threads = plan.load.threads();
    // When the load itself ends, from the start: no request starts after it.
    let load_end = match plan.stop {
        Stop::Duration(d) => Some(d),
        Stop::Requests(_) => None,
    };
    let start = Arc::new(StartLine::new(threads));
    let segment = Arc::new(part.segment.clone());
    // HTTP/2: the lowest stream limit a server set below --streams, and whether the server
    // speaks HTTP/2 at all.
    let h2run = Arc::new(H2Run::default());
    let budgets = Budgets::of(plan, &segment);
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::with_capacity(threads);
    for index in 0..threads {
        let cut = Cut {
            index,
            threads,
            segment: &segment,
            h2run: &h2run,
            h3run: h3run.as_ref(),
        };
        let (executors, hard_stop_after) = cut.assign(plan, &budgets, load_end);
        let worker = Worker {
            index,
            executors,
            start: start.clone(),
            hard_stop_after,
            transport: transport.clone(),
            source: Some({
                let source = RequestSource::new(plan, index as u64, threads as u64, &segment)?;
                match &part.script {
                    Some(scripts) => source.with_script(scripts.worker(index)),
                    None => source,
                }
            }),
            checks: plan.checks.clone(), // issue 17
            timeout: plan.timeouts.request,
            connect_timeout: plan.timeouts.connect,
            url: plan.request.url.clone(),
            headers: plan.request.headers.clone(),
            stop: stop.0.subscribe(),
            tx: tx.clone(),
        };
        let handle = std::thread::Builder::new()
            .name(format!("loadmark-worker-{index}"))
            .spawn(move || worker.run())
            .map_err(EngineError::Thread)?;
        handles.push(handle);
    }
    drop(tx);
    // Every worker has opened what it opens up front: the schedule starts now.
    let (origin, started_at, start_skew) = start.open(part.start_at, &|| stop.is_stopped());
    let load_end = load_end.map(|d| origin + d);

    let machine_before = crate::sys::machine_cpu_ticks();
    let mut heard = Heard::new(threads, plan.warmup);
    heard.listen(&rx, (origin, &open), on_progress);
    let Heard {
        threads: _,
        mut aggregate,
        client_cpu,
        cpu_wait,
        busiest_worker,
        requests_per_connection,
    } = heard;
    let elapsed = origin.elapsed();
    let machine_busy = match (machine_before, crate::sys::machine_cpu_ticks()) {
        (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
            Some((b1.saturating_sub(b0)) as f64 / (t1 - t0) as f64)
        }
        _ => None,
    };
    aggregate.finish_held();
    let seconds = aggregate.take_seconds();
    // Joining the workers takes a moment past the deadline; no request starts then.
    let measured = match load_end {
        Some(end) => elapsed.min(end - origin),
        None => elapsed,
    }
    .saturating_sub(plan.warmup);
    let mut last = progress_of(&aggregate, &seconds, elapsed, &open, true);
    last.measured = Some(measured);
    on_progress(&last);
    drop(seconds);
    for h in handles {
        if h.join().is_err() {
            return Err(EngineError::WorkerPanicked);
        }
    }
    let interrupted = stop.is_stopped()
        && match plan.stop {
            Stop::Duration(d) => elapsed < d,
            Stop::Requests(_) => true,
        };
    if let Some(answer) = h2run.refused() {
        return Err(EngineError::Http2NotSpoken {
            url: plan.request.url.to_string(),
            answer: answer.to_string(),
        });
    }
    let totals = aggregate.finish();
    Ok(RunResult {
        measured,
        totals,
        started_at,
        elapsed,
        interrupted,
        client_cpu,
        busiest_worker,
        cpu_wait,
        machine_busy,
        addr,
        start_skew,
        http2_server_streams: Some(h2run.server_limit.load(Ordering::Relaxed))
            .filter(|&n| n != usize::MAX),
        requests_per_connection: requests_per_connection.spread(),
        http2_fallback: None,
        quic: h3run.and_then(|run| run.figures()),
    })
}

/// The run's counts, shared by every worker: the whole plan's, and each scenario's of a plan
/// with several.
struct Budgets<'p> {
    run: Arc<Budget>,
    scenarios: Vec<(&'p NamedScenario, Plan, Arc<Budget>)>,
}

impl<'p> Budgets<'p> {
    fn of(plan: &'p Plan, segment: &Segment) -> Self {
        let budget_of = |plan: &Plan| {
            Arc::new(Budget::new(match plan.stop {
                Stop::Requests(n) if !matches!(plan.load, Load::Open { .. }) => {
                    Some(segment.share_of(n))
                }
                Stop::Requests(n) => Some(n),
                Stop::Duration(_) => None,
            }))
        };
        Budgets {
            run: budget_of(plan),
            scenarios: plan
                .scenario_plans()
                .into_iter()
                .map(|(named, sub)| {
                    let budget = budget_of(&sub);
                    (named, sub, budget)
                })
                .collect(),
        }
    }
}

/// What the run loop hears from its workers: their seconds, and at their ends what each
/// spent.
struct Heard {
    threads: usize,
    aggregate: Aggregate,
    client_cpu: CpuTime,
    cpu_wait: Duration,
    busiest_worker: f64,
    requests_per_connection: RequestsPerConnection,
}

impl Heard {
    fn new(threads: usize, warmup: Duration) -> Self {
        let mut aggregate = Aggregate::new(threads, warmup.as_secs());
        // Kept only from one progress call to the next: a second is dropped once handed over.
        aggregate.keep_seconds();
        Heard {
            threads,
            aggregate,
            client_cpu: CpuTime::default(),
            cpu_wait: Duration::ZERO,
            busiest_worker: 0.0,
            requests_per_connection: RequestsPerConnection::default(),
        }
    }

    /// Until every worker is done: their reports added as they come, progress told about
    /// twice a second.
    fn listen(
        &mut self,
        rx: &mpsc::Receiver<Message>,
        (origin, open): (Instant, &OpenConnections),
        on_progress: &mut dyn FnMut(&Progress),
    ) {
        let mut done = 0;
        let mut last_progress = Instant::now();
        while done < self.threads {
            match rx.recv_timeout(Duration::from_millis(500)) {
                Ok(Message::Tick(i, report)) => self.aggregate.add_from(i, report),
                Ok(Message::Done(i, report, cpu, busy, carried, waited)) => {
                    self.aggregate.add_from(i, report);
                    self.cpu_wait += waited;
                    self.requests_per_connection.add(&carried);
                    self.client_cpu += cpu;
                    self.busiest_worker = self.busiest_worker.max(busy);
                    done += 1;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if last_progress.elapsed() >= Duration::from_millis(450) {
                last_progress = Instant::now();
                let seconds = self.aggregate.take_seconds();
                let now = progress_of(&self.aggregate, &seconds, origin.elapsed(), open, false);
                on_progress(&now);
            }
        }
    }
}

/// Where the run stands, for the live view and the progress line.
fn progress_of<'a>(
    aggregate: &'a Aggregate,
    seconds: &'a [Second],
    elapsed: Duration,
    open: &OpenConnections,
    finished: bool,
) -> Progress<'a> {
    Progress {
        elapsed,
        completed: aggregate.completed_so_far(),
        last_second: aggregate.series().last(),
        failed: aggregate.snapshot().failed(),
        totals: aggregate.snapshot(),
        seconds,
        in_flight: aggregate.in_flight_now(),
        open_connections: open.now(),
        busiest_worker: aggregate.busiest_now(),
        finished,
        measured: None,
    }
}

/// How a plan's load is cut into one worker's executor: this worker's share of every count
/// (the run's connections spread over its threads, this segment's part of them) and of
/// every schedule.
struct Cut<'a> {
    index: usize,
    threads: usize,
    segment: &'a Arc<Segment>,
    h2run: &'a Arc<H2Run>,
    /// HTTP/3 runs: the run's QUIC client and figures.
    h3run: Option<&'a Arc<crate::http3::H3Run>>,
}

impl Cut<'_> {
    /// This worker's executors (one, or one per scenario of a plan with several), and when
    /// the worker stops: when its last executor's hard stop passes (never, while one has
    /// none: it ends when its tasks do).
    fn assign(
        &self,
        plan: &Plan,
        budgets: &Budgets,
        load_end: Option<Duration>,
    ) -> (Vec<Assigned>, Option<Duration>) {
        let scenario = |plan: &Plan, name: Option<&str>| {
            let share = (self.index as u64, self.threads as u64);
            let runs = (self.h2run.clone(), self.h3run.cloned());
            ScenarioShared::new(plan, share, self.segment, runs, name)
        };
        let assigned: Vec<(Assigned, Option<Duration>)> = if plan.scenarios.is_empty() {
            let (executor, hard_stop) = self.executor(plan, &budgets.run, load_end);
            let assigned = Assigned {
                executor,
                scenario: scenario(plan, None),
                begin: Duration::ZERO,
                load_end_after: load_end,
            };
            vec![(assigned, hard_stop)]
        } else {
            (budgets.scenarios.iter())
                .map(|(named, sub, budget)| {
                    let end = sub_load_end(sub);
                    let (executor, hard_stop) = self.executor(sub, budget, end);
                    let begin = named.start;
                    let assigned = Assigned {
                        executor,
                        scenario: scenario(sub, Some(&named.name)),
                        begin,
                        load_end_after: end,
                    };
                    (assigned, hard_stop.map(|h| begin + h))
                })
                .collect()
        };
        let hard_stop = (assigned.iter())
            .map(|(_, h)| *h)
            .collect::<Option<Vec<Duration>>>()
            .and_then(|h| h.into_iter().max());
        (assigned.into_iter().map(|(a, _)| a).collect(), hard_stop)
    }

    /// This worker's part of `n`: as even as possible, the first threads taking the rest.
    fn spread(&self, n: usize) -> usize {
        n / self.threads + usize::from(self.index < n % self.threads)
    }

    /// This segment's exact share of a count of the whole run (the open-loop schedule is
    /// shared by request number instead, see `Share`).
    fn mine(&self, n: usize) -> usize {
        self.segment.share_of(n as u64) as usize
    }

    /// This worker's share of a schedule (open loops, ramps).
    fn share(&self) -> Share {
        Share {
            index: self.index as u64,
            of: self.threads as u64,
            segment: self.segment.clone(),
        }
    }

    /// The executor that runs `plan`'s load model over its protocol on this worker, and when
    /// whatever it still runs is abandoned (from its begin; `None`: when its tasks end).
    fn executor(
        &self,
        plan: &Plan,
        budget: &Arc<Budget>,
        load_end: Option<Duration>,
    ) -> (Executor, Option<Duration>) {
        let protocol = self.protocol(plan);
        let model = match &plan.load {
            Load::Closed { connections, .. } => Model::Closed {
                slots: self.spread(self.mine(*connections)),
                budget: budget.clone(),
            },
            Load::Ramp { connections, .. } => Model::Ramp {
                profile: Arc::new(connections.clone()),
                share: self.share(),
                budget: budget.clone(),
            },
            Load::Open {
                rate,
                max_connections,
                ..
            } => Model::Open {
                profile: Arc::new(rate.clone()),
                share: self.share(),
                max_connections: self.spread(self.mine(*max_connections).max(self.threads)),
                // HTTP/1.1 connections open before the schedule starts; an HTTP/2 one
                // negotiates on its own, a scenario's user is not a connection.
                preopen: match protocol {
                    Protocol::Http1 | Protocol::Pipelined { .. } => {
                        self.spread(self.mine(plan.load.preopen()))
                    }
                    _ => 0,
                },
            },
        };
        let hard_stop = match (&model, &protocol) {
            // Iterations started before the end run their steps to the end, each request
            // within its timeout, each think within its longest.
            (Model::Open { .. }, Protocol::Scenario) => {
                load_end.map(|end| end + scenario_span(plan) + Duration::from_millis(500))
            }
            // Open-loop requests sent before the end may finish after it, each within its
            // timeout: the worker waits for them (plus a margin) instead of cutting them off.
            (Model::Open { .. }, _) => {
                load_end.map(|end| end + plan.timeouts.request + Duration::from_millis(500))
            }
            // WebSocket sessions owe answers to messages sent before the end, and close
            // politely: the worker waits for both (each within the timeout).
            (_, Protocol::WebSocket { .. }) => {
                load_end.map(|end| end + plan.timeouts.request + Duration::from_secs(2))
            }
            _ => load_end,
        };
        (Executor { model, protocol }, hard_stop)
    }

    /// The driver `plan` runs on.
    fn protocol(&self, plan: &Plan) -> Protocol {
        if plan.scenario.is_some() {
            Protocol::Scenario
        } else if let Some(spec) = &plan.websocket {
            Protocol::WebSocket { spec: spec.clone() }
        } else if let Some(h3run) = self.h3run {
            Protocol::Http3 {
                h3run: h3run.clone(),
            }
        } else if plan.protocol.http2.is_some() {
            Protocol::Http2 {
                streams: plan.protocol.streams(),
                tls: plan.request.url.scheme().is_tls(),
                h2run: self.h2run.clone(),
                grpc: crate::grpc::driving_of(plan),
            }
        } else if let Some(depth) = plan.protocol.pipeline {
            Protocol::Pipelined { depth }
        } else {
            Protocol::Http1
        }
    }
}

/// When a scenario's load ends, from its own start.
fn sub_load_end(plan: &Plan) -> Option<Duration> {
    match plan.stop {
        Stop::Duration(d) => Some(d),
        Stop::Requests(_) => None,
    }
}

/// The longest one scenario iteration can take: every request to its timeout, every think
/// to its longest.
fn scenario_span(plan: &Plan) -> Duration {
    let steps = plan.scenario.as_deref().unwrap_or_default();
    steps
        .iter()
        .map(|s| match (&s.request, s.think) {
            (Some(_), _) => plan.timeouts.request,
            (None, Some(t)) => t.max,
            (None, None) => Duration::ZERO,
        })
        .sum()
}

/// What share of a run this process runs, and when it starts.
#[derive(Debug, Clone)]
pub struct Part {
    /// This machine's share (`Segment::whole()` on one machine).
    pub segment: Segment,
    /// The wall-clock start of the schedule, the same for every machine of a split run: each
    /// request keeps the single-machine schedule's intended time relative to it.
    pub start_at: Option<SystemTime>,
    /// A request script (wrk's Lua API): each worker gets its own.
    pub script: Option<crate::script::Scripts>,
}

impl Default for Part {
    fn default() -> Self {
        Part {
            segment: Segment::whole(),
            start_at: None,
            script: None,
        }
    }
}
