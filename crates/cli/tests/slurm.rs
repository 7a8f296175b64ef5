//! `--slurm N` and `--segment` against a real Slurm cluster on loopback (munged, slurmctld,
//! three slurmd from Debian's packages) and the built-in target, which records every
//! request's sequence number and segment so ownership is checked from the server's side.
//!
//! One test function runs every scenario on one cluster: starting Slurm costs seconds, and
//! tests of one binary run in parallel threads that would otherwise start one each.

mod common;
mod slurm_cluster;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{loadmark, report_json, temp_dir};
use loadmark_metrics::{Distribution, Snapshot};
use slurm_cluster::SlurmCluster;

fn run_in(cluster: &SlurmCluster, args: &[&str]) -> Output {
    loadmark()
        .args(args)
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .unwrap()
}

/// `loadmark ARGS --slurm 3 -q --start-at +2s` on the cluster: a run split over three srun
/// tasks that start together two seconds on (time for srun to start them all).
fn split3(cluster: &SlurmCluster, args: &[&str]) -> Output {
    let mut all = args.to_vec();
    all.extend(["--slurm", "3", "-q", "--start-at", "+2s"]);
    run_in(cluster, &all)
}

/// `loadmark bench PLAN --slurm 3 -q --out OUT_DIR` on the cluster, which must succeed: its
/// output and the bundle it wrote.
fn bench_split3(
    cluster: &SlurmCluster,
    plan: &Path,
    out_dir: &Path,
) -> (Output, loadmark_report::Bundle) {
    let o = run_in(
        cluster,
        &[
            "bench",
            plan.to_str().unwrap(),
            "--slurm",
            "3",
            "-q",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let bundle =
        common::bundle_json(&std::fs::read_to_string(out_dir.join("bundle.json")).unwrap())
            .unwrap();
    (o, bundle)
}

fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Each sequence number once, sent by its owning segment (equal shares: `seq % 3`), and the
/// numbers are exactly `0..expected` when `prefix`.
fn check_tags(server: &loadmark_target::RunningServer, expected: u64, prefix: bool) {
    let tags = server.tags();
    assert_eq!(tags.len() as u64, expected, "requests seen by the server");
    let mut seen = BTreeMap::new();
    for t in &tags {
        let segment = t.segment.expect("every request names its segment");
        assert_eq!(
            segment as u64,
            t.seq % 3,
            "seq {} from segment {segment}",
            t.seq
        );
        assert!(seen.insert(t.seq, segment).is_none(), "seq {} twice", t.seq);
    }
    if prefix {
        assert_eq!(
            seen.keys().copied().collect::<Vec<_>>(),
            (0..expected).collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_run_split_over_three_slurm_tasks_is_exactly_the_single_machine_run() {
    let t0 = Instant::now();
    let dir = temp_dir("slurm", "split");
    let cluster = SlurmCluster::start(&dir);
    let server = common::target();
    server.record_tags();
    let url = format!("http://127.0.0.1:{}/status", server.local_addr().port());

    // Open loop, 300 req/s for 2 s, split 3 ways by srun: 600 requests, each once.
    let merged_path = dir.join("merged.json");
    let store = dir.join("history.sqlite");
    let o = split3(
        &cluster,
        &[
            "run",
            &url,
            "-R",
            "300",
            "-d",
            "2s",
            "--tag-requests",
            "-o",
            merged_path.to_str().unwrap(),
            // The results history (issue 38): the merged run is recorded once, by the
            // launcher, never a segment of it.
            "--record",
            "--tag",
            "split=slurm3",
            "--store",
            store.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    check_tags(&server, 600, true);
    let listed = run_in(
        &cluster,
        &[
            "history",
            "list",
            "--format",
            "json",
            "--store",
            store.to_str().unwrap(),
        ],
    );
    assert!(listed.status.success(), "{}", text(&listed));
    let runs: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let runs = runs.as_array().expect("a list of runs");
    assert_eq!(runs.len(), 1, "one merged run recorded: {runs:?}");
    assert_eq!(runs[0]["tags"]["split"], "slurm3", "{runs:?}");
    let merged = report_json(&std::fs::read_to_string(&merged_path).unwrap()).unwrap();
    assert_eq!(merged.summary.requests.responses, 600);
    let split = merged.split.as_ref().expect("a merged split");
    assert_eq!(split.parts.len(), 3);
    assert_eq!(
        split.parts.iter().map(|p| p.responses).sum::<u64>(),
        merged.summary.requests.responses
    );
    assert!(!split.partial);
    // The machine is shared and srun starts tasks within milliseconds of each other here;
    // the skew is measured against the agreed start, and 1 s would mean it was not honoured.
    assert!(split.max_skew_s < 1.0, "skew {}", split.max_skew_s);

    // The same run by hand under srun (--segment env), each segment to its own file: merged
    // percentiles are those of one histogram of all samples, and the merge does not depend
    // on the order of its inputs.
    let seg_dir = dir.join("segments");
    std::fs::create_dir_all(&seg_dir).unwrap();
    let start = (std::time::SystemTime::now() + Duration::from_secs(3))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let start = loadmark_report::rfc3339(std::time::UNIX_EPOCH + Duration::from_secs(start));
    let script = format!(
        "exec {} run {url} -R 300 -d 2s --segment env --start-at {start} --run-id byhand -q --format json -o {}/seg$SLURM_PROCID.json > /dev/null",
        env!("CARGO_BIN_EXE_loadmark"),
        seg_dir.display()
    );
    let o = Command::new("srun")
        .args([
            "--ntasks=3",
            "--spread-job",
            "--kill-on-bad-exit=1",
            "sh",
            "-c",
            &script,
        ])
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let files: Vec<String> = (0..3)
        .map(|i| seg_dir.join(format!("seg{i}.json")).display().to_string())
        .collect();
    let mut all = Snapshot::default();
    for f in &files {
        let r = report_json(&std::fs::read_to_string(f).unwrap()).unwrap();
        assert_eq!(r.split.as_ref().unwrap().run_id, "byhand");
        all.merge(&r.totals);
    }
    let merge = |order: &[usize], out: &str| {
        let out = seg_dir.join(out);
        let mut args: Vec<String> = vec!["merge".into()];
        args.extend(order.iter().map(|&i| files[i].clone()));
        args.extend(["-o".into(), out.display().to_string()]);
        let o = loadmark().args(&args).output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        std::fs::read(out).unwrap()
    };
    let a = merge(&[0, 1, 2], "a.json");
    let b = merge(&[2, 0, 1], "b.json");
    assert_eq!(a, b, "merge in any order is byte-identical");
    let merged = report_json(std::str::from_utf8(&a).unwrap()).unwrap();
    assert_eq!(merged.summary.requests.responses, 600);
    for p in [50.0, 90.0, 99.0, 99.9] {
        assert_eq!(
            merged.summary.latency.percentile(p),
            Distribution::of(&all.latency).percentile(p),
            "p{p}"
        );
    }
    // A missing segment is refused by name (exit 2).
    let o = loadmark()
        .args(["merge", &files[0], &files[2]])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("missing segment 1"), "{}", text(&o));

    // An impossible threshold is checked on the merged result: exit 3.
    let o = split3(
        &cluster,
        &[
            "run",
            &url,
            "-R",
            "60",
            "-d",
            "1s",
            "--threshold",
            "p99<1us",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));

    // Closed loop: -c 6 -n 600 split 3 ways: 200 each, every number once and owned.
    let server2 = common::target();
    server2.record_tags();
    let url2 = format!("http://127.0.0.1:{}/status", server2.local_addr().port());
    let o = split3(
        &cluster,
        &[
            "run",
            &url2,
            "-c",
            "6",
            "-n",
            "600",
            "--tag-requests",
            "--format",
            "json",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    check_tags(&server2, 600, false);
    let merged = report_json(&String::from_utf8_lossy(&o.stdout)).unwrap();
    let parts = &merged.split.as_ref().unwrap().parts;
    assert_eq!(
        parts.iter().map(|p| p.responses).collect::<Vec<_>>(),
        [200, 200, 200]
    );

    // bench --slurm: every step of a plan split 3 ways and merged; -n 300 per step.
    let server3 = common::target();
    let plan = dir.join("split-plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "name: steps split over Slurm\ntargets:\n  t: {{url: \"http://127.0.0.1:{}/status\"}}\n\
             load: {{requests: 300}}\nsweep: {{connections: [3, 6]}}\n",
            server3.local_addr().port()
        ),
    )
    .unwrap();
    let out_dir = dir.join("bench-out");
    let (o, bundle) = bench_split3(&cluster, &plan, &out_dir);
    assert_eq!(server3.requests_served(), 600, "{}", text(&o));
    assert_eq!(bundle.steps.len(), 2);
    for step in &bundle.steps {
        assert_eq!(step.report.summary.requests.responses, 300);
        let parts = &step.report.split.as_ref().expect("a merged step").parts;
        assert_eq!(
            parts.iter().map(|p| p.responses).collect::<Vec<_>>(),
            [100, 100, 100],
            "step {}",
            step.number
        );
    }

    // WebSocket: 3 sessions, 90 messages, split 3 ways.
    let ws_url = format!("ws://127.0.0.1:{}/ws/echo", server2.local_addr().port());
    let sessions_before = server2.ws_sessions();
    let o = split3(
        &cluster,
        &[
            "ws", &ws_url, "-c", "3", "-n", "90", "-i", "10ms", "--format", "json",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let merged = report_json(&String::from_utf8_lossy(&o.stdout)).unwrap();
    assert_eq!(
        server2.ws_sessions() - sessions_before,
        3,
        "one session per segment"
    );
    assert_eq!(server2.ws_messages_received(), 90);
    assert_eq!(merged.summary.requests.responses, 90);

    // A worker killed mid-run: the run fails and names the missing segment.
    let run_id = format!("killed-{}", std::process::id());
    let child = loadmark()
        .args([
            "run",
            &url,
            "-R",
            "50",
            "-d",
            "6s",
            "--slurm",
            "3",
            "-q",
            "--start-at",
            "+1s",
            "--run-id",
            &run_id,
        ])
        .env("SLURM_CONF", &cluster.conf)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let victim = wait_for_worker(&run_id, 1, Duration::from_secs(30));
    // SAFETY: kill(2) on the PID of the worker process found just now by its run id.
    unsafe {
        libc::kill(victim, libc::SIGKILL);
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    // Slurm then ends the other tasks (--kill-on-bad-exit: SIGTERM, SIGKILL after KillWait);
    // on a loaded machine one may be killed before its result is out, and is named too.
    let all = text(&o);
    let missing: Vec<&str> = all
        .split_once("missing segment")
        .map(|(_, rest)| rest.trim_start_matches('s').trim_start())
        .and_then(|rest| rest.split(" (").next())
        .map(|list| list.split(", ").collect())
        .unwrap_or_default();
    assert!(missing.contains(&"1"), "{all}");

    // Ctrl-C on the launcher: srun is told to stop the step, every task reports what it
    // measured, and the merged report says the run was interrupted (exit 130).
    let run_id = format!("interrupted-{}", std::process::id());
    let child = loadmark()
        .args([
            "run",
            &url,
            "-R",
            "50",
            "-d",
            "30s",
            "--slurm",
            "3",
            "-q",
            "--start-at",
            "+1s",
            "--run-id",
            &run_id,
            "--format",
            "json",
        ])
        .env("SLURM_CONF", &cluster.conf)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for task in 0..3 {
        wait_for_worker(&run_id, task, Duration::from_secs(30));
    }
    // Interrupt once load flows (every worker is past its start line, its handlers set).
    let served = server.requests_served();
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests_served() < served + 30 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupted_at = Instant::now();
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(
        interrupted_at.elapsed() < Duration::from_secs(20),
        "stopped well before 30 s"
    );
    let merged = report_json(&String::from_utf8_lossy(&o.stdout)).unwrap();
    assert!(merged.run.interrupted, "{}", text(&o));
    assert_eq!(
        merged.split.as_ref().unwrap().parts.len(),
        3,
        "{}",
        text(&o)
    );

    find_drives_every_task(&cluster);
    grpc_splits_like_http(&cluster, &dir);

    drop(cluster);
    // Generous: 7 srun runs of 1-6 s each, a capacity search of about 7 runs over srun, and
    // a cluster start, on a shared 2-core machine.
    assert!(
        t0.elapsed() < Duration::from_secs(180),
        "{:?}",
        t0.elapsed()
    );
}

/// `find --slurm 2` against a server of known capacity (1,000 req/s, 503 past a 50 ms queue):
/// the capacity is within ±5%, and every run of the search was split over both tasks: the
/// server saw, in each run (its requests numbered from 0 again), both segments' requests in
/// about equal shares (segment s sends the numbers ≡ s mod 2).
fn find_drives_every_task(cluster: &SlurmCluster) {
    let t0 = Instant::now();
    let cap = 1000.0;
    let server = loadmark_target::start(loadmark_target::ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        capacity: Some(loadmark_target::Capacity {
            rate: cap,
            queue: Duration::from_millis(50),
        }),
        ..Default::default()
    })
    .unwrap();
    server.record_tags();
    let url = format!("http://{}/status", server.local_addr());
    let o = run_in(
        cluster,
        &[
            "find",
            &url,
            "--slurm",
            "2",
            "--tag-requests",
            "--start-at",
            "+1s",
            "--json",
            "-q",
            "--slo",
            "p99 < 500ms",
            "--slo",
            "failed < 1%",
            "--from",
            "900",
            "--factor",
            "1.25",
            "--precision",
            "3",
            "--repeats",
            "1",
            "--hold",
            "1s",
            "--step-warmup",
            "0s",
            "--cooldown",
            "250ms",
            "--timeout",
            "2s",
            "-t",
            "1",
        ],
    );
    let r = loadmark_report::CapacityResult::from_json(&String::from_utf8_lossy(&o.stdout))
        .unwrap_or_else(|e| panic!("{e}\n{}", text(&o)));
    let table = loadmark_report::render_capacity_text(&r);
    assert_eq!(o.status.code(), Some(0), "{table}\n{}", text(&o));
    let c = r.capacity.expect("a capacity");
    assert!((c - cap).abs() <= cap * 0.05, "{c} vs {cap}\n{table}");
    let tags = server.tags();
    server.shutdown();
    // Runs follow each other (a cooldown between): each begins with its number 0.
    let mut runs: Vec<[u64; 2]> = Vec::new();
    for t in &tags {
        if t.seq == 0 {
            runs.push([0, 0]);
        }
        let segment = t.segment.expect("every request names its segment") as usize;
        assert_eq!(
            segment as u64,
            t.seq % 2,
            "seq {} from segment {segment}",
            t.seq
        );
        if let Some(run) = runs.last_mut() {
            run[segment] += 1;
        }
    }
    assert_eq!(runs.len(), r.curve.len(), "one srun run per step\n{table}");
    for (run, point) in runs.iter().zip(&r.curve) {
        let all = (run[0] + run[1]) as f64;
        assert!(all >= point.offered * 0.5, "{run:?} at {}/s", point.offered);
        for n in run {
            assert!(
                *n as f64 >= all * 0.4,
                "{run:?}: both tasks sent load\n{table}"
            );
        }
    }
    eprintln!("find --slurm 2: {} runs in {:?}", runs.len(), t0.elapsed());
}

/// The PID of the worker of segment `task` of run `run_id`, found in /proc by its command
/// line and Slurm environment.
fn wait_for_worker(run_id: &str, task: u32, limit: Duration) -> libc::pid_t {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<libc::pid_t>() else {
                continue;
            };
            let dir = Path::new("/proc").join(pid.to_string());
            let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
            let is_worker = args.contains(&&b"worker"[..]) && args.contains(&run_id.as_bytes());
            if !is_worker {
                continue;
            }
            let env = std::fs::read(dir.join("environ")).unwrap_or_default();
            let want = format!("SLURM_PROCID={task}");
            if env.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
                return pid;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no worker of segment {task} of {run_id} appeared");
}

/// `loadmark grpc --slurm 3` (issue 36): the built-in target's unary echo, a message templated
/// per call, 150 calls a second for 2 s over three srun tasks, each of which encodes its calls
/// with the schema the plan carries. The target served each of the 300 calls once and the
/// merged report counts 300 OK, three parts.
fn grpc_splits_like_http(cluster: &SlurmCluster, dir: &Path) {
    let server = common::target_h2();
    let addr = server.local_addr().to_string();
    let out = dir.join("grpc-merged.json");
    let o = split3(
        cluster,
        &[
            "grpc",
            &addr,
            "--call",
            "loadmark.target.Target/Echo",
            "--data",
            r#"{"text":"call {{seq}}"}"#,
            "-R",
            "150",
            "-d",
            "2s",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(server.grpc_calls(), 300, "calls the target served");
    let merged = report_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(merged.summary.requests.responses, 300, "{}", text(&o));
    assert_eq!(merged.summary.requests.errors, 0, "{}", text(&o));
    assert_eq!(merged.split.as_ref().unwrap().parts.len(), 3);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let codes = &json["totals"]["grpc"]["codes"];
    assert_eq!(codes[0]["name"], "OK", "{codes}");
    assert_eq!(codes[0]["count"], 300, "{codes}");

    // A plan's gRPC scenario step under `bench --slurm 3`: the schema comes from the target's
    // reflection in this process and goes to the tasks in the plan; each encodes its calls.
    let before = server.grpc_calls();
    let plan = dir.join("grpc-plan.yaml");
    let yaml = r#"
targets:
  t: {url: 'http://ADDR'}
scenario:
  - name: hello
    grpc:
      call: loadmark.target.Target/Echo
      message: '{"text":"u{{seq}}"}'
    check: [grpc-status == OK, 'body matches "^\{\"text\":\"u[0-9]+\"\}$"']
load: {users: 3, iterations: 30}
"#;
    std::fs::write(&plan, yaml.replace("ADDR", &addr)).unwrap();
    let out_dir = dir.join("grpc-bench-out");
    let (o, bundle) = bench_split3(cluster, &plan, &out_dir);
    assert_eq!(server.grpc_calls() - before, 30, "{}", text(&o));
    let report = &bundle.steps[0].report;
    let scenario = report.summary.scenario.as_ref().unwrap();
    assert_eq!((scenario.iterations, scenario.aborted), (30, 0));
    let hello = &scenario.steps[0];
    assert_eq!(
        (hello.responses, hello.checks_passed, hello.checks_failed),
        (30, 60, 0)
    );
    assert_eq!(report.split.as_ref().unwrap().parts.len(), 3);
}
