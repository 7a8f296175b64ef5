//! The open-loop executor over loopback against the built-in target: exact schedules, rate
//! held per second, drops counted, and a stalled server seen by every request that waited.

use std::time::{Duration, Instant};

use crate::common::settled_count;
use loadmark_engine::{run, RunResult, StopHandle};
use loadmark_plan::{Load, Plan, Profile, RequestSpec, Stop, Target, Timeouts, TlsPolicy};
use loadmark_target::{start, RunningServer, ServerConfig, Stall};
use loadmark_test_support::timing_attempts;

/// What a loaded 2-core machine may add to a wall-clock bound (as in tests/common): other
/// sessions' builds stall test threads for a second or more.
const SLACK: Duration = Duration::from_secs(3);

/// Attempts for a claim of timing fidelity (a rate held every second, sends on time): see
/// `loadmark_test_support::timing_attempts`. Counts and accounting are asserted in every
/// attempt; only a missed rate or lag bound tries again. `bench/stress-tests` saw all three
/// of three attempts starved while other sessions linked, hence five.
const TIMING_ATTEMPTS: usize = 5;

/// A run whose load thread waited longer than this for a CPU (the kernel's run-queue
/// wait, `RunResult::cpu_wait`) was starved by the machine: it is run again, up to
/// [`STARVED_RUNS`] times in all, before its figures are judged.
const STARVED: Duration = Duration::from_millis(100);
const STARVED_RUNS: usize = 4;

/// The timing tests of this file run one at a time: each needs a core on time, and three of
/// them at once (each with its servers and client threads) starve each other on two cores.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn target(stall: Option<Stall>) -> RunningServer {
    start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        stall,
        ..Default::default()
    })
    .unwrap()
}

fn plan(url: &str, load: Load, stop: Stop) -> Plan {
    Plan {
        request: RequestSpec {
            method: "GET".into(),
            url: Target::parse(url).unwrap(),
            headers: Vec::new(),
            body: Vec::new(),
            keep_alive: true,
        },
        load,
        stop,
        timeouts: Timeouts::default(),
        warmup: Duration::ZERO,
        tls: TlsPolicy::Verify,
        mix: Default::default(),
        websocket: None,
        protocol: Default::default(),
        script: None,
        checks: Vec::new(),
        scenario: None,
        scenarios: Vec::new(),
        cookies: false,
    }
}

fn open(url: &str, rate: Profile, max_connections: usize, threads: usize) -> Plan {
    let stop = Stop::Duration(rate.duration());
    plan(
        url,
        Load::Open {
            rate,
            max_connections,
            threads,
            connections: None,
        },
        stop,
    )
}

/// Every scheduled request is a response, an error, a drop, or in flight.
fn accounted(r: &RunResult) -> u64 {
    let s = &r.totals.snapshot;
    s.responses + s.errors.total() + s.dropped + r.totals.in_flight
}

#[test]
fn constant_rate_sends_r_times_d_and_holds_each_second() {
    let _serial = one_at_a_time();
    let server = target(None);
    let url = format!("http://{}/status", server.local_addr());
    // Up to 1000 connections: at 2000/s, 100 would cover only a 50 ms stall of the server
    // before requests are dropped, and a shared machine stalls it for longer.
    let p = open(
        &url,
        Profile::constant(2000.0, Duration::from_secs(3)),
        1000,
        2,
    );
    let r = timing_attempts("2000/s for 3 s", TIMING_ATTEMPTS, || {
        let served_before = server.requests_served();
        let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
        let s = &r.totals.snapshot;
        assert_eq!(accounted(&r), 6000, "exactly R x D scheduled");
        assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
        // Every request in flight had a byte written: the server sees it, maybe a moment
        // after the run returned.
        let expected = s.responses + r.totals.in_flight;
        let served = settled_count(|| server.requests_served() - served_before, expected);
        assert_eq!(
            served, expected,
            "the server answered {served}: {} responses, {} in flight",
            s.responses, r.totals.in_flight
        );
        // Drops mean all 100 connections were waiting: a server starved of CPU.
        if s.dropped > 0 {
            return Err(format!("{} dropped", s.dropped));
        }
        if s.responses < 5970 {
            return Err(format!("within 0.5%: {}", s.responses));
        }
        for point in &r.totals.series[1..3] {
            let off = (point.responses as f64 - 2000.0).abs() / 2000.0;
            if off > 0.01 {
                return Err(format!(
                    "second {} had {} responses",
                    point.second, point.responses
                ));
            }
        }
        Ok(r)
    });
    let s = &r.totals.snapshot;
    assert_eq!(
        s.service.len(),
        s.responses,
        "service time recorded in open loop"
    );
    assert_eq!(
        s.lag.len(),
        s.responses,
        "schedule lag recorded in open loop"
    );
}

#[test]
fn a_ramp_sends_the_integral_of_its_profile() {
    let _serial = one_at_a_time();
    let server = target(None);
    let url = format!("http://{}/status", server.local_addr());
    let profile = Profile::parse("2s:0->1500,1s:1500->500", 0.0, "--stages").unwrap();
    let expected = profile.total_requests();
    assert_eq!(expected, 1500 + 1000);
    // Up to 1000 connections, as above: room for a stalled server without drops.
    let p = open(&url, profile, 1000, 1);
    timing_attempts("a 0->1500->500/s ramp", TIMING_ATTEMPTS, || {
        let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
        assert_eq!(accounted(&r), expected);
        let got = r.totals.snapshot.responses as f64;
        if (got - expected as f64).abs() / expected as f64 > 0.005 {
            return Err(format!("{got} of {expected}"));
        }
        Ok(())
    });
}

#[test]
fn beyond_capacity_requests_are_dropped_counted_and_the_run_ends_on_time() {
    let server = target(None);
    // Each response takes 200 ms and only 4 connections may exist: at most 20 req/s.
    let url = format!("http://{}/delay/200", server.local_addr());
    let mut p = open(&url, Profile::constant(500.0, Duration::from_secs(2)), 4, 1);
    p.timeouts.request = Duration::from_secs(1);
    let t0 = Instant::now();
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(2 + 1) + SLACK,
        "ended on time: {took:?}"
    );
    let s = &r.totals.snapshot;
    assert_eq!(accounted(&r), 1000);
    // Requests due while every connection waits and no credit is left wait for one first
    // (crate::pool), and are dropped once they waited longer than --timeout: a few more
    // are served or time out than when every one was dropped at once.
    assert!(s.dropped >= 850, "dropped {}", s.dropped);
    assert!(
        s.responses >= 30 && s.responses <= 50,
        "responses {}",
        s.responses
    );
}

#[test]
fn a_stall_shows_in_open_loop_latency_but_hides_in_closed_loop() {
    let _serial = one_at_a_time();
    timing_attempts(
        "a stall seen by open loop only",
        TIMING_ATTEMPTS,
        stall_once,
    );
}

fn stall_once() -> Result<(), String> {
    // The server freezes from 4 s to 5 s of its life; both runs cover that window.
    let stall = Some(Stall {
        duration: Duration::from_secs(1),
        every: Duration::from_secs(5),
    });
    let (open_server, closed_server) = (target(stall), target(stall));
    let open_url = format!("http://{}/status", open_server.local_addr());
    let closed_url = format!("http://{}/status", closed_server.local_addr());
    let (open_run, closed_run) = std::thread::scope(|scope| {
        let o = scope.spawn(|| {
            let p = open(
                &open_url,
                Profile::constant(200.0, Duration::from_millis(5_600)),
                500,
                1,
            );
            run(&p, &StopHandle::new(), |_| {}).unwrap()
        });
        let c = scope.spawn(|| {
            let load = Load::Closed {
                connections: 2,
                threads: 1,
            };
            let p = plan(
                &closed_url,
                load,
                Stop::Duration(Duration::from_millis(5_600)),
            );
            run(&p, &StopHandle::new(), |_| {}).unwrap()
        });
        (o.join().unwrap(), c.join().unwrap())
    });
    let open_p99 = open_run.totals.snapshot.latency.value_at_quantile(0.99);
    let closed_p99 = closed_run.totals.snapshot.latency.value_at_quantile(0.99);
    // The server's 1 s stall is in every attempt: open loop must show it, closed loop must
    // have met it.
    assert!(
        open_p99 >= 900_000,
        "open-loop p99 {open_p99} µs must show the 1 s stall"
    );
    assert!(
        closed_run.totals.snapshot.latency.max() >= 500_000,
        "closed loop saw the stall once per connection"
    );
    // What needs the machine's CPU on time: a machine that stalls the client itself for
    // 100 ms puts that into closed-loop latency and open-loop lag.
    if closed_p99 >= 100_000 {
        return Err(format!(
            "closed-loop p99 {closed_p99} µs hides it (coordinated omission)"
        ));
    }
    // The requests that waited were sent late by the server, not by us: service time shows it,
    // schedule lag does not.
    let lag_p99 = open_run.totals.snapshot.lag.value_at_quantile(0.99);
    if lag_p99 >= 100_000 {
        return Err(format!("the client sent on time: lag p99 {lag_p99} µs"));
    }
    Ok(())
}

/// Issue 43: at 20,000 req/s against a server that answers in tens of microseconds, one or
/// two connections carry the load. The pool grew to 600-1000 connections when a late turn
/// counted responses it had not read yet as busy connections, and each connect made the
/// loop later still; the schedule was then lost for tens of milliseconds. The bounds are
/// generous (lag p99 1 ms, 100 connections), so that a busy machine cannot fail them by
/// chance: the tight figures live in bench/lag.
#[test]
fn twenty_thousand_a_second_keep_their_schedule_on_a_small_pool() {
    let _serial = one_at_a_time();
    let server = target(None);
    let url = format!("http://{}/status", server.local_addr());
    let p = open(
        &url,
        Profile::constant(20_000.0, Duration::from_secs(3)),
        1000,
        1,
    );
    timing_attempts("20,000/s on a small pool", TIMING_ATTEMPTS, || {
        // A run whose load thread waited for a CPU (CI saw 2-2.8 s of a 3 s run with other
        // tests beside it) measures the machine, not the pool: run again, a few times,
        // before the attempt counts.
        let (mut r, mut took, mut starved) = (None, Duration::ZERO, Vec::new());
        for _ in 0..STARVED_RUNS {
            let t0 = Instant::now();
            let run = run(&p, &StopHandle::new(), |_| {}).unwrap();
            took = t0.elapsed();
            let waited = run.cpu_wait;
            r = Some(run);
            if waited <= STARVED {
                break;
            }
            starved.push(waited);
            std::thread::sleep(Duration::from_secs(2));
        }
        if !starved.is_empty() {
            eprintln!(
                "20,000/s on a small pool: runs whose load thread waited for a CPU: {starved:?}"
            );
        }
        let r = r.expect("one run at least");
        // Connections freed after the schedule ended close at once: the run does not wait
        // for its hard stop (the request timeout past the end).
        if took >= Duration::from_secs(3) + SLACK {
            // A machine too busy to send 20,000 a second ends late too: another attempt.
            return Err(format!("took {took:?}"));
        }
        let s = &r.totals.snapshot;
        assert_eq!(accounted(&r), 60_000, "exactly R x D scheduled");
        assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
        let pool = s.pool.expect("an open loop reports its pool");
        assert!(pool.preopened >= 1, "{pool:?}");
        assert!(
            pool.peak <= pool.preopened + pool.grown,
            "the peak is among what opened: {pool:?}"
        );
        // Said with every miss: a client that waited for a CPU was late by that much.
        let starved = format!("the load thread waited {:?} for a CPU", r.cpu_wait);
        let lag_p99 = s.lag.value_at_quantile(0.99);
        if lag_p99 > 1_000 {
            return Err(format!("lag p99 {lag_p99} µs, pool {pool:?}; {starved}"));
        }
        if pool.peak > 100 || s.connections_opened > 100 {
            return Err(format!(
                "{} connections opened, pool {pool:?}; {starved}",
                s.connections_opened
            ));
        }
        if s.dropped > 0 {
            return Err(format!("{} dropped", s.dropped));
        }
        Ok(())
    });
}

/// The pool shrinks back: after a burst of slow responses grew it, connections unused for
/// a second close, down to what was opened up front, and the report says why each opened.
#[test]
fn a_pool_grown_for_a_slow_spell_shrinks_back() {
    let _serial = one_at_a_time();
    let server = target(None);
    // 200 req/s on /delay/50: ten requests wait on the server at once, so the pool grows
    // to about ten; then one a second, and after a second unused the extra connections
    // close (the pool looks when a request is due).
    let url = format!("http://{}/delay/50", server.local_addr());
    let p = open(
        &url,
        Profile::parse("1s:200->200,3s:1->1", 0.0, "--stages").unwrap(),
        1000,
        1,
    );
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let s = &r.totals.snapshot;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    let pool = s.pool.expect("an open loop reports its pool");
    assert!(pool.grown >= 5, "it grew for the slow server: {pool:?}");
    assert!(pool.peak >= 6 && pool.peak <= 40, "{pool:?}");
    assert!(
        pool.closed_idle >= pool.grown.saturating_sub(2),
        "the grown connections closed after a second unused: {pool:?}"
    );
    assert_eq!(pool.reopened(s.connections_opened), 0, "{pool:?}");
}
