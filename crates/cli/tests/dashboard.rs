//! The live web dashboard (`--dashboard`): real Chromium pages (Debian's, driven by
//! playwright-core, installed by .ci/run) watch a run and a bench, and end at the report's
//! own totals; a stuck viewer cannot hold the run; a taken address is refused before load.
//! The streamed result and the OpenMetrics endpoint are in tests/live.rs.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{loadmark, report_json, target, temp_dir, Daemon};

/// How long a run stopped by SIGINT may take to end and write its report: it ends at once
/// when idle; a busy two-core machine can stall it for seconds.
const STOP_PATIENCE: Duration = Duration::from_secs(60);

/// One browser test at a time (taken before its run starts, since a page must see the run
/// live): two Chromiums with their pages, beside debug builds of loadmark on a busy two-core
/// machine, missed the pages' 90 s wait for a first tick.
static BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn spawn(name: &str, args: &[&str]) -> Daemon {
    let mut cmd = loadmark();
    cmd.args(args);
    Daemon::spawn(name, cmd).unwrap()
}

/// The address a `--dashboard 127.0.0.1:0` run says it serves on (its stderr line).
fn dashboard_addr(run: &Daemon) -> String {
    run.wait_for_line(STOP_PATIENCE, |l| {
        Some(
            l.split("dashboard at http://")
                .nth(1)?
                .split('/')
                .next()?
                .to_string(),
        )
    })
    .unwrap()
}

/// Runs `live_support/dashboard.js` (playwright-core driving Debian's chromium): `pages`
/// pages watch `url` until each has the final report; what each saw.
fn watch_dashboard(url: &str, pages: usize, shot: &Path) -> Vec<serde_json::Value> {
    watch_dashboard_ready(url, pages, shot, None)
}

/// Starts `live_support/dashboard.js` before the run it is to watch and returns once
/// Chromium is up; its pages then load `url` within 100 ms of loadmark listening (they
/// retry). A bench's steps end whether or not a page watches, and Chromium took over 4 s to
/// start on a busy machine: started after loadmark, it missed the first step.
fn watch_dashboard_ahead(
    url: String,
    shot: std::path::PathBuf,
    dir: &Path,
) -> std::thread::JoinHandle<Vec<serde_json::Value>> {
    let ready = dir.join("browser-ready");
    let told = ready.clone();
    let watcher = std::thread::spawn(move || watch_dashboard_ready(&url, 1, &shot, Some(&told)));
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !ready.exists() {
        if watcher.is_finished() {
            let pages = watcher.join().expect("dashboard.js");
            panic!("dashboard.js ended before its browser was up: {pages:?}");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Chromium did not start in 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    watcher
}

fn watch_dashboard_ready(
    url: &str,
    pages: usize,
    shot: &Path,
    ready: Option<&Path>,
) -> Vec<serde_json::Value> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let node_modules = workspace.join("target/ci-node/node_modules");
    assert!(
        node_modules.join("playwright-core").exists(),
        "{} is missing: npm install playwright-core in target/ci-node (.ci/run does)",
        node_modules.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live_support/dashboard.js");
    let out = Command::new("timeout")
        .args(["150", "node"])
        .arg(script)
        .args([url, &pages.to_string()])
        .arg(shot)
        .args(ready)
        .env("NODE_PATH", &node_modules)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "dashboard.js failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).expect("dashboard.js prints JSON")
}

/// `--dashboard`: two Chromium pages watch a run live; each draws its charts from the events
/// while the run goes, fetches nothing but the page, the events and the final report, and
/// ends with the report's own totals; loadmark waits for both to fetch the report, then exits.
#[test]
fn the_live_dashboard_in_two_browsers_ends_at_the_reports_totals() {
    let _one_browser = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let server = target();
    let dir = temp_dir("live", "dashboard");
    let report = dir.join("r.json");
    let url = format!("http://{}/json", server.local_addr());
    let run = spawn(
        "loadmark run --dashboard",
        &[
            "run",
            &url,
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "6s",
            "--warmup",
            "1s",
            "-q",
            "--dashboard",
            "127.0.0.1:0",
            "-o",
            report.to_str().unwrap(),
        ],
    );
    let addr = dashboard_addr(&run);
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("live-dashboard.png");
    let pages = watch_dashboard(&format!("http://{addr}/"), 2, &shot);
    let status = run.wait(STOP_PATIENCE).unwrap();
    assert!(status.success(), "{status:?}");
    let r = report_json(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let q = &r.summary.requests;
    assert!(q.responses > 100, "{q:?}");
    for page in &pages {
        assert!(page["errors"].as_array().unwrap().is_empty(), "{page}");
        assert!(page["console"].as_array().unwrap().is_empty(), "{page}");
        let origin = format!("http://{addr}/");
        for request in page["requests"].as_array().unwrap() {
            let request = request.as_str().unwrap();
            assert!(
                [
                    origin.clone(),
                    format!("{origin}events"),
                    format!("{origin}report")
                ]
                .contains(&request.to_string()),
                "a request the page should not make: {request}"
            );
        }
        assert!(
            page["running"].as_str().unwrap().starts_with("running"),
            "{page}"
        );
        let live = &page["live"];
        assert_eq!(live["ended"], true);
        let step = &live["steps"][0];
        assert_eq!(step["responses"], q.responses, "{page}");
        assert_eq!(step["failed"].as_u64(), Some(r.failed()), "{page}");
        let rps = step["rps"].as_f64().unwrap();
        assert!(
            (rps - r.summary.rps).abs() <= r.summary.rps * 1e-3,
            "{rps} vs {}",
            r.summary.rps
        );
        assert_eq!(
            page["tiles"]["t-responses"]
                .as_str()
                .unwrap()
                .replace(',', ""),
            q.responses.to_string()
        );
        for chart in ["c-rate", "c-latency", "c-errors", "c-connections"] {
            assert_eq!(page["charts"][chart]["drawn"], true, "{chart}: {page}");
        }
        assert!(live["reportBytes"].as_u64().unwrap() > 10_000, "{page}");
        assert!(page["report_link"].as_str().unwrap().starts_with("blob:"));
    }
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
    eprintln!("dashboard screenshot: {}", shot.display());
}

/// A page that opens the event stream and never reads it (a stuck browser) neither slows
/// the run nor keeps loadmark alive: the run ends on time, the report is written, and the
/// process waits at most its bound for that page before it exits.
#[test]
fn a_stuck_dashboard_viewer_neither_slows_the_run_nor_keeps_loadmark_alive() {
    let server = target();
    let dir = temp_dir("live", "dashboard-stuck");
    let report = dir.join("r.json");
    let url = format!("http://{}/json", server.local_addr());
    let started = std::time::Instant::now();
    let run = spawn(
        "loadmark run --dashboard (stuck viewer)",
        &[
            "run",
            &url,
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "3s",
            "-q",
            "--dashboard",
            "127.0.0.1:0",
            "-o",
            report.to_str().unwrap(),
        ],
    );
    let addr = dashboard_addr(&run);
    let mut stuck = std::net::TcpStream::connect(&addr).unwrap();
    stuck
        .write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let status = run.wait(STOP_PATIENCE).unwrap();
    assert!(status.success(), "{status:?}");
    let r = report_json(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(r.summary.requests.responses > 100);
    assert!((r.run.elapsed_s - 3.0).abs() < 0.5, "{}", r.run.elapsed_s);
    // 3 s of run, at most 10 s waiting for the page, and a busy machine's slack.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3 + 10 + 20), "{took:?}");
    drop(stuck);
}

/// `bench --dashboard`: the page follows the plan's steps (step i of n) and fills its step
/// table with each step's totals as the bundle has them; at the end it offers the bundle's
/// report. (A bench with no page watching ends without waiting for one, and Chromium on a
/// busy machine took more than the 4 s of two 2 s steps to connect: the page starts first,
/// and the steps last 4 s.)
#[test]
fn the_live_dashboard_follows_a_bench_step_by_step() {
    let _one_browser = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let server = target();
    let dir = temp_dir("live", "dashboard-bench");
    std::fs::write(
        dir.join("plan.yaml"),
        format!(
            "name: live\ntargets:\n  api:\n    url: http://{}/status\nload: {{duration: 4s, threads: 1}}\nsweep: {{connections: [1, 2]}}\n",
            server.local_addr()
        ),
    )
    .unwrap();
    let plan = dir.join("plan.yaml");
    let out = dir.join("out");
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("live-dashboard-bench.png");
    // The page first, on a port reserved for this test, then the bench it watches.
    let addr = format!("127.0.0.1:{}", loadmark_test_support::port());
    let watcher = watch_dashboard_ahead(format!("http://{addr}/"), shot, &dir);
    let run = spawn(
        "loadmark bench --dashboard",
        &[
            "bench",
            plan.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "-q",
            "--dashboard",
            &addr,
        ],
    );
    let pages = watcher.join().expect("dashboard.js");
    assert!(run.wait(STOP_PATIENCE).unwrap().success());
    let bundle: loadmark_report::Bundle =
        common::bundle_json(&std::fs::read_to_string(out.join("bundle.json")).unwrap()).unwrap();
    let page = &pages[0];
    assert!(page["console"].as_array().unwrap().is_empty(), "{page}");
    let steps = page["live"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{page}");
    for (seen, step) in steps.iter().zip(&bundle.steps) {
        assert_eq!(seen["responses"], step.report.summary.requests.responses);
        assert_eq!(seen["failed"].as_u64(), Some(step.report.failed()));
    }
    assert_eq!(page["live"]["step"]["steps"], 2);
    assert_eq!(page["live"]["step"]["step"], 2);
    // The bundle's report, with both steps, is what the page kept.
    assert!(page["live"]["reportBytes"].as_u64().unwrap() > 10_000);
    server.shutdown();
}

/// A dashboard address that cannot be bound is a usage error (exit 2) naming the flag and
/// the address, before any request is sent.
#[test]
fn a_dashboard_address_in_use_is_refused_before_any_load() {
    let server = target();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let url = format!("http://{}/status", server.local_addr());
    let out = loadmark()
        .args(["run", &url, "-n", "100", "-q", "--dashboard", &addr])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("--dashboard {addr}")) && stderr.contains("in use"),
        "{stderr}"
    );
    assert_eq!(server.requests_served(), 0);
    // And one that can: the stderr line says where, and that it is loopback only.
    let out = loadmark()
        .args(["run", &url, "-n", "100", "-q", "--dashboard", "127.0.0.1:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("dashboard at http://127.0.0.1:") && stderr.contains("loopback only"),
        "{stderr}"
    );
}
