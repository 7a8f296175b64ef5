//! gRPC steps in scenarios (issue 36), run by `loadmark bench` against the built-in target's
//! gRPC service (in this process, so its exact counters can be read): a value extracted from
//! a unary reply feeds a later gRPC step and an HTTP step, checks on a reply's field and on
//! its `grpc-status` count as the target answered, a failing status is a failed check, and
//! a step naming no method of the schema, or a message that is no JSON of its input, is
//! refused before any call.

mod common;

use common::*;

use std::path::Path;
use std::process::Output;

use loadmark_report::{Bundle, StepSummary};

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

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn step<'a>(steps: &'a [StepSummary], name: &str) -> &'a StepSummary {
    steps.iter().find(|s| s.name == name).unwrap()
}

const JOURNEY: &str = r#"
scenario:
  - name: hello
    grpc:
      call: loadmark.target.Target/Echo
      message: '{"text":"u{{seq}}","seq":204}'
      metadata: {x-user: 'u{{seq}}'}
    extract: {said: json /text, code: json /seq}
    check: [grpc-status == OK, 'json /seq == "204"']
  - name: again
    grpc:
      call: loadmark.target.Target.Echo
      message: '{"text":"{{said}}-again"}'
    check: ['body matches "^\{\"text\":\"u[0-9]+-again\"\}$"', grpc_status != UNAVAILABLE]
  - name: status
    request: {url: '/status/{{code}}'}
    check: [status == 204]
  - name: down
    grpc:
      call: loadmark.target.Target/Fail
      message: '{"code":14,"message":"down now"}'
    check: ['up: grpc-status == OK']
load:
  users: 2
  iterations: 10
"#;

#[test]
fn a_journey_of_grpc_and_http_steps_extracts_checks_and_counts_as_the_target_served() {
    let server = target_h2();
    let dir = temp_dir("grpc_scenario", "journey");
    let plan = format!(
        "targets:\n  t: {{url: 'http://{}'}}\n{JOURNEY}",
        server.local_addr()
    );
    let (out, bundle) = bench(dir.path(), &plan);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = &bundle.unwrap().steps[0].report;
    let scenario = report.summary.scenario.as_ref().unwrap();
    assert_eq!((scenario.iterations, scenario.aborted), (10, 0));
    let steps = &scenario.steps;
    for name in ["hello", "again", "status", "down"] {
        let s = step(steps, name);
        assert_eq!((s.requests, s.responses), (10, 10), "{name}: {s:?}");
    }
    // The extracted text went into the next message, the number into the HTTP step's URL.
    assert_eq!(step(steps, "hello").checks_passed, 20);
    assert_eq!(step(steps, "again").checks_passed, 20);
    assert_eq!(step(steps, "status").checks_passed, 10);
    // UNAVAILABLE is no OK: each call a failed check, none passed.
    let down = step(steps, "down");
    assert_eq!((down.checks_passed, down.checks_failed), (0, 10));
    // The calls as the target counted them, by status as the report counts them.
    assert_eq!(server.grpc_calls(), 30);
    assert_eq!(server.grpc_messages_received(), 30);
    let json = serde_json::to_value(report).unwrap();
    let codes: Vec<(String, u64)> = json["totals"]["grpc"]["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        [("OK".to_string(), 20), ("UNAVAILABLE".to_string(), 10)]
    );
    assert_eq!(
        json["totals"]["grpc"]["codes"][1]["first_message"],
        "down now"
    );
    let checks = report.summary.checks.as_ref().unwrap();
    let up = checks.checks.iter().find(|c| c.name == "up").unwrap();
    assert_eq!((up.passed, up.failed), (0, 10), "{up:?}");
    assert!(
        up.first_failure
            .as_deref()
            .unwrap_or("")
            .contains("grpc-status UNAVAILABLE (down now)"),
        "{up:?}"
    );
    server.shutdown();
}

#[test]
fn a_step_naming_no_method_or_with_a_message_the_method_cannot_take_is_refused_before_any_call() {
    let server = target_h2();
    let dir = temp_dir("grpc_scenario", "refused");
    let head = format!("targets:\n  t: {{url: 'http://{}'}}\n", server.local_addr());
    for (from, to, line, says) in [
        (
            "Target/Fail",
            "Target/Nope",
            20,
            "service loadmark.target.Target has no method \"Nope\"; its methods: Chat, Collect, Echo, Fail, Stream",
        ),
        (
            r#""seq":204}'"#,
            r#""seqq":204}'"#,
            5,
            "unrecognized field name 'seqq'",
        ),
        (r#""seq":204}'"#, r#""seq":204'"#, 5, "EOF while parsing"),
        ("Target/Fail", "Target/Stream", 20, "a streaming method"),
    ] {
        let journey = JOURNEY.replacen(from, to, 1);
        assert_ne!(journey, JOURNEY, "{to}");
        let (out, bundle) = bench(dir.path(), &format!("{head}{journey}"));
        assert_eq!(out.status.code(), Some(2), "{to}: {}", stderr(&out));
        assert!(bundle.is_none());
        let err = stderr(&out);
        assert!(
            err.contains(&format!("plan.yaml:{line}:5: scenario step")),
            "{err}"
        );
        assert!(err.contains(says), "{to}: {err}");
    }
    // A grpc-status check on an HTTP step, a call that is no method's name: the plan's own
    // errors, with their place.
    for (journey, says) in [
        (
            JOURNEY.replacen("check: [status == 204]", "check: [grpc-status == OK]", 1),
            "reads a gRPC call's status; this step is no `grpc:` call",
        ),
        (
            JOURNEY.replacen("loadmark.target.Target/Fail", "Fail", 1),
            "expected package.Service/Method",
        ),
    ] {
        let (out, _) = bench(dir.path(), &format!("{head}{journey}"));
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("plan.yaml:"), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    // Over https:// ALPN chooses one protocol for the journey: a gRPC step needs h2.
    let tls = format!(
        "targets:\n  t: {{url: 'https://{}'}}\n{JOURNEY}",
        server.local_addr()
    );
    let (out, _) = bench(dir.path(), &tls);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("plan.yaml:5:5: scenario step 1: a `grpc:` call speaks HTTP/2"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.grpc_calls(), 0, "no call before the refusals");
    // `loadmark schema plan` describes the step and the plan's schema section.
    let schema = loadmark().args(["schema", "plan"]).output().unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    let step = &schema["$defs"]["StepGrpcFile"]["properties"];
    assert!(
        step["call"].is_object() && step["message"].is_object(),
        "{schema}"
    );
    assert!(schema["properties"]["grpc"].is_object(), "{schema}");
    server.shutdown();
}
