//! Scenarios end to end over loopback (issue 17): `loadmark bench` runs a plan's
//! `scenario:` against the built-in target (in this process, so its exact counters can be
//! read): every request carries the token its login returned (the target counts wrong or
//! missing ones), per-step counts are exact, an extraction failure ends its iteration and is
//! counted, thresholds on checks decide the exit code, and plan errors name file, line and
//! column.

mod common;
#[path = "scenarios/several.rs"]
mod several;

use common::*;

use std::path::Path;
use std::process::Output;

use loadmark_report::{Bundle, Report, ScenarioSummary, StepSummary};
use loadmark_target::{start, RunningServer, ServerConfig};

fn text(o: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The built-in target with two threads: 50 users keep one thread busy.
fn shop() -> RunningServer {
    start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 2,
        ..Default::default()
    })
    .unwrap()
}

/// The built-in target serving HTTP/2 (h2c with prior knowledge) beside HTTP/1.1.
fn shop_h2() -> RunningServer {
    start(ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 2,
        http2: true,
        ..Default::default()
    })
    .unwrap()
}

/// Runs `plan` with `loadmark bench` in `dir`; the bundle when one was written.
fn bench(dir: &Path, plan: &str) -> (Output, Option<Bundle>) {
    std::fs::write(dir.join("plan.yaml"), plan).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("out"));
    let out = loadmark()
        .current_dir(dir)
        .args(["bench", "plan.yaml", "-o", "out", "-q"])
        .output()
        .unwrap();
    let bundle = std::fs::read_to_string(dir.join("out/bundle.json"))
        .ok()
        .map(|t| bundle_json(&t).unwrap());
    (out, bundle)
}

fn scenario(r: &Report) -> &ScenarioSummary {
    r.summary.scenario.as_ref().expect("a scenario summary")
}

fn step<'a>(s: &'a ScenarioSummary, name: &str) -> &'a StepSummary {
    s.steps
        .iter()
        .find(|st| st.name == name)
        .unwrap_or_else(|| panic!("no step {name}: {s:?}"))
}

const JOURNEY: &str = r#"
scenario:
  - name: login
    request: {method: POST, url: /login, body: '{"user":"u{{seq}}"}'}
    extract: {token: json /token}
    check: [status == 200]
  - name: list
    request: {url: /items, headers: {Authorization: 'Bearer {{token}}'}}
    extract: {item: 'json /items/{{rand_int 0 9}}/id'}
    check: [status == 200, 'listed: json /items length > 0']
  - think: 0ms..1ms
  - name: open
    request: {url: '/items/{{item}}', headers: {Authorization: 'Bearer {{token}}'}}
    check: ['priced: json /price > 0']
"#;

#[test]
fn a_journey_of_50_users_carries_each_token_and_counts_every_step_exactly() {
    let server = shop();
    let dir = temp_dir("scenarios", "journey");
    let plan = format!(
        "targets:\n  shop: {{url: 'http://{}'}}\n{JOURNEY}load: {{users: 50, iterations: 1000, threads: 2}}\nthresholds: [checks>=100%]\n",
        server.local_addr()
    );
    let (out, bundle) = bench(&dir, &plan);
    assert!(out.status.success(), "{}", text(&out));
    // The server's own counts: every iteration logged in and sent both later requests
    // with the token it got.
    assert_eq!(server.auth_failures(), 0, "a request without its token");
    assert_eq!(server.logins(), 1000);
    assert_eq!(server.requests_served(), 3000);
    let bundle = bundle.unwrap();
    let r = &bundle.steps[0].report;
    let s = scenario(r);
    assert_eq!((s.iterations, s.aborted, s.dropped), (1000, 0, 0), "{s:?}");
    assert_eq!(s.duration.count, 1000);
    for name in ["login", "list", "open"] {
        let st = step(s, name);
        assert_eq!(st.requests, 1000, "{st:?}");
        assert_eq!(st.status.class(2), 1000, "{st:?}");
        assert_eq!(st.latency.count, 1000, "each step has its own histogram");
        assert_eq!((st.checks_failed, st.extraction_failures), (0, 0), "{st:?}");
    }
    assert_eq!(step(s, "list").checks_passed, 2000);
    assert_eq!(r.summary.requests.completed, 3000);
    assert_eq!(r.summary.latency.count, 3000);
    let checks = r.summary.checks.as_ref().unwrap();
    assert_eq!(checks.get("priced").unwrap().passed, 1000);
    assert_eq!(checks.get("login: status == 200").unwrap().passed, 1000);
    // Merging adds the steps exactly, by name.
    let merged = loadmark_report::merge_reports(&[r.clone(), r.clone()]).unwrap();
    let m = scenario(&merged);
    assert_eq!(m.iterations, 2000);
    assert_eq!(step(m, "open").latency.count, 2000);
    assert_eq!(
        step(m, "open").latency.max_us,
        step(s, "open").latency.max_us
    );
    let md = std::fs::read_to_string(dir.join("out/BENCHMARKS.md")).unwrap();
    assert!(md.contains("## Scenario steps"), "{md}");
    assert!(md.contains("| 1 shop | open | 1000 |"), "{md}");
    // HTML shows the checks and steps; the CSV summary counts the iterations and checks.
    let html = loadmark_report::render_html_bundle(&bundle);
    assert!(html.contains("data-table=\"scenario\""), "no steps table");
    assert!(html.contains("<td class=\"text\">priced</td><td>1000</td><td>0</td>"));
    let csv = loadmark_report::render_bundle_csv_summary(&bundle);
    let (head, row) = (csv.lines().next().unwrap(), csv.lines().nth(1).unwrap());
    let cell = |name: &str| {
        let i = head.split(',').position(|h| h == name).unwrap();
        row.split(',').nth(i).unwrap().to_string()
    };
    assert_eq!(cell("iterations"), "1000");
    assert_eq!(cell("checks_passed"), "4000");
    assert_eq!(cell("checks_failed"), "0");
    // The steps' CSV: a row per step, its own counts and latency.
    let csv = loadmark_report::render_bundle_csv_steps(&bundle);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    let head: Vec<&str> = lines[0].split(',').collect();
    let rows: Vec<Vec<&str>> = lines[1..].iter().map(|l| l.split(',').collect()).collect();
    let at = |row: &Vec<&str>, name: &str| {
        row[head.iter().position(|h| *h == name).unwrap()].to_string()
    };
    assert_eq!(
        rows.iter()
            .map(|r| at(r, "scenario_step"))
            .collect::<Vec<_>>(),
        ["login", "list", "open"]
    );
    for row in &rows {
        assert_eq!(row.len(), head.len(), "{csv}");
        assert_eq!(at(row, "requests"), "1000");
        assert_eq!(at(row, "status_2xx"), "1000");
        assert_eq!(
            (at(row, "errors"), at(row, "checks_failed")),
            ("0".into(), "0".into())
        );
        let (p50, p99): (u64, u64) = (
            at(row, "latency_p50_us").parse().unwrap(),
            at(row, "latency_p99_us").parse().unwrap(),
        );
        assert!(0 < p50 && p50 <= p99, "{csv}");
    }
    assert_eq!(at(&rows[1], "checks_passed"), "2000");
    let out = loadmark()
        .current_dir(&dir)
        .args(["report", "out/bundle.json", "--format", "csv-steps"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), csv);
}

#[test]
fn a_failed_extraction_ends_its_iteration_and_is_counted_by_step() {
    let server = shop();
    let dir = temp_dir("scenarios", "extract");
    // The list has ten items: /items/20 selects nothing, so no `open` is ever sent.
    let plan = format!(
        r#"targets:
  shop: {{url: 'http://{}'}}
scenario:
  - name: login
    request: {{method: POST, url: /login, body: '{{"user":"u"}}'}}
    extract: {{token: json /token}}
  - name: list
    request: {{url: /items, headers: {{Authorization: 'Bearer {{{{token}}}}'}}}}
    extract: {{item: json /items/20/id}}
  - name: open
    request: {{url: '/items/{{{{item}}}}', headers: {{Authorization: 'Bearer {{{{token}}}}'}}}}
load: {{users: 4, iterations: 40}}
"#,
        server.local_addr()
    );
    let (out, bundle) = bench(&dir, &plan);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(server.requests_served(), 80, "login and list only");
    assert_eq!(server.auth_failures(), 0);
    let bundle = bundle.unwrap();
    let s = scenario(&bundle.steps[0].report);
    assert_eq!((s.iterations, s.aborted), (0, 40), "{s:?}");
    let list = step(s, "list");
    assert_eq!((list.requests, list.extraction_failures), (40, 40));
    let first = list.first_extraction_failure.as_deref().unwrap();
    assert!(
        first.starts_with("json /items/20/id found nothing; status 200, body: {\"items\""),
        "{first}"
    );
    assert!(s.steps.iter().all(|st| st.name != "open"), "{s:?}");
}

#[test]
fn checks_fail_on_an_exact_share_and_thresholds_on_them_decide_the_exit_code() {
    let server = shop();
    let dir = temp_dir("scenarios", "gate");
    // One thread: iteration numbers ({{seq}}) are 0..99, so /flaky/2/{{seq}} answers the wrong
    // body to exactly the even half. The wrong token is refused every time, and counted.
    let plan = format!(
        r#"targets:
  shop: {{url: 'http://{}'}}
scenario:
  - name: flaky
    request: {{url: '/flaky/2/{{{{seq}}}}'}}
    check: ['ok: json /ok == true']
  - name: intruder
    request: {{url: /items, headers: {{Authorization: 'Bearer forged'}}}}
    check: ['allowed: status == 200']
load: {{users: 3, iterations: 100, threads: 1}}
thresholds: ['check:ok>99%']
"#,
        server.local_addr()
    );
    let (out, bundle) = bench(&dir, &plan);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(server.auth_failures(), 100);
    let r = &bundle.unwrap().steps[0].report;
    let checks = r.summary.checks.as_ref().unwrap();
    let ok = checks.get("ok").unwrap();
    assert_eq!((ok.passed, ok.failed), (50, 50));
    assert_eq!(checks.get("allowed").unwrap().failed, 100);
    let s = scenario(r);
    assert_eq!(
        s.iterations, 100,
        "a failed check does not end an iteration"
    );
    assert_eq!(step(s, "intruder").status.class(4), 100);
    assert_eq!(step(s, "flaky").checks_failed, 50);
    assert!(!r.thresholds[0].passed);
}

#[test]
fn open_model_starts_iterations_on_schedule() {
    let server = shop();
    let dir = temp_dir("scenarios", "open");
    let plan = format!(
        "targets:\n  shop: {{url: 'http://{}'}}\n{JOURNEY}load: {{iterations_per_second: 200, users: 50, duration: 1s}}\n",
        server.local_addr()
    );
    let (out, bundle) = bench(&dir, &plan);
    assert!(out.status.success(), "{}", text(&out));
    let r = &bundle.unwrap().steps[0].report;
    let s = scenario(r);
    // 200 iterations are due in the second; each one starts, or is dropped if 50 users are
    // busy (not expected on loopback, but not a failure of the schedule either).
    assert_eq!(s.iterations + s.aborted + s.dropped, 200, "{s:?}");
    assert_eq!(s.aborted, 0, "{s:?}");
    assert_eq!(server.auth_failures(), 0);
    assert_eq!(step(s, "login").requests, 200 - s.dropped);
    assert_eq!(step(s, "open").requests, s.iterations);
    assert!(
        r.summary.schedule_lag.is_some(),
        "latency from intended start"
    );
}

/// A WebSocket step: the item extracted before goes out in a message on the user's session
/// to `/ws/json`, whose reply is checked and extracted from.
const CHAT: &str = r#"  - name: chat
    request: {url: /ws/json, protocol: ws, body: '{"id":"{{item}}"}', headers: {Authorization: 'Bearer {{token}}'}}
    check: ['json /ok == true']
    extract: {echoed: json /id}
"#;

/// `JOURNEY` mixing its protocols: login on the user's HTTP/1.1 connection, the list on its
/// HTTP/2 one, a WebSocket exchange carrying the extracted item, then the item over HTTP/1.1
/// with the value the WebSocket reply gave back.
fn mixed_journey() -> String {
    let (head, open) = JOURNEY.split_at(JOURNEY.find("  - name: open").unwrap());
    format!(
        "{}{CHAT}{}",
        head.replace("url: /items,", "url: /items, protocol: h2,"),
        open.replace("/items/{{item}}", "/items/{{echoed}}")
    )
}

#[test]
fn a_journey_mixing_http1_http2_and_websocket_steps_counts_each_protocol_exactly() {
    let server = shop_h2();
    let dir = temp_dir("scenarios", "mixed");
    let plan = format!(
        "targets:\n  shop: {{url: 'http://{}'}}\n{}load: {{users: 50, iterations: 600, threads: 2}}\nthresholds: [checks>=100%]\n",
        server.local_addr(),
        mixed_journey()
    );
    assert!(
        plan.contains("protocol: h2") && plan.contains("{{echoed}}"),
        "{plan}"
    );
    let (out, bundle) = bench(&dir, &plan);
    assert!(out.status.success(), "{}", text(&out));
    // The server's counts: every login and item over HTTP/1.1, every list over HTTP/2 with
    // the token the login returned, every chat message on a session each user kept open
    // across its iterations; one connection per protocol per user.
    assert_eq!(server.auth_failures(), 0, "a request without its token");
    assert_eq!(server.logins(), 600);
    assert_eq!(server.http2_requests(), 600);
    assert_eq!(server.ws_messages_received(), 600);
    let sessions = server.ws_sessions();
    assert!(
        (1..=50).contains(&sessions),
        "{sessions} sessions for 50 users"
    );
    // Login, list and item, plus one upgrade per session.
    assert_eq!(server.requests_served(), 1800 + sessions);
    assert_eq!(server.connections_accepted(), 50 + 50 + sessions);
    let r = &bundle.unwrap().steps[0].report;
    let s = scenario(r);
    assert_eq!((s.iterations, s.aborted, s.dropped), (600, 0, 0));
    for name in ["login", "list", "chat", "open"] {
        let st = step(s, name);
        assert_eq!((st.requests, st.status.class(2)), (600, 600), "{name}");
        assert_eq!((st.checks_failed, st.extraction_failures), (0, 0), "{name}");
    }
    // The JSON checks read the HTTP/2 bodies and the WebSocket replies.
    assert_eq!(step(s, "list").checks_passed, 1200);
    assert_eq!(step(s, "chat").checks_passed, 600);
    assert_eq!(step(s, "open").checks_passed, 600);
    assert_eq!(r.summary.requests.completed, 2400);
    assert_eq!(r.summary.errors.total(), 0, "{:?}", r.summary.errors);
}

#[test]
fn a_websocket_step_the_server_closes_or_refuses_fails_with_its_kind_and_the_next_reopens() {
    let server = shop();
    let dir = temp_dir("scenarios", "ws-hostile");
    // /ws/close-after/2 answers two messages, then closes: each third iteration fails
    // (closed), and the next one opens a new session.
    let plan = format!(
        "targets:\n  shop: {{url: 'http://{}'}}\nscenario:\n  - name: chat\n    request: {{url: /ws/close-after/2, protocol: ws, body: hi}}\nload: {{users: 1, iterations: 9, threads: 1}}\n",
        server.local_addr()
    );
    let (out, bundle) = bench(&dir, &plan);
    assert!(out.status.success(), "{}", text(&out));
    let s = scenario(&bundle.as_ref().unwrap().steps[0].report).clone();
    assert_eq!((s.iterations, s.aborted), (6, 3));
    let chat = step(&s, "chat");
    assert_eq!((chat.responses, chat.errors.total()), (6, 3));
    let closed = chat.errors.get(loadmark_metrics::ErrorKind::Closed);
    assert_eq!(closed.count, 3);
    let example = closed.first_example.as_deref().unwrap();
    assert!(
        example.contains("1001 closing after 2 messages"),
        "{example}"
    );
    assert_eq!(
        (server.ws_sessions(), server.ws_messages_received()),
        (3, 6)
    );
    // A path that is no WebSocket endpoint: the upgrade is refused, every iteration fails.
    let refused = plan.replace("/ws/close-after/2", "/ws/nope");
    let (out, bundle) = bench(&dir, &refused);
    // Nothing succeeded: the bench fails, and its report says why.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let s = scenario(&bundle.as_ref().unwrap().steps[0].report).clone();
    assert_eq!((s.iterations, s.aborted), (0, 9));
    let chat = step(&s, "chat");
    let handshake = chat.errors.get(loadmark_metrics::ErrorKind::Handshake);
    assert_eq!(handshake.count, 9, "{:?}", chat.errors);
}

#[test]
fn http2_and_websocket_journeys_run_under_every_load_model_and_count_what_the_server_counted() {
    let server = shop_h2();
    let dir = temp_dir("scenarios", "h2-models");
    let models = [
        ("closed", "users: 20, iterations: 300"),
        ("ramp", "stages: '1s:8,1s:0'"),
        (
            "open",
            "iterations_per_second: 150, users: 30, duration: 2s",
        ),
    ];
    for (model, load) in models {
        let before = (
            server.requests_served(),
            server.http2_requests(),
            server.ws_sessions(),
            server.ws_messages_received(),
        );
        let plan = format!(
            "targets:\n  shop: {{url: 'http://{}'}}\n{JOURNEY}{CHAT}load: {{http2: true, threads: 2, {load}}}\n",
            server.local_addr()
        );
        let (out, bundle) = bench(&dir, &plan);
        assert!(out.status.success(), "{model}: {}", text(&out));
        // HTTP requests, then one upgrade per WebSocket session (a user keeps its own).
        let sessions = server.ws_sessions() - before.2;
        let served = server.requests_served() - before.0 - sessions;
        assert_eq!(
            server.http2_requests() - before.1,
            served,
            "{model}: all HTTP/2"
        );
        assert_eq!(server.auth_failures(), 0, "{model}");
        let r = &bundle.unwrap().steps[0].report;
        let s = scenario(r);
        let counts = (s.iterations, s.aborted, s.dropped);
        assert_eq!(s.aborted, 0, "{model}: {counts:?}");
        // A request the end of the run cut off counts in flight, as over HTTP/1.1: the
        // server may have answered it (its count a moment after the run) or never seen it
        // whole, so what it handled lies between the completed and the sent.
        let q = &r.summary.requests;
        let messages = server.ws_messages_received() - before.3;
        let chats = step(s, "chat").requests;
        let handled = served + messages;
        assert!(
            (q.completed..=q.completed + q.in_flight_at_end).contains(&handled),
            "{model}: the server handled {handled}, the report {q:?}"
        );
        assert!(
            messages >= chats && messages <= chats + q.in_flight_at_end,
            "{model}"
        );
        let login = step(s, "login").requests;
        assert_eq!(chats, s.iterations, "{model}: {counts:?}");
        match model {
            "closed" => assert_eq!((s.iterations, login), (300, 300)),
            "open" => assert_eq!((s.iterations + s.dropped, login), (300, s.iterations)),
            // A ramp's end may cut iterations short (at most one per user): their first
            // steps count, the iteration does not.
            _ => assert!(
                s.iterations > 8 && login - s.iterations <= 8,
                "{counts:?} {login}"
            ),
        }
    }
}

#[test]
fn scenario_errors_name_file_line_column_and_the_schema_has_it() {
    let dir = temp_dir("scenarios", "errors");
    let cases = [
        (
            // A variable used before any step extracts it.
            "targets:\n  a: {url: 'http://127.0.0.1:1'}\nscenario:\n  - name: one\n    request: {url: /x}\n    extract: {token: json /t}\n  - name: two\n    request: {url: '/y/{{tokn}}'}\n",
            "plan.yaml:7:5",
            "variables known here: token",
        ),
        (
            "targets:\n  a: {url: 'http://127.0.0.1:1'}\nscenario:\n  - name: one\n    request: {url: /x}\n    extract: {token: jsn /t}\n",
            "plan.yaml:6:",
            "expected json /pointer | regex PATTERN",
        ),
        (
            "targets:\n  a: {url: 'http://127.0.0.1:1'}\nscenario:\n  - think: 2s..1s\n",
            "plan.yaml:4:",
            "start is after its end",
        ),
        (
            "targets:\n  a: {url: 'http://127.0.0.1:1'}\nload: {users: 3}\n",
            "plan.yaml:3:",
            "load.users is a scenario's word",
        ),
        (
            // Over TLS the server picks one protocol per connection from what is offered.
            "targets:\n  a: {url: 'https://127.0.0.1:1'}\nscenario:\n  - name: one\n    request: {url: /x}\n  - name: two\n    request: {url: /y, protocol: h2}\n",
            "plan.yaml:6:5",
            "over https:// the server chooses the protocol per connection",
        ),
        (
            "targets:\n  a: {url: 'http://127.0.0.1:1'}\nscenario:\n  - request: {url: /x, protocol: h3}\n",
            "plan.yaml:4:",
            "h3",
        ),
        (
            "targets:\n  a: {url: 'http://127.0.0.1:1'}\nscenario:\n  - request: {url: /ws, protocol: ws, method: POST}\n",
            "plan.yaml:4:5",
            "a WebSocket step opens its session with GET",
        ),
    ];
    for (plan, place, says) in cases {
        std::fs::write(dir.join("plan.yaml"), plan).unwrap();
        let out = loadmark()
            .current_dir(&dir)
            .args(["bench", "--check", "plan.yaml"])
            .output()
            .unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{t}");
        assert!(t.contains(place) && t.contains(says), "{place} {says}: {t}");
    }
    let schema = loadmark().args(["schema", "plan"]).output().unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    assert!(schema["properties"]["scenario"].is_object(), "{schema}");
}

/// Writes `users.csv` (header `user,pw`, rows `alice0..alice{n-1}`) into `dir`.
fn users_csv(dir: &Path, n: usize) -> Vec<String> {
    let names: Vec<String> = (0..n).map(|i| format!("alice{i}")).collect();
    let rows: Vec<String> = names.iter().map(|u| format!("{u},pw-{u}")).collect();
    std::fs::write(
        dir.join("users.csv"),
        format!("user,pw\n{}\n", rows.join("\n")),
    )
    .unwrap();
    names
}

/// A login carrying the data row's user, then a request with the token it got.
const LOGIN_AS_ROW: &str = r#"scenario:
  - name: login
    request: {method: POST, url: /login, body: '{"user":"{{csv user}}","pw":"{{csv pw}}"}'}
    extract: {token: json /token}
    check: [status == 200]
  - name: list
    request: {url: /items, headers: {Authorization: 'Bearer {{token}}'}}
"#;

#[test]
fn data_rows_go_to_users_and_to_iterations_exactly() {
    let server = shop();
    let dir = temp_dir("scenarios", "data");
    // The plan in a subdirectory, run from its parent: the data path is the plan's.
    std::fs::create_dir_all(dir.join("plans")).unwrap();
    let names = users_csv(&dir.join("plans"), 20);
    let run = |load: &str, data: &str| {
        let plan = format!(
            "targets:\n  shop: {{url: 'http://{}'}}\ndata: {data}\n{LOGIN_AS_ROW}load: {{{load}}}\n",
            server.local_addr()
        );
        std::fs::write(dir.join("plans/plan.yaml"), plan).unwrap();
        let out = loadmark()
            .current_dir(&dir)
            .args(["bench", "plans/plan.yaml", "-o", "out", "-q"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
    };
    // Per user (the short form's default in a scenario): 5 users on 2 threads are users 0-4,
    // so exactly the first 5 rows log in, whatever each user's share of the iterations.
    run("users: 5, iterations: 100, threads: 2", "users.csv");
    let seen = server.login_users();
    assert_eq!(
        seen.keys().cloned().collect::<Vec<_>>(),
        {
            let mut first: Vec<String> = names[..5].to_vec();
            first.sort();
            first
        },
        "{seen:?}"
    );
    assert_eq!(seen.values().sum::<u64>(), 100);
    assert_eq!(server.auth_failures(), 0);
    // Per iteration: 60 iterations take rows 0..59 modulo 20, so every user exactly 3 times.
    run(
        "users: 7, iterations: 60, threads: 2",
        "{file: users.csv, per: iteration}",
    );
    let seen = server.login_users();
    assert_eq!(seen.len(), 20, "{seen:?}");
    let total: u64 = seen.values().sum();
    assert_eq!(total, 160);
    // Rows 5..19 only came from the per-iteration run: 3 each.
    for name in &names[5..] {
        assert_eq!(seen[name], 3, "{name}: {seen:?}");
    }
    assert_eq!(server.auth_failures(), 0);
}

#[test]
fn data_file_errors_name_file_line_column() {
    let dir = temp_dir("scenarios", "data-errors");
    std::fs::write(dir.join("empty.csv"), "").unwrap();
    std::fs::write(dir.join("head.csv"), "user,pw\n").unwrap();
    std::fs::write(dir.join("ragged.csv"), "user,pw\nbob,x\neve\n").unwrap();
    users_csv(&dir, 3);
    let head = "targets:\n  a: {url: 'http://127.0.0.1:1'}\n";
    let cases = [
        (
            format!("{head}data: missing.csv\n{LOGIN_AS_ROW}"),
            "plan.yaml:3:",
            "missing.csv\": cannot read it",
        ),
        (
            format!("{head}data: {{file: empty.csv, per: user}}\n{LOGIN_AS_ROW}"),
            "plan.yaml:3:",
            "(empty file)",
        ),
        (
            format!("{head}data: head.csv\n{LOGIN_AS_ROW}"),
            "plan.yaml:3:",
            "at least one data row",
        ),
        (
            format!("{head}data: ragged.csv\n{LOGIN_AS_ROW}"),
            "plan.yaml:3:",
            "line 3: \\\"eve\\\" has 1 field(s), the header 2",
        ),
        (
            // The column is checked where the step uses it.
            format!(
                "{head}data: users.csv\n{}",
                LOGIN_AS_ROW.replace("{{csv pw}}", "{{csv password}}")
            ),
            "plan.yaml:5:5",
            "a column of the data file",
        ),
        (
            format!("{head}data: {{file: users.csv, per: request}}\n{LOGIN_AS_ROW}"),
            "plan.yaml:3:",
            "per `user` or per `iteration`",
        ),
        (
            format!("{head}data: {{file: users.csv, per: user}}\nrequest: {{path: '/{{{{csv user}}}}'}}\n"),
            "plan.yaml:3:",
            "rows need a `scenario:`",
        ),
    ];
    for (plan, place, says) in cases {
        std::fs::write(dir.join("plan.yaml"), &plan).unwrap();
        let out = loadmark()
            .current_dir(&dir)
            .args(["bench", "--check", "plan.yaml"])
            .output()
            .unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{plan}\n{t}");
        assert!(t.contains(place) && t.contains(says), "{place} {says}: {t}");
    }
}

/// Logs in (the target sets `session`), reads `/me` with the cookie (the target refuses
/// another user's), logs out (the target deletes it), reads `/me` again (refused: no cookie
/// left).
const COOKIE_JOURNEY: &str = r#"scenario:
  - name: login
    request: {method: POST, url: /login, body: '{"user":"u{{seq}}"}'}
  - name: me
    request: {url: '/me?user=u{{seq}}'}
    check: [status == 200]
  - name: logout
    request: {method: POST, url: /logout}
  - name: me after logout
    request: {url: /me}
    check: [status == 403]
"#;

#[test]
fn a_cookie_jar_per_user_sends_each_session_and_forgets_deleted_ones() {
    let server = shop();
    let dir = temp_dir("scenarios", "cookies");
    let plan = |cookies: bool, users: u32, iterations: u32| {
        format!(
            "targets:\n  shop: {{url: 'http://{}'}}\n{COOKIE_JOURNEY}load: {{users: {users}, iterations: {iterations}, threads: 2, cookies: {cookies}}}\nthresholds: [checks>=100%]\n",
            server.local_addr()
        )
    };
    let (out, bundle) = bench(&dir, &plan(true, 20, 400));
    assert!(out.status.success(), "{}", text(&out));
    // Only the requests after a logout lacked the cookie: one per iteration.
    assert_eq!(server.cookie_failures(), 400, "a /me without its session");
    assert_eq!(server.requests_served(), 1600);
    let s = scenario(&bundle.as_ref().unwrap().steps[0].report).clone();
    assert_eq!(s.iterations, 400);
    assert_eq!(step(&s, "me").status.class(2), 400);
    assert_eq!(step(&s, "me after logout").status.class(4), 400);
    // Without the jar, every /me is refused (and the checks say so): 10 iterations, 2 each.
    let (out, _) = bench(&dir, &plan(false, 2, 10));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(server.cookie_failures(), 400 + 20);
}

#[test]
fn users_ramp_with_stages() {
    let server = shop();
    let dir = temp_dir("scenarios", "ramp");
    let names = users_csv(&dir, 12);
    // 0 -> 10 users in 1s, 10 for 1s, down to 0 in 1s: 10 users in all, each its own
    // connection and its own data row, none added on the way down.
    let plan = format!(
        "targets:\n  shop: {{url: 'http://{}'}}\ndata: users.csv\n{LOGIN_AS_ROW}  - think: 1ms..5ms\nload: {{stages: '1s:10,1s:10,1s:0', threads: 2}}\n",
        server.local_addr()
    );
    let (out, bundle) = bench(&dir, &plan);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(server.connections_accepted(), 10);
    let seen: Vec<String> = server.login_users().into_keys().collect();
    let mut first: Vec<String> = names[..10].to_vec();
    first.sort();
    assert_eq!(seen, first);
    assert_eq!(server.auth_failures(), 0);
    let r = &bundle.unwrap().steps[0].report;
    let s = scenario(r);
    assert_eq!(s.aborted, 0, "{s:?}");
    assert!(s.iterations > 10, "{s:?}");
    // Users over time: every connection opened while ramping up (by the 1.1 s tick), none
    // in the last second; the run lasted the stages.
    let opened: Vec<u64> = r.series.iter().map(|p| p.connections_opened).collect();
    assert_eq!(opened.iter().sum::<u64>(), 10, "{opened:?}");
    assert!(opened.iter().skip(2).all(|&n| n == 0), "{opened:?}");
    assert!(r.series.len() >= 3, "{:?}", r.series.len());
    assert!(r.series[1].responses > 0, "{:?}", r.series);
}
