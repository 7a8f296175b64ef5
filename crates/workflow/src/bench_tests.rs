//! Tests of running a plan's steps: the pure parts (names, bundle header, error kinds), and
//! whole plans against the built-in target on loopback with a service the plan launches.

use super::*;
use crate::Observer;
use loadmark_engine::{Progress, RunResult};
use loadmark_report::{RunFacts, ServiceUsage};

/// A one-step plan against `url` (a closed loop of 10 requests).
pub(crate) fn plan_for(url: &str) -> Plan {
    let text = format!("targets:\n  t: {{url: '{url}'}}\nload: {{requests: 10}}\n");
    let loaded = loadmark_plan::load_plan_text(&text, "t.yaml", 2).expect("a valid plan");
    loaded.steps[0].plan.clone()
}

fn options(plan_file: &str, log_dir: PathBuf) -> BenchOptions {
    BenchOptions {
        plan_file: plan_file.into(),
        show_secrets: false,
        columns: Vec::new(),
        style: None,
        log_dir,
        exe: None,
        slurm: None,
        environment: Environment::detect(),
        stop: StopHandle::new(),
    }
}

/// Records what it hears, as a caller would print it, and builds reports as the binary does.
#[derive(Default)]
struct Recorder {
    events: Vec<String>,
    progress_calls: usize,
    runs: usize,
}

impl Observer for Recorder {
    fn event(&mut self, event: &Event<'_>) {
        self.events.push(match event {
            Event::StepDone { number, report } => {
                format!(
                    "step {number} done: {} responses",
                    report.summary.requests.responses
                )
            }
            Event::StepBegins { number, total, .. } => format!("step {number}/{total}"),
            Event::ServiceStarting { name, .. } => format!("start service {name}"),
            Event::ServiceStopping { name } => format!("stop service {name}"),
            Event::StepSkipped { note } => format!("skipped: {note}"),
            Event::StepNote { number, note } => format!("step {number} note: {note}"),
            other => format!("{other:?}"),
        });
    }
}

impl Host for Recorder {
    fn step_begins(&mut self, _: &Plan, _: usize, _: usize) -> Result<(), HostError> {
        Ok(())
    }
    fn run_begins(&mut self, _: &Plan) {
        self.runs += 1;
    }
    fn progress(&mut self, _: &Progress<'_>) {
        self.progress_calls += 1;
    }
    fn run_ends(&mut self) {}
    fn report(&mut self, plan: &Plan, result: RunResult) -> Report {
        let facts = RunFacts {
            started_at: result.started_at,
            elapsed: result.elapsed,
            measured: result.measured,
            interrupted: result.interrupted,
            client_cpu_user: result.client_cpu.user,
            client_cpu_system: result.client_cpu.system,
            busiest_worker: result.busiest_worker,
            target_addr: result.addr.to_string(),
            contention: None,
        };
        Report::new(plan, &facts, result.totals, Environment::detect())
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "loadmark-workflow-bench-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn server() -> loadmark_target::RunningServer {
    loadmark_target::start(loadmark_target::ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        ..Default::default()
    })
    .expect("the built-in target starts")
}

#[test]
fn a_step_is_named_by_its_swept_values_else_by_its_target() {
    let text = "targets:\n  api: {url: 'http://127.0.0.1:1/'}\nload: {requests: 1}\nsweep: {connections: [1, 2]}\n";
    let loaded = loadmark_plan::load_plan_text(text, "p.yaml", 2).unwrap();
    assert_eq!(step_name(&loaded.steps[1]), "connections=2");
    let mut step = loaded.steps[0].clone();
    step.params.clear();
    assert_eq!(step_name(&step), "api");
}

#[test]
fn an_attached_server_is_named_by_what_finds_it() {
    let mut a = AttachFile {
        pid: None,
        process: None,
        socket: None,
        port: None,
    };
    assert_eq!(attach_text(&a), "");
    a.port = Some(8080);
    assert_eq!(attach_text(&a), "the listener of port 8080");
    a.socket = Some("/run/app.sock".into());
    assert_eq!(attach_text(&a), "the listener of /run/app.sock");
    a.process = Some("nginx".into());
    assert_eq!(attach_text(&a), "process nginx");
    a.pid = Some(42);
    assert_eq!(attach_text(&a), "pid 42");
}

#[test]
fn the_bundle_header_redacts_secrets_and_takes_the_callers_columns() {
    let text = "name: n\ntargets:\n  api:\n    url: 'http://127.0.0.1:1/'\n    headers: {Authorization: 'Bearer s3cret'}\nload: {requests: 1}\nreport: {columns: [rps]}\n";
    let loaded = loadmark_plan::load_plan_text(text, "p.yaml", 2).unwrap();
    let mut o = options("plans/p.yaml", PathBuf::from("logs"));
    let b = bundle_of(&loaded, &o);
    assert_eq!(b.plan_file, "plans/p.yaml");
    assert_eq!(b.name.as_deref(), Some("n"));
    assert!(!b.plan_text.contains("s3cret"), "{}", b.plan_text);
    assert_eq!(b.columns, loaded.file.report.columns);
    assert_eq!(b.targets.len(), 1);
    assert!(b.steps.is_empty() && !b.interrupted);
    o.show_secrets = true;
    o.columns = vec![Column::parse("p99").unwrap()];
    let b = bundle_of(&loaded, &o);
    assert!(b.plan_text.contains("s3cret"));
    assert_eq!(b.columns, o.columns);
    let step = &loaded.steps[0].plan;
    assert!(!command_of(step, false, &[]).contains("s3cret"));
    assert!(command_of(step, true, &["p99<1s".into()]).contains("s3cret"));
}

#[test]
fn an_invalid_step_plan_is_the_users_error_and_a_stop_failure_is_not() {
    let e = BenchError::Run(EngineError::Plan(loadmark_plan::PlanError::Invalid {
        field: "connections",
        value: "0".into(),
        expected: "at least 1",
    }));
    assert!(e.is_usage() && crate::is_usage(&e));
    let e = BenchError::Run(EngineError::Tls("no roots".into()));
    assert!(!e.is_usage());
    let e = BenchError::Slurm {
        step: 1,
        tasks: 0,
        source: SlurmError::NoTasks,
    };
    assert!(e.is_usage());
    assert_eq!(
        std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source())
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [
            "step 1 over 0 Slurm tasks",
            "--slurm: expected a number of tasks, at least 1"
        ]
    );
}

#[test]
fn every_step_of_a_sweep_runs_and_the_server_counts_each_request() {
    let target = server();
    let addr = target.local_addr();
    let text = format!(
        "targets:\n  api: {{url: 'http://{addr}/'}}\nload: {{requests: 40}}\nsweep: {{connections: [1, 4]}}\n"
    );
    let loaded = loadmark_plan::load_plan_text(&text, "p.yaml", 2).unwrap();
    let mut host = Recorder::default();
    let o = options("p.yaml", scratch("sweep"));
    let bundle = run_steps(&loaded, &o, &mut host).unwrap();
    assert_eq!(bundle.steps.len(), 2);
    assert!(!bundle.interrupted && bundle.notes.is_empty());
    let answered: u64 = bundle
        .steps
        .iter()
        .map(|s| s.report.summary.requests.responses)
        .sum();
    assert_eq!(answered, 80);
    assert_eq!(target.requests_served(), 80);
    assert_eq!(host.runs, 2);
    assert_eq!(
        host.events,
        [
            "step 1/2",
            "step 1 done: 40 responses",
            "step 2/2",
            "step 2 done: 40 responses"
        ]
    );
    assert_eq!(
        bundle.steps[1].params,
        [("connections".to_string(), "4".to_string())]
    );
    target.shutdown();
}

#[test]
fn a_stop_asked_before_the_first_step_runs_nothing() {
    let loaded = loadmark_plan::load_plan_text(
        "targets:\n  api: {url: 'http://127.0.0.1:1/'}\nload: {requests: 1}\n",
        "p.yaml",
        2,
    )
    .unwrap();
    let o = options("p.yaml", scratch("stopped"));
    o.stop.stop();
    let mut host = Recorder::default();
    let bundle = run_steps(&loaded, &o, &mut host).unwrap();
    assert!(bundle.interrupted && bundle.steps.is_empty());
    assert!(host.events.is_empty(), "{:?}", host.events);
}

#[test]
fn a_service_is_kept_up_around_its_steps_and_one_that_dies_skips_the_next() {
    let target = server();
    let addr = target.local_addr();
    let logs = scratch("services");
    // The service dies a little after the first step starts (which lasts a second): the
    // first step carries a note, the second does not run.
    let text = format!(
        "services:\n  cache:\n    command: \"echo cache up; sleep 0.3; echo 'cache: out of memory'; exit 3\"\n    ready: {{delay: 0s}}\ntargets:\n  api:\n    url: 'http://{addr}/'\n    depends_on: [cache]\nload: {{duration: 1s, connections: 1}}\nsweep: {{connections: [1, 2]}}\nmonitor: {{interval: 100ms}}\n"
    );
    let loaded = loadmark_plan::load_plan_text(&text, "p.yaml", 2).unwrap();
    let mut host = Recorder::default();
    let bundle = run_steps(&loaded, &options("p.yaml", logs.clone()), &mut host).unwrap();
    assert_eq!(bundle.steps.len(), 1, "{:?}", host.events);
    let note = &bundle.steps[0].notes[0];
    assert!(
        note.starts_with("service cache (pid ")
            && note.contains("exited with status 3 during this step")
            && note.contains("cache: out of memory"),
        "{note}"
    );
    assert_eq!(bundle.notes.len(), 1);
    assert!(
        bundle.notes[0].starts_with("Step 2 (connections=2) did not run: service cache"),
        "{}",
        bundle.notes[0]
    );
    assert_eq!(host.events[0], "start service cache");
    assert!(host.events.iter().any(|e| e.starts_with("skipped: Step 2")));
    assert!(logs.join("cache.log").exists());
    let _: &[ServiceUsage] = &bundle.steps[0].services;
    target.shutdown();
}
