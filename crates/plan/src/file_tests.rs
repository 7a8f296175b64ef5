use super::*;
use crate::{Load, Stop};

const SWEEP: &str = r#"
name: Concurrency sweep
targets:
  api:
    url: http://127.0.0.1:8080
    headers:
      Client-Id: bench
request:
  path: /api/features?x=1
load:
  requests: 2000
sweep:
  connections: [1, 2, 3, 4, 5, 10, 20]
pause: 1s
"#;

#[test]
fn a_sweep_becomes_one_plan_per_value() {
    let p = load_plan_text(SWEEP, "sweep.yaml", 2).unwrap();
    assert_eq!(p.steps.len(), 7);
    let last = &p.steps[6];
    assert_eq!(
        last.params,
        vec![("connections".to_string(), "20".to_string())]
    );
    assert_eq!(
        last.plan.load,
        Load::Closed {
            connections: 20,
            threads: 2
        }
    );
    assert_eq!(last.plan.stop, Stop::Requests(2000));
    assert_eq!(last.plan.request.url.path_and_query(), "/api/features?x=1");
    assert_eq!(last.plan.request.headers[0].0, "Client-Id");
    assert_eq!(
        p.steps[0].plan.load,
        Load::Closed {
            connections: 1,
            threads: 1
        }
    );
    assert_eq!(p.pause, Duration::from_secs(1));
}

#[test]
fn targets_times_values_with_labels_for_comparisons() {
    let text = r#"
targets:
  a-nocache: {url: "http://127.0.0.1:1", labels: {system: A, cache: none}}
  b-nocache: {url: "http://127.0.0.1:2", labels: {system: B, cache: none}}
load: {duration: 2s, keepalive: false}
sweep: {connections: [1, 100]}
compare:
  - {rows: cache, columns: system, metric: rps}
"#;
    let p = load_plan_text(text, "cmp.yaml", 2).unwrap();
    assert_eq!(p.steps.len(), 4);
    assert_eq!(p.steps[1].target, "a-nocache");
    assert_eq!(
        p.steps[2].params[0],
        ("target".to_string(), "b-nocache".to_string())
    );
    assert!(!p.steps[0].plan.request.keep_alive);
}

#[test]
fn unknown_keys_name_the_place_and_suggest() {
    let text = "targets:\n  api:\n    url: http://127.0.0.1:1\nload:\n  conections: 5\n";
    let e = PlanFile::parse(text, "p.yaml").unwrap_err();
    assert_eq!((e.line, e.file.as_str()), (5, "p.yaml"));
    assert!(e.message.contains("unknown field `conections`"), "{e}");
    assert!(e.message.contains("did you mean `connections`?"), "{e}");
    assert!(e.to_string().starts_with("p.yaml:5:"), "{e}");
}

#[test]
fn semantic_errors_are_located_too() {
    let cases = [
        ("targets:\n  api:\n    url: http://127.0.0.1:1\nload:\n  duration: soon\n", 5, "not a duration"),
        ("targets:\n  api:\n    url: ftp://x\n", 3, "targets.api.url"),
        ("targets:\n  api:\n    url: http://h:1\nsweep:\n  targets: [web]\n", 5, "no target named \"web\""),
        ("targets:\n  api:\n    url: http://h:1\nload:\n  rate: 10\n  requests: 5\n  duration: 2s\n", 4, "cannot be used together"),
        ("targets:\n  api:\n    url: http://h:1\ncompare:\n  - {rows: cache, columns: target}\n", 4, "\"cache\" is neither a target label"),
        ("targets: {}\n", 1, "at least one target"),
        ("targets:\n  api:\n    url: http://h:1\n    launch:\n      command: x\n      ready: {port: 'a:1', http: 'http://b'}\n", 6, "one of port, http or delay"),
    ];
    for (text, line, expected) in cases {
        let e = load_plan_text(text, "p.yaml", 2).unwrap_err();
        assert!(e.message.contains(expected), "{text}: {e}");
        assert_eq!(e.line, line, "{text}: {e}");
    }
}

#[test]
fn launch_blocks_resolve_readiness_and_defaults() {
    let text = r#"
targets:
  srv:
    url: http://127.0.0.1:18080
    launch:
      command: ./server --port 18080
      env: {RUST_LOG: warn}
      ready_timeout: 5s
  other:
    url: http://127.0.0.1:18081
    launch: {command: x, ready: {http: "http://127.0.0.1:18081/health"}}
"#;
    let p = load_plan_text(text, "l.yaml", 2).unwrap();
    let (name, l) = &p.launches[0];
    assert_eq!(name, "srv");
    assert_eq!(l.ready, Ready::Port("127.0.0.1:18080".into()));
    assert_eq!(
        (l.ready_timeout, l.stop_grace),
        (Duration::from_secs(5), Duration::from_secs(5))
    );
    assert_eq!(l.env, vec![("RUST_LOG".to_string(), "warn".to_string())]);
    assert_eq!(
        p.launches[1].1.ready,
        Ready::Http("http://127.0.0.1:18081/health".into())
    );
}

#[test]
fn the_schema_lists_every_section() {
    let schema = PlanFile::json_schema();
    for key in [
        "targets",
        "request",
        "load",
        "sweep",
        "compare",
        "monitor",
        "launch",
        "services",
        "depends_on",
        "additionalProperties",
    ] {
        assert!(schema.contains(key), "{key} missing from the schema");
    }
}

#[test]
fn distance_and_suggestions() {
    assert_eq!(distance("conections", "connections"), 1);
    assert_eq!(
        suggest("unknown field `duraton`, expected one of `duration`, `rate`").as_deref(),
        Some("did you mean `duration`?")
    );
    assert_eq!(
        suggest("unknown field `zzz`, expected one of `duration`, `rate`"),
        None
    );
}

#[test]
fn several_requests_with_weights_and_templates() {
    let text = r#"
targets:
  api: {url: "http://127.0.0.1:8080"}
requests:
  - {path: "/api/features/a:key:{{rand_int 1 10000}}", weight: 3, headers: {X-Seq: "{{seq}}"}}
  - {method: POST, path: /api/evaluate, body: '{"user": 1}'}
load: {connections: 10, keepalive: false}
"#;
    let p = load_plan_text(text, "mix.yaml", 2).unwrap();
    let plan = &p.steps[0].plan;
    assert!(plan.mix.templated);
    assert_eq!(plan.mix.weight, 3);
    assert_eq!(plan.mix.others.len(), 1);
    let (w, other) = &plan.mix.others[0];
    assert_eq!(
        (*w, other.method.as_str(), other.keep_alive),
        (1, "POST", false)
    );
    assert!(!plan.request.keep_alive);
    let both =
        "targets:\n  api: {url: 'http://h:1'}\nrequest: {path: /a}\nrequests:\n  - {path: /b}\n";
    let e = load_plan_text(both, "p.yaml", 2).unwrap_err();
    assert!(e.message.contains("not both"), "{e}");
    let bad =
        "targets:\n  api: {url: 'http://h:1'}\nrequests:\n  - {path: '/a/{{rand_int 9 1}}'}\n";
    let e = load_plan_text(bad, "p.yaml", 2).unwrap_err();
    assert_eq!(e.line, 4, "{e}");
}

#[test]
fn a_websocket_plan_sweeps_sessions() {
    let text = r#"
name: WebSocket echo
targets:
  echo: {url: "ws://127.0.0.1:8080"}
request:
  path: /ws/echo
  headers: {Origin: "http://bench"}
websocket:
  interval: 5ms
  payload: 128..4096
  session_duration: 10s
  ping: 1s
load: {duration: 20s}
sweep: {connections: [200, 400]}
"#;
    let p = load_plan_text(text, "ws.yaml", 2).unwrap();
    assert_eq!(p.steps.len(), 2);
    let step = &p.steps[1];
    let ws = step.plan.websocket.as_ref().expect("a WebSocket step");
    assert_eq!(ws.mode, crate::WsMode::Echo);
    assert_eq!(ws.interval, Some(Duration::from_millis(5)));
    assert_eq!(
        ws.payload,
        crate::WsPayload::Random {
            min: 128,
            max: 4096
        }
    );
    assert_eq!(ws.session_duration, Some(Duration::from_secs(10)));
    assert_eq!(step.plan.load.max_connections(), 400);
    assert_eq!(
        step.plan.request.url.as_str(),
        "ws://127.0.0.1:8080/ws/echo"
    );
    assert_eq!(step.plan.request.headers[0].0, "Origin");
}

#[test]
fn websocket_mistakes_are_located() {
    let bad_mode = "targets:\n  a: {url: \"ws://127.0.0.1:1\"}\nwebsocket:\n  mode: stream\n";
    let e = load_plan_text(bad_mode, "ws.yaml", 2).unwrap_err();
    assert_eq!((e.line, e.column), (4, 3), "{e}");
    assert!(e.message.contains("echo, request, send, receive"), "{e}");

    let http_url = "targets:\n  a: {url: \"http://127.0.0.1:1\"}\nwebsocket:\n  interval: 5ms\n";
    let e = load_plan_text(http_url, "ws.yaml", 2).unwrap_err();
    assert!(e.message.contains("ws://"), "{e}");

    let no_interval = "targets:\n  a: {url: \"ws://127.0.0.1:1\"}\nwebsocket:\n  mode: echo\n";
    let e = load_plan_text(no_interval, "ws.yaml", 2).unwrap_err();
    assert!(e.message.contains("--interval"), "{e}");

    let typo = "targets:\n  a: {url: \"ws://127.0.0.1:1\"}\nwebsocket:\n  intervall: 5ms\n";
    let e = load_plan_text(typo, "ws.yaml", 2).unwrap_err();
    assert!(e.message.contains("interval"), "{e}");
}

/// Checks in a websocket plan test its replies (issue 20): request mode, body and JSON only,
/// and a check no reply can meet is refused at its place in the file.
#[test]
fn websocket_plans_check_replies() {
    let base = "targets:\n  a: {url: \"ws://127.0.0.1:1\"}\nwebsocket:\n  mode: request\n  message: '{\"status\":200}'\nchecks:\n  - json /status == 200\n";
    let p = load_plan_text(base, "ws.yaml", 2).unwrap();
    assert_eq!(p.steps[0].plan.checks.len(), 1);
    let status = base.replace("json /status == 200", "status == 200");
    let e = load_plan_text(&status, "ws.yaml", 2).unwrap_err();
    assert_eq!(e.line, 7, "{e}");
    assert!(e.message.contains("a reply has no status"), "{e}");
}

/// `checks:` (issue 17) reach every step's plan; a malformed one names the file, line and
/// column of the value and, inside it, the column and what was expected.
#[test]
fn checks_reach_every_step_and_errors_are_located() {
    let text = "targets:\n  a:\n    url: http://127.0.0.1:8080\nsweep:\n  connections: [1, 2]\nchecks:\n  - status == 200\n  - 'ok: json /ok == true'\n";
    let p = load_plan_text(text, "c.yaml", 2).unwrap();
    assert_eq!(p.steps.len(), 2);
    for step in &p.steps {
        let names: Vec<&str> = step.plan.checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["status == 200", "ok"]);
    }
    let bad = text.replace("status == 200", "status =! 200");
    let e = load_plan_text(&bad, "c.yaml", 2).unwrap_err().to_string();
    assert!(e.starts_with("c.yaml:7:"), "{e}");
    assert!(e.contains("column 8: expected a comparison"), "{e}");
}

#[test]
fn protocol_settings_and_their_sweeps_reach_each_steps_plan() {
    let text = r#"
targets:
  api: {url: "http://127.0.0.1:8080"}
load: {requests: 100, http2: true, unix_socket: /run/app.sock}
sweep:
  streams: [1, 10]
"#;
    let p = load_plan_text(text, "h2.yaml", 2).unwrap();
    let streams: Vec<usize> = p.steps.iter().map(|s| s.plan.protocol.streams()).collect();
    assert_eq!(streams, vec![1, 10]);
    for s in &p.steps {
        assert_eq!(
            s.plan.protocol.unix_socket.as_deref(),
            Some(std::path::Path::new("/run/app.sock"))
        );
    }
    let text = r#"
targets:
  api: {url: "http://127.0.0.1:8080"}
load: {requests: 100}
sweep:
  pipeline: [1, 16]
"#;
    let p = load_plan_text(text, "pipe.yaml", 2).unwrap();
    let depths: Vec<_> = p.steps.iter().map(|s| s.plan.protocol.pipeline).collect();
    assert_eq!(depths, vec![Some(1), Some(16)]);
    // A target's own socket.
    let text = r#"
targets:
  local: {url: "http://app.local", unix: /run/a.sock}
  tcp: {url: "http://127.0.0.1:8080"}
load: {requests: 100}
"#;
    let p = load_plan_text(text, "unix.yaml", 2).unwrap();
    let sockets: Vec<_> = p
        .steps
        .iter()
        .map(|s| (s.target.as_str(), s.plan.protocol.unix_socket.clone()))
        .collect();
    assert_eq!(
        sockets,
        vec![("local", Some("/run/a.sock".into())), ("tcp", None)]
    );
    // Launched on a socket: readiness must be said, the URL's port would never open.
    let text = r#"
targets:
  local: {url: "http://app.local", unix: /run/a.sock, launch: {command: ./app}}
"#;
    let e = load_plan_text(text, "unix.yaml", 2)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unix.yaml:3:") && e.contains("launch.ready"),
        "{e}"
    );
    // Streams without HTTP/2: refused, pointing at the sweep key.
    let text = r#"
targets:
  api: {url: "http://127.0.0.1:8080"}
load: {requests: 100}
sweep:
  streams: [4]
"#;
    let e = load_plan_text(text, "bad.yaml", 2).unwrap_err().to_string();
    assert!(e.contains("streams") && e.contains("--http2"), "{e}");
}

const SCENARIO: &str = "targets:\n  a: {url: 'http://127.0.0.1:8080'}\nscenario:\n  - request: {method: POST, url: /login, body: '{\"user\":\"{{csv user}}\"}'}\n";

#[test]
fn scenario_data_rows_cookies_and_ramps_reach_the_plan() {
    let temp = loadmark_test_support::TempDir::new("plan-data");
    let dir = temp.path().to_path_buf();
    std::fs::write(dir.join("users.csv"), "user\nann\nbob\n").unwrap();
    let load = |extra: &str| {
        let path = dir.join("p.yaml");
        std::fs::write(&path, format!("{SCENARIO}{extra}")).unwrap();
        crate::load_plan_file(&path, 2)
    };
    // The short form: per user in a scenario.
    let p = load("data: users.csv\nload: {users: 2, iterations: 10, cookies: true}\n").unwrap();
    let plan = &p.steps[0].plan;
    assert_eq!(plan.mix.per, crate::DataPer::User);
    assert_eq!(
        plan.mix.data.as_deref(),
        Some(dir.join("users.csv").as_path())
    );
    assert!(plan.cookies);
    let p = load("data: {file: users.csv, per: iteration}\nload: {stages: '1s:5,1s:0'}\n").unwrap();
    let plan = &p.steps[0].plan;
    assert_eq!(plan.mix.per, crate::DataPer::Iteration);
    assert!(!plan.cookies);
    match &plan.load {
        Load::Ramp { connections, .. } => assert_eq!(connections.peak(), 5.0),
        other => panic!("a ramp of users: {other:?}"),
    }
    // With iterations_per_second, stages are rates of iterations.
    let p = load("data: users.csv\nload: {iterations_per_second: 10, stages: '1s:20'}\n").unwrap();
    assert!(matches!(p.steps[0].plan.load, Load::Open { .. }));
    for (extra, says) in [
        ("data: {file: users.csv, pre: user}\n", "data"),
        (
            "data: users.csv\nload: {stages: '1s:5', iterations: 9}\n",
            "load.iterations",
        ),
    ] {
        let e = load(extra).unwrap_err().to_string();
        assert!(e.contains(says), "{extra}: {e}");
    }
    let e = load_plan_text(
        "targets:\n  a: {url: 'http://127.0.0.1:1'}\nload: {cookies: true}\n",
        "p.yaml",
        2,
    )
    .unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("has no `scenario:`"), "{e}");
}

#[test]
fn http2_fallback_in_a_plan_file_needs_http2() {
    let text = r#"
targets:
  api: {url: "https://127.0.0.1:8443"}
load: {http2: true, http2_fallback: true, stages: "1s:2->4"}
"#;
    let p = load_plan_text(text, "fb.yaml", 2).unwrap();
    let h2 = p.steps[0].plan.protocol.http2.unwrap();
    assert!(h2.fallback, "the option reaches the plan");
    let text = r#"
targets:
  api: {url: "https://127.0.0.1:8443"}
load: {requests: 100, http2_fallback: true}
"#;
    let e = load_plan_text(text, "fb.yaml", 2).unwrap_err().to_string();
    assert!(
        e.contains("--http2-fallback") && e.contains("add --http2"),
        "{e}"
    );
}
