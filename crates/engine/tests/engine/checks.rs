//! Response checks (issue 17) against the built-in target, whose `/flaky/N/K` answers a wrong
//! JSON body when K is a multiple of N: the counts loadmark reports are compared with what
//! the server saw (its recorded paths), not with what loadmark thinks it sent.

use std::time::Duration;

use loadmark_engine::{run, RunResult, StopHandle};
use loadmark_plan::{Check, Load, Mix, Plan, RequestSpec, Stop, Target, Timeouts, TlsPolicy};
use loadmark_target::{start, RunningServer, ServerConfig};

fn target() -> RunningServer {
    let s = start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        ..ServerConfig::default()
    })
    .unwrap();
    s.record_tags();
    s
}

fn plan(server: &RunningServer, path: &str, requests: u64, checks: &[&str]) -> Plan {
    let url = format!("http://127.0.0.1:{}{path}", server.local_addr().port());
    Plan {
        request: RequestSpec {
            method: "GET".into(),
            url: Target::parse(&url).unwrap(),
            headers: vec![("X-Loadmark-Seq".into(), "{{seq}}".into())],
            body: Vec::new(),
            keep_alive: true,
        },
        load: Load::Closed {
            connections: 4,
            threads: 2,
        },
        stop: Stop::Requests(requests),
        timeouts: Timeouts::default(),
        warmup: Duration::ZERO,
        tls: TlsPolicy::Verify,
        mix: Mix {
            templated: true,
            ..Default::default()
        },
        websocket: None,
        script: None,
        protocol: Default::default(),
        checks: checks.iter().map(|c| Check::parse(c).unwrap()).collect(),
        scenario: None,
        scenarios: Vec::new(),
        cookies: false,
    }
}

fn counts(r: &RunResult, name: &str) -> (u64, u64, Option<String>) {
    let stats = r
        .totals
        .snapshot
        .checks
        .as_deref()
        .expect("checks were counted");
    let c = stats.get(name).unwrap_or_else(|| panic!("no check {name}"));
    (c.passed, c.failed, c.first_failure.clone())
}

#[test]
fn failing_checks_are_counted_exactly_as_the_server_answered() {
    let server = target();
    let p = plan(
        &server,
        "/flaky/4/{{seq}}",
        400,
        &[
            "status == 200",
            "ok: json /ok == true",
            "items: json /items length > 0",
            "header content-type contains json",
            "body size < 1024",
            "latency < 1h",
        ],
    );
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    let snap = &r.totals.snapshot;
    assert_eq!(snap.responses, 400);
    assert_eq!(snap.errors.total(), 0, "a failed check is not an error");
    assert_eq!(
        snap.latency.len(),
        400,
        "every response's latency is recorded"
    );

    // What the server answered wrong, from the paths it saw.
    let tags = server.tags();
    assert_eq!(tags.len(), 400);
    let wrong = tags
        .iter()
        .filter(|t| {
            let k: u64 = t.path.rsplit('/').next().unwrap().parse().unwrap();
            k.is_multiple_of(4)
        })
        .count() as u64;
    // Closed-loop workers number their requests apart, so K repeats across workers: the
    // server's paths, not arithmetic on 0..400, say how many answers were wrong.
    assert!(wrong > 0 && wrong < 400, "{wrong} wrong answers");

    assert_eq!(counts(&r, "ok").0, 400 - wrong);
    assert_eq!(counts(&r, "ok").1, wrong);
    let (_, _, example) = counts(&r, "ok");
    assert_eq!(
        example.as_deref(),
        Some("status 200; body: {\"ok\":false,\"items\":[]}"),
        "the first failure shows the body that failed"
    );
    assert_eq!(counts(&r, "items").1, wrong);
    for passing in [
        "status == 200",
        "header content-type contains json",
        "body size < 1024",
        "latency < 1h",
    ] {
        assert_eq!(counts(&r, passing).0, 400, "{passing}");
        assert_eq!(counts(&r, passing).1, 0, "{passing}");
    }
    let stats = snap.checks.as_deref().unwrap();
    assert_eq!(stats.checked_responses, 400);
    assert_eq!(stats.failed_responses, wrong);
    assert_eq!(stats.failed_success_responses, wrong);
    server.shutdown();
}

#[test]
fn bodies_are_read_back_whole_chunked_or_long_and_bounded() {
    let server = target();
    // Chunked (4 KiB chunks), and a body long enough that it would be dropped unread
    // without checks: both are buffered and measured byte-exactly.
    for (path, size) in [("/chunked/10000", 10_000), ("/bytes/100000", 100_000)] {
        let check = format!("body size == {size}");
        let p = plan(&server, path, 20, &[&check]);
        let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
        assert_eq!(counts(&r, &check).0, 20, "{path}: {:?}", counts(&r, &check));
    }
    // Past the 1 MiB buffer: body checks fail and say why; status checks still pass.
    let p = plan(
        &server,
        "/bytes/2000000",
        4,
        &["status == 200", "body size > 0"],
    );
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    assert_eq!(r.totals.snapshot.responses, 4);
    assert_eq!(counts(&r, "status == 200").0, 4);
    let (passed, failed, example) = counts(&r, "body size > 0");
    assert_eq!((passed, failed), (0, 4));
    assert!(
        example
            .as_deref()
            .unwrap()
            .contains("longer than the 1024 KiB checks buffer"),
        "{example:?}"
    );
    server.shutdown();
}

#[test]
fn a_run_without_checks_counts_none() {
    let server = target();
    let p = plan(&server, "/status", 10, &[]);
    let r = run(&p, &StopHandle::new(), |_| {}).unwrap();
    assert_eq!(r.totals.snapshot.responses, 10);
    assert!(r.totals.snapshot.checks.is_none());
    server.shutdown();
}
