//! What `loadmark bench` tells a newcomer (issue 42): the step table on stdout, a scenario
//! named by its steps and its plan's name, commands printed by `--check` and "How to
//! reproduce" that run as printed, thresholds included.

mod common;

use common::*;

use std::path::Path;
use std::process::{Command, Output};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn bench(dir: &Path, args: &[&str]) -> Output {
    loadmark()
        .arg("bench")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Runs a command line as printed (`loadmark ...`, shell quoting and all) through `sh`, with
/// this build's loadmark first on PATH.
fn run_printed(command: &str, dir: &Path) -> Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_loadmark")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    assert!(command.starts_with("loadmark "), "{command}");
    Command::new("sh")
        .args(["-c", command])
        .env("PATH", path)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn bench_prints_the_step_table_on_stdout_in_the_chosen_style() {
    let server = target();
    let dir = temp_dir("bench-output", "table");
    std::fs::write(
        dir.join("plan.yaml"),
        format!(
            "name: Two sizes\ntargets:\n  api: {{url: 'http://{}/status'}}\n\
             load: {{requests: 100, threads: 1}}\nsweep: {{connections: [1, 2]}}\n",
            server.local_addr()
        ),
    )
    .unwrap();
    let o = bench(&dir, &["plan.yaml", "-o", "out", "-q", "--style", "wrk"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(server.requests_served(), 200);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "Two sizes (plan.yaml): 2 steps ran", "{out}");
    let header: Vec<&str> = lines[1].split_whitespace().collect();
    // The plan's default columns start so; later ones (errors by kind, status classes,
    // the server's figures) follow.
    assert_eq!(
        &header[..10],
        [
            "#",
            "step",
            "req/s",
            "transfer/s",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
            "failed"
        ],
        "{out}"
    );
    for (n, line) in lines[2..4].iter().enumerate() {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[0], (n + 1).to_string(), "{out}");
        assert_eq!(cells[1], format!("connections={}", n + 1), "{out}");
        // Transfer is two words ("1.06 MiB/s"): failed is the eleventh.
        assert_eq!(cells[10], "0", "nothing failed: {out}");
    }
    // The columns line up: every row is as wide as the header.
    let width = lines[1].chars().count();
    assert!(
        lines[2..4].iter().all(|l| l.chars().count() == width),
        "{out}"
    );
    // The chosen style's blocks follow, as in BENCHMARKS.md.
    assert!(out.contains("Step 1: in wrk's layout"), "{out}");
    assert!(
        out.contains("  Thread Stats   Avg      Stdev     Max   +/- Stdev"),
        "{out}"
    );
    assert!(out.contains("  100 requests in "), "{out}");
    // Without a style: the table alone; BENCHMARKS.md is written as before.
    let o = bench(
        &dir,
        &[
            "plan.yaml",
            "-o",
            "plain",
            "-q",
            "--columns",
            "rps,p99,failed",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 4, "{out}");
    assert!(!out.contains("Thread Stats"), "{out}");
    assert!(dir.join("plain/BENCHMARKS.md").exists());
}

#[test]
fn a_scenario_is_named_by_its_plan_and_its_steps_not_its_first_url() {
    let server = target();
    let dir = temp_dir("bench-output", "scenario");
    std::fs::write(
        dir.join("journey.yaml"),
        format!(
            r#"name: Login, list, open
targets:
  shop: {{url: 'http://{}'}}
scenario:
  - name: login
    request: {{method: POST, url: /login, body: '{{"user":"u{{{{seq}}}}","password":"x"}}'}}
    extract: {{token: json /token}}
  - name: list
    request: {{url: /items, headers: {{Authorization: 'Bearer {{{{token}}}}'}}}}
    extract: {{item: 'json /items/0/id'}}
  - name: open
    request: {{url: '/items/{{{{item}}}}', headers: {{Authorization: 'Bearer {{{{token}}}}'}}}}
load: {{users: 2, iterations: 10}}
"#,
            server.local_addr()
        ),
    )
    .unwrap();
    let o = bench(&dir, &["journey.yaml", "-o", "out", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(server.requests_served(), 30, "10 iterations of 3 requests");
    let out = stdout(&o);
    let origin = format!("http://{}", server.local_addr());
    assert!(
        out.starts_with("Login, list, open (journey.yaml): 1 step ran"),
        "{out}"
    );
    assert!(
        out.contains(&format!("shop: scenario login → list → open on {origin}")),
        "{out}"
    );
    // The text report of the saved bundle: the headline names the scenario.
    let o = loadmark()
        .args(["report", "out/bundle.json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(&format!(
            ": Login, list, open (scenario: login → list → open) on {origin}\n"
        )),
        "{text}"
    );
    assert!(!text.contains(": POST http"), "{text}");
}

#[test]
fn check_prints_commands_that_run_and_reproduce_keeps_the_thresholds() {
    let server = target();
    let dir = temp_dir("bench-output", "check");
    // Connections ramping up from none: the printed command used to say `-c 0`.
    std::fs::write(
        dir.join("ramp.yaml"),
        format!(
            "targets:\n  api: {{url: 'http://{}/status'}}\n\
             load: {{connections: 1, stages: '500ms:0->2,500ms:2', threads: 1}}\n\
             thresholds: ['errors<1%', 'p99<5s']\n",
            server.local_addr()
        ),
    )
    .unwrap();
    let o = bench(&dir, &["--check", "ramp.yaml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let command = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("1. "))
        .unwrap_or_else(|| panic!("no step line: {out}"))
        .to_string();
    assert!(!command.contains("-c 0"), "{command}");
    assert!(
        command.contains("--stages '500ms:0->2,500ms:2->2'"),
        "{command}"
    );
    assert!(
        command.contains("--threshold 'errors<1%' --threshold 'p99<5s'"),
        "{command}"
    );
    let o = run_printed(&format!("{command} -q -o printed.json"), &dir);
    assert!(o.status.success(), "`{command}`: {}", stderr(&o));
    let r = report_json(&std::fs::read_to_string(dir.join("printed.json")).unwrap()).unwrap();
    assert!(
        matches!(&r.plan.load, loadmark_plan::Load::Ramp { connections, .. }
            if connections.to_text() == "500ms:0->2,500ms:2->2"),
        "the same ramp: {:?}",
        r.plan.load
    );
    assert_eq!(r.thresholds.len(), 2, "and the same thresholds");
    assert!(r.summary.requests.responses > 0);

    // The document's "How to reproduce" keeps them too, for a plan and for `run -o x.md`.
    let o = bench(&dir, &["ramp.yaml", "-o", "out", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = std::fs::read_to_string(dir.join("out/BENCHMARKS.md")).unwrap();
    let how = &md[md.find("## How to reproduce").unwrap()..];
    assert!(how.contains(&format!("1. `{command}`")), "{how}");
    let url = format!("http://{}/status", server.local_addr());
    let o = loadmark()
        .args([
            "run",
            &url,
            "-n",
            "20",
            "-c",
            "1",
            "-q",
            "--threshold",
            "p99<5s",
            "-o",
        ])
        .arg(dir.join("run.md"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let md = std::fs::read_to_string(dir.join("run.md")).unwrap();
    let how = &md[md.find("## How to reproduce").unwrap()..];
    let again = how
        .lines()
        .find_map(|l| l.strip_prefix('`').and_then(|l| l.strip_suffix('`')))
        .unwrap_or_else(|| panic!("{how}"));
    assert!(again.contains("--threshold 'p99<5s'"), "{again}");
    let o = run_printed(&format!("{again} -q"), &dir);
    assert!(o.status.success(), "`{again}`: {}", stderr(&o));
}
