use super::*;
use crate::{load_plan_text, Load, Stop};

const BZT: &str = r#"execution:
- concurrency: 4
  ramp-up: 1s
  hold-for: 2s
  scenario: api

scenarios:
  api:
    default-address: http://127.0.0.1:8080
    headers:
      X-Client: taurus
    timeout: 5s
    keepalive: true
    requests:
    - url: /json
      headers: {Accept: application/json}
    - url: /echo
      method: post
      body: '{"a":1}'
"#;

#[test]
fn the_http_subset_becomes_a_native_plan() {
    assert!(is_taurus(BZT) && !is_taurus("targets: {}\nexecution: 1\n"));
    let p = load_plan_text(BZT, "bzt.yml", 2).unwrap();
    assert_eq!(p.steps.len(), 1);
    let plan = &p.steps[0].plan;
    assert_eq!(plan.request.url.as_str(), "http://127.0.0.1:8080/json");
    assert!(plan
        .request
        .headers
        .contains(&("X-Client".into(), "taurus".into())));
    assert!(plan
        .request
        .headers
        .contains(&("Accept".into(), "application/json".into())));
    let (w, echo) = &plan.mix.others[0];
    assert_eq!((*w, plan.mix.weight), (1, 1), "equal weights");
    assert_eq!(
        (echo.method.as_str(), echo.body.as_slice()),
        ("POST", &br#"{"a":1}"#[..])
    );
    assert!(
        matches!(&plan.load, Load::Ramp { connections, .. } if connections.to_text() == "1s:1->4,2s:4->4"),
        "{:?}",
        plan.load
    );
    assert_eq!(plan.timeouts.request, std::time::Duration::from_secs(5));
    // --explain prints this, and it loads as a native plan with the same steps.
    let native = serde_norway::to_string(&p.file).unwrap();
    let again = load_plan_text(&native, "explained.yaml", 2).unwrap();
    assert_eq!(again.steps[0].plan, p.steps[0].plan);
}

#[test]
fn iterations_and_throughput_map_to_counts_and_rates() {
    let text = "execution:\n  concurrency: 3\n  iterations: 10\n  scenario:\n    requests: ['http://127.0.0.1:9/a', 'http://127.0.0.1:9/b']\n";
    let p = load_plan_text(text, "b.yml", 2).unwrap();
    assert_eq!(
        p.steps[0].plan.stop,
        Stop::Requests(60),
        "10 iterations × 3 users × 2 requests"
    );
    let text = "execution:\n  concurrency: 20\n  throughput: 500\n  hold-for: 30\n  scenario:\n    requests: ['http://127.0.0.1:9/a']\n";
    let p = load_plan_text(text, "b.yml", 2).unwrap();
    match &p.steps[0].plan.load {
        Load::Open {
            rate,
            max_connections,
            ..
        } => {
            assert_eq!((rate.peak(), *max_connections), (500.0, 20));
            assert_eq!(rate.duration(), std::time::Duration::from_secs(30));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn what_loadmark_cannot_honour_is_refused_where_it_is_written() {
    let err = |text: &str| load_plan_text(text, "bzt.yml", 2).unwrap_err().to_string();
    let e = err("execution:\n- concurrency: 10\n  hold-for: 1m\n  executor: locust\n  scenario: s\nscenarios:\n  s:\n    requests: ['http://127.0.0.1:1/']\n");
    assert!(
        e.starts_with("bzt.yml:4:3: execution.executor: \"locust\" is another tool's executor"),
        "{e}"
    );
    let e = err("execution:\n- executor: selenium\n  scenario: s\n");
    assert!(
        e.starts_with("bzt.yml:2:3: execution.executor: \"selenium\""),
        "{e}"
    );
    let e = err("execution:\n- concurrency: 1\n  hold-for: 1s\n  scenario: s\nscenarios:\n  s:\n    script: test.jmx\n");
    assert!(
        e.starts_with("bzt.yml:7:5: scenarios.s.script: a JMeter or Selenium script"),
        "{e}"
    );
    let e = err("execution:\n- concurrency: 1\n  hold-for: 1s\n  scenario: s\nscenarios:\n  s:\n    requests:\n    - url: http://127.0.0.1:1/\n      extract-jsonpath: {id: $.id}\n");
    assert!(
        e.contains("bzt.yml:9:7:")
            && e.contains("extract-jsonpath is not something loadmark can honour"),
        "{e}"
    );
    let e = err("execution:\n- concurrency: 1\n  hold-for: 1s\n  scenario: nope\n");
    assert!(
        e.starts_with("bzt.yml:4:3: execution.scenario: no scenario named \"nope\""),
        "{e}"
    );
}

#[test]
fn overrides_set_keys_in_lists_and_mappings() {
    let text = apply_overrides(
        BZT,
        &[
            "execution.concurrency=600".into(),
            "execution.0.hold-for=10s".into(),
        ],
    )
    .unwrap();
    let p = load_plan_text(&text, "bzt.yml", 2).unwrap();
    assert!(
        matches!(&p.steps[0].plan.load, Load::Ramp { connections, .. } if connections.to_text() == "1s:1->600,10s:600->600"),
        "{:?}",
        p.steps[0].plan.load
    );
    let native = "targets:\n  a: {url: 'http://127.0.0.1:1/'}\nload: {connections: 2}\n";
    let text = apply_overrides(
        native,
        &["load.connections=8".into(), "load.requests=100".into()],
    )
    .unwrap();
    let p = load_plan_text(&text, "p.yaml", 2).unwrap();
    assert_eq!(p.steps[0].plan.stop, Stop::Requests(100));
    assert!(matches!(
        p.steps[0].plan.load,
        Load::Closed { connections: 8, .. }
    ));
    assert!(apply_overrides(native, &["load".into()])
        .unwrap_err()
        .contains("expected KEY=VALUE"));
    assert!(apply_overrides(BZT, &["execution.3.concurrency=1".into()])
        .unwrap_err()
        .contains("item 3 does not exist"));
}
