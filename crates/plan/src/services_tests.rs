use crate::load_plan_text;

const STACKS: &str = r#"
services:
  db:
    command: db-server
    ready: {port: "127.0.0.1:5432"}
  backend:
    command: nginx -c backend.conf
    ready: {http: "http://127.0.0.1:9000/data.json"}
    depends_on: [db]
  cache:
    command: redis-server
    ready: {delay: 100ms}
targets:
  flask:
    url: http://127.0.0.1:8001/relay
    depends_on: [backend]
  node:
    url: http://127.0.0.1:8002/relay
    depends_on: [backend]
  static:
    url: http://127.0.0.1:8003/
load: {requests: 10}
sweep: {connections: [1, 10]}
"#;

#[test]
fn services_start_before_the_first_step_that_needs_them_and_stop_after_the_last() {
    let p = load_plan_text(STACKS, "stacks.yaml", 2).unwrap();
    let s = &p.services;
    let names: Vec<&str> = s.services.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["db", "backend", "cache"], "dependencies first");
    // cache: nobody depends on it, so every step needs it.
    assert_eq!(
        s.describe(p.steps.len()),
        [
            "start service db",
            "start service backend",
            "start service cache",
            "step 1",
            "step 2",
            "step 3",
            "step 4",
            "stop service backend",
            "stop service db",
            "step 5",
            "step 6",
            "stop service cache",
        ]
    );
    assert_eq!(s.needed[0], [0, 1, 2]);
    assert_eq!(s.needed[5], [2]);
}

#[test]
fn bad_dependencies_are_located_and_named() {
    let err = |text: &str| load_plan_text(text, "p.yaml", 2).unwrap_err().to_string();
    let e = err(
        "targets:\n  a:\n    url: http://127.0.0.1:1/\n    depends_on: [bakend]\nservices:\n  backend: {command: x, ready: {delay: 1s}}\n",
    );
    assert!(
        e.starts_with("p.yaml:4:5: targets.a.depends_on: no service named \"bakend\"; the services are backend"),
        "{e}"
    );
    let e = err("targets:\n  a: {url: 'http://127.0.0.1:1/'}\n  b:\n    url: http://127.0.0.1:2/\n    depends_on: [a]\n");
    assert!(
        e.contains("p.yaml:5:5: targets.b.depends_on: \"a\" is a target"),
        "{e}"
    );
    let e = err("targets:\n  a: {url: 'http://127.0.0.1:1/'}\nservices:\n  x:\n    command: x\n    ready: {delay: 1s}\n    depends_on: [y]\n  y:\n    command: y\n    ready: {delay: 1s}\n    depends_on: [x]\n");
    assert!(
        e.contains("p.yaml:7:5: services: depends_on goes round in a circle: x -> y -> x"),
        "{e}"
    );
    let e = err("targets:\n  a: {url: 'http://127.0.0.1:1/'}\nservices:\n  x:\n    command: x\n");
    assert!(
        e.contains("p.yaml:4:3: services.x.ready: a service has no URL to wait for"),
        "{e}"
    );
    let e = err("targets:\n  a: {url: 'http://127.0.0.1:1/'}\nservices:\n  x: {command: x, ready: {delay: 1s}, depend_on: []}\n");
    assert!(e.contains("did you mean `depends_on`?"), "{e}");
}
